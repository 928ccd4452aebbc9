//! How the writer fills and cuts the blocks of the record stream (docs/FORMAT.md, "how krypta
//! writes"): records are appended to the current block; a block is cut when it holds
//! `cap` bytes (the block size rounded down to a multiple of 16), when the BCJ filter
//! changes (a block has one filter), or when a file under a grid filter cannot place its
//! next DATA head and one grid step of PAD in the room left. Every cut other than the last
//! pads the block with PAD records to a multiple of 16 bytes, so every block starts on a
//! 16-byte boundary of the stream: the BCJ position of a block is its stream offset, and
//! format 2 requires it to be a multiple of the filter's alignment (4 for arm, arm64,
//! powerpc, sparc; 2 for armthumb, riscv; 16 for ia64) instead of rounding it.
//!
//! Inside a block, the content of a file under a grid filter is put on the filter's
//! instruction grid: up to `align - 1` PAD records before a DATA head make its first content
//! byte land at a stream offset congruent to its file offset, so the filter sees the file's
//! instruction words whole (format 1's writer used one-byte DATA records for this).
//! Records never need to be cut at block ends: a record may span blocks, and each block
//! header says where the first record starting in it begins.

use std::io::Write;
use std::sync::Arc;

use super::chain::Prefix;
use super::seal::{Job, PREFIX, Sealed, new_block};
use super::write_opts::{ContentSource, STREAM_STALL};
use super::writer::ArchiveWriter;
use crate::codec::Filter;
use crate::error::{Error, Result};
use crate::format::frame::{FRAME_HEADER_LEN, FrameKind, TAG_LEN};
use crate::format::record::{self, DATA_HEAD_LEN};

/// How many PAD records must come before a DATA head at block offset `head_off` (the block
/// starts on a 16-byte boundary of the stream) so that its first content byte, of file offset
/// `offset`, lands on a filter grid of `align` bytes (a power of two, at most 16): the
/// smallest `p` with `head_off + p + 13 ≡ offset (mod align)`.
pub(crate) fn grid_pad(head_off: usize, offset: u64, align: usize) -> usize {
    let mask = align as u64 - 1;
    (offset.wrapping_sub((head_off + DATA_HEAD_LEN) as u64) & mask) as usize
}

/// Where to read on after `got`, an extent read into a buffer of `cap` bytes: right after
/// its bytes, when the source ended it at a producer's pause with room left
/// ([`ContentSource::paused`]); `None` when it is complete (the buffer full, the stream's
/// end, or not a stream). The writer reads a stream's extents whole, pauses or not, so the
/// archive's bytes (its DATA records, the BCJ filter chosen from the first extent) never
/// depend on timing: README, "Reproducible archives".
pub(super) fn read_on_at(
    got: Option<(u64, usize)>,
    cap: usize,
    src: &dyn ContentSource,
) -> Option<usize> {
    match got {
        Some((_, n)) if n < cap && src.paused() => Some(n),
        _ => None,
    }
}

/// `got` with `more`, read right after it, appended (a stream's offsets follow on).
pub(super) fn joined(
    got: Option<(u64, usize)>,
    more: Option<(u64, usize)>,
) -> Option<(u64, usize)> {
    match (got, more) {
        (Some((offset, n)), Some((next, m))) => {
            debug_assert_eq!(next, offset + n as u64, "a stream's extents follow on");
            Some((offset, n + m))
        }
        (got, _) => got,
    }
}

impl<W: Write> ArchiveWriter<W> {
    pub(super) fn write_out(&mut self, b: &[u8]) -> Result<()> {
        self.out
            .write_all(b)
            .map_err(|e| Error::io(&self.out_name, "write", e))?;
        self.offset += b.len() as u64;
        Ok(())
    }

    /// [`Error::OutOfMemory`] for this archive, with this run's advice.
    pub(super) fn out_of_memory(&self, source: crate::memory::OutOfMemory) -> Error {
        super::writer::out_of_memory(&self.out_name, source, &self.memory_advice)
    }

    fn emit(&mut self, sealed: Result<Sealed>) -> Result<()> {
        let Sealed {
            frame,
            in_block,
            reference_len,
        } = sealed.map_err(|e| match e {
            Error::OutOfMemory { source, .. } => self.out_of_memory(source),
            e => e,
        })?;
        let body_len = (frame.len() - FRAME_HEADER_LEN - TAG_LEN) as u32;
        if frame[0] == FrameKind::Data as u8 {
            self.frame_lens.push(body_len);
            self.frame_refs.push(reference_len);
        }
        if let Some((_, t)) = &mut self.signing {
            // Frames are emitted strictly in sequence order: the transcript's k-th tag is
            // frame k's.
            t.frame_tag(frame[frame.len() - TAG_LEN..].try_into().expect("32"));
        }
        self.write_out(&frame)?;
        if in_block {
            self.buffers.blocks.give(frame);
        } else {
            self.buffers.frames.give(frame);
        }
        Ok(())
    }

