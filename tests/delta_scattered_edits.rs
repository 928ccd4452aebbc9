//! Issue 17: at levels 7 and up a delta block is also written as `diff+base` and the smaller
//! payload is kept (`codec::block::against`, docs/FORMAT.md §16.3). Through the binary: a
//! rebuilt-executable-like change (one byte in every 97 changed, a piece inserted) written
//! at the default level and at `-l 7`, plain and encrypted, restores bit for bit with
//! `--base`, `t` passes, and `-l 7` is smaller by the margin the top levels exist for.
//! (Until 2026-12-07 this file was `delta_own_parser.rs`, for the zstd-sequences frame of
//! krypta's own parser that `diff+base` replaced.)

mod cli_common;
mod common;
mod delta_common;

use cli_common::*;
use common::bytes;
use delta_common::{default_and_level_7_deltas, each_delta_restores_v2};

#[test]
fn level_7_deltas_of_scattered_edits_are_smaller_and_restore_exactly() {
    let fx = Fx::new();
    let old = bytes(6 << 20, 5, false);
    let mut new = old.clone();
    for i in (48..new.len()).step_by(97) {
        new[i] = new[i].wrapping_add(1);
    }
    new.splice(3_000_000..3_000_000, bytes(5000, 6, false));
    fx.file("v1/app.bin", &old);
    fx.file("v2/app.bin", &new);
    // v2/app.bin is matched to v1/app.bin by its path below the first component.
    default_and_level_7_deltas(&fx);
    let size = |a: &str| std::fs::metadata(fx.p(a)).unwrap().len();
    // 65,000 edits: zstd's fast parser resumes after an edit only where its tables hold
    // the position; the diff codes each as a gap and a value.
    assert!(
        size("d7.kry") * 10 < size("d3.kry") * 8,
        "-l 7 {} against the default {}",
        size("d7.kry"),
        size("d3.kry")
    );
    // The fast effort follows the alignment through the edits (each window of 64 bytes
    // still agrees on 63) as the normal one does.
    assert!(
        size("d6.kry") * 10 < size("d3.kry") * 8,
        "-l 6 {} against the default {}",
        size("d6.kry"),
        size("d3.kry")
    );
    each_delta_restores_v2(&fx);
}
