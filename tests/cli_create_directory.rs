//! `krypta c -C DIR`: inputs (and `--files-from` names) read relative to DIR and stored under
//! the names they have there, as `tar -C`; OUTPUT, option files and `--base` relative to the
//! current directory; `-` still stdin; patterns and a delta's base matching on the stored
//! names; a DIR that is missing or not a directory refused before anything is read.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// A tree `src/www/{index.html,sub/a}` and, elsewhere, a `www` that must not be read.
fn site() -> Fx {
    let fx = Fx::new();
    fx.file("src/www/index.html", b"<html>\n");
    fx.file("src/www/sub/a", b"a\n");
    fx.file("www/decoy", b"not this one\n");
    fx
}

#[test]
fn inputs_are_read_in_dir_and_stored_relative_to_it() {
    let fx = site();
    fx.ok(&["c", "site.kry", "-C", "src", "www"]);
    assert_eq!(
        fx.names("site.kry"),
        ["www", "www/index.html", "www/sub", "www/sub/a"]
    );
    // OUTPUT stayed relative to the current directory.
    assert!(fx.exists("site.kry") && !fx.exists("src/site.kry"));
    fx.ok(&["x", "site.kry", "-C", "out"]);
    assert_eq!(fx.read("out/www/index.html"), b"<html>\n");
    assert_eq!(fx.read("out/www/sub/a"), b"a\n");
}

#[test]
fn dot_in_dir_stores_its_contents_at_the_top_and_the_option_may_follow_the_inputs() {
    let fx = site();
    fx.ok(&["c", "all.kry", ".", "--directory", "src/www"]);
    assert_eq!(fx.names("all.kry"), [".", "index.html", "sub", "sub/a"]);
}

#[test]
fn files_from_names_are_relative_to_dir_and_the_list_to_here() {
    let fx = site();
    fx.file("list", b"www/sub/a\nwww/index.html\n");
    fx.ok(&["c", "l.kry", "-C", "src", "--files-from", "list"]);
    assert_eq!(fx.names("l.kry"), ["www/sub/a", "www/index.html"]);
}

#[test]
fn dash_is_stdin_whatever_dir_says() {
    let fx = site();
    fx.file("src/-", b"a file named dash\n");
    let o = fx.run_stdin(&["c", "s.kry", "-C", "src", "-"], b"piped\n");
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.names("s.kry"), ["stdin"]);
    let o = fx.ok(&["x", "--stdout", "s.kry"]);
    assert_eq!(o.stdout, b"piped\n");
}

#[test]
fn an_absolute_input_is_read_as_given() {
    let fx = site();
    let abs = fx.p("src/www/sub/a");
    let o = fx.run(&["c", "abs.kry", "-C", "www", abs.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let want = abs.to_str().unwrap().trim_start_matches('/').to_string();
    assert_eq!(fx.names("abs.kry"), [want]);
}

#[test]
fn patterns_match_the_names_stored_relative_to_dir() {
    let fx = site();
    fx.ok(&["c", "e.kry", "-C", "src", "www", "--exclude", "/www/sub"]);
    assert_eq!(fx.names("e.kry"), ["www", "www/index.html"]);
}

#[test]
fn a_delta_matches_its_base_on_the_stored_names() {
    let fx = site();
    let big = common::bytes(300_000, 7, false);
    fx.file("src/www/big", &big);
    let o = fx.run(&["c", "base.kry", "-C", "src", "www"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let o = fx.run(&["c", "--base", "base.kry", "d.kry", "-C", "src", "www"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(
        err(&o).contains(", 1 file as a reference to the base)"),
        "{}",
        err(&o)
    );
    fx.ok(&["x", "--base", "base.kry", "d.kry", "-C", "back"]);
    assert_eq!(fx.read("back/www/big"), big);
}

#[test]
fn an_output_reached_through_dir_is_still_refused_with_force() {
    let fx = site();
    fx.ok(&["c", "src/www/old.kry", "-C", "src", "www/sub"]);
    let before = fx.read("src/www/old.kry");
    let o = fx.run(&["c", "-f", "src/www/old.kry", "-C", "src", "www"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("src/www/old.kry: the output is also an input"),
        "{}",
        err(&o)
    );
    assert_eq!(fx.read("src/www/old.kry"), before);
}

#[test]
fn a_missing_dir_or_a_file_as_dir_is_refused_before_anything_is_written() {
    // Regression (h61): a missing DIR exited 4 ("nowhere: use as -C directory: No such file
    // or directory") and a file as DIR 1: the same mistake, the argument naming no directory,
    // now exits 1 alike, each message naming the option and the path.
    let fx = site();
    std::os::unix::fs::symlink("gone", fx.p("dangling")).unwrap();
    for (dir, problem) in [
        ("nowhere", "no such directory"),
        ("dangling", "no such directory"),
        ("www/decoy", "not a directory"),
        (
            "www/decoy/sub",
            "no such directory (a part of the path is not a directory)",
        ),
    ] {
        let o = fx.run(&["c", "n.kry", "-C", dir, "www"]);
        assert_eq!(code(&o), 1, "{dir}: {}", err(&o));
        assert_eq!(err(&o), format!("krypta: -C {dir}: {problem}\n"));
        assert!(!fx.exists("n.kry"));
    }
}

#[test]
fn dir_given_twice_is_a_usage_error() {
    let fx = site();
    let o = fx.run(&["c", "t.kry", "-C", "src", "-C", "www", "x"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).contains("'--directory <DIR>' cannot be used multiple times"));
}

/// GNU tar's positional `-C a x -C b y` (each `-C` for the inputs after it) is not krypta's:
/// one `-C` serves every input. A second `-C` is refused before anything is read, and the
/// refusal says so and what to write instead. Regression: clap's "the argument '--directory
/// <DIR>' cannot be used multiple times" told a script written for tar only that the option
/// repeats. `x` keeps clap's own refusal of a second `-C` (its output directory).
#[test]
fn a_second_dir_is_refused_with_the_tar_style_alternative() {
    let fx = site();
    fx.file("other/y", b"y\n");
    for args in [
        &["c", "out.kry", "-C", "src", "www", "-C", "other", "y"][..],
        &[
            "compress",
            "--directory=src",
            "out.kry",
            "www",
            "--directory",
            "other",
            "y",
        ],
    ] {
        let o = fx.run(args);
        assert_eq!(code(&o), 1, "{args:?}");
        assert_eq!(
            err(&o),
            "error: the argument '--directory <DIR>' cannot be used multiple times: -C DIR is given once for all the inputs of `krypta c` (GNU tar's positional `-C a x -C b y` is not supported): give the inputs relative to one directory (`krypta c out.kry -C PARENT a/x b/y` stores a/x and b/y), or make one archive per directory\n",
            "{args:?}"
        );
        assert!(!fx.exists("out.kry"));
    }
    fx.ok(&["c", "-q", "site.kry", "-C", "src", "www"]);
    let o = fx.run(&["x", "site.kry", "-C", "a", "-C", "b"]);
    assert_eq!(code(&o), 1);
    assert!(
        err(&o).contains("cannot be used multiple times"),
        "{}",
        err(&o)
    );
}
