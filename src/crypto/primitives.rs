//! Thin wrappers over the cryptographic primitives: the only functions the archive code (and
//! the known-answer test runner) calls for hashing, MACs, ciphers, KDFs and randomness.
//!
//! Each wrapper pins one algorithm and one set of parameters, so a reader of the format spec
//! can match every byte to a standard:
//!
//! | function | standard | implementation |
//! |---|---|---|
//! | [`sha256`] | FIPS 180-4 | `sha2` (SHA-NI picked at run time) |
//! | [`hmac_sha256`] | RFC 2104, FIPS 198-1 | `hmac` over `sha2` |
//! | [`aes256_encrypt_block`] | FIPS 197 | `aes` (AES-NI picked at run time) |
//! | [`aes256_ctr_apply`] | SP 800-38A §6.5, §B.1 | `aws-lc-rs` (`super::aes_ctr` says why) |
//! | [`hkdf_sha256`] | RFC 5869 | `hkdf` over `hmac` |
//! | [`pbkdf2_hmac_sha256`] | RFC 8018 §5.2 | `pbkdf2` |
//! | [`argon2id`], [`argon2id_in`] | RFC 9106, version 0x13 | `argon2` (matrix: `super::argon2_memory`) |
//! | [`blake3_hash`], [`blake3_keyed`], [`blake3_derive_key`] | BLAKE3 spec | `blake3` |
//! | [`random_bytes`] | OS CSPRNG (`getrandom(2)`) | `getrandom` |

use aes::Aes256;
use aes::cipher::{BlockCipherEncrypt, KeyInit};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::CryptoError;
use super::argon2_memory::Argon2Memory;

/// HMAC-SHA256 over `sha2`.
type HmacSha256 = Hmac<Sha256>;
/// HKDF-SHA256 (RFC 5869) over that HMAC.
type HkdfSha256 = hkdf::Hkdf<Sha256>;

// Every state that holds key material wipes itself on drop (the crates' `zeroize`
// features, enabled in Cargo.toml): checked here at compile time, so turning a feature off
// breaks the build instead of silently weakening docs/SECURITY.md's claim. `hmac` 0.13 does
// not mark `Hmac<Sha256>` itself, but its key-dependent parts are the two SHA-256 cores below
// (the inner and outer padded-key states), which wipe themselves, and a block buffer, which
// wipes itself too.
const _: fn() = || {
    use hmac::digest::block_api::{Buffer, CoreProxy};
    type Sha256Core = <Sha256 as CoreProxy>::Core;
    fn zeroize_on_drop<T: zeroize::ZeroizeOnDrop>() {}
    zeroize_on_drop::<Aes256>();
    zeroize_on_drop::<Sha256>();
    zeroize_on_drop::<Sha256Core>();
    zeroize_on_drop::<Buffer<Sha256Core>>();
};

/// SHA-256 block length, bytes (FIPS 180-4 §1): the HMAC key block length.
const SHA256_BLOCK_LEN: usize = 64;
/// Shortest truncated HMAC tag [`hmac_sha256_truncated_verify`] accepts, bytes (RFC 2104 §5
/// recommends no fewer than half the output).
pub const MIN_TRUNCATED_TAG_LEN: usize = 16;
/// Largest HKDF-SHA256 output, bytes: 255 blocks of 32 (RFC 5869 §2.3).
pub const HKDF_MAX_OUTPUT: usize = 255 * 32;

