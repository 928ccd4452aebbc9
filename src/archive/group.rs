//! The blocks of a format-2 stream taken together: the order rules that tie consecutive
//! blocks (stream offsets, groups of referencing blocks), the decoded blocks a referencing
//! block may copy from, and what a reader keeps of them.
//!
//! Decoded blocks are shared ([`SharedBlock`], an `Arc`): the reading thread delivers a
//! block's records while a decoder thread uses the same bytes as the reference of the block
//! after it (`reader::prefetch`), so level 9's chained blocks decode while the block before
//! them is hashed and written, without copying 64 MiB per block.

use std::collections::VecDeque;
use std::sync::Arc;

use super::blocks::{BlockInfo, Decoded, FrameFault};
use crate::codec::BlockDecoder;
use crate::format::FormatError;
use crate::format::limits::MAX_REFERENCE_LEN;

/// A decoded block shared between the thread that delivers it and a decoder that reads it as
/// a reference: its raw bytes are `buf[start..]` (`start` > 0 for a stored block decoded in
/// its frame body).
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedBlock {
    pub buf: Arc<Vec<u8>>,
    pub start: usize,
}

impl SharedBlock {
    /// A block owned by nobody else yet.
    pub fn new(buf: Vec<u8>, start: usize) -> SharedBlock {
        SharedBlock {
            buf: Arc::new(buf),
            start,
        }
    }

    /// The raw bytes.
    pub fn raw(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// The buffer back, when no decoder holds it any longer (to recycle it), with `start`.
    pub fn into_unique(self) -> Option<(Vec<u8>, usize)> {
        Arc::try_unwrap(self.buf).ok().map(|b| (b, self.start))
    }
}

/// The stream bytes just before a block, as far back as the blocks kept reach: what a
/// referencing block's zstd frame copies from. Cloning the shared blocks is cheap, so a
/// reference can travel to another thread while the blocks it names are still delivered.
#[derive(Clone, Default)]
pub(crate) struct Reference {
    parts: Vec<SharedBlock>,
    bytes: u64,
}

impl Reference {
    /// Bytes of stream this reference holds.
    #[cfg(test)]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Decodes the pending referencing block `d` with the `reference_len` stream bytes before
    /// it into `out` (a slice of the last block when it holds them all, else the kept blocks
    /// copied together). A reference longer than the bytes held is a format fault, never a
    /// read out of bounds.
    pub fn decode(
        &self,
        dec: &mut BlockDecoder,
        d: &Decoded,
        out: Vec<u8>,
    ) -> Result<Vec<u8>, (FrameFault, Vec<u8>)> {
        let need = d.info.reference_len as usize;
        if (self.bytes as usize) < need {
            return Err((
                FrameFault::Format(FormatError::invalid(
                    "block header",
                    format!("reference length {need} reaches before the blocks read"),
                )),
                out,
            ));
        }
        let joined;
        let prefix: &[u8] = match self.parts.last() {
            Some(b) if b.raw().len() >= need => &b.raw()[b.raw().len() - need..],
            _ => {
                let mut v = Vec::new();
                if let Err(o) = crate::memory::reserve_exact(&mut v, need, "a block's reference") {
                    return Err((FrameFault::OutOfMemory(o), out));
                }
                let mut skip = self.bytes as usize - need;
                for b in &self.parts {
                    let raw = b.raw();
                    if skip >= raw.len() {
                        skip -= raw.len();
                        continue;
                    }
                    v.extend_from_slice(&raw[skip..]);
                    skip = 0;
                }
                joined = v;
                &joined
            }
        };
        let mut out = out;
        match dec.decode_v2(
            d.info.codec,
            d.info.filter,
            d.info.stream_offset,
            &d.buf[d.start..],
            d.info.raw_len as usize,
            prefix,
            &mut out,
        ) {
            Ok(()) => Ok(out),
            Err(e) => Err((FrameFault::codec(e), out)),
        }
    }
}

/// The order rules of format 2's blocks within one stream, and the decoded blocks a
/// referencing block may need: the blocks of the current group, back to at most
/// [`MAX_REFERENCE_LEN`] bytes behind the current one.
///
/// Rules: each block's stream offset is the sum of the raw lengths before it (the first
/// block read may start anywhere when a reader starts in the middle: selective extraction
/// starts at a group start), and a block's reference stays within its group (at most the
/// stream bytes since the group's first block, a block with reference length 0).
#[derive(Default)]
pub(crate) struct Group {
    /// Decoded blocks of the current group before the current one.
    kept: VecDeque<SharedBlock>,
    kept_bytes: u64,
    /// Stream offset expected of the next block (None before the first).
    next_offset: Option<u64>,
    /// Stream offset of the current group's first block.
    group_start: u64,
}

impl Group {
    /// A group for a read that starts at the first data frame (seq 0), whose block must
    /// start at stream offset 0 (FORMAT.md §5: "0 for the first").
    pub fn at_stream_start() -> Group {
        Group {
            next_offset: Some(0),
            ..Group::default()
        }
    }

