//! What the delta golden-vector tests (`delta_golden.rs`, `delta_ref_golden.rs`) build their
//! frozen archives from: seeded bytes and entry metadata with fixed times and owners. Changing
//! either changes the bytes those tests compare with `tests/golden/*.hex`.

#![allow(dead_code, missing_docs)]

use krypta::format::entry::{EntryKind, EntryMeta, Timestamp};

/// Deterministic, incompressible bytes (xorshift64).
pub fn seeded(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// An entry of `kind` at `path` with `mode`, a fixed mtime (1,798,675,200 s) and owner 1000:1000.
pub fn meta(path: &str, kind: EntryKind, mode: u32) -> EntryMeta {
    EntryMeta {
        path: path.as_bytes().to_vec(),
        kind,
        mode,
        mtime: Timestamp {
            secs: 1_798_675_200,
            nanos: 0,
        },
        uid: 1000,
        gid: 1000,
        ..EntryMeta::default()
    }
}
