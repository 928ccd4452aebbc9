//! The writer never writes what its reader refuses (issue 12 #15): `c --comment` of 4097
//! bytes wrote an archive every read then refused with exit 3. Every limit of the one table
//! (`format::limits`, FORMAT.md §10) is now checked by the writer before anything is written,
//! and a property test checks that whatever the writer accepts — comments, non-UTF-8 and long
//! paths, link targets, modes, times, sizes — reads back exactly, and that it refuses exactly
//! what breaks a limit.

mod common;

use std::time::{Duration, Instant};

use krypta::Error;
use krypta::archive::reader::OpenOptions;
use krypta::archive::writer::{ArchiveWriter, BcjMode, ContentSource, ReaderSource, WriteOptions};
use krypta::codec::Level;
use krypta::crypto::Recipient;
use krypta::crypto::keyfile::SymmetricKey;
use krypta::format::index::{Index, IndexEntry};
use krypta::format::index_v2::{entry_len, index_len};
use krypta::format::limits::{
    MAX_COMMENT_LEN, MAX_FILE_SIZE, MAX_LINK_LEN, MAX_PATH_LEN, MAX_STANZAS,
};
use krypta::format::{EntryKind, EntryMeta, Timestamp};
use proptest::prelude::*;

fn meta(path: &[u8], kind: EntryKind, link: &[u8]) -> EntryMeta {
    EntryMeta {
        path: path.to_vec(),
        kind,
        mode: 0o644,
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 7,
        },
        uid: 1,
        gid: 2,
        link: link.to_vec(),
        ..Default::default()
    }
}

fn options() -> WriteOptions {
    WriteOptions {
        level: Some(Level::new(1).expect("level")),
        block_size: 64 << 10,
        jobs: 1,
        bcj: BcjMode::Off,
        created: 1_700_000_000,
        archive_id: Some([0x15; 16]),
        ..WriteOptions::new()
    }
}

fn writer(opts: WriteOptions) -> krypta::Result<ArchiveWriter<Vec<u8>>> {
    ArchiveWriter::new(Vec::new(), "mem.kry", opts)
}

/// The `Unwritable` error's (what, message), or a panic naming what came instead.
fn unwritable<T>(r: krypta::Result<T>) -> (String, String) {
    match r {
        Err(e @ Error::Unwritable { .. }) => {
            assert_eq!(e.exit_code(), 1);
            let Error::Unwritable { what, .. } = &e else {
                unreachable!()
            };
            (what.clone(), e.to_string())
        }
        Err(e) => panic!("expected Unwritable, got {e:?}"),
        Ok(_) => panic!("expected Unwritable, got success"),
    }
}

#[test]
fn a_comment_over_4096_bytes_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    common::write(&dir.path().join("in/f"), b"data");
    let long = "x".repeat(MAX_COMMENT_LEN + 1);
    let o = common::krypta()
        .current_dir(dir.path())
        .args(["c", "--comment", &long, "a.kry", "in"])
        .output()
        .unwrap();
    assert_eq!(common::code(&o), 1);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "krypta: --comment is 4097 bytes; an archive's header holds at most 4096\n"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["in"], "nothing written, no temporary file left");
    // Also to stdout: not one byte.
    let o = common::krypta()
        .current_dir(dir.path())
        .args(["c", "--comment", &long, "-", "in"])
        .output()
        .unwrap();
    assert_eq!(common::code(&o), 1);
    assert!(o.stdout.is_empty());
    // The library refuses it too, before writing the header.
    let (what, msg) = unwritable(writer(WriteOptions {
        comment: long,
        ..options()
    }));
    assert_eq!(what, "mem.kry");
    assert_eq!(
        msg,
        "mem.kry: cannot be archived: header: comment of 4097 bytes (at most 4096)"
    );
}

