//! The archive header: magic, version, flags, archive id, creation time, stanzas, comment,
//! (format 2) extensions, and a 32-byte tag over every byte before it.
//!
//! Both versions share the layout up to the comment; format 2 adds the extension list after
//! it ([`super::extension`]), a second flag (bit 1: a recovery section follows the protected
//! bytes, set exactly when the header has a recovery extension), a checked nominal block
//! size (64 KiB..=256 MiB; format 1 took any value) and skips stanzas of unknown kinds
//! (format 1 refuses them).

use super::extension::{Extension, check_extensions, parse_extensions, write_extensions};
use super::limits::{MAX_BLOCK_SIZE, MAX_STANZAS, MIN_BLOCK_SIZE};
pub use super::limits::{MAX_COMMENT_LEN, MAX_HEADER_LEN, MIN_HEADER_LEN};
use super::{FormatError, Reader, Stanza, Version, put_bytes_u32};

/// First 8 bytes of every krypta archive: `\x89KRYPTA\n` (the high byte and the newline catch
/// 7-bit and newline-translating transfers, as PNG's signature does).
pub const MAGIC: [u8; 8] = *b"\x89KRYPTA\n";
/// The newest format version this build reads, and the one it writes.
pub const VERSION: u16 = Version::CURRENT as u16;
/// Length of the fixed part read before the rest of the header: magic, version, flags, length.
pub const PREFIX_LEN: usize = 16;
const _: () = assert!(MIN_HEADER_LEN == PREFIX_LEN + 32 + 4 + TAG_LEN);
/// Smallest format-2 header, bytes: a format-1 minimum plus the extension count (2).
pub const MIN_HEADER_LEN_V2: usize = MIN_HEADER_LEN + 2;
/// Header tag length, bytes.
pub const TAG_LEN: usize = 32;
/// Header flags bit 0: the archive is encrypted (it then has at least one stanza).
pub const FLAG_ENCRYPTED: u16 = 1;
/// Header flags bit 1 (format 2): a recovery section follows the protected bytes; set exactly
/// when the header has an [`Extension::Recovery`].
pub const FLAG_RECOVERY: u16 = 2;

/// The parsed header (everything but the tag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Format version (byte 8). Every structure after the header follows it.
    pub version: Version,
    /// Random 16-byte archive id (HKDF salt; bound into every tag).
    pub archive_id: [u8; 16],
    /// Creation time, seconds since the Unix epoch (SOURCE_DATE_EPOCH when set).
    pub created: i64,
    /// Nominal block size the writer used, bytes (informational; format 2 requires
    /// 64 KiB..=256 MiB).
    pub block_size: u32,
    /// krypta level 1..=9, or 0 for store (informational: not checked against the codecs
    /// of the blocks).
    pub level: u8,
    /// Recipient stanzas; empty for an unencrypted archive. Format 2 keeps stanzas of kinds
    /// this build does not know as [`Stanza::Unknown`] (they are skipped when opening).
    pub stanzas: Vec<Stanza>,
    /// Free-form UTF-8 comment (authenticated once a key opened the archive; not encrypted).
    pub comment: String,
    /// Header extensions (format 2; empty in format 1).
    pub extensions: Vec<Extension>,
}

/// The fixed prefix of a header, enough to know how many more bytes to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    /// Format version.
    pub version: Version,
    /// Flags (bit 0 encrypted; format 2: bit 1 recovery section).
    pub flags: u16,
    /// Total header length including the tag, bytes.
    pub header_len: u32,
}

/// Why the first bytes are not a header we can read: the caller maps these to
/// "not an archive" / "unsupported version" / "corrupt".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrefixError {
    /// Magic does not match.
    NotAnArchive,
    /// A version this build does not read.
    Version(u16),
    /// Other field problems.
    Format(FormatError),
}

