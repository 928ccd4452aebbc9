//! `x --stdout PATH` and the PATHs of `x` and `l`: which PATHs are in the archive does not
//! depend on whether they have content. A symbolic link or a directory without files named for
//! stdout was reported "not found in ARCHIVE" (exit 1), though `l` lists it (helper-41); a
//! PATH not found is named escaped.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// a.kry holding t/ = { f ("file"), l -> f, e/ (empty), only/ { s -> ../f } }.
fn archive(fx: &Fx) {
    fx.file("t/f", b"file");
    fx.mkdir("t/e");
    fx.mkdir("t/only");
    std::os::unix::fs::symlink("f", fx.p("t/l")).unwrap();
    std::os::unix::fs::symlink("../f", fx.p("t/only/s")).unwrap();
    fx.ok(&["c", "-q", "a.kry", "t"]);
}

#[test]
fn a_symlink_named_for_stdout_is_found_and_said_to_have_no_content_exit_6() {
    let fx = Fx::new();
    archive(&fx);
    let o = fx.run(&["x", "--stdout", "a.kry", "t/l"]);
    let e = err(&o);
    assert_eq!((code(&o), o.stdout.len()), (6, 0), "{e}");
    assert!(
        e.starts_with(
            "krypta: warning: t/l: not written: a symbolic link (to f) has no content for \
             --stdout (name its target)\nkrypta: a.kry: 0 entries extracted,"
        ),
        "{e}"
    );
    assert!(
        e.ends_with("krypta: extracted, but 1 entry could not be made (see warnings)\n"),
        "{e}"
    );
    // -q: only the error that ends the run, which does not point to the warning -q hid.
    let o = fx.run(&["x", "-q", "--stdout", "a.kry", "t/l"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            6,
            "krypta: extracted, but 1 entry could not be made (named in warnings that -q hid)\n"
                .to_string()
        )
    );
    // Read from a pipe (no index) and named by a pattern: the same.
    let o = fx.run_stdin(
        &["x", "--stdout", "-", "t/l"],
        &std::fs::read(fx.p("a.kry")).unwrap(),
    );
    assert_eq!((code(&o), o.stdout.len()), (6, 0), "{}", err(&o));
    assert!(
        err(&o).contains("t/l: not written: a symbolic link"),
        "{}",
        err(&o)
    );
    let o = fx.run(&["x", "--stdout", "--wildcards", "a.kry", "*/l"]);
    assert_eq!((code(&o), o.stdout.len()), (6, 0), "{}", err(&o));
    assert!(
        err(&o).contains("t/l: not written: a symbolic link"),
        "{}",
        err(&o)
    );
    // Named with its target, the target's content is written and the link is still said.
    let o = fx.run(&["x", "-q", "--stdout", "a.kry", "t/f", "t/l"]);
    assert_eq!((code(&o), o.stdout.as_slice()), (6, &b"file"[..]));
}

#[test]
fn a_directory_without_files_named_for_stdout_is_found_and_writes_nothing_exit_0() {
    let fx = Fx::new();
    archive(&fx);
    for path in ["t/e", "t/only", "t/e/"] {
        let o = fx.run(&["x", "-q", "--stdout", "a.kry", path]);
        assert_eq!(
            (code(&o), o.stdout.len(), err(&o)),
            (0, 0, String::new()),
            "{path}"
        );
    }
    // A directory's links below it are skipped quietly, as tar -O does; its files written.
    let o = fx.run(&["x", "-q", "--stdout", "a.kry", "t"]);
    assert_eq!(
        (code(&o), o.stdout.as_slice(), err(&o)),
        (0, &b"file"[..], String::new())
    );
    // What is really missing is still named.
    let o = fx.run(&["x", "-q", "--stdout", "a.kry", "t/nope"]);
    assert_eq!(
        (code(&o), err(&o)),
        (1, "krypta: not found in a.kry: t/nope\n".to_string())
    );
}

#[test]
fn a_path_not_found_is_named_escaped_as_listings_name_it() {
    // Regression: the name was printed lossily (invalid bytes as U+FFFD, so two different
    // names read the same) and raw (a newline in it forged a second line of the message).
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let fx = Fx::new();
    archive(&fx);
    let odd = OsStr::from_bytes(b"t/a\nb\xff\x1b[31m");
    for cmd in [
        &["x", "-q", "-o", "o"][..],
        &["x", "-q", "--stdout"],
        &["l"],
    ] {
        let o = krypta_in(&fx, cmd, odd);
        assert_eq!(
            (code(&o), err(&o)),
            (
                1,
                "krypta: not found in a.kry: t/a\\nb\\xff\\x1b[31m\n".to_string()
            ),
            "{cmd:?}"
        );
    }
}

/// krypta `cmd` a.kry `path` in the fixture's directory.
fn krypta_in(fx: &Fx, cmd: &[&str], path: &std::ffi::OsStr) -> std::process::Output {
    common::krypta()
        .current_dir(fx.p(""))
        .args(cmd)
        .arg("a.kry")
        .arg(path)
        .output()
        .unwrap()
}
