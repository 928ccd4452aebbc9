//! BCJ (branch/call/jump) filters as pure, in-place, per-block transforms.
//!
//! A BCJ filter rewrites the relative target of each call/branch instruction into an absolute
//! address (`target + position`), so that repeated calls to the same function become repeated
//! byte strings that zstd can match. The transforms are the ones of xz/liblzma (`xz --x86`,
//! `--arm64`, …; see liblzma `simple/*.c`), taken from `lzma-rust2`, whose x86 output is
//! byte-identical to xz's (checked in `tests/codec_xz.rs`).
//!
//! Each block is filtered on its own, as if it were a whole xz stream that starts at position
//! `start` (the block's offset in the record stream): the filter state starts fresh, and the
//! last few bytes of a block (fewer than one instruction, e.g. < 5 for x86) are left as they
//! are. `decode(f, encode(f, b, s), s) == b` for every byte string `b`, every filter `f` and
//! every start `s`. Positions are taken mod 2^32, as xz does, and rounded down to the
//! filter's instruction [`alignment`] (xz only accepts aligned starts).
//!
//! x86 and AArch64, the filters auto-detection picks, run here in one in-place pass with no
//! scratch memory (xz's algorithms, checked byte for byte against `lzma-rust2` and `xz`).
//! For the others `lzma-rust2` only offers streaming adapters (`BcjWriter` to encode,
//! `BcjReader` to decode): encoding drives the writer chunk by chunk (about 64 KiB of
//! scratch), decoding reads from one copy of the block (the block size in scratch).

use std::io::{self, Read, Write};

use lzma_rust2::filter::bcj::{BcjReader, BcjWriter};

use super::Filter;

/// Bytes moved per step between the block and the streaming adapter, bytes.
const CHUNK: usize = 64 << 10;

/// Applies the BCJ encoder of `filter` to `buf` in place, as if `buf` started at stream position
/// `start` (mod 2^32). `Filter::None` leaves `buf` unchanged.
pub fn encode(filter: Filter, buf: &mut [u8], start: u64) {
    if filter == Filter::None || buf.is_empty() {
        return;
    }
    match filter {
        Filter::X86 => return x86_in_place(buf, start_pos(filter, start) as u32, true),
        Filter::Arm64 => return arm64_in_place(buf, start_pos(filter, start) as u32, true),
        _ => {}
    }
    let result = match new_writer(
        filter,
        Vec::with_capacity(CHUNK + 16),
        start_pos(filter, start),
    ) {
        Some(writer) => encode_with(writer, buf),
        None => Ok(()),
    };
    // Writing into a Vec and copying back into slices of the same total length cannot fail.
    debug_assert!(result.is_ok(), "in-memory BCJ encode failed: {result:?}");
}

/// Undoes [`encode`]: applies the BCJ decoder of `filter` to `buf` in place, with the same
/// `start` the encoder used. `Filter::None` leaves `buf` unchanged.
pub fn decode(filter: Filter, buf: &mut [u8], start: u64) {
    if filter == Filter::None || buf.is_empty() {
        return;
    }
    match filter {
        Filter::X86 => return x86_in_place(buf, start_pos(filter, start) as u32, false),
        Filter::Arm64 => return arm64_in_place(buf, start_pos(filter, start) as u32, false),
        _ => {}
    }
    // The other filters (only ever chosen with `--bcj`): the reader consumes a copy of the
    // block (one memcpy, the block size) and writes the decoded bytes straight back over it in
    // one call: measured about twice as fast as topping up a queue chunk by chunk.
    let source = io::Cursor::new(buf.to_vec());
    let result = match new_reader(filter, source, start_pos(filter, start)) {
        Some(mut reader) => reader.read_exact(buf),
        None => Ok(()),
    };
    // The source holds exactly the block, so reading cannot fail or stop short.
    debug_assert!(result.is_ok(), "in-memory BCJ decode failed: {result:?}");
}