impl Prefix {
    /// Parses the 16-byte prefix: `magic[8], u16 version, u16 flags, u32 header_len`.
    pub fn parse(b: &[u8; PREFIX_LEN]) -> Result<Prefix, PrefixError> {
        if b[..8] != MAGIC {
            return Err(PrefixError::NotAnArchive);
        }
        let code = u16::from_le_bytes([b[8], b[9]]);
        let version = Version::from_u16(code).ok_or(PrefixError::Version(code))?;
        let flags = u16::from_le_bytes([b[10], b[11]]);
        let known = match version {
            Version::V1 => FLAG_ENCRYPTED,
            Version::V2 => FLAG_ENCRYPTED | FLAG_RECOVERY,
        };
        if flags & !known != 0 {
            return Err(PrefixError::Format(FormatError::invalid(
                "header",
                format!("unknown flags {flags:#06x}"),
            )));
        }
        let header_len = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
        let min = match version {
            Version::V1 => MIN_HEADER_LEN,
            Version::V2 => MIN_HEADER_LEN_V2,
        };
        if (header_len as usize) < min || header_len as usize > MAX_HEADER_LEN {
            return Err(PrefixError::Format(FormatError::invalid(
                "header",
                format!("header length {header_len} outside {min}..={MAX_HEADER_LEN}"),
            )));
        }
        Ok(Prefix {
            version,
            flags,
            header_len,
        })
    }
}

impl Header {
    /// True when the archive is encrypted.
    pub fn encrypted(&self) -> bool {
        !self.stanzas.is_empty()
    }

    /// The recovery percentage when a recovery section follows the protected bytes.
    pub fn recovery_percent(&self) -> Option<u8> {
        self.extensions.iter().find_map(|e| match e {
            Extension::Recovery { percent } => Some(*percent),
            _ => None,
        })
    }

    /// The base's archive id and binding when this is a delta archive (extension 0x8001).
    pub fn delta_base(&self) -> Option<([u8; 16], [u8; 32])> {
        self.extensions.iter().find_map(|e| match e {
            Extension::DeltaBase { base_id, binding } => Some((*base_id, *binding)),
            _ => None,
        })
    }

    /// The signer's fingerprint when the archive is signed (the signer extension).
    pub fn signer(&self) -> Option<[u8; 32]> {
        self.extensions.iter().find_map(|e| match e {
            Extension::Signer { fingerprint } => Some(*fingerprint),
            _ => None,
        })
    }

    /// The flags word: bit 0 encrypted, bit 1 (format 2) a recovery section follows.
    pub fn flags(&self) -> u16 {
        let mut f = 0;
        if self.encrypted() {
            f |= FLAG_ENCRYPTED;
        }
        if self.recovery_percent().is_some() {
            f |= FLAG_RECOVERY;
        }
        f
    }