/// SHA-256 of `data` (FIPS 180-4): 32 bytes.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// The 64-byte HMAC key block K0 of RFC 2104 §2 / FIPS 198-1 §4 step 1–3: the key zero-padded
/// to the block length, or SHA-256(key) zero-padded when the key is longer than a block.
/// Building it here makes keying infallible (no `Result` for a condition that cannot occur).
fn hmac_key_block(key: &[u8]) -> Zeroizing<[u8; SHA256_BLOCK_LEN]> {
    let mut block = Zeroizing::new([0u8; SHA256_BLOCK_LEN]);
    if key.len() > SHA256_BLOCK_LEN {
        let digest = Zeroizing::new(sha256(key));
        block[..32].copy_from_slice(&digest[..]);
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    block
}

/// A keyed HMAC-SHA256 state, for callers that feed data in pieces (frame sealing).
pub(crate) fn hmac_sha256_state(key: &[u8]) -> HmacSha256 {
    let block = hmac_key_block(key);
    <HmacSha256 as KeyInit>::new(&(*block).into())
}

/// HMAC-SHA256 (RFC 2104) with `key` (any length) over the concatenation of `parts`:
/// 32-byte tag. Feeding parts avoids copying large bodies into one buffer.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = hmac_sha256_state(key);
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// Checks a full 32-byte HMAC-SHA256 tag over the concatenation of `parts`, in constant time
/// (`subtle`). A tag of any other length is rejected (returns false).
pub fn hmac_sha256_verify(key: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
    if tag.len() != 32 {
        return false;
    }
    let expected = hmac_sha256(key, parts);
    bool::from(expected.ct_eq(tag))
}

/// Checks an HMAC-SHA256 tag truncated to its first `tag.len()` bytes (RFC 2104 §5; the
/// RFC 4231 §4.6 vector uses 16). Lengths below [`MIN_TRUNCATED_TAG_LEN`] or above 32 are
/// rejected. The archive itself always uses full tags ([`hmac_sha256_verify`]).
pub fn hmac_sha256_truncated_verify(key: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
    if tag.len() < MIN_TRUNCATED_TAG_LEN || tag.len() > 32 {
        return false;
    }
    let expected = hmac_sha256(key, parts);
    bool::from(expected[..tag.len()].ct_eq(tag))
}

/// Encrypts one 16-byte block in place with AES-256 (FIPS 197), the raw block cipher.
pub fn aes256_encrypt_block(key: &[u8; 32], block: &mut [u8; 16]) {
    let cipher = Aes256::new(key.into());
    cipher.encrypt_block(block.into());
}

/// AES-256-CTR (SP 800-38A §6.5) in place: XORs `buf` with the key stream whose first counter
/// block is `iv`, the whole 16-byte block being one 128-bit big-endian counter incremented
/// modulo 2^128 (SP 800-38A §B.1). Encryption and decryption are the same operation. Any
/// length, including 0 and partial last blocks.
pub fn aes256_ctr_apply(key: &[u8; 32], iv: &[u8; 16], buf: &mut [u8]) {
    super::aes_ctr::Aes256Ctr::new(key).apply(iv, buf);
}

/// HKDF-Extract (RFC 5869 §2.2) with `salt` (empty = no salt: HMAC's key block is zeros
/// either way, as the RFC's HashLen zero bytes give) over `ikm`, ready to expand. The PRK
/// copy the crate returns is wiped here; the state kept is a keyed HMAC, wiped on drop.
fn hkdf_extract(salt: &[u8], ikm: &[u8]) -> HkdfSha256 {
    let (mut prk, hkdf) = HkdfSha256::extract(Some(salt), ikm);
    zeroize::Zeroize::zeroize(prk.as_mut_slice());
    hkdf
}

/// HKDF-SHA256 (RFC 5869 §2): extract with `salt` (empty = no salt), expand with `info` into
/// `out` (0..=8160 bytes). Errors only when `out` is longer than [`HKDF_MAX_OUTPUT`].
pub fn hkdf_sha256(
    ikm: &[u8],
    salt: &[u8],
    info: &[u8],
    out: &mut [u8],
) -> Result<(), CryptoError> {
    if out.len() > HKDF_MAX_OUTPUT {
        return Err(CryptoError::HkdfLength {
            requested: out.len(),
            max: HKDF_MAX_OUTPUT,
        });
    }
    hkdf_extract(salt, ikm)
        .expand(info, out)
        .map_err(|_| CryptoError::HkdfLength {
            requested: out.len(),
            max: HKDF_MAX_OUTPUT,
        })
}

/// HKDF-SHA256 into a fixed-size array of `N` bytes; `N` ≤ 8160 is checked at compile time,
/// so this cannot fail. Equal to [`hkdf_sha256`] with an `N`-byte `out`.
pub(crate) fn hkdf_sha256_array<const N: usize>(
    ikm: &[u8],
    salt: &[u8],
    info: &[u8],
) -> Zeroizing<[u8; N]> {
    const { assert!(N <= HKDF_MAX_OUTPUT) };
    let mut out = Zeroizing::new([0u8; N]);
    hkdf_extract(salt, ikm)
        .expand(info, &mut out[..])
        .expect("N <= 8160 bytes, checked at compile time");
    out
}

/// PBKDF2 with HMAC-SHA256 as PRF (RFC 8018 §5.2) into `out` (any length). `iterations` is
/// the count c; 0 is treated by the underlying crate as 1 — callers check bounds first
/// (see `crypto::kdf`).
pub fn pbkdf2_hmac_sha256(password: &[u8], salt: &[u8], iterations: u32, out: &mut [u8]) {
    pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, out);
}