    /// Record bytes in the current block.
    pub(super) fn used(&self) -> usize {
        self.fill - PREFIX
    }

    /// Copies `bytes` to `block[fill..]` (the caller checked the room) and moves `fill`:
    /// over the initialised part, then appended (the buffer's length is never below `fill`).
    fn put(&mut self, bytes: &[u8]) {
        let end = self.fill + bytes.len();
        let init = self.block.len().clamp(self.fill, end);
        let (over, tail) = bytes.split_at(init - self.fill);
        self.block[self.fill..init].copy_from_slice(over);
        self.block.extend_from_slice(tail);
        self.fill = end;
    }

    /// Makes `block[..end]` initialised (zero-filling only what never was) so content can be
    /// read into it.
    pub(super) fn ensure_init(&mut self, end: usize) {
        if self.block.len() < end {
            self.block.resize(end, 0);
        }
    }

    /// Writes finished blocks in order until a worker is free.
    fn wait_for_capacity(&mut self) -> Result<()> {
        while !self.pool.has_capacity() {
            let r = self
                .pool
                .next_result()
                .map_err(|e| Error::Crypto(e.to_string()))?;
            if let Some(r) = r {
                self.emit(r)?;
            }
        }
        Ok(())
    }

    pub(super) fn submit(&mut self, job: Job) -> Result<()> {
        self.wait_for_capacity()?;
        self.pool
            .submit(job)
            .map_err(|e| Error::Crypto(e.to_string()))?;
        // Level 9 (referencing blocks, `super::chain`) fills the next block only once a worker
        // is free: a block filled early would wait seconds for zstd 19 while adding a whole
        // block to the peak (issue 13: at -j 1, 336 MiB against zstd's 275 MiB with it);
        // filling one takes tens of milliseconds against seconds of compressing it.
        if self.chain.is_some() {
            self.wait_for_capacity()?;
        }
        while let Some(r) = self
            .pool
            .try_next()
            .map_err(|e| Error::Crypto(e.to_string()))?
        {
            self.emit(r)?;
        }
        Ok(())
    }

