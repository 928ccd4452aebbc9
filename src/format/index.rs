//! The index: every entry's metadata, size, digest and location in the record stream, and
//! the length of every data frame (so a reader can seek to any block). It is serialised,
//! compressed and sealed as frames of kind Index after the last data frame.
//!
//! Format 1 (this module; format 2 is [`super::index_v2`]):
//! ```text
//! u64 entry_count
//! entry_count × { EntryMeta, u64 size, digest[32], u64 first_seq, u32 first_offset, u64 last_seq }
//! u64 frame_count
//! frame_count × u32 body_len        (of data frames seq 0..frame_count)
//! ```
//! `first_seq`/`first_offset` locate the entry's ENTRY record (data frame seq and byte offset
//! in that block's decoded bytes); `last_seq` is the frame holding the entry's last byte.
//! Non-file entries have size 0 and an all-zero digest.
//!
//! The in-memory [`Index`] is the same for both versions: a file's digest is optional
//! (format 2 stores none for small files; format 1 always stores one), and each data frame
//! has a reference length (always 0 in format 1).

use super::entry::{EntryKind, EntryMeta};
use super::record::MAX_FILE_SIZE;
use super::{FormatError, Reader, Version};

pub use super::limits::MAX_INDEX_LEN;

/// Encoded length of one format-1 index entry for `meta`, bytes: its metadata (36 bytes,
/// the path and the link), then size, digest, first_seq, first_offset and last_seq (60
/// bytes).
pub fn entry_len(meta: &EntryMeta) -> u64 {
    96 + meta.path.len() as u64 + meta.link.len() as u64
}

/// Encoded length of a format-1 index whose entries take `entries_len` bytes, with `frames`
/// data frames: the two counts (16 bytes) and 4 bytes per frame.
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
    /// BLAKE3 of the content: `Some` for files with a stored digest (every file in format 1;
    /// in format 2 the files that end with END_DIGEST), `None` otherwise.
    pub digest: Option<[u8; 32]>,
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
    /// Reference length of each data frame, bytes, in seq order (format 2's frame table;
    /// all 0 in format 1). A frame with reference length 0 starts a group.
    pub frame_ref_lens: Vec<u32>,
}

impl Index {
    /// Serialises the index in `version`'s layout.
    pub fn write(&self, version: Version) -> Vec<u8> {
        match version {
            Version::V1 => self.write_v1(),
            Version::V2 => super::index_v2::write(self),
        }
    }

    /// Parses an index of `version`, checking every rule that needs no other structure.
    pub fn parse(bytes: &[u8], version: Version) -> Result<Index, FormatError> {
        match version {
            Version::V1 => Self::parse_v1(bytes),
            Version::V2 => super::index_v2::parse(bytes),
        }
    }

