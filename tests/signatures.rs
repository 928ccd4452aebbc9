//! Issue 16, signatures, through the binary: `keygen --sign`, `c --sign`, `x|t|l --signer`,
//! `info`; the forgeries the issue names (made with only a recipient's public key, signed by
//! another key, unsigned, stripped, re-signed, a flipped bit anywhere), each refused with
//! exit 8 (or, where docs/FORMAT.md §11 puts an earlier check first, that check's code) and
//! nothing extracted.

mod cli_common;
mod common;

use cli_common::*;
use common::code;
use krypta::crypto::sign::{SignerSecret, Transcript};
use krypta::format::signature::{SIGNATURE_FRAME_LEN, SignatureFrame};

/// Alice signs, Bob receives (box key), Carol and Mallory sign too.
fn keys(fx: &Fx) {
    for k in ["alice", "carol", "mallory"] {
        fx.ok(&["keygen", "-q", "--sign", "-o", k]);
    }
    fx.ok(&["keygen", "-q", "--box", "-o", "bob"]);
    fx.file("t/a.txt", b"the real backup\n");
    fx.file("t/b.bin", &vec![7u8; 300_000]);
}

/// `signed.kry`: Alice's, encrypted to Bob.
fn signed(fx: &Fx) -> Vec<u8> {
    keys(fx);
    fx.ok(&[
        "c",
        "-q",
        "--sign",
        "alice",
        "-r",
        "bob.pub",
        "signed.kry",
        "t",
    ]);
    fx.read("signed.kry")
}

fn header_len(b: &[u8]) -> usize {
    u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize
}

/// Extracts `archive` into a fresh directory with Bob's key and the given extra options;
/// returns the exit code, stderr, and whether anything at all was written.
fn extract(fx: &Fx, archive: &str, extra: &[&str], out: &str) -> (i32, String, bool) {
    let o = fx.run(&[&["x", "-q", "-i", "bob", "-o", out][..], extra, &[archive]].concat());
    let wrote = std::fs::read_dir(fx.p(out))
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    (code(&o), err(&o), wrote)
}

#[test]
fn keygen_sign_writes_a_private_secret_key_and_its_public_key() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    let o = fx.ok(&["keygen", "--sign", "-o", "me"]);
    assert!(
        err(&o).starts_with("krypta: wrote signing key me and public key me.pub (fingerprint ")
    );
    let mode = std::fs::metadata(fx.p("me")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let secret = String::from_utf8(fx.read("me")).unwrap();
    let key_lines: Vec<&str> = secret.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(key_lines.len(), 1);
    assert!(key_lines[0].starts_with("KRYPTA-SIGN-SECRET-1-"));
    assert_eq!(key_lines[0].len(), 112);
    let public = String::from_utf8(fx.read("me.pub")).unwrap();
    assert!(public.starts_with("KRYPTA-SIGN-PUBLIC-1-"));
    assert_eq!(public.trim_end().len(), 2672);
    // --pub -k prints the same public key; keygen never overwrites.
    assert_eq!(out(&fx.ok(&["keygen", "--pub", "-k", "me"])), public);
    let o = fx.run(&["keygen", "--sign", "-o", "me"]);
    assert_eq!(code(&o), 1);
    // A signing key where a box key is wanted, and the reverse, are named.
    fx.ok(&["keygen", "-q", "--box", "-o", "box"]);
    fx.file("f", b"x");
    let o = fx.run(&["c", "-q", "--sign", "box", "a.kry", "f"]);
    assert_eq!(code(&o), 1);
    assert!(
        err(&o).contains(
            "this is a krypta box secret key, but a krypta signing secret key is needed here"
        ),
        "{}",
        err(&o)
    );
    let o = fx.run(&["t", "--signer", "box.pub", "a.kry"]);
    assert_eq!(code(&o), 1);
    assert!(
        err(&o).contains(
            "this is a krypta box public key, but a krypta signer public key is needed here"
        ),
        "{}",
        err(&o)
    );
}

