//! Issue 4, library level (in-process, fast): every byte flip and every truncation of a small
//! key-file archive is rejected with the right kind of error, frames and stanzas moved between
//! archives or reordered fail authentication, and a stanza claiming KDF costs above the
//! reader's ceiling is refused before the KDF runs (also through the binary).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use krypta::Error;
use krypta::archive::reader::OpenOptions;
use krypta::archive::writer::{ArchiveWriter, BcjMode, ReaderSource, WriteOptions};
use krypta::codec::Level;
use krypta::crypto::keyfile::SymmetricKey;
use krypta::crypto::password::Secret;
use krypta::crypto::{Identity, Kdf, Recipient};
use krypta::error::AuthCheck;
use krypta::format::{EntryKind, EntryMeta, Timestamp};

const KEY: [u8; 32] = [0x5a; 32];

fn meta(path: &str, kind: EntryKind) -> EntryMeta {
    EntryMeta {
        path: path.as_bytes().to_vec(),
        kind,
        mode: if kind == EntryKind::Dir { 0o755 } else { 0o644 },
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
        uid: 1000,
        gid: 1000,
        link: if kind == EntryKind::Symlink {
            b"a".to_vec()
        } else {
            vec![]
        },
        ..Default::default()
    }
}

/// An encrypted archive of a directory, a 70,000-byte compressible file (two 64 KiB blocks
/// of records), a 300-byte random file and a symlink. `id` None = a random archive id; the
/// file key is always random. `store` writes every block uncompressed.
fn archive(recipient: Recipient, id: Option<[u8; 16]>, big: &[u8], store: bool) -> Vec<u8> {
    let opts = WriteOptions {
        level: if store {
            None
        } else {
            Some(Level::new(3).unwrap())
        },
        block_size: 64 * 1024,
        jobs: 1,
        bcj: BcjMode::Off,
        created: 1_700_000_000,
        comment: "test".into(),
        recipients: vec![recipient],
        archive_id: id,
        file_key: None,
        ..WriteOptions::new()
    };
    let mut w = ArchiveWriter::new(Vec::new(), "mem", opts).unwrap();
    w.add_entry(&meta("d", EntryKind::Dir)).unwrap();
    w.add_file(
        &meta("d/a", EntryKind::File),
        &mut ReaderSource::new(big, "a"),
    )
    .unwrap();
    let small = common::bytes(300, 2, false);
    w.add_file(
        &meta("d/b", EntryKind::File),
        &mut ReaderSource::new(&small[..], "b"),
    )
    .unwrap();
    w.add_entry(&meta("d/l", EntryKind::Symlink)).unwrap();
    w.finish().unwrap().1
}

fn keyfile_archive(id: Option<[u8; 16]>) -> Vec<u8> {
    let big = b"krypta ".repeat(10_000);
    archive(
        Recipient::KeyFile(SymmetricKey::from_bytes(KEY)),
        id,
        &big,
        false,
    )
}

fn check_with(path: &Path, id: Identity) -> Result<krypta::archive::ScanSummary, Error> {
    krypta::test(
        path,
        OpenOptions {
            identities: vec![id],
            jobs: 1,
            ..OpenOptions::default()
        },
        &mut krypta::Collect::default(),
    )
}

fn check(path: &Path) -> Result<krypta::archive::ScanSummary, Error> {
    check_with(path, Identity::KeyFile(SymmetricKey::from_bytes(KEY)))
}

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

/// A password archive whose stanza body field at `at` is `value`.
fn patched(kdf: Kdf, at: usize, value: u32) -> Vec<u8> {
    let mut a = archive(
        Recipient::Password {
            password: Secret::from("pw"),
            kdf,
        },
        None,
        b"x",
        false,
    );
    a[at..at + 4].copy_from_slice(&value.to_le_bytes());
    a
}

/// A password archive (Argon2id 8 MiB, 1 pass) whose stanza body field at `at` is `value`.
fn patched_argon2id(at: usize, value: u32) -> Vec<u8> {
    let kdf = Kdf::Argon2id {
        m_kib: 8192,
        t: 1,
        p: 1,
    };
    patched(kdf, at, value)
}

