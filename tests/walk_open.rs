//! `krypta c` opens each regular file in the walk, relative to a kept descriptor of its
//! directory (`fs::walk::list`, issue 13): what that must not change. A file the user cannot
//! open is skipped when it is met, with the warning naming it, and a hard link to it is not
//! stored as a link to an entry that is not there; a tree deeper than the directories whose
//! descriptors the walk keeps (`MAX_HELD_DIRS`, 64) opens its deepest files by path and still
//! round-trips byte for byte.

mod common;
mod meta_common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::krypta;
use meta_common::{as_nobody, is_root, tool, tools};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn chown_nobody(p: &Path) {
    let nobody = rustix::fs::Uid::from_raw(65534);
    rustix::fs::chown(p, Some(nobody), None).unwrap();
}

/// A temporary directory (mode 0755) holding `t/` and `out/`, both owned by nobody, who runs
/// `c out/a.kry t` in it ([`as_nobody`]). Returns it with the paths of `t` and `out`.
fn nobody_tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (t, out) = (tmp.path().join("t"), tmp.path().join("out"));
    for d in [&t, &out] {
        std::fs::create_dir(d).unwrap();
        chown_nobody(d);
    }
    (tmp, t, out)
}

/// The names `krypta l -q` lists in `archive`, in order.
fn listed(archive: &Path) -> Vec<String> {
    let o = krypta().args(["l", "-q"]).arg(archive).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect()
}

