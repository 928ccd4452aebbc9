//! Recovery data against hostile and random input: crafted sections, packets of an archive
//! stored inside the archive, garbage, and a seeded mutation loop (the replay companion of
//! `fuzz/fuzz_targets/recovery.rs`). Nothing may panic, and no repair may ever return a
//! byte that differs from the original while claiming success.

mod recovery_common;

use krypta::recovery::{
    Locate, PACKET_LEN, RecoveryError, RepairOptions, TRAILER_LEN, locate, parse_structures,
    repair_range, repair_segment, repair_to, verify, xxh3,
};
use recovery_common::*;

fn scan() -> Locate {
    Locate {
        protected_len: None,
        scan: true,
    }
}

#[test]
fn garbage_and_short_sources_have_no_recovery_data() {
    for len in [0usize, 1, 79, 80, 4095, 4096, 4096 + 80, 100_000] {
        let g = bytes(len, len as u64);
        assert!(
            matches!(locate(&g[..], &scan()), Err(RecoveryError::NotFound { len: l }) if l == len as u64)
        );
    }
    // Magic at every aligned offset, wrong checksums.
    let mut g = vec![0u8; 64 * 4096];
    for o in (0..g.len()).step_by(4096) {
        g[o..o + 8].copy_from_slice(b"\x89KRYREC\n");
    }
    assert!(locate(&g[..], &scan()).is_err());
}

#[test]
fn packets_of_an_archive_stored_inside_are_never_taken_for_the_outer_ones() {
    let inner = protect(&bytes(100_000, 1), &opts(5, 4096, 16));
    let mut outer_p = bytes(5000, 2);
    outer_p.extend_from_slice(&inner);
    outer_p.extend_from_slice(&bytes(3000, 3));
    let outer = protect(&outer_p, &opts(5, 4096, 16));
    let lay = found(&outer).layout;
    assert_eq!(lay.params.protected_len, outer_p.len() as u64);
    // Destroy the outer section entirely: the inner packets (at the wrong offsets for their
    // own parameters) must not be found.
    let mut d = outer.clone();
    d[lay.copy_a as usize..].fill(0);
    assert!(matches!(
        locate(&d[..], &scan()),
        Err(RecoveryError::NotFound { .. })
    ));
    // Only copy B left: the scan finds the outer section, not the inner one.
    let mut d = outer.clone();
    d[lay.copy_a as usize..lay.recovery_start as usize].fill(0);
    let n = d.len();
    d[n - TRAILER_LEN..].fill(0);
    assert_eq!(found(&d).layout, lay);
}

/// Rewrites table entry `entry` (u64 index) in both copies with `value`, re-sealing packets.
fn forge_checksum(file: &mut [u8], entry: u64, value: u64) {
    let lay = found(file).layout;
    let (pi, rel) = (entry * 8 / 4008, (entry * 8 % 4008) as usize);
    for c in 0..2 {
        let off = lay.packet_offset(c, pi) as usize;
        let pk = &mut file[off..off + PACKET_LEN];
        pk[80 + rel..88 + rel].copy_from_slice(&value.to_le_bytes());
        let sum = xxh3(&pk[..PACKET_LEN - 8]);
        pk[PACKET_LEN - 8..].copy_from_slice(&sum.to_le_bytes());
    }
}

#[test]
fn a_forged_recovery_shard_with_a_forged_checksum_yields_an_error_not_wrong_bytes() {
    let p = bytes(300_000, 4);
    let mut file = protect(&p, &opts(10, 4096, 256));
    let lay = found(&file).layout;
    let seg = lay.segment(0);
    // Recovery shard 0 replaced, and its checksum in both copies made to match.
    let r0 = seg.recovery_offset as usize;
    file[r0..r0 + 4096].fill(0x42);
    let forged = xxh3(&file[r0..r0 + 4096]);
    forge_checksum(&mut file, seg.data_shards, forged);
    // Damage one data shard: the rebuild uses the forged shard and fails the data checksum.
    file[10] ^= 1;
    let loc = found(&file);
    let e = repair_segment(&file[..], &loc, 0).unwrap_err();
    assert!(
        matches!(
            e,
            RecoveryError::Inconsistent {
                segment: 0,
                shard: 0
            }
        ),
        "{e}"
    );
    assert!(repair_range(&file[..], &loc, 0, 100).is_err());
    assert!(repair_to(&file[..], &loc, Vec::new(), &RepairOptions::default()).is_err());
}

