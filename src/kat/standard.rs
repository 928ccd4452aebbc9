//! Runners for the published vector sets (FIPS, SP 800, RFC, BLAKE3, xz BCJ): one function
//! per `kind`, each checking one vector block through krypta's own wrappers.

use std::str::FromStr;

use super::parse::Block;
use super::{KatError, expect, expect_true};
use crate::codec::{Filter, bcj};
use crate::crypto::pqbox;
use crate::crypto::primitives as p;

/// Largest message a `sha256` vector may expand to (`msg` × `repeat`), bytes (64 MiB).
const MAX_EXPANDED_LEN: u64 = 64 << 20;
/// Largest Argon2id memory a vector may ask for, KiB (256 MiB).
const MAX_ARGON2_KIB: u64 = 256 << 10;
/// Largest Argon2id pass count a vector may ask for.
const MAX_ARGON2_T: u64 = 16;
/// Largest Argon2id lane count a vector may ask for.
const MAX_ARGON2_P: u64 = 16;
/// Largest PBKDF2 iteration count a vector may ask for.
const MAX_PBKDF2_ITERATIONS: u64 = 10_000_000;
/// Largest X25519 iteration count a vector may ask for (RFC 7748 §5.2 lists 1, 1,000 and
/// 1,000,000; the last takes minutes and is not run).
const MAX_X25519_ITERATIONS: u64 = 100_000;
/// Largest BLAKE3 input a vector may ask for, bytes (16 MiB).
const MAX_BLAKE3_LEN: u64 = 16 << 20;

/// SHA-256 (FIPS 180-4): `msg` (hex) repeated `repeat` times (default 1) hashes to `md`.
pub fn sha256(v: &Block) -> Result<(), KatError> {
    let msg = v.hex("msg")?;
    let repeat = v.number_or("repeat", 1, MAX_EXPANDED_LEN)?;
    let total = (msg.len() as u64).saturating_mul(repeat);
    if total > MAX_EXPANDED_LEN {
        return Err(KatError::TooLarge {
            what: "expanded message",
            len: usize::try_from(total).unwrap_or(usize::MAX),
            limit: MAX_EXPANDED_LEN as usize,
        });
    }
    let data = msg.repeat(repeat as usize);
    expect("md", &v.hex("md")?, &p::sha256(&data))
}

/// HMAC-SHA256 (RFC 2104, RFC 4231): `key`, `data` → `mac`; with `truncate = N` the `mac` is
/// the leading N bytes (RFC 4231 §4.6). Also checks that the verify function accepts the tag
/// and refuses it with one bit flipped.
pub fn hmac_sha256(v: &Block) -> Result<(), KatError> {
    let key = v.hex("key")?;
    let data = v.hex("data")?;
    let mac = v.hex("mac")?;
    let full = p::hmac_sha256(&key, &[&data]);
    let truncate = v.number_or("truncate", 32, 32)? as usize;
    expect("mac", &mac, &full[..truncate])?;
    let verify = |tag: &[u8]| {
        if truncate == 32 {
            p::hmac_sha256_verify(&key, &[&data], tag)
        } else {
            p::hmac_sha256_truncated_verify(&key, &[&data], tag)
        }
    };
    expect_true("verify accepts the expected tag", verify(&mac))?;
    let mut flipped = mac.clone();
    if let Some(last) = flipped.last_mut() {
        *last ^= 1;
    }
    expect_true(
        "verify refuses a tag with one bit flipped",
        !verify(&flipped),
    )
}

/// AES-256 block encryption (FIPS 197): `key` (32 bytes), `plaintext` (16) → `ciphertext`.
pub fn aes256_block(v: &Block) -> Result<(), KatError> {
    let key = v.array::<32>("key")?;
    let mut block = v.array::<16>("plaintext")?;
    p::aes256_encrypt_block(&key, &mut block);
    expect("ciphertext", &v.hex("ciphertext")?, &block)
}

/// AES-256-CTR (SP 800-38A): `key`, initial `counter` block, `input` → `output`.
pub fn aes256_ctr(v: &Block) -> Result<(), KatError> {
    let key = v.array::<32>("key")?;
    let counter = v.array::<16>("counter")?;
    let mut buf = v.hex("input")?;
    p::aes256_ctr_apply(&key, &counter, &mut buf);
    expect("output", &v.hex("output")?, &buf)
}

