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
    // `info` (no key) finds the footer too.
    let i = fx.run(&["info", "c.kry"]);
    assert_eq!(code(&i), 0, "{}", err(&i));
    assert!(out(&i).contains("data blocks:"), "{}", out(&i));
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
                "{} the archive's footer at byte {} (a bad copy, or something appended?): read without {}",
                if junk.len() == 1 {
                    "1 byte follows".to_string()
                } else {
                    format!("{} bytes follow", junk.len())
                },
                a.len(),
                // One byte is "it" (helper-27: "1 byte follows …: read without them").
                if junk.len() == 1 { "it" } else { "them" }
            );
            check(&fx, &bad, keys, if sealed { 2 } else { 5 }, Some(&said));
            let t = fx.run(&[&["t", "c.kry"], keys].concat());
            assert!(
                err(&t).contains(&format!(
                    "every entry verified without {}, but the file is not the archive as written",
                    if junk.len() == 1 { "it" } else { "them" }
                )),
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
    // Exactly 16 MiB of zero padding is padding from a file as from a pipe (helper-26: from
    // 16 MiB − 63 on, the file's search missed the footer and `t` exited 3; the pipe, 0).
    let padded = [&a[..], &vec![0u8; 16 << 20][..]].concat();
    std::fs::write(fx.p("p.kry"), &padded).unwrap();
    let t = fx.run(&["t", "p.kry"]);
    assert_eq!(code(&t), 0, "{}", err(&t));
    let t = fx.run_stdin(&["t", "-"], &padded);
    assert_eq!(code(&t), 0, "{}", err(&t));
    let i = fx.ok(&["info", "--json", "p.kry"]);
    let v: serde_json::Value = serde_json::from_str(&out(&i)).unwrap();
    assert_eq!(
        v["trailing"],
        serde_json::json!({"at": a.len(), "bytes": 16 << 20, "zeros": true})
    );
}

#[test]
fn an_encrypted_archive_with_another_and_padding_appended_is_read_without_them() {
    // Regression (helper-25): `cat e.kry e2.kry` plus padding was cut at e2's footer (it
    // parsed; its MAC could not be checked without the key), then read as damaged: exit 2,
    // "the footer: its MAC does not verify". A footer is now taken only once it verifies
    // under the key, with its index where it says.
    let fx = Fx::new();
    tree(&fx);
    fx.file("other/x", &bytes(5000, 99, false));
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "e.kry", "t"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "e2.kry", "other"]);
    let a = std::fs::read(fx.p("e.kry")).unwrap();
    let b = std::fs::read(fx.p("e2.kry")).unwrap();
    for tail in [vec![0u8; 3000], b"x".to_vec()] {
        let bad = [&a[..], &b[..], &tail[..]].concat();
        let said = format!(
            "{} bytes follow the archive's footer at byte {}",
            b.len() + tail.len(),
            a.len()
        );
        check(&fx, &bad, &["--keyfile", "k"], 2, Some(&said));
    }
}

#[test]
fn a_signed_archive_with_padding_verifies_from_a_pipe() {
    // Regression (helper-25): `cat s.kry | krypta x --signer` refused any bytes after the
    // footer, zero padding too (8, "the signature cannot be verified").
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "--sign", "-o", "alice"]);
    fx.ok(&["c", "-q", "--sign", "alice", "s.kry", "t"]);
    let a = std::fs::read(fx.p("s.kry")).unwrap();
    let padded = [&a[..], &[0u8; 4096][..]].concat();
    check(&fx, &padded, &["--signer", "alice.pub"], 0, None);
    let junk = [&a[..], &b"junk"[..]].concat();
    check(
        &fx,
        &junk,
        &["--signer", "alice.pub"],
        5,
        Some("4 bytes follow the archive's footer"),
    );
}

