//! Issue 17, delta archives: the bases that are refused (missing, another archive, the same id
//! re-created with other content, damaged, a delta as a base) and how each ends, with nothing
//! under a final name it should not be; and delta archives with `--recovery`, `--sign` and
//! `rekey`.

mod cli_common;
mod common;
mod delta_common;

use cli_common::*;
use common::{assert_same_tree, code};
use delta_common::*;

fn setup(fx: &Fx) {
    versions(fx, Change::Small);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "--base", "base.kry", "delta.kry", "v2"]);
}

#[test]
fn extracting_without_the_base_names_it_and_writes_nothing() {
    let fx = Fx::new();
    setup(&fx);
    let id = archive_id(&fx, "base.kry");
    for cmd in [
        &["x", "-q", "delta.kry", "-C", "out"][..],
        &["t", "delta.kry"],
    ] {
        let o = fx.run(cmd);
        assert_eq!(code(&o), 9, "{}", err(&o));
        assert_eq!(
            err(&o).trim(),
            format!(
                "krypta: delta.kry: a delta archive: give --base with its base archive (archive id {id}), and the base's keys if it is encrypted"
            )
        );
    }
    assert!(!fx.exists("out/v2"));
}

/// `cmd` (with `--base other.kry` for `delta.kry`, made against `base.kry`) exits 9 naming
/// both archive ids.
fn assert_refused_as_other_base(fx: &Fx, cmd: &[&str]) {
    let (want, got) = (archive_id(fx, "base.kry"), archive_id(fx, "other.kry"));
    let o = fx.run(cmd);
    assert_eq!(code(&o), 9, "{cmd:?}: {}", err(&o));
    assert_eq!(
        err(&o).trim(),
        format!(
            "krypta: delta.kry: made against base {want}, but other.kry is archive {got}: refusing it"
        )
    );
}

#[test]
fn another_archive_as_base_is_refused_naming_both_ids() {
    let fx = Fx::new();
    setup(&fx);
    fx.ok(&["c", "-q", "other.kry", "v1"]);
    assert_refused_as_other_base(
        &fx,
        &["x", "-q", "--base", "other.kry", "delta.kry", "-C", "out"],
    );
    assert!(!fx.exists("out/v2"));
    // A base given for an archive that is no delta: a usage error.
    let o = fx.run(&["t", "--base", "other.kry", "base.kry"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).contains("--base given, but this is not a delta archive"));
}

