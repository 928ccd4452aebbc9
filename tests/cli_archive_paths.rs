//! ARCHIVE paths that are not regular files: a named pipe, or a pipe reached through a path
//! (`<(cat a.kry)`, `/dev/stdin`), is read front to back as `-` is; commands that must seek
//! refuse one by name (exit 1); a directory is refused by name (exit 1) before anything is
//! read.

mod cli_common;
mod common;

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::Output;

use cli_common::*;
use common::code;

/// A named pipe `rel` in the fixture, fed with `bytes` while krypta runs `args`.
fn through_fifo(fx: &Fx, rel: &str, bytes: Vec<u8>, args: &[&str]) -> Output {
    let fifo: PathBuf = fx.p(rel);
    let _ = std::fs::remove_file(&fifo);
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let path = fifo.clone();
    // Opening a FIFO to write blocks until a reader opens it; an error on krypta's side is
    // the test's to report, so a broken pipe here is not.
    let writer = std::thread::spawn(move || {
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
            let _ = f.write_all(&bytes);
        }
    });
    let o = fx.run(args);
    // A krypta that never opened the pipe leaves the writer waiting: a reader that comes and
    // goes releases it.
    drop(
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nonblock())
            .open(&fifo),
    );
    writer.join().unwrap();
    o
}

/// `O_NONBLOCK`: opening a FIFO to read then returns at once, writer or not.
fn nonblock() -> i32 {
    rustix::fs::OFlags::NONBLOCK.bits() as i32
}

/// A fixture with `a.kry` holding `in/f` ("hello\n").
fn with_archive(extra: &[&str]) -> Fx {
    let fx = Fx::new();
    fx.file("in/f", b"hello\n");
    let mut args = vec!["c", "-q"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["a.kry", "in"]);
    fx.ok(&args);
    fx
}

fn archive_bytes(fx: &Fx) -> Vec<u8> {
    fx.read("a.kry")
}

/// Regression (issue: `krypta x -o out ff` with `ff` a named pipe said "ff: seek: Illegal
/// seek (os error 29)", exit 4): a pipe named by a path reads like `-`, and messages name
/// the path as given.
#[test]
fn a_named_pipe_as_archive_is_read_as_a_stream_by_x_l_t_and_info() {
    let fx = with_archive(&[]);
    let a = archive_bytes(&fx);
    let o = through_fifo(&fx, "ff", a.clone(), &["x", "-o", "out", "ff"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.read("out/in/f"), b"hello\n");
    assert!(
        err(&o).starts_with("krypta: ff: 2 entries extracted"),
        "{}",
        err(&o)
    );
    let o = through_fifo(&fx, "ff", a.clone(), &["l", "ff"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(out(&o).lines().any(|l| l.ends_with(" in/f")), "{}", out(&o));
    let o = through_fifo(&fx, "ff", a.clone(), &["t", "ff"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(
        err(&o).starts_with("krypta: ff: OK (2 entries, 1 file, 6 bytes"),
        "{}",
        err(&o)
    );
    let o = through_fifo(&fx, "ff", a, &["info", "ff"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(out(&o).contains("format version: 2"), "{}", out(&o));
}

/// The pipe of `<(cat a.kry)` is reached through a path to a descriptor, as `/dev/stdin`
/// reaches krypta's own stdin here.
#[test]
fn a_pipe_reached_through_dev_stdin_is_read_as_a_stream() {
    let fx = with_archive(&[]);
    let a = archive_bytes(&fx);
    let o = fx.run_stdin(&["x", "-o", "out", "/dev/stdin"], &a);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.read("out/in/f"), b"hello\n");
    let o = fx.run_stdin(&["t", "/dev/stdin"], &a);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(err(&o).starts_with("krypta: /dev/stdin: OK"), "{}", err(&o));
}

/// `x --signer` from a named pipe is spooled and verified before anything is written, as
/// from `-`.
#[test]
fn a_signed_archive_from_a_named_pipe_is_verified_with_signer() {
    let fx = Fx::new();
    fx.ok(&["keygen", "-q", "--sign", "-o", "me"]);
    fx.file("in/f", b"hello\n");
    fx.ok(&["c", "-q", "--sign", "me", "a.kry", "in"]);
    let a = archive_bytes(&fx);
    let o = through_fifo(
        &fx,
        "ff",
        a,
        &["x", "-q", "--signer", "me.pub", "-o", "out", "ff"],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.read("out/in/f"), b"hello\n");
}

fn assert_not_seekable(o: &Output, path: &str, kind: &str, needs: &str) {
    assert_eq!(code(o), 1, "{}", err(o));
    assert_eq!(
        err(o),
        format!("krypta: {path}: not seekable ({kind}): {needs}\n")
    );
}

const REPAIR_NEEDS: &str = "repair reads the archive twice; give it as a file or an s3:// object";
const BASE_NEEDS: &str =
    "a delta base is read at the offsets of its frames; give it as a file or an s3:// object";

/// Commands that must seek name the stream and what to give instead, exit 1, and write
/// nothing: `repair` (and `--check`) of a pipe or `-`.
#[test]
fn repair_of_a_pipe_or_stdin_is_refused_as_not_seekable() {
    let fx = with_archive(&["--recovery", "5"]);
    let a = archive_bytes(&fx);
    let o = through_fifo(&fx, "ff", a.clone(), &["repair", "--check", "ff"]);
    assert_not_seekable(&o, "ff", "a pipe", REPAIR_NEEDS);
    let o = through_fifo(&fx, "ff", a.clone(), &["repair", "-o", "r.kry", "ff"]);
    assert_not_seekable(&o, "ff", "a pipe", REPAIR_NEEDS);
    assert!(!fx.exists("r.kry"));
    let o = fx.run_stdin(&["repair", "--check", "-"], &a);
    assert_not_seekable(&o, "-", "stdin", REPAIR_NEEDS);
}

/// A delta base from a pipe: refused for `c --base` and `t`/`x --base`, before the base's
/// key is tried.
#[test]
fn a_delta_base_from_a_pipe_is_refused_as_not_seekable() {
    let fx = with_archive(&[]);
    let a = archive_bytes(&fx);
    fx.ok(&["c", "-q", "--base", "a.kry", "d.kry", "in"]);
    let o = through_fifo(
        &fx,
        "bp",
        a.clone(),
        &["c", "-q", "--base", "bp", "e.kry", "in"],
    );
    assert_not_seekable(&o, "bp", "a pipe", BASE_NEEDS);
    assert!(!fx.exists("e.kry"));
    let o = through_fifo(&fx, "bp", a.clone(), &["t", "--base", "bp", "d.kry"]);
    assert_not_seekable(&o, "bp", "a pipe", BASE_NEEDS);
    let o = through_fifo(&fx, "bp", a, &["x", "--base", "bp", "-o", "out", "d.kry"]);
    assert_not_seekable(&o, "bp", "a pipe", BASE_NEEDS);
    assert!(!fx.exists("out"));
}

/// What the path is in the message: a character device is a stream too.
#[test]
fn a_character_device_as_archive_is_a_stream() {
    let fx = Fx::new();
    let o = fx.run(&["l", "/dev/zero"]);
    assert_eq!(code(&o), 3, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: /dev/zero: not a krypta archive (no krypta magic at the start)\n"
    );
    let o = fx.run(&["repair", "--check", "/dev/zero"]);
    assert_not_seekable(&o, "/dev/zero", "a character device", REPAIR_NEEDS);
}

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
