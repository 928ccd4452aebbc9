//! Going on past damage in `extract` and `test` (issue 11 §1): the ordinary scan runs first
//! (nothing changes for an intact archive); when it fails with damage and the archive's
//! index verified, [`salvage_after`] restores every entry the damage did not touch
//! ([`crate::archive::reader::Salvage`]), names every entry it did in a warning, and ends
//! with [`Error::Salvaged`] ("restored N of M entries, K damaged"), whose exit code is the
//! worst failure's (5 unencrypted, 2 encrypted; 9 when only delta blocks whose base region is
//! damaged failed, the delta archive's own frames intact, with the index or without it, from a
//! file or a pipe). The entries the failed scan had already
//! restored are tracked by path ([`Tracker`]) and neither read nor written again.
//!
//! A damaged entry never reaches its final name: salvage never gives its bytes to the
//! visitor, and the file the failed scan was writing when it failed was aborted there (its
//! temporary file removed by the extractor).

use std::collections::HashSet;
use std::path::Path;

use crate::archive::Visitor;
use crate::archive::reader::{Archive, BASE_UNUSABLE, ScanSummary};
use crate::error::{AuthCheck, Error, Result};
use crate::format::EntryKind;
use crate::format::EntryMeta;
use crate::format::index::Index;
use crate::{Reporter, WantAll};

mod list;
mod pipe;

pub use list::{Listing, list_or_salvage};

/// Passes everything on and notes which entries were completed (by path: the entry-set
/// rules make paths unique).
pub(crate) struct Tracker<'a> {
    pub(crate) inner: &'a mut dyn Visitor,
    pub(crate) done: HashSet<Vec<u8>>,
}

impl<'a> Tracker<'a> {
    pub(crate) fn new(inner: &'a mut dyn Visitor) -> Self {
        Tracker {
            inner,
            done: HashSet::new(),
        }
    }
}

impl Visitor for Tracker<'_> {
    fn wants(&mut self, meta: &EntryMeta) -> bool {
        self.inner.wants(meta)
    }
    fn entry(&mut self, meta: &EntryMeta) -> Result<()> {
        self.inner.entry(meta)?;
        if meta.kind != EntryKind::File {
            self.done.insert(meta.path.clone());
        }
        Ok(())
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        self.inner.data(offset, bytes)
    }
    fn end(&mut self, meta: &EntryMeta, size: u64) -> Result<()> {
        self.inner.end(meta, size)?;
        self.done.insert(meta.path.clone());
        Ok(())
    }
    fn abort(&mut self) {
        self.inner.abort()
    }
}

/// The footer and index of a seekable archive (None for a stream); with `salvage`, a
/// damaged or missing index is returned as the error that salvage without it reads past.
pub(crate) type Known = (crate::format::footer::Footer, crate::format::index::Index);
pub(crate) fn read_index_or_salvage(
    ar: &mut Archive,
    salvage: bool,
) -> Result<(Option<Known>, Option<Error>)> {
    if !ar.seekable() {
        return Ok((None, None));
    }
    match ar.read_index() {
        Ok(k) => Ok((Some(k), None)),
        Err(e) if salvage && is_index_damage(&e) => Ok((None, Some(e))),
        Err(e) => Err(e),
    }
}

/// `extract`'s scan: without an index (`no_index`, the error that lost it) a salvage from
/// front to back; else the scan of what is wanted, then, when it failed on damage and
/// `salvage` is on, a salvage with the index ([`salvage_if`]).
pub(crate) fn scan_or_salvage(
    ar: &mut Archive,
    archive: &Path,
    index: Option<&(crate::format::footer::Footer, crate::format::index::Index)>,
    no_index: Option<Error>,
    t: &mut Tracker<'_>,
    salvage: bool,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    match no_index {
        Some(e) => salvage_without_index(ar, archive, t, "restored", e, rep),
        None => {
            let s = crate::run_scan(ar, index, t);
            salvage_if(ar, archive, index, t, salvage, "restored", s, rep)
        }
    }
}

