//! The writer's side of base references (docs/FORMAT.md §16.5): a file of a delta archive
//! whose content is identical to its matched base file is stored as `ENTRY, BASE_REF,
//! END_DIGEST` — 9 bytes naming the base entry instead of its content.
//!
//! **When.** The file being added is matched to a base file by path ([`super::delta`]'s
//! matching rule: no content matching across paths, so a renamed identical file is stored
//! with its content, compressed against nothing). It is stored as a reference exactly when
//! (1) the base's index stores the base file's digest (krypta stores one for every file of
//! at least 4 KiB; a base file without one is never referenced); (2) the new file's size as
//! opened equals the base file's and is at least [`REF_MIN`] (64 KiB); (3) its source can
//! be read twice (a file; not a pipe); and (4) the BLAKE3 of all of its content read now,
//! holes as zeros, equals the base file's digest. The record's END_DIGEST holds that digest
//! and the size read.
//!
//! **Why 64 KiB.** Smaller identical files are cheaper as content compressed against the
//! base (`zstd+base`): there the new record stream repeats the base's — ENTRY, DATA, END
//! of file after file — and zstd covers runs of whole files with one match, while a
//! BASE_REF breaks the run at every file (the 9 bytes of the record are literals). Measured
//! (/usr/share/doc, 4,075 files, 105 MiB, against itself; archive sizes): every identical
//! file as a reference 343,814 bytes; from 4 KiB 329,336; from 16 KiB 307,249; from 64 KiB
//! 299,463; from 1 MiB 300,468; none 304,639. From 64 KiB on, references cost no more than
//! the content blocks they replace and save the writer compressing them and the reader
//! decoding delta blocks: a 6 MiB identical file is 59 bytes of records instead of a few
//! hundred bytes per 4 MiB block.
//!
//! **Cost.** Deciding (4) needs the new file's digest before its first record is placed, so
//! a candidate is read once to hash it (1 MiB at a time, into one reused buffer). When the
//! digest matches — the common case for an unchanged file of a new version — that is the
//! only read, and nothing is compressed; when it does not (same size, other content, e.g. a
//! VM image written in place), the file is read a second time for its content. A file that
//! changes between the two reads is stored as read the second time, as any file is.

use std::io::Write;

use super::writer::{ArchiveWriter, ContentSource};
use crate::codec::Filter;
use crate::error::Result;
use crate::format::EntryMeta;
use crate::format::index::IndexEntry;
use crate::format::record;

/// Bytes hashed per read while deciding: 1 MiB.
const HASH_STEP: usize = 1 << 20;

/// The smallest file stored as a reference: 64 KiB (module doc, "Which files").
pub const REF_MIN: u64 = 64 << 10;

impl<W: Write> ArchiveWriter<W> {
    /// Files stored as base references so far (0 for an archive that is not a delta).
    pub fn base_references(&self) -> u64 {
        self.delta.as_ref().map_or(0, |d| d.referenced)
    }

    /// Stores the file being added (its ENTRY not placed yet) as a reference to its base file
    /// when the module doc's rules allow: `Some((size, digest))` then. `None`: stored with
    /// its content by the caller, the source rewound when it was read.
    pub(super) fn add_reference(
        &mut self,
        meta: &EntryMeta,
        src: &mut dyn ContentSource,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Option<(u64, [u8; 32])>> {
        let Some(base) = self.delta.as_ref().and_then(|d| d.current()).cloned() else {
            return Ok(None);
        };
        // The index's digest here; whether the base's stream agrees is asked only of a file
        // that matches it (the walk may not have reached the base file yet: `delta::walk`).
        let Some(want) = base.indexed_digest() else {
            return Ok(None);
        };
        if base.size < REF_MIN || src.final_size() != base.size || !src.can_rewind() {
            return Ok(None);
        }
        let mut buf = std::mem::take(&mut self.first);
        buf.resize(HASH_STEP, 0);
        let mut hasher = blake3::Hasher::new();
        let mut hashed_to = 0u64;
        let read = (|| -> Result<()> {
            while let Some((offset, len)) = src.read_extent(&mut buf)? {
                super::hash_zeros(&mut hasher, offset.saturating_sub(hashed_to));
                hasher.update(&buf[..len]);
                hashed_to = offset + len as u64;
            }
            Ok(())
        })();
        self.first = buf;
        read?;
        let size = src.final_size().max(hashed_to);
        super::hash_zeros(&mut hasher, size - hashed_to);
        let digest: [u8; 32] = *hasher.finalize().as_bytes();
        if size != base.size || digest != want || base.digest() != Some(digest) {
            src.rewind()?;
            return Ok(None);
        }
        self.use_filter(Filter::None)?;
        if self
            .delta
            .as_ref()
            .is_some_and(|d| !d.reference_fits(&base))
            && self.used() > 0
        {
            self.flush_block()?;
        }
        if let Some(d) = self.delta.as_mut() {
            d.note_reference(&base);
        }
        let (first_seq, first_offset) = self.position();
        // Three records, each pushed as one: a block's first-record offset (FORMAT.md §5) is
        // where the first record *starting* in it starts, and a block cut inside ENTRY puts
        // the start of BASE_REF or END_DIGEST in the next block.
        let mut rec = Vec::with_capacity(64 + meta.path.len());
        record::write_entry(&mut rec, meta, super::writer::WRITE_VERSION);
        self.push_record(&rec)?;
        rec.clear();
        record::write_base_ref(&mut rec, base.entry);
        self.push_record(&rec)?;
        rec.clear();
        record::write_end(&mut rec, size, Some(&digest), super::writer::WRITE_VERSION);
        self.push_record(&rec)?;
        self.delta_end_file();
        self.content_bytes += size;
        if let Some(d) = self.delta.as_mut() {
            d.referenced += 1;
        }
        progress(self.content_bytes);
        self.entries.push(IndexEntry {
            meta: meta.clone(),
            size,
            digest: Some(digest),
            first_seq,
            first_offset,
            last_seq: self.last_byte_seq(),
        });
        Ok(Some((size, digest)))
    }
}
