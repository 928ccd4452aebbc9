//! The pq-box sealed box through the library API: round trips, recipients, tampering, the
//! golden stanza and the primitive hooks the known-answer runner calls.

use krypta::crypto::keys::{ArchiveId, FileKey};
use krypta::crypto::pqbox::{
    self, MLKEM768_DK_LEN, MLKEM768_EK_LEN, PUBLIC_KEY_LEN, PublicKey, SECRET_KEY_LEN, SecretKey,
    mlkem768_decaps, mlkem768_encaps_deterministic, mlkem768_keygen_from_seed, x25519,
};
use krypta::format::stanza::{Stanza, kind};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn unhex32(s: &str) -> [u8; 32] {
    unhex(s).try_into().unwrap()
}

/// A secret key whose 96 bytes are `start, start+1, ...` (wrapping).
fn patterned_secret(start: u8) -> SecretKey {
    let mut b = [0u8; SECRET_KEY_LEN];
    for (i, v) in b.iter_mut().enumerate() {
        *v = start.wrapping_add(i as u8);
    }
    SecretKey::from_bytes(&b)
}

const ARCHIVE_ID: ArchiveId = [0x11; 16];

fn file_key() -> FileKey {
    FileKey::from_bytes([0x5a; 32])
}

fn framed(stanza: &Stanza) -> Vec<u8> {
    let mut out = Vec::new();
    stanza.write(&mut out);
    out
}

#[test]
fn sealed_stanza_opens_with_the_recipient_key_and_returns_the_file_key() {
    let sk = SecretKey::generate().unwrap();
    let stanza = pqbox::seal(&sk.public_key(), &file_key(), &ARCHIVE_ID).unwrap();
    assert_eq!(stanza.kind(), kind::PQ_BOX);
    let opened = pqbox::open(&sk, &stanza, &ARCHIVE_ID).unwrap();
    assert_eq!(opened.as_bytes(), &[0x5a; 32]);
}

#[test]
fn stanza_body_is_1184_bytes_and_1192_framed() {
    let sk = patterned_secret(0);
    let stanza = pqbox::seal(&sk.public_key(), &file_key(), &ARCHIVE_ID).unwrap();
    assert_eq!(stanza.body().len(), 1184);
    assert_eq!(stanza.body().len(), pqbox::STANZA_BODY_LEN);
    assert_eq!(framed(&stanza).len(), 1192);
}

#[test]
fn two_seals_to_one_key_differ_but_both_open() {
    let sk = patterned_secret(1);
    let a = pqbox::seal(&sk.public_key(), &file_key(), &ARCHIVE_ID).unwrap();
    let b = pqbox::seal(&sk.public_key(), &file_key(), &ARCHIVE_ID).unwrap();
    assert_ne!(a, b);
    assert!(pqbox::open(&sk, &a, &ARCHIVE_ID).is_some());
    assert!(pqbox::open(&sk, &b, &ARCHIVE_ID).is_some());
}

#[test]
fn each_of_three_recipients_opens_only_its_own_stanza() {
    let keys: Vec<SecretKey> = (0..3).map(|_| SecretKey::generate().unwrap()).collect();
    let stanzas: Vec<Stanza> = keys
        .iter()
        .map(|k| pqbox::seal(&k.public_key(), &file_key(), &ARCHIVE_ID).unwrap())
        .collect();
    for (i, sk) in keys.iter().enumerate() {
        for (j, st) in stanzas.iter().enumerate() {
            let opened = pqbox::open(sk, st, &ARCHIVE_ID);
            if i == j {
                assert_eq!(opened.unwrap().as_bytes(), &[0x5a; 32]);
            } else {
                assert!(opened.is_none(), "key {i} opened stanza {j}");
            }
        }
    }
}

#[test]
fn wrong_secret_key_opens_nothing() {
    let stanza = pqbox::seal(&patterned_secret(2).public_key(), &file_key(), &ARCHIVE_ID).unwrap();
    assert!(pqbox::open(&patterned_secret(3), &stanza, &ARCHIVE_ID).is_none());
}

#[test]
fn stanza_moved_to_another_archive_id_does_not_open() {
    let sk = patterned_secret(4);
    let stanza = pqbox::seal(&sk.public_key(), &file_key(), &ARCHIVE_ID).unwrap();
    let mut other = ARCHIVE_ID;
    other[15] ^= 1;
    assert!(pqbox::open(&sk, &stanza, &other).is_none());
}

