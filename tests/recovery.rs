//! Recovery data, the happy paths and the structure: every length round-trips, the section
//! is a pure function of P and the parameters, the layout lands where docs/FORMAT.md §15
//! says, the writer's memory stays bounded (spill), and real archives (plain, encrypted)
//! protected on the fly still open and verify.

mod recovery_common;

use krypta::recovery::{
    FoundBy, Locate, Params, RecoveryOptions, RecoveryWriter, RepairOptions, locate, repair_range,
    repair_to, verify, xxh3,
};
use recovery_common::*;

#[test]
fn awkward_lengths_round_trip_and_verify_intact() {
    // S = 64, K = 1024 (64 KiB segments): 0, 1, S-1, S, S+1, a segment ± 1, multi-segment.
    let seg = 64 * 1024;
    for len in [0, 1, 63, 64, 65, seg - 1, seg, seg + 1, 3 * seg + 4097] {
        for background in [false, true] {
            let mut o = opts(5, 64, 1024);
            o.background = background;
            let p = bytes(len, len as u64);
            let file = protect_in_pieces(&p, &o, 777);
            let loc = found(&file);
            assert_eq!(loc.found_by, FoundBy::Trailer);
            assert_eq!(loc.layout.params.protected_len, len as u64);
            assert_eq!(loc.layout.params.blake3, *blake3::hash(&p).as_bytes());
            let rep = verify(&file[..], &loc);
            assert!(rep.all_intact(), "len {len}");
            assert_eq!(
                rep.segments.len() as u64,
                (len as u64).div_ceil(64).div_ceil(1024)
            );
            let (out, s) =
                repair_to(&file[..], &loc, Vec::new(), &RepairOptions::default()).unwrap();
            assert!(s.identical && out == file, "len {len}");
            if len > 0 {
                assert_eq!(repair_range(&file[..], &loc, 0, len as u64).unwrap(), p);
            }
        }
    }
}

#[test]
fn the_section_is_a_pure_function_of_p_and_the_parameters() {
    let p = bytes(700_000, 5);
    let o = opts(10, 4096, 64);
    let a = protect_in_pieces(&p, &o, 1);
    let b = protect_in_pieces(&p, &o, 65_537);
    let mut inline = o.clone();
    inline.background = false;
    inline.memory_budget = 0; // everything spills
    let c = protect_in_pieces(&p, &inline, 4096);
    assert!(a == b && b == c);
}

