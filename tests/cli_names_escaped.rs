//! Messages name an archive escaped, as `l` names entries (`krypta::fs::shown`), not with
//! `Path::display`: a newline in the archive's name forged a line of the message and a terminal
//! escape in it reached the terminal — in the summaries of `c` and `x`, the OK line of `t`,
//! `info`, the refusals of `repair` and `rekey`, and the salvage warnings — as "not found in
//! ARCHIVE" did before feb1bd9 (helper-46). So did an entry's name in "content digest of PATH
//! does not match" (printed lossily too), and an s3:// URL refused for its control characters.

mod common;
mod hostile_common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Output, Stdio};

/// An archive name that, printed raw, forges a line and resets the terminal's colours.
const NAME: &[u8] = b"a\nkrypta: all fine\x1b[0m.kry";
/// [`NAME`] as messages show it.
const SHOWN: &str = "a\\nkrypta: all fine\\x1b[0m.kry";

/// krypta `args` in `dir`, stdin empty; the output checked for raw bytes of [`NAME`].
fn run(dir: &Path, args: &[&OsStr]) -> (i32, String, String) {
    let o = common::krypta()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_not_forged(&o);
    (
        common::code(&o),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// No terminal escape in the output, and no line that the name's newline started.
fn assert_not_forged(o: &Output) {
    for stream in [&o.stdout, &o.stderr] {
        let text = String::from_utf8_lossy(stream);
        assert!(!stream.contains(&0x1b), "raw ESC: {text:?}");
        assert!(
            !text.lines().any(|l| l.starts_with("krypta: all fine")),
            "forged line: {text:?}"
        );
    }
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// A directory holding `t/f` and `t/g` (64 KiB each, incompressible) and the archive [`NAME`]
/// of `t` in 64 KiB blocks (made quietly: [`create_names_the_archive_escaped`] checks `c`).
fn archived() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    common::write(&d.path().join("t/f"), &common::bytes(64 << 10, 1, false));
    common::write(&d.path().join("t/g"), &common::bytes(64 << 10, 2, false));
    let (code, _, err) = run(d.path(), &create(&["-q"]));
    assert_eq!(code, 0, "{err}");
    d
}

/// `c -b 64K [extra] NAME t`.
fn create<'a>(extra: &[&'a str]) -> Vec<&'a OsStr> {
    let mut args = vec![os("c"), os("-b"), os("64K")];
    args.extend(extra.iter().map(|a| os(a)));
    args.extend([OsStr::from_bytes(NAME), os("t")]);
    args
}

#[test]
fn create_names_the_archive_escaped() {
    let d = archived();
    let (code, _, err) = run(d.path(), &create(&["-f"]));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with(&format!("krypta: {SHOWN}: 3 entries, ")),
        "{err}"
    );
}

