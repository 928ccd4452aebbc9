//! Fuzz target: the `diff+base` encoder (codec 3, docs/FORMAT.md §16.6) on an arbitrary
//! block against an arbitrary region. Its payload must decode with the region to exactly
//! the block: a payload the decoder refuses or that decodes to other bytes is a fault of
//! the encoder (the archive writer would silently fall back to zstd's frame for it).
//!
//! Input layout: `u16 LE region length (at most the bytes left), u8 effort (mod 3: fast,
//! normal, max), region, block…`. An empty region is allowed here, though the format's
//! regions never are (§16.2).

#![no_main]

use krypta::codec::{BlockDecoder, DiffEffort, DiffEncoder, Filter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let n = (u16::from_le_bytes([head[0], head[1]]) as usize).min(rest.len());
    let effort = DiffEffort::ALL[usize::from(head[2] % 3)];
    let (region, block) = rest.split_at(n);
    let mut enc = DiffEncoder::default();
    let mut payload = Vec::new();
    enc.encode(block, region, effort, &mut payload)
        .expect("the encoder makes a payload of any block");
    let mut dec = BlockDecoder::new().expect("a decoder");
    let mut out = Vec::new();
    if let Err(e) = dec.decode_diff(Filter::None, 0, &payload, block.len(), region, &mut out) {
        panic!(
            "payload of a {}-byte block against a {}-byte region does not decode: {e}",
            block.len(),
            region.len()
        );
    }
    assert!(out == block, "payload decodes to other bytes");
});
