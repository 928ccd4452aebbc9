//! Shared helpers for the integration tests: running the binary, building trees, comparing
//! an extracted tree with its source.

#![allow(dead_code, missing_docs)]

pub mod craft;
pub mod craft2;

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn krypta() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_krypta"));
    c.env_remove("KRYPTA_PASSWORD")
        .env_remove("SOURCE_DATE_EPOCH");
    c
}

pub fn run(args: &[&str]) -> Output {
    krypta()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run krypta")
}

/// Runs krypta in `dir` with `input` on stdin, fed from a thread (a large input and a large
/// output cannot block each other). A broken pipe while feeding is not an error: krypta may
/// refuse before it reads stdin, which its exit code says.
pub fn run_stdin_in(dir: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut c = krypta()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run krypta");
    let mut stdin = c.stdin.take().unwrap();
    let data = input.to_vec();
    let feeder = std::thread::spawn(move || match std::io::Write::write_all(&mut stdin, &data) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    });
    let o = c.wait_with_output().unwrap();
    feeder.join().unwrap().expect("writing krypta's stdin");
    o
}

pub fn ok(args: &[&str]) -> Output {
    let o = run(args);
    assert!(
        o.status.success(),
        "krypta {args:?} failed: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Splits the end summary of `krypta c` / `krypta x` (issue 14: one line, last, unless `-q`)
/// off `stderr`, checking its shape: `krypta: NAME: N entries[ extracted], A in, B out (R%),
/// T` (R is `-` for no input). Returns the lines before it (each with its newline) and the summary line.
pub fn split_summary(stderr: &str) -> (String, String) {
    let body = stderr
        .strip_suffix('\n')
        .expect("stderr ends with a newline");
    let (rest, last) = match body.rfind('\n') {
        Some(i) => (&stderr[..=i], &body[i + 1..]),
        None => ("", body),
    };
    assert!(
        last.starts_with("krypta: ")
            && last.contains(" entries")
            && last.contains(" in, ")
            && last.contains(" out (")
            && last.contains("), "),
        "no summary line at the end of: {stderr}"
    );
    (rest.to_string(), last.to_string())
}

/// Runs `krypta ARGS…` and returns (exit code, stderr).
pub fn code_and_stderr(args: &[&str]) -> (i32, String) {
    let o = krypta().args(args).output().unwrap();
    (code(&o), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Runs `krypta ARGS… ARCHIVE` (the archive last) and returns (exit code, stderr).
pub fn code_and_stderr_on(args: &[&str], archive: &Path) -> (i32, String) {
    let o = krypta().args(args).arg(archive).output().unwrap();
    (code(&o), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// `stderr` without the one end-summary line of `krypta c` / `krypta x` (checked to be there,
/// with the shape [`split_summary`] checks); on exit 6 it comes before the final error line.
pub fn drop_summary(stderr: &str) -> String {
    let is_summary = |l: &str| {
        l.starts_with("krypta: ")
            && l.contains(" entries")
            && l.contains(" in, ")
            && l.contains(" out (")
            && l.contains("), ")
    };
    let n = stderr.lines().filter(|l| is_summary(l)).count();
    assert_eq!(n, 1, "one summary line expected in: {stderr}");
    stderr
        .lines()
        .filter(|l| !is_summary(l))
        .map(|l| format!("{l}\n"))
        .collect()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code, not a signal")
}

/// What a tree holds, by relative path: (type, mode, mtime ns, size, content digest or link).
#[derive(Debug, PartialEq, Eq)]
pub struct Node {
    pub kind: char,
    pub mode: u32,
    pub mtime_ns: i128,
    pub size: u64,
    pub content: String,
}

pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, Node> {
    let mut m = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).min_depth(1).sort_by_file_name() {
        let e = e.expect("walk");
        let md = e.path().symlink_metadata().expect("lstat");
        let ft = md.file_type();
        let (kind, content, size) = if ft.is_symlink() {
            (
                'l',
                std::fs::read_link(e.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                0,
            )
        } else if ft.is_dir() {
            ('d', String::new(), 0)
        } else {
            let bytes = std::fs::read(e.path()).unwrap();
            ('-', blake3::hash(&bytes).to_hex().to_string(), md.len())
        };
        let mtime_ns = md.mtime() as i128 * 1_000_000_000 + md.mtime_nsec() as i128;
        let mode = if ft.is_symlink() {
            0
        } else {
            md.permissions().mode() & 0o7777
        };
        // Directory mtimes of the root's children are compared; symlink mtimes too.
        m.insert(
            e.path().strip_prefix(root).unwrap().to_path_buf(),
            Node {
                kind,
                mode,
                mtime_ns,
                size,
                content,
            },
        );
    }
    m
}

pub fn assert_same_tree(a: &Path, b: &Path) {
    let sa = snapshot(a);
    let sb = snapshot(b);
    let ka: Vec<_> = sa.keys().collect();
    let kb: Vec<_> = sb.keys().collect();
    assert_eq!(
        ka,
        kb,
        "different paths in {} and {}",
        a.display(),
        b.display()
    );
    for (p, na) in &sa {
        assert_eq!(na, &sb[p], "{} differs", p.display());
    }
}

pub fn write(path: &Path, data: &[u8]) {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(path, data).unwrap();
}

/// Deterministic pseudo-random bytes (xorshift), compressible when `text` is set.
pub fn bytes(n: usize, seed: u64, text: bool) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let words: [&[u8]; 8] = [
        b"archive ",
        b"block ",
        b"the ",
        b"of ",
        b"krypta ",
        b"backup\n",
        b"zstd ",
        b"key ",
    ];
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if text {
            v.extend_from_slice(words[(x % 8) as usize]);
        } else {
            v.extend_from_slice(&x.to_le_bytes());
        }
    }
    v.truncate(n);
    v
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// The names of this process's user and group as `getpwuid`/`getgrgid` give them (what an
/// archive stores, `l -l` and `l --json` show): from /etc/passwd and /etc/group, or the id
/// when it has no entry there.
#[allow(dead_code)]
pub fn own_names() -> (String, String) {
    let name = |id: u32, file: &str| {
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .map(|l| l.split(':').collect::<Vec<_>>())
            .find(|f| f.len() > 2 && f[2] == id.to_string())
            .map_or(id.to_string(), |f| f[0].to_string())
    };
    (
        name(rustix::process::getuid().as_raw(), "/etc/passwd"),
        name(rustix::process::getgid().as_raw(), "/etc/group"),
    )
}
