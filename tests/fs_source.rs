//! FileSource: hole-skipping extents, size limits, change warnings, refusing swapped files.

mod fs_common;

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, symlink};

use krypta::fs::source::FileSource;

const GIB: u64 = 1 << 30;

fn all_extents(src: &mut FileSource, max: usize) -> (Vec<(u64, usize)>, Vec<u8>) {
    let mut buf = Vec::new();
    let mut ext = Vec::new();
    while let Some(e) = src.next_extent(&mut buf, max).unwrap() {
        ext.push(e);
    }
    (ext, buf)
}

#[test]
fn sparse_4gib_file_yields_only_its_data_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("sparse");
    let f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&p)
        .unwrap();
    f.set_len(4 * GIB).unwrap();
    f.write_all_at(b"head", 0).unwrap();
    f.write_all_at(&[7u8; 5000], GIB).unwrap();
    f.write_all_at(b"end", 4 * GIB - 3).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let mut src = FileSource::open(&p, 4 * GIB).unwrap();
    let (ext, buf) = all_extents(&mut src, 1 << 20);
    // Holes are found at filesystem-block granularity (4 KiB here): 3 extents, 16 KiB read.
    assert_eq!(ext, vec![(0, 4096), (GIB, 8192), (4 * GIB - 4096, 4096)]);
    assert_eq!(buf.len(), 16384);
    assert_eq!(&buf[..4], b"head");
    assert_eq!(&buf[4096..4096 + 5000], &[7u8; 5000][..]);
    assert_eq!(&buf[16384 - 3..], b"end");
    assert_eq!(src.final_size(), 4 * GIB);
    assert_eq!(src.change_warning(), None);
}

#[test]
fn extents_are_split_at_max_and_a_trailing_hole_counts_in_the_size() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("f");
    let f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&p)
        .unwrap();
    f.write_all_at(&[1u8; 10_000], 0).unwrap();
    f.set_len(1 << 20).unwrap();
    drop(f);
    let mut src = FileSource::open(&p, 1 << 20).unwrap();
    let (ext, buf) = all_extents(&mut src, 4096);
    assert_eq!(ext, vec![(0, 4096), (4096, 4096), (8192, 4096)]);
    assert_eq!(&buf[..10_000], &[1u8; 10_000][..]);
    assert_eq!(&buf[10_000..], &[0u8; 2288][..]);
    assert_eq!(src.final_size(), 1 << 20);
}

#[test]
fn empty_file_has_no_extents_and_size_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("e");
    std::fs::write(&p, b"").unwrap();
    let mut src = FileSource::open(&p, 0).unwrap();
    assert_eq!(all_extents(&mut src, 100), (vec![], vec![]));
    assert_eq!(src.final_size(), 0);
}

#[test]
fn file_growing_while_read_is_cut_at_its_open_size_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("grow");
    std::fs::write(&p, b"0123456789").unwrap();
    let mut src = FileSource::open(&p, 10).unwrap();
    OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all_at(b"abcdefghij", 10)
        .unwrap();
    let (ext, buf) = all_extents(&mut src, 1 << 20);
    assert_eq!(ext, vec![(0, 10)]);
    assert_eq!(buf, b"0123456789");
    assert_eq!(src.final_size(), 10);
    assert_eq!(
        src.change_warning(),
        Some("grew from 10 to 20 bytes while being read; stored the first 10".to_string())
    );
}

#[test]
fn file_shrinking_while_read_records_the_bytes_read() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("shrink");
    std::fs::write(&p, vec![5u8; 10_000]).unwrap();
    let mut src = FileSource::open(&p, 10_000).unwrap();
    OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(100)
        .unwrap();
    let (ext, buf) = all_extents(&mut src, 1 << 20);
    assert_eq!(ext, vec![(0, 100)]);
    assert_eq!(buf, vec![5u8; 100]);
    assert_eq!(src.final_size(), 100);
    assert_eq!(
        src.change_warning(),
        Some("shrank from 10000 to 100 bytes while being read".to_string())
    );
}

