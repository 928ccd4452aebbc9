//! Fuzz target: the `diff+base` decoder (codec 3, docs/FORMAT.md §16.6) on an arbitrary
//! payload against an arbitrary region. It must never panic or allocate beyond what the
//! raw length allows, must produce exactly `raw_len` bytes when it succeeds and leave the
//! output empty when it fails.
//!
//! Input layout: `u32 LE raw_len (mod 1 MiB, 0 → 1), u16 LE region length, region,
//! payload…` (the payload as it follows the 16-byte region descriptor).

#![no_main]

use krypta::codec::{BlockDecoder, Filter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<6>() else {
        return;
    };
    let raw_len = (u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize % (1 << 20)).max(1);
    let n = (u16::from_le_bytes([head[4], head[5]]) as usize).min(rest.len()).max(1);
    if rest.len() < n {
        return;
    }
    let (region, payload) = rest.split_at(n);
    let Ok(mut dec) = BlockDecoder::new() else {
        return;
    };
    let mut out = Vec::new();
    match dec.decode_diff(Filter::None, 0, payload, raw_len, region, &mut out) {
        Ok(()) => assert_eq!(out.len(), raw_len),
        Err(_) => assert!(out.is_empty()),
    }
});
