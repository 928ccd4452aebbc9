//! Property tests of the key text format: every payload round trips, and no input — random
//! text, or a valid key with random edits — panics or decodes to a different key.

use krypta::crypto::KeyKind;
use krypta::crypto::keytext::{decode, encode};
use proptest::prelude::*;

fn kind() -> impl Strategy<Value = KeyKind> {
    prop_oneof![
        Just(KeyKind::Symmetric),
        Just(KeyKind::BoxSecret),
        Just(KeyKind::BoxPublic)
    ]
}

proptest! {
    #[test]
    fn every_payload_round_trips(kind in kind(), seed in any::<u64>()) {
        let payload: Vec<u8> = (0..kind.payload_len()).map(|i| (seed.rotate_left(i as u32 % 64) ^ i as u64) as u8).collect();
        let text = encode(kind, &payload);
        prop_assert_eq!(decode(&text, kind).unwrap(), payload);
    }

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}", kind in kind()) {
        let _ = decode(&text, kind);
        let _ = decode(&format!("{}{text}", kind.prefix()), kind);
    }

    #[test]
    fn an_edited_key_never_decodes_to_another_payload(
        kind in kind(),
        pos in any::<prop::sample::Index>(),
        replacement in prop::char::any(),
    ) {
        let payload = vec![0xa5; kind.payload_len()];
        let text = encode(kind, &payload);
        let mut chars: Vec<char> = text.chars().collect();
        let i = pos.index(chars.len());
        chars[i] = replacement;
        let edited: String = chars.into_iter().collect();
        if let Ok(p) = decode(&edited, kind) {
            prop_assert_eq!(p, payload, "an edit decoded to another key");
        }
    }
}
