//! Fuzz target: `format::index::Index::parse` on arbitrary bytes, in the format version the
//! first input byte picks (even: 1, odd: 2). It must never panic or allocate from an
//! unchecked count, and an index that parses must `write` back to exactly the input bytes
//! (format 2's front coding is canonical: the shared prefix is the longest one).

#![no_main]

use krypta::format::Version;
use krypta::format::index::Index;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&v, data)) = data.split_first() else {
        return;
    };
    let version = if v & 1 == 0 { Version::V1 } else { Version::V2 };
    if let Ok(ix) = Index::parse(data, version) {
        assert!(
            ix.write(version) == data,
            "index re-serialises to different bytes"
        );
    }
});
