//! Format 2's block header: the first 24 bytes of every decrypted frame body (format 1's
//! 16-byte header is [`super::frame::BlockHeader`]).
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 1 | codec: 0 store, 1 zstd, 2 zstd against a base region, 3 diff against a base region (delta archives, [`BaseRegion`]) |
//! | 1 | 1 | BCJ filter: 0 none, 1 x86, 2 arm64, 3 arm, 4 armthumb, 5 powerpc, 6 sparc, 7 ia64, 8 riscv |
//! | 2 | 2 | reserved, 0 |
//! | 4 | 4 | raw length R, 1..=256 MiB |
//! | 8 | 8 | stream offset: the block's first byte's offset in its stream (record stream for data frames, index stream for index frames); also the BCJ start position, which must be a multiple of the filter's alignment |
//! | 16 | 4 | first record: offset in the block of the first record that starts in it, `0xFFFFFFFF` when none does; 0 in index blocks |
//! | 20 | 4 | reference length: stream bytes right before the block that its zstd frame uses as a raw-content prefix; 0 = independent |
//!
//! What this parser checks needs nothing but the body; the reader checks the rest against
//! the stream (stream offsets add up, first-record offsets match what it parses, a reference
//! stays within its group) and [`BlockHeaderV2::check_for`] the rules of index blocks.

use super::frame::FrameKind;
use super::limits::{MAX_BLOCK_SIZE, MAX_REFERENCE_LEN};
use super::{FormatError, Reader};
use crate::codec::{Codec, Filter, bcj};

/// Length of a format-2 block header, bytes.
pub const BLOCK_HEADER_LEN_V2: usize = 24;
/// The first-record value of a block in which no record starts (it lies inside one DATA
/// record's content).
pub const NO_RECORD: u32 = 0xFFFF_FFFF;

/// A format-2 block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeaderV2 {
    /// How the payload is encoded.
    pub codec: Codec,
    /// BCJ filter applied before compression.
    pub filter: Filter,
    /// Decoded length, bytes (1..=MAX_BLOCK_SIZE).
    pub raw_len: u32,
    /// Offset of the block's first byte in its stream, bytes; the BCJ start position.
    pub stream_offset: u64,
    /// Offset in the block of the first record starting in it; `None` (stored as
    /// [`NO_RECORD`]) when none does.
    pub first_record: Option<u32>,
    /// Stream bytes right before the block used as the zstd frame's raw-content prefix.
    pub reference_len: u32,
}

impl BlockHeaderV2 {
    /// The 24 bytes.
    pub fn to_bytes(&self) -> [u8; BLOCK_HEADER_LEN_V2] {
        let mut b = [0u8; BLOCK_HEADER_LEN_V2];
        b[0] = self.codec as u8;
        b[1] = self.filter as u8;
        b[4..8].copy_from_slice(&self.raw_len.to_le_bytes());
        b[8..16].copy_from_slice(&self.stream_offset.to_le_bytes());
        b[16..20].copy_from_slice(&self.first_record.unwrap_or(NO_RECORD).to_le_bytes());
        b[20..24].copy_from_slice(&self.reference_len.to_le_bytes());
        b
    }