#[test]
fn a_flipped_bit_in_any_field_of_the_stanza_does_not_open() {
    let sk = patterned_secret(5);
    let stanza = pqbox::seal(&sk.public_key(), &file_key(), &ARCHIVE_ID).unwrap();
    // (field, byte offset in the 1184-byte body): ciphertext u and v parts, ephemeral,
    // wrapped key, tag; first and last byte of each field.
    let positions = [
        0usize, 500, 959, 960, 1087, 1088, 1119, 1120, 1151, 1152, 1183,
    ];
    for pos in positions {
        for bit in [0u8, 7] {
            let mut body = stanza.body();
            body[pos] ^= 1 << bit;
            let tampered = Stanza::PqBox {
                mlkem_ct: Box::new(body[..1088].try_into().unwrap()),
                ephemeral: body[1088..1120].try_into().unwrap(),
                wrapped: body[1120..1152].try_into().unwrap(),
                tag: body[1152..].try_into().unwrap(),
            };
            assert!(
                pqbox::open(&sk, &tampered, &ARCHIVE_ID).is_none(),
                "byte {pos} bit {bit}"
            );
        }
    }
}

#[test]
fn stanzas_of_other_kinds_are_not_opened() {
    let sk = patterned_secret(6);
    let other = Stanza::KeyFile {
        wrapped: [0; 32],
        tag: [0; 32],
    };
    assert!(pqbox::open(&sk, &other, &ARCHIVE_ID).is_none());
}

#[test]
fn low_order_ephemeral_does_not_open() {
    let sk = patterned_secret(7);
    let Stanza::PqBox {
        mlkem_ct,
        wrapped,
        tag,
        ..
    } = pqbox::seal(&sk.public_key(), &file_key(), &ARCHIVE_ID).unwrap()
    else {
        panic!("not a pq-box stanza");
    };
    let stanza = Stanza::PqBox {
        mlkem_ct,
        ephemeral: [0; 32],
        wrapped,
        tag,
    };
    assert!(pqbox::open(&sk, &stanza, &ARCHIVE_ID).is_none());
}

#[test]
fn secret_key_bytes_round_trip_and_give_the_same_public_key() {
    let sk = SecretKey::generate().unwrap();
    let again = SecretKey::from_bytes(&sk.to_bytes());
    assert_eq!(again.to_bytes()[..], sk.to_bytes()[..]);
    assert_eq!(again.public_key(), sk.public_key());
    let pk_bytes = sk.public_key().to_bytes();
    assert_eq!(pk_bytes.len(), PUBLIC_KEY_LEN);
    assert_eq!(PublicKey::from_bytes(&pk_bytes).unwrap(), sk.public_key());
}

#[test]
fn public_key_of_wrong_length_is_an_error() {
    let pk = patterned_secret(8).public_key().to_bytes();
    for len in [0, 32, 1184, 1215, 1217] {
        let mut b = pk.clone();
        b.resize(len, 0);
        assert!(PublicKey::from_bytes(&b).is_err(), "length {len}");
    }
}

#[test]
fn public_key_with_a_coefficient_above_q_fails_the_modulus_check() {
    let mut pk = patterned_secret(9).public_key().to_bytes();
    // The first 12-bit coefficient of t-hat becomes 0xfff = 4095 >= q = 3329 (FIPS 203 §7.2).
    pk[0] = 0xff;
    pk[1] |= 0x0f;
    assert!(PublicKey::from_bytes(&pk).is_err());
}

#[test]
fn debug_output_of_a_secret_key_shows_no_bytes() {
    assert_eq!(format!("{:?}", patterned_secret(0)), "SecretKey { .. }");
}

// ---- golden vector -------------------------------------------------------------------------

