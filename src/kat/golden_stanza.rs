//! krypta's golden password and key-file stanza vectors: generator and runner (the shared
//! machinery is in [`super::golden`]).

use super::golden::{append_vector, seeded, seeded_array};
use super::parse::{Block, encode_hex};
use super::{KatError, expect_true};
use crate::crypto::CryptoError;
use crate::crypto::kdf::Kdf;
use crate::crypto::keyfile::SymmetricKey;
use crate::crypto::keys::{ArchiveId, FileKey};
use crate::crypto::password::Secret;
use crate::crypto::stanza::{self, Identity};
use crate::format::Reader;
use crate::format::stanza::Stanza;

/// Largest Argon2id memory a stanza vector may ask for, KiB.
const MAX_M_KIB: u64 = 1 << 20;
/// Largest PBKDF2 iteration count a stanza vector may ask for.
const MAX_ITERATIONS: u64 = 10_000_000;

fn crypto(call: &'static str) -> impl Fn(CryptoError) -> KatError {
    move |source| KatError::Crypto { call, source }
}

/// The KDF a password vector names: `kdf = argon2id` with `m_kib`, `t`, `p`, or
/// `kdf = pbkdf2` with `iterations`.
fn kdf_of(v: &Block) -> Result<Kdf, KatError> {
    match v.text("kdf")? {
        "argon2id" => Ok(Kdf::Argon2id {
            m_kib: v.number("m_kib", MAX_M_KIB)? as u32,
            t: v.number("t", 64)? as u32,
            p: v.number("p", 64)? as u32,
        }),
        "pbkdf2" => Ok(Kdf::Pbkdf2 {
            iterations: v.number("iterations", MAX_ITERATIONS)? as u32,
        }),
        _ => Err(KatError::BadValue {
            key: "kdf".to_string(),
            line: v.line,
            expected: "argon2id or pbkdf2",
        }),
    }
}

fn stanza_bytes(stanza: &Stanza) -> Vec<u8> {
    let mut out = Vec::new();
    stanza.write(&mut out);
    out
}

/// Parses the committed `stanza` bytes back through the format parser.
fn parse_stanza(v: &Block) -> Result<Stanza, KatError> {
    let bytes = v.hex("stanza")?;
    let mut reader = Reader::new(&bytes, "stanza");
    Stanza::parse(&mut reader, crate::format::Version::V1).map_err(|_| KatError::BadValue {
        key: "stanza".to_string(),
        line: v.line,
        expected: "a stanza the format parser accepts",
    })
}

/// Password stanza (`crypto::stanza::wrap_password_with_salt`): `password`, the KDF and its
/// costs, `salt`, `file_key`, `archive_id` → the framed `stanza` bytes.
pub(super) fn password_stanza(v: &Block) -> Result<Vec<(&'static str, Vec<u8>)>, KatError> {
    let file_key = FileKey::from_bytes(v.array::<32>("file_key")?);
    let archive_id: ArchiveId = v.array::<16>("archive_id")?;
    let stanza = stanza::wrap_password_with_salt(
        &v.hex("password")?,
        &kdf_of(v)?,
        v.array::<16>("salt")?,
        &file_key,
        &archive_id,
    )
    .map_err(crypto("stanza::wrap_password_with_salt"))?;
    Ok(vec![("stanza", stanza_bytes(&stanza))])
}

/// Key-file stanza (`crypto::stanza::wrap_keyfile`): `key`, `file_key`, `archive_id` → the
/// framed `stanza` bytes.
pub(super) fn keyfile_stanza(v: &Block) -> Result<Vec<(&'static str, Vec<u8>)>, KatError> {
    let key = SymmetricKey::from_bytes(v.array::<32>("key")?);
    let file_key = FileKey::from_bytes(v.array::<32>("file_key")?);
    let stanza = stanza::wrap_keyfile(&key, &file_key, &v.array::<16>("archive_id")?);
    Ok(vec![("stanza", stanza_bytes(&stanza))])
}

/// The committed stanza parses, opens with its password or key to the file key, and does not
/// open with a wrong one or under another archive id. Through the low-level
/// [`stanza::open_stanza`]: the vectors' cheap KDF costs are below the floors a reader's
/// `unwrap` enforces, on purpose (the vectors check the construction, quickly).
pub(super) fn check_opens(v: &Block, identity: Identity, wrong: Identity) -> Result<(), KatError> {
    let stanza = parse_stanza(v)?;
    let archive_id: ArchiveId = v.array::<16>("archive_id")?;
    let file_key = v.array::<32>("file_key")?;
    let open = |identity: &Identity, id: &ArchiveId| {
        stanza::open_stanza(identity, &stanza, id).map_err(crypto("stanza::open_stanza"))
    };
    let opened = open(&identity, &archive_id)?;
    expect_true(
        "the stanza opens to the file key",
        opened.is_some_and(|k| *k.as_bytes() == file_key),
    )?;
    expect_true(
        "a wrong password or key does not open the stanza",
        open(&wrong, &archive_id)?.is_none(),
    )?;
    let mut other_id = archive_id;
    other_id[0] ^= 1;
    expect_true(
        "the stanza does not open under another archive id",
        open(&identity, &other_id)?.is_none(),
    )
}

