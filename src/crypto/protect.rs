//! Password-protected secret key files (`keygen --box --protect`, `keygen --sign --protect`):
//! the secret key's bytes encrypted under a key derived from a password with Argon2id, with
//! the same parameters, floors and ceilings as a password stanza (`crypto::kdf`).
//!
//! A protected key is key text of its own kind (`KRYPTA-BOX-SECRET-PROTECTED-1-`,
//! `KRYPTA-SIGN-SECRET-PROTECTED-1-`; `crypto::keytext`), so it is told from a plain one and
//! from a key of another kind before any password is asked for. Its payload:
//!
//! ```text
//! u32 memory KiB ‖ u32 iterations ‖ u32 lanes ‖ salt[16] ‖ ciphertext[n] ‖ tag[32]
//! kek       = Argon2id(NFC(password), salt, m, t, p)                 (32 bytes, RFC 9106)
//! enc ‖ mac = HKDF-SHA256(ikm = kek, salt = salt, info = "krypta/v1/protected-key/" ‖ PREFIX, 64)
//! ciphertext = AES-256-CTR(enc, iv = 0¹²⁸)(secret key, n = 96 or 64 bytes)
//! tag       = HMAC-SHA256(mac, PREFIX ‖ m ‖ t ‖ p ‖ salt ‖ ciphertext)
//! ```
//!
//! where PREFIX is the key text prefix (so a box key's ciphertext cannot be passed off as a
//! signing key's). The zero IV is safe for the reason it is in a stanza: each salt gives a
//! fresh key that encrypts exactly one secret. The tag is checked (constant time) before
//! anything is decrypted; a wrong password and a changed byte are the same failure
//! ([`Unprotect::WrongPassword`]) — the key text's checksum already reports damage as such.
//! The parameters are checked against the shared bounds before Argon2id runs, so a crafted
//! key file cannot make krypta allocate 1 TiB.

use zeroize::Zeroizing;

use super::CryptoError;
use super::kdf::Kdf;
use super::keytext::KeyKind;
use super::password::{Secret, for_new_archive};
use super::primitives::{
    aes256_ctr_apply, hkdf_sha256, hmac_sha256, hmac_sha256_verify, random_bytes,
};

/// Bytes of the payload around the secret: parameters (12), salt (16), tag (32).
pub const OVERHEAD: usize = 12 + 16 + 32;

/// Why a protected key did not open.
#[derive(Debug, thiserror::Error)]
pub enum Unprotect {
    /// The password is wrong (or the ciphertext was changed).
    #[error("wrong password for the secret key")]
    WrongPassword,
    /// The stored parameters are outside the bounds, or the KDF failed.
    #[error("{0}")]
    Crypto(CryptoError),
}

/// The protected kind of a secret key kind, and back.
pub fn protected_kind(plain: KeyKind) -> Option<KeyKind> {
    match plain {
        KeyKind::BoxSecret => Some(KeyKind::BoxSecretProtected),
        KeyKind::SignSecret => Some(KeyKind::SignSecretProtected),
        _ => None,
    }
}

fn keys(kek: &[u8], salt: &[u8; 16], kind: KeyKind) -> Result<Zeroizing<[u8; 64]>, CryptoError> {
    let mut info = b"krypta/v1/protected-key/".to_vec();
    info.extend_from_slice(kind.prefix().as_bytes());
    let mut okm = Zeroizing::new([0u8; 64]);
    hkdf_sha256(kek, salt, &info, &mut okm[..])?;
    Ok(okm)
}

/// Encrypts the plain secret key `secret` (of the plain kind whose protected kind is `kind`)
/// under `password` with Argon2id `kdf` (bounds checked). Returns the payload of key text of
/// `kind`.
pub fn protect(
    kind: KeyKind,
    secret: &[u8],
    password: &Secret,
    kdf: Kdf,
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    let Kdf::Argon2id { m_kib, t, p } = kdf else {
        return Err(CryptoError::BadKeyText {
            problem: "protected keys use Argon2id".into(),
        });
    };
    kdf.check_bounds()?;
    let mut salt = [0u8; 16];
    random_bytes(&mut salt)?;
    let kek = kdf.derive_kek(for_new_archive(password).as_bytes(), &salt)?;
    let okm = keys(&kek[..], &salt, kind)?;
    let mut out = Zeroizing::new(Vec::with_capacity(OVERHEAD + secret.len()));
    for v in [m_kib, t, p] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&salt);
    let at = out.len();
    out.extend_from_slice(secret);
    let enc: [u8; 32] = okm[..32].try_into().expect("32");
    aes256_ctr_apply(&enc, &[0u8; 16], &mut out[at..]);
    let tag = hmac_sha256(&okm[32..], &[kind.prefix().as_bytes(), &out[..]]);
    out.extend_from_slice(&tag);
    Ok(out)
}