/// The golden pq-box stanza, framed (1192 bytes): secret key bytes 0x00..0x5f, m = 0x80..0x9f,
/// ephemeral secret 0xa0..0xbf, file key 0x5a × 32, archive id 0x11 × 16. On an intended
/// change of the construction, replace it with the hex the failing test prints.
const GOLDEN_STANZA_HEX: &str = "\
    04000000a004000004c1e43bd82139e4600aa87fddc0793f7c147e0eb7dccc377f019d22c16ecdcbd22e05bb45e2fd38\
    ca184e7bcc5bb504cdc13fc6d915cc029057311814bd916923de25330a22a53b6061dc17d892c437276108f1cb12bbbb\
    37dce17eb4fecff68859850dbac4e0b6fc218a24caa82a4434b0886e63e824632aa32b0dce207636cbeb40a22b8432c0\
    94f07f54af3793d6449322066890576e7d191347e34578f264c5406379e7c0c46dbc1857dcd07ced02dd14a5e882cb80\
    73a0906ae293e7a639499321751b7d9b3de1e38eebf20fc0957fe72643106eb8a87b3862e680c235d99a7e432f7bce65\
    ccbed16973ed46f23c207e4096a563a945a867feaadb2a01d570d3bff7585c5f276a23e8f8995076904f89d0d044acf6\
    6a93550309326731ef4c0509047015e0068862de943e84cc9fab33850c86e295dca82d44b3ce236c186aad8120d9134d\
    4f6597e7278534f42339286987c06c4ba0d52c82e451041106ceddb3c6154d72a8214de6ab4e7af96623684a36130d96\
    498698724e4b5fe02f98e602e5d89f35335412bb7d3d9350bd61b99dd8f529b8f61e5d4f6cb78733d3048e491f3296fb\
    9972ca8af433870287f2ee52ccf487166d7edbbafe475bd30c1aa831e5c34975e9b227c5005cce483d9feac2b392efbe\
    5e7c1b81d72d61ef6a9c55f37170c694b40bae5e6b89274b25613db3de07d426bfb21db9a8f8cd2beb8756fdc9af863c\
    904c2ff9453d21ce147c96c56e2e052dfaea6ad0ec6dc7eba35af185d2df99ee3d0ae22886d3135da04d90dc384857d1\
    28d38ea128f794d37d7c2dc74d5406455f04be7d75b5bcffc2b20fa34a5cb633c53874a3930abf387f16f5b0da53320d\
    c5747956015f28a6ab54519d0528e4fe56515ace0109cbea117fefae7846e4c167734880ea6adb062abb7a530f585513\
    3017fcdf4b25617881eb16538bf69f363d6f4bf9800b3687e0b18f63489a5da21acb78258f36c30e76b6d268c77131df\
    64e8625aaf8fd1d43de92a1fa8578fb22ccde5b97e840fe97503c612199e7e99d7b4849035b3bd274228de0ad486fb78\
    8017e2124e34ebfb0885cfa1c5445d12f64da3694ca0eee205506950a08495f1be86ba0d756ce35c599e9507a3dbeea8\
    403f78e71e1f0972a4b95519d34ab20b302a93902139666a6000f4549ed2db07ae211733c9050a10153dd55f3b02e9c3\
    45ffb4a58c0bd2ca34e23c3d3dc45ecd875321420f921527e7d1de27bf9525ae4c014ab52d147771be029d1dc18352d9\
    3f47c3ac7a2d2d6004d1a70da2207cb7de664166e2be537fdee44d9697f9a5ad80934cf189cd34c6160f05852de601ef\
    c8e745543369ca94d7d6f661de020c32b63fffa0e5f85da87494f8286b49f03a3e3006df6a8b9cbc4dd7846809d24d23\
    d0a1ae191cb8fd1946d713762a14a2c4e68927774570c1f6e472047550ed8b83e5a77cc150d700f80433502daf12c33d\
    a4409e0f776add4b990dc6ed9a4202ea3eca5dec9fbe0281ca2e9e62c218d3dc5cd92ffc040a9ce0605a725d2a4adfee\
    b1a29e17edd621c1b7593ee8cdbc44ac6c4ab6e2f805d23cfb2d888bf4844b3dc9d1e54bd8ed8e42a1191cccad9505c6\
    a3dfe226cfef02f326c221b8c50162cfee2eed6cf2c8acdd911c2f00b9471452af3d690efdfe19cc\
";

fn golden_stanza() -> Stanza {
    let sk = patterned_secret(0);
    let m: [u8; 32] = std::array::from_fn(|i| 0x80 + i as u8);
    let eph: [u8; 32] = std::array::from_fn(|i| 0xa0 + i as u8);
    pqbox::seal_deterministic(&sk.public_key(), &file_key(), &ARCHIVE_ID, &m, &eph).unwrap()
}

#[test]
fn golden_stanza_regenerates_to_the_committed_bytes() {
    let bytes = framed(&golden_stanza());
    let got = hex(&bytes);
    assert_eq!(
        got, GOLDEN_STANZA_HEX,
        "golden pq-box stanza changed; new hex:\n{got}"
    );
}

#[test]
fn golden_stanza_opens_with_its_secret_key() {
    let fk = pqbox::open(&patterned_secret(0), &golden_stanza(), &ARCHIVE_ID).unwrap();
    assert_eq!(fk.as_bytes(), &[0x5a; 32]);
}

// ---- primitive hooks -----------------------------------------------------------------------

#[test]
fn x25519_matches_rfc7748_section_5_2_first_vector() {
    let k = unhex32("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4");
    let u = unhex32("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c");
    assert_eq!(
        hex(&x25519(&k, &u)),
        "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"
    );
}

