//! `krypta x` of an archive made from `.` (its root entry names the output directory itself)
//! into an output that is not empty, selecting `.`, and the summary's count of entries made.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// r.kry made from `t/.`: the root entry `.`, then d/, d/a, d/e/, d/e/b, hl, and one (a
/// hard link to hl, met first in the walk's order).
fn root_archive(fx: &Fx) {
    fx.file("t/one", b"1");
    fx.file("t/d/a", b"a");
    fx.file("t/d/e/b", b"b");
    std::fs::hard_link(fx.p("t/one"), fx.p("t/hl")).unwrap();
    fx.ok(&["c", "-q", "r.kry", "t/."]);
    assert_eq!(
        fx.names("r.kry"),
        [".", "d", "d/a", "d/e", "d/e/b", "hl", "one"]
    );
}

/// The "N entries extracted" ("1 entry extracted") count of a run's summary line.
fn extracted(e: &str) -> u64 {
    let line = e
        .lines()
        .find(|l| l.starts_with("krypta: r.kry: ") && l.contains(" extracted, "))
        .unwrap_or_else(|| panic!("no summary line: {e}"));
    let n = line["krypta: r.kry: ".len()..].split(' ').next().unwrap();
    n.parse().unwrap()
}

#[test]
fn the_root_entry_is_never_a_conflict_in_an_output_that_is_not_empty() {
    // Regression: any existing name in the output made the check before extraction look up
    // the root entry `.` as a name, and every policy ended with "unsafe entry path" (exit 3)
    // before anything was extracted.
    let fx = Fx::new();
    root_archive(&fx);
    let occupied = |o: &str| {
        fx.file(&format!("{o}/one"), b"old");
        fx.file(&format!("{o}/other"), b"not in the archive");
    };
    occupied("n");
    let o = fx.run(&["x", "r.kry", "-o", "n"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: n: 1 existing file(s) in the way: n/one (nothing was extracted; -k or \
             --skip-existing keeps existing files, -f replaces them)\n"
                .to_string()
        )
    );
    assert!(!fx.exists("n/d"));
    for (flag, exit, one) in [
        ("-k", 6, b"old".as_slice()),
        ("--skip-existing", 0, b"old"),
        ("-f", 0, b"1"),
    ] {
        let dir = format!("o{flag}");
        occupied(&dir);
        let o = fx.run(&["x", flag, "r.kry", "-o", &dir]);
        assert_eq!(code(&o), exit, "{flag}: {}", err(&o));
        assert!(!err(&o).contains("unsafe"), "{flag}: {}", err(&o));
        assert_eq!(fx.read(&format!("{dir}/one")), one, "{flag}");
        assert_eq!(fx.read(&format!("{dir}/d/e/b")), b"b", "{flag}");
        assert_eq!(fx.read(&format!("{dir}/other")), b"not in the archive");
    }
}

#[test]
fn selecting_the_root_selects_every_entry_as_tar_does() {
    // Regression: `x r.kry .` matched only the root entry and extracted no file, exit 0.
    let fx = Fx::new();
    root_archive(&fx);
    for (sel, dir) in [(".", "a"), ("./", "b")] {
        let o = fx.run(&["x", "r.kry", "-o", dir, sel]);
        assert_eq!(code(&o), 0, "{}", err(&o));
        assert_eq!(extracted(&err(&o)), 7, "{sel}");
        common::assert_same_tree(&fx.p("t"), &fx.p(dir));
    }
    let o = fx.ok(&["x", "--stdout", "r.kry", "."]);
    assert_eq!(o.stdout, b"ab1");
    let o = fx.ok(&["l", "r.kry", "."]);
    assert_eq!(out(&o).lines().count(), 7);
    // With --wildcards too (it selected the root entry alone); a pattern that merely
    // matches the name `.` (`.*`: hidden names) does not stand for the root.
    let o = fx.run(&["x", "--wildcards", "r.kry", "-o", "w", "."]);
    assert_eq!((code(&o), extracted(&err(&o))), (0, 7), "{}", err(&o));
    common::assert_same_tree(&fx.p("t"), &fx.p("w"));
    let names = |args: &[&str]| -> Vec<String> {
        let o = fx.ok(&[&["l"][..], args].concat());
        out(&o)
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&["--wildcards", "r.kry", "./"]).len(), 7);
    assert_eq!(names(&["--wildcards", "r.kry", ".*"]), ["."]);
    assert_eq!(names(&["--wildcards", "r.kry", "d/e"]), ["d/e", "d/e/b"]);
}

