//! Round trips of the `diff+base` encoder over generated shapes of region and block: the
//! edges of the scanner (regions empty or shorter than a key, blocks of 32..200 bytes,
//! self-overlapping copies, periodic data) and of the command writer (a block equal to,
//! reversed from, before or after the region's content). Each payload must decode to the
//! block exactly: one that does not is written another way by the archive writer, silently
//! in a release build.

use super::Effort;
use super::decode::{DiffBufs, decode};
use super::encode::DiffEncoder;
use super::tests::rng as next;

/// `n` random bytes (`seed` 0 is taken as 1: xorshift stays at 0).
fn random(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n).map(|_| next(&mut s) as u8).collect()
}

/// `n` bytes repeating a random pattern of `period` bytes.
fn periodic(n: usize, period: usize, seed: u64) -> Vec<u8> {
    let p = random(period, seed);
    (0..n).map(|i| p[i % period]).collect()
}

/// Text of many repeated lines (a log, a listing): few distinct lines, in varying order.
fn lines(n: usize, seed: u64) -> Vec<u8> {
    let pool = [
        "    return 0;\n",
        "        }\n",
        "INFO request served in 3 ms\n",
        "WARN retrying connection to db-01\n",
        "/usr/share/doc/libc6/changelog.Debian.gz\n",
        "\n",
    ];
    let mut s = seed | 1;
    let mut out = Vec::with_capacity(n + 64);
    while out.len() < n {
        out.extend_from_slice(pool[(next(&mut s) % pool.len() as u64) as usize].as_bytes());
    }
    out.truncate(n);
    out
}

/// Encodes `raw` against `region` with `enc` (both level sets), decodes, and asserts the
/// bytes come back exactly.
fn check(enc: &mut DiffEncoder, bufs: &mut DiffBufs, name: &str, raw: &[u8], region: &[u8]) {
    let mut payload = Vec::new();
    let mut out = Vec::new();
    for effort in Effort::ALL {
        enc.encode(raw, region, effort, &mut payload)
            .unwrap_or_else(|e| panic!("{name} ({effort:?}): encode: {e}"));
        decode(bufs, &payload, region, raw.len(), &mut out).unwrap_or_else(|e| {
            panic!(
                "{name} ({effort:?}, block {}, region {}): {e}",
                raw.len(),
                region.len()
            )
        });
        assert!(out == raw, "{name} ({effort:?}): decoded bytes differ");
    }
}

/// The block lengths around the scanner's edges: under 32 (no scan), 32..=200 (keys but
/// hardly a window), and a few larger.
const LENS: [usize; 16] = [
    0, 1, 23, 24, 31, 32, 33, 63, 64, 65, 88, 89, 100, 150, 200, 5000,
];

/// Shapes of (region, block) built from one generated base `b` of `n` bytes.
fn shapes(b: &[u8], seed: u64) -> Vec<(&'static str, Vec<u8>, Vec<u8>)> {
    let n = b.len();
    let rev: Vec<u8> = b.iter().rev().copied().collect();
    let junk = random(n.max(1) * 2 + 40, seed ^ 0x55);
    let with = |front: &[u8], mid: &[u8], back: &[u8]| [front, mid, back].concat();
    vec![
        ("empty region", Vec::new(), b.to_vec()),
        ("region == block", b.to_vec(), b.to_vec()),
        ("block = region reversed", b.to_vec(), rev),
        ("region a prefix", b[..n / 2].to_vec(), b.to_vec()),
        ("region of 7 bytes", b[..n.min(7)].to_vec(), b.to_vec()),
        ("region of 23 bytes", b[..n.min(23)].to_vec(), b.to_vec()),
        ("insertion at start", b.to_vec(), with(&junk[..17], b, &[])),
        ("insertion at end", b.to_vec(), with(&[], b, &junk[..17])),
        ("content at region end", with(&junk, b, &[]), b.to_vec()),
        ("content at region start", with(&[], b, &junk), b.to_vec()),
        ("block twice", b.to_vec(), with(b, b, &[])),
        ("block doubled, empty region", Vec::new(), with(b, b, &[])),
        ("unrelated region", junk[..n / 2 + 1].to_vec(), b.to_vec()),
    ]
}

#[test]
fn generated_shapes_round_trip_exactly() {
    let mut enc = DiffEncoder::default();
    let mut bufs = DiffBufs::default();
    let mut cases = 0;
    for (seed, &n) in LENS.iter().enumerate() {
        let seed = seed as u64 + 1;
        let mut bases = vec![
            ("random", random(n, seed)),
            ("zeros", vec![0u8; n]),
            ("one byte", vec![0xA7u8; n]),
            ("lines", lines(n, seed)),
        ];
        for period in [1, 2, 3, 5, 7, 8, 13, 24, 31, 32, 63, 64] {
            bases.push(("periodic", periodic(n, period, seed + period as u64)));
        }
        for (kind, b) in &bases {
            for (shape, region, raw) in shapes(b, seed) {
                let name = format!("{kind} {n}: {shape}");
                check(&mut enc, &mut bufs, &name, &raw, &region);
                cases += 1;
            }
        }
    }
    assert_eq!(cases, LENS.len() * 16 * 13);
}

