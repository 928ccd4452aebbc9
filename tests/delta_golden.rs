//! Issue 17: a golden delta archive freezes the layout of docs/FORMAT.md §16 (the 0x8001
//! extension, the binding, the `zstd+base` block and its region descriptor). A fixed base
//! and a fixed next version, written with fixed ids and times through the library, must give
//! exactly the bytes in `tests/golden/delta_v2.hex` (base, then delta), and read back to the
//! new tree with the base. Regenerate (only when the format changes on purpose) with
//! `KRYPTA_REGENERATE_VECTORS=1 cargo test --test delta_golden`.

mod golden_common;

use std::path::Path;
use std::sync::Arc;

use golden_common::{assert_pair_golden, seeded, write_delta_golden};
use krypta::archive::reader::{BaseArchive, OpenOptions};
use krypta::codec::Level;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/delta_v2.hex");

#[test]
fn a_small_delta_archive_is_byte_for_byte_the_golden_one() {
    let dir = tempfile::tempdir().unwrap();
    // Base: a 100,000-byte file and a 3,000-byte one (two 64 KiB blocks).
    let a = seeded(100_000, 7);
    let b = seeded(3000, 8);
    let base = write_delta_golden(
        Level::DEFAULT,
        &[("d/a.bin", a.clone()), ("d/b.bin", b.clone())],
        0xb0,
        None,
    );
    let base_path = dir.path().join("base.kry");
    std::fs::write(&base_path, &base).unwrap();
    let opened = Arc::new(BaseArchive::open(&base_path, OpenOptions::default()).unwrap());
    // Next version: a.bin with 3 bytes changed and 10 inserted; b.bin as it was; c.bin new.
    let mut a2 = a.clone();
    a2[5000] ^= 1;
    a2[70_000] ^= 2;
    a2[99_000] ^= 3;
    a2.splice(40_000..40_000, *b"0123456789");
    let c = seeded(500, 9);
    let delta = write_delta_golden(
        Level::DEFAULT,
        &[
            ("d/a.bin", a2.clone()),
            ("d/b.bin", b.clone()),
            ("d/c.bin", c.clone()),
        ],
        0xd0,
        Some(Arc::clone(&opened)),
    );
    assert_pair_golden(GOLDEN, &base, &delta, "the delta archive layout");
    // The delta names the base; its blocks are zstd+base blocks (codec 2 after each
    // 16-byte frame head); and it reads back to the new tree.
    let header =
        krypta::archive::reader::read_header_only(&write_to(dir.path(), "d.kry", &delta)).unwrap();
    assert_eq!(header.delta_base(), Some(([0xb0; 16], opened.binding())));
    let hl = find_first_frame(&delta);
    assert_eq!(delta[hl + 16], 2, "first data block's codec");
    let out = dir.path().join("out");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_krypta"))
        .args(["x", "-q", "--base"])
        .arg(&base_path)
        .arg(dir.path().join("d.kry"))
        .arg("-C")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(out.join("d/a.bin")).unwrap(), a2);
    assert_eq!(std::fs::read(out.join("d/b.bin")).unwrap(), b);
    assert_eq!(std::fs::read(out.join("d/c.bin")).unwrap(), c);
}

fn write_to(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The header length H (FORMAT.md §2: u32 at offset 12): the first frame starts there.
fn find_first_frame(archive: &[u8]) -> usize {
    u32::from_le_bytes(archive[12..16].try_into().unwrap()) as usize
}
