//! Walk: order, kinds, hard links, special files, names as bytes, errors.

mod fs_common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};

use fs_common::*;
use krypta::format::entry::EntryKind;
use krypta::fs::walk::WalkOptions;

#[test]
fn walk_is_depth_first_sorted_by_name_bytes_with_dirs_before_children() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("tree");
    std::fs::create_dir_all(base.join("b/d")).unwrap();
    std::fs::write(base.join("b/z"), b"z").unwrap();
    std::fs::write(base.join("b/d/x"), b"x").unwrap();
    std::fs::write(base.join("a.txt"), b"hello").unwrap();
    std::fs::write(base.join("c"), b"").unwrap();
    std::fs::write(bpath(&base, b"\xff"), b"").unwrap();
    std::fs::write(base.join("B"), b"").unwrap();
    let (entries, warnings) = collect(std::slice::from_ref(&base), WalkOptions::default()).unwrap();
    let paths: Vec<Vec<u8>> = entries.iter().map(|e| e.meta.path.clone()).collect();
    let want: Vec<Vec<u8>> = ["", "B", "a.txt", "b", "b/d", "b/d/x", "b/z", "c"]
        .iter()
        .map(|r| arch(&base, r))
        .collect();
    let mut want = want;
    let mut last = arch(&base, "");
    last.extend_from_slice(b"/\xff");
    want.push(last);
    assert_eq!(paths, want);
    // The note is shown once per walk (like tar), not once per input, so it names no input.
    assert_eq!(
        warnings,
        vec!["removing leading '/' from member names".to_string()]
    );
    let a = &entries[2];
    assert_eq!(a.meta.kind, EntryKind::File);
    assert_eq!(a.size, 5);
    assert_eq!(a.source, base.join("a.txt"));
    assert_eq!(entries[3].meta.kind, EntryKind::Dir);
    assert_eq!(entries[3].size, 0);
}

#[test]
fn symlinks_are_stored_not_followed_and_hard_links_point_at_the_first_path() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("t");
    std::fs::create_dir(&base).unwrap();
    std::fs::write(base.join("f"), b"data").unwrap();
    std::fs::hard_link(base.join("f"), base.join("g")).unwrap();
    std::fs::create_dir(base.join("realdir")).unwrap();
    std::fs::write(base.join("realdir/inside"), b"").unwrap();
    symlink("realdir", base.join("dirlink")).unwrap();
    symlink(
        OsStr::from_bytes(b"/nonexistent/\xfe"),
        base.join("dangling"),
    )
    .unwrap();
    let (entries, _) = collect(std::slice::from_ref(&base), WalkOptions::default()).unwrap();
    let by = |rel: &str| {
        entries
            .iter()
            .find(|e| e.meta.path == arch(&base, rel))
            .unwrap()
    };
    let l = by("dirlink");
    assert_eq!(l.meta.kind, EntryKind::Symlink);
    assert_eq!(l.meta.link, b"realdir".to_vec());
    assert!(
        !entries
            .iter()
            .any(|e| e.meta.path == arch(&base, "dirlink/inside"))
    );
    assert_eq!(by("dangling").meta.link, b"/nonexistent/\xfe".to_vec());
    assert_eq!(by("f").meta.kind, EntryKind::File);
    let g = by("g");
    assert_eq!(g.meta.kind, EntryKind::Hardlink);
    assert_eq!(g.meta.link, arch(&base, "f"));
    assert_eq!(g.size, 0);
}

#[test]
fn fifo_socket_and_device_are_skipped_with_a_warning_without_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("t");
    std::fs::create_dir(&base).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        base.join("fifo"),
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(base.join("sock")).unwrap();
    std::fs::write(base.join("plain"), b"p").unwrap();
    let (entries, warnings) = collect(std::slice::from_ref(&base), WalkOptions::default()).unwrap();
    let kinds: Vec<EntryKind> = entries.iter().map(|e| e.meta.kind).collect();
    assert_eq!(kinds, vec![EntryKind::Dir, EntryKind::File]);
    let shown = |n: &str| krypta::fs::escape_path(base.join(n).as_os_str().as_bytes());
    assert_eq!(
        warnings[1..],
        [
            format!("{}: skipping FIFO", shown("fifo")),
            format!("{}: skipping socket", shown("sock"))
        ]
    );
}

