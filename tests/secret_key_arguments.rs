//! Key files on the command line, as a careless user gives them (helper-52): secret key text
//! where a key file belongs is refused without being echoed; a secret key file group or
//! others may write is warned about, as a readable one is; an output that is a key file the
//! command reads is refused even with `-f`.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// The key line of the key file `name` in `fx`.
fn key_line(fx: &Fx, name: &str) -> String {
    String::from_utf8(fx.read(name))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("KRYPTA-"))
        .expect("a key line")
        .to_string()
}

/// `args` fails with exit 1, naming `<argument>` and never the secret `text`.
fn refused_unechoed(fx: &Fx, args: &[&str], text: &str) {
    let o = fx.run(args);
    let (e, so) = (err(&o), out(&o));
    assert_eq!(code(&o), 1, "{args:?}: {e}");
    assert!(
        e.contains("krypta: <argument>: key text given as an argument"),
        "{args:?}: {e}"
    );
    // The payload (after the 13-character prefix) appears nowhere.
    assert!(!e.contains(&text[13..]), "{args:?} echoed the secret: {e}");
    assert!(
        !so.contains(&text[13..]),
        "{args:?} echoed the secret: {so}"
    );
}

/// `-i` and `--sign` refused key text as an argument ("<argument>: key text given as an
/// argument"), but `--keyfile`, `c --keyfile`, `rekey --new-keyfile` and `--base-keyfile`
/// took it as a path and printed it whole in "KRYPTA-KEY-1-…: open key file: No such file or
/// directory": the secret, on stderr and so in the logs of the script that made the mistake.
#[test]
fn a_symmetric_key_given_as_text_is_refused_and_not_echoed() {
    let fx = Fx::new();
    fx.file("t/a", b"data");
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["keygen", "-q", "-o", "k2"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "a.kry", "t"]);
    let text = key_line(&fx, "k");
    // Reading: t, x, l.
    refused_unechoed(&fx, &["t", "--keyfile", &text, "a.kry"], &text);
    refused_unechoed(&fx, &["x", "-o", "o", "--keyfile", &text, "a.kry"], &text);
    refused_unechoed(&fx, &["l", "--keyfile", &text, "a.kry"], &text);
    // Writing: c --keyfile, rekey --keyfile and --new-keyfile.
    refused_unechoed(&fx, &["c", "--keyfile", &text, "b.kry", "t"], &text);
    refused_unechoed(
        &fx,
        &[
            "rekey",
            "--keyfile",
            &text,
            "a.kry",
            "-o",
            "r.kry",
            "--new-keyfile",
            "k2",
        ],
        &text,
    );
    refused_unechoed(
        &fx,
        &[
            "rekey",
            "--keyfile",
            "k",
            "a.kry",
            "-o",
            "r.kry",
            "--new-keyfile",
            &text,
        ],
        &text,
    );
    // A delta base's key.
    refused_unechoed(
        &fx,
        &[
            "c",
            "--base",
            "a.kry",
            "--base-keyfile",
            &text,
            "d.kry",
            "t",
        ],
        &text,
    );
    assert!(!fx.exists("b.kry") && !fx.exists("r.kry") && !fx.exists("d.kry"));
    // A file of that name is still a file: the rule is only for text naming nothing.
    std::fs::copy(fx.p("k"), fx.p(&text)).unwrap();
    fx.ok(&["t", "-q", "--keyfile", &text, "a.kry"]);
}

