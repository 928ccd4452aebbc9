//! Shared helpers of the recovery tests: seeded bytes, protecting P with a section, real
//! archives made through the library as P, damage, and the checks every repair must pass.

#![allow(dead_code, missing_docs)]

use krypta::archive::writer::{ArchiveWriter, ReaderSource, WriteOptions};
use krypta::crypto::keyfile::SymmetricKey;
use krypta::crypto::stanza::Recipient;
use krypta::format::{EntryKind, EntryMeta, Timestamp};
use krypta::recovery::{
    Locate, Located, RecoveryError, RecoveryOptions, RecoveryWriter, RepairOptions, SegmentState,
    locate, repair_to, verify,
};

/// A small deterministic generator (xorshift64*), so every test is reproducible by seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// `n` distinct values below `limit`, sorted.
    pub fn distinct(&mut self, n: usize, limit: u64) -> Vec<u64> {
        assert!(n as u64 <= limit);
        let mut set = std::collections::BTreeSet::new();
        while set.len() < n {
            set.insert(self.below(limit));
        }
        set.into_iter().collect()
    }
}

/// `n` seeded bytes: random, or (text) compressible.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(&r.next().to_le_bytes());
    }
    v.truncate(n);
    v
}

/// Options at `percent` with shard size `s` and `k` shards per segment, encoded inline or
/// on the background thread.
pub fn opts(percent: u8, s: u32, k: u32) -> RecoveryOptions {
    let mut o = RecoveryOptions::new(percent);
    o.shard_size = s;
    o.shards_per_segment = k;
    o
}

/// P followed by its section, written in pieces of `piece` bytes.
pub fn protect_in_pieces(p: &[u8], o: &RecoveryOptions, piece: usize) -> Vec<u8> {
    use std::io::Write;
    let mut w = RecoveryWriter::new(Vec::new(), o).unwrap();
    for c in p.chunks(piece.max(1)) {
        w.write_all(c).unwrap();
    }
    let (out, summary) = w.finish().unwrap();
    assert_eq!(summary.layout.params.protected_len, p.len() as u64);
    assert_eq!(out.len() as u64, summary.layout.file_len);
    assert_eq!(
        &out[..p.len()],
        p,
        "the protected bytes pass through unchanged"
    );
    out
}

/// P followed by its section.
pub fn protect(p: &[u8], o: &RecoveryOptions) -> Vec<u8> {
    protect_in_pieces(p, o, 1 << 20)
}

pub fn found(file: &[u8]) -> Located {
    locate(
        file,
        &Locate {
            protected_len: None,
            scan: true,
        },
    )
    .unwrap()
}

/// Repairs `damaged` and checks the output is `original` bit for bit and said so.
pub fn assert_repairs(damaged: &[u8], original: &[u8]) {
    let loc = found(damaged);
    let rep = verify(damaged, &loc);
    assert!(
        rep.repairable(),
        "verify says beyond repair: {:?}",
        rep.beyond_repair()
    );
    let (out, summary) = repair_to(damaged, &loc, Vec::new(), &RepairOptions::default()).unwrap();
    assert!(summary.identical);
    assert!(out == original, "repaired file differs from the original");
    let again = verify(&out, &found(&out));
    assert!(again.all_intact(), "the repaired file verifies intact");
}

/// Checks that `damaged` is beyond repair in exactly `segments`, that repair returns an error
/// naming them (and nothing else), and that every other segment still repairs to the
/// original bytes.
pub fn assert_beyond(damaged: &[u8], original_p: &[u8], segments: &[u64]) {
    let loc = found(damaged);
    let rep = verify(damaged, &loc);
    let beyond: Vec<u64> = rep
        .segments
        .iter()
        .filter(|s| s.state == SegmentState::BeyondRepair)
        .map(|s| s.index)
        .collect();
    assert_eq!(beyond, segments);
    match repair_to(damaged, &loc, Vec::new(), &RepairOptions::default()) {
        Err(RecoveryError::BeyondRepair { segments: b }) => {
            assert_eq!(b.iter().map(|s| s.segment).collect::<Vec<_>>(), segments);
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("repair claimed success beyond capacity"),
    }
    for s in &rep.segments {
        let r = krypta::recovery::repair_segment(damaged, &loc, s.index);
        if segments.contains(&s.index) {
            assert!(matches!(r, Err(RecoveryError::BeyondRepair { .. })));
        } else {
            let r = r.unwrap();
            assert_eq!(&r.bytes[..], &original_p[s.start as usize..s.end as usize]);
        }
    }
}

/// A real archive made by krypta's library (6 files, text and random, level 3, 64 KiB
/// blocks), plain or encrypted with a key file, written straight into a `RecoveryWriter`.
/// Returns (P, P + section, key).
pub fn real_archive(
    encrypted: bool,
    o: &RecoveryOptions,
) -> (Vec<u8>, Vec<u8>, Option<SymmetricKey>) {
    let key = encrypted.then(|| SymmetricKey::generate().unwrap());
    let mut wo = WriteOptions::new();
    wo.block_size = 64 << 10;
    wo.jobs = 2;
    if let Some(k) = &key {
        wo.recipients = vec![Recipient::KeyFile(k.clone())];
    }
    let rw = RecoveryWriter::new(Vec::new(), o).unwrap();
    let mut w = ArchiveWriter::new(rw, "<memory>", wo).unwrap();
    for i in 0..6u64 {
        let data = if i % 2 == 0 {
            format!("line {i} of a text file that compresses\n")
                .repeat(5000 + 3000 * i as usize)
                .into_bytes()
        } else {
            bytes(150_000 + 40_000 * i as usize, i)
        };
        let meta = EntryMeta {
            path: format!("dir/file{i}").into_bytes(),
            kind: EntryKind::File,
            mode: 0o644,
            mtime: Timestamp {
                secs: 1_700_000_000,
                nanos: 0,
            },
            uid: 0,
            gid: 0,
            link: vec![],
            ..EntryMeta::default()
        };
        w.add_file(&meta, &mut ReaderSource::new(&data[..], "mem"))
            .unwrap();
    }
    let (summary, rw) = w.finish().unwrap();
    let (file, sec) = rw.finish().unwrap();
    assert_eq!(sec.layout.params.protected_len, summary.archive_bytes);
    let p = file[..summary.archive_bytes as usize].to_vec();
    (p, file, key)
}
