//! Recovery data under real damage (seeded): for each damage kind at 1%, 5% and 10%, at the
//! stated capacity the file is repaired bit for bit, one shard beyond it the verifier names
//! exactly the segment that is lost and repair returns no wrong byte. P is a real archive
//! (plain and encrypted, made by the library) and synthetic multi-segment bytes.
//!
//! Most tests use 1 MiB segments (S = 4096, K = 256) so capacities are small and the suite
//! fast; the burst tests use the default 128 MiB segments.

mod recovery_common;

use krypta::recovery::{
    Layout, Locate, RecoveryError, RepairOptions, SegmentState, locate, repair_range, repair_to,
    verify,
};
use recovery_common::*;

const S: u64 = 4096;

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// One flipped bit in each of n distinct shards.
    BitFlips,
    /// One lost (garbage) 512-byte sector in each of n distinct shards.
    Sector512,
    /// n lost 4 KiB sectors (= n shards), scattered.
    Sector4k,
    /// One contiguous zeroed run touching exactly n shards (unaligned at both ends).
    Burst,
}

const KINDS: [Kind; 4] = [Kind::BitFlips, Kind::Sector512, Kind::Sector4k, Kind::Burst];

/// Damages exactly `n` data shards of segment `g` of P (the first `l` bytes of `file`).
fn damage(file: &mut [u8], lay: &Layout, g: u64, n: u64, kind: Kind, rng: &mut Rng) {
    let seg = lay.segment(g);
    let l = lay.params.protected_len;
    let shard_end = |i: u64| ((i + 1) * S).min(l);
    let garble = |file: &mut [u8], range: std::ops::Range<usize>, rng: &mut Rng| {
        for b in &mut file[range] {
            *b ^= (rng.next() as u8) | 1;
        }
    };
    match kind {
        Kind::Burst => {
            assert!(n >= 2 && n <= seg.data_shards);
            let first = seg.first_shard + rng.below(seg.data_shards - n + 1);
            let a = (first * S + 100) as usize;
            let b = (((first + n - 1) * S + 50).min(shard_end(first + n - 1) - 1)) as usize;
            for x in &mut file[a..b] {
                *x = if *x == 0 { 0xFF } else { 0 };
            }
        }
        _ => {
            for rel in rng.distinct(n as usize, seg.data_shards) {
                let i = seg.first_shard + rel;
                let (a, e) = (i * S, shard_end(i));
                match kind {
                    Kind::BitFlips => {
                        let at = (a + rng.below(e - a)) as usize;
                        file[at] ^= 1 << rng.below(8);
                    }
                    Kind::Sector512 => {
                        let sectors = (e - a).div_ceil(512);
                        let s0 = a + 512 * rng.below(sectors);
                        garble(file, s0 as usize..(s0 + 512).min(e) as usize, rng);
                    }
                    Kind::Sector4k => garble(file, a as usize..e as usize, rng),
                    Kind::Burst => unreachable!(),
                }
            }
        }
    }
}

/// For every kind: n = m_g repairs; n = m_g + 1 is beyond repair in segment g alone.
fn at_and_beyond(p: &[u8], file: &[u8], g: u64, seed: u64) {
    let lay = found(file).layout;
    let m = lay.segment(g).recovery_shards;
    for (ki, kind) in KINDS.into_iter().enumerate() {
        if matches!(kind, Kind::Burst) && m < 2 {
            continue;
        }
        let mut rng = Rng::new(seed * 31 + ki as u64);
        let mut d = file.to_vec();
        damage(&mut d, &lay, g, m, kind, &mut rng);
        let rep = verify(&d[..], &found(&d));
        assert_eq!(rep.segments[g as usize].damaged_data, m, "{kind:?}");
        assert_eq!(rep.segments[g as usize].state, SegmentState::Repairable);
        assert_repairs(&d, file);
        // Transparent repair of a range around the damage.
        let seg = lay.segment(g);
        assert_eq!(
            repair_range(&d[..], &found(&d), seg.start, seg.end - seg.start).unwrap(),
            &p[seg.start as usize..seg.end as usize]
        );
        let mut d = file.to_vec();
        damage(&mut d, &lay, g, m + 1, kind, &mut rng);
        assert_beyond(&d, p, &[g]);
    }
}