/// The x86 BCJ filter over a whole block in one pass, in place: xz's `simple/x86.c` (as
/// `lzma-rust2` implements it), with the stream positions of a fresh filter starting at
/// `start`. x86 is the filter nearly every executable gets, so it runs here without the
/// streaming adapter's copies through a 4 KiB buffer (about 3× faster); the other filters go
/// through `lzma-rust2`. `tests` check both paths give identical bytes, and
/// `tests/codec_xz.rs` checks the result against `xz --x86`.
fn x86_in_place(buf: &mut [u8], start: u32, encoder: bool) {
    const ALLOWED: [bool; 8] = [true, true, true, false, true, false, false, false];
    const BIT: [u8; 8] = [0, 1, 2, 2, 3, 3, 3, 3];
    let ms = |b: u8| b == 0x00 || b == 0xFF;
    let len = buf.len();
    if len < 5 {
        return;
    }
    // xz's position is that of the byte after the 5-byte instruction.
    let pos = start.wrapping_add(5);
    // Opcodes are looked for at 0..=end; the last 4 bytes cannot start an instruction.
    let end = len - 5;
    let mut prev_pos: isize = -1;
    let mut prev_mask: u32 = 0;
    // The next offset the filter looks at: one past a non-converted opcode, five past a
    // converted one (its four address bytes are skipped, as in xz).
    let mut i = 0usize;
    let mut base = 0usize;
    while base <= end {
        // A bit per E8/E9 byte of buf[base..base + 64], at or after `i`, at most `end`.
        let mut mask = opcode_mask(&buf[base..len.min(base + 64)]);
        let last = end - base;
        if last < 63 {
            mask &= (2u64 << last) - 1;
        }
        mask &= below_cleared(i.saturating_sub(base));
        while mask != 0 {
            let j = base + mask.trailing_zeros() as usize;
            let dist = j as isize - prev_pos;
            prev_pos = j as isize;
            let mut convert = true;
            if dist & !3 != 0 {
                prev_mask = 0;
            } else {
                prev_mask = (prev_mask << (dist - 1)) & 7;
                if prev_mask != 0
                    && (!ALLOWED[prev_mask as usize]
                        || ms(buf[j + 4 - BIT[prev_mask as usize] as usize]))
                {
                    prev_mask = (prev_mask << 1) | 1;
                    convert = false;
                }
            }
            if convert && ms(buf[j + 4]) {
                let mut src =
                    u32::from_le_bytes([buf[j + 1], buf[j + 2], buf[j + 3], buf[j + 4]]) as i32;
                let here = pos.wrapping_add(j as u32) as i32;
                let mut dest;
                loop {
                    dest = if encoder {
                        src.wrapping_add(here)
                    } else {
                        src.wrapping_sub(here)
                    };
                    if prev_mask == 0 {
                        break;
                    }
                    let index = BIT[prev_mask as usize] as u32 * 8;
                    if !ms(((dest >> (24 - index)) & 0xFF) as u8) {
                        break;
                    }
                    src = dest ^ ((1i32 << (32 - index)) - 1);
                }
                buf[j + 1] = dest as u8;
                buf[j + 2] = (dest >> 8) as u8;
                buf[j + 3] = (dest >> 16) as u8;
                buf[j + 4] = (!(((dest >> 24) & 1) - 1)) as u8;
                i = j + 5;
            } else {
                if convert {
                    prev_mask = (prev_mask << 1) | 1;
                }
                i = j + 1;
            }
            mask &= below_cleared(i - base);
        }
        base += 64;
    }
}

/// A bit per byte of `bytes` (at most 64) that is an x86 CALL (E8) or JMP (E9) opcode, bit `k`
/// for `bytes[k]`. Full 64-byte steps go eight bytes at a time (SWAR): candidates are sparse
/// in real code (about one byte in 500 in a large ELF binary), so the scan is what costs.
#[inline]
fn opcode_mask(bytes: &[u8]) -> u64 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let Ok(step) = <&[u8; 64]>::try_from(bytes) else {
        return bytes
            .iter()
            .enumerate()
            .fold(0, |m, (k, &b)| m | u64::from(b & 0xFE == 0xE8) << k);
    };
    let mut mask = 0u64;
    for (k, word) in step.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(word.try_into().expect("8-byte chunk"));
        // Zero exactly in the bytes that are E8 or E9.
        let t = (w & 0xFEFE_FEFE_FEFE_FEFE) ^ 0xE8E8_E8E8_E8E8_E8E8;
        // The high bit of each byte set iff that byte of t is zero (no carries between
        // bytes, so exact), then the eight high bits gathered into the top byte.
        let zero = !(((t & LOW7).wrapping_add(LOW7)) | t) & HIGH;
        mask |= (zero.wrapping_mul(0x0002_0408_1020_4081) >> 56) << (8 * k);
    }
    mask
}

