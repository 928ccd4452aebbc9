//! An unencrypted archive read with a key (issue 12 #21): every key option refuses it (exit
//! 2, one line, nothing written), unless `--allow-unencrypted` says the user expects it; a
//! password from the environment alone reads it with a warning. Split from `encryption.rs`.

mod common;
mod enc_common;

use std::process::Stdio;

use common::{code, krypta};
use enc_common::{Fx, stderr, with};

/// The exact refusal of an unencrypted archive read with a key (issue 12 #21).
fn not_encrypted_line(name: &str) -> String {
    format!(
        "krypta: {name}: the archive is not encrypted, but a key was given: refusing it (an unencrypted archive proves nothing about who wrote it; give --allow-unencrypted to read it anyway)\n"
    )
}

#[test]
fn a_key_given_for_an_unencrypted_archive_is_refused_with_exit_2() {
    // An attacker who swaps a plain archive in for an encrypted one must not get it read as
    // if the key had opened it: every key option on t, x and l refuses it, nothing is written.
    let fx = Fx::new();
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["keygen", "--box", "-o", "bx"]);
    fx.ok(&["c", "plain.kry", "src"]);
    let keys: [&[&str]; 3] = [&["--keyfile", "k"], &["-i", "bx"], &["--pass-file", "pw"]];
    for key in keys {
        for cmd in [&["t"][..], &["l"], &["x", "-o", "out"]] {
            let args = with(&with(cmd, key), &["plain.kry"]);
            let o = fx.run(&args);
            assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
            assert_eq!(stderr(&o), not_encrypted_line("plain.kry"), "{args:?}");
            assert!(o.stdout.is_empty(), "{args:?}");
            assert!(!fx.p("out").exists(), "{args:?} created the output");
        }
    }
}

#[test]
fn allow_unencrypted_or_no_key_reads_an_unencrypted_archive() {
    let fx = Fx::new();
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "plain.kry", "src"]);
    let t = fx.ok(&["t", "--keyfile", "k", "--allow-unencrypted", "plain.kry"]);
    assert_eq!(
        stderr(&t),
        "krypta: warning: plain.kry: the archive is not encrypted: the key given was not used, and its checksums do not show who wrote it\n\
         krypta: plain.kry: OK (6 entries, 3 files, 120000 bytes, 1 block verified)\n"
    );
    fx.ok(&["l", "--keyfile", "k", "--allow-unencrypted", "plain.kry"]);
    fx.assert_restores("plain.kry", &["--keyfile", "k", "--allow-unencrypted"]);
    let t = fx.ok(&["t", "plain.kry"]);
    assert_eq!(
        stderr(&t),
        "krypta: plain.kry: OK (6 entries, 3 files, 120000 bytes, 1 block verified)\n"
    );
    // An encrypted archive is read as before with the flag given.
    fx.ok(&["c", "--keyfile", "k", "k.kry", "src"]);
    let t = fx.ok(&["t", "--keyfile", "k", "--allow-unencrypted", "k.kry"]);
    assert_eq!(
        stderr(&t),
        "krypta: k.kry: OK (6 entries, 3 files, 120000 bytes, 1 block verified)\n"
    );
}

#[test]
fn krypta_password_alone_reads_an_unencrypted_archive_with_a_warning() {
    // A variable left in the environment does not make every plain archive unreadable (README:
    // only key options require encryption); the run says the password was not used.
    let fx = Fx::new();
    fx.ok(&["c", "plain.kry", "src"]);
    let run = |args: &[&str]| {
        krypta()
            .current_dir(fx.dir.path())
            .env("KRYPTA_PASSWORD", "correct horse")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let t = run(&["t", "plain.kry"]);
    assert_eq!(code(&t), 0, "{}", stderr(&t));
    assert_eq!(
        stderr(&t),
        "krypta: warning: plain.kry: the archive is not encrypted: the key given was not used, and its checksums do not show who wrote it\n\
         krypta: plain.kry: OK (6 entries, 3 files, 120000 bytes, 1 block verified)\n"
    );
    let x = run(&["x", "-o", "out", "plain.kry"]);
    assert_eq!(code(&x), 0, "{}", stderr(&x));
    assert_eq!(
        std::fs::read(fx.p("out/src/notes.txt")).unwrap(),
        std::fs::read(fx.p("src/notes.txt")).unwrap()
    );
    // With an explicit key option as well, the refusal holds.
    let o = run(&["t", "--pass-file", "pw", "plain.kry"]);
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o), not_encrypted_line("plain.kry"));
}

/// `l` read an unencrypted archive with KRYPTA_PASSWORD set (or a key and
/// `--allow-unencrypted`) in silence, while `t` and `x` said the key was not used: `l`, `l
/// --b3` and `l --json` say it now too (on stderr; the listing is unchanged).
#[test]
fn list_says_the_key_was_not_used_as_test_and_extract_do() {
    let fx = Fx::new();
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "plain.kry", "src"]);
    let warning = "krypta: warning: plain.kry: the archive is not encrypted: the key given was not used, and its checksums do not show who wrote it\n";
    let plain = fx.ok(&["l", "plain.kry"]);
    assert_eq!(stderr(&plain), "");
    for extra in [&[][..], &["--b3"], &["--json"]] {
        let o = krypta()
            .current_dir(fx.dir.path())
            .env("KRYPTA_PASSWORD", "correct horse")
            .args(with(&with(&["l"], extra), &["plain.kry"]))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{extra:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), warning, "{extra:?}");
        let quiet = fx.ok(&with(&with(&["l"], extra), &["plain.kry"]));
        assert_eq!(o.stdout, quiet.stdout, "{extra:?}: the listing is the same");
        let o = fx.ok(&with(
            &with(&["l", "--keyfile", "k", "--allow-unencrypted"], extra),
            &["plain.kry"],
        ));
        assert_eq!(stderr(&o), warning, "{extra:?}");
    }
}
