//! `list` of an archive whose index cannot be read: the entries a front-to-back salvage
//! verified, listed before the run ends with its [`Error::Salvaged`].

use std::path::Path;

use super::{Tracker, is_index_damage, salvage_without_index};
use crate::Reporter;
use crate::archive::Visitor;
use crate::error::{Error, Result};
use crate::format::{EntryKind, EntryMeta};

/// Collects the entries a salvage verifies, as index entries (`list` of an archive whose
/// index cannot be read). Frame locations are unknown there and left 0.
#[derive(Default)]
struct ListVisitor {
    entries: Vec<crate::format::index::IndexEntry>,
    current: Option<crate::format::index::IndexEntry>,
}

impl ListVisitor {
    fn row(meta: &EntryMeta, size: u64) -> crate::format::index::IndexEntry {
        crate::format::index::IndexEntry {
            meta: meta.clone(),
            size,
            digest: None,
            first_seq: 0,
            first_offset: 0,
            last_seq: 0,
        }
    }
}

impl Visitor for ListVisitor {
    fn entry(&mut self, meta: &EntryMeta) -> Result<()> {
        if meta.kind == EntryKind::File {
            self.current = Some(Self::row(meta, 0));
        } else {
            self.entries.push(Self::row(meta, 0));
        }
        Ok(())
    }
    fn data(&mut self, _offset: u64, _bytes: &[u8]) -> Result<()> {
        Ok(())
    }
    fn end(&mut self, meta: &EntryMeta, size: u64) -> Result<()> {
        let mut e = self.current.take().unwrap_or_else(|| Self::row(meta, 0));
        e.size = size;
        self.entries.push(e);
        Ok(())
    }
    fn abort(&mut self) {
        self.current = None;
    }
}

/// What `list` shows: the index entries and data frame lengths, and, when the index could
/// not be read (a truncated archive, a damaged tail), the entries a front-to-back salvage
/// verified (every entry read and checked, as `test` does) with the [`Error::Salvaged`]
/// that ends the run (the frame lengths are then unknown: empty).
pub type Listing = (
    Vec<crate::format::index::IndexEntry>,
    Vec<u32>,
    Option<Error>,
);

/// [`crate::list_with`], going on without the index when it cannot be read (see
/// [`Listing`]). A pipe is listed as before (its index is read at its end).
pub fn list_or_salvage(
    archive: &Path,
    open: crate::archive::reader::OpenOptions,
    rep: &mut dyn Reporter,
) -> Result<Listing> {
    // A key given for an unencrypted archive is named as not used, as by `t` and `x`.
    let mut ar = crate::open_warning(archive, open, rep)?;
    if let Some(d) = ar.source().describe() {
        rep.detail(&d);
    }
    let r = if ar.seekable() {
        match ar.read_index() {
            Ok((_, ix)) => Ok((ix.entries, ix.frame_body_lens, None)),
            Err(e) if is_index_damage(&e) => {
                if ar.header().delta_base().is_some() && ar.base().is_none() {
                    // Front to back, a delta block decodes only against its base region.
                    rep.warn(&format!(
                        "{}: the index could not be read ({e}): listing a delta archive without its index reads its blocks, which needs its base",
                        crate::fs::shown(archive)
                    ));
                    ar.require_base()?;
                }
                let mut v = ListVisitor::default();
                let mut t = Tracker::new(&mut v);
                let s = salvage_without_index(&mut ar, archive, &mut t, "listed", e, rep);
                drop(t);
                match s {
                    Err(e @ Error::Salvaged { .. }) => Ok((v.entries, Vec::new(), Some(e))),
                    // The index or footer alone is damaged: every entry was read and
                    // verified front to back, and is listed before the run ends with it.
                    Err(e) if !v.entries.is_empty() => Ok((v.entries, Vec::new(), Some(e))),
                    Err(e) => Err(e),
                    Ok(_) => Ok((v.entries, Vec::new(), None)),
                }
            }
            Err(e) => Err(e),
        }
    } else {
        // With `--signer`, a stream that fails before its signature verified is refused
        // (exit 8), as from a file (`crate::unverifiable_stream`).
        let r = ar.read_index_streaming();
        crate::unverifiable_stream(&ar, archive, r).map(|ix| (ix.entries, ix.frame_body_lens, None))
    };
    crate::report_transfer(&ar, archive, rep);
    r
}
