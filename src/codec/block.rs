//! Per-block encode (filter → zstd or store) and decode (zstd or store → unfilter), with one
//! reusable zstd context per worker thread.

use zstd::bulk::{Compressor, Decompressor};
use zstd::zstd_safe::{CParameter, DParameter};

use super::{Codec, CodecError, Filter, Level, MAX_BLOCK_SIZE, bcj};

/// Window log bound given to the decompressor: `MAX_BLOCK_SIZE` = 2^28 bytes. Single-shot
/// decoding into a buffer of the block's size needs no window buffer of its own.
const DECODE_WINDOW_LOG_MAX: u32 = 28;

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
}

/// A libzstd error code as a [`CodecError`].
fn zstd_error(code: usize) -> CodecError {
    CodecError::Zstd(std::io::Error::other(zstd::zstd_safe::get_error_name(code)))
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
        cctx + self.scratch.capacity()
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
            self.scratch.clear();
            self.scratch.extend_from_slice(raw);
            bcj::encode(filter, &mut self.scratch, filter_start);
            &self.scratch
        };
        out.reserve(zstd::zstd_safe::compress_bound(input.len()));
        let n = cctx
            .compress_to_buffer(input, out)
            .map_err(CodecError::Zstd)?;
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
            self.scratch.clear();
            self.scratch.extend_from_slice(raw);
            bcj::encode(filter, &mut self.scratch, filter_start);
            &self.scratch
        };
        let mut c = zstd::zstd_safe::CCtx::create();
        set_params(&mut c, level)?;
        let e = zstd_error;
        if !prefix.is_empty() {
            c.ref_prefix(prefix).map_err(e)?;
        }
        out.reserve(zstd::zstd_safe::compress_bound(raw.len()));
        let n = c.compress2(out, input).map_err(e)?;
        if n < raw.len() {
            Ok((Codec::Zstd, filter, !prefix.is_empty()))
        } else {
            out.clear();
            out.extend_from_slice(raw);
            Ok((Codec::Store, Filter::None, false))
        }
    }
}

