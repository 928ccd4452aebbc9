//! Hostile payloads: the block decoder returns errors, never panics, and never grows its output
//! past the declared raw length.

use krypta::codec::{BlockDecoder, BlockEncoder, Codec, CodecError, Filter, Level};

fn text(len: usize) -> Vec<u8> {
    b"fn main() { println!(\"hello, krypta\"); }\n"
        .iter()
        .copied()
        .cycle()
        .take(len)
        .collect()
}

fn frame(raw: &[u8]) -> Vec<u8> {
    let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).expect("encoder");
    let mut payload = Vec::new();
    let got = enc
        .encode(raw, Filter::None, 0, &mut payload)
        .expect("encode");
    assert_eq!(got.0, Codec::Zstd);
    payload
}

/// Decodes and checks the output buffer never grew beyond `raw_len` (nor kept stale bytes).
fn decode(codec: Codec, payload: &[u8], raw_len: usize) -> Result<Vec<u8>, CodecError> {
    let mut dec = BlockDecoder::new().expect("decoder");
    let mut out = Vec::new();
    let r = dec.decode(codec, Filter::X86, 0, payload, raw_len, &mut out);
    assert!(
        out.capacity() <= raw_len,
        "capacity {} > raw_len {raw_len}",
        out.capacity()
    );
    if r.is_err() {
        assert!(out.is_empty());
    }
    r.map(|()| out)
}

#[test]
fn every_truncation_of_a_frame_is_an_error() {
    let raw = text(200_000);
    let payload = frame(&raw);
    for cut in 0..payload.len() {
        let err = decode(Codec::Zstd, &payload[..cut], raw.len());
        assert!(err.is_err(), "a {cut}-byte prefix decoded");
    }
}

#[test]
fn raw_len_lies_both_ways_are_size_mismatches() {
    let raw = text(100_000);
    let payload = frame(&raw);
    for lie in [1, 99_999, 100_001, 1 << 20] {
        let err = decode(Codec::Zstd, &payload, lie).unwrap_err();
        assert!(
            matches!(err, CodecError::SizeMismatch { expected, got: 100_000 } if expected == lie as u64),
            "{err:?}"
        );
    }
}

#[test]
fn stored_payload_of_the_wrong_length_is_refused() {
    let err = decode(Codec::Store, b"abc", 4).unwrap_err();
    assert!(
        matches!(
            err,
            CodecError::SizeMismatch {
                expected: 4,
                got: 3
            }
        ),
        "{err:?}"
    );
}

#[test]
fn garbage_is_not_a_frame() {
    for junk in [&b""[..], b"\0", b"hello, world", &[0x28, 0xB5, 0x2F]] {
        let err = decode(Codec::Zstd, junk, 12).unwrap_err();
        assert!(matches!(err, CodecError::NotAFrame), "{junk:?}: {err:?}");
    }
}

#[test]
fn bytes_after_the_frame_are_refused() {
    let raw = text(10_000);
    let mut payload = frame(&raw);
    let frame_len = payload.len() as u64;
    payload.extend_from_slice(&zstd::bulk::compress(b"tail", 3).expect("compress"));
    let err = decode(Codec::Zstd, &payload, raw.len()).unwrap_err();
    assert!(
        matches!(err, CodecError::TrailingData { frame_len: f, payload_len: p } if f == frame_len && p == payload.len() as u64),
        "{err:?}"
    );
}

#[test]
fn frame_without_content_size_is_refused() {
    let raw = text(10_000);
    let mut c = zstd::bulk::Compressor::new(3).expect("cctx");
    c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false))
        .expect("param");
    let payload = c.compress(&raw).expect("compress");
    let err = decode(Codec::Zstd, &payload, raw.len()).unwrap_err();
    assert!(matches!(err, CodecError::NoContentSize), "{err:?}");
}

#[test]
fn frame_whose_header_understates_its_content_fails_inside_zstd() {
    // Lower the 4-byte content size field by one and claim that length: zstd must notice
    // that the blocks decode to more than the header says, without writing past the buffer.
    let raw = text(100_000);
    let mut payload = frame(&raw);
    let fhd = payload[4];
    assert_eq!(fhd >> 6, 2, "expected a 4-byte content size field");
    let at = 5 + usize::from(fhd & 0x20 == 0);
    let declared = u32::from_le_bytes(payload[at..at + 4].try_into().expect("4 bytes"));
    assert_eq!(declared, 100_000);
    payload[at..at + 4].copy_from_slice(&99_999u32.to_le_bytes());
    let err = decode(Codec::Zstd, &payload, 99_999).unwrap_err();
    assert!(matches!(err, CodecError::Zstd(_)), "{err:?}");
}

#[test]
fn flipped_bits_never_panic() {
    let raw = text(50_000);
    let payload = frame(&raw);
    for i in 0..payload.len() {
        for bit in [0x01u8, 0x10, 0x80] {
            let mut bad = payload.clone();
            bad[i] ^= bit;
            // Either an error or, rarely, other bytes of the right length.
            if let Ok(out) = decode(Codec::Zstd, &bad, raw.len()) {
                assert_eq!(out.len(), raw.len());
            }
        }
    }
}