#[test]
fn a_signed_archive_verifies_and_shows_its_signer() {
    let fx = Fx::new();
    signed(&fx);
    let fp = {
        let e = err(&fx.ok(&["keygen", "--sign", "-o", "dave"]));
        assert!(e.contains("fingerprint "));
        // Alice's fingerprint, as info shows it, from the key file's comment.
        let text = String::from_utf8(fx.read("alice")).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("# fingerprint: "))
            .unwrap()
            .to_string()
    };
    let info = out(&fx.ok(&["info", "signed.kry"]));
    assert!(info.contains(&format!("signer:         {fp}\n")), "{info}");
    assert!(info.contains("signature verified"), "{info}");
    let v: serde_json::Value =
        serde_json::from_str(&out(&fx.ok(&["info", "--json", "signed.kry"]))).unwrap();
    assert_eq!(
        (v["signer"].clone(), v["signature"].clone()),
        (serde_json::json!(fp), serde_json::json!("verified"))
    );

    let o = fx.ok(&["t", "-i", "bob", "signed.kry"]);
    assert!(
        err(&o).contains(&format!(
            "signed.kry: signed by {fp} (ML-DSA-65 + Ed25519 signature verified)"
        )),
        "{}",
        err(&o)
    );
    let o = fx.ok(&["t", "--json", "-i", "bob", "signed.kry"]);
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["signer"], serde_json::json!(fp));
    // --signer: any of them.
    fx.ok(&[
        "x",
        "-q",
        "-i",
        "bob",
        "--signer",
        "carol.pub",
        "--signer",
        "alice.pub",
        "-o",
        "o",
        "signed.kry",
    ]);
    assert_eq!(fx.read("o/t/a.txt"), b"the real backup\n");
    assert_eq!(fx.read("o/t/b.bin"), vec![7u8; 300_000]);
    let o = fx.ok(&["l", "-i", "bob", "--signer", "alice.pub", "signed.kry"]);
    assert!(out(&o).contains("t/a.txt"));
    // An unencrypted signed archive, the key given as text.
    fx.ok(&["c", "-q", "--sign", "alice", "plain.kry", "t"]);
    let pubtext = String::from_utf8(fx.read("alice.pub")).unwrap();
    fx.ok(&["t", "--signer", pubtext.trim(), "plain.kry"]);
}

#[test]
fn a_forged_archive_made_with_only_the_recipients_public_key_is_refused() {
    let fx = Fx::new();
    signed(&fx);
    fx.file("evil/a.txt", b"malware\n");
    // Mallory holds Bob's public key: unsigned, or signed by herself.
    fx.ok(&["c", "-q", "-r", "bob.pub", "forged.kry", "evil"]);
    fx.ok(&[
        "c",
        "-q",
        "--sign",
        "mallory",
        "-r",
        "bob.pub",
        "forged2.kry",
        "evil",
    ]);
    // Without --signer both open: that is what a signature requirement is for.
    fx.ok(&["t", "-i", "bob", "forged.kry"]);
    let v: serde_json::Value =
        serde_json::from_str(&out(&fx.ok(&["info", "--json", "forged.kry"]))).unwrap();
    assert!(
        v.get("signer").is_none() && v.get("signature").is_none(),
        "{v}"
    );
    let (c, e, wrote) = extract(&fx, "forged.kry", &["--signer", "alice.pub"], "o1");
    assert_eq!((c, wrote), (8, false), "{e}");
    assert_eq!(
        e,
        "krypta: forged.kry: refused: the archive is not signed (--signer requires a signature)\n"
    );
    let (c, e, wrote) = extract(&fx, "forged2.kry", &["--signer", "alice.pub"], "o2");
    assert_eq!((c, wrote), (8, false), "{e}");
    assert!(
        e.contains("refused: signed by another key (fingerprint "),
        "{e}"
    );
    // t and l refuse the same way, before any key is used.
    for cmd in ["t", "l"] {
        let o = fx.run(&[cmd, "--signer", "alice.pub", "forged.kry"]);
        assert_eq!(code(&o), 8, "{cmd}: {}", err(&o));
    }
}

/// The signed archive with its signature frame replaced by one `by` makes over the same
/// bytes (a re-signing that keeps the header), or removed (`by` None, footer kept).
fn resigned(b: &[u8], by: Option<&SignerSecret>) -> Vec<u8> {
    let sig_at = b.len() - 64 - SIGNATURE_FRAME_LEN;
    let h = header_len(b);
    let mut t = Transcript::new(&b[..h]);
    // Walk the frames for their tags.
    let mut off = h;
    while off < sig_at {
        let len = u32::from_le_bytes(b[off + 4..off + 8].try_into().unwrap()) as usize;
        t.frame_tag(b[off + 16 + len..off + 48 + len].try_into().unwrap());
        off += 48 + len;
    }
    assert_eq!(off, sig_at);
    let footer: [u8; 64] = b[b.len() - 64..].try_into().unwrap();
    let mut out = b[..sig_at].to_vec();
    if let Some(sk) = by {
        let pk = sk.public();
        let id: [u8; 16] = b[16..32].try_into().unwrap();
        let frame = SignatureFrame {
            seq: t.frames(),
            signer: Box::new(*pk.as_bytes()),
            signature: Box::new(sk.sign(&t.message(&pk, &footer))),
        };
        out.extend_from_slice(&frame.to_bytes(&id));
    }
    out.extend_from_slice(&footer);
    out
}

