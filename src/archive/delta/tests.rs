//! Unit tests of the base map's region choice (`super::BaseMap::region`).

use super::*;

/// A base file whose walk has ended with these `(file offset, length, stream)` segments.
fn file(size: u64, segs: &[(u64, u64, u64)]) -> Arc<BaseFile> {
    let segments = segs
        .iter()
        .map(|&(file_offset, len, stream)| Segment {
            file_offset,
            len,
            stream,
        })
        .collect();
    let walked = walk::FileWalked {
        segments,
        ended: true,
    };
    Arc::new(BaseFile {
        size,
        entry: 0,
        indexed_digest: None,
        walk: Arc::new(Progress::ended(
            HashMap::from([(0, walked)]),
            vec![0],
            u64::MAX,
        )),
    })
}

/// A map whose walk has ended with these frame starts and stream length.
fn map(starts: Vec<u64>, len: u64) -> BaseMap {
    BaseMap::with_files(
        HashMap::new(),
        Arc::new(Progress::ended(HashMap::new(), starts, len)),
        None,
    )
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
    let r = w.take_region().unwrap().unwrap();
    assert_eq!((r.seq, r.offset, r.len), (0, 0, MAX_REFERENCE_LEN));
}

/// The window over ranges longer than `max` covers the most segment bytes *it overlaps*: a
/// range that starts inside a window but runs far past it counts only with its bytes inside.
/// Before, a range counted whole once it started in the window, so the window at the first
/// range's start (100 bytes of X and 50 of Y) beat the one over Y (300 of Y's bytes).
#[test]
fn a_region_window_counts_only_the_segment_bytes_it_covers() {
    let m = map(vec![0], 2000);
    let x = file(100, &[(0, 100, 0)]);
    let y = file(1000, &[(0, 1000, 250)]);
    let seg = |f: &Arc<BaseFile>, len| Placed {
        file: Arc::clone(f),
        offset: 0,
        len,
        new_size: f.size,
        records: None,
    };
    let r = m.region(&[seg(&x, 100), seg(&y, 1000)], 0, 300).unwrap();
    assert_eq!((r.seq, r.offset, r.len), (0, 250, 300));
    // Y's range ending the window (its end at 1250 − 300) covers as much: the first wins.
    let r = m.region(&[seg(&y, 1000), seg(&x, 100)], 0, 300).unwrap();
    assert_eq!((r.seq, r.offset, r.len), (0, 250, 300));
}

/// A DATA segment fits the block while what its segments and references span in the base
/// stays within one region; the writer cuts the block before one that does not
/// (`DeltaWriter::segment_fits`), unless the block has no matched bytes yet.
#[test]
fn a_segment_fits_the_block_while_its_region_reaches_every_segment() {
    // Base stream: a (1000 bytes at 0), b (500 at 1000), z (1000 at 1500).
    let mut m = map(vec![0], 2500);
    let a = file(1000, &[(0, 1000, 0)]);
    let z = file(1000, &[(0, 1000, 1500)]);
    m.files.insert(b"a".to_vec(), Arc::clone(&a));
    m.files.insert(b"z".to_vec(), Arc::clone(&z));
    let mut w = DeltaWriter::new(m, 4 << 20);
    w.widen = 10;
    w.max = 1500;
    // Nothing placed yet: anything fits.
    w.current = Some((Arc::clone(&z), 1000));
    assert!(w.segment_fits(0, 1000));
    // a placed whole: stream 0..1000. z's first 400 bytes reach 1500..1910: 1910 > 1500.
    w.current = Some((Arc::clone(&a), 1000));
    w.note(0, 1000);
    w.current = Some((Arc::clone(&z), 1000));
    assert!(!w.segment_fits(0, 400));
    // Its last 10 bytes alone reach 1500 + 980..: too far too; a segment is clamped to
    // the file (len 400 at offset 990 is 10 bytes, reaching back 10).
    assert!(!w.segment_fits(990, 400));
    // A file that shrank by 500 (new size 500) reaches 500 more to the right.
    w.current = Some((Arc::clone(&a), 500));
    assert!(w.segment_fits(0, 400));
    // Cut: the next block starts afresh, and the region is a's range.
    let r = w.take_region().unwrap().unwrap();
    assert_eq!((r.seq, r.offset, r.len), (0, 0, 1000));
    w.current = Some((Arc::clone(&z), 1000));
    assert!(w.segment_fits(0, 1000));
}

/// The writer asks a file's stream offsets while the walk is still publishing them
/// (`walk`'s module doc): each answer is the one the whole walk gives, whatever was
/// published when it was asked. A file's offset `x` is final only once a segment past `x`
/// or the file's end was parsed; the walk here publishes one segment at a time, pausing, and
/// then ends the walk without the file's END (as a failed walk does).
#[test]
fn offsets_asked_while_the_walk_publishes_are_those_of_the_whole_walk() {
    let segs = [
        (0, 100, 50),
        (100, 200, 163),
        (300, 50, 380),
        (400, 10, 440),
    ];
    let whole = file(500, &segs);
    let want: Vec<Option<u64>> = [0, 99, 100, 250, 299, 300, 399, 405, 499]
        .iter()
        .map(|&x| whole.stream_at(x))
        .collect();
    for pause_us in [0u64, 200, 2000] {
        let walk = Arc::new(Progress::default());
        let f = BaseFile {
            size: 500,
            entry: 7,
            indexed_digest: Some([1; 32]),
            walk: Arc::clone(&walk),
        };
        let publisher = {
            let walk = Arc::clone(&walk);
            std::thread::spawn(move || {
                for &(file_offset, len, stream) in &segs {
                    std::thread::sleep(std::time::Duration::from_micros(pause_us));
                    walk.publish_with(|w| {
                        w.files.entry(7).or_default().segments.push(Segment {
                            file_offset,
                            len,
                            stream,
                        });
                    });
                }
                std::thread::sleep(std::time::Duration::from_micros(pause_us));
                // The walk ends (fails) before the file's END_DIGEST.
                walk.publish_with(|w| w.done = true);
            })
        };
        let got: Vec<Option<u64>> = [0, 99, 100, 250, 299, 300, 399, 405, 499]
            .iter()
            .map(|&x| f.stream_at(x))
            .collect();
        assert_eq!(got, want, "pause {pause_us} us");
        // The index's digest is not the file's while the stream never confirmed it.
        assert_eq!(f.digest(), None);
        assert_eq!(f.indexed_digest(), Some([1; 32]));
        publisher.join().unwrap();
    }
    assert_eq!(
        want,
        [
            Some(50),
            Some(149),
            Some(163),
            Some(313),
            Some(362),
            Some(380),
            Some(430),
            Some(445),
            Some(450)
        ]
    );
}
