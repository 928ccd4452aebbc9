//! A delta block's base region (docs/FORMAT.md §16.2): the decoded base blocks it spans,
//! found, checked and fetched through the base's cache (`base_cache`), then either copied
//! into one buffer ([`BaseArchive::region`], for a `zstd+base` block, whose zstd frame needs
//! its prefix in one piece, and for the writer) or read where they lie
//! ([`BaseArchive::region_blocks`], for a `diff+base` block).
//!
//! Why (profiled 2026-12-07, issue 17's read goal, "delta reads within 1.25× of a plain
//! extract", missed at `-l 7`: 1.23–1.62× in BENCHMARKS.md table 14, session 30). `perf
//! record` of `x -j 1 --base` of the `-l 7` deltas (8 MiB `diff+base` blocks over a base of
//! 4 MiB blocks) against `x -j 1` of the plain archive of the same new file, samples by kind,
//! mean of 5 runs at 10 kHz: ruff plain 796 (zstd 253, page faults 163, BLAKE3 88, BCJ 76),
//! delta 1,328 (zstd 312, faults 280, diff loop 137, `memcpy` 129); aws-lc-sys plain 1,319,
//! delta 1,639 (faults 550, `memcpy` 194). So the delta's extra was, in order: **fresh
//! memory** (the base's decoded blocks, each worker's region buffer, the 8 MiB output
//! blocks: in this VM a page first touched costs 0.5–1.3 ms per MiB, huge pages or not, when
//! the host has taken it back, against 0.05 ms per MiB to write memory already faulted in;
//! peak RSS 71 MiB against the plain read's 29 MiB for ruff), **copies** (each region, about
//! 10 MiB, copied out of the cached base blocks into one buffer per block, then copied again
//! run by run into the output), the **diff loop** (ruff: ~520,000 nonzero diff bytes per
//! block, one small `memcpy` each) and the **worker decoding base frames itself** in series
//! with its diff (the prefetch thread was asked for one frame past the region; the next
//! region runs on two). Not the fill and drain: per-thread timelines show the worker busy
//! from its first frame to its last, and the base's stream decode (`ctrl`, `gaps`, `vals`,
//! `extra`: 0.1–2 MB per block) is a few percent.
//!
//! What changed, and what each saved (CPU time of the whole read, user + system, median of
//! 7–9 interleaved runs of the binaries before and after; the host had a load average of
//! 5–6.5 from other engineers' builds, so wall times swung ±40 % and only CPU time was
//! steady enough to compare): `diff+base` reads its region where it lies, no copy and no
//! region buffer (aws-lc-sys 117 → 108 ms, libc6 37 → 35, typescript 55 → 51; ruff within
//! noise; RSS −9 MiB); a copy that reads nothing it makes is appended whole and its diff
//! bytes added in place (`codec::block::diff::decode`; ruff 119 → 109 ms); the next block's
//! region is asked for ahead (`base_cache::lookahead`), which moves base decoding off the
//! worker's path rather than out of the run (its CPU change was within noise; its wall-time
//! effect could not be measured at this load). All three, against the tree before, `-j 1`,
//! two sessions (the plain read: 60–67 / 92–98 / 31 / 46–48 ms): ruff 122 → 109 and
//! 111 → 96 ms, aws-lc-sys 130 → 112 and 127 → 110, libc6 40 → 37 and 40 → 36,
//! typescript 61 → 54 and 60 → 55; `-j 2` ruff 112 → 100, aws-lc-sys 140 → 117.
//! What is left beyond a plain read is the work a delta needs: the base decoded (the same
//! zstd work as the plain read's decode, into memory the plain read never touches: 24 MiB
//! of fresh pages for ruff's base), the diff applied (one pass over the output, plus
//! ruff's ~520,000 diff bytes a block) and larger output blocks (8 MiB, fresh for the first
//! two). On ruff that is ~1.5× the plain read's CPU, so where the two cores are shared the
//! goal is out of reach for it; on the text pairs the extra is 10–20 %.