#[test]
fn a_comment_of_exactly_4096_bytes_is_written_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    common::write(&dir.path().join("in/f"), b"data");
    // 2048 two-byte characters: 4096 bytes of UTF-8.
    let comment = "é".repeat(MAX_COMMENT_LEN / 2);
    let run = |args: &[&str]| {
        common::krypta()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    assert_eq!(
        common::code(&run(&["c", "--comment", &comment, "a.kry", "in"])),
        0
    );
    assert_eq!(common::code(&run(&["t", "a.kry"])), 0);
    let info = run(&["info", "a.kry"]);
    assert_eq!(common::code(&info), 0);
    assert!(String::from_utf8_lossy(&info.stdout).contains(&comment));
}

#[test]
fn sixty_five_recipients_are_refused_before_any_stanza_is_sealed() {
    let recipients = (0..=MAX_STANZAS as u8)
        .map(|i| Recipient::KeyFile(SymmetricKey::from_bytes([i; 32])))
        .collect();
    match writer(WriteOptions {
        recipients,
        ..options()
    }) {
        Err(e @ Error::Usage(_)) => assert_eq!(
            e.to_string(),
            "65 recipients given: an archive holds at most 64 stanzas"
        ),
        other => panic!("expected a usage error, got {:?}", other.err()),
    }
    let recipients = (0..MAX_STANZAS as u8)
        .map(|i| Recipient::KeyFile(SymmetricKey::from_bytes([i; 32])))
        .collect();
    writer(WriteOptions {
        recipients,
        ..options()
    })
    .unwrap()
    .finish()
    .unwrap();
}

#[test]
fn block_sizes_outside_the_limits_are_refused() {
    for bad in [(64 << 10) - 1, (256 << 20) + 1] {
        match writer(WriteOptions {
            block_size: bad,
            ..options()
        }) {
            Err(e @ Error::Usage(_)) => assert_eq!(
                e.to_string(),
                format!("block size {bad} bytes is outside 64K..=256M")
            ),
            other => panic!("expected a usage error, got {:?}", other.err()),
        }
    }
}

#[test]
fn entries_a_reader_refuses_are_refused_and_leave_the_archive_writable() {
    let long_path = vec![b'p'; MAX_PATH_LEN + 1];
    let long_link = vec![b't'; MAX_LINK_LEN + 1];
    let cases: Vec<(EntryMeta, &str)> = vec![
        (
            meta(&long_path, EntryKind::Dir, b""),
            "entry path: length 65537 is outside 1..=65536",
        ),
        (
            meta(b"l", EntryKind::Symlink, &long_link),
            "entry: symlink target of 65537 bytes is empty, longer than 65536 or has a NUL",
        ),
        (
            meta(b"l", EntryKind::Symlink, b"a\0b"),
            "entry: symlink target of 3 bytes is empty, longer than 65536 or has a NUL",
        ),
        (
            meta(b"h", EntryKind::Hardlink, b"../x"),
            "hard link target: ../x has a '..' component",
        ),
        (
            meta(b"a/../b", EntryKind::Dir, b""),
            "entry path: a/../b has a '..' component",
        ),
        (
            EntryMeta {
                mode: 0o10644,
                ..meta(b"m", EntryKind::Dir, b"")
            },
            "entry: mode 0o10644 has bits beyond 0o7777",
        ),
        (
            EntryMeta {
                mtime: Timestamp {
                    secs: 0,
                    nanos: 1_000_000_000,
                },
                ..meta(b"t", EntryKind::Dir, b"")
            },
            "entry: mtime nanoseconds 1000000000 >= 10^9",
        ),
    ];
    let mut w = writer(options()).unwrap();
    for (m, problem) in &cases {
        let (what, msg) = unwritable(w.add_entry(m));
        assert_eq!(msg, format!("{what}: cannot be archived: {problem}"));
    }
    // A long path is named shortened in the message.
    let (what, _) = unwritable(w.add_entry(&cases[0].0));
    assert_eq!(what, format!("{}… (65537 bytes)", "p".repeat(200)));
    // The refused entries left nothing behind: the archive holds exactly what was accepted.
    w.add_entry(&meta(b"ok", EntryKind::Dir, b"")).unwrap();
    let (_, bytes) = w.finish().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.kry");
    std::fs::write(&p, bytes).unwrap();
    let (entries, _) = krypta::list(&p, OpenOptions::default()).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].meta.path, b"ok");
    krypta::test(&p, OpenOptions::default(), &mut krypta::Collect::default()).unwrap();
}

