//! Issue 17, delta archives: files identical to their base file are stored as BASE_REF records
//! (docs/FORMAT.md §16.5), through the binary: the size of an identical tree (bounded by the
//! bytes its records and index take, derived below), round trips plain and encrypted, a mixed
//! tree, a damaged base frame under a referenced entry (exit 9, nothing under a final name),
//! `l` without the base, `t --base`, and salvage of a delta archive whose frame holding a
//! reference is damaged.

mod cli_common;
mod common;
mod delta_common;

use cli_common::*;
use common::{assert_same_tree, bytes, code};
use delta_common::*;

/// The header length H (FORMAT.md §2): the first data frame starts there.
fn header_len(a: &[u8]) -> usize {
    u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize
}

/// (offset, body length, raw length of its block) of every data frame of an unencrypted
/// archive, walked from the header (FORMAT.md §4, §5).
fn data_frames(a: &[u8]) -> Vec<(usize, usize, u32)> {
    let mut v = Vec::new();
    let mut at = header_len(a);
    while a[at] == 1 {
        let body = u32::from_le_bytes(a[at + 4..at + 8].try_into().unwrap()) as usize;
        let raw = u32::from_le_bytes(a[at + 20..at + 24].try_into().unwrap());
        v.push((at, body, raw));
        at += 16 + body + 32;
    }
    v
}

/// Longest owner user or group name a test machine gives (Linux `useradd` allows 32).
const NAME_MAX: usize = 32;

/// Upper bound of one ENTRY record (FORMAT.md §6, §7.1): tag, 28 fixed bytes, the path, an
/// empty link, and a fields area holding at most the two owner names.
fn entry_record_max(path: &str) -> usize {
    1 + 28 + 4 + path.len() + 4 + 4 + 2 * (2 + 4 + NAME_MAX)
}

/// Upper bound of one index entry (FORMAT.md §8), front coding ignored (the whole path).
fn index_entry_max(path: &str, file: bool) -> usize {
    1 + 4 + (entry_record_max(path) - 1) + 8 + if file { 32 } else { 0 } + 8 + 4 + 8
}

#[test]
fn an_identical_tree_is_references_only_within_the_bound_its_records_and_index_give() {
    let fx = Fx::new();
    versions(&fx, Change::None);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    let c = fx.ok(&["c", "--base", "base.kry", "delta.kry", "v1"]);
    assert!(
        err(&c).contains(", 6 files as references to the base), "),
        "{}",
        err(&c)
    );
    let d = std::fs::read(fx.p("delta.kry")).unwrap();
    let dirs = ["v1", "v1/empty", "v1/s"];
    let files: Vec<String> = std::iter::once("v1/big.bin".to_string())
        .chain((0..5).map(|i| format!("v1/s/{i}.dat")))
        .collect();
    // The record stream holds the entries, one BASE_REF (9 bytes) and one END_DIGEST (41)
    // per file, nothing else but PAD to the block's end: no DATA at all. One data block.
    let frames = data_frames(&d);
    assert_eq!(frames.len(), 1, "{frames:?}");
    let records_max: usize = dirs.iter().map(|p| entry_record_max(p)).sum::<usize>()
        + files
            .iter()
            .map(|p| entry_record_max(p) + 9 + 41)
            .sum::<usize>();
    let raw = frames[0].2 as usize;
    assert!(raw <= records_max, "record stream {raw} > {records_max}");
    // The archive: header, one data frame (48 + 24-byte block header + at most the raw
    // records: a block that does not shrink is stored), one index frame (the same around
    // the index), the footer. Derived bound, not a measurement.
    let index_max = 8
        + dirs.iter().map(|p| index_entry_max(p, false)).sum::<usize>()
        + files.iter().map(|p| index_entry_max(p, true)).sum::<usize>()
        + 8
        + 8;
    let bound = header_len(&d) + (48 + 24 + records_max) + (48 + 24 + index_max) + 64;
    eprintln!("identical tree: delta {} bytes, bound {bound}", d.len());
    assert!(d.len() <= bound, "delta {} > bound {bound}", d.len());
    fx.ok(&["x", "-q", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert_same_tree(&fx.p("v1"), &fx.p("out/v1"));
    let t = fx.ok(&["t", "--base", "base.kry", "delta.kry"]);
    assert_eq!(
        err(&t).trim(),
        format!(
            "krypta: delta.kry: OK (9 entries, 6 files, {} bytes, 1 blocks verified)",
            BIG + (0..5).map(|i| 3000 + 4000 * i).sum::<usize>()
        )
    );
}

#[test]
fn l_lists_a_referenced_file_with_its_size_without_the_base() {
    let fx = Fx::new();
    versions(&fx, Change::None);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "--base", "base.kry", "delta.kry", "v1"]);
    std::fs::rename(fx.p("base.kry"), fx.p("gone.kry")).unwrap();
    let listed = out(&fx.ok(&["l", "--json", "delta.kry"]));
    let entries: Vec<serde_json::Value> = listed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 9, "{listed}");
    let big = entries
        .iter()
        .find(|e| e["path"] == "v1/big.bin")
        .expect("big.bin listed");
    assert_eq!(big["size"], BIG as u64);
    assert_eq!(big["type"], "file");
}