#[test]
fn a_footer_of_an_archive_stored_inside_is_not_taken_for_this_ones() {
    // Regression (helper-25): an archive storing another with the same (reproducible) id,
    // cut short: the stored archive's footer verified under the id, the file was cut there
    // and read as that archive, restoring its files under this one's name. A footer found
    // back from the end must have its index where it says, in this archive.
    let fx = Fx::new();
    let epoch = [("SOURCE_DATE_EPOCH", "1700000000")];
    for i in 0..20 {
        fx.file(
            &format!("inner/in{i:02}.bin"),
            &bytes(30000, 300 + i, false),
        );
    }
    fx.mkdir("nest");
    let o = fx.run_env(&["c", "-q", "-b", "64K", "nest/a.kry", "inner"], &epoch);
    assert_eq!(code(&o), 0, "{}", err(&o));
    for i in 0..40 {
        fx.file(
            &format!("nest/z{i:02}.bin"),
            &bytes(100_000, 500 + i, false),
        );
    }
    let o = fx.run_env(&["c", "-q", "-b", "512K", "outer.kry", "nest"], &epoch);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let a = std::fs::read(fx.p("outer.kry")).unwrap();
    std::fs::write(fx.p("cut.kry"), &a[..3_500_000]).unwrap();
    let x = fx.run(&["x", "-o", "o", "cut.kry"]);
    assert_eq!(code(&x), 5, "{}", err(&x));
    assert!(
        !fx.exists("o/inner"),
        "the stored archive's files: {}",
        err(&x)
    );
    assert_eq!(fx.read("o/nest/a.kry"), fx.read("nest/a.kry"));
    assert_eq!(fx.read("o/nest/z00.bin"), fx.read("nest/z00.bin"));
    let l = fx.run(&["l", "cut.kry"]);
    assert!(!out(&l).contains("inner/"), "{}", out(&l));
}

#[test]
fn info_shows_the_archives_own_footer_and_the_bytes_after_it() {
    // Regression: `info` (no key) of an encrypted `cat e.kry e2.kry` took e2's footer (it
    // parses; its MAC needs the key) and showed e2's counts, and `info` never said that
    // bytes follow the footer. The footer must have its index head where it says; the bytes
    // after it are warned about (not zero padding) and in `info --json`'s `trailing`.
    let fx = Fx::new();
    tree(&fx);
    fx.file("other/x", &bytes(5000, 99, false));
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "-b", "64K", "u.kry", "t"]);
    fx.ok(&["c", "-q", "-b", "64K", "--keyfile", "k", "e.kry", "t"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "e2.kry", "other"]);
    let blocks = |name: &str| -> String {
        let i = fx.ok(&["info", name]);
        out(&i)
            .lines()
            .find(|l| l.starts_with("data blocks:"))
            .unwrap()
            .to_string()
    };
    assert_eq!(blocks("e.kry"), "data blocks:    4");
    assert_eq!(blocks("e2.kry"), "data blocks:    1");
    let b = std::fs::read(fx.p("e2.kry")).unwrap();
    for name in ["u.kry", "e.kry"] {
        let a = std::fs::read(fx.p(name)).unwrap();
        for (tail, zeros) in [(b.clone(), false), (vec![0u8; 5000], true)] {
            std::fs::write(fx.p("c.kry"), [&a[..], &tail[..]].concat()).unwrap();
            let i = fx.ok(&["info", "c.kry"]);
            assert!(
                out(&i).contains("data blocks:    4\n"),
                "{name}: {}",
                out(&i)
            );
            let said = format!(
                "{} bytes follow the archive's footer at byte {}",
                tail.len(),
                a.len()
            );
            assert_eq!(err(&i).contains(&said), !zeros, "{name}: {}", err(&i));
            let j = fx.ok(&["info", "--json", "c.kry"]);
            let v: serde_json::Value = serde_json::from_str(&out(&j)).unwrap();
            assert_eq!(
                v["trailing"],
                serde_json::json!({"at": a.len(), "bytes": tail.len(), "zeros": zeros}),
                "{name}"
            );
            assert_eq!(v["data_blocks"], 4, "{name}: {v}");
        }
        let j = fx.ok(&["info", "--json", name]);
        let v: serde_json::Value = serde_json::from_str(&out(&j)).unwrap();
        assert_eq!(v["trailing"], serde_json::Value::Null);
    }
}

