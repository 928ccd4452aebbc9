//! What the recovery data did while an archive was read, in the words the commands use:
//! the warnings of transparent repair ([`heal_warnings`]) and `test`'s "damaged but
//! repairable" verdict ([`repairable`], exit 7). The repair itself is `store::healing`.

use std::path::Path;

use crate::archive::reader::{Archive, ScanSummary};
use crate::error::{Error, Result};
use crate::fs;
use crate::recovery::RecoveryError;

/// What transparent repair did while `ar` was read (`store::healing`), as warnings: the
/// bytes rebuilt from the recovery data, the segments beyond it, and a recovery section the
/// header announces but that was not found.
pub(crate) fn heal_warnings(ar: &Archive, archive: &Path) -> Vec<String> {
    let name = fs::escape_path(archive.as_os_str().as_encoded_bytes());
    let mut out = Vec::new();
    if let Some(base) = ar.base() {
        // The base's frames were read (and repaired) too: say so as for the archive, naming
        // the base (it was repaired silently, and needs `krypta repair` as much).
        let r = base.heal_report();
        let base_name = fs::escape_path(base.path().as_os_str().as_encoded_bytes());
        out.extend(base.header_fix().map(|f| header_fix_warning(&base_name, f)));
        out.extend(
            base.trailing()
                .and_then(|t| trailing_warning(&base_name, t)),
        );
        out.extend(base.undone_edit().map(|e| edit_warning(&base_name, e)));
        out.extend(
            r.map(|r| report_warnings(&r, &base_name))
                .unwrap_or_default(),
        );
    }
    if let Some(f) = ar.header_fix() {
        let mut w = header_fix_warning(&name, f);
        if ar.header().recovery_percent().is_some() {
            // Read from a pipe: its recovery data was not used.
            w.push_str("; its recovery data, not read from a pipe, can repair it: krypta repair");
        }
        out.push(w);
    }
    out.extend(ar.trailing().and_then(|t| trailing_warning(&name, t)));
    if let Some(p) = ar.stream_section_problem().filter(|p| p.warn) {
        out.push(format!("{name}: {}", p.what));
    }
    out.extend(ar.undone_edit().map(|e| edit_warning(&name, e)));
    let Some(r) = ar.source().heal_report() else {
        if let Some((missing, written, rebuildable)) = ar.missing_beyond_recovery() {
            out.push(format!(
                "{name}: {missing} bytes of the {written} the archive was written with are missing (a bad copy?), more than its recovery data can rebuild ({rebuildable} bytes): read as it is, salvaging what verifies"
            ));
        } else if ar.header().recovery_percent().is_some() && ar.seekable() && !ar.spooled() {
            out.push(format!(
                "{name}: the header announces recovery data, but none was found (the end of the archive is cut off or damaged): read without it"
            ));
        }
        return out;
    };
    out.extend(report_warnings(&r, &name));
    out
}

/// The warning for one flipped bit of the header, undone (`archive::reader::header_fix`).
pub fn header_fix_warning(name: &str, f: crate::archive::reader::HeaderFix) -> String {
    format!(
        "{name}: one bit of the header is flipped (byte {}, bit {}; a bad disk or copy?): read with it undone, since the header's checksum verifies so (the file is left as it is: copy it again from a good copy, or re-create it)",
        f.byte, f.bit
    )
}

/// The warning for bytes inserted or removed in one place that the reader undid without
/// recovery data (`Archive::undone_edit`): where, bytes inserted (negative: removed), frame.
fn edit_warning(name: &str, (at, n, frame): (u64, i64, u64)) -> String {
    let what = crate::counted(n.unsigned_abs(), "byte was", "bytes were");
    if frame == crate::archive::reader::AFTER_INDEX {
        // Between the index and the footer: no frame holds them, nothing was overwritten
        // (it said "an entry they touched is lost" of `cat a.kry a.kry`).
        format!(
            "{name}: {what} inserted at or before byte {at}, between the index and the footer (a bad copy, or the archive appended to itself?): read without {}; no entry was touched",
            crate::them(n.unsigned_abs())
        )
    } else {
        format!(
            "{name}: {what} {} at or before byte {at} (a bad copy?): read with {them} undone; the archive has no recovery data to rebuild what {they} overwrote, so an entry {they} touched is lost (named if so)",
            if n > 0 { "inserted" } else { "removed" },
            them = crate::them(n.unsigned_abs()),
            they = if n.unsigned_abs() == 1 { "it" } else { "they" }
        )
    }
}

/// The warning for bytes after the footer (`store::clamped`), none for zero padding (a
/// tape's last block, `dd conv=sync`: not worth a word).
pub fn trailing_warning(name: &str, (at, n, zeros): (u64, u64, bool)) -> Option<String> {
    (!zeros).then(|| {
        format!(
            "{name}: {} the archive's footer at byte {at} (a bad copy, or something appended?): read without {}",
            crate::bytes_follow(n),
            crate::them(n)
        )
    })
}

