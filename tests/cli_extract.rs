//! Issue 14, "Restoring into a tree that is not empty", through the binary: the check before
//! anything is written, `-k`, `--skip-existing`, `-f`, conflicts met while reading a stream,
//! and `--wildcards` PATHs with a pattern that matches nothing named.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// a.kry holding t/{one,two,sub/three,sub/deep/four.c,new.c}.
fn archive(fx: &Fx) {
    fx.file("t/one", b"1");
    fx.file("t/two", b"2");
    fx.file("t/sub/three", b"3");
    fx.file("t/sub/deep/four.c", b"4");
    fx.file("t/new.c", b"new");
    fx.ok(&["c", "-q", "a.kry", "t"]);
}

/// An output o/ where t/one and t/sub/three already exist with other contents.
fn occupied(fx: &Fx) {
    fx.file("o/t/one", b"old one");
    fx.file("o/t/sub/three", b"old three");
}

#[test]
fn existing_files_stop_the_extraction_before_anything_is_written_naming_them_all() {
    let fx = Fx::new();
    archive(&fx);
    occupied(&fx);
    let o = fx.run(&["x", "a.kry", "-o", "o"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: o: 2 existing file(s) in the way: o/t/one, o/t/sub/three (nothing was \
             extracted; -k or --skip-existing keeps existing files, -f replaces them)\n"
                .to_string()
        )
    );
    assert!(!fx.exists("o/t/two"));
    assert!(!fx.exists("o/t/new.c"));
    assert!(!fx.exists("o/t/sub/deep"));
    assert_eq!(fx.read("o/t/one"), b"old one");
}

#[test]
fn more_than_ten_conflicts_are_counted_and_the_first_ten_named() {
    let fx = Fx::new();
    for i in 0..12 {
        fx.file(&format!("t/f{i:02}"), b"x");
        fx.file(&format!("o/t/f{i:02}"), b"y");
    }
    fx.ok(&["c", "-q", "a.kry", "t"]);
    let o = fx.run(&["x", "a.kry", "-o", "o"]);
    let names: Vec<String> = (0..10).map(|i| format!("o/t/f{i:02}")).collect();
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            format!(
                "krypta: o: 12 existing file(s) in the way: {}, and 2 more (nothing was \
                 extracted; -k or --skip-existing keeps existing files, -f replaces them)\n",
                names.join(", ")
            )
        )
    );
}

#[test]
fn keep_old_files_names_each_kept_file_extracts_the_rest_and_exits_6() {
    let fx = Fx::new();
    archive(&fx);
    for flag in ["-k", "--keep-old-files"] {
        if fx.exists("o") {
            std::fs::remove_dir_all(fx.p("o")).unwrap();
        }
        occupied(&fx);
        let o = fx.run(&["x", "a.kry", "-o", "o", flag]);
        assert_eq!(code(&o), 6, "{}", err(&o));
        let e = err(&o);
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 4, "{e}");
        assert_eq!(
            lines[..2],
            [
                "krypta: warning: o/t/one: exists; kept, not replaced",
                "krypta: warning: o/t/sub/three: exists; kept, not replaced"
            ]
        );
        assert!(lines[2].starts_with("krypta: a.kry: "), "{e}");
        assert_eq!(
            lines[3],
            "krypta: extracted, but 2 existing file(s) were kept, not replaced (-k; see warnings)"
        );
        assert_eq!(fx.read("o/t/one"), b"old one");
        assert_eq!(fx.read("o/t/sub/three"), b"old three");
        assert_eq!(fx.read("o/t/two"), b"2");
        assert_eq!(fx.read("o/t/sub/deep/four.c"), b"4");
        assert_eq!(fx.read("o/t/new.c"), b"new");
    }
}