    fn write_v1(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        for e in &self.entries {
            e.meta.write(&mut out, Version::V1);
            out.extend_from_slice(&e.size.to_le_bytes());
            out.extend_from_slice(&e.digest.unwrap_or([0; 32]));
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

    /// Parses a format-1 index, checking every rule that needs no other structure: canonical
    /// entries, non-file entries with zero size and digest, locations in order and within the
    /// frame table, no trailing bytes. Counts are never trusted for allocation.
    fn parse_v1(bytes: &[u8]) -> Result<Index, FormatError> {
        let mut r = Reader::new(bytes, "index");
        let n = r.u64()?;
        // Each entry takes at least 88 bytes, so n is bounded by the bytes present.
        let min_entry = 28 + 4 + 1 + 4 + 8 + 32 + 8 + 4 + 8;
        check_count(n, r.remaining(), min_entry, bytes.len())?;
        let mut entries = Vec::with_capacity(n as usize);
        let mut order = LocationOrder::default();
        for i in 0..n {
            let meta = EntryMeta::parse(&mut r, Version::V1)?;
            let size = r.u64()?;
            let digest: [u8; 32] = r.array()?;
            let first_seq = r.u64()?;
            let first_offset = r.u32()?;
            let last_seq = r.u64()?;
            let digest = if meta.kind == EntryKind::File {
                Some(digest)
            } else if digest != [0; 32] {
                return Err(FormatError::invalid(
                    "index",
                    format!("entry {i} is not a file but has a digest"),
                ));
            } else {
                None
            };
            let e = IndexEntry {
                meta,
                size,
                digest,
                first_seq,
                first_offset,
                last_seq,
            };
            check_entry(i, &e, &mut order)?;
            entries.push(e);
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
        check_last(&entries, frames)?;
        Ok(Index {
            entries,
            frame_ref_lens: vec![0; frame_body_lens.len()],
            frame_body_lens,
        })
    }
}

/// Refuses an entry count that the bytes left cannot hold (`min_entry` bytes each), before
/// anything is allocated for it.
pub(crate) fn check_count(
    n: u64,
    remaining: usize,
    min_entry: usize,
    total: usize,
) -> Result<(), FormatError> {
    if n > (remaining / min_entry) as u64 {
        return Err(FormatError::invalid(
            "index",
            format!("entry count {n} exceeds what {total} bytes can hold"),
        ));
    }
    Ok(())
}

/// The previous entry's location, for the rule that locations strictly increase.
#[derive(Default)]
pub(crate) struct LocationOrder {
    prev: Option<(u64, u32)>,
}

/// The rules on one index entry shared by both versions: size within the limit, non-file
/// entries with size 0 and no digest, locations strictly increasing, `last_seq >=
/// first_seq`.
pub(crate) fn check_entry(
    i: u64,
    e: &IndexEntry,
    order: &mut LocationOrder,
) -> Result<(), FormatError> {
    if e.size > MAX_FILE_SIZE {
        return Err(FormatError::invalid(
            "index",
            format!(
                "entry {i} size {} exceeds the {MAX_FILE_SIZE}-byte limit",
                e.size
            ),
        ));
    }
    if e.meta.kind != EntryKind::File && (e.size != 0 || e.digest.is_some()) {
        return Err(FormatError::invalid(
            "index",
            format!("entry {i} is not a file but has a size or digest"),
        ));
    }
    let loc = (e.first_seq, e.first_offset);
    if order.prev.is_some_and(|p| loc <= p) || e.last_seq < e.first_seq {
        return Err(FormatError::invalid(
            "index",
            format!("entry {i} location is out of order"),
        ));
    }
    order.prev = Some(loc);
    Ok(())
}

/// The last entry lies within the data frames.
pub(crate) fn check_last(entries: &[IndexEntry], frames: u64) -> Result<(), FormatError> {
    if let Some(last) = entries.last()
        && last.last_seq >= frames
    {
        return Err(FormatError::invalid(
            "index",
            "an entry lies beyond the last data frame",
        ));
    }
    Ok(())
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
                ..Default::default()
            },
            size: if kind == EntryKind::File { 10 } else { 0 },
            digest: if kind == EntryKind::File {
                Some([3; 32])
            } else {
                None
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
            frame_ref_lens: vec![0],
        };
        assert_eq!(
            Index::parse(&idx.write(Version::V1), Version::V1).unwrap(),
            idx
        );
        assert_eq!(
            Index::parse(&Index::default().write(Version::V1), Version::V1).unwrap(),
            Index::default()
        );
    }

    #[test]
    fn hostile_counts_fail_without_allocating() {
        let mut b = (1u64 << 63).to_le_bytes().to_vec();
        b.extend_from_slice(&[0u8; 64]);
        let err = Index::parse(&b, Version::V1).unwrap_err();
        assert!(
            err.to_string().contains("entry count 9223372036854775808"),
            "{err}"
        );
        let mut b = 0u64.to_le_bytes().to_vec();
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(Index::parse(&b, Version::V1).is_err());
    }

    #[test]
    fn out_of_order_and_dangling_locations_are_rejected() {
        let idx = Index {
            entries: vec![
                entry(b"b", EntryKind::File, 0, 40),
                entry(b"a", EntryKind::File, 0, 0),
            ],
            frame_body_lens: vec![100],
            frame_ref_lens: vec![0],
        };
        for v in [Version::V1, Version::V2] {
            assert!(Index::parse(&idx.write(v), v).is_err());
        }
        let idx = Index {
            entries: vec![entry(b"a", EntryKind::File, 1, 0)],
            frame_body_lens: vec![100],
            frame_ref_lens: vec![0],
        };
        for v in [Version::V1, Version::V2] {
            assert!(Index::parse(&idx.write(v), v).is_err());
        }
    }
}
