//! Behaviour of recipient stanzas through the public API: every kind round trips, several
//! stanzas each open alone, and wrong keys, tampering, moving and hostile KDF parameters all
//! fail the way `docs/SECURITY.md` says.

use std::time::Instant;

use krypta::crypto::keyfile::SymmetricKey;
use krypta::crypto::password::Secret;
use krypta::crypto::stanza::{
    open_stanza, unwrap, unwrap_versioned, wrap, wrap_keyfile, wrap_password_with_salt,
};
use krypta::crypto::{ArchiveId, CryptoError, FileKey, Identity, Kdf, Recipient};
use krypta::format::Reader;
use krypta::format::Stanza;

const ID: ArchiveId = *b"archive-id-0001!";
/// The cheapest Argon2id a writer accepts (8 MiB, one pass).
const WRITER_MIN_ARGON: Kdf = Kdf::Argon2id {
    m_kib: 8192,
    t: 1,
    p: 1,
};
/// Costs far below the floor readers and writers share: only for tests of the wrap
/// construction, which go through the low-level `open_stanza` (a reader's `unwrap` refuses
/// these before running the KDF).
const CHEAP_ARGON: Kdf = Kdf::Argon2id {
    m_kib: 64,
    t: 1,
    p: 1,
};

fn file_key() -> FileKey {
    FileKey::from_bytes(*b"0123456789abcdef0123456789abcdef")
}

fn pw(s: &str) -> Secret {
    Secret::from(s)
}

/// The reader's path: `unwrap` with every rule a reader applies.
fn opened(
    identities: &[Identity],
    stanzas: &[Stanza],
    id: &ArchiveId,
) -> Result<[u8; 32], CryptoError> {
    unwrap(identities, stanzas, id).map(|k| *k.as_bytes())
}

/// The low-level open of one identity on one stanza (no reader bounds).
fn opens_low_level(identity: &Identity, stanza: &Stanza, id: &ArchiveId) -> Option<[u8; 32]> {
    open_stanza(identity, stanza, id)
        .ok()
        .flatten()
        .map(|k| *k.as_bytes())
}

/// The cheapest PBKDF2 a writer and a reader accept.
const MIN_PBKDF2: Kdf = Kdf::Pbkdf2 {
    iterations: 100_000,
};

#[test]
fn every_stanza_kind_round_trips() {
    let fk = file_key();
    let key = SymmetricKey::from_bytes([5; 32]);
    let cases = [
        (
            Recipient::Password {
                password: pw("correct horse"),
                kdf: WRITER_MIN_ARGON,
            },
            Identity::Password(pw("correct horse")),
        ),
        (
            Recipient::Password {
                password: pw("battery staple"),
                kdf: Kdf::Pbkdf2 {
                    iterations: 100_000,
                },
            },
            Identity::Password(pw("battery staple")),
        ),
        (Recipient::KeyFile(key.clone()), Identity::KeyFile(key)),
    ];
    for (recipient, identity) in cases {
        let stanza = wrap(&recipient, &fk, &ID).unwrap();
        assert_eq!(opened(&[identity], &[stanza], &ID).unwrap(), *fk.as_bytes());
    }
}

#[test]
fn password_stanzas_get_a_fresh_salt_each_time() {
    let r = Recipient::Password {
        password: pw("pw"),
        kdf: Kdf::Pbkdf2 {
            iterations: 100_000,
        },
    };
    let a = wrap(&r, &file_key(), &ID).unwrap();
    let b = wrap(&r, &file_key(), &ID).unwrap();
    let (
        Stanza::Pbkdf2 {
            salt: sa,
            wrapped: wa,
            ..
        },
        Stanza::Pbkdf2 {
            salt: sb,
            wrapped: wb,
            ..
        },
    ) = (&a, &b)
    else {
        panic!("not pbkdf2 stanzas");
    };
    assert_ne!(sa, sb);
    assert_ne!(wa, wb);
}