#[test]
fn the_summary_counts_the_entries_made_not_the_entries_visited() {
    // Regression: entries below a kept file (where a directory goes), entries that
    // --strip-components removed and hard links skipped were counted as extracted.
    let fx = Fx::new();
    root_archive(&fx);
    let o = fx.run(&["x", "r.kry", "-o", "all"]);
    assert_eq!((code(&o), extracted(&err(&o))), (0, 7));
    // o/d is a file: d, d/a, d/e, d/e/b are not made; ., hl, one are.
    // The output directories k and s existed, so -k and --skip-existing leave their metadata:
    // the root entry `.` is not made either (it was counted when its metadata was applied).
    fx.file("k/d", b"a file where a directory goes");
    let o = fx.run(&["x", "-k", "r.kry", "-o", "k"]);
    assert_eq!((code(&o), extracted(&err(&o))), (6, 2), "{}", err(&o));
    fx.file("s/d", b"a file where a directory goes");
    let o = fx.run(&["x", "--skip-existing", "r.kry", "-o", "s"]);
    assert_eq!((code(&o), extracted(&err(&o))), (6, 2), "{}", err(&o));
    // Stripping one component leaves a, e, e/b.
    let o = fx.run(&["x", "--strip-components", "1", "r.kry", "-o", "st"]);
    assert_eq!((code(&o), extracted(&err(&o))), (0, 3), "{}", err(&o));
    // A hard link selected without its target is skipped, not made.
    let o = fx.run(&["x", "r.kry", "-o", "h", "one"]);
    assert_eq!((code(&o), extracted(&err(&o))), (6, 0), "{}", err(&o));
    // An existing file at the target's name kept with -k, and the hard link to it not
    // made, nor the root entry of the existing kl: 4 of 7.
    fx.file("kl/hl", b"old");
    let o = fx.run(&["x", "-k", "r.kry", "-o", "kl"]);
    assert_eq!((code(&o), extracted(&err(&o))), (6, 4), "{}", err(&o));
    assert!(!fx.exists("kl/one"));
}

/// Mode (permission bits) and mtime (seconds) of `p`, not following a link.
fn mode_mtime(p: &std::path::Path) -> (u32, i64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(p).unwrap();
    (m.mode() & 0o7777, m.mtime())
}

/// Sets `p`'s permission bits and mtime (seconds).
fn set_mode_mtime(p: &std::path::Path, mode: u32, mtime: i64) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    filetime::set_symlink_file_times(
        p,
        filetime::FileTime::from_unix_time(mtime, 0),
        filetime::FileTime::from_unix_time(mtime, 0),
    )
    .unwrap();
}

/// A directory that `kept` its mode `mode` and was not given the stored mtime (the kernel
/// set it when the run added entries to it), or got `stored` (mode, mtime).
fn assert_kept_or_restored(
    p: &std::path::Path,
    kept: bool,
    stored: (u32, i64),
    mode: u32,
    what: &str,
) {
    let (m, t) = mode_mtime(p);
    if kept {
        assert_eq!(m, mode, "{what}: mode {m:o}");
        assert_ne!(t, stored.1, "{what}: the stored mtime was applied");
    } else {
        assert_eq!((m, t), stored, "{what}");
    }
}

