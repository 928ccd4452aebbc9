//! Large files' digests are computed on the reader's hashing thread (src/archive/reader/
//! hashing.rs) while the reading thread writes the same bytes: these crafted format-2
//! archives check that doing so changes nothing a user relies on. A wrong digest is still
//! refused (exit 5, or 2 when encrypted) with nothing under the file's name; content that is
//! large pieces, small pieces after a large one, holes between them and a trailing hole, cut
//! across blocks at any point, hashes to exactly `b3sum`'s value, in stream order.

#![allow(missing_docs)]

mod common;

use std::path::Path;

use common::craft2::{Archive, Block, KEY};
use common::{code, krypta, s};
use krypta::format::index::IndexEntry;
use krypta::format::record::{write_data_head, write_end, write_entry};
use krypta::format::{EntryKind, EntryMeta, Timestamp, Version};

/// The hashing thread takes pieces of at least this many bytes (hashing.rs `ASYNC_MIN`).
const ASYNC_MIN: usize = 256 << 10;

fn meta() -> EntryMeta {
    EntryMeta {
        path: b"f".to_vec(),
        kind: EntryKind::File,
        mode: 0o644,
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
        ..Default::default()
    }
}

/// Bytes that differ at every position (so a piece hashed out of place changes the digest).
fn pattern(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8)
        .collect()
}

/// The file's whole content: `pieces` at their offsets, zeros elsewhere, `size` bytes.
fn content(pieces: &[(u64, Vec<u8>)], size: u64) -> Vec<u8> {
    let mut c = vec![0u8; size as usize];
    for (off, p) in pieces {
        c[*off as usize..*off as usize + p.len()].copy_from_slice(p);
    }
    c
}

/// A plain (or key-file sealed) archive of one file `f` made of DATA records `pieces`, of
/// `size` bytes, ending with END_DIGEST `digest`; its record stream is cut into stored blocks
/// at the stream offsets `cuts`.
fn archive(
    pieces: &[(u64, Vec<u8>)],
    size: u64,
    digest: [u8; 32],
    cuts: &[usize],
    sealed: bool,
) -> Vec<u8> {
    let mut r = Vec::new();
    let mut starts = vec![0usize];
    write_entry(&mut r, &meta(), Version::V2);
    for (off, p) in pieces {
        starts.push(r.len());
        write_data_head(&mut r, *off, p.len() as u32);
        r.extend_from_slice(p);
    }
    starts.push(r.len());
    write_end(&mut r, size, Some(&digest), Version::V2);
    let mut edges = vec![0];
    edges.extend(cuts.iter().copied().filter(|&c| c > 0 && c < r.len()));
    edges.push(r.len());
    let blocks: Vec<Block> = edges
        .windows(2)
        .map(|w| {
            let first = starts
                .iter()
                .find(|&&s| s >= w[0] && s < w[1])
                .map(|&s| (s - w[0]) as u32);
            Block::stored(&r[w[0]..w[1]], w[0] as u64, first)
        })
        .collect();
    let last = blocks.len() as u64 - 1;
    let mut a = Archive::new(
        blocks,
        vec![IndexEntry {
            meta: meta(),
            size,
            digest: Some(digest),
            first_seq: 0,
            first_offset: 0,
            last_seq: last,
        }],
    );
    a.sealed = sealed;
    a.bytes()
}

/// Runs `t` and `x` on `bytes`; returns their exit codes and the extracted file, if any.
fn t_and_x(dir: &Path, bytes: &[u8], sealed: bool) -> (i32, i32, Option<Vec<u8>>) {
    let ar = dir.join("a.kry");
    std::fs::write(&ar, bytes).unwrap();
    let key = dir.join("k.key");
    let mut key_args: Vec<String> = Vec::new();
    if sealed {
        let text = krypta::crypto::keyfile::SymmetricKey::from_bytes(KEY).to_text();
        std::fs::write(&key, text.as_bytes()).unwrap();
        key_args = vec!["--keyfile".into(), s(&key).into()];
    }
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let t = krypta().arg("t").args(&key_args).arg(&ar).output().unwrap();
    let x = krypta()
        .args(["x", "-q", "-o", s(&out)])
        .args(&key_args)
        .arg(&ar)
        .output()
        .unwrap();
    (code(&t), code(&x), std::fs::read(out.join("f")).ok())
}

#[test]
fn a_large_file_with_a_wrong_digest_is_refused_and_never_named() {
    let d = tempfile::tempdir().unwrap();
    let p = pattern(3 * ASYNC_MIN, 1);
    for (sealed, want) in [(false, 5), (true, 2)] {
        let mut digest = *blake3::hash(&p).as_bytes();
        digest[31] ^= 1;
        // One large piece, cut across three blocks.
        let a = archive(
            &[(0, p.clone())],
            p.len() as u64,
            digest,
            &[100_000, 500_000],
            sealed,
        );
        let (t, x, f) = t_and_x(d.path(), &a, sealed);
        assert_eq!((t, x), (want, want), "sealed: {sealed}");
        assert!(f.is_none(), "nothing under the final name");
        assert!(!d.path().join("out").join("f").exists());
    }
}

