//! One flipped bit in the header of an archive without recovery data (bit rot): the reader
//! undoes it by the header's tag (`archive::reader::header_fix`, FORMAT.md §11 "A header
//! whose tag fails"). Regression: any flipped header bit lost the whole archive (exit 5
//! "header checksum mismatch", or 3 "not a krypta archive" / a malformed header, or 2
//! "wrong key or password" for a flipped bit of an encrypted archive's id), although every
//! frame, the index and the footer were intact.

mod cli_common;
mod common;

use cli_common::*;
use common::{bytes, code};

/// The header length (bytes 12..16).
fn header_len(a: &[u8]) -> usize {
    u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize
}

fn flipped(a: &[u8], at: &[(usize, u8)]) -> Vec<u8> {
    let mut b = a.to_vec();
    for &(byte, bit) in at {
        b[byte] ^= 1 << bit;
    }
    b
}

fn tree(fx: &Fx) {
    for i in 0..6 {
        fx.file(&format!("t/f{i}"), &bytes(30 << 10, i as u64 + 1, false));
    }
}

/// `x` (from the file and from a pipe) restores every file and names the bit; `t` fails
/// (5, 2 encrypted) saying the archive is not as written.
fn undone(fx: &Fx, a: &[u8], byte: usize, bit: u8, keys: &[&str], sealed: bool) {
    let what = format!("byte {byte} bit {bit}");
    std::fs::write(fx.p("c.kry"), flipped(a, &[(byte, bit)])).unwrap();
    let said = format!("one bit of the header is flipped (byte {byte}, bit {bit};");
    let x = fx.run(&[&["x", "-o", "o", "c.kry"], keys].concat());
    assert_eq!(code(&x), 0, "{what}: {}", err(&x));
    assert!(err(&x).contains(&said), "{what}: {}", err(&x));
    for i in 0..6 {
        let f = format!("t/f{i}");
        assert_eq!(fx.read(&format!("o/{f}")), fx.read(&f), "{what}: {f}");
    }
    std::fs::remove_dir_all(fx.p("o")).unwrap();
    let piped = std::fs::read(fx.p("c.kry")).unwrap();
    let x = fx.run_stdin(&[&["x", "-o", "o", "-"], keys].concat(), &piped);
    assert_eq!(code(&x), 0, "{what} (pipe): {}", err(&x));
    assert_eq!(fx.read("o/t/f5"), fx.read("t/f5"), "{what} (pipe)");
    std::fs::remove_dir_all(fx.p("o")).unwrap();
    let t = fx.run(&[&["t", "c.kry"], keys].concat());
    assert_eq!(
        code(&t),
        if sealed { 2 } else { 5 },
        "{what}: t: {}",
        err(&t)
    );
    assert!(
        err(&t).contains(&format!(
            "one bit of the header is flipped (byte {byte}, bit {bit}): every entry verified with it undone, but the archive is not as written"
        )),
        "{what}: t: {}",
        err(&t)
    );
}

/// Refused as before the search existed: exit `want`, nothing written.
fn refused(fx: &Fx, a: &[u8], at: &[(usize, u8)], keys: &[&str], want: i32, says: &str) {
    std::fs::write(fx.p("c.kry"), flipped(a, at)).unwrap();
    let x = fx.run(&[&["x", "-o", "o", "c.kry"], keys].concat());
    assert_eq!(code(&x), want, "{at:?}: {}", err(&x));
    assert!(err(&x).contains(says), "{at:?}: {}", err(&x));
    assert!(!fx.exists("o/t/f0"), "{at:?}");
    let _ = std::fs::remove_dir_all(fx.p("o"));
}

#[test]
fn one_flipped_bit_of_an_unencrypted_header_is_undone() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "--comment", "nightly", "u.kry", "t"]);
    let a = std::fs::read(fx.p("u.kry")).unwrap();
    let h = header_len(&a);
    // The magic, the version, the flags, the id, the creation time, the level, the stanza
    // count, the comment's length and bytes, the extension count, the tag.
    for byte in [
        0,
        7,
        9,
        10,
        16,
        31,
        36,
        44,
        46,
        48,
        53,
        h - 34,
        h - 33,
        h - 32,
        h - 1,
    ] {
        undone(&fx, &a, byte, (byte % 8) as u8, &[], false);
    }
    // `info` shows it, with the warning.
    std::fs::write(fx.p("c.kry"), flipped(&a, &[(36, 4)])).unwrap();
    let i = fx.run(&["info", "c.kry"]);
    assert_eq!(code(&i), 0, "{}", err(&i));
    assert!(out(&i).contains("nightly"), "{}", out(&i));
    assert!(err(&i).contains("one bit of the header is flipped (byte 36, bit 4;"));
    // Two flipped bits, or one in the length field: refused, nothing written.
    refused(
        &fx,
        &a,
        &[(36, 1), (40, 2)],
        &[],
        5,
        "header checksum mismatch",
    );
    refused(&fx, &a, &[(12, 0)], &[], 3, "header");
}

