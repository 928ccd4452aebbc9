//! Restoring as an ordinary user over an earlier restore of a tree with read-only directories
//! (a Go module cache, a Nix-store-like tree: all `0555`), and into read-only directories the
//! user owns: each is opened up (u+wx) while entries are made in it and gets its final mode at
//! the end (README "Safe extraction"). A directory owned by someone else is never touched.
//!
//! The user is `nobody` (uid/gid 65534): run as root, these tests run the binary as nobody;
//! run as an ordinary user, as that user (its own directories). Bug h62: the second
//! `x -f` stopped at the first file with "create temporary file: Permission denied" (exit 4).

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt, chown};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{code, krypta, s, write};

/// Whether this test binary runs as root (then the binary runs as nobody).
fn root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A scratch directory the test user owns and can reach; removed (after its read-only
/// directories are opened again) on drop.
struct Work {
    tmp: tempfile::TempDir,
    /// The krypta binary the test user runs: the test build's, or a copy of it in the
    /// scratch directory when the user cannot reach the build (a checkout under a `0700`
    /// home, as a CI runner's may be), so that the tests run there instead of skipping.
    bin: PathBuf,
}

impl Work {
    /// `None` (with a SKIP line) when nobody cannot reach the scratch directory.
    fn new(test: &str) -> Option<Work> {
        let tmp = tempfile::tempdir().unwrap();
        chmod(tmp.path(), 0o755);
        if root() {
            chown(tmp.path(), Some(65534), Some(65534)).unwrap();
        }
        let mut w = Work {
            tmp,
            bin: PathBuf::from(env!("CARGO_BIN_EXE_krypta")),
        };
        if code(&w.user(&["--version"])) != 0 && root() {
            let copy = w.join("krypta-bin");
            std::fs::copy(&w.bin, &copy).unwrap();
            chmod(&copy, 0o755);
            w.bin = copy;
        }
        let probe = w.user(&["--version"]);
        if code(&probe) != 0 {
            eprintln!(
                "SKIP {test}: nobody cannot run krypta in {}",
                w.path().display()
            );
            return None;
        }
        Some(w)
    }

    fn path(&self) -> &Path {
        self.tmp.path()
    }

    fn join(&self, rel: &str) -> PathBuf {
        self.path().join(rel)
    }

    /// Runs `krypta ARGS` in the scratch directory as the test user, under umask 022.
    fn user(&self, args: &[&str]) -> Output {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg("umask 022 && exec \"$0\" \"$@\"")
            .arg(&self.bin)
            .args(args)
            .current_dir(self.path())
            .env_remove("KRYPTA_PASSWORD")
            .stdin(Stdio::null());
        if root() {
            c.uid(65534).gid(65534);
        }
        c.output().unwrap()
    }

    /// Starts `krypta ARGS` in the scratch directory as the test user, stdin piped.
    fn user_spawn(&self, args: &[&str]) -> std::process::Child {
        let mut c = Command::new(&self.bin);
        c.env_remove("KRYPTA_PASSWORD")
            .env_remove("SOURCE_DATE_EPOCH")
            .args(args)
            .current_dir(self.path())
            .stdin(Stdio::piped())
            .stderr(Stdio::piped());
        if root() {
            c.uid(65534).gid(65534);
        }
        c.spawn().unwrap()
    }

    /// [`Work::user`], which must exit with `want`; returns its stderr.
    fn user_code(&self, args: &[&str], want: i32) -> String {
        let o = self.user(args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(code(&o), want, "krypta {args:?}: {err}");
        err
    }

    /// Makes `rel` a directory the test user owns, with `mode`.
    fn user_dir(&self, rel: &str, mode: u32) -> PathBuf {
        let d = self.join(rel);
        std::fs::create_dir_all(&d).unwrap();
        if root() {
            chown(&d, Some(65534), Some(65534)).unwrap();
        }
        chmod(&d, mode);
        d
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        // An ordinary user cannot remove what is below a read-only directory.
        for e in walkdir::WalkDir::new(self.path()).into_iter().flatten() {
            if e.file_type().is_dir() {
                let _ = std::fs::set_permissions(e.path(), PermissionsExt::from_mode(0o755));
            }
        }
    }
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, PermissionsExt::from_mode(mode)).unwrap();
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// The names in `dir` (sorted).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `ro/t/{g, sub/f, sub/ro (0444), nox/h, noread/i}`, with `t` and `t/sub` 0555, `t/nox` 0600
/// (not searchable) and `t/noread` 0311 (not readable), archived as `ro.kry` (`-C ro t`).
/// Only root can archive what is below `nox` and `noread`: without root they are left out
/// ([`dirs`]).
fn read_only_tree(w: &Work) {
    let src = w.join("ro");
    write(&src.join("t/g"), b"b\n");
    write(&src.join("t/sub/f"), b"a\n");
    write(&src.join("t/sub/ro"), b"read-only file\n");
    chmod(&src.join("t/sub/ro"), 0o444);
    chmod(&src.join("t/sub"), 0o555);
    if root() {
        write(&src.join("t/nox/h"), b"below a directory without search\n");
        write(&src.join("t/noread/i"), b"below a directory without read\n");
        chmod(&src.join("t/nox"), 0o600);
        chmod(&src.join("t/noread"), 0o311);
    }
    chmod(&src.join("t"), 0o555);
    let o = krypta()
        .args(["c", "-f", s(&w.join("ro.kry")), "-C", s(&src), "t"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    chmod(&w.join("ro.kry"), 0o644);
}

/// The modes of the restored tree's directories and read-only file.
fn modes(out: &Path) -> Vec<(&'static str, u32)> {
    dirs()
        .iter()
        .map(|&(r, _)| (r, mode(&out.join(r))))
        .collect()
}

/// The paths [`modes`] looks at and their stored modes.
fn dirs() -> Vec<(&'static str, u32)> {
    let mut v = vec![("t", 0o555), ("t/sub", 0o555), ("t/sub/ro", 0o444)];
    if root() {
        v.extend([("t/nox", 0o600), ("t/noread", 0o311)]);
    }
    v
}

#[test]
fn force_over_an_earlier_restore_of_read_only_directories_restores_everything() {
    let Some(w) = Work::new("force_over_an_earlier_restore") else {
        return;
    };
    read_only_tree(&w);
    let out = w.user_dir("out", 0o755);
    w.user_code(&["x", "-o", "out", "ro.kry"], 0);
    assert_eq!(modes(&out), dirs());
    // Changed in place (the file is writable, its directory not): -f puts it back.
    std::fs::write(out.join("t/g"), b"changed\n").unwrap();
    let ino_ro = std::fs::metadata(out.join("t/sub/ro")).unwrap().ino();
    let err = w.user_code(&["x", "-f", "-o", "out", "ro.kry"], 0);
    assert!(!err.contains("Permission denied"), "{err}");
    assert_eq!(std::fs::read(out.join("t/g")).unwrap(), b"b\n");
    assert_eq!(std::fs::read(out.join("t/sub/f")).unwrap(), b"a\n");
    // The read-only file was replaced (a new inode), not written through.
    assert_eq!(
        std::fs::read(out.join("t/sub/ro")).unwrap(),
        b"read-only file\n"
    );
    assert_ne!(
        std::fs::metadata(out.join("t/sub/ro")).unwrap().ino(),
        ino_ro
    );
    if root() {
        chmod(&out.join("t/nox"), 0o700);
        assert_eq!(
            std::fs::read(out.join("t/nox/h")).unwrap(),
            b"below a directory without search\n"
        );
        chmod(&out.join("t/nox"), 0o600);
    }
    // Every directory ends with the archive's mode, the output directory with its own, and
    // no temporary file is left anywhere.
    assert_eq!(modes(&out), dirs());
    assert_eq!(mode(&out), 0o755);
    let want: &[&str] = if root() {
        &["g", "noread", "nox", "sub"]
    } else {
        &["g", "sub"]
    };
    assert_eq!(names(&out.join("t")), want);
    assert_eq!(names(&out.join("t/sub")), ["f", "ro"]);
}

#[test]
fn keep_and_skip_existing_over_read_only_directories_touch_nothing() {
    let Some(w) = Work::new("keep_and_skip_existing") else {
        return;
    };
    read_only_tree(&w);
    let out = w.user_dir("out", 0o755);
    w.user_code(&["x", "-o", "out", "ro.kry"], 0);
    std::fs::write(out.join("t/g"), b"changed\n").unwrap();
    let mtime = std::fs::metadata(out.join("t")).unwrap().mtime();
    // -k names the kept files (exit 6, README), --skip-existing is silent (exit 0).
    let err = w.user_code(&["x", "-k", "-o", "out", "ro.kry"], 6);
    assert!(!err.contains("Permission denied"), "{err}");
    w.user_code(&["x", "--skip-existing", "-o", "out", "ro.kry"], 0);
    assert_eq!(std::fs::read(out.join("t/g")).unwrap(), b"changed\n");
    assert_eq!(modes(&out), dirs());
    assert_eq!(std::fs::metadata(out.join("t")).unwrap().mtime(), mtime);
}

#[test]
fn a_missing_file_is_restored_into_a_kept_read_only_directory_which_keeps_its_mode() {
    let Some(w) = Work::new("a_missing_file_is_restored") else {
        return;
    };
    read_only_tree(&w);
    let out = w.user_dir("out", 0o755);
    w.user_code(&["x", "-o", "out", "ro.kry"], 0);
    // A directory -k keeps, with a mode of its own, missing a file.
    chmod(&out.join("t/sub"), 0o755);
    std::fs::remove_file(out.join("t/sub/f")).unwrap();
    chmod(&out.join("t/sub"), 0o551);
    w.user_code(&["x", "--skip-existing", "-o", "out", "ro.kry"], 0);
    assert_eq!(std::fs::read(out.join("t/sub/f")).unwrap(), b"a\n");
    assert_eq!(mode(&out.join("t/sub")), 0o551);
    assert_eq!(mode(&out.join("t")), 0o555);
}

#[test]
fn a_read_only_output_directory_the_user_owns_is_filled_and_keeps_its_mode() {
    let Some(w) = Work::new("a_read_only_output_directory") else {
        return;
    };
    read_only_tree(&w);
    let out = w.user_dir("out", 0o555);
    w.user_code(&["x", "-o", "out", "ro.kry"], 0);
    assert_eq!(mode(&out), 0o555);
    assert_eq!(std::fs::read(out.join("t/sub/f")).unwrap(), b"a\n");
    assert_eq!(modes(&out), dirs());
    // Members selected: their parents are not restored as entries, and keep their mode.
    chmod(&out.join("t/sub"), 0o755);
    std::fs::remove_file(out.join("t/sub/f")).unwrap();
    chmod(&out.join("t/sub"), 0o500);
    w.user_code(&["x", "-o", "out", "ro.kry", "t/sub/f"], 0);
    assert_eq!(std::fs::read(out.join("t/sub/f")).unwrap(), b"a\n");
    assert_eq!(mode(&out.join("t/sub")), 0o500);
    assert_eq!(mode(&out), 0o555);
}

#[test]
fn a_directory_of_another_user_is_never_opened_up_its_entries_named_and_the_rest_restored() {
    if !root() {
        eprintln!("SKIP a_directory_of_another_user: needs root to own a directory");
        return;
    }
    let Some(w) = Work::new("a_directory_of_another_user") else {
        return;
    };
    // Members without their directories' entries: t/g, t/sub/f, u/h and u/hl, a hard link
    // to t/g.
    let src = w.join("src");
    write(&src.join("t/g"), b"g\n");
    write(&src.join("t/sub/f"), b"f\n");
    write(&src.join("u/h"), b"h\n");
    std::fs::hard_link(src.join("t/g"), src.join("u/hl")).unwrap();
    let o = krypta()
        .args(["c", "-f", s(&w.join("a.kry")), "-C", s(&src)])
        .args(["t/g", "t/sub/f", "u/h", "u/hl"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    chmod(&w.join("a.kry"), 0o644);
    let out = w.user_dir("out", 0o755);
    // Root's directory where t/ goes: searchable, not writable by nobody.
    std::fs::create_dir(out.join("t")).unwrap();
    chmod(&out.join("t"), 0o755);
    let err = w.user_code(&["x", "-f", "-o", "out", "a.kry"], 4);
    // Each refusal named (GNU tar: "Cannot open: Permission denied", exit 2), the rest
    // restored; before, the first refusal stopped the run.
    assert!(
        err.contains("warning: out/t/g: create temporary file: Permission denied"),
        "{err}"
    );
    assert!(
        err.contains("warning: out/t/sub: create directory: Permission denied"),
        "{err}"
    );
    assert!(
        err.contains(
            "warning: out/u/hl: skipped: hard link to t/g, which could not be made (permission denied)"
        ),
        "{err}"
    );
    assert!(
        err.contains("extracted, but 2 entries could not be made: permission denied"),
        "{err}"
    );
    assert_eq!(std::fs::read(out.join("u/h")).unwrap(), b"h\n");
    assert_eq!(names(&out.join("u")), ["h"]);
    assert_eq!(mode(&out.join("t")), 0o755);
    assert_eq!(std::fs::metadata(out.join("t")).unwrap().uid(), 0);
    assert!(names(&out.join("t")).is_empty());
    // The output directory itself root's and read-only: named, exit 4, nothing made.
    let ro = w.join("ro-root");
    std::fs::create_dir(&ro).unwrap();
    chmod(&ro, 0o555);
    let err = w.user_code(&["x", "-o", "ro-root", "a.kry"], 4);
    assert!(
        err.contains("warning: ro-root/t: create directory: Permission denied"),
        "{err}"
    );
    assert!(names(&ro).is_empty());
    assert_eq!(mode(&ro), 0o555);
}

#[test]
fn sigterm_puts_back_the_mode_of_the_directories_opened_up() {
    let Some(w) = Work::new("sigterm_puts_back") else {
        return;
    };
    let src = w.join("src");
    write(&src.join("t/a-small"), b"first\n");
    write(&src.join("t/big"), &common::bytes(2_000_000, 7, false));
    chmod(&src.join("t"), 0o555);
    let o = krypta()
        .args([
            "c",
            "-f",
            "-b",
            "64K",
            s(&w.join("a.kry")),
            "-C",
            s(&src),
            "t",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    chmod(&w.join("a.kry"), 0o644);
    let out = w.user_dir("out", 0o755);
    w.user_code(&["x", "-o", "out", "a.kry"], 0);
    assert_eq!(mode(&out.join("t")), 0o555);
    // Again with -f, from a pipe that stops half-way: krypta waits with t opened up.
    let a = std::fs::read(w.join("a.kry")).unwrap();
    let mut x = w.user_spawn(&["x", "-f", "-o", "out", "-"]);
    let mut stdin = x.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, &a[..a.len() / 2]).unwrap();
    let t = std::time::Instant::now();
    while mode(&out.join("t")) != 0o755 {
        assert!(t.elapsed().as_secs() < 20, "t was never opened up");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let kill = Command::new("kill")
        .args(["-TERM", &x.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = x.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(code(&o), 143, "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(mode(&out.join("t")), 0o555);
    assert_eq!(names(&out.join("t")), ["a-small", "big"]);
}

/// Sets the mtime of the directory `p` (`secs` since the epoch).
fn set_mtime(p: &Path, secs: u64) {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    std::fs::File::open(p)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_modified(t))
        .unwrap();
}

/// Regression (h67): `x -f` as a user over an existing directory of root's whose stored mode
/// (less the umask) and mtime it already has exited 4 ("out/d: chmod: Operation not
/// permitted"), as GNU tar does: the final chmod and utimes were made though nothing needed
/// changing, and only the owner may make them. A refused chmod or utimes of what the
/// directory already has is skipped now (exit 0); a real difference still fails (exit 4).
#[test]
fn force_over_another_users_directory_that_already_matches_exits_0() {
    if !root() {
        eprintln!("SKIP force_over_another_users_directory: needs root to own a directory");
        return;
    }
    let Some(w) = Work::new("force_over_another_users_directory") else {
        return;
    };
    const MTIME: u64 = 1_577_836_800; // 2020-01-01
    let src = w.join("src");
    write(&src.join("e/f"), b"f\n");
    std::fs::create_dir(src.join("d")).unwrap();
    chmod(&src.join("d"), 0o755);
    set_mtime(&src.join("d"), MTIME);
    let o = krypta()
        .args(["c", "-f", s(&w.join("a.kry")), "-C", s(&src), "d", "e"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    chmod(&w.join("a.kry"), 0o644);
    let out = w.user_dir("out", 0o755);
    let d = out.join("d");
    std::fs::create_dir(&d).unwrap();
    chmod(&d, 0o755);
    set_mtime(&d, MTIME);

    let err = w.user_code(&["x", "-q", "-f", "-o", "out", "a.kry"], 0);
    assert_eq!(err, "");
    assert_eq!(std::fs::read(out.join("e/f")).unwrap(), b"f\n");
    let m = std::fs::metadata(&d).unwrap();
    assert_eq!(
        (m.uid(), m.mode() & 0o7777, m.mtime()),
        (0, 0o755, MTIME as i64)
    );

    // A mode that differs cannot be set by nobody: the refusal stands.
    chmod(&d, 0o775);
    let err = w.user_code(&["x", "-q", "-f", "-o", "out", "a.kry"], 4);
    assert!(
        err.contains("out/d: chmod: Operation not permitted"),
        "{err}"
    );
    assert_eq!(mode(&d), 0o775);
    // So does an mtime that differs.
    chmod(&d, 0o755);
    set_mtime(&d, MTIME + 1);
    let err = w.user_code(&["x", "-q", "-f", "-o", "out", "a.kry"], 4);
    assert!(
        err.contains("out/d: set mtime: Operation not permitted"),
        "{err}"
    );
    assert_eq!(std::fs::metadata(&d).unwrap().mtime(), MTIME as i64 + 1);
}