#[test]
fn large_and_small_pieces_and_holes_hash_in_stream_order_across_any_cut() {
    let d = tempfile::tempdir().unwrap();
    // A large piece (hashed on the thread), a hole, a small piece after it (still on the
    // thread: the digest stays there until the file ends), another large one, a trailing hole.
    let pieces = vec![
        (0u64, pattern(ASYNC_MIN + 5, 2)),
        (ASYNC_MIN as u64 + 70_000, pattern(100, 3)),
        (1 << 20, pattern(2 * ASYNC_MIN, 4)),
    ];
    let size = (3 << 20) + 17;
    let whole = content(&pieces, size);
    let digest = *blake3::hash(&whole).as_bytes();
    for cuts in [
        vec![],
        vec![1],
        // Inside the first piece, the second, the third, and inside the END record.
        vec![40, ASYNC_MIN / 2, ASYNC_MIN + 60, 3 * ASYNC_MIN + 200],
        vec![ASYNC_MIN + 30, ASYNC_MIN + 160],
    ] {
        for sealed in [false, true] {
            let a = archive(&pieces, size, digest, &cuts, sealed);
            let (t, x, f) = t_and_x(d.path(), &a, sealed);
            assert_eq!((t, x), (0, 0), "cuts {cuts:?}, sealed {sealed}");
            assert!(f.as_deref() == Some(&whole[..]), "cuts {cuts:?}: content");
            // Digests of what a hasher that skipped the holes, or one byte of the last large
            // piece, would have seen: refused.
            let no_holes: Vec<u8> = pieces.iter().flat_map(|(_, p)| p.clone()).collect();
            let mut flipped = whole.clone();
            flipped[(1 << 20) + 5] ^= 1;
            for wrong in [blake3::hash(&no_holes), blake3::hash(&flipped)] {
                let a = archive(&pieces, size, *wrong.as_bytes(), &cuts, sealed);
                let (t, x, f) = t_and_x(d.path(), &a, sealed);
                let want = if sealed { 2 } else { 5 };
                assert_eq!((t, x), (want, want), "cuts {cuts:?}, sealed {sealed}");
                assert!(f.is_none());
            }
        }
    }
}

/// Regression (review of the decode-ahead): a referencing block decoded ahead of its turn
/// must be judged in the order the reader always used: its stream offset and reference
/// against the blocks before it first, then its decode. Block 2 here has both a wrong stream
/// offset and an undecodable payload: the offset is what the error names, as when the block
/// was decoded on the reading thread.
#[test]
fn a_block_decoded_ahead_is_checked_before_its_decode_is_used() {
    let d = tempfile::tempdir().unwrap();
    let c = pattern(300_000, 9);
    let mut r = Vec::new();
    write_entry(&mut r, &meta(), Version::V2);
    write_data_head(&mut r, 0, c.len() as u32);
    r.extend_from_slice(&c);
    let end_at = r.len();
    write_end(
        &mut r,
        c.len() as u64,
        Some(blake3::hash(&c).as_bytes()),
        Version::V2,
    );
    let (c1, c2) = (100_000usize, 200_000usize);
    let referencing = |from: usize, to: usize, first: Option<u32>, offset: u64| {
        let mut b = Block::stored(&r[from..to], offset, first);
        b.header.reference_len = from as u32;
        b.zstd = true;
        b.prefix = r[..from].to_vec();
        b
    };
    let build = |offset2: u64, garbage: bool| {
        let mut b2 = referencing(c2, r.len(), Some((end_at - c2) as u32), offset2);
        if garbage {
            b2.payload = Some(vec![0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3]);
        }
        let blocks = vec![
            Block::stored(&r[..c1], 0, Some(0)),
            referencing(c1, c2, None, c1 as u64),
            b2,
        ];
        Archive::new(
            blocks,
            vec![IndexEntry {
                meta: meta(),
                size: c.len() as u64,
                digest: Some(*blake3::hash(&c).as_bytes()),
                first_seq: 0,
                first_offset: 0,
                last_seq: 2,
            }],
        )
        .bytes()
    };
    let ar = d.path().join("a.kry");
    // The honest archive reads back (blocks 1 and 2 decoded ahead against their reference).
    std::fs::write(&ar, build(c2 as u64, false)).unwrap();
    let o = krypta().args(["t", s(&ar)]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    // Wrong offset and garbage: the offset is named.
    std::fs::write(&ar, build(c2 as u64 + 16, true)).unwrap();
    let o = krypta().args(["t", s(&ar)]).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 3, "{e}");
    assert!(
        e.contains(&format!(
            "stream offset {} where the blocks before it end at {c2}",
            c2 + 16
        )),
        "{e}"
    );
    // Garbage alone: the decode is what fails.
    std::fs::write(&ar, build(c2 as u64, true)).unwrap();
    let o = krypta().args(["t", s(&ar)]).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 3, "{e}");
    assert!(!e.contains("stream offset"), "{e}");
}
