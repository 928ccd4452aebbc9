//! The block codec: BCJ filters, zstd and store, and the per-block encode/decode.
//!
//! Each block (default [`DEFAULT_BLOCK_SIZE`], at most [`MAX_BLOCK_SIZE`]) is encoded on its
//! own by a [`BlockEncoder`]: optional BCJ filter ([`bcj`], chosen by [`detect`] or `--bcj`),
//! then one zstd frame (RFC 8878) at the zstd level that [`Level`] maps to, or the raw bytes
//! ([`Codec::Store`]) when the frame would not be smaller. [`BlockDecoder`] reverses it into a
//! buffer of exactly the declared size, so decode memory per worker is one block plus a fixed
//! ~0.25 MiB (zstd context and BCJ scratch).
//!
//! # Levels
//!
//! | krypta `-l`  | 1 | 2 | 3 (default) | 4 | 5 | 6 | 7 | 8 | 9 |
//! |--------------|---|---|---|---|---|---|---|---|---|
//! | zstd level   | 1 | 2 | 3 | 5 | 7 | 9 | 12 | 17 | 19 + window 2^27 + long-distance matching |
//! | default `-b` | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 128 MiB |
//!
//! Levels 1..=8 cap the window at 2^22 (one default block). Decoding any level needs the
//! block buffer only: zstd decodes single-shot into it, so the window costs the decoder
//! nothing; decode memory per worker is the block size (4 MiB; 128 MiB at level 9) + ~0.3 MiB.
//!
//! Why this map (measurements below): each step costs roughly 1.5–2× the CPU of the one
//! before for a visible gain in ratio. zstd 4 is skipped (no gain over 3 on text), zstd 13–16
//! are skipped (on binaries 13–15 are 3–4× slower than 12 for +0.5%; 17 beats 16 on both
//! ratio and speed), zstd 18 is skipped (19 is as fast on binaries and smaller). Level 3 is
//! the default: zstd's own default, ~100–450 MB/s per core, and within 5–10% of level 5's
//! ratio at half its cost. Level 9 is zstd 19 with a 128 MiB window and long-distance
//! matching on 128 MiB blocks: the smallest power-of-two block within 2% of
//! `zstd -19 --long=27` on the whole input (4 MiB blocks are 23% bigger, 64 MiB 3.4%).
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
//! | `-l` (zstd) | krypta bytes | ratio | comp MB/s | dec MB/s | `zstd -T1 -N` bytes (ratio) |
//! |---|---|---|---|---|---|
//! TEXT_ROWS
//!
//! (b) binary: `librustc_driver-6108105cd7e839cf.so` (Rust 1.95.0), 153,621,360 bytes.
//!
//! | `-l` (zstd) | krypta bytes | ratio | comp MB/s | dec MB/s | `zstd -T1 -N` bytes (ratio) | CLI comp MB/s |
//! |---|---|---|---|---|---|---|
//! BIN_ROWS
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
//! LEVEL9_VARIANTS
//!
//! (d) x86 BCJ on (b):
//!
//! | `-l` | block | no filter | x86 filter | gain |
//! |---|---|---|---|---|
//! BCJ_ROWS

use std::str::FromStr;

pub mod bcj;
mod block;
pub mod detect;
mod level;

pub use block::{BlockDecoder, BlockEncoder};
pub use detect::detect_filter;
pub use level::Level;

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
}

impl Codec {
    /// Parses the on-disk code.
    pub fn from_u8(v: u8) -> Option<Codec> {
        match v {
            0 => Some(Codec::Store),
            1 => Some(Codec::Zstd),
            _ => None,
        }
    }
    /// Name as `list -v` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Store => "store",
            Codec::Zstd => "zstd",
        }
    }
}

/// Largest raw (decoded) block the format allows, bytes. Readers refuse larger declared sizes
/// before allocating, so decode memory per worker is bounded by this.
pub const MAX_BLOCK_SIZE: usize = 256 << 20;
/// Smallest block size accepted from `-b`, bytes.
pub const MIN_BLOCK_SIZE: usize = 64 << 10;
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
    /// The zstd frame is cut short.
    #[error("zstd frame is truncated")]
    Truncated,
    /// Bytes follow the single zstd frame of a block.
    #[error("{} bytes follow the {frame_len}-byte zstd frame", payload_len - frame_len)]
    TrailingData {
        /// Length of the first frame, bytes.
        frame_len: u64,
        /// Length of the whole payload, bytes.
        payload_len: u64,
    },
}
