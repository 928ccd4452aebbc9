//! System calls per small file, counted with `strace -f -c` (deterministic: the difference
//! between extracting 2N and N files, divided by N). Issue 13 item 2 counted 11 per file on
//! extraction (getrandom, openat, pwrite, ftruncate, fchown, fchmod, utimensat, fcntl,
//! fstatat, renameat2, close×2); `super::restore` skips every call whose effect is already
//! there, and a file is written unnamed (`O_TMPFILE`) and linked into place (`linkat`) rather
//! than created under a temporary name and renamed. Needs `strace` (Debian package strace; .ci/run installs it); says SKIP without it.

mod common;
mod meta_common;

use std::collections::BTreeMap;
use std::path::Path;

use meta_common::{is_root, tool, tools};

/// The calls of the per-file paths of `c` and `x`. `fcntl(F_GETFD)` is left out: the
/// standard library's debug builds (these tests' binary) check every descriptor it closes
/// with it; release builds do not.
const WATCHED: &[&str] = &[
    "openat",
    "open",
    "pwrite64",
    "write",
    "ftruncate",
    "fchown",
    "fchownat",
    "fchmod",
    "fchmodat",
    "utimensat",
    "newfstatat",
    "statx",
    "renameat2",
    "linkat",
    "close",
    "getrandom",
    "dup",
    "fsetxattr",
    "lsetxattr",
    "setxattr",
    "llistxattr",
    "listxattr",
    "flistxattr",
    "lgetxattr",
    "getxattr",
    "fgetxattr",
    "fsync",
    "fdatasync",
    "faccessat",
    "faccessat2",
    "fstat",
    "pread64",
    "read",
];

/// Calls of `krypta ARGS` in `dir` by name (`strace -f -c`), restricted to [`WATCHED`].
fn count(dir: &Path, args: &[&str]) -> BTreeMap<String, i64> {
    let out = dir.join("strace.txt");
    let o = tool("strace")
        .args(["-f", "-c", "-o"])
        .arg(&out)
        .arg(env!("CARGO_BIN_EXE_krypta"))
        .args(args)
        .current_dir(dir)
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // "% time  seconds  usecs/call  calls  [errors]  syscall"
        if f.len() >= 5
            && let (Ok(calls), Some(name)) = (f[3].parse::<i64>(), f.last())
            && WATCHED.contains(name)
        {
            m.insert(name.to_string(), calls);
        }
    }
    m
}

/// A directory `t` of `n` small files (`f0`.. with a few words each) in `dir`.
fn small_files(dir: &Path, n: usize, owner: Option<u32>) {
    let t = dir.join("t");
    std::fs::create_dir_all(&t).unwrap();
    for i in 0..n {
        let p = t.join(format!("f{i}"));
        std::fs::write(&p, format!("a few words, number {i}\n")).unwrap();
        if let Some(o) = owner {
            std::os::unix::fs::chown(&p, Some(o), Some(o)).unwrap();
        }
    }
}

/// How many calls two runs' fixed costs may differ by (see [`per_file`]).
const MAX_JITTER: i64 = 4;

/// Per-file calls of `c` then of `x -j 1` for a tree of small files: (create, extract).
fn per_file(owner: Option<u32>) -> (BTreeMap<String, i64>, BTreeMap<String, i64>) {
    const N: usize = 300;
    let mut results = Vec::new();
    for n in [N, 2 * N] {
        let tmp = tempfile::tempdir().unwrap();
        small_files(tmp.path(), n, owner);
        let c = count(tmp.path(), &["c", "-q", "-j", "1", "a.kry", "t"]);
        let x = count(tmp.path(), &["x", "-q", "-j", "1", "a.kry", "-o", "out"]);
        results.push((c, x));
    }
    let delta = |a: &BTreeMap<String, i64>, b: &BTreeMap<String, i64>| {
        let mut d = BTreeMap::new();
        for k in a.keys().chain(b.keys()) {
            let diff = b.get(k).copied().unwrap_or(0) - a.get(k).copied().unwrap_or(0);
            // The per-file count is exact; what a run does once (thread start-up, the
            // archive's own descriptors) differs between two runs by a call or two with the
            // scheduling (seen under load: one `close` more in one of the runs), so the
            // difference is rounded, and only that once-per-run jitter is allowed for.
            let per_file = (diff + N as i64 / 2).div_euclid(N as i64);
            let jitter = diff - per_file * N as i64;
            assert!(
                jitter.abs() <= MAX_JITTER,
                "{k}: {diff} calls for {N} more files is no whole number per file"
            );
            if per_file != 0 {
                d.insert(k.clone(), per_file);
            }
        }
        d
    };
    (
        delta(&results[0].0, &results[1].0),
        delta(&results[0].1, &results[1].1),
    )
}

