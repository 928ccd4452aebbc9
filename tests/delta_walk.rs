//! Issue 17: the base's record stream is walked on a thread of its own while the delta is
//! written (`src/archive/delta/walk.rs`, since session 33), so the writer waits only for the
//! base bytes its regions need. What the walk checks must still fail the write wherever in
//! the base it finds the problem: nothing is left under the output's name.

mod cli_common;
mod common;

use cli_common::*;
use common::craft2::{Archive, Block, file};
use common::{code, s};
use krypta::format::Version;
use krypta::format::index::IndexEntry;
use krypta::format::record::{DATA_HEAD_LEN, write_data_head, write_end, write_entry};

/// v1: `a.bin` then `z.bin`, 256 KiB of random bytes each, in 64 KiB blocks (so `z.bin`'s
/// frames are the second half of the base's); v2: `a.bin` with one byte changed, no `z.bin`.
fn two_files(fx: &Fx) {
    let a = common::bytes(256 << 10, 5, false);
    fx.file("v1/a.bin", &a);
    fx.file("v1/z.bin", &common::bytes(256 << 10, 6, false));
    let mut a2 = a;
    a2[1000] ^= 0x20;
    fx.file("v2/a.bin", &a2);
    fx.ok(&["c", "-q", "-b", "64K", "base.kry", "v1"]);
}

