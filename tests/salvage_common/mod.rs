//! Shared fixture of the salvage tests (`salvage*.rs`): a seeded archive of 120 files in
//! 64 KiB blocks, plain or encrypted with a key file, its geometry from the index (entries'
//! frame ranges, frames' offsets), and the damage an entry set must lose.

#![allow(dead_code, missing_docs)]

use std::collections::BTreeSet;
use std::path::Path;

use krypta::archive::reader::OpenOptions;
use krypta::archive::writer::{ArchiveWriter, BcjMode, ReaderSource, WriteOptions};
use krypta::codec::Level;
use krypta::crypto::keyfile::SymmetricKey;
use krypta::crypto::{Identity, Recipient};
use krypta::format::{EntryKind, EntryMeta, Timestamp};

use crate::common;

pub const KEY: [u8; 32] = [0x33; 32];
pub const FILES: usize = 120;

/// Writes [`KEY`] as a key file `k.key` in `dir`, mode 0600 (krypta warns about a key file
/// others can read, which a test comparing the whole of stderr would see), and returns its
/// path: the key option of the CLI runs against [`build`]`(true)`.
pub fn key_file(dir: &Path) -> std::path::PathBuf {
    let key = dir.join("k.key");
    std::fs::write(
        &key,
        krypta::crypto::keytext::encode(krypta::crypto::KeyKind::Symmetric, &KEY) + "\n",
    )
    .unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    key
}

pub fn meta(path: &str, kind: EntryKind) -> EntryMeta {
    EntryMeta {
        path: path.as_bytes().to_vec(),
        kind,
        mode: if kind == EntryKind::Dir { 0o755 } else { 0o644 },
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
        uid: 1000,
        gid: 1000,
        ..Default::default()
    }
}

/// The content of file `i`: seeded, incompressible, 1..=40 KiB, so that 64 KiB blocks hold a
/// few files each and some files span blocks.
pub fn content(i: usize) -> Vec<u8> {
    common::bytes(1024 + (i * 7919) % (39 * 1024), i as u64 + 1, false)
}

pub fn build(sealed: bool) -> Vec<u8> {
    let opts = WriteOptions {
        level: Some(Level::new(3).unwrap()),
        block_size: 64 * 1024,
        jobs: 1,
        bcj: BcjMode::Off,
        created: 1_700_000_000,
        comment: String::new(),
        recipients: if sealed {
            vec![Recipient::KeyFile(SymmetricKey::from_bytes(KEY))]
        } else {
            vec![]
        },
        archive_id: Some([9; 16]),
        file_key: None,
        ..WriteOptions::new()
    };
    let mut w = ArchiveWriter::new(Vec::new(), "mem", opts).unwrap();
    w.add_entry(&meta("t", EntryKind::Dir)).unwrap();
    for i in 0..FILES {
        let c = content(i);
        w.add_file(
            &meta(&format!("t/f{i:03}"), EntryKind::File),
            &mut ReaderSource::new(&c[..], "f"),
        )
        .unwrap();
    }
    w.finish().unwrap().1
}

pub fn open(sealed: bool) -> OpenOptions {
    OpenOptions {
        identities: if sealed {
            vec![Identity::KeyFile(SymmetricKey::from_bytes(KEY))]
        } else {
            vec![]
        },
        jobs: 2,
        ..OpenOptions::default()
    }
}

/// An entry's path and its first and last data frame.
pub type Span = (String, u64, u64);

/// (entry paths with their frame ranges, frame (start, end) offsets) of the intact archive.
pub fn geometry(p: &Path, sealed: bool) -> (Vec<Span>, Vec<(u64, u64)>) {
    let (entries, lens) = krypta::list(p, open(sealed)).unwrap();
    let hlen = u32::from_le_bytes(std::fs::read(p).unwrap()[12..16].try_into().unwrap()) as u64;
    let mut frames = vec![];
    let mut at = hlen;
    for l in lens {
        let n = l as u64 + 48;
        frames.push((at, at + n));
        at += n;
    }
    let e = entries
        .into_iter()
        .map(|e| {
            (
                String::from_utf8(e.meta.path).unwrap(),
                e.first_seq,
                e.last_seq,
            )
        })
        .collect();
    (e, frames)
}

/// The entries a damaged byte range costs: those with a frame in it.
pub fn expected_damage(
    entries: &[Span],
    frames: &[(u64, u64)],
    range: (u64, u64),
) -> BTreeSet<String> {
    let bad: Vec<u64> = frames
        .iter()
        .enumerate()
        .filter(|(_, f)| f.0 < range.1 && range.0 < f.1)
        .map(|(i, _)| i as u64)
        .collect();
    assert!(!bad.is_empty(), "the damage hits a data frame");
    entries
        .iter()
        .filter(|(_, a, b)| bad.iter().any(|s| a <= s && s <= b))
        .map(|(p, _, _)| p.clone())
        .collect()
}

/// The paths named in "PATH: not restored: ..." / "not verified" warnings.
pub fn named(warnings: &[String], not: &str) -> BTreeSet<String> {
    warnings
        .iter()
        .filter_map(|w| {
            w.split_once(&format!(": {not}: "))
                .map(|(p, _)| p.to_string())
        })
        .collect()
}
