//! Safe extraction through `krypta x` (issue 3): archives built with the library's writer API
//! (which writes whatever metadata it is given) try to write outside the output directory,
//! through links, over existing files, or fail part-way; the reader must refuse or confine
//! them, and every victim file outside keeps its bytes.

mod common;

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::{bytes, code, krypta, s, write};
use krypta::archive::writer::{ArchiveWriter, ReaderSource, WriteOptions};
use krypta::format::{EntryKind, EntryMeta, Timestamp};

/// One entry of a hostile archive.
enum E<'a> {
    File(&'a [u8], &'a [u8]),
    Dir(&'a [u8]),
    Sym(&'a [u8], &'a [u8]),
    Hard(&'a [u8], &'a [u8]),
}

fn meta(path: &[u8], kind: EntryKind, link: &[u8]) -> EntryMeta {
    EntryMeta {
        path: path.to_vec(),
        kind,
        mode: if kind == EntryKind::Dir { 0o755 } else { 0o644 },
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
        uid: 0,
        gid: 0,
        link: link.to_vec(),
        ..Default::default()
    }
}

/// Writes an unencrypted archive holding exactly `entries`, unchecked. Crafted byte by byte
/// (`common::craft`): the library writer refuses the hostile ones, as it must.
fn archive(path: &Path, entries: &[E]) {
    let list: Vec<(EntryMeta, Option<&[u8]>)> = entries
        .iter()
        .map(|e| match *e {
            E::File(p, data) => (meta(p, EntryKind::File, b""), Some(data)),
            E::Dir(p) => (meta(p, EntryKind::Dir, b""), None),
            E::Sym(p, t) => (meta(p, EntryKind::Symlink, t), None),
            E::Hard(p, t) => (meta(p, EntryKind::Hardlink, t), None),
        })
        .collect();
    std::fs::write(path, common::craft::craft(&list)).unwrap();
}

/// A directory outside every output directory holding `keep` = "victim bytes".
struct Victim {
    dir: tempfile::TempDir,
}

