//! Criterion benchmarks of the end-to-end block path and of a whole archive: one 4 MiB block
//! through BCJ + zstd (-l 3) + seal and back (open + decode), and a 16 MiB archive written
//! and verified through `ArchiveWriter` / `krypta::test`, plain and encrypted (key file);
//! plus the hashes and AEADs of `krypta bench` table 5 that `benches/crypto.rs` does not
//! cover (BLAKE3, SHA-256, ring's AES-256-GCM and ChaCha20-Poly1305) on 4 MiB.
//! Input: the `source` and `binary` fixtures when `KRYPTA_FIXTURES` names a `make fixtures`
//! directory, else seeded repetitive text.
//!
//! `cargo bench --bench pipeline`

// `criterion_group!` generates an undocumented `pub fn benches()`.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use krypta::archive::reader::OpenOptions;
use krypta::archive::writer::{ArchiveWriter, BcjMode, ReaderSource, WriteOptions};
use krypta::codec::{BlockDecoder, BlockEncoder, Filter, Level};
use krypta::crypto::keyfile::SymmetricKey;
use krypta::crypto::{FileKey, Identity, Protection, Recipient, Subkeys};
use krypta::format::{EntryKind, EntryMeta, Timestamp};

const BLOCK: usize = 4 << 20;
const ARCHIVE: usize = 16 << 20;
const ID: [u8; 16] = [3; 16];
const HEADER: [u8; 16] = [1, 0, 0, 0, 0x10, 0, 0x40, 0, 7, 0, 0, 0, 0, 0, 0, 0];

/// `len` bytes of fixture `name`, or seeded repetitive text.
fn input(name: &str, len: usize) -> Vec<u8> {
    if let Some(dir) = std::env::var_os("KRYPTA_FIXTURES")
        && let Ok(mut d) = std::fs::read(std::path::Path::new(&dir).join(name))
        && d.len() >= len
    {
        d.truncate(len);
        return d;
    }
    krypta::bench::fixtures::redundant(len)
}

fn block_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("block-path-4MiB");
    g.throughput(Throughput::Bytes(BLOCK as u64))
        .sample_size(10);
    let sealed = Protection::Sealed(Box::new(Subkeys::derive(
        &FileKey::from_bytes([1; 32]),
        &ID,
    )));
    for (name, filter) in [("source", Filter::None), ("binary", Filter::X86)] {
        let data = input(name, BLOCK);
        let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).expect("encoder");
        let mut dec = BlockDecoder::new().expect("decoder");
        let mut payload = Vec::new();
        let mut out = Vec::new();
        g.bench_function(format!("{name}/encode+seal"), |b| {
            b.iter(|| {
                enc.encode(black_box(&data), filter, 0, &mut payload)
                    .expect("encode");
                sealed.seal_frame(&ID, &HEADER, 7, &mut payload)
            })
        });
        let (codec, f) = enc.encode(&data, filter, 0, &mut payload).expect("encode");
        let clear = payload.clone();
        let tag = sealed.seal_frame(&ID, &HEADER, 7, &mut payload);
        let sealed_payload = payload.clone();
        g.bench_function(format!("{name}/open+decode"), |b| {
            b.iter(|| {
                payload.copy_from_slice(&sealed_payload);
                sealed
                    .open_frame(&ID, &HEADER, 7, black_box(&mut payload), &tag)
                    .expect("open");
                dec.decode(codec, f, 0, &payload, data.len(), &mut out)
                    .expect("decode")
            })
        });
        assert_eq!(payload, clear);
    }
    g.finish();
}

fn write_archive(path: &std::path::Path, data: &[u8], key: Option<&SymmetricKey>) {
    let mut opts = WriteOptions::new();
    opts.bcj = BcjMode::Auto;
    if let Some(k) = key {
        opts.recipients = vec![Recipient::KeyFile(k.clone())];
    }
    let file = std::fs::File::create(path).expect("create");
    let mut w = ArchiveWriter::new(std::io::BufWriter::new(file), path, opts).expect("writer");
    let meta = EntryMeta {
        path: b"data".to_vec(),
        kind: EntryKind::File,
        mode: 0o644,
        mtime: Timestamp { secs: 0, nanos: 0 },
        uid: 0,
        gid: 0,
        link: Vec::new(),
        ..Default::default()
    };
    w.add_file(&meta, &mut ReaderSource::new(data, "data"))
        .expect("add");
    w.finish().expect("finish");
}

fn archive(c: &mut Criterion) {
    let mut g = c.benchmark_group("archive-16MiB");
    g.throughput(Throughput::Bytes(ARCHIVE as u64))
        .sample_size(10);
    let data = input("source", ARCHIVE);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("b.kry");
    let key = SymmetricKey::from_bytes([4; 32]);
    for (name, k) in [("plain", None), ("keyfile", Some(&key))] {
        g.bench_function(format!("{name}/write"), |b| {
            b.iter(|| write_archive(&path, black_box(&data), k))
        });
        write_archive(&path, &data, k);
        g.bench_function(format!("{name}/test"), |b| {
            b.iter(|| {
                let opts = OpenOptions {
                    identities: k
                        .map(|k| vec![Identity::KeyFile(k.clone())])
                        .unwrap_or_default(),
                    jobs: 0,
                    ..OpenOptions::default()
                };
                krypta::test(&path, opts, &mut krypta::Collect::default()).expect("test")
            })
        });
    }
    g.finish();
}

fn alternatives(c: &mut Criterion) {
    use ring::aead::{AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
    let mut g = c.benchmark_group("alternatives-4MiB");
    g.throughput(Throughput::Bytes(BLOCK as u64));
    let mut buf = input("source", BLOCK);
    g.bench_function("blake3", |b| {
        b.iter(|| krypta::crypto::primitives::blake3_hash(black_box(&buf)))
    });
    g.bench_function("sha256", |b| {
        b.iter(|| krypta::crypto::primitives::sha256(black_box(&buf)))
    });
    for (name, alg) in [
        ("aes256-gcm-ring", &AES_256_GCM),
        ("chacha20-poly1305-ring", &CHACHA20_POLY1305),
    ] {
        let key = LessSafeKey::new(UnboundKey::new(alg, &[7; 32]).expect("key"));
        g.bench_function(name, |b| {
            b.iter(|| {
                // A fixed nonce: a speed test only, never a pattern for real sealing.
                let nonce = Nonce::assume_unique_for_key([0; 12]);
                key.seal_in_place_separate_tag(nonce, Aad::empty(), black_box(&mut buf))
                    .expect("seal")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, block_path, archive, alternatives);
criterion_main!(benches);
