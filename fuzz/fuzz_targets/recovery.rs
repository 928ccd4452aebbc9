//! Fuzz target: the recovery-data parser (`krypta::recovery`). Arbitrary bytes as a whole
//! file: locating (trailer, caller's length, backward scan for packets), then, when a section
//! is found, verifying it and repairing its first bytes. Also the first 4096 bytes as a packet
//! and the last 80 as a trailer. Nothing may panic; a packet that parses must re-encode to
//! exactly its bytes; a repaired segment must never differ from what verification accepted.

#![no_main]

use krypta::recovery::{Locate, PACKET_LEN, TRAILER_LEN, locate, parse_structures, repair_range, verify};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() >= PACKET_LEN {
        let pk: &[u8; PACKET_LEN] = data[..PACKET_LEN].try_into().unwrap();
        let tr: &[u8; TRAILER_LEN] = data[data.len() - TRAILER_LEN..].try_into().unwrap();
        if let (Some((_, again)), _) = parse_structures(pk, tr) {
            assert!(&again == pk, "packet re-encodes to different bytes");
        }
    }
    // The first 8 bytes as a caller's protected length (small, so it can matter).
    let hint = data
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()) % (data.len() as u64 + 1));
    for protected_len in [None, hint] {
        let opts = Locate {
            protected_len,
            scan: true,
        };
        if let Ok(loc) = locate(data, &opts) {
            assert!(loc.layout.params.protected_len < data.len() as u64);
            let rep = verify(data, &loc);
            assert_eq!(rep.segments.len() as u64, loc.layout.segments);
            let l = loc.layout.params.protected_len;
            let _ = repair_range(data, &loc, 0, l.min(4096));
        }
    }
});
