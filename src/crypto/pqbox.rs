//! The `pq-box` recipient: box key pairs and the hybrid ML-KEM-768 (FIPS 203) + X25519
//! (RFC 7748) sealed box that wraps an archive's file key to a public key.
//!
//! Sealing, for a recipient public key `(ek, pk_x)`:
//!
//! 1. `(ct, ss_k) = ML-KEM-768.Encaps_internal(ek, m)` with a fresh random 32-byte `m`
//!    (FIPS 203 Algorithm 17; `ek` passed the §7.2 input check when it was parsed);
//! 2. `eph = X25519(e, 9)`, `ss_x = X25519(e, pk_x)` with a fresh random ephemeral scalar `e`
//!    (RFC 7748 §5, §6.1); an all-zero `ss_x` (a low-order `pk_x`) is refused;
//! 3. `kek = HKDF-SHA256(salt = "", ikm = ss_k || ss_x,
//!    info = "krypta/v1/pq-box/kek/mlkem768x25519" || ct || eph || pk_x)` (RFC 5869 §2.2–2.3),
//!    32 bytes;
//! 4. the file key is wrapped under `kek` by the shared encrypt-then-MAC construction
//!    [`stanza::seal_file_key`](super::stanza::seal_file_key), whose tag covers
//!    `Stanza::params()` = `4 || ct || eph` and whose keys are bound to the archive id.
//!
//! Opening recomputes `ss_k` by decapsulation (implicit rejection: a tampered `ct` yields an
//! unrelated secret, so the tag check fails) and `ss_x` from the secret scalar; any failure
//! returns `None`. The stanza carries no recipient identifier: a reader tries each of its
//! identities against each `pq-box` stanza. `docs/SECURITY.md` ("pq-box") explains why the
//! key-encryption key stays secret while either ML-KEM-768 or X25519 holds.

use ml_kem::array::Array;
// The expanded (2400-byte) decapsulation key form is deprecated in `ml-kem` 0.3 in favour of
// seeds; krypta stores seeds and uses the expanded form only for the FIPS 203 KAT hooks below.
#[allow(deprecated)]
use ml_kem::ExpandedKeyEncoding;
use ml_kem::{B32, Decapsulate, DecapsulationKey768, EncapsulationKey768, KeyExport, Seed};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use crate::format::stanza::{MLKEM768_CT_LEN, Stanza, TAG_LEN, WRAPPED_LEN, X25519_LEN, kind};

use super::CryptoError;
use super::keys::{ArchiveId, FileKey};
use super::primitives::{hkdf_sha256_array, random_bytes};
use super::stanza::{open_file_key, seal_file_key};

/// Length of a box secret key, bytes: ML-KEM-768 seed `d || z` (64, FIPS 203 §7.1) followed by
/// the X25519 secret scalar (32, RFC 7748 §5, stored unclamped).
pub const SECRET_KEY_LEN: usize = 96;
/// Length of a box public key, bytes: ML-KEM-768 encapsulation key (1184, FIPS 203 Table 3)
/// followed by the X25519 public key (32, RFC 7748 §5).
pub const PUBLIC_KEY_LEN: usize = MLKEM768_EK_LEN + X25519_LEN;
/// ML-KEM-768 seed length `d || z`, bytes (the two random 32-byte values of FIPS 203
/// Algorithm 19, §7.1).
pub const MLKEM768_SEED_LEN: usize = 64;
/// ML-KEM-768 encapsulation key length, bytes (FIPS 203 Table 3: 384·k + 32, k = 3).
pub const MLKEM768_EK_LEN: usize = 1184;
/// ML-KEM-768 expanded decapsulation key length, bytes (FIPS 203 Table 3: 768·k + 96).
pub const MLKEM768_DK_LEN: usize = 2400;
/// Body length of a `pq-box` stanza, bytes: ciphertext 1088 + ephemeral 32 + wrapped 32 + tag 32.
pub const STANZA_BODY_LEN: usize = MLKEM768_CT_LEN + X25519_LEN + WRAPPED_LEN + TAG_LEN;
/// The versioned domain label that starts the HKDF `info` of the key-encryption key.
pub const KEK_LABEL: &[u8] = b"krypta/v1/pq-box/kek/mlkem768x25519";