#[test]
fn the_ok_line_of_test_names_the_archive_escaped() {
    let d = archived();
    let (code, _, err) = run(d.path(), &[os("t"), OsStr::from_bytes(NAME)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with(&format!("krypta: {SHOWN}: OK (3 entries, ")),
        "{err}"
    );
}

#[test]
fn extract_names_the_archive_escaped() {
    let d = archived();
    let name = OsStr::from_bytes(NAME);
    let (code, _, err) = run(d.path(), &[os("x"), name, os("-o"), os("out")]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with(&format!("krypta: {SHOWN}: 3 entries extracted, ")),
        "{err}"
    );
}

#[test]
fn info_names_the_archive_escaped() {
    let d = archived();
    let (code, out, err) = run(d.path(), &[os("info"), OsStr::from_bytes(NAME)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("archive:        {SHOWN}\n")),
        "{out}"
    );
}

#[test]
fn repair_and_rekey_refusals_name_the_archive_escaped() {
    let d = archived();
    let name = OsStr::from_bytes(NAME);
    let (code, _, err) = run(d.path(), &[os("repair"), name]);
    assert_eq!(
        (code, err),
        (
            1,
            format!(
                "krypta: repair writes the repaired archive to a new file: give -o OUT, or -f to replace {SHOWN} with it\n"
            )
        )
    );

    common::write(&d.path().join("pw"), b"new password\n");
    let (code, _, err) = run(
        d.path(),
        &[
            os("rekey"),
            name,
            os("-o"),
            os("new.kry"),
            os("--new-pass-file"),
            os("pw"),
        ],
    );
    assert_eq!(
        (code, err),
        (
            1,
            format!(
                "krypta: {SHOWN}: not encrypted: rekey changes the stanzas of an encrypted archive (to encrypt this one, extract it and create it again)\n"
            )
        )
    );
}

#[test]
fn salvage_warnings_name_the_archive_escaped() {
    let d = archived();
    let path = d.path().join(OsStr::from_bytes(NAME));
    let bytes = std::fs::read(&path).unwrap();
    // Cut inside the second file's frames: the index and footer are lost.
    std::fs::write(&path, &bytes[..bytes.len() * 3 / 4]).unwrap();
    let (code, _, err) = run(d.path(), &[os("t"), OsStr::from_bytes(NAME)]);
    assert_eq!(code, 5, "{err}");
    let warned = format!("krypta: warning: {SHOWN}: the index could not be read (");
    assert!(err.lines().any(|l| l.starts_with(&warned)), "{err}");
    let region = format!("krypta: warning: {SHOWN}: archive damaged at byte ");
    assert!(err.lines().any(|l| l.starts_with(&region)), "{err}");
}

#[test]
fn a_content_digest_mismatch_names_the_entry_escaped() {
    // A file of 10 bytes, all hole, whose END holds a wrong digest.
    use hostile_common::*;
    use krypta::format::record::{write_end, write_entry};
    let entry = b"a\nb\x1b[31m\xff";
    let mut records = Vec::new();
    write_entry(&mut records, &file_meta(entry), V);
    write_end(&mut records, 10, Some(&[1; 32]), V);
    let index = one_file_index(file_meta(entry), 10, [1; 32], records.len());
    let (d, _) = write("h.kry", &archive(&records, &index));
    let (code, _, err) = run(d.path(), &[os("t"), os("h.kry")]);
    assert_eq!(
        (code, err.as_str()),
        (
            5,
            "krypta: h.kry: integrity check failed: content digest of a\\nb\\x1b[31m\\xff does not match (while reading a\\nb\\x1b[31m\\xff)\n"
        )
    );
}

#[test]
fn an_s3_url_refused_for_its_control_characters_is_named_escaped() {
    // The refusal quoted the very characters it refused.
    let d = tempfile::tempdir().unwrap();
    let url = [b"s3://b/".as_slice(), NAME].concat();
    let (code, _, err) = run(d.path(), &[os("t"), OsStr::from_bytes(&url)]);
    assert_eq!(
        (code, err),
        (
            1,
            format!(
                "krypta: s3://b/{SHOWN}: control characters in the URL (expected s3://BUCKET/KEY)\n"
            )
        )
    );
}

/// Invisible formatting characters: a right-to-left override (U+202E) makes `a<U+202E>yrk.exe` read
/// as `aexe.kry`; directional marks (U+200E, U+200F) and zero-width characters (U+200B,
/// U+200D, U+FEFF) make two names read the same. Each is shown as its UTF-8 bytes escaped,
/// in an archive's name as in an entry's. Regression: the marks and zero-width characters
/// were printed raw (only U+202A..E and U+2066..9 were escaped).
#[test]
fn invisible_formatting_characters_in_names_are_shown_escaped() {
    let d = tempfile::tempdir().unwrap();
    let name = "a\u{202e}b\u{200e}c\u{200f}d\u{200b}e\u{200d}f\u{feff}g\u{2060}h\u{061c}.kry";
    let shown = "a\\xe2\\x80\\xaeb\\xe2\\x80\\x8ec\\xe2\\x80\\x8fd\\xe2\\x80\\x8be\\xe2\\x80\\x8df\\xef\\xbb\\xbfg\\xe2\\x81\\xa0h\\xd8\\x9c.kry";
    common::write(&d.path().join(format!("t/{name}")), b"content\n");
    let (code, _, err) = run(d.path(), &[os("c"), os(name), os("t")]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("krypta: {shown}: ")), "{err}");
    let (code, out, err) = run(d.path(), &[os("l"), os(name)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.ends_with(&format!(" t/{shown}\n")), "{out}");
    for text in [&out, &err] {
        assert!(!text.contains(['\u{202e}', '\u{200e}', '\u{200b}', '\u{feff}']));
    }
}

/// A bucket name with a character no bucket name has (bidirectional, zero-width, any
/// character beyond ASCII) is refused before any request, named escaped. Regression: such a
/// name was accepted (and sent), and shown raw: `s3://kry<U+202E>atp/k.kry` read as another bucket.
#[test]
fn a_bucket_name_with_invisible_characters_is_refused_named_escaped() {
    let d = tempfile::tempdir().unwrap();
    for (bucket, shown) in [
        ("bu\u{202e}ck", "bu\\xe2\\x80\\xaeck"),
        ("bu\u{200b}ck", "bu\\xe2\\x80\\x8bck"),
        ("bück", "bück"),
    ] {
        for cmd in ["t", "c"] {
            let url = format!("s3://{bucket}/k.kry");
            let mut args = vec![os(cmd), os(&url)];
            if cmd == "c" {
                args.push(os("."));
            }
            let (code, _, err) = run(d.path(), &args);
            assert_eq!(
                (code, err),
                (
                    1,
                    format!(
                        "krypta: s3://{shown}/k.kry: the bucket name has characters a bucket name cannot have (expected s3://BUCKET/KEY)\n"
                    )
                ),
                "{cmd} {bucket:?}"
            );
        }
    }
}
