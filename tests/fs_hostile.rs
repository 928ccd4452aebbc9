//! Safe extraction: hostile entry paths, links used to escape, existing files, failures
//! part-way. Each test names the attack it pins.

mod fs_common;

use std::os::unix::fs::symlink;
use std::path::Path;

use fs_common::*;
use krypta::Error;
use krypta::format::entry::{EntryKind, EntryMeta, Timestamp};
use krypta::fs::extract::{Conflict, Existing, ExtractOptions, Extractor, Reason};

fn meta(path: &[u8], kind: EntryKind) -> EntryMeta {
    EntryMeta {
        path: path.to_vec(),
        kind,
        mode: 0o644,
        mtime: Timestamp { secs: 1, nanos: 0 },
        uid: 0,
        gid: 0,
        link: Vec::new(),
        ..Default::default()
    }
}

fn link_meta(path: &[u8], kind: EntryKind, target: &[u8]) -> EntryMeta {
    EntryMeta {
        link: target.to_vec(),
        ..meta(path, kind)
    }
}

/// Writes one file entry; `Ok(false)` when the conflict policy kept what is at its name (the
/// extractor then lists it in `conflicts()`).
fn write_file(x: &mut Extractor, path: &[u8], data: &[u8]) -> krypta::Result<bool> {
    let Some(mut s) = x.begin_file(&meta(path, EntryKind::File))? else {
        return Ok(false);
    };
    s.write_at(0, data)?;
    s.commit(data.len() as u64)?;
    Ok(true)
}

fn kept(path: &Path, reason: Reason) -> Conflict {
    Conflict {
        path: path.to_path_buf(),
        reason,
    }
}

fn unsafe_reason(r: krypta::Result<impl std::fmt::Debug>) -> &'static str {
    match r {
        Err(Error::UnsafePath { reason, .. }) => reason,
        other => panic!("expected UnsafePath, got {other:?}"),
    }
}

#[test]
fn absolute_dotdot_and_empty_component_paths_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut x = Extractor::new(&tmp.path().join("out"), ExtractOptions::default()).unwrap();
    assert_eq!(
        unsafe_reason(x.begin_file(&meta(b"/tmp/evil", EntryKind::File))),
        "absolute path"
    );
    assert_eq!(
        unsafe_reason(x.begin_file(&meta(b"../evil", EntryKind::File))),
        "'..' component"
    );
    assert_eq!(
        unsafe_reason(x.make_dir(&meta(b"a/../../evil", EntryKind::Dir))),
        "'..' component"
    );
    assert_eq!(
        unsafe_reason(x.make_symlink(&link_meta(b"a//b", EntryKind::Symlink, b"x"))),
        "empty, '.' or NUL-containing component, or bad length"
    );
    assert!(!tmp.path().join("evil").exists());
    assert!(
        std::fs::read_dir(tmp.path().join("out"))
            .unwrap()
            .next()
            .is_none()
    );
}

#[test]
fn symlink_entry_then_file_below_it_cannot_escape() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let mut x = Extractor::new(&tmp.path().join("out"), ExtractOptions::default()).unwrap();
    x.make_symlink(&link_meta(
        b"d",
        EntryKind::Symlink,
        outside.as_os_str().as_encoded_bytes(),
    ))
    .unwrap();
    let r = x.begin_file(&meta(b"d/file", EntryKind::File));
    assert_eq!(
        unsafe_reason(r),
        "a parent directory in the output is a symbolic link (never followed)"
    );
    assert_eq!(
        unsafe_reason(x.make_dir(&meta(b"d/sub", EntryKind::Dir))),
        "a parent directory in the output is a symbolic link (never followed)"
    );
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
}

#[test]
fn hard_link_to_a_file_not_extracted_in_this_run_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("preexisting"), b"not ours").unwrap();
    let mut x = Extractor::new(&out, ExtractOptions::default()).unwrap();
    let r = x.make_hardlink(&link_meta(b"h", EntryKind::Hardlink, b"preexisting"));
    assert_eq!(
        unsafe_reason(r),
        "hard link target was not extracted in this run"
    );
    assert!(!out.join("h").exists());
}

