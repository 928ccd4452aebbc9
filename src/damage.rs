//! Going on past damage in `extract` and `test` (issue 11 §1): the ordinary scan runs first
//! (nothing changes for an intact archive); when it fails with damage and the archive's
//! index verified, [`salvage_after`] restores every entry the damage did not touch
//! ([`crate::archive::reader::Salvage`]), names every entry it did in a warning, and ends
//! with [`Error::Salvaged`] ("restored N of M entries, K damaged"), whose exit code is the
//! worst failure's (5 unencrypted, 2 encrypted). The entries the failed scan had already
//! restored are tracked by path ([`Tracker`]) and neither read nor written again.
//!
//! A damaged entry never reaches its final name: salvage never gives its bytes to the
//! visitor, and the file the failed scan was writing when it failed was aborted there (its
//! temporary file removed by the extractor).

use std::collections::HashSet;
use std::path::Path;

use crate::archive::Visitor;
use crate::archive::reader::{Archive, ScanSummary};
use crate::error::{AuthCheck, Error, Result};
use crate::format::EntryKind;
use crate::format::EntryMeta;
use crate::format::index::Index;
use crate::{Reporter, WantAll};

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

/// Whether a failed scan is damage that salvage reads past: a frame tag, a structure that
/// does not parse or breaks a rule, a digest. Not: I/O, the filesystem, usage.
pub(crate) fn is_damage(e: &Error) -> bool {
    matches!(
        e.root(),
        Error::Damaged { .. }
            | Error::Integrity { .. }
            | Error::Corrupt { .. }
            | Error::AuthFailed {
                check: AuthCheck::FrameMac | AuthCheck::Structure | AuthCheck::FooterMac,
                ..
            }
    )
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
        .filter(|&i| tracker.done.contains(&index.entries[i].meta.path))
        .collect();
    let s = ar.salvage_selected(index, &wanted, &skip, &mut WantAll(tracker.inner))?;
    if s.damaged.is_empty() {
        return Err(first);
    }
    let sealed = ar.header().encrypted();
    for b in &s.bad_frames {
        let kind = if sealed {
            "archive damaged or modified"
        } else {
            "archive damaged"
        };
        rep.warn(&format!(
            "{}: {kind} at byte {} (frame {}): {}",
            archive.display(),
            b.offset,
            b.seq,
            b.what
        ));
    }
    let not = if verb == "verified" {
        "not verified"
    } else {
        "not restored"
    };
    for d in &s.damaged {
        rep.warn(&format!("{}: {not}: {}", d.path, d.why));
    }
    let total = wanted.len() as u64;
    let damaged = s.damaged.len() as u64;
    Err(Error::Salvaged {
        path: archive.into(),
        verb,
        restored: total - damaged,
        total,
        damaged,
        sealed,
    })
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
    let s = ar.salvage_stream(tracker)?;
    let sealed = ar.header().encrypted();
    rep.warn(&format!(
        "{}: the index could not be read ({first}): reading front to back without it",
        archive.display()
    ));
    for l in &s.lost {
        let kind = if sealed {
            "archive damaged or modified"
        } else {
            "archive damaged"
        };
        rep.warn(&format!(
            "{}: {kind} at byte {} (frame {}): {}",
            archive.display(),
            l.offset,
            l.seq,
            l.what
        ));
    }
    let not = if verb == "verified" {
        "not verified"
    } else {
        "not restored"
    };
    for (p, why) in &s.damaged {
        rep.warn(&format!("{p}: {not}: {why}"));
    }
    if s.budget_hit {
        rep.warn(&format!(
            "{}: stopped resynchronising: the damaged region cost more than {} times the archive's length in checks",
            archive.display(),
            crate::archive::reader::MAC_BUDGET_FACTOR
        ));
    }
    rep.warn(&format!(
        "{}: without the index, entries wholly inside lost bytes cannot be named (their number is unknown), the entries read could not be compared with the index, and files without a stored digest (format 2: under 4 KiB) were checked by their frame tags only",
        archive.display()
    ));
    let damaged = s.damaged.len() as u64;
    Err(Error::Salvaged {
        path: archive.into(),
        verb,
        restored: s.restored,
        total: s.restored + damaged,
        damaged,
        sealed,
    })
}
