//! The 64-byte footer at the end of the protected bytes: where the index starts, how many
//! frames of each kind precede it, a magic, and a 32-byte tag.
//!
//! Format 1: `u64 index_offset ‖ u64 data_frames ‖ u64 index_frames ‖ magic ‖ tag`.
//! Format 2: `u64 index_offset ‖ u64 data_frames ‖ u32 index_frames ‖ u32 flags ‖ magic ‖
//! tag`; flags bit 0: a signature frame precedes the footer (set exactly when the header has a
//! signer extension); other bits 0.

use super::{FormatError, Reader, Version};

/// Footer length, bytes.
pub const FOOTER_LEN: usize = 64;
/// Footer magic (bytes 24..32 of the footer).
pub const FOOTER_MAGIC: [u8; 8] = *b"KRYPTAZ\n";

/// Footer flags bit 0 (format 2): a signature frame precedes the footer. Other bits are 0.
pub const FOOTER_FLAG_SIGNATURE: u32 = 1;

/// Footer fields (see the module doc for each version's layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Byte offset of the first index frame from the start of the archive.
    pub index_offset: u64,
    /// Number of data frames (seq 0..data_frames).
    pub data_frames: u64,
    /// Number of index frames (at least 1).
    pub index_frames: u64,
}

impl Footer {
    /// The 32 bytes the tag covers (fields and magic) in `version`'s layout. Format 2 stores
    /// the index frame count in 32 bits: the writer never has more (an index of at most
    /// 2 GiB in blocks of at least one byte is cut into at most 4 MiB pieces).
    pub fn untagged(&self, version: Version) -> [u8; 32] {
        self.untagged_with_flags(version, 0)
    }

    /// [`Footer::untagged`] with the format-2 flags word `flags` (ignored in format 1).
    pub fn untagged_with_flags(&self, version: Version, flags: u32) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&self.index_offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.data_frames.to_le_bytes());
        match version {
            Version::V1 => b[16..24].copy_from_slice(&self.index_frames.to_le_bytes()),
            Version::V2 => {
                b[16..20].copy_from_slice(&(self.index_frames as u32).to_le_bytes());
                b[20..24].copy_from_slice(&flags.to_le_bytes());
            }
        }
        b[24..32].copy_from_slice(&FOOTER_MAGIC);
        b
    }

    /// Whether the footer bytes `b` of a `version` archive say a signature frame precedes them
    /// (flags bit 0; never in format 1). Call after [`Footer::parse`] accepted them.
    pub fn signed(b: &[u8; FOOTER_LEN], version: Version) -> bool {
        version == Version::V2 && b[20] & 1 == 1
    }

    /// Parses 64 footer bytes of a `version` archive into the footer and its tag (unchecked:
    /// the caller verifies it).
    pub fn parse(
        b: &[u8; FOOTER_LEN],
        version: Version,
    ) -> Result<(Footer, [u8; 32]), FormatError> {
        // The magic is checked first: a truncated archive's last 64 bytes are data, and their
        // "flags" must not be reported as a signature or unknown flags.
        if b[24..32] != FOOTER_MAGIC {
            return Err(FormatError::invalid(
                "footer",
                "bad footer magic (truncated or not a krypta archive)",
            ));
        }
        let mut r = Reader::new(b, "footer");
        let index_offset = r.u64()?;
        let data_frames = r.u64()?;
        let index_frames = match version {
            Version::V1 => r.u64()?,
            Version::V2 => {
                let n = r.u32()? as u64;
                let flags = r.u32()?;
                if flags & !FOOTER_FLAG_SIGNATURE != 0 {
                    return Err(FormatError::invalid(
                        "footer",
                        format!("unknown flags {flags:#010x}"),
                    ));
                }
                n
            }
        };
        r.array::<8>()?;
        if index_frames == 0 {
            return Err(FormatError::invalid("footer", "no index frames"));
        }
        let tag = r.array()?;
        Ok((
            Footer {
                index_offset,
                data_frames,
                index_frames,
            },
            tag,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the last 64 bytes of a truncated archive are data, and their bytes 20..24
    /// were reported as "flag bit 0 (a signature frame)" or "unknown flags" before the magic
    /// was looked at. The magic is checked first, in both versions.
    #[test]
    fn a_footer_without_its_magic_is_named_as_such_whatever_its_flags() {
        for flags in [0u32, 1, 0x76d3_e01e] {
            let mut b = [0xA5u8; FOOTER_LEN];
            b[20..24].copy_from_slice(&flags.to_le_bytes());
            for v in [Version::V1, Version::V2] {
                let e = Footer::parse(&b, v).unwrap_err().to_string();
                assert!(
                    e.contains("bad footer magic (truncated or not a krypta archive)"),
                    "{v:?} flags {flags:#x}: {e}"
                );
            }
        }
    }

    #[test]
    fn footer_round_trips() {
        let f = Footer {
            index_offset: 123_456,
            data_frames: 9,
            index_frames: 1,
        };
        for v in [Version::V1, Version::V2] {
            let mut b = [0u8; FOOTER_LEN];
            b[..32].copy_from_slice(&f.untagged(v));
            b[32..].copy_from_slice(&[7; 32]);
            assert_eq!(Footer::parse(&b, v).unwrap(), (f, [7; 32]));
            b[24] ^= 1;
            assert!(Footer::parse(&b, v).is_err());
        }
    }

    #[test]
    fn v2_footer_layout_and_flags() {
        let f = Footer {
            index_offset: 0x0102,
            data_frames: 3,
            index_frames: 2,
        };
        let u = f.untagged(Version::V2);
        assert_eq!(&u[16..24], &[2, 0, 0, 0, 0, 0, 0, 0]);
        let mut b = [0u8; FOOTER_LEN];
        b[..32].copy_from_slice(&u);
        for flag in [2u8, 3, 0x80] {
            let mut x = b;
            x[20] = flag;
            let e = Footer::parse(&x, Version::V2).unwrap_err().to_string();
            assert!(e.contains("unknown flags"), "{e}");
        }
        let mut x = b;
        x[..32].copy_from_slice(&f.untagged_with_flags(Version::V2, FOOTER_FLAG_SIGNATURE));
        assert_eq!(x[20], 1);
        assert_eq!(Footer::parse(&x, Version::V2).unwrap().0, f);
        assert!(Footer::signed(&x, Version::V2));
        assert!(!Footer::signed(&b, Version::V2));
        b[16..20].copy_from_slice(&[0; 4]);
        assert!(Footer::parse(&b, Version::V2).is_err(), "no index frames");
    }
}
