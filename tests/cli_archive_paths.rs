//! ARCHIVE paths that are not regular files: a directory is refused by name (exit 1) before
//! anything is read.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// Regression (issue: `krypta x /tmp` said "recovery data: reading 80 bytes at offset
/// 9223372036854775727: Is a directory", exit 4): every command that reads ARCHIVE names the
/// directory and exits 1, as `repair -o DIR` does.
#[test]
fn a_directory_as_archive_is_refused_by_name_for_every_reading_command() {
    let fx = Fx::new();
    fx.mkdir("dir");
    fx.file("pw", b"new password\n");
    for args in [
        &["x", "-o", "out", "dir"][..],
        &["l", "dir"],
        &["t", "dir"],
        &["info", "dir"],
        &["repair", "--check", "dir"],
        &["rekey", "--new-pass-file", "pw", "-o", "new.kry", "dir"],
    ] {
        let o = fx.run(args);
        assert_eq!(code(&o), 1, "{args:?}: {}", err(&o));
        assert_eq!(
            err(&o),
            "krypta: dir: is a directory, not an archive\n",
            "{args:?}"
        );
    }
    assert!(!fx.exists("out") && !fx.exists("new.kry"));
}

/// The same for `--base`, which opens a second archive.
#[test]
fn a_directory_as_base_is_refused_by_name() {
    let fx = Fx::new();
    fx.file("in/f", b"hello\n");
    fx.mkdir("dir");
    let o = fx.run(&["c", "-q", "--base", "dir", "d.kry", "in"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("dir: is a directory, not an archive"),
        "{}",
        err(&o)
    );
}
