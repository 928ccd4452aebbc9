//! Fuzz target: delta archives (docs/FORMAT.md §16) read with their base: `krypta::test`,
//! `krypta::test_salvaging` and a salvaging `krypta::extract` with `OpenOptions::base` set
//! must return Ok or Err — never panic, hang or over-allocate — whatever the delta archive
//! holds: `zstd+base` blocks with hostile regions, BASE_REF records naming any base entry,
//! damaged frames, a missing index.
//!
//! The bases are the frozen ones of `tests/golden/*.hex` (the first archive of each file; the
//! others are delta archives against it, and the seeds: `fuzz/seed.sh`). The input is used as
//! a delta archive against the base whose id its header names (else the first), as it is and
//! with every checksum recomputed (so mutations reach the parsers behind the checks), each
//! whole and cut at half its length (no footer, usually no index: the resynchronising walk).

#![no_main]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use krypta::archive::OpenOptions;
use krypta::archive::reader::BaseArchive;
use krypta::crypto::frame::Protection;
use krypta::format::footer::FOOTER_LEN;
use krypta::format::frame::{FRAME_HEADER_LEN, TAG_LEN};
use krypta::format::header::{Header, MIN_HEADER_LEN};
use libfuzzer_sys::fuzz_target;

mod common;

const GOLDEN: [&str; 3] = [
    include_str!("../../tests/golden/delta_v2.hex"),
    include_str!("../../tests/golden/delta_ref_v2.hex"),
    include_str!("../../tests/golden/delta_ref_unmarked_v2.hex"),
];

/// The golden bases, each written once to a file kept for the whole run: (id, path).
fn bases() -> &'static [([u8; 16], PathBuf)] {
    static BASES: OnceLock<Vec<([u8; 16], PathBuf)>> = OnceLock::new();
    BASES.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("krypta-fuzz-delta")
            .tempdir_in(common::scratch())
            .expect("temporary directory")
            .keep();
        GOLDEN
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let line = text
                    .lines()
                    .find(|l| !l.starts_with('#') && !l.trim().is_empty())
                    .expect("a base archive line");
                let bytes: Vec<u8> = (0..line.len() / 2)
                    .map(|k| u8::from_str_radix(&line[2 * k..2 * k + 2], 16).expect("hex"))
                    .collect();
                let path = dir.join(format!("base{i}.kry"));
                std::fs::write(&path, &bytes).expect("write base");
                (bytes[16..32].try_into().expect("id"), path)
            })
            .collect()
    })
}

fn open(base: &Path) -> Option<OpenOptions> {
    let opts = OpenOptions {
        jobs: 1,
        allow_unencrypted: true,
        ..OpenOptions::default()
    };
    let b = BaseArchive::open(base, opts.clone()).ok()?;
    Some(OpenOptions {
        base: Some(Arc::new(b)),
        ..opts
    })
}

/// Runs the readers on `bytes` written to a temporary file, against `base`.
fn run(bytes: &[u8], base: &Path) {
    let Ok(mut file) = tempfile::NamedTempFile::new_in(common::scratch()) else {
        return;
    };
    if file.write_all(bytes).and_then(|()| file.flush()).is_err() {
        return;
    }
    if let Some(o) = open(base) {
        let _ = krypta::test(file.path(), o, &mut krypta::Collect::default());
    }
    if let Some(o) = open(base) {
        let _ = krypta::test_salvaging(file.path(), o, true, &mut krypta::Collect::default());
    }
    if let Some(o) = open(base) {
        common::extract_salvaging(file.path(), o);
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Every plain checksum recomputed (header, each frame, footer).
fn rechecksummed(data: &[u8]) -> Option<Vec<u8>> {
    let hl = u32_at(data, 12)? as usize;
    if hl < MIN_HEADER_LEN || hl + FOOTER_LEN > data.len() {
        return None;
    }
    let mut b = data.to_vec();
    let id: [u8; 16] = b[16..32].try_into().ok()?;
    let prot = Protection::Plain;
    let tag = prot.header_tag(&b[..hl - 32]);
    b[hl - 32..hl].copy_from_slice(&tag);
    let end = b.len() - FOOTER_LEN;
    let mut pos = hl;
    while pos + FRAME_HEADER_LEN <= end {
        let body_len = u32_at(&b, pos + 4)? as usize;
        let seq = u64_at(&b, pos + 8)?;
        let body_start = pos + FRAME_HEADER_LEN;
        let tag_start = body_start.checked_add(body_len)?;
        if tag_start + TAG_LEN > end {
            break;
        }
        let mut fh = [0u8; FRAME_HEADER_LEN];
        fh.copy_from_slice(&b[pos..body_start]);
        let tag = prot.seal_frame(&id, &fh, seq, &mut b[body_start..tag_start]);
        b[tag_start..tag_start + TAG_LEN].copy_from_slice(&tag);
        pos = tag_start + TAG_LEN;
    }
    let tag = prot.footer_tag(&id, &b[end..end + 32]);
    b[end + 32..].copy_from_slice(&tag);
    Some(b)
}

fuzz_target!(|data: &[u8]| {
    let bases = bases();
    let named = u32_at(data, 12)
        .and_then(|hl| data.get(..hl as usize))
        .and_then(|h| Header::parse(h).ok())
        .and_then(|(h, _)| h.delta_base())
        .map(|(id, _)| id);
    let base = bases
        .iter()
        .find(|(id, _)| named.is_some_and(|n| n[..] == id[..]))
        .unwrap_or(&bases[0]);
    for b in [Some(data.to_vec()), rechecksummed(data)]
        .into_iter()
        .flatten()
    {
        run(&b, &base.1);
        run(&b[..b.len() / 2], &base.1);
    }
});
