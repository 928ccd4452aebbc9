//! Fuzz target: `format::header::Header::parse` on arbitrary bytes. It must never panic, and
//! anything that parses must re-serialise (`write_untagged` + the same tag) to exactly the
//! input bytes (the header encoding is canonical, age/rage style).

#![no_main]

use krypta::format::header::Header;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((header, tag)) = Header::parse(data) {
        let mut again = header.write_untagged();
        again.extend_from_slice(&tag);
        assert!(again == data, "header re-serialises to different bytes");
    }
});