/// Argon2id, version 0x13 (RFC 9106 §3): memory `m_kib` KiB, `t` passes, `p` lanes, optional
/// `secret` (K, ≤ 2^32-1 bytes) and associated data `ad` (X, at most 32 bytes in this
/// implementation), output `out` (4..=2^32-1 bytes; the tag length T is `out.len()`).
/// Maps `m_kib` KiB (rounded down to a multiple of 4·p) for this one run — callers bound
/// `m_kib` first; [`argon2id_in`] reuses a matrix across runs. Invalid parameters (m < 8·p,
/// t = 0, p = 0, salt < 8 bytes) return [`CryptoError::Argon2`] without allocating.
#[allow(clippy::too_many_arguments)]
pub fn argon2id(
    password: &[u8],
    salt: &[u8],
    m_kib: u32,
    t: u32,
    p: u32,
    secret: &[u8],
    ad: &[u8],
    out: &mut [u8],
) -> Result<(), CryptoError> {
    let mut memory = Argon2Memory::new();
    argon2id_in(&mut memory, password, salt, m_kib, t, p, secret, ad, out)
}

/// [`argon2id`] with its memory matrix in `memory` (`crypto::argon2_memory`: huge pages,
/// grown to the largest m asked, reused by the next call). The same output bits as a fresh
/// matrix: pass 0 overwrites every block before reading it.
#[allow(clippy::too_many_arguments)]
pub fn argon2id_in(
    memory: &mut Argon2Memory,
    password: &[u8],
    salt: &[u8],
    m_kib: u32,
    t: u32,
    p: u32,
    secret: &[u8],
    ad: &[u8],
    out: &mut [u8],
) -> Result<(), CryptoError> {
    let map = CryptoError::Argon2;
    let data = argon2::AssociatedData::new(ad).map_err(map)?;
    let params = argon2::ParamsBuilder::new()
        .m_cost(m_kib)
        .t_cost(t)
        .p_cost(p)
        .data(data)
        .output_len(out.len())
        .build()
        .map_err(map)?;
    let ctx = if secret.is_empty() {
        argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
    } else {
        argon2::Argon2::new_with_secret(
            secret,
            argon2::Algorithm::Argon2id,
            argon2::Version::V0x13,
            params,
        )
        .map_err(map)?
    };
    let blocks = memory.blocks(ctx.params().block_count())?;
    ctx.hash_password_into_with_memory(password, salt, out, blocks)
        .map_err(map)
}

/// BLAKE3 hash of `data`: 32 bytes (the value `b3sum` prints).
pub fn blake3_hash(data: &[u8]) -> [u8; 32] {
    *blake3::hash(data).as_bytes()
}

/// BLAKE3 keyed hash (MAC mode) of `data` under a 32-byte `key`: 32 bytes.
pub fn blake3_keyed(key: &[u8; 32], data: &[u8]) -> [u8; 32] {
    *blake3::keyed_hash(key, data).as_bytes()
}

