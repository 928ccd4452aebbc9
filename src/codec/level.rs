//! krypta's compression levels 1..=9 and what each means for zstd (level, window, blocks).

use super::{CodecError, DEFAULT_BLOCK_SIZE};

/// A compression level on krypta's 1..=9 scale (`-l`). See the module docs of
/// [`crate::codec`] for the map onto zstd levels and the measurements behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level(u8);

/// zstd level for krypta levels 1..=9 (index = level - 1).
const ZSTD_LEVELS: [i32; 9] = [1, 2, 3, 5, 7, 9, 12, 17, 19];

/// Window log (base-2 log of the match window, bytes) for levels 1..=8: one default block.
const WINDOW_LOG: u32 = 22;
/// Window log for level 9: 128 MiB, like `zstd --long=27`.
const WINDOW_LOG_MAX_LEVEL: u32 = 27;
/// Block size level 9 uses when the user gives no `-b`, bytes: 64 MiB. Each level-9 block
/// references the one before it (up to the 2^27 window, within a group of
/// [`REFERENCE_GROUP_BLOCKS`]), so a 64 MiB block plus its 64 MiB prefix sees the same
/// 128 MiB window as `zstd -19 --long=27` on the whole input, while the writer and the reader
/// hold half the bytes per block that 128 MiB blocks did (see the measurements in
/// [`crate::codec`]).
const LEVEL9_BLOCK_SIZE: usize = 64 << 20;

/// Most data blocks in one group of referencing blocks (level 9): the first block of a group
/// references nothing, each later one references the raw bytes of the block before it. So a
/// file in any block is decoded from at most this many blocks (1 GiB at the default 64 MiB),
/// which bounds what selective extraction reads; and a group is long enough that a long
/// repetitive input is learnt once per GiB rather than once per block.
pub const REFERENCE_GROUP_BLOCKS: u64 = 16;

/// Shortest match zstd's long-distance matcher takes in a delta block (its default: 64), at
/// every level. Measured on the pairs of BENCHMARKS.md table 14 (sizes at zstd level 1's
/// tables, ruff / libc6 / typescript / aws-lc-sys ÷ `zstd --patch-from -19`): 64 gives
/// 1.64 / 1.36 / 2.45 / 2.06; 48 with buckets of 2^6 1.59 / 1.30 / 2.25 / 2.02 at the same
/// speed. Shorter matches (32, 40) shrink the executable and the package a little more but
/// grow the source tree's delta by up to a fifth: a long-distance match is taken before the
/// fast matcher looks, so short ones displace better matches in text.
pub const DELTA_LDM_MIN_MATCH: u32 = 48;

/// Entries per bucket of the long-distance matcher's hash table (log2) in a delta block: 2^6
/// candidates per lookup (zstd 1.5.7's default 2^4); see [`DELTA_LDM_MIN_MATCH`].
pub const DELTA_LDM_BUCKET_LOG: u32 = 6;

impl Level {
    /// Lowest level: fastest.
    pub const MIN: Level = Level(1);
    /// Highest level: best ratio that still decodes in bounded memory.
    pub const MAX: Level = Level(9);
    /// The level used when the user gives no `-l`.
    pub const DEFAULT: Level = Level(3);

    /// Validates a level; `CodecError::BadLevel` outside 1..=9.
    pub fn new(v: u8) -> Result<Level, CodecError> {
        if (Self::MIN.0..=Self::MAX.0).contains(&v) {
            Ok(Level(v))
        } else {
            Err(CodecError::BadLevel(v))
        }
    }

    /// The level as given, 1..=9.
    pub fn get(self) -> u8 {
        self.0
    }

    /// The zstd compression level (RFC 8878 does not define levels; these are libzstd's).
    pub fn zstd_level(self) -> i32 {
        ZSTD_LEVELS[usize::from(self.0.clamp(1, 9)) - 1]
    }