#[test]
fn more_than_16_mib_after_the_footer_is_said_so() {
    // Regression (helper-26): from a pipe, 20,000,000 bytes after the footer were "16777216
    // bytes follow" (the most read); `info` (no key) of an encrypted archive with another
    // appended after more than 16 MiB showed the other's block counts, without a word.
    let fx = Fx::new();
    tree(&fx);
    fx.file("other/x", &bytes(5000, 99, false));
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "u.kry", "t"]);
    fx.ok(&["c", "-q", "-b", "64K", "--keyfile", "k", "e.kry", "t"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "e2.kry", "other"]);
    let junk = bytes((16 << 20) + 1000, 5, false);
    let u = std::fs::read(fx.p("u.kry")).unwrap();
    let t = fx.run_stdin(&["t", "-"], &[&u[..], &junk[..]].concat());
    assert_eq!(code(&t), 5, "{}", err(&t));
    assert!(
        err(&t).contains(&format!(
            "more than 16777216 bytes follow the footer (at byte {})",
            u.len()
        )),
        "{}",
        err(&t)
    );
    let e = std::fs::read(fx.p("e.kry")).unwrap();
    let e2 = std::fs::read(fx.p("e2.kry")).unwrap();
    std::fs::write(fx.p("c.kry"), [&e[..], &junk[..], &e2[..]].concat()).unwrap();
    let i = fx.ok(&["info", "c.kry"]);
    assert!(!out(&i).contains("data blocks:"), "{}", out(&i));
    assert!(
        err(&i).contains("its last 64 bytes are not its footer, or its index is damaged"),
        "{}",
        err(&i)
    );
    let j = fx.ok(&["info", "--json", "c.kry"]);
    let v: serde_json::Value = serde_json::from_str(&out(&j)).unwrap();
    assert_eq!(v["data_blocks"], serde_json::Value::Null, "{v}");
}

#[test]
fn info_says_when_a_file_with_recovery_data_is_longer_or_shorter_than_it() {
    // Regression: `info` of an archive with recovery data said nothing of bytes after its
    // section (junk, a tape's zero padding, `cat a.kry a.kry`) or of a section cut short,
    // while `t` of the same file exits 7; only its size line differed from the sum.
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "--recovery", "10", "r.kry", "t"]);
    let a = std::fs::read(fx.p("r.kry")).unwrap();
    let i = fx.ok(&["info", "r.kry"]);
    assert_eq!(err(&i), "", "a whole archive: nothing to say");
    let n = a.len();
    let cases: Vec<(Vec<u8>, String)> = vec![
        (
            [&a[..], b"junk"].concat(),
            format!(
                "the file holds 4 bytes more than the archive and its recovery data ({n} bytes: a bad copy, or something appended?)"
            ),
        ),
        (
            [&a[..], &vec![0u8; 8192][..]].concat(),
            format!(
                "the file holds 8192 bytes more than the archive and its recovery data ({n} bytes"
            ),
        ),
        (
            [&a[..], &a[..]].concat(),
            format!(
                "the file holds {n} bytes more than the archive and its recovery data ({n} bytes"
            ),
        ),
        (
            a[..n - 5000].to_vec(),
            format!(
                "the file is 5000 bytes shorter than the archive and its recovery data ({n} bytes: cut short?)"
            ),
        ),
    ];
    for (bad, said) in cases {
        std::fs::write(fx.p("c.kry"), &bad).unwrap();
        let i = fx.ok(&["info", "c.kry"]);
        assert!(err(&i).contains(&said), "{said}: {}", err(&i));
        // `t` fails the same file (exit 7), and `krypta repair` writes the archive as written.
        let t = fx.run(&["t", "c.kry"]);
        assert_eq!(code(&t), 7, "{}", err(&t));
        fx.ok(&["repair", "-q", "-f", "c.kry", "-o", "fixed.kry"]);
        assert_eq!(std::fs::read(fx.p("fixed.kry")).unwrap(), a, "{said}");
    }
}

