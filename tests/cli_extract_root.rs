//! `krypta x` of an archive made from `.` (its root entry names the output directory itself)
//! into an output that is not empty, selecting `.`, and the summary's count of entries made.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// r.kry made from `t/.`: the root entry `.`, then d/, d/a, d/e/, d/e/b, hl, and one (a
/// hard link to hl, met first in the walk's order).
fn root_archive(fx: &Fx) {
    fx.file("t/one", b"1");
    fx.file("t/d/a", b"a");
    fx.file("t/d/e/b", b"b");
    std::fs::hard_link(fx.p("t/one"), fx.p("t/hl")).unwrap();
    fx.ok(&["c", "-q", "r.kry", "t/."]);
    assert_eq!(
        fx.names("r.kry"),
        [".", "d", "d/a", "d/e", "d/e/b", "hl", "one"]
    );
}

/// The "N entries extracted" count of a run's summary line.
fn extracted(e: &str) -> u64 {
    let line = e
        .lines()
        .find(|l| l.starts_with("krypta: r.kry: ") && l.contains(" entries extracted"))
        .unwrap_or_else(|| panic!("no summary line: {e}"));
    let n = line["krypta: r.kry: ".len()..].split(' ').next().unwrap();
    n.parse().unwrap()
}

#[test]
fn the_root_entry_is_never_a_conflict_in_an_output_that_is_not_empty() {
    // Regression: any existing name in the output made the check before extraction look up
    // the root entry `.` as a name, and every policy ended with "unsafe entry path" (exit 3)
    // before anything was extracted.
    let fx = Fx::new();
    root_archive(&fx);
    let occupied = |o: &str| {
        fx.file(&format!("{o}/one"), b"old");
        fx.file(&format!("{o}/other"), b"not in the archive");
    };
    occupied("n");
    let o = fx.run(&["x", "r.kry", "-o", "n"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: n: 1 existing file(s) in the way: n/one (nothing was extracted; -k or \
             --skip-existing keeps existing files, -f replaces them)\n"
                .to_string()
        )
    );
    assert!(!fx.exists("n/d"));
    for (flag, exit, one) in [
        ("-k", 6, b"old".as_slice()),
        ("--skip-existing", 0, b"old"),
        ("-f", 0, b"1"),
    ] {
        let dir = format!("o{flag}");
        occupied(&dir);
        let o = fx.run(&["x", flag, "r.kry", "-o", &dir]);
        assert_eq!(code(&o), exit, "{flag}: {}", err(&o));
        assert!(!err(&o).contains("unsafe"), "{flag}: {}", err(&o));
        assert_eq!(fx.read(&format!("{dir}/one")), one, "{flag}");
        assert_eq!(fx.read(&format!("{dir}/d/e/b")), b"b", "{flag}");
        assert_eq!(fx.read(&format!("{dir}/other")), b"not in the archive");
    }
}

#[test]
fn selecting_the_root_selects_every_entry_as_tar_does() {
    // Regression: `x r.kry .` matched only the root entry and extracted no file, exit 0.
    let fx = Fx::new();
    root_archive(&fx);
    for (sel, dir) in [(".", "a"), ("./", "b")] {
        let o = fx.run(&["x", "r.kry", "-o", dir, sel]);
        assert_eq!(code(&o), 0, "{}", err(&o));
        assert_eq!(extracted(&err(&o)), 7, "{sel}");
        common::assert_same_tree(&fx.p("t"), &fx.p(dir));
    }
    let o = fx.ok(&["x", "--stdout", "r.kry", "."]);
    assert_eq!(o.stdout, b"ab1");
    let o = fx.ok(&["l", "r.kry", "."]);
    assert_eq!(out(&o).lines().count(), 7);
}

#[test]
fn the_summary_counts_the_entries_made_not_the_entries_visited() {
    // Regression: entries below a kept file (where a directory goes), entries that
    // --strip-components removed and hard links skipped were counted as extracted.
    let fx = Fx::new();
    root_archive(&fx);
    let o = fx.run(&["x", "r.kry", "-o", "all"]);
    assert_eq!((code(&o), extracted(&err(&o))), (0, 7));
    // o/d is a file: d, d/a, d/e, d/e/b are not made; ., hl, one are.
    fx.file("k/d", b"a file where a directory goes");
    let o = fx.run(&["x", "-k", "r.kry", "-o", "k"]);
    assert_eq!((code(&o), extracted(&err(&o))), (6, 3), "{}", err(&o));
    fx.file("s/d", b"a file where a directory goes");
    let o = fx.run(&["x", "--skip-existing", "r.kry", "-o", "s"]);
    assert_eq!((code(&o), extracted(&err(&o))), (6, 3), "{}", err(&o));
    // Stripping one component leaves a, e, e/b.
    let o = fx.run(&["x", "--strip-components", "1", "r.kry", "-o", "st"]);
    assert_eq!((code(&o), extracted(&err(&o))), (0, 3), "{}", err(&o));
    // A hard link selected without its target is skipped, not made.
    let o = fx.run(&["x", "r.kry", "-o", "h", "one"]);
    assert_eq!((code(&o), extracted(&err(&o))), (6, 0), "{}", err(&o));
    // An existing file at the target's name kept with -k, and the hard link to it not
    // made: 5 of 7.
    fx.file("kl/hl", b"old");
    let o = fx.run(&["x", "-k", "r.kry", "-o", "kl"]);
    assert_eq!((code(&o), extracted(&err(&o))), (6, 5), "{}", err(&o));
    assert!(!fx.exists("kl/one"));
}
