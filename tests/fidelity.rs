//! End-to-end filesystem fidelity through the binary (issue 3): `krypta c` then `krypta x`
//! restores every entry kind, mode, owner, nanosecond mtime, hard link and name byte; FIFOs,
//! sockets and devices are skipped with a warning naming each; a real tree round-trips; `list`
//! escapes raw names; `-L` follows links; the archive being written is never stored in
//! itself. Sparse, >4 GiB, >PATH_MAX and changing inputs: `fidelity_large.rs`.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt, chown, lchown, symlink};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{bytes, code, krypta, s, write};
use filetime::FileTime;

/// Everything compared for one entry of a tree.
#[derive(Debug, PartialEq, Eq)]
struct Node {
    /// `-`, `d` or `l`.
    kind: char,
    /// `st_mode & 0o7777` (0 for symbolic links: Linux ignores their mode).
    mode: u32,
    uid: u32,
    gid: u32,
    /// (`st_mtime`, `st_mtime_nsec`).
    mtime: (i64, i64),
    size: u64,
    /// Link target bytes, or the BLAKE3 digest of a file's content.
    content: Vec<u8>,
    /// For a file with other links in the tree: the first of its paths in walk order.
    same_inode_as: Option<PathBuf>,
}

/// BLAKE3 of a file's content, read in 1 MiB pieces (large updates use BLAKE3's SIMD).
fn b3_file(p: &Path) -> [u8; 32] {
    use std::io::Read;
    let mut h = blake3::Hasher::new();
    let mut f = std::fs::File::open(p).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    *h.finalize().as_bytes()
}

/// Walks `root` (not following links), keyed by the path relative to `root` (raw bytes).
fn tree(root: &Path) -> BTreeMap<PathBuf, Node> {
    let mut first_path: HashMap<(u64, u64), PathBuf> = HashMap::new();
    let mut m = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).min_depth(1).sort_by_file_name() {
        let e = e.unwrap();
        let md = e.path().symlink_metadata().unwrap();
        let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
        let ft = md.file_type();
        let (kind, content, mut same_inode_as) = if ft.is_symlink() {
            let t = std::fs::read_link(e.path()).unwrap();
            ('l', t.as_os_str().as_bytes().to_vec(), None)
        } else if ft.is_dir() {
            ('d', Vec::new(), None)
        } else {
            assert!(ft.is_file(), "{} is not a file", e.path().display());
            ('-', b3_file(e.path()).to_vec(), None)
        };
        if kind == '-' && md.nlink() > 1 {
            let first = first_path
                .entry((md.dev(), md.ino()))
                .or_insert_with(|| rel.clone());
            same_inode_as = Some(first.clone());
        }
        let node = Node {
            kind,
            mode: if kind == 'l' { 0 } else { md.mode() & 0o7777 },
            uid: md.uid(),
            gid: md.gid(),
            mtime: (md.mtime(), md.mtime_nsec()),
            size: if kind == '-' { md.len() } else { 0 },
            content,
            same_inode_as,
        };
        m.insert(rel, node);
    }
    m
}

fn assert_same_tree(src: &Path, dst: &Path) -> usize {
    let a = tree(src);
    let b = tree(dst);
    let ka: Vec<_> = a.keys().collect();
    let kb: Vec<_> = b.keys().collect();
    assert_eq!(
        ka,
        kb,
        "paths differ: {} vs {}",
        src.display(),
        dst.display()
    );
    for (p, na) in &a {
        assert_eq!(na, &b[p], "{} differs", p.display());
    }
    a.len()
}

