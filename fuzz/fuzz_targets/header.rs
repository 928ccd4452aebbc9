//! Fuzz target: `format::header::Header::parse` on arbitrary bytes (either format version:
//! the version is in the header). It must never panic, and anything that parses must pass the
//! writer's `check` and re-serialise (`write_untagged` + the same tag) to exactly the input
//! bytes (the header encoding is canonical, age/rage style; format 2 keeps stanzas and
//! extensions of unknown kinds, so they re-serialise too).

#![no_main]

use krypta::format::header::Header;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((header, tag)) = Header::parse(data) {
        header.check().expect("a parsed header passes the writer's check");
        let mut again = header.write_untagged();
        again.extend_from_slice(&tag);
        assert!(again == data, "header re-serialises to different bytes");
    }
});