    /// Parses the first 24 bytes of a verified body and checks them against each other and
    /// the payload length (`body.len() - 24`): known codec and filter, zero reserved bytes,
    /// `1 <= R <= 256 MiB`, a stored payload of exactly R bytes and a zstd payload of fewer,
    /// a first record below R, a reference length of at most 256 MiB and at most the stream
    /// offset (0 for stored blocks), and a stream offset on the filter's alignment (4 for
    /// arm, arm64, powerpc, sparc; 2 for armthumb, riscv; 16 for ia64), so no rounding exists.
    pub fn parse(body: &[u8]) -> Result<Self, FormatError> {
        let w = "block header";
        let mut r = Reader::new(body, w);
        let codec = r.u8()?;
        let codec = Codec::from_u8(codec)
            .ok_or_else(|| FormatError::invalid(w, format!("unknown codec {codec}")))?;
        let filter = r.u8()?;
        let filter = Filter::from_u8(filter)
            .ok_or_else(|| FormatError::invalid(w, format!("unknown filter {filter}")))?;
        r.reserved_zero(2)?;
        let raw_len = r.u32()?;
        if raw_len == 0 || raw_len as usize > MAX_BLOCK_SIZE {
            return Err(FormatError::invalid(
                w,
                format!("raw length {raw_len} outside 1..={MAX_BLOCK_SIZE}"),
            ));
        }
        let stream_offset = r.u64()?;
        let first_record = match r.u32()? {
            NO_RECORD => None,
            v if v < raw_len => Some(v),
            v => {
                return Err(FormatError::invalid(
                    w,
                    format!("first record at {v} is not inside the {raw_len}-byte block"),
                ));
            }
        };
        let reference_len = r.u32()?;
        let payload_len = body.len() - BLOCK_HEADER_LEN_V2;
        match codec {
            Codec::Store if payload_len != raw_len as usize => {
                return Err(FormatError::invalid(
                    w,
                    format!("stored block of {raw_len} bytes has a {payload_len}-byte payload"),
                ));
            }
            Codec::Zstd if payload_len >= raw_len as usize => {
                return Err(FormatError::invalid(
                    w,
                    "compressed payload is not smaller than the block (it should have been stored)",
                ));
            }
            Codec::ZstdBase
                if payload_len < BASE_REGION_LEN + 4
                    || payload_len - BASE_REGION_LEN >= raw_len as usize =>
            {
                return Err(FormatError::invalid(
                    w,
                    format!(
                        "base-referencing payload of {payload_len} bytes: a 16-byte region and a zstd frame smaller than the block"
                    ),
                ));
            }
            Codec::DiffBase
                if payload_len < BASE_REGION_LEN + crate::codec::DIFF_HEAD_LEN
                    || payload_len - BASE_REGION_LEN >= raw_len as usize =>
            {
                return Err(FormatError::invalid(
                    w,
                    format!(
                        "diff payload of {payload_len} bytes: a 16-byte region, a 17-byte head and streams, smaller than the block"
                    ),
                ));
            }
            _ => {}
        }
        if reference_len > MAX_REFERENCE_LEN
            || reference_len as u64 > stream_offset
            || (codec != Codec::Zstd && reference_len != 0)
        {
            return Err(FormatError::invalid(
                w,
                format!(
                    "reference length {reference_len} (stream offset {stream_offset}, {} block): \
                     at most 256 MiB, at most the stream offset, 0 when stored",
                    codec.name()
                ),
            ));
        }
        if stream_offset.checked_add(raw_len as u64).is_none() {
            return Err(FormatError::invalid(w, "stream offset overflows"));
        }
        let align = bcj::alignment(filter) as u64;
        if stream_offset % align != 0 {
            return Err(FormatError::invalid(
                w,
                format!(
                    "stream offset {stream_offset} is not a multiple of the {} filter's alignment {align}",
                    filter.name()
                ),
            ));
        }
        Ok(BlockHeaderV2 {
            codec,
            filter,
            raw_len,
            stream_offset,
            first_record,
            reference_len,
        })
    }

    /// The rules that depend on the frame kind: an index block has no filter, no reference
    /// (neither to its stream nor to a base) and first record 0 (the index is one structure,
    /// not a sequence of records). Data blocks have no further rule here.
    pub fn check_for(&self, kind: FrameKind) -> Result<(), FormatError> {
        if kind == FrameKind::Index
            && (self.filter != Filter::None
                || self.reference_len != 0
                || self.codec.reads_base()
                || self.first_record != Some(0))
        {
            return Err(FormatError::invalid(
                "index block header",
                format!(
                    "codec {}, filter {}, reference length {}, first record {:?} (an index block has filter none, reference 0, no base region and first record 0)",
                    self.codec.name(),
                    self.filter.name(),
                    self.reference_len,
                    self.first_record
                ),
            ));
        }
        Ok(())
    }
}

/// Length of a [`BaseRegion`] descriptor, bytes.
pub const BASE_REGION_LEN: usize = 16;

/// The region of a delta archive's base that a `zstd+base` block (codec 2) decodes against:
/// the first 16 bytes of its payload, before the zstd frame (docs/FORMAT.md §16.2).
///
/// | off | size | field |
/// |---|---|---|
/// | 0 | 8 | base data frame seq where the region starts |
/// | 8 | 4 | offset of the region's first byte in that frame's decoded block |
/// | 12 | 4 | region length, 1..=256 MiB; it runs on through the decoded blocks of the frames after `seq` |
///
/// The region is decoded base content (after the base block's BCJ filter was undone), so a
/// reader fetches and authenticates exactly those base frames before it decodes the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BaseRegion {
    /// The base data frame (sequence number) holding the region's first byte.
    pub seq: u64,
    /// Offset of the first byte in that frame's decoded block.
    pub offset: u32,
    /// Length, bytes.
    pub len: u32,
}

