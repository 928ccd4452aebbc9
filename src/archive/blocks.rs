//! Decoding one verified frame body into its block, for both format versions, and the rules
//! that tie consecutive blocks of a stream together in format 2 (stream offsets, groups of
//! referencing blocks).
//!
//! A worker ([`decode_body`]) parses the block header, checks the rules that need only the
//! body (and the frame kind), and decodes the payload: stored blocks in place, zstd blocks
//! into a recycled buffer. A format-2 block with a reference length cannot be decoded alone
//! — its zstd frame copies from the stream bytes before it — so the worker leaves it
//! *pending* (verified and decrypted), and the thread that consumes blocks in order decodes
//! it with its prefix ([`Group::resolve`]). So blocks that reference nothing (everything
//! krypta writes today) decode in parallel as before, and referencing blocks decode in stream
//! order on the reading thread: correct, but not parallel. The level-9 writer that will use
//! references (issue 13) may dispatch whole groups to workers instead.

use crate::codec::{BlockDecoder, Codec, Filter, decode_stored_in_place};
use crate::format::block::{BLOCK_HEADER_LEN_V2, BaseRegion, BlockHeaderV2};
use crate::format::frame::{BLOCK_HEADER_LEN, BlockHeader, FrameKind};
use crate::format::limits::MAX_REFERENCE_LEN;
use crate::format::{FormatError, Version};

use super::pipeline::Buffers;
use super::reader::BaseArchive;

/// What went wrong with one frame, before the caller adds the archive path.
#[derive(Debug)]
pub(crate) enum FrameFault {
    /// The tag did not verify.
    Tag,
    /// The block header (or a rule between blocks) is malformed.
    Format(FormatError),
    /// The payload does not decode.
    Codec(String),
    /// The scan ended while the frame waited for room in the byte budget
    /// (`archive::budget`).
    Stopped,
    /// A `zstd+base` block whose base region could not be had: no base was given, or the
    /// base frames it needs are damaged (the message names the base, frame and byte).
    Base(String),
}

/// The block header fields a reader needs after decoding, for either version (format 1's
/// blocks have no first-record offset and no reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockInfo {
    pub codec: Codec,
    pub filter: Filter,
    pub raw_len: u32,
    /// Format 2's stream offset; format 1's filter start.
    pub stream_offset: u64,
    /// Format 2: offset of the first record starting in the block (`None`: none does).
    /// Format 1: `None` (unknown).
    pub first_record: Option<u32>,
    /// Format 2's reference length (0 in format 1).
    pub reference_len: u32,
}

/// A decoded block: its raw bytes are `buf[start..]` (a stored block is decoded in place,
/// after its block header), or, when `pending`, `buf[start..]` is the still-encoded zstd
/// payload of a referencing block.
pub(crate) struct Decoded {
    pub buf: Vec<u8>,
    pub start: usize,
    pub info: BlockInfo,
    pub pending: bool,
    /// Bytes taken from the reader's byte budget for it (0 outside a pool; set by the
    /// caller of [`decode_body`]).
    pub held: u64,
}

