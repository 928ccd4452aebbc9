//! Recipient stanzas: wrapping the file key once per recipient (password through Argon2id or
//! PBKDF2, symmetric key file) and unwrapping it with the identities a reader holds.
//!
//! Every stanza kind shares one wrap construction ([`seal_file_key`]): from a 32-byte
//! key-encryption key (KEK),
//!
//! ```text
//! enc ‖ mac = HKDF-SHA256(ikm = KEK, salt = archive_id, info = "krypta/v1/wrap/" ‖ kind name)   64 bytes
//! wrapped   = AES-256-CTR(enc, IV = 0^16)(file key)                                          32 bytes
//! tag       = HMAC-SHA256(mac, Stanza::params() ‖ wrapped)                                   32 bytes
//! ```
//!
//! with kind names `argon2id`, `pbkdf2`, `keyfile`, `pq-box`, and `Stanza::params()` = the kind
//! code followed by the stanza's parameter bytes (KDF costs and salt; KEM ciphertext and
//! ephemeral key). A fixed IV is safe because each `enc` key encrypts exactly one 32-byte
//! message: password KEKs are salted with a fresh random 16-byte salt per stanza, a key
//! file's KEK is separated per archive by the random archive id, and a pq-box KEK is fresh
//! per encapsulation. The archive id in the HKDF salt binds a stanza to its archive; the tag
//! covers the kind, every parameter and the wrapped key, and is checked (constant time)
//! before anything is decrypted.
//!
//! The KEK is: Argon2id(password, salt, m, t, p) or PBKDF2-HMAC-SHA256(password, salt, c)
//! (see [`super::kdf`]), or the key file's 32 bytes as they are. The password given to the KDF
//! is its NFC form when it is UTF-8 ([`super::password::for_new_archive`]); readers of format
//! 1 also try the bytes as given and the NFD form ([`super::password::kdf_inputs`]).
//! [`wrap_password_with_salt`] and [`open_stanza`] take the KDF input as it is (the golden
//! vectors call them).

use crate::format::stanza::{SALT_LEN, Stanza, TAG_LEN, WRAPPED_LEN, kind};

use super::CryptoError;
use super::argon2_memory::Argon2Memory;
pub use super::kdf::Kdf;
use super::keyfile::SymmetricKey;
use super::keys::{ArchiveId, FileKey};
use super::password::Secret;
use super::primitives::{
    aes256_ctr_apply, hkdf_sha256_array, hmac_sha256, hmac_sha256_verify, random_bytes,
};

/// Prefix of the HKDF info of the wrap keys; the stanza's kind name follows.
pub const WRAP_INFO_PREFIX: &[u8] = b"krypta/v1/wrap/";

/// Someone an archive is encrypted to: one stanza is written per recipient.
#[derive(Debug, Clone)]
pub enum Recipient {
    /// A password, stretched with `kdf` (non-empty; `kdf` within the writer bounds).
    Password {
        /// The password bytes (see [`super::password`]).
        password: Secret,
        /// KDF and costs.
        kdf: Kdf,
    },
    /// A symmetric key file (`krypta keygen`).
    KeyFile(SymmetricKey),
    /// A box public key (`krypta keygen --box`): one `pq-box` stanza (ML-KEM-768 + X25519).
    PqBox(super::pqbox::PublicKey),
}

/// Something a reader holds that may open a stanza.
#[derive(Debug, Clone)]
pub enum Identity {
    /// A password: tried on every `argon2id` and `pbkdf2` stanza.
    Password(Secret),
    /// A symmetric key: tried on every `keyfile` stanza.
    KeyFile(SymmetricKey),
    /// A box secret key: tried on every `pq-box` stanza.
    PqBox(super::pqbox::SecretKey),
    /// Ask for a password on the terminal, only if the archive has a password stanza and no
    /// other identity opened it (`krypta x` run by a person with no key option given, or
    /// `-p`); the [`PromptFor`](super::password::PromptFor) names the password asked for
    /// (the archive's, a delta base's) in the refusal when there is no terminal.
    Prompt(super::password::PromptFor),
}

impl Identity {
    /// True for [`Identity::Prompt`]: it is no key the caller gave (so it does not make an
    /// unencrypted archive an error).
    pub fn is_prompt(&self) -> bool {
        matches!(self, Identity::Prompt(_))
    }
}

