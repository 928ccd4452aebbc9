//! Format 2's index: the entries with front-coded paths and optional digests, then the frame
//! table with each data frame's body length and reference length (docs/FORMAT.md §7).
//!
//! ```text
//! u64 entry_count N
//! N × { u8 flags (bit 0: a digest follows; files only) ‖ u32 shared ‖ entry metadata (format 2)
//!       whose path field holds only the path's bytes after the first `shared` ‖ u64 size ‖
//!       [digest[32] if flags bit 0] ‖ u64 first_seq ‖ u32 first_offset ‖ u64 last_seq }
//! u64 data_frame_count D
//! D × { u32 body_len ‖ u32 reference_len }      (data frames seq 0..D)
//! ```
//! `shared` is the length of the longest common prefix of the entry's path and the previous
//! entry's (0 for the first entry), exactly: the encoding is canonical. Front coding is what
//! keeps the index of a tree of small files small: on 100,000 files of 2–30 words most of a
//! path repeats the previous one. The index repeats what the stream says on purpose (like
//! ZIP's central directory): the stream serves pipes and salvage, the index serves `list`,
//! selective extraction and ranged reads; a reader that scans the stream checks that they
//! are equal. The frame table's reference lengths let a reader find the start of a block's
//! group (the last frame at or before it with reference length 0) without decrypting.

use super::entry::EntryMeta;
use super::entry_v2::parse_fields;
use super::index::{Index, IndexEntry, LocationOrder, check_count, check_entry, check_last};
use super::limits::{MAX_PATH_LEN, MAX_REFERENCE_LEN};
use super::{EntryKind, FormatError, Reader, Version, put_u32, put_u64};

/// Index entry flags bit 0: a 32-byte digest follows the size (files only).
pub const FLAG_DIGEST: u8 = 1;

/// Smallest encoded entry, bytes: flags, shared, the fixed metadata with empty suffix and
/// link and an empty fields area (40), size and the location (20).
const MIN_ENTRY: usize = 1 + 4 + 40 + 8 + 20;

/// Length of the longest common prefix of `a` and `b`, bytes.
pub fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Encoded length of the index entry for `meta` after an entry whose path is `prev`, with
/// or without a digest, bytes. The writer sums these to refuse an entry that would take the
/// index past [`super::index::MAX_INDEX_LEN`].
pub fn entry_len(prev: &[u8], meta: &EntryMeta, digest: bool) -> u64 {
    let suffix = meta.path.len() - shared_prefix(prev, &meta.path);
    (MIN_ENTRY
        + suffix
        + meta.link.len()
        + super::entry_v2::fields_len(meta)
        + if digest { 32 } else { 0 }) as u64
}

/// Encoded length of a format-2 index whose entries take `entries_len` bytes, with `frames`
/// data frames: the two counts (16 bytes) and 8 bytes per frame.
pub fn index_len(entries_len: u64, frames: u64) -> u64 {
    16 + entries_len + 8 * frames
}

/// Serialises `index` (entries checked by the writer; `frame_ref_lens` as long as
/// `frame_body_lens`).
pub fn write(index: &Index) -> Vec<u8> {
    let mut out = Vec::new();
    put_u64(&mut out, index.entries.len() as u64);
    let mut prev: &[u8] = &[];
    for e in &index.entries {
        let shared = shared_prefix(prev, &e.meta.path);
        out.push(if e.digest.is_some() { FLAG_DIGEST } else { 0 });
        put_u32(&mut out, shared as u32);
        e.meta.write_fixed(&mut out, &e.meta.path[shared..]);
        super::entry_v2::write_fields(&e.meta, &mut out);
        put_u64(&mut out, e.size);
        if let Some(d) = &e.digest {
            out.extend_from_slice(d);
        }
        put_u64(&mut out, e.first_seq);
        put_u32(&mut out, e.first_offset);
        put_u64(&mut out, e.last_seq);
        prev = &e.meta.path;
    }
    put_u64(&mut out, index.frame_body_lens.len() as u64);
    for (i, l) in index.frame_body_lens.iter().enumerate() {
        put_u32(&mut out, *l);
        put_u32(&mut out, index.frame_ref_lens.get(i).copied().unwrap_or(0));
    }
    out
}