/// Content that is one data extent at `offset` (one byte) and then a size of `size`.
struct Sparse {
    offset: Option<u64>,
    size: u64,
}

impl ContentSource for Sparse {
    fn read_extent(&mut self, buf: &mut [u8]) -> krypta::Result<Option<(u64, usize)>> {
        Ok(self.offset.take().map(|o| {
            buf[0] = 1;
            (o, 1)
        }))
    }
    fn final_size(&self) -> u64 {
        self.size
    }
}

#[test]
fn files_past_16_tib_are_refused_before_their_holes_are_hashed() {
    let mut w = writer(options()).unwrap();
    let f = meta(b"big.img", EntryKind::File, b"");
    let start = Instant::now();
    let (_, msg) = unwritable(w.add_file(
        &f,
        &mut Sparse {
            offset: None,
            size: MAX_FILE_SIZE + 1,
        },
    ));
    assert_eq!(
        msg,
        "big.img: cannot be archived: file: 17592186044417 bytes exceeds the 17592186044416-byte file size limit"
    );
    let mut w = writer(options()).unwrap();
    let (_, msg) = unwritable(w.add_file(
        &f,
        &mut Sparse {
            offset: Some(MAX_FILE_SIZE),
            size: 0,
        },
    ));
    assert_eq!(
        msg,
        "big.img: cannot be archived: file: 17592186044417 bytes exceeds the 17592186044416-byte file size limit"
    );
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn the_writers_index_size_arithmetic_is_the_encoded_size() {
    // Format 2 (what the writer writes): front-coded paths, a digest only where stored.
    let entries: Vec<IndexEntry> = [
        meta(b"f", EntryKind::File, b""),
        meta(b"\xff/deep/name", EntryKind::Symlink, b"../../target"),
        meta(b"\xff/deep/nb", EntryKind::Symlink, b"t"),
        meta(b"h", EntryKind::Hardlink, b"f"),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, m)| IndexEntry {
        digest: (m.kind == EntryKind::File).then_some([0; 32]),
        meta: m,
        size: 0,
        first_seq: 0,
        first_offset: i as u32,
        last_seq: 0,
    })
    .collect();
    let mut prev: &[u8] = &[];
    let mut sum = 0;
    for e in &entries {
        sum += entry_len(prev, &e.meta, e.digest.is_some());
        prev = &e.meta.path;
    }
    let index = Index {
        entries,
        frame_body_lens: vec![100, 200, 300],
        frame_ref_lens: vec![0; 3],
    };
    assert_eq!(
        index.write(krypta::format::Version::V2).len() as u64,
        index_len(sum, 3)
    );
}

/// One entry the property test writes.
#[derive(Debug, Clone)]
enum Item {
    Dir(Vec<u8>),
    File(Vec<u8>, Vec<u8>),
    Symlink(Vec<u8>, Vec<u8>),
    /// A hard link to the `usize`-th file written so far (if any).
    Hardlink(Vec<u8>, usize),
    Meta(EntryMeta),
}