/// The archive with bit `mask` of byte `at` of its hybrid signature flipped, the signature
/// frame's checksum recomputed (as a forger would), so the signature check itself decides.
fn bad_signature(b: &[u8], at: usize, mask: u8) -> Vec<u8> {
    let sig_at = b.len() - 64 - SIGNATURE_FRAME_LEN;
    let body = &b[sig_at + 16..sig_at + SIGNATURE_FRAME_LEN - 32];
    let mut signature: [u8; 3373] = body[1984..].try_into().unwrap();
    signature[at] ^= mask;
    let frame = SignatureFrame {
        seq: u64::from_le_bytes(b[sig_at + 8..sig_at + 16].try_into().unwrap()),
        signer: Box::new(body[..1984].try_into().unwrap()),
        signature: Box::new(signature),
    };
    let mut out = b[..sig_at].to_vec();
    out.extend_from_slice(&frame.to_bytes(&b[16..32].try_into().unwrap()));
    out.extend_from_slice(&b[b.len() - 64..]);
    out
}

#[test]
fn stripped_and_re_signed_archives_are_refused() {
    let fx = Fx::new();
    let b = signed(&fx);
    // Stripped: the signature frame removed (the header still names Alice; clearing the footer
    // flag would need the footer MAC key).
    fx.file("stripped.kry", &resigned(&b, None));
    // Re-signed by Carol, who is not a recipient: she cannot change the signer extension
    // without the file key, so the header still names Alice.
    let carol = SignerSecret::from_bytes(&[0x42; 64]);
    fx.file("resigned.kry", &resigned(&b, Some(&carol)));
    for (name, want) in [
        (
            "stripped.kry",
            "refused: the signature cannot be verified (",
        ),
        (
            "resigned.kry",
            "refused: bad signature (the signature frame's key is not the signer the header names)",
        ),
    ] {
        for extra in [&["--signer", "alice.pub"][..], &[]] {
            let (c, e, wrote) = extract(&fx, name, extra, &format!("o-{name}-{}", extra.len()));
            assert_eq!((c, wrote), (8, false), "{name} {extra:?}: {e}");
            assert!(e.contains(want), "{name}: {e}");
        }
    }
    // Re-signed by Carol with the signer extension changed to hers: her signature is valid,
    // a reader requiring Alice refuses it from the header (8), and one trusting Carol finds the
    // header tag broken (the extension is under the header MAC) under the key a stanza gave:
    // the header is damaged or modified, not a wrong key (2).
    let mut h2 = b.clone();
    let ext_at = (0..header_len(&b) - 32 - 36)
        .find(|&i| b[i..i + 8] == [2, 0, 0, 0, 32, 0, 0, 0])
        .expect("signer extension");
    let carol_pk = carol.public();
    h2[ext_at + 8..ext_at + 40].copy_from_slice(&carol_pk.fingerprint());
    fx.file("takeover.kry", &resigned(&h2, Some(&carol)));
    fx.file(
        "carol.pub",
        format!("{}\n", krypta::crypto::signkey::public_key_text(&carol_pk)).as_bytes(),
    );
    let info = out(&fx.ok(&["info", "takeover.kry"]));
    assert!(info.contains("signature verified"), "{info}");
    let (c, e, wrote) = extract(&fx, "takeover.kry", &["--signer", "alice.pub"], "o-t1");
    assert_eq!((c, wrote), (8, false), "{e}");
    assert!(e.contains("signed by another key"), "{e}");
    let (c, e, wrote) = extract(&fx, "takeover.kry", &["--signer", "carol.pub"], "o-t2");
    assert_eq!((c, wrote), (2, false), "{e}");
    assert!(
        e.contains("the archive's header is damaged or modified: the key is right"),
        "{e}"
    );
}