/// Parses a format-2 index, checking every rule that needs no other structure: canonical
/// entries and front coding, digests only on files, the rules both versions share
/// ([`check_entry`]), reference lengths of at most 256 MiB and 0 for frame 0, no trailing
/// bytes. Counts are never trusted for allocation.
pub fn parse(bytes: &[u8]) -> Result<Index, FormatError> {
    let mut r = Reader::new(bytes, "index");
    let n = r.u64()?;
    check_count(n, r.remaining(), MIN_ENTRY, bytes.len())?;
    let mut entries: Vec<IndexEntry> = Vec::with_capacity(n as usize);
    let mut order = LocationOrder::default();
    for i in 0..n {
        let flags = r.u8()?;
        if flags & !FLAG_DIGEST != 0 {
            return Err(FormatError::invalid(
                "index",
                format!("entry {i} has unknown flags {flags:#04x}"),
            ));
        }
        let shared = r.u32()? as usize;
        let prev: &[u8] = entries.last().map_or(&[], |e| &e.meta.path);
        if shared > prev.len() {
            return Err(FormatError::invalid(
                "index",
                format!(
                    "entry {i} shares {shared} bytes with a {}-byte previous path",
                    prev.len()
                ),
            ));
        }
        let mut meta = EntryMeta::parse_fixed(&mut r)?;
        let suffix = std::mem::take(&mut meta.path);
        if shared < prev.len() && suffix.first() == prev.get(shared) {
            return Err(FormatError::invalid(
                "index",
                format!("entry {i}'s shared prefix length {shared} is not the longest"),
            ));
        }
        if shared + suffix.len() > MAX_PATH_LEN {
            return Err(FormatError::invalid(
                "entry path",
                format!(
                    "length {} is outside 1..={MAX_PATH_LEN}",
                    shared + suffix.len()
                ),
            ));
        }
        let mut path = Vec::with_capacity(shared + suffix.len());
        path.extend_from_slice(&prev[..shared]);
        path.extend_from_slice(&suffix);
        meta.path = path;
        parse_fields(&mut r, &mut meta)?;
        meta.check(Version::V2)?;
        let size = r.u64()?;
        let digest = if flags & FLAG_DIGEST != 0 {
            if meta.kind != EntryKind::File {
                return Err(FormatError::invalid(
                    "index",
                    format!("entry {i} is not a file but has a digest"),
                ));
            }
            Some(r.array()?)
        } else {
            None
        };
        let e = IndexEntry {
            meta,
            size,
            digest,
            first_seq: r.u64()?,
            first_offset: r.u32()?,
            last_seq: r.u64()?,
        };
        check_entry(i, &e, &mut order)?;
        entries.push(e);
    }
    let frames = r.u64()?;
    if frames > (r.remaining() / 8) as u64 {
        return Err(FormatError::invalid(
            "index",
            format!("frame count {frames} exceeds the bytes present"),
        ));
    }
    let mut frame_body_lens = Vec::with_capacity(frames as usize);
    let mut frame_ref_lens = Vec::with_capacity(frames as usize);
    for k in 0..frames {
        frame_body_lens.push(r.u32()?);
        let reference = r.u32()?;
        if reference > MAX_REFERENCE_LEN || (k == 0 && reference != 0) {
            return Err(FormatError::invalid(
                "index frame table",
                format!("frame {k} has reference length {reference}"),
            ));
        }
        frame_ref_lens.push(reference);
    }
    r.finish()?;
    check_last(&entries, frames)?;
    Ok(Index {
        entries,
        frame_body_lens,
        frame_ref_lens,
    })
}