#[test]
fn x25519_matches_rfc7748_section_6_1_key_agreement() {
    let a = unhex32("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    let b = unhex32("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
    let mut nine = [0u8; 32];
    nine[0] = 9;
    let a_pub = x25519(&a, &nine);
    let b_pub = x25519(&b, &nine);
    assert_eq!(
        hex(&a_pub),
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    );
    assert_eq!(
        hex(&b_pub),
        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
    );
    let shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742";
    assert_eq!(hex(&x25519(&a, &b_pub)), shared);
    assert_eq!(hex(&x25519(&b, &a_pub)), shared);
}

#[test]
fn mlkem_hooks_agree_with_each_other_and_with_the_box_keys() {
    let d = [0x00u8; 32];
    let z: [u8; 32] = std::array::from_fn(|i| 0x20 + i as u8);
    let (ek, dk) = mlkem768_keygen_from_seed(&d, &z);
    assert_eq!((ek.len(), dk.len()), (MLKEM768_EK_LEN, MLKEM768_DK_LEN));
    // The expanded key is dk_pke || ek || H(ek) || z (FIPS 203 Algorithm 16, line 3).
    assert_eq!(&dk[1152..2336], &ek[..]);
    assert_eq!(&dk[2368..], &z[..]);
    // The box key with the same seed has the same encapsulation key.
    let mut sk_bytes = [0u8; SECRET_KEY_LEN];
    sk_bytes[32..64].copy_from_slice(&z);
    let sk = SecretKey::from_bytes(&sk_bytes);
    assert_eq!(&sk.public_key().to_bytes()[..MLKEM768_EK_LEN], &ek[..]);

    let (ct, ss) = mlkem768_encaps_deterministic(&ek, &[0x42; 32]).unwrap();
    assert_eq!(ct.len(), 1088);
    let seed: Vec<u8> = d.iter().chain(z.iter()).copied().collect();
    assert_eq!(mlkem768_decaps(&seed, &ct).unwrap(), ss);
    assert_eq!(mlkem768_decaps(&dk, &ct).unwrap(), ss);
    // Implicit rejection: a modified ciphertext gives another secret, the same from both forms.
    let mut bad = ct.clone();
    bad[0] ^= 1;
    let rejected = mlkem768_decaps(&dk, &bad).unwrap();
    assert_ne!(rejected, ss);
    assert_eq!(mlkem768_decaps(&seed, &bad).unwrap(), rejected);
}

#[test]
fn mlkem_hooks_reject_wrong_input_lengths_and_a_bad_dk_hash() {
    let (ek, mut dk) = mlkem768_keygen_from_seed(&[1; 32], &[2; 32]);
    let (ct, _) = mlkem768_encaps_deterministic(&ek, &[3; 32]).unwrap();
    assert!(mlkem768_encaps_deterministic(&ek[..1183], &[3; 32]).is_err());
    assert!(mlkem768_decaps(&dk, &ct[..1087]).is_err());
    assert!(mlkem768_decaps(&dk[..2399], &ct).is_err());
    dk[2336] ^= 1; // H(ek) inside the expanded key (FIPS 203 §7.3 hash check)
    assert!(mlkem768_decaps(&dk, &ct).is_err());
}

// ---- arbitrary input -----------------------------------------------------------------------

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_stanza_bytes_never_open_and_never_panic(
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 1184),
    ) {
        let stanza = Stanza::PqBox {
            mlkem_ct: Box::new(body[..1088].try_into().unwrap()),
            ephemeral: body[1088..1120].try_into().unwrap(),
            wrapped: body[1120..1152].try_into().unwrap(),
            tag: body[1152..].try_into().unwrap(),
        };
        proptest::prop_assert!(pqbox::open(&patterned_secret(0), &stanza, &ARCHIVE_ID).is_none());
    }

    #[test]
    fn arbitrary_public_key_bytes_parse_or_error_without_panic(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1300),
    ) {
        let _ = PublicKey::from_bytes(&bytes);
    }

    #[test]
    fn arbitrary_kat_hook_inputs_error_without_panic(
        dk in proptest::prop_oneof![
            proptest::collection::vec(proptest::prelude::any::<u8>(), 64),
            proptest::collection::vec(proptest::prelude::any::<u8>(), 2400),
            proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2500),
        ],
        ct in proptest::collection::vec(proptest::prelude::any::<u8>(), 1086..1090),
    ) {
        let _ = mlkem768_decaps(&dk, &ct);
        let _ = mlkem768_encaps_deterministic(&dk, &[0; 32]);
    }
}