#[test]
fn preexisting_symlink_as_parent_directory_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    let out = tmp.path().join("out");
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir(&out).unwrap();
    symlink(&outside, out.join("d")).unwrap();
    let mut x = Extractor::new(
        &out,
        ExtractOptions {
            existing: Existing::Replace,
            ..Default::default()
        },
    )
    .unwrap();
    let r = write_file(&mut x, b"d/file", b"evil");
    assert_eq!(
        unsafe_reason(r),
        "a parent directory in the output is a symbolic link (never followed)"
    );
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
}

#[test]
fn preexisting_symlink_at_the_final_name_is_kept_then_replaced_with_force_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    let out = tmp.path().join("out");
    std::fs::write(&victim, b"precious").unwrap();
    std::fs::create_dir(&out).unwrap();
    symlink(&victim, out.join("f")).unwrap();
    let mut x = Extractor::new(&out, ExtractOptions::default()).unwrap();
    assert!(!write_file(&mut x, b"f", b"evil").unwrap());
    assert_eq!(x.conflicts(), vec![kept(&out.join("f"), Reason::Exists)]);
    assert_eq!(std::fs::read_link(out.join("f")).unwrap(), victim);
    assert!(temp_leftovers(&out).is_empty());
    let mut x = Extractor::new(
        &out,
        ExtractOptions {
            existing: Existing::Replace,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(write_file(&mut x, b"f", b"new").unwrap());
    assert_eq!(lstat(&out.join("f")).st_mode & 0o170000, 0o100000);
    assert_eq!(std::fs::read(out.join("f")).unwrap(), b"new");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    // A directory entry over a symlink to a directory: replaced by a real directory too.
    std::fs::create_dir(tmp.path().join("vdir")).unwrap();
    symlink(tmp.path().join("vdir"), out.join("d")).unwrap();
    x.make_dir(&meta(b"d", EntryKind::Dir)).unwrap();
    x.finish().unwrap();
    assert_eq!(lstat(&out.join("d")).st_mode & 0o170000, 0o040000);
}

#[test]
fn existing_file_is_untouched_without_force_and_replaced_atomically_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("f"), b"old").unwrap();
    std::fs::hard_link(out.join("f"), tmp.path().join("other-name")).unwrap();
    let old_ino = lstat(&out.join("f")).st_ino;
    let mut x = Extractor::new(&out, ExtractOptions::default()).unwrap();
    assert!(!write_file(&mut x, b"f", b"new").unwrap());
    x.make_symlink(&link_meta(b"f", EntryKind::Symlink, b"t"))
        .unwrap();
    // Kept and recorded once (a name is listed once however many entries wanted it).
    assert_eq!(x.conflicts(), vec![kept(&out.join("f"), Reason::Exists)]);
    assert_eq!(std::fs::read(out.join("f")).unwrap(), b"old");
    assert_eq!(lstat(&out.join("f")).st_ino, old_ino);
    let mut x = Extractor::new(
        &out,
        ExtractOptions {
            existing: Existing::Replace,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(write_file(&mut x, b"f", b"new").unwrap());
    assert_ne!(lstat(&out.join("f")).st_ino, old_ino);
    assert_eq!(std::fs::read(out.join("f")).unwrap(), b"new");
    // The old inode was not truncated in place: its other name still has the old bytes.
    assert_eq!(
        std::fs::read(tmp.path().join("other-name")).unwrap(),
        b"old"
    );
    assert!(temp_leftovers(&out).is_empty());
}

#[test]
fn existing_directory_is_never_replaced_by_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("d/keep")).unwrap();
    let mut x = Extractor::new(
        tmp.path(),
        ExtractOptions {
            existing: Existing::Replace,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!write_file(&mut x, b"d", b"x").unwrap());
    assert_eq!(
        x.conflicts(),
        vec![kept(&tmp.path().join("d"), Reason::IsDirectory)]
    );
    assert!(tmp.path().join("d/keep").is_dir());
    assert!(temp_leftovers(tmp.path()).is_empty());
}

fn assert_failed_write_left_nothing(dir: &Path, name: &str, err: Error) {
    match err {
        Error::Io { path, op, source } => {
            assert_eq!(path, dir.join(name));
            assert_eq!(op, "write");
            assert_eq!(source.raw_os_error(), Some(28)); // ENOSPC
        }
        other => panic!("{other:?}"),
    }
    assert!(!dir.join(name).exists());
    assert!(temp_leftovers(dir).is_empty());
}

