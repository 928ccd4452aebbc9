//! Entries the output's file system cannot hold: a name component over 255 bytes (an archive
//! written on another system, or crafted), a symbolic link's target over 4,095 bytes, a hard
//! link past the file system's limit of links to one file, a file larger than it holds in one
//! file. `krypta x` names each such entry, skips it with what is below it and the hard links
//! to it, restores everything else and exits 6, as GNU tar reports the member and goes on.
//! Before, the conflict check of an output that is not empty stopped the whole run with exit
//! 4 ("stat: File name too long") before anything was written, and otherwise the run stopped
//! at the entry (exit 4), losing everything after it.

mod common;

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::{Output, Stdio};

use common::{code, krypta};
use krypta::archive::writer::{ArchiveWriter, ReaderSource, WriteOptions};
use krypta::format::{EntryKind, EntryMeta, Timestamp};

fn meta(path: &[u8], kind: EntryKind, link: &[u8]) -> EntryMeta {
    EntryMeta {
        path: path.to_vec(),
        kind,
        mode: if kind == EntryKind::Dir { 0o755 } else { 0o644 },
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
        link: link.to_vec(),
        ..Default::default()
    }
}

/// A name of `n` bytes (`c` repeated).
fn name(c: u8, n: usize) -> Vec<u8> {
    vec![c; n]
}

/// Adds the file `p` holding `data` to `w`.
fn file(w: &mut ArchiveWriter<Vec<u8>>, p: &[u8], data: &[u8]) {
    w.add_file(
        &meta(p, EntryKind::File, b""),
        &mut ReaderSource::new(data, "mem"),
    )
    .unwrap();
}

/// Writes, with the library's writer: `a` ("first"), a 256-byte file name, a 300-byte
/// directory with a file in it, a 255-byte file name (fits), `z` ("last"), and a hard link
/// `hl` to the too-long file.
fn archive(path: &Path) {
    let long_file = name(b'f', 256);
    let long_dir = name(b'd', 300);
    let inside = [&long_dir[..], b"/in"].concat();
    let fits = name(b'k', 255);
    let mut w = ArchiveWriter::new(Vec::new(), "mem", WriteOptions::new()).unwrap();
    file(&mut w, b"a", b"first");
    file(&mut w, &long_file, b"too long a name");
    w.add_entry(&meta(&long_dir, EntryKind::Dir, b"")).unwrap();
    file(&mut w, &inside, b"below a too long name");
    file(&mut w, &fits, b"255 bytes fit");
    file(&mut w, b"z", b"last");
    w.add_entry(&meta(b"hl", EntryKind::Hardlink, &long_file))
        .unwrap();
    std::fs::write(path, w.finish().unwrap().1).unwrap();
}

/// `krypta x -o OUT KRY`, stdin closed.
fn x_into(out: &Path, kry: &Path) -> Output {
    krypta()
        .args(["x", "-o"])
        .arg(out)
        .arg(kry)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Bytes that do not compress to nothing and do not repeat within a block.
fn patterned(len: u32) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// Writes `a` ("first"), `big` ([`patterned`], 3,000,000 bytes, returned), with `fits` its
/// first 1,000,000 bytes, `holes` (3,000,000 zeros: written as one hole, so only setting its
/// length meets a 2 MiB limit), `z` ("last"), and with `fits` also a hard link `hl` to `big`.
fn too_large_archive(kry: &Path, fits: bool) -> Vec<u8> {
    let big = patterned(3_000_000);
    let mut w = ArchiveWriter::new(Vec::new(), "mem", WriteOptions::new()).unwrap();
    file(&mut w, b"a", b"first");
    file(&mut w, b"big", &big);
    if fits {
        file(&mut w, b"fits", &big[..1_000_000]);
    }
    file(&mut w, b"holes", &vec![0; 3_000_000]);
    file(&mut w, b"z", b"last");
    if fits {
        w.add_entry(&meta(b"hl", EntryKind::Hardlink, b"big"))
            .unwrap();
    }
    std::fs::write(kry, w.finish().unwrap().1).unwrap();
    big
}

/// `krypta x [FLAG] -o OUT KRY` under `ulimit -f 2048` (2 MiB; SIGXFSZ ignored, as a file
/// system's own limit sends none): every file past 2 MiB meets EFBIG.
fn x_under_2_mib_limit(flag: &str, out: &Path, kry: &Path) -> Output {
    std::process::Command::new("bash")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 2048; exec \"$0\" x $1 -o \"$2\" \"$3\"")
        .arg(env!("CARGO_BIN_EXE_krypta"))
        .arg(flag)
        .arg(out)
        .arg(kry)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn names(dir: &Path) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .collect();
    v.sort();
    v
}

