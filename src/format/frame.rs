//! Frames: the unit of storage after the header. Each frame is
//! `clear header (16) ‖ body (body_len) ‖ tag (32)`; the body starts with a block header —
//! 16 bytes in format 1 ([`BlockHeader`]: codec, filter, raw length, filter start), 24 in
//! format 2 ([`super::block::BlockHeaderV2`]) — followed by the codec payload. In an
//! encrypted archive the whole body is AES-256-CTR ciphertext, so codec, filter and raw
//! length are hidden; the tag covers everything (see `crypto::frame`). The frame header and
//! its tag are the same in both versions.

use super::block::BLOCK_HEADER_LEN_V2;
use super::limits::MAX_BLOCK_SIZE;
pub use super::limits::MAX_BODY_LEN;
use super::{FormatError, Reader, Version};
use crate::codec::{Codec, Filter};

/// Length of the clear frame header, bytes.
pub const FRAME_HEADER_LEN: usize = 16;
/// Length of a frame tag (HMAC-SHA256 or BLAKE3), bytes.
pub const TAG_LEN: usize = 32;
/// Length of the format-1 block header at the start of every body, bytes.
pub const BLOCK_HEADER_LEN: usize = 16;
/// Largest frame body of format 2, bytes: its 24-byte block header and a stored maximal block.
pub const MAX_BODY_LEN_V2: usize = BLOCK_HEADER_LEN_V2 + MAX_BLOCK_SIZE;

/// The smallest and largest body length of a frame in `version`, bytes: a block header and
/// a payload of at most one maximal block.
pub fn body_len_range(version: Version) -> std::ops::RangeInclusive<usize> {
    match version {
        Version::V1 => BLOCK_HEADER_LEN..=MAX_BODY_LEN,
        Version::V2 => BLOCK_HEADER_LEN_V2..=MAX_BODY_LEN_V2,
    }
}

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// A block of the record stream (entries and their content).
    Data = 1,
    /// A block of the index.
    Index = 2,
}

/// Frame kind 3 is the signature frame of format 2 (`super::signature`: between the last
/// index frame and the footer, announced by footer flag bit 0); it is parsed there, never as
/// a data or index frame.
pub const FRAME_KIND_SIGNATURE: u8 = 3;

/// The clear 16-byte frame header: `u8 kind, u8 flags, u16 0, u32 body_len, u64 seq`
/// (little-endian). Flags bit 0 = LAST, set on the final index frame only (the footer
/// follows it; docs/FORMAT.md §2); other bits are zero. A data frame never carries LAST:
/// the data frames end where the first index frame begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Data or index.
    pub kind: FrameKind,
    /// True on the final index frame only ([`FrameHeader::check_last_flag`]).
    pub last: bool,
    /// Body length, bytes (BLOCK_HEADER_LEN..=MAX_BODY_LEN).
    pub body_len: u32,
    /// Sequence number: 0 for the first frame after the header, +1 for each frame after it,
    /// across data and index frames.
    pub seq: u64,
}

impl FrameHeader {
    /// The 16 header bytes.
    pub fn to_bytes(&self) -> [u8; FRAME_HEADER_LEN] {
        let mut b = [0u8; FRAME_HEADER_LEN];
        b[0] = self.kind as u8;
        b[1] = self.last as u8;
        b[4..8].copy_from_slice(&self.body_len.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b
    }

    /// Parses and validates the 16 header bytes of a `version` archive (the body length
    /// bounds are the version's, [`body_len_range`]).
    pub fn parse(b: &[u8; FRAME_HEADER_LEN], version: Version) -> Result<Self, FormatError> {
        let mut r = Reader::new(b, "frame header");
        let kind = match r.u8()? {
            1 => FrameKind::Data,
            2 => FrameKind::Index,
            FRAME_KIND_SIGNATURE if version == Version::V2 => {
                return Err(FormatError::invalid(
                    "frame header",
                    "a signature frame (kind 3) where a data or index frame belongs",
                ));
            }
            k => {
                return Err(FormatError::invalid(
                    "frame header",
                    format!("unknown frame kind {k}"),
                ));
            }
        };
        let flags = r.u8()?;
        if flags > 1 {
            return Err(FormatError::invalid(
                "frame header",
                format!("unknown flags {flags:#04x}"),
            ));
        }
        r.reserved_zero(2)?;
        let body_len = r.u32()?;
        let range = body_len_range(version);
        if !range.contains(&(body_len as usize)) {
            return Err(FormatError::invalid(
                "frame header",
                format!(
                    "body length {body_len} outside {}..={}",
                    range.start(),
                    range.end()
                ),
            ));
        }
        let seq = r.u64()?;
        Ok(FrameHeader {
            kind,
            last: flags == 1,
            body_len,
            seq,
        })
    }

    /// The one rule on the LAST flag that a frame header shows alone: a data frame never
    /// carries it (only the final index frame does). Whether an index frame's flag is right
    /// depends on the frames after it (the footer's count); the reader checks that.
    pub fn check_last_flag(&self) -> Result<(), FormatError> {
        if self.kind == FrameKind::Data && self.last {
            return Err(FormatError::invalid(
                "frame header",
                format!(
                    "data frame seq {} has the LAST flag, which only the final index frame carries",
                    self.seq
                ),
            ));
        }
        Ok(())
    }

    /// Total bytes the frame occupies in the archive.
    pub fn frame_len(&self) -> u64 {
        (FRAME_HEADER_LEN + TAG_LEN) as u64 + self.body_len as u64
    }
}

/// The 16-byte block header at the start of each (decrypted) body:
/// `u8 codec, u8 filter, u16 0, u32 raw_len, u64 filter_start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    /// How the payload is encoded.
    pub codec: Codec,
    /// BCJ filter applied before compression (None for stored blocks is not required).
    pub filter: Filter,
    /// Decoded length, bytes (1..=MAX_BLOCK_SIZE).
    pub raw_len: u32,
    /// BCJ start position (the block's offset in the record stream; the filter uses it mod 2^32).
    pub filter_start: u64,
}