    /// Before a read of `src` that would wait (a stream whose producer paused for
    /// [`STREAM_STALL`]), writes the frames sealed meanwhile, as they come, and flushes the
    /// output, until the input has bytes again or no block is in flight. Without this, sealed
    /// frames waited in memory for the next block's hand-over: a paused `pg_dump | krypta c -
    /// -` held up to the blocks in flight (4 at `-j 1`) from its reader, and a failed output
    /// went unnoticed, until more input came. (An `s3://` output still holds what is short of
    /// a part.) A file never waits: no `poll` at all.
    pub(super) fn write_sealed_while_input_waits(
        &mut self,
        src: &mut dyn ContentSource,
    ) -> Result<()> {
        let mut flushed = false;
        while !src.wait_readable(STREAM_STALL) {
            while let Some(r) = self
                .pool
                .try_next()
                .map_err(|e| Error::Crypto(e.to_string()))?
            {
                self.emit(r)?;
                flushed = false;
            }
            if !flushed {
                // The output's buffer too: a stalled `c - -` passes on all it has.
                self.out
                    .flush()
                    .map_err(|e| Error::io(&self.out_name, "write", e))?;
                flushed = true;
            }
            if self.pool.in_flight() == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Waits for every block in flight and writes them in order.
    pub(super) fn drain(&mut self) -> Result<()> {
        while let Some(r) = self
            .pool
            .next_result()
            .map_err(|e| Error::Crypto(e.to_string()))?
        {
            self.emit(r)?;
        }
        Ok(())
    }

    /// Notes that a record starts at the current position (for the block's first-record
    /// offset). The block is never full here: it is cut as soon as it is.
    fn mark_record(&mut self) {
        if self.first_record.is_none() {
            self.first_record = Some(self.used() as u32);
        }
    }

    /// Appends one whole record (its bytes may span blocks).
    pub(super) fn push_record(&mut self, mut bytes: &[u8]) -> Result<()> {
        self.mark_record();
        while !bytes.is_empty() {
            let room = self.cap - self.used();
            let n = room.min(bytes.len());
            self.put(&bytes[..n]);
            bytes = &bytes[n..];
            if self.used() == self.cap {
                self.cut()?;
            }
        }
        Ok(())
    }

    /// Cuts the current block (if it holds anything) after padding it to a multiple of 16
    /// bytes, so the next block starts on a 16-byte boundary of the stream.
    pub(super) fn flush_block(&mut self) -> Result<()> {
        if self.used() == 0 {
            return Ok(());
        }
        let pad = self.used().wrapping_neg() & 15;
        if pad > 0 {
            self.mark_record();
            self.put(&[record::TAG_PAD; 16][..pad]);
        }
        self.cut()
    }

    /// Cuts the last data block, unpadded.
    pub(super) fn flush_last_block(&mut self) -> Result<()> {
        if self.used() == 0 {
            return Ok(());
        }
        self.cut()
    }

    /// Hands the current block to the workers.
    fn cut(&mut self) -> Result<()> {
        let len = self.used() as u64;
        let next = new_block(&self.buffers.blocks, self.block_size)
            .map_err(|source| self.out_of_memory(source))?;
        let mut block = std::mem::replace(&mut self.block, next);
        block.truncate(self.fill);
        self.fill = PREFIX;
        let block = Arc::new(block);
        let prefix = match self.chain.as_mut() {
            Some(chain) => chain.prefix_for(self.submitted, &block, PREFIX),
            None => self.test_prefix(&block[PREFIX..])?,
        };
        let base = match self.delta.as_mut() {
            Some(d) => d.take_region()?,
            None => None,
        };
        let job = Job {
            header_kind: FrameKind::Data,
            last: false,
            seq: self.submitted,
            block,
            filter: self.block_filter,
            stream_offset: self.stream_pos,
            first_record: self.first_record.take(),
            prefix,
            base,
        };
        self.submitted += 1;
        self.stream_pos += len;
        self.submit(job)?;
        if let Some(p) = self.on_progress.as_mut() {
            p(self.content_bytes);
        }
        Ok(())
    }

    /// Test-only referencing blocks ([`super::write_opts::TestReference`]): the prefix the
    /// next block (`raw`) may reference, the tail (at most `max_len` bytes) of the stream
    /// bytes of its group, which may span several blocks. Waits for the blocks in flight
    /// first, so the group is known: a block that referenced nothing (the first of every
    /// `group_blocks`, or one that was stored) starts a group.
    fn test_prefix(&mut self, raw: &[u8]) -> Result<Prefix> {
        if self.reference.is_none() {
            return Ok(Prefix::none());
        }
        self.drain()?;
        let seq = self.submitted;
        let previous_started_group = self.frame_refs.last().is_none_or(|&r| r == 0);
        let Some((tr, state)) = self.reference.as_mut() else {
            return Ok(Prefix::none());
        };
        let mut group = if previous_started_group {
            Vec::new()
        } else {
            std::mem::take(&mut state.group_tail)
        };
        group.extend_from_slice(&state.previous);
        let keep = group.len().saturating_sub(tr.max_len);
        group.drain(..keep);
        let prefix = if seq.is_multiple_of(tr.group_blocks.max(1)) {
            Vec::new()
        } else {
            group.clone()
        };
        state.group_tail = group;
        state.previous = raw.to_vec();
        Ok(Prefix::owned(prefix))
    }

    /// (seq, offset) where the next record byte will land.
    pub(super) fn position(&self) -> (u64, u32) {
        (self.submitted, self.used() as u32)
    }

    /// Seq of the block holding the last byte pushed.
    pub(super) fn last_byte_seq(&self) -> u64 {
        if self.used() == 0 {
            self.submitted - 1
        } else {
            self.submitted
        }
    }

    /// Switches the block's filter, starting a new block if the current one holds data.
    pub(super) fn use_filter(&mut self, filter: Filter) -> Result<()> {
        if filter != self.block_filter {
            self.flush_block()?;
            self.block_filter = filter;
        }
        Ok(())
    }

    /// Writes the PAD and DATA records of `len` content bytes (file offset `offset`) that sit
    /// at `data_at` in the block, with the first record at `head_at` (the current fill), and
    /// moves `fill` past them. `data_at` was chosen for the extent continuing the file; when
    /// it does not (a hole before it) under a grid filter, the bytes are moved to where the
    /// real offset needs them (rare: holes in executables). The caller reserved
    /// `DATA_HEAD_LEN + align - 1` bytes in front of the data.
    pub(super) fn place_data(
        &mut self,
        head_at: usize,
        data_at: usize,
        offset: u64,
        len: usize,
        align: usize,
    ) {
        debug_assert_eq!(head_at, self.fill);
        let pad = grid_pad(head_at - PREFIX, offset, align);
        let main_head = head_at + pad;
        let main_data = main_head + DATA_HEAD_LEN;
        self.ensure_init(main_data + len);
        if data_at != main_data {
            self.block.copy_within(data_at..data_at + len, main_data);
        }
        self.mark_record();
        self.block[head_at..main_head].fill(record::TAG_PAD);
        let mut head = Vec::with_capacity(DATA_HEAD_LEN);
        record::write_data_head(&mut head, offset, len as u32);
        self.block[main_head..main_data].copy_from_slice(&head);
        self.fill = main_data + len;
        if let Some(d) = self.delta.as_mut() {
            d.note(offset, len as u64);
        }
    }
}
