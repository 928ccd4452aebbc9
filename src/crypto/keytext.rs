//! Typed, checksummed one-line text for every kind of key krypta writes to a file.
//!
//! A key is one line: `PREFIX ‖ base64url(payload ‖ check)`, where
//!
//! - `PREFIX` names kind and version: `KRYPTA-KEY-1-` (a symmetric key file, payload 32
//!   bytes), `KRYPTA-BOX-SECRET-1-` (a pq-box secret key, 96 bytes) or
//!   `KRYPTA-BOX-PUBLIC-1-` (a pq-box public key, 1216 bytes), `KRYPTA-SIGN-SECRET-1-` (a
//!   signer's secret key, 64 bytes) or `KRYPTA-SIGN-PUBLIC-1-` (a signer's public key, 1984);
//! - `check` is the first 4 bytes of SHA-256(PREFIX as ASCII ‖ payload), so a changed
//!   character, a truncated line or a prefix edited to another kind is caught;
//! - base64url is RFC 4648 §5 (alphabet `A–Z a–z 0–9 - _`) without padding; the unused low
//!   bits of the last character must be zero, so each key has exactly one text.
//!
//! Password-protected secret keys (`crypto::protect`) have their own kinds,
//! `KRYPTA-BOX-SECRET-PROTECTED-1-` (156 bytes) and `KRYPTA-SIGN-SECRET-PROTECTED-1-` (124).
//! The line lengths are 13 + 48, 20 + 134, 20 + 1627, 21 + 91, 21 + 2651, 30 + 214 and
//! 31 + 171 characters. In a file, blank lines
//! and lines starting with `#` are ignored (comments such as `# created: ...`), leading and
//! trailing spaces and a CRLF line ending are tolerated, and exactly one key line must
//! remain. Decoding never panics; every failure is [`CryptoError::BadKeyText`] with a
//! plain-words problem that names both kinds on a mismatch.

use super::CryptoError;
use super::primitives::sha256;

/// Bytes of checksum appended to the payload.
const CHECK_LEN: usize = 4;
/// Every key line starts with this.
const FAMILY: &str = "KRYPTA-";
/// RFC 4648 §5 alphabet.
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The kinds of key text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A 32-byte symmetric key (`krypta keygen -o FILE`).
    Symmetric,
    /// A pq-box secret key, 96 bytes.
    BoxSecret,
    /// A pq-box public key, 1216 bytes (ML-KEM-768 encapsulation key 1184 + X25519 32).
    BoxPublic,
    /// A signer's secret key, 64 bytes (ML-DSA-65 seed 32 + Ed25519 secret key 32).
    SignSecret,
    /// A signer's public key, 1984 bytes (ML-DSA-65 public key 1952 + Ed25519 32).
    SignPublic,
    /// A password-protected box secret key, 156 bytes (`crypto::protect`).
    BoxSecretProtected,
    /// A password-protected signing secret key, 124 bytes (`crypto::protect`).
    SignSecretProtected,
}

impl KeyKind {
    const ALL: [KeyKind; 7] = [
        KeyKind::Symmetric,
        KeyKind::BoxSecret,
        KeyKind::BoxPublic,
        KeyKind::SignSecret,
        KeyKind::SignPublic,
        KeyKind::BoxSecretProtected,
        KeyKind::SignSecretProtected,
    ];