#[test]
fn references_round_trip_with_encrypted_bases_and_outputs() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["keygen", "-q", "-o", "kb"]);
    fx.ok(&["keygen", "-q", "-o", "ko"]);
    fx.file("pw", b"base password\n");
    let fast = ["--kdf", "pbkdf2", "--kdf-iterations", "100000"];
    fx.ok(&[&["c", "-q", "--pass-file", "pw"][..], &fast, &["b-pw.kry", "v1"]].concat());
    fx.ok(&["c", "-q", "--keyfile", "kb", "b-kf.kry", "v1"]);
    fx.ok(&["c", "-q", "b.kry", "v1"]);
    // (base, its key options, OUT's key options) for v1 against itself (all references) and
    // v2 (a mixed tree).
    let cases: [(&str, &[&str], &[&str]); 3] = [
        ("b-pw.kry", &["--base-pass-file", "pw"], &[]),
        ("b.kry", &[], &["--keyfile", "ko"]),
        ("b-kf.kry", &["--base-keyfile", "kb"], &["--keyfile", "ko"]),
    ];
    for (n, (base, bkeys, okeys)) in cases.iter().enumerate() {
        for tree in ["v1", "v2"] {
            let name = format!("d{n}-{tree}.kry");
            fx.ok(&[
                &["c", "-q"][..],
                okeys,
                &["--base", base],
                bkeys,
                &[name.as_str(), tree],
            ]
            .concat());
            let dir = format!("out{n}-{tree}");
            fx.ok(&[
                &["x", "-q"][..],
                okeys,
                &["--base", base],
                bkeys,
                &[name.as_str(), "-C", dir.as_str()],
            ]
            .concat());
            assert_same_tree(&fx.p(tree), &fx.p(&format!("{dir}/{tree}")));
            fx.ok(&[&["t"][..], okeys, &["--base", base], bkeys, &[name.as_str()]].concat());
        }
    }
}

