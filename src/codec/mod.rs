//! The block codec: BCJ filters, zstd and store, and the per-block encode/decode.
//!
//! Each block (default [`DEFAULT_BLOCK_SIZE`], at most [`MAX_BLOCK_SIZE`]) is encoded on its
//! own by a [`BlockEncoder`]: optional BCJ filter ([`bcj`], chosen by [`detect`] or `--bcj`),
//! then one zstd frame (RFC 8878) at the zstd level that [`Level`] maps to, or the raw bytes
//! ([`Codec::Store`]) when the frame would not be smaller. [`BlockDecoder`] reverses it into a
//! buffer of exactly the declared size, so decode memory per worker is one block plus the
//! ~0.2 MiB zstd context (two blocks for the BCJ filters other than x86 and ARM64).
//!
//! # Levels
//!
//! | krypta `-l`  | 1 | 2 | 3 (default) | 4 | 5 | 6 | 7 | 8 | 9 |
//! |--------------|---|---|---|---|---|---|---|---|---|
//! | zstd level   | 1 | 2 | 3 | 5 | 7 | 9 | 12 | 17 | 19 + window 2^27 + long-distance matching |
//! | default `-b` | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 64 MiB, referencing |
//!
//! Levels 1..=8 cap the window at 2^22 (one default block). Decoding any level needs the
//! block buffer only: zstd decodes single-shot into it, so the window costs the decoder
//! nothing; decode memory per worker is the block size (4 MiB; 64 MiB at level 9) + ~0.2 MiB.
//! Level 9's blocks reference the block before them within groups of
//! [`REFERENCE_GROUP_BLOCKS`] (`crate::archive`'s chain module, docs/FORMAT.md §12.3): the
//! reader decodes them in stream order with the previous block as the prefix.
//!
//! Why this map (measurements below): each step costs roughly 1.5–2× the CPU of the one
//! before for a visible gain in ratio. zstd 4 is skipped (no gain over 3 on text), zstd 13–16
//! are skipped (on binaries 13–15 are 3–4× slower than 12 for +0.5%; 17 beats 16 on both
//! ratio and speed), zstd 18 is skipped (19 is as fast on binaries and smaller). Level 3 is
//! the default: zstd's own default, ~100–450 MB/s per core, and within 5–10% of level 5's
//! ratio at half its cost. Level 9 is zstd 19 with a 128 MiB window and long-distance
//! matching on 64 MiB blocks that each reference the 64 MiB before them, so every position
//! sees 64–128 MiB back as `zstd -19 --long=27` does on the whole input. (Independent blocks
//! needed 128 MiB to come within 2% on (a) below, and still re-learnt everything at each
//! block: 7.4× zstd's size on 1 GiB of repetitive text; issue 13.)
//!
//! # Measurements
//!
//! 2026-11-30, 2-core AMD EPYC VM shared with other jobs (load 7–14), zstd CLI 1.5.4, libzstd
//! 1.5.7 (zstd-sys 2.1.3), release build, one thread, 4 MiB blocks unless stated. Speeds are MB/s
//! of raw data per CPU-second of the measuring thread / child process (wall clock was 2–5×
//! longer under the load), so read them as ±20%. Reproduce with
//! `cargo test --release --test codec_measure -- --ignored --nocapture --test-threads=1`.
//!
//! (a) text: `tar cf /tmp/inc.tar -C /usr include`, 121,036,800 bytes.
//!
//! | `-l` (zstd) | krypta bytes | ratio | comp MB/s | dec MB/s | `zstd -T1 -#` bytes (ratio) |
//! |---|---|---|---|---|---|
//! | 1 (1)   | 16,548,871 | 7.31  | 400 | 1392 | 23,590,242 (5.13) |
//! | 2 (2)   | 15,792,208 | 7.66  | 313 | 1122 | 15,668,422 (7.73) |
//! | 3 (3)   | 14,932,718 | 8.11  | 221 | 1135 | 14,197,120 (8.53) |
//! | 4 (5)   | 13,821,142 | 8.76  | 108 | 1312 | 12,986,789 (9.32) |
//! | 5 (7)   | 13,048,303 | 9.28  |  72 | 1422 | 12,205,195 (9.92) |
//! | 6 (9)   | 12,864,455 | 9.41  |  59 | 1179 | 11,258,787 (10.75) |
//! | 7 (12)  | 12,664,950 | 9.56  |  24 | 1249 | 11,035,825 (10.97) |
//! | 8 (17)  | 11,669,087 | 10.37 | 4.0 |  885 |  9,947,758 (12.17) |
//! | 9 (19), 4 MiB blocks   | 11,489,914 | 10.53 | 2.0 | 977 | 9,711,464 (12.46) |
//! | 9 (19), 128 MiB blocks |  9,345,622 | 12.95 | 1.9 | 649 | `--long=27`: 9,361,778 (12.93) |
//!
//! The CLI compresses the whole tar as one stream (window 2^19..2^23 by level), so it finds
//! the repeats between headers megabytes apart that independent 4 MiB blocks cannot: that,
//! not the codec, is the 5–15% gap. Its speeds (170 MB/s at -3, 3.2 at -17) are within noise
//! of ours.
//!
//! (b) binary: `librustc_driver-6108105cd7e839cf.so` (Rust 1.95.0), 153,621,360 bytes.
//!
//! | `-l` (zstd) | krypta bytes | ratio | comp MB/s | dec MB/s | `zstd -T1 -#` bytes (ratio) | CLI comp MB/s |
//! |---|---|---|---|---|---|---|
//! | 1 (1)   | 65,255,794 | 2.354 | 218 | 697 | 65,357,808 (2.350) | 136 |
//! | 2 (2)   | 60,613,613 | 2.534 | 146 | 598 | 60,630,350 (2.534) | 116 |
//! | 3 (3)   | 57,641,043 | 2.665 |  80 | 602 | 57,675,986 (2.664) |  99 |
//! | 4 (5)   | 55,021,106 | 2.792 |  52 | 485 | 54,796,529 (2.803) |  39 |
//! | 5 (7)   | 52,763,835 | 2.911 |  32 | 593 | 52,512,913 (2.925) |  30 |
//! | 6 (9)   | 52,005,551 | 2.954 |  23 | 554 | 50,770,974 (3.026) |  20 |
//! | 7 (12)  | 51,519,163 | 2.982 |  11 | 490 | 50,080,760 (3.067) |   9 |
//! | 8 (17)  | 49,008,972 | 3.135 | 2.0 | 463 | 46,615,436 (3.296) | 1.2 |
//! | 9 (19), 4 MiB blocks  | 46,930,492 | 3.273 | 1.2 | 426 | 44,322,615 (3.466) | 0.9 |
//! | 9 (19), 32 MiB blocks | 44,292,594 | 3.468 | 1.0 | 375 | | |
//!
//! On machine code 4 MiB blocks cost almost nothing at levels 1–5 (≤ 0.5%).
//!
//! (c) level 9 block size on (a), against `zstd -19 --long=27 -T1` of the whole tar:
//! 9,361,778 bytes (ratio 12.93, 1.9 MB/s).
//!
//! | block | bytes | vs whole | comp MB/s | dec MB/s | encoder memory |
//! |---|---|---|---|---|---|
//! | 4 MiB   | 11,489,914 | +22.7% | 2.2 | 1127 | 51 MiB |
//! | 16 MiB  | 10,197,631 | +8.9%  | 2.0 | 1036 | 89 MiB |
//! | 32 MiB  |  9,899,180 | +5.7%  | 2.3 | 1097 | 97 MiB |
//! | 64 MiB  |  9,680,895 | +3.4%  | 2.1 |  770 | 113 MiB |
//! | 96 MiB  |  9,465,468 | +1.1%  | 1.9 |  554 | — |
//! | 128 MiB |  9,345,622 | −0.2%  | 1.9 |  649 | 145 MiB |
//!
//! At 128 MiB blocks, a 2^25 window (with long-distance matching) gives 9,494,029 bytes
//! (+1.6%); libzstd turns long-distance matching on by itself for zstd 19 with a 2^27 window.
//! Decode memory per worker at level 9 is the 128 MiB block.
//!
//! (d) x86 BCJ on (b):
//!
//! | `-l` | block | no filter | x86 filter | gain |
//! |---|---|---|---|---|
//! | 1 | 4 MiB  | 65,255,794 (2.354) | 64,331,423 (2.388) | −1.4% |
//! | 3 | 4 MiB  | 57,641,043 (2.665) | 56,736,115 (2.708) | −1.6% |
//! | 9 | 32 MiB | 44,292,594 (3.468) | 43,807,591 (3.507) | −1.1% |
//!
//! The x86 filter runs at ~1.3 GB/s per core each way (in place, 64 MiB of (b), CPU time;
//! `lzma-rust2`'s streaming `BcjWriter` alone: ~0.5 GB/s), so it adds ~10% to level 3's
//! compression time and about a third to its decompression time on binaries, for 1–1.6%
//! smaller output. It is worth it for backups (written once, kept long), and it is
//! applied only to files recognised as x86/ARM64 executables.

