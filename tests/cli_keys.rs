//! Issue 14, "Passwords and keys", through the binary: the password prompt when a person is
//! at a terminal (a real pseudo-terminal, the binary in its own session with it as the
//! controlling terminal, via `setsid -c`), Ctrl-C at the prompt (130, echo restored), SIGTERM
//! (143), conflicting password sources, recipients files (`-R`), `keygen -o -`.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

const ARGON: [&str; 4] = ["--kdf-memory", "8", "--kdf-iterations", "1"];

fn encrypted(fx: &Fx) {
    fx.file("t/a", b"secret stuff");
    fx.file("pw", "correct h\u{f6}rse\n".as_bytes());
    fx.ok(&[
        &["c", "-q", "--pass-file", "pw"][..],
        &ARGON,
        &["e.kry", "t"],
    ]
    .concat());
}

#[test]
fn reading_an_encrypted_archive_at_a_terminal_prompts_for_the_password() {
    let fx = Fx::new();
    encrypted(&fx);
    let Some(mut tty) = OnTty::spawn(&fx, &["x", "-q", "e.kry", "-o", "o"]) else {
        return;
    };
    tty.wait_for("Password: ", 1);
    // Typed decomposed (as macOS sends it): the same password (NFC before the KDF).
    tty.type_in("correct ho\u{308}rse\n".as_bytes());
    assert_eq!(tty.exit_code(), 0, "{}", tty.text());
    assert_eq!(fx.read("o/t/a"), b"secret stuff");
    assert!(tty.echo_on());
    let Some(mut tty) = OnTty::spawn(&fx, &["t", "e.kry"]) else {
        return;
    };
    tty.wait_for("Password: ", 1);
    tty.type_in(b"wrong\n");
    assert_eq!(tty.exit_code(), 2, "{}", tty.text());
    assert!(
        tty.text().contains("e.kry: authentication failed"),
        "{}",
        tty.text()
    );
}

#[test]
fn without_a_terminal_a_missing_password_is_an_error_naming_the_options() {
    let fx = Fx::new();
    encrypted(&fx);
    let o = fx.run(&["t", "e.kry"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: e.kry: archive is encrypted (argon2id): give --pass-file, --pass-fd or -p, or set KRYPTA_PASSWORD\n"
                .to_string()
        )
    );
}

