//! The decoded record stream: frames read ahead into the pool, blocks delivered in order,
//! format 2's rules between blocks checked, referencing blocks decoded with their group (the
//! next one on a thread of its own while this one is delivered: `super::prefetch`).

use super::prefetch::{ChainThread, Resolved};
use super::*;
use crate::archive::group::{Group, Needs, SharedBlock};
use crate::format::limits::MAX_REFERENCE_LEN;

/// The decoded record stream: reads data frames ahead into the pool and yields their bytes
/// in order, checking format 2's rules between blocks (stream offsets, groups, first-record
/// offsets, reference lengths against the index) and decoding referencing blocks with the
/// blocks before them.
pub(super) struct Feed<'a> {
    pub(super) ar: &'a mut Archive,
    pub(super) pool: &'a mut FramePool,
    /// Frames submitted to the pool so far (the next frame's budget ticket).
    pub(super) submitted: u64,
    /// The current block's buffer: its raw bytes are `block.buf[base..]`, the next unread
    /// one is `block.buf[at]`. Shared with the thread decoding the next block against it.
    pub(super) block: SharedBlock,
    /// Budget bytes the current block holds.
    pub(super) block_held: u64,
    pub(super) base: usize,
    pub(super) at: usize,
    /// Seq of the current block (valid once one is loaded).
    pub(super) cur_seq: Option<u64>,
    pub(super) next_read_seq: u64,
    /// Bytes to drop from the start of the first delivered block (selective extraction).
    pub(super) skip: usize,
    /// Blocks before this seq are decoded (a later block of their group references them)
    /// but not delivered.
    pub(super) deliver_from: u64,
    /// (first, last) seq to read; None = all data frames until the first index frame.
    pub(super) range: Option<(u64, u64)>,
    /// The first index frame's header once seen (sequential mode).
    pub(super) stopped: bool,
    pub(super) index_offset: u64,
    pub(super) frames_done: u64,
    /// Bytes of the data frames loaded so far (header, body and tag).
    pub(super) frame_bytes: u64,
    /// Bytes those frames decoded to (their raw blocks: contents and records).
    pub(super) block_bytes: u64,
    pub(super) pending_index: bool,
    /// A problem met while reading ahead (a later frame's head, its sequence or LAST flag,
    /// a short read), held until every frame submitted before it was delivered: FORMAT.md
    /// §11 decides the exit code in frame order, so an earlier frame's failed tag wins.
    pub(super) deferred: Option<Error>,
    /// Format 2: stream offsets and the blocks a referencing block needs.
    pub(super) group: Group,
    /// Format 2: the current block's first-record offset, and whether a record start in it
    /// was seen (checked against it) or the block is the first of a selective run (whose
    /// first record parsed is at `skip`, not necessarily the block's first).
    pub(super) first_record: Option<u32>,
    pub(super) first_checked: bool,
    /// The tag of the last record parsed (0 before any; END and END_DIGEST both as TAG_END):
    /// for [`Feed::unmarked_reference_tail`].
    pub(super) last_tag: u8,
    /// Reference length of every block read (compared with the index's frame table).
    pub(super) refs_seen: Vec<u32>,
    /// The index's frame table, when known before reading (selective runs).
    pub(super) expected_refs: Option<&'a [u32]>,
    /// [`Needs`] of the index's frame table (from
    /// `expected_refs` on first use, or set by a scan that read the index first): how much of
    /// its group each block still needs, so the group keeps no more.
    pub(super) needs: Option<Needs>,
    pub(super) dec: Option<BlockDecoder>,
    /// A referencing block was met: from then on the next block is taken from the pool as
    /// soon as the current one is loaded, and decoded ahead when it references.
    pub(super) chained: bool,
    /// Whether this scan may decode ahead (the scans of `scan.rs`; not a salvage's probes).
    pub(super) may_decode_ahead: bool,
    /// The thread decoding the next referencing block against the current one, once started.
    pub(super) chain: Option<ChainThread>,
    /// The outcome of the decode made ahead of the block being loaded, used where a block
    /// decoded here would be.
    pub(super) resolved: Option<Resolved>,
    /// The next pool result, taken early but not decoded ahead (it needed no reference, or
    /// failed): the next block to load.
    pub(super) ahead: Option<frames::FrameResult>,
    /// The thread hashing large pieces of file content (`super::hashing`), once started.
    pub(super) hasher: Option<super::hashing::HashThread>,
    /// Whether the current block's bytes came out of the delta base (docs/FORMAT.md §16):
    /// it or an earlier block of its reference group was decoded against a base region.
    pub(super) block_on_base: bool,
    /// Whether a block loaded since the record parser last set it (to `block_on_base`, at
    /// an entry's first record) came out of the base: what a file was read with, so that a
    /// mismatch read with a damaged base is blamed on the base (`records`).
    pub(super) read_base: bool,
    /// Every block of the data (or of `range`) was delivered: the next one asked for was not
    /// there. A record parse that fails after this ran out of bytes; before it, it failed on
    /// bytes that verified (salvage tells the two apart: `resync`).
    pub(super) exhausted: bool,
}

