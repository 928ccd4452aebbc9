//! Shared helpers for the fs-layer integration tests: build trees, copy a tree through
//! walk → FileSource → FileSink/Extractor, read metadata back.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use krypta::format::entry::{EntryKind, Timestamp};
use krypta::fs::extract::{ExtractOptions, Extractor};
use krypta::fs::source::FileSource;
use krypta::fs::walk::{InputEntry, WalkEvent, WalkOptions, archive_path_of, walk};

/// Walks `inputs`, returning entries and warnings; an input that cannot be read ends the walk
/// with its I/O error, as `krypta c --strict` does (the walk itself only reports it).
pub fn collect(
    inputs: &[PathBuf],
    opts: WalkOptions,
) -> krypta::Result<(Vec<InputEntry>, Vec<String>)> {
    let mut entries = Vec::new();
    let mut warnings = Vec::new();
    walk(inputs, &opts, &mut |ev| {
        match ev {
            WalkEvent::Entry(e) => entries.push(e),
            WalkEvent::Warning(w) | WalkEvent::Omitted(w) => warnings.push(w),
            WalkEvent::Skipped(s) => return Err(s.into_error()),
        }
        Ok(())
    })?;
    Ok((entries, warnings))
}

/// Number of components the walk keeps for an absolute input path (all of them: the leading
/// `/` only is dropped), to pass as `strip_components`.
pub fn prefix_len(input: &Path) -> usize {
    let arch = archive_path_of(input.as_os_str().as_bytes()).0;
    arch.split(|&b| b == b'/').count()
}

/// Archive path of `rel` below the walked input `base`.
pub fn arch(base: &Path, rel: &str) -> Vec<u8> {
    let mut a = archive_path_of(base.as_os_str().as_bytes()).0;
    if !rel.is_empty() {
        a.push(b'/');
        a.extend_from_slice(rel.as_bytes());
    }
    a
}

/// Copies the entries through FileSource → Extractor; returns change warnings.
pub fn extract_entries(
    entries: &[InputEntry],
    out: &Path,
    opts: ExtractOptions,
) -> krypta::Result<Vec<String>> {
    let mut warnings = Vec::new();
    let mut x = Extractor::new(out, opts)?;
    for e in entries {
        match e.meta.kind {
            EntryKind::File => {
                let mut src = FileSource::open(&e.source, e.size)?;
                if let Some(mut sink) = x.begin_file(&e.meta)? {
                    let mut buf = Vec::new();
                    while let Some((off, len)) = src.next_extent(&mut buf, 1 << 20)? {
                        sink.write_at(off, &buf[..len])?;
                        buf.clear();
                    }
                    warnings.extend(src.change_warning());
                    sink.commit(src.final_size())?;
                }
            }
            EntryKind::Dir => x.make_dir(&e.meta)?,
            EntryKind::Symlink => x.make_symlink(&e.meta)?,
            EntryKind::Hardlink => x.make_hardlink(&e.meta)?,
        }
    }
    x.finish()?;
    Ok(warnings)
}

/// Walks `src` and extracts it into `out` with the input prefix stripped.
pub fn copy_tree(src: &Path, out: &Path, opts: ExtractOptions) -> krypta::Result<Vec<String>> {
    let (entries, mut warnings) = collect(&[src.to_path_buf()], WalkOptions::default())?;
    let opts = ExtractOptions {
        strip_components: prefix_len(src),
        ..opts
    };
    warnings.extend(extract_entries(&entries, out, opts)?);
    Ok(warnings)
}

/// `lstat` of a path (any length below PATH_MAX).
pub fn lstat(p: &Path) -> rustix::fs::Stat {
    rustix::fs::lstat(p).unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()))
}

/// Mode bits (0o7777) of a path, not following links.
pub fn mode(p: &Path) -> u32 {
    lstat(p).st_mode & 0o7777
}

/// Mtime of a path, not following links.
pub fn mtime(p: &Path) -> Timestamp {
    let st = lstat(p);
    Timestamp {
        secs: st.st_mtime,
        nanos: st.st_mtime_nsec as u32,
    }
}

/// Sets the mtime of a path (not following links) to `secs`.`nanos`.
pub fn set_mtime(p: &Path, secs: i64, nanos: u32) {
    let t = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: secs,
            tv_nsec: nanos as i64,
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: secs,
            tv_nsec: nanos as i64,
        },
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        p,
        &t,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
}

/// Sets mode bits exactly (umask does not apply to chmod).
pub fn chmod(p: &Path, m: u32) {
    rustix::fs::chmod(p, rustix::fs::Mode::from_raw_mode(m)).unwrap();
}

/// A path from raw bytes.
pub fn bpath(base: &Path, name: &[u8]) -> PathBuf {
    base.join(OsStr::from_bytes(name))
}

/// Names (raw bytes) of `.krypta-*.tmp` files left in a directory.
pub fn temp_leftovers(dir: &Path) -> Vec<Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .filter(|n| n.starts_with(b".krypta-"))
        .collect()
}
