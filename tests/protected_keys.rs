//! Issue 16, protected secret keys, through the binary: `keygen --box --protect` and
//! `keygen --sign --protect` write the secret key encrypted under a password (Argon2id); using
//! it takes `--key-pass-file` (or a prompt at a terminal); a wrong key password is its own
//! error (exit 2, naming the key file), and nothing is written with it.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// The writers' Argon2id floor, so the tests stay fast.
const FAST: [&str; 4] = ["--kdf-memory", "8", "--kdf-iterations", "1"];

fn key_line(fx: &Fx, name: &str) -> String {
    String::from_utf8(fx.read(name))
        .unwrap()
        .lines()
        .find(|l| !l.starts_with('#') && !l.is_empty())
        .unwrap()
        .to_string()
}

#[test]
fn a_protected_box_key_round_trips_and_a_wrong_password_is_its_own_error() {
    let fx = Fx::new();
    fx.file("pw", b"key password\n");
    fx.file("bad", b"not it\n");
    fx.file("t/a", b"payload");
    let o = fx.ok(&[
        &["keygen", "--box", "--protect", "--key-pass-file", "pw"][..],
        &FAST,
        &["-o", "me"],
    ]
    .concat());
    assert!(
        err(&o).contains("wrote secret key me (password-protected) and public key me.pub"),
        "{}",
        err(&o)
    );
    let line = key_line(&fx, "me");
    assert!(line.starts_with("KRYPTA-BOX-SECRET-PROTECTED-1-"), "{line}");
    assert_eq!(line.len(), 244);
    assert!(
        !String::from_utf8(fx.read("me"))
            .unwrap()
            .contains("KRYPTA-BOX-SECRET-1-")
    );
    // The public key is in the clear, and --pub with the password gives the same one.
    let public = String::from_utf8(fx.read("me.pub")).unwrap();
    assert_eq!(
        out(&fx.ok(&["keygen", "--pub", "-k", "me", "--key-pass-file", "pw"])),
        public
    );
    fx.ok(&["c", "-q", "-r", "me.pub", "a.kry", "t"]);
    fx.ok(&[
        "x",
        "-q",
        "-i",
        "me",
        "--key-pass-file",
        "pw",
        "-o",
        "o",
        "a.kry",
    ]);
    assert_eq!(fx.read("o/t/a"), b"payload");
    let o = fx.run(&[
        "x",
        "-q",
        "-i",
        "me",
        "--key-pass-file",
        "bad",
        "-o",
        "o2",
        "a.kry",
    ]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: me: wrong password for this protected secret key file\n"
    );
    assert!(!fx.exists("o2/t"));
    // No password and no terminal: the error names the option.
    let o = fx.run(&["t", "-i", "me", "a.kry"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("me: the secret key is password-protected: give --key-pass-file FILE"),
        "{}",
        err(&o)
    );
    // A damaged protected key is reported as damaged, not as a wrong password.
    let mut text = String::from_utf8(fx.read("me")).unwrap();
    let at = text.find("KRYPTA-BOX-SECRET-PROTECTED-1-").unwrap() + 40;
    let c = if &text[at..at + 1] == "A" { "B" } else { "A" };
    text.replace_range(at..at + 1, c);
    std::fs::write(fx.p("me"), text).unwrap();
    let o = fx.run(&["t", "-i", "me", "--key-pass-file", "pw", "a.kry"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).contains("checksum mismatch"), "{}", err(&o));
}

#[test]
fn a_protected_signing_key_signs_only_with_its_password() {
    let fx = Fx::new();
    fx.file("pw", b"sign pw\n");
    fx.file("bad", b"nope\n");
    fx.file("t/a", b"signed payload");
    fx.ok(&[
        &[
            "keygen",
            "-q",
            "--sign",
            "--protect",
            "--key-pass-file",
            "pw",
        ][..],
        &FAST,
        &["-o", "s"],
    ]
    .concat());
    let line = key_line(&fx, "s");
    assert!(
        line.starts_with("KRYPTA-SIGN-SECRET-PROTECTED-1-"),
        "{line}"
    );
    assert_eq!(line.len(), 202);
    let o = fx.run(&[
        "c",
        "-q",
        "--sign",
        "s",
        "--key-pass-file",
        "bad",
        "a.kry",
        "t",
    ]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: s: wrong password for this protected secret key file\n"
    );
    assert!(!fx.exists("a.kry"));
    fx.ok(&[
        "c",
        "-q",
        "--sign",
        "s",
        "--key-pass-file",
        "pw",
        "a.kry",
        "t",
    ]);
    fx.ok(&["t", "-q", "--signer", "s.pub", "a.kry"]);
    assert_eq!(
        out(&fx.ok(&["keygen", "--pub", "-k", "s", "--key-pass-file", "pw"])),
        String::from_utf8(fx.read("s.pub")).unwrap()
    );
}

#[test]
fn protect_applies_to_box_and_sign_keys_within_the_kdf_bounds() {
    let fx = Fx::new();
    fx.file("pw", b"x\n");
    let o = fx.run(&["keygen", "--protect", "--key-pass-file", "pw", "-o", "k"]);
    assert_eq!(code(&o), 1);
    assert!(
        err(&o).contains("--protect applies to the secret key of --box or --sign"),
        "{}",
        err(&o)
    );
    let o = fx.run(&[
        "keygen",
        "--box",
        "--protect",
        "--key-pass-file",
        "pw",
        "--kdf-memory",
        "4",
        "-o",
        "k",
    ]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(!fx.exists("k"));
    // No password file and no terminal: the error names --key-pass-file, nothing is written.
    let o = fx.run(&["keygen", "--sign", "--protect", "-o", "k"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("k: the key password is asked on the terminal, and there is none; give --key-pass-file FILE"),
        "{}",
        err(&o)
    );
    assert!(!fx.exists("k"));
    fx.file("empty", b"\n");
    let o = fx.run(&[
        "keygen",
        "--box",
        "--protect",
        "--key-pass-file",
        "empty",
        "-o",
        "k",
    ]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("empty key password refused"),
        "{}",
        err(&o)
    );
}

/// At a terminal, a new protected key asks for its password twice ("Password for secret key
/// me: ", then the confirmation) and using it asks once; a wrong key password typed at the
/// prompt is the key's own error (exit 2), and nothing is extracted.
#[test]
fn at_a_terminal_the_key_password_is_asked_for_and_a_wrong_one_is_its_own_error() {
    let fx = Fx::new();
    fx.file("t/a", b"prompted payload");
    let args = [&["keygen", "--box", "--protect"][..], &FAST, &["-o", "me"]].concat();
    let Some(mut tty) = OnTty::spawn(&fx, &args) else {
        return;
    };
    tty.wait_for("Password for secret key me: ", 1);
    tty.type_in(b"typed key password\n");
    tty.wait_for("Repeat password: ", 1);
    tty.type_in(b"typed key password\n");
    assert_eq!(tty.exit_code(), 0, "{}", tty.text());
    assert!(tty.echo_on());
    assert!(key_line(&fx, "me").starts_with("KRYPTA-BOX-SECRET-PROTECTED-1-"));
    fx.ok(&["c", "-q", "-r", "me.pub", "a.kry", "t"]);

    let Some(mut tty) = OnTty::spawn(&fx, &["x", "-q", "-i", "me", "-o", "o", "a.kry"]) else {
        return;
    };
    tty.wait_for("Password for secret key me: ", 1);
    tty.type_in(b"typed key password\n");
    assert_eq!(tty.exit_code(), 0, "{}", tty.text());
    assert_eq!(fx.read("o/t/a"), b"prompted payload");

    let Some(mut tty) = OnTty::spawn(&fx, &["x", "-q", "-i", "me", "-o", "o2", "a.kry"]) else {
        return;
    };
    tty.wait_for("Password for secret key me: ", 1);
    tty.type_in(b"not the key password\n");
    assert_eq!(tty.exit_code(), 2, "{}", tty.text());
    assert!(
        tty.text()
            .contains("krypta: me: wrong password for this protected secret key file"),
        "{}",
        tty.text()
    );
    assert!(!fx.exists("o2/t"));
}

/// `--key-pass-file` given for secret keys that are not protected (or for none) was ignored in
/// silence: a user who thought the key protected learnt nothing. Each use names it now, as
/// a key given for an unencrypted archive is named "not used"; a protected key uses it
/// without a word.
#[test]
fn a_key_pass_file_no_key_asked_for_is_named_as_not_used() {
    let fx = Fx::new();
    fx.file("pw", b"key password\n");
    fx.file("t/a", b"payload");
    fx.ok(&["keygen", "-q", "--box", "-o", "alice"]);
    fx.ok(&["keygen", "-q", "--sign", "-o", "me"]);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    let mut protect = vec![
        "keygen",
        "-q",
        "--box",
        "--protect",
        "--key-pass-file",
        "pw",
    ];
    protect.extend(FAST);
    protect.extend(["-o", "bob"]);
    fx.ok(&protect);
    fx.ok(&["c", "-q", "-r", "alice.pub", "-r", "bob.pub", "a.kry", "t"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "k.kry", "t"]);
    let warned = |args: &[&str], option: &str, why: &str| {
        let o = fx.ok(args);
        assert_eq!(
            err(&o),
            format!("krypta: warning: {option} pw was not used: {why}\n"),
            "{args:?}"
        );
    };
    let unprotected_i = "no secret key given with -i is password-protected";
    warned(
        &["t", "-q", "-i", "alice", "--key-pass-file", "pw", "a.kry"],
        "--key-pass-file",
        unprotected_i,
    );
    warned(
        &["l", "-q", "-i", "alice", "--key-pass-file", "pw", "a.kry"],
        "--key-pass-file",
        unprotected_i,
    );
    warned(
        &[
            "x",
            "-q",
            "-i",
            "alice",
            "--key-pass-file",
            "pw",
            "a.kry",
            "-C",
            "o1",
        ],
        "--key-pass-file",
        unprotected_i,
    );
    warned(
        &[
            "t",
            "-q",
            "--keyfile",
            "k",
            "--key-pass-file",
            "pw",
            "k.kry",
        ],
        "--key-pass-file",
        "no secret key was given with -i",
    );
    let unprotected_sign = "the signing key given with --sign is not password-protected";
    warned(
        &[
            "c",
            "-q",
            "--sign",
            "me",
            "--key-pass-file",
            "pw",
            "s.kry",
            "t",
        ],
        "--key-pass-file",
        unprotected_sign,
    );
    warned(
        &[
            "rekey",
            "-q",
            "a.kry",
            "-i",
            "alice",
            "-o",
            "r.kry",
            "-r",
            "alice.pub",
            "--sign",
            "me",
            "--sign-key-pass-file",
            "pw",
        ],
        "--sign-key-pass-file",
        unprotected_sign,
    );
    warned(
        &["keygen", "--pub", "-k", "alice", "--key-pass-file", "pw"],
        "--key-pass-file",
        "the secret key given with -k is not password-protected",
    );
    warned(
        &["keygen", "-q", "-o", "k2", "--key-pass-file", "pw"],
        "--key-pass-file",
        "it is the password of --protect or of a protected --pub -k key",
    );
    // Used: no word.
    let o = fx.ok(&["t", "-q", "-i", "bob", "--key-pass-file", "pw", "a.kry"]);
    assert_eq!(err(&o), "");
    let o = fx.ok(&[
        "t",
        "-q",
        "-i",
        "alice",
        "-i",
        "bob",
        "--key-pass-file",
        "pw",
        "a.kry",
    ]);
    assert_eq!(err(&o), "");
}

/// Regression (h61): a delta base encrypted to a protected box key (`--base-identity`) had
/// no way to take the key's password from a file, as `-i` takes `--key-pass-file`: without a
/// terminal it failed, naming `--key-pass-file`, which is the archive's option and does not
/// reach the base. `--base-key-pass-file` is the base's, named in its messages; the same
/// holds for `rekey --sign`, whose error named `--key-pass-file` for `--sign-key-pass-file`.
#[test]
fn a_protected_base_identity_takes_its_password_from_base_key_pass_file() {
    let fx = Fx::new();
    fx.file("pw", b"key password\n");
    fx.file("v1/a", b"one\n");
    fx.file("v2/a", b"one, and two\n");
    fx.ok(&[
        &[
            "keygen",
            "-q",
            "--box",
            "--protect",
            "--key-pass-file",
            "pw",
        ][..],
        &FAST,
        &["-o", "me"],
    ]
    .concat());
    fx.ok(&["keygen", "-q", "--box", "-o", "plain"]);
    fx.ok(&["c", "-q", "-r", "me.pub", "base.kry", "v1"]);
    let base = ["--base", "base.kry", "--base-identity", "me"];
    // Without the option (and no terminal): refused, naming the base's option.
    let o = fx.run(&[&["c", "-q"][..], &base, &["d.kry", "v2"]].concat());
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: me: the secret key is password-protected: give --base-key-pass-file FILE or \
         run at a terminal\n"
    );
    assert!(!fx.exists("d.kry"));
    // With it: c, t and x read the base.
    fx.ok(&[
        &["c", "-q"][..],
        &base,
        &["--base-key-pass-file", "pw", "d.kry", "v2"],
    ]
    .concat());
    let o = fx.ok(&[
        &["t", "-q"][..],
        &base,
        &["--base-key-pass-file", "pw", "d.kry"],
    ]
    .concat());
    assert_eq!(err(&o), "");
    fx.ok(&[
        &["x", "-q", "-o", "out"][..],
        &base,
        &["--base-key-pass-file", "pw", "d.kry"],
    ]
    .concat());
    assert_eq!(fx.read("out/v2/a"), b"one, and two\n");
    // The archive's --key-pass-file does not open the base's key.
    let o = fx.run(&[&["t", "-q"][..], &base, &["--key-pass-file", "pw", "d.kry"]].concat());
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("give --base-key-pass-file FILE"),
        "{}",
        err(&o)
    );
    // Given for a base key that is not protected: named as not used, with the base's words.
    fx.ok(&["c", "-q", "-r", "plain.pub", "base2.kry", "v1"]);
    let o = fx.ok(&[
        "c",
        "-q",
        "--base",
        "base2.kry",
        "--base-identity",
        "plain",
        "--base-key-pass-file",
        "pw",
        "d2.kry",
        "v2",
    ]);
    assert_eq!(
        err(&o),
        "krypta: warning: --base-key-pass-file pw was not used: no secret key given with \
         --base-identity is password-protected\n"
    );
    // rekey --sign with a protected key and no file: its own option named.
    fx.ok(&[
        &[
            "keygen",
            "-q",
            "--sign",
            "--protect",
            "--key-pass-file",
            "pw",
        ][..],
        &FAST,
        &["-o", "signer"],
    ]
    .concat());
    let o = fx.run(&[
        "rekey",
        "-q",
        "base.kry",
        "-i",
        "me",
        "--key-pass-file",
        "pw",
        "-o",
        "r.kry",
        "-r",
        "plain.pub",
        "--sign",
        "signer",
    ]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: signer: the secret key is password-protected: give --sign-key-pass-file FILE \
         or run at a terminal\n"
    );
}
