//! Timings of the KDFs and the frame primitives on this machine (release build, one thread).
//! Ignored by default: run `cargo test --release --test crypto_measure -- --ignored --nocapture`.

use std::time::Instant;

use krypta::crypto::primitives::{aes256_ctr_apply, argon2id, hmac_sha256, pbkdf2_hmac_sha256};
use krypta::crypto::{FileKey, Protection, Subkeys};

/// Median of `runs` timings of `f`, seconds.
fn median_secs(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[runs / 2]
}

#[test]
#[ignore = "timing report, run by hand in release mode"]
fn report_argon2id_timings_per_memory_and_iterations() {
    let mut out = [0u8; 32];
    for m_mib in [64u32, 128, 256] {
        for t in [2u32, 3, 4] {
            let s = median_secs(3, || {
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
            println!("argon2id m={m_mib:>3} MiB t={t} p=1: {s:.3} s");
        }
    }
}

#[test]
#[ignore = "timing report, run by hand in release mode"]
fn report_pbkdf2_600k_timing() {
    let mut out = [0u8; 32];
    let s = median_secs(3, || {
        pbkdf2_hmac_sha256(b"password", &[7; 16], 600_000, &mut out)
    });
    println!("pbkdf2-hmac-sha256 600000 iterations: {s:.3} s");
}

#[test]
#[ignore = "timing report, run by hand in release mode"]
fn report_cipher_mac_and_frame_throughput_on_4_mib() {
    const LEN: usize = 4 << 20;
    let mb = LEN as f64 / 1e6;
    let mut buf = vec![0x5au8; LEN];
    let key = [1u8; 32];
    let s = median_secs(15, || aes256_ctr_apply(&key, &[0; 16], &mut buf));
    println!("aes-256-ctr: {:.0} MB/s", mb / s);
    let s = median_secs(15, || {
        std::hint::black_box(hmac_sha256(&key, &[&buf]));
    });
    println!("hmac-sha256: {:.0} MB/s", mb / s);
    let s = median_secs(15, || {
        std::hint::black_box(blake3::hash(&buf));
    });
    println!("blake3 (1 thread): {:.0} MB/s", mb / s);
    let id = [3u8; 16];
    let p = Protection::Sealed(Box::new(Subkeys::derive(&FileKey::from_bytes(key), &id)));
    let hdr = [0u8; 16];
    let s = median_secs(15, || {
        let tag = p.seal_frame(&id, &hdr, 1, &mut buf);
        p.open_frame(&id, &hdr, 1, &mut buf, &tag).unwrap();
    });
    println!("seal_frame+open_frame (sealed): {:.0} MB/s", mb / s);
    let s = median_secs(15, || {
        let tag = p.seal_frame(&id, &hdr, 1, &mut buf);
        std::hint::black_box(tag);
    });
    println!("seal_frame alone (sealed): {:.0} MB/s", mb / s);
    let plain = Protection::Plain;
    let s = median_secs(15, || {
        let tag = plain.seal_frame(&id, &hdr, 1, &mut buf);
        plain.open_frame(&id, &hdr, 1, &mut buf, &tag).unwrap();
    });
    println!("seal_frame+open_frame (plain): {:.0} MB/s", mb / s);
}
