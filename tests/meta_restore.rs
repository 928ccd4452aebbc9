//! Restoring metadata through the library: a tree walked (`krypta::fs::walk`) and extracted
//! (`krypta::fs::extract::Extractor`) — the same code `krypta c` and `krypta x` run, minus the
//! archive bytes — comes back with the same `stat`, `getfattr`, `getfacl` and `getcap`, as
//! root and as `nobody` (this test binary re-run under `setpriv`). User xattrs with binary
//! values and long names, ACLs (access and default), a capability, owner names, a setuid
//! binary, a read-only directory with children, the mode and mtime of `.`. Plus the restore
//! order (capability after chown), names vs `--numeric-owner`, refusals as warnings, and the
//! root entry. The same round trips through the CLI are in `meta_roundtrip.rs`.

mod fs_common;
mod meta_common;

use std::path::{Path, PathBuf};

use fs_common::chmod;
use krypta::format::entry::{EntryKind, EntryMeta, Timestamp, Xattr};
use krypta::fs::extract::{ExtractOptions, Extractor};
use krypta::fs::source::FileSource;
use krypta::fs::walk::{WalkEvent, WalkOptions, walk};
use krypta::fs::xattr::XattrSelect;
use meta_common::*;

/// Walks `[src/.]` and extracts every entry into `out` (the root entry included): returns
/// (walk warnings, extraction warnings).
fn lib_roundtrip(src: &Path, out: &Path, opts: ExtractOptions) -> (Vec<String>, Vec<String>) {
    let mut entries = Vec::new();
    let mut walk_warnings = Vec::new();
    walk(&[src.join(".")], &WalkOptions::default(), &mut |ev| {
        match ev {
            WalkEvent::Entry(e) => entries.push(e),
            WalkEvent::Warning(w) | WalkEvent::Omitted(w) => walk_warnings.push(w),
            WalkEvent::Skipped(s) => walk_warnings.push(s.to_string()),
        }
        Ok(())
    })
    .unwrap();
    let mut x = Extractor::new(out, opts).unwrap();
    for e in &entries {
        match e.meta.kind {
            EntryKind::File => {
                let mut s = FileSource::open(&e.source, e.size).unwrap();
                let mut sink = x.begin_file(&e.meta).unwrap().unwrap();
                let mut buf = Vec::new();
                while let Some((off, len)) = s.next_extent(&mut buf, 1 << 20).unwrap() {
                    sink.write_at(off, &buf[..len]).unwrap();
                    buf.clear();
                }
                sink.commit(s.final_size()).unwrap();
            }
            EntryKind::Dir => x.make_dir(&e.meta).unwrap(),
            EntryKind::Symlink => x.make_symlink(&e.meta).unwrap(),
            EntryKind::Hardlink => x.make_hardlink(&e.meta).unwrap(),
        }
    }
    x.apply_dirs().unwrap();
    (walk_warnings, x.take_warnings())
}

#[test]
fn as_root_every_attribute_owner_mode_and_time_round_trips_exactly() {
    if !root_tools("as_root_every_attribute_round_trips") {
        return;
    }
    let tmp = xattr_tempdir();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    build_tree(&src, 65534);
    // Root-owned and unnamed owners too, and attributes only root can set, on a link.
    let mine = src.join("mine");
    std::fs::write(&mine, b"root's").unwrap();
    std::os::unix::fs::chown(&mine, Some(0), Some(0)).unwrap();
    let unnamed = src.join("unnamed");
    std::fs::write(&unnamed, b"?").unwrap();
    std::os::unix::fs::chown(&unnamed, Some(3_999_999_001), Some(3_999_999_002)).unwrap();
    set_xattr(&src.join("link"), "trusted.on-link", b"t");
    set_xattr(&src.join("f"), "trusted.on-file", b"t");
    set_xattr(&src.join("f"), "security.krypta-test", b"s");
    for p in [&mine, &unnamed] {
        set_mtime(p, 1_700_000_000, 0);
    }
    set_mtime(&src, -86_400, 5);
    let before = meta_snapshot(&src);
    assert!(before.contains("cap cap_net_raw=ep"), "{before}");
    assert!(before.contains("./suid regular file 4755 65534 65534 nobody nogroup"));
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let (ww, xw) = lib_roundtrip(&src, &out, ExtractOptions::default());
    assert!(ww.iter().all(|w| w.contains("removing leading")), "{ww:?}");
    assert_eq!(xw, Vec::<String>::new());
    assert_eq!(meta_snapshot(&out), before);
    // The default ACL of d was not inherited by d/g.
    assert_eq!(get_xattr(&out.join("d/g"), "system.posix_acl_access"), None);
}

