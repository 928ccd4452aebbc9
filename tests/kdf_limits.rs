//! Issue 4, library level: a stanza claiming KDF costs above the reader's ceiling is refused
//! before the KDF runs (also through the binary), costs below the writer's floors are a
//! parameter error, not an authentication failure, and stanza sets no reader accepts are
//! refused by the writer. Split from `encryption_tamper.rs` (shared fixture: `tamper_common`).

mod common;
mod tamper_common;

use std::time::{Duration, Instant};

use krypta::Error;
use krypta::archive::reader::OpenOptions;
use krypta::archive::writer::{ArchiveWriter, WriteOptions};
use krypta::crypto::keyfile::SymmetricKey;
use krypta::crypto::password::Secret;
use krypta::crypto::{Identity, Kdf, Recipient};
use tamper_common::*;

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
        "krypta: k.kry: argon2id memory KiB = 4294967295 exceeds the limit 4194304 (refusing to \
         run the KDF); if this archive was written with normal settings, its header may be \
         damaged: no krypta writes a cost beyond the limit, and the header's MAC cannot be \
         checked before the KDF runs\n"
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
        "krypta: k.kry: pbkdf2 iterations = 1 is below the minimum 100000 (refusing to run the \
         KDF on a stanza weaker than any krypta writes); if krypta wrote this archive, its \
         header is damaged (the header's MAC cannot be checked before the KDF runs)\n"
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
    // header then fails authentication (the header's damage: the key is right): what
    // matters is that no KDF error comes first.
    let e = check(&p).unwrap_err();
    assert!(matches!(e, Error::HeaderDamaged { .. }), "{e:?}");
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

/// Regression (h67): one flipped bit in a stanza's cost (65536 KiB read as 2147549184, 600000
/// iterations as 1074341824) said only "exceeds the limit" (exit 3), as if the archive had
/// been written with a huge --kdf-memory: the header's MAC, which would tell damage, cannot be
/// checked before the KDF runs. The refusal stands (the KDF never runs, so it is quick) and
/// now says the header may be damaged, naming the value one bit away when it is within the
/// limit.
#[test]
fn a_flipped_cost_bit_says_the_header_may_be_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.kry");
    std::fs::write(dir.path().join("pw"), "pw").unwrap();
    let pbkdf2 = Kdf::Pbkdf2 {
        iterations: 600_000,
    };
    for (archive, what) in [
        (
            patched_argon2id(56, 8192 | 1 << 31),
            "argon2id memory KiB = 2147491840 exceeds the limit 4194304 (refusing to run the \
             KDF); if this archive was written with normal settings, its header may be damaged \
             (it is one bit away from 8192, which is within the limit)",
        ),
        (
            patched(pbkdf2, 56, 600_000 | 1 << 30),
            "pbkdf2 iterations = 1074341824 exceeds the limit 10000000 (refusing to run the \
             KDF); if this archive was written with normal settings, its header may be damaged \
             (it is one bit away from 600000, which is within the limit)",
        ),
    ] {
        std::fs::write(&p, archive).unwrap();
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
            format!(
                "krypta: k.kry: {what}: no krypta writes a cost beyond the limit, and the \
                 header's MAC cannot be checked before the KDF runs\n"
            )
        );
    }
}
