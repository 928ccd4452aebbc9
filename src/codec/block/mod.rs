//! Per-block encode (filter → zstd or store) and decode (zstd or store → unfilter), with one
//! reusable zstd context per worker thread. The encoder is here, the decoder in [`decode`]
//! (split along that seam to keep each file readable).

use zstd::bulk::Compressor;
use zstd::zstd_safe::CParameter;

use super::{Codec, CodecError, Filter, Level, MAX_BLOCK_SIZE, bcj};

mod against;
mod decode;
pub(crate) mod diff;
pub(crate) use against::{delta_frame_tables, delta_window_log, makes_diff};
pub use decode::{BlockDecoder, decode_stored_in_place};
pub use diff::encode::DiffEncoder;
pub use diff::{DiffError, Effort as DiffEffort, HEAD_LEN as DIFF_HEAD_LEN};
pub(crate) use diff::{diff_stream_levels, diff_table_bytes};

/// Block encoder, one per worker thread: reuses the zstd compression context (a few MiB to
/// ~100 MiB at level 9, set by libzstd from level and window) and a scratch buffer of one
/// block.
///
/// Frames are standard zstd frames (RFC 8878): content size in the frame header, no
/// dictionary, no checksum (block integrity is covered by the frame's MAC or BLAKE3 checksum).
pub struct BlockEncoder {
    cctx: Option<Compressor<'static>>,
    level: Option<Level>,
    scratch: Vec<u8>,
    /// The `diff+base` encoder and its buffers, made on the first block that uses it.
    diff: Option<Box<against::DiffState>>,
}

/// A libzstd error code as a [`CodecError`]: its allocation failure as
/// [`CodecError::OutOfMemory`] (zstd's working memory for the level, see
/// [`crate::memory::zstd_context_bytes`]), anything else as [`CodecError::Zstd`].
fn zstd_error(code: usize) -> CodecError {
    if crate::memory::zstd_out_of_memory(code) {
        return CodecError::OutOfMemory(crate::memory::OutOfMemory {
            bytes: 0,
            what: "zstd's compression context",
        });
    }
    CodecError::Zstd(std::io::Error::other(zstd::zstd_safe::get_error_name(code)))
}

/// [`zstd_error`] of a frame of `len` bytes at `level`: an allocation failure says about
/// how much the context needed ([`crate::memory::zstd_context_bytes`]).
fn compress_error(code: usize, level: Level, len: usize) -> CodecError {
    match zstd_error(code) {
        CodecError::OutOfMemory(mut o) => {
            o.bytes = crate::memory::zstd_context_bytes(level, len);
            CodecError::OutOfMemory(o)
        }
        e => e,
    }
}

/// A fresh compression context (a few KiB; zstd allocates its working memory on the
/// first block).
fn new_cctx() -> Result<zstd::zstd_safe::CCtx<'static>, CodecError> {
    zstd::zstd_safe::CCtx::try_create().ok_or(CodecError::OutOfMemory(crate::memory::OutOfMemory {
        bytes: 0,
        what: "zstd's compression context",
    }))
}

/// `raw` filtered into `scratch` (cleared first), which may not grow.
fn filtered<'a>(
    scratch: &'a mut Vec<u8>,
    raw: &[u8],
    filter: Filter,
    filter_start: u64,
) -> Result<&'a [u8], CodecError> {
    scratch.clear();
    crate::memory::reserve_exact(scratch, raw.len(), "the block's filtered copy")?;
    scratch.extend_from_slice(raw);
    bcj::encode(filter, scratch, filter_start);
    Ok(&scratch[..])
}

/// Room in `out` for a zstd frame of `len` input bytes.
fn frame_room(out: &mut Vec<u8>, len: usize) -> Result<(), CodecError> {
    let bound = zstd::zstd_safe::compress_bound(len);
    Ok(crate::memory::reserve(
        out,
        bound,
        "the block's compressed output",
    )?)
}

/// Sets krypta's parameters for `level` on a compression context: window, long-distance
/// matching at level 9, content size in the frame header, no checksum, no dictionary id.
fn set_params(c: &mut zstd::zstd_safe::CCtx<'_>, level: Level) -> Result<(), CodecError> {
    let e = zstd_error;
    c.set_parameter(CParameter::CompressionLevel(level.zstd_level()))
        .map_err(e)?;
    c.set_parameter(CParameter::WindowLog(level.window_log()))
        .map_err(e)?;
    if level.long_distance_matching() {
        // `false` would mean "auto" to libzstd, so only ever set it on.
        c.set_parameter(CParameter::EnableLongDistanceMatching(true))
            .map_err(e)?;
    }
    c.set_parameter(CParameter::ContentSizeFlag(true))
        .map_err(e)?;
    c.set_parameter(CParameter::ChecksumFlag(false))
        .map_err(e)?;
    c.set_parameter(CParameter::DictIdFlag(false)).map_err(e)?;
    Ok(())
}