    /// Largest zstd window the encoder may use, as a base-2 log of bytes (zstd shrinks it to
    /// the block size on its own). 22 (4 MiB) for levels 1..=8, 27 (128 MiB, long-distance
    /// matching on) for level 9. Decoding never needs more memory than the decoded block.
    pub fn window_log(self) -> u32 {
        if self == Self::MAX {
            WINDOW_LOG_MAX_LEVEL
        } else {
            WINDOW_LOG
        }
    }

    /// Whether zstd's long-distance matcher is enabled (level 9 only; libzstd would also
    /// enable it on its own for a 2^27 window at zstd 19).
    pub fn long_distance_matching(self) -> bool {
        self == Self::MAX
    }

    /// Whether the writer makes data blocks reference the block before them (format 2's
    /// reference length, docs/FORMAT.md §5.3): level 9 only, whose 2^27 window spans more
    /// than one block. Levels 1..=8 keep independent blocks (their window is one default
    /// block, and independent blocks decode in parallel).
    pub fn references(self) -> bool {
        self == Self::MAX
    }

    /// The hash (and chain) table log of a delta block's zstd frame
    /// ([`super::BlockEncoder::encode_against`]): `None` (zstd level 1's own tables, the
    /// fastest) at levels 1 and 2, 17 at 3 and 4 (the default: a table that stays in a
    /// core's L2 cache), 20 at 5 and 6, 22 at 7..=9 (tables covering the whole region).
    /// Measured on the real pairs of BENCHMARKS.md table 14 with `c --base -j 1`, sizes ÷
    /// `zstd --patch-from --long=31 -19` for ruff / libc6 / typescript / aws-lc-sys, write
    /// time of ruff ÷ level 1's tables, all with the long-distance matcher of
    /// [`DELTA_LDM_MIN_MATCH`]: zstd level 1's tables 1.59 / 1.30 / 2.25 / 2.02 (1.00);
    /// 2^17 1.52 / 1.29 / 2.23 / 1.98 (1.07); 2^20 1.23 / 1.15 / 2.08 / 1.87 (1.6);
    /// 2^22 1.19 / 1.14 / 2.07 / 1.87 (2.2). The default takes the table that costs
    /// under a tenth more time: 2^20 brings ruff to 1.23× but its one-thread delta write to
    /// 93–97 MB/s on an idle machine (84 in a busier run), no margin on the ≥ 90 MB/s per
    /// stream of issue 17 (docs/FORMAT.md §16.3). These are zstd's frames alone: at 6..=9
    /// the `diff+base` payload is made too ([`Level::delta_diff`]; at 6 zstd's frame only
    /// where the diff saved less than half the block, with these 2^20-entry tables).
    pub fn delta_hash_log(self) -> Option<u32> {
        match self.0 {
            0..=2 => None,
            3 | 4 => Some(17),
            5 | 6 => Some(20),
            _ => Some(22),
        }
    }

    /// Whether a delta block is written as `diff+base` (codec 3, docs/FORMAT.md §16.3), and
    /// with what effort (`codec::block::against`): levels 6..=9, the top of the size/speed
    /// dial — 6 fast, 7 and 8 normal, 9 the most. Not the default: see
    /// `codec::block::diff::encode` for the measurements.
    pub fn delta_diff(self) -> Option<super::DiffEffort> {
        use super::DiffEffort::{Fast, Max, Normal};
        match self.0 {
            ..=5 => None,
            6 => Some(Fast),
            7 | 8 => Some(Normal),
            _ => Some(Max),
        }
    }

    /// Block size used when the user gives no `-b`, bytes: [`DEFAULT_BLOCK_SIZE`] (4 MiB)
    /// except level 9, which uses 64 MiB blocks that reference their predecessor. Decode
    /// memory per worker is the block size (+ ~0.3 MiB; level 9's reader also keeps the
    /// previous block of a group); encode memory per worker at level 9 is the zstd context
    /// (~110 MiB) plus the block, its prefix and the output.
    pub fn default_block_size(self) -> usize {
        if self == Self::MAX {
            LEVEL9_BLOCK_SIZE
        } else {
            DEFAULT_BLOCK_SIZE
        }
    }
}

