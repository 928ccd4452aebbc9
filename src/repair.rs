//! `krypta repair`: rebuilds an archive from its recovery data, keyless, into a new file or
//! object (or in place with `force`), byte-identical to the archive as first written.
//!
//! Verification comes first (one read of the whole file): an intact archive is not
//! rewritten in place, and an archive beyond the recovery data is refused before anything
//! is created. The repaired bytes then go to a [`store::Sink`], which puts them under the
//! final name only when complete (temporary name + rename, or a completed upload), and only
//! when the repaired protected bytes hash to the BLAKE3 the recovery data stores: otherwise
//! the sink is aborted and nothing is left behind.

use std::path::{Path, PathBuf};

use crate::archive::reader::SectionLost;
use crate::error::{Error, Result};
use crate::recovery::{
    ByteSource, Locate, Located, Realigned, RecoveryError, RepairOptions, RepairSummary,
    VerifyReport, locate, realign, repair_to, verify,
};
use crate::store::{self, healing::Whole};

/// What [`repair`] found and did.
#[derive(Debug, Clone)]
pub struct RepairOutcome {
    /// Verification of the archive as it was read.
    pub report: VerifyReport,
    /// Where the repaired archive was written (None: it was intact and repaired in place,
    /// so nothing was written).
    pub written: Option<PathBuf>,
    /// What the rewrite did (None when nothing was written).
    pub summary: Option<RepairSummary>,
    /// Bytes inserted (positive) or removed (negative) in one place, and where, undone
    /// before verifying (`recovery::realign`): the file's length disagreed with its intact
    /// trailer's. None for an archive of the length first written.
    pub edit: Option<(u64, i64)>,
}

/// Repairs `archive` (a file or `s3://` object) into `output`, or in place when `output` is
/// None (which needs `force`). `jobs`: segments repaired at once.
///
/// Errors: Usage (no output and no `force`; a pipe), Recovery: NotFound (no recovery data,
/// exit 3), BeyondRepair (exit 5: nothing written); SectionLost when the header announces a
/// section that is not found (the archive cut short or damaged: exit 5; only the section
/// missing: exit 3); Integrity when the rebuilt bytes do not hash to the stored BLAKE3
/// (nothing written); Exists, Io.
pub fn repair(
    archive: &Path,
    output: Option<&Path>,
    force: bool,
    jobs: usize,
) -> Result<RepairOutcome> {
    repair_or_check(archive, output, force, jobs, false)
}

/// What [`check_recovery`] found.
#[derive(Debug, Clone)]
pub struct CheckOutcome {
    /// Verification of every shard, packet and the trailer.
    pub report: VerifyReport,
    /// Whether a repair would give the archive as first written. Verification alone decides
    /// it, except where checksums are lost (both descriptor copies damaged) in a segment that
    /// has more of them than recovery shards: then a trial repair (written nowhere) checks
    /// the rebuilt archive against the stored BLAKE3.
    pub repairable: bool,
    /// As [`RepairOutcome::edit`].
    pub edit: Option<(u64, i64)>,
}

/// What [`check_recovery`] found.
#[derive(Debug, Clone)]
pub enum Check {
    /// The recovery section was found, and verified.
    Verified(Box<CheckOutcome>),
    /// The header announces recovery data and the archive's frames end with its footer, but
    /// no section follows it (cut off or overwritten): the archive is no longer protected,
    /// and its bytes cannot be checked without it (`repair --check` exits 7, as `t` does).
    SectionMissing(SectionLost),
}

/// Verifies `archive` against its recovery data without writing anything (`repair
/// --check`). Errors: Usage (a pipe), Recovery NotFound (no recovery data: none announced,
/// or a header that does not verify), SectionLost (the archive cut short or damaged before
/// its section, which is lost with it: exit 5), Io.
pub fn check_recovery(archive: &Path) -> Result<Check> {
    let outcome = match repair_or_check(archive, None, false, 1, true) {
        Err(Error::SectionLost { found, .. }) if !found.archive_damaged() => {
            return Ok(Check::SectionMissing(found));
        }
        r => r?,
    };
    let (report, edit) = (outcome.report, outcome.edit);
    let unverified = report
        .segments
        .iter()
        .any(|s| s.state == crate::recovery::SegmentState::Unverified);
    let repairable = if !report.repairable() {
        false
    } else if unverified && !report.protected_intact {
        let mut src = store::open_source(archive)?;
        let len = src
            .length()
            .map_err(|e| Error::io(archive, "seek", e))?
            .unwrap_or(report.located.source_len);
        let whole = Whole::new(&mut *src, len);
        let opts = RepairOptions::default();
        let trial = |s: &dyn ByteSource| {
            repair_to(s, &report.located, std::io::sink(), &opts)
                .map(|(_, s)| s.identical)
                .unwrap_or(false)
        };
        match edit {
            Some((split, shift)) => trial(&Realigned::new(
                &whole,
                split,
                shift,
                report.located.layout.file_len,
            )),
            None => trial(&whole),
        }
    } else {
        true
    };
    Ok(Check::Verified(Box::new(CheckOutcome {
        report,
        repairable,
        edit,
    })))
}