/// Long runs of one byte in block and region (copies that overlap their own output), with
/// a changed byte now and then so that the scanner switches alignment inside a run.
#[test]
fn runs_of_one_byte_round_trip_exactly() {
    let mut enc = DiffEncoder::default();
    let mut bufs = DiffBufs::default();
    for (k, &n) in [32usize, 33, 100, 200, 4096, 100_000].iter().enumerate() {
        for region_len in [0usize, 1, 5, 24, 25, 300] {
            let region = vec![b'='; region_len];
            let mut raw = vec![b'='; n];
            check(&mut enc, &mut bufs, "all one byte", &raw, &region);
            for i in (k..n).step_by(37 + k) {
                raw[i] = b'-';
            }
            check(&mut enc, &mut bufs, "one byte with dashes", &raw, &region);
            let runs: Vec<u8> = (0..n).map(|i| [b'a', b'b'][(i / 50) % 2]).collect();
            check(&mut enc, &mut bufs, "runs of 50", &runs, &region);
        }
    }
}

/// Random mixtures of pieces of the region, of the block so far, of runs and of new bytes,
/// over many region and block lengths including the empty region and tiny blocks.
#[test]
fn random_mixtures_round_trip_exactly() {
    let mut enc = DiffEncoder::default();
    let mut bufs = DiffBufs::default();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for case in 0..600 {
        let region_len = [0, 1, 3, 23, 24, 25, 64, 200, 3000][case % 9];
        let block_len = 32 + (next(&mut seed) % 169) as usize;
        let region: Vec<u8> = match case % 4 {
            0 => random(region_len, next(&mut seed)),
            1 => periodic(region_len, 1 + case % 64, next(&mut seed)),
            2 => lines(region_len, next(&mut seed)),
            _ => vec![(case % 3) as u8; region_len],
        };
        let mut raw = Vec::with_capacity(block_len);
        while raw.len() < block_len {
            let len = 1 + (next(&mut seed) % 40) as usize;
            match next(&mut seed) % 4 {
                0 if region_len > 0 => {
                    let at = (next(&mut seed) as usize) % region_len;
                    raw.extend_from_slice(&region[at..(at + len).min(region_len)]);
                }
                1 if !raw.is_empty() => {
                    let at = (next(&mut seed) as usize) % raw.len();
                    let piece = raw[at..(at + len).min(raw.len())].to_vec();
                    raw.extend_from_slice(&piece);
                }
                2 => raw.extend(std::iter::repeat_n(next(&mut seed) as u8, len)),
                _ => raw.extend_from_slice(&random(len, next(&mut seed))),
            }
        }
        raw.truncate(block_len);
        check(
            &mut enc,
            &mut bufs,
            &format!("mixture {case}"),
            &raw,
            &region,
        );
    }
}

/// Regression: against an empty region the first alignment (region byte 0 for block byte 0)
/// has no source, yet the encoder copied the block's first bytes from there, a payload the
/// decoder refuses ("reads source byte 0, but only 0 exist"). The format's regions are never
/// empty (§16.2), so the writer never hit it; the encoder now adds those bytes as extra.
#[test]
fn empty_region_block_starts_with_extra_bytes_not_a_copy_of_itself() {
    let mut enc = DiffEncoder::default();
    let mut bufs = DiffBufs::default();
    for raw in [
        b"x".to_vec(),
        vec![7u8; 31],
        vec![7u8; 32],
        random(100, 3),
        lines(10_000, 4),
    ] {
        check(&mut enc, &mut bufs, "empty region", &raw, &[]);
    }
}

/// Every seek between two positions of the longest `S` searched is a format number once
/// zigzag-coded (below 2^32), so no block the scanner searches gets a seek the decoder
/// refuses as "over 32 bits".
#[test]
fn longest_searched_join_keeps_every_seek_a_format_number() {
    let far = super::scan::MAX_JOINED as i64 - 1;
    assert_eq!(super::zigzag(-far), u64::from(u32::MAX) - 2);
    assert_eq!(super::zigzag(far), u64::from(u32::MAX) - 1);
    // One byte more would not fit: the bound is the largest that does.
    assert_eq!(super::zigzag(far + 1), u64::from(u32::MAX) + 1);
}

/// A block of the largest size the writer diffs (8 MiB) against a region of the same size
/// with scattered substitutions, an insertion and a deletion.
#[test]
fn block_of_the_largest_diffed_size_round_trips_exactly() {
    let region = random(8 << 20, 9);
    let mut raw = region.clone();
    for i in (11..raw.len()).step_by(4099) {
        raw[i] = raw[i].wrapping_add(3);
    }
    raw.splice(1 << 20..1 << 20, random(777, 10));
    raw.drain(5 << 20..(5 << 20) + 777);
    assert_eq!(raw.len(), 8 << 20);
    check(
        &mut DiffEncoder::default(),
        &mut DiffBufs::default(),
        "8 MiB",
        &raw,
        &region,
    );
}