/// `c --base`'s warning for bytes after the base's footer that are not zero padding (none
/// for padding, as for `x`): the delta archive written is valid, bound to the base's frames,
/// which verified; but `krypta t` of it will fail while the base has them (it fails for the
/// base as for an archive: [`Error::Appended`]), and they may be the sign of a bad copy or of
/// the wrong file, which the user finds out now rather than when the delta is needed. So a
/// warning that names the base, where it ends and the bytes after it, not a refusal (a
/// damaged base is refused: a header bit undone, an insertion undone).
pub(crate) fn base_appended(base: &crate::archive::reader::BaseArchive) -> Option<String> {
    let name = fs::shown(base.path());
    let (at, n, zeros) = base.trailing()?;
    let w = trailing_warning(&name, (at, n, zeros))?;
    Some(format!(
        "{w}; the new archive is written against the base without {them}, and `krypta t` of it fails while the base has {them} (a good copy of the base, or this one cut to its {at} bytes, passes)",
        them = crate::them(n)
    ))
}

/// The warnings of one heal report of the archive or base shown as `name`.
fn report_warnings(r: &crate::store::healing::HealReport, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((at, n)) = r.edit {
        out.push(format!(
            "{name}: {} {} near byte {at} (a bad copy?): read as the archive was written, with {them} undone and the bytes around {them} rebuilt from the recovery data (krypta repair writes a repaired copy)",
            crate::counted(n.unsigned_abs(), "byte was", "bytes were"),
            if n > 0 { "inserted" } else { "removed" },
            them = crate::them(n.unsigned_abs())
        ));
    }
    if !r.repaired_segments.is_empty() {
        let segs = &r.repaired_segments;
        out.push(format!(
            "{name}: damaged: rebuilt {} bytes ({}) in {} {} from the recovery data; what was read is the archive as written (krypta repair writes a repaired copy)",
            r.rebuilt_bytes(),
            plural(r.rebuilt_shards, "shard"),
            if segs.len() == 1 { "segment" } else { "segments" },
            spans(segs)
        ));
    }
    if !r.unverified_segments.is_empty() {
        // One line for them all (helper-27: a section whose packets were all damaged gave
        // one identical line per segment, 763 of them).
        let n = r.unverified_segments.len();
        out.push(format!(
            "{name}: {} {}: more checksums of the recovery data are lost (both descriptor copies damaged) than it can stand in for; {} bytes were checked by the archive's own tags only",
            if n == 1 { "segment" } else { "segments" },
            spans(&r.unverified_segments),
            if n == 1 { "its" } else { "their" }
        ));
    }
    for b in &r.beyond {
        out.push(format!(
            "{name}: {}: read as it is, salvaging what verifies",
            RecoveryError::BeyondRepair {
                segments: vec![b.clone()]
            }
        ));
    }
    for (g, e) in &r.failed {
        out.push(format!(
            "{name}: repairing segment {g} failed: {e}; read as it is"
        ));
    }
    out
}

