//! The cost of small hostile archives (issue 12 #22, #24, #25): deep directory chains,
//! blocks larger than the header claims, and holes far larger than the archive. Each is
//! written with the library's own writer (valid checksums, so the reader gets to the costly
//! part). The tests here count deterministic things (directory opens, bytes held, hole bytes
//! hashed); wall time and memory are measured with the ignored `write_crafted_archives`:
//!
//! ```text
//! KRYPTA_CRAFT_DIR=/tmp/craft cargo test --release --test hostile_cost -- --ignored
//! /usr/bin/time -v krypta x -o out /tmp/craft/chain-8192.kry
//! ```

use std::path::Path;

use krypta::archive::writer::{ArchiveWriter, BcjMode, ContentSource, ReaderSource, WriteOptions};
use krypta::codec::Level;
use krypta::crypto::frame::Protection;
use krypta::format::{EntryKind, EntryMeta, Timestamp};

fn meta(path: &[u8], kind: EntryKind) -> EntryMeta {
    EntryMeta {
        path: path.to_vec(),
        kind,
        mode: if kind == EntryKind::Dir { 0o755 } else { 0o644 },
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
        uid: 0,
        gid: 0,
        link: vec![],
        ..Default::default()
    }
}

fn options(block_size: usize) -> WriteOptions {
    WriteOptions {
        level: Some(Level::new(3).expect("level")),
        block_size,
        jobs: 2,
        bcj: BcjMode::Off,
        created: 1_700_000_000,
        archive_id: Some([0x2c; 16]),
        ..WriteOptions::new()
    }
}

/// `depth` components `c/c/.../c` (each one byte).
fn chain(c: u8, depth: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(2 * depth);
    for i in 0..depth {
        if i > 0 {
            p.push(b'/');
        }
        p.push(c);
    }
    p
}

/// A chain of `depth` directory entries `a`, `a/a`, … (the issue's 8,192-deep case).
fn dir_chain(path: &Path, depth: usize) {
    let mut w = ArchiveWriter::new(
        std::fs::File::create(path).expect("create"),
        path,
        options(4 << 20),
    )
    .expect("writer");
    for d in 1..=depth {
        w.add_entry(&meta(&chain(b'a', d), EntryKind::Dir))
            .expect("entry");
    }
    w.finish().expect("finish");
}

/// `files` one-byte files alternating between the directories `x` and `y` (parents created
/// by the extractor).
fn alternating(path: &Path, x: &[u8], y: &[u8], files: usize) {
    let mut w = ArchiveWriter::new(
        std::fs::File::create(path).expect("create"),
        path,
        options(4 << 20),
    )
    .expect("writer");
    for i in 0..files {
        let mut p = if i % 2 == 0 { x.to_vec() } else { y.to_vec() };
        p.extend_from_slice(format!("/f{i}").as_bytes());
        let mut src = ReaderSource::new(&b"x"[..], "mem");
        w.add_file(&meta(&p, EntryKind::File), &mut src)
            .expect("file");
    }
    w.finish().expect("finish");
}

/// Content that is one hole of `size` bytes.
struct Hole(u64);

impl ContentSource for Hole {
    fn read_extent(&mut self, _buf: &mut [u8]) -> krypta::Result<Option<(u64, usize)>> {
        Ok(None)
    }
    fn final_size(&self) -> u64 {
        self.0
    }
}

/// One file that is a single hole of `size` bytes.
fn hole(path: &Path, size: u64) {
    let mut w = ArchiveWriter::new(
        std::fs::File::create(path).expect("create"),
        path,
        options(4 << 20),
    )
    .expect("writer");
    w.add_file(&meta(b"sparse.img", EntryKind::File), &mut Hole(size))
        .expect("file");
    w.finish().expect("finish");
}

/// One file of `blocks` × 256 MiB of zeros in 256 MiB blocks, whose header then claims 64 KiB
/// blocks (re-tagged: an unencrypted header's checksum is unkeyed).
fn big_blocks_small_claim(path: &Path, blocks: u64) {
    let size = blocks * (256 << 20);
    let mut bytes = Vec::new();
    {
        let mut w = ArchiveWriter::new(&mut bytes, path, options(256 << 20)).expect("writer");
        let mut src = ReaderSource::new(std::io::Read::take(std::io::repeat(0), size), "zeros");
        w.add_file(&meta(b"zeros", EntryKind::File), &mut src)
            .expect("file");
        w.finish().expect("finish");
    }
    let h = u32::from_le_bytes(bytes[12..16].try_into().expect("4")) as usize;
    bytes[40..44].copy_from_slice(&(64u32 << 10).to_le_bytes());
    let tag = Protection::Plain.header_tag(&bytes[..h - 32]);
    bytes[h - 32..h].copy_from_slice(&tag);
    std::fs::write(path, bytes).expect("write");
}