/// With `salvage` and an index, a scan that failed with damage goes on past it
/// ([`salvage_after`]); otherwise the scan's result as it is.
#[allow(clippy::too_many_arguments)]
pub(crate) fn salvage_if(
    ar: &mut Archive,
    archive: &Path,
    index: Option<&(crate::format::footer::Footer, crate::format::index::Index)>,
    t: &mut Tracker<'_>,
    salvage: bool,
    verb: &'static str,
    s: Result<ScanSummary>,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    match (s, index) {
        (Err(e), Some((_, ix))) if salvage && is_damage(&e) => {
            salvage_after(ar, archive, ix, t, verb, e, rep)
        }
        (Err(e), None)
            if salvage && (is_index_damage(&e) || e.lost_to_base()) && !ar.seekable() =>
        {
            pipe::salvage_from_pipe(ar, archive, t, verb, e, rep)
        }
        (s, _) => s,
    }
}

/// Whether a failed scan is damage that salvage reads past: a frame tag, a structure that
/// does not parse or breaks a rule, a digest, a delta block whose base region is damaged
/// (docs/FORMAT.md §16.4: the entries of that block are lost, the rest restored), a file
/// stored as a reference to a base entry that is damaged (§16.5: that file is lost), a file
/// read with a damaged base that does not match the index (§16.4: lost to the base). Not:
/// I/O, the filesystem, usage.
pub(crate) fn is_damage(e: &Error) -> bool {
    e.lost_to_base()
        || matches!(
            e.root(),
            Error::Damaged { .. }
                | Error::DamagedFooter { .. }
                | Error::Integrity { .. }
                | Error::Corrupt { .. }
                | Error::AuthFailed {
                    check: AuthCheck::FrameMac | AuthCheck::Structure | AuthCheck::FooterMac,
                    ..
                }
        )
}

/// Whether a failure to read the index and footer is damage to bytes no tag covered yet
/// (so salvage without the index may read past it): a truncated archive, a footer or frame
/// head that does not parse, a footer or index frame whose tag fails. Not: a rule broken
/// inside an index that verified (a crafted or miswritten archive, refused as before).
pub(crate) fn is_index_damage(e: &Error) -> bool {
    use crate::format::FormatError;
    match e.root() {
        Error::Corrupt { source, .. } => matches!(
            source,
            FormatError::Truncated {
                what: "frame header"
                    | "frame body"
                    | "frame tag"
                    | "footer"
                    | "archive (no footer)",
                ..
            } | FormatError::Invalid {
                what: "footer" | "footer index offset" | "frame header" | "index frame head",
                ..
            }
        ),
        Error::Damaged { .. }
        | Error::DamagedFooter { .. }
        | Error::AuthFailed {
            check: AuthCheck::FrameMac | AuthCheck::FooterMac,
            ..
        } => true,
        Error::Integrity { what, .. } => what.contains("checksum mismatch"),
        _ => false,
    }
}

/// Whether `e` is a frame that verified but is not the one its place holds (FORMAT.md §4: a
/// sequence number or kind out of order; sealed, any structure refused after the checks),
/// as where the verified footer says the index starts: a data frame, copied there when a
/// bad copy duplicated the last data frame. Like [`is_index_damage`], worth looking for the
/// index moved by one insertion (`archive::reader::moved`), which only ever reads frames
/// that verify, as written.
pub(crate) fn is_out_of_sequence(e: &Error) -> bool {
    use crate::format::FormatError;
    matches!(
        e.root(),
        Error::Corrupt {
            source: FormatError::Invalid {
                what: "frame sequence",
                ..
            },
            ..
        } | Error::AuthFailed {
            check: AuthCheck::Structure,
            ..
        }
    )
}

