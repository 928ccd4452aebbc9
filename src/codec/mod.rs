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
//! | krypta `-l` | 1 | 2 | 3 (default) | 4 | 5 | 6 | 7 | 8 | 9 |
//! |---|---|---|---|---|---|---|---|---|---|
//! | zstd level  | 1 | 2 | 3 | 5 | 7 | 9 | 12 | 15 | 19, window 2^27, long-distance matching |
//! | default `-b` | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 4 MiB | 32 MiB |
//!
//! Levels 1..=8 use a 4 MiB window (one default block). Decoding any level needs the block
//! buffer only: zstd decodes single-shot into it, so the window costs the decoder nothing.

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
