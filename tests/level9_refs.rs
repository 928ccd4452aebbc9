//! Level 9's referencing blocks (docs/FORMAT.md §5.3, §12.3), through the CLI: every data
//! block but the first of each group of 16 references the whole block before it, which the
//! index's frame table records exactly; the archive round-trips (files, pipes, `-j 1`),
//! selective extraction of a file in a late block of a group decodes from the group's start,
//! and a damaged block loses the later blocks of its group and nothing else.

mod common;

use std::path::Path;

use common::{code, krypta, s};
use krypta::archive::{Archive, OpenOptions};
use krypta::codec::REFERENCE_GROUP_BLOCKS;

/// Level 9 blocks of 256 KiB in these tests (`-b 256K`), so 19 blocks make two groups.
const BLOCK: u32 = 256 << 10;

/// Incompressible bytes whose 100,000-byte chunk repeats: a block compresses to almost
/// nothing when the chunk is in its prefix, to about one chunk when not.
fn repeating(n: usize, seed: u64) -> Vec<u8> {
    let chunk = common::bytes(100_000, seed, false);
    chunk.iter().cycle().take(n).copied().collect()
}

/// The files of the tree: a, b, c of 1.5 MiB each, then `late` (200 KB), which lies in the
/// second group; c spans the edge between the groups.
fn files() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("a", repeating(1_572_864, 1)),
        ("b", repeating(1_572_864, 2)),
        ("c", repeating(1_572_864, 3)),
        ("late", repeating(200_000, 4)),
    ]
}

