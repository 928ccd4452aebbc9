//! Fuzz target: salvage (issue 11 §1) over arbitrary bytes: `krypta::test_salvaging` and a
//! salvaging `krypta::extract` (into a temporary directory) must return Ok or Err — never
//! panic, hang or over-allocate — whatever the damage, with the index (intact archives
//! damaged inside) and without it (the input cut at half its length, which removes the
//! footer and usually the index, so the resynchronising walk runs).
//!
//! Each input is run as it is, with every checksum recomputed (so mutations reach the
//! parsers behind the checks) and sealed for a fixed key file, as in the `archive` target,
//! and each of those also cut at half its length.

#![no_main]

use std::io::Write;

use krypta::archive::OpenOptions;
use krypta::crypto::frame::Protection;
use krypta::crypto::keyfile::SymmetricKey;
use krypta::crypto::keys::{FileKey, Subkeys};
use krypta::crypto::stanza::{Identity, wrap_keyfile};
use krypta::format::footer::FOOTER_LEN;
use krypta::format::frame::{FRAME_HEADER_LEN, TAG_LEN};
use krypta::format::header::{Header, MIN_HEADER_LEN};
use libfuzzer_sys::fuzz_target;

mod common;

/// The key file the sealed variant is encrypted to (and the reader is given).
const KEY: [u8; 32] = [0x4b; 32];
/// The file key of the sealed variant.
const FILE_KEY: [u8; 32] = [0x46; 32];

fn open() -> OpenOptions {
    OpenOptions {
        identities: vec![Identity::KeyFile(SymmetricKey::from_bytes(KEY))],
        jobs: 1,
        // Plain archives are fuzzed through the same entry point.
        allow_unencrypted: true,
        in_flight_budget: None,
        ..OpenOptions::default()
    }
}

/// Runs `test` and `list` on `bytes` written to a temporary file.
fn run(bytes: &[u8]) {
    let Ok(mut file) = tempfile::NamedTempFile::new_in(common::scratch()) else {
        return;
    };
    if file.write_all(bytes).and_then(|()| file.flush()).is_err() {
        return;
    }
    let _ = krypta::test_salvaging(file.path(), open(), true, &mut krypta::Collect::default());
    common::extract_salvaging(file.path(), open());
}

/// Runs `b` and `b` cut at half its length.
fn run_cut(b: &[u8]) {
    run(b);
    run(&b[..b.len() / 2]);
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The header length field, when it is plausible for `b`.
fn header_len(b: &[u8]) -> Option<usize> {
    let hl = u32_at(b, 12)? as usize;
    (hl >= MIN_HEADER_LEN && hl + FOOTER_LEN <= b.len()).then_some(hl)
}

/// Re-tags (and, when sealed, encrypts) every frame in `b[start..end]` in place.
fn seal_frames(b: &mut [u8], start: usize, end: usize, id: &[u8; 16], prot: &Protection) {
    let mut pos = start;
    while pos + FRAME_HEADER_LEN <= end {
        let Some(body_len) = u32_at(b, pos + 4) else {
            return;
        };
        let Some(seq) = u64_at(b, pos + 8) else {
            return;
        };
        let body_start = pos + FRAME_HEADER_LEN;
        let Some(tag_start) = body_start.checked_add(body_len as usize) else {
            return;
        };
        if tag_start + TAG_LEN > end {
            return;
        }
        let mut fh = [0u8; FRAME_HEADER_LEN];
        fh.copy_from_slice(&b[pos..body_start]);
        let tag = prot.seal_frame(id, &fh, seq, &mut b[body_start..tag_start]);
        b[tag_start..tag_start + TAG_LEN].copy_from_slice(&tag);
        pos = tag_start + TAG_LEN;
    }
}

/// Re-tags the footer (last 64 bytes) in place.
fn seal_footer(b: &mut [u8], id: &[u8; 16], prot: &Protection) {
    let at = b.len() - FOOTER_LEN;
    let tag = prot.footer_tag(id, &b[at..at + 32]);
    b[at + 32..].copy_from_slice(&tag);
}

/// Variant 2: every plain checksum recomputed.
fn rechecksummed(data: &[u8]) -> Option<Vec<u8>> {
    let hl = header_len(data)?;
    let mut b = data.to_vec();
    let id: [u8; 16] = b[16..32].try_into().ok()?;
    let prot = Protection::Plain;
    let tag = prot.header_tag(&b[..hl - 32]);
    b[hl - 32..hl].copy_from_slice(&tag);
    let end = b.len() - FOOTER_LEN;
    seal_frames(&mut b, hl, end, &id, &prot);
    seal_footer(&mut b, &id, &prot);
    Some(b)
}

/// Variant 3: a plain input re-encoded as an archive encrypted to [`KEY`].
fn sealed(data: &[u8]) -> Option<Vec<u8>> {
    let hl = header_len(data)?;
    let (mut header, _) = Header::parse(&data[..hl]).ok()?;
    if header.encrypted() {
        return None;
    }
    let file_key = FileKey::from_bytes(FILE_KEY);
    let key = SymmetricKey::from_bytes(KEY);
    header.stanzas = vec![wrap_keyfile(&key, &file_key, &header.archive_id)];
    let prot = Protection::Sealed(Box::new(Subkeys::derive(&file_key, &header.archive_id)));
    let mut b = header.write_untagged();
    let tag = prot.header_tag(&b);
    b.extend_from_slice(&tag);
    let new_hl = b.len();
    b.extend_from_slice(&data[hl..]);
    let end = b.len() - FOOTER_LEN;
    seal_frames(&mut b, new_hl, end, &header.archive_id, &prot);
    // The index moved by the header's growth.
    let index_offset = u64_at(&b, end)?.wrapping_add((new_hl - hl) as u64);
    b[end..end + 8].copy_from_slice(&index_offset.to_le_bytes());
    seal_footer(&mut b, &header.archive_id, &prot);
    Some(b)
}

fuzz_target!(|data: &[u8]| {
    run_cut(data);
    if let Some(b) = rechecksummed(data) {
        run_cut(&b);
    }
    if let Some(b) = sealed(data) {
        run_cut(&b);
    }
});