/// The Argon2id parameters stored in a protected key's payload.
pub fn parameters(payload: &[u8]) -> Option<Kdf> {
    let u = |i: usize| Some(u32::from_le_bytes(payload.get(i..i + 4)?.try_into().ok()?));
    Some(Kdf::Argon2id {
        m_kib: u(0)?,
        t: u(4)?,
        p: u(8)?,
    })
}

/// Decrypts the payload of key text of protected `kind` with `password`: the parameters are
/// checked against the bounds first, the tag before anything is decrypted.
pub fn unprotect(
    kind: KeyKind,
    payload: &[u8],
    password: &Secret,
) -> Result<Zeroizing<Vec<u8>>, Unprotect> {
    if payload.len() <= OVERHEAD {
        return Err(Unprotect::WrongPassword);
    }
    let kdf = parameters(payload).ok_or(Unprotect::WrongPassword)?;
    kdf.check_bounds().map_err(Unprotect::Crypto)?;
    let salt: [u8; 16] = payload[12..28].try_into().expect("16");
    let (body, tag) = payload.split_at(payload.len() - 32);
    let kek = kdf
        .derive_kek(for_new_archive(password).as_bytes(), &salt)
        .map_err(Unprotect::Crypto)?;
    let okm = keys(&kek[..], &salt, kind).map_err(Unprotect::Crypto)?;
    if !hmac_sha256_verify(&okm[32..], &[kind.prefix().as_bytes(), body], tag) {
        return Err(Unprotect::WrongPassword);
    }
    let mut secret = Zeroizing::new(body[28..].to_vec());
    let enc: [u8; 32] = okm[..32].try_into().expect("32");
    aes256_ctr_apply(&enc, &[0u8; 16], &mut secret);
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAST: Kdf = Kdf::Argon2id {
        m_kib: 8192,
        t: 1,
        p: 1,
    };

    #[test]
    fn a_protected_key_opens_with_its_password_only() {
        let pw = Secret::from("correct horse");
        let payload = protect(KeyKind::SignSecretProtected, &[7; 64], &pw, FAST).unwrap();
        assert_eq!(payload.len(), OVERHEAD + 64);
        assert_eq!(&payload[..12], &[0, 32, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
        assert_ne!(&payload[28..92], &[7; 64][..]);
        assert_eq!(
            &unprotect(KeyKind::SignSecretProtected, &payload, &pw).unwrap()[..],
            &[7; 64][..]
        );
        assert!(matches!(
            unprotect(
                KeyKind::SignSecretProtected,
                &payload,
                &Secret::from("wrong")
            ),
            Err(Unprotect::WrongPassword)
        ));
        // Bound to its kind: the same payload is not a box key.
        assert!(matches!(
            unprotect(KeyKind::BoxSecretProtected, &payload, &pw),
            Err(Unprotect::WrongPassword)
        ));
        // A changed ciphertext byte fails the tag.
        let mut bad = payload.clone();
        bad[40] ^= 1;
        assert!(matches!(
            unprotect(KeyKind::SignSecretProtected, &bad, &pw),
            Err(Unprotect::WrongPassword)
        ));
    }

    #[test]
    fn parameters_beyond_the_ceiling_are_refused_before_the_kdf() {
        let pw = Secret::from("pw");
        let mut payload = protect(KeyKind::BoxSecretProtected, &[1; 96], &pw, FAST).unwrap();
        payload[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            unprotect(KeyKind::BoxSecretProtected, &payload, &pw),
            Err(Unprotect::Crypto(CryptoError::KdfLimit { .. }))
        ));
    }
}