#[test]
fn a_base_recreated_with_the_same_id_and_one_file_changed_is_refused() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    // SOURCE_DATE_EPOCH makes the archive id reproducible: the re-created base has the
    // same id, and only the binding tells it apart.
    let epoch = [("SOURCE_DATE_EPOCH", "1700000000")];
    assert!(
        fx.run_env(&["c", "-q", "base.kry", "v1"], &epoch)
            .status
            .success()
    );
    fx.ok(&["c", "-q", "--base", "base.kry", "delta.kry", "v2"]);
    let id = archive_id(&fx, "base.kry");
    fx.file("v1/s/3.dat", b"changed");
    std::fs::remove_file(fx.p("base.kry")).unwrap();
    assert!(
        fx.run_env(&["c", "-q", "base.kry", "v1"], &epoch)
            .status
            .success()
    );
    assert_eq!(archive_id(&fx, "base.kry"), id);
    let o = fx.run(&["x", "-q", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert_eq!(code(&o), 9, "{}", err(&o));
    assert_eq!(
        err(&o).trim(),
        format!(
            "krypta: delta.kry: made against base {id}, but base.kry (id {id}) has other frames: it was modified or re-created since: refusing it"
        )
    );
    assert!(!fx.exists("out/v2"));
}

#[test]
fn a_damaged_base_frame_fails_the_files_that_need_it_and_nothing_else() {
    let fx = Fx::new();
    setup(&fx);
    // Flip one byte in the middle of the base: inside a frame holding big.bin (random bytes,
    // stored blocks). Its tag still reads the same, so the binding matches; the frame does
    // not verify when a delta block needs it.
    let mut b = std::fs::read(fx.p("base.kry")).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x01;
    std::fs::write(fx.p("base.kry"), &b).unwrap();
    // Salvage goes on past the delta blocks that need the damaged base frame (FORMAT.md
    // §16.4), naming it in its warnings (not shown with -q); here every entry's frames need
    // it, so none is restored.
    let o = fx.run(&["x", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert_eq!(code(&o), 9, "{}", err(&o));
    assert!(
        err(&o).contains("base.kry: base frame 0 at byte")
            && err(&o).contains("damaged (its tag does not verify)"),
        "{}",
        err(&o)
    );
    assert!(
        err(&o).ends_with("krypta: delta.kry: restored 0 of 9 entries, 9 damaged\n"),
        "{}",
        err(&o)
    );
    // The file whose blocks need the damaged base frame is not there; nothing is left
    // under a temporary name either.
    assert!(!fx.exists("out/v2/big.bin"));
    let left: Vec<_> = walk(&fx.p("out"));
    assert!(left.iter().all(|p| !p.contains(".krypta")), "{left:?}");
    let o = fx.run(&["t", "--base", "base.kry", "delta.kry"]);
    assert_eq!(code(&o), 9, "{}", err(&o));
}

/// Regression: every failure to read the base while writing a delta was a usage error (exit
/// 1). A damaged base exits as `t` of the base does: 5 unencrypted, 2 encrypted; the message
/// names the base and the frame, and no output is left.
#[test]
fn writing_against_a_damaged_base_exits_as_testing_the_base_does() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "ebase.kry", "v1"]);
    for f in ["base.kry", "ebase.kry"] {
        let mut b = fx.read(f);
        let mid = b.len() / 2;
        b[mid] ^= 0x01;
        std::fs::write(fx.p(f), &b).unwrap();
    }
    let o = fx.run(&["c", "-q", "--base", "base.kry", "d.kry", "v2"]);
    assert_eq!(code(&o), 5, "{}", err(&o));
    assert_eq!(code(&fx.run(&["t", "base.kry"])), 5);
    assert!(
        err(&o).starts_with("krypta: base.kry: integrity check failed: base frame 0 at byte "),
        "{}",
        err(&o)
    );
    let o = fx.run(&[
        "c",
        "-q",
        "--base",
        "ebase.kry",
        "--base-keyfile",
        "k",
        "d.kry",
        "v2",
    ]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert_eq!(code(&fx.run(&["t", "--keyfile", "k", "ebase.kry"])), 2);
    assert!(
        err(&o).starts_with("krypta: ebase.kry: archive damaged or modified at byte ")
            && err(&o).contains("(frame 0)"),
        "{}",
        err(&o)
    );
    assert!(!fx.exists("d.kry"));
    // A bit flipped in a base frame's head (its sequence number) is damage too: the tag
    // covers the head (it was "corrupt: not the data frame the base's index places there",
    // exit 3, while `t` of the base said 5).
    fx.ok(&["c", "-q", "hbase.kry", "v1"]);
    let mut b = fx.read("hbase.kry");
    let h = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    b[h + 8] ^= 0x01;
    std::fs::write(fx.p("hbase.kry"), &b).unwrap();
    let o = fx.run(&["c", "-q", "--base", "hbase.kry", "d.kry", "v2"]);
    assert_eq!(code(&o), 5, "{}", err(&o));
    assert_eq!(code(&fx.run(&["t", "hbase.kry"])), 5);
    assert!(
        err(&o).starts_with("krypta: hbase.kry: integrity check failed: base frame 0 at byte "),
        "{}",
        err(&o)
    );
    assert!(!fx.exists("d.kry"));
}

fn walk(root: &std::path::Path) -> Vec<String> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let p = e.path();
            v.push(p.display().to_string());
            if p.is_dir() {
                v.extend(walk(&p));
            }
        }
    }
    v
}

