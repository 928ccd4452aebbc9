//! Issue 17: at levels 6 and up a delta block may be written as `diff+base` (codec 3,
//! docs/FORMAT.md §16.6). Through the binary: dense substitutions (one byte in every 9),
//! an insertion, a deletion and a new file in the same block, identical files beside them,
//! written at `-l 6` and `-l 7`, plain and encrypted, restore bit for bit with `--base`
//! and pass `t`; and the `-l 7` delta is a small fraction of the default's `zstd+base` one,
//! which only the sparse diff bytes of codec 3 give.

mod cli_common;
mod common;
mod delta_common;

use cli_common::*;
use common::bytes;
use delta_common::{default_and_level_7_deltas, each_delta_restores_v2};

#[test]
fn diff_base_blocks_of_dense_edits_restore_exactly_plain_and_encrypted() {
    let fx = Fx::new();
    let old = bytes(3 << 20, 11, false);
    let mut new = old.clone();
    for i in (5..new.len()).step_by(9) {
        new[i] = new[i].wrapping_add(1);
    }
    new.splice(1_000_000..1_000_000, *b"an insertion of some bytes");
    new.drain(2_000_000..2_000_100);
    fx.file("v1/app.bin", &old);
    fx.file("v1/same.bin", &bytes(20_000, 12, false));
    fx.file("v2/app.bin", &new);
    fx.file("v2/same.bin", &bytes(20_000, 12, false));
    fx.file("v2/new.bin", &bytes(30_000, 13, false));
    default_and_level_7_deltas(&fx);
    let size = |a: &str| std::fs::metadata(fx.p(a)).unwrap().len();
    // 350,000 substitutions: zstd codes each as a literal and a repeat offset (hundreds of
    // KB); codec 3 as a gap of 8 and a value of 1, which compress to almost nothing. The
    // new file's 30,000 random bytes are most of what is left.
    assert!(size("d3.kry") > 200_000, "default {}", size("d3.kry"));
    assert!(size("d7.kry") < 45_000, "-l 7 {}", size("d7.kry"));
    // The fast effort (-l 6) finds alignments through 24 equal bytes in a row, which no
    // place of this file keeps (a substitution every 9): its scan finds nothing, so the
    // block gets zstd's frame at level 6's own tables (level 5's), a quarter of the
    // default's.
    assert!(
        size("d6.kry") * 4 < size("d3.kry"),
        "-l 6 {} against the default {}",
        size("d6.kry"),
        size("d3.kry")
    );
    assert!(size("e7.kry") < 45_000, "-l 7 encrypted {}", size("e7.kry"));
    each_delta_restores_v2(&fx);
}
