//! Sizes and depths beyond the usual limits: a 5 GiB sparse file and a path of 4000+ bytes.

mod fs_common;

use std::fs::OpenOptions;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;

use fs_common::*;
use krypta::format::entry::EntryKind;
use krypta::fs::extract::ExtractOptions;
use krypta::fs::walk::WalkOptions;
use rustix::fs::{CWD, Mode, OFlags, mkdirat, openat};

const GIB: u64 = 1 << 30;

#[test]
fn sparse_5gib_file_round_trips_sparse_through_source_and_sink() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let p = src.join("big");
    let f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&p)
        .unwrap();
    f.set_len(5 * GIB).unwrap();
    f.write_all_at(b"start", 0).unwrap();
    f.write_all_at(b"past four gib", 4 * GIB + 17).unwrap();
    f.write_all_at(b"last", 5 * GIB - 4).unwrap();
    drop(f);
    let out = tmp.path().join("out");
    let warnings = copy_tree(&src, &out, ExtractOptions::default()).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let q = out.join("big");
    let st = lstat(&q);
    assert_eq!(st.st_size as u64, 5 * GIB);
    // Three 4 KiB blocks of data (in 512-byte units); the rest stays a hole.
    assert_eq!(st.st_blocks, 24);
    let g = std::fs::File::open(&q).unwrap();
    let mut buf = [0u8; 13];
    g.read_exact_at(&mut buf[..5], 0).unwrap();
    assert_eq!(&buf[..5], b"start");
    g.read_exact_at(&mut buf, 4 * GIB + 17).unwrap();
    assert_eq!(&buf, b"past four gib");
    g.read_exact_at(&mut buf[..4], 5 * GIB - 4).unwrap();
    assert_eq!(&buf[..4], b"last");
    g.read_exact_at(&mut buf, 3 * GIB).unwrap();
    assert_eq!(buf, [0u8; 13]);
}

#[test]
fn path_of_more_than_4000_bytes_round_trips_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    // 22 components of 200 bytes (one with a non-UTF-8 byte and a newline): 4400+ bytes.
    let mut comps: Vec<Vec<u8>> = (0..22)
        .map(|i| format!("{i:02}{}", "d".repeat(198)).into_bytes())
        .collect();
    comps[5][10] = 0xff;
    comps[9][3] = b'\n';
    let mut fd = openat(
        CWD,
        &src,
        OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap();
    for c in &comps {
        mkdirat(&fd, c.as_slice(), Mode::from_raw_mode(0o755)).unwrap();
        fd = openat(
            &fd,
            c.as_slice(),
            OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
    }
    let leaf = openat(
        &fd,
        "leaf",
        OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .unwrap();
    rustix::io::write(leaf.as_fd(), b"deep data").unwrap();
    drop(leaf);

    let (entries, _) = collect(std::slice::from_ref(&src), WalkOptions::default()).unwrap();
    let leaf_entry = entries.last().unwrap();
    let mut rel = comps.join(&b'/');
    rel.extend_from_slice(b"/leaf");
    assert!(rel.len() > 4000);
    assert_eq!(
        leaf_entry.meta.path,
        arch(&src, "")
            .into_iter()
            .chain(*b"/")
            .chain(rel.iter().copied())
            .collect::<Vec<u8>>()
    );
    assert_eq!(leaf_entry.meta.kind, EntryKind::File);
    assert_eq!(leaf_entry.size, 9);

    let out = tmp.path().join("out");
    let opts = ExtractOptions {
        strip_components: prefix_len(&src),
        ..Default::default()
    };
    extract_entries(&entries, &out, opts).unwrap();
    // Walk the output the same way and compare the relative paths entry by entry.
    let (back, _) = collect(std::slice::from_ref(&out), WalkOptions::default()).unwrap();
    let strip = |p: &[u8], base: &[u8]| p[base.len()..].to_vec();
    let a: Vec<Vec<u8>> = entries
        .iter()
        .map(|e| strip(&e.meta.path, &arch(&src, "")))
        .collect();
    let b: Vec<Vec<u8>> = back
        .iter()
        .map(|e| strip(&e.meta.path, &arch(&out, "")))
        .collect();
    assert_eq!(a, b);
    assert_eq!(a.len(), 24);
    let mut full = out.as_os_str().as_bytes().to_vec();
    full.push(b'/');
    full.extend_from_slice(&rel);
    let mut src_back = krypta::fs::source::FileSource::open(
        std::path::Path::new(std::ffi::OsStr::from_bytes(&full)),
        9,
    )
    .unwrap();
    let mut buf = Vec::new();
    assert_eq!(src_back.next_extent(&mut buf, 100).unwrap(), Some((0, 9)));
    assert_eq!(buf, b"deep data");
}

/// Throughput numbers for the report: `KRYPTA_MEASURE_DIR=/usr cargo test --test fs_large
/// measure -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure_walk_and_copy_throughput() {
    let Some(dir) = std::env::var_os("KRYPTA_MEASURE_DIR") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let t = std::time::Instant::now();
    let (entries, warnings) = collect(std::slice::from_ref(&dir), WalkOptions::default()).unwrap();
    let walk_s = t.elapsed().as_secs_f64();
    let bytes: u64 = entries.iter().map(|e| e.size).sum();
    eprintln!(
        "walk: {} entries, {} warnings, {:.3} s, {:.0} entries/s",
        entries.len(),
        warnings.len(),
        walk_s,
        entries.len() as f64 / walk_s
    );
    let tmp = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let opts = ExtractOptions {
        strip_components: prefix_len(&dir),
        ..Default::default()
    };
    extract_entries(&entries, &tmp.path().join("out"), opts).unwrap();
    let s = t.elapsed().as_secs_f64();
    eprintln!(
        "copy (FileSource -> FileSink): {:.3} s, {:.0} entries/s, {:.1} MB/s of {} bytes",
        s,
        entries.len() as f64 / s,
        bytes as f64 / s / 1e6,
        bytes
    );
}