impl Victim {
    fn new() -> Victim {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("keep"), b"victim bytes");
        Victim { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn bytes(&self) -> &[u8] {
        self.dir.path().as_os_str().as_bytes()
    }
    fn keep(&self) -> PathBuf {
        self.dir.path().join("keep")
    }
    /// The victim directory still holds only `keep`, with its bytes.
    fn assert_untouched(&self) {
        assert_eq!(names(self.path()), ["keep"]);
        assert_eq!(std::fs::read(self.keep()).unwrap(), b"victim bytes");
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `krypta x ARCHIVE -o OUT EXTRA...`, from a file, or from stdin when `stream`.
fn extract(kry: &Path, out: &Path, extra: &[&str], stream: bool) -> Output {
    let mut c = krypta();
    if stream {
        c.args(["x", "-", "-o", s(out)])
            .stdin(std::fs::File::open(kry).unwrap());
    } else {
        c.args(["x", s(kry), "-o", s(out)]).stdin(Stdio::null());
    }
    c.args(extra).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// No `.krypta-*` temporary file anywhere below `dir`.
fn assert_no_temp_files(dir: &Path) {
    for e in walkdir::WalkDir::new(dir) {
        let e = e.unwrap();
        let n = e.file_name().as_bytes();
        assert!(
            !n.starts_with(b".krypta-"),
            "left behind: {}",
            e.path().display()
        );
    }
}

#[test]
fn symlink_entry_then_file_below_it_cannot_write_outside() {
    let v = Victim::new();
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    let rel_up = b"../../../../../../../../../..".to_vec();
    let mut up = rel_up.clone();
    up.extend_from_slice(v.bytes());
    for target in [v.bytes(), &up[..]] {
        archive(&kry, &[E::Sym(b"d", target), E::File(b"d/file", b"evil")]);
        for (stream, force) in [(false, false), (true, false), (false, true)] {
            let out = tmp.path().join(format!("out-{stream}-{force}"));
            let extra: &[&str] = if force { &["-f"] } else { &[] };
            let o = extract(&kry, &out, extra, stream);
            assert_eq!(code(&o), 3, "{}", stderr(&o));
            // The entry-set rules (FORMAT.md §3.3) refuse an entry below a symlink entry as
            // soon as it is parsed: from the index before anything is written, from a pipe
            // when the stream reaches it (after `d` itself was made). The extractor's own
            // refusal of a symlink parent is tested in tests/fs_hostile.rs.
            let err = stderr(&o);
            assert!(
                err.starts_with(&format!("krypta: {}: corrupt archive at byte ", s(&kry)))
                    || (stream && err.starts_with("krypta: -: corrupt archive at byte ")),
                "{err}"
            );
            assert!(
                err.ends_with(": entry set: d/file lies below d, which is not a directory\n"),
                "{err}"
            );
            v.assert_untouched();
            if stream {
                assert_eq!(
                    std::fs::read_link(out.join("d"))
                        .unwrap()
                        .as_os_str()
                        .as_bytes(),
                    target
                );
                assert_no_temp_files(&out);
                std::fs::remove_dir_all(&out).unwrap();
            } else {
                assert!(!out.exists(), "nothing is written");
            }
        }
    }
}

#[test]
fn absolute_dotdot_empty_and_dot_paths_are_refused_with_exit_3_before_writing() {
    let v = Victim::new();
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    let mut abs = v.bytes().to_vec();
    abs.extend_from_slice(b"/x");
    let mut keep = v.bytes().to_vec();
    keep.extend_from_slice(b"/keep");
    let cases: Vec<Vec<E>> = vec![
        vec![E::File(&abs, b"evil")],
        vec![E::File(b"../x", b"evil")],
        vec![E::File(b"a/../../x", b"evil")],
        vec![E::File(b"a//x", b"evil")],
        vec![E::File(b"./x", b"evil")],
        vec![E::File(b"a/", b"evil")],
        vec![E::Dir(b"../x")],
        vec![E::Sym(&abs, b"/etc/passwd")],
        vec![E::File(b"ok", b"fine"), E::Hard(b"h", &keep)],
        vec![E::File(b"ok", b"fine"), E::Hard(b"h", b"../x")],
    ];
    for (i, entries) in cases.iter().enumerate() {
        archive(&kry, entries);
        for stream in [false, true] {
            let out = tmp.path().join("o/out");
            let o = extract(&kry, &out, &[], stream);
            assert_eq!(code(&o), 3, "case {i} stream {stream}: {}", stderr(&o));
            assert!(
                stderr(&o).starts_with("krypta: "),
                "case {i}: {}",
                stderr(&o)
            );
            v.assert_untouched();
            assert!(!tmp.path().join("o/x").exists(), "case {i}");
            assert!(!tmp.path().join("x").exists(), "case {i}");
            // From a file, the index is read (and refused) before the output is created.
            assert_eq!(out.exists(), stream, "case {i}");
            if stream {
                assert_eq!(names(&out), ["ok"][..usize::from(i >= 8)], "case {i}");
                std::fs::remove_dir_all(tmp.path().join("o")).unwrap();
            }
        }
    }
}

#[test]
fn mode_with_file_type_bits_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    let m = EntryMeta {
        mode: 0o100644,
        ..meta(b"f", EntryKind::File, b"")
    };
    std::fs::write(&kry, common::craft::craft(&[(m.clone(), Some(b"x"))])).unwrap();
    // The library writer refuses to write it at all.
    let mut w = ArchiveWriter::new(Vec::new(), "mem", WriteOptions::new()).unwrap();
    assert!(matches!(
        w.add_file(&m, &mut ReaderSource::new(&b"x"[..], "mem")),
        Err(krypta::Error::Unwritable { .. })
    ));
    let o = extract(&kry, &tmp.path().join("out"), &[], false);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
}

#[test]
fn existing_symlink_at_an_entry_name_is_never_written_through() {
    let v = Victim::new();
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    // A file entry, and a symlink entry pointing outside followed by a file of the same name.
    archive(&kry, &[E::File(b"f", b"new")]);
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    symlink(v.keep(), out.join("f")).unwrap();
    let o = extract(&kry, &out, &[], false);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(std::fs::read_link(out.join("f")).unwrap(), v.keep());
    v.assert_untouched();
    let o = extract(&kry, &out, &["-f"], false);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(out.join("f").symlink_metadata().unwrap().is_file());
    assert_eq!(std::fs::read(out.join("f")).unwrap(), b"new");
    v.assert_untouched();

    // A symlink entry and a file entry of the same name: a path that appears twice with two
    // types is refused by the entry-set rules (before, `-f` replaced the link by the file).
    archive(
        &kry,
        &[
            E::Sym(b"s", v.keep().as_os_str().as_bytes()),
            E::File(b"s", b"evil"),
        ],
    );
    for extra in [&[][..], &["-f"]] {
        let out = tmp.path().join("out2");
        let o = extract(&kry, &out, extra, false);
        assert_eq!(code(&o), 3, "{}", stderr(&o));
        assert!(
            stderr(&o).ends_with("entry set: s appears more than once\n"),
            "{}",
            stderr(&o)
        );
        assert!(!out.exists());
        let o = extract(&kry, &out, extra, true);
        assert_eq!(code(&o), 3, "{}", stderr(&o));
        assert_eq!(std::fs::read_link(out.join("s")).unwrap(), v.keep());
        std::fs::remove_dir_all(&out).unwrap();
        v.assert_untouched();
    }
}

#[test]
fn existing_symlink_as_a_parent_directory_is_refused_even_with_force() {
    let v = Victim::new();
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    archive(&kry, &[E::File(b"d/file", b"evil")]);
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    symlink(v.path(), out.join("d")).unwrap();
    for extra in [&[][..], &["-f"]] {
        let o = extract(&kry, &out, extra, false);
        assert_eq!(code(&o), 3, "{extra:?}: {}", stderr(&o));
        v.assert_untouched();
        assert_eq!(std::fs::read_link(out.join("d")).unwrap(), v.path());
    }
}

#[test]
fn existing_file_is_kept_without_force_and_replaced_by_a_new_inode_with_force() {
    let v = Victim::new();
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    archive(&kry, &[E::File(b"f", b"from the archive")]);
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // The existing name is a hard link to the victim: writing in place would change it.
    std::fs::hard_link(v.keep(), out.join("f")).unwrap();
    let ino = v.keep().metadata().unwrap().ino();
    let o = extract(&kry, &out, &[], false);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("out/f"), "{}", stderr(&o));
    assert_eq!(out.join("f").metadata().unwrap().ino(), ino);
    assert_eq!(std::fs::read(out.join("f")).unwrap(), b"victim bytes");
    let o = extract(&kry, &out, &["--force"], false);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_ne!(out.join("f").metadata().unwrap().ino(), ino);
    assert_eq!(std::fs::read(out.join("f")).unwrap(), b"from the archive");
    assert_eq!(v.keep().metadata().unwrap().nlink(), 1);
    v.assert_untouched();
    assert_no_temp_files(&out);
}

#[test]
fn hard_link_to_a_file_already_in_the_output_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    archive(&kry, &[E::Hard(b"h", b"secret")]);
    let out = tmp.path().join("out");
    write(&out.join("secret"), b"not from this archive");
    let o = extract(&kry, &out, &[], false);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(names(&out), ["secret"]);
}

#[test]
fn file_then_entries_below_it_fail_without_writing_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    archive(&kry, &[E::File(b"d", b"a file"), E::File(b"d/y", b"z")]);
    let out = tmp.path().join("out");
    // From a file the index is refused before anything is written; from a pipe the stream
    // is refused when it reaches d/y, after d was written.
    let o = extract(&kry, &out, &[], false);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(stderr(&o).contains("entry set: d/y lies below d, which is not a directory"));
    assert!(!out.exists());
    let o = extract(&kry, &out, &[], true);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(names(&out), ["d"]);
    assert_eq!(std::fs::read(out.join("d")).unwrap(), b"a file");
}