/// HKDF-SHA256 (RFC 5869): `ikm`, `salt`, `info`, `len` → `okm` through krypta's HKDF; `prk`
/// is checked as its definition, HMAC-SHA256(salt or 32 zero bytes, ikm) (RFC 5869 §2.2).
pub fn hkdf_sha256(v: &Block) -> Result<(), KatError> {
    let ikm = v.hex("ikm")?;
    let salt = v.hex("salt")?;
    let info = v.hex("info")?;
    let len = v.number("len", p::HKDF_MAX_OUTPUT as u64)? as usize;
    if let Some(prk) = v.opt_hex("prk")? {
        let salt_or_zero = if salt.is_empty() {
            vec![0u8; 32]
        } else {
            salt.clone()
        };
        expect("prk", &prk, &p::hmac_sha256(&salt_or_zero, &[&ikm]))?;
    }
    let mut okm = vec![0u8; len];
    p::hkdf_sha256(&ikm, &salt, &info, &mut okm).map_err(|source| KatError::Crypto {
        call: "hkdf_sha256",
        source,
    })?;
    expect("okm", &v.hex("okm")?, &okm)
}

/// PBKDF2-HMAC-SHA256 (RFC 8018; vectors RFC 7914 §11): `password`, `salt`, `iterations` →
/// `dk` (its length is the requested length).
pub fn pbkdf2_sha256(v: &Block) -> Result<(), KatError> {
    let expected = v.hex("dk")?;
    let iterations = v.number("iterations", MAX_PBKDF2_ITERATIONS)? as u32;
    let mut dk = vec![0u8; expected.len()];
    p::pbkdf2_hmac_sha256(&v.hex("password")?, &v.hex("salt")?, iterations, &mut dk);
    expect("dk", &expected, &dk)
}

/// Argon2id v0x13 (RFC 9106): `password`, `salt`, optional `secret` and `ad`, memory `m` KiB,
/// `t` passes, `p` lanes → `tag` (its length is the tag length T).
pub fn argon2id(v: &Block) -> Result<(), KatError> {
    let expected = v.hex("tag")?;
    let m = v.number("m", MAX_ARGON2_KIB)? as u32;
    let t = v.number("t", MAX_ARGON2_T)? as u32;
    let lanes = v.number("p", MAX_ARGON2_P)? as u32;
    let secret = v.opt_hex("secret")?.unwrap_or_default();
    let ad = v.opt_hex("ad")?.unwrap_or_default();
    let mut tag = vec![0u8; expected.len()];
    p::argon2id(
        &v.hex("password")?,
        &v.hex("salt")?,
        m,
        t,
        lanes,
        &secret,
        &ad,
        &mut tag,
    )
    .map_err(|source| KatError::Crypto {
        call: "argon2id",
        source,
    })?;
    expect("tag", &expected, &tag)
}

/// X25519 (RFC 7748). Either `scalar`, `u` (and `iterations`, default 1, where each round
/// sets `(k, u) = (X25519(k, u), k)`) → `output`; or the §6.1 exchange: each private key
/// gives its public key with u = 9, and both sides reach `shared`.
pub fn x25519(v: &Block) -> Result<(), KatError> {
    if v.opt("scalar").is_some() {
        let mut k = v.array::<32>("scalar")?;
        let mut u = v.array::<32>("u")?;
        for _ in 0..v.number_or("iterations", 1, MAX_X25519_ITERATIONS)? {
            let next = pqbox::x25519(&k, &u);
            u = k;
            k = next;
        }
        return expect("output", &v.hex("output")?, &k);
    }
    let mut base = [0u8; 32];
    base[0] = 9;
    let a = v.array::<32>("alice_private")?;
    let b = v.array::<32>("bob_private")?;
    let a_pub = pqbox::x25519(&a, &base);
    let b_pub = pqbox::x25519(&b, &base);
    expect("alice_public", &v.hex("alice_public")?, &a_pub)?;
    expect("bob_public", &v.hex("bob_public")?, &b_pub)?;
    let shared = v.hex("shared")?;
    expect("shared (Alice's side)", &shared, &pqbox::x25519(&a, &b_pub))?;
    expect("shared (Bob's side)", &shared, &pqbox::x25519(&b, &a_pub))
}

