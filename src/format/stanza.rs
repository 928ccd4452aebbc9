//! Recipient stanzas: the byte layout of each way the 32-byte file key is wrapped.
//!
//! In the header each stanza is framed as `u8 kind, u8 0, u16 0, u32 body_len, body`.
//! The bodies below are fixed-size; `crypto::stanza` does the cryptography.

use super::{FormatError, Reader, Version};

/// Length of the salt in password stanzas, bytes.
pub const SALT_LEN: usize = 16;
/// Length of a wrapped file key, bytes (the file key is 32 bytes, AES-256-CTR keeps length).
pub const WRAPPED_LEN: usize = 32;
/// Length of a stanza tag (HMAC-SHA256), bytes.
pub const TAG_LEN: usize = 32;
/// ML-KEM-768 ciphertext length, bytes (FIPS 203 Table 3: 1088).
pub const MLKEM768_CT_LEN: usize = 1088;
/// X25519 public key length, bytes (RFC 7748 §5).
pub const X25519_LEN: usize = 32;
pub use super::limits::{MAX_PASSWORD_STANZAS, MAX_STANZAS};

/// The rules on a header's set of stanzas that writers and readers share: at most
/// [`MAX_STANZAS`], at most [`MAX_PASSWORD_STANZAS`] password stanza. (The encrypted flag
/// must agree with the set being non-empty; the header checks that.)
pub fn check_stanza_set(stanzas: &[Stanza]) -> Result<(), FormatError> {
    if stanzas.len() > MAX_STANZAS {
        return Err(FormatError::invalid(
            "header",
            format!("{} stanzas (at most {MAX_STANZAS})", stanzas.len()),
        ));
    }
    let passwords = stanzas.iter().filter(|s| s.is_password()).count();
    if passwords > MAX_PASSWORD_STANZAS {
        return Err(FormatError::invalid(
            "header",
            format!(
                "{passwords} password stanzas (argon2id or pbkdf2); an archive holds at most {MAX_PASSWORD_STANZAS}"
            ),
        ));
    }
    Ok(())
}

/// Stanza kind codes, as stored.
pub mod kind {
    /// Password through Argon2id (RFC 9106).
    pub const ARGON2ID: u8 = 1;
    /// Password through PBKDF2-HMAC-SHA256 (RFC 8018).
    pub const PBKDF2: u8 = 2;
    /// A raw 32-byte key file.
    pub const KEYFILE: u8 = 3;
    /// Hybrid ML-KEM-768 + X25519 sealed box.
    pub const PQ_BOX: u8 = 4;
}

/// One stanza: a way to recover the file key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stanza {
    /// Body (92 bytes): `u32 m_kib, u32 t, u32 p, salt[16], wrapped[32], tag[32]`.
    Argon2id {
        /// Memory cost, KiB.
        m_kib: u32,
        /// Iterations (time cost).
        t: u32,
        /// Lanes (parallelism).
        p: u32,
        /// Random salt.
        salt: [u8; SALT_LEN],
        /// File key under AES-256-CTR.
        wrapped: [u8; WRAPPED_LEN],
        /// HMAC-SHA256 over the stanza.
        tag: [u8; TAG_LEN],
    },
    /// Body (84 bytes): `u32 iterations, salt[16], wrapped[32], tag[32]`.
    Pbkdf2 {
        /// PBKDF2 iteration count.
        iterations: u32,
        /// Random salt.
        salt: [u8; SALT_LEN],
        /// File key under AES-256-CTR.
        wrapped: [u8; WRAPPED_LEN],
        /// HMAC-SHA256 over the stanza.
        tag: [u8; TAG_LEN],
    },
    /// Body (64 bytes): `wrapped[32], tag[32]`.
    KeyFile {
        /// File key under AES-256-CTR.
        wrapped: [u8; WRAPPED_LEN],
        /// HMAC-SHA256 over the stanza.
        tag: [u8; TAG_LEN],
    },
    /// Body (1184 bytes): `mlkem_ct[1088], x25519_ephemeral[32], wrapped[32], tag[32]`.
    PqBox {
        /// ML-KEM-768 ciphertext (FIPS 203).
        mlkem_ct: Box<[u8; MLKEM768_CT_LEN]>,
        /// The sender's ephemeral X25519 public key.
        ephemeral: [u8; X25519_LEN],
        /// File key under AES-256-CTR.
        wrapped: [u8; WRAPPED_LEN],
        /// HMAC-SHA256 over the stanza.
        tag: [u8; TAG_LEN],
    },
    /// Format 2: a stanza of a kind this build does not know, kept as read. Readers skip it
    /// (its body length frames it), as age skips stanzas it does not know, so an archive a
    /// newer writer also sealed to a new kind of recipient still opens with the kinds known
    /// here. Format 1 refuses unknown kinds.
    Unknown {
        /// The kind code (not 1..=4).
        kind: u8,
        /// The body, uninterpreted.
        body: Vec<u8>,
    },
}