/// The kind name used in the wrap HKDF info.
fn kind_name(kind_code: u8) -> &'static [u8] {
    match kind_code {
        kind::ARGON2ID => b"argon2id",
        kind::PBKDF2 => b"pbkdf2",
        kind::KEYFILE => b"keyfile",
        kind::PQ_BOX => b"pq-box",
        _ => b"unknown",
    }
}

/// The (enc, mac) wrap keys of one stanza, 64 bytes.
fn wrap_keys(
    kek: &[u8; 32],
    archive_id: &ArchiveId,
    kind_code: u8,
) -> zeroize::Zeroizing<[u8; 64]> {
    let name = kind_name(kind_code);
    let mut info = Vec::with_capacity(WRAP_INFO_PREFIX.len() + name.len());
    info.extend_from_slice(WRAP_INFO_PREFIX);
    info.extend_from_slice(name);
    hkdf_sha256_array::<64>(kek, archive_id, &info)
}

/// Wraps `file_key` under `kek` for the stanza of kind `kind_code` whose `params` are
/// `Stanza::params()` (kind code first). Returns `(wrapped, tag)`, 32 bytes each. See the
/// module doc for the construction; the pq-box stanza uses it too.
pub fn seal_file_key(
    kek: &[u8; 32],
    archive_id: &ArchiveId,
    kind_code: u8,
    params: &[u8],
    file_key: &FileKey,
) -> ([u8; WRAPPED_LEN], [u8; TAG_LEN]) {
    let keys = wrap_keys(kek, archive_id, kind_code);
    let (enc, mac) = keys.split_at(32);
    let mut enc_key = zeroize::Zeroizing::new([0u8; 32]);
    enc_key.copy_from_slice(enc);
    let mut wrapped = *file_key.as_bytes();
    aes256_ctr_apply(&enc_key, &[0; 16], &mut wrapped);
    let tag = hmac_sha256(mac, &[params, &wrapped]);
    (wrapped, tag)
}

/// Checks `tag` (constant time) and, only if it verifies, unwraps the file key. None for a
/// wrong KEK, another archive id, or any changed parameter, wrapped byte or tag byte.
pub fn open_file_key(
    kek: &[u8; 32],
    archive_id: &ArchiveId,
    kind_code: u8,
    params: &[u8],
    wrapped: &[u8; WRAPPED_LEN],
    tag: &[u8; TAG_LEN],
) -> Option<FileKey> {
    let keys = wrap_keys(kek, archive_id, kind_code);
    let (enc, mac) = keys.split_at(32);
    if !hmac_sha256_verify(mac, &[params, wrapped], tag) {
        return None;
    }
    let mut enc_key = zeroize::Zeroizing::new([0u8; 32]);
    enc_key.copy_from_slice(enc);
    let mut key = zeroize::Zeroizing::new(*wrapped);
    aes256_ctr_apply(&enc_key, &[0; 16], &mut key[..]);
    Some(FileKey::from_bytes(*key))
}

/// Fills in the `wrapped` and `tag` fields of `stanza` by sealing `file_key` under `kek`.
fn sealed(
    mut stanza: Stanza,
    kek: &[u8; 32],
    archive_id: &ArchiveId,
    file_key: &FileKey,
) -> Stanza {
    let (w, t) = seal_file_key(kek, archive_id, stanza.kind(), &stanza.params(), file_key);
    match &mut stanza {
        Stanza::Argon2id { wrapped, tag, .. }
        | Stanza::Pbkdf2 { wrapped, tag, .. }
        | Stanza::KeyFile { wrapped, tag }
        | Stanza::PqBox { wrapped, tag, .. } => {
            *wrapped = w;
            *tag = t;
        }
        // Never built by a writer: only parsed from a format-2 header.
        Stanza::Unknown { .. } => {}
    }
    stanza
}

/// Writes the stanza for one recipient. Passwords get a fresh random 16-byte salt and must
/// be non-empty ([`CryptoError::EmptyPassword`]) with KDF costs within the writer bounds
/// ([`Kdf::check_bounds`]).
pub fn wrap(
    recipient: &Recipient,
    file_key: &FileKey,
    archive_id: &ArchiveId,
) -> Result<Stanza, CryptoError> {
    match recipient {
        Recipient::Password { password, kdf } => {
            kdf.check_bounds()?;
            let mut salt = [0u8; SALT_LEN];
            random_bytes(&mut salt)?;
            let input = super::password::for_new_archive(password);
            wrap_password_with_salt(input.as_bytes(), kdf, salt, file_key, archive_id)
        }
        Recipient::KeyFile(key) => Ok(wrap_keyfile(key, file_key, archive_id)),
        Recipient::PqBox(pk) => super::pqbox::seal(pk, file_key, archive_id),
    }
}

