//! Box key files: `keygen --box` output, loading secret and public keys, and the clear errors
//! for keys of the wrong kind, damaged or truncated text, and over-permissive modes.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use krypta::Error;
use krypta::crypto::boxkey::{
    INLINE_KEY_PATH, generate_box_keypair, load_public, load_secret, public_key_path,
    public_key_text, secret_key_mode_warning, utc_timestamp,
};
use krypta::crypto::keys::FileKey;
use krypta::crypto::pqbox;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts a `BadKeyFile` error naming `path`; returns its problem text.
fn bad_key_file(r: Result<impl std::fmt::Debug, Error>, path: &Path) -> String {
    match r {
        Err(Error::BadKeyFile { path: p, problem }) => {
            assert_eq!(p, path);
            problem
        }
        other => panic!("expected BadKeyFile for {}, got {other:?}", path.display()),
    }
}

fn keypair(dir: &Path) -> (PathBuf, PathBuf) {
    let sk_path = dir.join("id");
    generate_box_keypair(&sk_path).unwrap();
    let pub_path = public_key_path(&sk_path);
    (sk_path, pub_path)
}

#[test]
fn keygen_writes_a_0600_secret_file_and_a_public_file_that_belong_together() {
    let dir = tempfile::tempdir().unwrap();
    let sk_path = dir.path().join("id");
    let pk = generate_box_keypair(&sk_path).unwrap();
    let pub_path = dir.path().join("id.pub");
    assert_eq!(public_key_path(&sk_path), pub_path);
    assert_eq!(
        fs::metadata(&sk_path).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let secret_text = fs::read_to_string(&sk_path).unwrap();
    let lines: Vec<&str> = secret_text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("# created: 20"), "{}", lines[0]);
    assert_eq!(lines[1], format!("# public key: {}", public_key_text(&pk)));
    assert!(lines[2].starts_with("KRYPTA-BOX-SECRET-1-"));
    assert_eq!(
        fs::read_to_string(&pub_path).unwrap(),
        format!("{}\n", public_key_text(&pk))
    );

    let sk = load_secret(s(&sk_path)).unwrap();
    assert_eq!(sk.public_key(), pk);
    assert_eq!(load_public(s(&pub_path)).unwrap(), pk);
    assert_eq!(secret_key_mode_warning(&sk_path), None);

    // The keys work: a stanza sealed to the loaded public key opens with the loaded secret.
    let stanza = pqbox::seal(
        &load_public(s(&pub_path)).unwrap(),
        &FileKey::from_bytes([4; 32]),
        &[8; 16],
    )
    .unwrap();
    assert_eq!(
        pqbox::open(&sk, &stanza, &[8; 16]).unwrap().as_bytes(),
        &[4; 32]
    );
}

#[test]
fn keygen_never_overwrites_an_existing_secret_file() {
    let dir = tempfile::tempdir().unwrap();
    let sk_path = dir.path().join("id");
    fs::write(&sk_path, "precious").unwrap();
    match generate_box_keypair(&sk_path) {
        Err(Error::Exists { path }) => assert_eq!(path, sk_path),
        other => panic!("expected Exists, got {other:?}"),
    }
    assert_eq!(fs::read_to_string(&sk_path).unwrap(), "precious");
    assert!(!dir.path().join("id.pub").exists());
}

#[test]
fn keygen_never_overwrites_an_existing_public_file_and_leaves_no_secret_behind() {
    let dir = tempfile::tempdir().unwrap();
    let sk_path = dir.path().join("id");
    let pub_path = dir.path().join("id.pub");
    fs::write(&pub_path, "precious").unwrap();
    match generate_box_keypair(&sk_path) {
        Err(Error::Exists { path }) => assert_eq!(path, pub_path),
        other => panic!("expected Exists, got {other:?}"),
    }
    assert_eq!(fs::read_to_string(&pub_path).unwrap(), "precious");
    assert!(!sk_path.exists());
}

#[test]
fn keygen_refuses_a_dangling_symlink_at_the_secret_path() {
    let dir = tempfile::tempdir().unwrap();
    let sk_path = dir.path().join("id");
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), &sk_path).unwrap();
    assert!(matches!(
        generate_box_keypair(&sk_path),
        Err(Error::Exists { .. })
    ));
    assert!(!dir.path().join("elsewhere").exists());
}

#[test]
fn a_public_key_given_as_the_secret_key_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (_, pub_path) = keypair(dir.path());
    let problem = bad_key_file(load_secret(s(&pub_path)), &pub_path);
    assert!(problem.to_lowercase().contains("public"), "{problem}");
}

#[test]
fn a_secret_key_given_as_a_recipient_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (sk_path, _) = keypair(dir.path());
    let problem = bad_key_file(load_public(s(&sk_path)), &sk_path);
    assert!(problem.to_lowercase().contains("secret"), "{problem}");
}

