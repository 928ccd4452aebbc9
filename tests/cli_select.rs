//! Issue 14, "Choosing what goes in", through the binary: `--exclude` (unanchored, anchored,
//! directory-only, `!` re-include), `--exclude-from`, `--files-from` (newline and `--null`,
//! from a file and from stdin), `--exclude-caches`, `--one-file-system`, skipped inputs (exit
//! 6, `--strict`), and an output that is also an input.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// t/ with sources, objects, a build directory, logs and a nested `build` below `src`.
fn tree(fx: &Fx) {
    fx.file("t/src/a.c", b"a");
    fx.file("t/src/a.o", b"o");
    fx.file("t/src/build/gen.c", b"g");
    fx.file("t/build/out.bin", b"b");
    fx.file("t/keep.log", b"k");
    fx.file("t/drop.log", b"d");
    fx.file("t/build.txt", b"not a directory named build");
}

#[test]
fn exclude_patterns_match_at_any_depth_unless_anchored_and_slash_means_directories() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&[
        "c",
        "a.kry",
        "t",
        "--exclude",
        "*.o",
        "--exclude",
        "build/",
        "--exclude",
        "*.log",
        "--exclude",
        "!keep.log",
    ]);
    assert_eq!(
        fx.names("a.kry"),
        ["t", "t/build.txt", "t/keep.log", "t/src", "t/src/a.c"]
    );
    // Anchored: only the top-level t/build goes, src/build stays; a trailing-slash pattern
    // never matches the file build.txt, and `build` without slash matches files named build.
    fx.ok(&["c", "b.kry", "t", "--exclude", "/t/build"]);
    assert_eq!(
        fx.names("b.kry"),
        [
            "t",
            "t/build.txt",
            "t/drop.log",
            "t/keep.log",
            "t/src",
            "t/src/a.c",
            "t/src/a.o",
            "t/src/build",
            "t/src/build/gen.c"
        ]
    );
}

#[test]
fn an_input_below_an_excluded_directory_is_left_out_too() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&[
        "c",
        "a.kry",
        "t/src/build/gen.c",
        "t/src/a.c",
        "--exclude",
        "build/",
    ]);
    assert_eq!(fx.names("a.kry"), ["t/src/a.c"]);
}