/// The deterministic form of a password stanza, for golden vectors: `salt` is given. Refuses
/// an empty password and parameters the KDF primitive cannot run ([`Kdf::check_limits`]),
/// but not the floors of [`Kdf::check_bounds`], so vectors can use cheap costs (such a
/// stanza opens only through [`open_stanza`], never through a reader's [`unwrap`]).
pub fn wrap_password_with_salt(
    password: &[u8],
    kdf: &Kdf,
    salt: [u8; SALT_LEN],
    file_key: &FileKey,
    archive_id: &ArchiveId,
) -> Result<Stanza, CryptoError> {
    if password.is_empty() {
        return Err(CryptoError::EmptyPassword);
    }
    let kek = kdf.derive_kek(password, &salt)?;
    let blank = [0u8; 32];
    let stanza = match *kdf {
        Kdf::Argon2id { m_kib, t, p } => Stanza::Argon2id {
            m_kib,
            t,
            p,
            salt,
            wrapped: blank,
            tag: blank,
        },
        Kdf::Pbkdf2 { iterations } => Stanza::Pbkdf2 {
            iterations,
            salt,
            wrapped: blank,
            tag: blank,
        },
    };
    Ok(sealed(stanza, &kek, archive_id, file_key))
}

/// The `keyfile` stanza for `key` (deterministic: no salt, the archive id separates archives).
pub fn wrap_keyfile(key: &SymmetricKey, file_key: &FileKey, archive_id: &ArchiveId) -> Stanza {
    let blank = [0u8; 32];
    sealed(
        Stanza::KeyFile {
            wrapped: blank,
            tag: blank,
        },
        key.as_bytes(),
        archive_id,
        file_key,
    )
}

/// The KDF and salt of a password stanza; None for other kinds.
pub fn stanza_kdf(stanza: &Stanza) -> Option<(Kdf, [u8; SALT_LEN])> {
    match *stanza {
        Stanza::Argon2id {
            m_kib, t, p, salt, ..
        } => Some((Kdf::Argon2id { m_kib, t, p }, salt)),
        Stanza::Pbkdf2 {
            iterations, salt, ..
        } => Some((Kdf::Pbkdf2 { iterations }, salt)),
        Stanza::KeyFile { .. } | Stanza::PqBox { .. } | Stanza::Unknown { .. } => None,
    }
}

/// Tries one identity on one stanza: `Ok(None)` when the kinds do not match or it does not
/// open. The low-level open of the known-answer vectors: password stanzas get only
/// [`Kdf::check_limits`] (what the KDF needs to run), not the reader's bounds; readers call
/// [`unwrap`].
pub fn open_stanza(
    identity: &Identity,
    stanza: &Stanza,
    archive_id: &ArchiveId,
) -> Result<Option<FileKey>, CryptoError> {
    open_stanza_in(&mut Argon2Memory::new(), identity, stanza, archive_id)
}

/// [`open_stanza`] with a password stanza's Argon2id matrix in `memory`, reused by the next
/// call ([`unwrap_versioned`] tries every password form on one matrix).
fn open_stanza_in(
    memory: &mut Argon2Memory,
    identity: &Identity,
    stanza: &Stanza,
    archive_id: &ArchiveId,
) -> Result<Option<FileKey>, CryptoError> {
    Ok(
        open_stanza_among(memory, identity, stanza, std::slice::from_ref(archive_id))?
            .map(|(key, _)| key),
    )
}

