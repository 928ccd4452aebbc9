//! `krypta c` with inputs that are streams, through the binary: `<(cmd)` (an input
//! `/dev/fd/63`, a symbolic link to a pipe), `/dev/stdin` on a pipe and `/proc/self/fd/N` are
//! each stored as a regular file holding the bytes that came through, under the name the input
//! gets anyway, as `-` is stored as `stdin`. They were stored as links to `pipe:[N]` (a
//! backup of nothing, exit 0). A link to a device, and a link to a FIFO below a directory,
//! stay links.

mod cli_common;
mod common;

use std::process::{Command, Output, Stdio};

use cli_common::*;
use common::code;

/// `list --json` of `archive`, one value per entry.
fn listed(fx: &Fx, archive: &str) -> Vec<serde_json::Value> {
    out(&fx.ok(&["l", "--json", archive]))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The content of `path` in `archive` (`x --stdout`).
fn content(fx: &Fx, archive: &str, path: &str) -> Vec<u8> {
    fx.ok(&["x", "--stdout", archive, path]).stdout
}

/// Runs `script` with bash in the fixture directory, `$K` the krypta binary, stdin empty.
fn bash(fx: &Fx, script: &str, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("bash");
    c.current_dir(fx.dir.path())
        .args(["-c", script])
        .env("K", env!("CARGO_BIN_EXE_krypta"))
        .env_remove("SOURCE_DATE_EPOCH")
        .env_remove("KRYPTA_PASSWORD")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run bash")
}

/// (mode, uid, gid, type) of a listed entry.
fn facts(v: &serde_json::Value) -> (u64, u64, u64, &str) {
    (
        v["mode"].as_u64().unwrap(),
        v["uid"].as_u64().unwrap(),
        v["gid"].as_u64().unwrap(),
        v["type"].as_str().unwrap(),
    )
}

/// The warning lines of a run's stderr (the summary and a closing error line left out).
fn warned(o: &Output) -> Vec<String> {
    err(o)
        .lines()
        .filter(|l| l.starts_with("krypta: warning: "))
        .map(str::to_string)
        .collect()
}

fn me() -> (u64, u64) {
    (
        u64::from(rustix::process::getuid().as_raw()),
        u64::from(rustix::process::getgid().as_raw()),
    )
}

#[test]
fn process_substitutions_are_stored_as_the_bytes_that_came_through_not_as_dangling_links() {
    let fx = Fx::new();
    // More than one block of 64 KiB, with bytes a shell would mangle.
    let a = common::bytes(300_000, 11, false);
    let b = b"second\0stream\n".to_vec();
    fx.file("a.bin", &a);
    fx.file("b.bin", &b);
    // `run` records the operands bash gave krypta (the /dev/fd names) and runs it on them.
    let o = bash(
        &fx,
        r#"run() { printf '%s\n' "$@" > operands; "$K" c -b 64K s.kry "$@"; }
           run <(cat a.bin) <(cat b.bin)"#,
        &[],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    let operands = String::from_utf8(fx.read("operands")).unwrap();
    let operands: Vec<&str> = operands.lines().collect();
    assert_eq!(operands.len(), 2);
    // The names any input gets: as given, less the leading '/' (said once, as for any input).
    let names: Vec<String> = operands.iter().map(|p| p[1..].to_string()).collect();
    assert!(names[0].starts_with("dev/fd/"), "{names:?}");
    assert_eq!(fx.names("s.kry"), names);
    assert_eq!(
        warnings(&o),
        ["krypta: warning: removing leading '/' from member names"]
    );
    // 300,014 bytes in.
    let summary = common::split_summary(&err(&o)).1;
    assert!(
        summary.starts_with("krypta: s.kry: 2 entries, 293.0 KiB in, "),
        "{summary}"
    );
    assert!(
        content(&fx, "s.kry", &names[0]) == a,
        "first stream differs"
    );
    assert_eq!(content(&fx, "s.kry", &names[1]), b);
    // Regular files of the current user, mode 0644, sized by what was read.
    let (uid, gid) = me();
    let l = listed(&fx, "s.kry");
    for (v, len) in l.iter().zip([a.len(), b.len()]) {
        assert_eq!(facts(v), (0o644, uid, gid, "file"));
        assert_eq!(v["size"].as_u64(), Some(len as u64));
    }
    // `l -l` says the same: a file, not a link.
    let long = out(&fx.ok(&["l", "-l", "s.kry"]));
    let rows: Vec<&str> = long.lines().collect();
    assert_eq!(rows.len(), 2, "{long}");
    for (row, name) in rows.iter().zip(&names) {
        assert!(row.starts_with("-rw-r--r-- "), "{row}");
        assert!(row.ends_with(&format!(" {name}")), "{row}");
        assert!(!row.contains("->"), "{row}");
    }
    // Extracted: a regular file with the bytes.
    fx.ok(&["x", "-q", "s.kry", "-o", "out"]);
    assert!(
        fx.read(&format!("out/{}", names[0])) == a,
        "extracted stream differs"
    );
    assert!(
        fx.p(&format!("out/{}", names[1]))
            .symlink_metadata()
            .unwrap()
            .is_file()
    );
}

#[test]
fn dev_stdin_on_a_pipe_is_stored_as_the_piped_bytes_and_keeps_pass_fd_0_refused() {
    let fx = Fx::new();
    let data = common::bytes(70_000, 3, false);
    let o = fx.run_stdin(&["c", "-b", "64K", "i.kry", "/dev/stdin"], &data);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.names("i.kry"), ["dev/stdin"]);
    assert!(content(&fx, "i.kry", "dev/stdin") == data, "stream differs");
    let (uid, gid) = me();
    assert_eq!(facts(&listed(&fx, "i.kry")[0]), (0o644, uid, gid, "file"));
    // Stdin carries the input: it cannot carry the password too.
    let o = fx.run_stdin(&["c", "--pass-fd", "0", "p.kry", "/dev/stdin"], b"pw\n");
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: --pass-fd 0 reads the password from stdin, which also carries the input here; \
         use another descriptor or --pass-file\n"
    );
    assert!(!fx.exists("p.kry"));
}