/// A path: components of 1..=300 arbitrary non-'/' non-NUL bytes (non-UTF-8 included), up to
/// about 70,000 bytes in all, so some are over the 65,536-byte limit; now and then a bad one.
fn path() -> impl Strategy<Value = Vec<u8>> {
    let comp = prop::collection::vec(1u8..=255, 1..=300).prop_map(|mut c| {
        for b in &mut c {
            if *b == b'/' {
                *b = b'_';
            }
        }
        c
    });
    let many = prop::collection::vec(comp, 1..=8);
    prop_oneof![
        8 => many.clone().prop_map(|cs| cs.join(&b'/')),
        2 => (many, 1usize..=240).prop_map(|(cs, times)| {
            // Deep and long: the same components repeated, around the 64 KiB limit.
            let one = cs.join(&b'/');
            let mut p = one.clone();
            while p.len() < 300 * times {
                p.push(b'/');
                p.extend_from_slice(&one);
            }
            p
        }),
        1 => Just(b"a/../b".to_vec()),
        1 => Just(Vec::new()),
        1 => Just(vec![b'a'; MAX_PATH_LEN]),
        1 => Just(vec![b'a'; MAX_PATH_LEN + 1]),
    ]
}

fn link_target() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => prop::collection::vec(any::<u8>(), 0..=300),
        1 => Just(vec![b'l'; MAX_LINK_LEN]),
        1 => Just(vec![b'l'; MAX_LINK_LEN + 1]),
    ]
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        3 => path().prop_map(Item::Dir),
        3 => (path(), prop::collection::vec(any::<u8>(), 0..=70_000))
            .prop_map(|(p, c)| Item::File(p, c)),
        2 => (path(), link_target()).prop_map(|(p, t)| Item::Symlink(p, t)),
        1 => (path(), 0usize..4).prop_map(|(p, i)| Item::Hardlink(p, i)),
        1 => (path(), any::<u32>(), any::<u32>(), any::<i64>()).prop_map(|(p, mode, nanos, secs)| {
            Item::Meta(EntryMeta {
                mode: mode & 0o17777,
                mtime: Timestamp { secs, nanos: nanos % 1_100_000_000 },
                ..meta(&p, EntryKind::Dir, b"")
            })
        }),
    ]
}

/// A comment of 0..=~4200 bytes of arbitrary Unicode (1 to 4 bytes a character).
fn comment() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(any::<char>(), 0..=1100).prop_map(|c| c.into_iter().collect()),
        1 => (0usize..=8).prop_map(|extra| "é".repeat(2046) + &"x".repeat(extra)),
    ]
}

/// The limits, restated independently of the code under test (FORMAT.md §3.1, §10).
fn path_ok(p: &[u8]) -> bool {
    !p.is_empty()
        && p.len() <= MAX_PATH_LEN
        && !p.contains(&0)
        && p.split(|&b| b == b'/')
            .all(|c| !c.is_empty() && c != b"." && c != b"..")
}

fn meta_ok(m: &EntryMeta) -> bool {
    path_ok(&m.path)
        && m.mode <= 0o7777
        && m.mtime.nanos < 1_000_000_000
        && match m.kind {
            EntryKind::File | EntryKind::Dir => m.link.is_empty(),
            EntryKind::Symlink => {
                !m.link.is_empty() && m.link.len() <= MAX_LINK_LEN && !m.link.contains(&0)
            }
            EntryKind::Hardlink => path_ok(&m.link),
        }
}

/// The entry-set rules (FORMAT.md §3.3), restated independently: `m` may follow `written`
/// (format 2: no path twice, nothing below a non-directory, a hard link to an earlier file).
fn set_ok(written: &[EntryMeta], m: &EntryMeta) -> bool {
    let below =
        |p: &[u8], dir: &[u8]| p.len() > dir.len() && p.starts_with(dir) && p[dir.len()] == b'/';
    written.iter().all(|w| {
        w.path != m.path
            && !(w.kind != EntryKind::Dir && below(&m.path, &w.path))
            && !(m.kind != EntryKind::Dir && below(&w.path, &m.path))
    }) && (m.kind != EntryKind::Hardlink
        || written
            .iter()
            .any(|w| w.kind == EntryKind::File && w.path == m.link))
}