#[test]
fn same_size_rewrite_while_read_is_reported_as_modified() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("m");
    std::fs::write(&p, b"aaaa").unwrap();
    fs_common::set_mtime(&p, 1_000_000, 0);
    let mut src = FileSource::open(&p, 4).unwrap();
    OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .write_all_at(b"b", 0)
        .unwrap();
    let _ = all_extents(&mut src, 16);
    assert_eq!(
        src.change_warning(),
        Some("was modified while being read".to_string())
    );
}

#[test]
fn symlink_swapped_in_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("secret"), b"s").unwrap();
    let p = tmp.path().join("f");
    symlink(tmp.path().join("secret"), &p).unwrap();
    match FileSource::open(&p, 1) {
        Err(krypta::Error::Io { path, op, source }) => {
            assert_eq!(path, p);
            assert_eq!(op, "open");
            assert_eq!(
                source.to_string(),
                "became a symbolic link since it was listed"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn fifo_swapped_in_is_refused_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("fifo");
    rustix::fs::mkfifoat(rustix::fs::CWD, &p, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
    match FileSource::open(&p, 0) {
        Err(krypta::Error::Io { op, source, .. }) => {
            assert_eq!(op, "open");
            assert_eq!(source.to_string(), "is no longer a regular file");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn vanished_file_is_a_not_found_io_error() {
    let tmp = tempfile::tempdir().unwrap();
    match FileSource::open(&tmp.path().join("gone"), 3) {
        Err(krypta::Error::Io { source, .. }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound)
        }
        other => panic!("{other:?}"),
    }
}

/// Regression (issue 13): SEEK_DATA/SEEK_HOLE were asked before every read, and tmpfs
/// answers SEEK_HOLE by walking the page cache to the end, so writes were quadratic in the
/// file size. Now one probe pair per data extent, however many reads the extent takes.
#[test]
fn dense_file_is_probed_once_per_extent_not_once_per_read() {
    let mut dirs = vec![tempfile::tempdir().unwrap()];
    if std::path::Path::new("/dev/shm").is_dir() {
        dirs.push(tempfile::tempdir_in("/dev/shm").unwrap());
    }
    for tmp in &dirs {
        let p = tmp.path().join("dense");
        let data: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let mut src = FileSource::open(&p, data.len() as u64).unwrap();
        let (ext, buf) = all_extents(&mut src, 1 << 20);
        assert_eq!(ext.len(), 8, "{}", tmp.path().display());
        assert_eq!(buf, data);
        // A file written front to back has blocks covering its size, so it cannot have a
        // hole: no probe at all (issue 13 item 2; it was one pair per extent, and before that
        // one pair per read).
        assert_eq!(src.seek_probes(), 0, "{}", tmp.path().display());
    }
}

/// Many small files: each was probed with SEEK_DATA and SEEK_HOLE although a file whose
/// blocks cover its size has no hole; now none is, and the bytes read are the same.
#[test]
fn small_dense_files_are_not_probed_for_holes() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, len) in [1usize, 100, 4095, 4096, 4097, 70_000]
        .into_iter()
        .enumerate()
    {
        let p = tmp.path().join(format!("f{i}"));
        let data: Vec<u8> = (0..len).map(|j| (j * 7 + i) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let mut src = FileSource::open(&p, len as u64).unwrap();
        let (_, buf) = all_extents(&mut src, 1 << 20);
        assert_eq!(buf, data, "{len} bytes");
        assert_eq!(src.seek_probes(), 0, "{len} bytes");
        assert_eq!(src.final_size(), len as u64);
    }
}

#[test]
fn sparse_file_costs_two_probes_per_data_extent() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("sparse");
    let f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&p)
        .unwrap();
    f.set_len(4 * GIB).unwrap();
    f.write_all_at(b"head", 0).unwrap();
    f.write_all_at(&[7u8; 5000], GIB).unwrap();
    f.write_all_at(b"end", 4 * GIB - 3).unwrap();
    drop(f);
    let mut src = FileSource::open(&p, 4 * GIB).unwrap();
    let (ext, _) = all_extents(&mut src, 1024);
    // 4096 + 8192 + 4096 bytes in 1 KiB reads (16 reads), 3 extents: 6 probes.
    assert_eq!(ext.len(), 16);
    assert_eq!(src.seek_probes(), 6);
}
