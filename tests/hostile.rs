//! Hostile archives through the `krypta` binary under a 512 MiB address-space limit: crafted
//! with the library's own writers (valid checksums, so the reader reaches the hostile field),
//! each must end quickly with exit 3 (corrupt structure / KDF limit) and one stderr line
//! naming the file, never a panic, a hang or an allocation taken from the hostile value.

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
const V: Version = Version::V1;

/// The archive id of every crafted archive.
const ID: [u8; 16] = [0x1d; 16];
/// Address-space limit for the binary, KiB (512 MiB).
const LIMIT_KIB: u64 = 512 * 1024;
/// How long one run may take before it counts as a hang.
const DEADLINE: Duration = Duration::from_secs(20);

/// A header with the given stanzas, tagged under `prot`.
fn header(stanzas: Vec<Stanza>, prot: &Protection) -> Vec<u8> {
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
fn stored(payload: &[u8], filter_start: u64) -> Vec<u8> {
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
fn frame(kind: FrameKind, last: bool, seq: u64, mut body: Vec<u8>) -> Vec<u8> {
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
fn footer(index_offset: u64, data_frames: u64, prot: &Protection) -> Vec<u8> {
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
fn archive_with_index_body(records: &[u8], index_body: Vec<u8>) -> Vec<u8> {
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
fn archive(records: &[u8], index: &[u8]) -> Vec<u8> {
    archive_with_index_body(records, stored(index, 0))
}

fn file_meta(path: &[u8]) -> EntryMeta {
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
fn one_file_index(meta: EntryMeta, size: u64, digest: [u8; 32], records_len: usize) -> Vec<u8> {
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
fn one_file_records(content: &[u8]) -> Vec<u8> {
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
struct Run {
    code: Option<i32>,
    stderr: String,
    elapsed: Duration,
}

/// Runs `krypta ARGS` under `ulimit -v` with a deadline (killed when it passes).
fn krypta(args: &[&str]) -> Run {
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
fn write(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write archive");
    (dir, path)
}

/// Asserts the run ended in time with `code` and one stderr line naming `path` that contains
/// `needle`, and no panic.
fn assert_refused(run: &Run, code: i32, path: &Path, needle: &str) {
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
fn assert_test_and_list_refuse(path: &Path, needle: &str) {
    let p = path.to_str().expect("utf-8 temp path");
    for cmd in ["t", "l"] {
        let run = krypta(&[cmd, p]);
        assert_refused(&run, 3, path, needle);
    }
}

#[test]
fn hand_built_archive_is_valid_so_the_hostile_cases_reach_their_field() {
    let records = one_file_records(b"hi");
    let digest = *blake3::hash(b"hi").as_bytes();
    let index = one_file_index(file_meta(b"f"), 2, digest, records.len());
    let (_d, path) = write("good.kry", &archive(&records, &index));
    let p = path.to_str().expect("utf-8");
    for cmd in ["t", "l"] {
        let run = krypta(&[cmd, p]);
        assert_eq!(run.code, Some(0), "{cmd}: {}", run.stderr);
    }
}

#[test]
fn index_entry_count_of_2_pow_63_is_corrupt_without_allocating() {
    let mut index = (1u64 << 63).to_le_bytes().to_vec();
    index.extend_from_slice(&0u64.to_le_bytes());
    let (_d, path) = write("count.kry", &archive(&[], &index));
    assert_test_and_list_refuse(
        &path,
        "index: entry count 9223372036854775808 exceeds what 16 bytes can hold",
    );
}

#[test]
fn frame_body_length_of_2_pow_32_minus_1_is_corrupt() {
    let mut b = header(vec![], &Protection::Plain);
    let at = b.len() as u64;
    let mut fh = FrameHeader {
        kind: FrameKind::Index,
        last: true,
        body_len: 16,
        seq: 0,
    }
    .to_bytes();
    fh[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    b.extend_from_slice(&fh);
    b.extend_from_slice(&[0u8; 40]);
    b.extend(footer(at, 0, &Protection::Plain));
    let (_d, path) = write("body.kry", &b);
    assert_test_and_list_refuse(
        &path,
        "frame header: body length 4294967295 outside 16..=268435472",
    );
}

#[test]
fn frame_body_length_at_the_maximum_in_a_short_file_is_truncation() {
    let mut b = header(vec![], &Protection::Plain);
    let at = b.len() as u64;
    let fh = FrameHeader {
        kind: FrameKind::Index,
        last: true,
        body_len: MAX_BODY_LEN as u32,
        seq: 0,
    };
    b.extend_from_slice(&fh.to_bytes());
    b.extend_from_slice(&[0u8; 40]);
    b.extend(footer(at, 0, &Protection::Plain));
    let (_d, path) = write("maxbody.kry", &b);
    assert_test_and_list_refuse(&path, "frame body is truncated");
}

#[test]
fn block_raw_length_beyond_max_block_size_is_corrupt() {
    let mut body = BlockHeader {
        codec: Codec::Zstd,
        filter: Filter::None,
        raw_len: 1,
        filter_start: 0,
    }
    .to_bytes()
    .to_vec();
    body[4..8].copy_from_slice(&(MAX_BLOCK_SIZE as u32 + 1).to_le_bytes());
    body.extend_from_slice(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0]);
    let (_d, path) = write("rawlen.kry", &archive_with_index_body(&[], body));
    assert_test_and_list_refuse(&path, "block header: raw length 268435457 outside");
}

#[test]
fn entry_path_length_beyond_the_archive_size_is_truncation() {
    // An ENTRY whose path claims the maximum 65,536 bytes in an archive of a few hundred.
    let mut records = Vec::new();
    write_entry(&mut records, &file_meta(b"f"), V);
    records[29..33].copy_from_slice(&65_536u32.to_le_bytes());
    let mut index = 1u64.to_le_bytes().to_vec();
    index.extend_from_slice(&records[1..]);
    index.extend_from_slice(&[0u8; 60]);
    index.extend_from_slice(&1u64.to_le_bytes());
    index.extend_from_slice(&((16 + records.len()) as u32).to_le_bytes());
    let (_d, path) = write("path.kry", &archive(&records, &index));
    let p = path.to_str().expect("utf-8");
    assert_refused(&krypta(&["t", p]), 3, &path, "truncated");
    assert_refused(&krypta(&["l", p]), 3, &path, "index is truncated");
}

#[test]
fn data_segment_of_2_pow_32_minus_1_bytes_is_corrupt() {
    let mut records = Vec::new();
    write_entry(&mut records, &file_meta(b"f"), V);
    write_data_head(&mut records, 0, u32::MAX);
    records.extend_from_slice(b"hi");
    let index = one_file_index(file_meta(b"f"), 2, [1; 32], records.len());
    let (_d, path) = write("segment.kry", &archive(&records, &index));
    let p = path.to_str().expect("utf-8");
    assert_refused(
        &krypta(&["t", p]),
        3,
        &path,
        "data record: segment length 4294967295 outside 1..=16777216",
    );
    // `list` reads only the index, which is well formed: it lists the entry.
    let run = krypta(&["l", p]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn end_size_of_2_pow_64_minus_1_is_corrupt() {
    let mut records = Vec::new();
    write_entry(&mut records, &file_meta(b"f"), V);
    write_end(&mut records, u64::MAX, Some(&[1; 32]), V);
    // In the stream only (the index says 0 bytes): `test` finds it in the END record.
    let index = one_file_index(file_meta(b"f"), 0, [1; 32], records.len());
    let (_d, path) = write("end.kry", &archive(&records, &index));
    let p = path.to_str().expect("utf-8");
    assert_refused(
        &krypta(&["t", p]),
        3,
        &path,
        "end record: size 18446744073709551615 exceeds the 17592186044416-byte limit",
    );
    // And in the index too: both commands refuse the index before any scan.
    let index = one_file_index(file_meta(b"f"), u64::MAX, [1; 32], records.len());
    let (_d, path) = write("end-index.kry", &archive(&records, &index));
    assert_test_and_list_refuse(
        &path,
        "index: entry 0 size 18446744073709551615 exceeds the 17592186044416-byte limit",
    );
}

#[test]
fn index_sizes_summing_past_2_pow_64_are_corrupt_not_a_panic() {
    // Two file entries of 2^63 bytes each: `test` sums the sizes for its progress total.
    let big = 1u64 << 63;
    let entry = |path: &[u8], off: u32| IndexEntry {
        meta: file_meta(path),
        size: big,
        digest: Some([1; 32]),
        first_seq: 0,
        first_offset: off,
        last_seq: 0,
    };
    let records = one_file_records(b"hi");
    let index = Index {
        entries: vec![entry(b"a", 0), entry(b"b", 1)],
        frame_body_lens: vec![(16 + records.len()) as u32],
        frame_ref_lens: vec![0],
    }
    .write(V);
    let (_d, path) = write("sum.kry", &archive(&records, &index));
    assert_test_and_list_refuse(&path, "exceeds the 17592186044416-byte limit");
}

#[test]
fn argon2id_memory_of_u32_max_kib_is_refused_before_the_kdf() {
    let file_key = FileKey::from_bytes([9; 32]);
    let cheap = Kdf::Argon2id {
        m_kib: 8,
        t: 1,
        p: 1,
    };
    let mut stanza =
        wrap_password_with_salt(b"pw", &cheap, [7; 16], &file_key, &ID).expect("cheap stanza");
    if let Stanza::Argon2id { m_kib, .. } = &mut stanza {
        *m_kib = u32::MAX;
    }
    let prot = Protection::Sealed(Box::new(Subkeys::derive(&file_key, &ID)));
    let mut b = header(vec![stanza], &prot);
    let at = b.len() as u64;
    b.extend(footer(at, 0, &prot));
    let (dir, path) = write("argon.kry", &b);
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "pw\n").expect("write password");
    let (p, pw) = (path.to_str().expect("utf-8"), pw.to_str().expect("utf-8"));
    for cmd in ["t", "l"] {
        let run = krypta(&[cmd, "--pass-file", pw, p]);
        assert_refused(
            &run,
            3,
            &path,
            "argon2id memory KiB = 4294967295 exceeds the limit 4194304 (refusing to run the KDF)",
        );
        assert!(run.elapsed < Duration::from_secs(2), "{:?}", run.elapsed);
    }
}

#[test]
fn header_length_of_1_mib_plus_1_is_corrupt() {
    let mut b = header(vec![], &Protection::Plain);
    b[12..16].copy_from_slice(&((1u32 << 20) + 1).to_le_bytes());
    b.extend_from_slice(&[0u8; FOOTER_LEN]);
    let (_d, path) = write("hlen.kry", &b);
    assert_test_and_list_refuse(&path, "header: header length 1048577 outside 84..=1048576");
}

/// END record of a file that is all hole: `size` bytes, no DATA, a wrong digest.
fn all_hole_archive(size: u64) -> Vec<u8> {
    let mut records = Vec::new();
    write_entry(&mut records, &file_meta(b"f"), V);
    write_end(&mut records, size, Some(&[1; 32]), V);
    let index = one_file_index(file_meta(b"f"), size, [1; 32], records.len());
    archive(&records, &index)
}

#[test]
fn a_claimed_huge_hole_costs_a_bounded_amount_of_hashing() {
    // Regression: a 100-byte archive whose END claims a 16 TiB hole made `test` hash 16 TiB of
    // zeros (hours), and with a 32 GiB budget a 2.7 KB archive still cost 10 s per scan. Holes
    // are hashed only within 1 GiB plus 1 KiB per byte of data frames read (cumulative per
    // scan); within it a wrong digest is caught, beyond it the digest is skipped with a
    // warning naming the file.
    let (_d, path) = write("hole.kry", &all_hole_archive(1 << 30));
    let run = krypta(&["t", path.to_str().expect("utf-8")]);
    assert_refused(&run, 5, &path, "content digest of f does not match");
    for size in [1 << 44, 32 << 30, (1 << 30) + (1 << 20)] {
        let (_d, path) = write("hole.kry", &all_hole_archive(size));
        let run = krypta(&["t", path.to_str().expect("utf-8")]);
        assert!(
            run.elapsed < Duration::from_secs(5),
            "took {:?}",
            run.elapsed
        );
        assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
        assert_eq!(
            run.stderr.lines().next().expect("a warning"),
            "krypta: warning: f: content digest not checked: its holes exceed what this scan may hash (1 GiB plus 1024 bytes per archive byte read; every stored byte was verified)",
        );
    }
}

/// The bytes of the one data frame of an `all_hole_archive`: what its hole allowance counts.
fn all_hole_frame_bytes() -> u64 {
    let mut records = Vec::new();
    write_entry(&mut records, &file_meta(b"f"), V);
    write_end(&mut records, 0, Some(&[1; 32]), V);
    (16 + 16 + records.len() + 32) as u64
}

#[test]
fn the_hole_allowance_is_checked_before_hashing_and_is_exactly_1_gib_plus_1024_per_frame_byte() {
    // The rule of format::limits::hole_hash_allowance, at its edge: a hole of exactly the
    // allowance is hashed (and its wrong digest caught, exit 5); one byte more is not hashed
    // at all (exit 0, the file named). Whatever the number of workers.
    let frame = all_hole_frame_bytes();
    let allowance = (1u64 << 30) + 1024 * frame;
    assert_eq!(
        krypta::format::limits::hole_hash_allowance(frame),
        allowance
    );
    for jobs in ["1", "2"] {
        let (_d, path) = write("edge.kry", &all_hole_archive(allowance));
        let run = krypta(&["t", "-j", jobs, path.to_str().expect("utf-8")]);
        assert_refused(&run, 5, &path, "content digest of f does not match");
        let (_d, path) = write("edge.kry", &all_hole_archive(allowance + 1));
        let run = krypta(&["t", "-j", jobs, path.to_str().expect("utf-8")]);
        assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
        assert!(
            run.stderr
                .starts_with("krypta: warning: f: content digest not checked")
        );
    }
}

#[test]
fn the_hole_allowance_is_cumulative_over_a_scan() {
    // Two files of 600 MiB of hole with correct digests: the first is hashed and verified,
    // the second would take the scan past 1 GiB + 1 KiB per frame byte and is named instead.
    let size: u64 = 600 << 20;
    let mut h = blake3::Hasher::new();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..600 {
        h.update(&zeros);
    }
    let digest = *h.finalize().as_bytes();
    let mut records = Vec::new();
    let mut entries = Vec::new();
    for name in [&b"a"[..], b"b"] {
        let first_offset = records.len() as u32;
        write_entry(&mut records, &file_meta(name), V);
        write_end(&mut records, size, Some(&digest), V);
        entries.push(IndexEntry {
            meta: file_meta(name),
            size,
            digest: Some(digest),
            first_seq: 0,
            first_offset,
            last_seq: 0,
        });
    }
    let index = Index {
        entries,
        frame_body_lens: vec![(16 + records.len()) as u32],
        frame_ref_lens: vec![0],
    }
    .write(V);
    let (_d, path) = write("two.kry", &archive(&records, &index));
    let mut rep = krypta::Collect::default();
    let s = krypta::test(
        &path,
        krypta::archive::reader::OpenOptions::default(),
        &mut rep,
    )
    .expect("test");
    assert_eq!(s.files, 2);
    assert_eq!(s.unverified, ["b"]);
    assert_eq!(s.holes_hashed, size);
    assert_eq!(s.frame_bytes, (16 + 16 + records.len() + 32) as u64);
    assert_eq!(rep.warnings.len(), 1, "{:?}", rep.warnings);
    assert!(rep.warnings[0].starts_with("b: content digest not checked"));
}

#[test]
#[ignore = "measurement: peak memory of `t`/`l` on a tiny archive of 256 MiB zero blocks"]
fn tiny_archive_of_max_size_zero_blocks_peak_memory() {
    use krypta::codec::{BlockEncoder, Level};
    let zeros = vec![0u8; MAX_BLOCK_SIZE];
    let mut z = Vec::new();
    let mut enc = BlockEncoder::new(Some(Level::MIN)).expect("encoder");
    let (codec, filter) = enc.encode(&zeros, Filter::None, 0, &mut z).expect("encode");
    let block = |start: u64| {
        let mut b = BlockHeader {
            codec,
            filter,
            raw_len: MAX_BLOCK_SIZE as u32,
            filter_start: start,
        }
        .to_bytes()
        .to_vec();
        b.extend_from_slice(&z);
        b
    };
    // Eight data frames of zeros (the record stream is invalid from its first byte) and an
    // index frame of zeros: the reader decodes ahead before it looks at the records.
    let mut b = header(vec![], &Protection::Plain);
    for seq in 0..8u64 {
        b.extend(frame(FrameKind::Data, false, seq, block(seq << 28)));
    }
    let at = b.len() as u64;
    b.extend(frame(FrameKind::Index, true, 8, block(0)));
    b.extend(footer(at, 8, &Protection::Plain));
    let (_d, path) = write("zeros.kry", &b);
    eprintln!("archive of {} bytes", b.len());
    for cmd in ["t", "l"] {
        let out = Command::new("/usr/bin/time")
            .args(["-f", "%M KiB peak RSS, %e s"])
            .arg(env!("CARGO_BIN_EXE_krypta"))
            .args([cmd, "-j", "2", path.to_str().expect("utf-8")])
            .output()
            .expect("run /usr/bin/time");
        eprintln!(
            "{cmd}: exit {:?}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        let run = krypta(&[cmd, "-j", "2", path.to_str().expect("utf-8")]);
        eprintln!("{cmd} under 512 MiB: exit {:?}: {}", run.code, run.stderr);
    }
}

#[test]
fn a_data_frame_with_the_last_flag_is_named_as_such() {
    // Regression: the message was "expected data frame seq 4, found seq 4".
    let records = one_file_records(b"hello");
    let index = one_file_index(
        file_meta(b"f"),
        5,
        *blake3::hash(b"hello").as_bytes(),
        records.len(),
    );
    let mut b = header(vec![], &Protection::Plain);
    b.extend(frame(FrameKind::Data, true, 0, stored(&records, 0)));
    let at = b.len() as u64;
    b.extend(frame(FrameKind::Index, true, 1, stored(&index, 0)));
    b.extend(footer(at, 1, &Protection::Plain));
    let (_d, path) = write("last.kry", &b);
    let needle = "frame sequence: data frame seq 0 has the LAST flag, which only the final index frame carries";
    let run = krypta(&["t", path.to_str().expect("utf-8")]);
    assert_refused(&run, 3, &path, needle);
    // Listing a stream reads past the data frames: the same message.
    let o = Command::new(env!("CARGO_BIN_EXE_krypta"))
        .args(["l", "-"])
        .stdin(std::fs::File::open(&path).expect("open"))
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("krypta: -: corrupt archive at byte 84: {needle}\n")
    );
}
