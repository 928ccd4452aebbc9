//! Criterion benchmarks of the codec stages on one 4 MiB block: BCJ x86 encode/decode and
//! block encode/decode at levels 1, 3 and 9. Input: 4 MiB from the middle of `/usr/bin`'s
//! biggest readable ELF file, or deterministic synthetic code when none is found.
//!
//! `cargo bench --bench codec`

// `criterion_group!` generates an undocumented `pub fn benches()`.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use krypta::codec::{BlockDecoder, BlockEncoder, Filter, Level, bcj};

const BLOCK: usize = 4 << 20;

fn input() -> Vec<u8> {
    let biggest = std::fs::read_dir("/usr/bin")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.metadata().ok()?.len(), e.path())))
        .max();
    let best = biggest
        .and_then(|(_, p)| std::fs::read(p).ok())
        .filter(|d| d.starts_with(b"\x7fELF"));
    match best {
        Some(data) if data.len() >= BLOCK => {
            let mid = (data.len() - BLOCK) / 2;
            data[mid..mid + BLOCK].to_vec()
        }
        _ => (0..BLOCK as u32)
            .map(|i| match i % 11 {
                0 => 0xE8,
                1 => (i >> 8) as u8,
                _ => (i % 251) as u8,
            })
            .collect(),
    }
}

fn bench_bcj(c: &mut Criterion) {
    let data = input();
    let mut g = c.benchmark_group("bcj");
    g.throughput(Throughput::Bytes(data.len() as u64))
        .sample_size(10);
    let mut buf = data.clone();
    g.bench_function("x86_encode_4MiB", |b| {
        b.iter(|| bcj::encode(Filter::X86, black_box(&mut buf), 0))
    });
    g.bench_function("x86_decode_4MiB", |b| {
        b.iter(|| bcj::decode(Filter::X86, black_box(&mut buf), 0))
    });
    g.finish();
}

fn bench_block(c: &mut Criterion) {
    let data = input();
    let mut g = c.benchmark_group("block");
    g.throughput(Throughput::Bytes(data.len() as u64))
        .sample_size(10);
    for l in [1u8, 3, 9] {
        let level = Level::new(l).expect("level");
        let mut enc = BlockEncoder::new(Some(level)).expect("encoder");
        let mut payload = Vec::new();
        g.bench_function(format!("encode_l{l}_x86_4MiB"), |b| {
            b.iter(|| {
                enc.encode(black_box(&data), Filter::X86, 0, &mut payload)
                    .expect("encode")
            })
        });
        let (codec, filter) = enc
            .encode(&data, Filter::X86, 0, &mut payload)
            .expect("encode");
        let mut dec = BlockDecoder::new().expect("decoder");
        let mut out = Vec::new();
        g.bench_function(format!("decode_l{l}_x86_4MiB"), |b| {
            b.iter(|| {
                dec.decode(codec, filter, 0, black_box(&payload), data.len(), &mut out)
                    .expect("decode")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_bcj, bench_block);
criterion_main!(benches);