#[test]
fn a_delta_archive_cannot_be_a_base() {
    let fx = Fx::new();
    setup(&fx);
    let id = archive_id(&fx, "base.kry");
    let o = fx.run(&["c", "-q", "--base", "delta.kry", "d2.kry", "v2"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(
        err(&o).trim(),
        format!(
            "krypta: delta.kry: is itself a delta archive (against base {id}): a delta of a delta is not supported; use a full archive as the base"
        )
    );
    assert!(!fx.exists("d2.kry"));
}

#[test]
fn a_delta_archive_given_as_the_base_when_reading_is_refused_in_reading_words() {
    let fx = Fx::new();
    setup(&fx);
    let id = archive_id(&fx, "base.kry");
    for cmd in [
        &["x", "-q", "--base", "delta.kry", "delta.kry", "-C", "out"][..],
        &["t", "--base", "delta.kry", "delta.kry"],
    ] {
        let o = fx.run(cmd);
        assert_eq!(code(&o), 1, "{}", err(&o));
        assert_eq!(
            err(&o).trim(),
            format!(
                "krypta: delta.kry: given as --base, but it is itself a delta archive (against base {id}): a delta archive is read with the full archive it was made against as --base"
            )
        );
    }
    assert!(!fx.exists("out/v2"));
}

/// Regression: the base was compared with the output as strings, so `./base.kry`, an
/// absolute path or a link to the base passed, and `-f` replaced the base with a delta of
/// itself (exit 0).
#[test]
fn the_base_spelled_another_way_is_still_refused_as_the_output_even_with_f() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["c", "-q", "same.kry", "v1"]);
    let before = fx.read("same.kry");
    std::os::unix::fs::symlink("same.kry", fx.p("link.kry")).unwrap();
    std::fs::hard_link(fx.p("same.kry"), fx.p("hard.kry")).unwrap();
    fx.mkdir("sub");
    let abs = fx.p("same.kry").display().to_string();
    let pairs: [(&str, &str); 7] = [
        ("same.kry", "same.kry"),
        ("./same.kry", "same.kry"),
        (&abs, "same.kry"),
        ("same.kry", &abs),
        ("link.kry", "same.kry"),
        ("same.kry", "sub/../hard.kry"),
        ("sub/../same.kry", "link.kry"),
    ];
    for (base, output) in pairs {
        let o = fx.run(&["c", "-q", "-f", "--base", base, output, "v2"]);
        assert_eq!(code(&o), 1, "--base {base} {output}: {}", err(&o));
        assert_eq!(
            err(&o).trim(),
            format!("krypta: {output}: the delta base cannot be the archive being written"),
        );
        assert_eq!(fx.read("same.kry"), before, "--base {base} {output}");
    }
    // Another file next to it is still a fine output.
    fx.ok(&["c", "-q", "--base", "./same.kry", "sub/d.kry", "v2"]);
}

#[test]
fn delta_archives_take_recovery_data_signatures_and_rekey() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["keygen", "-q", "--sign", "-o", "alice"]);
    fx.ok(&["keygen", "-q", "-o", "k1"]);
    fx.ok(&["keygen", "-q", "-o", "k2"]);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&[
        "c",
        "-q",
        "--recovery",
        "20",
        "--sign",
        "alice",
        "--keyfile",
        "k1",
        "--base",
        "base.kry",
        "delta.kry",
        "v2",
    ]);
    // Damage a few bytes of the delta archive: the recovery data repairs them on the way.
    let mut b = std::fs::read(fx.p("delta.kry")).unwrap();
    b[300] ^= 0xff;
    std::fs::write(fx.p("delta.kry"), &b).unwrap();
    fx.ok(&[
        "x",
        "-q",
        "--signer",
        "alice.pub",
        "--keyfile",
        "k1",
        "--base",
        "base.kry",
        "delta.kry",
        "-C",
        "out",
    ]);
    assert_same_tree(&fx.p("v2"), &fx.p("out/v2"));
    let t = fx.run(&["t", "--keyfile", "k1", "--base", "base.kry", "delta.kry"]);
    assert_eq!(code(&t), 7, "repairable: {}", err(&t));
    // Rekey keeps the base binding: the rekeyed archive still names and reads the base.
    let before = info_base(&fx, "delta.kry");
    fx.ok(&["repair", "-q", "-f", "delta.kry"]);
    fx.ok(&[
        "rekey",
        "-q",
        "--keyfile",
        "k1",
        "--new-keyfile",
        "k2",
        "delta.kry",
        "-o",
        "re.kry",
    ]);
    assert_eq!(info_base(&fx, "re.kry"), before);
    fx.ok(&[
        "x",
        "-q",
        "--keyfile",
        "k2",
        "--base",
        "base.kry",
        "re.kry",
        "-C",
        "out2",
    ]);
    assert_same_tree(&fx.p("v2"), &fx.p("out2/v2"));
}

