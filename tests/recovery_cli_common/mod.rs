//! Shared fixture of the recovery-data CLI tests (`recovery_cli*.rs`, issue 11 §2): a seeded
//! tree archived with `krypta c --recovery PCT`, the archive's geometry (protected length,
//! shard count, capacity, data frames, entries' frame ranges) read back independently of the
//! repair code, damage made on the file's bytes, and the checks every case shares.

#![allow(dead_code, missing_docs)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{self, code, krypta, s};

/// Files in the tree: incompressible, 4–60 KiB, so a 64 KiB block holds a few files and the
/// archive is about 3.8 MiB (≈ 940 shards of 4 KiB).
pub const FILES: usize = 120;
pub const SHARD: u64 = 4096;

pub fn content(i: usize) -> Vec<u8> {
    common::bytes(4096 + (i * 7919) % (56 * 1024), i as u64 + 11, false)
}

/// One archive made through the CLI, with what the tests need to know about it.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub archive: PathBuf,
    pub bytes: Vec<u8>,
    pub percent: u8,
    pub encrypted: bool,
    /// Protected length L (`info --json`).
    pub protected: u64,
    /// Entries with their first and last data frame, and the frames' byte ranges.
    pub entries: Vec<(String, u64, u64)>,
    pub frames: Vec<(u64, u64)>,
}