use std::ops::Range;

use super::*;
use crate::codec::huge::HugeBuf;
use crate::format::block::BaseRegion;

/// The decoded base blocks a region spans, in order, each with the range of its bytes the
/// region takes. Holding them keeps them in the cache (`Cache::evict_to` skips blocks a
/// thread holds) until the block decoded against them is done.
pub struct RegionBlocks {
    blocks: Vec<(Arc<HugeBuf>, Range<usize>)>,
}

impl RegionBlocks {
    /// The region's bytes, piece by piece.
    pub fn parts(&self) -> Vec<&[u8]> {
        self.blocks.iter().map(|(b, r)| &b[r.clone()]).collect()
    }
}

impl BaseArchive {
    /// The bytes of `region`, assembled from the decoded blocks it spans into `out`.
    pub fn region(
        &self,
        dec: &mut BlockDecoder,
        region: &BaseRegion,
        out: &mut HugeBuf,
    ) -> std::result::Result<(), BaseFault> {
        out.clear();
        let oom = BaseFault::out_of_memory(&self.path);
        out.try_reserve(region.len as usize, "a delta base region")
            .map_err(oom)?;
        // Held while the next block decodes, so the cache keeps both (`Cache::evict_to`).
        let mut _before: Option<Arc<HugeBuf>> = None;
        self.walk_region(dec, region, 0, |b, r| {
            out.extend_from_slice(&b[r]);
            _before = Some(b);
        })
    }

    /// The decoded blocks `region` spans, read where they lie (module doc), for a block of
    /// `raw_len` bytes (the next block's region is asked for ahead: `base_cache::lookahead`).
    pub fn region_blocks(
        &self,
        dec: &mut BlockDecoder,
        region: &BaseRegion,
        raw_len: u64,
    ) -> std::result::Result<RegionBlocks, BaseFault> {
        let mut blocks = Vec::new();
        self.walk_region(dec, region, raw_len, |b, r| blocks.push((b, r)))?;
        Ok(RegionBlocks { blocks })
    }

    /// Hands each decoded block `region` spans, in order, to `each` with the range of it the
    /// region takes; refuses a region that runs past the base's data frames, starts past its
    /// first block, or needs a frame that is lost or fails. The prefetch thread is asked for
    /// the frames after the first, and for `next` bytes of them past the region
    /// (`base_cache::lookahead`).
    fn walk_region(
        &self,
        dec: &mut BlockDecoder,
        region: &BaseRegion,
        next: u64,
        mut each: impl FnMut(Arc<HugeBuf>, Range<usize>),
    ) -> std::result::Result<(), BaseFault> {
        if self.data_frames() > 0 {
            let block = u64::from(self.block_size.max(1));
            self.working_set(u64::from(region.len) + block);
            self.hint(
                region.seq + 1,
                region.seq + super::base_cache::lookahead(region, block, next),
            );
        }
        let mut seq = region.seq;
        let mut skip = region.offset as usize;
        let mut left = region.len as usize;
        while left > 0 {
            if seq >= self.data_frames() {
                return Err(self.invalid(region.seq, 0, match &self.unchecked {
                    None => format!(
                        "base region ({} bytes from frame {} offset {}) runs past the base's {} data frames",
                        region.len,
                        region.seq,
                        region.offset,
                        self.data_frames()
                    ),
                    Some(why) => format!(
                        "base frame {seq} is lost in the damaged base (its last data frame found is {}; {why})",
                        self.data_frames() as i64 - 1
                    ),
                }));
            }
            let b = self.block(dec, seq)?;
            if skip >= b.len() {
                return Err(self.invalid(
                    seq,
                    self.offsets[seq as usize],
                    format!(
                        "base region offset {} is past the {}-byte block of base frame {seq}",
                        region.offset,
                        b.len()
                    ),
                ));
            }
            let n = (b.len() - skip).min(left);
            each(b, skip..skip + n);
            left -= n;
            skip = 0;
            seq += 1;
        }
        Ok(())
    }
}
