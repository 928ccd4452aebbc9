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
//! `lzma-rust2` only offers streaming adapters (`BcjWriter` to encode, `BcjReader` to decode);
//! this module drives them chunk by chunk so that the transform is in place with a bounded
//! scratch buffer (about [`CHUNK`] + 4 KiB bytes), whatever the block size.

use std::collections::VecDeque;
use std::io::{self, Read, Write};

use lzma_rust2::filter::bcj::{BcjReader, BcjWriter};

use super::Filter;

/// Bytes moved per step between the block and the streaming adapter, bytes.
const CHUNK: usize = 64 << 10;
/// Read-ahead of `lzma-rust2`'s `BcjReader` (its internal buffer), bytes.
const READER_LOOKAHEAD: usize = 4096;

/// Applies the BCJ encoder of `filter` to `buf` in place, as if `buf` started at stream position
/// `start` (mod 2^32). `Filter::None` leaves `buf` unchanged.
pub fn encode(filter: Filter, buf: &mut [u8], start: u64) {
    if filter == Filter::None || buf.is_empty() {
        return;
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
    let feed = Feed {
        data: VecDeque::with_capacity(CHUNK + READER_LOOKAHEAD + 16),
    };
    let result = match new_reader(filter, feed, start_pos(filter, start)) {
        Some(reader) => decode_with(reader, buf),
        None => Ok(()),
    };
    // The feed always holds enough bytes for the reader, so reading cannot fail or stop short.
    debug_assert!(result.is_ok(), "in-memory BCJ decode failed: {result:?}");
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

/// The byte source of the decoding `BcjReader`: a queue that this module refills from the block
/// before every read, so that it only runs dry at the real end of the block.
struct Feed {
    data: VecDeque<u8>,
}

impl Read for Feed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.data.read(buf)
    }
}

/// Reads the decoded block out of `reader` in chunks, each time first topping up the feed so
/// that it holds every input byte the reader may consume while producing the chunk (the chunk
/// plus the reader's look-ahead). Every output position has been copied into the feed before
/// it is overwritten.
fn decode_with(mut reader: BcjReader<Feed>, buf: &mut [u8]) -> io::Result<()> {
    let len = buf.len();
    let mut fed = 0;
    let mut out = 0;
    while out < len {
        let want = (len - out).min(CHUNK);
        let feed_to = (out + want + READER_LOOKAHEAD).min(len);
        if feed_to > fed {
            reader.inner_mut().data.extend(&buf[fed..feed_to]);
            fed = feed_to;
        }
        reader.read_exact(&mut buf[out..out + want])?;
        out += want;
    }
    Ok(())
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