use std::str::FromStr;

pub mod bcj;
mod block;
pub mod detect;
pub mod huge;
mod level;
pub mod zframe;

pub use block::{
    BlockDecoder, BlockEncoder, DiffEffort, DiffEncoder, DiffError, decode_stored_in_place,
};
pub(crate) use block::{
    delta_frame_tables, delta_window_log, diff_stream_levels, diff_table_bytes, makes_diff,
};
/// Bytes of a `diff+base` payload's head after its region descriptor: a version byte and four
/// u32 stream lengths (docs/FORMAT.md §16.6).
pub const DIFF_HEAD_LEN: usize = block::DIFF_HEAD_LEN;
pub use detect::detect_filter;
pub use level::{DELTA_LDM_BUCKET_LOG, DELTA_LDM_MIN_MATCH, Level, REFERENCE_GROUP_BLOCKS};

/// On-disk BCJ filter codes (the byte stored in each block header).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Filter {
    /// No filter.
    None = 0,
    /// x86 / x86-64 BCJ (E8/E9 call/jump targets), as in xz.
    X86 = 1,
    /// AArch64 BL/ADRP, as in xz 5.4+.
    Arm64 = 2,
    /// 32-bit ARM BL.
    Arm = 3,
    /// ARM Thumb BL.
    ArmThumb = 4,
    /// PowerPC (big-endian) branch.
    PowerPc = 5,
    /// SPARC call.
    Sparc = 6,
    /// IA-64 bundles.
    Ia64 = 7,
    /// RISC-V JAL/AUIPC.
    RiscV = 8,
}

