//! Unit tests of block encode and decode.

use super::*;

fn text(len: usize) -> Vec<u8> {
    b"the quick brown fox jumps over the lazy dog; "
        .iter()
        .copied()
        .cycle()
        .take(len)
        .collect()
}

#[test]
fn compressible_block_is_zstd_and_round_trips() {
    let raw = text(100_000);
    let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).unwrap();
    let mut payload = Vec::new();
    let got = enc.encode(&raw, Filter::X86, 12, &mut payload).unwrap();
    assert_eq!(got, (Codec::Zstd, Filter::X86));
    assert!(payload.len() < 1000, "payload {} bytes", payload.len());
    let mut dec = BlockDecoder::new().unwrap();
    let mut out = Vec::new();
    dec.decode(got.0, got.1, 12, &payload, raw.len(), &mut out)
        .unwrap();
    assert!(out == raw);
}

#[test]
fn store_mode_copies_raw() {
    let raw = text(1000);
    let mut enc = BlockEncoder::new(None).unwrap();
    let mut payload = vec![9; 5];
    assert_eq!(
        enc.encode(&raw, Filter::X86, 0, &mut payload).unwrap(),
        (Codec::Store, Filter::None)
    );
    assert_eq!(payload, raw);
}

#[test]
fn decoding_into_a_recycled_buffer_gives_exactly_the_block() {
    let raw = text(70_000);
    let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).unwrap();
    let mut payload = Vec::new();
    enc.encode(&raw, Filter::None, 0, &mut payload).unwrap();
    let mut dec = BlockDecoder::new().unwrap();
    // A bigger stale buffer, as the reader's free list hands out.
    let mut out = vec![0xAB; 200_000];
    dec.decode(Codec::Zstd, Filter::None, 0, &payload, raw.len(), &mut out)
        .unwrap();
    assert_eq!(out.len(), raw.len());
    assert!(out == raw);
}

#[test]
fn stored_blocks_decode_in_place_and_size_lies_are_errors() {
    let mut raw = text(4096);
    raw[100] = 0xE8;
    raw[104] = 0x00;
    let mut filtered = raw.clone();
    bcj::encode(Filter::X86, &mut filtered, 40);
    assert_ne!(filtered, raw);
    let mut buf = filtered.clone();
    decode_stored_in_place(Filter::X86, 40, &mut buf, raw.len()).unwrap();
    assert_eq!(buf, raw);
    let mut buf = filtered.clone();
    let err = decode_stored_in_place(Filter::X86, 40, &mut buf, raw.len() + 1).unwrap_err();
    assert!(
        matches!(
            err,
            CodecError::SizeMismatch {
                expected: 4097,
                got: 4096
            }
        ),
        "{err:?}"
    );
    assert_eq!(buf, filtered, "untouched on error");
    let err = decode_stored_in_place(Filter::None, 0, &mut [], MAX_BLOCK_SIZE + 1).unwrap_err();
    assert!(matches!(err, CodecError::TooLarge { .. }), "{err:?}");
}

#[test]
fn raw_len_lies_are_errors_and_leave_out_empty() {
    let raw = text(50_000);
    let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).unwrap();
    let mut payload = Vec::new();
    enc.encode(&raw, Filter::None, 0, &mut payload).unwrap();
    let mut dec = BlockDecoder::new().unwrap();
    let mut out = vec![1, 2, 3];
    for lie in [49_999usize, 50_001] {
        let err = dec
            .decode_v2(Codec::Zstd, Filter::None, 0, &payload, lie, &[], &mut out)
            .unwrap_err();
        assert!(matches!(err, CodecError::SizeMismatch { .. }), "{err:?}");
    }
    for lie in [49_999, 50_001] {
        let err = dec
            .decode(Codec::Zstd, Filter::None, 0, &payload, lie, &mut out)
            .unwrap_err();
        assert!(
            matches!(err, CodecError::SizeMismatch { expected, got: 50_000 } if expected == lie as u64),
            "{err:?}"
        );
        assert!(out.is_empty());
    }
}