/// [`check_opens`] for a password vector.
pub(super) fn check_password(v: &Block) -> Result<(), KatError> {
    let password = v.hex("password")?;
    let mut wrong = password.clone();
    wrong.push(b'!');
    check_opens(
        v,
        Identity::Password(Secret::new(password)),
        Identity::Password(Secret::new(wrong)),
    )
}

/// [`check_opens`] for a key-file vector.
pub(super) fn check_keyfile(v: &Block) -> Result<(), KatError> {
    let key = v.array::<32>("key")?;
    let mut wrong = key;
    wrong[31] ^= 1;
    check_opens(
        v,
        Identity::KeyFile(SymmetricKey::from_bytes(key)),
        Identity::KeyFile(SymmetricKey::from_bytes(wrong)),
    )
}

/// The whole `krypta_password_stanza.txt`.
pub(super) fn password_file() -> Result<String, KatError> {
    let mut text = String::from(
        "# krypta password stanzas: fixed password, KDF costs (small, for speed), salt, file key
# and archive id -> exact framed stanza bytes.
# File format: see the top of src/kat/mod.rs. GENERATED by src/kat/golden_stanza.rs; do not
# edit: regenerate with `KRYPTA_REGENERATE_VECTORS=1 cargo test --test kat_golden`.
[set]
name = krypta password stanza
kind = krypta_password_stanza
source = krypta docs/FORMAT.md (stanzas) and src/crypto/stanza.rs: KEK = Argon2id or PBKDF2-HMAC-SHA256 of the password; wrap keys HKDF-SHA256(KEK, archive id, label || kind); AES-256-CTR then HMAC-SHA256 over kind || params || wrapped
section = stanza kinds 1 (argon2id) and 2 (pbkdf2), format version 1
licence = MIT OR Apache-2.0 (krypta)
cite = krypta format v1 (generated)
",
    );
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, u32)]);
    let cases: [Case<'_>; 3] = [
        (
            "argon2id-m64-t1-p1",
            "argon2id",
            &[("m_kib", 64), ("t", 1), ("p", 1)],
        ),
        (
            "argon2id-m256-t2-p2",
            "argon2id",
            &[("m_kib", 256), ("t", 2), ("p", 2)],
        ),
        ("pbkdf2-1000", "pbkdf2", &[("iterations", 1000)]),
    ];
    for (id, kdf, costs) in cases {
        let password = format!("correct horse battery staple / {id}");
        let mut inputs = vec![
            ("id", id.to_string()),
            ("password", encode_hex(password.as_bytes())),
            ("kdf", kdf.to_string()),
        ];
        inputs.extend(costs.iter().map(|(k, n)| (*k, n.to_string())));
        inputs.extend([
            (
                "salt",
                encode_hex(&seeded(&format!("password/{id}/salt"), 16)),
            ),
            (
                "file_key",
                encode_hex(&seeded_array::<32>("password/file-key")),
            ),
            (
                "archive_id",
                encode_hex(&seeded_array::<16>("password/archive-id")),
            ),
        ]);
        let comment = format!(
            "password = \"{password}\" (UTF-8); inputs: seeded(\"password/{id}/salt\", 16), \
             seeded(\"password/file-key\", 32), seeded(\"password/archive-id\", 16)"
        );
        append_vector(&mut text, &comment, "krypta_password_stanza", inputs)?;
    }
    Ok(text)
}

/// The whole `krypta_keyfile_stanza.txt`.
pub(super) fn keyfile_file() -> Result<String, KatError> {
    let mut text = String::from(
        "# krypta key-file stanza: fixed 32-byte key, file key and archive id -> exact framed
# stanza bytes.
# File format: see the top of src/kat/mod.rs. GENERATED by src/kat/golden_stanza.rs; do not
# edit: regenerate with `KRYPTA_REGENERATE_VECTORS=1 cargo test --test kat_golden`.
[set]
name = krypta key-file stanza
kind = krypta_keyfile_stanza
source = krypta docs/FORMAT.md (stanzas) and src/crypto/stanza.rs: KEK = the key file's 32 bytes; wrap keys HKDF-SHA256(KEK, archive id, label || kind); AES-256-CTR then HMAC-SHA256 over kind || wrapped
section = stanza kind 3 (keyfile), format version 1
licence = MIT OR Apache-2.0 (krypta)
cite = krypta format v1 (generated)
",
    );
    for id in ["key-a", "key-b"] {
        let inputs = vec![
            ("id", id.to_string()),
            ("key", encode_hex(&seeded(&format!("keyfile/{id}"), 32))),
            (
                "file_key",
                encode_hex(&seeded_array::<32>("keyfile/file-key")),
            ),
            (
                "archive_id",
                encode_hex(&seeded_array::<16>("keyfile/archive-id")),
            ),
        ];
        let comment = format!(
            "inputs: seeded(\"keyfile/{id}\", 32), seeded(\"keyfile/file-key\", 32), \
             seeded(\"keyfile/archive-id\", 16)"
        );
        append_vector(&mut text, &comment, "krypta_keyfile_stanza", inputs)?;
    }
    Ok(text)
}
