//! Criterion benchmarks of the crypto stage: AES-256-CTR, HMAC-SHA256, frame seal/open
//! (sealed and plain) on 4 MiB bodies, and the password KDFs at their defaults.
//! Run: `cargo bench --bench crypto`.

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

use krypta::crypto::argon2_memory::Argon2Memory;
use krypta::crypto::kdf::{
    ARGON2ID_DEFAULT_M_KIB, ARGON2ID_DEFAULT_P, ARGON2ID_DEFAULT_T, PBKDF2_DEFAULT_ITERATIONS,
};
use krypta::crypto::primitives::{
    aes256_ctr_apply, argon2id, argon2id_in, hmac_sha256, pbkdf2_hmac_sha256,
};
use krypta::crypto::{FileKey, Protection, Subkeys};

/// Body size of the throughput benchmarks: the default block size.
const LEN: usize = 4 << 20;
const ID: [u8; 16] = [3; 16];
const HEADER: [u8; 16] = [1, 0, 0, 0, 0x10, 0, 0x40, 0, 7, 0, 0, 0, 0, 0, 0, 0];

fn primitives(c: &mut Criterion) {
    let mut g = c.benchmark_group("primitives-4MiB");
    g.throughput(Throughput::Bytes(LEN as u64));
    let mut buf = vec![0x5a; LEN];
    g.bench_function("aes256-ctr", |b| {
        b.iter(|| aes256_ctr_apply(&[1; 32], &[0; 16], black_box(&mut buf)))
    });
    g.bench_function("hmac-sha256", |b| {
        b.iter(|| hmac_sha256(&[1; 32], &[black_box(&buf)]))
    });
    g.finish();
}

fn frames(c: &mut Criterion) {
    let mut g = c.benchmark_group("frame-4MiB");
    g.throughput(Throughput::Bytes(LEN as u64));
    let sealed = Protection::Sealed(Box::new(Subkeys::derive(
        &FileKey::from_bytes([1; 32]),
        &ID,
    )));
    let mut buf = vec![0x5a; LEN];
    for (name, p) in [("sealed", &sealed), ("plain", &Protection::Plain)] {
        g.bench_function(format!("{name}/seal"), |b| {
            b.iter(|| p.seal_frame(&ID, &HEADER, 7, black_box(&mut buf)))
        });
        g.bench_function(format!("{name}/seal+open"), |b| {
            b.iter(|| {
                let tag = p.seal_frame(&ID, &HEADER, 7, &mut buf);
                p.open_frame(&ID, &HEADER, 7, black_box(&mut buf), &tag)
            })
        });
    }
    g.finish();
}

fn kdfs(c: &mut Criterion) {
    let mut g = c.benchmark_group("kdf-defaults");
    g.sample_size(10);
    let mut out = [0u8; 32];
    g.bench_function("argon2id", |b| {
        b.iter(|| {
            argon2id(
                b"password",
                &[7; 16],
                ARGON2ID_DEFAULT_M_KIB,
                ARGON2ID_DEFAULT_T,
                ARGON2ID_DEFAULT_P,
                &[],
                &[],
                &mut out,
            )
        })
    });
    // The matrix mapped once and reused, as a reader trying several passwords does: the
    // difference to "argon2id" is the cost of mapping and faulting 256 MiB.
    let mut memory = Argon2Memory::new();
    g.bench_function("argon2id-reused-matrix", |b| {
        b.iter(|| {
            argon2id_in(
                &mut memory,
                b"password",
                &[7; 16],
                ARGON2ID_DEFAULT_M_KIB,
                ARGON2ID_DEFAULT_T,
                ARGON2ID_DEFAULT_P,
                &[],
                &[],
                &mut out,
            )
        })
    });
    g.bench_function("pbkdf2", |b| {
        b.iter(|| pbkdf2_hmac_sha256(b"password", &[7; 16], PBKDF2_DEFAULT_ITERATIONS, &mut out))
    });
    g.finish();
}

criterion_group!(benches, primitives, frames, kdfs);
criterion_main!(benches);