impl Filter {
    /// Every filter, in code order.
    pub const ALL: [Filter; 9] = [
        Filter::None,
        Filter::X86,
        Filter::Arm64,
        Filter::Arm,
        Filter::ArmThumb,
        Filter::PowerPc,
        Filter::Sparc,
        Filter::Ia64,
        Filter::RiscV,
    ];

    /// Parses the on-disk code; `None` for an unknown code.
    pub fn from_u8(v: u8) -> Option<Filter> {
        Filter::ALL.get(v as usize).copied()
    }

    /// The name used on the command line and in `list -v`.
    pub fn name(self) -> &'static str {
        match self {
            Filter::None => "none",
            Filter::X86 => "x86",
            Filter::Arm64 => "arm64",
            Filter::Arm => "arm",
            Filter::ArmThumb => "armthumb",
            Filter::PowerPc => "powerpc",
            Filter::Sparc => "sparc",
            Filter::Ia64 => "ia64",
            Filter::RiscV => "riscv",
        }
    }
}

impl FromStr for Filter {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "off" {
            return Ok(Filter::None);
        }
        Filter::ALL
            .iter()
            .copied()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown BCJ filter '{s}' (expected off, x86, arm64, arm, armthumb, powerpc, sparc, ia64, riscv)"))
    }
}