#[test]
#[ignore = "writes the crafted archives of the measurements into $KRYPTA_CRAFT_DIR"]
fn write_crafted_archives() {
    let dir = std::path::PathBuf::from(
        std::env::var_os("KRYPTA_CRAFT_DIR").expect("set KRYPTA_CRAFT_DIR"),
    );
    std::fs::create_dir_all(&dir).expect("mkdir");
    for depth in [1024, 2048, 4096, 8192] {
        dir_chain(&dir.join(format!("chain-{depth}.kry")), depth);
    }
    // 400 files alternating between two 16,000-deep directories: sharing all but the last
    // component, and sharing nothing.
    let mut near = chain(b'a', 15_999);
    near.extend_from_slice(b"/p");
    let mut near2 = chain(b'a', 15_999);
    near2.extend_from_slice(b"/q");
    alternating(&dir.join("alternate-siblings.kry"), &near, &near2, 400);
    alternating(
        &dir.join("alternate-disjoint.kry"),
        &chain(b'a', 16_000),
        &chain(b'b', 16_000),
        400,
    );
    big_blocks_small_claim(&dir.join("big-blocks.kry"), 8);
    hole(&dir.join("hole-32g.kry"), 32 << 30);
    for e in std::fs::read_dir(&dir).expect("list") {
        let e = e.expect("entry");
        eprintln!(
            "{}: {} bytes",
            e.path().display(),
            e.metadata().expect("stat").len()
        );
    }
}

/// Directory opens of extracting `entries` (directories and one-byte files) with the
/// library's extractor, including `finish`.
fn extraction_opens(entries: &[EntryMeta]) -> u64 {
    use krypta::fs::extract::{ExtractOptions, Extractor};
    let tmp = tempfile::tempdir().expect("tmp");
    let mut ex = Extractor::new(tmp.path(), ExtractOptions::default()).expect("extractor");
    for m in entries {
        match m.kind {
            EntryKind::Dir => ex.make_dir(m).expect("dir"),
            _ => {
                let mut sink = ex.begin_file(m).expect("file").expect("not stripped");
                sink.write_at(0, b"x").expect("write");
                sink.commit(1).expect("commit");
            }
        }
    }
    ex.apply_dirs().expect("finish");
    ex.dir_opens()
}

#[test]
fn extracting_an_n_deep_directory_chain_costs_o_n_directory_opens() {
    // Issue 12 #22: each entry walked from the root cost 1 + 2 + … + N opens (1.05 million
    // for N = 1,024). With the chain: N - 1 to extract (each entry's parent is the previous
    // entry plus one level), then N to open each directory for its mode and time, deepest
    // first, and N - 1 - 128 - ⌊(N - 1 - 128) / 128⌋ to reopen the levels whose
    // descriptors the chain dropped (it keeps the top 128 and every 128th): for N = 500,
    // 499 + 500 + 369.
    let chain_of = |n: usize| -> Vec<EntryMeta> {
        (1..=n)
            .map(|d| meta(&chain(b'a', d), EntryKind::Dir))
            .collect()
    };
    let opens: Vec<u64> = [500, 1000, 2000]
        .iter()
        .map(|&n| extraction_opens(&chain_of(n)))
        .collect();
    assert_eq!(opens, [1368, 2864, 5856]);
    for (n, o) in [500u64, 1000, 2000].iter().zip(&opens) {
        assert!(*o <= 4 * n, "{o} opens for {n} levels");
    }
}

#[test]
fn files_alternating_between_two_deep_sibling_directories_reuse_the_chain() {
    // The issue's second case, scaled down: files alternating between two 2,000-deep
    // directories that share all but their last component.
    let mut x = chain(b'a', 1999);
    x.extend_from_slice(b"/p");
    let mut y = chain(b'a', 1999);
    y.extend_from_slice(b"/q");
    let entries: Vec<EntryMeta> = (0..400)
        .map(|i| {
            let mut p = if i % 2 == 0 { x.clone() } else { y.clone() };
            p.extend_from_slice(format!("/f{i}").as_bytes());
            meta(&p, EntryKind::File)
        })
        .collect();
    // 2 × 1,999 to create the shared chain (a failed open, then one after mkdir), the same
    // for p and q, then one open per switch.
    assert_eq!(extraction_opens(&entries), 2 * 2000 + 2 + 398);
}

#[test]
fn the_bytes_in_flight_follow_the_frames_read_not_the_headers_block_size() {
    // Issue 12 #24: a header claiming 64 KiB blocks over 256 MiB frames got 2j + 2 blocks
    // decoded ahead (1.5 GB at -j 2). Scaled down: 256 KiB blocks of zeros under a header
    // claiming 64 KiB, a budget base of 1 MiB and two workers: the limit is
    // max(1 MiB, 3 × 256 KiB) = 1 MiB of decoded blocks; bodies are a few hundred bytes.
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("claim.kry");
    let mut bytes = Vec::new();
    {
        let mut w = ArchiveWriter::new(&mut bytes, &p, options(256 << 10)).expect("writer");
        let zeros = std::io::Read::take(std::io::repeat(0), 24 << 20);
        w.add_file(
            &meta(b"zeros", EntryKind::File),
            &mut ReaderSource::new(zeros, "zeros"),
        )
        .expect("file");
        w.finish().expect("finish");
    }
    let h = u32::from_le_bytes(bytes[12..16].try_into().expect("4")) as usize;
    bytes[40..44].copy_from_slice(&(64u32 << 10).to_le_bytes());
    let tag = Protection::Plain.header_tag(&bytes[..h - 32]);
    bytes[h - 32..h].copy_from_slice(&tag);
    std::fs::write(&p, &bytes).expect("write");
    let open = || krypta::archive::reader::OpenOptions {
        jobs: 2,
        in_flight_budget: Some(1 << 20),
        ..Default::default()
    };
    for _ in 0..3 {
        let s = krypta::test(&p, open(), &mut krypta::Collect::default()).expect("test");
        assert_eq!(s.bytes, 24 << 20);
        assert!(
            s.peak_held <= (1 << 20) + (16 << 10),
            "{} bytes held at once",
            s.peak_held
        );
        assert!(s.peak_held >= 256 << 10, "{}", s.peak_held);
    }
}