#[test]
fn one_changed_character_anywhere_in_the_key_line_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let (sk_path, pub_path) = keypair(dir.path());
    for path in [&sk_path, &pub_path] {
        let original = fs::read_to_string(path).unwrap();
        let key_line_start = original.rfind("KRYPTA-").unwrap();
        let line_len = original[key_line_start..].trim_end().len();
        // Every position of the secret line; every 7th of the (1.7 KB) public line.
        let step = if path == &sk_path { 1 } else { 7 };
        for i in (key_line_start..key_line_start + line_len).step_by(step) {
            let mut bytes = original.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let damaged = dir.path().join("damaged");
            fs::write(&damaged, &bytes).unwrap();
            let r = if path == &sk_path {
                load_secret(s(&damaged)).map(|_| ())
            } else {
                load_public(s(&damaged)).map(|_| ())
            };
            bad_key_file(r, &damaged);
        }
    }
}

#[test]
fn a_truncated_key_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (sk_path, pub_path) = keypair(dir.path());
    for path in [&sk_path, &pub_path] {
        let text = fs::read_to_string(path).unwrap();
        for cut in [
            text.len() - 2,
            text.len() - 3,
            text.len() - 40,
            text.len() / 2,
            10,
            0,
        ] {
            let truncated = dir.path().join("truncated");
            fs::write(&truncated, &text[..cut]).unwrap();
            let r = if path == &sk_path {
                load_secret(s(&truncated)).map(|_| ())
            } else {
                load_public(s(&truncated)).map(|_| ())
            };
            bad_key_file(r, &truncated);
        }
    }
}

#[test]
fn a_public_key_can_be_given_as_text_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let (_, pub_path) = keypair(dir.path());
    let text = fs::read_to_string(&pub_path).unwrap();
    assert_eq!(
        load_public(text.trim_end()).unwrap(),
        load_public(s(&pub_path)).unwrap()
    );
    bad_key_file(
        load_public(&text.trim_end()[..100]),
        Path::new(INLINE_KEY_PATH),
    );
}

#[test]
fn secret_key_text_on_the_command_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (sk_path, _) = keypair(dir.path());
    let text = fs::read_to_string(&sk_path).unwrap();
    let line = text.lines().last().unwrap();
    let problem = bad_key_file(load_secret(line), Path::new(INLINE_KEY_PATH));
    assert!(problem.contains("file"), "{problem}");
}

#[test]
fn a_missing_key_file_is_an_io_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    match load_secret(s(&missing)) {
        Err(Error::Io { path, op, .. }) => assert_eq!((path, op), (missing.clone(), "open")),
        other => panic!("expected Io, got {other:?}"),
    }
    assert!(matches!(load_public(s(&missing)), Err(Error::Io { .. })));
}

#[test]
fn binary_empty_and_huge_files_are_not_key_files() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Vec<u8>); 4] = [
        ("binary", vec![0xff, 0xfe, 0x00, 0x80]),
        ("empty", Vec::new()),
        ("comments", b"# only a comment\n\n".to_vec()),
        ("huge", vec![b'K'; 70_000]),
    ];
    for (name, content) in cases {
        let p = dir.path().join(name);
        fs::write(&p, content).unwrap();
        bad_key_file(load_secret(s(&p)).map(|_| ()), &p);
        bad_key_file(load_public(s(&p)).map(|_| ()), &p);
    }
}

#[test]
fn a_group_or_world_readable_secret_key_gets_a_warning_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (sk_path, _) = keypair(dir.path());
    fs::set_permissions(&sk_path, fs::Permissions::from_mode(0o644)).unwrap();
    let name = sk_path.display();
    assert_eq!(
        secret_key_mode_warning(&sk_path).unwrap(),
        format!("{name} is readable by group/others (mode 0644); chmod 600 {name}")
    );
    fs::set_permissions(&sk_path, fs::Permissions::from_mode(0o640)).unwrap();
    assert!(
        secret_key_mode_warning(&sk_path)
            .unwrap()
            .contains("(mode 0640)")
    );
    fs::set_permissions(&sk_path, fs::Permissions::from_mode(0o400)).unwrap();
    assert_eq!(secret_key_mode_warning(&sk_path), None);
    // The key still loads: the warning is advice, not an error.
    assert!(load_secret(s(&sk_path)).is_ok());
}

#[test]
fn creation_timestamps_are_rfc3339_utc() {
    let at = |secs: u64| utc_timestamp(UNIX_EPOCH + Duration::from_secs(secs));
    assert_eq!(at(0), "1970-01-01T00:00:00Z");
    assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
    assert_eq!(at(4_102_444_799), "2099-12-31T23:59:59Z");
}

#[test]
fn a_public_key_with_a_low_order_x25519_part_is_refused_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let (_, pub_path) = keypair(dir.path());
    let mut bytes = load_public(s(&pub_path)).unwrap().to_bytes();
    bytes[1184..].copy_from_slice(&[0; 32]);
    let text = krypta::crypto::keytext::encode(krypta::crypto::keytext::KeyKind::BoxPublic, &bytes);
    let problem = bad_key_file(load_public(&text), Path::new(INLINE_KEY_PATH));
    assert!(problem.contains("low-order"), "{problem}");
}