/// Whether damage is in the footer alone (cut, unparsable, or failing its check): every frame
/// before it was read whole. From a pipe (the footer comes last) nothing else was lost, as
/// when a file's footer is damaged ([`salvage_without_index`] says every data frame verified).
pub(crate) fn footer_only(e: &Error) -> bool {
    use crate::format::FormatError;
    match e.root() {
        Error::Corrupt { source, .. } => matches!(
            source,
            FormatError::Truncated {
                what: "footer" | "archive (no footer)",
                ..
            } | FormatError::Invalid { what: "footer", .. }
        ),
        Error::DamagedFooter { .. }
        | Error::AuthFailed {
            check: AuthCheck::FooterMac,
            ..
        } => true,
        // An unencrypted footer's checksum (regression: from a pipe, it was taken for damage
        // in the data frames, "archive damaged at byte <the end> (frame 0)").
        Error::Integrity { what, .. } => what.starts_with("footer checksum mismatch"),
        _ => false,
    }
}

/// After a scan of `index`'s archive failed with damage (`first`): restores the wanted
/// entries the damage did not touch, warns about each damaged frame and entry, and returns
/// [`Error::Salvaged`] (or `first` when salvage found nothing damaged to name).
pub(crate) fn salvage_after(
    ar: &mut Archive,
    archive: &Path,
    index: &Index,
    tracker: &mut Tracker<'_>,
    verb: &'static str,
    first: Error,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    salvage_after_from(ar, archive, index, tracker, verb, first, rep, (0, None))
}

/// [`salvage_after`] of a pipe's rest spooled from data frame `from.0` on (the frames before
/// it were read once and are gone: the entries they hold were restored by the scan), but for
/// the entry the scan was cut in, `from.1` (its escaped path), which the caller names and
/// which counts as damaged. When frames from `from.0` up to the spool were read ahead and
/// lost with the pipe (`Archive::lost_from_frame`), only the entries the scan
/// finished (and the cut one) are skipped, and every other is checked against the lost
/// frames, which name it — an entry whose head record began in the frame before the
/// damaged one, or a level-9 group that began before it, is lost, not restored.
#[allow(clippy::too_many_arguments)]
fn salvage_after_from(
    ar: &mut Archive,
    archive: &Path,
    index: &Index,
    tracker: &mut Tracker<'_>,
    verb: &'static str,
    first: Error,
    rep: &mut dyn Reporter,
    (from, cut_path): (u64, Option<&str>),
) -> Result<ScanSummary> {
    let lost = ar.lost_with_pipe();
    let wanted: Vec<usize> = index
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| tracker.inner.wants(&e.meta))
        .map(|(i, _)| i)
        .collect();
    let skip: HashSet<usize> = wanted
        .iter()
        .copied()
        .filter(|&i| {
            let e = &index.entries[i];
            tracker.done.contains(&e.meta.path)
                || (!lost && crate::format::index_v2::group_start(index, e.first_seq) < from)
                || cut_path.is_some_and(|p| p == crate::fs::escape_path(&e.meta.path))
        })
        .collect();
    let cut_entry = cut_path.and_then(|p| {
        wanted
            .iter()
            .copied()
            .find(|&i| p == crate::fs::escape_path(&index.entries[i].meta.path))
    });
    let cut = cut_entry.is_some();
    let s = ar.salvage_selected(
        index,
        &wanted,
        &skip,
        cut_entry,
        &mut WantAll(tracker.inner),
    )?;
    // No frame failed on its own, nor a reference on its base: the scan broke a rule across
    // verified frames (a crafted or miswritten archive, not damage), refused as before.
    if (s.damaged.is_empty() && !cut)
        || (s.bad_frames.is_empty() && !s.damaged.iter().any(|d| d.on_base))
    {
        return Err(first);
    }
    let sealed = ar.header().encrypted();
    for b in &s.bad_frames {
        warn_region(rep, archive, b, b.what.starts_with(BASE_UNUSABLE), sealed);
    }
    let not = match verb {
        "verified" => "not verified",
        "listed" => "not listed",
        _ => "not restored",
    };
    for d in &s.damaged {
        rep.lost(&format!("{}: {not}: {}", d.path, d.why));
    }
    let total = wanted.len() as u64;
    let damaged = s.damaged.len() as u64 + u64::from(cut);
    Err(Error::Salvaged {
        path: archive.into(),
        verb,
        restored: total - damaged,
        total,
        damaged,
        uncounted: false,
        code: salvage_code(&s, sealed),
    })
}

