//! The block codec: BCJ filters, zstd and store, and the per-block encode/decode.

use std::str::FromStr;

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