#[test]
fn several_stanzas_each_open_alone() {
    let fk = file_key();
    let k1 = SymmetricKey::from_bytes([1; 32]);
    let k2 = SymmetricKey::from_bytes([2; 32]);
    for (kdf, password) in [(WRITER_MIN_ARGON, "alpha"), (MIN_PBKDF2, "beta")] {
        let stanzas = vec![
            wrap_keyfile(&k1, &fk, &ID),
            wrap_password_with_salt(password.as_bytes(), &kdf, [1; 16], &fk, &ID).unwrap(),
            wrap_keyfile(&k2, &fk, &ID),
        ];
        for identity in [
            Identity::Password(pw(password)),
            Identity::KeyFile(k1.clone()),
            Identity::KeyFile(k2.clone()),
        ] {
            assert_eq!(opened(&[identity], &stanzas, &ID).unwrap(), *fk.as_bytes());
        }
    }
}

#[test]
fn two_password_stanzas_are_refused_before_any_kdf_runs() {
    // One archive, one password stanza (age's rule): two would let a crafted archive test
    // two password guesses per open. Refused even for a key-file identity that would open.
    let fk = file_key();
    let key = SymmetricKey::from_bytes([1; 32]);
    let a = wrap_password_with_salt(b"alpha", &WRITER_MIN_ARGON, [1; 16], &fk, &ID).unwrap();
    let b = wrap_password_with_salt(b"beta", &MIN_PBKDF2, [2; 16], &fk, &ID).unwrap();
    let k = wrap_keyfile(&key, &fk, &ID);
    for stanzas in [
        vec![a.clone(), b.clone()],
        vec![k.clone(), b.clone(), a.clone()],
    ] {
        for ids in [
            vec![Identity::Password(pw("alpha"))],
            vec![Identity::KeyFile(key.clone())],
        ] {
            let start = Instant::now();
            let e = opened(&ids, &stanzas, &ID).unwrap_err();
            assert!(start.elapsed().as_millis() < 50, "{:?}", start.elapsed());
            assert_eq!(
                e.to_string(),
                "header: 2 password stanzas (argon2id or pbkdf2); an archive holds at most 1"
            );
            assert!(matches!(e, CryptoError::StanzaSet(_)));
        }
    }
}
#[test]
fn wrong_password_or_key_gives_no_stanza_opened() {
    let fk = file_key();
    for kdf in [WRITER_MIN_ARGON, MIN_PBKDF2] {
        let stanzas = vec![
            wrap_password_with_salt(b"alpha", &kdf, [1; 16], &fk, &ID).unwrap(),
            wrap_keyfile(&SymmetricKey::from_bytes([1; 32]), &fk, &ID),
        ];
        for wrong in [
            vec![Identity::Password(pw("alphA"))],
            vec![Identity::Password(pw("alpha "))],
            vec![Identity::KeyFile(SymmetricKey::from_bytes([3; 32]))],
            vec![],
        ] {
            assert!(matches!(
                opened(&wrong, &stanzas, &ID),
                Err(CryptoError::NoStanzaOpened)
            ));
        }
        // A key file is never tried as a password or the other way round.
        let only_password = [stanzas[0].clone()];
        let key_as_identity = Identity::KeyFile(SymmetricKey::from_bytes(
            *b"alpha\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
        ));
        assert!(matches!(
            opened(&[key_as_identity], &only_password, &ID),
            Err(CryptoError::NoStanzaOpened)
        ));
    }
}
#[test]
fn a_later_identity_opens_when_earlier_ones_do_not() {
    let fk = file_key();
    let stanzas =
        vec![wrap_password_with_salt(b"right", &WRITER_MIN_ARGON, [1; 16], &fk, &ID).unwrap()];
    let ids = [
        Identity::Password(pw("wrong")),
        Identity::Password(pw("right")),
    ];
    assert_eq!(opened(&ids, &stanzas, &ID).unwrap(), *fk.as_bytes());
}

