//! Timings of the pq-box operations (ignored by default; run in release):
//! `cargo test --release --test pqbox_timing -- --ignored --nocapture`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use krypta::crypto::keys::FileKey;
use krypta::crypto::pqbox::{self, SecretKey};

/// Median and minimum of `runs` timed calls of `f`, after 20 warm-up calls.
fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, Duration) {
    for _ in 0..20 {
        black_box(f());
    }
    let mut t: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed()
        })
        .collect();
    t.sort();
    (t[runs / 2], t[0])
}

#[test]
#[ignore = "timing; run in release with --ignored --nocapture"]
fn pqbox_operation_timings() {
    let runs = 1001;
    let sk = SecretKey::generate().unwrap();
    let pk = sk.public_key();
    let fk = FileKey::from_bytes([7; 32]);
    let id = [9u8; 16];
    let stanza = pqbox::seal(&pk, &fk, &id).unwrap();
    let sk_bytes = sk.to_bytes();
    let pk_bytes = pk.to_bytes();
    let rows = [
        (
            "keygen (generate + public_key)",
            time(runs, || SecretKey::generate().unwrap().public_key()),
        ),
        (
            "secret key from 96 bytes",
            time(runs, || SecretKey::from_bytes(&sk_bytes)),
        ),
        (
            "public key from 1216 bytes",
            time(runs, || pqbox::PublicKey::from_bytes(&pk_bytes).unwrap()),
        ),
        ("seal", time(runs, || pqbox::seal(&pk, &fk, &id).unwrap())),
        (
            "open",
            time(runs, || pqbox::open(&sk, &stanza, &id).unwrap()),
        ),
    ];
    println!("{runs} runs each; median / min, microseconds");
    for (name, (median, min)) in rows {
        println!(
            "{name:34} {:8.1} {:8.1}",
            median.as_secs_f64() * 1e6,
            min.as_secs_f64() * 1e6
        );
    }
    let mut framed = Vec::new();
    stanza.write(&mut framed);
    println!(
        "stanza: body {} bytes, framed {} bytes",
        stanza.body().len(),
        framed.len()
    );
}
