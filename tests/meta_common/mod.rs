//! Shared helpers for the metadata tests (extended attributes, ACLs, capabilities, owner
//! names): the real tools (`setfacl`/`getfacl`, `setfattr`/`getfattr`, `setcap`/`getcap`,
//! `stat`, `setpriv`), skips with a clear message when one is missing, and a snapshot of a
//! tree's metadata as those tools print it.

#![allow(dead_code)]

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the tool `name` is: on `PATH`, or in `/usr/sbin` or `/sbin` (setcap and getcap live
/// there, and a CI environment's `PATH` may lack them).
pub fn resolve(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
}

/// Whether the tool `name` is installed.
pub fn have(name: &str) -> bool {
    resolve(name).is_some()
}

/// A command for the tool `name` (resolved as [`resolve`] does).
pub fn tool(name: &str) -> Command {
    Command::new(resolve(name).unwrap_or_else(|| PathBuf::from(name)))
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
    let o = tool(cmd)
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
    let o = tool(cmd)
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

/// Sets mode bits exactly.
pub fn chmod(p: &Path, m: u32) {
    rustix::fs::chmod(p, rustix::fs::Mode::from_raw_mode(m)).unwrap();
}

/// Sets the mtime of `p` (not following a link).
pub fn set_mtime(p: &Path, secs: i64, nanos: u32) {
    let ts = rustix::fs::Timespec {
        tv_sec: secs,
        tv_nsec: nanos as i64,
    };
    let t = rustix::fs::Timestamps {
        last_access: ts,
        last_modification: ts,
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        p,
        &t,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
}

/// Builds the tree of the round trips in `root` (an existing, empty directory), owned by
/// `owner` (uid = gid) where a file's owner is not the point. Root only (chown, setcap).
pub fn build_tree(root: &Path, owner: u32) {
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let f = root.join("f");
    std::fs::write(&f, b"text\n").unwrap();
    set_xattr(&f, "user.binary", &[0, 1, 2, 0xff, 0, 0x80]);
    set_xattr(&f, &format!("user.{}", "L".repeat(250)), b"long name");
    set_xattr(&f, "user.empty", b"");
    sh("setfacl", &["-m", "u:nobody:r", &s(&f)]);
    let d = root.join("d");
    std::fs::create_dir(&d).unwrap();
    // g is made before d gets its default ACL, so g has no ACL; after a restore it must
    // still have none (d's default ACL is set after its children).
    std::fs::write(d.join("g"), b"g").unwrap();
    sh("setfacl", &["-d", "-m", "u:nobody:rx", &s(&d)]);
    let ro = root.join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::write(ro.join("inside"), b"in a read-only directory").unwrap();
    std::fs::create_dir(ro.join("sub")).unwrap();
    std::fs::write(ro.join("sub/deeper"), b"deeper").unwrap();
    let suid = root.join("suid");
    copy_binary(&suid);
    let cap = root.join("cap");
    copy_binary(&cap);
    std::os::unix::fs::symlink("f", root.join("link")).unwrap();
    for e in walkdir::WalkDir::new(root).contents_first(true) {
        let p = e.unwrap().into_path();
        std::os::unix::fs::lchown(&p, Some(owner), Some(owner)).unwrap();
    }
    // After chown, which clears capabilities and setuid.
    sh("setcap", &["cap_net_raw+ep", &s(&cap)]);
    chmod(&suid, 0o4755);
    chmod(&f, 0o644);
    chmod(&ro.join("sub"), 0o555);
    chmod(&ro, 0o555);
    chmod(root, 0o751);
    set_xattr(root, "user.root", b"of the root");
    let mut t = 1_600_000_000;
    for e in walkdir::WalkDir::new(root)
        .contents_first(true)
        .sort_by_file_name()
    {
        let p = e.unwrap().into_path();
        t += 1;
        set_mtime(&p, t, 123_456_789);
    }
    set_mtime(root, -86_400, 5);
}

/// Whether the test can run: root and the tools (else a SKIP line).
pub fn root_tools(test: &str) -> bool {
    if !is_root() {
        eprintln!("SKIP {test}: needs root (chown, setcap, trusted.*)");
        return false;
    }
    tools(
        test,
        &["setfacl", "getfacl", "getfattr", "setcap", "getcap", "stat"],
    )
}

/// `krypta ARGS` as nobody (`setpriv --reuid=nobody --regid=nogroup --clear-groups`) in `dir`
/// (the test binary's krypta, without the password and epoch variables).
pub fn as_nobody(dir: &Path, args: &[&str]) -> std::process::Output {
    tool("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_krypta"))
        .args(args)
        .current_dir(dir)
        .env_remove("KRYPTA_PASSWORD")
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("setpriv")
}