/// `test`'s verdict after a scan that verified (`s`): [`Error::Repairable`] when anything was
/// rebuilt from the recovery data while reading, or the parts of the section that reading
/// the archive does not touch are damaged; `s` otherwise.
pub(crate) fn repairable(ar: &mut Archive, archive: &Path, s: ScanSummary) -> Result<ScanSummary> {
    // The archive verified; say whether it did only thanks to the recovery data, and check
    // the parts of the recovery data that reading the archive did not touch.
    if let Some(f) = ar.header_fix() {
        // Every entry verified, with one bit of the header undone: not as written.
        return Err(Error::HeaderFixed {
            path: archive.into(),
            base_written: false,
            recovery: ar.header().recovery_percent().is_some(),
            byte: f.byte,
            bit: f.bit,
            sealed: ar.header().encrypted(),
        });
    }
    if let Some(base) = ar.base()
        && let Some((at, bytes, false)) = base.trailing()
    {
        return Err(Error::Appended {
            path: base.path().to_path_buf(),
            at,
            bytes,
            sealed: base.encrypted(),
        });
    }
    if let Some(base) = ar.base()
        && let Some(f) = base.header_fix()
    {
        // Every entry verified, with one bit of the base's header undone: the base needs a
        // good copy as much as an archive would.
        return Err(Error::HeaderFixed {
            path: base.path().to_path_buf(),
            base_written: false,
            recovery: false,
            byte: f.byte,
            bit: f.bit,
            sealed: base.encrypted(),
        });
    }
    if let Some(base) = ar.base()
        && let Some((at, bytes, frame)) = base.undone_edit()
    {
        // Every entry verified, with an insertion or removal in the base undone: the base is
        // not as written and, without recovery data, nothing repairs it (as for the archive).
        return Err(Error::EditUndone {
            path: base.path().to_path_buf(),
            base_written: false,
            at,
            bytes,
            frame: (frame != crate::archive::reader::AFTER_INDEX).then_some(frame),
            sealed: base.encrypted(),
        });
    }
    if let (Some(base), Some(why)) = (ar.base(), ar.base_damage_reason()) {
        // Every entry verified without the base's damaged parts (its index, or frames no
        // block needed): the base still needs a good copy before a delta needs those parts.
        return Err(Error::BaseNotAsWritten {
            path: archive.into(),
            base: base.path().to_path_buf(),
            why: why.to_string(),
            sealed: base.encrypted(),
        });
    }
    if let Some((at, bytes, false)) = ar.trailing() {
        return Err(Error::Appended {
            path: archive.into(),
            at,
            bytes,
            sealed: ar.header().encrypted(),
        });
    }
    if let Some((at, n, frame)) = ar.undone_edit() {
        // Every entry verified only because the reader undid an edit (between two frames, or
        // after the index): the archive is not as written, and nothing can repair it.
        return Err(Error::EditUndone {
            path: archive.into(),
            base_written: false,
            at,
            bytes: n,
            frame: (frame != crate::archive::reader::AFTER_INDEX).then_some(frame),
            sealed: ar.header().encrypted(),
        });
    }
    if let Some(base) = ar.base()
        && let Some(heal) = base.heal_report()
        && heal.rebuilt_shards > 0
    {
        // Every entry verified, but only because the base's recovery data rebuilt what was
        // read of it: the base needs `krypta repair` (exit 7, as for the archive itself).
        return Err(Error::Repairable {
            path: base.path().to_path_buf(),
            what: format!(
                "the delta base is damaged but repairable: {} bytes of it were rebuilt from its recovery data (krypta repair writes the original bytes)",
                heal.rebuilt_bytes()
            ),
            summary: Box::new(s),
        });
    }
    if let Some(p) = ar.stream_section_problem() {
        // Read from a pipe: the archive verified, what follows it did not.
        return Err(Error::Repairable {
            path: archive.into(),
            what: if p.lost {
                p.what.clone()
            } else {
                format!("damaged but repairable: {}", p.what)
            },
            summary: Box::new(s),
        });
    }
    let (Some(heal), Some(section)) = (ar.source().heal_report(), ar.check_recovery_section())
    else {
        if ar.header().recovery_percent().is_some() && ar.seekable() && !ar.spooled() {
            // Every entry verified, but the protection the header promises is gone: a
            // nightly check must notice (exit 7 too).
            return Err(Error::Repairable {
                path: archive.into(),
                what: format!(
                    "its recovery data is missing (cut off or overwritten), {SECTION_LOST}"
                ),
                summary: Box::new(s),
            });
        }
        return Ok(s);
    };
    let mut what = Vec::new();
    if heal.rebuilt_shards > 0 {
        what.push(format!(
            "{} bytes of the archive were rebuilt from the recovery data",
            heal.rebuilt_bytes()
        ));
    }
    what.extend(crate::recovery::damage_items(
        section.damaged_recovery_shards,
        section.damaged_packets,
    ));
    if section.trailer_damaged {
        what.push("the recovery trailer is damaged or not at the end of the file".into());
    }
    if section.padding_damaged {
        // A file cut short lost its padding; only a whole one can hold other bytes.
        what.push(if section.length_differs {
            "the recovery data's zero padding holds other bytes or is cut off".into()
        } else {
            "the recovery data's zero padding holds other bytes".into()
        });
    }
    if section.length_differs {
        what.push("the file's length differs from what the recovery data says".into());
    }
    if what.is_empty() {
        return Ok(s);
    }
    Err(Error::Repairable {
        path: archive.into(),
        what: format!(
            "damaged but repairable: {} (krypta repair writes the original bytes)",
            what.join(", ")
        ),
        summary: Box::new(s),
    })
}

/// What `t` says of recovery data nothing can rebuild, after what happened to it (the file's
/// and the pipe's reader say it alike).
pub(crate) const SECTION_LOST: &str = "so the archive is no longer protected; krypta repair cannot restore it (copy the archive again from a good copy, or re-create it)";

/// `n thing` or `n things`.
pub(crate) fn plural(n: u64, thing: &str) -> String {
    crate::counted(n, thing, &format!("{thing}s"))
}

/// Segment numbers as runs: "4", "0-762", "1, 3-5, 9".
fn spans(set: &std::collections::BTreeSet<u64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut it = set.iter().copied().peekable();
    while let Some(a) = it.next() {
        let mut b = a;
        while it.peek() == Some(&(b + 1)) {
            b += 1;
            it.next();
        }
        out.push(if a == b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        });
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn segment_numbers_are_said_as_runs() {
        let s = |v: &[u64]| super::spans(&v.iter().copied().collect());
        assert_eq!(s(&[4]), "4");
        assert_eq!(s(&(0..763).collect::<Vec<_>>()), "0-762");
        assert_eq!(s(&[1, 3, 4, 5, 9]), "1, 3-5, 9");
        assert_eq!(s(&[]), "");
    }
}