impl BlockEncoder {
    /// Compresses `raw` (unfiltered) against `base`, a delta base region, into `out`: one
    /// zstd frame with `base` as its raw-content prefix (ZSTD_CCtx_refPrefix, like `zstd
    /// --patch-from`). Returns false (and `out` is to be ignored) when the frame plus the
    /// 16-byte region descriptor would not be smaller than `raw`, or the encoder stores. A
    /// fresh context per call: zstd ties a referenced prefix to the context's lifetime.
    ///
    /// Parameters (measured on real version pairs: [`Level::delta_hash_log`],
    /// [`super::DELTA_LDM_MIN_MATCH`]): zstd level 1 whatever krypta's level, long-distance
    /// matching on (without it a fast level sees only the tail of a multi-MiB prefix) with
    /// matches from 48 bytes, a window covering the region and the block (at most 2^29,
    /// format 2's decoder bound), and from level 3 on larger hash tables (2^17 entries; at
    /// levels 5..9 2^20 and 2^22, which index the whole region): smaller deltas at a
    /// fraction of the speed.
    pub fn encode_against(
        &mut self,
        raw: &[u8],
        base: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, CodecError> {
        out.clear();
        let Some(level) = self.level else {
            return Ok(false);
        };
        if raw.len() > MAX_BLOCK_SIZE {
            return Err(CodecError::TooLarge {
                len: raw.len() as u64,
            });
        }
        let mut c = zstd::zstd_safe::CCtx::create();
        let e = zstd_error;
        let need = (base.len() + raw.len()).max(1 << 10) as u64;
        let window = (64 - (need - 1).leading_zeros()).clamp(10, 29);
        for p in [
            CParameter::CompressionLevel(1),
            CParameter::WindowLog(window),
            CParameter::EnableLongDistanceMatching(true),
            CParameter::LdmMinMatch(super::DELTA_LDM_MIN_MATCH),
            CParameter::LdmBucketSizeLog(super::DELTA_LDM_BUCKET_LOG),
            CParameter::ContentSizeFlag(true),
            CParameter::ChecksumFlag(false),
            CParameter::DictIdFlag(false),
        ] {
            c.set_parameter(p).map_err(e)?;
        }
        if let Some(log) = level.delta_hash_log() {
            let log = log.min(window);
            c.set_parameter(CParameter::HashLog(log)).map_err(e)?;
            c.set_parameter(CParameter::ChainLog(log)).map_err(e)?;
        }
        c.ref_prefix(base).map_err(e)?;
        out.reserve(zstd::zstd_safe::compress_bound(raw.len()));
        let n = c.compress2(out, raw).map_err(e)?;
        Ok(n + crate::format::block::BASE_REGION_LEN < raw.len())
    }
}

/// Block decoder, one per worker thread: reuses the zstd decompression context (~160 KiB).
/// Decoding a block allocates `raw_len` bytes of output (when `out` is not already that big)
/// and nothing that depends on the payload; undoing the x86 or ARM64 filter needs no more,
/// the other filters (only ever set with `--bcj`) take one more copy of the block.
pub struct BlockDecoder {
    dctx: Decompressor<'static>,
    /// The worker's delta base region buffer (`zstd+base` blocks), kept across blocks so a
    /// region is assembled into memory already faulted in, not a fresh buffer each block.
    pub region: Vec<u8>,
    /// The worker's buffer for reading a delta base's frames, kept likewise.
    pub frame: Vec<u8>,
}

impl BlockDecoder {
    /// A new decoder.
    pub fn new() -> Result<Self, CodecError> {
        let mut dctx = Decompressor::new().map_err(CodecError::Zstd)?;
        dctx.set_parameter(DParameter::WindowLogMax(DECODE_WINDOW_LOG_MAX))
            .map_err(CodecError::Zstd)?;
        Ok(BlockDecoder {
            dctx,
            region: Vec::new(),
            frame: Vec::new(),
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
        if raw_len > MAX_BLOCK_SIZE {
            return Err(CodecError::TooLarge {
                len: raw_len as u64,
            });
        }
        match codec {
            Codec::Store => {
                if payload.len() != raw_len {
                    return Err(CodecError::SizeMismatch {
                        expected: raw_len as u64,
                        got: payload.len() as u64,
                    });
                }
                out.reserve_exact(raw_len);
                out.extend_from_slice(payload);
            }
            Codec::Zstd => {
                check_frame(payload, raw_len)?;
                out.reserve_exact(raw_len);
                // zstd writes into the spare capacity and sets the length: no zero-fill of
                // the block first (that memset was ~4% of an extraction).
                let n = match self.dctx.decompress_to_buffer(payload, out) {
                    Ok(n) => n,
                    Err(e) => {
                        out.clear();
                        return Err(CodecError::Zstd(e));
                    }
                };
                if n != raw_len {
                    out.clear();
                    return Err(CodecError::SizeMismatch {
                        expected: raw_len as u64,
                        got: n as u64,
                    });
                }
            }
            Codec::ZstdBase => {
                return Err(CodecError::Zstd(std::io::Error::other(
                    "a zstd+base block decodes only against its base region",
                )));
            }
        }
        bcj::decode(filter, out, filter_start);
        Ok(())
    }
}

impl BlockDecoder {
    /// Decodes a format-2 block: as [`BlockDecoder::decode`], but a zstd payload must follow
    /// format 2's frame rules ([`super::zframe::check_v2`]: one frame, content size R, no
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
                super::zframe::check_v2(payload, raw_len)?;
            }
            return self.decode(codec, filter, stream_offset, payload, raw_len, out);
        }
        if raw_len > MAX_BLOCK_SIZE {
            return Err(CodecError::TooLarge {
                len: raw_len as u64,
            });
        }
        super::zframe::check_v2(payload, raw_len)?;
        let mut d = zstd::zstd_safe::DCtx::create();
        let e = zstd_error;
        d.set_parameter(DParameter::WindowLogMax(REFERENCE_WINDOW_LOG_MAX))
            .map_err(e)?;
        d.ref_prefix(prefix).map_err(e)?;
        out.reserve_exact(raw_len);
        let n = match d.decompress(out, payload) {
            Ok(n) => n,
            Err(code) => {
                out.clear();
                return Err(e(code));
            }
        };
        if n != raw_len {
            out.clear();
            return Err(CodecError::SizeMismatch {
                expected: raw_len as u64,
                got: n as u64,
            });
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn text(len: usize) -> Vec<u8> {
        b"the quick brown fox jumps over the lazy dog; "
            .iter()
            .copied()
            .cycle()
            .take(len)
            .collect()
    }

    #[test]
    fn compressible_block_is_zstd_and_round_trips() {
        let raw = text(100_000);
        let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).unwrap();
        let mut payload = Vec::new();
        let got = enc.encode(&raw, Filter::X86, 12, &mut payload).unwrap();
        assert_eq!(got, (Codec::Zstd, Filter::X86));
        assert!(payload.len() < 1000, "payload {} bytes", payload.len());
        let mut dec = BlockDecoder::new().unwrap();
        let mut out = Vec::new();
        dec.decode(got.0, got.1, 12, &payload, raw.len(), &mut out)
            .unwrap();
        assert!(out == raw);
    }

    #[test]
    fn store_mode_copies_raw() {
        let raw = text(1000);
        let mut enc = BlockEncoder::new(None).unwrap();
        let mut payload = vec![9; 5];
        assert_eq!(
            enc.encode(&raw, Filter::X86, 0, &mut payload).unwrap(),
            (Codec::Store, Filter::None)
        );
        assert_eq!(payload, raw);
    }