/// ML-KEM-768 (FIPS 203): KeyGen_internal(`d`, `z`) → (`pk`, `sk`); Encaps_internal(`pk`,
/// `m`) → (`ct`, `ss`); Decaps(`sk`, `ct`) = `ss`, also from the seed `d ‖ z` (the form
/// krypta stores); and, when present, implicit rejection:
/// Decaps(`sk`, `ct_n`) = `ss_n` and Decaps(`sk`, `ct_mod`) = `ss_mod`.
pub fn mlkem768(v: &Block) -> Result<(), KatError> {
    let crypto = |call| move |source| KatError::Crypto { call, source };
    let d = v.array::<32>("d")?;
    let z = v.array::<32>("z")?;
    let (ek, dk) = pqbox::mlkem768_keygen_from_seed(&d, &z);
    expect("pk", &v.hex("pk")?, &ek)?;
    expect("sk", &v.hex("sk")?, &dk)?;
    let m = v.array::<32>("m")?;
    let (ct, ss) =
        pqbox::mlkem768_encaps_deterministic(&ek, &m).map_err(crypto("mlkem768_encaps"))?;
    expect("ct", &v.hex("ct")?, &ct)?;
    let expected_ss = v.hex("ss")?;
    expect("ss", &expected_ss, &ss)?;
    let decapsulated = pqbox::mlkem768_decaps(&dk, &ct).map_err(crypto("mlkem768_decaps"))?;
    expect("ss (decapsulated)", &expected_ss, &decapsulated)?;
    // krypta stores the 64-byte seed d || z, not the expanded key: decapsulate from it too.
    let seed = [d, z].concat();
    let from_seed = pqbox::mlkem768_decaps(&seed, &ct).map_err(crypto("mlkem768_decaps"))?;
    expect("ss (decapsulated from the seed)", &expected_ss, &from_seed)?;
    for (ct_key, ss_key) in [("ct_n", "ss_n"), ("ct_mod", "ss_mod")] {
        if let Some(bad_ct) = v.opt_hex(ct_key)? {
            let rejected =
                pqbox::mlkem768_decaps(&dk, &bad_ct).map_err(crypto("mlkem768_decaps"))?;
            expect(ss_key, &v.hex(ss_key)?, &rejected)?;
        }
    }
    Ok(())
}

/// BLAKE3 (official test vectors): `len` bytes of the pattern `i mod 251` → `hash`,
/// `keyed_hash` (header `key`, 32 bytes) and `derive_key` (header `context`), 32 bytes each.
pub fn blake3(header: &Block, v: &Block) -> Result<(), KatError> {
    let key = header.array::<32>("key")?;
    let context = header.text("context")?;
    let len = v.number("len", MAX_BLAKE3_LEN)? as usize;
    let input: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    expect("hash", &v.hex("hash")?, &p::blake3_hash(&input))?;
    expect(
        "keyed_hash",
        &v.hex("keyed_hash")?,
        &p::blake3_keyed(&key, &input),
    )?;
    let expected = v.hex("derive_key")?;
    let mut derived = vec![0u8; expected.len()];
    p::blake3_derive_key(context, &input, &mut derived);
    expect("derive_key", &expected, &derived)
}

/// BCJ filter (xz/liblzma): header `filter` (x86, arm64, ...), `start` (stream position),
/// `input` → `output` by `bcj::encode`, and `bcj::decode` turns `output` back into `input`.
pub fn bcj(header: &Block, v: &Block) -> Result<(), KatError> {
    let name = header.text("filter")?;
    let filter = Filter::from_str(name).map_err(|_| KatError::BadValue {
        key: "filter".to_string(),
        line: header.line,
        expected: "a BCJ filter name (x86, arm64, ...)",
    })?;
    let start = v.number("start", u64::MAX)?;
    let input = v.hex("input")?;
    let output = v.hex("output")?;
    let mut buf = input.clone();
    bcj::encode(filter, &mut buf, start);
    expect("output (encode)", &output, &buf)?;
    bcj::decode(filter, &mut buf, start);
    expect("input (decode)", &input, &buf)
}