#[test]
fn a_mixed_tree_references_exactly_the_identical_files_of_the_same_path() {
    let fx = Fx::new();
    // v1: a large and a small identical file, one that changes, one that goes, one that is
    // renamed (identical content under another path: not referenced, matching is by path).
    let same_big = bytes(300_000, 1, false);
    let same_small = bytes(700, 2, false);
    let moved = bytes(50_000, 3, false);
    fx.file("v1/same.bin", &same_big);
    fx.file("v1/small.txt", &same_small);
    fx.file("v1/edit.bin", &bytes(80_000, 4, false));
    fx.file("v1/gone.bin", &bytes(40_000, 5, false));
    fx.file("v1/old-name.bin", &moved);
    fx.file("v2/same.bin", &same_big);
    fx.file("v2/small.txt", &same_small);
    let mut edited = bytes(80_000, 4, false);
    edited[40_000] ^= 1;
    fx.file("v2/edit.bin", &edited);
    fx.file("v2/new-name.bin", &moved);
    fx.file("v2/new.bin", &bytes(60_000, 6, false));
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    // The top directory is renamed too: v1/x matches v2/x below it (FORMAT.md §16.3).
    // Exactly same.bin and small.txt (no digest in the base: under 4 KiB, hashed by the
    // writer's walk of the base) are references; new-name.bin is not (another path).
    let c = fx.ok(&["c", "--base", "base.kry", "delta.kry", "v2"]);
    assert!(
        err(&c).contains(", 2 files as references to the base), "),
        "{}",
        err(&c)
    );
    fx.ok(&["c", "-q", "plain.kry", "v2"]);
    fx.ok(&["x", "-q", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert_same_tree(&fx.p("v2"), &fx.p("out/v2"));
    // What the delta stores in full: new-name.bin (50,000 random bytes), new.bin (60,000),
    // edit.bin's blocks against its base file. The referenced files' 300,700 bytes are not
    // in it: with them the archive would exceed 50,000 + 60,000 + 300,700.
    let delta = size(&fx, "delta.kry");
    let plain = size(&fx, "plain.kry");
    eprintln!("mixed: delta {delta}, plain {plain}");
    assert!(plain > 490_700, "{plain}");
    assert!(delta > 50_000 + 60_000, "{delta}");
    assert!(delta < 50_000 + 60_000 + 16_384, "{delta}");
    let t = fx.ok(&["t", "--base", "base.kry", "delta.kry"]);
    assert!(
        err(&t).contains("OK (6 entries, 5 files, 490700 bytes"),
        "{}",
        err(&t)
    );
}

#[test]
fn a_damaged_base_frame_under_a_referenced_file_is_exit_9_with_nothing_under_its_name() {
    let fx = Fx::new();
    versions(&fx, Change::None);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "--base", "base.kry", "delta.kry", "v1"]);
    // One bit in the middle of the base: inside the first frame, which holds big.bin (the
    // first file; random bytes, a stored block). Its tag is not touched: the binding holds.
    let mut b = std::fs::read(fx.p("base.kry")).unwrap();
    let h = header_len(&b);
    let first = data_frames(&b)[0];
    assert!(first.1 > 1 << 20, "{first:?}");
    b[h + 16 + first.1 / 2] ^= 0x01;
    std::fs::write(fx.p("base.kry"), &b).unwrap();
    for cmd in [
        &["x", "-q", "--base", "base.kry", "delta.kry", "-C", "out"][..],
        &["t", "--base", "base.kry", "delta.kry"],
    ] {
        let o = fx.run(cmd);
        assert_eq!(code(&o), 9, "{}", err(&o));
        assert_eq!(
            err(&o).trim(),
            format!(
                "krypta: delta.kry: v1/big.bin: its content is base entry 1 (v1/big.bin), which is unusable: base.kry: base frame 0 at byte {h}: damaged (its tag does not verify)"
            )
        );
    }
    assert!(!fx.exists("out/v1/big.bin"));
    let left = walk(&fx.p("out"));
    assert!(left.iter().all(|p| !p.contains(".krypta")), "{left:?}");
}

#[test]
fn salvage_of_a_delta_archive_loses_only_the_entries_of_the_damaged_frame() {
    let fx = Fx::new();
    // a.dat and z.dat are identical (references); m.bin is new random bytes between them
    // that spans several 64 KiB blocks, so z.dat's BASE_REF lies in the last data frame.
    let a = bytes(100_000, 21, false);
    let z = bytes(90_000, 22, false);
    fx.file("v1/a.dat", &a);
    fx.file("v1/z.dat", &z);
    fx.file("v2/a.dat", &a);
    fx.file("v2/m.bin", &bytes(200_000, 23, false));
    fx.file("v2/z.dat", &z);
    fx.ok(&["c", "-q", "-b", "64K", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "-b", "64K", "--base", "base.kry", "delta.kry", "v2"]);
    let mut d = std::fs::read(fx.p("delta.kry")).unwrap();
    let frames = data_frames(&d);
    assert_eq!(frames.len(), 4, "{frames:?}");
    // The last data frame holds m.bin's last bytes and all of z.dat's records: zero 16 of
    // its body's bytes.
    let (at, body, _) = *frames.last().unwrap();
    d[at + 16 + body / 2..at + 16 + body / 2 + 16].fill(0);
    std::fs::write(fx.p("delta.kry"), &d).unwrap();
    let o = fx.run(&["x", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert_eq!(code(&o), 5, "{}", err(&o));
    let e = err(&o);
    assert_eq!(
        e.lines().last().unwrap(),
        "krypta: delta.kry: restored 2 of 4 entries, 2 damaged",
        "{e}"
    );
    assert!(
        e.contains("krypta: warning: v2/z.dat: not restored: frame 3 at byte "),
        "{e}"
    );
    assert_eq!(fx.read("out/v2/a.dat"), a);
    assert!(!fx.exists("out/v2/m.bin") && !fx.exists("out/v2/z.dat"));
    let left = walk(&fx.p("out"));
    assert!(left.iter().all(|p| !p.contains(".krypta")), "{left:?}");
    let t = fx.run(&["t", "--base", "base.kry", "delta.kry"]);
    assert_eq!(code(&t), 5, "{}", err(&t));
    assert_eq!(fx.names("delta.kry").len(), 4);
}

fn walk(root: &std::path::Path) -> Vec<String> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let p = e.path();
            v.push(p.display().to_string());
            if p.is_dir() {
                v.extend(walk(&p));
            }
        }
    }
    v
}
