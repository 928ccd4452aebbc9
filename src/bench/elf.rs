//! The two facts the `binary` fixture needs from an ELF file: where its program header table
//! is, and which segment holds its machine code (System V gABI, 64-bit little-endian only).

/// Reads a little-endian integer of `N` bytes at `at`.
fn le<const N: usize>(b: &[u8], at: usize) -> Option<u64> {
    let bytes = b.get(at..at.checked_add(N)?)?;
    Some(
        bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
    )
}

/// Where the program header table of a 64-bit little-endian ELF file lies, given its
/// 64-byte ELF header: (file offset `e_phoff`, length `e_phnum · e_phentsize`, entry size),
/// at most 64 KiB (System V gABI, "ELF header").
pub fn program_headers(ehdr: &[u8]) -> Option<(u64, usize, usize)> {
    if !ehdr.starts_with(b"\x7fELF\x02\x01") {
        return None;
    }
    let phoff = le::<8>(ehdr, 0x20)?;
    let entsize = usize::try_from(le::<2>(ehdr, 0x36)?).ok()?;
    let count = usize::try_from(le::<2>(ehdr, 0x38)?).ok()?;
    let len = entsize.checked_mul(count).filter(|&l| l <= 64 * 1024)?;
    (entsize >= 56).then_some((phoff, len, entsize))
}

/// (file offset, size) of the first executable `PT_LOAD` segment in a program header table
/// of `entsize`-byte entries (`p_type` 1, `p_flags & PF_X`).
pub fn exec_segment(phdrs: &[u8], entsize: usize) -> Option<(u64, u64)> {
    phdrs.chunks_exact(entsize.max(1)).find_map(|ph| {
        let p_type = le::<4>(ph, 0)?;
        let p_flags = le::<4>(ph, 4)?;
        (p_type == 1 && p_flags & 1 == 1).then_some((le::<8>(ph, 8)?, le::<8>(ph, 32)?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_segment_finds_the_first_executable_load() {
        let mut ehdr = [0u8; 64];
        ehdr[..6].copy_from_slice(b"\x7fELF\x02\x01");
        ehdr[0x20..0x28].copy_from_slice(&0x500_0000u64.to_le_bytes()); // e_phoff
        ehdr[0x36] = 56; // e_phentsize
        ehdr[0x38] = 2; // e_phnum
        assert_eq!(program_headers(&ehdr), Some((0x500_0000, 112, 56)));
        assert_eq!(program_headers(b"not an elf"), None);
        let mut ph = vec![0u8; 112];
        // First PT_LOAD: read-only (flags 4). Second: R+X (5), offset 0x1000, size 0x2000.
        ph[0] = 1;
        ph[4] = 4;
        ph[56] = 1;
        ph[60] = 5;
        ph[64..72].copy_from_slice(&0x1000u64.to_le_bytes());
        ph[88..96].copy_from_slice(&0x2000u64.to_le_bytes());
        assert_eq!(exec_segment(&ph, 56), Some((0x1000, 0x2000)));
        assert_eq!(exec_segment(&ph[..56], 56), None);
    }
}
