//! Signing key files: writing a new signer key pair (`NAME`, secret, mode 0600; `NAME.pub`,
//! public) and reading them back, in the typed, checksummed key text of `crypto::keytext`
//! (`KRYPTA-SIGN-SECRET-1-…`, `KRYPTA-SIGN-PUBLIC-1-…`), exactly as box keys are
//! (`crypto::boxkey`: same comments, same refusals, same messages naming the file).
//!
//! A signing secret key file holds:
//!
//! ```text
//! # created: 2026-12-01T16:00:00Z
//! # fingerprint: 0a1b2c3d:…
//! KRYPTA-SIGN-SECRET-1-...
//! ```
//!
//! (the public key line is 2672 characters, too long for a useful comment; `keygen --pub -k
//! NAME` prints it), and `NAME.pub` holds the public key line alone.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use zeroize::Zeroizing;

use super::boxkey::{
    INLINE_KEY_PATH, KeyPassword, bad_key, looks_like_key_text, no_key_password, public_key_path,
    read_key_file, read_public_key_text, secret_file_text, secret_payload, write_new,
};
use super::kdf::Kdf;
use super::keytext::{KeyKind, decode, encode};
use super::password::Secret;
use super::sign::{SIGNER_SECRET_LEN, SignerPublic, SignerSecret, fingerprint_hex};
use crate::Error;

/// A fresh signer key pair: the text of its secret key file and the public key.
pub fn new_signing_keypair_text(
    protect: Option<(&Secret, Kdf)>,
) -> Result<(Zeroizing<String>, SignerPublic), Error> {
    let sk = SignerSecret::generate().map_err(|e| Error::Crypto(e.to_string()))?;
    let pk = sk.public();
    let text = secret_file_text(
        KeyKind::SignSecret,
        &sk.to_bytes()[..],
        &format!("# fingerprint: {}\n", fingerprint_hex(&pk.fingerprint())),
        protect,
    )?;
    Ok((text, pk))
}

/// Writes a fresh signer key pair: the secret key to `path` (created new, mode 0600, never
/// overwriting: [`Error::Exists`]) and the public key to `path` + ".pub" (created new). If the
/// public file cannot be written, the new secret file is removed again.
pub fn generate_signing_keypair(
    path: &Path,
    protect: Option<(&Secret, Kdf)>,
) -> Result<SignerPublic, Error> {
    let pub_path = public_key_path(path);
    for p in [path, pub_path.as_path()] {
        if fs::symlink_metadata(p).is_ok() {
            return Err(Error::Exists {
                path: p.to_path_buf(),
            });
        }
    }
    let (secret_text, pk) = new_signing_keypair_text(protect)?;
    write_new(path, 0o600, secret_text.as_bytes())?;
    if let Err(e) = write_new(
        &pub_path,
        0o644,
        format!("{}\n", public_key_text(&pk)).as_bytes(),
    ) {
        let _ = fs::remove_file(path);
        return Err(e);
    }
    Ok(pk)
}

/// The one-line text of a signer public key (no newline).
pub fn public_key_text(pk: &SignerPublic) -> String {
    encode(KeyKind::SignPublic, pk.as_bytes())
}

/// The one-line text of a signing secret key (no newline).
pub fn secret_key_text(sk: &SignerSecret) -> Zeroizing<String> {
    Zeroizing::new(encode(KeyKind::SignSecret, &sk.to_bytes()[..]))
}

/// Reads a signing secret key from the file `path`. Secret key text given inline is refused
/// (it would show in the process list). Errors name the file.
pub fn load_signing_secret(path: &Path) -> Result<SignerSecret, Error> {
    load_signing_secret_with(path, &mut no_key_password)
}

/// [`load_signing_secret`]; a password-protected key (`keygen --sign --protect`) is opened
/// with the password `key_password` gives ([`Error::KeyPassword`] when it is wrong).
pub fn load_signing_secret_with(
    path: &Path,
    key_password: &mut KeyPassword<'_>,
) -> Result<SignerSecret, Error> {
    if looks_like_key_text(path.as_os_str()).is_some() && fs::symlink_metadata(path).is_err() {
        return Err(Error::BadKeyFile {
            path: PathBuf::from(INLINE_KEY_PATH),
            problem: "key text given as an argument; a signing key must be read from a file \
                      (give the path of the key file written by `krypta keygen --sign`)"
                .to_string(),
        });
    }
    let text = read_key_file(path)?;
    let bytes = secret_payload(&text, path, KeyKind::SignSecret, key_password)?;
    let arr: Zeroizing<[u8; SIGNER_SECRET_LEN]> =
        Zeroizing::new(bytes.as_slice().try_into().map_err(|_| Error::BadKeyFile {
            path: path.to_path_buf(),
            problem: "wrong secret key length".into(),
        })?);
    Ok(SignerSecret::from_bytes(&arr))
}

/// Reads a signer public key from `path_or_text`: the key text itself (an argument starting
/// with "KRYPTA-" that is not an existing file) or the path of a file holding it (`NAME.pub`),
/// used as its bytes.
pub fn load_signer_public(path_or_text: impl AsRef<OsStr>) -> Result<SignerPublic, Error> {
    let (shown, text) = read_public_key_text(Path::new(path_or_text.as_ref()))?;
    let bytes = decode(&text, KeyKind::SignPublic).map_err(|e| bad_key(shown, e))?;
    SignerPublic::from_bytes(&bytes).map_err(|e| bad_key(shown, e))
}