fn info_base(fx: &Fx, rel: &str) -> serde_json::Value {
    let j: serde_json::Value =
        serde_json::from_str(&out(&fx.ok(&["info", "--json", rel]))).unwrap();
    j["delta_base"].clone()
}

/// Regression (helper-38): an existing OUT was refused only after the base was opened (its
/// key asked for, its index read): with an encrypted base and no base key, the run said
/// "give --base-keyfile" instead of what was wrong. OUT is checked first now, and kept.
#[test]
fn an_existing_output_is_refused_before_the_base_is_opened() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "ebase.kry", "v1"]);
    std::fs::write(fx.p("out.kry"), b"keep me").unwrap();
    let o = fx.run(&["c", "-q", "--base", "ebase.kry", "out.kry", "v2"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(
        err(&o).trim(),
        "krypta: out.kry: already exists (use -f/--force to overwrite)"
    );
    assert_eq!(fx.read("out.kry"), b"keep me");
    // A base that does not exist either: still the output is what is named.
    let o = fx.run(&["c", "-q", "--base", "missing.kry", "out.kry", "v2"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).contains("out.kry: already exists"), "{}", err(&o));
}

/// Regression (review of helper-38's change): with an existing OUT refused first, `c --base
/// same.kry same.kry` without -f said "already exists (use -f/--force to overwrite)", and the
/// -f it advised then met "the delta base cannot be the archive being written". The base as
/// OUT is named first, -f or not; the base is kept.
#[test]
fn the_base_as_output_is_named_before_it_is_called_existing() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["c", "-q", "same.kry", "v1"]);
    let before = fx.read("same.kry");
    std::os::unix::fs::symlink("same.kry", fx.p("link.kry")).unwrap();
    for (base, output) in [("same.kry", "same.kry"), ("./same.kry", "link.kry")] {
        let o = fx.run(&["c", "-q", "--base", base, output, "v2"]);
        assert_eq!(
            (code(&o), err(&o).trim().to_string()),
            (
                1,
                format!("krypta: {output}: the delta base cannot be the archive being written")
            ),
            "--base {base} {output}"
        );
    }
    assert_eq!(fx.read("same.kry"), before);
}

/// Regression (review of helper-38's change): a socket as OUT was refused only when its sink
/// was made, after the delta base was opened: with an encrypted base and no base key, `c`
/// said "give --base-keyfile". It is named first, -f or not, as an existing file is; `rekey`
/// names it before it reads OUT's new keys.
#[test]
fn a_socket_as_output_is_refused_before_the_base_is_opened() {
    use std::os::unix::fs::FileTypeExt;
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "ebase.kry", "v1"]);
    let _listener = std::os::unix::net::UnixListener::bind(fx.p("sock")).unwrap();
    let said = "krypta: sock: is a socket, not a regular file: an archive is written to a file, \
                to stdout (-) or to s3://; nothing was replaced";
    for f in [&[][..], &["-f"]] {
        let o = fx.run(&[&["c", "-q"][..], f, &["--base", "ebase.kry", "sock", "v2"]].concat());
        assert_eq!((code(&o), err(&o).trim()), (1, said), "{f:?}");
    }
    let o = fx.run(&[
        "rekey",
        "--keyfile",
        "k",
        "ebase.kry",
        "-o",
        "sock",
        "--new-keyfile",
        "missing.key",
    ]);
    assert_eq!((code(&o), err(&o).trim()), (1, said));
    assert!(
        std::fs::metadata(fx.p("sock"))
            .unwrap()
            .file_type()
            .is_socket()
    );
}

