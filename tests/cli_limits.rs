//! Unattended runs against the machine's limits: a file-size limit (`ulimit -f`, whose
//! SIGXFSZ killed krypta without a word), a full disk, a read-only output directory. Each
//! failure must name the file and the problem, exit non-zero, leave nothing under a final
//! name and keep what was there before.

mod cli_common;
mod common;

use std::process::Output;

use cli_common::*;
use common::{bytes, code};

/// Runs krypta in `fx`'s directory under `ulimit -f 64` (32 or 64 KiB, as the shell counts
/// blocks): every write past that offset raises SIGXFSZ.
fn under_file_size_limit(fx: &Fx, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_krypta");
    let o = std::process::Command::new("sh")
        .current_dir(fx.p(""))
        .args(["-c", "ulimit -f 64 && exec \"$0\" \"$@\"", bin])
        .args(args)
        .env_remove("KRYPTA_PASSWORD")
        .output()
        .unwrap();
    assert!(
        o.status.code().is_some(),
        "krypta {args:?} killed by {:?} (SIGXFSZ is 25): {}",
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        err(&o)
    );
    o
}

/// Regression: past `ulimit -f` krypta died by SIGXFSZ (exit 153, no message), which a cron
/// log shows as a crash, not as the file that grew too large.
#[test]
fn a_file_size_limit_is_a_failed_write_naming_the_file_not_a_silent_death() {
    let fx = Fx::new();
    fx.file("in/a", &bytes(1000, 1, true));
    fx.file("in/b", &bytes(300_000, 2, false));
    fx.ok(&["c", "-q", "old.kry", "in/a"]);
    let old = fx.read("old.kry");

    // c, new and over an old archive with -f; encrypted with recovery data; to stdout.
    fx.ok(&["keygen", "-o", "k"]);
    for args in [
        &["c", "-q", "new.kry", "in"][..],
        &["c", "-q", "-f", "old.kry", "in"],
        &[
            "c",
            "-q",
            "-f",
            "--keyfile",
            "k",
            "--recovery",
            "10",
            "old.kry",
            "in",
        ],
    ] {
        let o = under_file_size_limit(&fx, args);
        assert_eq!(code(&o), 4, "{args:?}: {}", err(&o));
        let out = args[args.len() - 2];
        assert!(
            err(&o).contains(&format!("{out}: write: File too large")),
            "{args:?}: {}",
            err(&o)
        );
        assert!(!fx.exists("new.kry"), "{args:?}");
        assert_eq!(fx.read("old.kry"), old, "{args:?}");
    }
    assert_eq!(names(&fx), ["in", "k", "old.kry"]);

    // x: the small file restored whole, the large one named and not under its name. A file
    // larger than the output may hold is one entry the file system cannot hold, skipped as a
    // too-long name is (tests/cli_extract_long_names.rs): exit 6, the rest restored.
    fx.ok(&["c", "-q", "big.kry", "in"]);
    let o = under_file_size_limit(&fx, &["x", "-o", "out", "big.kry"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert!(
        err(&o).contains("out/in/b: skipped: larger than the file system allows for one file"),
        "{}",
        err(&o)
    );
    assert_eq!(fx.read("out/in/a"), bytes(1000, 1, true));
    assert!(!fx.exists("out/in/b"));
    assert_eq!(names_in(&fx.p("out/in")), ["a"]);
}

/// Regression: under a low descriptor limit (`ulimit -n 8`) a directory krypta had no
/// descriptor left to open was "stored empty" with a warning and exit 6, the code of a
/// socket left out every night: the backup of the whole tree was an empty directory. A want
/// of krypta's own (EMFILE, ENFILE, ENOMEM) is not the input's fault: the run stops, exit 4,
/// and an older archive replaced with -f is kept.
#[test]
fn out_of_descriptors_stops_the_run_instead_of_storing_a_directory_empty() {
    let fx = Fx::new();
    for i in 0..3 {
        fx.file(&format!("in/d/f{i}"), &bytes(100, i, true));
    }
    fx.ok(&["c", "-q", "old.kry", "in/d/f0"]);
    let old = fx.read("old.kry");
    let bin = env!("CARGO_BIN_EXE_krypta");
    let mut stopped = 0;
    for n in 5..=16 {
        let o = std::process::Command::new("sh")
            .current_dir(fx.p(""))
            .args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\""), bin])
            .args(["c", "-q", "-f", "old.kry", "in"])
            .output()
            .unwrap();
        match code(&o) {
            0 => {
                let listed = fx.names("old.kry");
                assert_eq!(
                    listed,
                    ["in", "in/d", "in/d/f0", "in/d/f1", "in/d/f2"],
                    "{n}"
                );
                fx.file("old.kry", &old);
            }
            4 => {
                assert!(err(&o).contains("Too many open files"), "{n}: {}", err(&o));
                assert_eq!(fx.read("old.kry"), old, "{n}");
                stopped += usize::from(err(&o).contains("in: open directory"));
            }
            rc => panic!("ulimit -n {n}: exit {rc}: {}", err(&o)),
        }
        assert_eq!(names(&fx), ["in", "old.kry"], "{n}");
    }
    assert!(stopped > 0, "no limit made the walk run out of descriptors");
}

/// The names in `dir`, sorted (temporary files included: there must be none).
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn names(fx: &Fx) -> Vec<String> {
    names_in(&fx.p(""))
}
