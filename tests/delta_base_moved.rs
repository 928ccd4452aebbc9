//! A delta archive read with a base that has bytes inserted in one place (a bad copy: a frame
//! duplicated, junk between frames), which the reader undoes as it does for any archive
//! (README "Damaged archives"). Every entry is restored bit for bit, but the base is not the
//! archive as written: `x` says so, naming the base, and `t` fails (5, 2 encrypted), as for a
//! base with bytes after its footer or a flipped header bit. Found by the mutation campaign
//! (scripts/mutate_campaign.py): `t --base` exited 0 and `x` said nothing.

mod cli_common;
mod common;

use cli_common::*;
use common::{bytes, code};

/// (offset, end) of every frame of `d`, walked from its header, and where its footer starts.
fn frames(d: &[u8]) -> (Vec<(usize, usize)>, usize) {
    let mut at = u32::from_le_bytes(d[12..16].try_into().unwrap()) as usize;
    let mut v = Vec::new();
    while d[at] == 1 || d[at] == 2 {
        let body = u32::from_le_bytes(d[at + 4..at + 8].try_into().unwrap()) as usize;
        v.push((at, at + 16 + body + 32));
        at += 16 + body + 32;
    }
    (v, at)
}

/// v1 and v2 (one byte of a.bin changed), base.kry of v1 and new.kry of v2 against it, with
/// `keys` on both; then `edit` applied to base.kry.
/// Returns the read arguments (`--base base.kry`, the keys, `new.kry`).
fn setup(fx: &Fx, keys: &[&str], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<String> {
    fx.file("v1/a.bin", &bytes(200_000, 1, false));
    fx.file("v1/t.txt", &bytes(9000, 2, true));
    let mut b = bytes(200_000, 1, false);
    b[1000] ^= 1;
    fx.file("v2/a.bin", &b);
    fx.file("v2/t.txt", &bytes(9000, 2, true));
    let base_keys: Vec<&str> = keys
        .chunks(2)
        .flat_map(|k| {
            [
                if k[0] == "--keyfile" {
                    "--base-keyfile"
                } else {
                    k[0]
                },
                k[1],
            ]
        })
        .collect();
    fx.ok(&[&["c", "-q", "-b", "64K"][..], keys, &["base.kry", "v1"]].concat());
    fx.ok(&[
        &["c", "-q", "-b", "64K", "--base", "base.kry"][..],
        &base_keys,
        keys,
        &["new.kry", "v2"],
    ]
    .concat());
    let mut d = std::fs::read(fx.p("base.kry")).unwrap();
    edit(&mut d);
    std::fs::write(fx.p("base.kry"), &d).unwrap();
    [&["--base", "base.kry"][..], &base_keys, keys, &["new.kry"]]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// `t` fails with `want` naming the base and the edit; `x` restores everything and warns.
fn check(fx: &Fx, read: &[String], want_code: i32, want_line: &str) {
    let read: Vec<&str> = read.iter().map(String::as_str).collect();
    let o = fx.run(&[&["t"][..], &read].concat());
    assert_eq!(code(&o), want_code, "{}", err(&o));
    let last = err(&o).lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with(want_line), "{}", err(&o));
    assert!(
        last.ends_with("but the archive is not as written and has no recovery data to repair it"),
        "{last}"
    );
    let o = fx.run(&[&["x", "-o", "out"][..], &read].concat());
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(
        err(&o).contains("krypta: warning: base.kry: ")
            && err(&o).contains("inserted at or before byte"),
        "{}",
        err(&o)
    );
    assert_eq!(fx.read("out/v2/a.bin"), fx.read("v2/a.bin"));
    assert_eq!(fx.read("out/v2/t.txt"), fx.read("v2/t.txt"));
}

#[test]
fn t_base_with_its_index_frame_duplicated_fails_and_x_warns() {
    let fx = Fx::new();
    let mut at = 0;
    let read = setup(&fx, &[], |d| {
        let (f, footer) = frames(d);
        let (s, e) = *f.last().unwrap();
        let copy = d[s..e].to_vec();
        at = footer;
        d.splice(footer..footer, copy);
    });
    let n = frames(&std::fs::read(fx.p("base.kry")).unwrap()).0.len();
    assert!(
        n >= 3,
        "the base has data frames and an index frame duplicated: {n}"
    );
    check(&fx, &read, 5, "krypta: base.kry: ");
    let o = fx.run(&["t", "--base", "base.kry", "new.kry"]);
    assert!(
        err(&o).contains(&format!("inserted at byte {at} (after the index)")),
        "{}",
        err(&o)
    );
}

#[test]
fn t_base_with_junk_between_its_data_and_index_fails_and_x_warns() {
    let fx = Fx::new();
    let mut at = 0;
    let read = setup(&fx, &[], |d| {
        let (f, _) = frames(d);
        // the first index frame: right after the last data frame
        let k = f.iter().position(|&(s, _)| d[s] == 2).unwrap();
        at = f[k].0;
        d.splice(at..at, [0x55u8; 100]);
    });
    check(
        &fx,
        &read,
        5,
        "krypta: base.kry: 100 bytes inserted at byte ",
    );
    let o = fx.run(&["t", "--base", "base.kry", "new.kry"]);
    assert!(
        err(&o).contains(&format!("100 bytes inserted at byte {at} (frame ")),
        "{}",
        err(&o)
    );
}

#[test]
fn t_encrypted_base_with_bytes_inserted_exits_2() {
    let fx = Fx::new();
    fx.ok(&["keygen", "-q", "-o", "k"]);
    let read = setup(&fx, &["--keyfile", "k"], |d| {
        let (_, footer) = frames(d);
        d.splice(footer..footer, [0x33u8; 70]);
    });
    check(
        &fx,
        &read,
        2,
        "krypta: base.kry: 70 bytes inserted at byte ",
    );
}

#[test]
fn t_base_as_written_still_passes() {
    // The control: the same archives, the base untouched.
    let fx = Fx::new();
    let read = setup(&fx, &[], |_| {});
    let read: Vec<&str> = read.iter().map(String::as_str).collect();
    let o = fx.run(&[&["t"][..], &read].concat());
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(!err(&o).contains("warning"), "{}", err(&o));
}