/// Flips one byte three quarters into the archive (inside the big last file's blocks).
fn corrupt_late(kry: &Path) {
    let mut a = std::fs::read(kry).unwrap();
    let at = a.len() * 3 / 4;
    a[at] ^= 0x40;
    std::fs::write(kry, a).unwrap();
}

fn part_way_tree(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let a = bytes(1000, 1, true);
    let b = bytes(100_000, 2, false);
    write(&dir.join("t/a"), &a);
    write(&dir.join("t/b"), &b);
    write(&dir.join("t/c"), &bytes(2 << 20, 3, false));
    (a, b)
}

#[test]
fn corrupted_later_block_keeps_earlier_files_and_leaves_no_partial_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = part_way_tree(tmp.path());
    let key = tmp.path().join("key");
    let o = krypta().args(["keygen", "-o", s(&key)]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Unencrypted: a BLAKE3 block checksum mismatch; encrypted: a MAC failure.
    for (name, extra, want) in [("plain", None, 5), ("sealed", Some(s(&key)), 2)] {
        let kry = tmp.path().join(format!("{name}.kry"));
        let mut c = krypta();
        c.args(["c", "-b", "64K", s(&kry), "t"])
            .current_dir(tmp.path());
        let mut xargs: Vec<&str> = vec![];
        if let Some(k) = extra {
            c.args(["--keyfile", k]);
            xargs = vec!["--keyfile", k];
        }
        assert_eq!(code(&c.output().unwrap()), 0);
        corrupt_late(&kry);
        for stream in [false, true] {
            let out = tmp.path().join(format!("out-{name}-{stream}"));
            let o = extract(&kry, &out, &xargs, stream);
            assert_eq!(code(&o), want, "{name} {stream}: {}", stderr(&o));
            let err = stderr(&o);
            let shown = if stream { "-" } else { s(&kry) };
            assert!(err.contains(shown), "{name} {stream}: {err}");
            assert_eq!(names(&out.join("t")), ["a", "b"], "{name} {stream}");
            assert_eq!(std::fs::read(out.join("t/a")).unwrap(), a);
            assert!(std::fs::read(out.join("t/b")).unwrap() == b);
            assert_no_temp_files(&out);
        }
    }
}