#[test]
fn an_unreadable_file_and_its_hard_link_are_skipped_by_name_not_stored_as_a_dangling_link() {
    if !tools("an_unreadable_file", &["setpriv"]) || !is_root() {
        eprintln!(
            "SKIP an_unreadable_file: needs root (to make a file nobody can read) and setpriv"
        );
        return;
    }
    let (tmp, t, out) = nobody_tree();
    let top = tmp.path();
    std::fs::write(t.join("a-secret"), b"root only").unwrap();
    std::fs::set_permissions(t.join("a-secret"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::hard_link(t.join("a-secret"), t.join("b-link")).unwrap();
    std::fs::write(t.join("c-open"), b"anyone").unwrap();
    chown_nobody(&t.join("c-open"));
    let o = as_nobody(top, &["c", "out/a.kry", "t"]);
    assert_eq!(o.status.code(), Some(6), "{}", stderr(&o));
    let err = stderr(&o);
    for name in ["a-secret", "b-link"] {
        assert!(
            err.contains(&format!(
                "t/{name}: cannot open (Permission denied (os error 13)); skipped"
            )),
            "{err}"
        );
    }
    assert_eq!(listed(&out.join("a.kry")), ["t", "t/c-open"]);
    let x = krypta()
        .arg("x")
        .arg(out.join("a.kry"))
        .arg("-o")
        .arg(top.join("x"))
        .output()
        .unwrap();
    assert!(x.status.success(), "{}", stderr(&x));
    assert_eq!(std::fs::read(top.join("x/t/c-open")).unwrap(), b"anyone");
    assert!(!top.join("x/t/b-link").exists());
}

#[test]
fn an_unreadable_directory_is_stored_empty_and_the_summary_does_not_say_it_is_missing() {
    if !tools("an_unreadable_directory", &["setpriv"]) || !is_root() {
        eprintln!(
            "SKIP an_unreadable_directory: needs root (to make a directory nobody can read) and setpriv"
        );
        return;
    }
    let (tmp, t, out) = nobody_tree();
    let top = tmp.path();
    std::fs::create_dir(t.join("closed")).unwrap();
    std::fs::write(t.join("closed/inside"), b"root only").unwrap();
    std::fs::set_permissions(t.join("closed"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(t.join("open"), b"anyone").unwrap();
    chown_nobody(&t.join("open"));
    let o = as_nobody(top, &["c", "out/a.kry", "t"]);
    assert_eq!(o.status.code(), Some(6), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "t/closed: cannot open directory (Permission denied (os error 13)); stored empty"
        ),
        "{err}"
    );
    assert!(
        err.contains("krypta: archive written, but 1 input(s) could not be read: skipped, or (a directory) stored without its contents (see warnings)"),
        "{err}"
    );
    assert_eq!(listed(&out.join("a.kry")), ["t", "t/closed", "t/open"]);
}

#[test]
fn a_tree_deeper_than_the_kept_directories_round_trips_every_file() {
    const DEPTH: usize = 100;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("deep");
    let mut dir = root.clone();
    let mut want = Vec::new();
    for level in 0..DEPTH {
        std::fs::create_dir_all(&dir).unwrap();
        // "d" sorts before "f": every level's file waits while the levels below are walked,
        // so the walk holds one directory per level until it reaches its limit.
        let body = format!("level {level}\n").repeat(level + 1);
        std::fs::write(dir.join("f"), &body).unwrap();
        want.push((dir.join("f"), body));
        dir = dir.join("d");
    }
    let kry = tmp.path().join("a.kry");
    let c = krypta()
        .args(["c", "-q"])
        .arg(&kry)
        .arg("deep")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", stderr(&c));
    let out = tmp.path().join("out");
    let x = krypta()
        .args(["x", "-q"])
        .arg(&kry)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(x.status.success(), "{}", stderr(&x));
    for (path, body) in &want {
        let rel = path.strip_prefix(tmp.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.join(rel)).unwrap(),
            *body,
            "{}",
            rel.display()
        );
    }
}

#[test]
fn under_a_descriptor_limit_of_40_every_file_of_a_wide_tree_is_stored() {
    // The walk holds open files for the reading thread: within a budget taken from the soft
    // limit (which `ulimit -n` also caps hard here, so krypta cannot raise it).
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t");
    let mut want = Vec::new();
    for d in 0..3 {
        std::fs::create_dir_all(t.join(format!("d{d}"))).unwrap();
        for i in 0..1000 {
            let rel = format!("t/d{d}/f{i:04}");
            let body = format!("{rel}\n").repeat(i % 5 + 1);
            std::fs::write(tmp.path().join(&rel), &body).unwrap();
            want.push((rel, body));
        }
    }
    let c = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 40 && exec \"$0\" c a.kry t")
        .arg(env!("CARGO_BIN_EXE_krypta"))
        .current_dir(tmp.path())
        .env_remove("KRYPTA_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", stderr(&c));
    let err = stderr(&c);
    assert!(err.starts_with("krypta: a.kry: 3004 entries, "), "{err}");
    assert_eq!(err.lines().count(), 1, "no warning: {err}");
    let out = tmp.path().join("out");
    let x = krypta()
        .args(["x", "-q"])
        .arg(tmp.path().join("a.kry"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(x.status.success(), "{}", stderr(&x));
    for (rel, body) in &want {
        assert_eq!(
            std::fs::read_to_string(out.join(rel)).unwrap(),
            *body,
            "{rel}"
        );
    }
}

#[test]
fn under_a_low_descriptor_limit_an_unreadable_hard_linked_file_is_still_skipped_not_fatal() {
    // Review finding: past the walk's descriptor budget a file goes to the reading thread
    // unopened; it must still be checked for readability in the walk, or its hard link is
    // recorded against an entry that never gets stored and `c` aborts (exit 1, no archive).
    if !tools("an_unreadable_hard_link_past_the_budget", &["setpriv"]) || !is_root() {
        eprintln!("SKIP an_unreadable_hard_link_past_the_budget: needs root and setpriv");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path();
    std::fs::set_permissions(top, std::fs::Permissions::from_mode(0o777)).unwrap();
    let t = top.join("t");
    std::fs::create_dir(&t).unwrap();
    // A large first file keeps the reading thread busy while the walk runs ahead.
    std::fs::write(t.join("000big"), vec![7u8; 30 << 20]).unwrap();
    for i in 0..200 {
        std::fs::write(t.join(format!("f{i:03}")), format!("file {i}\n")).unwrap();
    }
    std::fs::write(t.join("zz1"), b"secret").unwrap();
    std::fs::set_permissions(t.join("zz1"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::hard_link(t.join("zz1"), t.join("zz2")).unwrap();
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = tool("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg("ulimit -n 40 && exec \"$0\" c -j 1 a.kry t")
        .arg(env!("CARGO_BIN_EXE_krypta"))
        .current_dir(top)
        .env_remove("KRYPTA_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(6), "{err}");
    for name in ["zz1", "zz2"] {
        assert!(
            err.contains(&format!("t/{name}: cannot ")) && err.contains("Permission denied"),
            "{name}: {err}"
        );
    }
    let listed = krypta()
        .args(["l", "-q"])
        .arg(top.join("a.kry"))
        .output()
        .unwrap();
    let n = String::from_utf8_lossy(&listed.stdout).lines().count();
    assert_eq!(n, 1 + 1 + 200, "t, 000big and the 200 files");
}