/// A base damaged only where no region of the new archive reaches (`z.bin`'s frames; v2
/// has no `z.bin`) fails the write as it did when the whole base was walked first: exit 5 as
/// `t` of the base, the base and its frame named, no output. (The walk's error reaches the
/// writer at a block cut or, at the latest, when the archive is finished.)
#[test]
fn a_base_damaged_where_no_region_reaches_still_fails_the_write() {
    let fx = Fx::new();
    two_files(&fx);
    // Unchanged, the delta is written and restores v2.
    fx.ok(&["c", "-q", "-b", "64K", "--base", "base.kry", "ok.kry", "v2"]);
    fx.ok(&["x", "-q", "--base", "base.kry", "-o", "out", "ok.kry"]);
    assert_eq!(fx.read("out/v2/a.bin"), fx.read("v2/a.bin"));
    let mut b = fx.read("base.kry");
    let at = b.len() * 3 / 4;
    b[at] ^= 0x01;
    std::fs::write(fx.p("base.kry"), &b).unwrap();
    assert_eq!(code(&fx.run(&["t", "base.kry"])), 5);
    let o = fx.run(&["c", "-q", "-b", "64K", "--base", "base.kry", "d.kry", "v2"]);
    let e = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(code(&o), 5, "{e}");
    assert!(
        e.starts_with("krypta: base.kry: integrity check failed: base frame "),
        "{e}"
    );
    // The damaged frame is one of z.bin's (the second half of eight or so), not frame 0.
    let frame: u64 = e["krypta: base.kry: integrity check failed: base frame ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(frame >= 4, "{e}");
    assert!(!fx.exists("d.kry"));
    // To stdout, which cannot be taken back, the base is walked to its end first: the same
    // refusal, and not one byte for the reader downstream (review of session 33: beside the
    // writing, frames were on stdout before the walk reached the damage).
    let o = fx.run(&["c", "-q", "-b", "64K", "--base", "base.kry", "-", "v2"]);
    let e2 = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(code(&o), 5, "{e2}");
    assert_eq!(e2, e);
    assert!(o.stdout.is_empty(), "{} bytes on stdout", o.stdout.len());
}

/// A file's records: ENTRY of `name`, a DATA record per `(file offset, content range)` in
/// the order given, END (or END_DIGEST with `digest`) of the content's size.
fn records(
    name: &str,
    content: &[u8],
    cuts: &[(u64, std::ops::Range<usize>)],
    digest: Option<&[u8; 32]>,
) -> Vec<u8> {
    let mut raw = Vec::new();
    write_entry(&mut raw, &file(name), Version::V2);
    for (offset, r) in cuts {
        write_data_head(&mut raw, *offset, r.len() as u32);
        raw.extend_from_slice(&content[r.clone()]);
    }
    write_end(&mut raw, content.len() as u64, digest, Version::V2);
    raw
}

/// `c --base` of a crafted base (every tag valid) whose stream holds `raw` and whose index
/// has the one entry `indexed`, against a v2 whose `b.bin` is `content` with a byte
/// changed: exits as `t` of the base does, naming the base and `problem`, no output.
fn crafted_base_refused(
    raw: &[u8],
    indexed: &str,
    digest: Option<[u8; 32]>,
    content: &[u8],
    problem: &str,
) {
    crafted_base_refused_as(false, raw, indexed, digest, content, problem);
}

/// [`crafted_base_refused`] of a plain base (`sealed` false) or of one encrypted with a key
/// file (`--base-keyfile`): its tags verify, so the refusal is "inconsistent archive", not
/// "wrong key". The record stream is one frame.
fn crafted_base_refused_as(
    sealed: bool,
    raw: &[u8],
    indexed: &str,
    digest: Option<[u8; 32]>,
    content: &[u8],
    problem: &str,
) {
    crafted_base_refused_in(sealed, raw, None, indexed, digest, content, problem, 0);
}

/// [`crafted_base_refused_as`] with the record stream cut into two frames at `cut`
/// (`Some((at, first record of the second frame))`), the refusal placed at base frame
/// `frame`.
#[allow(clippy::too_many_arguments)]
fn crafted_base_refused_in(
    sealed: bool,
    raw: &[u8],
    cut: Option<(usize, Option<u32>)>,
    indexed: &str,
    digest: Option<[u8; 32]>,
    content: &[u8],
    problem: &str,
    frame: usize,
) {
    let fx = Fx::new();
    let blocks = match cut {
        None => vec![Block::stored(raw, 0, Some(0))],
        Some((at, first)) => vec![
            Block::stored(&raw[..at], 0, Some(0)),
            Block::stored(&raw[at..], at as u64, first),
        ],
    };
    let entry = IndexEntry {
        meta: file(indexed),
        size: content.len() as u64,
        digest,
        first_seq: 0,
        first_offset: 0,
        last_seq: blocks.len() as u64 - 1,
    };
    let mut base = Archive::new(blocks, vec![entry]);
    base.sealed = sealed;
    std::fs::write(fx.p("base.kry"), base.bytes()).unwrap();
    let mut b2 = content.to_vec();
    b2[10] ^= 1;
    fx.file("v2/b.bin", &b2);
    if sealed {
        let text = krypta::crypto::keytext::encode(
            krypta::crypto::KeyKind::Symmetric,
            &common::craft2::KEY,
        );
        fx.file("k.key", format!("{text}\n").as_bytes());
        std::fs::set_permissions(
            fx.p("k.key"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
    }
    let k = fx.p("k.key");
    let (t_key, c_key) = (["--keyfile", s(&k)], ["--base-keyfile", s(&k)]);
    let mut t_args = vec!["t", "base.kry"];
    let mut c_args = vec!["c", "-q", "--base", "base.kry"];
    if sealed {
        t_args.extend(t_key);
        c_args.extend(c_key);
    }
    c_args.extend(["d.kry", "v2"]);
    let t = fx.run(&t_args);
    assert_ne!(code(&t), 0);
    let o = fx.run(&c_args);
    let e = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(code(&o), code(&t), "{e}");
    assert!(e.starts_with("krypta: base.kry: "), "{e}");
    assert!(e.contains(problem), "{e}");
    // Placed at the base frame the record starts in, by its number and the byte the frame
    // starts at, not "at byte 0" as every such error said before.
    let start = base.frame_offset(frame);
    let kind = if sealed { "inconsistent" } else { "corrupt" };
    let at =
        format!("{kind} archive at byte {start}: delta base record stream: base frame {frame}: ");
    assert!(e.contains(&at), "{e}");
    assert!(!fx.exists("d.kry"));
}

/// A base whose record stream names another file than its index (a faulty writer) is
/// refused when writing against it: the map's files come from the index and the walk holds
/// each ENTRY record to it. Before (session 32 and earlier) the write went on with the
/// stream's file, unreferenced.
#[test]
fn a_base_whose_stream_and_index_disagree_is_refused() {
    let content = common::bytes(100_000, 9, false);
    let raw = records("a.bin", &content, &[(0, 0..content.len())], None);
    crafted_base_refused(
        &raw,
        "b.bin",
        None,
        &content,
        "ENTRY record: entry 0 is not the index's entry 0",
    );
}

/// The same refusal for an encrypted base whose frames verify with the key given: the
/// structure is named at its frame, and the key is not blamed.
#[test]
fn an_encrypted_base_whose_stream_and_index_disagree_is_refused_as_inconsistent() {
    let content = common::bytes(100_000, 9, false);
    let raw = records("a.bin", &content, &[(0, 0..content.len())], None);
    crafted_base_refused_as(
        true,
        &raw,
        "b.bin",
        None,
        &content,
        "ENTRY record: entry 0 is not the index's entry 0",
    );
}

/// The walk holds a file's segments to the order `t` does (FORMAT.md §6: strictly
/// increasing, not overlapping), which the map's waits rely on: out of order, which segment
/// a region found depended on how far the walk had come (review of session 33).
#[test]
fn a_base_file_with_segments_out_of_order_is_refused() {
    let content = common::bytes(100_000, 9, false);
    let cuts = [(50_000, 50_000..100_000), (0, 0..50_000)];
    let raw = records("b.bin", &content, &cuts, None);
    crafted_base_refused(
        &raw,
        "b.bin",
        None,
        &content,
        "segment at 0 overlaps or precedes the previous one ending at 100000",
    );
}

/// A record that starts in one base frame and runs on into the next is placed at the frame
/// it starts in (review of session 34: the walk, then in the next frame, named that one).
/// Here the out-of-order DATA record's head is cut five bytes in; the record before it and
/// the content after it fill both frames.
#[test]
fn a_bad_record_is_placed_at_the_frame_it_starts_in() {
    let content = common::bytes(100_000, 9, false);
    let cuts = [(50_000, 50_000..100_000), (0, 0..50_000)];
    let raw = records("b.bin", &content, &cuts, None);
    let mut entry = Vec::new();
    write_entry(&mut entry, &file("b.bin"), Version::V2);
    let second = entry.len() + DATA_HEAD_LEN + 50_000;
    let end = second + DATA_HEAD_LEN + 50_000;
    let at = second + 5;
    let problem = "segment at 0 overlaps or precedes the previous one ending at 100000";
    crafted_base_refused_in(
        false,
        &raw,
        Some((at, Some((end - at) as u32))),
        "b.bin",
        None,
        &content,
        problem,
        0,
    );
    // Cut before the head instead, the record starts in (and is placed at) the second frame.
    crafted_base_refused_in(
        false,
        &raw,
        Some((second, Some(0))),
        "b.bin",
        None,
        &content,
        problem,
        1,
    );
}

/// A base whose index gives a file another digest than its END_DIGEST (h78's splice of two
/// archives' frames and index, session 33) is refused as `t` of it is ("index disagrees with
/// the record stream", exit 3); before, `c` went on and only left that file unreferenced.
#[test]
fn a_base_whose_index_digest_is_not_the_streams_is_refused() {
    let content = common::bytes(100_000, 9, false);
    let digest = *blake3::hash(&content).as_bytes();
    let raw = records("b.bin", &content, &[(0, 0..content.len())], Some(&digest));
    let mut other = digest;
    other[0] ^= 1;
    crafted_base_refused(
        &raw,
        "b.bin",
        Some(other),
        &content,
        "END record: file entry 0's size or digest is not the index's",
    );
}