/// What the writer stores for an entry it accepts: a symlink with mode 0o777, a hard link
/// with its target's attributes (FORMAT.md, how krypta writes).
fn stored_as(written: &[EntryMeta], m: &EntryMeta) -> EntryMeta {
    match m.kind {
        EntryKind::Symlink => EntryMeta {
            mode: 0o777,
            ..m.clone()
        },
        EntryKind::Hardlink => {
            let t = written.iter().find(|w| w.path == m.link).expect("target");
            EntryMeta {
                mode: t.mode,
                mtime: t.mtime,
                uid: t.uid,
                gid: t.gid,
                ..m.clone()
            }
        }
        _ => m.clone(),
    }
}

/// An entry in a line (paths may be 64 KiB long).
fn brief(m: &EntryMeta) -> String {
    format!(
        "{:?} mode {:#o} nanos {} path of {} bytes {:?}… link of {} bytes",
        m.kind,
        m.mode,
        m.mtime.nanos,
        m.path.len(),
        String::from_utf8_lossy(&m.path[..m.path.len().min(40)]),
        m.link.len()
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn whatever_the_writer_accepts_reads_back_and_it_refuses_only_what_breaks_a_limit(
        comment in comment(),
        items in prop::collection::vec(item(), 0..12),
    ) {
        let opts = WriteOptions { comment: comment.clone(), ..options() };
        let w = writer(opts);
        if comment.len() > MAX_COMMENT_LEN {
            let refused = matches!(w, Err(Error::Unwritable { .. }));
            prop_assert!(refused);
            return Ok(());
        }
        let mut w = w.unwrap();
        let mut written: Vec<EntryMeta> = Vec::new();
        let mut files: Vec<Vec<u8>> = Vec::new();
        for it in items {
            let (m, content) = match it {
                Item::Dir(p) => (meta(&p, EntryKind::Dir, b""), None),
                Item::File(p, c) => (meta(&p, EntryKind::File, b""), Some(c)),
                Item::Symlink(p, t) => (meta(&p, EntryKind::Symlink, &t), None),
                Item::Hardlink(p, i) => {
                    let target = files.get(i).cloned().unwrap_or_default();
                    (meta(&p, EntryKind::Hardlink, &target), None)
                }
                Item::Meta(m) => (m, None),
            };
            let r = match &content {
                Some(c) => w
                    .add_file(&m, &mut ReaderSource::new(&c[..], "mem"))
                    .map(|_| ()),
                None => w.add_entry(&m),
            };
            match r {
                Ok(()) => {
                    prop_assert!(meta_ok(&m), "accepted an entry a reader refuses: {}", brief(&m));
                    prop_assert!(set_ok(&written, &m), "accepted an entry the set rules refuse: {}", brief(&m));
                    if m.kind == EntryKind::File {
                        files.push(m.path.clone());
                    }
                    let stored = stored_as(&written, &m);
                    written.push(stored);
                }
                Err(Error::Unwritable { .. }) => {
                    prop_assert!(
                        !meta_ok(&m) || !set_ok(&written, &m),
                        "refused an entry within the limits and the set rules: {}",
                        brief(&m)
                    );
                }
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
        let (_, bytes) = w.finish().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.kry");
        std::fs::write(&p, bytes).unwrap();
        let header = krypta::archive::reader::read_header_only(&p).unwrap();
        prop_assert_eq!(&header.comment, &comment);
        let (entries, _) = krypta::list(&p, OpenOptions::default()).unwrap();
        let listed: Vec<EntryMeta> = entries.into_iter().map(|e| e.meta).collect();
        prop_assert!(listed == written, "list differs from what was written");
        let s = krypta::test(&p, OpenOptions::default(), &mut krypta::Collect::default());
        prop_assert!(s.is_ok(), "{:?}", s.err());
    }
}
