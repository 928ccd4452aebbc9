//! What a worker writing a delta archive (`c --base`) holds ([`delta_worker_bytes`]), beside
//! the base's cache of decoded blocks that the workers share
//! (`BaseArchive::cache_bytes_at_most`). Until
//! 2026-12-07 the model counted none of it, so under a limit `c --base -l 9` (32 MiB blocks)
//! started as many workers as a plain `-l 9 -b 32M` run, each of which held about 0.5 GiB
//! more than the model said, and the run aborted. Measured 2026-12-07 (release build, peak
//! RSS by `/usr/bin/time -f %M`, the least `prlimit --as` that succeeds in 4 MiB steps;
//! `c --no-fsync --base` on the real pairs of BENCHMARKS.md table 14, each base written at
//! `-l 3`), MiB:
//!
//! | pair, level (blocks) | RSS `-j 1` | RSS `-j 2` | address space `-j 1` | `-j 2` |
//! |---|---|---|---|---|
//! | aws-lc-sys, `-l 3` (4 MiB) | 109 | 120 | 131 | 156 |
//! | aws-lc-sys, `-l 5` (4 MiB) | 113 | 132 | | |
//! | aws-lc-sys, `-l 7` (8 MiB) | 230 | 350 | 281 | 420 |
//! | aws-lc-sys, `-l 8` (16 MiB) | 282 | 420 | 394 | 570 |
//! | aws-lc-sys, `-l 9` (32 MiB) | 349 | 536 | 524 | 620 |
//! | aws-lc-sys, `-l 7 -b 32M` | 349 | 543 | | 620 |
//! | ruff, `-l 9` (one 24.5 MB block) | 261 | 261 | 340 | |
//! | aws-lc-sys base, new tar random, `-l 7` | 310 | 510 | 360 | 567 |
//! | aws-lc-sys base, new tar random, `-l 9` | 604 | 1,046 | 772 | 1,134 |
//!
//! (address space measured before `memory::reserve_exact` sized the diff's copy of region and
//! block, which grew to twice its length; since, aws-lc-sys at `-l 9` needs 397 and 617 MiB.) A delta worker holds what a plain one does (the
//! level's context is used for blocks without a region), its region, the zstd frame's
//! context ([`delta_zstd_context_bytes`]) and at levels 6–9 the `diff+base` encoder's
//! buffers and the context of the stream being compressed ([`diff_stream_context_bytes`]);
//! the base's cache of decoded blocks is shared. The random rows are the model's worst
//! case (every stream, frame and the check's streams about a block long); `x --base` of
//! these archives peaked at 55–94 MiB (ruff) and 55–177 MiB (aws-lc-sys) at `-j 1` and 2.

use crate::codec::Level;

use super::worker_bytes;

/// The context of a delta block's zstd frame (`codec::block::against`: zstd level 1, the
/// long-distance matcher, a window of 2^`window_log` over region and block, hash tables of
/// 2^`tables_log` entries, zstd level 1's own for `None`), bytes: the matcher's table (2^(window
/// log − 7) entries of 8 bytes), the hash table (4-byte entries; level 1 has no chain table)
/// and 1 MiB for the rest. `ZSTD_sizeof_CCtx` after a frame (zstd 1.5.7, 2026-12-07): window
/// 2^26 4.59 / 5.03 / 8.53 / 20.53 MiB for level 1's own tables / 2^17 / 2^20 / 2^22; 2^27
/// 8.60 / 9.04 / 12.54 / 24.54; 2^28 16.62 / 17.06 / 20.56 / 32.56.
pub fn delta_zstd_context_bytes(tables_log: Option<u32>, window_log: u32) -> u64 {
    let ldm = 8u64 << window_log.saturating_sub(7);
    let tables = 4u64 << tables_log.unwrap_or(17).min(window_log);
    ldm + tables + (1 << 20)
}

/// The context of one `diff+base` stream's zstd frame at `zstd_level` (3 at krypta's level
/// 6, 15 and 6 at levels 7 and 8, 19 at 9) for a stream of `len` bytes, bytes: `ZSTD_sizeof_CCtx` after a
/// frame (zstd 1.5.7, 2026-12-07), rounded up; zstd sizes its tables down for short input.
/// Measured for 64 KiB / 1 MiB / 4 MiB / 8 MiB and more: level 19 1.71 / 17.25 / 49.25 /
/// 81.25 MiB; level 15 1.71 / 16.49 / 64.49 / 64.49; level 6 at most 2.99.
pub fn diff_stream_context_bytes(zstd_level: i32, len: usize) -> u64 {
    const MIB: u64 = 1 << 20;
    let at = |small, mid, large, huge| match len {
        0..=0x1_0000 => small,
        0x1_0001..=0x10_0000 => mid,
        0x10_0001..=0x40_0000 => large,
        _ => huge,
    };
    match zstd_level {
        ..=6 => 3 * MIB,
        7..=15 => at(2, 17, 65, 65) * MIB,
        _ => at(2, 18, 50, 82) * MIB,
    }
}

