//! The record stream: the logical byte stream that data frames carry, cut into blocks.
//!
//! It is a sequence of records, tar-like, so it can be read front to back from a pipe:
//! ```text
//! PAD         0x00  (format 2) nothing: one byte that aligns what follows
//! ENTRY       0x01  EntryMeta (see format::entry; format 2 adds its fields area)
//! DATA        0x02  u64 file_offset, u32 len (1..=MAX_SEGMENT), len content bytes
//! END         0x03  format 1: u64 size, digest[32]; format 2: u64 size (no digest)
//! END_DIGEST  0x04  (format 2) u64 size, digest[32]
//! BASE_REF    0x05  (format 2, delta archives only) u64 base entry number
//! ```
//! The digest is BLAKE3 of the whole content, holes read as zeros (what `b3sum` prints).
//! A file is `ENTRY, DATA*, END` (or `END_DIGEST`); other entries are a lone `ENTRY`; PAD
//! records may come between any two records. DATA segments of one file have strictly
//! increasing, non-overlapping offsets; the gaps between them (and up to `size`) are holes
//! that read as zeros. Records may span block boundaries.
//!
//! Format 2's END without a digest exists for small files (krypta writes it below 4096
//! bytes): a 32-byte digest does not compress and would double the archive of a tree of
//! small files, while every byte of the file is already covered by the 32-byte tag of the
//! frame that holds it (HMAC-SHA256 or a BLAKE3 checksum). Readers accept END for any size.
//!
//! BASE_REF (docs/FORMAT.md §16.5) stands for a file's whole content in a delta archive: the
//! content of entry number `n` of the base's index; such a file is `ENTRY, BASE_REF,
//! END_DIGEST`. This module parses it for any format-2 stream; that it appears only in a
//! delta archive, right after its file's ENTRY and before its END_DIGEST, is the record
//! parser's rule (`archive::reader::records`), which knows the header.

use super::entry::{EntryKind, EntryMeta};
use super::limits::{MAX_FIELDS_LEN, MAX_LINK_LEN, MAX_PATH_LEN};
pub use super::limits::{MAX_FILE_SIZE, MAX_SEGMENT};
use super::{FormatError, Reader, Version};

/// Record tag of a PAD record (format 2).
pub const TAG_PAD: u8 = 0;
/// Record tag of an ENTRY record.
pub const TAG_ENTRY: u8 = 1;
/// Record tag of a DATA segment.
pub const TAG_DATA: u8 = 2;
/// Record tag of an END record (format 2: without a digest).
pub const TAG_END: u8 = 3;
/// Record tag of an END_DIGEST record (format 2).
pub const TAG_END_DIGEST: u8 = 4;
/// Record tag of a BASE_REF record (format 2, delta archives only: docs/FORMAT.md §16.5).
pub const TAG_BASE_REF: u8 = 5;
/// Length of a BASE_REF record, bytes.
pub const BASE_REF_LEN: usize = 1 + 8;
/// Length of a format-1 END record (and of a format-2 END_DIGEST record), bytes.
pub const END_LEN: usize = 1 + 8 + 32;
/// Length of a format-2 END record (no digest), bytes.
pub const END_LEN_V2: usize = 1 + 8;
/// Length of a DATA segment's head (before the content), bytes.
pub const DATA_HEAD_LEN: usize = 1 + 8 + 4;
/// The smallest file krypta's writer gives an END_DIGEST (format 2), bytes: below it a file
/// gets END and is covered by its frame's tag alone (a writer policy, not a reader rule).
pub const DIGEST_MIN_SIZE: u64 = 4096;

/// Fixed part of an encoded EntryMeta before the path bytes, bytes.
const ENTRY_FIXED: usize = 28;

/// A source of record-stream bytes (the decoded data blocks, in order).
pub trait StreamSource {
    /// The caller's error type.
    type Error: From<FormatError>;
    /// Fills `buf` completely. Returns `Ok(false)` if the stream ended before the first byte;
    /// an end in the middle of `buf` is an error.
    fn fill(&mut self, buf: &mut [u8]) -> Result<bool, Self::Error>;
}

/// The head of one record; a DATA segment's content (`len` bytes) is left in the source for
/// the caller to stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordHead {
    /// A PAD record (format 2).
    Pad,
    /// An ENTRY record.
    Entry(EntryMeta),
    /// A DATA segment's head.
    Data {
        /// Offset in the file, bytes.
        offset: u64,
        /// Content length that follows, bytes.
        len: u32,
    },
    /// An END (or format 2's END_DIGEST) record.
    End {
        /// The file's size, bytes.
        size: u64,
        /// BLAKE3 of the content; `None` for a format-2 END.
        digest: Option<[u8; 32]>,
    },
    /// A BASE_REF record (format 2, delta archives): the file's content is that of entry
    /// number `entry` of the base's index.
    BaseRef {
        /// The base entry's position in the base's index (0-based).
        entry: u64,
    },
}