#[test]
fn dev_stdin_redirected_from_a_file_is_stored_as_its_bytes() {
    // Regression: stored as a link to /proc/self/fd/0, exit 0: a backup of nothing.
    let fx = Fx::new();
    let data = common::bytes(90_000, 4, true);
    fx.file("dump.sql", &data);
    let o = bash(&fx, "$K c r.kry /dev/stdin < dump.sql", &[]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.names("r.kry"), ["dev/stdin"]);
    assert!(content(&fx, "r.kry", "dev/stdin") == data, "stream differs");
    let (uid, gid) = me();
    assert_eq!(facts(&listed(&fx, "r.kry")[0]), (0o644, uid, gid, "file"));
    // Another link to a regular file is stored as the link it is.
    std::os::unix::fs::symlink("dump.sql", fx.p("l.sql")).unwrap();
    let o = bash(&fx, "$K c s.kry l.sql < /dev/null", &[]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(listed(&fx, "s.kry")[0]["type"], "symlink");
    // Regression: also when stdin is redirected from the file it names (it was stored as
    // the stream l.sql, mode 0644, dated now): only a link through descriptor 0 is stdin.
    let o = bash(&fx, "$K c u.kry l.sql < dump.sql", &[]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(listed(&fx, "u.kry")[0]["type"], "symlink");
    assert_eq!(listed(&fx, "u.kry")[0]["link"], "dump.sql");
    // With -L, the file it names with that file's own mode, as without the redirection.
    std::fs::set_permissions(
        fx.p("dump.sql"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let o = bash(&fx, "$K c -L v.kry l.sql < dump.sql", &[]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(facts(&listed(&fx, "v.kry")[0]).0, 0o600);
    assert!(content(&fx, "v.kry", "l.sql") == data, "file differs");
    // And /dev/fd/0 and /proc/self/fd/0 are stdin as /dev/stdin is.
    for op in ["/dev/fd/0", "/proc/self/fd/0"] {
        let o = bash(&fx, &format!("$K c -f w.kry {op} < dump.sql"), &[]);
        assert_eq!(code(&o), 0, "{op}: {}", err(&o));
        let name = &op[1..];
        assert_eq!(fx.names("w.kry"), [name], "{op}");
        assert!(content(&fx, "w.kry", name) == data, "{op}: stream differs");
    }
}

#[test]
fn proc_self_fd_of_an_inherited_pipe_is_stored_as_its_bytes() {
    let fx = Fx::new();
    let o = bash(
        &fx,
        r#"exec 5< <(printf 'through fd 5'); "$K" c -q f.kry /proc/self/fd/5"#,
        &[],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.names("f.kry"), ["proc/self/fd/5"]);
    assert_eq!(content(&fx, "f.kry", "proc/self/fd/5"), b"through fd 5");
}

#[test]
fn a_stream_takes_its_place_among_the_inputs_and_is_read_once() {
    let fx = Fx::new();
    fx.file("t/a", b"file");
    // Command-line order, `-` included (it came after every other input).
    let o = fx.run_stdin(&["c", "o.kry", "-", "t"], b"piped");
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.names("o.kry"), ["stdin", "t", "t/a"]);
    assert_eq!(content(&fx, "o.kry", "stdin"), b"piped");
    // --exclude applies to its name, as to any input's: stdin is then not read.
    let o = fx.run_stdin(&["c", "x.kry", "--exclude", "stdin", "-", "t"], b"unread");
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.names("x.kry"), ["t", "t/a"]);
    // The same pipe under a second name would read nothing: left out, named, exit 6.
    let o = fx.run_stdin(&["c", "d.kry", "-", "/dev/stdin"], b"once");
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert_eq!(fx.names("d.kry"), ["stdin"]);
    assert_eq!(content(&fx, "d.kry", "stdin"), b"once");
    assert_eq!(
        warned(&o),
        [
            "krypta: warning: removing leading '/' from member names",
            "krypta: warning: /dev/stdin: skipped: the pipe or socket it names was stored \
             already, from -",
        ]
    );
    // A file already stored under the name `-` takes: left out, named, exit 6.
    fx.file("stdin", b"a file named stdin");
    let o = fx.run_stdin(&["c", "n.kry", "stdin", "-"], b"lost");
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert_eq!(content(&fx, "n.kry", "stdin"), b"a file named stdin");
}

#[test]
fn a_stream_is_dated_by_source_date_epoch_like_stdin() {
    let fx = Fx::new();
    let o = bash(
        &fx,
        r#""$K" c -q e.kry <(printf 'dated') -"#,
        &[("SOURCE_DATE_EPOCH", "1700000000")],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    let l = listed(&fx, "e.kry");
    assert_eq!(l.len(), 2);
    for v in &l {
        assert_eq!(v["mtime_unix"].as_i64(), Some(1_700_000_000), "{v}");
    }
    assert_eq!(l[1]["path"], "stdin");
}

#[test]
fn links_to_a_device_and_links_to_a_fifo_below_a_directory_stay_links() {
    let fx = Fx::new();
    std::os::unix::fs::symlink("/dev/null", fx.p("null")).unwrap();
    fx.mkdir("d");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fx.p("d/fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    std::os::unix::fs::symlink("fifo", fx.p("d/l")).unwrap();
    let o = fx.run(&["c", "-q", "k.kry", "null", "d"]);
    // The FIFO itself is left out, as always (exit 6); the links are links.
    assert_eq!(code(&o), 6, "{}", err(&o));
    let l = listed(&fx, "k.kry");
    let kinds: Vec<(&str, &str)> = l
        .iter()
        .map(|v| (v["path"].as_str().unwrap(), v["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [("null", "symlink"), ("d", "dir"), ("d/l", "symlink")]
    );
}

#[test]
fn stdin_redirected_from_the_output_is_refused_as_dev_stdin_is() {
    // Regression (helper-31): `c -f x.kry - < x.kry` archived the old archive into the new
    // one, while `c -f x.kry /dev/stdin < x.kry` was refused; both are now, nothing written.
    let fx = Fx::new();
    fx.file("small.txt", b"hello\n");
    fx.ok(&["c", "-q", "x.kry", "small.txt"]);
    let before = std::fs::read(fx.p("x.kry")).unwrap();
    for (input, shown) in [("-", "<stdin>"), ("/dev/stdin", "/dev/stdin")] {
        let o = bash(&fx, &format!("$K c -f x.kry {input} < x.kry"), &[]);
        assert_eq!(
            (code(&o), String::from_utf8_lossy(&o.stderr).into_owned()),
            (
                1,
                format!(
                    "krypta: {shown}: the output is also an input: replacing it would destroy \
                     it (nothing was written; write the archive elsewhere or exclude it)\n"
                )
            ),
            "{input}"
        );
        assert!(std::fs::read(fx.p("x.kry")).unwrap() == before, "{input}");
    }
    // Another output from the same stdin is fine.
    let o = bash(&fx, "$K c -q y.kry - < x.kry", &[]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_pipe_fed_in_uneven_chunks_is_stored_whole_and_as_the_same_bytes_from_a_file() {
    // `cat FILE | krypta c OUT -`: a read of a pipe returns what its producer wrote so far, so
    // the writer sees the stream in pieces that have nothing to do with its blocks. Chunks of
    // uneven sizes, each given a moment to be read on its own (less than the 50 ms after
    // which krypta takes its input as paused), ending: after one byte; at the writer's 64 KiB
    // first read and one byte past it; 13 bytes short of the 1 MiB block size (`-b 1M`) and
    // exactly on it; 777,777 bytes into the third MiB (a chunk across a block); exactly at
    // 3 MiB; and 5 bytes later (a final short chunk). The bytes must come back exactly, listed
    // with their size and BLAKE3, and the archive must be the one of the same bytes
    // redirected from a file (reproducible archives, README): where the reads ended must not
    // show in it.
    use std::io::Write;
    let fx = Fx::new();
    let mb = 1usize << 20;
    let ends = [
        1,
        64 << 10,
        (64 << 10) + 1,
        mb - 13,
        mb,
        2 * mb + 777_777,
        3 * mb,
        3 * mb + 5,
    ];
    let total = ends[ends.len() - 1];
    let data = common::bytes(total, 13, true);
    fx.file("same.bin", &data);
    fx.ok(&["keygen", "-o", "k"]);
    let epoch = [("SOURCE_DATE_EPOCH", "1700000000")];
    let digest = blake3::hash(&data).to_hex().to_string();
    let key: &[&str] = &["--keyfile", "k"];
    for (archive, level, keys) in [("plain.kry", "-l3", &[][..]), ("sealed.kry", "-s", key)] {
        let args = [&["c", "-q", "-b", "1M", level][..], keys, &[archive, "-"]].concat();
        let mut child = fx.spawn_piped(&args, &epoch);
        let mut stdin = child.stdin.take().unwrap();
        // Time to start and wait on the pipe, so the first byte comes alone (not a timing
        // claim: a later start reads the first chunks together, which must work too).
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut at = 0;
        for &end in &ends {
            stdin.write_all(&data[at..end]).unwrap();
            stdin.flush().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(10));
            at = end;
        }
        drop(stdin);
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "{archive}: {}", err(&o));
        let list = [&["l", "--json"][..], keys, &[archive]].concat();
        let listed: Vec<serde_json::Value> = out(&fx.ok(&list))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(listed.len(), 1, "{archive}: {listed:?}");
        assert_eq!(listed[0]["path"], "stdin", "{archive}");
        assert_eq!(listed[0]["size"].as_u64(), Some(total as u64), "{archive}");
        assert_eq!(listed[0]["digest"].as_str(), Some(&digest[..]), "{archive}");
        let x = [&["x", "--stdout"][..], keys, &[archive, "stdin"]].concat();
        assert!(
            fx.ok(&x).stdout == data,
            "{archive}: the restored bytes differ"
        );
    }
    let o = bash(&fx, "$K c -q -b 1M -l3 file.kry - < same.bin", &epoch);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(
        std::fs::read(fx.p("plain.kry")).unwrap() == std::fs::read(fx.p("file.kry")).unwrap(),
        "the piped archive differs from the one of the same bytes from a file"
    );
}
