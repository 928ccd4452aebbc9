//! Known-answer runners of the signature primitives (`crypto::sign`): ML-DSA-65 (NIST ACVP
//! keyGen, sigGen deterministic, sigVer valid and invalid) and Ed25519 (RFC 8032 §7.1 and
//! NIST ACVP sigVer), each through krypta's own wrappers.

use super::parse::Block;
use super::{KatError, expect, expect_true};
use crate::crypto::sign::{self as s, MLDSA_CONTEXT};

/// ML-DSA-65: `op` = keygen (`seed` → `pk`, and the expanded `sk` when given), siggen (`sk`,
/// `message` → `signature`, deterministic), sigver (`pk`, `message`, `signature` → `valid`
/// 0/1). With a `context` field (possibly empty) siggen and sigver use the external
/// interface (FIPS 204 Algorithms 2 and 3: [`s::mldsa65_verify`] is what archive signatures
/// use); without, Sign_internal/Verify_internal (Algorithms 7 and 8). On the keygen key,
/// krypta's external signing (deterministic, krypta's context) must equal Sign_internal of
/// `0 ‖ |ctx| ‖ ctx ‖ M` and verify, and a flipped bit must not.
pub fn mldsa65(v: &Block) -> Result<(), KatError> {
    match v.text("op")? {
        "keygen" => {
            let seed = v.array::<32>("seed")?;
            let (pk, sk) = s::mldsa65_keygen(&seed);
            expect("pk", &v.hex("pk")?, &pk)?;
            if let Some(want) = v.opt_hex("sk")? {
                expect("sk (skEncode)", &want, &sk)?;
            }
            let m = b"krypta known answer";
            let external = s::mldsa65_sign_seed(&seed, m, MLDSA_CONTEXT);
            let mut m_prime = vec![0u8, MLDSA_CONTEXT.len() as u8];
            m_prime.extend_from_slice(MLDSA_CONTEXT);
            m_prime.extend_from_slice(m);
            let internal = s::mldsa65_sign_internal(&sk, &m_prime).ok_or(KatError::Check {
                what: "the expanded key of KeyGen_internal is accepted by skDecode",
            })?;
            expect(
                "external signature = Sign_internal(0 ‖ |ctx| ‖ ctx ‖ M)",
                &internal,
                &external,
            )?;
            expect_true(
                "the external signature verifies",
                s::mldsa65_verify(&pk, m, MLDSA_CONTEXT, &external),
            )?;
            let mut bad = external.clone();
            bad[100] ^= 1;
            expect_true(
                "a flipped bit of the signature is refused",
                !s::mldsa65_verify(&pk, m, MLDSA_CONTEXT, &bad),
            )?;
            expect_true(
                "another context is refused",
                !s::mldsa65_verify(&pk, m, b"other", &external),
            )
        }
        "siggen" => {
            let sk = v.hex("sk")?;
            let message = v.hex("message")?;
            let context = v.opt_hex("context")?;
            let not_expanded = KatError::Check {
                what: "sk is a 4032-byte ML-DSA-65 expanded key (and the context ≤ 255 bytes)",
            };
            let sig = match &context {
                Some(ctx) => s::mldsa65_sign_expanded(&sk, &message, ctx),
                None => s::mldsa65_sign_internal(&sk, &message),
            }
            .ok_or(not_expanded)?;
            let expected = v.hex("signature")?;
            expect("signature", &expected, &sig)?;
            // NIST's signature verifies under the public key of NIST's secret key, and a
            // flipped bit of it does not (verification of a known-valid signature).
            let pk = s::mldsa65_public_of_expanded(&sk).ok_or(KatError::Check {
                what: "sk is a 4032-byte ML-DSA-65 expanded key",
            })?;
            let verify = |sig: &[u8]| match &context {
                Some(ctx) => s::mldsa65_verify(&pk, &message, ctx, sig),
                None => s::mldsa65_verify_internal(&pk, &message, sig),
            };
            expect_true("the known signature verifies", verify(&expected))?;
            let mut bad = expected.clone();
            bad[0] ^= 1;
            expect_true(
                "the known signature with a flipped bit is refused",
                !verify(&bad),
            )
        }
        "sigver" => {
            let (pk, message, sig) = (v.hex("pk")?, v.hex("message")?, v.hex("signature")?);
            let ok = match v.opt_hex("context")? {
                Some(ctx) => s::mldsa65_verify(&pk, &message, &ctx, &sig),
                None => s::mldsa65_verify_internal(&pk, &message, &sig),
            };
            match v.number("valid", 1)? {
                1 => expect_true("the valid signature verifies", ok),
                _ => expect_true("the invalid signature is refused", !ok),
            }
        }
        _ => Err(KatError::BadValue {
            key: "op".into(),
            line: v.line,
            expected: "keygen, siggen or sigver",
        }),
    }
}

/// The group order L of Ed25519 (RFC 8032 §5.1), little-endian.
const ED25519_L: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

/// Ed25519: with `sk`, the public key (`pk` when given) and the signature of `message` must be
/// the expected ones; then `signature` must verify under the public key (or, with `valid =
/// 0`, be refused); and every valid signature with bit 0 of R or S flipped, with S + L, or on
/// a changed message is refused.
pub fn ed25519(v: &Block) -> Result<(), KatError> {
    let message = v.hex("message")?;
    let signature = v.hex("signature")?;
    let pk = match v.opt_hex("sk")? {
        Some(sk) => {
            let sk: [u8; 32] = sk.as_slice().try_into().map_err(|_| KatError::BadLength {
                key: "sk".into(),
                line: v.line,
                expected: 32,
                got: sk.len(),
            })?;
            let pk = s::ed25519_public(&sk);
            if let Some(want) = v.opt_hex("pk")? {
                expect("pk", &want, &pk)?;
            }
            expect("signature", &signature, &s::ed25519_sign(&sk, &message))?;
            pk.to_vec()
        }
        None => v.hex("pk")?,
    };
    let ok = s::ed25519_verify(&pk, &message, &signature);
    if v.number_or("valid", 1, 1)? == 0 {
        return expect_true("the invalid signature is refused", !ok);
    }
    expect_true("the signature verifies", ok)?;
    for (what, at) in [("R", 0), ("S", 32)] {
        let mut bad = signature.clone();
        bad[at] ^= 1;
        expect_true(
            if what == "R" {
                "a flipped bit of R is refused"
            } else {
                "a flipped bit of S is refused"
            },
            !s::ed25519_verify(&pk, &message, &bad),
        )?;
    }
    // S + L: the same scalar, not canonical (S < L is required).
    let mut big = signature.clone();
    let mut carry = 0u16;
    for i in 0..32 {
        let sum = u16::from(big[32 + i]) + u16::from(ED25519_L[i]) + carry;
        big[32 + i] = sum as u8;
        carry = sum >> 8;
    }
    if carry == 0 {
        expect_true(
            "S + L (non-canonical) is refused",
            !s::ed25519_verify(&pk, &message, &big),
        )?;
    }
    let mut other = message.clone();
    other.push(0);
    expect_true(
        "a changed message is refused",
        !s::ed25519_verify(&pk, &other, &signature),
    )
}
