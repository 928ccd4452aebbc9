//! Fuzz target: format 2's index references (docs/FORMAT.md §8: each entry's `first_seq`,
//! `first_offset`, `last_seq`, sizes and digests, and the frame table's body and reference
//! lengths, which the reader resolves to data frames and file offsets) and the healing source
//! (§15.12: reads through recovery data, repairing what it can and serving the rest as read),
//! with the salvage that reads past what fails. `krypta::test_salvaging`, a salvaging
//! `krypta::extract` and `krypta::list_or_salvage` must return Ok or Err — never panic, hang
//! or over-allocate.
//!
//! The archives are the golden format-2 vectors (`test-vectors/krypta_archive_v2.txt`, those
//! without a password: the plain ones and the key-file one, read with its key). The index
//! each holds is decoded once; an input edits it (or replaces it), and the archive is written
//! again with that index as one stored index frame, its tag and the footer's recomputed
//! (sealed under the vector's file key when it is encrypted), so the edited index reaches the
//! reader's checks behind the tags. Then, as the input says, the whole file is wrapped in
//! recovery data (64-byte shards, 1 %) and/or has bytes edited and/or is cut at half.
//!
//! Input: `b0` picks the vector (low 2 bits) and the options (0x04: the index bytes are the
//! input's raw bytes, not edits; 0x08: recovery data; 0x10: cut at half); `b1` counts the
//! index edits (or raw index bytes, ×4); then the index edits, then file edits, each 4 bytes
//! `op, pos_lo, pos_hi, val` (op % 6: set, xor, insert, delete, a u64 `val` at `pos`, a u32).

#![no_main]

use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

use krypta::archive::OpenOptions;
use krypta::archive::reader::Archive;
use krypta::crypto::frame::Protection;
use krypta::crypto::keyfile::SymmetricKey;
use krypta::crypto::keys::{FileKey, Subkeys};
use krypta::crypto::stanza::Identity;
use krypta::format::Version;
use krypta::format::extension::Extension;
use krypta::format::footer::Footer;
use krypta::format::frame::FRAME_HEADER_LEN;
use krypta::format::header::Header;
use krypta::recovery::{RecoveryOptions, RecoveryWriter};
use libfuzzer_sys::fuzz_target;

mod common;

const VECTORS: &str = include_str!("../../test-vectors/krypta_archive_v2.txt");

/// One golden archive, taken apart once.
struct Golden {
    /// The archive's bytes up to its first index frame (header and data frames).
    front: Vec<u8>,
    /// Its header length.
    header_len: usize,
    /// Data frames.
    data_frames: u64,
    /// Archive id.
    id: [u8; 16],
    /// The key file's key (encrypted vectors).
    key: Option<[u8; 32]>,
    /// Sealed under the vector's file key, or plain.
    protection: Protection,
    /// The decoded index as written.
    index: Vec<u8>,
    /// The header as parsed (to add the recovery extension).
    header: Header,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|k| u8::from_str_radix(&s[2 * k..2 * k + 2], 16).expect("hex"))
        .collect()
}

fn open(key: Option<[u8; 32]>) -> OpenOptions {
    OpenOptions {
        identities: key
            .map(|k| Identity::KeyFile(SymmetricKey::from_bytes(k)))
            .into_iter()
            .collect(),
        jobs: 1,
        allow_unencrypted: true,
        in_flight_budget: None,
        ..OpenOptions::default()
    }
}

/// The vectors without a password stanza, each read once with the library to find its index.
fn goldens() -> &'static [Golden] {
    static G: OnceLock<Vec<Golden>> = OnceLock::new();
    G.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("krypta-fuzz-index-refs")
            .tempdir_in(common::scratch())
            .expect("temporary directory");
        let mut out = Vec::new();
        for rec in VECTORS.split("\nid = ").skip(1) {
            let field = |k: &str| {
                rec.lines()
                    .find_map(|l| l.strip_prefix(&format!("{k} = ")))
                    .map(str::to_string)
            };
            if field("password_salt").is_some() {
                continue;
            }
            let Some(archive) = field("archive") else {
                continue;
            };
            let bytes = hex(&archive);
            let key: Option<[u8; 32]> =
                field("keyfile_recipient").map(|k| hex(&k).try_into().expect("32 bytes"));
            let path: PathBuf = dir.path().join(format!("g{}.kry", out.len()));
            std::fs::write(&path, &bytes).expect("write vector");
            let mut ar = Archive::open(&path, open(key)).expect("golden vector opens");
            let (footer, index) = ar.read_index().expect("golden vector's index");
            let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
            let (header, _) = Header::parse(&bytes[..header_len]).expect("golden header");
            let protection = match field("file_key") {
                Some(fk) if header.encrypted() => {
                    let fk: [u8; 32] = hex(&fk).try_into().expect("32 bytes");
                    Protection::Sealed(Box::new(Subkeys::derive(
                        &FileKey::from_bytes(fk),
                        &header.archive_id,
                    )))
                }
                _ => Protection::Plain,
            };
            out.push(Golden {
                front: bytes[..footer.index_offset as usize].to_vec(),
                header_len,
                data_frames: footer.data_frames,
                id: header.archive_id,
                key,
                protection,
                index: index.write(Version::V2),
                header,
            });
        }
        assert!(!out.is_empty(), "no golden vector without a password");
        out
    })
}