/// BLAKE3 derive-key mode: `context` (a hard-coded, globally unique string) and `material`
/// into `out` of any length (extendable output).
pub fn blake3_derive_key(context: &str, material: &[u8], out: &mut [u8]) {
    let mut hasher = blake3::Hasher::new_derive_key(context);
    hasher.update(material);
    hasher.finalize_xof().fill(out);
}

/// Fills `out` from the operating system's CSPRNG (`getrandom`). Fails only when the OS
/// source does.
pub fn random_bytes(out: &mut [u8]) -> Result<(), CryptoError> {
    getrandom::fill(out).map_err(CryptoError::Random)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn sha256_matches_fips_180_abc_vector() {
        assert_eq!(
            sha256(b"abc").to_vec(),
            hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
    }

    #[test]
    fn hmac_matches_rfc4231_cases_2_and_6_and_truncated_case_5() {
        let tag = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(
            tag.to_vec(),
            hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        );
        assert!(hmac_sha256_verify(
            b"Jefe",
            &[b"what do ya want for nothing?"],
            &tag
        ));
        assert!(!hmac_sha256_verify(
            b"Jefe",
            &[b"what do ya want for nothing!"],
            &tag
        ));
        assert!(!hmac_sha256_verify(
            b"Jefe",
            &[b"what do ya want for nothing?"],
            &tag[..31]
        ));
        // Case 6: a 131-byte key, longer than the block, is hashed first.
        let key = [0xaa; 131];
        let tag6 = hmac_sha256(
            &key,
            &[b"Test Using Larger Than Block-Size Key - Hash Key First"],
        );
        assert_eq!(
            tag6.to_vec(),
            hex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        );
        // Case 5: truncated to 128 bits.
        let t5 = hex("a3b6167473100ee06e0c796c2955552b");
        assert!(hmac_sha256_truncated_verify(
            &[0x0c; 20],
            &[b"Test With Truncation"],
            &t5
        ));
        assert!(!hmac_sha256_truncated_verify(
            &[0x0c; 20],
            &[b"Test With Truncation"],
            &t5[..15]
        ));
    }

    #[test]
    fn aes256_matches_fips197_appendix_c3() {
        let key: [u8; 32] = hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
            .try_into()
            .unwrap();
        let mut block: [u8; 16] = hex("00112233445566778899aabbccddeeff").try_into().unwrap();
        aes256_encrypt_block(&key, &mut block);
        assert_eq!(block.to_vec(), hex("8ea2b7ca516745bfeafc49904b496089"));
    }

    #[test]
    fn aes256_ctr_matches_sp800_38a_f55_and_wraps_the_whole_block() {
        let key: [u8; 32] = hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
            .try_into()
            .unwrap();
        let iv: [u8; 16] = hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff").try_into().unwrap();
        let mut buf = hex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51");
        aes256_ctr_apply(&key, &iv, &mut buf);
        assert_eq!(
            buf,
            hex("601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5")
        );
        // Counter ff..ff is followed by 00..00: the carry runs through all 16 bytes.
        let mut two = [0u8; 32];
        aes256_ctr_apply(&key, &[0xff; 16], &mut two);
        let mut first = [0xff; 16];
        let mut second = [0u8; 16];
        aes256_encrypt_block(&key, &mut first);
        aes256_encrypt_block(&key, &mut second);
        assert_eq!(two[..16], first);
        assert_eq!(two[16..], second);
    }

    #[test]
    fn hkdf_matches_rfc5869_case_1_in_both_forms() {
        let ikm = [0x0b; 22];
        let salt = hex("000102030405060708090a0b0c");
        let info = hex("f0f1f2f3f4f5f6f7f8f9");
        let mut okm = [0u8; 42];
        hkdf_sha256(&ikm, &salt, &info, &mut okm).unwrap();
        assert_eq!(
            okm.to_vec(),
            hex(
                "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
            )
        );
        assert_eq!(&hkdf_sha256_array::<42>(&ikm, &salt, &info)[..], &okm[..]);
        let mut too_long = vec![0u8; HKDF_MAX_OUTPUT + 1];
        assert!(matches!(
            hkdf_sha256(&ikm, &salt, &info, &mut too_long),
            Err(CryptoError::HkdfLength {
                requested: 8161,
                max: 8160
            })
        ));
    }

    #[test]
    fn argon2id_matches_rfc9106_section_5_3() {
        let mut out = [0u8; 32];
        argon2id(&[1; 32], &[2; 16], 32, 3, 4, &[3; 8], &[4; 12], &mut out).unwrap();
        assert_eq!(
            out.to_vec(),
            hex("0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659")
        );
    }

    #[test]
    fn argon2id_on_a_reused_matrix_gives_the_same_bits() {
        // The matrix first holds another derivation (more memory, other inputs), then the
        // RFC 9106 §5.3 vector runs on it and must come out as on a fresh matrix.
        let mut memory = Argon2Memory::new();
        let mut other = [0u8; 32];
        argon2id_in(
            &mut memory,
            b"other",
            &[9; 16],
            64,
            2,
            1,
            &[],
            &[],
            &mut other,
        )
        .unwrap();
        assert_eq!(memory.mapped_bytes(), 64 * 1024);
        let mut out = [0u8; 32];
        argon2id_in(
            &mut memory,
            &[1; 32],
            &[2; 16],
            32,
            3,
            4,
            &[3; 8],
            &[4; 12],
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out.to_vec(),
            hex("0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659")
        );
        // And the first derivation again, on the matrix the vector left behind.
        let mut again = [0u8; 32];
        argon2id_in(
            &mut memory,
            b"other",
            &[9; 16],
            64,
            2,
            1,
            &[],
            &[],
            &mut again,
        )
        .unwrap();
        assert_eq!(again, other);
        let mut fresh = [0u8; 32];
        argon2id(b"other", &[9; 16], 64, 2, 1, &[], &[], &mut fresh).unwrap();
        assert_eq!(fresh, other);
    }

    #[test]
    fn argon2id_rejects_invalid_parameters_without_running() {
        let mut out = [0u8; 32];
        assert!(matches!(
            argon2id(b"pw", &[0; 16], 7, 1, 1, &[], &[], &mut out),
            Err(CryptoError::Argon2(_))
        ));
        assert!(matches!(
            argon2id(b"pw", &[0; 16], 64, 0, 1, &[], &[], &mut out),
            Err(CryptoError::Argon2(_))
        ));
        assert!(matches!(
            argon2id(b"pw", &[0; 4], 64, 1, 1, &[], &[], &mut out),
            Err(CryptoError::Argon2(_))
        ));
    }

    #[test]
    fn pbkdf2_matches_rfc7914_section_11_vector() {
        let mut out = [0u8; 64];
        pbkdf2_hmac_sha256(b"passwd", b"salt", 1, &mut out);
        assert_eq!(
            out.to_vec(),
            hex(
                "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
            )
        );
    }

    #[test]
    fn blake3_matches_the_official_empty_input_vectors() {
        assert_eq!(
            blake3_hash(b"").to_vec(),
            hex("af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262")
        );
        let mut a = [0u8; 32];
        let mut b = [0u8; 64];
        blake3_derive_key("ctx", b"m", &mut a);
        blake3_derive_key("ctx", b"m", &mut b);
        assert_eq!(a[..], b[..32], "XOF output extends the 32-byte key");
        assert_eq!(
            blake3_keyed(&[0; 32], b"x"),
            *blake3::keyed_hash(&[0; 32], b"x").as_bytes()
        );
    }

    #[test]
    fn random_bytes_fills_the_buffer() {
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        random_bytes(&mut a).unwrap();
        random_bytes(&mut b).unwrap();
        assert_ne!(a, b);
    }
}