impl BlockEncoder {
    /// A new encoder; `level` `None` stores every block (`-s`).
    pub fn new(level: Option<Level>) -> Result<Self, CodecError> {
        let cctx = match level {
            None => None,
            Some(level) => {
                let mut c = Compressor::new(level.zstd_level()).map_err(CodecError::Zstd)?;
                set_params(c.context_mut(), level)?;
                Some(c)
            }
        };
        Ok(BlockEncoder {
            cctx,
            level,
            scratch: Vec::new(),
            diff: None,
        })
    }

    /// True when this encoder stores every block (`-s`): then [`BlockEncoder::encode`] only
    /// copies, and a caller that owns the block may use it as the payload directly.
    pub fn stores(&self) -> bool {
        self.cctx.is_none()
    }

    /// Memory this encoder holds now, bytes: the zstd context (`ZSTD_sizeof_CCtx`, which grows
    /// to its working size on the first block) plus the filter scratch buffer.
    pub fn memory_bytes(&mut self) -> usize {
        let cctx = self.cctx.as_mut().map_or(0, |c| c.context_mut().sizeof());
        let diff = self.diff.as_ref().map_or(0, |d| d.memory_bytes());
        cctx + self.scratch.capacity() + diff
    }

    /// Encodes one block of `raw` bytes (1..=[`MAX_BLOCK_SIZE`]) into `out` (cleared first).
    ///
    /// Applies `filter` (BCJ, stream position `filter_start` mod 2^32, rounded down to
    /// [`bcj::alignment`]) to a copy of `raw`,
    /// compresses it to one zstd frame, and returns `(Codec::Zstd, filter)`. When the frame is
    /// not strictly smaller than `raw` (or the encoder stores), `out` holds `raw` itself,
    /// unfiltered, and the result is `(Codec::Store, Filter::None)`.
    pub fn encode(
        &mut self,
        raw: &[u8],
        filter: Filter,
        filter_start: u64,
        out: &mut Vec<u8>,
    ) -> Result<(Codec, Filter), CodecError> {
        out.clear();
        if raw.len() > MAX_BLOCK_SIZE {
            return Err(CodecError::TooLarge {
                len: raw.len() as u64,
            });
        }
        let Some(cctx) = self.cctx.as_mut() else {
            out.extend_from_slice(raw);
            return Ok((Codec::Store, Filter::None));
        };
        let input: &[u8] = if filter == Filter::None {
            raw
        } else {
            filtered(&mut self.scratch, raw, filter, filter_start)?
        };
        frame_room(out, input.len())?;
        let c = cctx.context_mut();
        let n = match c.compress2(out, input) {
            Ok(n) => n,
            Err(code) => {
                // As `Compressor::compress_to_buffer`: abandon the failed frame, so the
                // context can be used for the next block.
                let _ = c.reset(zstd::zstd_safe::ResetDirective::SessionOnly);
                let level = self.level.unwrap_or(Level::DEFAULT);
                return Err(compress_error(code, level, input.len()));
            }
        };
        if n < raw.len() {
            Ok((Codec::Zstd, filter))
        } else {
            out.clear();
            out.extend_from_slice(raw);
            Ok((Codec::Store, Filter::None))
        }
    }
}

impl BlockEncoder {
    /// [`BlockEncoder::encode`] with a raw-content prefix (format 2's reference length): the
    /// zstd frame may copy from `prefix`, the stream bytes right before the block, which a
    /// decoder must give back ([`BlockDecoder::decode_v2`]). Returns the codec and filter as
    /// `encode` does, and whether the prefix was used: a stored block never references, and
    /// an empty prefix (or the store mode) below level 9 is plain [`BlockEncoder::encode`].
    ///
    /// Uses a fresh compression context per call: zstd ties a referenced prefix to the
    /// context's lifetime, so the worker's long-lived context cannot take one. At a level that
    /// references ([`Level::references`], level 9) every block goes through a fresh context,
    /// also the first of a group (empty prefix), so a worker never holds two contexts of
    /// ~110 MiB at once; the context's allocation is nothing next to zstd 19's time per block.
    pub fn encode_referencing(
        &mut self,
        raw: &[u8],
        filter: Filter,
        filter_start: u64,
        prefix: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(Codec, Filter, bool), CodecError> {
        let Some(level) = self.level.filter(|l| !prefix.is_empty() || l.references()) else {
            let (c, f) = self.encode(raw, filter, filter_start, out)?;
            return Ok((c, f, false));
        };
        out.clear();
        if raw.len() > MAX_BLOCK_SIZE {
            return Err(CodecError::TooLarge {
                len: raw.len() as u64,
            });
        }
        let input: &[u8] = if filter == Filter::None {
            raw
        } else {
            filtered(&mut self.scratch, raw, filter, filter_start)?
        };
        let mut c = new_cctx()?;
        set_params(&mut c, level)?;
        let e = zstd_error;
        if !prefix.is_empty() {
            c.ref_prefix(prefix).map_err(e)?;
        }
        frame_room(out, raw.len())?;
        let n = c
            .compress2(out, input)
            .map_err(|code| compress_error(code, level, input.len()))?;
        if n < raw.len() {
            Ok((Codec::Zstd, filter, !prefix.is_empty()))
        } else {
            out.clear();
            out.extend_from_slice(raw);
            Ok((Codec::Store, Filter::None, false))
        }
    }
}

#[cfg(test)]
mod tests;
