//! Fuzz target: `crypto::keytext::decode` for each key kind. It must never panic on any text;
//! a decoded payload must have the kind's length and re-encode to the key line it came from.

#![no_main]

use krypta::crypto::keytext::{KeyKind, decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for kind in [KeyKind::Symmetric, KeyKind::BoxSecret, KeyKind::BoxPublic] {
        if let Ok(payload) = decode(text, kind) {
            assert_eq!(payload.len(), kind.payload_len());
            let line = encode(kind, &payload);
            assert!(
                text.lines().any(|l| l.trim() == line),
                "decoded key does not re-encode to its line"
            );
        }
    }
});
