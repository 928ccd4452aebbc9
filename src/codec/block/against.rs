//! Delta blocks: the `zstd+base` frame (docs/FORMAT.md §16.3: one zstd frame of the block
//! with the base region as its raw-content prefix, like `zstd --patch-from`) at every level,
//! and at levels 6 and up (blocks up to [`DIFF_MAX_BLOCK`]) also the `diff+base` payload
//! (codec 3, §16.6), the smaller kept after the payload is decoded back.
//!
//! **At level 6 (the diff's fast effort) zstd's frame is made only where the diff's payload
//! is over half the block** ([`FAST_FRAME_SHARE`]). Made beside every block, the frame cost
//! ruff's pair ~0.1 s of CPU (a third of the write) and won none of its six blocks at a
//! quarter (two blocks over 1 MiB then made it; it won them, 4,184,774 against 4,239,745
//! bytes, for 1.3× the CPU, session 32). It stays as the fallback where the fast scan finds
//! no alignment (it needs 24 equal bytes in a row): a substitution every 9 bytes of random
//! data gives 454,465 bytes at `-l 6`, level 5's 454,462, where the default's frame is
//! 2,214,753 — hence level 6's own tables for it ([`delta_frame_tables`]).
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
//! **Where the diff is made at levels 7–9, zstd's frame beside it uses the default level's
//! tables** (2^17 entries, [`crate::codec::Level::delta_hash_log`]), not their own 2^22,
//! which stay for blocks over [`DIFF_MAX_BLOCK`] (zstd's frame alone). The frame is then
//! a fallback: the diff was the smaller on every block of the four pairs but some of
//! libc6's. Measured 2026-12-07 (`c --base -l 7 -j 1`, two interleaved rounds): CPU time
//! ruff 2.2 → 1.9–2.0 s, aws-lc-sys 0.8–0.9 → 0.6–0.7 s, typescript 0.26–0.31 → 0.19–0.21
//! s; sizes unchanged but libc6's, 264,425 → 264,707 bytes.

use zstd::zstd_safe::CParameter;

use super::{
    BlockDecoder, BlockEncoder, Codec, CodecError, DiffEffort, Filter, MAX_BLOCK_SIZE, new_cctx,
    zstd_error,
};

/// At [`DiffEffort::Fast`], a diff payload of at most a block's length divided by this is
/// kept without making zstd's frame too (the module doc).
const FAST_FRAME_SHARE: usize = 2;

/// The largest block the `diff+base` encoder takes, bytes (32 MiB, `-l 9`'s delta blocks).
/// Memory (`crate::memory::delta_worker_bytes`, measured 2026-12-07): a worker making it
/// holds the region (at most `archive::delta::max_region`, 34 MiB for a 32 MiB block), a
/// copy of region and block (`S`), the scan's tables (2^12..=2^22 u64 entries each by `S`:
/// up to 64 MiB together), the four streams, their frames, the payload, the decoded check and
/// its streams (up to about a block each, for new bytes), and while a stream is compressed its
/// zstd context (`-15` at levels 7 and 8: up to 65 MiB; `-19` at 9: up to 82 MiB): with a
/// 32 MiB block at `-l 9`, about 0.5 GiB beside the level's own context. Measured peak RSS
/// of `c --base -l 9` (32 MiB blocks) on the aws-lc-sys pair: 349 MiB at `-j 1`, 536 MiB at
/// `-j 2`; with the new tar replaced by random bytes (every stream a block long) 604 and
/// 1,046 MiB. No longer "≈ 80 MiB per worker": that was 8 MiB blocks with 2^20-entry tables.
const DIFF_MAX_BLOCK: usize = 32 << 20;

/// Whether, and with what effort, a delta block of `len` bytes at `level` is made as
/// `diff+base` ([`BlockEncoder::encode_delta`]).
pub(crate) fn makes_diff(level: crate::codec::Level, len: usize) -> Option<DiffEffort> {
    level.delta_diff().filter(|_| len <= DIFF_MAX_BLOCK)
}

/// log2 of the window of a delta block's zstd frame: covering a region of `region` bytes and
/// a block of `len` (at least 1 KiB, at most 2^29: format 2's decoder bound).
pub(crate) fn delta_window_log(region: usize, len: usize) -> u32 {
    let need = (region + len).max(1 << 10) as u64;
    (64 - (need - 1).leading_zeros()).clamp(10, 29)
}

/// The level whose tables ([`crate::codec::Level::delta_hash_log`]) the zstd frame of a
/// delta block of `len` bytes at `level` is made with: the default's where the diff's normal
/// or top effort is made beside it (the module doc), else the level's own — also at the fast
/// effort (level 6), where the frame is made only when the diff saved little, so that a
/// block the fast scan cannot align gets level 5's frame, not the default's. The encoder and
/// the memory model both ask here.
pub(crate) fn delta_frame_tables(level: crate::codec::Level, len: usize) -> crate::codec::Level {
    match makes_diff(level, len) {
        Some(DiffEffort::Normal | DiffEffort::Max) => crate::codec::Level::DEFAULT,
        Some(DiffEffort::Fast) | None => level,
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
    let window = delta_window_log(base.len(), raw.len());
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
    fn encode(
        &mut self,
        raw: &[u8],
        region: &[u8],
        effort: DiffEffort,
    ) -> Result<bool, CodecError> {
        self.enc.encode(raw, region, effort, &mut self.payload)?;
        let decoder = match self.decoder.as_mut() {
            Some(d) => d,
            None => self.decoder.insert(BlockDecoder::new()?),
        };
        // Memory refused while decoding it back (the check's buffer, a stream's decoder) is
        // the run's out-of-memory error, not a fault of the encoder: taken for one, a memory
        // limit silently gave the larger zstd frame (and a panic in debug builds; h72's
        // `a_delta_past_the_limit_is_an_error_not_an_abort` at 196 MiB).
        let same = match decoder.decode_diff(
            Filter::None,
            0,
            &self.payload,
            raw.len(),
            region,
            &mut self.check,
        ) {
            Ok(()) => self.check == raw,
            Err(CodecError::OutOfMemory(o)) => return Err(CodecError::OutOfMemory(o)),
            Err(_) => false,
        };
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
        // Beside the diff, zstd's frame is the fallback, made with the default's tables.
        let tables = delta_frame_tables(level, raw.len());
        let Some(effort) = makes_diff(level, raw.len()) else {
            return Ok(zstd_delta(raw, base, out, tables)?.then_some(Codec::ZstdBase));
        };
        let d = self.diff.get_or_insert_default();
        let ok = d.encode(raw, base, effort)? && fits(d.payload.len());
        // At the fast effort zstd's frame is made only where the diff saved less than half
        // the block (the module doc).
        if effort == DiffEffort::Fast && ok && d.payload.len() <= raw.len() / FAST_FRAME_SHARE {
            std::mem::swap(out, &mut d.payload);
            return Ok(Some(Codec::DiffBase));
        }
        let mut best = zstd_delta(raw, base, out, tables)?.then_some(Codec::ZstdBase);
        if ok && (best.is_none() || d.payload.len() < out.len()) {
            std::mem::swap(out, &mut d.payload);
            best = Some(Codec::DiffBase);
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
    c.compress2(out, raw).map_err(|code| match e(code) {
        CodecError::OutOfMemory(mut o) => {
            o.bytes = crate::memory::delta_zstd_context_bytes(level.delta_hash_log(), window);
            CodecError::OutOfMemory(o)
        }
        other => other,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests;