/// Runs `krypta ARGS` in `cwd`.
fn kr(cwd: &Path, args: &[&str]) -> Output {
    krypta()
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn kr_ok(cwd: &Path, args: &[&str]) -> Output {
    let o = kr(cwd, args);
    assert_eq!(
        code(&o),
        0,
        "krypta {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn p(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(rel))
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn set_mtime(path: &Path, secs: i64, nanos: u32) {
    let t = FileTime::from_unix_time(secs, nanos);
    filetime::set_symlink_file_times(path, t, t).unwrap();
}

/// 16 components of 250 bytes below `t/deep`, then `leaf`: 4027 bytes from `t`.
fn deep_rel() -> Vec<u8> {
    let mut rel = b"t/deep".to_vec();
    for i in 0..16u8 {
        rel.push(b'/');
        rel.extend(std::iter::repeat_n(b'a' + i, 250));
    }
    rel.extend_from_slice(b"/leaf");
    rel
}

/// Builds `root/t` with every kind of entry the issue lists. Returns nothing: the test reads
/// what it needs back from disk.
fn build_tree(root: &Path) {
    let t = root.join("t");
    write(&t.join("big"), &bytes(300_000, 1, true));
    write(&t.join("rand"), &bytes(150_000, 2, false));
    write(&t.join("zero"), b"");
    std::fs::create_dir_all(t.join("empty")).unwrap();
    std::fs::create_dir_all(t.join("nest/inner/leafdir")).unwrap();
    write(&t.join("suid"), b"#!/bin/sh\necho hi\n");
    write(&t.join("sgid/f"), b"in a setgid dir\n");
    std::fs::create_dir_all(t.join("sticky")).unwrap();
    write(&t.join("ro"), b"read only\n");
    write(&t.join("none"), b"no access\n");
    write(&t.join("wide"), b"0666\n");
    std::fs::create_dir_all(t.join("sub")).unwrap();
    symlink("big", t.join("rel")).unwrap();
    symlink("../big", t.join("sub/up")).unwrap();
    symlink("/etc/passwd", t.join("abs")).unwrap();
    symlink("no/such/target", t.join("dangling")).unwrap();
    symlink(OsStr::from_bytes(b"tar\xffget\nx"), t.join("odd")).unwrap();
    write(&t.join("h1"), &bytes(70_000, 3, true));
    std::fs::hard_link(t.join("h1"), t.join("sub/h2")).unwrap();
    std::fs::hard_link(t.join("h1"), t.join("h3")).unwrap();
    write(&p(&t, b"caf\xff"), b"latin-1 name\n");
    write(&p(&t, b"line\nbreak"), b"newline name\n");
    write(&p(&t, b"back\\slash"), b"backslash name\n");
    write(&p(&t, b"dir\xfe/in"), b"inside a non-UTF-8 directory\n");
    write(&p(root, &deep_rel()), b"deep leaf\n");
    // Owners first: chown clears setuid/setgid.
    chown(t.join("big"), Some(1234), Some(5678)).unwrap();
    chown(t.join("sub"), Some(1234), Some(5678)).unwrap();
    chown(t.join("h1"), Some(42), Some(43)).unwrap();
    lchown(t.join("rel"), Some(1234), Some(5678)).unwrap();
    chown(t.join("suid"), Some(1234), Some(5678)).unwrap();
    chmod(&t.join("suid"), 0o4755);
    chmod(&t.join("sgid"), 0o2755);
    chmod(&t.join("sticky"), 0o1777);
    chmod(&t.join("ro"), 0o444);
    chmod(&t.join("none"), 0o000);
    chmod(&t.join("wide"), 0o666);
    chmod(&t.join("nest/inner"), 0o500);
    // Distinct mtimes, children before parents, a third of them before 1970.
    let mut i = 0i64;
    for e in walkdir::WalkDir::new(&t).min_depth(1).contents_first(true) {
        let e = e.unwrap();
        i += 1;
        let secs = if i % 3 == 0 {
            -1_000_000_000 + i
        } else {
            1_600_000_000 + i * 1000
        };
        set_mtime(
            e.path(),
            secs,
            ((i * 123_456_789 + 1) % 1_000_000_000) as u32,
        );
    }
    set_mtime(&t.join("ro"), -631_152_001, 999_999_999);
    set_mtime(&t.join("rel"), 1_234_567_890, 1);
}

#[test]
fn every_entry_kind_mode_owner_mtime_link_and_name_round_trips_as_root() {
    assert!(
        rustix::process::geteuid().is_root(),
        "these tests run as root"
    );
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    build_tree(&src);
    let kry = tmp.path().join("a.kry");
    kr_ok(&src, &["c", "-b", "64K", s(&kry), "t"]);
    let out = tmp.path().join("out");
    kr_ok(tmp.path(), &["x", s(&kry), "-o", s(&out)]);
    let n = assert_same_tree(&src.join("t"), &out.join("t"));
    assert_eq!(n, 46);

    let t = out.join("t");
    let md = |rel: &str| t.join(rel).symlink_metadata().unwrap();
    assert_eq!(md("suid").mode(), 0o104755);
    assert_eq!(md("sgid").mode(), 0o042755);
    assert_eq!(md("sticky").mode(), 0o041777);
    assert_eq!(md("none").mode(), 0o100000);
    assert_eq!(md("wide").mode(), 0o100666, "umask is not applied as root");
    assert_eq!(md("nest/inner").mode(), 0o040500);
    assert_eq!((md("suid").uid(), md("suid").gid()), (1234, 5678));
    assert_eq!((md("big").uid(), md("big").gid()), (1234, 5678));
    assert_eq!((md("sub").uid(), md("sub").gid()), (1234, 5678));
    assert_eq!((md("rel").uid(), md("rel").gid()), (1234, 5678));
    assert_eq!((md("sub/h2").uid(), md("sub/h2").gid()), (42, 43));
    assert_eq!(
        (md("ro").mtime(), md("ro").mtime_nsec()),
        (-631_152_001, 999_999_999)
    );
    assert_eq!(
        (md("rel").mtime(), md("rel").mtime_nsec()),
        (1_234_567_890, 1)
    );
    let link = |rel: &str| std::fs::read_link(t.join(rel)).unwrap();
    assert_eq!(link("rel"), Path::new("big"));
    assert_eq!(link("sub/up"), Path::new("../big"));
    assert_eq!(link("abs"), Path::new("/etc/passwd"));
    assert_eq!(link("dangling"), Path::new("no/such/target"));
    assert_eq!(link("odd").as_os_str().as_bytes(), b"tar\xffget\nx");
    assert_eq!(md("h1").ino(), md("sub/h2").ino());
    assert_eq!(md("h1").ino(), md("h3").ino());
    assert_eq!(md("h1").nlink(), 3);
    assert_ne!(md("h1").ino(), md("big").ino());
    assert_eq!(std::fs::read(p(&t, b"caf\xff")).unwrap(), b"latin-1 name\n");
    assert_eq!(
        std::fs::read(p(&t, b"line\nbreak")).unwrap(),
        b"newline name\n"
    );
    assert_eq!(
        std::fs::read(p(&t, b"dir\xfe/in")).unwrap(),
        b"inside a non-UTF-8 directory\n"
    );
    assert_eq!(deep_rel().len(), 4027);
    assert_eq!(std::fs::read(p(&out, &deep_rel())).unwrap(), b"deep leaf\n");
    assert!(std::fs::read_dir(t.join("empty")).unwrap().next().is_none());
}

/// Runs the binary as `nobody` (uid/gid 65534) under umask 022.
fn as_nobody(cwd: &Path, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("umask 022 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_krypta"))
        .args(args)
        .current_dir(cwd)
        .uid(65534)
        .gid(65534)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn special_bits_and_umask_need_root_or_same_permissions() {
    let tmp = tempfile::tempdir().unwrap();
    chmod(tmp.path(), 0o755);
    let src = tmp.path().join("src");
    write(&src.join("t/suid"), b"x");
    write(&src.join("t/wide"), b"y");
    write(&src.join("t/sgid/f"), b"z");
    std::fs::create_dir_all(src.join("t/sticky")).unwrap();
    chmod(&src.join("t/suid"), 0o4755);
    chmod(&src.join("t/wide"), 0o666);
    chmod(&src.join("t/sgid"), 0o2755);
    chmod(&src.join("t/sticky"), 0o1777);
    set_mtime(&src.join("t/suid"), -1, 5);
    let kry = tmp.path().join("a.kry");
    kr_ok(&src, &["c", s(&kry), "t"]);
    chmod(&kry, 0o644);
    let mut modes = Vec::new();
    for (out, extra) in [("plain", None), ("same", Some("--same-permissions"))] {
        let dir = tmp.path().join(out);
        std::fs::create_dir(&dir).unwrap();
        chown(&dir, Some(65534), Some(65534)).unwrap();
        let mut args = vec!["x", s(&kry), "-o", out];
        args.extend(extra);
        let o = as_nobody(tmp.path(), &args);
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
        let md = |rel: &str| dir.join(rel).symlink_metadata().unwrap();
        modes.push([
            md("t/suid").mode(),
            md("t/wide").mode(),
            md("t/sgid").mode(),
            md("t/sticky").mode(),
        ]);
        assert_eq!((md("t/suid").uid(), md("t/suid").gid()), (65534, 65534));
        assert_eq!((md("t/suid").mtime(), md("t/suid").mtime_nsec()), (-1, 5));
    }
    assert_eq!(modes[0], [0o100755, 0o100644, 0o040755, 0o040755]);
    assert_eq!(modes[1], [0o104755, 0o100666, 0o042755, 0o041777]);
}

/// Runs `krypta ARGS` in `cwd`, killing it (and failing) after `limit`.
fn kr_timeout(cwd: &Path, args: &[&str], limit: Duration) -> Output {
    let mut child = krypta()
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("krypta {args:?} still running after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn fifo_socket_and_device_are_skipped_with_a_warning_naming_each_without_hanging() {
    use rustix::fs::{CWD, FileType, Mode, makedev, mknodat};
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t");
    write(&t.join("regular"), b"kept\n");
    mknodat(
        CWD,
        t.join("fifo"),
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(t.join("sock")).unwrap();
    let dev = mknodat(
        CWD,
        t.join("null"),
        FileType::CharacterDevice,
        Mode::from_raw_mode(0o666),
        makedev(1, 3),
    )
    .is_ok();
    let limit = Duration::from_secs(60);
    let o = kr_timeout(tmp.path(), &["c", "a.kry", "t"], limit);
    let err = String::from_utf8(o.stderr.clone()).unwrap();
    // Skipped items are not in the archive: exit 6, as the README's table says (was 0).
    assert_eq!(code(&o), 6, "{err}");
    let err = common::drop_summary(&err);
    let mut want = vec!["krypta: warning: t/fifo: skipping FIFO"];
    if dev {
        want.push("krypta: warning: t/null: skipping character device");
    }
    want.push("krypta: warning: t/sock: skipping socket");
    let last = format!(
        "krypta: archive written, but {} item(s) were left out (see warnings)",
        want.len()
    );
    want.push(&last);
    assert_eq!(err.lines().collect::<Vec<_>>(), want);
    let o = kr_ok(tmp.path(), &["l", "a.kry"]);
    let list = String::from_utf8(o.stdout).unwrap();
    let names: Vec<&str> = list
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(names, ["t", "t/regular"]);
    // A FIFO named directly as the input: skipped, not opened, so no hang either; with
    // nothing else to archive no archive is written (was an empty archive, exit 0).
    let o = kr_timeout(tmp.path(), &["c", "b.kry", "t/fifo"], limit);
    assert_eq!(code(&o), 4);
    assert_eq!(
        String::from_utf8(o.stderr).unwrap(),
        "krypta: warning: t/fifo: skipping FIFO\n\
         krypta: b.kry: not written: nothing could be archived (1 input(s) or item(s) skipped, \
         see warnings)\n"
    );
    assert!(!tmp.path().join("b.kry").exists());
    kr_ok(tmp.path(), &["x", "a.kry", "-o", "out"]);
    let mut got: Vec<_> = std::fs::read_dir(tmp.path().join("out/t"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    got.sort();
    assert_eq!(got, ["regular"]);
}

#[test]
fn list_escapes_non_utf8_newline_and_backslash_names_unambiguously() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t");
    for name in [&b"caf\xff"[..], b"a\nb", b"a\\nb", b"tab\there"] {
        write(&p(&t, name), b"abc");
        chmod(&p(&t, name), 0o644);
        set_mtime(&p(&t, name), 1_700_000_000, 0);
    }
    symlink(OsStr::from_bytes(b"x\xffy"), t.join("l")).unwrap();
    set_mtime(&t.join("l"), 1_700_000_000, 0);
    chmod(&t, 0o755);
    set_mtime(&t, 1_700_000_000, 0);
    kr_ok(tmp.path(), &["c", "a.kry", "t"]);
    let o = kr_ok(tmp.path(), &["l", "--utc", "a.kry"]);
    let when = "2023-11-14 22:13:20 +0000";
    let f = |name: &str| format!("-rw-r--r--            3 {when} t/{name}");
    let want = [
        format!("drwxr-xr-x            0 {when} t"),
        f("a\\nb"),
        f("a\\\\nb"),
        f("caf\\xff"),
        format!("lrwxrwxrwx            0 {when} t/l -> x\\xffy"),
        f("tab\\there"),
    ];
    assert_eq!(String::from_utf8(o.stdout).unwrap(), want.join("\n") + "\n");
    // b3sum's convention: a leading backslash marks a line with escaped '\' or newline.
    let o = kr_ok(tmp.path(), &["l", "--b3", "a.kry"]);
    let h = blake3::hash(b"abc").to_hex();
    let mut want = format!("\\{h}  t/a\\nb\n\\{h}  t/a\\\\nb\n{h}  t/caf").into_bytes();
    want.extend_from_slice(b"\xff\n");
    want.extend_from_slice(format!("{h}  t/tab\there\n").as_bytes());
    assert_eq!(o.stdout, want);
}

#[test]
fn real_tree_usr_share_doc_round_trips_types_sizes_modes_mtimes_links_and_digests() {
    let src = Path::new("/usr/share/doc");
    if !src.is_dir() {
        eprintln!("note: /usr/share/doc is missing; real-tree test skipped");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("doc.kry");
    let started = Instant::now();
    let o = kr_ok(tmp.path(), &["c", s(&kry), s(src)]);
    assert_eq!(
        common::split_summary(&String::from_utf8(o.stderr).unwrap()).0,
        "krypta: warning: removing leading '/' from member names\n"
    );
    let c = started.elapsed();
    let out = tmp.path().join("out");
    kr_ok(tmp.path(), &["x", s(&kry), "-o", s(&out)]);
    let n = assert_same_tree(src, &out.join("usr/share/doc"));
    eprintln!(
        "real tree: {n} entries, archive {} bytes, compress {c:?}, total {:?}",
        kry.metadata().unwrap().len(),
        started.elapsed()
    );
    assert!(n > 100, "{n} entries");
}

#[test]
fn dereference_stores_link_targets_as_files_and_keeps_dangling_links() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t");
    write(&t.join("big"), b"hello\n");
    chmod(&t.join("big"), 0o600);
    symlink("big", t.join("rel")).unwrap();
    symlink("nowhere", t.join("dangling")).unwrap();
    symlink(".", t.join("loop")).unwrap();
    let o = kr_ok(tmp.path(), &["c", "-L", "a.kry", "t"]);
    assert_eq!(
        common::split_summary(&String::from_utf8(o.stderr).unwrap()).0,
        "krypta: warning: t/dangling: dangling symbolic link stored as a link\n\
         krypta: warning: t/loop: directory loop: it is t, a directory above it (symbolic link \
         or bind mount); stored empty, not descended\n"
    );
    kr_ok(tmp.path(), &["x", "a.kry", "-o", "out"]);
    let md = tmp.path().join("out/t/rel").symlink_metadata().unwrap();
    assert!(md.is_file());
    assert_eq!(md.mode(), 0o100600);
    assert_eq!(
        std::fs::read(tmp.path().join("out/t/rel")).unwrap(),
        b"hello\n"
    );
    let dangling = std::fs::read_link(tmp.path().join("out/t/dangling")).unwrap();
    assert_eq!(dangling, Path::new("nowhere"));
}

/// Bug pinned: writing the archive inside a directory being archived stored the archive's own
/// temporary file (`.krypta-tmp-*`, partly written) and then exited 6 because it "grew".
#[test]
fn archive_written_inside_an_input_directory_does_not_store_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t");
    // '+' sorts before '.', so 2 MB of 64 KiB blocks are flushed before the walk reaches the
    // temporary file.
    write(&t.join("+first"), &bytes(2_000_000, 4, false));
    write(&t.join("z"), b"last\n");
    let o = kr(tmp.path(), &["c", "-b", "64K", "t/self.kry", "t"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let o = kr_ok(tmp.path(), &["l", "t/self.kry"]);
    let list = String::from_utf8(o.stdout).unwrap();
    let names: Vec<&str> = list
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(names, ["t", "t/+first", "t/z"]);
}
