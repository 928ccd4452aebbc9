//! Fuzz target: `format::index::Index::parse` on arbitrary bytes. It must never panic or
//! allocate from an unchecked count, and an index that parses must `write` back to exactly
//! the input bytes.

#![no_main]

use krypta::format::index::Index;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(ix) = Index::parse(data) {
        assert!(ix.write() == data, "index re-serialises to different bytes");
    }
});