/// The mask that clears bits `0..n` (all of them from 64 on).
#[inline]
fn below_cleared(n: usize) -> u64 {
    if n >= 64 { 0 } else { !0u64 << n }
}

/// The AArch64 BCJ filter over a whole block in one pass, in place: xz's `simple/arm64.c`
/// (XZ Utils 5.4). Each aligned 32-bit little-endian word at block offset `i` (a multiple of
/// 4) is looked at alone: a `BL` gets `(start + i) >> 2` added to its 26-bit immediate, an
/// `ADRP` whose 21-bit page immediate is within ±512 MiB gets `(start + i) >> 12` added to
/// it (subtracted when decoding). Stateless, so in place needs no scratch at all.
fn arm64_in_place(buf: &mut [u8], start: u32, encoder: bool) {
    for (k, word) in buf.chunks_exact_mut(4).enumerate() {
        let pc = start.wrapping_add((k as u32).wrapping_mul(4));
        let instr = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        let out = if instr >> 26 == 0x25 {
            // BL imm26
            let pc = pc >> 2;
            let pc = if encoder { pc } else { 0u32.wrapping_sub(pc) };
            0x9400_0000 | (instr.wrapping_add(pc) & 0x03FF_FFFF)
        } else if instr & 0x9F00_0000 == 0x9000_0000 {
            // ADRP: immlo in bits 29-30, immhi in bits 5-23.
            let src = ((instr >> 29) & 3) | ((instr >> 3) & 0x001F_FFFC);
            if src.wrapping_add(0x0002_0000) & 0x001C_0000 != 0 {
                continue;
            }
            let pc = pc >> 12;
            let pc = if encoder { pc } else { 0u32.wrapping_sub(pc) };
            let dest = src.wrapping_add(pc);
            (instr & 0x9000_001F)
                | ((dest & 3) << 29)
                | ((dest & 0x0003_FFFC) << 3)
                | (0u32.wrapping_sub(dest & 0x0002_0000) & 0x00E0_0000)
        } else {
            continue;
        };
        word.copy_from_slice(&out.to_le_bytes());
    }
}

/// Instruction alignment of each filter, bytes: liblzma refuses a `start` that is not a
/// multiple of it (`--arm64=start=4097` is an options error), and with such a start the
/// transform would not be invertible (the low bits of `target + start` are dropped).
pub fn alignment(filter: Filter) -> u32 {
    match filter {
        Filter::None | Filter::X86 => 1,
        Filter::ArmThumb | Filter::RiscV => 2,
        Filter::Arm | Filter::Arm64 | Filter::PowerPc | Filter::Sparc => 4,
        Filter::Ia64 => 16,
    }
}

/// The position handed to `lzma-rust2`: `start` mod 2^32 (xz keeps positions in a `u32`),
/// rounded down to the filter's [`alignment`], so that every start is valid and invertible
/// and aligned starts are exactly xz's.
fn start_pos(filter: Filter, start: u64) -> usize {
    (start as u32 & !(alignment(filter) - 1)) as usize
}

/// Feeds `buf` through `writer` chunk by chunk and copies the output back over the input.
/// The writer's output never runs ahead of its input, so each output byte lands on a position
/// whose input byte has already been handed to the writer.
fn encode_with(mut writer: BcjWriter<Vec<u8>>, buf: &mut [u8]) -> io::Result<()> {
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut read = 0;
    let mut written = 0;
    while read < buf.len() {
        let end = (read + CHUNK).min(buf.len());
        chunk.clear();
        chunk.extend_from_slice(&buf[read..end]);
        read = end;
        writer.write_all(&chunk)?;
        written = drain_into(writer.inner_mut(), buf, written)?;
    }
    let mut rest = writer.finish()?;
    written = drain_into(&mut rest, buf, written)?;
    if written != buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "BCJ encoder output too short",
        ));
    }
    Ok(())
}

/// Copies `out` to `buf[at..]`, clears `out`, and returns the new write position.
fn drain_into(out: &mut Vec<u8>, buf: &mut [u8], at: usize) -> io::Result<usize> {
    let end = at + out.len();
    let dst = buf
        .get_mut(at..end)
        .ok_or_else(|| io::Error::new(io::ErrorKind::WriteZero, "BCJ encoder output too long"))?;
    dst.copy_from_slice(out);
    out.clear();
    Ok(end)
}