#[test]
fn argon2id_costs_above_the_ceiling_are_refused_before_the_kdf_runs() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.kry");
    let pbkdf2 = Kdf::Pbkdf2 {
        iterations: 100_000,
    };
    for (archive, value, param, limit) in [
        (
            patched(pbkdf2, 56, 10_000_001),
            10_000_001,
            "pbkdf2 iterations",
            10_000_000,
        ),
        (
            patched_argon2id(56, u32::MAX),
            u32::MAX,
            "argon2id memory KiB",
            4 * 1024 * 1024,
        ),
        (
            patched_argon2id(56, 4 << 20 | 1),
            4 << 20 | 1,
            "argon2id memory KiB",
            4 << 20,
        ),
        (patched_argon2id(60, 17), 17, "argon2id iterations", 16),
        (
            patched_argon2id(60, u32::MAX),
            u32::MAX,
            "argon2id iterations",
            16,
        ),
        (patched_argon2id(64, 17), 17, "argon2id lanes", 16),
    ] {
        std::fs::write(&p, archive).unwrap();
        let t = Instant::now();
        let e = check_with(&p, Identity::Password(Secret::from("pw"))).unwrap_err();
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(e.exit_code(), 3, "{e}");
        match e {
            Error::KdfLimit {
                param: pa,
                value: v,
                limit: l,
                ..
            } => assert_eq!((pa, v, l), (param, value as u64, limit)),
            other => panic!("expected KdfLimit, got {other:?}"),
        }
    }
    // Unpatched, the same archive opens.
    std::fs::write(&p, patched_argon2id(56, 8192)).unwrap();
    check_with(&p, Identity::Password(Secret::from("pw"))).unwrap();
}

#[test]
fn the_binary_reports_the_kdf_ceiling_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.kry");
    std::fs::write(&p, patched_argon2id(56, u32::MAX)).unwrap();
    std::fs::write(dir.path().join("pw"), "pw").unwrap();
    let t = Instant::now();
    let o = common::krypta()
        .current_dir(dir.path())
        .args(["t", "--pass-file", "pw", "k.kry"])
        .output()
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(common::code(&o), 3);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "krypta: k.kry: argon2id memory KiB = 4294967295 exceeds the limit 4194304 (refusing to run the KDF)\n"
    );
    // `info` still shows what the stanza claims, without running anything.
    let o = common::krypta()
        .current_dir(dir.path())
        .args(["info", "k.kry"])
        .output()
        .unwrap();
    assert_eq!(common::code(&o), 0);
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("argon2id      memory 4294967295 KiB (4194303 MiB), iterations 1, lanes 1"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn kdf_costs_below_the_writer_floors_are_a_parameter_error_not_an_auth_failure() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.kry");
    let pbkdf2 = Kdf::Pbkdf2 {
        iterations: 100_000,
    };
    for (archive, value, param, min) in [
        (patched(pbkdf2, 56, 1), 1, "pbkdf2 iterations", 100_000),
        (
            patched(pbkdf2, 56, 99_999),
            99_999,
            "pbkdf2 iterations",
            100_000,
        ),
        (
            patched_argon2id(56, 8191),
            8191,
            "argon2id memory KiB",
            8192,
        ),
        (patched_argon2id(56, 64), 64, "argon2id memory KiB", 8192),
        (patched_argon2id(60, 0), 0, "argon2id iterations", 1),
    ] {
        std::fs::write(&p, archive).unwrap();
        let e = check_with(&p, Identity::Password(Secret::from("pw"))).unwrap_err();
        assert_eq!(e.exit_code(), 3, "{e}");
        match e {
            Error::KdfTooWeak {
                param: pa,
                value: v,
                min: m,
                ..
            } => assert_eq!((pa, v, m), (param, value as u64, min)),
            other => panic!("expected KdfTooWeak, got {other:?}"),
        }
    }
    std::fs::write(&p, patched(pbkdf2, 56, 1)).unwrap();
    std::fs::write(dir.path().join("pw"), "pw").unwrap();
    let o = common::krypta()
        .current_dir(dir.path())
        .args(["t", "--pass-file", "pw", "k.kry"])
        .output()
        .unwrap();
    assert_eq!(common::code(&o), 3);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "krypta: k.kry: pbkdf2 iterations = 1 is below the minimum 100000 (refusing to run the KDF on a stanza weaker than any krypta writes)\n"
    );
}

