//! Shared fixture of the hostile-archive tests (`hostile.rs`, `hostile_holes.rs`):
//! archives crafted with the library's own writers, and the binary run under a 512 MiB
//! address-space limit with a deadline.

#![allow(dead_code, missing_docs, unused_imports)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use krypta::codec::{Codec, Filter, MAX_BLOCK_SIZE};
use krypta::crypto::frame::Protection;
use krypta::crypto::keys::{FileKey, Subkeys};
use krypta::crypto::stanza::{Kdf, wrap_password_with_salt};
use krypta::format::footer::{FOOTER_LEN, Footer};
use krypta::format::frame::{BlockHeader, FrameHeader, FrameKind, MAX_BODY_LEN};
use krypta::format::header::Header;
use krypta::format::index::{Index, IndexEntry};
use krypta::format::record::{write_data_head, write_end, write_entry};
use krypta::format::{EntryKind, EntryMeta, Stanza, Timestamp, Version};

/// These hostile archives are format 1: a format-1 reader must keep refusing them (format 2's
/// structures have their own tests).
pub const V: Version = Version::V1;

/// The archive id of every crafted archive.
pub const ID: [u8; 16] = [0x1d; 16];
/// Address-space limit for the binary, KiB (512 MiB).
pub const LIMIT_KIB: u64 = 512 * 1024;
/// How long one run may take before it counts as a hang.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A header with the given stanzas, tagged under `prot`.
pub fn header(stanzas: Vec<Stanza>, prot: &Protection) -> Vec<u8> {
    let h = Header {
        version: V,
        extensions: vec![],
        archive_id: ID,
        created: 1_700_000_000,
        block_size: 64 << 10,
        level: 0,
        stanzas,
        comment: String::new(),
    };
    let mut b = h.write_untagged();
    let tag = prot.header_tag(&b);
    b.extend_from_slice(&tag);
    b
}

/// A stored block body: block header and payload.
pub fn stored(payload: &[u8], filter_start: u64) -> Vec<u8> {
    let mut b = BlockHeader {
        codec: Codec::Store,
        filter: Filter::None,
        raw_len: payload.len() as u32,
        filter_start,
    }
    .to_bytes()
    .to_vec();
    b.extend_from_slice(payload);
    b
}

/// One plain frame with a valid checksum.
pub fn frame(kind: FrameKind, last: bool, seq: u64, mut body: Vec<u8>) -> Vec<u8> {
    let fh = FrameHeader {
        kind,
        last,
        body_len: body.len() as u32,
        seq,
    }
    .to_bytes();
    let tag = Protection::Plain.seal_frame(&ID, &fh, seq, &mut body);
    let mut out = fh.to_vec();
    out.extend_from_slice(&body);
    out.extend_from_slice(&tag);
    out
}

/// The 64-byte footer with a valid checksum under `prot`.
pub fn footer(index_offset: u64, data_frames: u64, prot: &Protection) -> Vec<u8> {
    let f = Footer {
        index_offset,
        data_frames,
        index_frames: 1,
    }
    .untagged(V);
    let mut out = f.to_vec();
    out.extend_from_slice(&prot.footer_tag(&ID, &f));
    out
}

/// A plain archive: `records` in one data frame (none when empty), then one index frame
/// holding `index_body` (a whole block body), then the footer.
pub fn archive_with_index_body(records: &[u8], index_body: Vec<u8>) -> Vec<u8> {
    let mut b = header(vec![], &Protection::Plain);
    let mut data_frames = 0;
    if !records.is_empty() {
        b.extend(frame(FrameKind::Data, false, 0, stored(records, 0)));
        data_frames = 1;
    }
    let index_offset = b.len() as u64;
    b.extend(frame(FrameKind::Index, true, data_frames, index_body));
    b.extend(footer(index_offset, data_frames, &Protection::Plain));
    b
}

/// A plain archive whose index is `index` (stored, one frame).
pub fn archive(records: &[u8], index: &[u8]) -> Vec<u8> {
    archive_with_index_body(records, stored(index, 0))
}

pub fn file_meta(path: &[u8]) -> EntryMeta {
    EntryMeta {
        path: path.to_vec(),
        kind: EntryKind::File,
        mode: 0o644,
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
        uid: 1000,
        gid: 1000,
        link: vec![],
        ..Default::default()
    }
}

/// The index of one file entry of `size` bytes with `digest` in the first data frame.
pub fn one_file_index(meta: EntryMeta, size: u64, digest: [u8; 32], records_len: usize) -> Vec<u8> {
    Index {
        entries: vec![IndexEntry {
            meta,
            size,
            digest: Some(digest),
            first_seq: 0,
            first_offset: 0,
            last_seq: 0,
        }],
        frame_body_lens: vec![(16 + records_len) as u32],
        frame_ref_lens: vec![0],
    }
    .write(V)
}

/// The record stream of one file `f` holding `content` (ENTRY, DATA, END).
pub fn one_file_records(content: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    write_entry(&mut r, &file_meta(b"f"), V);
    write_data_head(&mut r, 0, content.len() as u32);
    r.extend_from_slice(content);
    write_end(
        &mut r,
        content.len() as u64,
        Some(blake3::hash(content).as_bytes()),
        V,
    );
    r
}

/// What one run of the binary did.
pub struct Run {
    pub code: Option<i32>,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Runs `krypta ARGS` under `ulimit -v` with a deadline (killed when it passes).
pub fn krypta(args: &[&str]) -> Run {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_krypta"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    Run {
        code: status.and_then(|s| s.code()),
        stderr,
        elapsed: started.elapsed(),
    }
}

/// Writes `bytes` as `name` in a fresh directory; returns the directory guard and the path.
pub fn write(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write archive");
    (dir, path)
}

/// Asserts the run ended in time with `code` and one stderr line naming `path` that contains
/// `needle`, and no panic.
pub fn assert_refused(run: &Run, code: i32, path: &Path, needle: &str) {
    assert!(!run.stderr.contains("panicked"), "panic: {}", run.stderr);
    assert!(
        run.elapsed < Duration::from_secs(10),
        "took {:?}",
        run.elapsed
    );
    assert_eq!(run.code, Some(code), "stderr: {}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr: {}", run.stderr);
    let expected_start = format!("krypta: {}: ", path.display());
    assert!(lines[0].starts_with(&expected_start), "{}", lines[0]);
    assert!(lines[0].contains(needle), "{}", lines[0]);
    eprintln!("exit {code} in {:?}: {}", run.elapsed, lines[0]);
}

/// `t FILE` and `l FILE` both refused with exit 3 and `needle` in the message.
pub fn assert_test_and_list_refuse(path: &Path, needle: &str) {
    let p = path.to_str().expect("utf-8 temp path");
    for cmd in ["t", "l"] {
        let run = krypta(&[cmd, p]);
        assert_refused(&run, 3, path, needle);
    }
}