/// The first frame of the group that frame `seq` belongs to: the last frame at or before it
/// whose reference length is 0 (decoding frame `seq` needs the frames from there on).
pub fn group_start(index: &Index, seq: u64) -> u64 {
    let mut s = seq;
    while s > 0 && index.frame_ref_lens.get(s as usize).is_some_and(|&r| r > 0) {
        s -= 1;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Timestamp, Xattr};

    fn file(path: &str, seq: u64, off: u32, digest: Option<[u8; 32]>) -> IndexEntry {
        IndexEntry {
            meta: EntryMeta {
                path: path.as_bytes().to_vec(),
                kind: EntryKind::File,
                mode: 0o644,
                mtime: Timestamp { secs: -3, nanos: 7 },
                uid: 1000,
                gid: 1000,
                user: Some(b"alice".to_vec()),
                ..EntryMeta::default()
            },
            size: 5000,
            digest,
            first_seq: seq,
            first_offset: off,
            last_seq: seq,
        }
    }

    fn sample() -> Index {
        let mut root = file(".", 0, 0, None);
        root.meta.kind = EntryKind::Dir;
        root.meta.user = None;
        root.size = 0;
        let mut dir = file("src", 0, 50, None);
        dir.meta.kind = EntryKind::Dir;
        dir.meta.xattrs = vec![Xattr {
            name: b"system.posix_acl_default".to_vec(),
            value: vec![2, 0, 0, 0, 1, 0, 6, 0],
        }];
        dir.size = 0;
        let mut small = file("src/b.rs", 1, 9, None);
        small.size = 12;
        Index {
            entries: vec![
                root,
                dir,
                file("src/a.rs", 0, 200, Some([7; 32])),
                small,
                file("src/a.rs.orig", 2, 0, Some([8; 32])),
                file("t", 2, 300, Some([9; 32])),
            ],
            frame_body_lens: vec![100, 200, 300],
            frame_ref_lens: vec![0, 4096, 0],
        }
    }

    #[test]
    fn v2_index_parse_of_write_is_identity() {
        let ix = sample();
        let b = write(&ix);
        assert_eq!(parse(&b).unwrap(), ix);
        assert_eq!(parse(&write(&Index::default())).unwrap(), Index::default());
        // The encoded entries add up to what entry_len predicts.
        let mut prev: &[u8] = &[];
        let mut sum = 0;
        for e in &ix.entries {
            sum += entry_len(prev, &e.meta, e.digest.is_some());
            prev = &e.meta.path;
        }
        assert_eq!(b.len() as u64, index_len(sum, 3));
    }

    #[test]
    fn paths_are_front_coded() {
        let b = write(&sample());
        // Entry 3 ("src/b.rs" after "src/a.rs") shares 4 bytes and stores the suffix "b.rs".
        let needle = [&[0u8][..], &4u32.to_le_bytes()].concat();
        let at = b
            .windows(41)
            .position(|w| w.starts_with(&needle) && &w[37..41] == b"b.rs")
            .expect("front-coded entry");
        assert_eq!(&b[at + 33..at + 37], &4u32.to_le_bytes(), "suffix length");
    }

    #[test]
    fn non_canonical_front_coding_is_refused() {
        let ix = Index {
            entries: vec![file("ab", 0, 0, None), file("ac", 0, 10, None)],
            frame_body_lens: vec![50],
            frame_ref_lens: vec![0],
        };
        let mut b = write(&ix);
        let second = b.len() - 8 - 8 - (1 + 4 + 36 + 1 + 4 + 11 + 8 + 20);
        assert_eq!(&b[second + 1..second + 5], &1u32.to_le_bytes());
        // Shared 0 and suffix "ac" would decode to the same path, but is not canonical.
        let mut x = Vec::new();
        x.extend_from_slice(&b[..second + 1]);
        x.extend_from_slice(&0u32.to_le_bytes());
        let mut e = Vec::new();
        ix.entries[1].meta.write_fixed(&mut e, b"ac");
        x.extend_from_slice(&e);
        x.extend_from_slice(&b[second + 5 + 37..]);
        let err = parse(&x).unwrap_err().to_string();
        assert!(err.contains("not the longest"), "{err}");
        // Sharing more than the previous path has.
        b[second + 1..second + 5].copy_from_slice(&3u32.to_le_bytes());
        assert!(parse(&b).is_err());
    }

    #[test]
    fn digests_only_on_files_and_reference_rules() {
        let mut ix = sample();
        ix.entries[1].digest = Some([1; 32]);
        assert!(parse(&write(&ix)).is_err(), "a directory with a digest");
        let mut ix = sample();
        ix.frame_ref_lens[0] = 1;
        assert!(parse(&write(&ix)).is_err(), "frame 0 cannot reference");
        let mut ix = sample();
        ix.frame_ref_lens[1] = MAX_REFERENCE_LEN + 1;
        assert!(parse(&write(&ix)).is_err());
        let mut b = write(&sample());
        b[8] = 2;
        assert!(parse(&b).is_err(), "unknown entry flags");
    }

    #[test]
    fn group_start_walks_back_over_referencing_frames() {
        let ix = Index {
            frame_body_lens: vec![1; 6],
            frame_ref_lens: vec![0, 5, 5, 0, 0, 9],
            ..Index::default()
        };
        let starts: Vec<u64> = (0..6).map(|s| group_start(&ix, s)).collect();
        assert_eq!(starts, vec![0, 0, 0, 3, 4, 4]);
    }
}