    /// Checks `info`'s stream offset and reference against the blocks before it.
    pub fn check(&mut self, info: &BlockInfo) -> Result<(), FormatError> {
        if let Some(want) = self.next_offset
            && info.stream_offset != want
        {
            return Err(FormatError::invalid(
                "block header",
                format!(
                    "stream offset {} where the blocks before it end at {want}",
                    info.stream_offset
                ),
            ));
        }
        if info.reference_len == 0 {
            self.group_start = info.stream_offset;
        } else if self.next_offset.is_none()
            || info.reference_len as u64 > info.stream_offset - self.group_start
        {
            return Err(FormatError::invalid(
                "block header",
                format!(
                    "reference length {} reaches before the first block of its group",
                    info.reference_len
                ),
            ));
        }
        self.next_offset = Some(info.stream_offset + info.raw_len as u64);
        Ok(())
    }

    /// Moves on past a block: the previous block (`prev`, decoded) is kept when the next one
    /// (`next`) references (its group goes on), and everything kept is handed back to `give`
    /// when it does not. Keeps no more than `need` bytes before the next block's start
    /// require: the largest reference of the blocks from `next` to the end of its group when
    /// the index's frame table is known ([`reference_needs`]), else a maximal reference
    /// ([`MAX_REFERENCE_LEN`]).
    pub fn advance(
        &mut self,
        prev: Option<SharedBlock>,
        next: &BlockInfo,
        need: u32,
        give: &mut dyn FnMut(SharedBlock),
    ) {
        let need = need.min(MAX_REFERENCE_LEN) as u64;
        if next.reference_len == 0 {
            for b in self.kept.drain(..) {
                give(b);
            }
            self.kept_bytes = 0;
            if let Some(b) = prev {
                give(b);
            }
            return;
        }
        if let Some(b) = prev {
            self.kept_bytes += b.raw().len() as u64;
            self.kept.push_back(b);
        }
        self.keep_last(need, give);
    }

    /// Hands the oldest kept blocks to `give` while the others still hold `keep` bytes.
    fn keep_last(&mut self, keep: u64, give: &mut dyn FnMut(SharedBlock)) {
        while let Some(b) = self.kept.front() {
            let len = b.raw().len() as u64;
            if self.kept_bytes - len < keep {
                break;
            }
            self.kept_bytes -= len;
            let b = self.kept.pop_front().expect("front exists");
            give(b);
        }
    }

    /// The current block (of `current_len` raw bytes) is decoded: keeps of the blocks before
    /// it only what the blocks after it still reference, `after` bytes back from its end
    /// ([`Needs::after`]), and hands the rest to `give`. So a block decoding ahead holds
    /// its own reference, not the one the current block needed.
    pub fn decoded(&mut self, current_len: u64, after: u32, give: &mut dyn FnMut(SharedBlock)) {
        let keep = u64::from(after.min(MAX_REFERENCE_LEN)).saturating_sub(current_len);
        self.keep_last(keep, give);
    }

