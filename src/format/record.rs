//! The record stream: the logical byte stream that data frames carry, cut into blocks.
//!
//! It is a sequence of records, tar-like, so it can be read front to back from a pipe:
//! ```text
//! ENTRY  0x01  EntryMeta (see format::entry)
//! DATA   0x02  u64 file_offset, u32 len (1..=MAX_SEGMENT), len content bytes
//! END    0x03  u64 size, digest[32] (BLAKE3 of the whole content, holes read as zeros)
//! ```
//! A file is `ENTRY, DATA*, END`; other entries are a lone `ENTRY`. DATA segments of one
//! file have strictly increasing, non-overlapping offsets; the gaps between them (and up to
//! `size`) are holes that read as zeros. Records may span block boundaries.

use super::entry::{EntryKind, EntryMeta};
pub use super::limits::{MAX_FILE_SIZE, MAX_SEGMENT};
use super::limits::{MAX_LINK_LEN, MAX_PATH_LEN};
use super::{FormatError, Reader};

/// Record tag of an ENTRY record.
pub const TAG_ENTRY: u8 = 1;
/// Record tag of a DATA segment.
pub const TAG_DATA: u8 = 2;
/// Record tag of an END record.
pub const TAG_END: u8 = 3;
/// Length of an END record, bytes.
pub const END_LEN: usize = 1 + 8 + 32;
/// Length of a DATA segment's head (before the content), bytes.
pub const DATA_HEAD_LEN: usize = 1 + 8 + 4;

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
    /// An ENTRY record.
    Entry(EntryMeta),
    /// A DATA segment's head.
    Data {
        /// Offset in the file, bytes.
        offset: u64,
        /// Content length that follows, bytes.
        len: u32,
    },
    /// An END record.
    End {
        /// The file's size, bytes.
        size: u64,
        /// BLAKE3 of the content.
        digest: [u8; 32],
    },
}

/// Appends an ENTRY record.
pub fn write_entry(out: &mut Vec<u8>, meta: &EntryMeta) {
    out.push(TAG_ENTRY);
    meta.write(out);
}

/// Appends a DATA segment head; the caller appends `len` content bytes after it.
pub fn write_data_head(out: &mut Vec<u8>, offset: u64, len: u32) {
    out.push(TAG_DATA);
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

/// Appends an END record.
pub fn write_end(out: &mut Vec<u8>, size: u64, digest: &[u8; 32]) {
    out.push(TAG_END);
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(digest);
}

/// Reads the next record head; `Ok(None)` at a clean end of the stream.
pub fn read_record<S: StreamSource>(src: &mut S) -> Result<Option<RecordHead>, S::Error> {
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
    match tag[0] {
        TAG_ENTRY => {
            let mut buf = vec![0u8; ENTRY_FIXED + 4];
            need(src, &mut buf)?;
            let path_len =
                u32::from_le_bytes(buf[ENTRY_FIXED..].try_into().expect("4 bytes")) as usize;
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
            let link_len =
                u32::from_le_bytes(buf[buf.len() - 4..].try_into().expect("4 bytes")) as usize;
            if link_len > MAX_LINK_LEN {
                return Err(FormatError::invalid(
                    "entry record",
                    format!("link length {link_len}"),
                )
                .into());
            }
            let start = buf.len();
            buf.resize(start + link_len, 0);
            need(src, &mut buf[start..])?;
            let mut r = Reader::new(&buf, "entry record");
            let meta = EntryMeta::parse(&mut r)?;
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
        TAG_END => {
            let mut b = [0u8; END_LEN - 1];
            need(src, &mut b)?;
            let size = u64::from_le_bytes(b[0..8].try_into().expect("8 bytes"));
            let mut digest = [0u8; 32];
            digest.copy_from_slice(&b[8..]);
            Ok(Some(RecordHead::End { size, digest }))
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
        };
        let mut s = Vec::new();
        write_entry(&mut s, &meta);
        write_data_head(&mut s, 4096, 3);
        s.extend_from_slice(b"xyz");
        write_end(&mut s, 8192, &[5; 32]);
        let mut src = Slice(&s);
        assert_eq!(
            read_record(&mut src).unwrap(),
            Some(RecordHead::Entry(meta))
        );
        assert_eq!(
            read_record(&mut src).unwrap(),
            Some(RecordHead::Data {
                offset: 4096,
                len: 3
            })
        );
        let mut c = [0u8; 3];
        assert!(src.fill(&mut c).unwrap());
        assert_eq!(&c, b"xyz");
        assert_eq!(
            read_record(&mut src).unwrap(),
            Some(RecordHead::End {
                size: 8192,
                digest: [5; 32]
            })
        );
        assert_eq!(read_record(&mut src).unwrap(), None);
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
        assert!(read_record(&mut Slice(&[9])).is_err());
        let mut s = Vec::new();
        write_data_head(&mut s, 0, 0);
        assert!(read_record(&mut Slice(&s)).is_err());
    }
}