fn calls(list: &[(&str, i64)]) -> BTreeMap<String, i64> {
    list.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn extracting_a_small_file_makes_five_calls_and_archiving_one_seven() {
    if !tools("extracting_a_small_file_makes_five_calls", &["strace"]) {
        return;
    }
    // Owned by the extracting user: no chown, created with its final mode, no chmod.
    let me = rustix::process::geteuid().as_raw();
    let (c, x) = per_file(Some(me));
    assert_eq!(
        x,
        calls(&[
            ("openat", 1),
            ("pwrite64", 1),
            ("utimensat", 1),
            ("linkat", 1),
            ("close", 1),
        ])
    );
    // Archiving: the walk `lstat`s the file, opens it relative to its directory (no
    // `faccessat` check, no path lookup) and lists its attributes on the descriptor (no
    // attributes, no reads); the reading thread `fstat`s it (kind and size), reads it in one
    // `pread`, `fstat`s it again (changed while read?) and closes it (issue 13: was 8 calls,
    // two of them path lookups through /proc and the whole path).
    assert_eq!(
        c,
        calls(&[
            ("newfstatat", 1),
            ("openat", 1),
            ("flistxattr", 1),
            ("fstat", 2),
            ("pread64", 1),
            ("close", 1),
        ])
    );
}

#[test]
fn as_root_a_file_of_another_owner_adds_exactly_chown_and_chmod() {
    if !tools("as_root_a_file_of_another_owner", &["strace"]) || !is_root() {
        eprintln!("SKIP as_root_a_file_of_another_owner: needs root and strace");
        return;
    }
    let (_, x) = per_file(Some(65534));
    assert_eq!(
        x,
        calls(&[
            ("openat", 1),
            ("pwrite64", 1),
            ("fchown", 1),
            ("fchmod", 1),
            ("utimensat", 1),
            ("linkat", 1),
            ("close", 1),
        ])
    );
}

#[test]
fn creating_an_archive_fsyncs_it_and_its_directory_unless_no_fsync() {
    if !tools("creating_an_archive_fsyncs", &["strace"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    small_files(tmp.path(), 3, None);
    // The default (README, "Durability"): the archive file before its rename, then the
    // directory that holds its new name.
    let synced = count(tmp.path(), &["c", "-q", "a.kry", "t"]);
    assert_eq!(synced.get("fsync"), Some(&2), "{synced:?}");
    assert_eq!(synced.get("fdatasync"), None, "{synced:?}");
    let unsynced = count(tmp.path(), &["c", "-q", "--no-fsync", "b.kry", "t"]);
    assert_eq!(unsynced.get("fsync"), None, "{unsynced:?}");
    assert_eq!(unsynced.get("fdatasync"), None, "{unsynced:?}");
    // Extraction syncs nothing (a restore can be re-run), and the unsynced archive is whole.
    let x = count(tmp.path(), &["x", "-q", "b.kry", "-o", "out"]);
    assert_eq!(x.get("fsync"), None, "{x:?}");
    assert_eq!(x.get("fdatasync"), None, "{x:?}");
    for i in 0..3 {
        assert_eq!(
            std::fs::read(tmp.path().join(format!("out/t/f{i}"))).unwrap(),
            format!("a few words, number {i}\n").into_bytes()
        );
    }
}