/// A wrong *encrypted* base given without its key: the ids in the two headers (read without a
/// key) already show it is not the delta's base, so that is said (exit 9, both ids), not "give
/// --base-keyfile" — which only led to the same refusal once the key was found (helper-51).
/// The right base without its key still asks for the key; from a pipe (the delta's header is
/// not read twice) the key is asked for as before.
#[test]
fn a_wrong_encrypted_base_without_its_key_is_named_wrong_first() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "other.kry", "v1"]);
    fx.ok(&[
        "c",
        "-q",
        "--base",
        "base.kry",
        "--base-keyfile",
        "k",
        "delta.kry",
        "v2",
    ]);
    for cmd in [
        &["t", "--base", "other.kry", "delta.kry"][..],
        &["x", "-q", "--base", "other.kry", "delta.kry", "-C", "out"],
    ] {
        assert_refused_as_other_base(&fx, cmd);
    }
    assert!(!fx.exists("out/v2"));
    let o = fx.run(&["t", "--base", "base.kry", "delta.kry"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(
        err(&o).trim(),
        "krypta: base.kry: the base archive is encrypted (keyfile): give --base-keyfile"
    );
    let o = fx.run_stdin(&["t", "--base", "other.kry", "-"], &fx.read("delta.kry"));
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).contains("give --base-keyfile"), "{}", err(&o));
}

/// `base.kry` with 100 bytes inserted between its first two data frames, and with bytes after
/// its footer (junk; zeros).
fn edited_and_appended(fx: &Fx) {
    let d = std::fs::read(fx.p("base.kry")).unwrap();
    let at = u32::from_le_bytes(d[12..16].try_into().unwrap()) as usize;
    let body = u32::from_le_bytes(d[at + 4..at + 8].try_into().unwrap()) as usize;
    let f1 = at + 16 + body + 32;
    assert!(
        f1 < d.len() - 200 && d[f1] == 1,
        "a second data frame at {f1}"
    );
    std::fs::write(
        fx.p("edited.kry"),
        [&d[..f1], &[0x5a; 100][..], &d[f1..]].concat(),
    )
    .unwrap();
    std::fs::write(
        fx.p("appended.kry"),
        [&d[..], b"not the archive's"].concat(),
    )
    .unwrap();
    std::fs::write(fx.p("padded.kry"), [&d[..], &[0; 4096][..]].concat()).unwrap();
}

/// Regression: `c --base` of a base with bytes inserted between two frames, which the reader
/// undoes (`moved`), wrote a delta without a word (exit 0), as it did for a base with bytes
/// after its footer. The policy, with `x` and `t` of a delta archive against such bases:
/// - an undone edit is damage in the base's middle, refused as a flipped header bit is
///   ("a damaged archive is not written against as a delta base"), exit 5, nothing written;
/// - bytes after the footer leave the base's frames, index and footer intact and verified,
///   so the delta written is valid, but `t` of it will fail while the base has them (as for
///   an archive) and they may be the sign of a bad copy: a warning names the base, where it
///   ends, the bytes and what `t` will say; zero padding (a tape block) is not a word, as
///   for `x`.
#[test]
fn a_base_with_an_undone_edit_is_refused_and_bytes_after_its_footer_are_named() {
    let fx = Fx::new();
    setup(&fx);
    edited_and_appended(&fx);
    let at = size(&fx, "base.kry");
    let o = fx.run(&["c", "--base", "edited.kry", "d1.kry", "v2"]);
    assert_eq!(code(&o), 5, "{}", err(&o));
    let e = err(&o);
    assert!(
        e.starts_with("krypta: edited.kry: 100 bytes inserted at byte ")
            && e.contains(": a damaged archive is not written against as a delta base (krypta x restores its files with them undone; a good copy of it can be the base)"),
        "{e}"
    );
    assert!(!fx.exists("d1.kry"));
    let o = fx.run(&["c", "--base", "appended.kry", "d2.kry", "v2"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(
        err(&o).lines().next().unwrap(),
        format!(
            "krypta: warning: appended.kry: 17 bytes follow the archive's footer at byte {at} (a bad copy, or something appended?): read without them; the new archive is written against the base without them, and `krypta t` of it fails while the base has them (a good copy of the base, or this one cut to its {at} bytes, passes)"
        )
    );
    // What the warning says: `t` with that base fails, with the good copy passes.
    let o = fx.run(&["t", "--base", "appended.kry", "d2.kry"]);
    assert_eq!(code(&o), 5, "{}", err(&o));
    fx.ok(&["t", "--base", "base.kry", "d2.kry"]);
    let o = fx.run(&["c", "--base", "padded.kry", "d3.kry", "v2"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(!err(&o).contains("warning"), "{}", err(&o));
    fx.ok(&["t", "--base", "padded.kry", "d3.kry"]);
}