#[test]
fn synthetic_multi_segment_p_at_and_beyond_capacity_for_1_5_10_percent() {
    // 3.5 MiB + 1000: segments 0..3 full (k = 256), segment 3 short (k = 129).
    let p = bytes(3 * (1 << 20) + (1 << 19) + 1000, 77);
    for (pct, m_full, m_last) in [(1, 3, 2), (5, 13, 7), (10, 26, 13)] {
        let file = protect(&p, &opts(pct, 4096, 256));
        let lay = found(&file).layout;
        assert_eq!(
            (
                lay.segments,
                lay.full_recovery,
                lay.segment(3).recovery_shards
            ),
            (4, m_full, m_last)
        );
        at_and_beyond(&p, &file, 1, pct as u64);
        at_and_beyond(&p, &file, 3, 100 + pct as u64);
    }
}

#[test]
fn real_archives_plain_and_encrypted_at_and_beyond_capacity() {
    for pct in [1, 5, 10] {
        for encrypted in [false, true] {
            let (p, file, _) = real_archive(encrypted, &opts(pct, 4096, 256));
            at_and_beyond(&p, &file, 0, pct as u64 + encrypted as u64 * 1000);
        }
    }
}

#[test]
fn header_and_footer_regions_are_repaired() {
    for encrypted in [false, true] {
        let (p, file, _) = real_archive(encrypted, &opts(5, 4096, 256));
        let l = p.len();
        let mut d = file.clone();
        d[..300].fill(0); // magic, version, stanzas
        d[l - 64..l].fill(0xAA); // the footer
        d[l - 5000] ^= 0x10; // the index frame
        assert_repairs(&d, &file);
    }
}

#[test]
fn damaged_descriptor_copies_and_trailer_never_block_a_repair() {
    let p = bytes(3 * (1 << 20) + 12345, 9);
    let file = protect(&p, &opts(5, 4096, 256));
    let lay = found(&file).layout;
    let copy = |c: u8| {
        let a = lay.packet_offset(c, 0) as usize;
        a..a + lay.packets as usize * 4096
    };
    let mut data_damage = file.clone();
    damage(
        &mut data_damage,
        &lay,
        2,
        10,
        Kind::Sector4k,
        &mut Rng::new(4),
    );

    // Copy A and the trailer gone: the backward scan finds copy B.
    let mut d = data_damage.clone();
    d[copy(0)].fill(0);
    let n = d.len();
    d[n - 80..].fill(0);
    assert!(matches!(
        found(&d).found_by,
        krypta::recovery::FoundBy::Scan { .. }
    ));
    let rep = verify(&d[..], &found(&d));
    assert_eq!(
        (rep.damaged_packets, rep.lost_packets, rep.trailer_ok),
        ([lay.packets, 0], 0, false)
    );
    assert_repairs(&d, &file);

    // Copy B and the trailer gone: the scan walks back over the recovery area to copy A.
    let mut d = data_damage.clone();
    d[copy(1)].fill(0x55);
    d[n - 80..].fill(0);
    assert_repairs(&d, &file);

    // Alternate packets damaged in each copy: every packet survives once.
    let mut d = data_damage.clone();
    for i in 0..lay.packets {
        let off = lay.packet_offset((i % 2) as u8, i) as usize + 500;
        d[off] ^= 1;
    }
    assert_eq!(verify(&d[..], &found(&d)).lost_packets, 0);
    assert_repairs(&d, &file);

    // Packet 0 lost in BOTH copies: segment 0's checksums are gone. With P intact, its BLAKE3
    // vouches for segment 0; damage elsewhere is still repaired.
    let mut d = data_damage.clone();
    for c in 0..2 {
        let off = lay.packet_offset(c, 0) as usize;
        d[off + 1000] ^= 0x80;
    }
    let rep = verify(&d[..], &found(&d));
    assert_eq!(rep.lost_packets, 1);
    // Packet 0 held all of segment 0's checksums and the first 232 of segment 1's.
    assert_eq!(rep.segments[0].unverifiable_data, 256);
    assert_eq!(rep.segments[1].unverifiable_data, 232);
    assert_eq!(rep.segments[0].state, SegmentState::Unverified);
    assert_eq!(rep.segments[2].state, SegmentState::Repairable);
    assert_repairs(&d, &file);
    // ...but damage inside segment 0 can no longer be located: it is passed through, and
    // the result is reported as NOT identical (the BLAKE3 of P does not match).
    let mut d2 = d.clone();
    d2[5000] ^= 1;
    let (out, s) = repair_to(&d2[..], &found(&d2), Vec::new(), &RepairOptions::default()).unwrap();
    assert!(!s.identical);
    assert_eq!((s.unverified_shards, s.rebuilt_shards), (256 + 232, 10));
    let diff: Vec<usize> = (0..p.len()).filter(|&i| out[i] != p[i]).collect();
    assert_eq!(diff, vec![5000], "only the unlocatable flip remains");
}

