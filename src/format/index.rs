//! The index: every entry's metadata, size, digest and location in the record stream, and
//! the length of every data frame (so a reader can seek to any block). It is serialised,
//! compressed and sealed as frames of kind Index after the last data frame.
//!
//! ```text
//! u64 entry_count
//! entry_count × { EntryMeta, u64 size, digest[32], u64 first_seq, u32 first_offset, u64 last_seq }
//! u64 frame_count
//! frame_count × u32 body_len        (of data frames seq 0..frame_count)
//! ```
//! `first_seq`/`first_offset` locate the entry's ENTRY record (data frame seq and byte offset
//! in that block's decoded bytes); `last_seq` is the frame holding the entry's last byte.
//! Non-file entries have size 0 and an all-zero digest.

use super::entry::{EntryKind, EntryMeta};
use super::record::MAX_FILE_SIZE;
use super::{FormatError, Reader};

pub use super::limits::MAX_INDEX_LEN;

/// Encoded length of one index entry for `meta`, bytes: its metadata (36 bytes, the path and
/// the link), then size, digest, first_seq, first_offset and last_seq (60 bytes). The writer
/// sums these to refuse an entry that would take the index past [`MAX_INDEX_LEN`].
pub fn entry_len(meta: &EntryMeta) -> u64 {
    96 + meta.path.len() as u64 + meta.link.len() as u64
}

/// Encoded length of an index whose entries take `entries_len` bytes, with `frames` data
/// frames: the two counts (16 bytes) and 4 bytes per frame.
pub fn index_len(entries_len: u64, frames: u64) -> u64 {
    16 + entries_len + 4 * frames
}

/// One entry of the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The entry's metadata (as in its ENTRY record).
    pub meta: EntryMeta,
    /// Content size, bytes (0 for non-files).
    pub size: u64,
    /// BLAKE3 of the content (zeros for non-files).
    pub digest: [u8; 32],
    /// Data frame holding the first byte of the ENTRY record.
    pub first_seq: u64,
    /// Offset of the ENTRY record in that frame's decoded block, bytes.
    pub first_offset: u32,
    /// Data frame holding the entry's last record byte.
    pub last_seq: u64,
}

/// The whole index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Index {
    /// Entries in stream order.
    pub entries: Vec<IndexEntry>,
    /// Body length of each data frame, bytes, in seq order.
    pub frame_body_lens: Vec<u32>,
}

impl Index {
    /// Serialises the index.
    pub fn write(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        for e in &self.entries {
            e.meta.write(&mut out);
            out.extend_from_slice(&e.size.to_le_bytes());
            out.extend_from_slice(&e.digest);
            out.extend_from_slice(&e.first_seq.to_le_bytes());
            out.extend_from_slice(&e.first_offset.to_le_bytes());
            out.extend_from_slice(&e.last_seq.to_le_bytes());
        }
        out.extend_from_slice(&(self.frame_body_lens.len() as u64).to_le_bytes());
        for l in &self.frame_body_lens {
            out.extend_from_slice(&l.to_le_bytes());
        }
        out
    }