#[test]
fn one_flipped_bit_of_an_encrypted_header_is_undone_under_the_key() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "e.kry", "t"]);
    let a = std::fs::read(fx.p("e.kry")).unwrap();
    let h = header_len(&a);
    let keys: &[&str] = &["--keyfile", "k"];
    // The id (every stanza failed: it was "wrong key"), the magic and the stanza count
    // (the header did not parse), the stanza's kind, the creation time, the tag.
    for byte in [0, 9, 11, 16, 25, 31, 36, 46, 48, h - 33, h - 1] {
        undone(&fx, &a, byte, (byte % 8) as u8, keys, true);
    }
    // Inside the stanza the key opens (key material): refused as a failed key, nothing
    // written; two flips: the header MAC fails under the key a stanza gave, which is the
    // header's damage, not a wrong key (tests/header_damage_diagnosis.rs).
    refused(&fx, &a, &[(60, 3)], keys, 2, "authentication failed");
    refused(
        &fx,
        &a,
        &[(36, 1), (h - 1, 2)],
        keys,
        2,
        "the archive's header is damaged or modified: the key is right",
    );
    // A fix that could only be checked under a key (the magic: the header did not parse)
    // and a key that opens nothing: the header's error as read, not "wrong key".
    fx.ok(&["keygen", "-o", "k2"]);
    let other: &[&str] = &["--keyfile", "k2"];
    refused(&fx, &a, &[(0, 0)], other, 3, "not a krypta archive");
    refused(&fx, &a, &[(46, 6)], other, 3, "header");
    refused(&fx, &a, &[(0, 0)], &[], 3, "not a krypta archive");
}

#[test]
fn a_flipped_bit_of_a_password_archives_id_is_undone() {
    let fx = Fx::new();
    tree(&fx);
    fx.file("pw", b"correct horse\n");
    fx.file("bad", b"wrong horse\n");
    fx.ok(&[
        "c",
        "-q",
        "--pass-file",
        "pw",
        "--kdf-memory",
        "8",
        "--kdf-iterations",
        "1",
        "p.kry",
        "t",
    ]);
    let a = std::fs::read(fx.p("p.kry")).unwrap();
    undone(&fx, &a, 20, 5, &["--pass-file", "pw"], true);
    // A wrong password is still a wrong password.
    refused(
        &fx,
        &a,
        &[(20, 5)],
        &["--pass-file", "bad"],
        2,
        "authentication failed",
    );
}

#[test]
fn a_signed_archive_with_a_flipped_header_bit_is_refused_with_a_signer_required() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "--sign", "-o", "alice"]);
    fx.ok(&["c", "-q", "--sign", "alice", "s.kry", "t"]);
    let a = std::fs::read(fx.p("s.kry")).unwrap();
    // Without --signer the header is read as written, as for any archive.
    undone(&fx, &a, 36, 4, &[], false);
    // With it, the file must be what was signed, bit for bit: 8, nothing written.
    refused(
        &fx,
        &a,
        &[(36, 4)],
        &["--signer", "alice.pub"],
        8,
        "refused: the header is not what was signed (bit 4 of byte 36 is flipped",
    );
    // Intact, it verifies.
    let x = fx.run(&["x", "-q", "--signer", "alice.pub", "-o", "o", "s.kry"]);
    assert_eq!(code(&x), 0, "{}", err(&x));
}

