//! Hybrid archive signatures: ML-DSA-65 (FIPS 204) AND Ed25519 (RFC 8032), both over the
//! same message, both required to verify; the signer's keys, the signed message of an
//! archive (its transcript), and the thin wrappers over each primitive that `krypta kat`
//! checks against NIST ACVP and RFC 8032 vectors.
//!
//! Keys (docs/FORMAT.md §3.6):
//! - secret: 64 bytes `ξ ‖ k`: the ML-DSA-65 seed ξ (FIPS 204 Algorithm 6,
//!   `ML-DSA.KeyGen_internal(ξ)`) and the Ed25519 secret key k (RFC 8032 §5.1.5);
//! - public: 1984 bytes `pk_M (1952, FIPS 204 pkEncode) ‖ pk_E (32, RFC 8032 §5.1.5)`;
//! - fingerprint: `SHA-256("krypta/v2/signer" ‖ public)`, 32 bytes; the header's signer
//!   extension carries it, `info` shows it.
//!
//! The signed message `M` (built by [`Transcript`]) starts with a domain label and holds the
//! whole public key, so each component signature is bound to the other component's key
//! (an ML-DSA signature cannot be lifted out of a krypta signature and presented with
//! another Ed25519 key, or the reverse): the combiner of the IETF composite-signature drafts,
//! the signature analogue of X-Wing's binding of both public keys into the KEM's output.
//!
//! Choices and why:
//! - ML-DSA is used in its *deterministic* variant (FIPS 204 §3.4, Algorithm 2 with
//!   `rnd = 0³²`): the same archive bytes give the same signature, so a signed archive can be
//!   a golden vector and a reproducible build output. The hedged variant's extra protection
//!   is against fault injection and side channels on the signing machine, outside krypta's
//!   threat model (docs/SECURITY.md). Ed25519 is deterministic by definition.
//! - The ML-DSA context string is [`MLDSA_CONTEXT`] (FIPS 204 §5.2); Ed25519 is the pure
//!   variant (RFC 8032 §5.1), domain-separated by the label at the start of `M`.
//! - Ed25519 verification is `verify_strict` (ed25519-dalek): non-canonical `S`, small-order
//!   public keys and `R` are refused, so a valid signature has exactly one encoding and a
//!   flipped bit anywhere in it fails.

use ml_dsa::{EncodedVerifyingKey, MlDsa65, Signature as MlDsaSignature};
use sha2::{Digest, Sha512};
use zeroize::{Zeroize, Zeroizing};

use super::CryptoError;
use super::primitives::{random_bytes, sha256};

/// ML-DSA-65 public key, bytes (FIPS 204 Table 2).
pub const MLDSA65_PUBLIC_LEN: usize = 1952;
/// ML-DSA-65 signature, bytes (FIPS 204 Table 2).
pub const MLDSA65_SIG_LEN: usize = 3309;
/// Ed25519 public key, bytes.
pub const ED25519_PUBLIC_LEN: usize = 32;
/// Ed25519 signature, bytes.
pub const ED25519_SIG_LEN: usize = 64;
/// A signer's secret key: ML-DSA-65 seed ‖ Ed25519 secret key, bytes.
pub const SIGNER_SECRET_LEN: usize = 64;
/// A signer's public key: ML-DSA-65 public key ‖ Ed25519 public key, bytes.
pub const SIGNER_PUBLIC_LEN: usize = MLDSA65_PUBLIC_LEN + ED25519_PUBLIC_LEN;
/// A hybrid signature: ML-DSA-65 signature ‖ Ed25519 signature, bytes.
pub const HYBRID_SIG_LEN: usize = MLDSA65_SIG_LEN + ED25519_SIG_LEN;
/// A signer fingerprint, bytes.
pub const FINGERPRINT_LEN: usize = 32;
/// The FIPS 204 context string of every krypta ML-DSA signature.
pub const MLDSA_CONTEXT: &[u8] = b"krypta archive signature";
/// The first bytes of every signed message `M`.
pub const MESSAGE_LABEL: &[u8] = b"krypta/v2/signature";
/// Domain label of the fingerprint hash.
const FINGERPRINT_LABEL: &[u8] = b"krypta/v2/signer";

/// Which half of a hybrid signature failed (both are checked; the first failure is named).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigFailure {
    /// The ML-DSA-65 signature does not verify (or does not decode).
    MlDsa,
    /// The Ed25519 signature does not verify (strict rules).
    Ed25519,
}