impl<'a> Feed<'a> {
    pub(super) fn new(
        ar: &'a mut Archive,
        pool: &'a mut FramePool,
        range: Option<(u64, u64)>,
        deliver_from: u64,
    ) -> Self {
        let next_read_seq = range.map(|r| r.0).unwrap_or(0);
        Feed {
            ar,
            pool,
            submitted: 0,
            block: SharedBlock::default(),
            block_held: 0,
            base: 0,
            at: 0,
            cur_seq: None,
            next_read_seq,
            skip: 0,
            deliver_from,
            range,
            stopped: false,
            index_offset: 0,
            frames_done: 0,
            frame_bytes: 0,
            block_bytes: 0,
            pending_index: false,
            deferred: None,
            // A read from frame 0 starts the stream: its block is at offset 0. A read that
            // starts later (selective extraction, resynchronising) starts at a group start.
            group: if range.is_none_or(|r| r.0 == 0) {
                Group::at_stream_start()
            } else {
                Group::default()
            },
            first_record: None,
            first_checked: true,
            last_tag: 0,
            refs_seen: Vec::new(),
            expected_refs: None,
            needs: None,
            dec: None,
            chained: false,
            may_decode_ahead: false,
            chain: None,
            resolved: None,
            ahead: None,
            hasher: None,
            block_on_base: false,
            read_base: false,
            exhausted: false,
        }
    }

    /// (seq, offset) of the next byte.
    pub(super) fn position(&mut self) -> (u64, u32) {
        match self.cur_seq {
            Some(s) if self.at < self.block.buf.len() => (s, (self.at - self.base) as u32),
            Some(s) => (s + 1, 0),
            None => (self.deliver_from, self.skip as u32),
        }
    }

    pub(super) fn last_byte_seq(&self) -> u64 {
        self.cur_seq.unwrap_or(0)
    }

    /// A record starts at the next byte: loads the block that holds it (false at the end of
    /// the stream) and, in format 2, checks it against the block's first-record offset.
    pub(super) fn record_start(&mut self) -> Result<bool> {
        while self.at >= self.block.buf.len() {
            if !self.next_block()? {
                return Ok(false);
            }
        }
        if !self.first_checked {
            let at = (self.at - self.base) as u32;
            if self.unmarked_reference_tail(at) {
                return Ok(true);
            }
            self.first_checked = true;
            if self.first_record != Some(at) {
                return Err(self.corrupt_with(FormatError::invalid(
                    "block header",
                    format!(
                        "first record {:?} of block {}, but a record starts at {at}",
                        self.first_record,
                        self.cur_seq.unwrap_or(0)
                    ),
                )));
            }
        }
        Ok(true)
    }

