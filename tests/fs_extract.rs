//! Extraction fidelity: a tree copied through walk → FileSource → Extractor comes back exact.

mod fs_common;

use std::os::unix::fs::{MetadataExt, symlink};

use fs_common::*;
use krypta::format::entry::{EntryKind, EntryMeta, Timestamp};
use krypta::fs::extract::{ExtractOptions, Extractor};

fn meta(path: &[u8], kind: EntryKind, mode: u32) -> EntryMeta {
    EntryMeta {
        path: path.to_vec(),
        kind,
        mode,
        mtime: Timestamp {
            secs: 1_600_000_000,
            nanos: 5,
        },
        uid: 0,
        gid: 0,
        link: Vec::new(),
        ..Default::default()
    }
}

#[test]
fn tree_round_trips_names_links_modes_mtimes_and_owners() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let out = tmp.path().join("out");
    std::fs::create_dir_all(src.join("sub/empty")).unwrap();
    std::fs::write(src.join("sub/a.txt"), b"alpha").unwrap();
    std::fs::write(bpath(&src, b"caf\xe9\xff"), b"latin1").unwrap();
    std::fs::write(src.join("new\nline"), b"nl").unwrap();
    std::fs::write(src.join("h1"), b"hard").unwrap();
    std::fs::hard_link(src.join("h1"), src.join("h2")).unwrap();
    symlink("sub/a.txt", src.join("rel")).unwrap();
    symlink("/etc/passwd", src.join("abs")).unwrap();
    symlink("../../outside", src.join("sub/up")).unwrap();
    let suid = src.join("suid");
    std::fs::write(&suid, b"#!").unwrap();
    rustix::fs::chown(
        &suid,
        Some(rustix::fs::Uid::from_raw(4321)),
        Some(rustix::fs::Gid::from_raw(8765)),
    )
    .unwrap();
    chmod(&suid, 0o4755);
    chmod(&src.join("sub/a.txt"), 0o640);
    chmod(&src.join("sub"), 0o2751);
    set_mtime(&suid, -86_400 * 365 * 10 - 1, 999_999_999);
    set_mtime(&src.join("sub/a.txt"), 1_234_567_890, 123_456_789);
    set_mtime(&src.join("rel"), 1_000, 1);
    set_mtime(&src.join("sub/empty"), -1, 500_000_000);
    set_mtime(&src.join("sub"), 42, 42);

    let warnings = copy_tree(&src, &out, ExtractOptions::default()).unwrap();
    assert!(warnings.len() == 1, "{warnings:?}"); // the leading '/' note

    assert_eq!(std::fs::read(out.join("sub/a.txt")).unwrap(), b"alpha");
    assert_eq!(
        std::fs::read(bpath(&out, b"caf\xe9\xff")).unwrap(),
        b"latin1"
    );
    assert_eq!(std::fs::read(out.join("new\nline")).unwrap(), b"nl");
    assert_eq!(
        std::fs::read_link(out.join("rel")).unwrap().as_os_str(),
        "sub/a.txt"
    );
    assert_eq!(
        std::fs::read_link(out.join("abs")).unwrap().as_os_str(),
        "/etc/passwd"
    );
    assert_eq!(
        std::fs::read_link(out.join("sub/up")).unwrap().as_os_str(),
        "../../outside"
    );
    assert_eq!(lstat(&out.join("h1")).st_ino, lstat(&out.join("h2")).st_ino);
    assert_eq!(lstat(&out.join("h1")).st_nlink, 2);
    assert_eq!(mode(&out.join("suid")), 0o4755);
    assert_eq!(mode(&out.join("sub/a.txt")), 0o640);
    assert_eq!(mode(&out.join("sub")), 0o2751);
    let st = lstat(&out.join("suid"));
    assert_eq!((st.st_uid, st.st_gid), (4321, 8765));
    assert_eq!(
        mtime(&out.join("suid")),
        Timestamp {
            secs: -315_360_001,
            nanos: 999_999_999
        }
    );
    assert_eq!(
        mtime(&out.join("sub/a.txt")),
        Timestamp {
            secs: 1_234_567_890,
            nanos: 123_456_789
        }
    );
    assert_eq!(
        mtime(&out.join("rel")),
        Timestamp {
            secs: 1_000,
            nanos: 1
        }
    );
    assert_eq!(
        mtime(&out.join("sub/empty")),
        Timestamp {
            secs: -1,
            nanos: 500_000_000
        }
    );
    assert_eq!(
        mtime(&out.join("sub")),
        Timestamp {
            secs: 42,
            nanos: 42
        }
    );
    assert!(
        std::fs::read_dir(out.join("sub/empty"))
            .unwrap()
            .next()
            .is_none()
    );
    assert!(temp_leftovers(&out).is_empty());
}

#[test]
fn setuid_setgid_sticky_are_masked_without_root_or_same_permissions() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = ExtractOptions {
        as_root: false,
        same_permissions: false,
        restore_owner: false,
        ..Default::default()
    };
    let mut x = Extractor::new(tmp.path(), opts).unwrap();
    let mut s = x
        .begin_file(&meta(b"suid", EntryKind::File, 0o6777))
        .unwrap()
        .unwrap();
    s.write_at(0, b"x").unwrap();
    s.commit(1).unwrap();
    x.make_dir(&meta(b"sticky", EntryKind::Dir, 0o1777))
        .unwrap();
    x.finish().unwrap();
    // 0o777 minus the test process umask (0o022 unless the environment changed it).
    let umask = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Umask:")
                .map(|v| u32::from_str_radix(v.trim(), 8).unwrap())
        })
        .unwrap();
    assert_eq!(mode(&tmp.path().join("suid")), 0o777 & !umask);
    assert_eq!(mode(&tmp.path().join("sticky")), 0o777 & !umask);
}

