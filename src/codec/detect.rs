//! Choosing a BCJ filter from a file's first bytes (ELF, PE, Mach-O headers).
//!
//! Only linked images are recognised: ELF `ET_EXEC`/`ET_DYN`, any PE image, and Mach-O files
//! other than `MH_OBJECT`. Relocatable objects (`.o`, `.ko`) are left unfiltered on purpose:
//! their call sites hold zeros waiting for relocation, and BCJ would turn those equal bytes
//! into position-dependent ones, costing ratio instead of gaining it.

use super::Filter;

/// How many leading bytes [`detect_filter`] looks at, at most, bytes.
pub const PREFIX_LEN: usize = 4096;

/// Looks at the first bytes (up to [`PREFIX_LEN`]) of a file and returns the BCJ filter that
/// suits it:
/// - ELF (System V gABI, "ELF header"): `e_type` `ET_EXEC` (2) or `ET_DYN` (3), with
///   `e_machine` `EM_X86_64` (62) or `EM_386` (3) → [`Filter::X86`], `EM_AARCH64` (183) →
///   [`Filter::Arm64`];
/// - PE (Microsoft PE/COFF spec §2–3): `MZ`, `e_lfanew` at 0x3C pointing inside the prefix at
///   `PE\0\0`, then `Machine` 0x8664 (AMD64) or 0x14C (i386) → X86, 0xAA64 (ARM64) → Arm64;
/// - Mach-O (`<mach-o/loader.h>`): 64-bit magic 0xFEEDFACF in either byte order, `filetype`
///   not `MH_OBJECT`, `cputype` `CPU_TYPE_X86_64` (0x0100_0007) → X86, `CPU_TYPE_ARM64`
///   (0x0100_000C) → Arm64.
///
/// Anything else, including truncated headers, gives [`Filter::None`]. Never panics.
pub fn detect_filter(prefix: &[u8]) -> Filter {
    let prefix = &prefix[..prefix.len().min(PREFIX_LEN)];
    elf(prefix)
        .or_else(|| pe(prefix))
        .or_else(|| macho(prefix))
        .unwrap_or(Filter::None)
}

fn u16_at(b: &[u8], at: usize, big_endian: bool) -> Option<u16> {
    let bytes: [u8; 2] = b.get(at..at.checked_add(2)?)?.try_into().ok()?;
    Some(if big_endian {
        u16::from_be_bytes(bytes)
    } else {
        u16::from_le_bytes(bytes)
    })
}

fn u32_at(b: &[u8], at: usize, big_endian: bool) -> Option<u32> {
    let bytes: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(if big_endian {
        u32::from_be_bytes(bytes)
    } else {
        u32::from_le_bytes(bytes)
    })
}

fn elf(b: &[u8]) -> Option<Filter> {
    const ET_EXEC: u16 = 2;
    const ET_DYN: u16 = 3;
    const EM_386: u16 = 3;
    const EM_X86_64: u16 = 62;
    const EM_AARCH64: u16 = 183;
    if !b.starts_with(b"\x7fELF") {
        return None;
    }
    // EI_DATA: 1 = little-endian, 2 = big-endian.
    let big_endian = match b.get(5)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let e_type = u16_at(b, 16, big_endian)?;
    if e_type != ET_EXEC && e_type != ET_DYN {
        return None;
    }
    match u16_at(b, 18, big_endian)? {
        EM_386 | EM_X86_64 => Some(Filter::X86),
        EM_AARCH64 => Some(Filter::Arm64),
        _ => None,
    }
}

fn pe(b: &[u8]) -> Option<Filter> {
    if !b.starts_with(b"MZ") {
        return None;
    }
    let e_lfanew = u32_at(b, 0x3C, false)? as usize;
    if b.get(e_lfanew..e_lfanew.checked_add(4)?)? != b"PE\0\0" {
        return None;
    }
    match u16_at(b, e_lfanew + 4, false)? {
        0x8664 | 0x014C => Some(Filter::X86),
        0xAA64 => Some(Filter::Arm64),
        _ => None,
    }
}

fn macho(b: &[u8]) -> Option<Filter> {
    const MH_MAGIC_64: u32 = 0xFEED_FACF;
    const MH_OBJECT: u32 = 1;
    const CPU_TYPE_X86_64: u32 = 0x0100_0007;
    const CPU_TYPE_ARM64: u32 = 0x0100_000C;
    let big_endian = if u32_at(b, 0, false)? == MH_MAGIC_64 {
        false
    } else if u32_at(b, 0, true)? == MH_MAGIC_64 {
        true
    } else {
        return None;
    };
    let cputype = u32_at(b, 4, big_endian)?;
    let filetype = u32_at(b, 12, big_endian)?;
    if filetype == MH_OBJECT {
        return None;
    }
    match cputype {
        CPU_TYPE_X86_64 => Some(Filter::X86),
        CPU_TYPE_ARM64 => Some(Filter::Arm64),
        _ => None,
    }
}