    /// Whether the record starting at `at`, the first start seen in this block, is the
    /// BASE_REF or END_DIGEST of a referenced file whose ENTRY began in an earlier block and
    /// which the block's first-record offset skips: krypta's writers from bf4bda0 (2026-12-02)
    /// to c5951ed (2026-12-06) pushed a reference's ENTRY, BASE_REF and END_DIGEST as one
    /// record, so a block cut inside ENTRY or BASE_REF gave the next block the offset of the
    /// record after END_DIGEST (or none). Those archives are otherwise sound and stay
    /// readable (FORMAT.md §5.2): such a start is left unchecked and the block's next record
    /// start is checked instead. Only that shape passes: a BASE_REF right after an ENTRY or
    /// an END_DIGEST right after a BASE_REF, before the offset the block gives.
    fn unmarked_reference_tail(&self, at: u32) -> bool {
        use crate::format::record::{TAG_BASE_REF, TAG_END_DIGEST, TAG_ENTRY};
        let tag = self.block.buf.get(self.at).copied();
        let shape = matches!(
            (self.last_tag, tag),
            (TAG_ENTRY, Some(TAG_BASE_REF)) | (TAG_BASE_REF, Some(TAG_END_DIGEST))
        );
        shape && self.ar.version == Version::V2 && self.first_record.is_none_or(|first| first > at)
    }

    /// Format 2, on leaving the current block: a block in which no record started must say
    /// so.
    pub(super) fn check_left_block(&self) -> Result<()> {
        if !self.first_checked && self.first_record.is_some() {
            return Err(self.corrupt_with(FormatError::invalid(
                "block header",
                format!(
                    "block {} says a record starts at {:?}, but none does",
                    self.cur_seq.unwrap_or(0),
                    self.first_record
                ),
            )));
        }
        Ok(())
    }

    /// Keeps the pool busy: reads frames while it has room for another job and the byte
    /// budget admits another frame (`archive::budget`).
    pub(super) fn fill_pool(&mut self) -> Result<()> {
        match self.read_ahead() {
            Ok(()) => Ok(()),
            Err(e @ Error::Crypto(_)) => Err(e),
            Err(e) => {
                self.stopped = true;
                self.deferred = Some(e);
                Ok(())
            }
        }
    }

    fn read_ahead(&mut self) -> Result<()> {
        while !self.stopped && self.pool.pool.has_capacity() && self.pool.budget.admits() {
            if let Some((_, last)) = self.range
                && self.next_read_seq > last
            {
                self.stopped = true;
                break;
            }
            let job = self.ar.read_frame()?;
            if job.header.kind == FrameKind::Index {
                if self.range.is_some() {
                    return Err(self
                        .ar
                        .sequence_error(job.offset, "index frame inside the data range".into()));
                }
                // End of the data frames: remember where, and rewind over this frame so the
                // index reader sees it.
                self.index_offset = job.offset;
                self.stopped = true;
                self.pending_index = true;
                self.ar.pending_frame = Some(job);
                break;
            }
            self.ar.check_last_flag(&job)?;
            if job.header.seq != self.next_read_seq {
                let (off, seq) = (job.offset, job.header.seq);
                let structure = self.ar.sequence_error(
                    off,
                    format!(
                        "expected data frame seq {}, found seq {seq}",
                        self.next_read_seq
                    ),
                );
                return Err(self.ar.head_error(&job, self.next_read_seq, structure));
            }
            self.next_read_seq += 1;
            let mut job = job;
            job.ticket = self.submitted;
            self.submitted += 1;
            self.pool.budget.add_body(job.body.len() as u64);
            self.pool
                .pool
                .submit(job)
                .map_err(|e| Error::Crypto(e.to_string()))?;
        }
        Ok(())
    }

