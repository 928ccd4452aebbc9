//! Issue 4, passwords through the `krypta` binary: `--pass-file` newline handling,
//! `--pass-fd` (a pipe), `KRYPTA_PASSWORD`, a non-ASCII password (NFC-normalised before the
//! KDF, issue 14), and what is refused when creating (an empty password, costs out of bounds).

mod common;
mod enc_common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{code, krypta};
use enc_common::{ARGON, Fx, auth_line, stderr, with};

#[test]
fn pass_file_drops_one_trailing_newline_or_crlf_and_reads_the_first_line() {
    let fx = Fx::new();
    fx.file("plain", b"pw");
    fx.ok(&with(
        &["c", "--pass-file", "plain"],
        &with(&ARGON, &["a.kry", "src"]),
    ));
    for (name, content, want) in [
        ("lf", &b"pw\n"[..], 0),
        ("crlf", b"pw\r\n", 0),
        ("second-line", b"pw\nsomething else\n", 0),
        ("trailing-space", b"pw \n", 2),
        ("cr-only", b"pw\r", 2),
        ("leading-space", b" pw\n", 2),
    ] {
        fx.file(name, content);
        let o = fx.run(&["t", "-q", "--pass-file", name, "a.kry"]);
        assert_eq!(code(&o), want, "{name}: {}", stderr(&o));
    }
}

