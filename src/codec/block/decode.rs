//! Block decode (zstd or store → unfilter), one reusable zstd context per worker thread; the
//! counterpart of [`super::BlockEncoder`].

use zstd::bulk::Decompressor;
use zstd::zstd_safe::DParameter;

use super::{Codec, CodecError, Filter, MAX_BLOCK_SIZE, bcj, zstd_error};

/// Window log bound given to the decompressor: `MAX_BLOCK_SIZE` = 2^28 bytes. Single-shot
/// decoding into a buffer of the block's size needs no window buffer of its own.
const DECODE_WINDOW_LOG_MAX: u32 = 28;

/// Block decoder, one per worker thread: reuses the zstd decompression context (~160 KiB).
/// Decoding a block allocates `raw_len` bytes of output (when `out` is not already that big;
/// [`BlockDecoder::decode_v2_into`] writes into the caller's slice instead)
/// and nothing that depends on the payload; undoing the x86 or ARM64 filter needs no more,
/// the other filters (only ever set with `--bcj`) take one more copy of the block.
pub struct BlockDecoder {
    dctx: Decompressor<'static>,
    /// The worker's delta base region buffer (`zstd+base` blocks), kept across blocks so a
    /// region is assembled into memory already faulted in, not a fresh buffer each block;
    /// in huge pages ([`crate::codec::huge`]) for its first faults.
    pub region: crate::codec::huge::HugeBuf,
    /// The worker's buffer for reading a delta base's frames, kept likewise.
    pub frame: Vec<u8>,
    /// The `diff+base` decoder's stream buffers, kept likewise.
    diff: super::diff::decode::DiffBufs,
}

impl BlockDecoder {
    /// A new decoder.
    pub fn new() -> Result<Self, CodecError> {
        let mut dctx = Decompressor::new().map_err(CodecError::Zstd)?;
        dctx.set_parameter(DParameter::WindowLogMax(DECODE_WINDOW_LOG_MAX))
            .map_err(CodecError::Zstd)?;
        Ok(BlockDecoder {
            dctx,
            region: Default::default(),
            frame: Vec::new(),
            diff: Default::default(),
        })
    }

    /// Decodes `payload` into `out` (cleared first), which ends up exactly `raw_len` bytes
    /// (1..=[`MAX_BLOCK_SIZE`]), then undoes `filter` with start `filter_start`.
    ///
    /// A zstd payload must be exactly one frame whose header declares `raw_len` as its content
    /// size; anything else (a size lie either way, trailing bytes, a truncated or garbage
    /// frame) is an error, checked before `out` grows. On error `out` is left empty.
    pub fn decode(
        &mut self,
        codec: Codec,
        filter: Filter,
        filter_start: u64,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        out.clear();
        check_raw(codec, payload, raw_len)?;
        if codec == Codec::Store {
            crate::memory::reserve_exact(out, raw_len, "a decoded block")?;
            out.extend_from_slice(payload);
        } else {
            check_frame(payload, raw_len)?;
            crate::memory::reserve_exact(out, raw_len, "a decoded block")?;
            // zstd writes into the spare capacity and sets the length: no zero-fill of
            // the block first (that memset was ~4% of an extraction).
            let n = match self.dctx.decompress_to_buffer(payload, out) {
                Ok(n) => n,
                Err(e) => {
                    out.clear();
                    return Err(CodecError::Zstd(e));
                }
            };
            if let Err(e) = check_len(n, raw_len) {
                out.clear();
                return Err(e);
            }
        }
        bcj::decode(filter, out, filter_start);
        Ok(())
    }
}

impl BlockDecoder {
    /// Decodes a format-2 block that references nothing (no prefix) into `out`, exactly its
    /// raw length: as [`BlockDecoder::decode_v2`] with an empty prefix, for a caller whose
    /// buffer is not a `Vec` (a delta base's frames, decoded into huge pages:
    /// `archive::reader::base`). On error `out`'s bytes are unspecified.
    pub fn decode_v2_into(
        &mut self,
        codec: Codec,
        filter: Filter,
        filter_start: u64,
        payload: &[u8],
        out: &mut [u8],
    ) -> Result<(), CodecError> {
        let raw_len = out.len();
        check_raw(codec, payload, raw_len)?;
        if codec == Codec::Store {
            out.copy_from_slice(payload);
        } else {
            crate::codec::zframe::check_v2(payload, raw_len)?;
            check_frame(payload, raw_len)?;
            let n = self
                .dctx
                .decompress_to_buffer(payload, out)
                .map_err(CodecError::Zstd)?;
            check_len(n, raw_len)?;
        }
        bcj::decode(filter, out, filter_start);
        Ok(())
    }

