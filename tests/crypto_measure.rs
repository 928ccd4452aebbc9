//! Timings of the KDFs and the frame primitives on this machine (release build, one thread).
//! Ignored by default: run `cargo test --release --test crypto_measure -- --ignored --nocapture`.

use std::time::Instant;

use krypta::crypto::primitives::{aes256_ctr_apply, argon2id, hmac_sha256, pbkdf2_hmac_sha256};
use krypta::crypto::{FileKey, Protection, Subkeys};

/// CPU time this thread has run, seconds (Linux `/proc/thread-self/schedstat`, first field,
/// nanoseconds); 0 where unavailable. Unlike wall time it is not inflated when other
/// processes compete for the cores (memory bandwidth contention still shows).
fn thread_cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// Medians of `runs` timings of `f`: (wall seconds, thread CPU seconds).
fn median_secs(runs: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut wall = Vec::with_capacity(runs);
    let mut cpu = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (s, c) = (Instant::now(), thread_cpu_secs());
        f();
        wall.push(s.elapsed().as_secs_f64());
        cpu.push(thread_cpu_secs() - c);
    }
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    (wall[runs / 2], cpu[runs / 2])
}

/// Like [`median_secs`], each sample running `f` `reps` times.
fn median_secs_reps(runs: usize, reps: usize, mut f: impl FnMut()) -> (f64, f64) {
    median_secs(runs, || {
        for _ in 0..reps {
            f();
        }
    })
}

/// Prints one throughput line: MB/s by wall time and by CPU time, for samples of `reps`
/// operations on `bytes` each.
fn rate_reps(reps: usize, name: &str, bytes: usize, (wall, cpu): (f64, f64)) {
    let mb = (reps * bytes) as f64 / 1e6;
    println!(
        "{name}: {:.0} MB/s wall, {:.0} MB/s cpu",
        mb / wall,
        mb / cpu
    );
}

#[test]
#[ignore = "timing report, run by hand in release mode"]
fn report_argon2id_timings_per_memory_and_iterations() {
    let mut out = [0u8; 32];
    for m_mib in [64u32, 128, 256] {
        for t in [2u32, 3, 4] {
            let (wall, cpu) = median_secs(3, || {
                argon2id(
                    b"password",
                    &[7; 16],
                    m_mib * 1024,
                    t,
                    1,
                    &[],
                    &[],
                    &mut out,
                )
                .unwrap()
            });
            println!("argon2id m={m_mib:>3} MiB t={t} p=1: {wall:.3} s wall, {cpu:.3} s cpu");
        }
    }
}

#[test]
#[ignore = "timing report, run by hand in release mode"]
fn report_pbkdf2_600k_timing() {
    let mut out = [0u8; 32];
    let (wall, cpu) = median_secs(3, || {
        pbkdf2_hmac_sha256(b"password", &[7; 16], 600_000, &mut out)
    });
    println!("pbkdf2-hmac-sha256 600000 iterations: {wall:.3} s wall, {cpu:.3} s cpu");
}

#[test]
#[ignore = "timing report, run by hand in release mode"]
fn report_cipher_mac_and_frame_throughput_on_4_mib() {
    const LEN: usize = 4 << 20;
    const RUNS: usize = 9;
    // Each sample repeats the operation REPS times (32 MiB), so the scheduler-tick
    // granularity of the CPU clock stays well under the sample time.
    const REPS: usize = 8;
    let mut buf = vec![0x5au8; LEN];
    let key = [1u8; 32];
    rate_reps(
        REPS,
        "aes-256-ctr",
        LEN,
        median_secs_reps(RUNS, REPS, || aes256_ctr_apply(&key, &[0; 16], &mut buf)),
    );
    rate_reps(
        REPS,
        "hmac-sha256",
        LEN,
        median_secs_reps(RUNS, REPS, || {
            std::hint::black_box(hmac_sha256(&key, &[&buf]));
        }),
    );
    rate_reps(
        REPS,
        "blake3 (1 thread)",
        LEN,
        median_secs_reps(RUNS, REPS, || {
            std::hint::black_box(blake3::hash(&buf));
        }),
    );
    let id = [3u8; 16];
    let hdr = [0u8; 16];
    let sealed = Protection::Sealed(Box::new(Subkeys::derive(&FileKey::from_bytes(key), &id)));
    for (name, p) in [("sealed", &sealed), ("plain", &Protection::Plain)] {
        let seal = median_secs_reps(RUNS, REPS, || {
            std::hint::black_box(p.seal_frame(&id, &hdr, 1, &mut buf));
        });
        rate_reps(REPS, &format!("seal_frame ({name})"), LEN, seal);
        let both = median_secs_reps(RUNS, REPS, || {
            let tag = p.seal_frame(&id, &hdr, 1, &mut buf);
            p.open_frame(&id, &hdr, 1, &mut buf, &tag).unwrap();
        });
        rate_reps(
            REPS,
            &format!("seal_frame+open_frame ({name}, MB of body per seal+open)"),
            LEN,
            both,
        );
    }
}