#[test]
fn exclude_from_reads_one_pattern_per_line_with_comments_and_blank_lines() {
    let fx = Fx::new();
    tree(&fx);
    fx.file(
        "ex.txt",
        b"# objects and logs\n*.o\n\n*.log   \r\n!keep.log\n",
    );
    fx.ok(&[
        "c",
        "a.kry",
        "t",
        "--exclude-from",
        "ex.txt",
        "--exclude",
        "build/",
    ]);
    assert_eq!(
        fx.names("a.kry"),
        ["t", "t/build.txt", "t/keep.log", "t/src", "t/src/a.c"]
    );
    // A bad pattern names the file and the line; nothing is written.
    fx.file("bad.txt", b"ok\n\n[oops\n");
    let o = fx.run(&["c", "x.kry", "t", "--exclude-from", "bad.txt"]);
    assert_eq!(code(&o), 1);
    assert!(
        err(&o).starts_with("krypta: bad.txt:3: bad pattern '[oops': "),
        "{}",
        err(&o)
    );
    assert!(!fx.exists("x.kry"));
    let o = fx.run(&["c", "x.kry", "t", "--exclude-from", "missing.txt"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(err(&o).contains("missing.txt"), "{}", err(&o));
}

#[test]
fn files_from_reads_names_by_line_or_nul_from_a_file_or_stdin() {
    let fx = Fx::new();
    tree(&fx);
    fx.file("list.txt", b"t/src/a.c\n\nt/keep.log\n");
    fx.ok(&["c", "a.kry", "--files-from", "list.txt"]);
    assert_eq!(fx.names("a.kry"), ["t/src/a.c", "t/keep.log"]);
    // find -print0 style: every directory and then everything in it; each name stored once.
    let o = fx.run_stdin(
        &["c", "b.kry", "--files-from", "-", "--null"],
        b"t/src\0t/src/a.c\0t/src/a.o\0t/drop.log\0",
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(
        fx.names("b.kry"),
        [
            "t/src",
            "t/src/a.c",
            "t/src/a.o",
            "t/src/build",
            "t/src/build/gen.c",
            "t/drop.log"
        ]
    );
    // A name holding a newline survives --null.
    fx.file("t/new\nline", b"n");
    let o = fx.run_stdin(
        &["c", "c.kry", "--files-from", "-", "--null"],
        b"t/new\nline\0",
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.names("c.kry"), ["t/new\nline"]);
    fx.file("empty.txt", b"\n\n");
    let o = fx.run(&["c", "d.kry", "--files-from", "empty.txt"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: empty.txt: names no input (one name per line)\n".to_string()
        )
    );
}

#[test]
fn exclude_caches_keeps_only_the_tag_of_a_tagged_directory() {
    let fx = Fx::new();
    let sig = b"Signature: 8a477f597d28d172789f06886806bc55\n# a cache\n";
    fx.file("t/target/CACHEDIR.TAG", sig);
    fx.file("t/target/debug/big.rlib", b"rlib");
    fx.file("t/fake/CACHEDIR.TAG", b"Signature: not the right one\n");
    fx.file("t/fake/data", b"d");
    fx.file("t/src/main.rs", b"fn main() {}");
    fx.ok(&["c", "a.kry", "t", "--exclude-caches"]);
    assert_eq!(
        fx.names("a.kry"),
        [
            "t",
            "t/fake",
            "t/fake/CACHEDIR.TAG",
            "t/fake/data",
            "t/src",
            "t/src/main.rs",
            "t/target",
            "t/target/CACHEDIR.TAG"
        ]
    );
    fx.ok(&["c", "b.kry", "t"]);
    assert_eq!(fx.names("b.kry").len(), 10);
}

/// Needs /dev/shm to be a mount point below /dev (it is in most containers and systems) and
/// writable; skipped, with a note, otherwise. A directory made in /dev/shm shows the walk
/// descends there without `--one-file-system` and not with it.
#[test]
fn one_file_system_stores_mount_points_empty_and_does_not_descend() {
    use std::os::unix::fs::MetadataExt;
    let (Ok(dev), Ok(shm)) = (
        std::path::Path::new("/dev").metadata(),
        std::path::Path::new("/dev/shm").symlink_metadata(),
    ) else {
        eprintln!("note: no /dev/shm; skipped");
        return;
    };
    if !shm.is_dir() || shm.dev() == dev.dev() {
        eprintln!("note: /dev/shm is not a mount point; skipped");
        return;
    }
    let Ok(mine) = tempfile::tempdir_in("/dev/shm") else {
        eprintln!("note: /dev/shm is not writable; skipped");
        return;
    };
    std::fs::write(mine.path().join("f"), b"x").unwrap();
    let mine_name = format!(
        "dev/shm/{}",
        mine.path().file_name().unwrap().to_str().unwrap()
    );
    let fx = Fx::new();
    let o = fx.run(&["c", "-q", "--one-file-system", "a.kry", "/dev"]);
    assert!(matches!(code(&o), 0 | 6), "{}", err(&o));
    let names = fx.names("a.kry");
    assert!(names.contains(&"dev/shm".to_string()), "{names:?}");
    assert_eq!(
        names.iter().filter(|n| n.starts_with("dev/shm/")).count(),
        0,
        "{names:?}"
    );
    let o = fx.run(&["c", "-q", "b.kry", "/dev"]);
    assert!(matches!(code(&o), 0 | 6), "{}", err(&o));
    let names = fx.names("b.kry");
    assert!(names.contains(&format!("{mine_name}/f")), "{names:?}");
}

#[test]
fn a_missing_input_is_skipped_and_named_the_archive_written_and_the_exit_code_is_6() {
    let fx = Fx::new();
    tree(&fx);
    let o = fx.run(&["c", "a.kry", "t/src", "nope", "t/keep.log"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    let e = err(&o);
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 3, "{e}");
    assert_eq!(
        lines[0],
        "krypta: warning: nope: cannot stat (No such file or directory (os error 2)); skipped"
    );
    assert!(lines[1].starts_with("krypta: a.kry: 6 entries, "), "{e}");
    assert_eq!(
        lines[2],
        "krypta: archive written, but 1 input(s) could not be read: skipped, or (a directory) stored without its contents (see warnings)"
    );
    assert_eq!(
        fx.names("a.kry"),
        [
            "t/src",
            "t/src/a.c",
            "t/src/a.o",
            "t/src/build",
            "t/src/build/gen.c",
            "t/keep.log"
        ]
    );
    fx.ok(&["t", "-q", "a.kry"]);
}

#[test]
fn strict_aborts_on_a_missing_input_and_writes_nothing() {
    let fx = Fx::new();
    tree(&fx);
    let o = fx.run(&["c", "--strict", "a.kry", "t", "nope"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            4,
            "krypta: nope: stat: No such file or directory (os error 2)\n".to_string()
        )
    );
    assert_eq!(
        std::fs::read_dir(fx.dir.path()).unwrap().count(),
        1,
        "only t/ is left: no archive, no temporary file"
    );
}

#[test]
fn an_output_that_is_also_an_input_is_refused_even_with_force() {
    let fx = Fx::new();
    tree(&fx);
    let before = fx.read("t/keep.log");
    for args in [
        &["c", "-f", "t/keep.log", "t"][..],
        &["c", "-f", "t/keep.log", "t/keep.log"],
        &["c", "-f", "t/keep.log", "t/src", "t/keep.log"],
    ] {
        let o = fx.run(args);
        assert_eq!(
            (code(&o), err(&o)),
            (
                1,
                "krypta: t/keep.log: the output is also an input: replacing it would destroy it \
                 (nothing was written; write the archive elsewhere or exclude it)\n"
                    .to_string()
            ),
            "{args:?}"
        );
        assert_eq!(fx.read("t/keep.log"), before, "{args:?}");
    }
    let leftovers: Vec<_> = walkdir::WalkDir::new(fx.p("t"))
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".krypta-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Excluded, it is no input: -f replaces it.
    fx.ok(&[
        "c",
        "-q",
        "-f",
        "t/keep.log",
        "t",
        "--exclude",
        "/t/keep.log",
    ]);
    assert!(!fx.names("t/keep.log").contains(&"t/keep.log".to_string()));
}

#[test]
fn a_non_utf8_exclude_pattern_is_named_and_a_wildcard_matches_such_a_name() {
    // Regression: clap refused it with "invalid UTF-8 was detected in one or more
    // arguments", naming no option (--exclude-from said "a pattern must be UTF-8").
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let fx = Fx::new();
    fx.file("n/keep", b"k");
    fx.file("n/a\u{1}b", b"placeholder");
    let odd = OsStr::from_bytes(b"a\xffb");
    std::fs::write(fx.p("n").join(odd), b"not UTF-8").unwrap();
    let run = |pattern: &OsStr| {
        std::process::Command::new(env!("CARGO_BIN_EXE_krypta"))
            .current_dir(fx.p(""))
            .args([OsStr::new("c"), OsStr::new("-q"), OsStr::new("-f")])
            .args([OsStr::new("--exclude"), pattern])
            .args([OsStr::new("n.kry"), OsStr::new("n")])
            .output()
            .unwrap()
    };
    let o = run(odd);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: --exclude a\\xffb: a pattern must be UTF-8 (names are matched as bytes; for others use a wildcard, e.g. ?)\n"
    );
    assert!(!fx.exists("n.kry"));
    // `?` matches one byte, UTF-8 or not: both a?b names are left out.
    let o = run(OsStr::new("a?b"));
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.names("n.kry"), ["n", "n/keep"]);
}