/// The hint for a missing password named the options but not `KRYPTA_PASSWORD`, which README
/// gives scripts as a source ("Passwords and keys"), for the archive and for a delta base
/// alike (helper-76). It names it now, and doing what it says opens the archive.
#[test]
fn the_missing_password_hint_names_krypta_password_and_following_it_opens_the_archive() {
    let fx = Fx::new();
    encrypted(&fx);
    let pw = ("KRYPTA_PASSWORD", "correct h\u{f6}rse");
    let o = fx.run(&["t", "-q", "e.kry"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: e.kry: archive is encrypted (argon2id): give --pass-file, --pass-fd or -p, \
             or set KRYPTA_PASSWORD\n"
                .to_string()
        )
    );
    let o = fx.run_env(&["t", "-q", "e.kry"], &[pw]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
    // A delta archive (not encrypted) against the encrypted e.kry as its base.
    fx.ok(&[
        "c",
        "-q",
        "--base",
        "e.kry",
        "--base-pass-file",
        "pw",
        "d.kry",
        "t",
    ]);
    let o = fx.run(&["t", "-q", "--base", "e.kry", "d.kry"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: e.kry: the base archive is encrypted (argon2id): give --base-pass-file, \
             --base-pass-fd or --base-password, or set KRYPTA_PASSWORD\n"
                .to_string()
        )
    );
    let o = fx.run_env(&["t", "-q", "--base", "e.kry", "d.kry"], &[pw]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
}

#[test]
fn an_unencrypted_archive_at_a_terminal_asks_for_nothing() {
    let fx = Fx::new();
    fx.file("t/a", b"plain");
    fx.ok(&["c", "-q", "p.kry", "t"]);
    let Some(mut tty) = OnTty::spawn(&fx, &["x", "-q", "p.kry", "-o", "o"]) else {
        return;
    };
    assert_eq!(tty.exit_code(), 0, "{}", tty.text());
    assert!(!tty.text().contains("Password"), "{}", tty.text());
    assert_eq!(fx.read("o/t/a"), b"plain");
}

#[test]
fn creating_with_p_asks_twice_at_the_terminal() {
    let fx = Fx::new();
    fx.file("t/a", b"x");
    fx.file("pw", b"tw1ce\n");
    let args = [&["c", "-q", "-p"][..], &ARGON, &["n.kry", "t"]].concat();
    let Some(mut tty) = OnTty::spawn(&fx, &args) else {
        return;
    };
    tty.wait_for("Password: ", 1);
    tty.type_in(b"tw1ce\n");
    tty.wait_for("Repeat password: ", 1);
    tty.type_in(b"tw1ce\n");
    assert_eq!(tty.exit_code(), 0, "{}", tty.text());
    fx.ok(&["t", "-q", "--pass-file", "pw", "n.kry"]);
}

#[test]
fn ctrl_c_at_the_password_prompt_exits_130_and_restores_echo() {
    let fx = Fx::new();
    encrypted(&fx);
    let Some(mut tty) = OnTty::spawn(&fx, &["x", "e.kry", "-o", "o"]) else {
        return;
    };
    tty.wait_for("Password: ", 1);
    assert!(!tty.echo_on(), "the prompt turned echo off");
    tty.type_in(b"half a pass\x03");
    assert_eq!(tty.exit_code(), 130, "{}", tty.text());
    assert!(tty.echo_on(), "echo is back on after Ctrl-C");
    assert!(!fx.exists("o/t/a"));
}

#[test]
fn sigterm_exits_143_and_restores_echo() {
    let fx = Fx::new();
    encrypted(&fx);
    let Some(mut tty) = OnTty::spawn(&fx, &["t", "e.kry"]) else {
        return;
    };
    tty.wait_for("Password: ", 1);
    let pid = rustix::process::Pid::from_raw(tty.child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    assert_eq!(tty.exit_code(), 143, "{}", tty.text());
    assert!(tty.echo_on());
}

#[test]
fn conflicting_password_sources_are_refused() {
    let fx = Fx::new();
    encrypted(&fx);
    for args in [
        &["c", "--pass-file", "pw", "--pass-fd", "3", "x.kry", "t"][..],
        &["c", "-p", "--pass-file", "pw", "x.kry", "t"],
        &["x", "--pass-file", "pw", "--pass-fd", "3", "e.kry"],
        &["t", "-p", "--pass-fd", "3", "e.kry"],
        &["l", "-p", "--pass-file", "pw", "e.kry"],
    ] {
        let o = fx.run(args);
        assert_eq!(code(&o), 1, "{args:?}: {}", err(&o));
        assert!(
            err(&o).starts_with("error: the argument '")
                && err(&o).contains("' cannot be used with '"),
            "{args:?}: {}",
            err(&o)
        );
    }
    assert!(!fx.exists("x.kry"));
}

#[test]
fn a_recipients_file_encrypts_to_every_key_in_it() {
    let fx = Fx::new();
    fx.file("t/a", b"for the team");
    let mut pubs = Vec::new();
    for name in ["alice", "bob"] {
        fx.ok(&["keygen", "-q", "--box", "-o", name]);
        pubs.push(String::from_utf8(fx.read(&format!("{name}.pub"))).unwrap());
    }
    let file = format!(
        "# the team\n\n  {}  \n# bob, added later\n{}",
        pubs[0].trim(),
        pubs[1]
    );
    fx.file("team.txt", file.as_bytes());
    fx.ok(&["c", "-q", "-R", "team.txt", "r.kry", "t"]);
    let v: serde_json::Value =
        serde_json::from_str(&out(&fx.ok(&["info", "--json", "r.kry"]))).unwrap();
    assert_eq!(
        v["stanzas"],
        serde_json::json!([{"type": "pq-box"}, {"type": "pq-box"}])
    );
    for name in ["alice", "bob"] {
        let dir = format!("out-{name}");
        fx.ok(&["x", "-q", "-i", name, "r.kry", "-o", &dir]);
        assert_eq!(fx.read(&format!("{dir}/t/a")), b"for the team");
    }
    // A secret key, or anything else, in a recipients file is refused naming the line.
    let secret = String::from_utf8(fx.read("alice")).unwrap();
    let secret_line = secret.lines().last().unwrap();
    fx.file(
        "bad.txt",
        format!("{}\n# ok\n{secret_line}\n", pubs[1].trim()).as_bytes(),
    );
    let o = fx.run(&["c", "-R", "bad.txt", "b.kry", "t"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).starts_with("krypta: bad.txt:3: "), "{}", err(&o));
    assert!(!fx.exists("b.kry"));
    fx.file("empty.txt", b"# nobody yet\n\n");
    let o = fx.run(&["c", "-R", "empty.txt", "b.kry", "t"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains(
            "empty.txt: holds no public key (one KRYPTA-BOX-PUBLIC-1-... line per recipient)"
        ),
        "{}",
        err(&o)
    );
}

#[test]
fn keygen_to_stdout_writes_the_secret_there_and_the_public_key_to_stderr() {
    let fx = Fx::new();
    fx.file("t/a", b"k");
    let o = fx.ok(&["keygen", "-o", "-"]);
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("# krypta key file, created "));
    assert!(lines[2].starts_with("KRYPTA-KEY-1-"));
    assert_eq!(err(&o), "");
    fx.file("k.key", text.as_bytes());
    std::fs::set_permissions(
        fx.p("k.key"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    fx.ok(&["c", "-q", "--keyfile", "k.key", "k.kry", "t"]);
    fx.ok(&["t", "-q", "--keyfile", "k.key", "k.kry"]);

    let o = fx.ok(&["keygen", "--box", "-o", "-"]);
    let secret = out(&o);
    let e = err(&o);
    let public = e
        .strip_prefix("Public key: ")
        .and_then(|p| p.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("{e}"));
    assert!(public.starts_with("KRYPTA-BOX-PUBLIC-1-"));
    assert!(!e.contains("SECRET"), "no secret on stderr");
    assert!(!secret.contains("Public key:"));
    assert!(secret.contains(&format!("# public key: {public}\n")));
    fx.file("b.key", secret.as_bytes());
    std::fs::set_permissions(
        fx.p("b.key"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    fx.ok(&["c", "-q", "-r", public, "b.kry", "t"]);
    fx.ok(&["t", "-q", "-i", "b.key", "b.kry"]);
    // -q keeps stderr empty; two runs give different keys.
    let o = fx.ok(&["keygen", "-q", "--box", "-o", "-"]);
    assert_eq!(err(&o), "");
    assert_ne!(out(&o), secret);
}

#[test]
fn keygen_with_o_name_prints_one_public_key_line_on_stdout_for_box_and_sign_alike() {
    let fx = Fx::new();
    // --sign printed nothing on stdout while --box printed its public key there.
    for (kind, prefix) in [
        ("--box", "KRYPTA-BOX-PUBLIC-1-"),
        ("--sign", "KRYPTA-SIGN-PUBLIC-1-"),
    ] {
        let name = &kind[2..];
        let o = fx.ok(&["keygen", kind, "-o", name]);
        let public = String::from_utf8(fx.read(&format!("{name}.pub"))).unwrap();
        assert_eq!(out(&o), public, "{kind}: stdout is the .pub file");
        assert!(public.starts_with(prefix) && public.lines().count() == 1);
        assert!(!err(&o).contains("PUBLIC-1-"), "{kind}: no key on stderr");
        // -q: neither the message nor the line.
        let o = fx.ok(&["keygen", "-q", kind, "-o", &format!("{name}2")]);
        assert_eq!((out(&o), err(&o)), (String::new(), String::new()));
    }
    // A key file has no public part: nothing on stdout.
    let o = fx.ok(&["keygen", "-o", "k.key"]);
    assert_eq!(out(&o), "");
    assert!(err(&o).starts_with("krypta: wrote key file k.key (mode 0600)"));
    // -o - of --sign: the secret on stdout, the public key on stderr, as --box.
    let o = fx.ok(&["keygen", "--sign", "-o", "-"]);
    assert!(out(&o).contains("KRYPTA-SIGN-SECRET-1-") && !out(&o).contains("Public key:"));
    assert!(err(&o).starts_with("Public key: KRYPTA-SIGN-PUBLIC-1-"));
}

#[test]
fn each_prompt_says_which_password_it_asks_for() {
    // Regression: the prompt for an encrypted delta base's password read just "Password: ",
    // the archive's own prompt, though the archive's key came from --pass-file.
    let fx = Fx::new();
    encrypted(&fx);
    fx.file("t/b", b"new in the second version");
    fx.file("pw2", b"the delta's own\n");
    fx.ok(&[
        &["c", "-q", "--pass-file", "pw2"][..],
        &ARGON,
        &["--base", "e.kry", "--base-pass-file", "pw", "d.kry", "t"],
    ]
    .concat());
    let args = [
        "x",
        "-q",
        "--pass-file",
        "pw2",
        "--base",
        "e.kry",
        "d.kry",
        "-o",
        "o",
    ];
    let Some(mut tty) = OnTty::spawn(&fx, &args) else {
        return;
    };
    tty.wait_for("Password of the base archive: ", 1);
    tty.type_in("correct h\u{f6}rse\n".as_bytes());
    assert_eq!(tty.exit_code(), 0, "{}", tty.text());
    assert!(!tty.text().contains("\nPassword: "), "{}", tty.text());
    assert_eq!(fx.read("o/t/a"), b"secret stuff");
    assert_eq!(fx.read("o/t/b"), b"new in the second version");
}

/// Regression (h67): `keygen -o LINK` where LINK is a dangling symbolic link said "LINK:
/// already exists", which `ls -L` and the user's eyes deny. An existing target that is not a
/// regular file is named for what it is (a link, dangling or to what; a directory; a FIFO),
/// for every kind of key (plain, --box secret or its .pub, --sign), exit 1, nothing written
/// and nothing followed.
#[test]
fn keygen_names_what_is_at_an_existing_target_that_is_not_a_file() {
    let fx = Fx::new();
    std::os::unix::fs::symlink("nowhere", fx.p("dangling")).unwrap();
    fx.file("real", b"kept\n");
    std::os::unix::fs::symlink("real", fx.p("tofile")).unwrap();
    fx.mkdir("dir");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        fx.p("fifo"),
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink("nowhere", fx.p("b.pub")).unwrap();
    let link = "a key is never written through a link; remove it or choose another name";
    let not_file = "keygen writes a key only to a new file; choose a file name that does not exist";
    for (args, want) in [
        (
            &["keygen", "-o", "dangling"][..],
            format!("krypta: dangling: is a symbolic link (dangling): {link}"),
        ),
        (
            &["keygen", "--box", "-o", "dangling"],
            format!("krypta: dangling: is a symbolic link (dangling): {link}"),
        ),
        (
            &["keygen", "--sign", "-o", "dangling"],
            format!("krypta: dangling: is a symbolic link (dangling): {link}"),
        ),
        (
            &["keygen", "-o", "tofile"],
            format!("krypta: tofile: is a symbolic link (to a regular file): {link}"),
        ),
        (
            &["keygen", "-o", "dir"],
            format!("krypta: dir: is a directory: {not_file}"),
        ),
        (
            &["keygen", "-o", "fifo"],
            format!("krypta: fifo: is a named pipe (FIFO): {not_file}"),
        ),
        (
            &["keygen", "--box", "-o", "b"],
            format!("krypta: b.pub: is a symbolic link (dangling): {link}"),
        ),
        (
            &["keygen", "-o", "real"],
            "krypta: real: already exists; keygen never overwrites a key (move it away first)"
                .to_string(),
        ),
    ] {
        let o = fx.run(args);
        assert_eq!(code(&o), 1, "{args:?}: {}", err(&o));
        assert_eq!(err(&o).trim_end(), want, "{args:?}");
    }
    assert!(!fx.exists("nowhere") && !fx.exists("b"));
    assert_eq!(fx.read("real"), b"kept\n");
}