/// Re-parses framed stanza bytes; None when the format layer already refuses them.
fn reparse(bytes: &[u8]) -> Option<Stanza> {
    let mut r = Reader::new(bytes, "stanza");
    let s = Stanza::parse(&mut r, krypta::format::Version::V1).ok()?;
    r.finish().ok()?;
    Some(s)
}

#[test]
fn any_flipped_bit_in_any_stanza_field_fails_to_open() {
    let fk = file_key();
    let key = SymmetricKey::from_bytes([9; 32]);
    let cases = [
        (
            wrap_password_with_salt(b"pw", &CHEAP_ARGON, [1; 16], &fk, &ID).unwrap(),
            Identity::Password(pw("pw")),
        ),
        (
            wrap_password_with_salt(b"pw", &Kdf::Pbkdf2 { iterations: 3 }, [1; 16], &fk, &ID)
                .unwrap(),
            Identity::Password(pw("pw")),
        ),
        (wrap_keyfile(&key, &fk, &ID), Identity::KeyFile(key.clone())),
    ];
    for (stanza, identity) in cases {
        let mut framed = Vec::new();
        stanza.write(&mut framed);
        assert_eq!(
            opens_low_level(&identity, &reparse(&framed).unwrap(), &ID),
            Some(*fk.as_bytes())
        );
        for byte in 0..framed.len() {
            // The lowest and highest bit of every byte. (Bit 4 of the third memory byte would
            // ask for 1 GiB: a valid but slow cost, left out to keep the test light.)
            for bit in [0, 7] {
                let mut bad = framed.clone();
                bad[byte] ^= 1 << bit;
                let Some(s) = reparse(&bad) else { continue };
                let r = opens_low_level(&identity, &s, &ID);
                assert!(
                    r.is_none(),
                    "{} byte {byte} bit {bit} still opens",
                    stanza.name()
                );
            }
        }
    }
}

#[test]
fn stanza_moved_to_another_archive_fails() {
    let fk = file_key();
    let key = SymmetricKey::from_bytes([9; 32]);
    let stanzas = [
        wrap_password_with_salt(b"pw", &WRITER_MIN_ARGON, [1; 16], &fk, &ID).unwrap(),
        wrap_keyfile(&key, &fk, &ID),
    ];
    let other: ArchiveId = *b"archive-id-0002!";
    let ids = [Identity::Password(pw("pw")), Identity::KeyFile(key)];
    assert!(matches!(
        opened(&ids, &stanzas, &other),
        Err(CryptoError::NoStanzaOpened)
    ));
    assert!(opened(&ids, &stanzas, &ID).is_ok());
}

#[test]
fn hostile_kdf_parameters_are_refused_before_any_kdf_runs() {
    let fk = file_key();
    let key = SymmetricKey::from_bytes([9; 32]);
    let hostile = [
        (
            Stanza::Argon2id {
                m_kib: u32::MAX,
                t: 3,
                p: 1,
                salt: [0; 16],
                wrapped: [0; 32],
                tag: [0; 32],
            },
            "argon2id memory KiB",
        ),
        (
            Stanza::Argon2id {
                m_kib: 65_536,
                t: u32::MAX,
                p: 1,
                salt: [0; 16],
                wrapped: [0; 32],
                tag: [0; 32],
            },
            "argon2id iterations",
        ),
        (
            Stanza::Argon2id {
                m_kib: 65_536,
                t: 1,
                p: 1 << 20,
                salt: [0; 16],
                wrapped: [0; 32],
                tag: [0; 32],
            },
            "argon2id lanes",
        ),
        (
            Stanza::Pbkdf2 {
                iterations: u32::MAX,
                salt: [0; 16],
                wrapped: [0; 32],
                tag: [0; 32],
            },
            "pbkdf2 iterations",
        ),
    ];
    for (stanza, expected_param) in hostile {
        let stanzas = [wrap_keyfile(&key, &fk, &ID), stanza];
        // Tried with a password, the stanza is refused before its KDF runs.
        let start = Instant::now();
        let r = opened(&[Identity::Password(pw("pw"))], &stanzas, &ID);
        assert!(
            start.elapsed().as_millis() < 50,
            "took {:?}",
            start.elapsed()
        );
        match r {
            Err(CryptoError::KdfLimit { param, .. }) => assert_eq!(param, expected_param),
            other => panic!("expected KdfLimit for {expected_param}, got {other:?}"),
        }
        // A key file opens the archive without the password stanza being checked or run,
        // whatever the order the identities come in: one oversized stanza locks nobody out.
        for ids in [
            [Identity::KeyFile(key.clone()), Identity::Password(pw("pw"))],
            [Identity::Password(pw("pw")), Identity::KeyFile(key.clone())],
        ] {
            let start = Instant::now();
            assert_eq!(opened(&ids, &stanzas, &ID).unwrap(), *fk.as_bytes());
            assert!(start.elapsed().as_millis() < 50, "{:?}", start.elapsed());
        }
        assert_eq!(
            opened(&[Identity::KeyFile(key.clone())], &stanzas, &ID).unwrap(),
            *fk.as_bytes()
        );
    }
}

