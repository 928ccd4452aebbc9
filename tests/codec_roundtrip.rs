//! Block codec round trips, stored fallback, ruzstd agreement and code parsing.

use krypta::codec::{
    BlockDecoder, BlockEncoder, Codec, CodecError, Filter, Level, MAX_BLOCK_SIZE, bcj,
};

/// Deterministic pseudo-random bytes (xorshift64*), incompressible.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// Compressible bytes that look a little like machine code: calls (E8/E9) and BL/ADRP words.
fn codeish(len: usize) -> Vec<u8> {
    let n = noise(len, 7);
    (0..len)
        .map(|i| match i % 24 {
            0 => 0xE8,
            1 => (i / 24 % 7) as u8,
            8 => 0xE9,
            15 => 0x94,
            19 => 0x90,
            20..=23 => n[i] & 0x3,
            _ => b"mov rax, [rbp-8]"[i % 16],
        })
        .collect()
}

fn levels() -> Vec<Option<Level>> {
    let mut v = vec![None];
    v.extend([1, 3, 9].map(|l| Level::new(l).ok()));
    v
}

fn round_trip(level: Option<Level>, raw: &[u8], filter: Filter, start: u64) -> (Codec, Filter) {
    let mut enc = BlockEncoder::new(level).expect("encoder");
    let mut dec = BlockDecoder::new().expect("decoder");
    let mut payload = Vec::new();
    let (codec, used) = enc
        .encode(raw, filter, start, &mut payload)
        .expect("encode");
    let mut out = Vec::new();
    dec.decode(codec, used, start, &payload, raw.len(), &mut out)
        .expect("decode");
    assert!(out == raw, "{level:?} {filter:?} {start} changed the data");
    (codec, used)
}

#[test]
fn every_level_and_filter_round_trips() {
    let inputs = [
        codeish(1),
        codeish(4),
        codeish(5),
        codeish(17),
        codeish(70_001),
        noise(3000, 3),
    ];
    for level in levels() {
        for filter in Filter::ALL {
            for raw in &inputs {
                let (codec, used) = round_trip(level, raw, filter, 4 << 20);
                match (level, codec) {
                    (None, c) => assert_eq!((c, used), (Codec::Store, Filter::None)),
                    (Some(_), Codec::Zstd) => assert_eq!(used, filter),
                    (Some(_), Codec::Store) => assert_eq!(used, Filter::None),
                    // Only `encode_delta` (delta archives) writes codecs 2 and 3.
                    (Some(_), Codec::ZstdBase) => panic!("encode wrote a zstd+base block"),
                    (Some(_), Codec::DiffBase) => panic!("encode wrote a diff+base block"),
                }
            }
        }
    }
}

#[test]
fn compressible_blocks_use_zstd_with_the_requested_filter() {
    let raw = codeish(200_000);
    for filter in [Filter::None, Filter::X86, Filter::Arm64] {
        assert_eq!(
            round_trip(Level::new(3).ok(), &raw, filter, 0),
            (Codec::Zstd, filter)
        );
    }
}

#[test]
fn random_data_is_stored_unfiltered() {
    let raw = noise(1 << 20, 42);
    let mut enc = BlockEncoder::new(Some(Level::DEFAULT)).expect("encoder");
    let mut payload = vec![0xAA; 10];
    let got = enc
        .encode(&raw, Filter::X86, 0, &mut payload)
        .expect("encode");
    assert_eq!(got, (Codec::Store, Filter::None));
    assert!(payload == raw);
}

#[test]
fn store_mode_never_compresses() {
    let raw = vec![0u8; 100_000];
    let mut enc = BlockEncoder::new(None).expect("encoder");
    let mut payload = Vec::new();
    assert_eq!(
        enc.encode(&raw, Filter::X86, 0, &mut payload)
            .expect("encode"),
        (Codec::Store, Filter::None)
    );
    assert_eq!(payload.len(), 100_000);
}

