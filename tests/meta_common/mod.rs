//! Shared helpers for the metadata tests (extended attributes, ACLs, capabilities, owner
//! names): the real tools (`setfacl`/`getfacl`, `setfattr`/`getfattr`, `setcap`/`getcap`,
//! `stat`, `setpriv`), skips with a clear message when one is missing, and a snapshot of a
//! tree's metadata as those tools print it.

#![allow(dead_code)]

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `name` is an executable on `PATH`.
pub fn have(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            let p = d.join(name);
            std::fs::metadata(&p).is_ok_and(|m| m.is_file())
        })
    })
}

/// Returns false and prints why when one of `tools` is missing (the test then returns early).
pub fn tools(test: &str, tools: &[&str]) -> bool {
    let missing: Vec<&&str> = tools.iter().filter(|t| !have(t)).collect();
    if missing.is_empty() {
        return true;
    }
    eprintln!(
        "SKIP {test}: needs {missing:?} (Debian packages acl, attr, libcap2-bin; .ci/run installs them)"
    );
    false
}

/// Whether the process is root (tests that need it skip otherwise, saying so).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Runs a tool, panicking with its stderr when it fails; returns stdout.
pub fn sh(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {cmd}: {e}"));
    assert!(
        o.status.success(),
        "{cmd} {args:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs a tool in directory `dir`; returns stdout (stderr when it fails is included).
pub fn sh_in(dir: &Path, cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("run {cmd}: {e}"));
    let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
    if !o.status.success() {
        s.push_str(&format!(
            "[{cmd} failed: {}] {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    s
}

/// A temporary directory on a filesystem that takes `user.*` attributes (`/tmp` unless it is
/// a tmpfs older than Linux 6.6; then the crate's target directory, on disk).
pub fn xattr_tempdir() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    if user_xattrs_work(t.path()) {
        return t;
    }
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let t = tempfile::tempdir_in(&base).unwrap();
    assert!(
        user_xattrs_work(t.path()),
        "neither /tmp nor {} takes user.* extended attributes",
        base.display()
    );
    t
}

fn user_xattrs_work(dir: &Path) -> bool {
    let p = dir.join(".probe");
    std::fs::write(&p, b"").unwrap();
    let ok = rustix::fs::setxattr(
        &p,
        "user.krypta-probe",
        b"1",
        rustix::fs::XattrFlags::empty(),
    )
    .is_ok();
    std::fs::remove_file(&p).unwrap();
    ok
}

/// Sets an attribute on `p` without following a link (panics on failure).
pub fn set_xattr(p: &Path, name: &str, value: &[u8]) {
    rustix::fs::lsetxattr(p, name, value, rustix::fs::XattrFlags::empty())
        .unwrap_or_else(|e| panic!("lsetxattr {} {name}: {e}", p.display()));
}

/// The value of an attribute of `p` (not following a link), as the kernel returns it.
pub fn get_xattr(p: &Path, name: &str) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 65536];
    match rustix::fs::lgetxattr(p, name, &mut buf[..]) {
        Ok(n) => Some(buf[..n].to_vec()),
        Err(rustix::io::Errno::NODATA) => None,
        Err(e) => panic!("lgetxattr {} {name}: {e}", p.display()),
    }
}

/// Relative paths of everything below `root`, `.` first, sorted (not following links).
pub fn rel_paths(root: &Path) -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from(".")];
    for e in walkdir::WalkDir::new(root).min_depth(1).sort_by_file_name() {
        let e = e.unwrap();
        v.push(PathBuf::from(".").join(e.path().strip_prefix(root).unwrap()));
    }
    v
}

/// The metadata of every path below `root` (and `root` itself, as `.`), as the real tools
/// print it: `stat -c '%F %a %u %g %U %G %.9Y'`, `getfattr -h -d -m - --absolute-names`,
/// `getfacl` (not for symbolic links, which have no ACLs; `getfacl` would follow them) and
/// `getcap` (files). Paths are relative, so two trees compare equal line by line.
pub fn meta_snapshot(root: &Path) -> String {
    let mut out = String::new();
    for rel in rel_paths(root) {
        let r = rel.to_str().expect("test trees have UTF-8 names");
        out.push_str(&sh_in(
            root,
            "stat",
            &["-c", "%n %F %a %u %g %U %G %.9Y", "--", r],
        ));
        out.push_str(&sh_in(
            root,
            "getfattr",
            &["-h", "-d", "-m", "-", "--absolute-names", "--", r],
        ));
        let md = std::fs::symlink_metadata(root.join(&rel)).unwrap();
        if !md.file_type().is_symlink() {
            out.push_str(&sh_in(root, "getfacl", &["--", r]));
        }
        if md.is_file() {
            out.push_str(&sh_in(root, "getcap", &["--", r]));
        }
    }
    out
}

/// A copy of a small real binary (`/bin/true`) at `dest`.
pub fn copy_binary(dest: &Path) {
    let src = ["/bin/true", "/usr/bin/true"]
        .iter()
        .map(Path::new)
        .find(|p| p.exists())
        .expect("/bin/true");
    std::fs::copy(src, dest).unwrap();
}

/// The raw bytes of a path, for comparing with archive paths.
pub fn pb(p: &Path) -> Vec<u8> {
    p.as_os_str().as_bytes().to_vec()
}