impl BaseRegion {
    /// The 16 bytes.
    pub fn to_bytes(&self) -> [u8; BASE_REGION_LEN] {
        let mut b = [0u8; BASE_REGION_LEN];
        b[..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..12].copy_from_slice(&self.offset.to_le_bytes());
        b[12..16].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Parses the descriptor at the start of a `zstd+base` payload and returns it with the
    /// zstd frame after it. A length of 0 or beyond [`MAX_REFERENCE_LEN`] is refused.
    pub fn parse(payload: &[u8]) -> Result<(BaseRegion, &[u8]), FormatError> {
        let w = "base region";
        let mut r = Reader::new(payload, w);
        let seq = r.u64()?;
        let offset = r.u32()?;
        let len = r.u32()?;
        if len == 0 || len > MAX_REFERENCE_LEN {
            return Err(FormatError::invalid(
                w,
                format!("length {len} outside 1..={MAX_REFERENCE_LEN}"),
            ));
        }
        Ok((BaseRegion { seq, offset, len }, &payload[BASE_REGION_LEN..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(raw_len: u32) -> BlockHeaderV2 {
        BlockHeaderV2 {
            codec: Codec::Store,
            filter: Filter::None,
            raw_len,
            stream_offset: 4096,
            first_record: Some(3),
            reference_len: 0,
        }
    }

    fn body(h: &BlockHeaderV2, payload: usize) -> Vec<u8> {
        let mut b = h.to_bytes().to_vec();
        b.resize(BLOCK_HEADER_LEN_V2 + payload, 0);
        b
    }

    #[test]
    fn block_header_v2_parse_of_write_is_identity() {
        let cases = [
            stored(10),
            BlockHeaderV2 {
                first_record: None,
                ..stored(10)
            },
            BlockHeaderV2 {
                codec: Codec::Zstd,
                filter: Filter::Ia64,
                raw_len: 100,
                stream_offset: 1 << 40,
                first_record: Some(99),
                reference_len: MAX_REFERENCE_LEN,
            },
        ];
        for h in cases {
            let payload = if h.codec == Codec::Store { 10 } else { 99 };
            assert_eq!(BlockHeaderV2::parse(&body(&h, payload)).unwrap(), h);
        }
        assert_eq!(
            stored(10).to_bytes(),
            [
                0, 0, 0, 0, 10, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0
            ]
        );
        assert_eq!(
            BlockHeaderV2 {
                first_record: None,
                ..stored(1)
            }
            .to_bytes()[16..20],
            [0xff; 4]
        );
    }

    #[test]
    fn block_header_v2_refuses_each_broken_rule() {
        let zstd = BlockHeaderV2 {
            codec: Codec::Zstd,
            ..stored(10)
        };
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (body(&stored(10), 9), "payload"),
            (body(&zstd, 10), "not smaller"),
            (
                body(
                    &BlockHeaderV2 {
                        first_record: Some(10),
                        ..stored(10)
                    },
                    10,
                ),
                "not inside",
            ),
            (
                body(
                    &BlockHeaderV2 {
                        reference_len: 1,
                        ..stored(10)
                    },
                    10,
                ),
                "reference length",
            ),
            (
                body(
                    &BlockHeaderV2 {
                        reference_len: 4097,
                        ..zstd
                    },
                    5,
                ),
                "reference length",
            ),
            (
                body(
                    &BlockHeaderV2 {
                        filter: Filter::Arm64,
                        stream_offset: 4098,
                        ..stored(10)
                    },
                    10,
                ),
                "alignment 4",
            ),
            (
                body(
                    &BlockHeaderV2 {
                        stream_offset: u64::MAX,
                        ..stored(10)
                    },
                    10,
                ),
                "overflows",
            ),
            (body(&stored(0), 0), "raw length 0"),
        ];
        for (b, want) in cases {
            let e = BlockHeaderV2::parse(&b).unwrap_err().to_string();
            assert!(e.contains(want), "{e} (wanted {want})");
        }
        let mut b = body(&stored(10), 10);
        b[2] = 1;
        assert!(BlockHeaderV2::parse(&b).is_err(), "reserved byte");
        // x86 has no alignment: any stream offset.
        let x86 = BlockHeaderV2 {
            filter: Filter::X86,
            stream_offset: 4097,
            ..stored(10)
        };
        assert_eq!(BlockHeaderV2::parse(&body(&x86, 10)).unwrap(), x86);
    }

    #[test]
    fn index_blocks_have_no_filter_no_reference_and_first_record_0() {
        let ok = BlockHeaderV2 {
            first_record: Some(0),
            ..stored(10)
        };
        ok.check_for(FrameKind::Index).unwrap();
        for bad in [
            BlockHeaderV2 {
                filter: Filter::X86,
                ..ok
            },
            BlockHeaderV2 {
                first_record: None,
                ..ok
            },
            BlockHeaderV2 {
                first_record: Some(3),
                ..ok
            },
            BlockHeaderV2 {
                codec: Codec::Zstd,
                reference_len: 5,
                ..ok
            },
        ] {
            assert!(bad.check_for(FrameKind::Index).is_err(), "{bad:?}");
            bad.check_for(FrameKind::Data).unwrap();
        }
    }
}
