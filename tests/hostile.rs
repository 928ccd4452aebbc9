//! Hostile archives through the `krypta` binary under a 512 MiB address-space limit: crafted
//! with the library's own writers (valid checksums, so the reader reaches the hostile field),
//! each must end quickly with exit 3 (corrupt structure / KDF limit) and one stderr line
//! naming the file, never a panic, a hang or an allocation taken from the hostile value.

mod hostile_common;

use std::time::Duration;

use krypta::codec::{Codec, Filter, MAX_BLOCK_SIZE};
use krypta::crypto::frame::Protection;
use krypta::crypto::keys::{FileKey, Subkeys};
use krypta::crypto::stanza::{Kdf, wrap_password_with_salt};
use krypta::format::Stanza;
use krypta::format::footer::FOOTER_LEN;
use krypta::format::frame::{BlockHeader, FrameHeader, FrameKind, MAX_BODY_LEN};
use krypta::format::index::{Index, IndexEntry};
use krypta::format::record::{write_data_head, write_end, write_entry};

use hostile_common::*;

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
