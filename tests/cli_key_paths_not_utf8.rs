//! Key files and other user-given files whose names are not UTF-8 (byte 0xff) are used under
//! exactly those names, by every command: `keygen --pub -k` had read the key through
//! `to_string_lossy`, so it opened a *different* file (the name with U+FFFD in place of
//! 0xff), and `-i`, `-r`, `--signer` and `--base-identity` took only UTF-8 (clap refused the
//! rest). Messages name such files escaped (`krypta::fs::shown`: `\xff`).

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::{Output, Stdio};

/// krypta `args` in `dir`, stdin empty: (exit code, stdout, stderr).
fn run(dir: &Path, args: &[&[u8]]) -> (i32, Vec<u8>, String) {
    let o: Output = common::krypta()
        .current_dir(dir)
        .args(args.iter().map(|a| OsStr::from_bytes(a)))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        common::code(&o),
        o.stdout,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// [`run`], which must succeed; returns stdout.
fn ok(dir: &Path, args: &[&[u8]]) -> Vec<u8> {
    let (code, out, err) = run(dir, args);
    let shown: Vec<String> = args.iter().map(|a| krypta::fs::escape_path(a)).collect();
    assert_eq!(code, 0, "krypta {}: {err}", shown.join(" "));
    out
}

/// The names in `dir`, as bytes, sorted.
fn names(dir: &Path) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_vec())
        .collect();
    v.sort();
    v
}

/// A key file's text (ASCII), to compare with what `keygen --pub` printed.
fn read(dir: &Path, name: &[u8]) -> String {
    String::from_utf8(std::fs::read(dir.join(OsStr::from_bytes(name))).unwrap()).unwrap()
}

/// `keygen --pub -k KEY` (and `extra` options): the public key text printed.
fn public_of(dir: &Path, key: &[u8], extra: &[&[u8]]) -> String {
    let args = [&[&b"keygen"[..], b"--pub", b"-k", key][..], extra].concat();
    String::from_utf8(ok(dir, &args)).unwrap()
}

/// A directory holding `t/a`, the file archived.
fn fixture() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    common::write(&d.path().join("t/a"), b"not utf-8 names\n");
    d
}

/// Extracts `archive` with the key options `keys` into a fresh `out` and checks `t/a`.
fn round_trips(dir: &Path, keys: &[&[u8]], archive: &[u8], out: &str) {
    ok(
        dir,
        &[
            &[&b"x"[..], b"-q", b"-o", out.as_bytes()][..],
            keys,
            &[archive],
        ]
        .concat(),
    );
    assert_eq!(
        std::fs::read(dir.join(out).join("t/a")).unwrap(),
        b"not utf-8 names\n"
    );
}

