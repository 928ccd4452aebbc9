//! Delta archives written before c5951ed stay readable. From bf4bda0 (2026-12-02) to c5951ed
//! (2026-12-06) the writer pushed a referenced file's ENTRY, BASE_REF and END_DIGEST as one
//! record, so when a block cut fell inside ENTRY or BASE_REF the next block's first-record
//! offset skipped the BASE_REF and/or END_DIGEST that started in it, and every reader of
//! that time refused the archive it had just written ("block header: first record Some(45)
//! of block 1, but a record starts at 4", exit 3). The archives in
//! `tests/golden/delta_ref_unmarked_v2.hex` were written by that writer (the release build
//! of 1cd88b2): one cut inside BASE_REF, one inside ENTRY. They must restore exactly,
//! from a file and from a pipe, and pass `t` (FORMAT.md §5.2 says what a reader accepts).
//!
//! The recipe (never regenerate: the point is the old writer's bytes): v1/b.bin and
//! v2/b.bin = [`b_bin`]; `c base.kry v1`; v2/a.bin = [`a_bin`] of 65,276 or 65,349 bytes,
//! v2/c.bin = [`c_bin`]; `c -b 64K --base base.kry dN.kry v2`.

mod cli_common;
mod common;

use cli_common::*;

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/golden/delta_ref_unmarked_v2.hex"
);

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn a_bin(n: usize) -> Vec<u8> {
    let mut t: Vec<u8> = (0..n / 22 + 1)
        .flat_map(|i| format!("new file a, line {i:06}\n").into_bytes())
        .collect();
    t.truncate(n);
    t
}

fn b_bin() -> Vec<u8> {
    (0..1200)
        .flat_map(|i| {
            format!("line {i:06} of the reference file, unchanged between versions\n").into_bytes()
        })
        .collect()
}

fn c_bin() -> Vec<u8> {
    (0..40)
        .flat_map(|i| format!("c file line {i:04}\n").into_bytes())
        .collect()
}

#[test]
fn archives_whose_block_cut_fell_inside_a_references_records_restore() {
    let golden = std::fs::read_to_string(GOLDEN).expect("the golden file");
    let lines: Vec<&str> = golden.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 3);
    let fx = Fx::new();
    fx.file("base.kry", &unhex(lines[0]));
    for (line, n) in [(lines[1], 65_276), (lines[2], 65_349)] {
        let d = format!("d{n}.kry");
        fx.file(&d, &unhex(line));
        fx.ok(&["t", "-q", "--base", "base.kry", &d]);
        let dest = format!("out{n}");
        fx.ok(&["x", "-q", "--base", "base.kry", &d, "-C", &dest]);
        let piped = fx.run_stdin(
            &[
                "x",
                "-q",
                "--base",
                "base.kry",
                "-",
                "-C",
                &format!("pipe{n}"),
            ],
            &fx.read(&d),
        );
        assert_eq!(piped.status.code(), Some(0), "{}", err(&piped));
        for dir in [dest, format!("pipe{n}")] {
            assert_eq!(fx.read(&format!("{dir}/v2/a.bin")), a_bin(n), "{dir}");
            assert_eq!(fx.read(&format!("{dir}/v2/b.bin")), b_bin(), "{dir}");
            assert_eq!(fx.read(&format!("{dir}/v2/c.bin")), c_bin(), "{dir}");
        }
        // b.bin is the reference whose records the block cut split.
        let l = out(&fx.ok(&["l", &d]));
        assert!(l.contains("v2/b.bin"), "{l}");
    }
}
