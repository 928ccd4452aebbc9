//! Criterion benchmarks of the paths where people wait on many files (issue 13, items 2 and
//! 4), so a regression in either shows:
//!
//! - `extract-write-path`: what extraction does per file once its bytes are decoded, through
//!   `fs::extract::Extractor` and `fs::sink::FileSink` (temporary file in the target
//!   directory, `pwrite`, the BLAKE3 check of the bytes against the stored digest, metadata,
//!   rename into place): 1,000 small files, and one 64 MiB file.
//! - `small-files`: the whole `krypta::compress` of a tree of 2,000 small files (walk,
//!   entries, blocks at -l 3, index; `--no-fsync`) and the whole `krypta::extract` of that
//!   archive into an empty directory (read, verify, decode, the write path above).
//!
//! Files live on tmpfs (`/dev/shm`) when it exists, so the disk is not what is measured;
//! every iteration writes into a fresh directory, removed outside the timed part.
//!
//! `cargo bench --bench extract`

// `criterion_group!` generates an undocumented `pub fn benches()`.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use krypta::archive::reader::OpenOptions;
use krypta::archive::writer::WriteOptions;
use krypta::format::{EntryKind, EntryMeta, Timestamp};
use krypta::fs::extract::{ExtractOptions, Extractor};

const SMALL_FILES: usize = 1000;
const TREE_FILES: usize = 2000;
const LARGE: usize = 64 << 20;

/// Where the benchmarks' temporary directories go: tmpfs when there is one.
fn scratch() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("krypta-bench-")
        .tempdir_in(scratch())
        .unwrap()
}

/// The few words of small file `i` (2–30 words in the tree; a dozen here).
fn small(i: usize) -> Vec<u8> {
    format!("a few words of small file number {i}, as in a source tree\n").into_bytes()
}

fn file_meta(path: String) -> EntryMeta {
    EntryMeta {
        path: path.into_bytes(),
        kind: EntryKind::File,
        mode: 0o644,
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
        uid: rustix::process::getuid().as_raw(),
        gid: rustix::process::getgid().as_raw(),
        ..Default::default()
    }
}

/// One file through the write path: begin, write, check the digest, commit.
fn write_one(ex: &mut Extractor, meta: &EntryMeta, data: &[u8], digest: &blake3::Hash) {
    let mut sink = ex
        .begin_file(meta)
        .unwrap()
        .expect("an empty directory has no conflict");
    for (i, chunk) in data.chunks(4 << 20).enumerate() {
        sink.write_at((i * (4 << 20)) as u64, chunk).unwrap();
    }
    assert_eq!(&blake3::hash(data), digest, "the digest check");
    sink.commit(data.len() as u64).unwrap();
}

fn write_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("extract-write-path");
    g.sample_size(10);
    let files: Vec<(EntryMeta, Vec<u8>, blake3::Hash)> = (0..SMALL_FILES)
        .map(|i| {
            let d = small(i);
            let h = blake3::hash(&d);
            (file_meta(format!("f{i:04}")), d, h)
        })
        .collect();
    g.throughput(Throughput::Elements(SMALL_FILES as u64));
    g.bench_function("1000-small-files", |b| {
        b.iter_batched(
            tempdir,
            |dir| {
                let mut ex = Extractor::new(dir.path(), ExtractOptions::default()).unwrap();
                for (meta, data, digest) in &files {
                    write_one(&mut ex, meta, data, digest);
                }
                ex.finish().unwrap();
                dir
            },
            BatchSize::PerIteration,
        )
    });
    let large = krypta::bench::fixtures::redundant(LARGE);
    let large_digest = blake3::hash(&large);
    let large_meta = file_meta("large".into());
    g.throughput(Throughput::Bytes(LARGE as u64));
    g.bench_function("one-64MiB-file", |b| {
        b.iter_batched(
            tempdir,
            |dir| {
                let mut ex = Extractor::new(dir.path(), ExtractOptions::default()).unwrap();
                write_one(&mut ex, &large_meta, &large, &large_digest);
                ex.finish().unwrap();
                dir
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// A tree `t/dNN/fNNNN` of [`TREE_FILES`] small files, 100 per directory.
fn small_tree(root: &Path) -> PathBuf {
    let t = root.join("t");
    for i in 0..TREE_FILES {
        let d = t.join(format!("d{:02}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&d).unwrap();
        }
        std::fs::write(d.join(format!("f{i:04}")), small(i)).unwrap();
    }
    t
}

fn compress_request(output: PathBuf, input: PathBuf) -> krypta::CompressRequest {
    krypta::CompressRequest {
        directory: None,
        output,
        inputs: vec![input],
        force: false,
        sync: false,
        dereference: false,
        xattrs: Default::default(),
        numeric_owner: false,
        select: Default::default(),
        strict: true,
        options: WriteOptions::new(),
    }
}

fn small_files(c: &mut Criterion) {
    let mut g = c.benchmark_group("small-files");
    g.sample_size(10);
    g.throughput(Throughput::Elements(TREE_FILES as u64));
    let src = tempdir();
    let tree = small_tree(src.path());
    g.bench_function("compress-2000", |b| {
        b.iter_batched(
            tempdir,
            |out| {
                let req = compress_request(out.path().join("a.kry"), tree.clone());
                let s = krypta::compress(req, &mut krypta::Collect::default()).unwrap();
                // The tree's directories and files, and the root entry.
                assert_eq!(s.entries, (TREE_FILES + TREE_FILES / 100 + 1) as u64);
                out
            },
            BatchSize::PerIteration,
        )
    });
    let archive = src.path().join("a.kry");
    krypta::compress(
        compress_request(archive.clone(), tree.clone()),
        &mut krypta::Collect::default(),
    )
    .unwrap();
    g.bench_function("extract-2000", |b| {
        b.iter_batched(
            tempdir,
            |out| {
                let req = krypta::ExtractRequest {
                    output: out.path().to_path_buf(),
                    paths: vec![],
                    wildcards: false,
                    stdout: false,
                    fs: ExtractOptions::default(),
                    salvage: false,
                };
                krypta::extract(
                    &archive,
                    OpenOptions::default(),
                    req,
                    &mut krypta::Collect::default(),
                )
                .unwrap();
                out
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, write_path, small_files);
criterion_main!(benches);
