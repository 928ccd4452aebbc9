//! Issue 4, library level (in-process, fast): every byte flip and every truncation of a small
//! key-file archive is rejected with the right kind of error, frames and stanzas moved between
//! archives or reordered fail authentication. KDF cost limits are in `kdf_limits.rs`.

mod common;
mod tamper_common;

use std::collections::BTreeMap;
use std::path::Path;

use krypta::Error;
use krypta::crypto::Recipient;
use krypta::crypto::keyfile::SymmetricKey;
use krypta::error::AuthCheck;

use tamper_common::*;

/// Header length and `(start, total length)` of every frame (FORMAT.md §1, §2).
fn layout(a: &[u8]) -> (usize, Vec<(usize, usize)>) {
    let h = u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize;
    let mut frames = vec![];
    let mut at = h;
    while at + 64 < a.len() {
        let len = 48 + u32::from_le_bytes(a[at + 4..at + 8].try_into().unwrap()) as usize;
        frames.push((at, len));
        at += len;
    }
    assert_eq!(at + 64, a.len(), "frames end where the footer starts");
    (h, frames)
}

/// Which part of the archive byte `i` is in, for the error-kind map.
fn region(i: usize, h: usize, frames: &[(usize, usize)], len: usize) -> &'static str {
    match i {
        0..8 => "magic",
        8..12 => "version, flags",
        12..16 => "header length",
        16..32 => "archive id",
        32..46 => "time, block size, level, reserved",
        46..48 => "stanza count",
        48..56 => "stanza kind, length",
        56..120 => "stanza body",
        120..124 => "comment length",
        _ if i < h - 34 => "comment",
        _ if i < h - 32 => "extension count",
        _ if i < h => "header tag",
        _ if i >= len - 64 => {
            if i >= len - 32 {
                "footer tag"
            } else {
                "footer fields"
            }
        }
        _ => {
            let (start, flen) = *frames
                .iter()
                .find(|(s, l)| (*s..s + l).contains(&i))
                .unwrap();
            match i - start {
                0..8 => "frame kind, flags, length",
                8..16 => "frame sequence number",
                o if o >= flen - 32 => "frame tag",
                _ => "frame body",
            }
        }
    }
}

#[test]
fn the_key_file_archive_verifies_and_has_two_data_frames() {
    let a = keyfile_archive(Some([1; 16]));
    let (h, frames) = layout(&a);
    // Format 2: the fixed part, one key-file stanza, the comment "test", the extension
    // count (no extensions) and the tag.
    assert_eq!(h, 48 + 8 + 64 + 4 + 4 + 2 + 32);
    assert_eq!(frames.len(), 3);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.kry");
    std::fs::write(&p, &a).unwrap();
    let s = check(&p).unwrap();
    assert_eq!((s.entries, s.files, s.bytes, s.frames), (4, 2, 70_300, 2));
}

#[test]
fn every_flipped_byte_of_a_key_file_archive_is_rejected_with_exit_2_or_3() {
    let a = keyfile_archive(Some([1; 16]));
    let (h, frames) = layout(&a);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.kry");
    let mut map: BTreeMap<(&str, i32), usize> = BTreeMap::new();
    for i in 0..a.len() {
        // One change per byte, alternating a low and a high bit.
        {
            let bit = if i % 2 == 0 { 0x01u8 } else { 0x80 };
            let mut b = a.clone();
            b[i] ^= bit;
            std::fs::write(&p, &b).unwrap();
            let e = check(&p).expect_err(&format!("byte {i} ^ {bit:#x} verified"));
            let c = e.exit_code();
            let r = region(i, h, &frames, a.len());
            assert!(c == 2 || c == 3, "byte {i} ({r}) ^ {bit:#x}: exit {c}: {e}");
            if matches!(
                r,
                "archive id"
                    | "stanza body"
                    | "header tag"
                    | "frame body"
                    | "frame tag"
                    | "footer tag"
            ) {
                assert_eq!(c, 2, "byte {i} ({r}) ^ {bit:#x}: {e}");
            }
            *map.entry((r, c)).or_default() += 1;
        }
    }
    eprintln!("{} bytes; (region, exit code) → flips: {map:?}", a.len());
}

#[test]
fn truncation_at_every_offset_is_rejected_as_corrupt() {
    let a = keyfile_archive(Some([1; 16]));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.kry");
    for len in 0..a.len() {
        std::fs::write(&p, &a[..len]).unwrap();
        let e = check(&p).expect_err(&format!("truncated to {len} bytes but verified"));
        assert_eq!(e.exit_code(), 3, "truncated to {len}: {e}");
    }
}