/// What a delta archive's worker holds at `level` with blocks of `block_size` bytes, bytes
/// (module doc, measurements there): a plain worker's [`worker_bytes`] (blocks without a
/// region use the level's own context), its base region (at most
/// `archive::delta::max_region`), and while a block is compressed against it the larger of
/// the zstd frame's context ([`delta_zstd_context_bytes`]) and, where `diff+base` is made
/// (levels 6–9, blocks up to `DIFF_MAX_BLOCK`), the context of a stream
/// ([`diff_stream_context_bytes`]); there also the copy of region and block (`S`), the
/// scan's tables for `S`, and five blocks' worth for the streams, their frames, the payload,
/// the decoded check and its streams (each up to a block for new bytes) and 8 MiB for the
/// check's ctrl window.
pub fn delta_worker_bytes(level: Option<Level>, block_size: usize) -> u64 {
    let Some(l) = level else {
        // Stored: no region is read (`archive::seal`).
        return worker_bytes(level, block_size);
    };
    let b = block_size as u64;
    let region = crate::archive::delta::max_region(block_size);
    let joined = region as usize + block_size;
    let window = crate::codec::delta_window_log(region as usize, block_size);
    let frame = delta_zstd_context_bytes(
        crate::codec::delta_frame_tables(l, block_size).delta_hash_log(),
        window,
    );
    let diff = crate::codec::makes_diff(l, block_size).map(|effort| {
        let top = crate::codec::diff_stream_levels(effort).into_iter().max();
        let stream = diff_stream_context_bytes(top.unwrap_or(19), block_size);
        let held =
            joined as u64 + crate::codec::diff_table_bytes(joined, effort) + 5 * b + (8 << 20);
        (held, stream)
    });
    let (held, transient) = diff.map_or((0, frame), |(h, s)| (h, s.max(frame)));
    worker_bytes(level, block_size) + region + held + transient
}

#[cfg(test)]
mod tests {
    use super::super::{compress_bytes, compress_needs, workers_within, writer_in_flight};
    use super::*;

    const MIB: u64 = 1 << 20;

    fn at(level: u8) -> (Option<Level>, usize) {
        let l = Level::new(level).unwrap();
        (Some(l), l.default_delta_block_size())
    }

    #[test]
    fn a_delta_worker_counts_its_region_frame_and_diff_at_each_level() {
        let per = |level: u8| {
            let (l, b) = at(level);
            delta_worker_bytes(l, b)
        };
        // 4 MiB blocks: a plain worker (context + 3 blocks), a 32 MiB region, the frame's
        // context over a 2^26 window (4 MiB matcher table, 1 MiB) with level 1's own or
        // 2^17-entry tables (0.5 MiB) or 2^20 at level 5 (4 MiB).
        assert_eq!(per(1), (6 + 12 + 32) * MIB + 11 * MIB / 2);
        assert_eq!(per(2), per(1));
        assert_eq!(per(3), (7 + 12 + 32) * MIB + 11 * MIB / 2);
        assert_eq!(per(4), (9 + 12 + 32) * MIB + 11 * MIB / 2);
        assert_eq!(per(5), (11 + 12 + 32 + 9) * MIB);
        // Level 6, the fast diff at 4 MiB blocks: context 16 + 3 × 4, region 32, S 36 + the
        // long table alone (2^20 entries, 8) + 5 × 4 + 8; the larger of the fallback frame's
        // context (level 6's own 2^20-entry tables, 9) and a stream's at -3 (3).
        assert_eq!(per(6), (16 + 12 + 32 + (36 + 8 + 20 + 8) + 9) * MIB);
        // Level 7, 8 MiB blocks: context 48 + 3 × 8, region 32, S 40 + tables 64 + 5 × 8 + 8,
        // zstd -15's context on a stream of up to a block (65).
        assert_eq!(per(7), (48 + 24 + 32 + (40 + 64 + 40 + 8) + 65) * MIB);
        // Level 8, 16 MiB blocks.
        assert_eq!(per(8), (56 + 48 + 32 + (48 + 64 + 80 + 8) + 65) * MIB);
        // Level 9, 32 MiB blocks: context 84 + 96, region 34, S 66 + 64 + 160 + 8, zstd -19
        // (82).
        assert_eq!(per(9), (84 + 96 + 34 + (66 + 64 + 160 + 8) + 82) * MIB);
        // -l 7 -b 32M: level 7's context and streams at level 9's sizes.
        let l7 = Some(Level::new(7).unwrap());
        assert_eq!(
            delta_worker_bytes(l7, 32 << 20),
            (48 + 96 + 34 + (66 + 64 + 160 + 8) + 65) * MIB
        );
        // Past DIFF_MAX_BLOCK, zstd's frame alone with 2^22 tables over a 2^28 window.
        assert_eq!(
            delta_worker_bytes(l7, 64 << 20),
            (48 + 192 + 66 + 16 + 16 + 1) * MIB
        );
        // Stored: no region is read.
        assert_eq!(delta_worker_bytes(None, 4 << 20), 4 * MIB);
    }

