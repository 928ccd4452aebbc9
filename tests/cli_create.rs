//! `krypta c` and what it does with its inputs and its output, through the binary: a name two
//! inputs would store (only the same file is stored once quietly; a different one is named
//! and counted, exit 6); nothing archivable leaves the output as it was (exit 4); a directory
//! reached twice is stored in full under each name, a loop is stopped; an archive replaced
//! with `-f` keeps its mode and owner, and through a symbolic link replaces the file it
//! names (the link stays); a directory as OUTPUT is refused up front.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// The warning lines of a run's stderr (the summary and the closing error line left out).
fn warned(o: &std::process::Output) -> Vec<String> {
    err(o)
        .lines()
        .filter(|l| l.starts_with("krypta: warning: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_different_file_under_a_stored_name_is_named_with_both_sources_and_exits_6() {
    let fx = Fx::new();
    fx.file("h1/etc/hosts", b"one\n");
    fx.file("h2/etc/hosts", b"two\n");
    fx.file("h2/etc/other", b"only2\n");
    let o = fx.run(&["c", "m.kry", "h1/.", "h2/."]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert_eq!(
        warned(&o),
        [
            "krypta: warning: h2/./etc/hosts: skipped: its name etc/hosts holds h1/./etc/hosts \
             already (a different file from an earlier input)"
        ]
    );
    assert_eq!(
        err(&o).lines().last().unwrap(),
        "krypta: archive written, but 1 item(s) were left out (see warnings)"
    );
    // The directories merge: h2's other file is stored, h1's hosts is the one kept.
    assert_eq!(fx.names("m.kry"), [".", "etc", "etc/hosts", "etc/other"]);
    fx.ok(&["x", "m.kry", "-o", "out"]);
    assert_eq!(fx.read("out/etc/hosts"), b"one\n");
    assert_eq!(fx.read("out/etc/other"), b"only2\n");
}

#[test]
fn leading_dotdot_stripping_onto_a_stored_name_is_named_too() {
    let fx = Fx::new();
    fx.file("h1/etc/hosts", b"h1\n");
    fx.file("h1/sub/etc/hosts", b"sub\n");
    let sub = fx.p("h1/sub");
    let o = common::krypta()
        .current_dir(&sub)
        .args(["c", "../../m4.kry", "etc", "../etc"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert_eq!(
        warned(&o),
        [
            "krypta: warning: removing leading '../' from member names",
            "krypta: warning: ../etc/hosts: skipped: its name etc/hosts holds etc/hosts already \
             (a different file from an earlier input)",
        ]
    );
    assert_eq!(fx.names("m4.kry"), ["etc", "etc/hosts"]);
    fx.ok(&["x", "m4.kry", "-o", "out"]);
    assert_eq!(fx.read("out/etc/hosts"), b"sub\n");
}

#[test]
fn the_same_file_reached_twice_is_stored_once_quietly() {
    let fx = Fx::new();
    fx.file("a/etc/hosts", b"same\n");
    fx.mkdir("b/etc");
    std::fs::hard_link(fx.p("a/etc/hosts"), fx.p("b/etc/hosts")).unwrap();
    for args in [
        &["c", "s1.kry", "a/.", "b/."][..],
        &["c", "s2.kry", "a", "a/etc/hosts", "a"],
    ] {
        let o = fx.ok(args);
        assert_eq!(warned(&o), Vec::<String>::new(), "{args:?}");
    }
    assert_eq!(fx.names("s1.kry"), [".", "etc", "etc/hosts"]);
    assert_eq!(fx.names("s2.kry"), ["a", "a/etc", "a/etc/hosts"]);
}

#[test]
fn another_kind_under_a_stored_name_and_an_input_below_a_stored_file_exit_6() {
    let fx = Fx::new();
    fx.file("A/x", b"file");
    fx.mkdir("A/q");
    fx.file("B/x/y", b"below");
    fx.mkdir("B/q");
    let o = fx.run(&["c", "k.kry", "A/q/../x", "B/q/../x"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert!(
        warned(&o).contains(
            &"krypta: warning: B/q/../x: skipped with what is below it: its name x holds \
              A/q/../x already (another kind of entry from an earlier input)"
                .to_string()
        ),
        "{}",
        err(&o)
    );
    assert_eq!(fx.names("k.kry"), ["x"]);
    let o = fx.run(&["c", "k2.kry", "A/q/../x", "B/q/../x/y"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert!(
        warned(&o).contains(
            &"krypta: warning: B/q/../x/y: skipped: it would lie below x, a file or link \
              stored from A/q/../x"
                .to_string()
        ),
        "{}",
        err(&o)
    );
    assert_eq!(fx.names("k2.kry"), ["x"]);
}

#[test]
fn a_run_that_archives_nothing_keeps_the_last_good_archive_and_exits_4() {
    let fx = Fx::new();
    fx.file("t/a.txt", b"precious\n");
    fx.ok(&["c", "-f", "keep.kry", "t/a.txt"]);
    let before = fx.read("keep.kry");
    let o = fx.run(&["c", "-f", "keep.kry", "mnt/unmounted"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: warning: mnt/unmounted: cannot stat (No such file or directory (os error 2)); \
         skipped\n\
         krypta: keep.kry: not written: nothing could be archived (1 input(s) or item(s) \
         skipped, see warnings); the existing archive is left as it was\n"
    );
    assert_eq!(fx.read("keep.kry"), before);
    assert_eq!(fx.names("keep.kry"), ["t/a.txt"]);
    // No file is created when there was none, and no temporary file is left.
    let o = fx.run(&["c", "new.kry", "gone1", "gone2"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(err(&o).ends_with(
        "krypta: new.kry: not written: nothing could be archived (2 input(s) or item(s) \
         skipped, see warnings)\n"
    ));
    let mut left: Vec<String> = std::fs::read_dir(fx.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["keep.kry", "t"]);
}

#[test]
fn a_fifo_is_counted_as_skipped_and_alone_archives_nothing() {
    let fx = Fx::new();
    fx.file("t/a.txt", b"a\n");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        fx.p("ff"),
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    let o = fx.run(&["c", "ff.kry", "ff"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(!fx.exists("ff.kry"));
    let o = fx.run(&["c", "ff2.kry", "ff", "t/a.txt"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert_eq!(warned(&o), ["krypta: warning: ff: skipping FIFO"]);
    assert_eq!(
        err(&o).lines().last().unwrap(),
        "krypta: archive written, but 1 item(s) were left out (see warnings)"
    );
    assert_eq!(fx.names("ff2.kry"), ["t/a.txt"]);
}

#[test]
fn an_empty_directory_is_archived_and_an_empty_files_from_list_is_refused() {
    let fx = Fx::new();
    fx.mkdir("empty");
    let o = fx.ok(&["c", "e.kry", "empty"]);
    assert_eq!(warned(&o), Vec::<String>::new());
    assert_eq!(fx.names("e.kry"), ["empty"]);
    fx.file("list.txt", b"");
    let o = fx.run(&["c", "l.kry", "--files-from", "list.txt"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: list.txt: names no input (one name per line)\n"
    );
    assert!(!fx.exists("l.kry"));
}

#[test]
fn dereference_stores_a_directory_reached_through_a_link_in_full_under_both_names() {
    let fx = Fx::new();
    fx.file("L/real/f", b"data\n");
    std::os::unix::fs::symlink("real", fx.p("L/alias")).unwrap();
    let o = fx.ok(&["c", "-L", "L1.kry", "L"]);
    assert_eq!(warned(&o), Vec::<String>::new());
    assert_eq!(
        fx.names("L1.kry"),
        ["L", "L/alias", "L/alias/f", "L/real", "L/real/f"]
    );
    fx.ok(&["x", "L1.kry", "-o", "o"]);
    assert_eq!(fx.read("o/L/real/f"), b"data\n");
    assert_eq!(fx.read("o/L/alias/f"), b"data\n");
}

#[test]
fn one_input_spelled_twice_is_stored_in_full_under_each_name() {
    let fx = Fx::new();
    fx.file("src/f", b"abc");
    let abs = fx.p("src");
    let o = fx.ok(&["c", "a.kry", "src", abs.to_str().unwrap()]);
    assert_eq!(
        warned(&o),
        ["krypta: warning: removing leading '/' from member names"]
    );
    let rel = abs.to_str().unwrap().trim_start_matches('/').to_string();
    let names = fx.names("a.kry");
    assert_eq!(names, ["src", "src/f", &rel, &format!("{rel}/f")]);
    fx.ok(&["x", "a.kry", "-o", "o"]);
    assert_eq!(fx.read(&format!("o/{rel}/f")), b"abc");
}

#[test]
fn a_link_to_a_directory_above_is_a_loop_stored_empty_and_the_walk_ends() {
    let fx = Fx::new();
    fx.file("L/real/f", b"data\n");
    std::os::unix::fs::symlink("..", fx.p("L/real/up")).unwrap();
    let o = fx.ok(&["c", "-L", "loop.kry", "L"]);
    assert_eq!(
        warned(&o),
        [
            "krypta: warning: L/real/up: directory loop: it is L, a directory above it \
          (symbolic link or bind mount); stored empty, not descended"
        ]
    );
    assert_eq!(
        fx.names("loop.kry"),
        ["L", "L/real", "L/real/f", "L/real/up"]
    );
}

/// (mode & 0o7777, uid, gid) of `p`.
fn mode_owner(p: &std::path::Path) -> (u32, u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).unwrap();
    (m.mode() & 0o7777, m.uid(), m.gid())
}

/// Gives `p` the mode `mode` and, as root, the owner and group 65534 (nobody); returns what
/// it then has.
fn restrict(p: &std::path::Path, mode: u32) -> (u32, u32, u32) {
    use std::os::unix::fs::PermissionsExt;
    if rustix::process::geteuid().is_root() {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    mode_owner(p)
}

#[test]
fn c_f_and_rekey_f_keep_the_replaced_archives_mode_and_owner() {
    let fx = Fx::new();
    fx.file("etc/passwd", b"root:x:0:0\n");
    fx.ok(&["c", "priv.kry", "etc"]);
    let want = restrict(&fx.p("priv.kry"), 0o600);
    fx.file("etc/shadow", b"secret\n");
    fx.ok(&["c", "-f", "priv.kry", "etc"]);
    assert_eq!(mode_owner(&fx.p("priv.kry")), want);
    assert_eq!(fx.names("priv.kry"), ["etc", "etc/passwd", "etc/shadow"]);
    // rekey -o over an existing OUT replaces it the same way.
    fx.file("pw", b"pw\n");
    fx.file("pw2", b"pw2\n");
    let fast = ["--kdf-memory", "8", "--kdf-iterations", "1"];
    fx.ok(&[&["c", "--pass-file", "pw"][..], &fast, &["enc.kry", "etc"]].concat());
    fx.ok(&[&["c", "--pass-file", "pw"][..], &fast, &["out.kry", "etc"]].concat());
    let want = restrict(&fx.p("out.kry"), 0o640);
    fx.ok(&[
        &[
            "rekey",
            "--pass-file",
            "pw",
            "enc.kry",
            "-o",
            "out.kry",
            "-f",
        ][..],
        &["--new-pass-file", "pw2"],
        &fast,
    ]
    .concat());
    assert_eq!(mode_owner(&fx.p("out.kry")), want);
    fx.ok(&["t", "-q", "--pass-file", "pw2", "out.kry"]);
    // A new archive still gets 0666 less the umask.
    fx.ok(&["c", "new.kry", "etc"]);
    let umask = rustix::process::umask(rustix::fs::Mode::empty());
    rustix::process::umask(umask);
    assert_eq!(mode_owner(&fx.p("new.kry")).0, 0o666 & !umask.bits());
}

#[test]
fn a_directory_as_output_is_refused_up_front_with_or_without_force() {
    let fx = Fx::new();
    fx.file("somedir/a", b"a");
    fx.file("new.kry", b"not read");
    for args in [
        &["c", "somedir", "new.kry"][..],
        &["c", "-f", "somedir", "new.kry"],
        // Refused before the password prompt (stdin is not a terminal: that would fail).
        &["c", "-p", "-f", "somedir", "new.kry"],
        &["c", "-f", "somedir", "missing-input"],
    ] {
        let o = fx.run(args);
        assert_eq!(code(&o), 1, "{args:?}: {}", err(&o));
        assert_eq!(
            err(&o),
            "krypta: somedir: is a directory, not an archive\n",
            "{args:?}"
        );
    }
    let mut left: Vec<String> = std::fs::read_dir(fx.p("somedir"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["a"], "no temporary file left in the directory");
    // rekey -o DIR the same.
    fx.ok(&["c", "in.kry", "somedir"]);
    let o = fx.run(&[
        "rekey",
        "in.kry",
        "-o",
        "somedir",
        "-f",
        "--new-pass-file",
        "new.kry",
    ]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(err(&o), "krypta: somedir: is a directory, not an archive\n");
}

#[test]
fn c_f_and_rekey_f_through_a_symbolic_link_replace_the_file_it_names_and_keep_the_link() {
    let fx = Fx::new();
    fx.file("etc/a", b"first\n");
    std::fs::create_dir(fx.p("nas")).unwrap();
    fx.ok(&["c", "nas/backup.kry", "etc"]);
    std::os::unix::fs::symlink("nas/backup.kry", fx.p("latest.kry")).unwrap();
    // Without -f the link is an existing output.
    let o = fx.run(&["c", "latest.kry", "etc"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    fx.file("etc/b", b"second\n");
    fx.ok(&["c", "-f", "latest.kry", "etc"]);
    let l = std::fs::symlink_metadata(fx.p("latest.kry")).unwrap();
    assert!(
        l.file_type().is_symlink(),
        "the link was replaced by a file"
    );
    assert_eq!(
        std::fs::read_link(fx.p("latest.kry")).unwrap(),
        std::path::Path::new("nas/backup.kry")
    );
    assert_eq!(fx.names("nas/backup.kry"), ["etc", "etc/a", "etc/b"]);
    // rekey -o through the link the same; no temporary file left beside either name.
    fx.file("pw", b"pw\n");
    let fast = ["--kdf-memory", "8", "--kdf-iterations", "1"];
    fx.ok(&[&["c", "--pass-file", "pw"][..], &fast, &["enc.kry", "etc"]].concat());
    fx.ok(&[
        &[
            "rekey",
            "--pass-file",
            "pw",
            "enc.kry",
            "-o",
            "latest.kry",
            "-f",
        ][..],
        &["--new-pass-file", "pw"],
        &fast,
    ]
    .concat());
    assert!(
        std::fs::symlink_metadata(fx.p("latest.kry"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    fx.ok(&["t", "-q", "--pass-file", "pw", "nas/backup.kry"]);
    for d in [".", "nas"] {
        let tmp: Vec<_> = std::fs::read_dir(fx.p(d))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".krypta-"))
            .collect();
        assert!(tmp.is_empty(), "temporary files left in {d}");
    }
}

#[test]
fn a_dangling_link_as_output_is_written_through_with_or_without_f_and_stays_a_link() {
    // Regression (h61): `c -f` replaced a dangling link by a regular file (the archive went
    // where the link was, not where it points), and without -f the link was "already
    // exists" though nothing was there to overwrite. As tar, zstd and the shell's `>`, the
    // archive is created where the link points, and the link stays.
    let fx = Fx::new();
    fx.file("etc/a", b"first\n");
    std::fs::create_dir(fx.p("nas")).unwrap();
    for (force, link, target) in [
        (false, "dangling.kry", "nas/missing.kry"),
        (true, "dangling-f.kry", "nas/missing-f.kry"),
    ] {
        // Relative to the link's directory, through a second link (a chain).
        std::os::unix::fs::symlink("hop.kry", fx.p(&format!("nas/{link}"))).unwrap();
        std::os::unix::fs::symlink(target.strip_prefix("nas/").unwrap(), fx.p("nas/hop.kry"))
            .unwrap();
        let args = if force {
            vec!["c", "-f", "-q"]
        } else {
            vec!["c", "-q"]
        };
        let out = format!("nas/{link}");
        let o = fx.run(&[&args[..], &[out.as_str(), "etc"]].concat());
        assert_eq!(code(&o), 0, "-f {force}: {}", err(&o));
        assert_eq!(err(&o), "");
        let l = std::fs::symlink_metadata(fx.p(&out)).unwrap();
        assert!(l.file_type().is_symlink(), "-f {force}: link replaced");
        assert_eq!(
            std::fs::read_link(fx.p(&out)).unwrap(),
            std::path::Path::new("hop.kry")
        );
        assert_eq!(fx.names(target), ["etc", "etc/a"]);
        std::fs::remove_file(fx.p("nas/hop.kry")).unwrap();
    }
    // Now the link names an existing archive: refused without -f, as any existing output.
    std::os::unix::fs::symlink("missing.kry", fx.p("nas/again.kry")).unwrap();
    let o = fx.run(&["c", "nas/again.kry", "etc"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: nas/again.kry: already exists (use -f/--force to overwrite)\n"
    );
    // A link into a directory that does not exist: nothing made, the link kept.
    std::os::unix::fs::symlink("gone/x.kry", fx.p("nowhere.kry")).unwrap();
    let o = fx.run(&["c", "-f", "nowhere.kry", "etc"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(err(&o).contains("gone/x.kry"), "{}", err(&o));
    assert!(
        std::fs::symlink_metadata(fx.p("nowhere.kry"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(!fx.p("gone").exists());
}

#[test]
fn a_named_pipe_or_character_device_as_output_is_written_into_never_replaced() {
    // Regression (helper-31): `c -f` over a FIFO or a device node replaced it with a regular
    // file: as root, `krypta c -f /dev/null dir` turned /dev/null into a 600-byte file, and a
    // reader waiting on a FIFO waited for good. They are written into, as `tar cf /dev/null`.
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let fx = Fx::new();
    fx.file("in/a", b"alpha");
    for force in [false, true] {
        let fifo = fx.p("fifo");
        let _ = std::fs::remove_file(&fifo);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                std::fs::File::open(fifo)
                    .unwrap()
                    .read_to_end(&mut got)
                    .unwrap();
                got
            })
        };
        let args: &[&str] = if force {
            &["c", "-q", "-f", "fifo", "in"]
        } else {
            &["c", "-q", "fifo", "in"]
        };
        let o = fx.run(args);
        // Let the reader go if krypta never opened the FIFO (a failure, not a hang): a
        // writer that opens and closes adds nothing.
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&fifo);
        assert_eq!((code(&o), err(&o)), (0, String::new()), "{args:?}");
        let archive = reader.join().unwrap();
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        std::fs::write(fx.p("from-fifo.kry"), &archive).unwrap();
        assert_eq!(
            fx.ok(&["x", "--stdout", "from-fifo.kry", "in/a"]).stdout,
            b"alpha"
        );
    }
    // /dev/null, without -f (with -f the same path is taken; a regression there as root
    // would replace the machine's /dev/null, so the FIFO above covers it).
    let o = fx.run(&["c", "-q", "/dev/null", "in"]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
    // Stdin from /dev/null with /dev/null as OUTPUT is not "the output is also an input":
    // nothing is replaced (helper-33 found `c -f /dev/null - < /dev/null` refused so). The
    // OUTPUT is a link to /dev/null, so that a regression replaces the link, never the
    // machine's /dev/null.
    std::os::unix::fs::symlink("/dev/null", fx.p("null-link")).unwrap();
    let o = common::krypta()
        .current_dir(fx.p(""))
        .args(["c", "-q", "-f", "null-link", "-"])
        .stdin(std::fs::File::open("/dev/null").unwrap())
        .output()
        .unwrap();
    assert_eq!((code(&o), err(&o)), (0, String::new()));
    assert!(
        std::fs::symlink_metadata(fx.p("null-link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
}

#[test]
fn a_socket_as_output_is_refused_and_left_as_it_is() {
    use std::os::unix::fs::FileTypeExt;
    let fx = Fx::new();
    fx.file("in/a", b"alpha");
    let _listener = std::os::unix::net::UnixListener::bind(fx.p("sock")).unwrap();
    for args in [&["c", "sock", "in"][..], &["c", "-f", "sock", "in"]] {
        let o = fx.run(args);
        assert_eq!(
            (code(&o), err(&o)),
            (
                1,
                "krypta: sock: is a socket, not a regular file: an archive is written to a \
                 file, to stdout (-) or to s3://; nothing was replaced\n"
                    .to_string()
            ),
            "{args:?}"
        );
        assert!(
            std::fs::metadata(fx.p("sock"))
                .unwrap()
                .file_type()
                .is_socket()
        );
    }
}

#[test]
fn a_link_of_a_later_input_where_an_earlier_input_implied_a_directory_is_left_out() {
    // `c a.kry d/file ../b/.` where b holds a link `d`: the link would have `d/file` below
    // it, which the entry set refuses, and the whole run failed ("entries lie below d,
    // which is not a directory", exit 1, no archive). The link is now left out and named,
    // as in the other order (`../b/. d/file`), exit 6, and d/file is stored.
    let fx = Fx::new();
    fx.file("a/d/file", b"kept\n");
    fx.mkdir("b");
    std::os::unix::fs::symlink("/tmp", fx.p("b/d")).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_krypta"))
        .current_dir(fx.p("a"))
        .args(["c", "../x.kry", "d/file", "../b/."])
        .output()
        .unwrap();
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert!(
        err(&o).contains(
            "krypta: warning: ../b/./d: skipped with what is below it: its name d holds d already (another kind of entry from an earlier input)"
        ),
        "{}",
        err(&o)
    );
    assert_eq!(fx.names("x.kry"), [".", "d/file"]);
}

#[test]
fn a_directory_given_after_a_file_below_it_is_stored_with_its_mode() {
    // Regression (review of bce2b48): `c a.kry d/file d` (or `d/file .`) left the directory
    // d out once d/file implied it, so its mode, owner and times were lost: a private d
    // (0700) came back 0755 from x.
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    fx.file("a/d/file", b"kept\n");
    std::fs::set_permissions(fx.p("a/d"), std::fs::Permissions::from_mode(0o700)).unwrap();
    for (archive, inputs) in [
        ("one.kry", &["d/file", "d"][..]),
        ("two.kry", &["d/file", "."]),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_krypta"))
            .current_dir(fx.p("a"))
            .args([&["c", "-q", &format!("../{archive}")][..], inputs].concat())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{inputs:?}: {}", err(&o));
        assert!(
            fx.names(archive).contains(&"d".to_string()),
            "{inputs:?}: {:?}",
            fx.names(archive)
        );
        let out = format!("o-{archive}");
        fx.ok(&["x", "-q", "-o", &out, archive]);
        let mode = std::fs::metadata(fx.p(&format!("{out}/d")))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o700, "{inputs:?}");
    }
}

#[test]
fn an_output_link_that_cannot_be_followed_is_refused_with_or_without_f_and_kept() {
    // Regression (h65): a link loop, or a link through a file used as a directory (or into
    // a directory the user may not search), has no place for the archive where it points;
    // `-f` replaced the link itself by a regular file (exit 0) and without -f it was
    // "already exists". Refused naming the link and what the kernel said, the link kept.
    let fx = Fx::new();
    fx.file("etc/a", b"first\n");
    fx.file("plain", b"not a directory\n");
    std::os::unix::fs::symlink("loop2.kry", fx.p("loop1.kry")).unwrap();
    std::os::unix::fs::symlink("loop1.kry", fx.p("loop2.kry")).unwrap();
    std::os::unix::fs::symlink("plain/x.kry", fx.p("notdir.kry")).unwrap();
    fx.ok(&["c", "a.kry", "etc"]);
    for (link, what) in [
        (
            "loop1.kry",
            "Too many levels of symbolic links (os error 40)",
        ),
        ("notdir.kry", "Not a directory (os error 20)"),
    ] {
        for cmd in [
            vec!["c", link, "etc"],
            vec!["c", "-f", link, "etc"],
            vec!["rekey", "-f", "a.kry", "-o", link],
        ] {
            let o = fx.run(&cmd);
            assert_eq!(code(&o), 4, "{cmd:?}: {}", err(&o));
            assert_eq!(
                err(&o),
                format!("krypta: {link}: follow the symbolic link: {what}\n"),
                "{cmd:?}"
            );
            let l = std::fs::symlink_metadata(fx.p(link)).unwrap();
            assert!(l.file_type().is_symlink(), "{cmd:?}: link replaced");
        }
    }
    assert_eq!(std::fs::read(fx.p("plain")).unwrap(), b"not a directory\n");
}
