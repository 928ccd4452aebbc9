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

use crate::error::{Error, Result};
use crate::recovery::{
    Locate, RecoveryError, RepairOptions, RepairSummary, VerifyReport, locate, repair_to, verify,
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
}

/// Repairs `archive` (a file or `s3://` object) into `output`, or in place when `output` is
/// None (which needs `force`). `jobs`: segments repaired at once.
///
/// Errors: Usage (no output and no `force`; a pipe), Recovery: NotFound (no recovery data,
/// exit 3), BeyondRepair (exit 5: nothing written); Integrity when the rebuilt bytes do not
/// hash to the stored BLAKE3 (nothing written); Exists, Io.
pub fn repair(
    archive: &Path,
    output: Option<&Path>,
    force: bool,
    jobs: usize,
) -> Result<RepairOutcome> {
    repair_or_check(archive, output, force, jobs, false)
}

/// Verifies `archive` against its recovery data without writing anything (`repair
/// --check`): the report says whether it is intact, repairable or beyond repair. Errors:
/// Usage (a pipe), Recovery NotFound, Io.
pub fn check_recovery(archive: &Path) -> Result<VerifyReport> {
    Ok(repair_or_check(archive, None, false, 1, true)?.report)
}

fn repair_or_check(
    archive: &Path,
    output: Option<&Path>,
    force: bool,
    jobs: usize,
    check_only: bool,
) -> Result<RepairOutcome> {
    if output.is_none() && !force && !check_only {
        return Err(Error::Usage(format!(
            "repair writes the repaired archive to a new file: give -o OUT, or -f to replace {} with it",
            archive.display()
        )));
    }
    if archive == Path::new("-") {
        return Err(Error::Usage(
            "repair needs the archive as a file or an s3:// object (it reads it twice), not stdin"
                .into(),
        ));
    }
    let mut src = store::open_source(archive)?;
    let len = src
        .length()
        .map_err(|e| Error::io(archive, "seek", e))?
        .ok_or_else(|| Error::Usage(format!("{}: not seekable", archive.display())))?;
    let whole = Whole::new(&mut *src, len);
    let wrap = |source: RecoveryError| Error::Recovery {
        path: archive.into(),
        source,
    };
    let located = locate(
        &whole,
        &Locate {
            protected_len: None,
            scan: true,
        },
    )
    .map_err(wrap)?;
    let report = verify(&whole, &located);
    if check_only {
        return Ok(RepairOutcome {
            report,
            written: None,
            summary: None,
        });
    }
    if !report.repairable() {
        return Err(wrap(RecoveryError::BeyondRepair {
            segments: report.beyond_repair(),
        }));
    }
    if report.all_intact() && output.is_none() {
        return Ok(RepairOutcome {
            report,
            written: None,
            summary: None,
        });
    }
    let target = output.unwrap_or(archive);
    // A local output keeps a local archive's permission bits (an archive kept 0600 is not
    // rewritten 0644 by a repair in place).
    let sink: Box<dyn store::Sink> = match (
        store::Location::parse(target)?,
        store::Location::parse(archive)?,
    ) {
        (store::Location::Local(t), store::Location::Local(a)) => {
            let s = store::local::FileSink::create(&t, force)?;
            if let Ok(m) = std::fs::metadata(&a) {
                s.set_mode(std::os::unix::fs::PermissionsExt::mode(&m.permissions()))?;
            }
            Box::new(s)
        }
        _ => store::create_sink(target, force)?,
    };
    let opts = RepairOptions {
        jobs: jobs.max(1),
        encoder: {
            let mut e = crate::recovery::RecoveryOptions::new(located.layout.params.percent);
            if !store::Location::parse(target).is_ok_and(|l| l.is_remote()) {
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
    let (sink, summary) = repair_to(&whole, &located, sink, &opts).map_err(wrap)?;
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
    })
}