    #[test]
    fn decoding_into_a_recycled_buffer_gives_exactly_the_block() {
        let raw = text(70_000);
        let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).unwrap();
        let mut payload = Vec::new();
        enc.encode(&raw, Filter::None, 0, &mut payload).unwrap();
        let mut dec = BlockDecoder::new().unwrap();
        // A bigger stale buffer, as the reader's free list hands out.
        let mut out = vec![0xAB; 200_000];
        dec.decode(Codec::Zstd, Filter::None, 0, &payload, raw.len(), &mut out)
            .unwrap();
        assert_eq!(out.len(), raw.len());
        assert!(out == raw);
    }

    #[test]
    fn stored_blocks_decode_in_place_and_size_lies_are_errors() {
        let mut raw = text(4096);
        raw[100] = 0xE8;
        raw[104] = 0x00;
        let mut filtered = raw.clone();
        bcj::encode(Filter::X86, &mut filtered, 40);
        assert_ne!(filtered, raw);
        let mut buf = filtered.clone();
        decode_stored_in_place(Filter::X86, 40, &mut buf, raw.len()).unwrap();
        assert_eq!(buf, raw);
        let mut buf = filtered.clone();
        let err = decode_stored_in_place(Filter::X86, 40, &mut buf, raw.len() + 1).unwrap_err();
        assert!(
            matches!(
                err,
                CodecError::SizeMismatch {
                    expected: 4097,
                    got: 4096
                }
            ),
            "{err:?}"
        );
        assert_eq!(buf, filtered, "untouched on error");
        let err = decode_stored_in_place(Filter::None, 0, &mut [], MAX_BLOCK_SIZE + 1).unwrap_err();
        assert!(matches!(err, CodecError::TooLarge { .. }), "{err:?}");
    }

    #[test]
    fn raw_len_lies_are_errors_and_leave_out_empty() {
        let raw = text(50_000);
        let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).unwrap();
        let mut payload = Vec::new();
        enc.encode(&raw, Filter::None, 0, &mut payload).unwrap();
        let mut dec = BlockDecoder::new().unwrap();
        let mut out = vec![1, 2, 3];
        for lie in [49_999usize, 50_001] {
            let err = dec
                .decode_v2(Codec::Zstd, Filter::None, 0, &payload, lie, &[], &mut out)
                .unwrap_err();
            assert!(matches!(err, CodecError::SizeMismatch { .. }), "{err:?}");
        }
        for lie in [49_999, 50_001] {
            let err = dec
                .decode(Codec::Zstd, Filter::None, 0, &payload, lie, &mut out)
                .unwrap_err();
            assert!(
                matches!(err, CodecError::SizeMismatch { expected, got: 50_000 } if expected == lie as u64),
                "{err:?}"
            );
            assert!(out.is_empty());
        }
    }

    #[test]
    fn a_referencing_block_decodes_only_with_its_prefix() {
        // Incompressible bytes the block repeats: it compresses only through the prefix.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let before: Vec<u8> = (0..60_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let mut raw = before[1000..41_000].to_vec();
        raw.extend_from_slice(b"a tail only this block has");
        let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).unwrap();
        let (mut alone, mut with) = (Vec::new(), Vec::new());
        enc.encode(&raw, Filter::X86, 60_000, &mut alone).unwrap();
        let got = enc
            .encode_referencing(&raw, Filter::X86, 60_000, &before, &mut with)
            .unwrap();
        assert_eq!(got, (Codec::Zstd, Filter::X86, true));
        assert!(with.len() < 1000, "{} bytes with the prefix", with.len());
        assert!(
            alone.len() > 39_000 || alone == raw,
            "{} bytes alone",
            alone.len()
        );
        let mut dec = BlockDecoder::new().unwrap();
        let mut out = Vec::new();
        dec.decode_v2(
            Codec::Zstd,
            Filter::X86,
            60_000,
            &with,
            raw.len(),
            &before,
            &mut out,
        )
        .unwrap();
        assert!(out == raw);
        // Without the prefix (or with another one) the frame does not decode to the block.
        let wrong = dec.decode_v2(
            Codec::Zstd,
            Filter::X86,
            60_000,
            &with,
            raw.len(),
            &[],
            &mut out,
        );
        assert!(wrong.is_err() || out != raw);
        let mut other = before.clone();
        other[30_000] ^= 1;
        let r = dec.decode_v2(
            Codec::Zstd,
            Filter::X86,
            60_000,
            &with,
            raw.len(),
            &other,
            &mut out,
        );
        assert!(r.is_err() || out != raw);
        // An empty prefix is the plain encoding (here: stored, it does not shrink alone).
        let mut plain = Vec::new();
        let got = enc
            .encode_referencing(&raw, Filter::X86, 60_000, &[], &mut plain)
            .unwrap();
        let expect = enc.encode(&raw, Filter::X86, 60_000, &mut alone).unwrap();
        assert_eq!(
            (got.0, got.1, got.2, &plain),
            (expect.0, expect.1, false, &alone)
        );
    }
}
