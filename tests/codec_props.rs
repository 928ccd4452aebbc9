//! Property tests: every filter is exactly invertible on every block, including data dense with
//! branch opcodes at every offset near the block's end, and the block codec round-trips.

use krypta::codec::{BlockDecoder, BlockEncoder, Filter, Level, bcj};
use proptest::prelude::*;

/// Bytes that trigger the filters: x86 E8/E9 and 00/FF high bytes, ARM64 BL (0x94..0x97 top
/// byte) and ADRP (0x90/0xB0/0xD0/0xF0 top byte), ARM BL (EB), Thumb (F0/F8), RISC-V JAL/AUIPC
/// (EF/97/17), PowerPC (48), SPARC (40/7F).
const OPCODES: [u8; 20] = [
    0xE8, 0xE9, 0x00, 0xFF, 0x94, 0x95, 0x97, 0x90, 0xB0, 0xD0, 0xF0, 0xF8, 0xEB, 0xEF, 0x97, 0x17,
    0x48, 0x40, 0x7F, 0x01,
];

fn opcode_dense(max_len: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![3 => prop::sample::select(&OPCODES[..]), 1 => any::<u8>()],
        0..max_len,
    )
}

/// `len` opcode-dense bytes from a seed (cheaper than a per-byte strategy for big blocks).
fn dense_from_seed(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(4) {
                (x >> 32) as u8
            } else {
                OPCODES[(x >> 40) as usize % OPCODES.len()]
            }
        })
        .collect()
}

fn filter() -> impl Strategy<Value = Filter> {
    prop::sample::select(&Filter::ALL[..])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn bcj_is_exactly_invertible(data in opcode_dense(3000), f in filter(), start in any::<u64>()) {
        let mut buf = data.clone();
        bcj::encode(f, &mut buf, start);
        bcj::decode(f, &mut buf, start);
        prop_assert_eq!(buf, data);
    }

    #[test]
    fn bcj_is_invertible_on_big_blocks(seed in any::<u64>(), len in 0usize..300_000, f in filter(), start in any::<u32>()) {
        let data = dense_from_seed(seed, len);
        let mut buf = data.clone();
        bcj::encode(f, &mut buf, u64::from(start));
        bcj::decode(f, &mut buf, u64::from(start));
        prop_assert!(buf == data);
    }

    #[test]
    fn block_codec_round_trips(
        data in prop_oneof![opcode_dense(20_000), prop::collection::vec(any::<u8>(), 1..5000)],
        f in filter(),
        level in prop::option::of(1u8..=6),
        start in any::<u64>(),
    ) {
        prop_assume!(!data.is_empty());
        let level = level.and_then(|l| Level::new(l).ok());
        let mut enc = BlockEncoder::new(level).expect("encoder");
        let mut payload = Vec::new();
        let (codec, used) = enc.encode(&data, f, start, &mut payload).expect("encode");
        prop_assert!(payload.len() <= data.len());
        let mut out = Vec::new();
        BlockDecoder::new().expect("decoder")
            .decode(codec, used, start, &payload, data.len(), &mut out).expect("decode");
        prop_assert_eq!(out, data);
    }
}

/// Every opcode pattern placed at each of the last 24 offsets of blocks of awkward lengths
/// (tiny, odd, just past `bcj`'s 64 KiB chunk), with every filter, round-trips exactly.
#[test]
fn opcodes_at_every_offset_near_block_end_round_trip() {
    let words: [[u8; 4]; 6] = [
        [0xE8, 0x10, 0x00, 0x00], // x86 call rel32 (continued by the next bytes)
        [0xE9, 0xF0, 0xFF, 0xFF], // x86 jmp backwards
        [0x01, 0x00, 0x00, 0x94], // AArch64 BL
        [0x01, 0x00, 0x00, 0x90], // AArch64 ADRP
        [0x00, 0xF0, 0x00, 0xF8], // Thumb BL pair
        [0xEF, 0x00, 0x00, 0x00], // RISC-V JAL ra
    ];
    for len in [1usize, 4, 5, 8, 16, 61, 4097, 65_536 + 5] {
        for word in words {
            for back in 1..=24usize.min(len) {
                let mut data: Vec<u8> = (0..len).map(|i| [0xE8, 0x00, 0xFF, 0x94][i % 4]).collect();
                let at = len - back;
                for (k, b) in word.iter().enumerate() {
                    if let Some(slot) = data.get_mut(at + k) {
                        *slot = *b;
                    }
                }
                for f in Filter::ALL {
                    let mut buf = data.clone();
                    bcj::encode(f, &mut buf, 0x1000);
                    bcj::decode(f, &mut buf, 0x1000);
                    assert!(buf == data, "{f:?} len {len} word {word:02x?} at {at}");
                }
            }
        }
    }
}
