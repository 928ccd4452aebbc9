//! Delta blocks (`zstd+base`, docs/FORMAT.md §16.3): one zstd frame of the block with the
//! base region as its raw-content prefix, like `zstd --patch-from`.
//!
//! Two ways to make that frame, and at levels 7 and up (blocks up to 8 MiB) the writer makes
//! both and keeps the smaller (every reader decodes either the same way: the format does not
//! change):
//! - **zstd's own parser** (level 1 with long-distance matching, [`Level::delta_hash_log`]):
//!   at every level; fast, and on compiled JavaScript and on many of a source tree's blocks
//!   the smaller of the two.
//! - **krypta's own parser** ([`super::delta_parse`], feeding `ZSTD_compressSequences`):
//!   levels 7..=9, blocks up to [`OWN_PARSER_MAX_BLOCK`]. It follows the base through the
//!   edits (one literal and a repeat offset per changed byte) and on renamed symbols. Alone
//!   on ruff's executable it writes 4,430,964 bytes where the default's zstd path writes
//!   5,539,506, but it takes 2–3× that path's time on machine code, so the default does not
//!   run it (issue 17's ≥ 90 MB/s per stream); on compiled JavaScript zstd's frame is the
//!   smaller (5,998 against 13,886 bytes). Both at level 7 (sizes of `c --base -l 7 -j 1`,
//!   zstd's alone → the smaller of the two, 2026-12-06): ruff 4,338,180 → 4,304,277, libc6
//!   406,841 → 392,951, typescript 5,565 → 5,383, aws-lc-sys 196,027 → 173,826 bytes, at
//!   1.6× the write time on ruff (docs/FORMAT.md §16.3).
//!
//! The own parser's frame is decoded with the region before it is kept, and a frame that
//! does not give back the block exactly is dropped for zstd's (libzstd cannot check the
//! sequences itself: see [`super::sequences`]). So a fault in the parser costs size, never
//! a block that does not restore.

use zstd::zstd_safe::CParameter;

use super::delta_parse::{Parser, Seq};
use super::{
    BlockDecoder, BlockEncoder, Codec, CodecError, Filter, MAX_BLOCK_SIZE, new_cctx, zstd_error,
};

/// The largest block the own parser takes, bytes (8 MiB; the default block is 4 MiB). Its
/// table is sized for a block of a few MiB and its region: on level 9's 64 MiB blocks it
/// gained nothing on ruff's pair (4,463,466 bytes either way) and doubled the peak memory
/// of `c --base -l 9 -j 1` on aws-lc-sys's (244 → 452 MB; measured 2026-12-06). With this
/// bound the parser holds at most region (≤ 32 MiB, FORMAT.md §16.3) + block + 8 MiB
/// table + frame + decoded check ≈ 64 MiB per worker.
const OWN_PARSER_MAX_BLOCK: usize = 8 << 20;

/// The own parser's state, kept by an encoder between blocks so that its buffers (the
/// region and block laid end to end, an 8 MiB hash table, the frame and the decoded check)
/// are allocated once per worker.
#[derive(Default)]
pub(super) struct OwnParse {
    parser: Parser,
    seqs: Vec<Seq>,
    frame: Vec<u8>,
    check: Vec<u8>,
    decoder: Option<BlockDecoder>,
}

impl OwnParse {
    /// Memory held, bytes.
    pub(super) fn memory_bytes(&self) -> usize {
        self.parser.memory_bytes()
            + self.seqs.capacity() * std::mem::size_of::<Seq>()
            + self.frame.capacity()
            + self.check.capacity()
    }

    /// The own parser's frame of `raw` against `region` in `self.frame` when it is shorter
    /// than `beat` bytes, decoded and compared with `raw`; false (and `self.frame` to be
    /// ignored) when it is not shorter (then it is not decoded: the check costs a decode of
    /// the block, ~10 ms per 4 MiB), libzstd refused the sequences, or the frame did not
    /// give back `raw`.
    fn encode(&mut self, raw: &[u8], region: &[u8], window_log: u32, beat: usize) -> bool {
        self.parser.parse(region, raw, &mut self.seqs);
        if super::sequences::compress(&self.seqs, raw, window_log, &mut self.frame).is_err() {
            debug_assert!(false, "libzstd refused the own parser's sequences");
            return false;
        }
        if self.frame.len() >= beat {
            return false;
        }
        let decoder = match self.decoder.as_mut() {
            Some(d) => d,
            None => match BlockDecoder::new() {
                Ok(d) => self.decoder.insert(d),
                Err(_) => return false,
            },
        };
        let same = decoder
            .decode_v2(
                Codec::Zstd,
                Filter::None,
                0,
                &self.frame,
                raw.len(),
                region,
                &mut self.check,
            )
            .is_ok()
            && self.check == raw;
        debug_assert!(same, "the own parser's frame did not decode to the block");
        same
    }
}