#[test]
fn layout_matches_the_specification_byte_for_byte() {
    // L = 10000, S = 4096, K = 16 (64 KiB segments), p = 10: N = 3 shards, one segment,
    // m = ⌈3·10/100⌉ = 1, C = ⌈16·10/100⌉ = 2 → 2; T = 8·(3+1) = 32; n = 1 packet.
    let p = bytes(10_000, 1);
    let file = protect(&p, &opts(10, 4096, 16));
    let lay = found(&file).layout;
    assert_eq!(
        (lay.data_shards, lay.segments, lay.full_recovery, lay.chunk),
        (3, 1, 2, 2)
    );
    assert_eq!(
        (lay.recovery_shards, lay.table_len, lay.packets),
        (1, 32, 1)
    );
    assert_eq!(
        (lay.copy_a, lay.recovery_start, lay.copy_b, lay.trailer),
        (12288, 16384, 20480, 24576)
    );
    assert_eq!(file.len(), 24576 + 80);
    assert!(
        file[10_000..12_288].iter().all(|&b| b == 0),
        "padding after P is zero"
    );
    // Copy A: magic, the parameters, copy 0, index 0, the table, XXH3-64 of the packet.
    let pk = &file[12288..16384];
    assert_eq!(&pk[0..8], b"\x89KRYREC\n");
    let params = Params::parse(pk[8..72].try_into().unwrap()).unwrap();
    assert_eq!(params.protected_len, 10_000);
    assert_eq!(&pk[8..10], &1u16.to_le_bytes());
    assert_eq!(
        (pk[10], &pk[12..16], &pk[16..20]),
        (10, &4096u32.to_le_bytes()[..], &16u32.to_le_bytes()[..])
    );
    assert_eq!(&pk[24..32], &10_000u64.to_le_bytes());
    assert_eq!(&pk[32..64], blake3::hash(&p).as_bytes());
    assert_eq!((pk[72], &pk[76..80]), (0, &[0u8; 4][..]));
    let mut padded = p.clone();
    padded.resize(3 * 4096, 0);
    for i in 0..3 {
        let sum = u64::from_le_bytes(pk[80 + 8 * i..88 + 8 * i].try_into().unwrap());
        assert_eq!(
            sum,
            xxh3(&padded[i * 4096..(i + 1) * 4096]),
            "data checksum {i}"
        );
    }
    let rec = &file[16384..20480];
    assert_eq!(
        u64::from_le_bytes(pk[104..112].try_into().unwrap()),
        xxh3(rec)
    );
    assert!(pk[112..4088].iter().all(|&b| b == 0));
    assert_eq!(
        u64::from_le_bytes(pk[4088..].try_into().unwrap()),
        xxh3(&pk[..4088])
    );
    // With C = 2 and one stored recovery shard: parity 0 of the code (docs: positions 0..C
    // parity, C.. data); spot-check it is not trivially the XOR of the data shards.
    let xor: Vec<u8> = (0..4096)
        .map(|i| padded[i] ^ padded[4096 + i] ^ padded[8192 + i])
        .collect();
    assert_ne!(rec, &xor[..]);
    // Copy B is copy A with copy = 1.
    let pb = &file[20480..24576];
    assert_eq!(pb[72], 1);
    assert_eq!(&pb[..72], &pk[..72]);
    assert_eq!(&pb[73..4088], &pk[73..4088]);
    let tr = &file[24576..];
    assert_eq!(&tr[0..8], b"KRYRECZ\n");
    assert_eq!(&tr[8..72], &pk[8..72]);
    assert_eq!(
        u64::from_le_bytes(tr[72..80].try_into().unwrap()),
        xxh3(&tr[..72])
    );
}

#[test]
fn spilled_writer_output_equals_in_memory_output() {
    let p = bytes(3 << 20, 8);
    let o = opts(5, 4096, 256);
    let mut small = o.clone();
    small.memory_budget = 10_000;
    let dir = tempfile::tempdir().unwrap();
    small.spill_dir = Some(dir.path().to_path_buf());
    use std::io::Write;
    let mut w = RecoveryWriter::new(Vec::new(), &small).unwrap();
    w.write_all(&p).unwrap();
    let (out, s) = w.finish().unwrap();
    assert!(s.spilled);
    assert_eq!(out, protect(&p, &o));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the spill file is anonymous"
    );
}

/// Regression (helper-58): a spill file that could not be made or written said only
/// "temporary spill file: write: No space left on device" under the name of the output, so
/// the user freed space where the archive goes, not in the full temporary directory.
#[test]
fn a_failed_spill_names_its_directory() {
    let p = bytes(3 << 20, 9);
    let mut small = opts(5, 4096, 256);
    small.memory_budget = 10_000;
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("no-such-dir");
    small.spill_dir = Some(gone.clone());
    use std::io::Write;
    let mut w = RecoveryWriter::new(Vec::new(), &small).unwrap();
    let e = w
        .write_all(&p)
        .err()
        .map(|e| e.to_string())
        .or_else(|| w.finish().err().map(|e| e.to_string()))
        .expect("the spill cannot be made");
    assert_eq!(
        e,
        format!(
            "recovery data: temporary spill file in {}: create: No such file or directory (os error 2)",
            gone.display()
        )
    );
}

