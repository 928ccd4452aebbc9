//! A PATH given to `x` and `l` is written as `l` prints names (unquoted, as GNU tar's default):
//! a name holding a newline, a tab, a backslash or a byte that is not UTF-8, copied from the
//! listing, names that entry; a PATH that is not a well-formed escape is taken byte for byte,
//! and `--no-unquote` takes every PATH so. Before, such a PATH was "not found" (exit 1).

mod common;

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::{Output, Stdio};

/// The raw names of the files in `t/`, with their contents.
const FILES: [(&[u8], &[u8]); 6] = [
    (b"a\nb", b"newline"),
    (b"a\\nb", b"backslash-n"),
    (b"c\td", b"tab"),
    (b"e\\f", b"backslash"),
    (b"g\xffh", b"not utf-8"),
    (b"plain", b"plain"),
];

fn run(dir: &Path, args: &[&OsStr]) -> Output {
    common::krypta()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// A directory holding `n.kry`, an archive of `t/` with [`FILES`].
fn archived() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for (name, data) in FILES {
        let mut p = tmp.path().join("t").into_os_string().into_vec();
        p.push(b'/');
        p.extend_from_slice(name);
        common::write(Path::new(&OsString::from_vec(p)), data);
    }
    let o = run(tmp.path(), &[os("c"), os("-q"), os("n.kry"), os("t")]);
    assert_eq!(
        common::code(&o),
        0,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    tmp
}

/// The names `l` prints for `args` (after `l n.kry`), and the exit code.
fn listed(dir: &Path, args: &[&OsStr]) -> (i32, Vec<String>) {
    let mut all = vec![os("l"), os("n.kry")];
    all.extend_from_slice(args);
    let o = run(dir, &all);
    let names = String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect();
    (common::code(&o), names)
}

#[test]
fn every_name_l_prints_selects_that_entry_alone() {
    let tmp = archived();
    let (code, all) = listed(tmp.path(), &[]);
    assert_eq!(code, 0);
    assert_eq!(
        all,
        [
            "t",
            "t/a\\nb",
            "t/a\\\\nb",
            "t/c\\td",
            "t/e\\\\f",
            "t/g\\xffh",
            "t/plain"
        ]
    );
    for shown in &all[1..] {
        let (code, got) = listed(tmp.path(), &[os(shown)]);
        assert_eq!((code, got), (0, vec![shown.clone()]), "PATH {shown}");
    }
}

#[test]
fn x_extracts_the_entry_a_listed_name_names() {
    let tmp = archived();
    for (shown, raw, data) in [
        ("t/a\\nb", &b"a\nb"[..], &b"newline"[..]),
        ("t/c\\td", b"c\td", b"tab"),
        ("t/e\\\\f", b"e\\f", b"backslash"),
        ("t/g\\xffh", b"g\xffh", b"not utf-8"),
    ] {
        let out = tmp.path().join("out");
        let _ = std::fs::remove_dir_all(&out);
        let o = run(
            tmp.path(),
            &[
                os("x"),
                os("-q"),
                os("n.kry"),
                os(shown),
                os("-C"),
                out.as_os_str(),
            ],
        );
        assert_eq!(
            common::code(&o),
            0,
            "{shown}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let dir: Vec<Vec<u8>> = std::fs::read_dir(out.join("t"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_vec())
            .collect();
        assert_eq!(dir, [raw.to_vec()], "{shown}");
        let file = out.join("t").join(OsStr::from_bytes(raw));
        assert_eq!(std::fs::read(file).unwrap(), data, "{shown}");
    }
}

#[test]
fn a_path_that_is_no_escape_is_taken_byte_for_byte() {
    let tmp = archived();
    // `\f` is no escape `l` makes: the PATH is the name with a backslash itself.
    let (code, got) = listed(tmp.path(), &[os("t/e\\f")]);
    assert_eq!((code, got), (0, vec!["t/e\\\\f".to_string()]));
    // Raw bytes that need no escape work as before.
    let (code, got) = listed(tmp.path(), &[OsStr::from_bytes(b"t/g\xffh")]);
    assert_eq!((code, got), (0, vec!["t/g\\xffh".to_string()]));
}

#[test]
fn no_unquote_takes_every_path_byte_for_byte() {
    let tmp = archived();
    let (code, got) = listed(tmp.path(), &[os("--no-unquote"), os("t/a\\nb")]);
    assert_eq!((code, got), (0, vec!["t/a\\\\nb".to_string()]));
    // The newline name itself is then given raw.
    let (code, got) = listed(tmp.path(), &[os("--no-unquote"), os("t/a\nb")]);
    assert_eq!((code, got), (0, vec!["t/a\\nb".to_string()]));
}

#[test]
fn a_name_not_found_is_named_as_l_would_print_it() {
    let tmp = archived();
    let o = run(tmp.path(), &[os("l"), os("n.kry"), os("t/x\\ny")]);
    assert_eq!(common::code(&o), 1);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim_end(),
        format!("krypta: not found in n.kry: t/x\\ny {HINT}")
    );
}

/// What "not found" adds for a PATH that unquoting changed and that held a backslash.
const HINT: &str = "(a PATH is read as `l` prints names: a backslash that is part of a name \
                    is \\\\ there, so 'a\\\\nb' names a\\nb; or give --no-unquote to take PATHs as typed)";

#[test]
fn a_name_with_a_backslash_typed_as_is_gets_a_hint_when_not_found() {
    // `e\nf` typed meaning a backslash (as `ls` shows such a name) is unquoted to a
    // newline: not found, and the message said only the PATH as typed, a name the user may
    // see on disk. It now says how such a name is written.
    let tmp = archived();
    for cmd in ["l", "x"] {
        let mut args = vec![os(cmd), os("-q"), os("n.kry"), os("t/e\\nf"), os("t/zz")];
        let out = tmp.path().join("out");
        if cmd == "x" {
            args.extend([os("-o"), out.as_os_str()]);
        }
        let o = run(tmp.path(), &args);
        assert_eq!(common::code(&o), 1, "{cmd}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr).trim_end(),
            format!("krypta: not found in n.kry: t/e\\nf, t/zz {HINT}"),
            "{cmd}"
        );
    }
    // A PATH without a backslash gets none; --no-unquote takes the PATH as typed.
    let o = run(tmp.path(), &[os("l"), os("n.kry"), os("t/zz")]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim_end(),
        "krypta: not found in n.kry: t/zz"
    );
    let o = run(
        tmp.path(),
        &[os("l"), os("--no-unquote"), os("n.kry"), os("t/e\\nf")],
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim_end(),
        "krypta: not found in n.kry: t/e\\\\nf"
    );
}

#[test]
fn a_pattern_typed_without_wildcards_gets_a_hint_when_not_found() {
    let tmp = archived();
    let o = run(tmp.path(), &[os("l"), os("n.kry"), os("t/pl*")]);
    assert_eq!(common::code(&o), 1);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim_end(),
        "krypta: not found in n.kry: t/pl* \
         (a PATH with *, ? or [ is a name unless --wildcards makes it a pattern)"
    );
    // With --wildcards the same PATH is the pattern it looked like.
    let (code, got) = listed(tmp.path(), &[os("--wildcards"), os("t/pl*")]);
    assert_eq!((code, got), (0, vec!["t/plain".to_string()]));
    // A PATH without pattern characters gets no such hint.
    let o = run(tmp.path(), &[os("l"), os("n.kry"), os("t/none")]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim_end(),
        "krypta: not found in n.kry: t/none"
    );
}