    /// The `need` stream bytes just before the block after `current` (or fewer, when fewer
    /// are held: [`Reference::decode`] refuses those): the kept blocks, then `current` (the
    /// block being delivered, not kept yet) when given. Only the blocks that hold those bytes
    /// are named, so the others can be recycled meanwhile.
    pub fn reference(&self, current: Option<&SharedBlock>, need: u32) -> Reference {
        let mut parts: Vec<SharedBlock> = self.kept.iter().cloned().collect();
        parts.extend(current.cloned());
        let mut bytes: u64 = parts.iter().map(|b| b.raw().len() as u64).sum();
        while let Some(b) = parts.first() {
            let len = b.raw().len() as u64;
            if bytes - len < u64::from(need) {
                break;
            }
            bytes -= len;
            parts.remove(0);
        }
        Reference { parts, bytes }
    }

    /// Decodes a pending referencing block on this thread with the kept blocks as its
    /// reference ([`Reference::decode`]).
    pub fn resolve(
        &self,
        dec: &mut BlockDecoder,
        d: &Decoded,
        out: Vec<u8>,
    ) -> Result<Vec<u8>, (FrameFault, Vec<u8>)> {
        self.reference(None, d.info.reference_len)
            .decode(dec, d, out)
    }
}

/// What a reader must keep of a group, from the index's frame table (module doc): the
/// bytes each block and the blocks after it reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Needs {
    before: Vec<u32>,
    after: Vec<u32>,
}

impl Needs {
    /// The needs of a frame table's reference lengths `refs`.
    pub fn of(refs: &[u32]) -> Needs {
        let before = reference_needs(refs);
        let after = (0..refs.len())
            .map(|k| match refs.get(k + 1) {
                Some(&r) if r > 0 => before[k + 1],
                _ => 0,
            })
            .collect();
        Needs { before, after }
    }

    /// Bytes before block `seq`'s start that it or a later block of its group references
    /// ([`reference_needs`]); a maximal reference for a block past the table.
    pub fn before(&self, seq: u64) -> u32 {
        self.before
            .get(seq as usize)
            .copied()
            .unwrap_or(MAX_REFERENCE_LEN)
    }

    /// Bytes before block `seq`'s end that the blocks after it in its group reference: 0
    /// when the next block starts a group (then nothing up to `seq`'s end is needed once
    /// `seq` is decoded); a maximal reference for a block past the table.
    pub fn after(&self, seq: u64) -> u32 {
        self.after
            .get(seq as usize)
            .copied()
            .unwrap_or(MAX_REFERENCE_LEN)
    }

    /// Whether any block references.
    pub fn any(&self) -> bool {
        self.before.iter().any(|&n| n > 0)
    }
}

