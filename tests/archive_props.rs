//! Property tests: random small trees (names, kinds, sizes, contents, block sizes, levels,
//! filters, jobs) through the whole archive writer and reader round-trip exactly.

use std::collections::BTreeMap;

use krypta::archive::reader::{Archive, OpenOptions, Visitor};
use krypta::archive::writer::{ArchiveWriter, BcjMode, ReaderSource, WriteOptions};
use krypta::codec::{Filter, Level};
use krypta::format::{EntryKind, EntryMeta, Timestamp};
use proptest::prelude::*;

/// Collects what a scan yields: per path, its kind and content (holes as zeros).
#[derive(Default)]
struct Collect {
    got: BTreeMap<Vec<u8>, (EntryKind, Vec<u8>)>,
    cur: Option<Vec<u8>>,
}

impl Visitor for Collect {
    fn entry(&mut self, meta: &EntryMeta) -> krypta::Result<()> {
        self.got.insert(meta.path.clone(), (meta.kind, Vec::new()));
        self.cur = Some(meta.path.clone());
        Ok(())
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> krypta::Result<()> {
        let p = self.cur.clone().expect("data inside a file");
        let buf = &mut self.got.get_mut(&p).expect("entry first").1;
        buf.resize(offset as usize, 0);
        buf.extend_from_slice(bytes);
        Ok(())
    }
    fn end(&mut self, meta: &EntryMeta, size: u64) -> krypta::Result<()> {
        self.got
            .get_mut(&meta.path)
            .expect("entry first")
            .1
            .resize(size as usize, 0);
        Ok(())
    }
    fn abort(&mut self) {}
}

fn meta(path: Vec<u8>, kind: EntryKind) -> EntryMeta {
    EntryMeta {
        path,
        kind,
        mode: 0o640,
        mtime: Timestamp { secs: -7, nanos: 3 },
        uid: 1,
        gid: 2,
        link: if kind == EntryKind::Symlink {
            b"../t".to_vec()
        } else {
            vec![]
        },
        ..Default::default()
    }
}

fn content() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..3000),
        // Compressible, and dense with x86 call opcodes.
        (0usize..200_000, any::<u8>())
            .prop_map(|(n, b)| (0..n).map(|i| [0xE8, b, 0, 0, 0][i % 5]).collect()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_trees_round_trip_through_the_whole_archive(
        files in proptest::collection::vec((proptest::collection::vec(1u8..=255, 1..12), content(), 0u8..4), 0..12),
        level in prop_oneof![Just(None), (1u8..=3).prop_map(Some)],
        block in prop_oneof![Just(64 * 1024usize), Just(100_000usize)],
        bcj in prop_oneof![Just(BcjMode::Auto), Just(BcjMode::Off), Just(BcjMode::Force(Filter::X86))],
        jobs in 1usize..=3,
        skip in 0usize..2,
    ) {
        let opts = WriteOptions {
            level: level.map(|l| Level::new(l).unwrap()),
            block_size: block,
            jobs,
            bcj,
            created: 0,
            comment: String::new(),
            recipients: vec![],
            archive_id: Some([1; 16]),
            file_key: None,
            ..WriteOptions::new()
        };
        let mut w = ArchiveWriter::new(Vec::new(), "mem", opts).unwrap();
        let mut want = BTreeMap::new();
        for (i, (name, data, kind)) in files.iter().enumerate() {
            // Unique, valid names: an index prefix, '/' replaced.
            let mut path = format!("{i}-").into_bytes();
            path.extend(name.iter().map(|&b| if b == b'/' { b'_' } else { b }));
            match kind {
                0 => {
                    w.add_entry(&meta(path.clone(), EntryKind::Dir)).unwrap();
                    want.insert(path, (EntryKind::Dir, vec![]));
                }
                1 => {
                    w.add_entry(&meta(path.clone(), EntryKind::Symlink)).unwrap();
                    want.insert(path, (EntryKind::Symlink, vec![]));
                }
                _ => {
                    w.add_file(&meta(path.clone(), EntryKind::File), &mut ReaderSource::new(&data[..], "mem")).unwrap();
                    want.insert(path, (EntryKind::File, data.clone()));
                }
            }
        }
        let (_, bytes) = w.finish().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.kry");
        std::fs::write(&p, &bytes).unwrap();
        let mut ar = Archive::open(&p, OpenOptions { jobs, ..OpenOptions::default() }).unwrap();
        let mut c = Collect::default();
        ar.scan(&mut c).unwrap();
        prop_assert_eq!(&c.got, &want);
        // Selective reads (`x PATH`): every other entry, from the index; each run starts
        // part-way into a block, stored or compressed, and must yield exactly those entries.
        let (_, index) = ar.read_index().unwrap();
        let picked: Vec<usize> = (skip..index.entries.len()).step_by(2).collect();
        let mut sel = Collect::default();
        ar.scan_selected(&index, &picked, &mut sel).unwrap();
        let want_sel: BTreeMap<_, _> = picked
            .iter()
            .map(|&i| {
                let p = index.entries[i].meta.path.clone();
                let v = want[&p].clone();
                (p, v)
            })
            .collect();
        prop_assert_eq!(sel.got, want_sel);
    }
}
