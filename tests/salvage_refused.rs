//! Salvage without the index (a cut footer, a lost tail) of records that are refused inside
//! frames whose tags verified: an unsafe path, a name given twice, an entry below a symbolic
//! link. The read stops there as before, but never silently: the refusal is named (also with
//! `-q`), the entries after it are said to be unread, and the summary no longer claims that
//! every entry read front to back was restored. (It said "every data frame verified, and the
//! 1 entry read front to back was restored" of an archive of three entries, and nothing of
//! the refused `../evil` or the lost `z`.)

mod common;

use std::path::Path;

use common::craft::craft_v2;
use common::{code, krypta, s};
use krypta::format::{EntryKind, EntryMeta, Timestamp};

fn meta(path: &[u8], kind: EntryKind, link: &[u8]) -> EntryMeta {
    EntryMeta {
        path: path.to_vec(),
        kind,
        mode: if kind == EntryKind::Symlink {
            0o777
        } else {
            0o644
        },
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
        link: link.to_vec(),
        ..Default::default()
    }
}

/// An archive of `a`, the hostile entries, then `z`, all in one data frame, whose last byte
/// (in the footer's tag) is cut off: the index cannot be used, the records are read front to
/// back.
fn cut_archive(path: &Path, hostile: &[(EntryMeta, Option<&[u8]>)]) {
    let mut list = vec![(meta(b"a", EntryKind::File, b""), Some(&b"A"[..]))];
    list.extend_from_slice(hostile);
    list.push((meta(b"z", EntryKind::File, b""), Some(&b"Z"[..])));
    let mut b = craft_v2(&list);
    b.pop();
    std::fs::write(path, b).unwrap();
}

fn run(args: &[&str]) -> (i32, String) {
    let o = krypta()
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (code(&o), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The refusal line for frame 0 with `why` in it.
fn refused_line(stderr: &str, kry: &Path, why: &str) -> bool {
    stderr.lines().any(|l| {
        l.starts_with(&format!(
            "krypta: warning: {}: frame 0 verified, but its records are refused (",
            kry.display()
        )) && l.contains(why)
            && l.ends_with("): the entries after that point in it were not read")
    })
}

#[test]
fn an_unsafe_path_read_without_the_index_is_named_not_dropped_silently() {
    let dir = tempfile::tempdir().unwrap();
    let kry = dir.path().join("a.kry");
    cut_archive(
        &kry,
        &[(meta(b"../evil", EntryKind::File, b""), Some(b"x"))],
    );
    let out = dir.path().join("out");
    for q in [false, true] {
        let _ = std::fs::remove_dir_all(&out);
        let mut args = vec!["x", s(&kry), "-o", s(&out)];
        if q {
            args.push("-q");
        }
        let (rc, err) = run(&args);
        assert_eq!(rc, 3, "{err}");
        assert!(
            refused_line(&err, &kry, "entry path: ../evil has a '..' component"),
            "{err}"
        );
        assert!(!err.contains("every data frame verified"), "{err}");
        assert_eq!(names(&out), ["a"]);
        assert!(!dir.path().join("evil").exists());
    }
    let (rc, err) = run(&["t", s(&kry)]);
    assert_eq!(rc, 3, "{err}");
    assert!(refused_line(&err, &kry, "entry path"), "{err}");
}

#[test]
fn an_entry_below_a_symbolic_link_read_without_the_index_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    let kry = dir.path().join("b.kry");
    cut_archive(
        &kry,
        &[
            (
                meta(
                    b"d",
                    EntryKind::Symlink,
                    victim.path().as_os_str().as_encoded_bytes(),
                ),
                None,
            ),
            (meta(b"d/f", EntryKind::File, b""), Some(b"pwned")),
        ],
    );
    let out = dir.path().join("out");
    let (rc, err) = run(&["x", s(&kry), "-o", s(&out)]);
    assert_eq!(rc, 3, "{err}");
    assert!(
        refused_line(
            &err,
            &kry,
            "entry set: d/f lies below d, which is not a directory"
        ),
        "{err}"
    );
    assert!(err.contains("restored 2 of 2 entries"), "{err}");
    assert_eq!(names(&out), ["a", "d"]);
    assert_eq!(names(victim.path()), Vec::<String>::new());
}

#[test]
fn a_name_given_twice_read_without_the_index_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let kry = dir.path().join("c.kry");
    cut_archive(&kry, &[(meta(b"a", EntryKind::File, b""), Some(b"second"))]);
    let out = dir.path().join("out");
    let (rc, err) = run(&["x", s(&kry), "-o", s(&out)]);
    assert_eq!(rc, 3, "{err}");
    assert!(
        refused_line(&err, &kry, "entry set: a appears more than once"),
        "{err}"
    );
    assert_eq!(std::fs::read(out.join("a")).unwrap(), b"A");
}