    /// Decodes a format-2 block: as [`BlockDecoder::decode`], but a zstd payload must follow
    /// format 2's frame rules ([`crate::codec::zframe::check_v2`]: one frame, content size R, no
    /// dictionary id, a window of at most 512 MiB, no trailing bytes), and with a non-empty
    /// `prefix` (the `reference length` stream bytes right before the block, already
    /// decoded) the frame is decoded with that prefix as raw content (ZSTD_DCtx_refPrefix),
    /// in a fresh context whose window limit covers a maximal block and reference.
    #[allow(clippy::too_many_arguments)]
    pub fn decode_v2(
        &mut self,
        codec: Codec,
        filter: Filter,
        stream_offset: u64,
        payload: &[u8],
        raw_len: usize,
        prefix: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        out.clear();
        if codec == Codec::Store || prefix.is_empty() {
            if codec == Codec::Zstd {
                crate::codec::zframe::check_v2(payload, raw_len)?;
            }
            return self.decode(codec, filter, stream_offset, payload, raw_len, out);
        }
        if raw_len > MAX_BLOCK_SIZE {
            return Err(CodecError::TooLarge {
                len: raw_len as u64,
            });
        }
        crate::codec::zframe::check_v2(payload, raw_len)?;
        let mut d = zstd::zstd_safe::DCtx::create();
        let e = zstd_error;
        d.set_parameter(DParameter::WindowLogMax(REFERENCE_WINDOW_LOG_MAX))
            .map_err(e)?;
        d.ref_prefix(prefix).map_err(e)?;
        crate::memory::reserve_exact(out, raw_len, "a decoded block")?;
        let n = match d.decompress(out, payload) {
            Ok(n) => n,
            Err(code) => {
                out.clear();
                return Err(e(code));
            }
        };
        if let Err(e) = check_len(n, raw_len) {
            out.clear();
            return Err(e);
        }
        bcj::decode(filter, out, stream_offset);
        Ok(())
    }
}

impl BlockDecoder {
    /// Decodes a `diff+base` block (codec 3, docs/FORMAT.md §16.6): `payload` is what
    /// follows the 16-byte region descriptor, `region` the base bytes it names. `out` ends up
    /// exactly `raw_len` bytes, then `filter` is undone; on error it is left empty.
    pub fn decode_diff(
        &mut self,
        filter: Filter,
        stream_offset: u64,
        payload: &[u8],
        raw_len: usize,
        region: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        self.decode_diff_pieces(filter, stream_offset, payload, raw_len, &[region], out)
    }

    /// [`BlockDecoder::decode_diff`] against the region made of `parts` in order (the
    /// decoded base blocks it spans, read where they lie, not copied into one buffer:
    /// `codec::block::diff::source`).
    pub fn decode_diff_pieces(
        &mut self,
        filter: Filter,
        stream_offset: u64,
        payload: &[u8],
        raw_len: usize,
        parts: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        out.clear();
        if raw_len > MAX_BLOCK_SIZE {
            return Err(CodecError::TooLarge {
                len: raw_len as u64,
            });
        }
        super::diff::decode::decode_pieces(&mut self.diff, payload, parts, raw_len, out)?;
        bcj::decode(filter, out, stream_offset);
        Ok(())
    }
}

/// Window log bound of a decoder given a reference prefix: 2^29 bytes, a maximal block and a
/// maximal reference ([`crate::format::limits::MAX_ZSTD_WINDOW`]).
const REFERENCE_WINDOW_LOG_MAX: u32 = 29;

/// Decodes a stored block in place: checks that `payload` is exactly `raw_len` bytes
/// (1..=[`MAX_BLOCK_SIZE`]) and undoes `filter` on it with start `filter_start`. The
/// zero-copy counterpart of [`BlockDecoder::decode`] for [`Codec::Store`], which readers use
/// so a stored block is never copied. Errors: `TooLarge`, `SizeMismatch`; `payload` is left
/// unchanged on error.
pub fn decode_stored_in_place(
    filter: Filter,
    filter_start: u64,
    payload: &mut [u8],
    raw_len: usize,
) -> Result<(), CodecError> {
    if raw_len > MAX_BLOCK_SIZE {
        return Err(CodecError::TooLarge {
            len: raw_len as u64,
        });
    }
    if payload.len() != raw_len {
        return Err(CodecError::SizeMismatch {
            expected: raw_len as u64,
            got: payload.len() as u64,
        });
    }
    bcj::decode(filter, payload, filter_start);
    Ok(())
}

/// Checks that `payload` is exactly one zstd frame declaring `raw_len` bytes of content.
/// The checks of every decode before it writes: the raw length within a block's limit, a
/// block that needs no base region, and a stored payload exactly that long.
fn check_raw(codec: Codec, payload: &[u8], raw_len: usize) -> Result<(), CodecError> {
    if raw_len > MAX_BLOCK_SIZE {
        return Err(CodecError::TooLarge {
            len: raw_len as u64,
        });
    }
    if codec.reads_base() {
        return Err(CodecError::Zstd(std::io::Error::other(format!(
            "a {} block decodes only against its base region",
            codec.name()
        ))));
    }
    if codec == Codec::Store && payload.len() != raw_len {
        return Err(CodecError::SizeMismatch {
            expected: raw_len as u64,
            got: payload.len() as u64,
        });
    }
    Ok(())
}

/// A zstd frame decoded to `n` bytes where its block declares `raw_len`.
fn check_len(n: usize, raw_len: usize) -> Result<(), CodecError> {
    if n != raw_len {
        return Err(CodecError::SizeMismatch {
            expected: raw_len as u64,
            got: n as u64,
        });
    }
    Ok(())
}

fn check_frame(payload: &[u8], raw_len: usize) -> Result<(), CodecError> {
    let declared = match zstd::zstd_safe::get_frame_content_size(payload) {
        Ok(Some(n)) => n,
        Ok(None) => return Err(CodecError::NoContentSize),
        Err(_) => return Err(CodecError::NotAFrame),
    };
    if declared != raw_len as u64 {
        return Err(CodecError::SizeMismatch {
            expected: raw_len as u64,
            got: declared,
        });
    }
    let frame_len =
        zstd::zstd_safe::find_frame_compressed_size(payload).map_err(|_| CodecError::Truncated)?;
    if frame_len != payload.len() {
        return Err(CodecError::TrailingData {
            frame_len: frame_len as u64,
            payload_len: payload.len() as u64,
        });
    }
    Ok(())
}