fn repair_or_check(
    archive: &Path,
    output: Option<&Path>,
    force: bool,
    jobs: usize,
    check_only: bool,
) -> Result<RepairOutcome> {
    let mut src = store::open_seekable(
        archive,
        "repair reads the archive twice; give it as a file or an s3:// object",
    )?;
    if output.is_none() && !force && !check_only {
        return Err(Error::Usage(format!(
            "repair writes the repaired archive to a new file: give -o OUT, or -f to replace {} with it",
            crate::fs::shown(archive)
        )));
    }
    // In place through a symbolic link: the file it points to is repaired (the link stays).
    let in_place: PathBuf = match std::fs::symlink_metadata(archive) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(archive).map_err(|e| Error::io(archive, "resolve", e))?
        }
        _ => archive.to_path_buf(),
    };
    let target = output.unwrap_or(&in_place);
    if !check_only
        && store::Location::parse(target).is_ok_and(|l| !l.is_remote())
        && let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        return Err(Error::Usage(format!(
            "{}: its directory {} does not exist",
            crate::fs::shown(target),
            crate::fs::shown(parent)
        )));
    }
    if !check_only && std::fs::metadata(target).is_ok_and(|m| m.is_dir()) {
        return Err(Error::Usage(format!(
            "{}: is a directory; -o names the repaired archive's file",
            crate::fs::shown(target)
        )));
    }
    let len = src
        .length()
        .map_err(|e| Error::io(archive, "seek", e))?
        .ok_or_else(|| Error::Usage(format!("{}: not seekable", crate::fs::shown(archive))))?;
    let whole = Whole::new(&mut *src, len);
    let wrap = |source: RecoveryError| Error::Recovery {
        path: archive.into(),
        source,
    };
    let found = locate(
        &whole,
        &Locate {
            protected_len: None,
            scan: true,
        },
    );
    let to = Target {
        archive,
        target,
        output,
        force,
        jobs,
        check_only,
    };
    match found {
        Ok(located) => {
            // Bytes after the archive's end (an append) are dropped by an in-place repair.
            let end = located.layout.file_len;
            if output.is_none() && !check_only && located.source_len > end {
                let extra = i64::try_from(located.source_len - end).unwrap_or(i64::MAX);
                refuse_dropping_an_archive(&whole, (end, extra), false, &located, archive)?;
            }
            finish(&whole, located, None, &to)
        }
        // One run of bytes inserted or removed: the trailer still ends the file.
        Err(RecoveryError::NotFound { .. })
            if let Some((view, located)) = realign(&whole).map_err(wrap)? =>
        {
            let edit = view.edit();
            if output.is_none() && !check_only {
                refuse_dropping_an_archive(&whole, edit, true, &located, archive)?;
            }
            finish(&view, located, Some(edit), &to)
        }
        // More bytes missing than the recovery data rebuilds: beyond repair, not "none found".
        Err(RecoveryError::NotFound { .. })
            if let Some((lay, missing)) =
                crate::recovery::missing_beyond_recovery(&whole).map_err(wrap)? =>
        {
            Err(wrap(RecoveryError::TooMuchMissing {
                missing,
                written: lay.file_len,
                rebuildable: crate::recovery::rebuildable(&lay),
            }))
        }
        // No section at all: the archive's own structure says whether it is cut short or
        // damaged (the section lost with it: beyond the recovery data) or only its section
        // is missing (docs/FORMAT.md §15.8 step 5). Not judged: "no recovery data found".
        Err(e @ RecoveryError::NotFound { .. }) => {
            match crate::archive::reader::archive_end(archive)? {
                Some(found) => Err(Error::SectionLost {
                    path: archive.into(),
                    found,
                }),
                None => Err(wrap(e)),
            }
        }
        Err(e) => Err(wrap(e)),
    }
}