    /// The line prefix, including the version and the final dash.
    pub fn prefix(self) -> &'static str {
        match self {
            KeyKind::Symmetric => "KRYPTA-KEY-1-",
            KeyKind::BoxSecret => "KRYPTA-BOX-SECRET-1-",
            KeyKind::BoxPublic => "KRYPTA-BOX-PUBLIC-1-",
            KeyKind::SignSecret => "KRYPTA-SIGN-SECRET-1-",
            KeyKind::SignPublic => "KRYPTA-SIGN-PUBLIC-1-",
            KeyKind::BoxSecretProtected => "KRYPTA-BOX-SECRET-PROTECTED-1-",
            KeyKind::SignSecretProtected => "KRYPTA-SIGN-SECRET-PROTECTED-1-",
        }
    }

    /// The payload length, bytes.
    pub fn payload_len(self) -> usize {
        match self {
            KeyKind::Symmetric => 32,
            KeyKind::BoxSecret => 96,
            KeyKind::BoxPublic => 1216,
            KeyKind::SignSecret => 64,
            KeyKind::SignPublic => 1984,
            KeyKind::BoxSecretProtected => 96 + super::protect::OVERHEAD,
            KeyKind::SignSecretProtected => 64 + super::protect::OVERHEAD,
        }
    }

    /// A noun phrase for messages ("a krypta box public key").
    pub fn describe(self) -> &'static str {
        match self {
            KeyKind::Symmetric => "a krypta symmetric key (key file)",
            KeyKind::BoxSecret => "a krypta box secret key",
            KeyKind::BoxPublic => "a krypta box public key",
            KeyKind::SignSecret => "a krypta signing secret key",
            KeyKind::SignPublic => "a krypta signer public key",
            KeyKind::BoxSecretProtected => "a password-protected krypta box secret key",
            KeyKind::SignSecretProtected => "a password-protected krypta signing secret key",
        }
    }

    /// The prefix without its version ("KRYPTA-KEY-"), to recognise other versions.
    fn family_prefix(self) -> &'static str {
        match self {
            KeyKind::Symmetric => "KRYPTA-KEY-",
            KeyKind::BoxSecret => "KRYPTA-BOX-SECRET-",
            KeyKind::BoxPublic => "KRYPTA-BOX-PUBLIC-",
            KeyKind::SignSecret => "KRYPTA-SIGN-SECRET-",
            KeyKind::SignPublic => "KRYPTA-SIGN-PUBLIC-",
            KeyKind::BoxSecretProtected => "KRYPTA-BOX-SECRET-PROTECTED-",
            KeyKind::SignSecretProtected => "KRYPTA-SIGN-SECRET-PROTECTED-",
        }
    }
}

/// Base64url characters needed for `n` bytes, without padding.
fn encoded_len(n: usize) -> usize {
    (n * 8).div_ceil(6)
}

/// The 4-byte checksum of `payload` under `kind`.
fn checksum(kind: KeyKind, payload: &[u8]) -> [u8; CHECK_LEN] {
    let mut data = Vec::with_capacity(kind.prefix().len() + payload.len());
    data.extend_from_slice(kind.prefix().as_bytes());
    data.extend_from_slice(payload);
    let digest = sha256(&data);
    zeroize::Zeroize::zeroize(&mut data);
    [digest[0], digest[1], digest[2], digest[3]]
}