/// The exit code of a salvage with the index (README's exit-code table, 2, 3, 5 and 9): the
/// archive's own damage decides it — a frame of its own that failed, or a file lost on its
/// own account in frames that verified ([`DamagedEntry::own_code`]: not read with the base,
/// or not caused by it), whichever is worst ([`worst`]: 2 encrypted; 5 for a failed checksum,
/// missing bytes or a file's digest; else 3). 9 only when every failure was the delta base's
/// (a delta block whose base region is unusable, a file lost to its base), the delta archive
/// itself intact. A mix is the delta archive's own code, not 9: the base is not the only thing
/// wrong, and 9 would send the user to replace the base while the delta archive is damaged
/// too (before, a file rewritten in an unencrypted delta read with a forged base exited 9,
/// since only failed frames counted as the delta's own).
///
/// [`DamagedEntry::own_code`]: crate::archive::reader::DamagedEntry::own_code
fn salvage_code(s: &crate::archive::reader::Salvage, sealed: bool) -> u8 {
    let own_frames: Vec<_> = s
        .bad_frames
        .iter()
        .filter(|b| !b.what.starts_with(BASE_UNUSABLE))
        .collect();
    let own_files: Vec<u8> = s.damaged.iter().filter_map(|d| d.own_code).collect();
    if own_frames.is_empty() && own_files.is_empty() {
        return 9;
    }
    worst(
        sealed,
        own_frames
            .iter()
            .any(|b| !b.what.starts_with("block does not"))
            || own_files.contains(&5),
    )
}

