//! Archive core round trips through the binary: trees, block boundaries, levels, store,
//! jobs, stdin/stdout, reproducibility, selective extraction.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use common::*;

fn roundtrip(src_parent: &Path, name: &str, extra: &[&str]) -> tempfile::TempDir {
    let work = tempfile::tempdir().unwrap();
    let kry = work.path().join("a.kry");
    let mut args = vec!["c", s(&kry), name];
    args.extend_from_slice(extra);
    let o = krypta()
        .args(&args)
        .current_dir(src_parent)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "compress {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = work.path().join("out");
    ok(&["x", "-o", s(&out), s(&kry)]);
    ok(&["t", s(&kry)]);
    assert_same_tree(&src_parent.join(name), &out.join(name));
    work
}

#[test]
fn sizes_around_block_boundaries_round_trip_at_every_level_and_store() {
    let src = tempfile::tempdir().unwrap();
    let b = 64 * 1024;
    for (i, n) in [0, 1, b - 1, b, b + 1, 3 * b + 7].into_iter().enumerate() {
        write(
            &src.path().join(format!("t/text{i}")),
            &bytes(n, i as u64, true),
        );
        write(
            &src.path().join(format!("t/rand{i}")),
            &bytes(n, 100 + i as u64, false),
        );
    }
    std::fs::create_dir_all(src.path().join("t/empty/dir")).unwrap();
    for level in ["1", "2", "3", "4", "5", "6", "7", "8", "9"] {
        roundtrip(src.path(), "t", &["-b", "64K", "-l", level]);
    }
    roundtrip(src.path(), "t", &["-b", "64K", "-s"]);
}

#[test]
fn output_does_not_depend_on_jobs_and_source_date_epoch_reproduces() {
    let src = tempfile::tempdir().unwrap();
    for i in 0..20 {
        write(
            &src.path().join(format!("d/f{i}")),
            &bytes(10_000 * i + 3, i as u64, i % 2 == 0),
        );
    }
    let work = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    for (i, j) in ["1", "2", "4", "1"].iter().enumerate() {
        let kry = work.path().join(format!("{i}.kry"));
        let o = krypta()
            .args(["c", "-b", "64K", "-j", j, s(&kry), "d"])
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .current_dir(src.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        outs.push(std::fs::read(&kry).unwrap());
    }
    assert!(
        outs.iter().all(|o| o == &outs[0]),
        "archives differ between -j values or runs"
    );
}

/// Regression: an unparsable SOURCE_DATE_EPOCH was ignored for the time but still made the
/// archive "reproducible", so its id came from the current second (two archives made in the
/// same second shared an id). It is refused, naming the value, and nothing is written.
#[test]
fn an_unparsable_source_date_epoch_is_refused_and_writes_nothing() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("f"), b"x").unwrap();
    for bad in ["garbage", "12.5", ""] {
        let o = krypta()
            .args(["c", "a.kry", "f"])
            .env("SOURCE_DATE_EPOCH", bad)
            .current_dir(src.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{bad:?}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!(
                "krypta: SOURCE_DATE_EPOCH={bad}: not an integer number of seconds since 1970\n"
            ),
            "{bad:?}"
        );
        assert!(!src.path().join("a.kry").exists(), "{bad:?}");
    }
}

