//! `krypta c` then `krypta x` through the binary, as root and as `nobody` (`setpriv`), of a tree
//! with user xattrs (binary values, long names), ACLs (access and default), a capability,
//! owner names, a setuid binary, a read-only directory with children and the mode and mtime
//! of `.`: `stat`, `getfattr`, `getfacl` and `getcap` show the same after as before. Also
//! restore by name vs `--numeric-owner`, `--no-xattrs`/`--no-acls` on both sides, and
//! overlapping inputs.
//!
//! The archive must store the fields: format 2. Until the format-2 writer is merged
//! (`format::header::VERSION < 2`) the tests that need it say SKIP and return; the overlap
//! tests run on format 1 too.

mod common;
mod meta_common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::krypta;
use krypta::archive::writer::{ArchiveWriter, WriteOptions};
use krypta::format::entry::{EntryKind, EntryMeta};
use meta_common::*;

/// Whether this build writes format 2 (else a SKIP line).
fn format2(test: &str) -> bool {
    if krypta::format::header::VERSION < 2 {
        eprintln!(
            "SKIP {test}: needs the format-2 writer (format {} stores no owner names or attributes)",
            krypta::format::header::VERSION
        );
        return false;
    }
    true
}

fn run(dir: &Path, args: &[&str]) -> Output {
    krypta()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run krypta")
}

