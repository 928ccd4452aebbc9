//! Shared fixture of the delta archive tests (`delta*.rs`): seeded version pairs of a small
//! tree (one 6 MiB file of random bytes, so nothing compresses but what the base holds,
//! small files, a directory) and the sizes and ids the tests compare.

#![allow(dead_code, missing_docs)]

use crate::cli_common::{Fx, out};
use crate::common::bytes;

/// How v2 differs from v1.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// v1 only.
    None,
    /// A few bytes flipped and 1,000 inserted in the big file; one small file edited, one
    /// removed, one renamed, one added.
    Small,
    /// The big file replaced by other random bytes.
    Large,
}

pub const BIG: usize = 6 << 20;

/// Writes `v1/` and (unless `Change::None`) `v2/`.
pub fn versions(fx: &Fx, change: Change) {
    let big = bytes(BIG, 1, false);
    fx.file("v1/big.bin", &big);
    for i in 0..5u64 {
        fx.file(
            &format!("v1/s/{i}.dat"),
            &bytes(3000 + 4000 * i as usize, 10 + i, false),
        );
    }
    fx.mkdir("v1/empty");
    match change {
        Change::None => {}
        Change::Small => {
            let mut b = big.clone();
            for k in [100_000, 2_500_000, 5_000_000] {
                b[k] ^= 0x5a;
            }
            let ins = bytes(1000, 99, false);
            b.splice(3_000_000..3_000_000, ins);
            fx.file("v2/big.bin", &b);
            let mut s0 = bytes(3000, 10, false);
            s0[1500..1510].copy_from_slice(b"0123456789");
            fx.file("v2/s/0.dat", &s0);
            // 1.dat removed; 2.dat renamed to 2-renamed.dat; 3 and 4 as they were.
            fx.file("v2/s/2-renamed.dat", &bytes(11000, 12, false));
            fx.file("v2/s/3.dat", &bytes(15000, 13, false));
            fx.file("v2/s/4.dat", &bytes(19000, 14, false));
            fx.file("v2/s/new.dat", &bytes(25000, 77, false));
            fx.mkdir("v2/empty");
        }
        Change::Large => {
            fx.file("v2/big.bin", &bytes(BIG, 2, false));
            for i in 0..5u64 {
                fx.file(
                    &format!("v2/s/{i}.dat"),
                    &bytes(3000 + 4000 * i as usize, 10 + i, false),
                );
            }
            fx.mkdir("v2/empty");
        }
    }
}

pub fn size(fx: &Fx, rel: &str) -> u64 {
    std::fs::metadata(fx.p(rel)).unwrap().len()
}

/// The archive id `info --json` shows.
pub fn archive_id(fx: &Fx, rel: &str) -> String {
    let j: serde_json::Value =
        serde_json::from_str(&out(&fx.ok(&["info", "--json", rel]))).unwrap();
    j["archive_id"].as_str().unwrap().to_string()
}

/// Writes `base.kry` of `v1` and four deltas of `v2` against it: `d3.kry` at the default
/// level, `d6.kry` at `-l 6` (the diff's fast effort), `d7.kry` at `-l 7` and `e7.kry` at
/// `-l 7` encrypted with key file `k` (made here).
pub fn default_and_level_7_deltas(fx: &Fx) {
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "--base", "base.kry", "d3.kry", "v2"]);
    fx.ok(&["c", "-q", "-l", "6", "--base", "base.kry", "d6.kry", "v2"]);
    fx.ok(&["c", "-q", "-l", "7", "--base", "base.kry", "d7.kry", "v2"]);
    let e7 = [
        "c",
        "-q",
        "-l",
        "7",
        "--keyfile",
        "k",
        "--base",
        "base.kry",
        "e7.kry",
        "v2",
    ];
    fx.ok(&e7);
}

/// Each of [`default_and_level_7_deltas`]' archives restores `v2` bit for bit with
/// `--base base.kry` and passes `t`.
pub fn each_delta_restores_v2(fx: &Fx) {
    for (a, keys) in [
        ("d3.kry", &[][..]),
        ("d6.kry", &[]),
        ("d7.kry", &[]),
        ("e7.kry", &["--keyfile", "k"]),
    ] {
        let dir = format!("out-{a}");
        fx.ok(&[
            &["x", "-q"][..],
            keys,
            &["--base", "base.kry", a, "-C", &dir],
        ]
        .concat());
        crate::common::assert_same_tree(&fx.p("v2"), &fx.p(&format!("{dir}/v2")));
        fx.ok(&[&["t", "-q"][..], keys, &["--base", "base.kry", a]].concat());
    }
}

/// Flips `mask` into the body byte at `at` of `fx`'s `base.kry` (its frame tag kept, so the
/// binding holds and only the region read finds it), runs `x -j jobs --base base.kry
/// delta.kry -C out`, and asserts the refusal a damaged base frame gets: exit 9, the frame
/// named as damaged, and `lost` (which needs that frame) not under its final name.
pub fn assert_a_damaged_base_body_is_refused(fx: &Fx, at: usize, mask: u8, jobs: &str, lost: &str) {
    let mut b = std::fs::read(fx.p("base.kry")).unwrap();
    b[at] ^= mask;
    std::fs::write(fx.p("base.kry"), &b).unwrap();
    let o = fx.run(&[
        "x",
        "-j",
        jobs,
        "--base",
        "base.kry",
        "delta.kry",
        "-C",
        "out",
    ]);
    let e = crate::cli_common::err(&o);
    assert_eq!(crate::common::code(&o), 9, "{e}");
    assert!(
        e.contains("base.kry: base frame") && e.contains("damaged (its tag does not verify)"),
        "{e}"
    );
    assert!(!fx.exists(&format!("out/{lost}")), "{lost} restored: {e}");
}

/// File contents a scan yields, by path.
#[derive(Default)]
pub struct Files {
    /// Contents by path.
    pub got: std::collections::BTreeMap<String, Vec<u8>>,
    cur: Option<String>,
}

impl krypta::archive::reader::Visitor for Files {
    fn entry(&mut self, meta: &krypta::format::EntryMeta) -> krypta::Result<()> {
        let p = String::from_utf8_lossy(&meta.path).into_owned();
        self.got.insert(p.clone(), Vec::new());
        self.cur = Some(p);
        Ok(())
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> krypta::Result<()> {
        let b = self.got.get_mut(self.cur.as_ref().unwrap()).unwrap();
        b.resize(offset as usize, 0);
        b.extend_from_slice(bytes);
        Ok(())
    }
    fn end(&mut self, _meta: &krypta::format::EntryMeta, size: u64) -> krypta::Result<()> {
        let b = self.got.get_mut(self.cur.as_ref().unwrap()).unwrap();
        b.resize(size as usize, 0);
        Ok(())
    }
    fn abort(&mut self) {}
}

/// The files of `fx`'s `delta.kry` read with `base` at `jobs` workers, by path.
pub fn read_delta(
    fx: &Fx,
    base: std::sync::Arc<krypta::archive::reader::BaseArchive>,
    jobs: usize,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut ar = krypta::archive::reader::Archive::open(
        &fx.p("delta.kry"),
        krypta::archive::reader::OpenOptions {
            base: Some(base),
            jobs,
            ..krypta::archive::reader::OpenOptions::default()
        },
    )
    .unwrap();
    let mut files = Files::default();
    ar.scan(&mut files).unwrap();
    files.got
}
