//! `krypta x`: extraction of an archive into a directory or to stdout, with the conflict
//! policy, salvage past damage and the summary of what was not made (split out of lib.rs,
//! which keeps the other commands' entry points).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::archive::reader::{Archive, OpenOptions, ScanSummary};
use crate::archive::visit::{ExtractVisitor, Selection, StdoutVisitor};
use crate::format::EntryKind;
use crate::{
    Collect, Error, Reporter, Result, Tap, damage, fs, open_warning, open_warning_with,
    report_source, report_transfer, total_size, warn_unverified,
};

/// What `extract` needs.
pub struct ExtractRequest {
    /// Output directory.
    pub output: PathBuf,
    /// Entries to extract (raw bytes); empty = all.
    pub paths: Vec<Vec<u8>>,
    /// `paths` are glob patterns (`--wildcards`, [`crate::archive::visit::Selection::wildcards`]).
    pub wildcards: bool,
    /// Write file contents to stdout instead of creating files.
    pub stdout: bool,
    /// Filesystem options (force, strip components, mtimes, permissions, owners).
    pub fs: fs::extract::ExtractOptions,
    /// Go on past damage (issue 11 §1): restore every entry the damage did not touch and end
    /// with [`Error::Salvaged`]; false stops at the first error (`--fail-fast`).
    pub salvage: bool,
}

/// Extracts an archive (`-` = stdin). Every byte written was verified first; each file is
/// written without a name (or under a temporary one) and gets its final name only once its
/// digest matched (`fs::unnamed`). The summary's `bytes` are the content bytes of the files
/// made (written to disk or stdout), not of those kept out or stripped away.
///
/// Errors: as [`Archive::open`], plus Corrupt/AuthFailed/Integrity from the data, Io and
/// UnsafePath from the filesystem, Usage when a requested path is not in the archive.
/// Existing names follow [`fs::extract::ExtractOptions::existing`] ([`fs::conflict`]): found
/// before anything is written, [`Error::Conflicts`] (`before_start`); found while
/// extracting, everything else is extracted and each is reported with [`Reporter::warn`],
/// then [`Error::Conflicts`] (refuse or replace), [`Error::KeptExisting`] (keep) or nothing
/// (skip).
pub fn extract(
    archive: &Path,
    open: OpenOptions,
    req: ExtractRequest,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    let mut ar = if open.signers.is_empty() {
        open_warning(archive, open, rep)?
    } else {
        // `x --signer`: nothing may be written before the signature verified, so a stream
        // is spooled to a temporary file first, next to the output (Archive::open_spooled).
        let dir = (!req.stdout).then_some(req.output.as_path());
        open_warning_with(archive, open, rep, |o| {
            Archive::open_spooled(archive, o, dir)
        })?
    };
    ar.require_base()?;
    if let Some(w) = ar.base_damage() {
        rep.warn(&w);
    }
    report_source(&ar, rep);
    let r = extract_opened(&mut ar, archive, req, rep);
    report_transfer(&ar, archive, rep);
    r
}