fn ok(dir: &Path, args: &[&str]) -> Output {
    let o = run(dir, args);
    assert!(
        o.status.success(),
        "krypta {args:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The stderr of `x ARCHIVE` without `-q`: its warnings, with the end summary (issue 14),
/// which must be the last line and name `entries` extracted, taken off.
fn warnings_of_x(o: &Output, archive: &str, entries: u64) -> String {
    let all = stderr(o);
    let body = all.strip_suffix('\n').unwrap_or(&all);
    let (warnings, last) = match body.rfind('\n') {
        Some(i) => (&all[..=i], &body[i + 1..]),
        None => ("", body),
    };
    let want = format!("krypta: {archive}: {entries} entries extracted, ");
    assert!(
        last.starts_with(&want),
        "summary {last:?}, wanted {want:?}..."
    );
    warnings.to_string()
}

#[test]
fn as_root_c_then_x_of_dir_dot_restores_every_attribute_owner_mode_and_time() {
    let test = "as_root_c_then_x_of_dir_dot";
    if !format2(test) || !root_tools(test) {
        return;
    }
    let tmp = xattr_tempdir();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    build_tree(&src, 65534);
    let mine = src.join("mine");
    std::fs::write(&mine, b"root's").unwrap();
    set_xattr(&mine, "trusted.t", b"root only");
    set_xattr(&src.join("link"), "trusted.on-link", b"l");
    set_mtime(&mine, 1_700_000_000, 7);
    set_mtime(&src, -86_400, 5);
    let before = meta_snapshot(&src);
    let t = tmp.path();
    ok(t, &["c", "-q", "a.kry", "src/."]);
    ok(t, &["t", "-q", "a.kry"]);
    let o = ok(t, &["x", "a.kry", "-o", "out"]);
    assert_eq!(warnings_of_x(&o, "a.kry", 12), "");
    assert_eq!(meta_snapshot(&t.join("out")), before);
    // `.` given from inside the directory is the same root entry.
    ok(&src, &["c", "-q", "../b.kry", "."]);
    ok(t, &["x", "-q", "b.kry", "-o", "out-b"]);
    assert_eq!(meta_snapshot(&t.join("out-b")), before);
}

#[test]
fn as_nobody_c_then_x_restores_what_an_ordinary_user_may_set_and_warns_about_the_capability() {
    let test = "as_nobody_c_then_x";
    if !format2(test) || !root_tools(test) || !tools(test, &["setpriv"]) {
        return;
    }
    let tmp = xattr_tempdir();
    chmod(tmp.path(), 0o755);
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let src = work.join("src");
    std::fs::create_dir(&src).unwrap();
    build_tree(&src, 65534);
    std::os::unix::fs::chown(&work, Some(65534), Some(65534)).unwrap();
    if !as_nobody(&work, &["--version"]).status.success() {
        eprintln!(
            "SKIP {test}: nobody cannot run {}",
            env!("CARGO_BIN_EXE_krypta")
        );
        return;
    }
    let before = meta_snapshot(&src);
    let c = as_nobody(&work, &["c", "-q", "a.kry", "src/."]);
    assert!(c.status.success(), "{}", stderr(&c));
    let x = as_nobody(&work, &["x", "--same-permissions", "a.kry", "-o", "out"]);
    assert!(x.status.success(), "{}", stderr(&x));
    let out = work.join("out");
    assert_eq!(
        warnings_of_x(&x, "a.kry", 11),
        format!(
            "krypta: warning: {}: cannot set extended attribute security.capability: Operation not permitted (os error 1)\n",
            krypta::fs::escape_path(&pb(&PathBuf::from("out/cap")))
        )
    );
    let getfattr_cap = "# file: ./cap\nsecurity.capability=0sAQAAAgAgAAAAAAAAAAAAAAAAAAA=\n\n";
    assert!(before.contains(getfattr_cap));
    let want = before
        .replace("./cap cap_net_raw=ep\n", "")
        .replace(getfattr_cap, "");
    assert_eq!(meta_snapshot(&out), want);
    // Root restores the capability from the archive nobody wrote (an ordinary user can read
    // security.capability).
    ok(&work, &["x", "-q", "a.kry", "-o", "out-root"]);
    assert_eq!(meta_snapshot(&work.join("out-root")), before);
}

#[test]
fn owners_are_restored_by_name_when_known_else_by_id_and_numeric_owner_uses_ids() {
    let test = "owners_are_restored_by_name";
    if !format2(test) || !is_root() {
        eprintln!("SKIP {test}: needs root and format 2");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // An archive made on a system where "nobody" was 1234:1235 and "ghost" existed.
    let file = |path: &str, user: &str, group: &str| EntryMeta {
        path: path.as_bytes().to_vec(),
        kind: EntryKind::File,
        mode: 0o644,
        uid: 1234,
        gid: 1235,
        user: Some(user.as_bytes().to_vec()),
        group: Some(group.as_bytes().to_vec()),
        ..EntryMeta::default()
    };
    let out = std::fs::File::create(t.join("n.kry")).unwrap();
    let mut w = ArchiveWriter::new(out, t.join("n.kry"), WriteOptions::default()).unwrap();
    for m in [
        file("named", "nobody", "nogroup"),
        file("ghost", "ghost-krypta-test", "ghost-krypta-test"),
    ] {
        w.add_file(
            &m,
            &mut krypta::archive::writer::ReaderSource::new(&b"x"[..], "mem"),
        )
        .unwrap();
    }
    w.finish().unwrap();
    let owners = |dir: &str| {
        ["named", "ghost"].map(|f| {
            let st = rustix::fs::lstat(t.join(dir).join(f)).unwrap();
            (st.st_uid, st.st_gid)
        })
    };
    ok(t, &["x", "-q", "n.kry", "-o", "by-name"]);
    assert_eq!(owners("by-name"), [(65534, 65534), (1234, 1235)]);
    ok(t, &["x", "-q", "--numeric-owner", "n.kry", "-o", "by-id"]);
    assert_eq!(owners("by-id"), [(1234, 1235), (1234, 1235)]);
    ok(t, &["x", "-q", "--no-same-owner", "n.kry", "-o", "mine"]);
    assert_eq!(owners("mine"), [(0, 0), (0, 0)]);
}

#[test]
fn no_xattrs_and_no_acls_leave_them_out_when_writing_and_when_restoring() {
    let test = "no_xattrs_and_no_acls";
    if !format2(test) || !tools(test, &["setfacl"]) {
        return;
    }
    let tmp = xattr_tempdir();
    let t = tmp.path();
    let src = t.join("src");
    std::fs::create_dir(&src).unwrap();
    let f = src.join("f");
    std::fs::write(&f, b"x").unwrap();
    chmod(&f, 0o644);
    set_xattr(&f, "user.a", b"1");
    sh("setfacl", &["-m", "u:nobody:r", f.to_str().unwrap()]);
    let has = |dir: &str| {
        let p = t.join(dir).join("f");
        (
            get_xattr(&p, "user.a").is_some(),
            get_xattr(&p, "system.posix_acl_access").is_some(),
        )
    };
    ok(t, &["c", "-q", "all.kry", "src/."]);
    ok(t, &["c", "-q", "--no-xattrs", "acl.kry", "src/."]);
    ok(t, &["c", "-q", "--no-acls", "x.kry", "src/."]);
    ok(
        t,
        &["c", "-q", "--no-xattrs", "--no-acls", "none.kry", "src/."],
    );
    for (archive, dir, want) in [
        ("all.kry", "all", (true, true)),
        ("acl.kry", "acl", (false, true)),
        ("x.kry", "x", (true, false)),
        ("none.kry", "none", (false, false)),
    ] {
        ok(t, &["x", "-q", archive, "-o", dir]);
        assert_eq!(has(dir), want, "{archive}");
    }
    ok(
        t,
        &["x", "-q", "--no-xattrs", "all.kry", "-o", "x-no-xattrs"],
    );
    assert_eq!(has("x-no-xattrs"), (false, true));
    ok(t, &["x", "-q", "--no-acls", "all.kry", "-o", "x-no-acls"]);
    assert_eq!(has("x-no-acls"), (true, false));
}

#[test]
fn overlapping_inputs_write_an_archive_that_extracts_with_each_path_once() {
    // Regression: `krypta c a.kry src src/README.md` (or `src src`) wrote the path twice, and
    // `krypta x` refused the archive with "already exists".
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let src = t.join("src");
    std::fs::create_dir_all(src.join("lib")).unwrap();
    std::fs::write(src.join("README.md"), b"read me").unwrap();
    std::fs::write(src.join("lib/x.rs"), b"fn main() {}").unwrap();
    for (i, inputs) in [
        &["src", "src/README.md"][..],
        &["src", "src"],
        &["src/lib", "src", "src/lib/x.rs"],
    ]
    .iter()
    .enumerate()
    {
        let name = format!("{i}.kry");
        let mut args = vec!["c", "-q", name.as_str()];
        args.extend_from_slice(inputs);
        let o = ok(t, &args);
        assert_eq!(stderr(&o), "", "first occurrence wins, quietly");
        let listed = String::from_utf8(ok(t, &["l", &name]).stdout).unwrap();
        // `krypta l` ends each line with the name.
        let mut lines: Vec<&str> = listed
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap())
            .collect();
        lines.sort();
        assert_eq!(
            lines,
            ["src", "src/README.md", "src/lib", "src/lib/x.rs"],
            "{inputs:?}"
        );
        let out = format!("out{i}");
        ok(t, &["x", "-q", &name, "-o", &out]);
        assert_eq!(
            std::fs::read(t.join(&out).join("src/README.md")).unwrap(),
            b"read me"
        );
    }
}