impl Level {
    /// Block size of a delta archive (`c --base`) when the user gives no `-b`, bytes:
    /// [`DEFAULT_BLOCK_SIZE`] (4 MiB) at levels 1–6, then 8, 16 and 32 MiB at levels 7, 8
    /// and 9, where the `diff+base` payload is made (blocks up to 32 MiB). Larger delta blocks
    /// are smaller deltas: each block's streams are zstd frames that start afresh, and a block
    /// has its own frame head, tag, region descriptor and index entry; they cost parallelism
    /// (fewer blocks to share out) and memory (the region and the scan's tables grow with
    /// the block). Level 9's non-delta 64 MiB blocks (which see the block before them) are
    /// not used: a delta block's reference is its base region. Measured 2026-12-07 (`c --base
    /// -j 1` on the four pairs of BENCHMARKS.md table 14, ruff / libc6 / typescript /
    /// aws-lc-sys, bytes; CPU seconds on ruff):
    ///
    /// | blocks | `-l 7` | ruff CPU | `-l 9` |
    /// |---|---|---|---|
    /// | 4 MiB | 3,449,940 / 265,022 / 3,333 / 129,364 | 1.7 s | 3,168,181 / 260,147 / 3,301 / 127,404 |
    /// | 8 MiB | 3,419,309 / 268,760 / 2,924 / 122,244 | 1.9 s | |
    /// | 16 MiB | 3,369,578 / 271,008 / 2,045 / 116,661 | 2.0 s | 3,096,628 / 263,564 / 2,038 / 114,313 |
    /// | 32 MiB | | | 3,096,599 / 263,564 / 1,805 / 109,957 |
    ///
    /// At two threads (`-j 2`, wall time, 3 interleaved rounds) ruff took 0.9 s with 4 MiB
    /// blocks, 1.06 s with 8 MiB and 1.5 s with 16 MiB (two blocks of unequal size); 64 MiB
    /// blocks are over the `diff+base` bound (zstd's frame alone: 4,463,476 bytes at `-l 9`).
    pub fn default_delta_block_size(self) -> usize {
        match self.0 {
            0..=6 => DEFAULT_BLOCK_SIZE,
            7 => 8 << 20,
            8 => 16 << 20,
            _ => 32 << 20,
        }
    }
}

impl Default for Level {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_outside_one_to_nine_are_refused() {
        assert!(matches!(Level::new(0), Err(CodecError::BadLevel(0))));
        assert!(matches!(Level::new(10), Err(CodecError::BadLevel(10))));
        assert_eq!(Level::new(1).map(Level::get).ok(), Some(1));
        assert_eq!(Level::new(9).map(Level::get).ok(), Some(9));
    }

    #[test]
    fn level_map_is_monotonic_and_ends_at_19() {
        let z: Vec<i32> = (1..=9)
            .filter_map(|v| Level::new(v).ok())
            .map(Level::zstd_level)
            .collect();
        assert_eq!(z, ZSTD_LEVELS);
        assert!(z.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(Level::DEFAULT.zstd_level(), 3);
        assert_eq!(Level::MAX.window_log(), 27);
        assert_eq!(Level::DEFAULT.default_block_size(), 4 << 20);
        assert_eq!(Level::MAX.default_block_size(), 64 << 20);
        assert_eq!(Level::DEFAULT.default_delta_block_size(), 4 << 20);
        assert_eq!(Level::new(6).unwrap().default_delta_block_size(), 4 << 20);
        assert_eq!(Level::new(7).unwrap().default_delta_block_size(), 8 << 20);
        assert_eq!(Level::new(8).unwrap().default_delta_block_size(), 16 << 20);
        assert_eq!(Level::MAX.default_delta_block_size(), 32 << 20);
        assert!(Level::MAX.references());
        assert!(!Level::new(8).unwrap().references());
    }
}