#[test]
fn kdf_parameters_below_the_writer_floors_are_refused_before_any_kdf_runs() {
    // A crafted stanza at PBKDF2 c = 1 (or 64 KiB of Argon2id) would make the victim's reader a
    // fast password-guess oracle; no krypta writer produces one, so readers refuse it.
    let fk = file_key();
    let key = SymmetricKey::from_bytes([9; 32]);
    let cases = [
        (
            wrap_password_with_salt(b"pw", &Kdf::Pbkdf2 { iterations: 1 }, [1; 16], &fk, &ID),
            "pbkdf2 iterations",
            1,
            100_000,
        ),
        (
            wrap_password_with_salt(
                b"pw",
                &Kdf::Pbkdf2 { iterations: 99_999 },
                [1; 16],
                &fk,
                &ID,
            ),
            "pbkdf2 iterations",
            99_999,
            100_000,
        ),
        (
            wrap_password_with_salt(b"pw", &CHEAP_ARGON, [1; 16], &fk, &ID),
            "argon2id memory KiB",
            64,
            8192,
        ),
        (
            wrap_password_with_salt(
                b"pw",
                &Kdf::Argon2id {
                    m_kib: 8191,
                    t: 1,
                    p: 1,
                },
                [1; 16],
                &fk,
                &ID,
            ),
            "argon2id memory KiB",
            8191,
            8192,
        ),
    ];
    for (stanza, param, value, min) in cases {
        let stanza = stanza.unwrap();
        // The construction itself is sound (the low-level open opens it) ...
        assert_eq!(
            opens_low_level(&Identity::Password(pw("pw")), &stanza, &ID),
            Some(*fk.as_bytes())
        );
        // ... but a reader refuses it with a parameter error, not "authentication failed".
        let stanzas = [stanza, wrap_keyfile(&key, &fk, &ID)];
        match opened(&[Identity::Password(pw("pw"))], &stanzas, &ID) {
            Err(CryptoError::KdfTooWeak {
                param: p,
                value: v,
                min: m,
            }) => assert_eq!((p, v, m), (param, value, min)),
            other => panic!("expected KdfTooWeak for {param} = {value}, got {other:?}"),
        }
        assert_eq!(
            opened(&[Identity::KeyFile(key.clone())], &stanzas, &ID).unwrap(),
            *fk.as_bytes()
        );
    }
}

#[test]
fn non_ascii_password_round_trips_in_nfc_and_nfd_forms() {
    let fk = file_key();
    let nfc = "pässwörd-密码-🔑";
    let stanza = wrap(
        &Recipient::Password {
            password: pw(nfc),
            kdf: WRITER_MIN_ARGON,
        },
        &fk,
        &ID,
    )
    .unwrap();
    assert_eq!(
        opened(
            &[Identity::Password(pw(nfc))],
            std::slice::from_ref(&stanza),
            &ID
        )
        .unwrap(),
        *fk.as_bytes()
    );
    // Issue 14: the KDF is given the NFC form, so the decomposed spelling opens it too; a
    // different password still does not.
    let nfd = "pa\u{308}sswo\u{308}rd-密码-🔑";
    assert_eq!(
        opened(
            &[Identity::Password(pw(nfd))],
            std::slice::from_ref(&stanza),
            &ID
        )
        .unwrap(),
        *fk.as_bytes()
    );
    assert!(matches!(
        opened(&[Identity::Password(pw("pässwörd-密码"))], &[stanza], &ID),
        Err(CryptoError::NoStanzaOpened)
    ));
}

