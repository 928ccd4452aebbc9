//! Fuzz target: `FrameHeader::parse` on the first 16 bytes and `BlockHeader::parse` on the
//! rest (a decoded body). Neither may panic; whatever parses must re-serialise to the same
//! bytes (`to_bytes`).

#![no_main]

use krypta::format::frame::{BLOCK_HEADER_LEN, BlockHeader, FRAME_HEADER_LEN, FrameHeader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_first_chunk::<FRAME_HEADER_LEN>() else {
        return;
    };
    if let Ok(fh) = FrameHeader::parse(head) {
        assert_eq!(&fh.to_bytes(), head);
        assert_eq!(fh.frame_len(), 48 + u64::from(fh.body_len));
    }
    if let Ok(bh) = BlockHeader::parse(body) {
        assert_eq!(bh.to_bytes()[..], body[..BLOCK_HEADER_LEN]);
        assert!(bh.raw_len >= 1);
    }
});
