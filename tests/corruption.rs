//! Every truncation and every single-byte change of a small archive is caught with the right
//! kind of error (exit code), never a panic or a hang; hostile headers are refused without
//! large allocations.

mod common;

use std::path::Path;

use krypta::archive::reader::OpenOptions;
use krypta::archive::writer::{ArchiveWriter, BcjMode, ReaderSource, WriteOptions};
use krypta::codec::Level;
use krypta::format::{EntryKind, EntryMeta, Timestamp};

fn meta(path: &str, kind: EntryKind) -> EntryMeta {
    EntryMeta {
        path: path.as_bytes().to_vec(),
        kind,
        mode: if kind == EntryKind::Dir { 0o755 } else { 0o644 },
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 5,
        },
        uid: 1000,
        gid: 1000,
        link: if kind == EntryKind::Symlink {
            b"target".to_vec()
        } else {
            vec![]
        },
        ..Default::default()
    }
}

/// A small unencrypted archive: a directory, two files (one compressible), a symlink; 3 blocks.
pub fn small_archive() -> Vec<u8> {
    let opts = WriteOptions {
        level: Some(Level::new(3).unwrap()),
        block_size: 64 * 1024,
        jobs: 2,
        bcj: BcjMode::Auto,
        created: 1_700_000_000,
        comment: "test".into(),
        recipients: vec![],
        archive_id: Some([7; 16]),
        file_key: None,
        ..WriteOptions::new()
    };
    let mut w = ArchiveWriter::new(Vec::new(), "mem", opts).unwrap();
    w.add_entry(&meta("d", EntryKind::Dir)).unwrap();
    let text = common::bytes(100_000, 1, true);
    w.add_file(
        &meta("d/text", EntryKind::File),
        &mut ReaderSource::new(&text[..], "text"),
    )
    .unwrap();
    let rand = common::bytes(300, 2, false);
    w.add_file(
        &meta("d/rand", EntryKind::File),
        &mut ReaderSource::new(&rand[..], "rand"),
    )
    .unwrap();
    w.add_entry(&meta("d/link", EntryKind::Symlink)).unwrap();
    let (summary, bytes) = w.finish().unwrap();
    assert_eq!(summary.entries, 4);
    assert_eq!(summary.data_frames, 2);
    assert_eq!(summary.archive_bytes as usize, bytes.len());
    bytes
}

fn check(path: &Path) -> Result<krypta::archive::ScanSummary, krypta::Error> {
    krypta::test(
        path,
        OpenOptions {
            identities: vec![],
            jobs: 1,
            ..OpenOptions::default()
        },
        &mut krypta::Collect::default(),
    )
}

#[test]
fn the_small_archive_verifies_and_lists() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.kry");
    std::fs::write(&p, small_archive()).unwrap();
    let s = check(&p).unwrap();
    assert_eq!((s.entries, s.files, s.bytes, s.frames), (4, 2, 100_300, 2));
    let (entries, frames) = krypta::list(&p, OpenOptions::default()).unwrap();
    let names: Vec<&[u8]> = entries.iter().map(|e| e.meta.path.as_slice()).collect();
    assert_eq!(names, [&b"d"[..], b"d/text", b"d/rand", b"d/link"]);
    assert_eq!(frames.len(), 2);
    assert_eq!(
        entries[1].digest,
        Some(*blake3::hash(&common::bytes(100_000, 1, true)).as_bytes())
    );
}

#[test]
fn truncation_at_every_offset_is_a_corrupt_archive_error() {
    let a = small_archive();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.kry");
    for len in 0..a.len() {
        std::fs::write(&p, &a[..len]).unwrap();
        let e = check(&p).expect_err(&format!("truncated to {len} bytes but verified"));
        assert_eq!(e.exit_code(), 3, "truncated to {len}: {e}");
    }
}

#[test]
fn every_flipped_byte_is_caught() {
    let a = small_archive();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.kry");
    let mut codes = std::collections::BTreeMap::new();
    for i in 0..a.len() {
        // One change per byte, alternating a low and a high bit.
        {
            let x = if i % 2 == 0 { 0x01u8 } else { 0x80 };
            let mut b = a.clone();
            b[i] ^= x;
            std::fs::write(&p, &b).unwrap();
            let e = check(&p).expect_err(&format!("byte {i} ^ {x:#x} was not noticed"));
            let c = e.exit_code();
            assert!(c == 3 || c == 5, "byte {i}: exit {c}: {e}");
            *codes.entry(c).or_insert(0) += 1;
        }
    }
    // Both kinds occur: structure (3) and checksum (5) failures.
    assert!(
        codes.get(&3).copied().unwrap_or(0) > 0 && codes.get(&5).copied().unwrap_or(0) > 0,
        "{codes:?}"
    );
}

#[test]
fn other_formats_and_empty_files_are_not_archives() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x");
    for (content, code) in [
        (&b""[..], 3),
        (b"PK\x03\x04 a zip file, not ours", 3),
        (b"\x28\xb5\x2f\xfd zstd", 3),
    ] {
        std::fs::write(&p, content).unwrap();
        let e = check(&p).unwrap_err();
        assert_eq!(e.exit_code(), code, "{e}");
        assert!(matches!(e, krypta::Error::NotAnArchive { .. }), "{e:?}");
    }
}

/// Bytes after the footer are never accepted silently: `t` fails (5) and `l` warns, from a
/// stream as from a file. (Until the reader cut the archive at its footer, `store::clamped`,
/// both refused the archive with 3, though every entry was intact: FORMAT.md §11 step 8.)
#[test]
fn bytes_after_the_footer_are_named_by_every_reader_including_a_streamed_list() {
    use std::io::Write;
    let mut a = small_archive();
    a.extend_from_slice(b"trailing garbage");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.kry");
    std::fs::write(&p, &a).unwrap();
    for (args, want) in [(&["t", "-"][..], 5), (&["l", "-"], 0)] {
        let mut c = common::krypta()
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(&a).unwrap();
        let o = c.wait_with_output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(want), "{args:?}: {e}");
        assert!(
            e.contains("16 bytes follow the archive's footer at byte"),
            "{args:?}: {e}"
        );
    }
}
