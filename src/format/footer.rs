//! The 64-byte footer at the very end of an archive: where the index starts, how many frames
//! of each kind precede it, a magic, and a 32-byte tag.

use super::{FormatError, Reader};

/// Footer length, bytes.
pub const FOOTER_LEN: usize = 64;
/// Footer magic (bytes 24..32 of the footer).
pub const FOOTER_MAGIC: [u8; 8] = *b"KRYPTAZ\n";

/// Footer fields: `u64 index_offset, u64 data_frames, u64 index_frames, magic[8], tag[32]`.
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
    /// The 32 bytes the tag covers (fields and magic).
    pub fn untagged(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&self.index_offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.data_frames.to_le_bytes());
        b[16..24].copy_from_slice(&self.index_frames.to_le_bytes());
        b[24..32].copy_from_slice(&FOOTER_MAGIC);
        b
    }

    /// Parses 64 footer bytes into the footer and its tag (unchecked: the caller verifies).
    pub fn parse(b: &[u8; FOOTER_LEN]) -> Result<(Footer, [u8; 32]), FormatError> {
        let mut r = Reader::new(b, "footer");
        let index_offset = r.u64()?;
        let data_frames = r.u64()?;
        let index_frames = r.u64()?;
        if r.array::<8>()? != FOOTER_MAGIC {
            return Err(FormatError::invalid(
                "footer",
                "bad footer magic (truncated or not a krypta archive)",
            ));
        }
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

    #[test]
    fn footer_round_trips() {
        let f = Footer {
            index_offset: 123_456,
            data_frames: 9,
            index_frames: 1,
        };
        let mut b = [0u8; FOOTER_LEN];
        b[..32].copy_from_slice(&f.untagged());
        b[32..].copy_from_slice(&[7; 32]);
        assert_eq!(Footer::parse(&b).unwrap(), (f, [7; 32]));
        b[24] ^= 1;
        assert!(Footer::parse(&b).is_err());
    }
}
