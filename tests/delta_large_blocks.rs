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