#[test]
fn restore_by_name_when_it_exists_here_else_by_id_and_numeric_owner_uses_ids() {
    if !is_root() {
        eprintln!("SKIP restore_by_name: needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = |path: &str, uid: u32, user: Option<&str>| EntryMeta {
        path: path.as_bytes().to_vec(),
        kind: EntryKind::File,
        mode: 0o640,
        uid,
        gid: uid + 1,
        user: user.map(|u| u.as_bytes().to_vec()),
        group: user.map(|_| b"nogroup".to_vec()),
        ..EntryMeta::default()
    };
    // Made on a system where nobody had other ids; "ghost" exists nowhere.
    let entries = [
        file("by-name", 1234, Some("nobody")),
        file("by-id", 1234, Some("ghost-krypta-test")),
        file("no-name", 4321, None),
    ];
    let owners = |numeric: bool| {
        let out = tmp.path().join(format!("out-{numeric}"));
        let mut x = Extractor::new(
            &out,
            ExtractOptions {
                numeric_owner: numeric,
                ..ExtractOptions::default()
            },
        )
        .unwrap();
        for m in &entries {
            let sink = x.begin_file(m).unwrap().unwrap();
            sink.commit(0).unwrap();
        }
        x.apply_dirs().unwrap();
        assert!(x.take_warnings().is_empty());
        entries
            .iter()
            .map(|m| {
                let st = fs_common::lstat(&out.join(std::str::from_utf8(&m.path).unwrap()));
                (st.st_uid, st.st_gid)
            })
            .collect::<Vec<_>>()
    };
    // "ghost-krypta-test" is unknown, its group "nogroup" is known: each name on its own.
    assert_eq!(owners(false), [(65534, 65534), (1234, 65534), (4321, 4322)]);
    assert_eq!(owners(true), [(1234, 1235), (1234, 1235), (4321, 4322)]);
}

#[test]
fn a_capability_survives_the_chown_that_precedes_it_and_setuid_survives_both() {
    if !root_tools("a_capability_survives_the_chown") {
        return;
    }
    let tmp = xattr_tempdir();
    let src = tmp.path().join("bin");
    copy_binary(&src);
    sh("setcap", &["cap_net_raw+ep", src.to_str().unwrap()]);
    let cap = get_xattr(&src, "security.capability").unwrap();
    let meta = EntryMeta {
        path: b"ping".to_vec(),
        kind: EntryKind::File,
        mode: 0o6755,
        uid: 65534,
        gid: 65534,
        mtime: Timestamp {
            secs: 1_234_567_890,
            nanos: 1,
        },
        xattrs: vec![Xattr {
            name: b"security.capability".to_vec(),
            value: cap.clone(),
        }],
        ..EntryMeta::default()
    };
    let out = tmp.path().join("out");
    let mut x = Extractor::new(&out, ExtractOptions::default()).unwrap();
    let data = std::fs::read(&src).unwrap();
    let mut sink = x.begin_file(&meta).unwrap().unwrap();
    sink.write_at(0, &data).unwrap();
    sink.commit(data.len() as u64).unwrap();
    x.apply_dirs().unwrap();
    let p = out.join("ping");
    assert_eq!(get_xattr(&p, "security.capability"), Some(cap));
    assert_eq!(
        sh("getcap", &[p.to_str().unwrap()]).trim_end(),
        format!("{} cap_net_raw=ep", p.display())
    );
    assert_eq!(
        sh("stat", &["-c", "%a %u %g %.9Y", p.to_str().unwrap()]).trim_end(),
        "6755 65534 65534 1234567890.000000001"
    );
}

#[test]
fn attributes_the_kernel_refuses_are_warnings_naming_file_and_attribute() {
    let tmp = xattr_tempdir();
    let out = tmp.path().join("out");
    let meta = EntryMeta {
        path: b"f".to_vec(),
        kind: EntryKind::File,
        mode: 0o644,
        xattrs: vec![
            // No such namespace: the kernel answers EOPNOTSUPP, as, everywhere, a
            // filesystem without attributes does.
            Xattr {
                name: b"krypta.unknown-namespace".to_vec(),
                value: b"x".to_vec(),
            },
            Xattr {
                name: b"user.kept".to_vec(),
                value: b"y".to_vec(),
            },
        ],
        ..EntryMeta::default()
    };
    let mut x = Extractor::new(&out, ExtractOptions::default()).unwrap();
    let mut sink = x.begin_file(&meta).unwrap().unwrap();
    sink.write_at(0, b"content").unwrap();
    sink.commit(7).unwrap();
    x.apply_dirs().unwrap();
    let shown = krypta::fs::escape_path(&pb(&out.join("f")));
    assert_eq!(
        x.take_warnings(),
        vec![format!(
            "{shown}: cannot set extended attribute krypta.unknown-namespace: Operation not supported (os error 95)"
        )]
    );
    assert_eq!(std::fs::read(out.join("f")).unwrap(), b"content");
    assert_eq!(get_xattr(&out.join("f"), "user.kept"), Some(b"y".to_vec()));
}

#[test]
fn no_xattrs_and_no_acls_select_what_is_restored() {
    if !tools("no_xattrs_and_no_acls_select", &["setfacl"]) {
        return;
    }
    let tmp = xattr_tempdir();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let f = src.join("f");
    std::fs::write(&f, b"x").unwrap();
    chmod(&f, 0o644);
    set_xattr(&f, "user.a", b"1");
    sh("setfacl", &["-m", "u:nobody:r", f.to_str().unwrap()]);
    let run = |xattrs: bool, acls: bool| {
        let out = tmp.path().join(format!("out-{xattrs}-{acls}"));
        std::fs::create_dir(&out).unwrap();
        lib_roundtrip(
            &src,
            &out,
            ExtractOptions {
                xattrs: XattrSelect { xattrs, acls },
                ..ExtractOptions::default()
            },
        );
        let g = |n| get_xattr(&out.join("f"), n).is_some();
        (g("user.a"), g("system.posix_acl_access"))
    };
    assert_eq!(run(true, true), (true, true));
    assert_eq!(run(false, true), (false, true));
    assert_eq!(run(true, false), (true, false));
    assert_eq!(run(false, false), (false, false));
}

#[test]
fn the_root_entry_sets_the_output_directory_unless_components_are_stripped() {
    let tmp = xattr_tempdir();
    let root = EntryMeta {
        path: b".".to_vec(),
        kind: EntryKind::Dir,
        mode: 0o710,
        mtime: Timestamp {
            secs: -1,
            nanos: 999_999_999,
        },
        uid: rustix::process::geteuid().as_raw(),
        gid: rustix::process::getegid().as_raw(),
        xattrs: vec![Xattr {
            name: b"user.root".to_vec(),
            value: b"r".to_vec(),
        }],
        ..EntryMeta::default()
    };
    let child = EntryMeta {
        path: b"a/f".to_vec(),
        kind: EntryKind::File,
        mode: 0o600,
        ..root.clone()
    };
    let child = EntryMeta {
        xattrs: Vec::new(),
        ..child
    };
    for strip in [0, 1] {
        let out = tmp.path().join(format!("out{strip}"));
        let mut x = Extractor::new(
            &out,
            ExtractOptions {
                strip_components: strip,
                ..ExtractOptions::default()
            },
        )
        .unwrap();
        x.make_dir(&root).unwrap();
        x.begin_file(&child).unwrap().unwrap().commit(0).unwrap();
        x.finish().unwrap();
        let st = fs_common::lstat(&out);
        if strip == 0 {
            assert_eq!(st.st_mode & 0o7777, 0o710);
            assert_eq!((st.st_mtime, st.st_mtime_nsec), (-1, 999_999_999));
            assert_eq!(get_xattr(&out, "user.root"), Some(b"r".to_vec()));
            assert!(out.join("a/f").is_file());
        } else {
            assert_ne!(st.st_mode & 0o7777, 0o710);
            assert_eq!(get_xattr(&out, "user.root"), None);
            assert!(out.join("f").is_file());
        }
    }
}

/// The directory of the `nobody` round trips: `/tmp/…` made traversable, its parts owned by
/// nobody. Returns None (with a SKIP line) when the test binary cannot run as nobody.
fn nobody_dirs(test: &str) -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    if !root_tools(test) || !tools(test, &["setpriv"]) {
        return None;
    }
    let probe = tool("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(std::env::current_exe().unwrap())
        .arg("--list")
        .output()
        .unwrap();
    if !probe.status.success() {
        eprintln!(
            "SKIP {test}: user nobody cannot run {} (a directory on the way is not traversable)",
            std::env::current_exe().unwrap().display()
        );
        return None;
    }
    let tmp = xattr_tempdir();
    chmod(tmp.path(), 0o755);
    let (src, out) = (tmp.path().join("src"), tmp.path().join("out"));
    for d in [&src, &out] {
        std::fs::create_dir(d).unwrap();
        std::os::unix::fs::chown(d, Some(65534), Some(65534)).unwrap();
    }
    Some((tmp, src, out))
}

/// Runs [`nobody_side`] in this test binary as nobody; returns its extraction warnings.
fn as_nobody(src: &Path, out: &Path, same_owner: bool) -> Vec<String> {
    let o = tool("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "nobody_side",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("KRYPTA_NOBODY_SRC", src)
        .env("KRYPTA_NOBODY_OUT", out)
        .env(
            "KRYPTA_NOBODY_SAME_OWNER",
            if same_owner { "1" } else { "0" },
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && stdout.contains("1 passed"),
        "as nobody: {}\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
        .lines()
        // libtest prints the first line after "test nobody_side ... ".
        .filter_map(|l| {
            l.find("WARNING ")
                .map(|i| l[i + "WARNING ".len()..].to_string())
        })
        .collect()
}

/// Not a test on its own: the part of the `nobody` round trips that runs as nobody (started by
/// [`as_nobody`] with the directories in the environment).
#[test]
#[ignore = "run as nobody by the as_nobody_* tests"]
fn nobody_side() {
    let src = PathBuf::from(std::env::var_os("KRYPTA_NOBODY_SRC").expect("started by as_nobody"));
    let out = PathBuf::from(std::env::var_os("KRYPTA_NOBODY_OUT").unwrap());
    assert!(!is_root(), "must run as an ordinary user");
    let opts = ExtractOptions {
        same_permissions: true,
        restore_owner: std::env::var("KRYPTA_NOBODY_SAME_OWNER").as_deref() == Ok("1"),
        ..ExtractOptions::default()
    };
    assert!(!opts.as_root);
    let (_, warnings) = lib_roundtrip(&src, &out, opts);
    for w in warnings {
        println!("WARNING {w}");
    }
}

#[test]
fn as_nobody_user_xattrs_acls_setuid_read_only_dirs_and_the_root_round_trip_and_a_capability_is_a_warning()
 {
    let Some((_tmp, src, out)) = nobody_dirs("as_nobody_round_trip") else {
        return;
    };
    build_tree(&src, 65534);
    let before = meta_snapshot(&src);
    let warnings = as_nobody(&src, &out, false);
    let cap = krypta::fs::escape_path(&pb(&out.join("cap")));
    assert_eq!(
        warnings,
        vec![format!(
            "{cap}: cannot set extended attribute security.capability: Operation not permitted (os error 1)"
        )]
    );
    // Everything equal but the capability (getfattr's and getcap's lines), which an
    // ordinary user may not set.
    let getfattr_cap = "# file: ./cap\nsecurity.capability=0sAQAAAgAgAAAAAAAAAAAAAAAAAAA=\n\n";
    assert!(before.contains(getfattr_cap), "{before}");
    let want = before
        .replace("./cap cap_net_raw=ep\n", "")
        .replace(getfattr_cap, "");
    assert_eq!(
        want.len(),
        before.len() - getfattr_cap.len() - "./cap cap_net_raw=ep\n".len()
    );
    let after = meta_snapshot(&out);
    assert_eq!(after, want);
}

#[test]
fn as_nobody_owners_are_not_restored_unless_asked_and_then_a_warning() {
    let Some((_tmp, src, out)) = nobody_dirs("as_nobody_owners") else {
        return;
    };
    let f = src.join("roots");
    std::fs::write(&f, b"readable").unwrap();
    chmod(&f, 0o644);
    let warnings = as_nobody(&src, &out, false);
    assert!(warnings.is_empty(), "{warnings:?}");
    let st = fs_common::lstat(&out.join("roots"));
    assert_eq!((st.st_uid, st.st_gid), (65534, 65534));
    let out2 = out.join("again");
    std::fs::create_dir(&out2).unwrap();
    std::os::unix::fs::chown(&out2, Some(65534), Some(65534)).unwrap();
    let warnings = as_nobody(&src, &out2, true);
    let shown = krypta::fs::escape_path(&pb(&out2.join("roots")));
    assert_eq!(
        warnings,
        vec![format!(
            "{shown}: cannot set owner root:root (0:0): Operation not permitted (os error 1)"
        )]
    );
}
