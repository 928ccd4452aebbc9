//! krypta started with a standard stream closed (`>&-`, `<&-`, `2>&-`), through a real shell.
//!
//! Regression (h61): Rust's runtime reopens a closed descriptor 0, 1 or 2 on `/dev/null`
//! before `main`, so `krypta c - dir >&-` wrote the archive into nothing and exited 0 (a
//! nightly job lost its backup), `c OUT - <&-` archived an empty "stdin", `x --stdout >&-`
//! and `keygen` printed into nothing. A stream that carries the archive, the data or a key
//! and was closed is refused before anything is read or written ("standard output is
//! closed", exit 4); one written to later (a listing) fails as a write; a closed stderr
//! changes nothing but the messages.

mod cli_common;
mod common;

use std::process::{Command, Output, Stdio};

use cli_common::*;
use common::code;

/// krypta `args` in the fixture's directory, started by `sh` with `redirect` (`>&-`, `<&-`,
/// `2>&-`) applied to it; stdin empty otherwise.
fn closed(fx: &Fx, redirect: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .current_dir(fx.p(""))
        .arg("-c")
        .arg(format!("exec \"$0\" \"$@\" {redirect}"))
        .arg(env!("CARGO_BIN_EXE_krypta"))
        .args(args)
        .env_remove("KRYPTA_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .expect("run sh")
}

const STDOUT_CLOSED: &str =
    "krypta: standard output is closed (descriptor 1 was closed when krypta started)";
const STDIN_CLOSED: &str =
    "krypta: standard input is closed (descriptor 0 was closed when krypta started)";

fn tree() -> Fx {
    let fx = Fx::new();
    fx.file("in/a", b"alpha\n");
    fx.file("in/b", b"bravo\n");
    fx
}

#[test]
fn an_archive_for_a_closed_stdout_is_refused_exit_4() {
    let fx = tree();
    let o = closed(&fx, ">&-", &["c", "-", "in"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert_eq!(
        err(&o),
        format!("{STDOUT_CLOSED}: the archive was not written\n")
    );
    // So is its other name, which would open the /dev/null standing in for it.
    let o = closed(&fx, ">&-", &["c", "/dev/stdout", "in"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert_eq!(
        err(&o),
        format!("{STDOUT_CLOSED}: the archive was not written\n")
    );
    // rekey -o - the same (the archive read is a file).
    fx.ok(&["c", "a.kry", "in"]);
    fx.file("pw", b"pw\n");
    let o = closed(
        &fx,
        ">&-",
        &["rekey", "a.kry", "-o", "-", "--new-pass-file", "pw"],
    );
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(err(&o).starts_with(STDOUT_CLOSED), "{}", err(&o));
}

#[test]
fn stdin_closed_as_an_input_or_the_list_of_inputs_is_refused_and_nothing_is_written() {
    let fx = tree();
    for args in [
        &["c", "o.kry", "-"][..],
        &["c", "o.kry", "in", "/dev/stdin"],
        &["c", "o.kry", "--files-from", "-"],
    ] {
        let o = closed(&fx, "<&-", args);
        assert_eq!(code(&o), 4, "{args:?}: {}", err(&o));
        assert!(err(&o).starts_with(STDIN_CLOSED), "{args:?}: {}", err(&o));
        assert!(!fx.exists("o.kry"), "{args:?}");
    }
    assert_eq!(
        err(&closed(&fx, "<&-", &["c", "o.kry", "-"])),
        format!("{STDIN_CLOSED}: it is an input: nothing was written\n")
    );
    // /dev/null as an input is not stdin, though the closed stdin is /dev/null now.
    let o = closed(&fx, "<&-", &["c", "-q", "n.kry", "/dev/null", "in"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    // Nor is a file given as the archive, with stdin closed: read as usual.
    fx.ok(&["c", "a.kry", "in"]);
    let o = closed(&fx, "<&-", &["t", "-q", "a.kry"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
}

#[test]
fn an_archive_from_a_closed_stdin_is_refused() {
    let fx = tree();
    for args in [
        &["x", "-o", "out", "-"][..],
        &["t", "-"],
        &["l", "-"],
        &["t", "/dev/stdin"],
    ] {
        let o = closed(&fx, "<&-", args);
        assert_eq!(code(&o), 4, "{args:?}: {}", err(&o));
        assert_eq!(
            err(&o),
            format!("{STDIN_CLOSED}: there is no archive to read\n"),
            "{args:?}"
        );
    }
    assert!(!fx.exists("out"));
}

#[test]
fn extracted_content_or_a_listing_for_a_closed_stdout_fails_exit_4() {
    let fx = tree();
    fx.ok(&["c", "a.kry", "in"]);
    let o = closed(&fx, ">&-", &["x", "--stdout", "a.kry"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert_eq!(err(&o), format!("{STDOUT_CLOSED}: nothing was extracted\n"));
    // Written to as it goes: the first write fails, as for a full disk.
    for args in [
        &["l", "a.kry"][..],
        &["info", "a.kry"],
        &["t", "--json", "a.kry"],
    ] {
        let o = closed(&fx, ">&-", args);
        assert_eq!(code(&o), 4, "{args:?}: {}", err(&o));
        assert!(
            err(&o).contains(STDOUT_CLOSED.strip_prefix("krypta: ").unwrap()),
            "{args:?}: {}",
            err(&o)
        );
    }
    // `c -v`: the archive is written, the listing the user asked for is not (as tar).
    let o = closed(&fx, ">&-", &["c", "-v", "v.kry", "in"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(
        err(&o).ends_with(&format!(
            "{STDOUT_CLOSED}: the -v listing was not written\n"
        )),
        "{}",
        err(&o)
    );
    assert_eq!(fx.names("v.kry"), ["in", "in/a", "in/b"]);
}

#[test]
fn keygen_for_a_closed_stdout_makes_no_key() {
    let fx = Fx::new();
    for args in [
        &["keygen", "--box", "-o", "k"][..],
        &["keygen", "--sign", "-o", "k"],
        &["keygen", "-o", "-"],
        &["keygen", "--box", "-o", "-"],
    ] {
        let o = closed(&fx, ">&-", args);
        assert_eq!(code(&o), 4, "{args:?}: {}", err(&o));
        assert_eq!(
            err(&o),
            format!("{STDOUT_CLOSED}: no key was made\n"),
            "{args:?}"
        );
        assert!(!fx.exists("k") && !fx.exists("k.pub"), "{args:?}");
    }
    // With -q nothing goes to stdout: the keypair is made.
    let o = closed(&fx, ">&-", &["keygen", "-q", "--box", "-o", "k"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(fx.exists("k") && fx.exists("k.pub"));
    // --pub prints the public key: refused.
    let o = closed(&fx, ">&-", &["keygen", "--pub", "-k", "k"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert_eq!(err(&o), format!("{STDOUT_CLOSED}\n"));
}

#[test]
fn a_password_from_a_closed_stdin_is_refused_not_read_as_empty() {
    let fx = tree();
    let o = closed(&fx, "<&-", &["c", "--pass-fd", "0", "o.kry", "in"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert_eq!(
        err(&o),
        format!("{STDIN_CLOSED}: there is no password to read from it\n")
    );
    assert!(!fx.exists("o.kry"));
}

#[test]
fn a_closed_stderr_changes_no_exit_code_and_no_output() {
    let fx = tree();
    let o = closed(&fx, "2>&-", &["c", "ok.kry", "in"]);
    assert_eq!(code(&o), 0);
    assert_eq!(fx.names("ok.kry"), ["in", "in/a", "in/b"]);
    // A warning that has nowhere to go: still exit 6, the archive still written.
    std::os::unix::net::UnixListener::bind(fx.p("in/sock")).unwrap();
    let o = closed(&fx, "2>&-", &["c", "w.kry", "in"]);
    assert_eq!(code(&o), 6);
    assert_eq!(fx.names("w.kry"), ["in", "in/a", "in/b"]);
    // And an archive to stdout with stderr closed is written whole.
    let o = closed(&fx, "2>&-", &["c", "-", "in/a"]);
    assert_eq!(code(&o), 0);
    std::fs::write(fx.p("s.kry"), &o.stdout).unwrap();
    assert_eq!(fx.names("s.kry"), ["in/a"]);
}

/// Regression (h65): a stream open the wrong way round (stdout or stderr read-only, stdin
/// write-only: `1</dev/null`, a supervisor's read-only /dev/null) fails every use with
/// EBADF, which std takes as a successful write or the end of input, as for a closed one:
/// `c - in 1<&0` exited 0 with the archive written nowhere, `keygen -o -` "made" a key no one
/// saw, `x --stdout` and `l` printed into nothing. Refused as a closed stream is, before
/// anything is written; a command that does not use the stream runs as before.
#[test]
fn a_stream_open_the_wrong_way_round_is_refused_as_a_closed_one() {
    let fx = tree();
    fx.ok(&["c", "a.kry", "in"]);
    const STDOUT_READ_ONLY: &str =
        "krypta: standard output cannot be written (descriptor 1 is open for reading only)";
    for (args, what) in [
        (&["c", "-", "in"][..], "the archive was not written"),
        (&["c", "/dev/stdout", "in"], "the archive was not written"),
        (&["x", "--stdout", "a.kry"], "nothing was extracted"),
        (&["l", "a.kry"], "nothing was listed"),
        (&["keygen", "-o", "-"], "no key was made"),
    ] {
        let o = closed(&fx, "1</dev/null", args);
        assert_eq!(code(&o), 4, "{args:?}: {}", err(&o));
        assert_eq!(err(&o), format!("{STDOUT_READ_ONLY}: {what}\n"), "{args:?}");
        assert!(o.stdout.is_empty());
    }
    let o = closed(&fx, "0>junk", &["c", "o.kry", "-"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: standard input cannot be read (descriptor 0 is open for writing only): \
         it is an input: nothing was written\n"
    );
    assert!(!fx.p("o.kry").exists());
    // Not used: the run is what it always was.
    let o = closed(&fx, "1</dev/null 2</dev/null", &["c", "o.kry", "in"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.names("o.kry"), ["in", "in/a", "in/b"]);
}

/// Regression (h65): a password, key, recipients or exclude file named by a closed stdin's
/// other names (`--pass-file /dev/stdin <&-`) opened the /dev/null standing in for it: `c`
/// said "empty password refused", `x` "no recipient stanza opened ... wrong key or
/// password", `--exclude-from` excluded nothing and exited 0. Refused as the stream, and
/// (h67) naming the option and the path given with it, however the path spells the stream
/// (`/dev//stdin`, `/dev/./fd/0`, `/proc/thread-self/fd/0` read /dev/null as before).
#[test]
fn a_key_or_list_file_named_by_a_closed_stdin_is_refused() {
    let fx = tree();
    fx.file("pw", b"pw\n");
    fx.ok(&["c", "--pass-file", "pw", "--kdf", "pbkdf2", "e.kry", "in"]);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    for (args, option) in [
        (
            &["c", "--pass-file", "/dev/stdin", "o.kry", "in"][..],
            "--pass-file /dev/stdin",
        ),
        (
            &["c", "--keyfile", "/dev/fd/0", "o.kry", "in"],
            "--keyfile /dev/fd/0",
        ),
        (
            &["c", "-R", "/proc/self/fd/0", "o.kry", "in"],
            "--recipients-file /proc/self/fd/0",
        ),
        (
            &["c", "--exclude-from", "/dev/stdin", "o.kry", "in"],
            "--exclude-from /dev/stdin",
        ),
        (
            &["x", "--pass-file", "/dev/stdin", "-o", "out", "e.kry"],
            "--pass-file /dev/stdin",
        ),
        (
            &["x", "--pass-file", "/dev//stdin", "-o", "out", "e.kry"],
            "--pass-file /dev//stdin",
        ),
        (
            &["x", "--pass-file", "/dev/./fd/0", "-o", "out", "e.kry"],
            "--pass-file /dev/./fd/0",
        ),
        (
            &["t", "--pass-file", "/proc/thread-self/fd/0", "e.kry"],
            "--pass-file /proc/thread-self/fd/0",
        ),
        (
            &[
                "c",
                "--keyfile",
                "k",
                "--base",
                "e.kry",
                "--base-pass-file",
                "/dev/fd/0",
                "o.kry",
                "in",
            ],
            "--base-pass-file /dev/fd/0",
        ),
        (&["keygen", "--pub", "-k", "/dev/stdin"], "--key /dev/stdin"),
    ] {
        let o = closed(&fx, "<&-", args);
        assert_eq!(code(&o), 4, "{args:?}: {}", err(&o));
        let bare = STDIN_CLOSED.strip_prefix("krypta: ").unwrap();
        assert_eq!(
            err(&o),
            format!("krypta: {option}: {bare}: there is nothing to read from it\n"),
            "{args:?}"
        );
        assert!(!fx.p("o.kry").exists() && !fx.p("out").exists(), "{args:?}");
    }
}

/// Regression (h69): a symbolic link to a name of a closed stream opened the `/dev/null`
/// standing in for it. `c out.kry in >&-` with `out.kry -> /dev/stdout` wrote the archive
/// into nothing and exited 0; `--pass-file pw.lnk <&-` (`pw.lnk -> /dev/stdin`) read an empty
/// password and said "authentication failed: ... wrong key or password"; a link to a
/// directory (`mydev -> /dev`) did the same. A link to a real file still reads the file.
#[test]
fn a_link_to_a_closed_stream_is_refused_as_the_stream() {
    let fx = tree();
    fx.file("pw", b"pw\n");
    fx.ok(&["c", "--pass-file", "pw", "--kdf", "pbkdf2", "e.kry", "in"]);
    std::os::unix::fs::symlink("/dev/stdout", fx.p("out.kry")).unwrap();
    std::os::unix::fs::symlink("/dev/stdin", fx.p("pw.lnk")).unwrap();
    std::os::unix::fs::symlink("/dev", fx.p("mydev")).unwrap();
    std::os::unix::fs::symlink("pw", fx.p("real.lnk")).unwrap();
    for args in [
        &["c", "out.kry", "in"][..],
        &["c", "-f", "out.kry", "in"],
        &["c", "mydev/stdout", "in"],
        &["c", "mydev/../dev/fd/1", "in"],
    ] {
        let o = closed(&fx, ">&-", args);
        assert_eq!(code(&o), 4, "{args:?}: {}", err(&o));
        assert_eq!(
            err(&o),
            format!("{STDOUT_CLOSED}: the archive was not written\n"),
            "{args:?}"
        );
        assert_eq!(
            std::fs::read_link(fx.p("out.kry")).unwrap(),
            std::path::Path::new("/dev/stdout"),
            "{args:?}"
        );
    }
    let bare = STDIN_CLOSED.strip_prefix("krypta: ").unwrap();
    for file in ["pw.lnk", "mydev/stdin", "./mydev/./fd/0"] {
        let o = closed(&fx, "<&-", &["t", "--pass-file", file, "e.kry"]);
        assert_eq!(code(&o), 4, "{file}: {}", err(&o));
        assert_eq!(
            err(&o),
            format!("krypta: --pass-file {file}: {bare}: there is nothing to read from it\n"),
        );
    }
    let o = closed(&fx, "<&-", &["t", "pw.lnk"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert_eq!(
        err(&o),
        format!("{STDIN_CLOSED}: there is no archive to read\n")
    );
    // A link to a real file, and a link to stdin while stdin is open, are read.
    let o = closed(&fx, "<&-", &["t", "--pass-file", "real.lnk", "e.kry"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let o = closed(&fx, "<pw", &["t", "--pass-file", "pw.lnk", "e.kry"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
}