/// Encodes `payload` as one key line (no newline). The payload length is not checked here;
/// [`decode`] checks it against the kind.
pub fn encode(kind: KeyKind, payload: &[u8]) -> String {
    let mut bytes = zeroize::Zeroizing::new(payload.to_vec());
    bytes.extend_from_slice(&checksum(kind, payload));
    let mut out = String::with_capacity(kind.prefix().len() + encoded_len(bytes.len()));
    out.push_str(kind.prefix());
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = group.len() + 1;
        for i in 0..chars {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// A [`CryptoError::BadKeyText`].
fn bad(problem: impl Into<String>) -> CryptoError {
    CryptoError::BadKeyText {
        problem: problem.into(),
    }
}

/// The value of one base64url character.
fn sextet(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

/// Decodes unpadded base64url `text` into exactly `out_len` bytes (the caller checked the
/// length of `text`); refuses foreign characters and non-zero unused bits.
fn base64url_decode(
    text: &str,
    out_len: usize,
) -> Result<zeroize::Zeroizing<Vec<u8>>, CryptoError> {
    let mut out = zeroize::Zeroizing::new(Vec::with_capacity(out_len + 2));
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for (i, c) in text.bytes().enumerate() {
        let v = sextet(c).ok_or_else(|| {
            let shown = text[i..].chars().next().unwrap_or('?');
            bad(format!("invalid character {shown:?} in the key text"))
        })?;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if acc != 0 || out.len() != out_len {
        return Err(bad(
            "the key text is damaged (its last character is not a valid ending)",
        ));
    }
    Ok(out)
}

/// The one key line of `text`: comments and blank lines skipped, spaces trimmed.
fn key_line(text: &str) -> Result<&str, CryptoError> {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let line = lines
        .next()
        .ok_or_else(|| bad("no key found: the text is empty or only comments"))?;
    if lines.next().is_some() {
        return Err(bad(
            "more than one key line found (a key file holds exactly one key)",
        ));
    }
    Ok(line)
}

/// The kind of the one key line of `text`, when it is krypta key text of a kind this build
/// knows (the line is not decoded or checked: [`decode`] does that).
pub fn kind_of(text: &str) -> Option<KeyKind> {
    let line = key_line(text).ok()?;
    KeyKind::ALL
        .into_iter()
        .find(|k| line.starts_with(k.prefix()))
}

/// Decodes key text of kind `expected` and returns its payload
/// ([`KeyKind::payload_len`] bytes). The caller owns the payload: wrap secret payloads in
/// `Zeroizing` at once. See the module doc for what is accepted and refused.
pub fn decode(text: &str, expected: KeyKind) -> Result<Vec<u8>, CryptoError> {
    let line = key_line(text)?;
    if !line.starts_with(FAMILY) {
        return Err(bad(format!(
            "not a krypta key: {} should start with \"{}\"",
            expected.describe(),
            expected.prefix()
        )));
    }
    let Some(found) = KeyKind::ALL
        .into_iter()
        .find(|k| line.starts_with(k.prefix()))
    else {
        return Err(
            match KeyKind::ALL
                .into_iter()
                .find(|k| line.starts_with(k.family_prefix()))
            {
                Some(k) => bad(format!(
                    "{} of an unsupported version (this krypta reads \"{}\")",
                    k.describe(),
                    k.prefix()
                )),
                None => bad("unknown kind of krypta key"),
            },
        );
    };
    if found != expected {
        return Err(bad(format!(
            "this is {}, but {} is needed here",
            found.describe(),
            expected.describe()
        )));
    }
    let body = &line[found.prefix().len()..];
    let want = encoded_len(found.payload_len() + CHECK_LEN);
    if body.len() < want {
        return Err(bad(format!(
            "the key text is truncated: {} of {want} characters after the prefix",
            body.len()
        )));
    }
    if body.len() > want {
        return Err(bad(format!(
            "the key text is too long: {} characters after the prefix, {want} expected",
            body.len()
        )));
    }
    let bytes = base64url_decode(body, found.payload_len() + CHECK_LEN)?;
    let (payload, check) = bytes.split_at(found.payload_len());
    if checksum(found, payload) != check {
        return Err(bad(
            "checksum mismatch: the key text is damaged (a character was changed)",
        ));
    }
    Ok(payload.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(r: Result<Vec<u8>, CryptoError>) -> String {
        match r {
            Err(CryptoError::BadKeyText { problem }) => problem,
            other => panic!("expected BadKeyText, got {other:?}"),
        }
    }

    #[test]
    fn every_kind_round_trips_with_the_documented_line_length() {
        for (kind, line_len) in [
            (KeyKind::Symmetric, 61),
            (KeyKind::BoxSecret, 154),
            (KeyKind::BoxPublic, 1647),
            (KeyKind::SignSecret, 112),
            (KeyKind::SignPublic, 2672),
            (KeyKind::BoxSecretProtected, 244),
            (KeyKind::SignSecretProtected, 202),
        ] {
            let payload: Vec<u8> = (0..kind.payload_len()).map(|i| (i * 7 + 3) as u8).collect();
            let text = encode(kind, &payload);
            assert_eq!(text.len(), line_len, "{kind:?}");
            assert_eq!(decode(&text, kind).unwrap(), payload);
        }
    }

    #[test]
    fn encoding_is_base64url_of_payload_and_sha256_check() {
        // Expected values computed independently (Python hashlib + base64.urlsafe_b64encode).
        assert_eq!(
            encode(KeyKind::Symmetric, &[0; 32]),
            "KRYPTA-KEY-1-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAACz-uIF"
        );
        let payload: Vec<u8> = (0..96).collect();
        assert_eq!(
            encode(KeyKind::BoxSecret, &payload),
            "KRYPTA-BOX-SECRET-1-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7\
             PD0-P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5ff4j0LQ"
        );
    }

    #[test]
    fn comments_blank_lines_spaces_and_crlf_are_ignored() {
        let key = encode(KeyKind::Symmetric, &[9; 32]);
        let text = format!("# krypta key file, created 2026-01-01\r\n\r\n  {key}  \r\n# end\n");
        assert_eq!(decode(&text, KeyKind::Symmetric).unwrap(), vec![9; 32]);
    }

    #[test]
    fn kind_mismatch_names_both_kinds() {
        let public = encode(KeyKind::BoxPublic, &[1; 1216]);
        assert_eq!(
            problem(decode(&public, KeyKind::BoxSecret)),
            "this is a krypta box public key, but a krypta box secret key is needed here"
        );
        let sym = encode(KeyKind::Symmetric, &[1; 32]);
        assert_eq!(
            problem(decode(&sym, KeyKind::BoxPublic)),
            "this is a krypta symmetric key (key file), but a krypta box public key is needed here"
        );
    }

    #[test]
    fn every_single_changed_character_is_detected() {
        // Every position, every other character of the alphabet (and of the prefixes).
        for kind in KeyKind::ALL {
            let payload: Vec<u8> = (0..kind.payload_len()).map(|i| i as u8).collect();
            let text = encode(kind, &payload);
            for i in 0..text.len() {
                for &replacement in ALPHABET {
                    let mut t = text.clone().into_bytes();
                    if t[i] == replacement {
                        continue;
                    }
                    t[i] = replacement;
                    let t = String::from_utf8(t).unwrap();
                    assert!(
                        decode(&t, kind).is_err(),
                        "{kind:?} char {i} -> {}",
                        replacement as char
                    );
                }
            }
        }
    }

    #[test]
    fn changed_character_and_truncation_give_clear_messages() {
        let text = encode(KeyKind::Symmetric, &[5; 32]);
        let mut t = text.clone().into_bytes();
        t[20] = if t[20] == b'B' { b'C' } else { b'B' };
        assert_eq!(
            problem(decode(std::str::from_utf8(&t).unwrap(), KeyKind::Symmetric)),
            "checksum mismatch: the key text is damaged (a character was changed)"
        );
        assert_eq!(
            problem(decode(&text[..text.len() - 5], KeyKind::Symmetric)),
            "the key text is truncated: 43 of 48 characters after the prefix"
        );
        assert_eq!(
            problem(decode(&format!("{text}A"), KeyKind::Symmetric)),
            "the key text is too long: 49 characters after the prefix, 48 expected"
        );
        let mut bad_char = text.clone();
        bad_char.replace_range(30..31, "+");
        assert_eq!(
            problem(decode(&bad_char, KeyKind::Symmetric)),
            "invalid character '+' in the key text"
        );
    }

    #[test]
    fn foreign_text_and_other_versions_are_named() {
        assert_eq!(
            problem(decode("AGE-SECRET-KEY-1XYZ", KeyKind::BoxSecret)),
            "not a krypta key: a krypta box secret key should start with \"KRYPTA-BOX-SECRET-1-\""
        );
        assert_eq!(
            problem(decode("KRYPTA-KEY-2-AAAA", KeyKind::Symmetric)),
            "a krypta symmetric key (key file) of an unsupported version (this krypta reads \"KRYPTA-KEY-1-\")"
        );
        assert_eq!(
            problem(decode("KRYPTA-FOO-1-AAAA", KeyKind::Symmetric)),
            "unknown kind of krypta key"
        );
        assert_eq!(
            problem(decode("# only a comment\n\n", KeyKind::Symmetric)),
            "no key found: the text is empty or only comments"
        );
        let k = encode(KeyKind::Symmetric, &[0; 32]);
        assert_eq!(
            problem(decode(&format!("{k}\n{k}\n"), KeyKind::Symmetric)),
            "more than one key line found (a key file holds exactly one key)"
        );
    }

    #[test]
    fn non_ascii_and_arbitrary_text_never_panics() {
        for s in [
            "KRYPTA-KEY-1-ééééééééééééééééééééééééé",
            "KRYPTA-KEY-1-€€€€€€€€€€€€€€€€",
            "\u{0}",
            "KRYPTA-",
        ] {
            assert!(decode(s, KeyKind::Symmetric).is_err());
        }
    }
}