#[test]
fn a_referencing_block_decodes_only_with_its_prefix() {
    // Incompressible bytes the block repeats: it compresses only through the prefix.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let before: Vec<u8> = (0..60_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let mut raw = before[1000..41_000].to_vec();
    raw.extend_from_slice(b"a tail only this block has");
    let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).unwrap();
    let (mut alone, mut with) = (Vec::new(), Vec::new());
    enc.encode(&raw, Filter::X86, 60_000, &mut alone).unwrap();
    let got = enc
        .encode_referencing(&raw, Filter::X86, 60_000, &before, &mut with)
        .unwrap();
    assert_eq!(got, (Codec::Zstd, Filter::X86, true));
    assert!(with.len() < 1000, "{} bytes with the prefix", with.len());
    assert!(
        alone.len() > 39_000 || alone == raw,
        "{} bytes alone",
        alone.len()
    );
    let mut dec = BlockDecoder::new().unwrap();
    let mut out = Vec::new();
    dec.decode_v2(
        Codec::Zstd,
        Filter::X86,
        60_000,
        &with,
        raw.len(),
        &before,
        &mut out,
    )
    .unwrap();
    assert!(out == raw);
    // Without the prefix (or with another one) the frame does not decode to the block.
    let wrong = dec.decode_v2(
        Codec::Zstd,
        Filter::X86,
        60_000,
        &with,
        raw.len(),
        &[],
        &mut out,
    );
    assert!(wrong.is_err() || out != raw);
    let mut other = before.clone();
    other[30_000] ^= 1;
    let r = dec.decode_v2(
        Codec::Zstd,
        Filter::X86,
        60_000,
        &with,
        raw.len(),
        &other,
        &mut out,
    );
    assert!(r.is_err() || out != raw);
    // An empty prefix is the plain encoding (here: stored, it does not shrink alone).
    let mut plain = Vec::new();
    let got = enc
        .encode_referencing(&raw, Filter::X86, 60_000, &[], &mut plain)
        .unwrap();
    let expect = enc.encode(&raw, Filter::X86, 60_000, &mut alone).unwrap();
    assert_eq!(
        (got.0, got.1, got.2, &plain),
        (expect.0, expect.1, false, &alone)
    );
}

#[test]
fn decode_v2_into_gives_the_bytes_and_errors_of_decode_v2_without_a_prefix() {
    // Executable-like bytes (call opcodes and branch words every few bytes) so every filter
    // changes them, with a stream start that is not 0.
    let raw: Vec<u8> = (0..300_000u32)
        .map(|i| match i % 13 {
            0 => 0xE8,
            5 => 0x94,
            9 => 0x48,
            _ => (i.wrapping_mul(2_654_435_761) >> 24) as u8 & 0x0F,
        })
        .collect();
    let start = 1 << 20;
    let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).unwrap();
    let mut dec = BlockDecoder::new().unwrap();
    let mut compare = |codec: Codec, filter: Filter, payload: &[u8], raw_len: usize| {
        let mut want = Vec::new();
        let want = dec
            .decode_v2(codec, filter, start, payload, raw_len, &[], &mut want)
            .map(|()| want)
            .map_err(|e| e.to_string());
        let mut got = vec![0x5A; raw_len];
        let got = dec
            .decode_v2_into(codec, filter, start, payload, &mut got)
            .map(|()| got)
            .map_err(|e| e.to_string());
        let short = |r: &Result<Vec<u8>, String>| r.as_ref().map(Vec::len).map_err(String::clone);
        assert!(
            want == got,
            "{codec:?} {filter:?} raw_len {raw_len}: {:?} / {:?}",
            short(&want),
            short(&got)
        );
        want
    };
    for filter in Filter::ALL {
        let mut payload = Vec::new();
        let (codec, f) = enc.encode(&raw, filter, start, &mut payload).unwrap();
        assert_eq!((codec, f), (Codec::Zstd, filter));
        assert!(compare(codec, filter, &payload, raw.len()).unwrap() == raw);
        // A stored block of filtered bytes.
        let mut stored = raw.clone();
        bcj::encode(filter, &mut stored, start);
        assert!(compare(Codec::Store, filter, &stored, raw.len()).unwrap() == raw);
    }
    let mut payload = Vec::new();
    enc.encode(&raw, Filter::None, 0, &mut payload).unwrap();
    let n = raw.len();
    let mut trailing = payload.clone();
    trailing.push(0);
    let mut reserved = payload.clone();
    reserved[4] |= 0x08;
    let failures: [(Codec, &[u8], usize); 9] = [
        (Codec::Zstd, &payload, n - 1),
        (Codec::Zstd, &payload, n + 1),
        (Codec::Zstd, &trailing, n),
        (Codec::Zstd, &reserved, n),
        (Codec::Zstd, &payload[..payload.len() - 1], n),
        (Codec::Zstd, &raw[..1000], 1000),
        (Codec::Store, &raw[..1000], 999),
        (Codec::Store, &raw[..1000], 1001),
        (Codec::ZstdBase, &payload, n),
    ];
    for (codec, payload, raw_len) in failures {
        compare(codec, Filter::None, payload, raw_len).unwrap_err();
    }
}