/// For each data frame of a frame table's reference lengths `refs`, the most bytes before
/// its block's start that it or a later block of its group references (the largest reference
/// from it to its group's end): what a reader must keep when it reaches that block. One
/// backward pass.
pub(crate) fn reference_needs(refs: &[u32]) -> Vec<u32> {
    let mut need = vec![0u32; refs.len()];
    let mut after = 0u32;
    for (i, &r) in refs.iter().enumerate().rev() {
        need[i] = r.max(after);
        // The block before this one carries the need on only within this block's group.
        after = if r > 0 { need[i] } else { 0 };
    }
    need
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Codec, Filter};

    fn info(offset: u64, len: u32, reference: u32) -> BlockInfo {
        BlockInfo {
            codec: Codec::Zstd,
            filter: Filter::None,
            raw_len: len,
            stream_offset: offset,
            first_record: Some(0),
            reference_len: reference,
        }
    }

    #[test]
    fn stream_offsets_must_add_up_and_references_stay_in_their_group() {
        let mut g = Group::default();
        g.check(&info(0, 100, 0)).unwrap();
        g.check(&info(100, 100, 100)).unwrap();
        g.check(&info(200, 100, 200)).unwrap();
        let e = g.check(&info(250, 10, 0)).unwrap_err().to_string();
        assert!(e.contains("end at 300"), "{e}");
        let mut g = Group::default();
        g.check(&info(0, 100, 0)).unwrap();
        g.check(&info(100, 100, 0)).unwrap();
        let e = g.check(&info(200, 100, 150)).unwrap_err().to_string();
        assert!(e.contains("before the first block of its group"), "{e}");
        // A reader that starts in the middle must start at a group start.
        let mut g = Group::default();
        assert!(g.check(&info(4096, 10, 5)).is_err());
        Group::default().check(&info(4096, 10, 0)).unwrap();
    }

    /// Regression (spec review): the first data block's stream offset was never checked, so
    /// an archive whose first block claimed offset 16 passed `test` (and a filtered block
    /// would have decoded with the wrong BCJ position).
    #[test]
    fn the_first_block_of_the_stream_starts_at_offset_0() {
        let e = Group::at_stream_start()
            .check(&info(16, 10, 0))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("stream offset 16 where the blocks before it end at 0"),
            "{e}"
        );
        Group::at_stream_start().check(&info(0, 10, 0)).unwrap();
    }

    #[test]
    fn kept_blocks_give_the_prefix_across_block_edges() {
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut enc = crate::codec::BlockEncoder::new(Some(crate::codec::Level::DEFAULT)).unwrap();
        let block = data[500..1800].to_vec();
        let prefix = &data[..2000];
        let mut payload = Vec::new();
        // The block that follows three blocks of 1000, 600 and 400 bytes references 1500.
        let got = enc
            .encode_referencing(&block, Filter::None, 2000, &prefix[500..], &mut payload)
            .unwrap();
        assert!(got.2, "referenced");
        let mut g = Group::default();
        let mut given = Vec::new();
        let parts = [(0usize, 1000usize), (1000, 1600), (1600, 2000)];
        g.advance(None, &info(0, 1000, 0), MAX_REFERENCE_LEN, &mut |b| {
            given.push(b.raw().len())
        });
        for (i, &(a, b)) in parts.iter().enumerate() {
            let next_ref = if i + 1 < parts.len() { 1 } else { 1500 };
            g.advance(
                Some(SharedBlock::new(data[a..b].to_vec(), 0)),
                &info(b as u64, 10, next_ref),
                MAX_REFERENCE_LEN,
                &mut |b| given.push(b.raw().len()),
            );
        }
        assert!(given.is_empty());
        let d = Decoded {
            buf: payload,
            start: 0,
            info: info(2000, block.len() as u32, 1500),
            pending: true,
            held: 0,
        };
        let mut dec = BlockDecoder::new().unwrap();
        let out = g.resolve(&mut dec, &d, Vec::new()).ok().unwrap();
        assert!(out == block);
        // The same bytes as a reference that names the block being delivered last: the three
        // kept blocks but the last one, then it as `current`, decoded on another thread.
        let mut g2 = Group::default();
        for &(a, b) in &parts[..2] {
            g2.advance(
                Some(SharedBlock::new(data[a..b].to_vec(), 0)),
                &info(b as u64, 10, 1),
                MAX_REFERENCE_LEN,
                &mut |_| panic!("nothing handed back inside a group"),
            );
        }
        let current = SharedBlock::new(data[1600..2000].to_vec(), 0);
        assert_eq!(
            g2.reference(Some(&current), 1000).bytes(),
            1000,
            "the first block is not needed"
        );
        let r = g2.reference(Some(&current), 2000);
        assert_eq!(r.bytes(), 2000);
        let moved = std::thread::spawn(move || {
            let mut dec = BlockDecoder::new().unwrap();
            r.decode(&mut dec, &d, Vec::new()).ok().unwrap()
        })
        .join()
        .unwrap();
        assert!(moved == block);
        // Once the decoder dropped its reference, the delivered block is unique again.
        assert!(current.into_unique().is_some());
        // A block that references nothing hands every kept block back.
        g.advance(None, &info(3300, 10, 0), MAX_REFERENCE_LEN, &mut |b| {
            given.push(b.raw().len())
        });
        assert_eq!(given, vec![1000, 600, 400]);
    }

    #[test]
    fn reference_needs_are_the_largest_reference_to_the_group_end() {
        assert_eq!(
            reference_needs(&[0, 5, 9, 3, 0, 0, 7, 2]),
            vec![9, 9, 9, 3, 0, 7, 7, 2]
        );
        assert_eq!(reference_needs(&[]), Vec::<u32>::new());
    }

    #[test]
    fn needs_after_a_block_are_what_the_rest_of_its_group_references() {
        let n = Needs::of(&[0, 5, 9, 3, 0, 0, 7, 2]);
        assert_eq!(n.before(2), 9);
        // After block 0: block 1 and later reference up to 9 bytes back from block 1's start.
        assert_eq!(
            (0..8).map(|k| n.after(k)).collect::<Vec<_>>(),
            vec![9, 9, 3, 0, 0, 7, 2, 0]
        );
        assert_eq!(n.after(8), MAX_REFERENCE_LEN, "past the table: keep all");
        assert!(n.any());
        assert!(!Needs::of(&[0, 0]).any());
    }

    #[test]
    fn a_decoded_block_lets_go_of_what_only_it_referenced() {
        let mut g = Group::default();
        let mut given = Vec::new();
        g.advance(
            Some(SharedBlock::new(vec![1; 1000], 0)),
            &info(1000, 600, 1000),
            1000,
            &mut |b| given.push(b.raw().len()),
        );
        // The 600-byte block decoded; the next one references 600 bytes: only itself.
        g.decoded(600, 600, &mut |b| given.push(b.raw().len()));
        assert_eq!(given, vec![1000]);
        // A next block that references 700 needs 100 bytes of the one before.
        let mut g = Group::default();
        given.clear();
        g.advance(
            Some(SharedBlock::new(vec![1; 1000], 0)),
            &info(1000, 600, 1000),
            1000,
            &mut |b| given.push(b.raw().len()),
        );
        g.decoded(600, 700, &mut |b| given.push(b.raw().len()));
        assert!(given.is_empty());
        assert_eq!(g.reference(None, 100).bytes(), 1000);
    }

    #[test]
    fn advance_keeps_only_what_the_group_still_needs() {
        let mut g = Group::default();
        let mut given = Vec::new();
        g.advance(None, &info(0, 1000, 0), 0, &mut |b| {
            given.push(b.raw().len())
        });
        g.advance(
            Some(SharedBlock::new(vec![1; 1000], 0)),
            &info(1000, 10, 900),
            900,
            &mut |b| given.push(b.raw().len()),
        );
        g.advance(
            Some(SharedBlock::new(vec![2; 600], 0)),
            &info(1600, 10, 500),
            500,
            &mut |b| given.push(b.raw().len()),
        );
        // The 1000-byte block is not needed for 500 bytes behind the 600-byte one.
        assert_eq!(given, vec![1000]);
        // Without the table, a maximal reference keeps everything.
        let mut g = Group::default();
        given.clear();
        g.advance(
            Some(SharedBlock::new(vec![1; 1000], 0)),
            &info(1000, 10, 900),
            MAX_REFERENCE_LEN,
            &mut |b| given.push(b.raw().len()),
        );
        g.advance(
            Some(SharedBlock::new(vec![2; 600], 0)),
            &info(1600, 10, 500),
            MAX_REFERENCE_LEN,
            &mut |b| given.push(b.raw().len()),
        );
        assert!(given.is_empty());
    }
}