impl std::fmt::Display for SigFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SigFailure::MlDsa => "the ML-DSA-65 signature does not verify",
            SigFailure::Ed25519 => "the Ed25519 signature does not verify",
        })
    }
}

/// A signer's secret key (zeroized on drop).
pub struct SignerSecret {
    seeds: Zeroizing<[u8; SIGNER_SECRET_LEN]>,
}

/// A signer's public key, validated (the Ed25519 half is a point of the curve).
#[derive(Clone)]
pub struct SignerPublic {
    bytes: Box<[u8; SIGNER_PUBLIC_LEN]>,
}

impl std::fmt::Debug for SignerPublic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SignerPublic({})", fingerprint_hex(&self.fingerprint()))
    }
}

impl PartialEq for SignerPublic {
    fn eq(&self, other: &Self) -> bool {
        self.bytes[..] == other.bytes[..]
    }
}

impl SignerSecret {
    /// A fresh key from the OS random source.
    pub fn generate() -> Result<SignerSecret, CryptoError> {
        let mut seeds = Zeroizing::new([0u8; SIGNER_SECRET_LEN]);
        random_bytes(&mut seeds[..])?;
        Ok(SignerSecret { seeds })
    }

    /// The key from its 64 bytes (any 64 bytes are a valid key).
    pub fn from_bytes(bytes: &[u8; SIGNER_SECRET_LEN]) -> SignerSecret {
        SignerSecret {
            seeds: Zeroizing::new(*bytes),
        }
    }

    /// The 64 secret bytes.
    pub fn to_bytes(&self) -> Zeroizing<[u8; SIGNER_SECRET_LEN]> {
        self.seeds.clone()
    }

    fn mldsa_seed(&self) -> [u8; 32] {
        self.seeds[..32].try_into().expect("32")
    }

    fn ed_seed(&self) -> [u8; 32] {
        self.seeds[32..].try_into().expect("32")
    }

    /// The public key.
    pub fn public(&self) -> SignerPublic {
        let mut seed = self.mldsa_seed();
        let pk_m = mldsa65_keygen(&seed).0;
        seed.zeroize();
        let mut ed = self.ed_seed();
        let pk_e = ed25519_public(&ed);
        ed.zeroize();
        let mut bytes = Box::new([0u8; SIGNER_PUBLIC_LEN]);
        bytes[..MLDSA65_PUBLIC_LEN].copy_from_slice(&pk_m);
        bytes[MLDSA65_PUBLIC_LEN..].copy_from_slice(&pk_e);
        SignerPublic { bytes }
    }

    /// The hybrid signature of `message`: ML-DSA-65 (deterministic, context
    /// [`MLDSA_CONTEXT`]) ‖ Ed25519.
    pub fn sign(&self, message: &[u8]) -> [u8; HYBRID_SIG_LEN] {
        let mut out = [0u8; HYBRID_SIG_LEN];
        let mut seed = self.mldsa_seed();
        let s = mldsa65_sign_seed(&seed, message, MLDSA_CONTEXT);
        seed.zeroize();
        out[..MLDSA65_SIG_LEN].copy_from_slice(&s);
        let mut ed = self.ed_seed();
        out[MLDSA65_SIG_LEN..].copy_from_slice(&ed25519_sign(&ed, message));
        ed.zeroize();
        out
    }
}

impl SignerPublic {
    /// Parses and validates a 1984-byte public key: an Ed25519 half that is not a curve
    /// point, or of small order, is refused (its signatures could never verify strictly).
    pub fn from_bytes(bytes: &[u8]) -> Result<SignerPublic, CryptoError> {
        let arr: [u8; SIGNER_PUBLIC_LEN] =
            bytes.try_into().map_err(|_| CryptoError::BadKeyText {
                problem: format!(
                    "a signer public key is {SIGNER_PUBLIC_LEN} bytes, this one {}",
                    bytes.len()
                ),
            })?;
        let ed: [u8; 32] = arr[MLDSA65_PUBLIC_LEN..].try_into().expect("32");
        match ed25519_dalek::VerifyingKey::from_bytes(&ed) {
            Ok(k) if !k.is_weak() => {}
            _ => {
                return Err(CryptoError::BadKeyText {
                    problem: "the Ed25519 half of the signer public key is not a valid key".into(),
                });
            }
        }
        Ok(SignerPublic {
            bytes: Box::new(arr),
        })
    }

    /// The 1984 public bytes.
    pub fn as_bytes(&self) -> &[u8; SIGNER_PUBLIC_LEN] {
        &self.bytes
    }