fn extract_opened(
    ar: &mut Archive,
    archive: &Path,
    req: ExtractRequest,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    let mut select = if req.wildcards {
        Selection::wildcards(&req.paths)?
    } else {
        Selection::new(req.paths)
    };
    let (index, mut no_index) = damage::read_index_or_salvage(ar, req.salvage)?;
    let policy = req.fs.existing;
    if !req.stdout
        && let Some((_, ix)) = &index
    {
        // The conflict check before anything is written (fs::conflict).
        let targets = ix
            .entries
            .iter()
            .filter(|e| {
                select.covers(&e.meta.path)
                    && (e.meta.kind != EntryKind::Hardlink || select.covers(&e.meta.link))
            })
            .map(|e| (e.meta.path.as_slice(), e.meta.kind));
        fs::conflict::preflight(&req.output, targets, req.fs.strip_components, policy)?;
    }
    if let Some((_, ix)) = &index {
        rep.start(Some(total_size(&ix.entries)));
    } else {
        rep.start(None);
    }
    // Salvage's warnings, reported once the visitor (which holds `rep` for progress) is done.
    let mut sw = Collect::default();
    let salvage = req.salvage;
    let mut scan = |t: &mut damage::Tracker<'_>| {
        damage::scan_or_salvage(
            ar,
            archive,
            index.as_ref(),
            no_index.take(),
            t,
            salvage,
            &mut sw,
        )
    };
    let summary = if req.stdout {
        let stdout = std::io::stdout();
        let mut v = StdoutVisitor::new(fs::chunked::buffered(stdout.lock()), &mut select);
        let mut tap = Tap::new(&mut v, rep);
        let mut t = damage::Tracker::new(&mut tap);
        let s = scan(&mut t);
        let s = tap.written(s);
        v.out
            .flush()
            .map_err(|e| Error::io("<stdout>", "write", e))?;
        // A hard link named whose target was not: its content was not written (exit 6, as
        // without --stdout), never an empty output reported as a success.
        for w in &v.warnings {
            rep.warn(w);
        }
        match s {
            Ok(s) if !v.warnings.is_empty() => Err(Error::NotMade {
                count: v.warnings.len(),
                summary: Box::new(s),
            }),
            s => s,
        }
    } else {
        let ex = fs::extract::Extractor::new(&req.output, req.fs)?;
        let mut no_progress = |_: u64| {};
        let mut v = ExtractVisitor::new(ex, &mut select, &mut no_progress)?;
        let mut tap = Tap::new(&mut v, rep);
        let mut t = damage::Tracker::new(&mut tap);
        let s = scan(&mut t);
        let s = tap.written(s);
        // Every finished file has its name before directories are finished and conflicts
        // counted; a deferred failure is the run's error unless the scan failed first.
        // A file counted as restored that did not get its name outranks a salvage's summary;
        // next to another failure of the scan it is a warning, not lost.
        let s = match (s, v.finish_files()) {
            (s, Ok(())) => s,
            (Err(scan), Err(file)) if !matches!(scan, Error::Salvaged { .. }) => {
                rep.warn(&file.to_string());
                Err(scan)
            }
            (_, Err(file)) => Err(file),
        };
        let warnings = std::mem::take(&mut v.warnings);
        // Each warning is a hard link not made (its target was not selected).
        let mut not_made = warnings.len();
        let ExtractVisitor { mut ex, .. } = v;
        for w in &warnings {
            rep.warn(w);
        }
        // Entries whose name the file system cannot hold (fs::extract's `fit`).
        let (unmade, unmade_count) = ex.take_unmade();
        for w in &unmade {
            rep.warn(w);
        }
        not_made += unmade_count;
        // Entries the kernel refused (a directory of another user), each named above.
        let denied = ex.denied_count();
        // Directories (and the root entry) get their metadata after the scan, also after a
        // salvage: what was restored is complete.
        // A directory whose metadata could not be set (an I/O failure, the disk's or the
        // system's) outranks a salvage's summary, as a file that did not get its name does:
        // the run's code is 4, the summary a warning (before, the failure was dropped and the
        // run exited with the archive's 2, 3 or 5).
        let dirs = ex.apply_dirs();
        let done = match (s, dirs) {
            (Err(scan @ Error::Salvaged { .. }), Err(dir)) => {
                rep.warn(&scan.to_string());
                Err(dir)
            }
            (s, dirs) => s.and_then(|s| dirs.map(|()| s)),
        };
        for w in ex.take_warnings() {
            rep.warn(&w);
        }
        'dirs: {
            let s = match done {
                Ok(s) => s,
                Err(e) => break 'dirs Err(e),
            };
            let conflicts = ex.conflicts();
            if !conflicts.is_empty() {
                rep.finish();
                for c in &conflicts {
                    // --skip-existing keeps existing files silently, but not what it cost
                    // besides them: entries below an existing non-directory, hard links to
                    // a kept file (they are not existing files; they were not made).
                    let dropped = matches!(
                        c.reason,
                        fs::conflict::Reason::NotADirectory
                            | fs::conflict::Reason::LinkTargetKept(_)
                    );
                    if policy != fs::conflict::Existing::Skip || dropped {
                        rep.warn(&c.to_string());
                    }
                    if policy == fs::conflict::Existing::Skip && dropped {
                        not_made += 1;
                    }
                }
                if denied > 0 {
                    break 'dirs Err(Error::Denied {
                        count: denied,
                        summary: Box::new(s),
                    });
                }
                match policy {
                    fs::conflict::Existing::Skip => {}
                    fs::conflict::Existing::Keep => {
                        break 'dirs Err(Error::KeptExisting {
                            count: conflicts.len(),
                            summary: Box::new(s),
                        });
                    }
                    fs::conflict::Existing::Refuse | fs::conflict::Existing::Replace => {
                        break 'dirs Err(Error::Conflicts {
                            output: req.output.clone(),
                            count: conflicts.len(),
                            names: conflicts
                                .iter()
                                .take(fs::conflict::SHOWN_CONFLICTS)
                                .map(|c| fs::escape_path(c.path.as_os_str().as_encoded_bytes()))
                                .collect(),
                            before_start: false,
                            forced: policy == fs::conflict::Existing::Replace,
                        });
                    }
                }
            }
            if denied > 0 {
                break 'dirs Err(Error::Denied {
                    count: denied,
                    summary: Box::new(s),
                });
            }
            if not_made > 0 {
                break 'dirs Err(Error::NotMade {
                    count: not_made,
                    summary: Box::new(s),
                });
            }
            Ok(s)
        }
    };
    sw.replay(rep);
    // A PATH not in the archive is the usage error it names (exit 1), also when some entries
    // could not be made or existing files were kept (exit 6 otherwise).
    let missing = select.unmatched();
    let soft = matches!(
        summary,
        Err(Error::NotMade { .. } | Error::KeptExisting { .. } | Error::Denied { .. })
    );
    if missing.is_empty() || !soft {
        let summary = summary?;
        rep.finish();
        warn_unverified(&summary, rep);
        if missing.is_empty() {
            return Ok(summary);
        }
    }
    Err(Error::Usage(format!(
        "not found in {}: {}",
        crate::fs::escape_path(archive.as_os_str().as_encoded_bytes()),
        missing.join(", ")
    )))
}