#[test]
fn damaged_recovery_shards_count_against_the_same_capacity() {
    let p = bytes(2 << 20, 12);
    let file = protect(&p, &opts(10, 4096, 256));
    let lay = found(&file).layout;
    let seg = lay.segment(1);
    let m = seg.recovery_shards; // 26
    for (data, rec) in [(0, m), (10, m - 10), (10, m - 9)] {
        let mut d = file.clone();
        damage(
            &mut d,
            &lay,
            1,
            data,
            Kind::BitFlips,
            &mut Rng::new(data + rec),
        );
        for j in 0..rec {
            let off = (seg.recovery_offset + j * S + 7) as usize;
            d[off] ^= 0x01;
        }
        let rep = verify(&d[..], &found(&d));
        assert_eq!(rep.segments[1].damaged_recovery, rec);
        if data + rec <= m {
            assert_repairs(&d, &file);
        } else {
            assert_beyond(&d, &p, &[1]);
        }
    }
}

#[test]
fn truncated_tails_that_cut_only_the_section_are_repaired_and_cuts_into_p_are_not_found() {
    let (p, file, _) = real_archive(false, &opts(5, 4096, 256));
    let lay = found(&file).layout;
    let l = p.len() as u64;
    for cut in [
        lay.file_len - 1,
        lay.trailer,
        lay.copy_b + 4096 + 1,
        lay.copy_b,
        lay.recovery_start + 3 * S + 77,
        lay.recovery_start,
        lay.copy_a + 4096,
    ] {
        assert_repairs(&file[..cut as usize], &file);
    }
    // Nothing of the section left whole: no packet, no trailer.
    for cut in [lay.copy_a + 4095, l, l - 1, l / 2] {
        let e = locate(
            &file[..cut as usize],
            &Locate {
                protected_len: None,
                scan: true,
            },
        )
        .unwrap_err();
        assert!(matches!(e, RecoveryError::NotFound { .. }), "cut {cut}");
    }
    // A cut into the recovery area plus data damage: what the surviving shards cover repairs.
    let mut d = file[..(lay.recovery_start + 5 * S) as usize].to_vec();
    damage(&mut d, &lay, 0, 3, Kind::Sector4k, &mut Rng::new(3));
    assert_repairs(&d, &file);
    let mut d = file[..(lay.recovery_start + 2 * S) as usize].to_vec();
    damage(&mut d, &lay, 0, 3, Kind::Sector4k, &mut Rng::new(3));
    assert_beyond(&d, &p, &[0]);
}

/// A zeroed 1 MiB run (257 shards when unaligned) with the default 128 MiB segments.
fn zeroed_mib(p_len: usize, pct: u8, repaired: bool) {
    let p = bytes(p_len, pct as u64);
    let file = protect(&p, &krypta::recovery::RecoveryOptions::new(pct));
    let mut d = file.clone();
    let at = p_len / 3 + 1234;
    d[at..at + (1 << 20)].fill(0);
    let rep = verify(&d[..], &found(&d));
    assert_eq!(rep.segments[0].damaged_data, 257);
    if repaired {
        assert_repairs(&d, &file);
    } else {
        assert_eq!(rep.segments[0].state, SegmentState::BeyondRepair);
        assert!(rep.segments[0].recovery_shards < 257);
        assert_eq!(
            rep.segments[0].damaged_ranges,
            vec![(
                (at as u64) / S * S,
                ((at + (1 << 20)) as u64).div_ceil(S) * S
            )]
        );
    }
}

#[test]
fn a_zeroed_mib_is_repaired_at_5_and_10_percent_in_segments_of_20_and_10_mib() {
    zeroed_mib(21 << 20, 5, true); // k = 5376, m = 269
    zeroed_mib(19 << 20, 5, false); // k = 4864, m = 244
    zeroed_mib(11 << 20, 10, true); // k = 2816, m = 282
    zeroed_mib(9 << 20, 10, false); // k = 2304, m = 231
}

#[test]
fn a_zeroed_mib_is_repaired_at_1_percent_in_a_segment_of_101_mib() {
    zeroed_mib(101 << 20, 1, true); // k = 25856, m = 259
}
