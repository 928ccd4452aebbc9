//! `l --b3` and hard links: a hard link is extracted as one more name of its target's
//! content, so `b3sum --check` of the list reads it like any file. It was left out: `l --b3
//! a.kry NAME` of a hard link printed nothing and exited 0 (helper-41).

mod cli_common;
mod common;

use cli_common::*;

/// a.kry holding t/ = { big (5000 bytes: its digest is stored), big2 (a hard link to big),
/// s ("abc": no digest stored), s2 (a hard link to s) }.
fn archive(fx: &Fx) {
    fx.file("t/big", &[7u8; 5000]);
    fx.file("t/s", b"abc");
    std::fs::hard_link(fx.p("t/big"), fx.p("t/big2")).unwrap();
    std::fs::hard_link(fx.p("t/s"), fx.p("t/s2")).unwrap();
    fx.ok(&["c", "-q", "a.kry", "t"]);
}

#[test]
fn b3_lists_a_hard_link_with_its_targets_digest() {
    let fx = Fx::new();
    archive(&fx);
    let big = blake3::hash(&[7u8; 5000]).to_hex();
    let s = blake3::hash(b"abc").to_hex();
    let all = format!("{big}  t/big\n{big}  t/big2\n{s}  t/s\n{s}  t/s2\n");
    let o = fx.ok(&["l", "--b3", "a.kry"]);
    assert_eq!(String::from_utf8(o.stdout).unwrap(), all);
    // Named alone, and from a pipe (no index): the same lines.
    let o = fx.ok(&["l", "--b3", "a.kry", "t/s2"]);
    assert_eq!(String::from_utf8(o.stdout).unwrap(), format!("{s}  t/s2\n"));
    let o = fx.run_stdin(&["l", "--b3", "-"], &std::fs::read(fx.p("a.kry")).unwrap());
    assert_eq!(String::from_utf8(o.stdout).unwrap(), all);
}
