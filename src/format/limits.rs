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
