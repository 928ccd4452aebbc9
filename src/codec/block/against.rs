//! Delta blocks: the `zstd+base` frame (docs/FORMAT.md §16.3: one zstd frame of the block
//! with the base region as its raw-content prefix, like `zstd --patch-from`) at every level,
//! and at levels 7 and up (blocks up to [`DIFF_MAX_BLOCK`]) also the `diff+base` payload
//! (codec 3, §16.6), the smaller kept after the payload is decoded back.
//!
//! **A third candidate was removed on 2026-12-07** (session 29): a zstd frame from the
//! sequences of krypta's own match finder (`delta_parse.rs` feeding libzstd's experimental
//! `ZSTD_compressSequences`, with this crate's second `unsafe` module), run at levels 7–9
//! since 2026-12-06. Once the `diff+base` encoder followed the current alignment
//! ([`super::diff`]'s `scan`), its payload was the smaller on every block of the four pairs
//! of BENCHMARKS.md table 14 (ruff's six blocks by 15–40 %), and the archives at `-l 7` came
//! out byte-identical in size with and without the own frame (ruff 3,438,884, libc6 264,425,
//! typescript 3,333, aws-lc-sys 129,355 bytes), while it cost a parse, a sequences frame and
//! a decode check per block. Readers are unaffected: its frames were ordinary `zstd+base`
//! frames, which every reader still decodes.
//!
//! **Where the diff is made, zstd's frame beside it uses the default level's tables**
//! (2^17 entries, [`crate::codec::Level::delta_hash_log`]), not the 2^22 of levels 7–9,
//! which stay for blocks over [`DIFF_MAX_BLOCK`] (zstd's frame alone). The frame is then
//! a fallback: the diff was the smaller on every block of the four pairs but some of
//! libc6's. Measured 2026-12-07 (`c --base -l 7 -j 1`, two interleaved rounds): CPU time
//! ruff 2.2 → 1.9–2.0 s, aws-lc-sys 0.8–0.9 → 0.6–0.7 s, typescript 0.26–0.31 → 0.19–0.21
//! s; sizes unchanged but libc6's, 264,425 → 264,707 bytes.

use zstd::zstd_safe::CParameter;

use super::{
    BlockDecoder, BlockEncoder, Codec, CodecError, Filter, MAX_BLOCK_SIZE, new_cctx, zstd_error,
};

/// The largest block the `diff+base` encoder takes, bytes (8 MiB; the default block is
/// 4 MiB). Its tables are sized for a block of a few MiB and its region; with this bound it
/// holds at most region (≤ 32 MiB, FORMAT.md §16.3) + block (`S`) + 16 MiB of tables +
/// the streams, payload and decoded check ≈ 80 MiB per worker.
const DIFF_MAX_BLOCK: usize = 32 << 20;

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
    /// at a fraction of the speed.
    pub fn encode_against(
        &mut self,
        raw: &[u8],
        base: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, CodecError> {
        match self.level {
            Some(level) => zstd_delta(raw, base, out, level),
            None => {
                out.clear();
                Ok(false)
            }
        }
    }
}

/// [`BlockEncoder::encode_against`]'s frame with the hash tables of `tables`' level.
fn zstd_delta(
    raw: &[u8],
    base: &[u8],
    out: &mut Vec<u8>,
    tables: crate::codec::Level,
) -> Result<bool, CodecError> {
    out.clear();
    if raw.len() > MAX_BLOCK_SIZE {
        return Err(CodecError::TooLarge {
            len: raw.len() as u64,
        });
    }
    let need = (base.len() + raw.len()).max(1 << 10) as u64;
    let window = (64 - (need - 1).leading_zeros()).clamp(10, 29);
    zstd_against(tables, raw, base, window, out)?;
    Ok(out.len() + crate::format::block::BASE_REGION_LEN < raw.len())
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
    /// [`crate::codec::Level::delta_diff`] (blocks up to [`DIFF_MAX_BLOCK`], for its
    /// memory) both are made and the smaller kept; elsewhere the zstd frame of
    /// [`BlockEncoder::encode_against`].
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
        let diff = level.delta_diff() && raw.len() <= DIFF_MAX_BLOCK;
        // Beside the diff, zstd's frame is the fallback, made with the default's tables
        // (the module doc).
        let tables = if diff {
            crate::codec::Level::DEFAULT
        } else {
            level
        };
        let mut best = zstd_delta(raw, base, out, tables)?.then_some(Codec::ZstdBase);
        if diff {
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
