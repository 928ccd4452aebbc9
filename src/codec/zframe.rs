//! The zstd frame rules of format 2 (docs/FORMAT.md §2.2), checked on a block's payload
//! before it is decoded, from the frame header of RFC 8878 §3.1.1.1:
//!
//! - exactly one zstd frame (magic `28 B5 2F FD`; a skippable frame is not one), and no byte
//!   after it;
//! - `Frame_Content_Size` present and equal to the block's raw length R;
//! - no dictionary id (the `Dictionary_ID` field absent or 0): a referencing block's prefix
//!   is raw content, never a zstd dictionary;
//! - `Window_Size` (the content size for a single-segment frame) at most 512 MiB
//!   ([`MAX_ZSTD_WINDOW`]): a decoder must support that much and need not support more;
//! - the `Content_Checksum_flag` may be set (a decoder checks it); the reserved bit must be 0.
//!
//! Format 1 checks only the first two rules (`check_frame` in `codec/block/decode.rs`), as it
//! always did.

use super::CodecError;
use crate::format::limits::MAX_ZSTD_WINDOW;

/// The zstd frame magic number, little-endian (RFC 8878 §3.1.1).
const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// What a zstd frame header declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// `Frame_Content_Size`, when present.
    pub content_size: Option<u64>,
    /// `Window_Size`, bytes (the content size for a single-segment frame).
    pub window_size: u64,
    /// `Dictionary_ID` (0 when absent).
    pub dict_id: u32,
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |v, &x| (v << 8) | x as u64)
}

/// Parses the frame header at the start of `payload` (RFC 8878 §3.1.1.1).
pub fn frame_info(payload: &[u8]) -> Result<FrameInfo, CodecError> {
    if payload.len() < 5 || payload[..4] != MAGIC {
        return Err(CodecError::NotAFrame);
    }
    let fhd = payload[4];
    let fcs_flag = fhd >> 6;
    let single = fhd & 0x20 != 0;
    if fhd & 0x08 != 0 {
        return Err(CodecError::FrameRule(
            "the frame header's reserved bit is set",
        ));
    }
    let did_len = [0usize, 1, 2, 4][(fhd & 3) as usize];
    let fcs_len = match fcs_flag {
        0 if single => 1,
        0 => 0,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let wd_len = usize::from(!single);
    let need = 5 + wd_len + did_len + fcs_len;
    if payload.len() < need {
        return Err(CodecError::Truncated);
    }
    let mut at = 5;
    let window_desc = (!single).then(|| payload[at]);
    at += wd_len;
    let dict_id = le(&payload[at..at + did_len]) as u32;
    at += did_len;
    let content_size = (fcs_len > 0).then(|| {
        let v = le(&payload[at..at + fcs_len]);
        if fcs_len == 2 { v + 256 } else { v }
    });
    let window_size = match window_desc {
        Some(wd) => {
            let log = 10 + (wd >> 3) as u32;
            let base = 1u64 << log;
            base + (base / 8) * (wd & 7) as u64
        }
        None => content_size.unwrap_or(0),
    };
    Ok(FrameInfo {
        content_size,
        window_size,
        dict_id,
    })
}

/// Checks the format-2 rules on a block payload that must decode to `raw_len` bytes (see the
/// module doc).
pub fn check_v2(payload: &[u8], raw_len: usize) -> Result<(), CodecError> {
    let info = frame_info(payload)?;
    let Some(declared) = info.content_size else {
        return Err(CodecError::NoContentSize);
    };
    if declared != raw_len as u64 {
        return Err(CodecError::SizeMismatch {
            expected: raw_len as u64,
            got: declared,
        });
    }
    if info.dict_id != 0 {
        return Err(CodecError::FrameRule("the frame names a dictionary id"));
    }
    if info.window_size > MAX_ZSTD_WINDOW {
        return Err(CodecError::WindowTooLarge {
            window: info.window_size,
        });
    }
    let frame_len =
        zstd::zstd_safe::find_frame_compressed_size(payload).map_err(|_| CodecError::Truncated)?;
    if frame_len != payload.len() {
        return Err(CodecError::TrailingData {
            frame_len: frame_len as u64,
            payload_len: payload.len() as u64,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compress(data: &[u8], level: i32) -> Vec<u8> {
        zstd::bulk::compress(data, level).unwrap()
    }

    #[test]
    fn frame_info_reads_what_libzstd_writes() {
        let data = vec![7u8; 100_000];
        let f = compress(&data, 3);
        let info = frame_info(&f).unwrap();
        assert_eq!(info.content_size, Some(100_000));
        assert_eq!(info.dict_id, 0);
        assert!(info.window_size >= 100_000, "{info:?}");
        check_v2(&f, 100_000).unwrap();
        assert!(matches!(
            check_v2(&f, 99_999),
            Err(CodecError::SizeMismatch { .. })
        ));
        let mut two = f.clone();
        two.extend_from_slice(&f);
        assert!(matches!(
            check_v2(&two, 100_000),
            Err(CodecError::TrailingData { .. })
        ));
    }

    #[test]
    fn hand_made_headers_decode_per_rfc_8878() {
        // Not single segment, window descriptor 0x1A: log 10 + 3 = 13, mantissa 2:
        // 8192 + 2 * 1024; FCS flag 2 (4 bytes), dictionary flag 1 (1 byte).
        let h = [0x28, 0xB5, 0x2F, 0xFD, 0x81, 0x1A, 0x05, 0x10, 0, 0, 0];
        assert_eq!(
            frame_info(&h).unwrap(),
            FrameInfo {
                content_size: Some(16),
                window_size: 8192 + 2048,
                dict_id: 5
            }
        );
        assert!(matches!(
            check_v2(&h, 16),
            Err(CodecError::FrameRule("the frame names a dictionary id"))
        ));
        // FCS flag 1: two bytes + 256.
        let h = [0x28, 0xB5, 0x2F, 0xFD, 0x60, 0x01, 0x00];
        assert_eq!(frame_info(&h).unwrap().content_size, Some(257));
        // Window of 2^30 (exponent 20) is beyond what a decoder must support.
        let h = [0x28, 0xB5, 0x2F, 0xFD, 0x80, 20 << 3, 0, 0, 0, 1];
        assert!(matches!(
            check_v2(&h, 1 << 24),
            Err(CodecError::WindowTooLarge {
                window: 1_073_741_824
            })
        ));
        // No content size.
        let h = [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x00];
        assert!(matches!(check_v2(&h, 1), Err(CodecError::NoContentSize)));
        // A skippable frame is not a zstd frame; the reserved bit must be clear.
        assert!(matches!(
            frame_info(&[0x50, 0x2A, 0x4D, 0x18, 0, 0, 0, 0]),
            Err(CodecError::NotAFrame)
        ));
        assert!(frame_info(&[0x28, 0xB5, 0x2F, 0xFD, 0x28, 1]).is_err());
        assert!(matches!(
            frame_info(&[0x28, 0xB5, 0x2F, 0xFD, 0xC0, 1, 2]),
            Err(CodecError::Truncated)
        ));
    }
}