#[test]
fn same_permissions_keeps_special_bits_without_root() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = ExtractOptions {
        as_root: false,
        same_permissions: true,
        restore_owner: false,
        ..Default::default()
    };
    let mut x = Extractor::new(tmp.path(), opts).unwrap();
    let s = x
        .begin_file(&meta(b"suid", EntryKind::File, 0o6750))
        .unwrap()
        .unwrap();
    s.commit(0).unwrap();
    x.make_dir(&meta(b"sticky", EntryKind::Dir, 0o1777))
        .unwrap();
    x.finish().unwrap();
    assert_eq!(mode(&tmp.path().join("suid")), 0o6750);
    assert_eq!(mode(&tmp.path().join("sticky")), 0o1777);
}

#[test]
fn read_only_directory_is_filled_then_gets_its_mode_and_mtime() {
    let tmp = tempfile::tempdir().unwrap();
    let mut x = Extractor::new(tmp.path(), ExtractOptions::default()).unwrap();
    let mut d = meta(b"ro", EntryKind::Dir, 0o555);
    d.mtime = Timestamp {
        secs: 777,
        nanos: 7,
    };
    x.make_dir(&d).unwrap();
    let mut s = x
        .begin_file(&meta(b"ro/f", EntryKind::File, 0o444))
        .unwrap()
        .unwrap();
    s.write_at(0, b"content").unwrap();
    s.commit(7).unwrap();
    x.finish().unwrap();
    assert_eq!(mode(&tmp.path().join("ro")), 0o555);
    assert_eq!(
        mtime(&tmp.path().join("ro")),
        Timestamp {
            secs: 777,
            nanos: 7
        }
    );
    assert_eq!(mode(&tmp.path().join("ro/f")), 0o444);
    assert_eq!(std::fs::read(tmp.path().join("ro/f")).unwrap(), b"content");
}

#[test]
fn strip_components_drops_leading_names_and_skips_what_is_left_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = ExtractOptions {
        strip_components: 1,
        ..Default::default()
    };
    let mut x = Extractor::new(&tmp.path().join("made/by/new"), opts).unwrap();
    x.make_dir(&meta(b"top", EntryKind::Dir, 0o755)).unwrap();
    assert!(
        x.begin_file(&meta(b"top", EntryKind::File, 0o644))
            .unwrap()
            .is_none()
    );
    let s = x
        .begin_file(&meta(b"top/a/b", EntryKind::File, 0o644))
        .unwrap()
        .unwrap();
    s.commit(3).unwrap();
    x.finish().unwrap();
    let f = tmp.path().join("made/by/new/a/b");
    assert_eq!(std::fs::read(&f).unwrap(), vec![0u8; 3]);
    assert_eq!(std::fs::metadata(&f).unwrap().mode() & 0o777, 0o644);
    assert!(!tmp.path().join("made/by/new/top").exists());
}

#[test]
fn zero_blocks_written_become_holes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut x = Extractor::new(tmp.path(), ExtractOptions::default()).unwrap();
    let mut s = x
        .begin_file(&meta(b"z", EntryKind::File, 0o644))
        .unwrap()
        .unwrap();
    let mut data = vec![0u8; 1 << 20];
    data[100] = 1;
    data[(1 << 20) - 1] = 2;
    s.write_at(0, &data).unwrap();
    s.commit(1 << 20).unwrap();
    x.finish().unwrap();
    let p = tmp.path().join("z");
    assert_eq!(std::fs::read(&p).unwrap(), data);
    // Two 4 KiB blocks hold data; st_blocks counts 512-byte units.
    assert_eq!(lstat(&p).st_blocks, 16);
}

#[test]
fn sinks_and_extractor_can_move_to_worker_threads() {
    fn is_send<T: Send>() {}
    is_send::<krypta::fs::extract::FileSink>();
    is_send::<Extractor>();
    let tmp = tempfile::tempdir().unwrap();
    let mut x = Extractor::new(tmp.path(), ExtractOptions::default()).unwrap();
    let sinks: Vec<_> = (0..4u8)
        .map(|i| {
            (
                i,
                x.begin_file(&meta(&[b'f', b'0' + i], EntryKind::File, 0o600))
                    .unwrap()
                    .unwrap(),
            )
        })
        .collect();
    let handles: Vec<_> = sinks
        .into_iter()
        .map(|(i, mut s)| {
            std::thread::spawn(move || {
                s.write_at(0, &[i; 3]).unwrap();
                s.commit(3).unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    x.make_hardlink(&EntryMeta {
        link: b"f2".to_vec(),
        ..meta(b"h", EntryKind::Hardlink, 0)
    })
    .unwrap();
    x.finish().unwrap();
    assert_eq!(std::fs::read(tmp.path().join("f3")).unwrap(), vec![3u8; 3]);
    assert_eq!(std::fs::read(tmp.path().join("h")).unwrap(), vec![2u8; 3]);
}