#[test]
fn pass_fd_reads_the_password_from_an_inherited_pipe() {
    let fx = Fx::new();
    fx.ok(&with(
        &["c", "--pass-file", "pw"],
        &with(&ARGON, &["a.kry", "src"]),
    ));
    let k = env!("CARGO_BIN_EXE_krypta");
    // fd 3 is a dup of a pipe whose writer sends "correct horse\n".
    for (pw, want) in [("correct horse", 0), ("wrong", 2)] {
        let o = Command::new("sh")
            .current_dir(fx.dir.path())
            .env_remove("KRYPTA_PASSWORD")
            .args([
                "-c",
                &format!("printf '%s\\n' '{pw}' | '{k}' t -q --pass-fd 3 a.kry 3<&0 0</dev/null"),
            ])
            .output()
            .unwrap();
        assert_eq!(code(&o), want, "{pw}: {}", stderr(&o));
    }
    // fd 0 itself as the pipe.
    let mut c = krypta()
        .current_dir(fx.dir.path())
        .args(["t", "-q", "--pass-fd", "0", "a.kry"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(b"correct horse\n")
        .unwrap();
    let o = c.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // A descriptor that is not open is an error naming it, not a hang.
    let o = fx.run(&["t", "--pass-fd", "47", "a.kry"]);
    assert_ne!(code(&o), 0);
    assert!(stderr(&o).contains("/dev/fd/47"), "{}", stderr(&o));
}

#[test]
fn krypta_password_environment_variable_creates_and_opens() {
    let fx = Fx::new();
    let run_env = |args: &[&str], pw: &str| {
        krypta()
            .current_dir(fx.dir.path())
            .env("KRYPTA_PASSWORD", pw)
            .args(args)
            .output()
            .unwrap()
    };
    let o = run_env(
        &with(&["c"], &with(&ARGON, &["e.kry", "src"])),
        "correct horse",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(code(&run_env(&["t", "-q", "e.kry"], "correct horse")), 0);
    let bad = run_env(&["t", "e.kry"], "correct horsE");
    assert_eq!(
        (code(&bad), stderr(&bad)),
        (2, auth_line(Path::new("e.kry")))
    );
    // The same password from a file opens it: the variable's value is taken whole.
    fx.assert_restores("e.kry", &["--pass-file", "pw"]);
}

/// Issue 14: a password typed on macOS arrives decomposed (NFD), on Linux precomposed (NFC);
/// both open the archive, because the KDF is given the NFC form. (Before issue 14 the bytes
/// were used as given and the NFD form failed: that behaviour was the bug.) A different
/// password still fails.
#[test]
fn non_ascii_password_opens_in_nfc_and_nfd_and_a_different_one_fails() {
    let fx = Fx::new();
    let nfc = "p\u{e4}ssw\u{f6}rd\u{1f511}"; // pässwörd🔑, precomposed
    let nfd = "pa\u{308}sswo\u{308}rd\u{1f511}"; // the same text, decomposed
    fx.file("nfc", format!("{nfc}\n").as_bytes());
    fx.file("nfd", format!("{nfd}\n").as_bytes());
    fx.file("other", "pa\u{308}sswo\u{308}rd\n".as_bytes());
    for (made_with, name) in [("nfc", "c.kry"), ("nfd", "d.kry")] {
        fx.ok(&with(
            &["c", "--pass-file", made_with],
            &with(&ARGON, &[name, "src"]),
        ));
        fx.assert_restores(name, &["--pass-file", "nfc"]);
        fx.assert_restores(name, &["--pass-file", "nfd"]);
        let o = krypta()
            .current_dir(fx.dir.path())
            .env("KRYPTA_PASSWORD", nfd)
            .args(["t", "-q", name])
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let o = fx.run(&["t", "--pass-file", "other", name]);
        assert_eq!((code(&o), stderr(&o)), (2, auth_line(Path::new(name))));
    }
}

#[test]
fn empty_password_is_refused_when_creating_and_no_archive_is_left() {
    let fx = Fx::new();
    fx.file("empty", b"");
    fx.file("newline", b"\n");
    for src in ["empty", "newline"] {
        let o = fx.run(&with(
            &["c", "--pass-file", src],
            &with(&ARGON, &["e.kry", "src"]),
        ));
        assert_eq!(
            (code(&o), stderr(&o)),
            (1, format!("krypta: {src}: empty password refused\n"))
        );
        assert!(!fx.p("e.kry").exists());
    }
    let o = krypta()
        .current_dir(fx.dir.path())
        .env("KRYPTA_PASSWORD", "")
        .args(with(&["c"], &with(&ARGON, &["e.kry", "src"])))
        .output()
        .unwrap();
    assert_eq!(
        (code(&o), stderr(&o)),
        (
            1,
            // The note says where the password comes from (a variable is easy to forget).
            "krypta: encrypting with the password in KRYPTA_PASSWORD\nkrypta: KRYPTA_PASSWORD: empty password refused\n"
                .to_string()
        )
    );
    assert_eq!(std::fs::read_dir(fx.dir.path()).unwrap().count(), 5);
}

#[test]
fn kdf_costs_below_the_writer_minimum_are_refused_with_exit_1() {
    let fx = Fx::new();
    // --kdf-memory is checked in the unit the user typed (MiB).
    let o = fx.run(&[
        "c",
        "--pass-file",
        "pw",
        "--kdf-memory",
        "4",
        "--kdf-iterations",
        "1",
        "e.kry",
        "src",
    ]);
    assert_eq!(
        (code(&o), stderr(&o)),
        (
            1,
            "krypta: --kdf-memory 4 MiB is outside 8..=4096 MiB\n".to_string()
        )
    );
    for (args, msg) in [
        (
            &["--kdf-memory", "8", "--kdf-iterations", "17"][..],
            "argon2id iterations = 17 exceeds the limit 16",
        ),
        (
            &["--kdf", "pbkdf2", "--kdf-iterations", "99999"],
            "pbkdf2 iterations = 99999 is below the minimum 100000",
        ),
    ] {
        let o = fx.run(&[&["c", "--pass-file", "pw"], args, &["e.kry", "src"]].concat());
        assert_eq!(
            (code(&o), stderr(&o)),
            (1, format!("krypta: {msg} (see README: KDF bounds)\n")),
            "{args:?}"
        );
    }
}

#[test]
fn kdf_choice_without_a_password_is_a_usage_error_not_an_unencrypted_archive() {
    // `--kdf-memory` alone is refused; `--kdf pbkdf2` alone must be too, or the user who
    // asked for a password KDF silently gets an unencrypted archive.
    let fx = Fx::new();
    for args in [&["--kdf-memory", "8"][..], &["--kdf", "pbkdf2"]] {
        let o = fx.run(&[&["c"], args, &["plain.kry", "src"]].concat());
        assert_eq!(code(&o), 1, "{args:?}: {}", stderr(&o));
        assert!(!fx.p("plain.kry").exists(), "{args:?} wrote an archive");
    }
}

#[test]
fn pass_fd_0_with_the_stdin_stream_loses_no_input_byte() {
    // `--pass-fd 0` and the input `-` share stdin: the password reader must not swallow
    // stream bytes past the first line (or the combination must be refused).
    let fx = Fx::new();
    let data = common::bytes(10_000, 14, false);
    let mut c = krypta()
        .current_dir(fx.dir.path())
        .args(with(
            &["c", "--pass-fd", "0"],
            &with(&ARGON, &["s.kry", "-"]),
        ))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    // krypta refuses the combination before reading stdin and may exit before the write
    // ends: a broken pipe here is that refusal (checked by the exit code below), not an error.
    match stdin.write_all(&[&b"correct horse\n"[..], &data].concat()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => panic!("writing krypta's stdin: {e}"),
    }
    drop(stdin);
    let o = c.wait_with_output().unwrap();
    if code(&o) != 0 {
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        return;
    }
    let x = fx.ok(&["x", "--stdout", "--pass-file", "pw", "s.kry"]);
    assert_eq!(x.stdout.len(), data.len(), "bytes of the stream were lost");
    assert!(x.stdout == data);
}

#[test]
fn prompting_without_a_terminal_is_a_usage_error_that_names_the_way_out() {
    // Regression: `-p` from cron or CI printed only "/dev/tty: No such device" (exit 4).
    // `setsid` (util-linux) runs krypta with no controlling terminal.
    let fx = Fx::new();
    let o = Command::new("setsid")
        .arg(env!("CARGO_BIN_EXE_krypta"))
        .args(["c", "-p", "p.kry", "src"])
        .current_dir(fx.dir.path())
        .env_remove("KRYPTA_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .expect("setsid (util-linux) runs");
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--pass-file") && e.contains("KRYPTA_PASSWORD"),
        "{e}"
    );
    assert!(!fx.p("p.kry").exists(), "an archive was written");
}

/// Regression (issue: `t --pass-file pw --base b.kry --base-password d.kry` without a
/// terminal said "-p/--password prompts on the terminal ... use --pass-file FILE, --pass-fd
/// N", the options of the archive's own password): a prompt that cannot be shown names the
/// option that asked for it and the options that give that same password.
#[test]
fn a_prompt_without_a_terminal_names_the_option_that_asked_and_its_alternatives() {
    let fx = Fx::new();
    fx.file("bpw", b"base password\n");
    fx.file("pw", b"delta password\n");
    fx.ok(&with(
        &["c", "--pass-file", "bpw"],
        &with(&ARGON, &["b.kry", "src"]),
    ));
    fx.ok(&with(
        &[
            "c",
            "--pass-file",
            "pw",
            "--base",
            "b.kry",
            "--base-pass-file",
            "bpw",
        ],
        &with(&ARGON, &["d.kry", "src"]),
    ));
    let base = (
        "--base-password",
        "--base-pass-file FILE, --base-pass-fd N or KRYPTA_PASSWORD",
    );
    let own = (
        "-p/--password",
        "--pass-file FILE, --pass-fd N or KRYPTA_PASSWORD",
    );
    for (args, (option, alternatives)) in [
        (
            &[
                "t",
                "--pass-file",
                "pw",
                "--base",
                "b.kry",
                "--base-password",
                "d.kry",
            ][..],
            base,
        ),
        (
            &[
                "x",
                "-o",
                "out",
                "--pass-file",
                "pw",
                "--base",
                "b.kry",
                "--base-password",
                "d.kry",
            ],
            base,
        ),
        (
            &[
                "t",
                "-p",
                "--base",
                "b.kry",
                "--base-pass-file",
                "bpw",
                "d.kry",
            ],
            own,
        ),
        (
            &[
                "rekey",
                "--pass-file",
                "bpw",
                "--new-password",
                "-o",
                "r.kry",
                "b.kry",
            ],
            ("--new-password", "--new-pass-file FILE"),
        ),
    ] {
        let o = Command::new("setsid")
            .arg(env!("CARGO_BIN_EXE_krypta"))
            .args(args)
            .current_dir(fx.dir.path())
            .env_remove("KRYPTA_PASSWORD")
            .stdin(Stdio::null())
            .output()
            .expect("setsid (util-linux) runs");
        let e = stderr(&o);
        assert_eq!(code(&o), 1, "{args:?}: {e}");
        let head =
            format!("krypta: {option} prompts on the terminal, and there is none (/dev/tty: ");
        assert!(e.starts_with(&head), "{args:?}: {e}");
        assert!(
            e.ends_with(&format!("); without a terminal use {alternatives}\n")),
            "{args:?}: {e}"
        );
    }
    assert!(!fx.p("out").exists() && !fx.p("r.kry").exists());
}

fn run_with_stdin(fx: &Fx, args: &[&str], input: &[u8]) -> std::process::Output {
    common::run_stdin_in(fx.dir.path(), args, input)
}

#[test]
fn a_password_from_fd_0_is_refused_whatever_else_reads_stdin_and_however_it_is_spelled() {
    // Regression: `--pass-fd 0` was refused only with the archive or input spelled `-`:
    // `/dev/stdin` went through, and `--base-pass-fd 0` never was checked (with the archive
    // on stdin, or next to `--pass-fd 0`): the first password read swallowed what the other
    // reader needed.
    let fx = Fx::new();
    fx.ok(&with(
        &["c", "-q", "--pass-file", "pw"],
        &with(&ARGON, &["a.kry", "src"]),
    ));
    let base_keys = ["--base", "a.kry", "--base-pass-file", "pw"];
    fx.ok(&with(
        &with(&["c", "-q", "--pass-file", "pw"], &ARGON),
        &with(&base_keys, &["d.kry", "src"]),
    ));
    let archive = std::fs::read(fx.p("a.kry")).unwrap();
    let delta = std::fs::read(fx.p("d.kry")).unwrap();
    let refused = |opt: &str, file_opt: &str, what: &str| {
        format!(
            "krypta: {opt} 0 reads the password from stdin, which also carries {what} here; use \
             another descriptor or {file_opt}\n"
        )
    };
    let pass = refused("--pass-fd", "--pass-file", "the archive");
    let base_pass = |what| refused("--base-pass-fd", "--base-pass-file", what);
    for name in ["-", "/dev/stdin", "/proc/self/fd/0"] {
        for cmd in ["t", "x"] {
            let out: &[&str] = if cmd == "x" { &["-o", "o"] } else { &[] };
            let args = [&[cmd, "--pass-fd", "0"][..], out, &[name]].concat();
            let o = run_with_stdin(&fx, &args, &archive);
            assert_eq!((code(&o), stderr(&o)), (1, pass.clone()), "{cmd} {name}");
            let args = [
                &[cmd, "--pass-file", "pw", "--base", "a.kry"][..],
                &["--base-pass-fd", "0", name],
            ]
            .concat();
            let o = run_with_stdin(&fx, &args, &delta);
            assert_eq!(
                (code(&o), stderr(&o)),
                (1, base_pass("the archive")),
                "{cmd} {name}"
            );
        }
        let o = run_with_stdin(
            &fx,
            &with(&["c", "--pass-fd", "0"], &with(&ARGON, &["s.kry", name])),
            b"correct horse\nand the data",
        );
        let input = refused("--pass-fd", "--pass-file", "the input");
        assert_eq!((code(&o), stderr(&o)), (1, input), "c {name}");
    }
    let o = run_with_stdin(
        &fx,
        &[
            "t",
            "--pass-fd",
            "0",
            "--base",
            "a.kry",
            "--base-pass-fd",
            "0",
            "d.kry",
        ],
        b"correct horse\ncorrect horse\n",
    );
    assert_eq!(
        (code(&o), stderr(&o)),
        (1, base_pass("the password of --pass-fd 0"))
    );
    assert!(!fx.p("s.kry").exists() && !fx.p("o").exists());
    // One reader of stdin is fine: the password, the archive from a file.
    let o = run_with_stdin(
        &fx,
        &["t", "-q", "--pass-fd", "0", "a.kry"],
        b"correct horse\n",
    );
    assert_eq!((code(&o), stderr(&o)), (0, String::new()));
}

#[test]
fn rekey_and_keygen_refuse_kdf_options_as_c_does() {
    // Regression: `rekey --kdf pbkdf2 --kdf-memory 64` wrote the archive and ignored the
    // memory (c refuses it), and a memory above the range was shown capped ("argon2id
    // memory KiB = 4294967295 exceeds the limit 4194304" for 5000G) by rekey and keygen.
    let fx = Fx::new();
    let o = fx.run(&[
        "c",
        "-q",
        "--pass-file",
        "pw",
        "--kdf-memory",
        "8",
        "--kdf-iterations",
        "1",
        "e.kry",
        "src",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rekey = |extra: &[&str]| {
        let o = fx.run(
            &[
                &[
                    "rekey",
                    "--pass-file",
                    "pw",
                    "e.kry",
                    "-o",
                    "n.kry",
                    "--new-pass-file",
                    "pw",
                ][..],
                extra,
            ]
            .concat(),
        );
        (code(&o), stderr(&o))
    };
    for (extra, msg) in [
        (
            &["--kdf", "pbkdf2", "--kdf-memory", "64"][..],
            "krypta: --kdf-memory applies to argon2id only\n",
        ),
        (
            &["--kdf-memory", "5000G"],
            "krypta: --kdf-memory 5000G is outside 8..=4096 MiB\n",
        ),
        (
            &["--kdf-memory", "4"],
            "krypta: --kdf-memory 4 MiB is outside 8..=4096 MiB\n",
        ),
    ] {
        assert_eq!(rekey(extra), (1, msg.to_string()), "{extra:?}");
        assert!(!fx.dir.path().join("n.kry").exists(), "{extra:?}");
    }
    let o = fx.run(&[
        "keygen",
        "--box",
        "--protect",
        "--kdf-memory",
        "5000G",
        "-o",
        "k",
    ]);
    assert_eq!(
        (code(&o), stderr(&o)),
        (
            1,
            "krypta: --kdf-memory 5000G is outside 8..=4096 MiB\n".to_string()
        )
    );
    assert!(!fx.dir.path().join("k").exists());
}