impl BlockHeader {
    /// The 16 bytes.
    pub fn to_bytes(&self) -> [u8; BLOCK_HEADER_LEN] {
        let mut b = [0u8; BLOCK_HEADER_LEN];
        b[0] = self.codec as u8;
        b[1] = self.filter as u8;
        b[4..8].copy_from_slice(&self.raw_len.to_le_bytes());
        b[8..16].copy_from_slice(&self.filter_start.to_le_bytes());
        b
    }

    /// Parses the first 16 bytes of a verified body and checks them against the payload
    /// length (`body_len - 16`): a stored payload must be exactly `raw_len` bytes.
    pub fn parse(body: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(body, "block header");
        let codec = r.u8()?;
        // Codec 2 (zstd against a delta base) is format 2's alone.
        let codec = Codec::from_u8(codec)
            .filter(|c| !c.reads_base())
            .ok_or_else(|| {
                FormatError::invalid("block header", format!("unknown codec {codec}"))
            })?;
        let filter = r.u8()?;
        let filter = Filter::from_u8(filter).ok_or_else(|| {
            FormatError::invalid("block header", format!("unknown filter {filter}"))
        })?;
        r.reserved_zero(2)?;
        let raw_len = r.u32()?;
        if raw_len == 0 || raw_len as usize > MAX_BLOCK_SIZE {
            return Err(FormatError::invalid(
                "block header",
                format!("raw length {raw_len} outside 1..={MAX_BLOCK_SIZE}"),
            ));
        }
        let filter_start = r.u64()?;
        let payload_len = body.len() - BLOCK_HEADER_LEN;
        match codec {
            Codec::Store if payload_len != raw_len as usize => {
                return Err(FormatError::invalid(
                    "block header",
                    format!("stored block of {raw_len} bytes has a {payload_len}-byte payload"),
                ));
            }
            Codec::Zstd if payload_len >= raw_len as usize => {
                return Err(FormatError::invalid(
                    "block header",
                    "compressed payload is not smaller than the block (it should have been stored)",
                ));
            }
            _ => {}
        }
        Ok(BlockHeader {
            codec,
            filter,
            raw_len,
            filter_start,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_header_round_trips_and_rejects_bad_fields() {
        let h = FrameHeader {
            kind: FrameKind::Index,
            last: true,
            body_len: 1000,
            seq: 1 << 40,
        };
        let b = h.to_bytes();
        assert_eq!(b[..8], [2, 1, 0, 0, 0xe8, 0x03, 0, 0]);
        for v in [Version::V1, Version::V2] {
            assert_eq!(FrameHeader::parse(&b, v).unwrap(), h);
            for (i, x) in [(0usize, 3u8), (0, 4), (1, 2), (2, 1), (3, 1)] {
                let mut bad = b;
                bad[i] = x;
                assert!(FrameHeader::parse(&bad, v).is_err(), "byte {i} = {x}");
            }
            let mut huge = b;
            huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
            assert!(FrameHeader::parse(&huge, v).is_err());
        }
        assert_eq!(h.frame_len(), 1048);
        // Body length bounds follow the block header of each version.
        for (len, v1, v2) in [
            (16u32, true, false),
            (24, true, true),
            ((16 + MAX_BLOCK_SIZE) as u32, true, true),
            ((24 + MAX_BLOCK_SIZE) as u32, false, true),
            ((25 + MAX_BLOCK_SIZE) as u32, false, false),
        ] {
            let mut x = b;
            x[4..8].copy_from_slice(&len.to_le_bytes());
            assert_eq!(FrameHeader::parse(&x, Version::V1).is_ok(), v1, "{len}");
            assert_eq!(FrameHeader::parse(&x, Version::V2).is_ok(), v2, "{len}");
        }
    }

    #[test]
    fn only_an_index_frame_may_carry_the_last_flag() {
        let h = |kind, last| FrameHeader {
            kind,
            last,
            body_len: 16,
            seq: 4,
        };
        h(FrameKind::Index, true).check_last_flag().unwrap();
        h(FrameKind::Index, false).check_last_flag().unwrap();
        h(FrameKind::Data, false).check_last_flag().unwrap();
        assert_eq!(
            h(FrameKind::Data, true).check_last_flag().unwrap_err(),
            FormatError::invalid(
                "frame header",
                "data frame seq 4 has the LAST flag, which only the final index frame carries"
            )
        );
    }

    #[test]
    fn block_header_checks_sizes_against_payload() {
        let h = BlockHeader {
            codec: Codec::Store,
            filter: Filter::X86,
            raw_len: 5,
            filter_start: 7,
        };
        let mut body = h.to_bytes().to_vec();
        body.extend_from_slice(b"hello");
        assert_eq!(BlockHeader::parse(&body).unwrap(), h);
        body.push(0);
        assert!(BlockHeader::parse(&body).is_err());
        let z = BlockHeader {
            codec: Codec::Zstd,
            filter: Filter::None,
            raw_len: 3,
            filter_start: 0,
        };
        let mut zb = z.to_bytes().to_vec();
        zb.extend_from_slice(b"abc");
        assert!(
            BlockHeader::parse(&zb).is_err(),
            "zstd payload as large as raw"
        );
        let big = BlockHeader {
            codec: Codec::Zstd,
            filter: Filter::None,
            raw_len: u32::MAX,
            filter_start: 0,
        };
        assert!(BlockHeader::parse(&big.to_bytes()).is_err());
    }
}
