//! The one table of limits of the format (docs/FORMAT.md §10): every cap a reader enforces,
//! defined here once and used by the writer as well, so that krypta never writes an archive
//! its own reader refuses (issue 12 #15: a 4097-byte `--comment` was written and then
//! refused on every read — data loss).
//!
//! The rule: a reader refuses a value beyond one of these limits, and the writer refuses the
//! same value *before writing anything of it* with a clear error naming the file or option.
//! The checks that both sides share live next to the structure they describe, and use these
//! constants: [`super::header::Header::check`] (comment, stanzas, header length),
//! [`super::stanza::check_stanza_set`], [`super::entry::EntryMeta::check`] (path, link, mode,
//! time), [`super::record::ExtentCheck`] (segments and file size), and
//! [`super::index::entry_len`] (index size). A format-2 reader reuses them as they are.
//!
//! | what | limit | constant |
//! |---|---|---|
//! | header, bytes (tag included) | 84 ..= 1 MiB | [`MIN_HEADER_LEN`], [`MAX_HEADER_LEN`] |
//! | stanzas per header | 64, at most 1 password stanza | [`MAX_STANZAS`], [`MAX_PASSWORD_STANZAS`] |
//! | comment, bytes of UTF-8 | 4096 | [`MAX_COMMENT_LEN`] |
//! | block (decoded), bytes | 1 ..= 256 MiB | [`MAX_BLOCK_SIZE`] |
//! | writer's block size (`-b`), bytes | 64 KiB ..= 256 MiB | [`MIN_BLOCK_SIZE`], [`MAX_BLOCK_SIZE`] |
//! | frame body, bytes | 16 ..= 16 + 256 MiB | [`MAX_BODY_LEN`] |
//! | DATA segment, bytes | 1 ..= 16 MiB | [`MAX_SEGMENT`] |
//! | file size (logical, holes included), bytes | 2⁴⁴ (16 TiB) | [`MAX_FILE_SIZE`] |
//! | entry path, bytes | 1 ..= 65,536 | [`MAX_PATH_LEN`] |
//! | symlink target or hard-link target, bytes | 1 ..= 65,536 | [`MAX_LINK_LEN`] |
//! | index (decoded), bytes | 2 GiB | [`MAX_INDEX_LEN`] |
//! | hole bytes hashed per scan (to check file digests) | 1 GiB + 1024 × frame bytes read | [`hole_hash_allowance`] |
//!
//! Format 2 adds (docs/FORMAT.md §10):
//!
//! | what | limit | constant |
//! |---|---|---|
//! | header extensions | 64 | [`MAX_EXTENSIONS`] |
//! | recovery percent (extension 0x0001) | 1 ..= 50 | [`RECOVERY_PERCENT`] |
//! | nominal block size in a v2 header, bytes | 64 KiB ..= 256 MiB | [`MIN_BLOCK_SIZE`], [`MAX_BLOCK_SIZE`] |
//! | reference length of a block, bytes | 0 ..= 256 MiB | [`MAX_REFERENCE_LEN`] |
//! | zstd Window_Size a decoder must support, bytes | 512 MiB | [`MAX_ZSTD_WINDOW`] |
//! | entry fields area, bytes | 1 MiB | [`MAX_FIELDS_LEN`] |
//! | owner user / group name, bytes | 1 ..= 256 | [`MAX_OWNER_NAME_LEN`] |
//! | extended attribute name, bytes | 1 ..= 255 | [`MAX_XATTR_NAME_LEN`] |
//! | extended attribute value, bytes | 0 ..= 65,536 | [`MAX_XATTR_VALUE_LEN`] |

use super::frame::BLOCK_HEADER_LEN;

/// Largest header, bytes, tag included (64 pq-box stanzas and a full comment are about 80 KiB).
pub const MAX_HEADER_LEN: usize = 1 << 20;
/// Smallest header, bytes: prefix (16), fixed fields (32), empty comment (4) and tag (32).
pub const MIN_HEADER_LEN: usize = 16 + 32 + 4 + 32;
/// Most stanzas one header may carry.
pub const MAX_STANZAS: usize = 64;
/// Most password stanzas (`argon2id` or `pbkdf2`) one header may carry: one, as age allows
/// its scrypt stanza only alone. Several would let a crafted archive test several password
/// guesses per open (each stanza sealing a known file key under one guess), and a password
/// reader would pay for each KDF.
pub const MAX_PASSWORD_STANZAS: usize = 1;
/// Largest header comment, bytes (UTF-8).
pub const MAX_COMMENT_LEN: usize = 4096;
/// Largest raw (decoded) block, bytes. Readers refuse larger declared sizes before
/// allocating, so decode memory per worker is bounded by this.
pub const MAX_BLOCK_SIZE: usize = 256 << 20;
/// Smallest block size a writer uses (`-b`), bytes. Readers accept any block of 1 byte or
/// more: this bounds the writer's frame overhead, not the format.
pub const MIN_BLOCK_SIZE: usize = 64 << 10;
/// Largest frame body, bytes: a block header plus a stored block of the maximum size (a
/// compressed payload is never larger: blocks that do not shrink are stored).
pub const MAX_BODY_LEN: usize = BLOCK_HEADER_LEN + MAX_BLOCK_SIZE;
/// Largest DATA segment, bytes.
pub const MAX_SEGMENT: u32 = 16 << 20;
/// Largest file size (logical, holes included), bytes: 16 TiB, ext4's limit.
pub const MAX_FILE_SIZE: u64 = 1 << 44;
/// Longest entry path, bytes (Linux `PATH_MAX` is 4096; deep trees are stored relative, so
/// the cap is larger, but it still bounds allocation).
pub const MAX_PATH_LEN: usize = 64 * 1024;
/// Longest symlink target or hard-link target, bytes.
pub const MAX_LINK_LEN: usize = 64 * 1024;
/// Largest index (decoded), bytes: 2 GiB, about 20 million entries with short paths.
pub const MAX_INDEX_LEN: u64 = 2 << 30;