/// Refuses an in-place repair that would drop `shift` bytes inserted at `split` (or
/// appended there, after the archive's end) which look like data of their own: a run
/// starting with a krypta header (`cat a.kry b.kry > both.kry`: one archive reads as bytes
/// inserted before or appended after the other, and `repair -f` kept only that one), or
/// longer than the archive itself (no bad copy adds that much). Written elsewhere (`-o`),
/// the original stays, so that is still allowed.
///
/// `realigned`: the run is one [`realign`] found. Its `split` is the start of the shard
/// holding the edit, not the edit itself, so an insertion inside the first shard "adds"
/// bytes at 0 that start with the archive's own header; another archive in front is told
/// apart by the archive continuing with a header of its own after the run.
fn refuse_dropping_an_archive<S: ByteSource + ?Sized>(
    whole: &S,
    (split, shift): (u64, i64),
    realigned: bool,
    located: &Located,
    archive: &Path,
) -> Result<()> {
    let Ok(inserted) = u64::try_from(shift) else {
        return Ok(());
    };
    let starts_archive = |at: u64| {
        let mut head = [0u8; 8];
        whole.read_at(at, &mut head).is_ok() && head == crate::format::header::MAGIC
    };
    let archive_like = inserted >= crate::format::header::MAGIC.len() as u64
        && starts_archive(split)
        && (!realigned || starts_archive(split + inserted));
    if archive_like || inserted > located.layout.file_len {
        return Err(Error::Usage(format!(
            "{}: the {inserted} bytes added at byte {split} {}: an in-place repair would drop them; write the repaired archive elsewhere with -o OUT (the file stays as it is)",
            crate::fs::shown(archive),
            if archive_like {
                "start with a krypta header (another archive joined to this one?)"
            } else {
                "are more than the archive itself"
            }
        )));
    }
    Ok(())
}

/// Where a repair reads from and writes to ([`repair_or_check`]'s arguments).
struct Target<'a> {
    archive: &'a Path,
    target: &'a Path,
    output: Option<&'a Path>,
    force: bool,
    jobs: usize,
    check_only: bool,
}

/// Verifies `src` (the archive, or a [`Realigned`] view of it undoing `edit`) against the
/// section `located`, then repairs it to the target (module doc).
fn finish<S: ByteSource + ?Sized>(
    src: &S,
    located: Located,
    edit: Option<(u64, i64)>,
    to: &Target<'_>,
) -> Result<RepairOutcome> {
    let Target {
        archive,
        target,
        output,
        force,
        jobs,
        check_only,
    } = *to;
    let wrap = |source: RecoveryError| Error::Recovery {
        path: archive.into(),
        source,
    };
    let report = verify(src, &located);
    if check_only {
        return Ok(RepairOutcome {
            report,
            written: None,
            summary: None,
            edit,
        });
    }
    if !report.repairable() {
        return Err(wrap(RecoveryError::BeyondRepair {
            segments: report.beyond_repair(),
        }));
    }
    if report.all_intact() && output.is_none() && edit.is_none() {
        return Ok(RepairOutcome {
            report,
            written: None,
            summary: None,
            edit,
        });
    }
    // A new local output takes a local archive's permission bits, a replaced one keeps its
    // own (a repair in place: the archive's; `store::create_sink_like`). Synced like a new
    // archive: a repair in place replaces the only copy.
    let device = store::local::special_output(target).is_some();
    let sink = store::create_sink_like(target, archive, force, true)?;
    let opts = RepairOptions {
        jobs: jobs.max(1),
        encoder: {
            let mut e = crate::recovery::RecoveryOptions::new(located.layout.params.percent);
            if !store::Location::parse(target).is_ok_and(|l| l.is_remote()) && !device {
                e.spill_dir = target.parent().map(|p| {
                    if p.as_os_str().is_empty() {
                        PathBuf::from(".")
                    } else {
                        p.to_path_buf()
                    }
                });
            }
            e
        },
    };
    let (sink, summary) = repair_to(src, &located, sink, &opts).map_err(|e| match e {
        // Writing failed: name what was being written, not the archive read.
        RecoveryError::Write { source, .. } => Error::io(target, "write", source),
        e => wrap(e),
    })?;
    if !summary.identical {
        sink.abort();
        return Err(Error::Integrity {
            path: archive.into(),
            what: format!(
                "the rebuilt archive does not match the BLAKE3 its recovery data stores ({} shards could not be checked: their checksums were lost in both descriptor copies); nothing was written",
                summary.unverified_shards
            ),
        });
    }
    sink.finish()?;
    Ok(RepairOutcome {
        report,
        written: Some(target.to_path_buf()),
        summary: Some(summary),
        edit,
    })
}