#[test]
fn rekey_warns_of_bytes_after_ins_footer_and_out_has_none() {
    // Regression: rekey of an archive with junk appended exited 0 and said nothing (t of it
    // fails): OUT was clean, but the owner never heard that IN was not as written. From a
    // pipe, the junk was not even read (the writer of the pipe could be cut off).
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "-o", "k1"]);
    fx.ok(&["keygen", "-q", "-o", "k2"]);
    fx.ok(&["c", "-q", "--keyfile", "k1", "a.kry", "t"]);
    let good = fx.read("a.kry");
    let mut bad = good.clone();
    bad.extend_from_slice(b"junk from a download\n");
    bad.extend_from_slice(&[0u8; 5000]);
    fx.file("j.kry", &bad);
    let want = format!(
        "warning: {{}}: 5021 bytes follow the archive's footer at byte {} (a bad copy, or something appended?): read without them",
        good.len()
    );
    for (pipe, name) in [(false, "j.kry"), (true, "-")] {
        let out = format!("o{pipe}.kry");
        let args = [
            "rekey",
            "--keyfile",
            "k1",
            name,
            "-o",
            &out,
            "--new-keyfile",
            "k2",
        ];
        let o = if pipe {
            fx.run_stdin(&args, &bad)
        } else {
            fx.run(&args)
        };
        assert_eq!(code(&o), 0, "pipe {pipe}: {}", err(&o));
        assert!(
            err(&o).contains(&want.replace("{}", name)),
            "pipe {pipe}: {}",
            err(&o)
        );
        let t = fx.run(&["t", "--keyfile", "k2", &out]);
        assert_eq!(code(&t), 0, "pipe {pipe}: {}", err(&t));
        assert_eq!(fx.read(&out).len(), good.len(), "pipe {pipe}");
    }
    // Zero padding alone is not worth a word, as for t.
    let mut padded = good.clone();
    padded.extend_from_slice(&[0u8; 4096]);
    fx.file("p.kry", &padded);
    let o = fx.run(&[
        "rekey",
        "--keyfile",
        "k1",
        "p.kry",
        "-o",
        "op.kry",
        "--new-keyfile",
        "k2",
    ]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(!err(&o).contains("warning"), "{}", err(&o));
}

#[test]
fn rekey_of_an_in_with_recovery_data_warns_of_what_t_finds() {
    // Regression (review of f05b39a): with recovery data, rekey warned of nothing: not of
    // bytes its recovery data rebuilt (file), nor of bytes after its recovery section or a
    // section cut short (pipe), though t of each exits 7. OUT is clean either way.
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "-o", "k1"]);
    fx.ok(&[
        "c",
        "-q",
        "--recovery",
        "5",
        "--keyfile",
        "k1",
        "a.kry",
        "t",
    ]);
    let good = fx.read("a.kry");
    let h = u32::from_le_bytes(good[12..16].try_into().unwrap()) as usize;
    let mut flipped = good.clone();
    flipped[h + 5000] ^= 0x10;
    let mut junk = good.clone();
    junk.extend_from_slice(b"junk from a download\n");
    let cut = good[..good.len() - 5000].to_vec();
    let cases: [(&str, &[u8], bool, &str); 3] = [
        (
            "flipped",
            &flipped,
            false,
            "warning: f.kry: damaged: rebuilt 4096 bytes (1 shard) in segment 0 from the recovery data",
        ),
        (
            "junk",
            &junk,
            true,
            &format!(
                "warning: -: 21 bytes follow its recovery data at byte {} (a bad copy, or something appended?)",
                good.len()
            ),
        ),
        (
            "cut",
            &cut,
            true,
            "warning: -: its recovery data is cut short: the input ends ",
        ),
    ];
    for (kind, bad, pipe, want) in cases {
        let out = format!("o-{kind}.kry");
        let o = if pipe {
            fx.run_stdin(
                &[
                    "rekey",
                    "--keyfile",
                    "k1",
                    "-",
                    "-o",
                    &out,
                    "--new-keyfile",
                    "k1",
                ],
                bad,
            )
        } else {
            fx.file("f.kry", bad);
            fx.run(&[
                "rekey",
                "--keyfile",
                "k1",
                "f.kry",
                "-o",
                &out,
                "--new-keyfile",
                "k1",
            ])
        };
        assert_eq!(code(&o), 0, "{kind}: {}", err(&o));
        assert!(err(&o).contains(want), "{kind}: {}", err(&o));
        let t = fx.run(&["t", "--keyfile", "k1", &out]);
        assert_eq!(code(&t), 0, "{kind}: {}", err(&t));
    }
}