#[test]
fn memory_bound_follows_the_percentage() {
    let mib = 1u64 << 20;
    let bound = |p| RecoveryOptions::new(p).memory_bound() - (64 << 20) - 8 * 32768;
    assert_eq!(bound(1), 6 * mib);
    assert_eq!(bound(5), 24 * mib);
    assert_eq!(bound(10), 48 * mib);
    assert_eq!(bound(50), 192 * mib);
}

#[test]
fn options_out_of_range_are_refused() {
    for o in [
        opts(0, 4096, 256),
        opts(101, 4096, 256),
        opts(5, 100, 256),
        opts(5, 4096, 300),
        opts(5, 64, 16),
    ] {
        let e = RecoveryWriter::new(Vec::new(), &o).err().unwrap();
        assert!(e.to_string().contains("is not allowed"), "{e}");
    }
}

#[test]
fn real_archives_protected_on_the_fly_open_verify_and_locate_by_length() {
    for encrypted in [false, true] {
        let (p, file, key) = real_archive(encrypted, &opts(5, 4096, 256));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.kry");
        std::fs::write(&path, &p).unwrap();
        let open = krypta::archive::OpenOptions {
            identities: key
                .iter()
                .map(|k| krypta::crypto::stanza::Identity::KeyFile(k.clone()))
                .collect(),
            jobs: 1,
            ..Default::default()
        };
        let s = krypta::test(&path, open, &mut krypta::Collect::default()).unwrap();
        assert_eq!(s.files, 6);
        let loc = locate(
            &file[..],
            &Locate {
                protected_len: Some(p.len() as u64),
                scan: false,
            },
        )
        .unwrap();
        assert_eq!(loc.found_by, FoundBy::Trailer);
        // Without the trailer, the caller's length leads straight to copy A.
        let cut = &file[..file.len() - 1];
        let loc = locate(
            cut,
            &Locate {
                protected_len: Some(p.len() as u64),
                scan: false,
            },
        )
        .unwrap();
        assert_eq!(loc.found_by, FoundBy::ProtectedLen);
        assert!(verify(&file[..], &found(&file)).all_intact());
    }
}

#[test]
fn repairs_with_several_jobs_equal_repairs_with_one() {
    let p = bytes(5 * (1 << 20) + 333, 21);
    let file = protect(&p, &opts(5, 4096, 256));
    let mut d = file.clone();
    for seg in [0usize, 2, 4] {
        let at = seg * (1 << 20) + 5000;
        d[at..at + 20_000].fill(0);
    }
    let loc = found(&d);
    for jobs in [1, 2, 3] {
        let o = RepairOptions {
            jobs,
            ..Default::default()
        };
        let (out, s) = repair_to(&d[..], &loc, Vec::new(), &o).unwrap();
        assert!(s.identical && out == file, "jobs {jobs}");
        assert_eq!((s.repaired_segments, s.rebuilt_shards), (3, 18));
    }
}

#[test]
fn recovery_errors_map_to_the_documented_exit_codes() {
    use krypta::recovery::{BeyondRepair, RecoveryError};
    let wrap = |source| krypta::Error::Recovery {
        path: "a.kry".into(),
        source,
    };
    let beyond = RecoveryError::BeyondRepair {
        segments: vec![BeyondRepair {
            segment: 2,
            start: 10,
            end: 20,
            erased: 9,
            recovery: 3,
        }],
    };
    assert_eq!(
        wrap(beyond).to_string(),
        "a.kry: damaged beyond the recovery data: segment 2 (bytes 10..20): 9 shards lost, 3 recovery shards"
    );
    assert_eq!(
        wrap(RecoveryError::BeyondRepair { segments: vec![] }).exit_code(),
        5
    );
    assert_eq!(wrap(RecoveryError::NotFound { len: 5 }).exit_code(), 3);
    let read = RecoveryError::read(0, 1, std::io::Error::other("x"));
    assert_eq!(wrap(read).exit_code(), 4);
}