/// [`open_stanza_in`] with the wrap tried under each id of `ids` in turn (the KEK is
/// derived once: it does not depend on the id, §3.2): the file key and the index of the id
/// it opened with.
fn open_stanza_among(
    memory: &mut Argon2Memory,
    identity: &Identity,
    stanza: &Stanza,
    ids: &[ArchiveId],
) -> Result<Option<(FileKey, usize)>, CryptoError> {
    let (wrapped, tag) = match stanza {
        Stanza::Argon2id { wrapped, tag, .. }
        | Stanza::Pbkdf2 { wrapped, tag, .. }
        | Stanza::KeyFile { wrapped, tag }
        | Stanza::PqBox { wrapped, tag, .. } => (wrapped, tag),
        // A kind this build does not know is skipped (format 2), as age does.
        Stanza::Unknown { .. } => return Ok(None),
    };
    let kek = match (identity, stanza) {
        (Identity::Password(pw), Stanza::Argon2id { .. } | Stanza::Pbkdf2 { .. }) => {
            let Some((kdf, salt)) = stanza_kdf(stanza) else {
                return Ok(None);
            };
            kdf.derive_kek_in(memory, pw.as_bytes(), &salt)?
        }
        (Identity::PqBox(sk), Stanza::PqBox { .. }) => match super::pqbox::kek(sk, stanza) {
            Some(kek) => kek,
            None => return Ok(None),
        },
        (Identity::KeyFile(key), Stanza::KeyFile { .. }) => {
            zeroize::Zeroizing::new(*key.as_bytes())
        }
        _ => return Ok(None),
    };
    let params = stanza.params();
    Ok(ids.iter().enumerate().find_map(|(i, id)| {
        open_file_key(&kek, id, stanza.kind(), &params, wrapped, tag).map(|key| (key, i))
    }))
}

/// Recovers the file key: what a reader calls with the identities it holds.
///
/// 1. The stanza set must follow the shared rules (`format::stanza::check_stanza_set`: at
///    most 64 stanzas, at most one password stanza), else [`CryptoError::StanzaSet`].
/// 2. Key files and box keys are tried first, each against every stanza of its kind, in the
///    order given; they never look at a password stanza, so a password stanza's parameters
///    are neither checked nor run when one of them opens the archive.
/// 3. Only then, if a password was given, the password stanza's parameters are checked
///    against the bounds writers and readers share ([`Kdf::check_bounds`]:
///    [`CryptoError::KdfLimit`] above a ceiling, [`CryptoError::KdfTooWeak`] below a floor),
///    before its KDF runs, and each password is tried on it.
///
/// [`CryptoError::NoStanzaOpened`] when nothing opens — the same for a wrong password, a
/// wrong key and a tampered stanza.
///
/// Passwords are tried as [`super::password::kdf_inputs`] says for the current format
/// version; [`unwrap_versioned`] takes the archive's.
pub fn unwrap(
    identities: &[Identity],
    stanzas: &[Stanza],
    archive_id: &ArchiveId,
) -> Result<FileKey, CryptoError> {
    unwrap_versioned(
        identities,
        stanzas,
        archive_id,
        crate::format::header::VERSION,
    )
}

/// [`unwrap`] for an archive of `format_version`: each password is tried in the forms
/// [`super::password::kdf_inputs`] gives for it (NFC; for format 1 also the bytes as given
/// and NFD), each form once against the password stanza. An [`Identity::Prompt`] asks on the
/// terminal when the password stanza is reached ([`CryptoError::Prompt`] if it cannot).
pub fn unwrap_versioned(
    identities: &[Identity],
    stanzas: &[Stanza],
    archive_id: &ArchiveId,
    format_version: u16,
) -> Result<FileKey, CryptoError> {
    unwrap_among(
        identities,
        stanzas,
        std::slice::from_ref(archive_id),
        format_version,
    )
    .map(|(key, _)| key)
}

