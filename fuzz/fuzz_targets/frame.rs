//! Fuzz target: `FrameHeader::parse` on the first 16 bytes (in the format version bit 0 of
//! the 17th byte picks) and the block header of that version on the rest (a decoded body:
//! `BlockHeader` of format 1, `BlockHeaderV2` of format 2, with its index-block rules).
//! Nothing may panic; whatever parses must re-serialise to the same bytes (`to_bytes`).

#![no_main]

use krypta::format::Version;
use krypta::format::block::{BLOCK_HEADER_LEN_V2, BlockHeaderV2};
use krypta::format::frame::{
    BLOCK_HEADER_LEN, BlockHeader, FRAME_HEADER_LEN, FrameHeader, FrameKind,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<FRAME_HEADER_LEN>() else {
        return;
    };
    let Some((&v, body)) = rest.split_first() else {
        return;
    };
    let version = if v & 1 == 0 { Version::V1 } else { Version::V2 };
    if let Ok(fh) = FrameHeader::parse(head, version) {
        assert_eq!(&fh.to_bytes(), head);
        assert_eq!(fh.frame_len(), 48 + u64::from(fh.body_len));
    }
    match version {
        Version::V1 => {
            if let Ok(bh) = BlockHeader::parse(body) {
                assert_eq!(bh.to_bytes()[..], body[..BLOCK_HEADER_LEN]);
                assert!(bh.raw_len >= 1);
            }
        }
        Version::V2 => {
            if let Ok(bh) = BlockHeaderV2::parse(body) {
                assert_eq!(bh.to_bytes()[..], body[..BLOCK_HEADER_LEN_V2]);
                assert!(bh.raw_len >= 1);
                assert!(u64::from(bh.reference_len) <= bh.stream_offset);
                let _ = bh.check_for(FrameKind::Index);
            }
        }
    }
});