#[test]
fn keygen_key_file_not_utf8_is_created_under_its_own_name_and_opens_archives() {
    let d = fixture();
    let dir = d.path();
    let (code, _, err) = run(dir, &[b"keygen", b"-o", b"k\xff.key"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err,
        "krypta: wrote key file k\\xff.key (mode 0600); keep a copy: without it the archives \
         cannot be opened\n"
    );
    assert_eq!(names(dir), [&b"k\xff.key"[..], b"t"]);
    // --exclude-from and --key-pass-file style inputs: read under their own names too.
    std::fs::write(dir.join(OsStr::from_bytes(b"ex\xff")), b"skip*\n").unwrap();
    common::write(&dir.join("t/skip-me"), b"left out");
    ok(
        dir,
        &[
            b"c",
            b"-q",
            b"--keyfile",
            b"k\xff.key",
            b"--exclude-from",
            b"ex\xff",
            b"e\xff.kry",
            b"t",
        ],
    );
    round_trips(dir, &[b"--keyfile", b"k\xff.key"], b"e\xff.kry", "o");
    assert!(!dir.join("o/t/skip-me").exists());
    // A missing key file is named as given, escaped.
    let (code, _, err) = run(
        dir,
        &[
            b"x",
            b"--keyfile",
            b"gone\xff.key",
            b"-o",
            b"o2",
            b"e\xff.kry",
        ],
    );
    assert_eq!(
        (code, err.as_str()),
        (
            4,
            "krypta: gone\\xff.key: open key file: No such file or directory (os error 2)\n"
        )
    );
}

#[test]
fn keygen_pub_reads_the_box_key_named_not_its_lossy_twin() {
    let d = fixture();
    let dir = d.path();
    // The twin is the name `to_string_lossy` made of b"b\xff": 0xff became U+FFFD.
    let (code, _, err) = run(dir, &[b"keygen", b"--box", b"-o", b"b\xff"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err,
        "krypta: wrote secret key b\\xff and public key b\\xff.pub\n"
    );
    ok(
        dir,
        &[b"keygen", b"-q", b"--box", b"-o", "b\u{FFFD}".as_bytes()],
    );
    assert_eq!(
        names(dir),
        [
            &b"b\xef\xbf\xbd"[..],
            b"b\xef\xbf\xbd.pub",
            b"b\xff",
            b"b\xff.pub",
            b"t"
        ]
    );
    let public = public_of(dir, b"b\xff", &[]);
    assert_eq!(public, read(dir, b"b\xff.pub"));
    assert_ne!(public, read(dir, "b\u{FFFD}.pub".as_bytes()));
}

#[test]
fn box_keys_not_utf8_serve_as_recipient_recipients_file_identity_and_rekey() {
    let d = fixture();
    let dir = d.path();
    ok(dir, &[b"keygen", b"-q", b"--box", b"-o", b"b\xff"]);
    ok(dir, &[b"keygen", b"-q", b"--box", b"-o", b"n\xfe"]);
    ok(dir, &[b"c", b"-q", b"-r", b"b\xff.pub", b"r\xff.kry", b"t"]);
    round_trips(dir, &[b"-i", b"b\xff"], b"r\xff.kry", "o1");
    std::fs::copy(
        dir.join(OsStr::from_bytes(b"b\xff.pub")),
        dir.join(OsStr::from_bytes(b"team\xff.txt")),
    )
    .unwrap();
    ok(
        dir,
        &[b"c", b"-q", b"-R", b"team\xff.txt", b"f\xff.kry", b"t"],
    );
    round_trips(dir, &[b"-i", b"b\xff"], b"f\xff.kry", "o2");
    ok(
        dir,
        &[
            b"rekey",
            b"-q",
            b"-i",
            b"b\xff",
            b"r\xff.kry",
            b"-o",
            b"re\xff.kry",
            b"-r",
            b"n\xfe.pub",
        ],
    );
    round_trips(dir, &[b"--identity", b"n\xfe"], b"re\xff.kry", "o3");
    let mut want: Vec<&[u8]> = vec![
        b"b\xff",
        b"b\xff.pub",
        b"f\xff.kry",
        b"n\xfe",
        b"n\xfe.pub",
        b"o1",
        b"o2",
        b"o3",
        b"r\xff.kry",
        b"re\xff.kry",
        b"t",
        b"team\xff.txt",
    ];
    want.sort();
    assert_eq!(names(dir), want);
    // A missing identity is named as given, escaped, not refused by the argument parser.
    let (code, _, err) = run(dir, &[b"t", b"-i", b"gone\xff", b"r\xff.kry"]);
    assert_eq!(
        (code, err.as_str()),
        (
            4,
            "krypta: gone\\xff: open: No such file or directory (os error 2)\n"
        )
    );
}

#[test]
fn protected_box_key_and_key_pass_file_not_utf8() {
    let d = fixture();
    let dir = d.path();
    std::fs::write(dir.join(OsStr::from_bytes(b"pw\xff")), b"key password\n").unwrap();
    let kdf: [&[u8]; 4] = [b"--kdf-memory", b"8", b"--kdf-iterations", b"1"];
    ok(
        dir,
        &[
            &[
                &b"keygen"[..],
                b"-q",
                b"--box",
                b"--protect",
                b"--key-pass-file",
                b"pw\xff",
                b"-o",
                b"p\xff",
            ][..],
            &kdf,
        ]
        .concat(),
    );
    let public = public_of(dir, b"p\xff", &[b"--key-pass-file", b"pw\xff"]);
    assert_eq!(public, read(dir, b"p\xff.pub"));
    ok(dir, &[b"c", b"-q", b"-r", b"p\xff.pub", b"e.kry", b"t"]);
    round_trips(
        dir,
        &[b"-i", b"p\xff", b"--key-pass-file", b"pw\xff"],
        b"e.kry",
        "o",
    );
}

#[test]
fn signing_keys_not_utf8_sign_and_verify() {
    let d = fixture();
    let dir = d.path();
    let (code, _, err) = run(dir, &[b"keygen", b"--sign", b"-o", b"s\xff"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with("krypta: wrote signing key s\\xff and public key s\\xff.pub (fingerprint "),
        "{err}"
    );
    assert_eq!(names(dir), [&b"s\xff"[..], b"s\xff.pub", b"t"]);
    let public = public_of(dir, b"s\xff", &[]);
    assert_eq!(public, read(dir, b"s\xff.pub"));
    ok(dir, &[b"c", b"-q", b"--sign", b"s\xff", b"g.kry", b"t"]);
    round_trips(dir, &[b"--signer", b"s\xff.pub"], b"g.kry", "o");
}

#[test]
fn base_archive_and_base_identity_not_utf8() {
    let d = fixture();
    let dir = d.path();
    ok(dir, &[b"keygen", b"-q", b"--box", b"-o", b"b\xff"]);
    ok(
        dir,
        &[b"c", b"-q", b"-r", b"b\xff.pub", b"base\xff.kry", b"t"],
    );
    common::write(&dir.join("t/a2"), b"new in the delta");
    ok(
        dir,
        &[
            b"c",
            b"-q",
            b"--base",
            b"base\xff.kry",
            b"--base-identity",
            b"b\xff",
            b"d.kry",
            b"t",
        ],
    );
    round_trips(
        dir,
        &[b"--base", b"base\xff.kry", b"--base-i", b"b\xff"],
        b"d.kry",
        "o",
    );
    assert_eq!(
        std::fs::read(dir.join("o/t/a2")).unwrap(),
        b"new in the delta"
    );
}