fn run(args: &[&str]) -> (i32, String) {
    let o = krypta().args(args).output().unwrap();
    (code(&o), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Writes the tree under `root/in` and its archive at `level` to `root/NAME`.
fn archive(root: &Path, level: &str, name: &str) -> std::path::PathBuf {
    let input = root.join("in");
    if !input.exists() {
        std::fs::create_dir(&input).unwrap();
        for (n, c) in files() {
            std::fs::write(input.join(n), c).unwrap();
        }
    }
    let p = root.join(name);
    let o = krypta()
        .args(["c", "-q", "-l", level, "-b", "256K", "-j", "2", s(&p)])
        .args(["a", "b", "c", "late"])
        .current_dir(&input)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    p
}

/// (reference lengths of the data frames, first_seq and last_seq of each entry by path).
fn table(p: &Path) -> (Vec<u32>, Vec<(String, u64, u64)>) {
    let mut ar = Archive::open(p, OpenOptions::default()).unwrap();
    let ix = ar.read_index().unwrap().1;
    let spans = ix
        .entries
        .iter()
        .map(|e| {
            (
                String::from_utf8(e.meta.path.clone()).unwrap(),
                e.first_seq,
                e.last_seq,
            )
        })
        .collect();
    (ix.frame_ref_lens.clone(), spans)
}

#[test]
fn level_9_blocks_reference_their_predecessor_within_groups_of_16() {
    let tmp = tempfile::tempdir().unwrap();
    let p = archive(tmp.path(), "9", "a.kry");
    let (refs, spans) = table(&p);
    // 4.9 MB of records in 256 KiB blocks: 19 blocks, all full but the last.
    assert_eq!(refs.len(), 19, "{refs:?}");
    let want: Vec<u32> = (0..19u64)
        .map(|i| {
            if i % REFERENCE_GROUP_BLOCKS == 0 {
                0
            } else {
                BLOCK
            }
        })
        .collect();
    assert_eq!(refs, want);
    assert_eq!(REFERENCE_GROUP_BLOCKS, 16);
    let late = spans.iter().find(|e| e.0 == "late").unwrap();
    assert!(late.1 >= 16, "late starts in the second group: {spans:?}");
    let c = spans.iter().find(|e| e.0 == "c").unwrap();
    assert!(c.1 < 16 && c.2 >= 16, "c spans the groups' edge: {spans:?}");

    // The references pay: level 8 (independent blocks) holds each chunk once per block.
    let p8 = archive(tmp.path(), "8", "a8.kry");
    let (n9, n8) = (
        std::fs::metadata(&p).unwrap().len(),
        std::fs::metadata(&p8).unwrap().len(),
    );
    assert!(n9 * 3 < n8, "level 9 {n9} bytes, level 8 {n8}");

    // Whole round trips: test (both job counts), test from a pipe, extract.
    for args in [&["t", "-q"][..], &["t", "-q", "-j", "1"]] {
        let mut a = args.to_vec();
        a.push(s(&p));
        let (c, e) = run(&a);
        assert_eq!(c, 0, "{args:?}: {e}");
    }
    let o = krypta()
        .args(["t", "-q", "-"])
        .stdin(std::fs::File::open(&p).unwrap())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let out = tmp.path().join("all");
    let (c, e) = run(&["x", "-q", "-j", "1", "-o", s(&out), s(&p)]);
    assert_eq!(c, 0, "{e}");
    for (n, content) in files() {
        assert!(std::fs::read(out.join(n)).unwrap() == content, "{n}");
    }
    // From a pipe, where the reader has no frame table and keeps a maximal reference.
    let out = tmp.path().join("piped");
    let o = krypta()
        .args(["x", "-q", "-o", s(&out), "-"])
        .stdin(std::fs::File::open(&p).unwrap())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    for (n, content) in files() {
        assert!(std::fs::read(out.join(n)).unwrap() == content, "{n}");
    }
}

#[test]
fn selective_extraction_of_a_late_block_decodes_from_its_group_start() {
    let tmp = tempfile::tempdir().unwrap();
    let p = archive(tmp.path(), "9", "a.kry");
    for name in ["late", "c", "b"] {
        let out = tmp.path().join(format!("o-{name}"));
        let (c, e) = run(&["x", "-q", "-o", s(&out), s(&p), name]);
        assert_eq!(c, 0, "{name}: {e}");
        let want = files().into_iter().find(|f| f.0 == name).unwrap().1;
        assert!(std::fs::read(out.join(name)).unwrap() == want, "{name}");
        let listed: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
        assert_eq!(listed.len(), 1, "{name} alone");
    }
}

#[test]
fn a_damaged_block_loses_the_rest_of_its_group_only() {
    let tmp = tempfile::tempdir().unwrap();
    let p = archive(tmp.path(), "9", "a.kry");
    let (_, spans) = table(&p);
    let (_, lens) = krypta::list(&p, OpenOptions::default()).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    let hlen = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    // Frame 3 (inside a): one flipped byte in the middle of its body.
    let at: usize = hlen + lens[..3].iter().map(|&l| l as usize + 48).sum::<usize>();
    bytes[at + 16 + lens[3] as usize / 2] ^= 0x40;
    let q = tmp.path().join("bad.kry");
    std::fs::write(&q, &bytes).unwrap();
    let out = tmp.path().join("o");
    let (c, e) = run(&["x", "-o", s(&out), s(&q)]);
    assert_eq!(c, 5, "{e}");
    // a holds frame 3; b and c are decoded against it (their group starts at frame 0);
    // late's group starts at frame 16.
    assert!(e.contains("a: not restored: frame 3 at byte"), "{e}");
    for n in ["b", "c"] {
        assert!(
            e.contains(&format!(
                "{n}: not restored: block 3 of its reference group (frame 3 at byte"
            )),
            "{n}: {e}"
        );
        assert!(!out.join(n).exists(), "{n}");
    }
    assert!(!out.join("a").exists());
    let late = files().pop().unwrap();
    assert!(std::fs::read(out.join("late")).unwrap() == late.1);
    assert!(spans.iter().any(|e| e.0 == "late" && e.1 >= 16));
}

#[test]
fn a_stored_block_inside_a_group_is_sealed_from_its_own_copy_and_referenced_by_the_next() {
    // Random bytes do not compress: their blocks are stored (sealed in place), while the
    // writer's chain still shares the same buffer as the next block's prefix.
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let files = [
        ("a", repeating(600_000, 5)),
        ("r", common::bytes(700_000, 6, false)),
        ("z", repeating(600_000, 5)),
    ];
    for (n, c) in &files {
        std::fs::write(input.join(n), c).unwrap();
    }
    let p = tmp.path().join("s.kry");
    let o = krypta()
        .args([
            "c",
            "-q",
            "-l",
            "9",
            "-b",
            "256K",
            "-j",
            "1",
            s(&p),
            "a",
            "r",
            "z",
        ])
        .current_dir(&input)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let (refs, _) = table(&p);
    // 1.9 MB in 256 KiB blocks: 8 blocks. Blocks 3 and 4 lie wholly in r and are stored
    // (reference 0 inside the group); block 5, which compresses again, references stored
    // block 4's raw bytes: the buffer the chain shared while block 4 was sealed in place.
    assert_eq!(
        refs,
        vec![0, BLOCK, BLOCK, 0, 0, BLOCK, BLOCK, BLOCK],
        "{refs:?}"
    );
    let out = tmp.path().join("out");
    let (c, e) = run(&["x", "-q", "-o", s(&out), s(&p)]);
    assert_eq!(c, 0, "{e}");
    for (n, content) in &files {
        assert!(std::fs::read(out.join(n)).unwrap() == *content, "{n}");
    }
}
