//! A reader of krypta's stdout that stops early: quiet for output a reader may cut short
//! (`x --stdout | head`), a failed write for an archive written to stdout (`c - | head -c`),
//! which would otherwise be a cut-off backup reported as a success; a stdout that fails
//! (full) is an error for every command that prints, never a panic.

mod cli_common;
mod common;

use std::io::Read;
use std::process::Stdio;

use cli_common::*;
use common::{bytes, code, krypta};

/// Runs krypta with `args` in `fx`'s directory, reads 10 bytes of its stdout and closes it;
/// returns (exit code, stderr).
fn read_ten_then_close(fx: &Fx, args: &[&str]) -> (i32, String) {
    let mut child = krypta()
        .current_dir(fx.p(""))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ten = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut ten).unwrap();
    let o = child.wait_with_output().unwrap();
    (code(&o), err(&o))
}

#[test]
fn an_archive_to_stdout_that_its_reader_cut_short_is_a_failed_write() {
    let fx = Fx::new();
    // More than the 1 MiB krypta asks a pipe to hold: the writes go on after the reader left.
    fx.file("in/f", &bytes(8 << 20, 7, false));
    let (rc, e) = read_ten_then_close(&fx, &["c", "-q", "-", "in"]);
    assert_eq!(rc, 4, "{e}");
    assert!(e.contains("<stdout>: write: Broken pipe"), "{e}");
}

#[test]
fn a_many_block_archive_to_a_full_stdout_fails_at_once_naming_stdout() {
    // The first failed write of a frame must end the run with that error, whatever the
    // level and the workers: not a hang, a panic or a later error that hides it. (Kept from
    // a writer thread that was tried and taken out again: it guards the inline path too.)
    let fx = Fx::new();
    fx.file("in/f", &bytes(3 << 20, 11, false));
    fx.ok(&["keygen", "-o", "k"]);
    for args in [
        &["c", "-q", "-s", "-b", "64K", "-", "in"][..],
        &["c", "-q", "-s", "-b", "64K", "-j", "1", "-", "in"],
        &["c", "-q", "-l", "1", "-b", "64K", "-j", "2", "-", "in"],
        &["c", "-q", "-b", "64K", "--keyfile", "k", "-", "in"],
    ] {
        let e = fails_on_full_stdout(&fx, args);
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert_eq!(
            e.matches("No space left on device").count(),
            1,
            "{args:?}: {e}"
        );
    }
}

#[test]
fn extracted_content_to_stdout_may_be_cut_short_quietly() {
    let fx = Fx::new();
    fx.file("in/f", &bytes(8 << 20, 7, false));
    fx.ok(&["c", "-q", "a.kry", "in"]);
    let (rc, e) = read_ten_then_close(&fx, &["x", "-q", "--stdout", "a.kry"]);
    assert_eq!((rc, e), (0, String::new()));
}

#[test]
fn a_repaired_or_rekeyed_archive_to_stdout_cut_short_is_a_failed_write() {
    let fx = Fx::new();
    fx.file("in/f", &bytes(8 << 20, 7, false));
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["keygen", "-o", "k2"]);
    fx.ok(&[
        "c",
        "-q",
        "-s",
        "--recovery",
        "5",
        "--keyfile",
        "k",
        "a.kry",
        "in",
    ]);
    for args in [
        &["repair", "a.kry", "-o", "-"][..],
        &[
            "rekey",
            "--keyfile",
            "k",
            "--new-keyfile",
            "k2",
            "a.kry",
            "-o",
            "-",
        ][..],
    ] {
        let (rc, e) = read_ten_then_close(&fx, args);
        assert_eq!(rc, 4, "{args:?}: {e}");
        assert!(e.contains("write: Broken pipe"), "{args:?}: {e}");
    }
}