    #[test]
    fn delta_contexts_follow_the_measured_sizes() {
        // ZSTD_sizeof_CCtx measured 2026-12-07: 5.03, 8.53, 20.53 (window 2^26), 9.04
        // (2^27), 32.56 MiB (2^28) for tables of 2^17, 2^20, 2^22, 2^17 and 2^22 entries.
        assert_eq!(delta_zstd_context_bytes(Some(17), 26), 11 * MIB / 2);
        assert_eq!(delta_zstd_context_bytes(Some(20), 26), 9 * MIB);
        assert_eq!(delta_zstd_context_bytes(Some(22), 26), 21 * MIB);
        assert_eq!(delta_zstd_context_bytes(Some(17), 27), 19 * MIB / 2);
        assert_eq!(delta_zstd_context_bytes(Some(22), 28), 33 * MIB);
        assert_eq!(delta_zstd_context_bytes(None, 26), 11 * MIB / 2);
        // Streams: 1.71 / 17.25 / 49.25 / 81.25 MiB at -19, 64.49 at -15 from 4 MiB on.
        assert_eq!(diff_stream_context_bytes(19, 64 << 10), 2 * MIB);
        assert_eq!(diff_stream_context_bytes(19, 1 << 20), 18 * MIB);
        assert_eq!(diff_stream_context_bytes(19, 4 << 20), 50 * MIB);
        assert_eq!(diff_stream_context_bytes(19, (4 << 20) + 1), 82 * MIB);
        assert_eq!(diff_stream_context_bytes(15, 32 << 20), 65 * MIB);
        assert_eq!(diff_stream_context_bytes(6, 32 << 20), 3 * MIB);
    }

    #[test]
    fn a_level_9_delta_at_two_workers_is_modelled_above_its_measured_peak() {
        // Regression (h72, 2026-12-07): the model counted no delta memory, so `c --base -l 9`
        // (32 MiB blocks) was modelled as a plain worker, 456 MiB for two, and a 1 GiB limit
        // let two workers start. Measured peaks at -j 2 against the aws-lc-sys base (17
        // frames of 4 MiB: a 72 MiB cache): 536 MiB RSS on the real pair, 1,046 MiB RSS and
        // 1,134 MiB of address space with the new tar replaced by random bytes.
        let (l9, b) = at(9);
        let cache = 72 * MIB;
        let two = compress_bytes(l9, b, 2, writer_in_flight(l9, b, 2), Some(cache));
        assert_eq!(two, (2 * 594 + 32 + 72 + 32) * MIB);
        assert!(two >= 1_134 * MIB);
        assert_eq!(
            compress_bytes(l9, b, 2, 2, None),
            (2 * 180 + 32 + 32 + 32) * MIB
        );
        assert_eq!(workers_within(1 << 30, l9, b, 2, None), 2, "the old model");
        assert_eq!(workers_within(1 << 30, l9, b, 2, Some(cache)), 1);
        assert_eq!(workers_within(1_324 * MIB, l9, b, 2, Some(cache)), 2);
        // At -j 1: 730 MiB; measured 397 MiB of address space on the real pair, 772 on the
        // random one before the diff's copy of region and block was reserved exactly (it took
        // 132 MiB for a 66 MiB copy then).
        assert_eq!(
            compress_bytes(l9, b, 1, 1, Some(cache)),
            (594 + 32 + 72 + 32) * MIB
        );
    }

    #[test]
    fn the_note_names_a_delta_and_its_cache() {
        let (l9, b) = at(9);
        assert_eq!(
            compress_needs(l9, b, Some(72 * MIB)),
            "a delta at level 9 with 32.0 MiB blocks needs about 594.0 MiB per worker and \
             72.0 MiB for the base's cache"
        );
    }
}