impl Fixture {
    /// A tree of [`FILES`] files archived at `percent` (with a key file when `encrypted`),
    /// 64 KiB blocks; `extra` bytes of one more file (for archives of a chosen size).
    pub fn new(percent: u8, encrypted: bool, extra: usize) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("t");
        for i in 0..FILES {
            common::write(&src.join(format!("f{i:03}")), &content(i));
        }
        if extra > 0 {
            common::write(&src.join("big"), &common::bytes(extra, 99, false));
        }
        let archive = dir.path().join("a.kry");
        let mut c = krypta();
        c.current_dir(dir.path())
            .args(["c", "-q", "-b", "64K", "-j", "2"])
            .arg(format!("--recovery={percent}"));
        if encrypted {
            let o = krypta()
                .current_dir(dir.path())
                .args(["keygen", "-q", "-o", "key"])
                .output()
                .unwrap();
            assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
            c.args(["--keyfile", "key"]);
        }
        let o = c.args(["a.kry", "t"]).output().unwrap();
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
        let bytes = std::fs::read(&archive).unwrap();
        let info = krypta()
            .args(["info", "--json", s(&archive)])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        let protected = v["recovery"]["protected_bytes"].as_u64().unwrap();
        assert_eq!(v["recovery"]["percent"], percent);
        assert_eq!(
            v["recovery"]["section_bytes"].as_u64().unwrap() + protected,
            bytes.len() as u64
        );
        let mut f = Fixture {
            dir,
            archive,
            bytes,
            percent,
            encrypted,
            protected,
            entries: vec![],
            frames: vec![],
        };
        f.read_geometry();
        f
    }

    /// Entries' frame ranges and the frames' offsets, from the index of the intact archive
    /// (library `list`) and the frame table: header length, then body + 48 bytes per frame.
    fn read_geometry(&mut self) {
        let open = krypta::archive::reader::OpenOptions {
            identities: self.identities(),
            jobs: 1,
            ..Default::default()
        };
        let (entries, lens) = krypta::list(&self.archive, open).unwrap();
        let hlen = u32::from_le_bytes(self.bytes[12..16].try_into().unwrap()) as u64;
        let mut at = hlen;
        for l in lens {
            let n = l as u64 + 48;
            self.frames.push((at, at + n));
            at += n;
        }
        self.entries = entries
            .into_iter()
            .map(|e| {
                (
                    String::from_utf8(e.meta.path).unwrap(),
                    e.first_seq,
                    e.last_seq,
                )
            })
            .collect();
    }

    pub fn identities(&self) -> Vec<krypta::crypto::Identity> {
        if self.encrypted {
            let k = krypta::crypto::keyfile::load_keyfile(&self.dir.path().join("key")).unwrap();
            vec![krypta::crypto::Identity::KeyFile(k)]
        } else {
            vec![]
        }
    }

    /// Data shards N of P.
    pub fn shards(&self) -> u64 {
        self.protected.div_ceil(SHARD)
    }

    /// Recovery shards m = ⌈N·p/100⌉ (one segment: every fixture is under 128 MiB): the
    /// documented capacity, in shards.
    pub fn capacity(&self) -> u64 {
        (self.shards() * u64::from(self.percent)).div_ceil(100)
    }

    /// Shards wholly inside the data frames, away from the header, the index and the footer.
    pub fn data_shards(&self) -> (u64, u64) {
        let first = self.frames[0].0.div_ceil(SHARD) + 1;
        let last = self.frames.last().unwrap().1 / SHARD - 1;
        (first, last)
    }

    /// Writes `bytes` as `name` in the fixture directory.
    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Runs krypta in the fixture directory with the key options when encrypted.
    pub fn keyed(&self, args: &[&str]) -> Output {
        let mut c = krypta();
        c.current_dir(self.dir.path()).args(args);
        if self.encrypted {
            c.args(["--keyfile", "key"]);
        }
        c.output().unwrap()
    }

    /// Runs krypta in the fixture directory, no key.
    pub fn run(&self, args: &[&str]) -> Output {
        krypta()
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .unwrap()
    }

    /// The entries whose frames overlap one of `ranges` (what salvage must lose).
    pub fn expected_damage(&self, ranges: &[(u64, u64)]) -> BTreeSet<String> {
        let bad: Vec<u64> = self
            .frames
            .iter()
            .enumerate()
            .filter(|(_, f)| ranges.iter().any(|r| f.0 < r.1 && r.0 < f.1))
            .map(|(i, _)| i as u64)
            .collect();
        assert!(!bad.is_empty(), "the damage hits a data frame");
        self.entries
            .iter()
            .filter(|(_, a, b)| bad.iter().any(|s| a <= s && s <= b))
            .map(|(p, _, _)| p.clone())
            .collect()
    }

    /// Checks that `name` repairs: `t` (with the key) verifies everything and exits 7 naming
    /// the repair, `x` restores the tree exactly (exit 0, warning), and `repair` (no key)
    /// writes the original bytes.
    pub fn assert_repaired(&self, name: &str, what: &str) {
        let t = self.keyed(&["t", name]);
        let err = String::from_utf8_lossy(&t.stderr);
        assert_eq!(code(&t), 7, "{what}: t: {err}");
        assert!(
            err.contains("damaged but repairable") && err.contains("every entry verified"),
            "{what}: {err}"
        );
        let out = self.dir.path().join(format!("x-{name}"));
        let x = self.keyed(&["x", "-o", s(&out), name]);
        let xerr = String::from_utf8_lossy(&x.stderr);
        assert_eq!(code(&x), 0, "{what}: x: {xerr}");
        common::assert_same_tree(&self.dir.path().join("t"), &out.join("t"));
        let fixed = format!("fixed-{name}");
        let r = self.run(&["repair", name, "-o", &fixed]);
        let rerr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(code(&r), 0, "{what}: repair: {rerr}");
        assert!(rerr.contains("byte-identical"), "{what}: {rerr}");
        assert!(
            std::fs::read(self.dir.path().join(&fixed)).unwrap() == self.bytes,
            "{what}: the repaired archive is not the original"
        );
    }

    /// Checks that `name`, damaged in `ranges` of its data frames beyond the recovery data,
    /// is salvaged: `repair` refuses (exit 5, nothing written); `x` names exactly the entries
    /// of the hit frames, restores every other file byte for byte, and leaves no damaged
    /// file, nor any temporary file, under any name (exit 5, or 2 encrypted).
    pub fn assert_salvaged(&self, name: &str, ranges: &[(u64, u64)], what: &str) {
        let fixed = format!("fixed-{name}");
        let r = self.run(&["repair", name, "-o", &fixed]);
        let rerr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(code(&r), 5, "{what}: repair: {rerr}");
        assert!(
            rerr.contains("damaged beyond the recovery data"),
            "{what}: {rerr}"
        );
        assert!(!self.dir.path().join(&fixed).exists(), "{what}");
        let out = self.dir.path().join(format!("x-{name}"));
        let x = self.keyed(&["x", "-o", s(&out), name]);
        let xerr = String::from_utf8_lossy(&x.stderr).to_string();
        let want_code = if self.encrypted { 2 } else { 5 };
        assert_eq!(code(&x), want_code, "{what}: x: {xerr}");
        assert!(
            xerr.contains("damaged beyond the recovery data"),
            "{what}: {xerr}"
        );
        let expected = self.expected_damage(ranges);
        let named: BTreeSet<String> = xerr
            .lines()
            .filter_map(|l| l.strip_prefix("krypta: warning: "))
            .filter_map(|w| w.split_once(": not restored: ").map(|(p, _)| p.to_string()))
            .collect();
        assert_eq!(named, expected, "{what}: the entries named");
        for i in 0..FILES {
            let rel = format!("t/f{i:03}");
            let p = out.join(&rel);
            if expected.contains(&rel) {
                assert!(!p.exists(), "{what}: damaged {rel} restored");
            } else {
                assert_eq!(
                    std::fs::read(&p).unwrap_or_default(),
                    content(i),
                    "{what}: untouched {rel} not restored exactly"
                );
            }
        }
        let leftovers: Vec<_> = walk(&out)
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(".krypta-"))
            .collect();
        assert!(leftovers.is_empty(), "{what}: {leftovers:?}");
    }
}