#[test]
fn a_flipped_bit_anywhere_is_refused_and_nothing_is_extracted() {
    let fx = Fx::new();
    let b = signed(&fx);
    let h = header_len(&b);
    let mut tried = 0;
    for pos in (0..b.len())
        .step_by(211)
        .chain([h, b.len() - 5469, b.len() - 65, b.len() - 1])
    {
        let mut x = b.clone();
        x[pos] ^= 0x04;
        fx.file("x.kry", &x);
        let out = format!("o{pos}");
        let (c, e, wrote) = extract(&fx, "x.kry", &["--signer", "alice.pub"], &out);
        assert!(!wrote, "byte {pos}: something was extracted ({e})");
        if pos >= 16 {
            // Past the 16-byte prefix every check of a signed archive is the signature's,
            // except header fields whose change makes the header unparsable (3).
            if pos >= h {
                assert_eq!(c, 8, "byte {pos}: {e}");
            } else {
                assert!(c == 8 || c == 3, "byte {pos}: {c} {e}");
            }
        } else {
            assert_ne!(c, 0, "byte {pos}");
        }
        tried += 1;
    }
    assert!(tried > 30);
}

#[test]
fn from_a_pipe_x_with_signer_spools_and_writes_nothing_before_the_signature() {
    let fx = Fx::new();
    let b = signed(&fx);
    let o = fx.run_stdin(
        &[
            "x",
            "-q",
            "-i",
            "bob",
            "--signer",
            "alice.pub",
            "-o",
            "ok",
            "-",
        ],
        &b,
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.read("ok/t/a.txt"), b"the real backup\n");
    // The last byte of the Ed25519 signature changed: everything before it is intact, and a
    // reader that wrote as it read would have written both files.
    let x = bad_signature(&b, 3372, 1);
    let o = fx.run_stdin(
        &[
            "x",
            "-q",
            "-i",
            "bob",
            "--signer",
            "alice.pub",
            "-o",
            "bad",
            "-",
        ],
        &x,
    );
    assert_eq!(code(&o), 8, "{}", err(&o));
    assert!(
        err(&o).contains("refused: bad signature (the Ed25519 signature does not verify)"),
        "{}",
        err(&o)
    );
    assert!(!fx.exists("bad/t"));
    // t from a pipe checks the signature when it reaches the end (nothing is written).
    let o = fx.run_stdin(&["t", "-i", "bob", "-"], &b);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(err(&o).contains("signed by "), "{}", err(&o));
    let o = fx.run_stdin(&["t", "-i", "bob", "-"], &x);
    assert_eq!(code(&o), 8, "{}", err(&o));
    let o = fx.run_stdin(&["t", "-i", "bob", "--signer", "carol.pub", "-"], &b);
    assert_eq!(code(&o), 8, "{}", err(&o));
}

#[test]
fn a_bad_signature_is_refused_without_signer_too() {
    let fx = Fx::new();
    let b = signed(&fx);
    fx.file("bad.kry", &bad_signature(&b, 3000, 0x20)); // inside the ML-DSA-65 signature
    for args in [
        &["t", "-i", "bob", "bad.kry"][..],
        &["l", "-i", "bob", "bad.kry"],
    ] {
        let o = fx.run(args);
        assert_eq!(code(&o), 8, "{args:?}: {}", err(&o));
    }
    // The checksum of the signature frame tells damage from forgery.
    let mut y = b.clone();
    let at = b.len() - 64 - 1;
    y[at] ^= 0x20;
    fx.file("dmg.kry", &y);
    let o = fx.run(&["t", "-i", "bob", "dmg.kry"]);
    assert_eq!(code(&o), 8);
    assert!(
        err(&o).contains("checksum mismatch (the signature frame is damaged)"),
        "{}",
        err(&o)
    );
    let info = out(&fx.ok(&["info", "bad.kry"]));
    assert!(
        info.contains(
            "SIGNATURE REFUSED: refused: bad signature (the ML-DSA-65 signature does not verify)"
        ),
        "{info}"
    );
}

