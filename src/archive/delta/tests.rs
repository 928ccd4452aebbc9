//! Unit tests of the base map's region choice (`super::BaseMap::region`).

use super::*;

fn file(size: u64, segs: &[(u64, u64, u64)]) -> Arc<BaseFile> {
    Arc::new(BaseFile {
        size,
        segments: segs
            .iter()
            .map(|&(file_offset, len, stream)| Segment {
                file_offset,
                len,
                stream,
            })
            .collect(),
        ..BaseFile::default()
    })
}

fn map(starts: Vec<u64>, len: u64) -> BaseMap {
    BaseMap {
        files: HashMap::new(),
        below_top: HashMap::new(),
        frame_starts: starts,
        stream_len: len,
    }
}

#[test]
fn files_match_by_path_then_by_path_below_a_renamed_top_directory() {
    let mut m = map(vec![0], 10);
    let a = file(1, &[]);
    let b = file(2, &[]);
    m.files.insert(b"v1/a".to_vec(), Arc::clone(&a));
    m.files.insert(b"v1/b".to_vec(), Arc::clone(&b));
    m.files.insert(b"w1/b".to_vec(), Arc::clone(&b));
    m.below_top.insert(b"a".to_vec(), Some(Arc::clone(&a)));
    m.below_top.insert(b"b".to_vec(), None);
    assert_eq!(m.file(b"v1/a").unwrap().size, 1);
    assert_eq!(m.file(b"v2/a").unwrap().size, 1);
    // Two base files below different tops: ambiguous, no match; a top-level name: none.
    assert!(m.file(b"v2/b").is_none());
    assert!(m.file(b"a").is_none());
    assert_eq!(below_first(b"x/y/z"), Some(&b"y/z"[..]));
}

#[test]
fn file_offsets_map_to_the_stream_across_segments_and_clamp() {
    // Two segments: bytes 0..100 at stream 50, bytes 100..300 at stream 163 (a head
    // of 13 bytes between them).
    let f = file(400, &[(0, 100, 50), (100, 200, 163)]);
    assert_eq!(f.stream_at(0), Some(50));
    assert_eq!(f.stream_at(99), Some(149));
    assert_eq!(f.stream_at(100), Some(163));
    assert_eq!(f.stream_at(250), Some(313));
    // The tail hole clamps to the end of the last segment.
    assert_eq!(f.stream_at(399), Some(363));
    assert_eq!(file(0, &[]).stream_at(0), None);
}

#[test]
fn a_region_widens_by_the_growth_of_the_file_and_is_capped() {
    let m = map(vec![0, 1000, 2000], 3000);
    let f = file(2500, &[(0, 2500, 100)]);
    // A 100-byte segment at offset 1000 of a file grown by 200: 1000 − 50 − 200.
    let p = Placed {
        file: Arc::clone(&f),
        offset: 1000,
        len: 100,
        new_size: 2700,
        records: None,
    };
    let r = m.region(std::slice::from_ref(&p), 50, 10_000).unwrap();
    // Stream 100 + 750 = 850 to 100 + 1150 = 1250: frame 0 offset 850, 400 bytes.
    assert_eq!(
        r,
        BaseRegion {
            seq: 0,
            offset: 850,
            len: 400
        }
    );
    // Capped at 300 bytes: the window starts at the (only) range's start.
    let r = m.region(std::slice::from_ref(&p), 50, 300).unwrap();
    assert_eq!((r.seq, r.offset, r.len), (0, 850, 300));
    // A second segment far away: the window covering the larger one wins.
    let q = Placed {
        file: f,
        offset: 2300,
        len: 200,
        new_size: 2500,
        records: None,
    };
    let r = m.region(&[p, q], 0, 300).unwrap();
    assert_eq!((r.seq, r.offset, r.len), (2, 400, 300));
}

#[test]
fn a_region_never_exceeds_the_format_limit_whatever_the_block_size() {
    use crate::format::limits::MAX_REFERENCE_LEN;
    assert_eq!(max_region(4 << 20), MAX_REGION);
    assert_eq!(max_region(64 << 20), (64 << 20) + (2 << 20));
    assert_eq!(max_region(254 << 20), 256 << 20);
    assert_eq!(max_region(255 << 20), u64::from(MAX_REFERENCE_LEN));
    assert_eq!(max_region(256 << 20), u64::from(MAX_REFERENCE_LEN));
    // A 256 MiB block of a file that shrank from 300 MiB: its segments reach the whole base
    // file (1 MiB each side, and the shrinkage to the right), which is cut to 256 MiB.
    let m = map(vec![0], 300 << 20);
    let f = file(300 << 20, &[(0, 300 << 20, 0)]);
    let p = Placed {
        file: f,
        offset: 0,
        len: 4096,
        new_size: 4096,
        records: None,
    };
    let mut w = DeltaWriter::new(m, 256 << 20);
    w.placed.push(p);
    let r = w.take_region().unwrap();
    assert_eq!((r.seq, r.offset, r.len), (0, 0, MAX_REFERENCE_LEN));
}