    /// Checks the rules every header follows, the same for the writer (before it writes
    /// anything) and the parser: level 0..=9, the stanza set
    /// ([`super::stanza::check_stanza_set`]), a comment of at most [`MAX_COMMENT_LEN`] bytes,
    /// and a total length (tag included) of at most [`MAX_HEADER_LEN`]. Format 2 also: a
    /// nominal block size within 64 KiB..=256 MiB, valid extensions
    /// ([`super::extension::check_extensions`]); format 1 has no extensions and no stanzas of
    /// unknown kinds.
    pub fn check(&self) -> Result<(), FormatError> {
        if self.level > 9 {
            return Err(FormatError::invalid(
                "header",
                format!("level {} > 9", self.level),
            ));
        }
        super::stanza::check_stanza_set(&self.stanzas)?;
        check_comment(self.comment.as_bytes())?;
        match self.version {
            Version::V1 => {
                if !self.extensions.is_empty() {
                    return Err(FormatError::invalid(
                        "header",
                        "format 1 has no header extensions",
                    ));
                }
                if self
                    .stanzas
                    .iter()
                    .any(|s| matches!(s, Stanza::Unknown { .. }))
                {
                    return Err(FormatError::invalid(
                        "header",
                        "format 1 has no stanzas of unknown kinds",
                    ));
                }
            }
            Version::V2 => {
                let bs = self.block_size as usize;
                if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&bs) {
                    return Err(FormatError::invalid(
                        "header",
                        format!(
                            "nominal block size {bs} outside {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}"
                        ),
                    ));
                }
                check_extensions(&self.extensions)?;
            }
        }
        let len = self.encoded_len();
        if len > MAX_HEADER_LEN {
            return Err(FormatError::invalid(
                "header",
                format!("header of {len} bytes (at most {MAX_HEADER_LEN})"),
            ));
        }
        Ok(())
    }

    /// The header's length with its tag, bytes.
    pub fn encoded_len(&self) -> usize {
        let stanzas: usize = self.stanzas.iter().map(|s| 8 + s.body().len()).sum();
        let exts = match self.version {
            Version::V1 => 0,
            Version::V2 => {
                2 + self
                    .extensions
                    .iter()
                    .map(|e| e.encoded_len())
                    .sum::<usize>()
            }
        };
        PREFIX_LEN + 32 + stanzas + 4 + self.comment.len() + exts + TAG_LEN
    }

    /// Serialises everything before the tag. Layout after the prefix:
    /// `archive_id[16], i64 created, u32 block_size, u8 level, u8 0, u16 stanza_count,
    /// stanzas, u32 comment_len, comment`, and for format 2 `u16 extension_count,
    /// extensions`; then the caller appends the 32-byte tag.
    pub fn write_untagged(&self) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&self.archive_id);
        body.extend_from_slice(&self.created.to_le_bytes());
        body.extend_from_slice(&self.block_size.to_le_bytes());
        body.push(self.level);
        body.push(0);
        body.extend_from_slice(&(self.stanzas.len() as u16).to_le_bytes());
        for s in &self.stanzas {
            s.write(&mut body);
        }
        put_bytes_u32(&mut body, self.comment.as_bytes());
        if self.version == Version::V2 {
            write_extensions(&self.extensions, &mut body);
        }
        let header_len = (PREFIX_LEN + body.len() + TAG_LEN) as u32;
        let mut out = Vec::with_capacity(header_len as usize);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.version.code().to_le_bytes());
        out.extend_from_slice(&self.flags().to_le_bytes());
        out.extend_from_slice(&header_len.to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Parses a whole header (`header_len` bytes, tag included) of either version; returns
    /// the header and the tag. The tag is NOT checked here (that needs the key): the caller
    /// verifies it over `bytes[..len - 32]` before trusting anything but the stanzas.
    pub fn parse(bytes: &[u8]) -> Result<(Header, [u8; TAG_LEN]), PrefixError> {
        let prefix_bytes: &[u8; PREFIX_LEN] = bytes
            .get(..PREFIX_LEN)
            .and_then(|b| b.try_into().ok())
            .ok_or(PrefixError::NotAnArchive)?;
        let prefix = Prefix::parse(prefix_bytes)?;
        if bytes.len() != prefix.header_len as usize {
            return Err(PrefixError::Format(FormatError::Truncated {
                what: "header",
                needed: prefix.header_len as u64,
                got: bytes.len() as u64,
            }));
        }
        let body = &bytes[PREFIX_LEN..bytes.len() - TAG_LEN];
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&bytes[bytes.len() - TAG_LEN..]);
        let h = Self::parse_body(body, prefix).map_err(PrefixError::Format)?;
        Ok((h, tag))
    }

    fn parse_body(body: &[u8], prefix: Prefix) -> Result<Header, FormatError> {
        let version = prefix.version;
        let mut r = Reader::new(body, "header");
        let archive_id = r.array()?;
        let created = r.i64()?;
        let block_size = r.u32()?;
        let level = r.u8()?;
        if level > 9 {
            return Err(FormatError::invalid("header", format!("level {level} > 9")));
        }
        r.reserved_zero(1)?;
        let n = r.u16()? as usize;
        if n > MAX_STANZAS {
            return Err(FormatError::invalid(
                "header",
                format!("{n} stanzas (at most {MAX_STANZAS})"),
            ));
        }
        let mut stanzas = Vec::with_capacity(n);
        for _ in 0..n {
            stanzas.push(Stanza::parse(&mut r, version)?);
        }
        let comment = r.bytes_u32()?;
        check_comment(comment)?;
        let comment = String::from_utf8(comment.to_vec())
            .map_err(|_| FormatError::invalid("header", "comment is not UTF-8"))?;
        let extensions = match version {
            Version::V1 => Vec::new(),
            Version::V2 => parse_extensions(&mut r)?,
        };
        r.finish()?;
        let h = Header {
            version,
            archive_id,
            created,
            block_size,
            level,
            stanzas,
            comment,
            extensions,
        };
        if (prefix.flags & FLAG_ENCRYPTED != 0) != h.encrypted() {
            return Err(FormatError::invalid(
                "header",
                "encrypted flag disagrees with the stanza count",
            ));
        }
        if prefix.flags != h.flags() {
            return Err(FormatError::invalid(
                "header",
                "recovery flag (bit 1) disagrees with the recovery extension",
            ));
        }
        h.check()?;
        Ok(h)
    }
}