#[test]
fn info_kat_and_keygen_pub_to_a_full_stdout_fail_with_an_error_not_a_panic() {
    // Regression: they printed with println!, which panics when stdout fails ("failed
    // printing to stdout"), as `krypta info a.kry | head -5` did once head had left.
    let fx = Fx::new();
    fx.file("in/f", b"x");
    fx.ok(&["c", "-q", "a.kry", "in"]);
    fx.ok(&["keygen", "--box", "-o", "bx"]);
    for args in [
        &["info", "a.kry"][..],
        &["kat"],
        &["keygen", "--pub", "-k", "bx"],
    ] {
        let e = fails_on_full_stdout(&fx, args);
        assert!(!e.contains("panicked"), "{args:?}: {e}");
    }
}

/// /dev/full, opened for writing: every write fails with ENOSPC.
fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

/// Runs krypta with `args` in `fx`'s directory, stdout on /dev/full: asserts exit 4 naming
/// `<stdout>` and the full disk; returns stderr.
fn fails_on_full_stdout(fx: &Fx, args: &[&str]) -> String {
    let o = krypta()
        .current_dir(fx.p(""))
        .args(args)
        .stdout(dev_full())
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "{args:?}: {}", err(&o));
    assert!(
        err(&o).contains("<stdout>: write: No space left on device"),
        "{args:?}: {}",
        err(&o)
    );
    err(&o)
}

#[test]
fn a_full_stderr_loses_the_warnings_not_the_backup_or_the_restore() {
    // Regression: warnings were printed with eprintln!, which panicked (exit 101) when
    // stderr failed — a nightly `krypta c … 2>>full-disk.log` lost its whole backup to a
    // warning ("removing leading '/'") it could not show.
    let fx = Fx::new();
    fx.file("in/f", &bytes(100_000, 3, true));
    let abs = fx.p("in");
    let abs = abs.to_str().unwrap();
    let run = |args: &[&str]| {
        krypta()
            .current_dir(fx.p(""))
            .args(args)
            .stdout(Stdio::null())
            .stderr(dev_full())
            .output()
            .unwrap()
    };
    // An absolute input: the leading-'/' warning; -v: details too.
    let o = run(&["c", "-v", "a.kry", abs]);
    assert_eq!(code(&o), 0);
    let o = run(&["x", "-v", "-o", "out", "a.kry"]);
    assert_eq!(code(&o), 0);
    let restored = fx.p("out").join(abs.trim_start_matches('/')).join("f");
    assert_eq!(std::fs::read(restored).unwrap(), bytes(100_000, 3, true));
    // An error that ends the run cannot be shown either; its exit code still says it.
    let o = run(&["t", "missing.kry"]);
    assert_eq!(code(&o), 4);
}

#[test]
fn help_and_version_to_a_full_stdout_fail_and_to_a_closed_pipe_stop_quietly() {
    // Regression: `krypta --help > /dev/full` exited 0 with nothing written.
    for flag in ["--help", "--version"] {
        let o = krypta().arg(flag).stdout(dev_full()).output().unwrap();
        assert_eq!(code(&o), 4, "{flag}: {}", err(&o));
        assert!(
            err(&o).contains("<stdout>: write: No space left on device"),
            "{flag}: {}",
            err(&o)
        );
    }
    // A reader that takes one line and leaves (`krypta --help | head -1`).
    let mut child = krypta()
        .arg("--help")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!((code(&o), err(&o)), (0, String::new()));
}

#[test]
fn a_verbose_listing_to_a_full_stdout_fails_the_run_after_the_work_is_done() {
    // Regression: `x -v` and `c -v` ignored a failed write of their listing (stdout on a
    // full disk) and exited 0 with the listing the user asked for lost.
    let fx = Fx::new();
    fx.file("in/f", &bytes(10_000, 5, true));
    fx.file("in/g", b"g");
    for args in [
        &["c", "-v", "a.kry", "in"][..],
        &["x", "-v", "-o", "out", "a.kry"],
    ] {
        fails_on_full_stdout(&fx, args);
    }
    // The work itself was done: the archive is whole and the files are restored.
    fx.ok(&["t", "a.kry"]);
    assert_eq!(
        std::fs::read(fx.p("out/in/f")).unwrap(),
        bytes(10_000, 5, true)
    );
    assert_eq!(std::fs::read(fx.p("out/in/g")).unwrap(), b"g");
}