/// The X25519 base point `u = 9` (RFC 7748 §4.1).
const X25519_BASE: [u8; 32] = x25519_dalek::X25519_BASEPOINT_BYTES;

/// A box secret key: the ML-KEM-768 seed `d || z` and the X25519 secret scalar, with the
/// expanded ML-KEM decapsulation key and both public halves cached. Every secret field is
/// zeroized on drop (the `ml-kem` crate zeroizes its decapsulation key itself).
#[derive(Clone)]
pub struct SecretKey {
    seed: Zeroizing<[u8; MLKEM768_SEED_LEN]>,
    x25519: Zeroizing<[u8; X25519_LEN]>,
    dk: Box<DecapsulationKey768>,
    x25519_public: [u8; X25519_LEN],
}

/// A box public key: the ML-KEM-768 encapsulation key (1184 bytes, already passed the FIPS 203
/// §7.2 modulus check) and the recipient's X25519 public key (32 bytes).
#[derive(Clone)]
pub struct PublicKey {
    ek: Box<EncapsulationKey768>,
    ek_bytes: Box<[u8; MLKEM768_EK_LEN]>,
    x25519: [u8; X25519_LEN],
}

impl SecretKey {
    /// A fresh key pair from the OS random source (96 random bytes).
    pub fn generate() -> Result<SecretKey, CryptoError> {
        let mut bytes = Zeroizing::new([0u8; SECRET_KEY_LEN]);
        random_bytes(&mut bytes[..])?;
        Ok(SecretKey::from_bytes(&bytes))
    }

    /// The key from its 96-byte form `d || z || x25519_secret`. Every 96-byte string is a valid
    /// key (FIPS 203 key generation from a seed cannot fail; X25519 clamps the scalar).
    pub fn from_bytes(bytes: &[u8; SECRET_KEY_LEN]) -> SecretKey {
        let mut seed = Zeroizing::new([0u8; MLKEM768_SEED_LEN]);
        seed.copy_from_slice(&bytes[..MLKEM768_SEED_LEN]);
        let mut x = Zeroizing::new([0u8; X25519_LEN]);
        x.copy_from_slice(&bytes[MLKEM768_SEED_LEN..]);
        let dk = Box::new(dk_from_seed(&seed));
        let x25519_public = x25519(&x, &X25519_BASE);
        SecretKey {
            seed,
            x25519: x,
            dk,
            x25519_public,
        }
    }

    /// The 96-byte form `d || z || x25519_secret`, zeroized when dropped.
    pub fn to_bytes(&self) -> Zeroizing<[u8; SECRET_KEY_LEN]> {
        let mut out = Zeroizing::new([0u8; SECRET_KEY_LEN]);
        out[..MLKEM768_SEED_LEN].copy_from_slice(&self.seed[..]);
        out[MLKEM768_SEED_LEN..].copy_from_slice(&self.x25519[..]);
        out
    }

    /// The matching public key (encapsulation key from FIPS 203 Algorithm 16, `X25519(x, 9)`).
    pub fn public_key(&self) -> PublicKey {
        let ek = self.dk.encapsulation_key().clone();
        let mut ek_bytes = Box::new([0u8; MLKEM768_EK_LEN]);
        ek_bytes.copy_from_slice(ek.to_bytes().as_slice());
        PublicKey {
            ek: Box::new(ek),
            ek_bytes,
            x25519: self.x25519_public,
        }
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey { .. }")
    }
}

impl PublicKey {
    /// Parses the 1216-byte form `ek || x25519_public`. Errors on a wrong length, an
    /// encapsulation key that fails the FIPS 203 §7.2 modulus check (a coefficient ≥ q), or an
    /// X25519 key of small order (every sender would derive the all-zero shared secret).
    pub fn from_bytes(bytes: &[u8]) -> Result<PublicKey, CryptoError> {
        if bytes.len() != PUBLIC_KEY_LEN {
            return Err(CryptoError::BadKeyText {
                problem: format!(
                    "a box public key is {PUBLIC_KEY_LEN} bytes, got {}",
                    bytes.len()
                ),
            });
        }
        let (ek_part, x_part) = bytes.split_at(MLKEM768_EK_LEN);
        let ek = parse_ek(ek_part)?;
        let mut ek_bytes = Box::new([0u8; MLKEM768_EK_LEN]);
        ek_bytes.copy_from_slice(ek_part);
        let mut x = [0u8; X25519_LEN];
        x.copy_from_slice(x_part);
        if is_low_order(&x) {
            return Err(CryptoError::BadKeyText {
                problem: "the X25519 part of this box public key is a low-order point".to_string(),
            });
        }
        Ok(PublicKey {
            ek: Box::new(ek),
            ek_bytes,
            x25519: x,
        })
    }