/// Checks a run: exit 6, each skipped name given once, the rest restored, nothing else.
fn assert_rest_restored(o: &Output, out: &Path, before: &[&[u8]]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(o), 6, "{err}");
    let long_file = String::from_utf8(name(b'f', 256)).unwrap();
    let long_dir = String::from_utf8(name(b'd', 300)).unwrap();
    let file_line = format!(
        "krypta: warning: {}/{long_file}: skipped: its name is 256 bytes, longer than the 255 bytes the file system allows",
        out.display()
    );
    let dir_line = format!(
        "krypta: warning: {}/{long_dir}: skipped, and everything below it: its name is 300 bytes, longer than the 255 bytes the file system allows",
        out.display()
    );
    let link_line = format!(
        "krypta: warning: {}/hl: skipped: hard link to {long_file}, whose name is too long for the file system",
        out.display()
    );
    for line in [&file_line, &dir_line, &link_line] {
        assert_eq!(
            err.lines().filter(|l| l == line).count(),
            1,
            "{line}\n{err}"
        );
    }
    // The entry below the long directory is not named again: its directory's line says it.
    assert!(!err.contains("/in"), "{err}");
    assert!(!err.contains("File name too long"), "{err}");
    let mut want: Vec<Vec<u8>> = vec![b"a".to_vec(), b"z".to_vec(), name(b'k', 255)];
    want.extend(before.iter().map(|b| b.to_vec()));
    want.sort();
    assert_eq!(names(out), want);
    assert_eq!(std::fs::read(out.join("a")).unwrap(), b"first");
    assert_eq!(std::fs::read(out.join("z")).unwrap(), b"last");
    let fits = std::ffi::OsString::from_vec(name(b'k', 255));
    assert_eq!(std::fs::read(out.join(fits)).unwrap(), b"255 bytes fit");
}

#[test]
fn a_name_too_long_in_an_output_that_is_not_empty_is_skipped_and_named_and_the_rest_restored() {
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("long.kry");
    archive(&kry);
    let out = tmp.path().join("out");
    common::write(&out.join("there"), b"kept");
    let o = x_into(&out, &kry);
    assert_rest_restored(&o, &out, &[b"there"]);
    assert_eq!(std::fs::read(out.join("there")).unwrap(), b"kept");
    // The summary counts the entries made: a, the 255-byte name and z.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("long.kry: 3 entries extracted,"), "{err}");
    assert!(
        err.contains("extracted, but 4 entries could not be made (see warnings)"),
        "{err}"
    );
}

#[test]
fn a_name_too_long_read_from_a_pipe_into_an_empty_output_is_skipped_the_same_way() {
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("long.kry");
    archive(&kry);
    let out = tmp.path().join("out");
    let o = krypta()
        .args(["x", "-o"])
        .arg(&out)
        .arg("-")
        .stdin(std::fs::File::open(&kry).unwrap())
        .output()
        .unwrap();
    assert_rest_restored(&o, &out, &[]);
}

#[test]
fn a_conflict_next_to_a_name_too_long_is_still_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("long.kry");
    archive(&kry);
    let out = tmp.path().join("out");
    common::write(&out.join("z"), b"mine");
    let o = x_into(&out, &kry);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 1, "{err}");
    assert!(err.contains("z"), "{err}");
    assert_eq!(names(&out), [b"z".to_vec()]);
    assert_eq!(std::fs::read(out.join("z")).unwrap(), b"mine");
}

#[test]
fn a_symlink_whose_target_is_longer_than_the_file_system_holds_is_skipped_and_named() {
    // The format allows targets of 65,536 bytes; Linux symlinks hold 4,095.
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("link.kry");
    let target = b"d/".repeat(2500);
    let mut w = ArchiveWriter::new(Vec::new(), "mem", WriteOptions::new()).unwrap();
    w.add_entry(&meta(b"deep", EntryKind::Symlink, &target))
        .unwrap();
    w.add_entry(&meta(b"short", EntryKind::Symlink, b"d/d"))
        .unwrap();
    file(&mut w, b"z", b"last");
    std::fs::write(&kry, w.finish().unwrap().1).unwrap();
    let out = tmp.path().join("out");
    let o = x_into(&out, &kry);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 6, "{err}");
    let line = format!(
        "krypta: warning: {}/deep: skipped: symbolic link whose target of 5000 bytes is longer than the file system allows",
        out.display()
    );
    assert_eq!(err.lines().filter(|l| *l == line).count(), 1, "{err}");
    assert!(
        err.contains("extracted, but 1 entry could not be made (see warnings)"),
        "{err}"
    );
    assert_eq!(names(&out), [b"short".to_vec(), b"z".to_vec()]);
    assert_eq!(
        std::fs::read_link(out.join("short")).unwrap(),
        Path::new("d/d")
    );
    assert_eq!(std::fs::read(out.join("z")).unwrap(), b"last");
}

