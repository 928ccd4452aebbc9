//! Issue 17: a golden delta archive freezes the BASE_REF record (docs/FORMAT.md §16.5). A
//! fixed base and a fixed next version, written with fixed ids and times through the library
//! (stored blocks, so the records are visible in the file), must give exactly the bytes in
//! `tests/golden/delta_ref_v2.hex` (base, then delta); and the archives *in that file* — not
//! the ones just written — must extract with the binary to exactly the new tree, so a reader
//! change that stops reading the frozen bytes fails here even if the writer changed with it.
//! Regenerate (only when the format changes on purpose) with
//! `KRYPTA_REGENERATE_VECTORS=1 cargo test --test delta_ref_golden`.

mod golden_common;

use std::sync::Arc;

use golden_common::{assert_pair_golden, meta, seeded};
use krypta::archive::reader::{BaseArchive, OpenOptions};
use krypta::archive::writer::{ArchiveWriter, BcjMode, ContentSource, WriteOptions};
use krypta::codec::{Level, MIN_BLOCK_SIZE};
use krypta::format::entry::EntryKind;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/delta_ref_v2.hex");

/// Content from memory that can be read twice (as a file can), so the writer may hash it
/// before it decides on a reference.
struct Mem<'a> {
    data: &'a [u8],
    pos: usize,
}

impl ContentSource for Mem<'_> {
    fn read_extent(&mut self, buf: &mut [u8]) -> krypta::Result<Option<(u64, usize)>> {
        if self.pos == self.data.len() {
            return Ok(None);
        }
        let n = buf.len().min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(Some(((self.pos - n) as u64, n)))
    }
    fn final_size(&self) -> u64 {
        self.data.len() as u64
    }
    fn can_rewind(&self) -> bool {
        true
    }
    fn rewind(&mut self) -> krypta::Result<()> {
        self.pos = 0;
        Ok(())
    }
}

/// `n` bytes repeating 1 KiB of [`seeded`] ones: large files whose base archive stays small.
fn repeated(n: usize, seed: u64) -> Vec<u8> {
    seeded(1024, seed).into_iter().cycle().take(n).collect()
}

/// The archive of `files` below directory `d`, stored blocks, against `base` when given;
/// with the number of files stored as references.
fn write(
    files: &[(&str, Vec<u8>)],
    id: u8,
    level: Option<Level>,
    base: Option<Arc<BaseArchive>>,
) -> (Vec<u8>, u64) {
    let mut opts = WriteOptions::new();
    opts.level = level;
    opts.block_size = MIN_BLOCK_SIZE;
    opts.jobs = 1;
    opts.bcj = BcjMode::Off;
    opts.created = 1_798_675_200;
    opts.archive_id = Some([id; 16]);
    opts.base = base;
    let mut w = ArchiveWriter::new(Vec::new(), "<golden>", opts).unwrap();
    w.add_entry(&meta("d", EntryKind::Dir, 0o755)).unwrap();
    for (p, c) in files {
        w.add_file(
            &meta(p, EntryKind::File, 0o644),
            &mut Mem { data: c, pos: 0 },
        )
        .unwrap();
    }
    let (summary, bytes) = w.finish().unwrap();
    (bytes, summary.base_references)
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn a_delta_archive_with_base_references_is_byte_for_byte_the_golden_one() {
    let dir = tempfile::tempdir().unwrap();
    // Base (zstd blocks): a.bin (70,000 bytes) and b.bin (65,536: the smallest file
    // referenced, FORMAT.md §16.3), s.txt (100 bytes), x.bin (2,000).
    let a = repeated(70_000, 1);
    let b = repeated(65_536, 5);
    let s = seeded(100, 9);
    let x = seeded(2000, 11);
    let (base, refs) = write(
        &[
            ("d/a.bin", a.clone()),
            ("d/b.bin", b.clone()),
            ("d/s.txt", s.clone()),
            ("d/x.bin", x),
        ],
        0xb1,
        Some(Level::DEFAULT),
        None,
    );
    assert_eq!(refs, 0);
    let base_path = dir.path().join("base.kry");
    std::fs::write(&base_path, &base).unwrap();
    let opened = Arc::new(BaseArchive::open(&base_path, OpenOptions::default()).unwrap());
    // Next version (stored blocks): a.bin and b.bin as they were (references to base
    // entries 1 and 2), s.txt as it was but under 64 KiB (its content, stored), x.bin
    // replaced by 2,000 other bytes (same size, other digest: its content), n.txt new.
    let x2 = seeded(2000, 13);
    let n = b"new in version 2\n".to_vec();
    let (delta, refs) = write(
        &[
            ("d/a.bin", a.clone()),
            ("d/b.bin", b.clone()),
            ("d/s.txt", s.clone()),
            ("d/x.bin", x2.clone()),
            ("d/n.txt", n.clone()),
        ],
        0xd1,
        None,
        Some(opened),
    );
    assert_eq!(refs, 2);
    // The records of a referenced file, in the stored block: BASE_REF (05, entry 1 as u64)
    // then END_DIGEST (04, size, BLAKE3), right after the ENTRY record.
    for (entry, content) in [(1u64, &a), (2, &b)] {
        let mut rec = vec![5];
        rec.extend_from_slice(&entry.to_le_bytes());
        rec.push(4);
        rec.extend_from_slice(&(content.len() as u64).to_le_bytes());
        rec.extend_from_slice(blake3::hash(content).as_bytes());
        assert!(
            delta.windows(rec.len()).any(|w| w == rec.as_slice()),
            "no BASE_REF + END_DIGEST for base entry {entry}"
        );
    }
    // Neither referenced content is in the delta archive; s.txt's is (stored).
    assert!(!delta.windows(64).any(|w| w == &a[..64]));
    assert!(!delta.windows(64).any(|w| w == &b[..64]));
    assert!(delta.windows(100).any(|w| w == s.as_slice()));
    let golden = assert_pair_golden(GOLDEN, &base, &delta, "the BASE_REF layout");
    // Read the frozen archives themselves.
    let lines: Vec<&str> = golden.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 2);
    let gb = dir.path().join("golden-base.kry");
    let gd = dir.path().join("golden-delta.kry");
    std::fs::write(&gb, unhex(lines[0])).unwrap();
    std::fs::write(&gd, unhex(lines[1])).unwrap();
    let out = dir.path().join("out");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_krypta"))
        .args(["x", "-q", "--base"])
        .arg(&gb)
        .arg(&gd)
        .arg("-C")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(out.join("d/a.bin")).unwrap(), a);
    assert_eq!(std::fs::read(out.join("d/b.bin")).unwrap(), b);
    assert_eq!(std::fs::read(out.join("d/s.txt")).unwrap(), s);
    assert_eq!(std::fs::read(out.join("d/x.bin")).unwrap(), x2);
    assert_eq!(std::fs::read(out.join("d/n.txt")).unwrap(), n);
    let mut names: Vec<_> = std::fs::read_dir(out.join("d"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a.bin", "b.bin", "n.txt", "s.txt", "x.bin"]);
}
