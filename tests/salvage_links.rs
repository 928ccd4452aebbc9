//! Salvage and hard links: a hard link whose target file is damaged is named as lost with its
//! target, by `t` as by `x`, and never stops the salvage. Regressions: without the index (a
//! lost footer) and from a pipe, the salvage stopped at such a link and every intact entry
//! after it was lost without a word; with the index, `x` called the link an "unsafe entry
//! path" and `t` counted it as verified.

mod cli_common;
mod common;

use cli_common::*;
use common::{bytes, code};

/// t/a_big (`mib` MiB of random bytes, 1 MiB blocks), t/b_link (a hard link to it), and 20
/// small files after them; the archive with 1,000 zeros in a_big's second block.
fn damaged_archive(fx: &Fx, mib: usize) -> Vec<u8> {
    fx.file("t/a_big", &bytes(mib << 20, 5, false));
    std::fs::hard_link(fx.p("t/a_big"), fx.p("t/b_link")).unwrap();
    for i in 0..20 {
        fx.file(&format!("t/c_{i:02}"), format!("file {i}\n").as_bytes());
    }
    fx.ok(&["c", "-q", "-b", "1M", "h.kry", "t"]);
    let mut a = std::fs::read(fx.p("h.kry")).unwrap();
    a[(1 << 20) + 5000..(1 << 20) + 6000].fill(0);
    a
}

fn small_files_restored(fx: &Fx, out: &str) {
    for i in 0..20 {
        assert_eq!(
            fx.read(&format!("{out}/t/c_{i:02}")),
            format!("file {i}\n").as_bytes(),
            "c_{i:02}"
        );
    }
    assert!(!fx.exists(&format!("{out}/t/a_big")));
    assert!(!fx.exists(&format!("{out}/t/b_link")));
}

const LINK_LOST: &str = "krypta: warning: t/b_link: not restored: hard link to t/a_big, which ";

#[test]
fn with_the_index_t_and_x_both_name_the_link_to_a_damaged_file() {
    let fx = Fx::new();
    let a = damaged_archive(&fx, 3);
    std::fs::write(fx.p("d.kry"), &a).unwrap();
    let o = fx.run(&["x", "d.kry", "-o", "o"]);
    let e = err(&o);
    assert_eq!(code(&o), 5, "{e}");
    assert!(e.contains(&format!("{LINK_LOST}is damaged\n")), "{e}");
    assert!(!e.contains("unsafe"), "{e}");
    assert!(
        e.ends_with("krypta: d.kry: restored 21 of 23 entries, 2 damaged\n"),
        "{e}"
    );
    small_files_restored(&fx, "o");
    let t = fx.run(&["t", "d.kry"]);
    let e = err(&t);
    assert_eq!(code(&t), 5, "{e}");
    assert!(
        e.contains(
            "krypta: warning: t/b_link: not verified: hard link to t/a_big, which is damaged\n"
        ),
        "{e}"
    );
    assert!(
        e.ends_with("krypta: d.kry: verified 21 of 23 entries, 2 damaged\n"),
        "{e}"
    );
}

#[test]
fn without_the_index_the_salvage_goes_on_past_the_link() {
    let fx = Fx::new();
    let mut a = damaged_archive(&fx, 3);
    // The footer lost too: the salvage reads front to back.
    let n = a.len();
    a[n - 64..].fill(0);
    std::fs::write(fx.p("d.kry"), &a).unwrap();
    let o = fx.run(&["x", "d.kry", "-o", "o"]);
    let e = err(&o);
    assert_eq!(code(&o), 5, "{e}");
    assert!(
        e.contains(&format!("{LINK_LOST}was damaged (not restored)\n")),
        "{e}"
    );
    assert!(
        e.ends_with(
            "krypta: d.kry: restored 21 of at least 23 entries (the index is lost), 2 damaged\n"
        ),
        "{e}"
    );
    small_files_restored(&fx, "o");
}

#[test]
fn from_a_pipe_the_salvage_goes_on_past_the_link() {
    let fx = Fx::new();
    // Long enough that the reader has not read the pipe to its end when it meets the damage
    // (what it read ahead is lost with the pipe; the rest is spooled and salvaged).
    // The index at the end of the spooled rest names the link with its target's loss, as
    // from the file (it said "was damaged (not restored)" when the rest was read without
    // its index, and then "unsafe entry path: hard link target was not extracted").
    let a = damaged_archive(&fx, 24);
    let o = fx.run_stdin(&["x", "-", "-o", "o"], &a);
    let e = err(&o);
    assert_eq!(code(&o), 5, "{e}");
    assert!(e.contains(&format!("{LINK_LOST}is damaged\n")), "{e}");
    assert!(
        e.ends_with("krypta: -: restored 21 of 23 entries, 2 damaged\n"),
        "{e}"
    );
    small_files_restored(&fx, "o");
}