#[test]
fn keep_and_skip_existing_leave_the_metadata_of_existing_directories_alone() {
    // Regression: -k and --skip-existing ("keep what is there") gave a directory that
    // existed before the run the archive's mode, mtime and owner (GNU tar -k leaves it).
    // Directories the run creates still get the archive's; the default and -f apply it to
    // existing directories too (tar's --overwrite-dir).
    let fx = Fx::new();
    fx.file("sd/etc/f", b"f");
    fx.file("sd/new/g", b"g");
    for d in ["sd/etc", "sd/new", "sd"] {
        set_mode_mtime(&fx.p(d), 0o700, 1_000_000_000);
    }
    fx.ok(&["c", "-q", "sd.kry", "sd"]);
    let stored = (0o700, 1_000_000_000);
    let theirs = (0o755, 1_500_000_000);
    let as_root = rustix::process::geteuid().is_root();
    for (flag, kept) in [
        ("-k", true),
        ("--skip-existing", true),
        ("-f", false),
        ("", false),
    ] {
        let o = format!("o{flag}");
        fx.file(&format!("{o}/sd/etc/mine"), b"mine");
        for d in ["sd/etc", "sd"] {
            let p = fx.p(&format!("{o}/{d}"));
            set_mode_mtime(&p, theirs.0, theirs.1);
            if as_root {
                std::os::unix::fs::lchown(&p, Some(65534), Some(65534)).unwrap();
            }
        }
        let args: Vec<&str> = ["x", flag, "-o", &o, "sd.kry"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let out = fx.run(&args);
        assert_eq!(code(&out), 0, "{flag}: {}", err(&out));
        for d in ["sd/etc", "sd"] {
            let p = fx.p(&format!("{o}/{d}"));
            assert_kept_or_restored(&p, kept, stored, theirs.0, &format!("{flag} {d}"));
            if as_root {
                use std::os::unix::fs::MetadataExt;
                let uid = std::fs::symlink_metadata(&p).unwrap().uid();
                assert_eq!(uid == 65534, kept, "{flag} {d}: uid {uid}");
            }
        }
        // Made by this run: the archive's metadata under every policy.
        assert_eq!(mode_mtime(&fx.p(&format!("{o}/sd/new"))), stored, "{flag}");
        assert_eq!(fx.read(&format!("{o}/sd/etc/f")), b"f");
        assert_eq!(fx.read(&format!("{o}/sd/etc/mine")), b"mine");
    }
}

#[test]
fn keep_and_skip_existing_leave_an_existing_output_directory_alone() {
    // Regression: the root entry `.` of an archive made from `t/.` chmodded (and as root
    // chowned) an output directory that existed before `x -k`/`--skip-existing`. Created by
    // the run, it gets the stored metadata; the default applies it to an existing one.
    let fx = Fx::new();
    fx.file("t/a", b"a");
    set_mode_mtime(&fx.p("t"), 0o750, 1_000_000_000);
    fx.ok(&["c", "-q", "r.kry", "t/."]);
    let stored = (0o750, 1_000_000_000);
    let theirs = (0o755, 1_500_000_000);
    for (flag, kept) in [("-k", true), ("--skip-existing", true), ("-f", false)] {
        let o = format!("o{flag}");
        set_mode_mtime(&fx.mkdir(&o), theirs.0, theirs.1);
        let out = fx.run(&["x", flag, "-o", &o, "r.kry"]);
        assert_eq!(code(&out), 0, "{flag}: {}", err(&out));
        assert_eq!(fx.read(&format!("{o}/a")), b"a");
        assert_kept_or_restored(&fx.p(&o), kept, stored, theirs.0, flag);
        // Not made: the summary does not count it.
        assert_eq!(extracted(&err(&out)), if kept { 1 } else { 2 }, "{flag}");
        let fresh = format!("n{flag}");
        fx.ok(&["x", flag, "-o", &fresh, "r.kry"]);
        assert_eq!(mode_mtime(&fx.p(&fresh)), stored, "{flag} new");
    }
}