#[test]
fn a_section_claiming_more_than_the_file_holds_is_bounded_by_the_file() {
    // A self-consistent trailer for L = 2^40 cannot end a small file; copy-A packets for it
    // would lie beyond the end; so nothing is found and nothing large is allocated.
    let p = bytes(50_000, 5);
    let file = protect(&p, &opts(5, 4096, 16));
    let mut d = file.clone();
    let n = d.len();
    let tr = &mut d[n - TRAILER_LEN..];
    tr[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let sum = xxh3(&tr[..72]);
    tr[72..].copy_from_slice(&sum.to_le_bytes());
    let loc = found(&d);
    assert_eq!(
        loc.layout.params.protected_len, 50_000,
        "found by scan, not by the forged trailer"
    );
    assert!(
        locate(
            &d[..],
            &Locate {
                protected_len: Some(1 << 40),
                scan: true
            }
        )
        .is_err()
    );
    assert!(matches!(
        repair_range(&d[..], &loc, 49_990, 11),
        Err(RecoveryError::OutOfRange { .. })
    ));
}

#[test]
fn parsed_structures_re_encode_to_the_same_bytes() {
    let file = protect(&bytes(20_000, 6), &opts(5, 4096, 16));
    let lay = found(&file).layout;
    let a = lay.copy_a as usize;
    let pk: &[u8; PACKET_LEN] = file[a..a + PACKET_LEN].try_into().unwrap();
    let tr: &[u8; TRAILER_LEN] = file[file.len() - TRAILER_LEN..].try_into().unwrap();
    let (p, t) = parse_structures(pk, tr);
    let (l, again) = p.unwrap();
    assert_eq!((l, t), (lay, Some(lay)));
    assert_eq!(&again, pk);
}

/// Random mutations of small protected files: byte flips, zeroed runs, cuts, appended bytes.
/// Whatever happens, a repair that says "identical" returned exactly the original, and a
/// repaired segment or range equals the original bytes.
#[test]
fn seeded_mutations_never_yield_wrong_bytes_or_panics() {
    let originals: Vec<(Vec<u8>, Vec<u8>)> = [(0usize, 5u8), (1, 1), (70_000, 10), (200_001, 50)]
        .iter()
        .map(|&(len, pct)| {
            let p = bytes(len, len as u64 + 1);
            let f = protect(&p, &opts(pct, 64, 1024));
            (p, f)
        })
        .collect();
    let mut rng = Rng::new(2026);
    for round in 0..400 {
        let (p, f) = &originals[round % originals.len()];
        let mut d = f.clone();
        for _ in 0..1 + rng.below(4) {
            match rng.below(5) {
                0 => {
                    let i = rng.below(d.len() as u64) as usize;
                    d[i] ^= 1 << rng.below(8);
                }
                1 => {
                    let a = rng.below(d.len() as u64) as usize;
                    let b = (a + rng.below(5000) as usize).min(d.len());
                    d[a..b].fill(0);
                }
                2 => {
                    let cut = rng.below(d.len() as u64 + 1) as usize;
                    d.truncate(cut.max(1));
                }
                3 => d.extend_from_slice(&bytes(rng.below(9000) as usize, round as u64)),
                _ => {
                    let a = rng.below(d.len() as u64) as usize;
                    let b = (a + 64).min(d.len());
                    for x in &mut d[a..b] {
                        *x = rng.next() as u8;
                    }
                }
            }
        }
        let Ok(loc) = locate(&d[..], &scan()) else {
            continue;
        };
        let rep = verify(&d[..], &loc);
        let l = loc.layout.params.protected_len;
        if l != p.len() as u64 {
            continue; // cannot happen without forging checksums; nothing to compare with
        }
        for s in &rep.segments {
            if let Ok(r) = repair_segment(&d[..], &loc, s.index) {
                assert_eq!(
                    &r.bytes[..],
                    &p[s.start as usize..s.end as usize],
                    "round {round}"
                );
            }
        }
        if let Ok((out, sum)) = repair_to(&d[..], &loc, Vec::new(), &RepairOptions::default())
            && sum.identical
        {
            assert!(out == *f, "round {round}: identical claimed, bytes differ");
        }
    }
}