fn expect_auth(p: &Path, bytes: &[u8], check_kind: AuthCheck, what: &str) {
    std::fs::write(p, bytes).unwrap();
    // A failure inside a file's content is wrapped with the entry's name (Error::InEntry).
    match check(p) {
        Err(e) => match e.root() {
            Error::AuthFailed { check, .. } => assert_eq!(*check, check_kind, "{what}"),
            // A frame tag that fails after the header verified is damage, not a wrong key
            // (issue 11): "archive damaged or modified at byte X (frame N)", exit 2.
            e @ Error::Damaged { .. } if check_kind == AuthCheck::FrameMac => {
                assert_eq!(e.exit_code(), 2, "{what}");
                assert!(
                    e.to_string()
                        .contains("archive damaged or modified at byte"),
                    "{what}: {e}"
                );
            }
            // A header tag that fails under the key a stanza gave is the header's damage,
            // not a wrong key: "the archive's header is damaged or modified: the key is
            // right", exit 2.
            e @ Error::HeaderDamaged { .. } if check_kind == AuthCheck::HeaderMac => {
                assert_eq!(e.exit_code(), 2, "{what}");
                assert!(
                    e.to_string()
                        .contains("the archive's header is damaged or modified: the key is right"),
                    "{what}: {e}"
                );
            }
            other => panic!("{what}: expected AuthFailed, got {other:?}"),
        },
        other => panic!("{what}: expected AuthFailed, got {other:?}"),
    }
}

#[test]
fn a_frame_from_another_archive_with_the_same_key_file_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.kry");
    let a = keyfile_archive(None);
    let (_, fa) = layout(&a);
    // B: another archive id; C: the same archive id but another (random) file key.
    for (other, name) in [
        (keyfile_archive(None), "other archive id"),
        (
            keyfile_archive(Some(a[16..32].try_into().unwrap())),
            "same archive id",
        ),
    ] {
        let (_, fb) = layout(&other);
        assert_eq!(fa, fb, "identical layouts");
        for (k, &(start, len)) in fa.iter().enumerate() {
            let mut b = a.clone();
            b[start..start + len].copy_from_slice(&other[start..start + len]);
            expect_auth(&p, &b, AuthCheck::FrameMac, &format!("{name}: frame {k}"));
        }
        let mut b = a.clone();
        let n = a.len();
        b[n - 64..].copy_from_slice(&other[n - 64..]);
        std::fs::write(&p, &b).unwrap();
        let e = check(&p).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{name}: footer: {e}");
        // Its header (stanza and all) on our frames: the header opens, the rest does not.
        let mut b = a.clone();
        b[..fa[0].0].copy_from_slice(&other[..fa[0].0]);
        std::fs::write(&p, &b).unwrap();
        let e = check(&p).unwrap_err();
        // The header opens and verifies; the footer (read first, the archive being a file)
        // is then another archive's: damaged or modified, never "wrong key" (issue 11 §1).
        assert!(
            matches!(e, Error::DamagedFooter { .. }),
            "{name}: header: {e:?}"
        );
    }
}

#[test]
fn a_stanza_copied_from_another_archive_does_not_open_this_one() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.kry");
    let a = keyfile_archive(None);
    let b = keyfile_archive(None);
    let mut x = a.clone();
    x[48..120].copy_from_slice(&b[48..120]);
    expect_auth(
        &p,
        &x,
        AuthCheck::NoStanzaOpened,
        "stanza of another archive id",
    );
    // Same archive id, other file key: the stanza opens, then the header MAC fails.
    let c = keyfile_archive(Some(a[16..32].try_into().unwrap()));
    let mut x = a.clone();
    x[48..120].copy_from_slice(&c[48..120]);
    expect_auth(
        &p,
        &x,
        AuthCheck::HeaderMac,
        "stanza of the same archive id",
    );
}

#[test]
fn swapped_frames_within_one_archive_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w.kry");
    // Stored random blocks: the first two data frames have the same length.
    let big = common::bytes(150_000, 5, false);
    let a = archive(
        Recipient::KeyFile(SymmetricKey::from_bytes(KEY)),
        None,
        &big,
        true,
    );
    let (_, f) = layout(&a);
    assert_eq!(f.len(), 4);
    let ((s0, l0), (s1, l1)) = (f[0], f[1]);
    assert_eq!(l0, l1);
    std::fs::write(&p, &a).unwrap();
    assert_eq!(check(&p).unwrap().frames, 3);
    // Whole frames (headers with their sequence numbers) swapped.
    let mut b = a.clone();
    b[s0..s0 + l0].copy_from_slice(&a[s1..s1 + l1]);
    b[s1..s1 + l1].copy_from_slice(&a[s0..s0 + l0]);
    // Every tag verifies (each head is under its own tag): a structure error, never damage
    // that salvage would read past (Archive::head_error decides with the tag).
    expect_auth(&p, &b, AuthCheck::Structure, "frames swapped");
    // Bodies and tags swapped under the original headers.
    let mut b = a.clone();
    b[s0 + 16..s0 + l0].copy_from_slice(&a[s1 + 16..s1 + l1]);
    b[s1 + 16..s1 + l1].copy_from_slice(&a[s0 + 16..s0 + l0]);
    expect_auth(&p, &b, AuthCheck::FrameMac, "bodies swapped");
    // A frame duplicated over its neighbour.
    let mut b = a.clone();
    b[s1..s1 + l1].copy_from_slice(&a[s0..s0 + l0]);
    expect_auth(&p, &b, AuthCheck::Structure, "frame duplicated");
    // A frame dropped (the rest moved up).
    let b = [&a[..s1], &a[s1 + l1..]].concat();
    std::fs::write(&p, &b).unwrap();
    let e = check(&p).unwrap_err();
    assert!(matches!(e.exit_code(), 2 | 3), "{e}");
}