#[test]
fn skip_existing_keeps_existing_files_silently_and_exits_0() {
    let fx = Fx::new();
    archive(&fx);
    occupied(&fx);
    let o = fx.run(&["x", "a.kry", "-o", "o", "--skip-existing"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(warnings(&o).is_empty(), "{}", err(&o));
    assert_eq!(fx.read("o/t/one"), b"old one");
    assert_eq!(fx.read("o/t/two"), b"2");
    let o = fx.run(&["x", "-q", "a.kry", "-o", "o", "--skip-existing"]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
}

#[test]
fn force_replaces_existing_files_and_the_flags_exclude_each_other() {
    let fx = Fx::new();
    archive(&fx);
    occupied(&fx);
    fx.ok(&["x", "-q", "a.kry", "-o", "o", "-f"]);
    assert_eq!(fx.read("o/t/one"), b"1");
    assert_eq!(fx.read("o/t/sub/three"), b"3");
    for pair in [
        ["-k", "-f"],
        ["-k", "--skip-existing"],
        ["--skip-existing", "-f"],
    ] {
        let o = fx.run(&["x", "a.kry", "-o", "o", pair[0], pair[1]]);
        assert_eq!(code(&o), 1, "{pair:?}: {}", err(&o));
        assert!(err(&o).contains("cannot be used with"), "{}", err(&o));
    }
}

#[test]
fn a_directory_is_never_replaced_by_a_file_even_with_force() {
    let fx = Fx::new();
    archive(&fx);
    fx.mkdir("o/t/two/inside");
    let o = fx.run(&["x", "a.kry", "-o", "o", "-f"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            // With -f given, the hint does not suggest -f (it said "-f replaces them").
            "krypta: o: 1 existing file(s) in the way: o/t/two (nothing was extracted; -f does \
             not replace a directory where a file goes, nor a file where a directory the \
             archive does not list goes: move it away or extract elsewhere)\n"
                .to_string()
        )
    );
    assert!(is_dir(&fx.p("o/t/two/inside")));
    assert!(!fx.exists("o/t/one"));
}

#[test]
fn from_a_stream_conflicts_are_kept_everything_else_extracted_and_all_named_at_the_end() {
    let fx = Fx::new();
    archive(&fx);
    occupied(&fx);
    let kry = fx.read("a.kry");
    let o = fx.run_stdin(&["x", "-", "-o", "o"], &kry);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: warning: o/t/one: exists; kept, not replaced\n\
             krypta: warning: o/t/sub/three: exists; kept, not replaced\n\
             krypta: o: 2 existing file(s) in the way: o/t/one, o/t/sub/three (they were kept; \
             everything else was extracted; -k or --skip-existing keeps existing files, -f \
             replaces them)\n"
                .to_string()
        )
    );
    assert_eq!(fx.read("o/t/one"), b"old one");
    assert_eq!(fx.read("o/t/two"), b"2");
    assert_eq!(fx.read("o/t/sub/deep/four.c"), b"4");
    // -k on a stream: the same files kept, exit 6.
    let o = fx.run_stdin(&["x", "-q", "-", "-o", "o", "-k"], &kry);
    assert_eq!(code(&o), 6, "{}", err(&o));
}

#[test]
fn wildcards_select_by_glob_and_a_pattern_that_matches_nothing_is_named() {
    let fx = Fx::new();
    archive(&fx);
    let o = fx.run(&["x", "a.kry", "-o", "o", "--wildcards", "*.c", "nomatch*"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(
        err(&o).lines().last().unwrap(),
        "krypta: not found in a.kry: nomatch*"
    );
    assert_eq!(fx.read("o/t/new.c"), b"new");
    assert_eq!(fx.read("o/t/sub/deep/four.c"), b"4");
    assert!(!fx.exists("o/t/one"));
    // A matching directory selects everything below it; a leading / anchors.
    fx.ok(&["x", "-q", "a.kry", "-o", "p", "--wildcards", "/t/s?b"]);
    let got: Vec<String> = walkdir::WalkDir::new(fx.p("p"))
        .sort_by_file_name()
        .into_iter()
        .map(|e| {
            e.unwrap()
                .path()
                .strip_prefix(fx.p("p"))
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(
        got,
        [
            "",
            "t",
            "t/sub",
            "t/sub/deep",
            "t/sub/deep/four.c",
            "t/sub/three"
        ]
    );
    let o = fx.run(&["x", "a.kry", "-o", "q", "--wildcards", "/sub"]);
    assert_eq!(
        (code(&o), err(&o).lines().last().unwrap().to_string()),
        (1, "krypta: not found in a.kry: /sub".to_string())
    );
    // Without --wildcards a * is a literal character.
    let o = fx.run(&["x", "a.kry", "-o", "r", "*.c"]);
    assert_eq!(
        (code(&o), err(&o).lines().last().unwrap().to_string()),
        (
            1,
            "krypta: not found in a.kry: *.c \
             (a PATH with *, ? or [ is a name unless --wildcards makes it a pattern)"
                .to_string()
        )
    );
}

#[test]
fn stripped_paths_that_meet_give_the_same_outcome_in_a_new_output_as_in_an_existing_one() {
    // `--strip-components 2` maps s9/a/k/x (a file) and s9/b/k/x (a directory) to k/x. A file
    // whose name is given on the committing thread must not lose that name to the later
    // directory (regression: "k/x: exists; kept" without -f, "rename into place: Is a
    // directory" with it, in a fresh output only).
    let fx = Fx::new();
    fx.file("s9/a/k/x", b"file\n");
    fx.file("s9/b/k/x/y", b"y\n");
    fx.ok(&["c", "-q", "h.kry", "s9"]);
    let o = fx.run(&["x", "-q", "--strip-components", "2", "h.kry", "-o", "n1"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: n1: 1 existing file(s) in the way: n1/k/x (they were kept; everything else \
             was extracted; -k or --skip-existing keeps existing files, -f replaces them)\n"
                .to_string()
        )
    );
    assert_eq!(fx.read("n1/k/x"), b"file\n");
    // With -f the later directory replaces the file, as in an existing output.
    let o = fx.run(&[
        "x",
        "-q",
        "-f",
        "--strip-components",
        "2",
        "h.kry",
        "-o",
        "n2",
    ]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
    assert_eq!(fx.read("n2/k/x/y"), b"y\n");
}

/// b/f ("two") and a/h, a hard link to it.
fn link_to_b_f(fx: &Fx) {
    fx.file("b/f", b"two");
    fx.mkdir("a");
    std::fs::hard_link(fx.p("b/f"), fx.p("a/h")).unwrap();
}

#[test]
fn a_hard_link_is_made_only_to_the_file_of_its_own_target_entry_when_stripped_names_meet() {
    // `--strip-components 1` maps c/f and b/f to f; a/h is a hard link to b/f. Regression: the
    // link was made to whatever this run wrote at f (c/f's "zero"), restoring a/h with another
    // file's content.
    let fx = Fx::new();
    fx.file("c/f", b"zero");
    link_to_b_f(&fx);
    fx.ok(&["c", "-q", "h.kry", "c", "b", "a"]);
    assert!(fx.names("h.kry").contains(&"a/h".to_string()));
    let o = fx.run(&["x", "-q", "--strip-components", "1", "h.kry", "-o", "n1"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: n1: 2 existing file(s) in the way: n1/f, n1/h (they were kept; everything \
             else was extracted; -k or --skip-existing keeps existing files, -f replaces them)\n"
                .to_string()
        )
    );
    assert_eq!(fx.read("n1/f"), b"zero");
    assert!(!fx.exists("n1/h"), "no link to c/f's file");
    // -k names the link that was not made and exits 6.
    let o = fx.run(&["x", "-k", "--strip-components", "1", "h.kry", "-o", "n2"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert!(
        err(&o).contains("n2/h: hard link not made: its target f was kept"),
        "{}",
        err(&o)
    );
    assert!(!fx.exists("n2/h"));
    // With -f, b/f replaces c/f at f, and the link is made to it.
    let o = fx.run(&[
        "x",
        "-q",
        "-f",
        "--strip-components",
        "1",
        "h.kry",
        "-o",
        "n3",
    ]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
    assert_eq!(fx.read("n3/f"), b"two");
    assert_eq!(fx.read("n3/h"), b"two");
}

#[test]
fn skip_existing_names_the_entries_an_existing_file_cost_and_exits_6() {
    // Regression: --skip-existing kept the existing file o/t (where the directory t goes)
    // and dropped every entry below it without a word, exit 0.
    let fx = Fx::new();
    archive(&fx);
    fx.file("o/t", b"a file where a directory goes");
    let o = fx.run(&["x", "--skip-existing", "a.kry", "-o", "o"]);
    let e = err(&o);
    assert_eq!(code(&o), 6, "{e}");
    assert!(
        e.starts_with(
            "krypta: warning: o/t: is not a directory; kept, and the entries below it were not \
             extracted\n"
        ),
        "{e}"
    );
    assert!(
        e.ends_with("krypta: extracted, but 1 entry could not be made (see warnings)\n"),
        "{e}"
    );
    assert_eq!(fx.read("o/t"), b"a file where a directory goes");
    // An existing file at an entry's own name stays silent, exit 0.
    let o = fx.run(&["x", "-q", "--skip-existing", "a.kry", "-o", "p"]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
    let o = fx.run(&["x", "-q", "--skip-existing", "a.kry", "-o", "p"]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
}

#[test]
fn a_hard_link_selected_without_its_target_is_named_and_exits_6() {
    let fx = Fx::new();
    link_to_b_f(&fx);
    fx.ok(&["c", "-q", "x.kry", "b", "a"]);
    let o = fx.run(&["x", "x.kry", "a/h", "-o", "o"]);
    let e = err(&o);
    assert_eq!(code(&o), 6, "{e}");
    assert!(
        e.starts_with("krypta: warning: a/h: skipped: hard link to b/f, which was not selected\n"),
        "{e}"
    );
    assert!(
        e.ends_with("krypta: extracted, but 1 entry could not be made (see warnings)\n"),
        "{e}"
    );
    assert!(!fx.exists("o/a/h"));
}

#[test]
fn a_hard_link_selected_for_stdout_without_its_target_is_named_not_an_empty_success() {
    // Regression: `x --stdout x.kry a/h > h` wrote nothing and exited 0 ("0 entries
    // extracted"): an empty file taken for a restore.
    let fx = Fx::new();
    link_to_b_f(&fx);
    fx.ok(&["c", "-q", "x.kry", "b", "a"]);
    let o = fx.run(&["x", "--stdout", "x.kry", "a/h"]);
    let e = err(&o);
    assert_eq!((code(&o), o.stdout.len()), (6, 0), "{e}");
    assert!(
        e.starts_with(
            "krypta: warning: a/h: not written: hard link to b/f, which was not selected \
             (name it for the content)\nkrypta: x.kry: 0 entries extracted,"
        ),
        "{e}"
    );
    assert!(
        e.ends_with("krypta: extracted, but 1 entry could not be made (see warnings)\n"),
        "{e}"
    );
    // With its target named too, the content is written once, as the target's: exit 0.
    for args in [&["b/f", "a/h"][..], &["a/h", "b/f"], &[]] {
        let mut all = vec!["x", "-q", "--stdout", "x.kry"];
        all.extend_from_slice(args);
        let o = fx.run(&all);
        assert_eq!(
            (code(&o), o.stdout.as_slice(), err(&o)),
            (0, &b"two"[..], String::new()),
            "{args:?}"
        );
    }
}

#[test]
fn with_f_a_refusal_does_not_suggest_f() {
    let fx = Fx::new();
    archive(&fx);
    fx.mkdir("o/t/one");
    let o = fx.run(&["x", "-q", "-f", "a.kry", "-o", "o"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: o: 1 existing file(s) in the way: o/t/one (nothing was extracted; -f does \
             not replace a directory where a file goes, nor a file where a directory the \
             archive does not list goes: move it away or extract elsewhere)\n"
                .to_string()
        )
    );
}

#[test]
fn with_f_a_link_whose_target_name_another_entry_took_is_not_made_and_does_not_stop_the_run() {
    // b/f, then c/f (both strip to f; with -f the later replaces the earlier), then a/h, a
    // link to b/f: f no longer holds b/f's file. Regression: "unsafe entry path: hard link
    // target was not extracted in this run", exit 3, ending the extraction.
    let fx = Fx::new();
    fx.file("c/f", b"zero");
    link_to_b_f(&fx);
    fx.file("a/z", b"after the link");
    fx.ok(&["c", "-q", "h.kry", "b", "c", "a"]);
    let o = fx.run(&[
        "x",
        "-q",
        "-f",
        "--strip-components",
        "1",
        "h.kry",
        "-o",
        "n",
    ]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(!err(&o).contains("unsafe"), "{}", err(&o));
    assert_eq!(fx.read("n/f"), b"zero");
    assert!(!fx.exists("n/h"));
    assert_eq!(fx.read("n/z"), b"after the link");
}

#[test]
fn a_path_not_in_the_archive_is_named_even_when_an_entry_could_not_be_made() {
    let fx = Fx::new();
    link_to_b_f(&fx);
    fx.ok(&["c", "-q", "x.kry", "b", "a"]);
    let o = fx.run(&["x", "-q", "x.kry", "a/h", "nosuch", "-o", "o"]);
    assert_eq!(
        (code(&o), err(&o)),
        (1, "krypta: not found in x.kry: nosuch\n".to_string())
    );
}

#[test]
fn a_hard_link_whose_target_strip_components_removed_is_named_and_the_rest_extracted() {
    // Regression: the link was an "unsafe entry path" (exit 3) that ended the run with
    // nothing after it restored, though the archive is valid (GNU tar: "Cannot hard link",
    // the rest extracted).
    let fx = Fx::new();
    fx.file("hl/d/f", b"c");
    std::fs::create_dir_all(fx.p("hl/d/sub")).unwrap();
    std::fs::hard_link(fx.p("hl/d/f"), fx.p("hl/d/sub/g")).unwrap();
    fx.file("hl/d/zz/q/after.txt", b"after");
    fx.ok(&["c", "-q", "hl.kry", "hl"]);
    let o = fx.run(&["x", "-o", "o", "--strip-components", "3", "hl.kry"]);
    let e = err(&o);
    assert_eq!(code(&o), 6, "{e}");
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines[0],
        "krypta: warning: hl/d/sub/g: skipped: hard link to hl/d/f, which --strip-components \
         removed"
    );
    assert!(
        lines[1].starts_with("krypta: hl.kry: 2 entries extracted, "),
        "{e}"
    );
    assert_eq!(
        lines[2..],
        ["krypta: extracted, but 1 entry could not be made (see warnings)"]
    );
    assert_eq!(fx.read("o/q/after.txt"), b"after");
    assert!(!fx.exists("o/g"));
    // Stripping less keeps both names linked.
    fx.ok(&["x", "-q", "-o", "p", "--strip-components", "2", "hl.kry"]);
    assert_eq!(fx.read("p/sub/g"), b"c");
}

#[test]
fn skip_existing_over_an_earlier_restore_keeps_its_hard_links_quietly() {
    // Regression: running the same restore again with --skip-existing warned "hard link not
    // made: its target was kept" for a link whose name already held that very file, exit 6:
    // every idempotent cron restore of a tree with hard links "failed".
    let fx = Fx::new();
    fx.file("hs/a", b"x");
    std::fs::hard_link(fx.p("hs/a"), fx.p("hs/b")).unwrap();
    fx.ok(&["c", "-q", "hs.kry", "hs"]);
    fx.ok(&["x", "-q", "-o", "o", "hs.kry"]);
    let o = fx.run(&["x", "-q", "--skip-existing", "-o", "o", "hs.kry"]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
    // -k names both as kept existing files.
    let o = fx.run(&["x", "-k", "-o", "o", "hs.kry"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    let e = err(&o);
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines[..2],
        [
            "krypta: warning: o/hs/a: exists; kept, not replaced",
            "krypta: warning: o/hs/b: exists; kept, not replaced"
        ],
        "{e}"
    );
    // A link whose name is free, to a kept target, is still named as not made.
    std::fs::remove_file(fx.p("o/hs/b")).unwrap();
    let o = fx.run(&["x", "-q", "--skip-existing", "-o", "o", "hs.kry"]);
    assert_eq!(code(&o), 6, "{}", err(&o));
    assert!(!fx.exists("o/hs/b"));
}

#[test]
fn skip_existing_keeps_a_different_file_at_a_hard_links_name_quietly() {
    // Regression: when the link's name held another file (not the kept target's), the link
    // was "not made: its target was kept" (exit 6), though it is an existing file kept like
    // any other: silent with --skip-existing (exit 0), named by -k (exit 6).
    let fx = Fx::new();
    fx.file("hs/a", b"x");
    std::fs::hard_link(fx.p("hs/a"), fx.p("hs/b")).unwrap();
    fx.ok(&["c", "-q", "hs.kry", "hs"]);
    fx.ok(&["x", "-q", "-o", "o", "hs.kry"]);
    std::fs::remove_file(fx.p("o/hs/b")).unwrap();
    fx.file("o/hs/b", b"mine");
    let o = fx.run(&["x", "-q", "--skip-existing", "-o", "o", "hs.kry"]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
    assert_eq!(fx.read("o/hs/b"), b"mine");
    let o = fx.run(&["x", "-k", "-o", "o", "hs.kry"]);
    assert_eq!(
        (code(&o), err(&o).lines().take(2).collect::<Vec<_>>()),
        (
            6,
            vec![
                "krypta: warning: o/hs/a: exists; kept, not replaced",
                "krypta: warning: o/hs/b: exists; kept, not replaced",
            ]
        )
    );
    assert_eq!(fx.read("o/hs/b"), b"mine");
    // A link whose name is free, to a kept target: not made, named, exit 6.
    std::fs::remove_file(fx.p("o/hs/b")).unwrap();
    let o = fx.run(&["x", "--skip-existing", "-o", "o", "hs.kry"]);
    assert_eq!(
        (code(&o), err(&o).lines().next()),
        (
            6,
            Some("krypta: warning: o/hs/b: hard link not made: its target hs/a was kept")
        )
    );
    assert!(!fx.exists("o/hs/b"));
}

/// `x -o s3://…` restored into a local directory named `s3:` (helper-38): refused, nothing made.
#[test]
fn an_s3_url_as_the_output_directory_is_refused() {
    let fx = Fx::new();
    archive(&fx);
    let o = fx.run(&["x", "-o", "s3://bkt/restore", "a.kry"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: -o s3://bkt/restore: x restores files into a local directory; s3:// names \
             archives only\n"
                .to_string()
        )
    );
    assert!(!fx.exists("s3:"));
}