#[test]
fn while_the_producer_pauses_every_sealed_frame_reaches_the_reader() {
    // `pg_dump | krypta c - - | ssh …` with a pause in the dump: the frames sealed so far
    // must come out, not wait in memory for the next block's hand-over (up to the 4 blocks
    // in flight at -j 1, plus a buffer, did). 8 MiB in 1 MiB blocks fill 8 blocks, whose
    // frames are more than 8 MiB of archive; the input is held open meanwhile.
    use std::io::Write;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let fx = Fx::new();
    fx.ok(&["keygen", "-o", "k"]);
    let data = bytes(9 << 20, 5, false);
    let sealed = 8usize << 20;
    for args in [
        &[
            "c",
            "-q",
            "-s",
            "-b",
            "1M",
            "-j",
            "1",
            "--keyfile",
            "k",
            "-",
            "-",
        ][..],
        &["c", "-q", "-l", "1", "-b", "1M", "--keyfile", "k", "-", "-"],
    ] {
        let mut child = fx.spawn_piped(args, &[]);
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = stdout.read(&mut buf).unwrap();
                if n == 0 {
                    return all;
                }
                all.extend_from_slice(&buf[..n]);
                let _ = tx.send(all.len());
            }
        });
        stdin.write_all(&data[..sealed]).unwrap();
        // A generous deadline, not a timing claim: the frames come out about 50 ms after
        // the pause begins.
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = 0;
        while seen <= sealed {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(n) => seen = n,
                Err(_) => break,
            }
        }
        assert!(
            seen > sealed,
            "{args:?}: {seen} bytes of the archive came out while the input paused, want \
             more than {sealed}"
        );
        stdin.write_all(&data[sealed..]).unwrap();
        drop(stdin);
        let archive = reader.join().unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "{args:?}: {}", err(&o));
        std::fs::write(fx.p("paused.kry"), &archive).unwrap();
        let restored = fx
            .ok(&["x", "--keyfile", "k", "--stdout", "paused.kry", "stdin"])
            .stdout;
        assert!(restored == data, "{args:?}: the restored bytes differ");
    }
}

#[test]
fn a_stream_archived_with_pauses_is_byte_for_byte_the_one_archived_without() {
    // Reproducible archives (README) of a stream must not depend on when its producer
    // paused: a pause once ended a DATA record early, and one inside the first bytes made
    // `--bcj auto` see a cut-off ELF header and choose no filter. The input is the start of
    // krypta's own executable (an ELF file, so auto BCJ filters it when it sees the header).
    use std::io::Write;
    use std::time::Duration;
    let fx = Fx::new();
    let exe = std::fs::read(env!("CARGO_BIN_EXE_krypta")).unwrap();
    let data = &exe[..exe.len().min(3 << 20)];
    let archive_with = |bcj: &str, pauses: &[usize]| -> Vec<u8> {
        let args = ["c", "-q", "-l", "1", "-b", "1M", "--bcj", bcj, "-", "-"];
        let mut child = fx.spawn_piped(&args, &[("SOURCE_DATE_EPOCH", "1700000000")]);
        let mut stdin = child.stdin.take().unwrap();
        let mut at = 0;
        for &p in pauses {
            stdin.write_all(&data[at..p]).unwrap();
            stdin.flush().unwrap();
            // Four times the 50 ms after which krypta treats its input as paused.
            std::thread::sleep(Duration::from_millis(200));
            at = p;
        }
        stdin.write_all(&data[at..]).unwrap();
        drop(stdin);
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "{pauses:?}: {}", err(&o));
        o.stdout
    };
    let archive = |pauses: &[usize]| archive_with("auto", pauses);
    let straight = archive(&[]);
    // The filter was chosen: the archive differs from one written with `--bcj off`.
    assert!(
        straight != archive_with("off", &[]),
        "auto BCJ chose no filter"
    );
    for pauses in [&[10][..], &[5000, 105_000], &[1 << 20, (1 << 20) + 1]] {
        let paused = archive(pauses);
        assert!(
            paused == straight,
            "pauses after bytes {pauses:?}: {} bytes against {} without pauses",
            paused.len(),
            straight.len()
        );
    }
}