impl Stanza {
    /// The kind code (see [`kind`]).
    pub fn kind(&self) -> u8 {
        match self {
            Stanza::Argon2id { .. } => kind::ARGON2ID,
            Stanza::Pbkdf2 { .. } => kind::PBKDF2,
            Stanza::KeyFile { .. } => kind::KEYFILE,
            Stanza::PqBox { .. } => kind::PQ_BOX,
            Stanza::Unknown { kind, .. } => *kind,
        }
    }

    /// True for the password kinds (`argon2id`, `pbkdf2`).
    pub fn is_password(&self) -> bool {
        matches!(self, Stanza::Argon2id { .. } | Stanza::Pbkdf2 { .. })
    }

    /// Human name, as `info` prints it.
    pub fn name(&self) -> &'static str {
        match self {
            Stanza::Argon2id { .. } => "argon2id",
            Stanza::Pbkdf2 { .. } => "pbkdf2",
            Stanza::KeyFile { .. } => "keyfile",
            Stanza::PqBox { .. } => "pq-box (ML-KEM-768 + X25519)",
            Stanza::Unknown { .. } => "unknown kind",
        }
    }

    /// The body bytes, without the framing.
    pub fn body(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            Stanza::Argon2id {
                m_kib,
                t,
                p,
                salt,
                wrapped,
                tag,
            } => {
                b.extend_from_slice(&m_kib.to_le_bytes());
                b.extend_from_slice(&t.to_le_bytes());
                b.extend_from_slice(&p.to_le_bytes());
                b.extend_from_slice(salt);
                b.extend_from_slice(wrapped);
                b.extend_from_slice(tag);
            }
            Stanza::Pbkdf2 {
                iterations,
                salt,
                wrapped,
                tag,
            } => {
                b.extend_from_slice(&iterations.to_le_bytes());
                b.extend_from_slice(salt);
                b.extend_from_slice(wrapped);
                b.extend_from_slice(tag);
            }
            Stanza::KeyFile { wrapped, tag } => {
                b.extend_from_slice(wrapped);
                b.extend_from_slice(tag);
            }
            Stanza::PqBox {
                mlkem_ct,
                ephemeral,
                wrapped,
                tag,
            } => {
                b.extend_from_slice(&mlkem_ct[..]);
                b.extend_from_slice(ephemeral);
                b.extend_from_slice(wrapped);
                b.extend_from_slice(tag);
            }
            Stanza::Unknown { body, .. } => b.extend_from_slice(body),
        }
        b
    }

    /// The bytes a stanza's tag covers besides the wrapped key: the kind code (one byte) and
    /// the parameters, which are the body bytes before `wrapped` (KDF costs and salt, the KEM
    /// ciphertext and ephemeral key, or nothing for a key file). Empty for
    /// [`Stanza::Unknown`], which has no known tag.
    pub fn params(&self) -> Vec<u8> {
        if matches!(self, Stanza::Unknown { .. }) {
            return Vec::new();
        }
        let body = self.body();
        let params_len = body.len() - WRAPPED_LEN - TAG_LEN;
        let mut p = vec![self.kind()];
        p.extend_from_slice(&body[..params_len]);
        p
    }

    /// Appends the framed stanza (`u8 kind, u8 0, u16 0, u32 body_len, body`).
    pub fn write(&self, out: &mut Vec<u8>) {
        let body = self.body();
        out.push(self.kind());
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
    }

    /// Parses one framed stanza of a `version` header. Wrong body lengths of known kinds are
    /// errors; unknown kinds are errors in format 1 and [`Stanza::Unknown`] in format 2.
    pub fn parse(r: &mut Reader<'_>, version: Version) -> Result<Self, FormatError> {
        let k = r.u8()?;
        r.reserved_zero(3)?;
        let body = r.bytes_u32()?;
        let mut b = Reader::new(body, "stanza");
        let s = match k {
            kind::ARGON2ID => Stanza::Argon2id {
                m_kib: b.u32()?,
                t: b.u32()?,
                p: b.u32()?,
                salt: b.array()?,
                wrapped: b.array()?,
                tag: b.array()?,
            },
            kind::PBKDF2 => Stanza::Pbkdf2 {
                iterations: b.u32()?,
                salt: b.array()?,
                wrapped: b.array()?,
                tag: b.array()?,
            },
            kind::KEYFILE => Stanza::KeyFile {
                wrapped: b.array()?,
                tag: b.array()?,
            },
            kind::PQ_BOX => Stanza::PqBox {
                mlkem_ct: Box::new(b.array()?),
                ephemeral: b.array()?,
                wrapped: b.array()?,
                tag: b.array()?,
            },
            other if version == Version::V2 => Stanza::Unknown {
                kind: other,
                body: b.take(body.len())?.to_vec(),
            },
            other => {
                return Err(FormatError::invalid(
                    "stanza",
                    format!("unknown stanza kind {other}"),
                ));
            }
        };
        b.finish()?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stanza_kind_round_trips_with_documented_sizes() {
        let cases = [
            (
                Stanza::Argon2id {
                    m_kib: 262_144,
                    t: 3,
                    p: 1,
                    salt: [1; 16],
                    wrapped: [2; 32],
                    tag: [3; 32],
                },
                92,
            ),
            (
                Stanza::Pbkdf2 {
                    iterations: 600_000,
                    salt: [1; 16],
                    wrapped: [2; 32],
                    tag: [3; 32],
                },
                84,
            ),
            (
                Stanza::KeyFile {
                    wrapped: [2; 32],
                    tag: [3; 32],
                },
                64,
            ),
            (
                Stanza::PqBox {
                    mlkem_ct: Box::new([7; 1088]),
                    ephemeral: [9; 32],
                    wrapped: [2; 32],
                    tag: [3; 32],
                },
                1184,
            ),
        ];
        for (s, body_len) in cases {
            assert_eq!(s.body().len(), body_len);
            let mut buf = Vec::new();
            s.write(&mut buf);
            assert_eq!(buf.len(), 8 + body_len);
            for v in [Version::V1, Version::V2] {
                let mut r = Reader::new(&buf, "stanza");
                assert_eq!(Stanza::parse(&mut r, v).unwrap(), s);
                r.finish().unwrap();
            }
        }
    }

    #[test]
    fn a_set_holds_at_most_one_password_stanza_and_64_stanzas() {
        let pbkdf2 = Stanza::Pbkdf2 {
            iterations: 600_000,
            salt: [1; 16],
            wrapped: [2; 32],
            tag: [3; 32],
        };
        let argon = Stanza::Argon2id {
            m_kib: 8192,
            t: 1,
            p: 1,
            salt: [1; 16],
            wrapped: [2; 32],
            tag: [3; 32],
        };
        let key = Stanza::KeyFile {
            wrapped: [2; 32],
            tag: [3; 32],
        };
        check_stanza_set(&[]).unwrap();
        check_stanza_set(&[pbkdf2.clone(), key.clone(), key.clone()]).unwrap();
        let mut full = vec![argon.clone()];
        full.extend(std::iter::repeat_n(key.clone(), 63));
        check_stanza_set(&full).unwrap();
        full.push(key.clone());
        assert_eq!(
            check_stanza_set(&full).unwrap_err(),
            FormatError::invalid("header", "65 stanzas (at most 64)")
        );
        for two in [
            [pbkdf2.clone(), argon.clone()],
            [argon.clone(), argon.clone()],
        ] {
            assert_eq!(
                check_stanza_set(&[key.clone(), two[0].clone(), two[1].clone()]).unwrap_err(),
                FormatError::invalid(
                    "header",
                    "2 password stanzas (argon2id or pbkdf2); an archive holds at most 1"
                )
            );
        }
    }

    #[test]
    fn wrong_body_length_is_rejected() {
        let mut buf = Vec::new();
        Stanza::KeyFile {
            wrapped: [2; 32],
            tag: [3; 32],
        }
        .write(&mut buf);
        buf.push(0);
        buf[4] = 65;
        for v in [Version::V1, Version::V2] {
            assert!(Stanza::parse(&mut Reader::new(&buf, "stanza"), v).is_err());
        }
        buf[0] = 77;
        assert!(Stanza::parse(&mut Reader::new(&buf, "stanza"), Version::V1).is_err());
        assert_eq!(
            Stanza::parse(&mut Reader::new(&buf, "stanza"), Version::V2).unwrap(),
            Stanza::Unknown {
                kind: 77,
                body: buf[8..].to_vec()
            }
        );
    }
}
