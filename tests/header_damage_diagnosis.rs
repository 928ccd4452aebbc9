//! A damaged header of an encrypted archive is told apart from a wrong key wherever its bytes
//! allow (docs/SECURITY.md, "Failures"): a stanza that opens proves the key right, so a
//! header tag that then fails is the header's damage ("the archive's header is damaged or
//! modified: the key is right"), never "wrong key or password". When no stanza opens, a wrong
//! key and a changed stanza (or archive id) cannot be told apart, and the message says both
//! and that no stanza opened. Regression: every such header (a whole byte changed, more than
//! the one flipped bit `header_fix` undoes) said "authentication failed: wrong key or
//! password, or the archive was modified" and sent the user looking for another password.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// The header length (bytes 12..16).
fn header_len(a: &[u8]) -> usize {
    u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize
}

const KEY_RIGHT: &str = "c.kry: the archive's header is damaged or modified: the key is right (a recipient stanza opened with it), but the header's MAC does not verify\n";
const NO_STANZA: &str = "c.kry: authentication failed: no recipient stanza opened with the keys given: wrong key or password, or the archive's header is damaged or modified\n";

/// `cmd` on `a` with byte `at` changed by `xor`: (exit code, stderr).
fn with_byte(fx: &Fx, a: &[u8], at: usize, xor: u8, keys: &[&str], cmd: &[&str]) -> (i32, String) {
    let mut b = a.to_vec();
    b[at] ^= xor;
    std::fs::write(fx.p("c.kry"), &b).unwrap();
    let o = fx.run(&[cmd, keys, &["c.kry"]].concat());
    (code(&o), err(&o))
}

/// The header of archive `a`, read with `keys`, has every byte of `key_right` (outside the
/// stanza the key opens) reported as damage under a right key, and every byte of `stanza`
/// (the stanza, the archive id) with both possibilities; exit 2 always, nothing extracted.
/// Two bits of each byte change (`^ 3`): one flipped bit is undone by the header's tag
/// (`header_fix`), and an ASCII comment byte stays ASCII (so the header still parses).
fn diagnosed(fx: &Fx, a: &[u8], keys: &[&str], key_right: &[usize], stanza: &[usize]) {
    for (bytes, want) in [(key_right, KEY_RIGHT), (stanza, NO_STANZA)] {
        for &at in bytes {
            for cmd in [&["t"][..], &["l"], &["x", "-o", "o"]] {
                let (c, e) = with_byte(fx, a, at, 3, keys, cmd);
                assert_eq!(
                    (c, e.as_str()),
                    (2, format!("krypta: {want}").as_str()),
                    "byte {at}, {cmd:?}"
                );
            }
            assert!(!fx.exists("o/t"), "byte {at}: something was extracted");
        }
    }
}

fn tree(fx: &Fx) {
    fx.file("t/a.txt", b"hello\n");
    fx.file("t/b.bin", &common::bytes(20_000, 7, false));
}

#[test]
fn a_key_file_archives_damaged_header_is_not_called_a_wrong_key() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["keygen", "-o", "k2"]);
    fx.ok(&[
        "c",
        "-q",
        "--comment",
        "nightly",
        "--keyfile",
        "k",
        "e.kry",
        "t",
    ]);
    let a = std::fs::read(fx.p("e.kry")).unwrap();
    let h = header_len(&a);
    // Stanza: 48..120 (kind, length, wrapped key, tag), then the comment (its length at
    // 120, "nightly" at 124), the extension count (131) and the tag (133). Right key: the
    // creation time, the block size, the comment's bytes, the header tag.
    assert_eq!(h, 165);
    let right: Vec<usize> = [32, 36, 39, 40, 124, 127, 130, 133, 150, 164].to_vec();
    let stanza: Vec<usize> = [16, 23, 31, 56, 88, 100, 119].to_vec();
    diagnosed(&fx, &a, &["--keyfile", "k"], &right, &stanza);
    // A wrong key on the intact archive: the same words as a changed stanza (they cannot be
    // told apart), which name both.
    std::fs::write(fx.p("c.kry"), &a).unwrap();
    let o = fx.run(&["t", "--keyfile", "k2", "c.kry"]);
    assert_eq!((code(&o), err(&o)), (2, format!("krypta: {NO_STANZA}")));
    // A stanza kind changed to one this krypta does not know: skipped, and both said.
    let (c, e) = with_byte(&fx, &a, 48, 0x40, &["--keyfile", "k"], &["t"]);
    assert_eq!(c, 2, "{e}");
    assert!(
        e.ends_with(
            "1 stanza(s) of kinds this krypta does not know were skipped (a newer krypta may open them), or the archive's header is damaged or modified\n"
        ),
        "{e}"
    );
}

#[test]
fn a_password_and_a_pq_box_archives_damaged_header_is_not_called_a_wrong_key() {
    let fx = Fx::new();
    tree(&fx);
    fx.file("pw", b"correct horse\n");
    let pw: &[&str] = &["--pass-file", "pw"];
    fx.ok(&[
        &["c", "-q", "--kdf-memory", "8", "--kdf-iterations", "1"][..],
        pw,
        &["p.kry", "t"],
    ]
    .concat());
    let a = std::fs::read(fx.p("p.kry")).unwrap();
    let h = header_len(&a);
    // Argon2id stanza 48..148: the archive id, its salt, wrapped key and tag (not its
    // costs, which are checked against their bounds before the KDF runs: exit 3).
    assert_eq!(h, 186);
    let stanza: Vec<usize> = vec![20, 70, 100, 130, 147];
    let right: Vec<usize> = [32, 36, 40]
        .into_iter()
        .chain((h - 32..h).step_by(5))
        .collect();
    diagnosed(&fx, &a, pw, &right, &stanza);

    fx.ok(&["keygen", "--box", "-o", "box"]);
    fx.ok(&["c", "-q", "-r", "box.pub", "b.kry", "t"]);
    let a = std::fs::read(fx.p("b.kry")).unwrap();
    let h = header_len(&a);
    // pq-box stanza 48..1240: the ML-KEM ciphertext, the X25519 key, the wrapped key, the
    // tag.
    assert_eq!(h, 1278);
    let stanza: Vec<usize> = vec![27, 100, 700, 1147, 1239];
    let right: Vec<usize> = [33, 41].into_iter().chain((h - 32..h).step_by(5)).collect();
    diagnosed(&fx, &a, &["-i", "box"], &right, &stanza);
}
