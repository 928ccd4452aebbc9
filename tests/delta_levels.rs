//! Issue 17: the level is the size/speed dial of a delta block (docs/FORMAT.md §16.3,
//! `Level::delta_hash_log`, `DELTA_LDM_MIN_MATCH`). These hold the two choices measured on
//! the real pairs: long-distance matches from 48 bytes (zstd's default, 64, misses them), and
//! hash tables that grow with the level (2^17 at the default, 2^20 at 5), so each level finds
//! more of a multi-MiB region than the one below it.

use krypta::codec::{BlockEncoder, Level};

/// Deterministic bytes that do not compress (xorshift64*).
fn noise(len: usize, mut s: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        v.extend_from_slice(&s.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    v.truncate(len);
    v
}

/// A block of `len` bytes made of `piece`-byte copies from pseudo-random places of `region`,
/// each followed by 8 new random bytes: what a delta's matches look like when they are short.
fn pieces_of(region: &[u8], len: usize, piece: usize, seed: u64) -> Vec<u8> {
    let picks = noise(len, seed);
    let filler = noise(len, seed ^ 0x5555);
    let mut out = Vec::with_capacity(len + piece + 8);
    let mut k = 0;
    while out.len() < len {
        let r = u64::from_le_bytes(picks[k % (len - 8)..][..8].try_into().unwrap());
        let at = (r % (region.len() - piece) as u64) as usize;
        out.extend_from_slice(&region[at..at + piece]);
        out.extend_from_slice(&filler[k % (len - 8)..][..8]);
        k += 8;
    }
    out.truncate(len);
    out
}

/// The delta frame of `raw` against `region` at `level`, checked to decode back to `raw`
/// with the region as its prefix; `None` when the encoder found it not worth a delta.
fn delta(level: u8, raw: &[u8], region: &[u8]) -> Option<usize> {
    let mut enc = BlockEncoder::new(Some(Level::new(level).unwrap())).unwrap();
    let mut out = Vec::new();
    if !enc.encode_against(raw, region, &mut out).unwrap() {
        return None;
    }
    let mut d = zstd::zstd_safe::DCtx::create();
    d.set_parameter(zstd::zstd_safe::DParameter::WindowLogMax(29))
        .unwrap();
    d.ref_prefix(region).unwrap();
    let mut back = vec![0u8; raw.len()];
    let n = d.decompress(&mut back[..], &out).unwrap();
    assert_eq!(n, raw.len());
    assert!(
        back == raw,
        "level {level}: the delta frame decodes to other bytes"
    );
    Some(out.len())
}

#[test]
fn long_distance_matches_under_64_bytes_are_taken() {
    let region = noise(6 << 20, 1);
    // 80 of every 88 bytes are a copy from somewhere in 6 MiB of noise: at level 1's tables
    // only the long-distance matcher sees them, and it tries one position in about 128 (a
    // content-defined sample), so a copy is found when a sampled position has a whole
    // minimum match after it inside the copy: 33 chances of 80 at zstd's minimum of 64 (the
    // frame is 927,811 bytes), 49 at 48 (842,207 bytes).
    let raw = pieces_of(&region, 1 << 20, 80, 2);
    let l1 = delta(1, &raw, &region).expect("level 1 finds matches");
    assert!(
        l1 < raw.len() * 85 / 100,
        "level 1: {l1} bytes for {} (matches under 64 bytes missed)",
        raw.len()
    );
}

#[test]
fn each_level_step_finds_more_of_a_large_region() {
    let region = noise(6 << 20, 3);
    // 24-byte matches: under the long-distance matcher's minimum, so only the hash table
    // finds them, and a larger table remembers more of the region.
    let raw = pieces_of(&region, 1 << 20, 24, 4);
    let size = |l| delta(l, &raw, &region).unwrap_or(raw.len());
    let (l1, l3, l5, l7) = (size(1), size(3), size(5), size(7));
    assert!(l3 < l1, "default {l3} bytes, level 1 {l1}");
    assert!(l5 < l3 * 9 / 10, "level 5 {l5} bytes, default {l3}");
    assert!(l7 <= l5, "level 7 {l7} bytes, level 5 {l5}");
    assert!(
        l7 < raw.len() / 2,
        "level 7 {l7} bytes: the region is not indexed"
    );
}