#[test]
fn stdin_to_stdout_streams_both_ways() {
    let data = bytes(3 * 1024 * 1024 + 17, 7, true);
    let mut c = krypta()
        .args(["c", "-b", "1M", "-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let d2 = data.clone();
    let t = std::thread::spawn(move || stdin.write_all(&d2).unwrap());
    let o = c.wait_with_output().unwrap();
    t.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let archive = o.stdout;
    assert!(archive.len() < data.len());
    let mut x = krypta()
        .args(["x", "--stdout", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = x.stdin.take().unwrap();
    let t = std::thread::spawn(move || stdin.write_all(&archive).unwrap());
    let o = x.wait_with_output().unwrap();
    t.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout.len(), data.len());
    assert!(o.stdout == data, "stdout content differs");
}

#[test]
fn extracting_named_paths_extracts_only_those() {
    let src = tempfile::tempdir().unwrap();
    for i in 0..30 {
        write(
            &src.path().join(format!("r/d{}/f{i}", i % 3)),
            &bytes(50_000, i, true),
        );
    }
    let work = tempfile::tempdir().unwrap();
    let kry = work.path().join("a.kry");
    let o = krypta()
        .args(["c", "-b", "64K", s(&kry), "r"])
        .current_dir(src.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    let out = work.path().join("out");
    ok(&["x", "-o", s(&out), s(&kry), "r/d1", "r/d2/f5"]);
    let got: Vec<String> = walkdir::WalkDir::new(&out)
        .min_depth(1)
        .sort_by_file_name()
        .into_iter()
        .map(|e| {
            e.unwrap()
                .path()
                .strip_prefix(&out)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let mut want = vec!["r".to_string(), "r/d1".to_string()];
    want.extend((0..30).filter(|i| i % 3 == 1).map(|i| format!("r/d1/f{i}")));
    want.push("r/d2".into());
    want.push("r/d2/f5".into());
    want.sort();
    // `r` and `r/d2` are created as parents of selected entries.
    let mut got_sorted = got.clone();
    got_sorted.sort();
    assert_eq!(got_sorted, want);
    assert_eq!(
        std::fs::read(out.join("r/d2/f5")).unwrap(),
        bytes(50_000, 5, true)
    );
    let o = run(&["x", "-o", s(&out), s(&kry), "r/nope"]);
    assert_eq!(code(&o), 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("r/nope"));
}

#[test]
fn existing_output_is_refused_without_force() {
    let src = tempfile::tempdir().unwrap();
    write(&src.path().join("f"), b"hello");
    let kry = src.path().join("a.kry");
    std::fs::write(&kry, b"precious").unwrap();
    let o = krypta()
        .args(["c", s(&kry), "f"])
        .current_dir(src.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 1);
    assert_eq!(std::fs::read(&kry).unwrap(), b"precious");
    let o = krypta()
        .args(["c", "-f", s(&kry), "f"])
        .current_dir(src.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    ok(&["t", s(&kry)]);
}

#[test]
fn real_trees_round_trip() {
    // Parts of real trees: headers (text), and real ELF binaries (BCJ auto).
    let candidates = [
        "/usr/include/linux",
        "/usr/share/doc/git",
        "/usr/lib/x86_64-linux-gnu/gconv",
    ];
    for c in candidates {
        let p = Path::new(c);
        if !p.is_dir() {
            eprintln!("skipping {c}: not present");
            continue;
        }
        roundtrip(
            p.parent().unwrap(),
            p.file_name().unwrap().to_str().unwrap(),
            &[],
        );
    }
    let bins = tempfile::tempdir().unwrap();
    for b in [
        "/usr/bin/ls",
        "/usr/bin/git",
        "/usr/bin/cargo",
        "/usr/bin/bash",
    ] {
        if Path::new(b).is_file() {
            std::fs::copy(b, bins.path().join(Path::new(b).file_name().unwrap())).unwrap();
        }
    }
    roundtrip(
        bins.path().parent().unwrap(),
        bins.path().file_name().unwrap().to_str().unwrap(),
        &["-b", "256K"],
    );
}

#[test]
fn list_shows_entries_and_b3_lines_match_content() {
    let src = tempfile::tempdir().unwrap();
    write(&src.path().join("l/a.txt"), b"abc");
    write(&src.path().join("l/b.bin"), &bytes(100_000, 3, false));
    let kry = src.path().join("a.kry");
    let o = krypta()
        .args(["c", s(&kry), "l"])
        .current_dir(src.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    let o = ok(&["l", s(&kry)]);
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with('d') && lines[0].ends_with(" l"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("-rw") && lines[1].contains(" 3 ") && lines[1].ends_with(" l/a.txt"),
        "{}",
        lines[1]
    );
    let o = ok(&["l", "--b3", s(&kry)]);
    let b3 = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        b3,
        format!(
            "{}  l/a.txt\n{}  l/b.bin\n",
            blake3::hash(b"abc").to_hex(),
            blake3::hash(&bytes(100_000, 3, false)).to_hex()
        )
    );
}

#[test]
fn info_reads_the_header_without_a_key() {
    let src = tempfile::tempdir().unwrap();
    write(&src.path().join("f"), b"x");
    let kry = src.path().join("a.kry");
    let o = krypta()
        .args(["c", "-l", "7", s(&kry), "f"])
        .current_dir(src.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    let o = ok(&["info", s(&kry)]);
    let t = String::from_utf8(o.stdout).unwrap();
    assert!(t.contains("format version: 2"), "{t}");
    assert!(t.contains("level:          7"), "{t}");
    assert!(t.contains("encryption:     none"), "{t}");
    assert!(t.contains("data blocks:    1"), "{t}");
}

#[test]
fn closed_stdout_pipe_ends_quietly() {
    let src = tempfile::tempdir().unwrap();
    write(&src.path().join("big"), &bytes(8 << 20, 1, false));
    let kry = src.path().join("a.kry");
    let o = krypta()
        .args(["c", "-s", s(&kry), "big"])
        .current_dir(src.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    let mut x = krypta()
        .args(["x", "--stdout", s(&kry)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = x.stdout.take().unwrap();
    let mut ten = [0u8; 10];
    std::io::Read::read_exact(&mut out, &mut ten).unwrap();
    drop(out);
    let o = x.wait_with_output().unwrap();
    assert_eq!(&ten, &bytes(8 << 20, 1, false)[..10]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn archive_is_created_with_the_umask_mode_not_0600() {
    // Regression: the temporary file the archive is written to had tempfile's 0600 mode.
    use std::os::unix::fs::PermissionsExt;
    let src = tempfile::tempdir().unwrap();
    write(&src.path().join("f"), b"x");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 027 && exec '{}' c a.kry f",
            env!("CARGO_BIN_EXE_krypta")
        ))
        .current_dir(src.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mode = std::fs::metadata(src.path().join("a.kry"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o640);
}

#[test]
fn usage_errors_exit_1_not_2_and_help_exits_0() {
    // Regression: clap's own exit code for a bad command line is 2, which krypta reserves
    // for authentication failures; a script must not read a typo as a wrong password.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.kry");
    for args in [
        &["c", "-j", "1", "-j", "2", s(&out), "in"][..],
        &["c", "--no-such-option", s(&out), "in"],
        &["c", "-l", "10", s(&out), "in"],
        &["x"],
        &["frobnicate"],
        &[],
    ] {
        let o = run(args);
        assert_eq!(
            code(&o),
            1,
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stderr.is_empty(), "{args:?}: no message");
        assert!(o.stdout.is_empty(), "{args:?}: wrote to stdout");
        assert!(!out.exists(), "{args:?}: wrote an archive");
    }
    for args in [&["--help"][..], &["-V"], &["c", "--help"]] {
        let o = run(args);
        assert_eq!(code(&o), 0, "{args:?}");
        assert!(
            !o.stdout.is_empty(),
            "{args:?}: help or version goes to stdout"
        );
    }
}
