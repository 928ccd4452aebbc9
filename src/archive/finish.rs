//! The end of an archive ([`ArchiveWriter::finish`]): the last data block, the index frames
//! (the index stream cut into blocks of at most 4 MiB, never filtered, referencing nothing),
//! the signature frame when signing, the footer, and the recovery section when one was asked
//! for. Split from `writer.rs`, which owns the rest of the writer.

use std::io::Write;
use std::sync::Arc;

use super::chain::Prefix;
use super::seal::{Job, PREFIX, new_block};
use super::writer::{ArchiveWriter, WRITE_VERSION, WriteSummary};
use crate::codec::Filter;
use crate::error::{Error, Result};
use crate::format::FormatError;
use crate::format::footer::{FOOTER_FLAG_SIGNATURE, FOOTER_LEN, Footer};
use crate::format::frame::FrameKind;
use crate::format::index::Index;
use crate::format::index_v2::index_len;
use crate::format::limits::MAX_INDEX_LEN;
use crate::format::signature::SignatureFrame;

impl<W: Write> ArchiveWriter<W> {
    /// Writes the last data block, the index frames and the footer; returns the totals and
    /// the inner writer (flushed).
    pub fn finish(mut self) -> Result<(WriteSummary, W)> {
        if let Some(d) = &self.delta {
            d.walk_result()?;
        }
        self.flush_last_block()?;
        self.drain()?;
        let data_frames = self.submitted;
        let total = index_len(self.index_entries_len, data_frames);
        if total > MAX_INDEX_LEN {
            return Err(Error::Unwritable {
                what: crate::fs::shown(&self.out_name),
                problem: FormatError::invalid(
                    "index",
                    format!("{total} bytes (at most {MAX_INDEX_LEN})"),
                ),
            });
        }
        let index_offset = self.offset;
        let index = Index {
            entries: std::mem::take(&mut self.entries),
            frame_body_lens: std::mem::take(&mut self.frame_lens),
            frame_ref_lens: std::mem::take(&mut self.frame_refs),
        };
        let entries = index.entries.len() as u64;
        let bytes = index.write(WRITE_VERSION);
        debug_assert_eq!(bytes.len() as u64, total);
        // Index blocks reference nothing: the last data block's copy is no longer needed.
        self.chain = None;
        let chunk = self.block_size.min(crate::codec::DEFAULT_BLOCK_SIZE);
        let chunks: Vec<&[u8]> = bytes.chunks(chunk).collect();
        let n = chunks.len() as u64;
        let mut index_pos = 0u64;
        for (i, c) in chunks.into_iter().enumerate() {
            let mut block = new_block(&self.buffers.blocks, c.len())
                .map_err(|source| self.out_of_memory(source))?;
            block.truncate(PREFIX);
            block.extend_from_slice(c);
            let job = Job {
                header_kind: FrameKind::Index,
                last: i as u64 + 1 == n,
                seq: self.submitted,
                block: Arc::new(block),
                filter: Filter::None,
                stream_offset: index_pos,
                first_record: Some(0),
                prefix: Prefix::none(),
                base: None,
            };
            index_pos += c.len() as u64;
            self.submitted += 1;
            self.submit(job)?;
        }
        self.drain()?;
        let footer = Footer {
            index_offset,
            data_frames,
            index_frames: n,
        };
        let flags = if self.signing.is_some() {
            FOOTER_FLAG_SIGNATURE
        } else {
            0
        };
        let untagged = footer.untagged_with_flags(WRITE_VERSION, flags);
        let tag = self.protection.footer_tag(&self.archive_id, &untagged);
        let mut fb = [0u8; FOOTER_LEN];
        fb[..32].copy_from_slice(&untagged);
        fb[32..].copy_from_slice(&tag);
        if let Some((sk, transcript)) = self.signing.take() {
            // Every byte before the signature frame is in the transcript, and the footer is
            // known: sign, then write the signature frame and the footer.
            debug_assert_eq!(transcript.frames(), self.submitted);
            let pk = sk.public();
            let signature = sk.sign(&transcript.message(&pk, &fb));
            let frame = SignatureFrame {
                seq: self.submitted,
                signer: Box::new(*pk.as_bytes()),
                signature: Box::new(signature),
            };
            let bytes = frame.to_bytes(&self.archive_id);
            self.write_out(&bytes)?;
        }
        self.write_out(&fb)?;
        self.out
            .flush()
            .map_err(|e| Error::io(&self.out_name, "write", e))?;
        let out_name = self.out_name.clone();
        let (out, section) = self.out.finish().map_err(|source| Error::Recovery {
            path: out_name,
            source,
        })?;
        let recovery_bytes = section.map_or(0, |s| s.layout.file_len - self.offset);
        let summary = WriteSummary {
            entries,
            content_bytes: self.content_bytes,
            data_frames,
            archive_bytes: self.offset + recovery_bytes,
            recovery_bytes,
            base_references: self.delta.as_ref().map_or(0, |d| d.referenced),
        };
        Ok((summary, out))
    }
}