#[test]
fn a_signed_encrypted_archive_is_checked_against_the_header_as_written() {
    // Regression (helper-24): the signature was checked on the header as read, before the
    // key undid the bit: `x` exited 8 "bad signature" from a file, and from a pipe wrote
    // every file and then exited 8.
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["keygen", "-q", "--sign", "-o", "alice"]);
    fx.ok(&["c", "-q", "--sign", "alice", "--keyfile", "k", "s.kry", "t"]);
    let a = std::fs::read(fx.p("s.kry")).unwrap();
    let keys: &[&str] = &["--keyfile", "k"];
    undone(&fx, &a, 36, 4, keys, true);
    undone(&fx, &a, 20, 2, keys, true);
    // The signer extension's type (a header that reads as unsigned): the signature of the
    // header as written is checked, not skipped. Its place: the 32 bytes before the tag
    // hold the fingerprint, preceded by the extension's length (4), reserved (2), type (2).
    let h = header_len(&a);
    undone(&fx, &a, h - 32 - 32 - 8, 0, keys, true);
    // With a signer required the signature is checked before any key (FORMAT §11): the
    // header as read fails it, 8, nothing written.
    refused(
        &fx,
        &a,
        &[(36, 4)],
        &["--keyfile", "k", "--signer", "alice.pub"],
        8,
        "refused: bad signature",
    );
    // A real change (two bits) is still a bad signature, 8, before anything is written.
    refused(&fx, &a, &[(36, 4), (37, 1)], keys, 8, "bad signature");
    // `info` does not call it verified.
    std::fs::write(fx.p("c.kry"), flipped(&fx.read("s.kry"), &[(36, 4)])).unwrap();
    let u = fx.run(&["info", "c.kry"]);
    assert!(!out(&u).contains("signature verified"), "{}", out(&u));
}

#[test]
fn an_encrypted_header_whose_flip_several_candidates_undo_is_told_apart_by_the_key() {
    // The level 3 → 11 (byte 44 bit 3) or the block size: several one-bit changes make the
    // header parse again, all with the same stanzas; the key checks each (was exit 3).
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "e.kry", "t"]);
    let a = std::fs::read(fx.p("e.kry")).unwrap();
    undone(&fx, &a, 44, 3, &["--keyfile", "k"], true);
    undone(&fx, &a, 43, 4, &["--keyfile", "k"], true);
}

#[test]
fn a_delta_base_with_a_flipped_header_bit_is_named_not_used_silently() {
    // Regression (helper-24): `t --base` said OK of a base whose header had a flipped bit,
    // and `c --base` wrote against it.
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "b.kry", "t"]);
    fx.file("t/f0", &bytes(30 << 10, 77, false));
    fx.ok(&["c", "-q", "--base", "b.kry", "d.kry", "t"]);
    let b = std::fs::read(fx.p("b.kry")).unwrap();
    std::fs::write(fx.p("fb.kry"), flipped(&b, &[(20, 3)])).unwrap();
    let said = "fb.kry: one bit of the header is flipped (byte 20, bit 3;";
    let x = fx.run(&["x", "--base", "fb.kry", "-o", "o", "d.kry"]);
    assert_eq!(code(&x), 0, "{}", err(&x));
    assert!(err(&x).contains(said), "{}", err(&x));
    assert_eq!(fx.read("o/t/f0"), fx.read("t/f0"));
    let t = fx.run(&["t", "--base", "fb.kry", "d.kry"]);
    assert_eq!(code(&t), 5, "{}", err(&t));
    assert!(
        err(&t).contains(
            "fb.kry: one bit of the header is flipped (byte 20, bit 3): every entry verified"
        ),
        "{}",
        err(&t)
    );
    let c = fx.run(&["c", "-q", "--base", "fb.kry", "d2.kry", "t"]);
    assert_eq!(code(&c), 5, "{}", err(&c));
    assert!(
        err(&c).contains("is not written against as a delta base"),
        "{}",
        err(&c)
    );
    assert!(!fx.exists("d2.kry"));
}

#[test]
fn from_a_pipe_an_archive_with_recovery_data_points_to_repair() {
    // Regression (helper-24): `cat r.kry | krypta t -` said the archive "has no recovery
    // data" (a pipe does not read it; `krypta repair` rewrites it from the file).
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "--recovery", "5", "r.kry", "t"]);
    let a = flipped(&std::fs::read(fx.p("r.kry")).unwrap(), &[(36, 4)]);
    let t = fx.run_stdin(&["t", "-"], &a);
    assert_eq!(code(&t), 5, "{}", err(&t));
    assert!(
        err(&t).contains("its recovery data, not read from a pipe, can repair it: krypta repair"),
        "{}",
        err(&t)
    );
    assert!(!err(&t).contains("has no recovery data"), "{}", err(&t));
    // From the file the recovery data repairs it (7).
    std::fs::write(fx.p("c.kry"), &a).unwrap();
    assert_eq!(code(&fx.run(&["t", "c.kry"])), 7);
}