/// On-disk codec codes.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// Bytes stored as they are (after the filter).
    Store = 0,
    /// One zstd frame (RFC 8878).
    Zstd = 1,
    /// Format 2, delta archives only: a base region descriptor (16 bytes,
    /// [`crate::format::block::BaseRegion`]) and one zstd frame decoded with that region of
    /// the base archive's record stream as its raw-content prefix (docs/FORMAT.md §16).
    ZstdBase = 2,
    /// Format 2, delta archives only: a base region descriptor as for [`Codec::ZstdBase`],
    /// then a bsdiff-style delta against that region (commands, sparse diff bytes and
    /// extra bytes, each stream a zstd frame: docs/FORMAT.md §16.6).
    DiffBase = 3,
}

impl Codec {
    /// Parses the on-disk code.
    pub fn from_u8(v: u8) -> Option<Codec> {
        match v {
            0 => Some(Codec::Store),
            1 => Some(Codec::Zstd),
            2 => Some(Codec::ZstdBase),
            3 => Some(Codec::DiffBase),
            _ => None,
        }
    }
    /// Name as `list -v` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Store => "store",
            Codec::Zstd => "zstd",
            Codec::ZstdBase => "zstd+base",
            Codec::DiffBase => "diff+base",
        }
    }
    /// Whether the block decodes against a region of a delta base (codecs 2 and 3): its
    /// payload starts with a [`crate::format::block::BaseRegion`].
    pub fn reads_base(self) -> bool {
        matches!(self, Codec::ZstdBase | Codec::DiffBase)
    }
}

/// The largest decoded block and the smallest block size a writer uses: defined with every
/// other limit in [`crate::format::limits`].
pub use crate::format::limits::{MAX_BLOCK_SIZE, MIN_BLOCK_SIZE};
/// Default block size, bytes (4 MiB).
pub const DEFAULT_BLOCK_SIZE: usize = 4 << 20;

/// Errors of the block codec. The caller names the archive and block.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// A compression level outside 1..=9.
    #[error("compression level {0} is outside 1..=9")]
    BadLevel(u8),
    /// libzstd refused to set up, compress or decompress (e.g. a corrupt frame).
    #[error("zstd: {0}")]
    Zstd(#[source] std::io::Error),
    /// A buffer for a block, or zstd's working memory, could not be allocated.
    #[error("out of memory: {0}")]
    OutOfMemory(#[from] crate::memory::OutOfMemory),
    /// A block larger than [`MAX_BLOCK_SIZE`].
    #[error("block of {len} bytes exceeds the maximum of {MAX_BLOCK_SIZE} bytes")]
    TooLarge {
        /// The block's length, bytes.
        len: u64,
    },
    /// The payload declares or decodes to a size other than the block's raw length.
    #[error("block decodes to {got} bytes, expected {expected}")]
    SizeMismatch {
        /// The raw length from the block header, bytes.
        expected: u64,
        /// The size the payload declares or decodes to, bytes.
        got: u64,
    },
    /// The zstd payload does not start with a valid frame header.
    #[error("payload is not a zstd frame")]
    NotAFrame,
    /// The zstd frame header does not declare its content size (krypta always writes it).
    #[error("zstd frame does not declare its content size")]
    NoContentSize,
    /// A `diff+base` payload is damaged (docs/FORMAT.md §16.6).
    #[error("diff+base block: {0}")]
    Diff(#[from] block::DiffError),
    /// The zstd frame is cut short.
    #[error("zstd frame is truncated")]
    Truncated,
    /// A zstd frame rule of format 2 is broken (docs/FORMAT.md §2.2).
    #[error("zstd frame: {0}")]
    FrameRule(&'static str),
    /// The zstd frame declares a window beyond what format 2 lets it ask of a decoder.
    #[error("zstd frame declares a {window}-byte window (at most 512 MiB)")]
    WindowTooLarge {
        /// The declared `Window_Size`, bytes.
        window: u64,
    },
    /// Bytes follow the single zstd frame of a block.
    #[error("{} bytes follow the {frame_len}-byte zstd frame", payload_len - frame_len)]
    TrailingData {
        /// Length of the first frame, bytes.
        frame_len: u64,
        /// Length of the whole payload, bytes.
        payload_len: u64,
    },
}
