//! Prints the SHA-256 speed (MB/s, 10^6 bytes per second; median of 5 runs over 64 MB) of the
//! `sha2` crate as built: with `--cfg sha2_backend="soft"` it is the portable backend.

use sha2::{Digest, Sha256};

fn main() {
    let data = vec![0x5au8; 64_000_000];
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let t = std::time::Instant::now();
            std::hint::black_box(Sha256::digest(std::hint::black_box(&data)));
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!("{:.0}", 64.0 / times[2]);
}