    /// Loads the next block to deliver; false at the end of the data. Blocks before
    /// `deliver_from` are decoded and kept for the references of the blocks after them.
    /// The current block is fully read when this is called: its budget bytes are given back
    /// first, so the budget's room is there for the frames still to come. (Blocks the group
    /// keeps for a later block's reference are no longer counted: at most
    /// `MAX_REFERENCE_LEN` bytes of them.)
    pub(super) fn next_block(&mut self) -> Result<bool> {
        loop {
            if self.cur_seq.is_some_and(|s| s >= self.deliver_from) {
                self.check_left_block()?;
            }
            // The hashing thread may still read the current block: it is given back below.
            self.hashing_caught_up()?;
            self.pool
                .budget
                .release(std::mem::take(&mut self.block_held));
            self.fill_pool()?;
            self.resolved = None;
            let Some((offset, h, r)) = self.next_result()? else {
                // Every frame before a read-ahead problem was delivered: now it counts.
                if let Some(e) = self.deferred.take() {
                    return Err(e);
                }
                self.exhausted = true;
                return Ok(false);
            };
            let mut decoded = r.map_err(|f| self.ar.fault(offset, h.seq, f))?;
            // Being delivered: a pipe's bytes before it need not be kept any longer
            // (`replay`).
            if let Some(r) = &self.ar.replay
                && let Ok(mut r) = r.lock()
            {
                r.release_before(offset, h.seq);
            }
            let info = decoded.info;
            if self.ar.version == Version::V2 {
                let problem = self.group.check(&info).err().or_else(|| {
                    self.expected_refs
                        .and_then(|t| t.get(h.seq as usize))
                        .filter(|&&r| r != info.reference_len)
                        .map(|r| {
                            FormatError::invalid(
                                "block header",
                                format!(
                                    "reference length {} where the index says {r}",
                                    info.reference_len
                                ),
                            )
                        })
                });
                if let Some(p) = problem {
                    return Err(self.ar.fault(offset, h.seq, FrameFault::Format(p)));
                }
            }
            self.refs_seen.push(info.reference_len);
            // A block that references none before it starts a group: its bytes come out of
            // the base when it is decoded against a base region, a later block's when it or
            // one of the group's blocks before it is.
            self.block_on_base =
                (self.block_on_base && info.reference_len > 0) || info.codec.reads_base();
            self.read_base |= self.block_on_base;
            // The block left behind: kept if this one references it, else recycled.
            let old = std::mem::take(&mut self.block);
            let prev = (self.cur_seq.is_some() && !old.buf.is_empty()).then_some(old);
            let buffers = self.ar.buffers.clone();
            if self.needs.is_none()
                && let Some(t) = self.expected_refs
            {
                self.needs = Some(Needs::of(t));
                self.chained |= self.needs.as_ref().is_some_and(Needs::any);
            }
            // A crafted stream may reference more than its table says: that is refused
            // (against `expected_refs` above, or at the end), and a reference that reaches
            // before the blocks kept is refused by `resolve`, never read out of bounds.
            let need = self
                .needs
                .as_ref()
                .map_or(MAX_REFERENCE_LEN, |n| n.before(h.seq));
            self.group
                .advance(prev, &info, need, &mut |b| buffers.recycle(b));
            if decoded.pending {
                self.chained = true;
                let resolved = match self.resolved.take() {
                    Some(r) => r,
                    None => {
                        let dec = match self.dec.as_mut() {
                            Some(d) => d,
                            None => self.dec.insert(
                                BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?,
                            ),
                        };
                        let out = self.ar.buffers.blocks.take();
                        self.group.resolve(dec, &decoded, out)
                    }
                };
                let raw = resolved.map_err(|(f, out)| {
                    self.ar.buffers.blocks.give(out);
                    self.ar.fault(offset, h.seq, f)
                })?;
                let body = std::mem::replace(&mut decoded.buf, raw);
                self.ar.buffers.bodies.give(body);
                decoded.start = 0;
                decoded.pending = false;
            }
            // Decoded: what only this block referenced can go (a pipe, without the table,
            // keeps a maximal reference).
            if let Some(n) = &self.needs {
                let len = (decoded.buf.len() - decoded.start) as u64;
                self.group
                    .decoded(len, n.after(h.seq), &mut |b| buffers.recycle(b));
            }
            self.block = SharedBlock::new(decoded.buf, decoded.start);
            self.block_held = decoded.held;
            self.base = decoded.start;
            self.cur_seq = Some(h.seq);
            self.frames_done += 1;
            self.frame_bytes += h.frame_len();
            self.block_bytes += (self.block.buf.len() - self.base) as u64;
            self.first_record = info.first_record;
            if h.seq < self.deliver_from {
                // Not delivered: only there for the references of the blocks after it.
                self.at = self.block.buf.len();
                self.first_checked = true;
                continue;
            }
            let skip = std::mem::take(&mut self.skip);
            self.at = self.base + skip.min(self.block.buf.len() - self.base);
            self.first_checked = self.ar.version == Version::V1;
            if skip > 0 && !self.first_checked {
                // A selective run starts at an entry's record, which need not be the first
                // record of its block, but is one.
                self.first_checked = true;
                // The block's header and the index are both the archive's own.
                if self.first_record.is_none_or(|f| f as usize > skip) {
                    return Err(self.own_corrupt(FormatError::invalid(
                        "block header",
                        format!(
                            "first record {:?} of block {} is after the entry at {skip}",
                            self.first_record, h.seq
                        ),
                    )));
                }
            }
            self.fill_pool()?;
            self.decode_ahead(h.seq)?;
            return Ok(true);
        }
    }

