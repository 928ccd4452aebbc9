//! Fuzz target: format 2's entry metadata (`EntryMeta::parse` with `Version::V2`): the
//! fixed part and the typed fields area (owner names, extended attributes, fields of
//! unknown non-critical types, which are kept). It must never panic or allocate from an
//! unchecked length; anything that parses must pass the writer's check and write back to
//! exactly the bytes it was parsed from (parse∘write = identity), and its fields must come
//! back in canonical order (attributes sorted by name, no name twice).

#![no_main]

use krypta::format::{EntryMeta, Reader, Version};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data, "entry");
    let Ok(meta) = EntryMeta::parse(&mut r, Version::V2) else {
        return;
    };
    meta.check(Version::V2)
        .expect("a parsed entry passes the writer's check");
    assert!(
        meta.xattrs.windows(2).all(|w| w[0].name < w[1].name),
        "attributes out of order"
    );
    let mut again = Vec::new();
    meta.write(&mut again, Version::V2);
    assert!(
        again == data[..r.position()],
        "entry re-serialises differently"
    );
});