/// Key text given where a path belongs that is no key option (`x --base KRYPTA-KEY-1-…`,
/// `--pass-file`, ARCHIVE, an input of `c`, `-C`, `-o`) was taken as a path and echoed whole
/// by "KRYPTA-KEY-1-…: No such file or directory". Every path argument is checked now.
#[test]
fn key_text_where_any_path_belongs_is_refused_and_not_echoed() {
    let fx = Fx::new();
    fx.file("t/a", b"data");
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["keygen", "-q", "--box", "-o", "alice"]);
    fx.ok(&["c", "-q", "a.kry", "t"]);
    for text in [key_line(&fx, "k"), key_line(&fx, "alice")] {
        let text = text.as_str();
        let named = |args: &[&str], what: &str| {
            refused_unechoed(&fx, args, text);
            let e = err(&fx.run(args));
            assert!(
                e.contains(&format!("where {what} takes a path (the text is not shown")),
                "{args:?}: {e}"
            );
        };
        for cmd in ["x", "t", "l"] {
            named(&[cmd, "--base", text, "a.kry"], "--base");
            named(&[cmd, text], "ARCHIVE");
            named(&[cmd, "--pass-file", text, "a.kry"], "--pass-file");
        }
        named(&["c", "--base", text, "d.kry", "t"], "--base");
        named(&["c", "b.kry", "t", text], "INPUTS");
        named(&["c", text, "t"], "OUTPUT");
        named(&["c", "--files-from", text, "b.kry"], "--files-from");
        named(
            &["c", "--exclude-from", text, "b.kry", "t"],
            "--exclude-from",
        );
        named(&["c", "-C", text, "b.kry", "t"], "--directory");
        named(&["c", "-R", text, "b.kry", "t"], "--recipients-file");
        named(&["x", "a.kry", "-C", text], "--output");
        named(
            &["t", "-i", "alice", "--key-pass-file", text, "a.kry"],
            "--key-pass-file",
        );
        named(
            &["rekey", "a.kry", "-o", text, "--new-keyfile", "k"],
            "--output",
        );
        named(&["info", text], "ARCHIVE");
        named(&["keygen", "-o", text], "--output");
    }
    assert!(!fx.exists("b.kry") && !fx.exists("d.kry") && !fx.exists("o"));
    // A key typed where a member PATH goes was echoed by "not found in a.kry: KRYPTA-…".
    let text = key_line(&fx, "k");
    for args in [
        &["l", "a.kry", &text][..],
        &["x", "a.kry", &text, "-C", "o"],
    ] {
        let o = fx.run(args);
        assert_eq!(code(&o), 1, "{args:?}");
        assert_eq!(
            err(&o),
            "krypta: not found in a.kry: <argument> (key text, not shown)\n",
            "{args:?}"
        );
    }
    // A file of that name is still a file.
    let text = key_line(&fx, "k");
    fx.file(&text, b"t/a\n");
    fx.ok(&["c", "-q", "--files-from", &text, "f.kry"]);
    assert_eq!(fx.names("f.kry"), ["t/a"]);
}

/// Box and signing secret keys warn when group or others may write them too, as key files
/// do (SECURITY.md: "group- or world-accessible"): only a readable one was warned about, so
/// a group-writable `alice` or signing key, which another user can replace with their own
/// (`keygen --pub -k alice` then prints *their* public key), was used in silence.
#[test]
fn a_group_writable_secret_key_is_used_with_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    fx.file("t/a", b"data");
    fx.ok(&["keygen", "-q", "--box", "-o", "alice"]);
    fx.ok(&["keygen", "-q", "--sign", "-o", "me"]);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    let mode = |name: &str, m: u32| {
        std::fs::set_permissions(fx.p(name), std::fs::Permissions::from_mode(m)).unwrap()
    };
    for m in [0o620, 0o602] {
        mode("alice", m);
        mode("me", m);
        mode("k", m);
        let o = fx.ok(&["c", "-q", "-r", "alice.pub", "--sign", "me", "a.kry", "t"]);
        assert_eq!(
            err(&o),
            format!(
                "krypta: warning: me is writable by group/others (mode 0{m:o}): they could replace the key; chmod 600 me\n"
            )
        );
        let o = fx.ok(&["t", "-q", "-i", "alice", "a.kry"]);
        assert_eq!(
            err(&o),
            format!(
                "krypta: warning: alice is writable by group/others (mode 0{m:o}): they could replace the key; chmod 600 alice\n"
            )
        );
        // Key files already warned so.
        let o = fx.ok(&["c", "-q", "--keyfile", "k", "b.kry", "t"]);
        assert!(err(&o).contains("k: key file is accessible by group or others"));
        std::fs::remove_file(fx.p("a.kry")).unwrap();
        std::fs::remove_file(fx.p("b.kry")).unwrap();
    }
    // Private again: nothing said.
    mode("alice", 0o600);
    mode("me", 0o600);
    let o = fx.ok(&["c", "-q", "-r", "alice.pub", "--sign", "me", "a.kry", "t"]);
    assert_eq!(err(&o), "");
    let o = fx.ok(&["t", "-q", "-i", "alice", "a.kry"]);
    assert_eq!(err(&o), "");
}