impl Decoded {
    /// The raw bytes (not for a pending block).
    pub fn raw(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

/// Parses the block header of a verified `body` of a `version` frame of `kind`.
pub(crate) fn block_info(
    body: &[u8],
    version: Version,
    kind: FrameKind,
) -> Result<(BlockInfo, usize), FormatError> {
    Ok(match version {
        Version::V1 => {
            let h = BlockHeader::parse(body)?;
            (
                BlockInfo {
                    codec: h.codec,
                    filter: h.filter,
                    raw_len: h.raw_len,
                    stream_offset: h.filter_start,
                    first_record: None,
                    reference_len: 0,
                },
                BLOCK_HEADER_LEN,
            )
        }
        Version::V2 => {
            let h = BlockHeaderV2::parse(body)?;
            h.check_for(kind)?;
            (
                BlockInfo {
                    codec: h.codec,
                    filter: h.filter,
                    raw_len: h.raw_len,
                    stream_offset: h.stream_offset,
                    first_record: h.first_record,
                    reference_len: h.reference_len,
                },
                BLOCK_HEADER_LEN_V2,
            )
        }
    })
}

/// Decodes a verified (decrypted) frame `body` of `version` and `kind`: a stored block in
/// place (the body becomes the block), a zstd block into a buffer from `blocks` (the body is
/// handed back to `bodies`), a referencing zstd block not at all (pending: see the module
/// doc).
///
/// A `zstd+base` block (delta archives) is decoded here too, against its region of `base`
/// (fetched, verified and cached by [`BaseArchive`]): it references nothing of its own
/// stream, so delta blocks decode in parallel like independent ones.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_body(
    dec: &mut BlockDecoder,
    version: Version,
    kind: FrameKind,
    mut body: Vec<u8>,
    blocks: &Buffers,
    bodies: &Buffers,
    base: Option<&BaseArchive>,
) -> Result<Decoded, (FrameFault, Vec<u8>)> {
    let (info, hl) = match block_info(&body, version, kind) {
        Ok(x) => x,
        Err(e) => return Err((FrameFault::Format(e), body)),
    };
    let codec_fault = |e: crate::codec::CodecError| FrameFault::Codec(e.to_string());
    if info.codec == Codec::Store {
        return match decode_stored_in_place(
            info.filter,
            info.stream_offset,
            &mut body[hl..],
            info.raw_len as usize,
        ) {
            Ok(()) => Ok(Decoded {
                buf: body,
                start: hl,
                info,
                pending: false,
                held: 0,
            }),
            Err(e) => Err((codec_fault(e), body)),
        };
    }
    if info.codec == Codec::ZstdBase {
        return decode_against_base(dec, info, hl, body, blocks, bodies, base);
    }
    if info.reference_len > 0 {
        return Ok(Decoded {
            buf: body,
            start: hl,
            info,
            pending: true,
            held: 0,
        });
    }
    let mut out = blocks.take();
    let payload = &body[hl..];
    let r = match version {
        Version::V1 => dec.decode(
            info.codec,
            info.filter,
            info.stream_offset,
            payload,
            info.raw_len as usize,
            &mut out,
        ),
        Version::V2 => dec.decode_v2(
            info.codec,
            info.filter,
            info.stream_offset,
            payload,
            info.raw_len as usize,
            &[],
            &mut out,
        ),
    };
    decoded(r, out, body, info, blocks, bodies)
}

/// The end of a decode into `out`: the decoded block (the frame body goes back to `bodies`),
/// or the codec's fault with the body (the output buffer goes back to `blocks`).
fn decoded(
    r: Result<(), crate::codec::CodecError>,
    out: Vec<u8>,
    body: Vec<u8>,
    info: BlockInfo,
    blocks: &Buffers,
    bodies: &Buffers,
) -> Result<Decoded, (FrameFault, Vec<u8>)> {
    match r {
        Ok(()) => {
            bodies.give(body);
            Ok(Decoded {
                buf: out,
                start: 0,
                info,
                pending: false,
                held: 0,
            })
        }
        Err(e) => {
            blocks.give(out);
            Err((FrameFault::Codec(e.to_string()), body))
        }
    }
}

/// [`decode_body`] of a `zstd+base` block: the region descriptor, then the zstd frame decoded
/// with the region's base bytes as its raw-content prefix.
fn decode_against_base(
    dec: &mut BlockDecoder,
    info: BlockInfo,
    hl: usize,
    body: Vec<u8>,
    blocks: &Buffers,
    bodies: &Buffers,
    base: Option<&BaseArchive>,
) -> Result<Decoded, (FrameFault, Vec<u8>)> {
    let (region, frame) = match BaseRegion::parse(&body[hl..]) {
        Ok(x) => x,
        Err(e) => return Err((FrameFault::Format(e), body)),
    };
    let Some(base) = base else {
        return Err((
            FrameFault::Base("a delta block needs its base archive (--base)".into()),
            body,
        ));
    };
    let mut prefix = std::mem::take(&mut dec.region);
    if let Err(m) = base.region(dec, &region, &mut prefix) {
        dec.region = prefix;
        return Err((FrameFault::Base(m), body));
    }
    let mut out = blocks.take();
    let r = dec.decode_v2(
        Codec::Zstd,
        info.filter,
        info.stream_offset,
        frame,
        info.raw_len as usize,
        &prefix,
        &mut out,
    );
    dec.region = prefix;
    decoded(r, out, body, info, blocks, bodies)
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
    /// Decoded blocks of the current group before the current one: (buffer, start).
    kept: std::collections::VecDeque<(Vec<u8>, usize)>,
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

    /// Moves on past a block: the previous block (`prev`, decoded, `buf[start..]`) is kept
    /// when the next one (`next`) references (its group goes on), and everything kept is
    /// handed back to `give` when it does not. Keeps no more than `need` bytes before the
    /// next block's start require: the largest reference of the blocks from `next` to the
    /// end of its group when the index's frame table is known ([`reference_needs`]), else
    /// a maximal reference ([`MAX_REFERENCE_LEN`]).
    pub fn advance(
        &mut self,
        prev: Option<(Vec<u8>, usize)>,
        next: &BlockInfo,
        need: u32,
        give: &mut dyn FnMut(Vec<u8>, usize),
    ) {
        let need = need.min(MAX_REFERENCE_LEN) as u64;
        if next.reference_len == 0 {
            for (b, s) in self.kept.drain(..) {
                give(b, s);
            }
            self.kept_bytes = 0;
            if let Some((b, s)) = prev {
                give(b, s);
            }
            return;
        }
        if let Some((b, s)) = prev {
            self.kept_bytes += (b.len() - s) as u64;
            self.kept.push_back((b, s));
        }
        while let Some((b, s)) = self.kept.front() {
            let len = (b.len() - s) as u64;
            if self.kept_bytes - len < need {
                break;
            }
            self.kept_bytes -= len;
            let (b, s) = self.kept.pop_front().expect("front exists");
            give(b, s);
        }
    }

    /// Decodes a pending referencing block with the `reference_len` stream bytes before it,
    /// taken from the kept blocks (a slice of the last one when it holds them all, else
    /// copied together).
    pub fn resolve(
        &self,
        dec: &mut BlockDecoder,
        d: &mut Decoded,
        out: Vec<u8>,
    ) -> Result<Vec<u8>, (FrameFault, Vec<u8>)> {
        let need = d.info.reference_len as usize;
        if (self.kept_bytes as usize) < need {
            return Err((
                FrameFault::Format(FormatError::invalid(
                    "block header",
                    format!("reference length {need} reaches before the blocks read"),
                )),
                out,
            ));
        }
        let joined;
        let prefix: &[u8] = match self.kept.back() {
            Some((b, s)) if b.len() - s >= need => &b[b.len() - need..],
            _ => {
                let mut v = Vec::with_capacity(need);
                let mut skip = self.kept_bytes as usize - need;
                for (b, s) in &self.kept {
                    let raw = &b[*s..];
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
            Err(e) => Err((FrameFault::Codec(e.to_string()), out)),
        }
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
        g.advance(None, &info(0, 1000, 0), MAX_REFERENCE_LEN, &mut |b, _| {
            given.push(b.len())
        });
        for (i, &(a, b)) in parts.iter().enumerate() {
            let next_ref = if i + 1 < parts.len() { 1 } else { 1500 };
            g.advance(
                Some((data[a..b].to_vec(), 0)),
                &info(b as u64, 10, next_ref),
                MAX_REFERENCE_LEN,
                &mut |b, _| given.push(b.len()),
            );
        }
        assert!(given.is_empty());
        let mut d = Decoded {
            buf: payload,
            start: 0,
            info: info(2000, block.len() as u32, 1500),
            pending: true,
            held: 0,
        };
        let mut dec = BlockDecoder::new().unwrap();
        let out = g.resolve(&mut dec, &mut d, Vec::new()).ok().unwrap();
        assert!(out == block);
        // A block that references nothing hands every kept block back.
        g.advance(None, &info(3300, 10, 0), MAX_REFERENCE_LEN, &mut |b, _| {
            given.push(b.len())
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
    fn advance_keeps_only_what_the_group_still_needs() {
        let mut g = Group::default();
        let mut given = Vec::new();
        g.advance(None, &info(0, 1000, 0), 0, &mut |b, _| given.push(b.len()));
        g.advance(
            Some((vec![1; 1000], 0)),
            &info(1000, 10, 900),
            900,
            &mut |b, _| given.push(b.len()),
        );
        g.advance(
            Some((vec![2; 600], 0)),
            &info(1600, 10, 500),
            500,
            &mut |b, _| given.push(b.len()),
        );
        // The 1000-byte block is not needed for 500 bytes behind the 600-byte one.
        assert_eq!(given, vec![1000]);
        // Without the table, a maximal reference keeps everything.
        let mut g = Group::default();
        given.clear();
        g.advance(
            Some((vec![1; 1000], 0)),
            &info(1000, 10, 900),
            MAX_REFERENCE_LEN,
            &mut |b, _| given.push(b.len()),
        );
        g.advance(
            Some((vec![2; 600], 0)),
            &info(1600, 10, 500),
            MAX_REFERENCE_LEN,
            &mut |b, _| given.push(b.len()),
        );
        assert!(given.is_empty());
    }
}