    /// The 1216-byte form `ek || x25519_public`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(PUBLIC_KEY_LEN);
        out.extend_from_slice(&self.ek_bytes[..]);
        out.extend_from_slice(&self.x25519);
        out
    }

    /// The recipient's X25519 public key (32 bytes).
    pub fn x25519_public(&self) -> &[u8; X25519_LEN] {
        &self.x25519
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.ek_bytes == other.ek_bytes && self.x25519 == other.x25519
    }
}

impl Eq for PublicKey {}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey {{ x25519: ")?;
        for b in self.x25519 {
            write!(f, "{b:02x}")?;
        }
        write!(f, ", mlkem768_ek: {MLKEM768_EK_LEN} bytes }}")
    }
}

/// Seals the file key to `pk` with a random ML-KEM `m` and a random ephemeral X25519 secret
/// (32 bytes each from the OS). Returns a [`Stanza::PqBox`] (1184-byte body, 1192 framed).
pub fn seal(
    pk: &PublicKey,
    file_key: &FileKey,
    archive_id: &ArchiveId,
) -> Result<Stanza, CryptoError> {
    let mut m = Zeroizing::new([0u8; 32]);
    random_bytes(&mut m[..])?;
    let mut eph = Zeroizing::new([0u8; 32]);
    random_bytes(&mut eph[..])?;
    seal_deterministic(pk, file_key, archive_id, &m, &eph)
}

/// Deterministic form of [`seal`] for golden vectors: the ML-KEM message `m` (32 bytes,
/// FIPS 203 Algorithm 17) and the ephemeral X25519 secret (32 bytes, clamped by X25519) are
/// given. Errors when the recipient's X25519 key is a low-order point (all-zero shared secret).
pub fn seal_deterministic(
    pk: &PublicKey,
    file_key: &FileKey,
    archive_id: &ArchiveId,
    m: &[u8; 32],
    eph_secret: &[u8; 32],
) -> Result<Stanza, CryptoError> {
    let (ct, ss_k) = encaps(&pk.ek, m);
    let ephemeral = x25519(eph_secret, &X25519_BASE);
    let ss_x = Zeroizing::new(x25519(eph_secret, &pk.x25519));
    if is_all_zero(&ss_x) {
        return Err(CryptoError::BadKeyText {
            problem: "the recipient's X25519 key is a low-order point (all-zero shared secret)"
                .to_string(),
        });
    }
    let kek = combine(&ss_k, &ss_x, &ct, &ephemeral, &pk.x25519);
    let mut stanza = Stanza::PqBox {
        mlkem_ct: ct,
        ephemeral,
        wrapped: [0; WRAPPED_LEN],
        tag: [0; TAG_LEN],
    };
    let params = stanza.params();
    let (w, t) = seal_file_key(&kek, archive_id, kind::PQ_BOX, &params, file_key);
    if let Stanza::PqBox { wrapped, tag, .. } = &mut stanza {
        *wrapped = w;
        *tag = t;
    }
    Ok(stanza)
}

/// Some(file key) when this stanza opens with `sk`; None otherwise: another stanza kind, a
/// stanza sealed to another key or archive, any modified byte (ML-KEM implicit rejection
/// yields an unrelated shared secret, so the wrap tag fails), or an ephemeral key giving an
/// all-zero X25519 shared secret. Never panics.
pub fn open(sk: &SecretKey, stanza: &Stanza, archive_id: &ArchiveId) -> Option<FileKey> {
    let Stanza::PqBox { wrapped, tag, .. } = stanza else {
        return None;
    };
    let kek = kek(sk, stanza)?;
    open_file_key(
        &kek,
        archive_id,
        kind::PQ_BOX,
        &stanza.params(),
        wrapped,
        tag,
    )
}