/// Appends an ENTRY record in `version`'s encoding.
pub fn write_entry(out: &mut Vec<u8>, meta: &EntryMeta, version: Version) {
    out.push(TAG_ENTRY);
    meta.write(out, version);
}

/// Appends a DATA segment head; the caller appends `len` content bytes after it.
pub fn write_data_head(out: &mut Vec<u8>, offset: u64, len: u32) {
    out.push(TAG_DATA);
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

/// Appends the record ending a file: format 1's END (which always has a digest: `None`
/// writes 32 zero bytes, which no reader accepts for real content), or format 2's END
/// (`None`) or END_DIGEST (`Some`).
pub fn write_end(out: &mut Vec<u8>, size: u64, digest: Option<&[u8; 32]>, version: Version) {
    match (version, digest) {
        (Version::V2, None) => {
            out.push(TAG_END);
            out.extend_from_slice(&size.to_le_bytes());
        }
        (Version::V2, Some(d)) => {
            out.push(TAG_END_DIGEST);
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(d);
        }
        (Version::V1, d) => {
            out.push(TAG_END);
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(d.unwrap_or(&[0; 32]));
        }
    }
}

/// Appends a BASE_REF record naming base entry number `entry` (format 2, delta archives).
pub fn write_base_ref(out: &mut Vec<u8>, entry: u64) {
    out.push(TAG_BASE_REF);
    out.extend_from_slice(&entry.to_le_bytes());
}

/// Appends `n` PAD records (format 2).
pub fn write_pad(out: &mut Vec<u8>, n: usize) {
    out.resize(out.len() + n, TAG_PAD);
}

/// Length of the END record ending a file of `version` with or without a digest, bytes.
pub fn end_len(version: Version, digest: bool) -> usize {
    if version == Version::V2 && !digest {
        END_LEN_V2
    } else {
        END_LEN
    }
}

/// Reads the next record head of a `version` stream; `Ok(None)` at a clean end of the stream.
pub fn read_record<S: StreamSource>(
    src: &mut S,
    version: Version,
) -> Result<Option<RecordHead>, S::Error> {
    let mut tag = [0u8; 1];
    if !src.fill(&mut tag)? {
        return Ok(None);
    }
    let need = |src: &mut S, buf: &mut [u8]| -> Result<(), S::Error> {
        if src.fill(buf)? {
            Ok(())
        } else {
            Err(FormatError::Truncated {
                what: "record",
                needed: buf.len() as u64,
                got: 0,
            }
            .into())
        }
    };
    let v2 = version == Version::V2;
    let len_at =
        |buf: &[u8]| u32::from_le_bytes(buf[buf.len() - 4..].try_into().expect("4 bytes")) as usize;
    match tag[0] {
        TAG_PAD if v2 => Ok(Some(RecordHead::Pad)),
        TAG_ENTRY => {
            let mut buf = vec![0u8; ENTRY_FIXED + 4];
            need(src, &mut buf)?;
            let path_len = len_at(&buf);
            if path_len == 0 || path_len > MAX_PATH_LEN {
                return Err(FormatError::invalid(
                    "entry record",
                    format!("path length {path_len}"),
                )
                .into());
            }
            let start = buf.len();
            buf.resize(start + path_len + 4, 0);
            need(src, &mut buf[start..])?;
            let link_len = len_at(&buf);
            if link_len > MAX_LINK_LEN {
                return Err(FormatError::invalid(
                    "entry record",
                    format!("link length {link_len}"),
                )
                .into());
            }
            let start = buf.len();
            buf.resize(start + link_len + if v2 { 4 } else { 0 }, 0);
            need(src, &mut buf[start..])?;
            if v2 {
                let fields_len = len_at(&buf);
                if fields_len > MAX_FIELDS_LEN {
                    return Err(FormatError::invalid(
                        "entry record",
                        format!("fields area of {fields_len} bytes (at most {MAX_FIELDS_LEN})"),
                    )
                    .into());
                }
                let start = buf.len();
                buf.resize(start + fields_len, 0);
                need(src, &mut buf[start..])?;
            }
            let mut r = Reader::new(&buf, "entry record");
            let meta = EntryMeta::parse(&mut r, version)?;
            r.finish()?;
            Ok(Some(RecordHead::Entry(meta)))
        }
        TAG_DATA => {
            let mut b = [0u8; DATA_HEAD_LEN - 1];
            need(src, &mut b)?;
            let offset = u64::from_le_bytes(b[0..8].try_into().expect("8 bytes"));
            let len = u32::from_le_bytes(b[8..12].try_into().expect("4 bytes"));
            if len == 0 || len > MAX_SEGMENT {
                return Err(FormatError::invalid(
                    "data record",
                    format!("segment length {len} outside 1..={MAX_SEGMENT}"),
                )
                .into());
            }
            Ok(Some(RecordHead::Data { offset, len }))
        }
        TAG_END if v2 => {
            let mut b = [0u8; 8];
            need(src, &mut b)?;
            Ok(Some(RecordHead::End {
                size: u64::from_le_bytes(b),
                digest: None,
            }))
        }
        TAG_BASE_REF if v2 => {
            let mut b = [0u8; 8];
            need(src, &mut b)?;
            Ok(Some(RecordHead::BaseRef {
                entry: u64::from_le_bytes(b),
            }))
        }
        TAG_END | TAG_END_DIGEST if tag[0] == TAG_END || v2 => {
            let mut b = [0u8; END_LEN - 1];
            need(src, &mut b)?;
            let size = u64::from_le_bytes(b[0..8].try_into().expect("8 bytes"));
            let mut digest = [0u8; 32];
            digest.copy_from_slice(&b[8..]);
            Ok(Some(RecordHead::End {
                size,
                digest: Some(digest),
            }))
        }
        other => Err(FormatError::invalid(
            "record stream",
            format!("unknown record tag {other:#04x}"),
        )
        .into()),
    }
}

/// Checks the order rules of one file's segments: offsets strictly increasing and
/// non-overlapping, and the final size not below the end of the last segment.
#[derive(Debug, Default, Clone)]
pub struct ExtentCheck {
    end: u64,
}

impl ExtentCheck {
    /// Accepts the next DATA segment or returns why it is invalid.
    pub fn segment(&mut self, offset: u64, len: u32) -> Result<(), FormatError> {
        if offset < self.end {
            return Err(FormatError::invalid(
                "data record",
                format!(
                    "segment at {offset} overlaps or precedes the previous one ending at {}",
                    self.end
                ),
            ));
        }
        self.end = offset
            .checked_add(len as u64)
            .ok_or_else(|| FormatError::invalid("data record", "segment end overflows"))?;
        if self.end > MAX_FILE_SIZE {
            return Err(FormatError::invalid(
                "data record",
                format!("segment ends beyond the {MAX_FILE_SIZE}-byte file size limit"),
            ));
        }
        Ok(())
    }
    /// Checks the END record's size.
    pub fn end(&self, size: u64) -> Result<(), FormatError> {
        if size > MAX_FILE_SIZE {
            return Err(FormatError::invalid(
                "end record",
                format!("size {size} exceeds the {MAX_FILE_SIZE}-byte limit"),
            ));
        }
        if size < self.end {
            return Err(FormatError::invalid(
                "end record",
                format!("size {size} is below the data end {}", self.end),
            ));
        }
        Ok(())
    }
}

/// True for the entry kinds that carry content (and so DATA/END records).
pub fn has_content(kind: EntryKind) -> bool {
    kind == EntryKind::File
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Timestamp;

    struct Slice<'a>(&'a [u8]);
    impl StreamSource for Slice<'_> {
        type Error = FormatError;
        fn fill(&mut self, buf: &mut [u8]) -> Result<bool, FormatError> {
            if self.0.is_empty() {
                return Ok(false);
            }
            if self.0.len() < buf.len() {
                return Err(FormatError::Truncated {
                    what: "test",
                    needed: buf.len() as u64,
                    got: self.0.len() as u64,
                });
            }
            buf.copy_from_slice(&self.0[..buf.len()]);
            self.0 = &self.0[buf.len()..];
            Ok(true)
        }
    }

    #[test]
    fn records_round_trip() {
        let meta = EntryMeta {
            path: b"a/b".to_vec(),
            kind: EntryKind::File,
            mode: 0o644,
            mtime: Timestamp { secs: 5, nanos: 6 },
            uid: 1,
            gid: 2,
            link: vec![],
            ..Default::default()
        };
        for version in [Version::V1, Version::V2] {
            let mut s = Vec::new();
            write_entry(&mut s, &meta, version);
            write_data_head(&mut s, 4096, 3);
            s.extend_from_slice(b"xyz");
            write_end(&mut s, 8192, Some(&[5; 32]), version);
            let mut src = Slice(&s);
            assert_eq!(
                read_record(&mut src, version).unwrap(),
                Some(RecordHead::Entry(meta.clone()))
            );
            assert_eq!(
                read_record(&mut src, version).unwrap(),
                Some(RecordHead::Data {
                    offset: 4096,
                    len: 3
                })
            );
            let mut c = [0u8; 3];
            assert!(src.fill(&mut c).unwrap());
            assert_eq!(&c, b"xyz");
            assert_eq!(
                read_record(&mut src, version).unwrap(),
                Some(RecordHead::End {
                    size: 8192,
                    digest: Some([5; 32])
                })
            );
            assert_eq!(read_record(&mut src, version).unwrap(), None);
        }
    }

    #[test]
    fn v2_pad_end_and_end_digest_records() {
        let mut s = Vec::new();
        write_pad(&mut s, 3);
        write_end(&mut s, 7, None, Version::V2);
        write_end(&mut s, 4096, Some(&[9; 32]), Version::V2);
        assert_eq!(s.len(), 3 + END_LEN_V2 + END_LEN);
        assert_eq!(&s[..5], &[0, 0, 0, TAG_END, 7]);
        assert_eq!(s[3 + END_LEN_V2], TAG_END_DIGEST);
        let mut src = Slice(&s);
        for _ in 0..3 {
            assert_eq!(
                read_record(&mut src, Version::V2).unwrap(),
                Some(RecordHead::Pad)
            );
        }
        assert_eq!(
            read_record(&mut src, Version::V2).unwrap(),
            Some(RecordHead::End {
                size: 7,
                digest: None
            })
        );
        assert_eq!(
            read_record(&mut src, Version::V2).unwrap(),
            Some(RecordHead::End {
                size: 4096,
                digest: Some([9; 32])
            })
        );
        // Format 1 has neither PAD nor END_DIGEST (nor BASE_REF).
        assert!(read_record(&mut Slice(&[TAG_PAD]), Version::V1).is_err());
        assert!(read_record(&mut Slice(&s[3 + END_LEN_V2..]), Version::V1).is_err());
        assert_eq!(end_len(Version::V1, false), 41);
        assert_eq!(end_len(Version::V2, false), 9);
        assert_eq!(end_len(Version::V2, true), 41);
    }

    #[test]
    fn base_ref_records_are_nine_bytes_in_format_2_only() {
        let mut s = Vec::new();
        write_base_ref(&mut s, 0x0102_0304_0506_0708);
        assert_eq!(s, [5, 8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(s.len(), BASE_REF_LEN);
        assert_eq!(
            read_record(&mut Slice(&s), Version::V2).unwrap(),
            Some(RecordHead::BaseRef {
                entry: 0x0102_0304_0506_0708
            })
        );
        assert!(read_record(&mut Slice(&s), Version::V1).is_err());
        // Cut short: an error, not a record.
        assert!(read_record(&mut Slice(&s[..5]), Version::V2).is_err());
    }

    #[test]
    fn v2_entry_records_carry_their_fields() {
        let meta = EntryMeta {
            path: b"f".to_vec(),
            mode: 0o600,
            user: Some(b"alice".to_vec()),
            xattrs: vec![crate::format::Xattr {
                name: b"user.k".to_vec(),
                value: b"v".to_vec(),
            }],
            ..Default::default()
        };
        let mut s = Vec::new();
        write_entry(&mut s, &meta, Version::V2);
        let mut src = Slice(&s);
        assert_eq!(
            read_record(&mut src, Version::V2).unwrap(),
            Some(RecordHead::Entry(meta))
        );
        assert!(src.0.is_empty());
        // A huge fields length is refused before anything is allocated.
        let mut bad = s.clone();
        let at = 1 + 28 + 4 + 1 + 4;
        bad[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = read_record(&mut Slice(&bad), Version::V2).unwrap_err();
        assert!(e.to_string().contains("fields area"), "{e}");
    }

    #[test]
    fn extent_rules() {
        let mut c = ExtentCheck::default();
        c.segment(0, 10).unwrap();
        assert!(c.segment(5, 1).is_err());
        c.segment(10, 1).unwrap();
        assert!(c.end(10).is_err());
        c.end(11).unwrap();
        assert!(ExtentCheck::default().segment(u64::MAX, 2).is_err());
        assert!(ExtentCheck::default().end(MAX_FILE_SIZE + 1).is_err());
        assert!(ExtentCheck::default().segment(MAX_FILE_SIZE, 1).is_err());
    }

    #[test]
    fn unknown_tag_and_zero_segment_are_errors() {
        for v in [Version::V1, Version::V2] {
            assert!(read_record(&mut Slice(&[9]), v).is_err());
            let mut s = Vec::new();
            write_data_head(&mut s, 0, 0);
            assert!(read_record(&mut Slice(&s), v).is_err());
        }
    }
}