#[test]
fn missing_input_is_an_io_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    match collect(std::slice::from_ref(&missing), WalkOptions::default()) {
        Err(krypta::Error::Io { path, op, source }) => {
            assert_eq!(path, missing);
            assert_eq!(op, "stat");
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn stdin_input_is_not_walked_but_is_one_stream_entry() {
    // `-` comes in its place among the inputs as a regular file `stdin` that `krypta c`
    // reads from stdin (before, the walk left it out and `c` added it after everything).
    let (entries, warnings) = collect(&[PathBuf::from("-")], WalkOptions::default()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(entries.len(), 1);
    let e = &entries[0];
    assert!(e.stream && e.opened.is_none());
    assert_eq!(e.source, PathBuf::from("-"));
    assert_eq!(
        (e.meta.path.as_slice(), e.meta.kind, e.meta.mode, e.size),
        (&b"stdin"[..], EntryKind::File, 0o644, 0)
    );
    assert_eq!(
        (e.meta.uid, e.meta.gid),
        (
            rustix::process::getuid().as_raw(),
            rustix::process::getgid().as_raw()
        )
    );
}

#[test]
fn metadata_is_taken_exactly_including_pre_1970_mtime_and_setuid() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("suid");
    std::fs::write(&f, b"x").unwrap();
    rustix::fs::chown(
        &f,
        Some(rustix::fs::Uid::from_raw(1234)),
        Some(rustix::fs::Gid::from_raw(5678)),
    )
    .unwrap();
    chmod(&f, 0o4751);
    set_mtime(&f, -1_234_567_890, 987_654_321);
    let (entries, _) = collect(std::slice::from_ref(&f), WalkOptions::default()).unwrap();
    let m = &entries[0].meta;
    assert_eq!(m.mode, 0o4751);
    assert_eq!((m.mtime.secs, m.mtime.nanos), (-1_234_567_890, 987_654_321));
    assert_eq!((m.uid, m.gid), (1234, 5678));
    assert_eq!(std::fs::metadata(&f).unwrap().mode() & 0o7777, 0o4751);
}

#[test]
fn dereference_follows_links_and_stops_at_loops() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("t");
    std::fs::create_dir_all(base.join("real")).unwrap();
    std::fs::write(base.join("real/file"), b"abc").unwrap();
    symlink("real", base.join("via")).unwrap();
    symlink("real/file", base.join("flink")).unwrap();
    symlink("..", base.join("real/up")).unwrap();
    let (entries, warnings) = collect(
        std::slice::from_ref(&base),
        WalkOptions {
            dereference: true,
            ..WalkOptions::default()
        },
    )
    .unwrap();
    let by = |rel: &str| entries.iter().find(|e| e.meta.path == arch(&base, rel));
    let via = by("via").unwrap();
    assert_eq!(via.meta.kind, EntryKind::Dir);
    let fl = by("flink").unwrap();
    assert_eq!(fl.meta.kind, EntryKind::File);
    assert_eq!(fl.size, 3);
    assert_eq!(
        fl.source,
        std::fs::canonicalize(base.join("real/file")).unwrap()
    );
    // real/up -> .. is the walk's root again, an ancestor: stored, not descended.
    assert_eq!(by("real/up").unwrap().meta.kind, EntryKind::Dir);
    assert!(by("real/up/real").is_none());
    let shown = |p: &Path| krypta::fs::escape_path(p.as_os_str().as_bytes());
    let looped = |at: &str| {
        format!(
            "{}: directory loop: it is {}, a directory above it (symbolic link or bind mount); stored empty, not descended",
            shown(&base.join(at)),
            shown(&base)
        )
    };
    // "via" is the same directory as "real" but not above it: stored with its contents under
    // both names, as tar -h does (it was stored empty, blamed on a loop, losing via/file).
    assert_eq!(by("real/file").unwrap().size, 3);
    assert_eq!(by("via/file").unwrap().size, 3);
    assert_eq!(by("via/up").unwrap().meta.kind, EntryKind::Dir);
    assert!(by("via/up/real").is_none());
    assert_eq!(
        warnings,
        [
            "removing leading '/' from member names".to_string(),
            looped("real/up"),
            looped("via/up")
        ]
    );
}

#[test]
fn leading_dotdot_is_stripped_with_one_warning() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("x")).unwrap();
    std::fs::write(tmp.path().join("f"), b"").unwrap();
    let input = tmp.path().join("x/../f");
    let (entries, warnings) =
        collect(std::slice::from_ref(&input), WalkOptions::default()).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].meta.path, b"f".to_vec());
    let removed = krypta::fs::escape_path(tmp.path().join("x/../").as_os_str().as_bytes());
    assert_eq!(
        warnings,
        vec![format!("removing leading '{removed}' from member names")]
    );
}

#[test]
fn leading_slash_note_is_shown_once_for_many_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs: Vec<std::path::PathBuf> = (0..3)
        .map(|i| {
            let p = tmp.path().join(format!("f{i}"));
            std::fs::write(&p, b"x").unwrap();
            p
        })
        .collect();
    let (entries, warnings) = collect(&inputs, WalkOptions::default()).unwrap();
    assert_eq!(entries.len(), 3);
    assert_eq!(
        warnings,
        vec!["removing leading '/' from member names".to_string()]
    );
}