/// Most extensions a format-2 header may carry.
pub const MAX_EXTENSIONS: usize = 64;
/// The recovery percentages a format-2 recovery extension (type 0x0001) may state.
pub const RECOVERY_PERCENT: std::ops::RangeInclusive<u8> = 1..=50;
/// Largest reference length of a format-2 block, bytes: the stream bytes before the block
/// that its zstd frame uses as a raw-content prefix (at most one maximal block).
pub const MAX_REFERENCE_LEN: u32 = MAX_BLOCK_SIZE as u32;
/// Largest zstd `Window_Size` (RFC 8878 §3.1.1.1.2; the content size for single-segment
/// frames) a format-2 block may declare, bytes: 512 MiB, a maximal block and a maximal
/// reference before it. A decoder must support it; one that decodes a block in one shot into
/// a buffer of its raw length needs no window memory besides the prefix and the block.
pub const MAX_ZSTD_WINDOW: u64 = 512 << 20;
/// Largest fields area of format-2 entry metadata, bytes (the `u32 F` after the link).
pub const MAX_FIELDS_LEN: usize = 1 << 20;
/// Longest owner user or group name (entry fields 0x0001, 0x0002), bytes. glibc allows 256.
pub const MAX_OWNER_NAME_LEN: usize = 256;
/// Longest extended attribute name, bytes: Linux `XATTR_NAME_MAX`.
pub const MAX_XATTR_NAME_LEN: usize = 255;
/// Largest extended attribute value, bytes: Linux `XATTR_SIZE_MAX`.
pub const MAX_XATTR_VALUE_LEN: usize = 64 * 1024;
/// Hole bytes (read as zeros) a scan may hash without reading any frame, bytes: 1 GiB,
/// about 0.3 s of one core.
pub const HOLE_HASH_BASE: u64 = 1 << 30;
/// Hole bytes a scan may hash per byte of data frames it has read.
pub const HOLE_HASH_PER_FRAME_BYTE: u64 = 1024;

/// How many hole bytes a scan may have hashed in all, once it has read `frame_bytes` bytes
/// of data frames (headers, bodies and tags of the frames loaded so far, in stream order):
/// [`HOLE_HASH_BASE`] + [`HOLE_HASH_PER_FRAME_BYTE`] × `frame_bytes`, saturating.
///
/// Checking a file's BLAKE3 digest means hashing its holes as zeros (the digest equals
/// `b3sum`'s), and a 13-byte record can claim terabytes of hole. Before hashing a hole of
/// `n` bytes, a reader checks `hashed + n <= hole_hash_allowance(frame_bytes)` (cumulative
/// over the whole scan); past it, that file's digest is not checked (its stored bytes still
/// are, by the frame tags) and the file is named in a warning. So a hostile archive costs at
/// most 1 GiB of hashing plus 1 KiB per byte of it (about 0.3 µs, less than decoding a byte
/// of compressed zeros already costs), while real sparse images, whose archives hold their
/// data, still verify: a 20 GiB disk image with 2 GiB of data in a 1 GiB archive allows
/// 1 TiB of holes.
pub fn hole_hash_allowance(frame_bytes: u64) -> u64 {
    HOLE_HASH_BASE.saturating_add(HOLE_HASH_PER_FRAME_BYTE.saturating_mul(frame_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hole_allowance_is_1_gib_plus_1024_per_frame_byte_saturating() {
        assert_eq!(hole_hash_allowance(0), 1 << 30);
        assert_eq!(hole_hash_allowance(455), (1 << 30) + 465_920);
        assert_eq!(hole_hash_allowance(1 << 30), (1 << 30) + (1 << 40));
        assert_eq!(hole_hash_allowance(u64::MAX), u64::MAX);
    }
}