#[test]
fn hard_links_past_the_file_systems_link_limit_are_skipped_and_named() {
    // ext4 allows 65,000 links to a file; the archive may come from a file system that
    // allows more (XFS, btrfs). Elsewhere (tmpfs) there is no such limit to meet.
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("links.kry");
    let links = 65_010;
    let mut w = ArchiveWriter::new(Vec::new(), "mem", WriteOptions::new()).unwrap();
    file(&mut w, b"t", b"shared");
    for i in 0..links {
        let p = format!("l/{i:05}");
        w.add_entry(&meta(p.as_bytes(), EntryKind::Hardlink, b"t"))
            .unwrap();
    }
    file(&mut w, b"z", b"last");
    std::fs::write(&kry, w.finish().unwrap().1).unwrap();
    let out = tmp.path().join("out");
    let o = x_into(&out, &kry);
    let err = String::from_utf8_lossy(&o.stderr);
    let nlink = std::os::unix::fs::MetadataExt::nlink(&std::fs::metadata(out.join("t")).unwrap());
    if code(&o) == 0 && nlink == links + 1 {
        eprintln!(
            "SKIP: {} allows {} links to a file",
            tmp.path().display(),
            links + 1
        );
        return;
    }
    assert_eq!(code(&o), 6, "{}", &err[..err.len().min(2000)]);
    let made = nlink - 1;
    let skipped: Vec<&str> = err
        .lines()
        .filter(|l| {
            l.ends_with(
                ": skipped: hard link to t, which has as many links as the file system allows",
            )
        })
        .collect();
    assert_eq!(
        skipped.len() as u64,
        links - made,
        "{}",
        &err[..err.len().min(2000)]
    );
    // The links past the limit are the last ones of the archive, each named.
    assert_eq!(
        skipped[0],
        format!(
            "krypta: warning: {}/l/{made:05}: skipped: hard link to t, which has as many links as the file system allows",
            out.display()
        )
    );
    assert_eq!(
        std::fs::read_dir(out.join("l")).unwrap().count() as u64,
        made
    );
    assert_eq!(std::fs::read(out.join("z")).unwrap(), b"last");
}

#[test]
fn a_file_larger_than_the_file_system_holds_is_skipped_not_cut_short_and_the_rest_restored() {
    // `ulimit -f` gives EFBIG past 2 MiB, as FAT does past 4 GiB (SIGXFSZ ignored, as a
    // file system's limit sends none); GNU tar leaves such files cut short under their names.
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("big.kry");
    let big = too_large_archive(&kry, true);
    let out = tmp.path().join("out");
    let o = x_under_2_mib_limit("", &out, &kry);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 6, "{err}");
    for line in [
        format!(
            "krypta: warning: {}/big: skipped: larger than the file system allows for one file (File too large (os error 27))",
            out.display()
        ),
        format!(
            "krypta: warning: {}/hl: skipped: hard link to big, which is larger than the file system allows for one file",
            out.display()
        ),
        format!(
            "krypta: warning: {}/holes: skipped: larger than the file system allows for one file (File too large (os error 27))",
            out.display()
        ),
    ] {
        assert_eq!(
            err.lines().filter(|l| *l == line).count(),
            1,
            "{line}\n{err}"
        );
    }
    assert_eq!(
        names(&out),
        [b"a".to_vec(), b"fits".to_vec(), b"z".to_vec()]
    );
    assert_eq!(std::fs::read(out.join("fits")).unwrap(), &big[..1_000_000]);
    assert_eq!(std::fs::read(out.join("z")).unwrap(), b"last");
}

#[test]
fn a_file_skipped_as_too_large_while_written_is_not_counted_or_listed_as_extracted() {
    // The limit met by a write (data past it) and by setting the length (a trailing hole):
    // both files are skipped. Before, the first was still listed by -v and counted in the
    // summary ("3 entries extracted, 3.0 MiB out"), as the skip came before the file's end.
    let tmp = tempfile::tempdir().unwrap();
    let kry = tmp.path().join("big.kry");
    too_large_archive(&kry, false);
    let out = tmp.path().join("out");
    let o = x_under_2_mib_limit("-v", &out, &kry);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 6, "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "a\nz\n");
    let summary = err
        .lines()
        .find(|l| l.contains(" extracted, "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        summary.starts_with(&format!("krypta: {}: 2 entries extracted, ", kry.display()))
            && summary.contains(" in, 9 B out "),
        "{summary}"
    );
    assert_eq!(names(&out), [b"a".to_vec(), b"z".to_vec()]);
}
