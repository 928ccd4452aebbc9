//! Property test: random extent patterns (holes, extents cut short by the source, sizes
//! around block ends) through the archive writer and reader, with every filter grid. The
//! source scribbles 0xA5 after what it returns, so a writer that used bytes past an extent
//! (stale block contents) fails. Written for the review of the zero-copy writer.
use krypta::archive::reader::{Archive, OpenOptions, Visitor};
use krypta::archive::writer::{ArchiveWriter, BcjMode, ContentSource, WriteOptions};
use krypta::codec::{Filter, Level};
use krypta::format::{EntryKind, EntryMeta, Timestamp};
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Default)]
struct Collect {
    got: BTreeMap<Vec<u8>, Vec<u8>>,
    cur: Option<Vec<u8>>,
}
impl Visitor for Collect {
    fn entry(&mut self, m: &EntryMeta) -> krypta::Result<()> {
        self.got.insert(m.path.clone(), Vec::new());
        self.cur = Some(m.path.clone());
        Ok(())
    }
    fn data(&mut self, off: u64, b: &[u8]) -> krypta::Result<()> {
        let p = self.cur.clone().unwrap();
        let v = self.got.get_mut(&p).unwrap();
        assert!(v.len() as u64 <= off);
        v.resize(off as usize, 0);
        v.extend_from_slice(b);
        Ok(())
    }
    fn end(&mut self, m: &EntryMeta, size: u64) -> krypta::Result<()> {
        self.got.get_mut(&m.path).unwrap().resize(size as usize, 0);
        Ok(())
    }
    fn abort(&mut self) {}
}

/// A file as extents `(offset, len)` of `data`, returned at most `short[k]` bytes per call.
struct Src {
    data: Vec<u8>,
    ext: Vec<(u64, usize)>,
    i: usize,
    within: usize,
    short: Vec<usize>,
    k: usize,
    size: u64,
}
impl ContentSource for Src {
    fn read_extent(&mut self, buf: &mut [u8]) -> krypta::Result<Option<(u64, usize)>> {
        assert!(!buf.is_empty());
        while self.i < self.ext.len() && self.within >= self.ext[self.i].1 {
            self.i += 1;
            self.within = 0;
        }
        if self.i >= self.ext.len() {
            return Ok(None);
        }
        let (off, len) = self.ext[self.i];
        let cap = self.short[self.k % self.short.len()].max(1);
        self.k += 1;
        let n = (len - self.within).min(buf.len()).min(cap);
        let o = off + self.within as u64;
        buf[..n].copy_from_slice(&self.data[o as usize..o as usize + n]);
        // scribble after n to catch stale use
        for b in buf[n..].iter_mut().take(64) {
            *b = 0xA5;
        }
        self.within += n;
        Ok(Some((o, n)))
    }
    fn final_size(&self) -> u64 {
        self.size
    }
}

fn meta(path: Vec<u8>) -> EntryMeta {
    EntryMeta {
        path,
        kind: EntryKind::File,
        mode: 0o640,
        mtime: Timestamp { secs: 1, nanos: 0 },
        uid: 0,
        gid: 0,
        link: vec![],
        ..Default::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn random_extents_round_trip_whole_and_selected(
        files in proptest::collection::vec((1usize..80, proptest::collection::vec((0u64..70_000, 1usize..140_000), 0..5), 0u64..100_000, proptest::collection::vec(1usize..200_000, 1..4), any::<bool>()), 1..6),
        level in prop_oneof![Just(None), Just(Some(1u8))],
        block in prop_oneof![Just(65536usize), Just(65537usize), Just(100_000usize), Just(200_003usize)],
        bcj in prop_oneof![Just(BcjMode::Off), Just(BcjMode::Force(Filter::X86)), Just(BcjMode::Force(Filter::Arm64)), Just(BcjMode::Force(Filter::Ia64))],
        jobs in 1usize..=3,
        seed in any::<u64>(),
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
        let mut x = seed | 1;
        for (i, (nlen, exts, tail, short, compressible)) in files.iter().enumerate() {
            let mut path = format!("{i}-").into_bytes();
            path.extend(std::iter::repeat_n(b'p', *nlen));
            let mut ext = Vec::new();
            let mut pos = 0u64;
            for (gap, len) in exts {
                pos += gap;
                ext.push((pos, *len));
                pos += *len as u64;
            }
            let size = pos + tail;
            let mut data = vec![0u8; size as usize];
            for (o, l) in &ext {
                for j in 0..*l {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    data[*o as usize + j] = if *compressible {
                        [0xE8, 0, 0, 0, (x as u8) & 3][j % 5]
                    } else {
                        x as u8
                    };
                }
            }
            let mut src = Src {
                data: data.clone(),
                ext: ext.clone(),
                i: 0,
                within: 0,
                short: short.clone(),
                k: 0,
                size,
            };
            let (sz, _) = w.add_file(&meta(path.clone()), &mut src).unwrap();
            prop_assert_eq!(sz, size);
            want.insert(path, data);
        }
        let (_, bytes) = w.finish().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.kry");
        std::fs::write(&p, &bytes).unwrap();
        let mut ar = Archive::open(&p, OpenOptions { jobs, ..OpenOptions::default() }).unwrap();
        let mut c = Collect::default();
        ar.scan(&mut c).unwrap();
        prop_assert!(c.got == want);
        let (_, index) = ar.read_index().unwrap();
        for k in 0..index.entries.len() {
            let mut sel = Collect::default();
            ar.scan_selected(&index, &[k], &mut sel).unwrap();
            let pth = index.entries[k].meta.path.clone();
            prop_assert!(sel.got.get(&pth) == want.get(&pth));
        }
    }
}
