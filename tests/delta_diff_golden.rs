//! A golden delta archive whose blocks are `diff+base` (codec 3, docs/FORMAT.md §16.6): a
//! fixed base and a fixed next version with a substitution every 97 bytes, an insertion and
//! a new file, written at level 7 (where the writer makes codec 3) with fixed ids and
//! times, must give exactly the bytes in `tests/golden/delta_diff_v2.hex` (base, then delta),
//! and read back bit for bit with the base. Regenerate (only when the format or the encoder
//! changes on purpose, keeping the old file as a read vector like
//! `delta_diff_v2_session28.hex`) with `KRYPTA_REGENERATE_VECTORS=1 cargo test --test
//! delta_diff_golden`.
//!
//! `tests/golden/delta_diff_v2_session28.hex` is the same pair as written by the first
//! `diff+base` encoder (2026-12-07, session 28; a sequence parser's matches, other commands
//! for the same bytes): it must keep reading bit for bit.

mod golden_common;

use std::sync::Arc;

use golden_common::{assert_pair_golden, seeded, write_delta_golden};
use krypta::archive::reader::{BaseArchive, OpenOptions};
use krypta::codec::Level;

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/golden/delta_diff_v2.hex"
);

/// The inputs of the golden pair: the base's file, and the delta's two files.
fn inputs() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let a = seeded(100_000, 17);
    // Next version: every 97th byte plus one (1,031 substitutions), 10 bytes inserted, and a
    // new file after it in the same block.
    let mut a2 = a.clone();
    for i in (50..a2.len()).step_by(97) {
        a2[i] = a2[i].wrapping_add(1);
    }
    a2.splice(60_000..60_000, *b"0123456789");
    (a, a2, seeded(300, 18))
}

/// The base and delta archives of a golden `.hex` file (a `# …` line before each).
fn golden_pair(path: &str) -> (Vec<u8>, Vec<u8>) {
    let text = std::fs::read_to_string(path).expect(path);
    let hexes: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(hexes.len(), 2, "{path}");
    let unhex = |h: &str| -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    };
    (unhex(hexes[0]), unhex(hexes[1]))
}

/// `krypta x --base` of `delta` into a fresh directory: (a.bin, c.bin).
fn extract(dir: &std::path::Path, base: &[u8], delta: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let base_path = dir.join("base.kry");
    let d_path = dir.join("d.kry");
    std::fs::write(&base_path, base).unwrap();
    std::fs::write(&d_path, delta).unwrap();
    let out = dir.join("out");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_krypta"))
        .args(["x", "-q", "--base"])
        .arg(&base_path)
        .arg(&d_path)
        .arg("-C")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (
        std::fs::read(out.join("d/a.bin")).unwrap(),
        std::fs::read(out.join("d/c.bin")).unwrap(),
    )
}

/// Offset of the first frame's head: the header's length is at offset 12 (u32 LE, §2).
fn first_frame(archive: &[u8]) -> usize {
    u32::from_le_bytes(archive[12..16].try_into().unwrap()) as usize
}

#[test]
fn a_diff_delta_archive_is_byte_for_byte_the_golden_one() {
    let dir = tempfile::tempdir().unwrap();
    let (a, a2, c) = inputs();
    let base = write_delta_golden(Level::new(7).unwrap(), &[("d/a.bin", a)], 0xb1, None);
    let base_path = dir.path().join("base.kry");
    std::fs::write(&base_path, &base).unwrap();
    let opened = Arc::new(BaseArchive::open(&base_path, OpenOptions::default()).unwrap());
    let delta = write_delta_golden(
        Level::new(7).unwrap(),
        &[("d/a.bin", a2.clone()), ("d/c.bin", c.clone())],
        0xd1,
        Some(Arc::clone(&opened)),
    );
    assert_pair_golden(GOLDEN, &base, &delta, "the diff+base archive layout");
    // Its first data block is a diff+base block: codec 3 after the 16-byte frame head.
    let at = first_frame(&delta);
    assert_eq!(delta[at + 16], 3, "first data block's codec");
    assert_eq!(extract(dir.path(), &base, &delta), (a2, c));
    // Far smaller than the zstd+base frame the default level writes for the same pair.
    assert!(delta.len() < 3_000, "{} bytes", delta.len());
}

/// The first encoder's archive of the same pair (other commands, the same format) reads bit
/// for bit, and is not what the writer makes now.
#[test]
fn the_first_diff_encoders_golden_archive_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (_, a2, c) = inputs();
    let (base, delta) = golden_pair(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/delta_diff_v2_session28.hex"
    ));
    assert_eq!(
        delta[first_frame(&delta) + 16],
        3,
        "first data block's codec"
    );
    let (current_base, current_delta) = golden_pair(GOLDEN);
    assert!(base == current_base, "the base archive is the same in both");
    assert!(delta != current_delta, "the old delta is the current one");
    assert_eq!(extract(dir.path(), &base, &delta), (a2, c));
}
