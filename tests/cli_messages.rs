//! Messages a user meets on ordinary mistakes name the file and the problem in plain words:
//! no Rust-internal text, no temporary names without the file they stand for, counts in
//! the singular for one.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// `x -o FILE` where FILE is a regular file. Regression: "FILE: create directory: File
/// exists (os error 17)".
#[test]
fn an_output_directory_that_is_a_file_is_named_as_such() {
    let fx = Fx::new();
    fx.file("t/a", b"alpha");
    fx.ok(&["c", "-q", "a.kry", "t"]);
    fx.file("out", b"not a directory");
    let o = fx.run(&["x", "-o", "out", "a.kry"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: out: the output directory is an existing file, not a directory\n".into()
        )
    );
    assert_eq!(fx.read("out"), b"not a directory");
}

/// `c` into a directory that does not exist. Regression: the OS error was followed by
/// tempfile's `at path "/abs/nodir/.krypta-tmp-…"` (Rust's debug quoting of a name the user
/// never gave).
#[test]
fn an_archive_in_a_missing_directory_is_named_with_the_os_error_alone() {
    let fx = Fx::new();
    fx.file("t/a", b"alpha");
    let o = fx.run(&["c", "-q", "nodir/x.kry", "t"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            4,
            "krypta: nodir/x.kry: create its temporary file (in the same directory): No such file or directory (os error 2)\n"
                .into()
        )
    );
}

/// An archive written inside the directory being archived: its temporary file is skipped,
/// and the warning says which archive it becomes. The summary says "1 entry".
#[test]
fn the_archive_being_written_is_skipped_and_named() {
    let fx = Fx::new();
    fx.file("t/a", b"alpha");
    let o = fx.run(&["c", "t/self.kry", "t"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let e = err(&o);
    let line = e
        .lines()
        .find(|l| l.contains("skipped"))
        .unwrap_or_else(|| panic!("{e}"));
    assert!(
        line.starts_with("krypta: warning: t/.krypta-tmp-"),
        "{line}"
    );
    assert!(
        line.ends_with(": skipped: it is the archive being written (to become t/self.kry)"),
        "{line}"
    );
    // t and t/a.
    assert!(e.contains("krypta: t/self.kry: 2 entries, "), "{e}");
    let l = fx.run(&["l", "t/self.kry"]);
    assert_eq!(code(&l), 0, "{}", err(&l));
    let x = fx.run(&["x", "-o", "o", "t/self.kry", "t/a"]);
    assert!(
        err(&x).starts_with("krypta: t/self.kry: 1 entry extracted, "),
        "{}",
        err(&x)
    );
}