fn new_writer<W: Write>(filter: Filter, inner: W, pos: usize) -> Option<BcjWriter<W>> {
    Some(match filter {
        Filter::None => return None,
        Filter::X86 => BcjWriter::new_x86(inner, pos),
        Filter::Arm64 => BcjWriter::new_arm64(inner, pos),
        Filter::Arm => BcjWriter::new_arm(inner, pos),
        Filter::ArmThumb => BcjWriter::new_arm_thumb(inner, pos),
        Filter::PowerPc => BcjWriter::new_ppc(inner, pos),
        Filter::Sparc => BcjWriter::new_sparc(inner, pos),
        Filter::Ia64 => BcjWriter::new_ia64(inner, pos),
        Filter::RiscV => BcjWriter::new_riscv(inner, pos),
    })
}

fn new_reader<R: Read>(filter: Filter, inner: R, pos: usize) -> Option<BcjReader<R>> {
    Some(match filter {
        Filter::None => return None,
        Filter::X86 => BcjReader::new_x86(inner, pos),
        Filter::Arm64 => BcjReader::new_arm64(inner, pos),
        Filter::Arm => BcjReader::new_arm(inner, pos),
        Filter::ArmThumb => BcjReader::new_arm_thumb(inner, pos),
        Filter::PowerPc => BcjReader::new_ppc(inner, pos),
        Filter::Sparc => BcjReader::new_sparc(inner, pos),
        Filter::Ia64 => BcjReader::new_ia64(inner, pos),
        Filter::RiscV => BcjReader::new_riscv(inner, pos),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The x86 filter through `lzma-rust2`'s streaming adapters (the reference).
    fn x86_streaming(buf: &mut [u8], start: u64, encoder: bool) {
        let pos = start_pos(Filter::X86, start);
        if encoder {
            let w = new_writer(Filter::X86, Vec::with_capacity(CHUNK + 16), pos).unwrap();
            encode_with(w, buf).unwrap();
        } else {
            let mut r = new_reader(Filter::X86, io::Cursor::new(buf.to_vec()), pos).unwrap();
            r.read_exact(buf).unwrap();
        }
    }

    #[test]
    fn in_place_x86_matches_the_streaming_reference_both_ways() {
        // Dense E8/E9 opcodes with 00/FF high bytes at every alignment, plus real code.
        let mut data = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in 0..200_000usize {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data.push(match (x % 9, i % 7) {
                (0..=2, _) => 0xE8,
                (3, _) => 0xE9,
                (4 | 5, _) => 0x00,
                (6, _) => 0xFF,
                _ => x as u8,
            });
        }
        if let Ok(real) = std::fs::read("/usr/bin/ls") {
            data.extend_from_slice(&real);
        }
        for (len, start) in [
            (0usize, 0u64),
            (4, 3),
            (5, 0),
            (6, 1),
            (4096, 7),
            (63, 0),
            (64, 5),
            (68, 0),
            (69, 0),
            (70, 2),
            (127, 0),
            (128, 9),
            (133, 0),
            (200, 1),
            (65_537, 1 << 32),
            (data.len(), 123_456_789),
        ] {
            for encoder in [true, false] {
                let mut a = data[..len].to_vec();
                let mut b = a.clone();
                if encoder {
                    encode(Filter::X86, &mut a, start);
                } else {
                    decode(Filter::X86, &mut a, start);
                }
                x86_streaming(&mut b, start, encoder);
                assert!(a == b, "len {len} start {start} encoder {encoder}");
            }
        }
        // Windows at every alignment to the in-place filter's 64-byte scan steps, ending at
        // every offset of a step: a candidate opcode in the last four bytes of a window, or
        // one whose address bytes cross a step, must be treated as xz treats it.
        for skip in 0..70usize {
            for len in [skip + 5, 64 + skip, 130 + 2 * skip, 1000 + skip] {
                let window = &data[skip..skip + len];
                for encoder in [true, false] {
                    let mut a = window.to_vec();
                    let mut b = a.clone();
                    if encoder {
                        encode(Filter::X86, &mut a, skip as u64);
                    } else {
                        decode(Filter::X86, &mut a, skip as u64);
                    }
                    x86_streaming(&mut b, skip as u64, encoder);
                    assert!(a == b, "skip {skip} len {len} encoder {encoder}");
                }
            }
        }
    }

    #[test]
    fn in_place_arm64_matches_the_streaming_reference_both_ways() {
        // Words dense with BL and ADRP (in and out of ADRP's ±512 MiB range) and noise.
        let mut data = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..60_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let w = match x % 5 {
                0 => 0x9400_0000 | (x >> 8) as u32 & 0x03FF_FFFF,
                1 => 0x9000_0000 | (x >> 8) as u32 & 0x60FF_FFFF,
                2 => 0x9000_0000 | (x >> 8) as u32 & 0x6000_001F,
                _ => (x >> 16) as u32,
            };
            data.extend_from_slice(&w.to_le_bytes());
        }
        for (len, start) in [
            (3usize, 0u64),
            (4, 4),
            (7, 8),
            (4096 + 2, 1 << 20),
            (data.len(), 0xFFFF_F000),
            (data.len() - 1, (1 << 32) + 0x8000_0000),
        ] {
            for encoder in [true, false] {
                let mut a = data[..len].to_vec();
                let mut b = a.clone();
                let pos = start_pos(Filter::Arm64, start);
                if encoder {
                    encode(Filter::Arm64, &mut a, start);
                    let w = new_writer(Filter::Arm64, Vec::new(), pos).unwrap();
                    encode_with(w, &mut b).unwrap();
                } else {
                    decode(Filter::Arm64, &mut a, start);
                    let mut r = new_reader(Filter::Arm64, io::Cursor::new(b.clone()), pos).unwrap();
                    r.read_exact(&mut b).unwrap();
                }
                assert!(a == b, "len {len} start {start} encoder {encoder}");
            }
        }
    }

    #[test]
    fn x86_call_becomes_absolute_and_back() {
        // E8 rel32=0x10 at position 0x100 → absolute 0x100 + 5 + 0x10 = 0x115.
        let mut buf = vec![0u8; 16];
        buf[0] = 0xE8;
        buf[1] = 0x10;
        encode(Filter::X86, &mut buf, 0x100);
        assert_eq!(buf[..5], [0xE8, 0x15, 0x01, 0x00, 0x00]);
        decode(Filter::X86, &mut buf, 0x100);
        assert_eq!(buf[..5], [0xE8, 0x10, 0x00, 0x00, 0x00]);
    }

    #[test]
    fn start_is_taken_mod_2_pow_32() {
        let data: Vec<u8> = (0..10_000u32)
            .map(|i| if i % 7 == 0 { 0xE8 } else { i as u8 })
            .collect();
        let mut a = data.clone();
        let mut b = data.clone();
        encode(Filter::X86, &mut a, 0x1234);
        encode(Filter::X86, &mut b, (7 << 32) + 0x1234);
        assert_eq!(a, b);
        assert_ne!(a, data);
    }

    #[test]
    fn every_filter_round_trips_across_chunk_edges() {
        let len = 3 * CHUNK + 4097;
        let data: Vec<u8> = (0..len as u32)
            .map(|i| match i % 13 {
                0 => 0xE8,
                1 => 0xF0,
                3 => 0xF8,
                5 => 0x94,
                9 => 0xEB,
                11 => 0xEF,
                _ => (i.wrapping_mul(2_654_435_761) >> 24) as u8,
            })
            .collect();
        for f in Filter::ALL {
            let mut buf = data.clone();
            encode(f, &mut buf, 4 << 20);
            if f != Filter::None {
                assert!(buf != data, "{f:?} changed nothing");
            }
            decode(f, &mut buf, 4 << 20);
            assert!(buf == data, "{f:?} did not round-trip");
        }
    }

    #[test]
    fn unaligned_starts_round_down_to_the_instruction_alignment() {
        let data: Vec<u8> = (0..4096u32)
            .map(|i| [0x40, 0x01, 0x7F, 0xC0][(i % 4) as usize])
            .collect();
        let mut a = data.clone();
        let mut b = data.clone();
        encode(Filter::Sparc, &mut a, 4100);
        encode(Filter::Sparc, &mut b, 4103);
        assert!(a == b && a != data);
        assert_eq!(start_pos(Filter::Ia64, 0x1_0000_001F), 0x10);
        assert_eq!(start_pos(Filter::X86, 0x1_0000_001F), 0x1F);
    }

    #[test]
    fn tiny_blocks_are_left_alone_by_x86() {
        let mut buf = [0xE8, 1, 2, 3];
        encode(Filter::X86, &mut buf, 0);
        assert_eq!(buf, [0xE8, 1, 2, 3]);
    }
}