    /// Parses an index, checking every rule that needs no other structure: canonical entries,
    /// non-file entries with zero size and digest, locations in order and within the frame
    /// table, no trailing bytes. Counts are never trusted for allocation.
    pub fn parse(bytes: &[u8]) -> Result<Index, FormatError> {
        let mut r = Reader::new(bytes, "index");
        let n = r.u64()?;
        // Each entry takes at least 88 bytes, so n is bounded by the bytes present.
        let min_entry = 28 + 4 + 1 + 4 + 8 + 32 + 8 + 4 + 8;
        if n > (r.remaining() / min_entry) as u64 {
            return Err(FormatError::invalid(
                "index",
                format!(
                    "entry count {n} exceeds what {} bytes can hold",
                    bytes.len()
                ),
            ));
        }
        let mut entries = Vec::with_capacity(n as usize);
        let mut prev = (0u64, 0u32);
        for i in 0..n {
            let meta = EntryMeta::parse(&mut r)?;
            let size = r.u64()?;
            let digest: [u8; 32] = r.array()?;
            let first_seq = r.u64()?;
            let first_offset = r.u32()?;
            let last_seq = r.u64()?;
            if size > MAX_FILE_SIZE {
                return Err(FormatError::invalid(
                    "index",
                    format!("entry {i} size {size} exceeds the {MAX_FILE_SIZE}-byte limit"),
                ));
            }
            if meta.kind != EntryKind::File && (size != 0 || digest != [0; 32]) {
                return Err(FormatError::invalid(
                    "index",
                    format!("entry {i} is not a file but has a size or digest"),
                ));
            }
            if (first_seq, first_offset) < prev
                || (i > 0 && (first_seq, first_offset) == prev)
                || last_seq < first_seq
            {
                return Err(FormatError::invalid(
                    "index",
                    format!("entry {i} location is out of order"),
                ));
            }
            prev = (first_seq, first_offset);
            entries.push(IndexEntry {
                meta,
                size,
                digest,
                first_seq,
                first_offset,
                last_seq,
            });
        }
        let frames = r.u64()?;
        if frames > (r.remaining() / 4) as u64 {
            return Err(FormatError::invalid(
                "index",
                format!("frame count {frames} exceeds the bytes present"),
            ));
        }
        let mut frame_body_lens = Vec::with_capacity(frames as usize);
        for _ in 0..frames {
            frame_body_lens.push(r.u32()?);
        }
        r.finish()?;
        if let Some(last) = entries.last()
            && last.last_seq >= frames
        {
            return Err(FormatError::invalid(
                "index",
                "an entry lies beyond the last data frame",
            ));
        }
        Ok(Index {
            entries,
            frame_body_lens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Timestamp;

    fn entry(path: &[u8], kind: EntryKind, seq: u64, off: u32) -> IndexEntry {
        IndexEntry {
            meta: EntryMeta {
                path: path.to_vec(),
                kind,
                mode: 0o755,
                mtime: Timestamp {
                    secs: -1,
                    nanos: 999_999_999,
                },
                uid: 0,
                gid: 0,
                link: vec![],
            },
            size: if kind == EntryKind::File { 10 } else { 0 },
            digest: if kind == EntryKind::File {
                [3; 32]
            } else {
                [0; 32]
            },
            first_seq: seq,
            first_offset: off,
            last_seq: seq,
        }
    }

    #[test]
    fn index_parse_of_write_is_identity() {
        let idx = Index {
            entries: vec![
                entry(b"d", EntryKind::Dir, 0, 0),
                entry(b"d/f", EntryKind::File, 0, 40),
            ],
            frame_body_lens: vec![100],
        };
        assert_eq!(Index::parse(&idx.write()).unwrap(), idx);
        assert_eq!(
            Index::parse(&Index::default().write()).unwrap(),
            Index::default()
        );
    }

    #[test]
    fn hostile_counts_fail_without_allocating() {
        let mut b = (1u64 << 63).to_le_bytes().to_vec();
        b.extend_from_slice(&[0u8; 64]);
        let err = Index::parse(&b).unwrap_err();
        assert!(
            err.to_string().contains("entry count 9223372036854775808"),
            "{err}"
        );
        let mut b = 0u64.to_le_bytes().to_vec();
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(Index::parse(&b).is_err());
    }

    #[test]
    fn out_of_order_and_dangling_locations_are_rejected() {
        let idx = Index {
            entries: vec![
                entry(b"b", EntryKind::File, 0, 40),
                entry(b"a", EntryKind::File, 0, 0),
            ],
            frame_body_lens: vec![100],
        };
        assert!(Index::parse(&idx.write()).is_err());
        let idx = Index {
            entries: vec![entry(b"a", EntryKind::File, 1, 0)],
            frame_body_lens: vec![100],
        };
        assert!(Index::parse(&idx.write()).is_err());
    }
}