    /// `SHA-256("krypta/v2/signer" ‖ public key)`.
    pub fn fingerprint(&self) -> [u8; FINGERPRINT_LEN] {
        let mut data = Vec::with_capacity(FINGERPRINT_LABEL.len() + SIGNER_PUBLIC_LEN);
        data.extend_from_slice(FINGERPRINT_LABEL);
        data.extend_from_slice(&self.bytes[..]);
        sha256(&data)
    }

    /// Verifies a hybrid signature of `message`: both halves must verify.
    pub fn verify(&self, message: &[u8], sig: &[u8; HYBRID_SIG_LEN]) -> Result<(), SigFailure> {
        let (m, e) = sig.split_at(MLDSA65_SIG_LEN);
        if !mldsa65_verify(&self.bytes[..MLDSA65_PUBLIC_LEN], message, MLDSA_CONTEXT, m) {
            return Err(SigFailure::MlDsa);
        }
        if !ed25519_verify(&self.bytes[MLDSA65_PUBLIC_LEN..], message, e) {
            return Err(SigFailure::Ed25519);
        }
        Ok(())
    }
}

/// A fingerprint as shown to people: 64 lowercase hex digits in groups of 8.
pub fn fingerprint_hex(fp: &[u8; FINGERPRINT_LEN]) -> String {
    let hex: Vec<String> = fp
        .chunks(4)
        .map(|c| c.iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    hex.join(":")
}

/// The signed message of an archive, gathered as its bytes pass (docs/FORMAT.md §9.1):
///
/// ```text
/// M = "krypta/v2/signature" ‖ signer public key (1984)
///   ‖ SHA-512(header, all H bytes) ‖ u64 F ‖ SHA-512(tag₀ ‖ … ‖ tag_{F−1}) ‖ footer (64)
/// ```
/// where F is the number of data and index frames and tag_k the tag of frame seq k.
pub struct Transcript {
    header: [u8; 64],
    tags: Sha512,
    frames: u64,
}

impl Transcript {
    /// Starts with the archive's header bytes (tag included).
    pub fn new(header: &[u8]) -> Transcript {
        Transcript {
            header: Sha512::digest(header).into(),
            tags: Sha512::new(),
            frames: 0,
        }
    }

    /// Adds the tag of the next frame (seq = the number of tags added so far).
    pub fn frame_tag(&mut self, tag: &[u8; 32]) {
        self.tags.update(tag);
        self.frames += 1;
    }

    /// Tags added so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The message `M` for `signer` and the 64 footer bytes.
    pub fn message(&self, signer: &SignerPublic, footer: &[u8; 64]) -> Vec<u8> {
        let mut m = Vec::with_capacity(MESSAGE_LABEL.len() + SIGNER_PUBLIC_LEN + 64 + 8 + 64 + 64);
        m.extend_from_slice(MESSAGE_LABEL);
        m.extend_from_slice(signer.as_bytes());
        m.extend_from_slice(&self.header);
        m.extend_from_slice(&self.frames.to_le_bytes());
        m.extend_from_slice(&self.tags.clone().finalize());
        m.extend_from_slice(footer);
        m
    }
}

// ---- The primitives, one wrapper each (what `krypta kat` runs). ----

/// ML-DSA-65 `KeyGen_internal(ξ)` (FIPS 204 Algorithm 6): the encoded public key (1952
/// bytes) and the expanded secret key (4032 bytes, skEncode, Algorithm 24; only the known
/// answers compare it, krypta stores the seed).
pub fn mldsa65_keygen(seed: &[u8; 32]) -> (Vec<u8>, Zeroizing<Vec<u8>>) {
    let xi = ml_dsa::Seed::from(*seed);
    let sk = ml_dsa::SigningKey::<MlDsa65>::from_seed(&xi);
    let pk = sk.expanded_key().verifying_key().encode().to_vec();
    #[allow(deprecated)] // skEncode: compared with ACVP's keyGen answers, never stored.
    let expanded = Zeroizing::new(sk.expanded_key().to_expanded().to_vec());
    (pk, expanded)
}

/// ML-DSA-65 `Sign` (FIPS 204 Algorithm 2, deterministic: rnd = 0³²) of `message` with
/// context `ctx` (at most 255 bytes) under the key made from `seed`.
pub fn mldsa65_sign_seed(seed: &[u8; 32], message: &[u8], ctx: &[u8]) -> Vec<u8> {
    let xi = ml_dsa::Seed::from(*seed);
    let sk = ml_dsa::SigningKey::<MlDsa65>::from_seed(&xi);
    sk.expanded_key()
        .sign_deterministic(message, ctx)
        .expect("krypta's context strings are shorter than 255 bytes")
        .encode()
        .to_vec()
}

/// ML-DSA-65 `Sign_internal` (FIPS 204 Algorithm 7) with `rnd = 0³²` (deterministic) of the
/// already-formatted message `m_prime` under an expanded secret key (skDecode, Algorithm 25):
/// what NIST's ACVP sigGen vectors (internal interface) give. `None` if `sk` is not 4032
/// bytes. krypta itself signs with [`mldsa65_sign_seed`].
pub fn mldsa65_sign_internal(sk: &[u8], m_prime: &[u8]) -> Option<Vec<u8>> {
    let enc = ml_dsa::ExpandedSigningKeyBytes::<MlDsa65>::try_from(sk).ok()?;
    #[allow(deprecated)] // skDecode: ACVP's sigGen vectors give expanded keys.
    let key = ml_dsa::ExpandedSigningKey::<MlDsa65>::from_expanded(&enc);
    Some(
        key.sign_internal(&[m_prime], &ml_dsa::B32::default())
            .encode()
            .to_vec(),
    )
}

/// ML-DSA-65 `Sign` (FIPS 204 Algorithm 2, deterministic: rnd = 0³²) of `message` with
/// context `ctx` under an expanded secret key (skDecode): NIST's ACVP sigGen vectors of the
/// external interface give expanded keys. `None` if `sk` is not 4032 bytes or `ctx` is longer
/// than 255 bytes. krypta itself signs with [`mldsa65_sign_seed`], the same algorithm.
pub fn mldsa65_sign_expanded(sk: &[u8], message: &[u8], ctx: &[u8]) -> Option<Vec<u8>> {
    let enc = ml_dsa::ExpandedSigningKeyBytes::<MlDsa65>::try_from(sk).ok()?;
    #[allow(deprecated)] // skDecode: ACVP's sigGen vectors give expanded keys.
    let key = ml_dsa::ExpandedSigningKey::<MlDsa65>::from_expanded(&enc);
    Some(key.sign_deterministic(message, ctx).ok()?.encode().to_vec())
}

/// The encoded ML-DSA-65 public key (pkEncode) of an expanded secret key (skDecode, then
/// `t1` recomputed from `ρ`, `s1`, `s2`): for the known answers, which give expanded keys.
/// `None` if `sk` is not 4032 bytes.
pub fn mldsa65_public_of_expanded(sk: &[u8]) -> Option<Vec<u8>> {
    let enc = ml_dsa::ExpandedSigningKeyBytes::<MlDsa65>::try_from(sk).ok()?;
    #[allow(deprecated)] // skDecode: ACVP's sigGen vectors give expanded keys.
    let key = ml_dsa::ExpandedSigningKey::<MlDsa65>::from_expanded(&enc);
    Some(key.verifying_key().encode().to_vec())
}

/// ML-DSA-65 `Verify_internal` (FIPS 204 Algorithm 8) of `sig` on the formatted message
/// `m_prime` under `pk` (ACVP sigVer, internal interface). False for wrong lengths or a
/// signature that does not decode.
pub fn mldsa65_verify_internal(pk: &[u8], m_prime: &[u8], sig: &[u8]) -> bool {
    let Ok(enc) = EncodedVerifyingKey::<MlDsa65>::try_from(pk) else {
        return false;
    };
    let Ok(sig) = MlDsaSignature::<MlDsa65>::try_from(sig) else {
        return false;
    };
    ml_dsa::VerifyingKey::<MlDsa65>::decode(&enc).verify_internal(m_prime, &sig)
}

/// ML-DSA-65 `Verify` (FIPS 204 Algorithm 3) of `sig` on `message` with context `ctx` under
/// the encoded public key `pk`. False for a key or signature of the wrong length, a
/// signature that does not decode (malformed hint), or one that does not verify.
pub fn mldsa65_verify(pk: &[u8], message: &[u8], ctx: &[u8], sig: &[u8]) -> bool {
    let Ok(enc) = EncodedVerifyingKey::<MlDsa65>::try_from(pk) else {
        return false;
    };
    let vk = ml_dsa::VerifyingKey::<MlDsa65>::decode(&enc);
    let Ok(sig) = MlDsaSignature::<MlDsa65>::try_from(sig) else {
        return false;
    };
    vk.verify_with_context(message, ctx, &sig)
}

/// The Ed25519 public key of the secret key `seed` (RFC 8032 §5.1.5).
pub fn ed25519_public(seed: &[u8; 32]) -> [u8; 32] {
    ed25519_dalek::SigningKey::from_bytes(seed)
        .verifying_key()
        .to_bytes()
}

/// The Ed25519 signature of `message` (RFC 8032 §5.1.6).
pub fn ed25519_sign(seed: &[u8; 32], message: &[u8]) -> [u8; 64] {
    use ed25519_dalek::Signer;
    ed25519_dalek::SigningKey::from_bytes(seed)
        .sign(message)
        .to_bytes()
}

/// Ed25519 verification (RFC 8032 §5.1.7 with ed25519-dalek's strict rules: canonical `S`,
/// no small-order `A` or `R`). False for inputs of the wrong length.
pub fn ed25519_verify(pk: &[u8], message: &[u8], sig: &[u8]) -> bool {
    let (Ok(pk), Ok(sig)) = (<[u8; 32]>::try_from(pk), <[u8; 64]>::try_from(sig)) else {
        return false;
    };
    let Ok(vk) = ed25519_dalek::VerifyingKey::from_bytes(&pk) else {
        return false;
    };
    vk.verify_strict(message, &ed25519_dalek::Signature::from_bytes(&sig))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> SignerSecret {
        SignerSecret::from_bytes(&[b; SIGNER_SECRET_LEN])
    }

    #[test]
    fn a_hybrid_signature_verifies_and_each_half_is_required() {
        let sk = key(7);
        let pk = sk.public();
        let sig = sk.sign(b"message");
        assert_eq!(pk.verify(b"message", &sig), Ok(()));
        assert_eq!(pk.verify(b"messagf", &sig), Err(SigFailure::MlDsa));
        let mut s = sig;
        s[0] ^= 1;
        assert_eq!(pk.verify(b"message", &s), Err(SigFailure::MlDsa));
        let mut s = sig;
        s[HYBRID_SIG_LEN - 1] ^= 0x80;
        assert_eq!(pk.verify(b"message", &s), Err(SigFailure::Ed25519));
        // Another key's halves do not mix in.
        let other = key(8).sign(b"message");
        let mut s = sig;
        s[MLDSA65_SIG_LEN..].copy_from_slice(&other[MLDSA65_SIG_LEN..]);
        assert_eq!(pk.verify(b"message", &s), Err(SigFailure::Ed25519));
    }

    #[test]
    fn signing_is_deterministic_and_keys_round_trip() {
        let sk = key(3);
        assert_eq!(sk.sign(b"x")[..], sk.sign(b"x")[..]);
        let pk = sk.public();
        assert_eq!(SignerPublic::from_bytes(pk.as_bytes()).unwrap(), pk);
        assert_eq!(pk.as_bytes().len(), 1984);
        assert_ne!(key(4).public().fingerprint(), pk.fingerprint());
        assert_eq!(fingerprint_hex(&[0xab; 32]).len(), 64 + 7);
    }

    #[test]
    fn a_public_key_with_an_invalid_ed25519_half_is_refused() {
        let mut b = *key(1).public().as_bytes();
        // The identity point (small order): refused.
        b[MLDSA65_PUBLIC_LEN..].copy_from_slice(&{
            let mut p = [0u8; 32];
            p[0] = 1;
            p
        });
        assert!(SignerPublic::from_bytes(&b).is_err());
        assert!(SignerPublic::from_bytes(&b[..100]).is_err());
    }

    #[test]
    fn the_message_binds_every_part() {
        let pk = key(2).public();
        let mut t = Transcript::new(b"header");
        t.frame_tag(&[1; 32]);
        let m = t.message(&pk, &[9; 64]);
        assert_eq!(m.len(), 19 + 1984 + 64 + 8 + 64 + 64);
        assert_eq!(&m[..19], MESSAGE_LABEL);
        let mut t2 = Transcript::new(b"header");
        t2.frame_tag(&[2; 32]);
        assert_ne!(t2.message(&pk, &[9; 64]), m);
        let mut t3 = Transcript::new(b"headeR");
        t3.frame_tag(&[1; 32]);
        assert_ne!(t3.message(&pk, &[9; 64]), m);
        assert_ne!(t.message(&pk, &[8; 64]), m);
        assert_ne!(t.message(&key(5).public(), &[9; 64]), m);
    }
}