impl BlockEncoder {
    /// Compresses `raw` (unfiltered) against `base`, a delta base region, into `out`: one
    /// zstd frame with `base` as its raw-content prefix (ZSTD_CCtx_refPrefix, like `zstd
    /// --patch-from`). Returns false (and `out` is to be ignored) when the frame plus the
    /// 16-byte region descriptor would not be smaller than `raw`, or the encoder stores. A
    /// fresh context per call: zstd ties a referenced prefix to the context's lifetime.
    ///
    /// Parameters (measured on real version pairs: [`crate::codec::Level::delta_hash_log`],
    /// [`crate::codec::DELTA_LDM_MIN_MATCH`]): zstd level 1 whatever krypta's level,
    /// long-distance matching on (without it a fast level sees only the tail of a multi-MiB
    /// prefix) with matches from 48 bytes, a window covering the region and the block (at
    /// most 2^29, format 2's decoder bound), and from level 3 on larger hash tables (2^17
    /// entries; at levels 5..9 2^20 and 2^22, which index the whole region): smaller deltas
    /// at a fraction of the speed. At levels 7..=9 also krypta's own parser, the smaller
    /// frame kept (the module doc).
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
        let need = (base.len() + raw.len()).max(1 << 10) as u64;
        let window = (64 - (need - 1).leading_zeros()).clamp(10, 29);
        zstd_against(level, raw, base, window, out)?;
        if level.delta_own_parser() && raw.len() <= OWN_PARSER_MAX_BLOCK {
            let own = self.own.get_or_insert_default();
            if own.encode(raw, base, window, out.len()) {
                std::mem::swap(out, &mut own.frame);
            }
        }
        Ok(out.len() + crate::format::block::BASE_REGION_LEN < raw.len())
    }
}

/// The `diff+base` encoder (codec 3) and what checks its payloads, kept by an encoder
/// between blocks.
#[derive(Default)]
pub(super) struct DiffState {
    enc: super::diff::encode::DiffEncoder,
    payload: Vec<u8>,
    check: Vec<u8>,
    decoder: Option<BlockDecoder>,
}

impl DiffState {
    /// Memory held, bytes.
    pub(super) fn memory_bytes(&self) -> usize {
        self.enc.memory_bytes() + self.payload.capacity() + self.check.capacity()
    }

    /// The payload of `raw` against `region` in `self.payload`, decoded and compared with
    /// `raw`: false when it does not give back `raw` (a fault of the encoder: the block is
    /// then written another way) or could not be made.
    fn encode(&mut self, raw: &[u8], region: &[u8], max: bool) -> Result<bool, CodecError> {
        self.enc.encode(raw, region, max, &mut self.payload)?;
        let decoder = match self.decoder.as_mut() {
            Some(d) => d,
            None => self.decoder.insert(BlockDecoder::new()?),
        };
        let same = decoder
            .decode_diff(
                Filter::None,
                0,
                &self.payload,
                raw.len(),
                region,
                &mut self.check,
            )
            .is_ok()
            && self.check == raw;
        debug_assert!(same, "a diff+base payload did not decode to the block");
        Ok(same)
    }
}

impl BlockEncoder {
    /// Compresses `raw` (unfiltered) against `base`, a delta base region, into `out` (the
    /// payload after the 16-byte region descriptor) and returns its codec: `diff+base` or
    /// `zstd+base`, or `None` (and `out` is to be ignored) when neither with its descriptor
    /// is smaller than `raw`, or the encoder stores. At the levels of
    /// [`crate::codec::Level::delta_diff`] (blocks up to [`OWN_PARSER_MAX_BLOCK`], for the
    /// same memory reason as the own parser) both are made and the smaller kept; elsewhere
    /// the zstd frame of [`BlockEncoder::encode_against`].
    pub fn encode_delta(
        &mut self,
        raw: &[u8],
        base: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Option<Codec>, CodecError> {
        out.clear();
        let Some(level) = self.level else {
            return Ok(None);
        };
        let fits = |n: usize| n + crate::format::block::BASE_REGION_LEN < raw.len();
        let mut best = self
            .encode_against(raw, base, out)?
            .then_some(Codec::ZstdBase);
        if level.delta_diff() && raw.len() <= OWN_PARSER_MAX_BLOCK {
            let d = self.diff.get_or_insert_default();
            let ok = d.encode(raw, base, level == crate::codec::Level::MAX)?;
            if ok && fits(d.payload.len()) && (best.is_none() || d.payload.len() < out.len()) {
                std::mem::swap(out, &mut d.payload);
                best = Some(Codec::DiffBase);
            }
        }
        Ok(best)
    }
}

/// zstd's own frame of `raw` against `base` into `out` (the parameters of
/// [`BlockEncoder::encode_against`]).
fn zstd_against(
    level: crate::codec::Level,
    raw: &[u8],
    base: &[u8],
    window: u32,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    let mut c = new_cctx()?;
    let e = zstd_error;
    for p in [
        CParameter::CompressionLevel(1),
        CParameter::WindowLog(window),
        CParameter::EnableLongDistanceMatching(true),
        CParameter::LdmMinMatch(crate::codec::DELTA_LDM_MIN_MATCH),
        CParameter::LdmBucketSizeLog(crate::codec::DELTA_LDM_BUCKET_LOG),
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
    super::frame_room(out, raw.len())?;
    c.compress2(out, raw).map_err(e)?;
    Ok(())
}

#[cfg(test)]
mod tests;
