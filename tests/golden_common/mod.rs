//! What the delta golden-vector tests (`delta_golden.rs`, `delta_diff_golden.rs`, `delta_ref_golden.rs`) build their
//! frozen archives from: seeded bytes and entry metadata with fixed times and owners. Changing
//! either changes the bytes those tests compare with `tests/golden/*.hex`.

#![allow(dead_code, missing_docs)]

use krypta::format::entry::{EntryKind, EntryMeta, Timestamp};

/// Deterministic, incompressible bytes (xorshift64).
pub fn seeded(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// An entry of `kind` at `path` with `mode`, a fixed mtime (1,798,675,200 s) and owner 1000:1000.
pub fn meta(path: &str, kind: EntryKind, mode: u32) -> EntryMeta {
    EntryMeta {
        path: path.as_bytes().to_vec(),
        kind,
        mode,
        mtime: Timestamp {
            secs: 1_798_675_200,
            nanos: 0,
        },
        uid: 1000,
        gid: 1000,
        ..EntryMeta::default()
    }
}

/// A delta golden archive at `level` (4 KiB blocks, one job, no BCJ, fixed time and id
/// `[id; 16]`): a directory `d`, then `files`, written against `base` when given.
pub fn write_delta_golden(
    level: krypta::codec::Level,
    files: &[(&str, Vec<u8>)],
    id: u8,
    base: Option<std::sync::Arc<krypta::archive::reader::BaseArchive>>,
) -> Vec<u8> {
    use krypta::archive::writer::{ArchiveWriter, BcjMode, ReaderSource, WriteOptions};
    let mut opts = WriteOptions::new();
    opts.level = Some(level);
    opts.block_size = krypta::codec::MIN_BLOCK_SIZE;
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
            &mut ReaderSource::new(c.as_slice(), "golden"),
        )
        .unwrap();
    }
    w.finish().unwrap().1
}

/// Lower-case hex of `b`, as the `.hex` golden files hold it.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Compares a base and delta archive pair with the golden file `path` (two `# …` comment
/// lines and two hex lines; rewritten first when `KRYPTA_REGENERATE_VECTORS` is set) and
/// returns the file's text. Panics naming `what` changed when they differ.
pub fn assert_pair_golden(path: &str, base: &[u8], delta: &[u8], what: &str) -> String {
    let text = format!(
        "# base archive ({} bytes)\n{}\n# delta archive ({} bytes)\n{}\n",
        base.len(),
        hex(base),
        delta.len(),
        hex(delta)
    );
    if std::env::var_os("KRYPTA_REGENERATE_VECTORS").is_some() {
        std::fs::write(path, &text).unwrap();
    }
    let golden = std::fs::read_to_string(path).expect(path);
    assert!(golden == text, "{what} changed (see the module doc)");
    golden
}