/// [`unwrap_versioned`] with each stanza tried under each id of `ids` (in order, the KDF run
/// once per password form: the KEK does not depend on the id), for a reader that suspects
/// a flipped bit in the header's id (`archive::reader::header_fix`): the file key and the
/// index in `ids` of the id it opened with.
pub fn unwrap_among(
    identities: &[Identity],
    stanzas: &[Stanza],
    ids: &[ArchiveId],
    format_version: u16,
) -> Result<(FileKey, usize), CryptoError> {
    crate::format::stanza::check_stanza_set(stanzas).map_err(CryptoError::StanzaSet)?;
    let is_password = |i: &&Identity| matches!(i, Identity::Password(_) | Identity::Prompt(_));
    for identity in identities.iter().filter(|i| !is_password(i)) {
        for stanza in stanzas {
            if let Some(found) = open_stanza_among(&mut Argon2Memory::new(), identity, stanza, ids)?
            {
                return Ok(found);
            }
        }
    }
    let password_stanza = stanzas.iter().find_map(|s| stanza_kdf(s).map(|k| (s, k.0)));
    if let Some((stanza, kdf)) = password_stanza
        && identities.iter().any(|i| is_password(&i))
    {
        kdf.check_bounds()?;
        // One matrix for every KDF run below, unmapped when this returns.
        let mut memory = Argon2Memory::new();
        for identity in identities.iter().filter(is_password) {
            let given = match identity {
                Identity::Password(pw) => pw.clone(),
                Identity::Prompt(what) => super::password::read_password(
                    &super::password::PasswordSource::Prompt(*what),
                    false,
                )
                .map_err(|e| CryptoError::Prompt(e.to_string()))?,
                _ => continue,
            };
            for input in super::password::kdf_inputs(&given, format_version) {
                let id = Identity::Password(input);
                if let Some(found) = open_stanza_among(&mut memory, &id, stanza, ids)? {
                    return Ok(found);
                }
            }
        }
    }
    Err(CryptoError::NoStanzaOpened)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: ArchiveId = [0x42; 16];
    const CHEAP: Kdf = Kdf::Argon2id {
        m_kib: 64,
        t: 1,
        p: 1,
    };

    #[test]
    fn seal_file_key_is_the_documented_construction() {
        let fk = FileKey::from_bytes([0x33; 32]);
        let kek = [0x44; 32];
        let params = [kind::KEYFILE];
        let (wrapped, tag) = seal_file_key(&kek, &ID, kind::KEYFILE, &params, &fk);
        let mut keys = [0u8; 64];
        crate::crypto::primitives::hkdf_sha256(&kek, &ID, b"krypta/v1/wrap/keyfile", &mut keys)
            .unwrap();
        let mut expect = [0x33; 32];
        aes256_ctr_apply(keys[..32].try_into().unwrap(), &[0; 16], &mut expect);
        assert_eq!(wrapped, expect);
        assert_eq!(tag, hmac_sha256(&keys[32..], &[&params, &wrapped]));
        let opened = open_file_key(&kek, &ID, kind::KEYFILE, &params, &wrapped, &tag).unwrap();
        assert_eq!(opened.as_bytes(), &[0x33; 32]);
    }

    #[test]
    fn open_file_key_refuses_other_kind_params_archive_or_kek() {
        let fk = FileKey::from_bytes([1; 32]);
        let kek = [2; 32];
        let params = [kind::PQ_BOX, 9, 9];
        let (w, t) = seal_file_key(&kek, &ID, kind::PQ_BOX, &params, &fk);
        assert!(open_file_key(&kek, &ID, kind::PQ_BOX, &params, &w, &t).is_some());
        assert!(open_file_key(&kek, &ID, kind::KEYFILE, &params, &w, &t).is_none());
        assert!(open_file_key(&kek, &ID, kind::PQ_BOX, &[kind::PQ_BOX, 9, 8], &w, &t).is_none());
        assert!(open_file_key(&kek, &[0; 16], kind::PQ_BOX, &params, &w, &t).is_none());
        assert!(open_file_key(&[3; 32], &ID, kind::PQ_BOX, &params, &w, &t).is_none());
    }

    #[test]
    fn password_stanza_is_deterministic_for_a_given_salt() {
        let fk = FileKey::from_bytes([7; 32]);
        let a = wrap_password_with_salt(b"pw", &CHEAP, [1; 16], &fk, &ID).unwrap();
        let b = wrap_password_with_salt(b"pw", &CHEAP, [1; 16], &fk, &ID).unwrap();
        assert_eq!(a, b);
        let c = wrap_password_with_salt(b"pw", &CHEAP, [2; 16], &fk, &ID).unwrap();
        assert_ne!(a, c);
        let Stanza::Argon2id {
            m_kib, t, p, salt, ..
        } = a
        else {
            panic!("not argon2id: {a:?}")
        };
        assert_eq!((m_kib, t, p, salt), (64, 1, 1, [1; 16]));
    }

    #[test]
    fn empty_password_and_weak_costs_are_refused_when_writing() {
        let fk = FileKey::from_bytes([7; 32]);
        assert!(matches!(
            wrap_password_with_salt(b"", &CHEAP, [1; 16], &fk, &ID),
            Err(CryptoError::EmptyPassword)
        ));
        let r = Recipient::Password {
            password: Secret::from("pw"),
            kdf: CHEAP,
        };
        assert!(matches!(
            wrap(&r, &fk, &ID),
            Err(CryptoError::KdfTooWeak {
                value: 64,
                min: 8192,
                ..
            })
        ));
    }
}
