//! Issue 14, "Output people read": `-v` lists entries as they are written or extracted, the
//! end summary of `c` and `x` (and `-q`), `list` PATH filters, `-l/--long`, times in local
//! time with the zone (TZ honoured) and `--utc`, sizes in the units people type.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

const T: i64 = 1_700_000_000; // 2023-11-14 22:13:20 UTC

fn set_mtime(p: &std::path::Path, secs: i64) {
    let t = filetime::FileTime::from_unix_time(secs, 0);
    filetime::set_symlink_file_times(p, t, t).unwrap();
}

/// t/ = { a (5 bytes), d/, d/b (3 bytes), l -> a }, every mtime T, modes 0644 / 0755.
fn tree(fx: &Fx) {
    use std::os::unix::fs::PermissionsExt;
    fx.file("t/a", b"hello");
    fx.file("t/d/b", b"abc");
    std::os::unix::fs::symlink("a", fx.p("t/l")).unwrap();
    for (rel, mode) in [
        ("t/a", 0o644),
        ("t/d/b", 0o644),
        ("t/d", 0o755),
        ("t", 0o755),
    ] {
        std::fs::set_permissions(fx.p(rel), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    for rel in ["t/a", "t/d/b", "t/l", "t/d", "t"] {
        set_mtime(&fx.p(rel), T);
    }
}

#[test]
fn verbose_lists_entries_as_written_and_extracted_and_the_summary_ends_the_run() {
    let fx = Fx::new();
    tree(&fx);
    let o = fx.run(&["c", "-v", "a.kry", "t"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(out(&o), "t/\nt/a\nt/d/\nt/d/b\nt/l\n");
    let (rest, summary) = common::split_summary(&err(&o));
    assert_eq!(rest, "");
    assert!(
        summary.starts_with("krypta: a.kry: 5 entries, 8 B in, "),
        "{summary}"
    );
    assert!(summary.ends_with(" s"), "{summary}");
    // The archive on stdout: the listing moves to stderr, before the summary.
    let o = fx.run(&["c", "-v", "-", "t"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let (rest, _) = common::split_summary(&err(&o));
    assert_eq!(rest, "t/\nt/a\nt/d/\nt/d/b\nt/l\n");
    let o = fx.run(&["x", "-v", "a.kry", "-o", "o"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(out(&o), "t/\nt/a\nt/d/\nt/d/b\nt/l\n");
    let (rest, summary) = common::split_summary(&err(&o));
    assert_eq!(rest, "");
    assert!(
        summary.starts_with("krypta: a.kry: 5 entries extracted, "),
        "{summary}"
    );
    assert!(summary.contains(" in, 8 B out ("), "{summary}");
    // -k: a kept file is not listed as extracted, and not counted; nor are the existing
    // directories t and t/d, which -k leaves as they are (their metadata is not applied).
    std::fs::remove_file(fx.p("o/t/d/b")).unwrap();
    let o = fx.run(&["x", "-v", "-k", "a.kry", "-o", "o"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert_eq!(out(&o), "t/d/b\n");
    assert!(
        err(&o).contains("krypta: a.kry: 1 entry extracted, "),
        "{}",
        err(&o)
    );
}

/// The summary's "out" of `x`, from the last line of stderr: "N entries extracted, A in, B out
/// (R), T" → (N, B).
fn extracted_and_out(o: &std::process::Output) -> (String, String) {
    let e = err(o);
    let line = e
        .lines()
        .find(|l| l.contains(" extracted, "))
        .unwrap_or_else(|| panic!("no summary in: {e}"));
    let n = line.split(": ").nth(2).unwrap().split(' ').next().unwrap();
    let out = line
        .split(" in, ")
        .nth(1)
        .unwrap()
        .split(" out (")
        .next()
        .unwrap();
    (n.to_string(), out.to_string())
}

#[test]
fn x_summary_out_counts_the_bytes_written_not_those_of_kept_or_stripped_files() {
    // It counted every file's bytes read from the archive: `x -k` over a tree where every
    // file was kept said "8 B out" while writing nothing.
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "a.kry", "t"]);
    fx.ok(&["x", "-q", "a.kry", "-o", "o"]);
    // t/a (5 bytes) is kept, t/d/b (3 bytes) is made again.
    std::fs::remove_file(fx.p("o/t/d/b")).unwrap();
    let o = fx.run(&["x", "-k", "a.kry", "-o", "o"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert_eq!(extracted_and_out(&o), ("1".into(), "3 B".into()));
    assert_eq!(std::fs::read(fx.p("o/t/d/b")).unwrap(), b"abc");
    // Everything kept: nothing written.
    let o = fx.run(&["x", "-k", "a.kry", "-o", "o"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert_eq!(extracted_and_out(&o), ("0".into(), "0 B".into()));
    std::fs::remove_file(fx.p("o/t/a")).unwrap();
    let o = fx.run(&["x", "--skip-existing", "a.kry", "-o", "o"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(extracted_and_out(&o), ("1".into(), "5 B".into()));
    // --strip-components 2 leaves only t/d/b (as b): t/a is not written.
    let o = fx.run(&["x", "--strip-components", "2", "a.kry", "-o", "s"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(extracted_and_out(&o), ("1".into(), "3 B".into()));
    assert_eq!(std::fs::read(fx.p("s/b")).unwrap(), b"abc");
    // To stdout every file is written.
    let o = fx.run(&["x", "--stdout", "a.kry"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(o.stdout, b"helloabc");
    assert_eq!(extracted_and_out(&o).1, "8 B");
}

/// (frame bytes, raw block bytes) of the one data frame of the unencrypted archive `a`:
/// the frame at the header's end (H, bytes 12..16) is a 16-byte head (body length at 4..8),
/// the body, whose block header holds the raw length at 4..8, and a 32-byte tag
/// (docs/FORMAT.md §2, §4, §5).
fn one_frame(a: &[u8]) -> (u64, u64) {
    let u32_at = |at: usize| u64::from(u32::from_le_bytes(a[at..at + 4].try_into().unwrap()));
    let h = u32_at(12) as usize;
    assert_eq!(a[h], 1, "a data frame follows the header");
    (16 + u32_at(h + 4) + 32, u32_at(h + 16 + 4))
}

/// The percentage of `x`'s summary divided the frames read by the bytes written: one small
/// file said "156 B in, 6 B out (2600.0%)", one file picked out of a shared block
/// "80.7 KiB in, 6 B out (1377750.0%)", and `-k` keeping everything "(-)" (helper-76). It is
/// now the frames read as a share of what they decode to (contents and records): how well
/// what was read compressed, the same whatever part of it is written.
#[test]
fn x_summary_ratio_is_the_frames_read_of_what_they_decode_to_not_of_the_bytes_written() {
    let fx = Fx::new();
    fx.file("t/big", &b"0123456789".repeat(800));
    fx.file("t/small", b"hello");
    fx.file("one/s", b"hello\n");
    for (archive, input) in [("a.kry", "t"), ("one.kry", "one")] {
        fx.ok(&["c", "-q", archive, input]);
    }
    let summary = |o: &std::process::Output| {
        assert!(code(o) == 0 || code(o) == 6, "{}", err(o));
        let e = err(o);
        let line = e
            .lines()
            .find(|l| l.contains(" extracted, "))
            .unwrap()
            .to_string();
        line.rsplit_once(", ").unwrap().0.to_string()
    };
    let (frame, raw) = one_frame(&fx.read("a.kry"));
    let pct = format!("{:.1}%", frame as f64 * 100.0 / raw as f64);
    assert!(frame < raw, "{frame} {raw}");
    let o = fx.run(&["x", "a.kry", "-o", "o"]);
    assert_eq!(
        summary(&o),
        format!("krypta: a.kry: 3 entries extracted, {frame} B in, 7.8 KiB out ({pct})")
    );
    let o = fx.run(&["x", "a.kry", "t/small", "-o", "p"]);
    assert_eq!(
        summary(&o),
        format!("krypta: a.kry: 1 entry extracted, {frame} B in, 5 B out ({pct})")
    );
    let o = fx.run(&["x", "-k", "a.kry", "-o", "o"]);
    assert_eq!(
        summary(&o),
        format!("krypta: a.kry: 0 entries extracted, {frame} B in, 0 B out ({pct})")
    );
    let (frame, raw) = one_frame(&fx.read("one.kry"));
    let o = fx.run(&["x", "one.kry", "-o", "q"]);
    assert_eq!(
        summary(&o),
        format!(
            "krypta: one.kry: 2 entries extracted, {frame} B in, 6 B out ({:.1}%)",
            frame as f64 * 100.0 / raw as f64
        )
    );
}

#[test]
fn c_summary_in_counts_a_sparse_file_at_its_size_holes_included() {
    // It counted only the data extents: 1 MiB of hole and 5 bytes of data said "5 B in"
    // and a ratio of thousands of percent, while `t` and `x` said 1 MiB.
    let fx = Fx::new();
    fx.mkdir("s");
    let f = std::fs::File::create(fx.p("s/h")).unwrap();
    f.set_len(1 << 20).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, b"tail\n", 1 << 20).unwrap();
    drop(f);
    let o = fx.run(&["c", "a.kry", "s"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let line = err(&o);
    assert!(line.contains(", 1.0 MiB in, "), "{line}");
    let o = fx.run(&["x", "a.kry", "-o", "o"]);
    assert_eq!(extracted_and_out(&o).1, "1.0 MiB");
}

#[test]
fn quiet_prints_no_summary() {
    let fx = Fx::new();
    tree(&fx);
    for args in [
        &["c", "-q", "a.kry", "t"][..],
        &["x", "-q", "a.kry", "-o", "o"],
    ] {
        let o = fx.run(args);
        assert_eq!(
            (code(&o), err(&o), out(&o)),
            (0, String::new(), String::new())
        );
    }
}

#[test]
fn list_filters_by_path_and_names_a_path_not_in_the_archive() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "a.kry", "t"]);
    let o = fx.ok(&["l", "--utc", "a.kry", "t/d"]);
    assert_eq!(
        out(&o),
        "drwxr-xr-x            0 2023-11-14 22:13:20 +0000 t/d\n\
         -rw-r--r--            3 2023-11-14 22:13:20 +0000 t/d/b\n"
    );
    let o = fx.ok(&["l", "--utc", "--wildcards", "a.kry", "*/b", "l"]);
    assert_eq!(
        out(&o),
        "-rw-r--r--            3 2023-11-14 22:13:20 +0000 t/d/b\n\
         lrwxrwxrwx            0 2023-11-14 22:13:20 +0000 t/l -> a\n"
    );
    let o = fx.run(&["l", "--utc", "a.kry", "t/a", "t/nope"]);
    assert_eq!(
        (code(&o), out(&o), err(&o)),
        (
            1,
            "-rw-r--r--            5 2023-11-14 22:13:20 +0000 t/a\n".to_string(),
            "krypta: not found in a.kry: t/nope\n".to_string()
        )
    );
}

#[test]
fn long_listing_shows_owner_stored_bytes_and_ratio_and_they_add_up() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "a.kry", "t"]);
    let long = out(&fx.ok(&["l", "-l", "--utc", "a.kry"]));
    let json = out(&fx.ok(&["l", "--json", "a.kry"]));
    let verbose = out(&fx.ok(&["l", "-v", "--utc", "a.kry"]));
    let long_verbose = out(&fx.ok(&["l", "-l", "-v", "--utc", "a.kry"]));
    let numeric = out(&fx.ok(&["l", "-l", "--numeric-owner", "--utc", "a.kry"]));
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    // The names the archive stores (tar tv shows them too), as getpwuid gives them.
    let (user, group) = common::own_names();
    let mut total = 0;
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(lines.len(), 5);
    let with_blocks: Vec<&str> = long_verbose.lines().collect();
    let numeric: Vec<&str> = numeric.lines().collect();
    for (i, (line, obj)) in lines.iter().zip(json.lines()).enumerate() {
        let v: serde_json::Value = serde_json::from_str(obj).unwrap();
        let (size, stored) = (v["size"].as_u64().unwrap(), v["stored"].as_u64().unwrap());
        total += stored;
        let ratio = if size == 0 {
            "-".to_string()
        } else {
            format!("{:.1}%", stored as f64 * 100.0 / size as f64)
        };
        let mode = match v["type"].as_str().unwrap() {
            "dir" => "drwxr-xr-x",
            "file" => "-rw-r--r--",
            _ => "lrwxrwxrwx",
        };
        let path = v["path"].as_str().unwrap();
        let link = if path == "t/l" { " -> a" } else { "" };
        assert_eq!(
            (v["user"].as_str(), v["group"].as_str()),
            (Some(&*user), Some(&*group))
        );
        let want = |owner: String| {
            format!(
                "{mode} {owner} {size:>12} {stored:>12} {ratio:>6} 2023-11-14 22:13:20 +0000 \
                 {path}{link}"
            )
        };
        assert_eq!(*line, want(format!("{user:>8}/{group:<8}")));
        assert_eq!(numeric[i], want(format!("{uid:>8}/{gid:<8}")));
        // -l -v: the long line, then the blocks -v shows.
        let blocks = verbose
            .lines()
            .nth(i)
            .unwrap()
            .split("  [blocks")
            .nth(1)
            .unwrap();
        assert_eq!(with_blocks[i], format!("{line}  [blocks{blocks}"));
    }
    // One data block holds everything: the shares add up to its bytes exactly.
    let in_block: Vec<&str> = verbose
        .lines()
        .map(|l| l.split("[blocks 0-0, ").nth(1).unwrap())
        .collect();
    assert!(in_block.iter().all(|b| *b == in_block[0]), "{verbose}");
    let block_bytes: u64 = in_block[0].split(' ').next().unwrap().parse().unwrap();
    assert_eq!(total, block_bytes);
    for conflicting in [&["-l", "--json"][..], &["-l", "--b3"]] {
        let o = fx.run(&[&["l"], conflicting, &["a.kry"]].concat());
        assert_eq!(code(&o), 1, "{}", err(&o));
    }
}

#[test]
fn times_are_local_with_the_zone_tz_honoured_and_utc_on_request() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "a.kry", "t"]);
    let line = |tz: &str, extra: &[&str]| {
        let o = fx.run_env(&[&["l"], extra, &["a.kry", "t/a"]].concat(), &[("TZ", tz)]);
        assert_eq!(code(&o), 0, "{}", err(&o));
        out(&o)
    };
    let want = |when: &str| format!("-rw-r--r--            5 {when} t/a\n");
    assert_eq!(line("UTC", &[]), want("2023-11-14 22:13:20 +0000"));
    assert_eq!(
        line("CET-1CEST,M3.5.0,M10.5.0/3", &[]),
        want("2023-11-14 23:13:20 +0100")
    );
    assert_eq!(line("<-0330>3:30", &[]), want("2023-11-14 18:43:20 -0330"));
    assert_eq!(
        line("CET-1CEST,M3.5.0,M10.5.0/3", &["--utc"]),
        want("2023-11-14 22:13:20 +0000")
    );
    if std::path::Path::new("/usr/share/zoneinfo/Asia/Kolkata").exists() {
        assert_eq!(line("Asia/Kolkata", &[]), want("2023-11-15 03:43:20 +0530"));
    }
    // info: the creation time the same way (SOURCE_DATE_EPOCH fixes it).
    let o = fx.run_env(
        &["c", "-q", "e.kry", "t"],
        &[("SOURCE_DATE_EPOCH", &T.to_string())],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    let created = |tz: &str, extra: &[&str]| {
        let o = fx.run_env(&[&["info"], extra, &["e.kry"]].concat(), &[("TZ", tz)]);
        out(&o)
            .lines()
            .find(|l| l.starts_with("created:"))
            .unwrap()
            .to_string()
    };
    assert_eq!(
        created("CET-1CEST,M3.5.0,M10.5.0/3", &[]),
        "created:        2023-11-14 23:13:20 +0100 (1700000000)"
    );
    assert_eq!(
        created("CET-1CEST,M3.5.0,M10.5.0/3", &["--utc"]),
        "created:        2023-11-14 22:13:20 +0000 (1700000000)"
    );
}

#[test]
fn sizes_accept_the_units_people_type() {
    let fx = Fx::new();
    tree(&fx);
    for (arg, bytes) in [
        ("4M", 4 << 20),
        ("4MiB", 4 << 20),
        ("4Mi", 4 << 20),
        ("4m", 4 << 20),
        ("4MB", 4_000_000),
        ("512k", 512 << 10),
        ("512K", 512 << 10),
        ("512kB", 512_000),
        ("1.5M", 3 << 19),
        ("65536", 65536),
    ] {
        let name = format!("{arg}.kry");
        fx.ok(&["c", "-q", "-b", arg, &name, "t"]);
        let o = fx.ok(&["info", "--json", &name]);
        let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
        assert_eq!(v["block_size"], bytes, "-b {arg}");
    }
    for (arg, why) in [
        ("4X", "unknown unit"),
        ("1.3K", "not a whole number of bytes"),
        ("M", "expected a number"),
    ] {
        let o = fx.run(&["c", "-b", arg, "x.kry", "t"]);
        assert_eq!(code(&o), 1);
        assert!(
            err(&o).starts_with(&format!("krypta: bad size '{arg}': {why}")),
            "{arg}: {}",
            err(&o)
        );
    }
    // --kdf-memory: a plain number is MiB, units as for -b.
    fx.file("pw", b"pw");
    for (arg, kib) in [("8", 8192), ("8MiB", 8192), ("16M", 16384)] {
        let name = format!("k{arg}.kry");
        fx.ok(&[
            "c",
            "-q",
            "--pass-file",
            "pw",
            "--kdf-memory",
            arg,
            "--kdf-iterations",
            "1",
            &name,
            "t",
        ]);
        let o = fx.ok(&["info", "--json", &name]);
        let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
        assert_eq!(v["stanzas"][0]["memory_kib"], kib, "--kdf-memory {arg}");
    }
}

#[test]
fn b3_lines_escape_control_characters_on_a_terminal_and_stay_b3sum_bytes_in_a_pipe() {
    // Regression: `l --b3` printed a hostile name's escape sequences raw to the terminal,
    // though every other listing escapes them.
    let fx = Fx::new();
    fx.file("t/a\x1b[31mred", b"x");
    fx.ok(&["c", "-q", "a.kry", "t"]);
    let digest = blake3::hash(b"x").to_hex().to_string();
    let piped = fx.ok(&["l", "--b3", "a.kry"]);
    assert_eq!(
        piped.stdout,
        format!("{digest}  t/a\x1b[31mred\n").as_bytes()
    );
    let cmd = format!("{} l --b3 a.kry", env!("CARGO_BIN_EXE_krypta"));
    let Ok(o) = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(fx.dir.path())
        .output()
    else {
        eprintln!("note: no script(1); the terminal half of this test is skipped");
        return;
    };
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(out(&o), format!("\\{digest}  t/a\\x1b[31mred\r\n"));
}