/// An OUTPUT that is a key file the command reads is refused even with `-f`: `c -f --keyfile
/// k k dir` replaced the only copy of the key with an archive that only that key opens (and
/// `--pass-file pw pw`, `--sign me me`, `rekey -o k -f --new-keyfile k` alike). The key is
/// left as it was, however the output names it (a link, another spelling).
#[test]
fn an_output_that_is_a_key_file_being_read_is_refused_even_with_force() {
    let fx = Fx::new();
    fx.file("t/a", b"data");
    fx.file("pw", b"a good password\n");
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["keygen", "-q", "-o", "k2"]);
    fx.ok(&["keygen", "-q", "--sign", "-o", "me"]);
    fx.ok(&["keygen", "-q", "--box", "-o", "alice"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "a.kry", "t"]);
    std::os::unix::fs::symlink("k", fx.p("k-link")).unwrap();
    let before: Vec<(&str, Vec<u8>)> = ["k", "k2", "pw", "me", "alice", "alice.pub"]
        .into_iter()
        .map(|n| (n, fx.read(n)))
        .collect();
    let argon = ["--kdf-memory", "8", "--kdf-iterations", "1"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["c", "-f", "--keyfile", "k", "k", "t"], "--keyfile"),
        (
            vec!["c", "-f", "--keyfile", "k", "./k-link", "t"],
            "--keyfile",
        ),
        (
            vec!["c", "-f", "--keyfile", "k-link", "k", "t"],
            "--keyfile",
        ),
        (
            [&["c", "-f", "--pass-file", "pw"][..], &argon, &["pw", "t"]].concat(),
            "--pass-file",
        ),
        (
            vec!["c", "-f", "--keyfile", "k", "--sign", "me", "me", "t"],
            "--sign",
        ),
        (vec!["c", "-f", "-r", "alice.pub", "alice.pub", "t"], "-r"),
        (
            vec![
                "rekey",
                "--keyfile",
                "k",
                "a.kry",
                "-o",
                "k2",
                "-f",
                "--new-keyfile",
                "k2",
            ],
            "--new-keyfile",
        ),
        (
            vec![
                "rekey",
                "--keyfile",
                "k",
                "a.kry",
                "-o",
                "k",
                "-f",
                "--new-keyfile",
                "k2",
            ],
            "--keyfile",
        ),
        (
            vec![
                "rekey",
                "--keyfile",
                "k",
                "a.kry",
                "-o",
                "me",
                "-f",
                "--new-keyfile",
                "k2",
                "--sign",
                "me",
            ],
            "--sign",
        ),
    ];
    for (args, option) in &cases {
        let o = fx.run(args);
        assert_eq!(code(&o), 1, "{args:?}: {}", err(&o));
        assert!(
            err(&o).contains(&format!(
                "is the file given with {option}: writing the archive over it would destroy that key"
            )),
            "{args:?}: {}",
            err(&o)
        );
        for (n, b) in &before {
            assert_eq!(&fx.read(n), b, "{args:?} changed {n}");
        }
    }
    // Another output is written as before.
    fx.ok(&["c", "-q", "-f", "--keyfile", "k", "a.kry", "t"]);
    fx.ok(&["t", "-q", "--keyfile", "k", "a.kry"]);
}

/// `keygen --pub -k NAME` read a group- or world-accessible secret key in silence, while `-i`,
/// `c --sign` and `rekey --sign` warned: one helper now, for box and signing keys alike.
#[test]
fn keygen_pub_warns_about_an_accessible_secret_key_as_every_other_use_does() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    fx.ok(&["keygen", "-q", "--box", "-o", "alice"]);
    fx.ok(&["keygen", "-q", "--sign", "-o", "me"]);
    for name in ["alice", "me"] {
        let public = String::from_utf8(fx.read(&format!("{name}.pub"))).unwrap();
        let o = fx.ok(&["keygen", "--pub", "-k", name]);
        assert_eq!((out(&o), err(&o)), (public.clone(), String::new()));
        for (m, how) in [
            (0o640, "is readable by group/others (mode 0640); chmod 600"),
            (
                0o620,
                "is writable by group/others (mode 0620): they could replace the key; chmod 600",
            ),
        ] {
            std::fs::set_permissions(fx.p(name), std::fs::Permissions::from_mode(m)).unwrap();
            let o = fx.ok(&["keygen", "--pub", "-k", name]);
            assert_eq!(out(&o), public, "{name}: stdout is still the public key");
            assert_eq!(err(&o), format!("krypta: warning: {name} {how} {name}\n"));
        }
        std::fs::set_permissions(fx.p(name), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}
