//! Bytes after an archive's footer (no recovery data): a tape's padded last block, `dd
//! conv=sync`, junk a download appended. The archive is read without them (`store::clamped`
//! for a file, read past for a stream); zero padding is not reported, other bytes are and
//! make `t` fail (5, 2 encrypted). Regression: every entry was restored or verified, but the
//! run ended "footer: bad footer magic" (file) or "bytes after the footer" (pipe), exit 3.

mod cli_common;
mod common;

use cli_common::*;
use common::{bytes, code};

fn tree(fx: &Fx) {
    for i in 0..5 {
        fx.file(&format!("t/f{i}"), &bytes(40 << 10, i as u64 + 1, false));
    }
}

/// `x` from the file and from a pipe restores everything with exit 0; `t` gives `t_code`;
/// a warning naming `said` appears exactly when `said` is Some.
fn check(fx: &Fx, bad: &[u8], keys: &[&str], t_code: i32, said: Option<&str>) {
    std::fs::write(fx.p("c.kry"), bad).unwrap();
    for pipe in [false, true] {
        let x = if pipe {
            fx.run_stdin(&[&["x", "-o", "o", "-"], keys].concat(), bad)
        } else {
            fx.run(&[&["x", "-o", "o", "c.kry"], keys].concat())
        };
        assert_eq!(code(&x), 0, "pipe {pipe}: {}", err(&x));
        for i in 0..5 {
            let f = format!("t/f{i}");
            assert_eq!(fx.read(&format!("o/{f}")), fx.read(&f), "pipe {pipe}: {f}");
        }
        match said {
            Some(s) => assert!(err(&x).contains(s), "pipe {pipe}: {}", err(&x)),
            None => assert!(!err(&x).contains("warning"), "pipe {pipe}: {}", err(&x)),
        }
        std::fs::remove_dir_all(fx.p("o")).unwrap();
        let t = if pipe {
            fx.run_stdin(&[&["t", "-"], keys].concat(), bad)
        } else {
            fx.run(&[&["t", "c.kry"], keys].concat())
        };
        assert_eq!(code(&t), t_code, "pipe {pipe}: t: {}", err(&t));
    }
    let l = fx.run(&[&["l", "c.kry"], keys].concat());
    assert_eq!(code(&l), 0, "{}", err(&l));
    assert_eq!(out(&l).lines().count(), 6, "{}", out(&l));
}

#[test]
fn bytes_after_the_footer_are_not_the_archives() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "u.kry", "t"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "e.kry", "t"]);
    for (name, keys, sealed) in [
        ("u.kry", &[][..], false),
        ("e.kry", &["--keyfile", "k"][..], true),
    ] {
        let a = std::fs::read(fx.p(name)).unwrap();
        // Zero padding up to a tape block, and a whole megabyte of it: not a word.
        for pad in [10240 - a.len() % 10240, 1 << 20] {
            let bad = [&a[..], &vec![0u8; pad][..]].concat();
            check(&fx, &bad, keys, 0, None);
        }
        // Junk, and one nonzero byte among zeros: said, and `t` fails.
        let mut zeros_and_one = vec![0u8; 4096];
        zeros_and_one[1000] = 1;
        for junk in [bytes(777, 9, false), zeros_and_one, b"x".to_vec()] {
            let bad = [&a[..], &junk[..]].concat();
            let said = format!(
                "{} the archive's footer at byte {} (a bad copy, or something appended?): read without them",
                if junk.len() == 1 {
                    "1 byte follows".to_string()
                } else {
                    format!("{} bytes follow", junk.len())
                },
                a.len()
            );
            check(&fx, &bad, keys, if sealed { 2 } else { 5 }, Some(&said));
            let t = fx.run(&[&["t", "c.kry"], keys].concat());
            assert!(
                err(&t).contains(
                    "every entry verified without them, but the file is not the archive as written"
                ),
                "{}",
                err(&t)
            );
        }
    }
}

#[test]
fn another_archive_appended_is_not_the_archives() {
    // `cat a.kry b.kry`: the last footer is b's, which does not verify as a's; a's own is
    // found back from the end (encrypted: once the key is known). It was "footer checksum
    // mismatch" (5) or "archive damaged or modified ... (the footer)" (2), every entry
    // salvaged front to back.
    let fx = Fx::new();
    tree(&fx);
    fx.file("other/x", &bytes(5000, 99, false));
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "u.kry", "t"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "e.kry", "t"]);
    fx.ok(&["c", "-q", "u2.kry", "other"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "e2.kry", "other"]);
    for (name, other, keys, sealed) in [
        ("u.kry", "u2.kry", &[][..], false),
        ("e.kry", "e2.kry", &["--keyfile", "k"][..], true),
        ("e.kry", "u2.kry", &["--keyfile", "k"][..], true),
    ] {
        let a = std::fs::read(fx.p(name)).unwrap();
        let b = std::fs::read(fx.p(other)).unwrap();
        let said = format!(
            "{} bytes follow the archive's footer at byte {} (a bad copy, or something appended?)",
            b.len(),
            a.len()
        );
        check(
            &fx,
            &[&a[..], &b[..]].concat(),
            keys,
            if sealed { 2 } else { 5 },
            Some(&said),
        );
    }
}

#[test]
fn a_footer_further_back_than_the_search_is_damage_as_before() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "u.kry", "t"]);
    let a = std::fs::read(fx.p("u.kry")).unwrap();
    // 16 MiB + 1 of junk: the footer is out of reach; read front to back, every entry
    // restored, and the end reported as damaged (3), not silently dropped.
    let bad = [&a[..], &vec![7u8; (16 << 20) + 1][..]].concat();
    std::fs::write(fx.p("c.kry"), &bad).unwrap();
    let x = fx.run(&["x", "-o", "o", "c.kry"]);
    assert_eq!(code(&x), 3, "{}", err(&x));
    assert_eq!(fx.read("o/t/f4"), fx.read("t/f4"));
}