#[test]
fn disk_full_part_way_leaves_completed_files_and_names_the_failed_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = part_way_tree(tmp.path());
    let o = krypta()
        .args(["c", "-b", "64K", "a.kry", "t"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0);
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("note: cannot mount a tmpfs here; CLI disk-full test skipped");
        return;
    }
    let o = extract(&tmp.path().join("a.kry"), &mnt, &[], false);
    let result = std::panic::catch_unwind(|| {
        let err = stderr(&o);
        assert_eq!(code(&o), 4, "{err}");
        assert!(
            err.contains("mnt/t/c") && err.contains("No space left"),
            "{err}"
        );
        assert_eq!(names(&mnt.join("t")), ["a", "b"]);
        assert_eq!(std::fs::read(mnt.join("t/a")).unwrap(), a);
        assert!(std::fs::read(mnt.join("t/b")).unwrap() == b);
        assert_no_temp_files(&mnt);
    });
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}

#[test]
fn duplicate_file_entries_need_force_and_the_last_one_wins_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    archive(&kry, &[E::File(b"f", b"one"), E::File(b"f", b"two")]);
    let out = tmp.path().join("out");
    let o = extract(&kry, &out, &[], false);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(std::fs::read(out.join("f")).unwrap(), b"one");
    let o = extract(&kry, &tmp.path().join("out2"), &["-f"], false);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read(tmp.path().join("out2/f")).unwrap(), b"two");
}

/// Bug pinned: a bad block part-way names the archive and the frame but not the file whose
/// data it held, which the issue asks for ("a message naming the file that failed").
#[test]
fn corrupted_block_error_names_the_file_being_extracted() {
    let tmp = tempfile::tempdir().unwrap();
    part_way_tree(tmp.path());
    let kry = tmp.path().join("a.kry");
    let o = krypta()
        .args(["c", "-b", "64K", s(&kry), "t"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0);
    corrupt_late(&kry);
    let o = extract(&kry, &tmp.path().join("out"), &[], false);
    assert_eq!(code(&o), 5);
    assert!(stderr(&o).contains("t/c"), "{}", stderr(&o));
}

#[test]
fn existing_symlink_where_a_directory_entry_goes_is_kept_without_force_and_replaced_with_it() {
    let v = Victim::new();
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    archive(&kry, &[E::Dir(b"d"), E::File(b"d/file", b"inside")]);
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    symlink(v.path(), out.join("d")).unwrap();
    let o = extract(&kry, &out, &[], false);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(std::fs::read_link(out.join("d")).unwrap(), v.path());
    v.assert_untouched();
    let o = extract(&kry, &out, &["-f"], false);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(out.join("d").symlink_metadata().unwrap().is_dir());
    assert_eq!(std::fs::read(out.join("d/file")).unwrap(), b"inside");
    v.assert_untouched();
}

#[test]
fn hard_link_to_a_symlink_entry_pointing_outside_is_refused() {
    let v = Victim::new();
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("a.kry");
    let keep = v.keep();
    archive(
        &kry,
        &[
            E::Sym(b"s", keep.as_os_str().as_bytes()),
            E::Hard(b"h", b"s"),
            E::File(b"h", b"evil"),
        ],
    );
    for extra in [&[][..], &["-f"]] {
        let out = tmp.path().join("out");
        let o = extract(&kry, &out, extra, false);
        assert_eq!(code(&o), 3, "{extra:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("hard link h points to s, which is not an earlier file entry"),
            "{}",
            stderr(&o)
        );
        assert!(
            !out.exists(),
            "refused from the index, before anything is written"
        );
        let o = extract(&kry, &out, extra, true);
        assert_eq!(code(&o), 3, "{extra:?}: {}", stderr(&o));
        assert_eq!(names(&out), ["s"]);
        v.assert_untouched();
        std::fs::remove_dir_all(&out).unwrap();
    }
}