#[test]
fn failure_mid_write_leaves_completed_files_and_no_partial_file() {
    // Both ways of writing a file before it is complete: unnamed (O_TMPFILE) and named.
    for named_temporaries in [false, true] {
        failure_mid_write(named_temporaries);
    }
}

fn failure_mid_write(named_temporaries: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let opts = ExtractOptions {
        fail_write_after: Some(150),
        named_temporaries,
        ..Default::default()
    };
    let mut x = Extractor::new(tmp.path(), opts).unwrap();
    write_file(&mut x, b"done", &[1u8; 100]).unwrap();
    let mut s = x
        .begin_file(&meta(b"partial", EntryKind::File))
        .unwrap()
        .unwrap();
    s.write_at(0, &[2u8; 100]).unwrap();
    let err = s.write_at(100, &[2u8; 100]).unwrap_err();
    drop(s);
    assert_failed_write_left_nothing(tmp.path(), "partial", err);
    assert_eq!(
        std::fs::read(tmp.path().join("done")).unwrap(),
        vec![1u8; 100]
    );
}

#[test]
fn abort_removes_the_temporary_file() {
    // The fallback for file systems without O_TMPFILE: a named temporary file, removed.
    let tmp = tempfile::tempdir().unwrap();
    let opts = ExtractOptions {
        named_temporaries: true,
        ..ExtractOptions::default()
    };
    let mut x = Extractor::new(tmp.path(), opts).unwrap();
    let mut s = x.begin_file(&meta(b"f", EntryKind::File)).unwrap().unwrap();
    s.write_at(0, b"abc").unwrap();
    assert_eq!(temp_leftovers(tmp.path()).len(), 1);
    s.abort();
    assert!(temp_leftovers(tmp.path()).is_empty());
    assert!(!tmp.path().join("f").exists());
}

#[test]
fn a_file_being_written_has_no_name_until_committed() {
    // Unnamed (O_TMPFILE) where the file system has it, as here (ext4 or tmpfs): nothing in
    // the directory while writing, nothing after an abort, exactly the file after commit.
    let tmp = tempfile::tempdir().unwrap();
    let names = |p: &Path| -> Vec<std::ffi::OsString> {
        let mut v: Vec<_> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let mut x = Extractor::new(tmp.path(), ExtractOptions::default()).unwrap();
    let mut s = x.begin_file(&meta(b"f", EntryKind::File)).unwrap().unwrap();
    s.write_at(0, b"abc").unwrap();
    assert_eq!(names(tmp.path()), Vec::<std::ffi::OsString>::new());
    s.abort();
    assert_eq!(names(tmp.path()), Vec::<std::ffi::OsString>::new());
    let mut s = x.begin_file(&meta(b"g", EntryKind::File)).unwrap().unwrap();
    s.write_at(0, b"xyz").unwrap();
    assert_eq!(names(tmp.path()), Vec::<std::ffi::OsString>::new());
    s.commit(3).unwrap();
    assert_eq!(names(tmp.path()), vec![std::ffi::OsString::from("g")]);
    assert_eq!(std::fs::read(tmp.path().join("g")).unwrap(), b"xyz");
}

/// Disk full for real: a 1 MiB tmpfs. Skipped (with a note) where mounting is not allowed.
#[test]
fn disk_full_on_a_small_tmpfs_leaves_no_partial_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("note: cannot mount a tmpfs here; disk-full test skipped");
        return;
    }
    let result = std::panic::catch_unwind(|| {
        let mut x = Extractor::new(&mnt, ExtractOptions::default()).unwrap();
        write_file(&mut x, b"small", &[3u8; 1000]).unwrap();
        let mut s = x
            .begin_file(&meta(b"big", EntryKind::File))
            .unwrap()
            .unwrap();
        let chunk = vec![9u8; 256 * 1024];
        let mut err = None;
        for i in 0..8u64 {
            if let Err(e) = s.write_at(i * chunk.len() as u64, &chunk) {
                err = Some(e);
                break;
            }
        }
        drop(s);
        assert_failed_write_left_nothing(
            &mnt,
            "big",
            err.expect("a 2 MiB write must fail on 1 MiB"),
        );
        assert_eq!(std::fs::read(mnt.join("small")).unwrap(), vec![3u8; 1000]);
    });
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}