fn walk(p: &Path) -> Vec<PathBuf> {
    let mut v = vec![];
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            let q = e.path();
            if q.is_dir() {
                v.extend(walk(&q));
            }
            v.push(q);
        }
    }
    v
}

/// A seeded choice of `n` distinct shard numbers in `lo..=hi`, spread out.
pub fn pick(n: u64, lo: u64, hi: u64, seed: u64) -> Vec<u64> {
    assert!(hi - lo + 1 >= n, "{n} shards in {lo}..={hi}");
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut set = BTreeSet::new();
    while (set.len() as u64) < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        set.insert(lo + x % (hi - lo + 1));
    }
    set.into_iter().collect()
}

/// A kind of damage, applied to shards of P.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One flipped bit in each chosen shard.
    Flips,
    /// An aligned 512-byte sector zeroed in each chosen shard.
    Sectors512,
    /// Each chosen 4 KiB shard zeroed (aligned sectors).
    Sectors4k,
    /// One zeroed run, unaligned, touching exactly `n` consecutive shards.
    Burst,
}

/// Damages `n` shards of `bytes` (within P's shards `lo..=hi`) as `kind`; returns the byte
/// ranges damaged (each changes at least one byte).
pub fn damage(
    bytes: &mut [u8],
    kind: Kind,
    n: u64,
    lo: u64,
    hi: u64,
    seed: u64,
) -> Vec<(u64, u64)> {
    let mut ranges = vec![];
    match kind {
        Kind::Burst => {
            let first = pick(1, lo, hi + 1 - n, seed)[0];
            let a = first * SHARD + 100;
            let b = (first + n - 1) * SHARD + 4000;
            bytes[a as usize..b as usize].fill(0);
            ranges.push((a, b));
        }
        _ => {
            for (j, sh) in pick(n, lo, hi, seed).into_iter().enumerate() {
                let base = sh * SHARD;
                let (a, b) = match kind {
                    Kind::Flips => {
                        let at = base + (j as u64 * 997) % SHARD;
                        bytes[at as usize] ^= 1 << (j % 8);
                        (at, at + 1)
                    }
                    Kind::Sectors512 => {
                        let at = base + 512 * (j as u64 % 8);
                        bytes[at as usize..at as usize + 512].fill(0);
                        (at, at + 512)
                    }
                    _ => {
                        bytes[base as usize..(base + SHARD) as usize].fill(0);
                        (base, base + SHARD)
                    }
                };
                ranges.push((a, b));
            }
        }
    }
    ranges
}