    /// The next up to `max` bytes (at least 1) of the stream, borrowed from the current
    /// block (no copy): fewer than `max` where the block ends.
    pub(super) fn take(&mut self, max: usize) -> Result<&[u8]> {
        let r = self.take_range(max)?;
        Ok(&self.block.buf[r])
    }

    /// [`Feed::take`] as a range of the current block's buffer ([`Feed::taken`] gives the
    /// bytes): the range can go to the hashing thread with the block.
    pub(super) fn take_range(&mut self, max: usize) -> Result<std::ops::Range<usize>> {
        while self.at >= self.block.buf.len() {
            if !self.next_block()? {
                return Err(self.corrupt("the stream ends inside a record"));
            }
        }
        let n = max.min(self.block.buf.len() - self.at);
        let start = self.at;
        self.at += n;
        Ok(start..start + n)
    }

    /// The bytes of a range [`Feed::take_range`] gave, until the next block is loaded.
    pub(super) fn taken(&self, r: std::ops::Range<usize>) -> &[u8] {
        &self.block.buf[r]
    }

    /// Drains the pool and reads past the rest of the data frames; returns (data frame count,
    /// offset of the first index frame). Sequential mode only.
    pub(super) fn finish_data(&mut self) -> Result<(u64, u64)> {
        if self.at < self.block.buf.len() {
            return Err(self.corrupt("bytes left over after the last record"));
        }
        while self.next_block()? {
            if self.block.buf.len() > self.base {
                return Err(self.corrupt("bytes left over after the last record"));
            }
        }
        if !self.pending_index {
            return Err(corrupt(
                &self.ar.path,
                self.ar.pos,
                FormatError::invalid("archive", "no index after the data frames"),
            ));
        }
        Ok((self.next_read_seq, self.index_offset))
    }
}

/// Errors inside the feed: a record-level format error (mapped with the archive path by
/// [`next_record`]) or any other error.
pub(super) enum FeedError {
    Format(FormatError),
    Other(Error),
}

impl From<FormatError> for FeedError {
    fn from(e: FormatError) -> Self {
        FeedError::Format(e)
    }
}

impl From<Error> for FeedError {
    fn from(e: Error) -> Self {
        FeedError::Other(e)
    }
}

pub(super) fn next_record(feed: &mut Feed<'_>) -> Result<Option<RecordHead>> {
    let version = feed.ar.version;
    let head = record::read_record(feed, version).map_err(|e| match e {
        FeedError::Format(f) => feed.corrupt_with(f),
        FeedError::Other(e) => e,
    })?;
    feed.last_tag = match &head {
        Some(RecordHead::Pad) => record::TAG_PAD,
        Some(RecordHead::Entry(_)) => record::TAG_ENTRY,
        Some(RecordHead::Data { .. }) => record::TAG_DATA,
        Some(RecordHead::End { .. }) => record::TAG_END,
        Some(RecordHead::BaseRef { .. }) => record::TAG_BASE_REF,
        None => 0,
    };
    Ok(head)
}

impl StreamSource for Feed<'_> {
    type Error = FeedError;
    fn fill(&mut self, buf: &mut [u8]) -> std::result::Result<bool, FeedError> {
        let mut done = 0;
        while done < buf.len() {
            if self.at >= self.block.buf.len() {
                if !self.next_block()? {
                    if done == 0 {
                        return Ok(false);
                    }
                    return Err(self.corrupt("the stream ends inside a record").into());
                }
                continue;
            }
            let n = (buf.len() - done).min(self.block.buf.len() - self.at);
            buf[done..done + n].copy_from_slice(&self.block.buf[self.at..self.at + n]);
            self.at += n;
            done += n;
        }
        Ok(true)
    }
}
