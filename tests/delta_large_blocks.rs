//! Delta archives written with the largest blocks (`-b 255M`, `-b 256M`) against a base file
//! of more than 256 MiB: every block's base region stays within the format's 256 MiB
//! (docs/FORMAT.md §16.2), so the archive `c` writes is one `t` and `x` read. Before, the
//! writer's cap was max(32 MiB, block + 2 MiB), 258 MiB for 256 MiB blocks, and every reader
//! refused the block ("base region: length 269483983 outside 1..=268435456", exit 3).

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// A base file of 260 MiB of zeros: written out (not sparse), so its bytes are DATA in the
/// base's record stream (holes are not), and cheap to compress.
const BASE_FILE: usize = 260 << 20;

#[test]
fn a_delta_with_256_mib_blocks_against_a_large_base_file_reads_back() {
    let fx = Fx::new();
    {
        use std::io::Write;
        fx.mkdir("v1");
        let mut f = std::fs::File::create(fx.p("v1/f")).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..BASE_FILE >> 20 {
            f.write_all(&zeros).unwrap();
        }
    }
    fx.ok(&["c", "-q", "-j", "1", "base.kry", "v1"]);
    // The new version shrank to 4 KiB: its one segment's region reaches the whole base file
    // (1 MiB each side, and the shrinkage to the right), 260 MiB of base stream.
    let mut small = vec![0u8; 4096];
    small[100] = 1;
    fx.file("v2/f", &small);
    for b in ["255M", "256M"] {
        let d = format!("d{b}.kry");
        fx.ok(&[
            "c", "-q", "-j", "1", "-b", b, "--base", "base.kry", &d, "v2",
        ]);
        let t = fx.run(&["t", "-j", "1", "--base", "base.kry", &d]);
        assert_eq!(code(&t), 0, "-b {b}: {}", err(&t));
        let o = format!("out{b}");
        fx.ok(&["x", "-q", "-j", "1", "--base", "base.kry", &d, "-C", &o]);
        assert_eq!(fx.read(&format!("{o}/v2/f")), small, "-b {b}");
    }
}

/// With 32 MiB delta blocks (`-l 9`'s default with `--base`; `-b 32M` here at the default
/// level, which regions work the same for) a block's region is the block and 2 MiB. A block
/// whose files lie further apart in the base (a file between them stored as a reference),
/// or a file that shrank near its start, reached past that: the region was cut to its
/// first 34 MiB and the rest of the block was compressed against nothing (random bytes
/// stored as they are). The writer now cuts the block before such a segment, so every
/// byte of the new version finds its base bytes. Random data: any byte the region misses
/// costs a byte.
#[test]
fn a_32_mib_delta_block_never_reaches_past_its_region() {
    let fx = Fx::new();
    let mib = 1 << 20;
    // A file between two others that is stored as a reference (identical, 8 MiB): its base
    // bytes lie between theirs, and none of the new version's blocks hold them.
    let a = common::bytes(20 * mib, 31, false);
    let m = common::bytes(8 * mib, 32, false);
    let z = common::bytes(20 * mib, 33, false);
    fx.file("v1/a", &a);
    fx.file("v1/m", &m);
    fx.file("v1/z", &z);
    let (mut a2, mut z2) = (a.clone(), z.clone());
    a2[1000] ^= 1;
    z2[5 * mib] ^= 1;
    fx.file("v2/a", &a2);
    fx.file("v2/m", &m);
    fx.file("v2/z", &z2);
    // A 48 MiB file with 10 MiB cut from near its start.
    let s = common::bytes(48 * mib, 34, false);
    fx.file("v1/s", &s);
    let mut s2 = s[..mib].to_vec();
    s2.extend_from_slice(&s[11 * mib..]);
    fx.file("v2/s", &s2);
    fx.ok(&["c", "-q", "-j", "1", "base.kry", "v1"]);
    fx.ok(&[
        "c", "-q", "-j", "1", "-b", "32M", "--base", "base.kry", "d.kry", "v2",
    ]);
    let size = std::fs::metadata(fx.p("d.kry")).unwrap().len();
    // Two changed bytes and one cut: a few KiB of zstd frames, tags and records. The same
    // trees of os.urandom bytes through the CLI: 20,983,544 bytes before, 13,183 now
    // (`-l 9`: 20,973,395 and 4,093).
    assert!(size < 64 << 10, "{size} bytes");
    let t = fx.run(&["t", "-j", "1", "--base", "base.kry", "d.kry"]);
    assert_eq!(code(&t), 0, "{}", err(&t));
    fx.ok(&[
        "x", "-q", "-j", "1", "--base", "base.kry", "d.kry", "-C", "out",
    ]);
    for (f, want) in [("a", &a2), ("m", &m), ("z", &z2), ("s", &s2)] {
        assert!(fx.read(&format!("out/v2/{f}")) == *want, "{f} restored");
    }
}
