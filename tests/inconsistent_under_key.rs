//! Structures inside frames whose tags verified, of an encrypted archive, that break a rule
//! of the format (docs/FORMAT.md §11 step 6: "inconsistent authenticated structure"): the key
//! is right, since the tags verified with it. Regression (h67): each said "authentication
//! failed: wrong key or password, or the archive was modified" (exit 2), sending the user
//! looking for another key. They now name the structure and its offset and say that the key
//! is right and the archive was written so (exit 2, as FORMAT.md §11 gives). The archives are
//! written by a hostile writer holding the key: `common::craft2`, sealing with the library's
//! own frame and header functions.

mod common;

use common::craft2::{Archive, Block, KEY, file};
use common::{code_and_stderr_on as run, s};
use krypta::format::index::IndexEntry;
use krypta::format::record::{write_data_head, write_end, write_entry};
use krypta::format::{EntryMeta, Version};

const KEY_RIGHT: &str = "; its frames verified with the key given, so the key is right: the \
                         archive was written so by a faulty or hostile writer holding the key";

/// A file's records: ENTRY, DATA of `content`, END of `size` with `digest`.
fn records(meta: &EntryMeta, content: &[u8], size: u64, digest: Option<&[u8; 32]>) -> Vec<u8> {
    let mut r = Vec::new();
    write_entry(&mut r, meta, Version::V2);
    write_data_head(&mut r, 0, content.len() as u32);
    r.extend_from_slice(content);
    write_end(&mut r, size, digest, Version::V2);
    r
}

fn entry(meta: EntryMeta, size: u64, seq: u64, last: u64) -> IndexEntry {
    IndexEntry {
        meta,
        size,
        digest: None,
        first_seq: seq,
        first_offset: 0,
        last_seq: last,
    }
}

/// `t`, `l` and `x` of the sealed `a` with the key its stanza opens with: exit 2, the new
/// message with `structure` (and no "wrong key"); each command that reads the data only when
/// `data` (`l` reads the index alone).
fn refused_as_inconsistent(a: &mut Archive, structure: &str, data: bool) {
    a.sealed = true;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("a.kry");
    std::fs::write(&path, a.bytes()).unwrap();
    let key = tmp.path().join("k.key");
    std::fs::write(
        &key,
        krypta::crypto::keytext::encode(krypta::crypto::KeyKind::Symmetric, &KEY) + "\n",
    )
    .unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let out = tmp.path().join("out");
    let mut runs = vec![vec!["t", "--keyfile", s(&key)]];
    if data {
        runs.push(vec!["x", "--keyfile", s(&key), "-o", s(&out)]);
    } else {
        runs.push(vec!["l", "--keyfile", s(&key)]);
    }
    for args in runs {
        let (c, e) = run(&args, &path);
        assert_eq!(c, 2, "{args:?}: {e}");
        let line = e.lines().last().unwrap_or_default();
        assert!(
            line.starts_with(&format!("krypta: {}: inconsistent archive", path.display())),
            "{args:?}: {e}"
        );
        assert!(
            line.contains(structure),
            "{args:?}: {e} (wanted {structure:?})"
        );
        assert!(line.ends_with(KEY_RIGHT), "{args:?}: {e}");
        assert!(!e.contains("wrong key"), "{args:?}: {e}");
    }
}

#[test]
fn a_file_whose_end_record_disagrees_with_its_data_names_the_record() {
    let m = file("f");
    let r = records(&m, b"hello", 6, None);
    let mut a = Archive::new(vec![Block::stored(&r, 0, Some(0))], vec![entry(m, 5, 0, 0)]);
    refused_as_inconsistent(&mut a, " at byte ", true);
}

#[test]
fn a_file_whose_digest_does_not_match_says_the_key_is_right() {
    let m = file("f");
    let r = records(&m, b"hello", 5, Some(&[7; 32]));
    let mut a = Archive::new(vec![Block::stored(&r, 0, Some(0))], vec![entry(m, 5, 0, 0)]);
    refused_as_inconsistent(
        &mut a,
        ": the content of f does not match its digest (END_DIGEST)",
        true,
    );
}

#[test]
fn a_data_block_at_the_wrong_stream_offset_names_the_block_header() {
    let (fa, fb) = (file("a"), file("b"));
    let ra = records(&fa, b"first", 5, None);
    let rb = records(&fb, b"second", 6, None);
    let mut a = Archive::new(
        vec![
            Block::stored(&ra, 0, Some(0)),
            Block::stored(&rb, 3, Some(0)),
        ],
        vec![entry(fa, 5, 0, 0), entry(fb, 6, 1, 1)],
    );
    refused_as_inconsistent(&mut a, "stream offset", true);
}

#[test]
fn an_index_block_at_the_wrong_stream_offset_names_it_for_list_too() {
    let m = file("f");
    let r = records(&m, b"hello", 5, None);
    let mut a = Archive::new(vec![Block::stored(&r, 0, Some(0))], vec![entry(m, 5, 0, 0)]);
    a.index_block.stream_offset = 8;
    refused_as_inconsistent(
        &mut a,
        ": index block header: stream offset 8 where the index blocks before it end at 0",
        false,
    );
}
