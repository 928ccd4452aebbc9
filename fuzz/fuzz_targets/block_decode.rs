//! Fuzz target: the block decoder on arbitrary (codec, filter, start, raw_len, payload), with
//! format 1's rules (`decode`) or format 2's (`decode_v2`: the zstd frame rules, and a
//! reference prefix taken from the payload's first bytes when bit 7 of the codec byte is
//! set). It must never panic, must produce exactly `raw_len` bytes when it succeeds, and
//! whatever it produced must survive an encode/decode round trip with the same filter and
//! start.
//!
//! Input layout: `u8 codec (bit 0 codec, bit 1 format 2, bit 7 prefix), u8 filter, u32 LE
//! raw_len (mod 1 MiB), u64 LE start, [u16 LE prefix length, prefix], payload…`.

#![no_main]

use krypta::codec::{BlockDecoder, BlockEncoder, Codec, Filter, Level};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, payload)) = data.split_first_chunk::<14>() else {
        return;
    };
    let (Some(codec), Some(filter)) = (Codec::from_u8(head[0] & 1), Filter::from_u8(head[1] % 9))
    else {
        return;
    };
    let raw_len = u32::from_le_bytes([head[2], head[3], head[4], head[5]]) as usize % (1 << 20);
    let start = u64::from_le_bytes([
        head[6], head[7], head[8], head[9], head[10], head[11], head[12], head[13],
    ]);
    let Ok(mut dec) = BlockDecoder::new() else {
        return;
    };
    let mut out = Vec::new();
    let v2 = head[0] & 2 != 0;
    let (prefix, payload) = if v2 && head[0] & 0x80 != 0 {
        let Some((n, rest)) = payload.split_first_chunk::<2>() else {
            return;
        };
        let n = (u16::from_le_bytes(*n) as usize).min(rest.len());
        rest.split_at(n)
    } else {
        (&[][..], payload)
    };
    let r = if v2 {
        dec.decode_v2(codec, filter, start, payload, raw_len, prefix, &mut out)
    } else {
        dec.decode(codec, filter, start, payload, raw_len, &mut out)
    };
    if r.is_err() {
        assert!(out.is_empty());
        return;
    }
    assert_eq!(out.len(), raw_len);
    if out.is_empty() {
        return;
    }
    let Ok(mut enc) = BlockEncoder::new(Some(Level::MIN)) else {
        return;
    };
    let mut again = Vec::new();
    let (c, f) = enc.encode(&out, filter, start, &mut again).expect("encode");
    let mut back = Vec::new();
    dec.decode(c, f, start, &again, out.len(), &mut back)
        .expect("decode own output");
    assert!(back == out);
});