/// Salvage of an archive whose index or footer could not be read (`first` says why):
/// resynchronising front to back ([`Archive::salvage_stream`]); warns about each lost region
/// and damaged entry, says what could not be checked, and returns [`Error::Salvaged`].
pub(crate) fn salvage_without_index(
    ar: &mut Archive,
    archive: &Path,
    tracker: &mut Tracker<'_>,
    verb: &'static str,
    first: Error,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    // Without its index, nothing read with a base whose binding cannot be checked could be
    // checked: refused (`Archive::refuse_unbound_base`).
    ar.refuse_unbound_base()?;
    let done = tracker.done.clone();
    let s = ar.salvage_stream(tracker, &done)?;
    let sealed = ar.header().encrypted();
    let damaged = s.damaged.len() as u64;
    // From a pipe, the scan before the damage already read `before` entries and was cut in
    // the middle of one (`first` names it; the caller counts it): a truncated stream is
    // salvaged as the same file is, whatever was left to read after the damage.
    let before = done.len() as u64;
    let cut = matches!(first, Error::InEntry { .. });
    // Nothing read, but bytes lost where data frames were (not only the index's, after where
    // a verified footer puts it: the footer is read only then): a truncation inside the
    // first data frame is damage, named so.
    let nothing_read = s.restored == 0 && damaged == 0 && before == 0 && !cut && !s.broken_run;
    let data_lost = nothing_read && !s.lost.is_empty() && {
        let index_at = ar.verified_index_offset();
        s.lost
            .iter()
            .any(|l| index_at.is_none_or(|at| l.offset < at))
    };
    if nothing_read && !data_lost {
        // Nothing could be read without the index: nothing to salvage.
        return Err(first);
    }
    // No bytes of the data frames lost: only the index or footer, and any records refused.
    let frames_whole = s.lost.is_empty() && s.base_unusable.is_empty() && !s.budget_hit && !cut;
    if frames_whole && damaged == 0 && s.refused.is_empty() {
        // Every data frame verified and the fault is in the index or footer alone: the run
        // ends with that error (the archive is damaged), saying that nothing was lost.
        rep.warn(&format!(
            "{}: the index or footer is damaged; every data frame verified, and {} read front to back {} {verb}",
            crate::fs::shown(archive),
            match s.restored + before {
                1 => "the 1 entry".to_string(),
                n => format!("all {n} entries"),
            },
            if s.restored + before == 1 { "was" } else { "were" }
        ));
        return Err(first);
    }
    if first.lost_to_base() || ar.spooled() {
        // From a pipe (whose index comes last): the scan stopped at the damage or the
        // base's fault, before the index was read.
        rep.warn(&format!(
            "{}: reading the rest front to back without the index",
            crate::fs::shown(archive)
        ));
    } else {
        rep.warn(&format!(
            "{}: the index could not be read ({first}): reading front to back without it",
            crate::fs::shown(archive)
        ));
    }
    let mut regions: Vec<_> = s.lost.iter().map(|l| (l, false)).collect();
    regions.extend(s.base_unusable.iter().map(|b| (b, true)));
    regions.sort_by_key(|(l, _)| l.offset);
    for (l, base) in regions {
        warn_region(rep, archive, l, base, sealed);
    }
    let not = match verb {
        "verified" => "not verified",
        "listed" => "not listed",
        _ => "not restored",
    };
    // Entries lost to records refused: part of the run's error, shown with `-q` too.
    for r in &s.refused {
        rep.lost(&format!("{}: {r}", crate::fs::shown(archive)));
    }
    for (p, why) in &s.damaged {
        rep.lost(&format!("{p}: {not}: {why}"));
    }
    if s.budget_hit {
        rep.warn(&format!(
            "{}: stopped resynchronising: the damaged region cost more than {} times the archive's length in checks",
            crate::fs::shown(archive),
            crate::archive::reader::MAC_BUDGET_FACTOR
        ));
    }
    rep.warn(&format!(
        "{}: without the index, entries wholly inside lost bytes{} cannot be named (their number is unknown), the entries read could not be compared with the index, and files without a stored digest (format 2: under 4 KiB) were checked by their frame tags only",
        crate::fs::shown(archive),
        if s.base_unusable.is_empty() {
            ""
        } else {
            " or in delta blocks whose base is damaged"
        }
    ));
    // Without the index, damage is missing or failing bytes; a delta whose only failures are
    // in its base (its own frames intact) exits 9, as with the index (salvage_after).
    let own = !s.lost.is_empty() || s.budget_hit || s.broken_run;
    Err(Error::Salvaged {
        path: archive.into(),
        verb,
        restored: s.restored,
        total: s.restored + damaged,
        damaged,
        uncounted: !frames_whole,
        code: if frames_whole && !s.refused.is_empty() {
            // Every data frame verified: what failed is records refused in them (and the
            // index or footer), a structure, not a checksum (FORMAT.md §11).
            worst(sealed, false)
        } else if own || s.base_unusable.is_empty() {
            worst(sealed, true)
        } else {
            9
        },
    })
}

/// The warning for a damaged region or frame `b` salvage read past: a delta block whose base
/// is damaged (`on_base`), or damage ("or modified" in an encrypted archive, `sealed`).
fn warn_region(
    rep: &mut dyn Reporter,
    archive: &Path,
    b: &crate::archive::reader::BadFrame,
    on_base: bool,
    sealed: bool,
) {
    let kind = if on_base {
        "delta block unusable (its base is damaged)"
    } else if sealed {
        "archive damaged or modified"
    } else {
        "archive damaged"
    };
    rep.warn(&format!(
        "{}: {kind} at byte {} (frame {}): {}",
        crate::fs::shown(archive),
        b.offset,
        b.seq,
        b.what
    ));
}

/// The exit code of the worst failure salvage read past (see [`Error::Salvaged`]).
fn worst(sealed: bool, tag_failed: bool) -> u8 {
    match (sealed, tag_failed) {
        (true, _) => 2,
        (false, true) => 5,
        (false, false) => 3,
    }
}