/// The KEK `sk` derives from a pq-box stanza (it does not depend on the archive id), or
/// None for another kind of stanza or an all-zero X25519 secret.
pub(crate) fn kek(sk: &SecretKey, stanza: &Stanza) -> Option<Zeroizing<[u8; 32]>> {
    let Stanza::PqBox {
        mlkem_ct,
        ephemeral,
        ..
    } = stanza
    else {
        return None;
    };
    let ss_k = decaps(&sk.dk, mlkem_ct);
    let ss_x = Zeroizing::new(x25519(&sk.x25519, ephemeral));
    if is_all_zero(&ss_x) {
        return None;
    }
    Some(combine(
        &ss_k,
        &ss_x,
        mlkem_ct,
        ephemeral,
        &sk.x25519_public,
    ))
}

/// The key-encryption key (32 bytes): HKDF-SHA256 (RFC 5869) with an empty salt, IKM
/// `ss_k || ss_x` and info `KEK_LABEL || ct || eph || pk_x` (all fixed lengths, so the
/// concatenation is unambiguous).
fn combine(
    ss_k: &[u8; 32],
    ss_x: &[u8; 32],
    ct: &[u8; MLKEM768_CT_LEN],
    eph: &[u8; X25519_LEN],
    pk_x: &[u8; X25519_LEN],
) -> Zeroizing<[u8; 32]> {
    let mut ikm = Zeroizing::new([0u8; 64]);
    ikm[..32].copy_from_slice(ss_k);
    ikm[32..].copy_from_slice(ss_x);
    let mut info = Vec::with_capacity(KEK_LABEL.len() + MLKEM768_CT_LEN + 2 * X25519_LEN);
    info.extend_from_slice(KEK_LABEL);
    info.extend_from_slice(ct);
    info.extend_from_slice(eph);
    info.extend_from_slice(pk_x);
    hkdf_sha256_array::<32>(&ikm[..], &[], &info)
}

/// Constant-time test for the all-zero X25519 output (RFC 7748 §6.1, "check ... all-zero").
fn is_all_zero(v: &[u8; 32]) -> bool {
    bool::from(v.ct_eq(&[0u8; 32]))
}

/// True when `u` is a point of small order (or encodes one): then `X25519(s, u)` is all-zero
/// for every clamped scalar `s`, since clamping makes `s` a multiple of the cofactor 8 and no
/// clamped `s` (< 2^255) is a multiple of the prime subgroup orders (RFC 7748 §5, §7).
fn is_low_order(u: &[u8; 32]) -> bool {
    is_all_zero(&x25519(&[0x55; 32], u))
}

/// ML-KEM-768 decapsulation key from the seed `d || z` (FIPS 203 Algorithm 16); the
/// intermediate seed copy is zeroized.
fn dk_from_seed(seed: &[u8; MLKEM768_SEED_LEN]) -> DecapsulationKey768 {
    let mut s = Seed::default();
    s.copy_from_slice(seed);
    let dk = DecapsulationKey768::from_seed(s);
    s.zeroize();
    dk
}

/// Parses an encapsulation key with the FIPS 203 §7.2 type and modulus checks.
fn parse_ek(ek: &[u8]) -> Result<EncapsulationKey768, CryptoError> {
    let arr = Array::try_from(ek).map_err(|_| CryptoError::BadKeyText {
        problem: format!(
            "an ML-KEM-768 encapsulation key is {MLKEM768_EK_LEN} bytes, got {}",
            ek.len()
        ),
    })?;
    EncapsulationKey768::new(&arr).map_err(|_| CryptoError::BadKeyText {
        problem: "ML-KEM-768 encapsulation key fails the FIPS 203 §7.2 modulus check".to_string(),
    })
}

/// ML-KEM-768.Encaps_internal(ek, m) (FIPS 203 Algorithm 17): (ciphertext, shared secret).
fn encaps(
    ek: &EncapsulationKey768,
    m: &[u8; 32],
) -> (Box<[u8; MLKEM768_CT_LEN]>, Zeroizing<[u8; 32]>) {
    let mut m = B32::from(*m);
    let (ct, mut ss) = ek.encapsulate_deterministic(&m);
    m.zeroize();
    let mut ct_out = Box::new([0u8; MLKEM768_CT_LEN]);
    ct_out.copy_from_slice(ct.as_slice());
    let mut ss_out = Zeroizing::new([0u8; 32]);
    ss_out.copy_from_slice(ss.as_slice());
    ss.zeroize();
    (ct_out, ss_out)
}

