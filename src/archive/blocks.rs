//! Decoding one verified frame body into its block, for both format versions.
//!
//! A worker ([`decode_body`]) parses the block header, checks the rules that need only the
//! body (and the frame kind), and decodes the payload: stored blocks in place, zstd blocks
//! into a recycled buffer. A format-2 block with a reference length cannot be decoded alone
//! — its zstd frame copies from the stream bytes before it — so the worker leaves it
//! *pending* (verified and decrypted), and the reader decodes it in stream order with its
//! reference (`super::group`): on a decoder thread of its own while the block before it is
//! delivered (`reader::prefetch`), so level 9's chained blocks decode while the reading
//! thread hashes and writes. The rules that tie consecutive blocks together live in
//! `super::group`.

use crate::codec::{BlockDecoder, Codec, Filter, decode_stored_in_place};
use crate::format::block::{BLOCK_HEADER_LEN_V2, BaseRegion, BlockHeaderV2};
use crate::format::frame::{BLOCK_HEADER_LEN, BlockHeader, FrameKind};
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
    /// A buffer to decode into could not be allocated: krypta's want, not the frame's fault.
    OutOfMemory(crate::memory::OutOfMemory),
    /// The scan ended while the frame waited for room in the byte budget
    /// (`archive::budget`).
    Stopped,
    /// A `zstd+base` block whose base region could not be had: no base was given, or the
    /// base frames it needs could not be read or are damaged.
    Base(super::reader::BaseFault),
}

impl FrameFault {
    /// A codec error: [`FrameFault::OutOfMemory`] for a refused allocation, else
    /// [`FrameFault::Codec`] (the payload does not decode).
    pub(crate) fn codec(e: crate::codec::CodecError) -> Self {
        match e {
            crate::codec::CodecError::OutOfMemory(o) => FrameFault::OutOfMemory(o),
            e => FrameFault::Codec(e.to_string()),
        }
    }

    /// Whether a buffer could not be allocated (for the frame or its base region): the run
    /// stops with [`crate::Error::OutOfMemory`] rather than skip the frame as damaged.
    pub(crate) fn out_of_memory(&self) -> bool {
        matches!(
            self,
            FrameFault::OutOfMemory(_)
                | FrameFault::Base(super::reader::BaseFault::OutOfMemory { .. })
        )
    }
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
    let codec_fault = FrameFault::codec;
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
    if info.codec.reads_base() {
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
            Err((FrameFault::codec(e), body))
        }
    }
}

/// [`decode_body`] of a `zstd+base` or `diff+base` block: the region descriptor, then the zstd
/// frame decoded with the region's base bytes as its raw-content prefix, or the diff payload
/// decoded against them.
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
        return Err((FrameFault::Base(super::reader::BaseFault::NoBase), body));
    };
    if info.codec == Codec::DiffBase {
        // Read where the base blocks lie, not copied into one buffer
        // (`reader::base_region`).
        let spanned = match base.region_blocks(dec, &region, u64::from(info.raw_len)) {
            Ok(b) => b,
            Err(m) => return Err((FrameFault::Base(m), body)),
        };
        let mut out = blocks.take();
        let r = dec.decode_diff_pieces(
            info.filter,
            info.stream_offset,
            frame,
            info.raw_len as usize,
            &spanned.parts(),
            &mut out,
        );
        drop(spanned);
        return decoded(r, out, body, info, blocks, bodies);
    }
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
