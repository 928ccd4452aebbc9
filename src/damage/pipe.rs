//! Salvage of an archive read from a pipe (issue 11 §1): a pipe cannot be read twice or
//! seeked, so the entries before the damage were read by the scan; the rest of the stream
//! is spooled to a temporary file (`archive::reader::spool`) and read past the damage from
//! there. A delta stream that stopped on its base keeps the frames read ahead of the one
//! that failed (`archive::reader::replay`), so its spooled rest holds the index and the
//! salvage names and counts what salvage of the file would.

use std::path::Path;

use super::{Tracker, salvage_after_from, salvage_without_index};
use crate::Reporter;
use crate::archive::reader::{Archive, ScanSummary};
use crate::error::{Error, Result};

/// The salvage of a scan of a pipe that failed on damage (`e`), or on a delta block whose
/// base region is unusable (docs/FORMAT.md §16.4), as salvage with the index does.
pub(super) fn salvage_from_pipe(
    ar: &mut Archive,
    archive: &Path,
    t: &mut Tracker<'_>,
    verb: &'static str,
    e: Error,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    // A pipe cannot be read twice or seeked: the entries before the damage were
    // read; the rest of the stream is spooled to a temporary file and read past the
    // damage from there (archive::reader::spool). So is a delta block whose base
    // region is unusable (docs/FORMAT.md §16.4), as salvage with the index does.
    if ar.header().recovery_percent().is_some() {
        rep.warn(&format!(
            "{}: the recovery data cannot be used from a pipe (it follows the archive): read from the file, krypta repairs damage within the recovery data's capacity as it reads (krypta repair --check says whether it can)",
            crate::fs::shown(archive)
        ));
    }
    let before = t.done.len() as u64;
    // The entry the scan was reading when the damage stopped it (its temporary file
    // was removed).
    let not = if verb == "verified" {
        "not verified"
    } else {
        "not restored"
    };
    // (Its path, the line that names it.)
    let cut_entry = match &e {
        Error::InEntry { entry, source } => {
            Some((entry.clone(), format!("{entry}: {not}: {source}")))
        }
        // A file stored as a reference to a base entry that is unusable (§16.5), or read
        // with a damaged base and not as the index has it (§16.4).
        Error::Base(b) => b
            .entry()
            .map(|entry| (entry.to_string(), format!("{entry}: {not}: {e}"))),
        _ => None,
    };
    let cut = cut_entry.as_ref().map(|(_, line)| line.clone());
    let by_base = e.lost_to_base();
    let base = match ar.spool_rest(&e) {
        Ok(base) => base,
        Err(spool) => {
            // The damage is reported even though nothing after it can be read: the run
            // ends with why the spool failed ($TMPDIR full or missing, the pipe's error).
            rep.warn(&format!(
                "{}: damaged while reading from a pipe ({e}); the entries before the damage were {verb}, none after it: the rest of the stream could not be copied to a temporary file to read past the damage",
                crate::fs::shown(archive)
            ));
            if let Some(w) = ar.spool_stopped() {
                rep.warn(&w);
            }
            if let Some(line) = &cut {
                rep.lost(line);
            }
            return Err(spool);
        }
    };
    let lost = ar.lost_with_pipe();
    // A delta frame stopped on its base: it and every frame after it were kept
    // (`replay`), so the spooled rest holds the index, which names each entry the
    // base's damage costs and counts them all, as salvage of the file does.
    // Or frames read ahead were lost with the pipe (never both: `spool_rest`): the index at
    // the spooled end still names every entry they held, and counts them all.
    let spooled_index = ar
        .replayed_from()
        .or(ar.lost_from_frame())
        .and_then(|seq| ar.read_index().ok().map(|(_, ix)| (seq, ix)));
    if let Some((seq, ix)) = spooled_index {
        let mut sw = crate::Collect::default();
        let cut_path = cut_entry.as_ref().map(|(p, _)| p.as_str());
        let r = salvage_after_from(ar, archive, &ix, t, verb, e, &mut sw, (seq, cut_path));
        rep.warn(&if lost {
            format!(
                "{}: damaged while reading from a pipe: the rest of the stream (from byte {base}) was copied to a temporary file and read past the damage with its index; the frames read ahead of it were lost with the pipe, and the index names each entry they held",
                crate::fs::shown(archive)
            )
        } else {
            format!(
                "{}: a delta block's base is damaged while reading from a pipe: the stream from that block on (byte {base}) was copied to a temporary file to read past it with its index",
                crate::fs::shown(archive)
            )
        });
        if let Some(line) = &cut {
            rep.lost(line);
        }
        sw.replay(rep);
        return r;
    }
    let mut sw = crate::Collect::default();
    match salvage_without_index(ar, archive, t, verb, e, &mut sw) {
        Err(Error::Salvaged {
            path,
            verb,
            restored,
            total,
            damaged,
            uncounted,
            code,
        }) => {
            let what = if by_base {
                "a delta block's base is damaged"
            } else {
                "damaged"
            };
            if lost {
                rep.warn(&format!(
                    "{}: {what} while reading from a pipe: the rest of the stream (from byte {base}) was copied to a temporary file to read past the damage; the frames read ahead of it were lost with the pipe",
                    crate::fs::shown(archive)
                ));
            } else {
                rep.warn(&format!(
                    "{}: {what} while reading from a pipe: the stream from that block on (byte {base}) was copied to a temporary file to read past it; no frame was lost with the pipe",
                    crate::fs::shown(archive)
                ));
            }
            if let Some(w) = ar.spool_stopped() {
                rep.warn(&w);
            }
            if let Some(line) = &cut {
                rep.lost(line);
            }
            sw.replay(rep);
            let cut = u64::from(cut.is_some());
            // The entries the scan completed before the damage count as restored.
            Err(Error::Salvaged {
                path,
                verb,
                restored: restored + before,
                total: total + before + cut,
                damaged: damaged + cut,
                uncounted,
                code,
            })
        }
        r => {
            // Nothing after the damage could be read (the pipe had been read ahead
            // to its end): as before spooling. A damaged index or footer alone lost
            // nothing else (the warnings say every data frame verified).
            sw.replay(rep);
            if !matches!(&r, Err(e) if ar.index_alone(e)) {
                rep.warn(&format!(
                "{}: damaged; salvage past the damage needs a seekable archive (a file or an s3:// object), not a pipe: the entries before the damage were read, none after it",
                crate::fs::shown(archive)
            ));
            }
            r
        }
    }
}