/// ML-KEM-768.Decaps_internal(dk, c) (FIPS 203 Algorithm 18), with implicit rejection.
fn decaps(dk: &DecapsulationKey768, ct: &[u8; MLKEM768_CT_LEN]) -> Zeroizing<[u8; 32]> {
    let ct = Array::from(*ct);
    let mut ss = dk.decapsulate(&ct);
    let mut out = Zeroizing::new([0u8; 32]);
    out.copy_from_slice(ss.as_slice());
    ss.zeroize();
    out
}

/// KAT hook: ML-KEM-768.KeyGen_internal(d, z) (FIPS 203 Algorithm 16) → (ek 1184 bytes,
/// expanded dk 2400 bytes as in the FIPS 203 KAT files: `dk_pke || ek || H(ek) || z`).
#[allow(deprecated)]
pub fn mlkem768_keygen_from_seed(d: &[u8; 32], z: &[u8; 32]) -> (Vec<u8>, Vec<u8>) {
    let mut seed = Zeroizing::new([0u8; MLKEM768_SEED_LEN]);
    seed[..32].copy_from_slice(d);
    seed[32..].copy_from_slice(z);
    let dk = dk_from_seed(&seed);
    let ek = dk.encapsulation_key().to_bytes().as_slice().to_vec();
    let dk_bytes = dk.to_expanded_bytes().as_slice().to_vec();
    (ek, dk_bytes)
}

/// KAT hook: ML-KEM-768.Encaps_internal(ek, m) (FIPS 203 Algorithm 17) after the §7.2 input
/// checks → (ciphertext 1088 bytes, shared secret 32 bytes). The code path [`seal`] uses.
pub fn mlkem768_encaps_deterministic(
    ek: &[u8],
    m: &[u8; 32],
) -> Result<(Vec<u8>, [u8; 32]), CryptoError> {
    let ek = parse_ek(ek)?;
    let (ct, ss) = encaps(&ek, m);
    Ok((ct.to_vec(), *ss))
}

/// KAT hook: ML-KEM-768.Decaps (FIPS 203 Algorithm 21) → shared secret (32 bytes); the code
/// path [`open`] uses. `dk` is either the 64-byte seed `d || z` (krypta's stored form) or the
/// 2400-byte expanded key of the FIPS 203 KAT files (then the §7.3 hash check runs: `H(ek)`
/// inside `dk` must match). `ct` must be 1088 bytes (the §7.3 ciphertext type check); a
/// well-sized but modified ciphertext yields the implicit-rejection secret `J(z || c)`.
#[allow(deprecated)]
pub fn mlkem768_decaps(dk: &[u8], ct: &[u8]) -> Result<[u8; 32], CryptoError> {
    let ct: [u8; MLKEM768_CT_LEN] = ct.try_into().map_err(|_| CryptoError::BadKeyText {
        problem: format!(
            "an ML-KEM-768 ciphertext is {MLKEM768_CT_LEN} bytes, got {}",
            ct.len()
        ),
    })?;
    let key = match dk.len() {
        MLKEM768_SEED_LEN => {
            let mut seed = Zeroizing::new([0u8; MLKEM768_SEED_LEN]);
            seed.copy_from_slice(dk);
            dk_from_seed(&seed)
        }
        MLKEM768_DK_LEN => {
            let arr = Array::try_from(dk).map_err(|_| bad_dk(dk.len()))?;
            DecapsulationKey768::from_expanded_bytes(&arr).map_err(|_| CryptoError::BadKeyText {
                problem: "ML-KEM-768 decapsulation key fails the FIPS 203 §7.3 hash check"
                    .to_string(),
            })?
        }
        other => return Err(bad_dk(other)),
    };
    Ok(*decaps(&key, &ct))
}

fn bad_dk(len: usize) -> CryptoError {
    CryptoError::BadKeyText {
        problem: format!(
            "an ML-KEM-768 decapsulation key is {MLKEM768_SEED_LEN} (seed) or {MLKEM768_DK_LEN} bytes, got {len}"
        ),
    }
}