#[test]
fn empty_password_is_refused_when_wrapping() {
    let r = Recipient::Password {
        password: pw(""),
        kdf: WRITER_MIN_ARGON,
    };
    assert!(matches!(
        wrap(&r, &file_key(), &ID),
        Err(CryptoError::EmptyPassword)
    ));
}

#[test]
fn many_expensive_stanzas_are_refused_before_any_kdf_runs() {
    // Each stanza alone is within the ceilings; together they would cost hours. More than one
    // password stanza is a structural error, whatever their costs.
    let expensive = Stanza::Argon2id {
        m_kib: 4 << 20,
        t: 16,
        p: 1,
        salt: [0; 16],
        wrapped: [0; 32],
        tag: [0; 32],
    };
    let stanzas = vec![expensive; 64];
    let start = Instant::now();
    let r = opened(&[Identity::Password(pw("pw"))], &stanzas, &ID);
    assert!(start.elapsed().as_millis() < 50);
    assert_eq!(
        r.unwrap_err().to_string(),
        "header: 64 password stanzas (argon2id or pbkdf2); an archive holds at most 1"
    );
}

/// Issue 14: format-1 archives written before NFC normalisation hold a stanza wrapped with the
/// password's bytes as typed (here NFD, as macOS sends it). A reader given the NFC form (or the
/// NFD form) still opens it, because for format 1 it also tries the bytes as given and the NFD
/// form; for a later format version only the NFC form is tried.
#[test]
fn format_1_stanza_wrapped_with_raw_nfd_bytes_opens_with_either_form() {
    let nfc = "p\u{e4}ss\u{e9}";
    let nfd = "pa\u{308}sse\u{301}";
    let fk = file_key();
    let raw_nfd =
        wrap_password_with_salt(nfd.as_bytes(), &WRITER_MIN_ARGON, [5; 16], &fk, &ID).unwrap();
    let raw_nfc =
        wrap_password_with_salt(nfc.as_bytes(), &WRITER_MIN_ARGON, [6; 16], &fk, &ID).unwrap();
    for given in [nfc, nfd] {
        for stanza in [&raw_nfd, &raw_nfc] {
            let key = unwrap_versioned(
                &[Identity::Password(pw(given))],
                std::slice::from_ref(stanza),
                &ID,
                1,
            )
            .unwrap();
            assert_eq!(key.as_bytes(), fk.as_bytes());
        }
    }
    // Format 2 (issue 15) was always written with NFC: only that form is tried.
    assert!(matches!(
        unwrap_versioned(
            &[Identity::Password(pw(nfc))],
            std::slice::from_ref(&raw_nfd),
            &ID,
            2
        ),
        Err(CryptoError::NoStanzaOpened)
    ));
    assert!(
        unwrap_versioned(
            &[Identity::Password(pw(nfd))],
            std::slice::from_ref(&raw_nfc),
            &ID,
            2
        )
        .is_ok()
    );
    // A new stanza (`wrap`) holds the NFC form: the raw NFC bytes open it directly.
    let new = wrap(
        &Recipient::Password {
            password: pw(nfd),
            kdf: WRITER_MIN_ARGON,
        },
        &fk,
        &ID,
    )
    .unwrap();
    let id = Identity::Password(pw(nfc));
    assert!(open_stanza(&id, &new, &ID).unwrap().is_some());
    let id = Identity::Password(pw(nfd));
    assert!(open_stanza(&id, &new, &ID).unwrap().is_none());
}