#[test]
fn zstd_frames_decode_identically_with_ruzstd() {
    let raw = codeish(300_000);
    for l in 1..=9 {
        let level = Level::new(l).expect("level");
        for filter in [Filter::None, Filter::X86] {
            let mut enc = BlockEncoder::new(Some(level)).expect("encoder");
            let mut payload = Vec::new();
            let got = enc
                .encode(&raw, filter, 1 << 22, &mut payload)
                .expect("encode");
            assert_eq!(got, (Codec::Zstd, filter));
            // Frame header descriptor (RFC 8878 §3.1.1.1.1): checksum flag (bit 2) off,
            // single segment (bit 5) on, so the content size is always present.
            assert_eq!(payload[..4], [0x28, 0xB5, 0x2F, 0xFD]);
            assert_eq!(payload[4] & 0b0010_0100, 0b0010_0000, "level {l}");
            let mut expected = raw.clone();
            bcj::encode(filter, &mut expected, 1 << 22);
            let mut theirs = Vec::with_capacity(raw.len());
            ruzstd::decoding::FrameDecoder::new()
                .decode_all_to_vec(&payload, &mut theirs)
                .expect("ruzstd decodes our frame");
            assert!(
                theirs == expected,
                "ruzstd disagrees at level {l} {filter:?}"
            );
        }
    }
}

#[test]
fn level9_big_block_decodes_with_ruzstd() {
    // 6 MiB: 5 MiB of noise, then its first MiB again, 5 MiB back (beyond levels 1..=8's
    // 4 MiB window): the frame's window exceeds 4 MiB and only the repeat compresses.
    let mut raw = noise(5 << 20, 9);
    raw.extend_from_within(..1 << 20);
    let mut enc = BlockEncoder::new(Level::new(9).ok()).expect("encoder");
    let mut payload = Vec::new();
    assert_eq!(
        enc.encode(&raw, Filter::None, 0, &mut payload)
            .expect("encode"),
        (Codec::Zstd, Filter::None)
    );
    assert!(
        payload.len() < (5 << 20) + (64 << 10),
        "long match missed: {}",
        payload.len()
    );
    let mut theirs = Vec::with_capacity(raw.len());
    ruzstd::decoding::FrameDecoder::new()
        .decode_all_to_vec(&payload, &mut theirs)
        .expect("ruzstd decodes our frame");
    assert!(theirs == raw);
}

#[test]
fn codes_and_names_parse_back() {
    for (code, f) in Filter::ALL.iter().enumerate() {
        assert_eq!(Filter::from_u8(code as u8), Some(*f));
        assert_eq!(f.name().parse::<Filter>(), Ok(*f));
    }
    assert_eq!(Filter::from_u8(9), None);
    assert_eq!("off".parse::<Filter>(), Ok(Filter::None));
    assert!("x64".parse::<Filter>().is_err());
    assert_eq!(Codec::from_u8(0), Some(Codec::Store));
    assert_eq!(Codec::from_u8(1), Some(Codec::Zstd));
    // Code 2 is the delta archives' zstd+base block (docs/FORMAT.md §16.2), 3 their
    // diff+base block (§16.6); 4 is unknown.
    assert_eq!(Codec::from_u8(2), Some(Codec::ZstdBase));
    assert_eq!(Codec::from_u8(3), Some(Codec::DiffBase));
    assert_eq!(Codec::from_u8(4), None);
    assert_eq!(
        (
            Codec::Store.name(),
            Codec::Zstd.name(),
            Codec::ZstdBase.name(),
            Codec::DiffBase.name()
        ),
        ("store", "zstd", "zstd+base", "diff+base")
    );
}

#[test]
fn oversized_blocks_are_refused_both_ways() {
    let mut dec = BlockDecoder::new().expect("decoder");
    let mut out = Vec::new();
    let err = dec.decode(
        Codec::Store,
        Filter::None,
        0,
        &[],
        MAX_BLOCK_SIZE + 1,
        &mut out,
    );
    assert!(matches!(err, Err(CodecError::TooLarge { len }) if len == MAX_BLOCK_SIZE as u64 + 1));
    assert_eq!(out.capacity(), 0);
}