/// X25519(scalar, u) (RFC 7748 §5): the scalar is clamped, the result is the u-coordinate
/// (32 bytes, little-endian). The function [`seal`] and [`open`] use.
pub fn x25519(scalar: &[u8; 32], u: &[u8; 32]) -> [u8; 32] {
    x25519_dalek::x25519(*scalar, *u)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small-order u-coordinates on Curve25519 or its twist (RFC 7748 §7; the list libsodium
    /// blocks): 0, 1, an order-8 point, its partner, and p − 1.
    const LOW_ORDER: [&str; 5] = [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    ];

    fn unhex32(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    fn secret(fill: u8) -> SecretKey {
        SecretKey::from_bytes(&[fill; SECRET_KEY_LEN])
    }

    #[test]
    fn low_order_ephemeral_is_rejected_even_under_a_valid_tag() {
        // An attacker who knows ss_k (it chose m) and sends a low-order ephemeral knows
        // ss_x = 0 too; it can compute the kek and a valid tag. open must still refuse.
        let sk = secret(7);
        let pk = sk.public_key();
        let archive_id = [3u8; 16];
        let file_key = FileKey::from_bytes([9u8; 32]);
        for point in LOW_ORDER {
            let ephemeral = unhex32(point);
            assert_eq!(x25519(&sk.x25519, &ephemeral), [0u8; 32], "{point}");
            let (ct, ss_k) = encaps(&pk.ek, &[5u8; 32]);
            let kek = combine(&ss_k, &[0u8; 32], &ct, &ephemeral, &pk.x25519);
            let mut stanza = Stanza::PqBox {
                mlkem_ct: ct,
                ephemeral,
                wrapped: [0; 32],
                tag: [0; 32],
            };
            let params = stanza.params();
            let (w, t) = seal_file_key(&kek, &archive_id, kind::PQ_BOX, &params, &file_key);
            assert!(open_file_key(&kek, &archive_id, kind::PQ_BOX, &params, &w, &t).is_some());
            if let Stanza::PqBox { wrapped, tag, .. } = &mut stanza {
                *wrapped = w;
                *tag = t;
            }
            assert!(open(&sk, &stanza, &archive_id).is_none(), "{point}");
        }
    }

    #[test]
    fn a_low_order_x25519_key_is_refused_when_parsed_and_when_sealed_to() {
        let pk = secret(7).public_key();
        for point in LOW_ORDER {
            let mut bytes = pk.to_bytes();
            bytes[MLKEM768_EK_LEN..].copy_from_slice(&unhex32(point));
            assert!(PublicKey::from_bytes(&bytes).is_err(), "{point}");
            let bad = PublicKey {
                x25519: unhex32(point),
                ..pk.clone()
            };
            let r = seal(&bad, &FileKey::from_bytes([1; 32]), &[0; 16]);
            assert!(r.is_err(), "{point}");
        }
    }

    #[test]
    fn the_low_order_probe_accepts_ordinary_keys_and_the_base_point() {
        assert!(!is_low_order(&X25519_BASE));
        for fill in 0..=255u8 {
            assert!(
                !is_low_order(secret(fill).public_key().x25519_public()),
                "{fill}"
            );
        }
    }

    #[test]
    fn kek_changes_with_every_transcript_input() {
        let ct = Box::new([1u8; MLKEM768_CT_LEN]);
        let base = *combine(&[1; 32], &[2; 32], &ct, &[3; 32], &[4; 32]);
        let mut ct2 = ct.clone();
        ct2[1087] ^= 1;
        let variants = [
            *combine(&[0; 32], &[2; 32], &ct, &[3; 32], &[4; 32]),
            *combine(&[1; 32], &[0; 32], &ct, &[3; 32], &[4; 32]),
            *combine(&[1; 32], &[2; 32], &ct2, &[3; 32], &[4; 32]),
            *combine(&[1; 32], &[2; 32], &ct, &[0; 32], &[4; 32]),
            *combine(&[1; 32], &[2; 32], &ct, &[3; 32], &[0; 32]),
        ];
        for v in variants {
            assert_ne!(v, base);
        }
    }
}
