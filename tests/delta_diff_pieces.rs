//! Issue 17, reading `diff+base` blocks (codec 3) against their base region where it lies:
//! the decoded base blocks the region spans, read piece by piece, not copied into one
//! buffer (`src/archive/reader/base_region.rs`, `src/codec/block/diff/source.rs`). A base
//! of 64 KiB blocks makes every region of a delta of 1 MiB blocks span dozens of them, with
//! copies and substitutions across every boundary; the delta's blocks differ in size (the
//! last is shorter, and so is its region); they restore bit for bit at `-j 1` and `-j 2`,
//! with a cache too small to keep a region, and a damaged base frame inside a region is
//! still refused, naming it.

mod cli_common;
mod common;
mod delta_common;

use std::sync::Arc;

use cli_common::*;
use delta_common::{assert_a_damaged_base_body_is_refused, read_delta};
use krypta::archive::reader::{BaseArchive, OpenOptions};

/// v1: 3.5 MiB of pseudo-random bytes; v2: one byte in every 9 changed, an insertion, a
/// deletion and a moved stretch (a seek back across base blocks). The base in 64 KiB
/// blocks, the delta at `-l 7` in 1 MiB blocks (4 blocks, the last shorter).
fn pair(fx: &Fx) -> Vec<u8> {
    let old = common::bytes(3_500_000, 21, false);
    let mut new = old.clone();
    for i in (3..new.len()).step_by(9) {
        new[i] = new[i].wrapping_add(3);
    }
    new.splice(700_000..700_000, *b"inserted across a base block boundary");
    new.drain(1_500_000..1_500_333);
    let moved: Vec<u8> = old[100_000..300_000].to_vec();
    new.splice(2_600_000..2_600_000, moved);
    fx.file("v1/app.bin", &old);
    fx.file("v2/app.bin", &new);
    fx.ok(&["c", "-q", "-b", "64K", "base.kry", "v1"]);
    fx.ok(&[
        "c",
        "-q",
        "-l",
        "7",
        "-b",
        "1M",
        "--base",
        "base.kry",
        "delta.kry",
        "v2",
    ]);
    new
}

/// Codec of each data block of the unencrypted archive at `path` (docs/FORMAT.md §4, §5:
/// a frame is a 16-byte head, its body, whose first byte is the codec, and a 32-byte tag).
fn codecs(path: &std::path::Path) -> Vec<u8> {
    let a = std::fs::read(path).unwrap();
    let mut at = u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize;
    let mut out = Vec::new();
    while a[at] == 1 {
        let body = u32::from_le_bytes(a[at + 4..at + 8].try_into().unwrap()) as usize;
        out.push(a[at + 16]);
        at += 16 + body + 32;
    }
    out
}

#[test]
fn diff_blocks_read_their_region_across_many_base_blocks_bit_for_bit() {
    let fx = Fx::new();
    let new = pair(&fx);
    // Every block of the delta is codec 3, so each is decoded against the pieces.
    assert_eq!(codecs(&fx.p("delta.kry")), [3, 3, 3, 3]);
    for jobs in [1, 2] {
        let base = BaseArchive::open(&fx.p("base.kry"), OpenOptions::default())
            .unwrap()
            .shared(jobs);
        let got = read_delta(&fx, Arc::clone(&base), jobs);
        assert!(got["v2/app.bin"] == new, "-j {jobs}");
        // 3.5 MB in 64 KiB blocks: 54 base frames, each decoded once.
        assert_eq!(base.data_frames(), 54);
        assert_eq!(base.frames_decoded(), 54, "-j {jobs}");
    }
    // Through the binary too, with the file's digest checked before it is named.
    fx.ok(&["x", "-q", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert!(fx.read("out/v2/app.bin") == new);
}

#[test]
fn diff_blocks_restore_with_a_cache_smaller_than_their_region() {
    let fx = Fx::new();
    let new = pair(&fx);
    let mut base = BaseArchive::open(&fx.p("base.kry"), OpenOptions::default()).unwrap();
    // Two base blocks: a region (about 3 MiB) holds its ~48 blocks while its block decodes
    // (a held block is not evicted), and the cache lets go of them once it is done: every
    // byte still comes from a verified base frame, and every frame is decoded at least once.
    base.set_cache_budget(128 << 10);
    let base = base.shared(2);
    let got = read_delta(&fx, Arc::clone(&base), 2);
    assert!(got["v2/app.bin"] == new);
    assert_eq!(base.data_frames(), 54);
    assert!(
        base.frames_decoded() >= 54,
        "{} decodes of 54 frames",
        base.frames_decoded()
    );
}

#[test]
fn a_damaged_base_block_inside_a_diff_region_is_refused_naming_it() {
    let fx = Fx::new();
    pair(&fx);
    // A body byte of a base frame in the middle of the data.
    let at = std::fs::read(fx.p("base.kry")).unwrap().len() / 2;
    assert_a_damaged_base_body_is_refused(&fx, at, 0x10, "1", "v2/app.bin");
}