/// A header comment's one rule besides being UTF-8: at most [`MAX_COMMENT_LEN`] bytes.
pub fn check_comment(comment: &[u8]) -> Result<(), FormatError> {
    if comment.len() > MAX_COMMENT_LEN {
        return Err(FormatError::invalid(
            "header",
            format!(
                "comment of {} bytes (at most {MAX_COMMENT_LEN})",
                comment.len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(stanzas: Vec<Stanza>) -> Header {
        Header {
            version: Version::V1,
            extensions: vec![],
            archive_id: [0xab; 16],
            created: 1_700_000_000,
            block_size: 4 << 20,
            level: 3,
            stanzas,
            comment: "nightly".into(),
        }
    }

    #[test]
    fn header_parse_of_write_is_identity() {
        for (stanzas, comment) in [
            (vec![], ""),
            (vec![], "nightly"),
            (
                vec![Stanza::KeyFile {
                    wrapped: [1; 32],
                    tag: [2; 32],
                }],
                "",
            ),
        ] {
            let mut h = sample(stanzas);
            h.comment = comment.into();
            let mut bytes = h.write_untagged();
            bytes.extend_from_slice(&[9u8; 32]);
            let (parsed, tag) = Header::parse(&bytes).unwrap();
            assert_eq!(parsed, h);
            assert_eq!(tag, [9u8; 32]);
            assert_eq!(
                u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize,
                bytes.len()
            );
            if h.stanzas.is_empty() && h.comment.is_empty() {
                // Regression: the smallest header (no stanza, no comment) is 84 bytes and valid.
                assert_eq!(bytes.len(), MIN_HEADER_LEN);
                assert_eq!(MIN_HEADER_LEN, 84);
            }
        }
    }

    #[test]
    fn the_comment_limit_is_the_same_for_the_writer_check_and_the_parser() {
        let mut h = sample(vec![]);
        h.comment = "x".repeat(MAX_COMMENT_LEN);
        h.check().unwrap();
        let mut bytes = h.write_untagged();
        bytes.extend_from_slice(&[0u8; 32]);
        assert_eq!(Header::parse(&bytes).unwrap().0, h);
        assert_eq!(h.encoded_len(), bytes.len());
        h.comment.push('x');
        let e = FormatError::invalid("header", "comment of 4097 bytes (at most 4096)");
        assert_eq!(h.check().unwrap_err(), e);
        let mut bytes = h.write_untagged();
        bytes.extend_from_slice(&[0u8; 32]);
        assert_eq!(Header::parse(&bytes).unwrap_err(), PrefixError::Format(e));
    }

    #[test]
    fn header_rejects_other_magic_version_and_flags() {
        let mut bytes = sample(vec![]).write_untagged();
        bytes.extend_from_slice(&[0u8; 32]);
        let mut b = bytes.clone();
        b[0] = b'P';
        assert_eq!(Header::parse(&b).unwrap_err(), PrefixError::NotAnArchive);
        let mut b = bytes.clone();
        b[8] = 3;
        assert_eq!(Header::parse(&b).unwrap_err(), PrefixError::Version(3));
        let mut b = bytes.clone();
        b[10] = 2; // the recovery flag does not exist in format 1
        assert!(matches!(
            Header::parse(&b).unwrap_err(),
            PrefixError::Format(_)
        ));
        let mut b = bytes.clone();
        b[10] = 1; // encrypted flag without stanzas
        assert!(matches!(
            Header::parse(&b).unwrap_err(),
            PrefixError::Format(_)
        ));
        let mut b = bytes;
        b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            Header::parse(&b).unwrap_err(),
            PrefixError::Format(_)
        ));
    }

    fn v2(stanzas: Vec<Stanza>, extensions: Vec<Extension>) -> Header {
        Header {
            version: Version::V2,
            extensions,
            ..sample(stanzas)
        }
    }

    fn encode(h: &Header) -> Vec<u8> {
        let mut b = h.write_untagged();
        b.extend_from_slice(&[5u8; 32]);
        b
    }

    #[test]
    fn v2_header_parse_of_write_is_identity() {
        let key = Stanza::KeyFile {
            wrapped: [1; 32],
            tag: [2; 32],
        };
        let unknown = Stanza::Unknown {
            kind: 9,
            body: b"a newer stanza".to_vec(),
        };
        for h in [
            v2(vec![], vec![]),
            v2(vec![key.clone()], vec![Extension::Recovery { percent: 5 }]),
            v2(vec![unknown, key], vec![]),
        ] {
            h.check().unwrap();
            let b = encode(&h);
            assert_eq!(b.len(), h.encoded_len());
            assert_eq!(&b[8..10], &[2, 0]);
            assert_eq!(u16::from_le_bytes([b[10], b[11]]), h.flags());
            let (parsed, tag) = Header::parse(&b).unwrap();
            assert_eq!(parsed, h);
            assert_eq!(tag, [5; 32]);
        }
        let smallest = encode(&v2(vec![], vec![]));
        let mut h = v2(vec![], vec![]);
        h.comment.clear();
        assert_eq!(encode(&h).len(), MIN_HEADER_LEN_V2);
        assert!(smallest.len() > MIN_HEADER_LEN_V2);
    }

    #[test]
    fn v2_recovery_flag_must_match_the_extension() {
        let h = v2(vec![], vec![Extension::Recovery { percent: 10 }]);
        let mut b = encode(&h);
        assert_eq!(b[10], FLAG_RECOVERY as u8);
        b[10] = 0;
        assert!(matches!(Header::parse(&b), Err(PrefixError::Format(_))));
        let mut b = encode(&v2(vec![], vec![]));
        b[10] = FLAG_RECOVERY as u8;
        assert!(matches!(Header::parse(&b), Err(PrefixError::Format(_))));
    }

    #[test]
    fn v2_checks_the_nominal_block_size_and_v1_does_not() {
        for bad in [0u32, 1, (64 << 10) - 1, (256 << 20) + 1] {
            let mut h = v2(vec![], vec![]);
            h.block_size = bad;
            assert!(h.check().is_err(), "{bad}");
            assert!(Header::parse(&encode(&h)).is_err());
            let mut h1 = sample(vec![]);
            h1.block_size = bad;
            assert_eq!(Header::parse(&encode(&h1)).unwrap().0, h1);
        }
    }

    #[test]
    fn v1_refuses_unknown_stanza_kinds_and_v2_keeps_them() {
        let unknown = Stanza::Unknown {
            kind: 200,
            body: vec![1, 2, 3],
        };
        let mut h = sample(vec![unknown.clone()]);
        assert!(h.check().is_err());
        assert!(Header::parse(&encode(&h)).is_err());
        h.version = Version::V2;
        assert_eq!(Header::parse(&encode(&h)).unwrap().0.stanzas, vec![unknown]);
    }
}