/// Applies 4-byte edits from `ops` to `b` (see the module doc).
fn edit(b: &mut Vec<u8>, ops: &[u8]) {
    for op in ops.chunks_exact(4) {
        if b.is_empty() {
            b.push(op[3]);
            continue;
        }
        let pos = u16::from_le_bytes([op[1], op[2]]) as usize % b.len();
        let val = op[3];
        match op[0] % 6 {
            0 => b[pos] = val,
            1 => b[pos] ^= val.max(1),
            2 => b.insert(pos, val),
            3 => {
                b.remove(pos);
            }
            4 => {
                let end = (pos + 8).min(b.len());
                let v = u64::from(val).to_le_bytes();
                b[pos..end].copy_from_slice(&v[..end - pos]);
            }
            _ => {
                let end = (pos + 4).min(b.len());
                let v = u32::from(val).to_le_bytes();
                b[pos..end].copy_from_slice(&v[..end - pos]);
            }
        }
    }
}

/// The archive `g` with `index` as its one stored index frame, and `recovery`: a recovery
/// section (the header says so; the frames move with it).
fn rebuild(g: &Golden, index: &[u8], recovery: bool) -> Option<Vec<u8>> {
    if index.is_empty() || index.len() > 1 << 20 {
        return None;
    }
    let mut front = g.front.clone();
    if recovery {
        let mut h = g.header.clone();
        h.extensions.insert(0, Extension::Recovery { percent: 1 });
        let mut hb = h.write_untagged();
        let tag = g.protection.header_tag(&hb);
        hb.extend_from_slice(&tag);
        front = [&hb[..], &g.front[g.header_len..]].concat();
    }
    let index_offset = front.len() as u64;
    let mut body = Vec::with_capacity(24 + index.len());
    body.extend_from_slice(&[0, 0, 0, 0]);
    body.extend_from_slice(&(index.len() as u32).to_le_bytes());
    body.extend_from_slice(&0u64.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(index);
    let mut head = [0u8; FRAME_HEADER_LEN];
    head[0] = 2;
    head[1] = 1;
    head[4..8].copy_from_slice(&(body.len() as u32).to_le_bytes());
    head[8..16].copy_from_slice(&g.data_frames.to_le_bytes());
    let tag = g
        .protection
        .seal_frame(&g.id, &head, g.data_frames, &mut body);
    let mut b = front;
    b.extend_from_slice(&head);
    b.extend_from_slice(&body);
    b.extend_from_slice(&tag);
    let footer = Footer {
        index_offset,
        data_frames: g.data_frames,
        index_frames: 1,
    }
    .untagged(Version::V2);
    let tag = g.protection.footer_tag(&g.id, &footer);
    b.extend_from_slice(&footer);
    b.extend_from_slice(&tag);
    if !recovery {
        return Some(b);
    }
    let opts = RecoveryOptions {
        shard_size: 64,
        shards_per_segment: 1024,
        background: false,
        spill_dir: Some(common::scratch().to_path_buf()),
        ..RecoveryOptions::new(1)
    };
    let mut w = RecoveryWriter::new(Vec::new(), &opts).ok()?;
    w.write_all(&b).ok()?;
    Some(w.finish().ok()?.0)
}

/// Runs the readers on `bytes` written to a temporary file.
fn run(bytes: &[u8], key: Option<[u8; 32]>) {
    let Ok(mut file) = tempfile::NamedTempFile::new_in(common::scratch()) else {
        return;
    };
    if file.write_all(bytes).and_then(|()| file.flush()).is_err() {
        return;
    }
    let _ = krypta::test_salvaging(
        file.path(),
        open(key),
        true,
        &mut krypta::Collect::default(),
    );
    let _ = krypta::list_or_salvage(file.path(), open(key), &mut krypta::Collect::default());
    common::extract_salvaging(file.path(), open(key));
}

fuzz_target!(|data: &[u8]| {
    let [b0, b1, rest @ ..] = data else {
        return;
    };
    let gs = goldens();
    let g = &gs[usize::from(b0 & 3) % gs.len()];
    let n = (usize::from(*b1) * 4).min(rest.len());
    let (ix_ops, file_ops) = rest.split_at(n);
    let index = if b0 & 0x04 != 0 {
        ix_ops.to_vec()
    } else {
        let mut ix = g.index.clone();
        edit(&mut ix, ix_ops);
        ix
    };
    let Some(mut b) = rebuild(g, &index, b0 & 0x08 != 0) else {
        return;
    };
    edit(&mut b, file_ops);
    if b0 & 0x10 != 0 {
        b.truncate(b.len() / 2);
    }
    run(&b, g.key);
});