/// A changed byte in a data frame read from a pipe with `--signer`: `l` (which passes over
/// data frames without decoding them) and `t` refuse the archive with exit 8, as they do
/// from the file. `l` listed it and exited 0, `t` salvaged past it (exit 5, 2 encrypted).
#[test]
fn from_a_pipe_a_changed_data_frame_is_refused_with_signer() {
    let fx = Fx::new();
    keys(&fx);
    // Incompressible content, so the changed byte lies in a data frame's body.
    fx.file("t/noise.bin", &common::bytes(400_000, 7, false));
    for (name, keys) in [("plain", &[][..]), ("boxed", &["-r", "bob.pub"][..])] {
        let archive = format!("{name}.kry");
        fx.ok(&[&["c", "-q", "--sign", "alice"][..], keys, &[&archive, "t"]].concat());
        let mut b = fx.read(&archive);
        let h = header_len(&b);
        b[h + 1000] ^= 0x10;
        let open: &[&str] = if keys.is_empty() { &[] } else { &["-i", "bob"] };
        let want = format!("refused: frame 0 at byte {h} is not what was signed");
        for cmd in ["l", "t"] {
            let o = fx.run_stdin(
                &[&[cmd][..], open, &["--signer", "alice.pub", "-"]].concat(),
                &b,
            );
            assert_eq!(code(&o), 8, "{name} {cmd}: {}", err(&o));
            assert!(err(&o).contains(&want), "{name} {cmd}: {}", err(&o));
            assert!(out(&o).is_empty(), "{name} {cmd}: listed {}", out(&o));
        }
        // The intact archive passes both ways.
        let good = fx.read(&archive);
        for cmd in ["l", "t"] {
            let o = fx.run_stdin(
                &[&[cmd][..], open, &["--signer", "alice.pub", "-"]].concat(),
                &good,
            );
            assert_eq!(code(&o), 0, "{name} {cmd}: {}", err(&o));
        }
    }
}

/// Damage in a small signed archive read from a pipe: the read-ahead took every data and
/// index frame, so the spooled rest is the signature frame and the footer. Regression: the
/// walk without index took them for damage ("archive damaged at byte S (frame 2): bytes
/// S..END lost"), naming the intact signature frame as lost.
#[test]
fn from_a_pipe_the_signature_frame_left_after_damage_is_not_called_lost() {
    let fx = Fx::new();
    keys(&fx);
    fx.file("s/a", b"hello\n");
    fx.file("s/b", b"world\n");
    fx.ok(&["c", "-q", "--sign", "alice", "s.kry", "s"]);
    let mut b = fx.read("s.kry");
    let h = header_len(&b);
    let sig_at = b.len() - SIGNATURE_FRAME_LEN - 64;
    b[h + 30] ^= 0x01;
    let o = fx.run_stdin(&["t", "-"], &b);
    assert_eq!(code(&o), 5, "{}", err(&o));
    assert!(
        err(&o).contains(&format!("archive damaged at byte {h} (frame 0)")),
        "{}",
        err(&o)
    );
    assert!(
        !err(&o).contains(&format!("at byte {sig_at}"))
            && !err(&o).contains(&format!("bytes {sig_at}..")),
        "{}",
        err(&o)
    );
}

/// With `--signer`, any fault of a stream before its signature verified refuses it (exit
/// 8), as from the file: a frame head's flag byte or a footer byte changed was salvaged past
/// by `t -` (exit 5, 2 encrypted) and reported by `l -` as corrupt (3) or damaged (5).
#[test]
fn from_a_pipe_with_signer_any_fault_before_the_signature_refuses() {
    let fx = Fx::new();
    keys(&fx);
    for (name, keys) in [("plain", &[][..]), ("boxed", &["-r", "bob.pub"][..])] {
        let archive = format!("{name}.kry");
        fx.ok(&[&["c", "-q", "--sign", "alice"][..], keys, &[&archive, "t"]].concat());
        let good = fx.read(&archive);
        let open: &[&str] = if keys.is_empty() { &[] } else { &["-i", "bob"] };
        for at in [header_len(&good) + 1, good.len() - 10] {
            let mut b = good.clone();
            b[at] ^= 0x10;
            for cmd in [&["t"][..], &["l"], &["l", "--b3"]] {
                let o = fx.run_stdin(&[cmd, open, &["--signer", "alice.pub", "-"]].concat(), &b);
                assert_eq!(code(&o), 8, "{name} {cmd:?} byte {at}: {}", err(&o));
                assert!(
                    err(&o).contains("krypta: -: refused: "),
                    "{name} {cmd:?} byte {at}: {}",
                    err(&o)
                );
                assert!(out(&o).is_empty(), "{name} {cmd:?} byte {at}: {}", out(&o));
                assert!(
                    !err(&o).contains("warning"),
                    "{name} {cmd:?} byte {at}: {}",
                    err(&o)
                );
            }
        }
    }
}
