//! BCJ auto-detection on real files and hand-made ELF, PE and Mach-O headers.

use krypta::codec::{Filter, detect_filter};

fn head(path: &str) -> Option<Vec<u8>> {
    let mut data = std::fs::read(path).ok()?;
    data.truncate(4096);
    Some(data)
}

/// A 64-byte ELF64 header: class, data (1 = LE, 2 = BE), e_type, e_machine.
fn elf(class: u8, data: u8, e_type: u16, machine: u16) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = class;
    h[5] = data;
    h[6] = 1;
    let (t, m) = if data == 2 {
        (e_type.to_be_bytes(), machine.to_be_bytes())
    } else {
        (e_type.to_le_bytes(), machine.to_le_bytes())
    };
    h[16..18].copy_from_slice(&t);
    h[18..20].copy_from_slice(&m);
    h
}

/// A DOS stub with `e_lfanew` = 0x80 and a PE signature + COFF machine there.
fn pe(machine: u16) -> Vec<u8> {
    let mut h = vec![0u8; 0x200];
    h[..2].copy_from_slice(b"MZ");
    h[0x3C..0x40].copy_from_slice(&0x80u32.to_le_bytes());
    h[0x80..0x84].copy_from_slice(b"PE\0\0");
    h[0x84..0x86].copy_from_slice(&machine.to_le_bytes());
    h
}

/// A 32-byte mach_header_64 (little-endian): magic, cputype, cpusubtype, filetype.
fn macho(cputype: u32, filetype: u32) -> Vec<u8> {
    let mut h = vec![0u8; 32];
    h[..4].copy_from_slice(&0xFEED_FACFu32.to_le_bytes());
    h[4..8].copy_from_slice(&cputype.to_le_bytes());
    h[12..16].copy_from_slice(&filetype.to_le_bytes());
    h
}

#[test]
fn usr_bin_ls_is_x86() {
    let Some(ls) = head("/usr/bin/ls") else {
        eprintln!("note: skipping: /usr/bin/ls not readable");
        return;
    };
    if cfg!(target_arch = "x86_64") {
        assert_eq!(detect_filter(&ls), Filter::X86);
    } else if cfg!(target_arch = "aarch64") {
        assert_eq!(detect_filter(&ls), Filter::Arm64);
    }
}

#[test]
fn text_files_are_not_filtered() {
    let text = head(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).expect("Cargo.toml");
    assert_eq!(detect_filter(&text), Filter::None);
    assert_eq!(detect_filter(b""), Filter::None);
    assert_eq!(detect_filter(b"#!/bin/sh\necho hi\n"), Filter::None);
}

#[test]
fn elf_executables_and_shared_objects_by_machine() {
    assert_eq!(detect_filter(&elf(2, 1, 2, 183)), Filter::Arm64); // ET_EXEC, EM_AARCH64
    assert_eq!(detect_filter(&elf(2, 1, 3, 183)), Filter::Arm64); // ET_DYN
    assert_eq!(detect_filter(&elf(2, 1, 3, 62)), Filter::X86); // EM_X86_64
    assert_eq!(detect_filter(&elf(1, 1, 2, 3)), Filter::X86); // ELF32, EM_386
    assert_eq!(detect_filter(&elf(2, 2, 2, 183)), Filter::Arm64); // big-endian fields
    assert_eq!(detect_filter(&elf(2, 1, 2, 40)), Filter::None); // EM_ARM: not auto
    assert_eq!(detect_filter(&elf(2, 1, 2, 243)), Filter::None); // EM_RISCV: not auto
}

#[test]
fn elf_relocatable_objects_are_not_filtered() {
    assert_eq!(detect_filter(&elf(2, 1, 1, 62)), Filter::None); // ET_REL (.o, .ko)
    assert_eq!(detect_filter(&elf(2, 1, 4, 62)), Filter::None); // ET_CORE
}

#[test]
fn truncated_or_odd_headers_are_not_filtered() {
    let full = elf(2, 1, 3, 62);
    for cut in 0..20 {
        assert_eq!(detect_filter(&full[..cut]), Filter::None, "cut at {cut}");
    }
    assert_eq!(detect_filter(&elf(2, 0, 3, 62)), Filter::None); // bad EI_DATA
    let mut far = pe(0x8664);
    far[0x3C..0x40].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    assert_eq!(detect_filter(&far), Filter::None); // e_lfanew out of range
    assert_eq!(detect_filter(&pe(0x8664)[..0x85]), Filter::None); // machine cut off
}

#[test]
fn pe_images_by_machine() {
    assert_eq!(detect_filter(&pe(0x8664)), Filter::X86);
    assert_eq!(detect_filter(&pe(0x014C)), Filter::X86);
    assert_eq!(detect_filter(&pe(0xAA64)), Filter::Arm64);
    assert_eq!(detect_filter(&pe(0x01C4)), Filter::None); // ARMNT
    let mut no_sig = pe(0x8664);
    no_sig[0x80] = b'N';
    assert_eq!(detect_filter(&no_sig), Filter::None);
}

#[test]
fn macho_64_by_cpu_type() {
    assert_eq!(detect_filter(&macho(0x0100_0007, 2)), Filter::X86); // MH_EXECUTE
    assert_eq!(detect_filter(&macho(0x0100_000C, 6)), Filter::Arm64); // MH_DYLIB
    assert_eq!(detect_filter(&macho(0x0100_000C, 1)), Filter::None); // MH_OBJECT
    assert_eq!(detect_filter(&macho(0x0000_0012, 2)), Filter::None); // PowerPC
    let mut be = vec![0u8; 32];
    be[..4].copy_from_slice(&0xFEED_FACFu32.to_be_bytes());
    be[4..8].copy_from_slice(&0x0100_000Cu32.to_be_bytes());
    be[12..16].copy_from_slice(&2u32.to_be_bytes());
    assert_eq!(detect_filter(&be), Filter::Arm64);
}

#[test]
fn only_the_first_4_kib_are_looked_at() {
    let mut h = pe(0x8664);
    h.resize(8192, 0);
    h[0x3C..0x40].copy_from_slice(&0x1000u32.to_le_bytes());
    h[0x1000..0x1004].copy_from_slice(b"PE\0\0");
    h[0x1004..0x1006].copy_from_slice(&0x8664u16.to_le_bytes());
    assert_eq!(detect_filter(&h), Filter::None);
}