#[test]
fn an_oversized_password_stanza_does_not_lock_out_a_key_file_recipient() {
    // Ceilings and floors apply only to the stanza a password is tried on: with the key file,
    // the archive opens at once and the 4 GiB stanza is neither checked nor run.
    let kdf = Kdf::Argon2id {
        m_kib: 8192,
        t: 1,
        p: 1,
    };
    let opts = WriteOptions {
        recipients: vec![
            Recipient::Password {
                password: Secret::from("pw"),
                kdf,
            },
            Recipient::KeyFile(SymmetricKey::from_bytes(KEY)),
        ],
        jobs: 1,
        ..WriteOptions::new()
    };
    let (_, mut a) = ArchiveWriter::new(Vec::new(), "mem", opts)
        .unwrap()
        .finish()
        .unwrap();
    // The argon2id body starts at 56: memory 2^32 - 1 KiB, far above the ceiling.
    a[56..60].copy_from_slice(&u32::MAX.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.kry");
    std::fs::write(&p, &a).unwrap();
    // The header MAC covers the patched bytes, so the key file opens the stanza but the
    // header then fails authentication: what matters is that no KDF error comes first.
    let e = check(&p).unwrap_err();
    assert!(
        matches!(
            e,
            Error::AuthFailed {
                check: AuthCheck::HeaderMac,
                ..
            }
        ),
        "{e:?}"
    );
    let e = check_with(&p, Identity::Password(Secret::from("pw"))).unwrap_err();
    assert!(matches!(e, Error::KdfLimit { .. }), "{e:?}");
}

#[test]
fn two_password_stanzas_are_refused_by_the_writer_and_as_corrupt_by_the_reader() {
    let kdf = Kdf::Argon2id {
        m_kib: 8192,
        t: 1,
        p: 1,
    };
    let pw = || Recipient::Password {
        password: Secret::from("pw"),
        kdf,
    };
    let opts = WriteOptions {
        recipients: vec![pw(), pw()],
        jobs: 1,
        ..WriteOptions::new()
    };
    match ArchiveWriter::new(Vec::new(), "mem", opts) {
        Err(e @ Error::Usage(_)) => assert_eq!(
            e.to_string(),
            "2 passwords given: an archive holds at most one password stanza (add key files or box recipients instead)"
        ),
        Err(e) => panic!("expected a usage error, got {e:?}"),
        Ok(_) => panic!("the writer accepted two passwords"),
    }
    // A crafted header with two password stanzas: refused when parsed, before any KDF, and
    // also by `info` (it is a malformed header, whatever key is given).
    let stanza = krypta::crypto::stanza::wrap(
        &pw(),
        &krypta::crypto::FileKey::from_bytes([1; 32]),
        &[2; 16],
    )
    .unwrap();
    let header = krypta::format::header::Header {
        version: krypta::format::Version::V1,
        extensions: vec![],
        archive_id: [2; 16],
        created: 0,
        block_size: 4 << 20,
        level: 3,
        stanzas: vec![stanza.clone(), stanza],
        comment: String::new(),
    };
    let mut bytes = header.write_untagged();
    bytes.extend_from_slice(&[0; 32 + 64]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("two.kry"), &bytes).unwrap();
    std::fs::write(dir.path().join("pw"), "pw").unwrap();
    for args in [
        &["t", "--pass-file", "pw", "two.kry"][..],
        &["info", "two.kry"],
    ] {
        let t = Instant::now();
        let o = common::krypta()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert_eq!(common::code(&o), 3, "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            "krypta: two.kry: corrupt archive at byte 0: header: 2 password stanzas (argon2id or pbkdf2); an archive holds at most 1\n"
        );
    }
}

#[test]
fn the_library_refuses_an_unencrypted_archive_opened_with_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.kry");
    let (_, bytes) = ArchiveWriter::new(Vec::new(), "mem", WriteOptions::new())
        .unwrap()
        .finish()
        .unwrap();
    std::fs::write(&p, &bytes).unwrap();
    let key = Identity::KeyFile(SymmetricKey::from_bytes([3; 32]));
    let open = |allow_unencrypted| OpenOptions {
        identities: vec![key.clone()],
        jobs: 1,
        allow_unencrypted,
        in_flight_budget: None,
        signers: Vec::new(),
        base: None,
    };
    match krypta::archive::Archive::open(&p, open(false)) {
        Err(e @ Error::NotEncrypted { .. }) => assert_eq!(e.exit_code(), 2),
        Err(e) => panic!("expected NotEncrypted, got {e:?}"),
        Ok(_) => panic!("an unencrypted archive opened with a key"),
    }
    let mut rep = krypta::Collect::default();
    let s = krypta::test(&p, open(true), &mut rep).unwrap();
    assert_eq!(s.entries, 0);
    assert_eq!(rep.warnings.len(), 1, "{:?}", rep.warnings);
    let s = krypta::test(&p, OpenOptions::default(), &mut krypta::Collect::default()).unwrap();
    assert_eq!(s.entries, 0);
}
