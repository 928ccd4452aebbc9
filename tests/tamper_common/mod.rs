//! Shared fixture of the library-level tamper tests (`encryption_tamper.rs`,
//! `kdf_limits.rs`): a small encrypted archive written in memory and its check.

#![allow(dead_code, missing_docs)]

use std::path::Path;

use krypta::Error;
use krypta::archive::reader::OpenOptions;
use krypta::archive::writer::{ArchiveWriter, BcjMode, ReaderSource, WriteOptions};
use krypta::codec::Level;
use krypta::crypto::keyfile::SymmetricKey;
use krypta::crypto::{Identity, Recipient};
use krypta::format::{EntryKind, EntryMeta, Timestamp};

use super::common;

pub const KEY: [u8; 32] = [0x5a; 32];

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
        link: if kind == EntryKind::Symlink {
            b"a".to_vec()
        } else {
            vec![]
        },
        ..Default::default()
    }
}

/// An encrypted archive of a directory, a 70,000-byte compressible file (two 64 KiB blocks
/// of records), a 300-byte random file and a symlink. `id` None = a random archive id; the
/// file key is always random. `store` writes every block uncompressed.
pub fn archive(recipient: Recipient, id: Option<[u8; 16]>, big: &[u8], store: bool) -> Vec<u8> {
    let opts = WriteOptions {
        level: if store {
            None
        } else {
            Some(Level::new(3).unwrap())
        },
        block_size: 64 * 1024,
        jobs: 1,
        bcj: BcjMode::Off,
        created: 1_700_000_000,
        comment: "test".into(),
        recipients: vec![recipient],
        archive_id: id,
        file_key: None,
        ..WriteOptions::new()
    };
    let mut w = ArchiveWriter::new(Vec::new(), "mem", opts).unwrap();
    w.add_entry(&meta("d", EntryKind::Dir)).unwrap();
    w.add_file(
        &meta("d/a", EntryKind::File),
        &mut ReaderSource::new(big, "a"),
    )
    .unwrap();
    let small = common::bytes(300, 2, false);
    w.add_file(
        &meta("d/b", EntryKind::File),
        &mut ReaderSource::new(&small[..], "b"),
    )
    .unwrap();
    w.add_entry(&meta("d/l", EntryKind::Symlink)).unwrap();
    w.finish().unwrap().1
}

pub fn keyfile_archive(id: Option<[u8; 16]>) -> Vec<u8> {
    let big = b"krypta ".repeat(10_000);
    archive(
        Recipient::KeyFile(SymmetricKey::from_bytes(KEY)),
        id,
        &big,
        false,
    )
}

pub fn check_with(path: &Path, id: Identity) -> Result<krypta::archive::ScanSummary, Error> {
    krypta::test(
        path,
        OpenOptions {
            identities: vec![id],
            jobs: 1,
            ..OpenOptions::default()
        },
        &mut krypta::Collect::default(),
    )
}

pub fn check(path: &Path) -> Result<krypta::archive::ScanSummary, Error> {
    check_with(path, Identity::KeyFile(SymmetricKey::from_bytes(KEY)))
}
