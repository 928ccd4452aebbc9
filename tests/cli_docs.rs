//! Issue 14, "Docs the ecosystem expects": `krypta completions SHELL` and `krypta manpage DIR`
//! are generated from the clap definitions (so they hold every command and option), and
//! `make man` writes the pages.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

#[test]
fn completions_are_printed_for_every_supported_shell() {
    let fx = Fx::new();
    for (shell, marker) in [
        ("bash", "_krypta() {"),
        ("zsh", "#compdef krypta"),
        ("fish", "complete -c krypta"),
        ("elvish", "edit:completion:arg-completer[krypta]"),
        (
            "powershell",
            "Register-ArgumentCompleter -Native -CommandName 'krypta'",
        ),
    ] {
        let o = fx.ok(&["completions", shell]);
        let script = out(&o);
        assert!(script.contains(marker), "{shell}: no {marker:?}");
        for word in [
            "compress",
            "extract",
            "exclude-caches",
            "keep-old-files",
            "no-fsync",
            "wildcards",
        ] {
            assert!(script.contains(word), "{shell}: {word} missing");
        }
        assert_eq!(err(&o), "");
    }
    let o = fx.run(&["completions", "tcsh"]);
    assert_eq!(code(&o), 1);
    assert!(err(&o).contains("invalid value 'tcsh'"), "{}", err(&o));
}

#[test]
fn bash_accepts_the_completion_script() {
    let fx = Fx::new();
    let o = fx.ok(&["completions", "bash"]);
    fx.file("krypta.bash", &o.stdout);
    let Ok(b) = std::process::Command::new("bash")
        .args(["-n", "krypta.bash"])
        .current_dir(fx.dir.path())
        .output()
    else {
        eprintln!("note: no bash; syntax check skipped");
        return;
    };
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
}

const PAGES: [&str; 13] = [
    "krypta-bench.1",
    "krypta-completions.1",
    "krypta-compress.1",
    "krypta-extract.1",
    "krypta-info.1",
    "krypta-kat.1",
    "krypta-keygen.1",
    "krypta-list.1",
    "krypta-manpage.1",
    "krypta-rekey.1",
    "krypta-repair.1",
    "krypta-test.1",
    "krypta.1",
];

fn pages_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn manpage_writes_krypta_1_and_one_page_per_command() {
    let fx = Fx::new();
    let o = fx.ok(&["manpage", "man/man1"]);
    assert_eq!(
        err(&o),
        format!(
            "krypta: wrote 13 man pages into man/man1: {}\n",
            PAGES.join(" ")
        )
    );
    assert_eq!(pages_in(&fx.p("man/man1")), PAGES);
    let top = String::from_utf8(fx.read("man/man1/krypta.1")).unwrap();
    assert!(top.contains(".TH krypta 1 "), "{top}");
    assert!(top.contains("krypta\\-extract(1)"), "{top}");
    let x = String::from_utf8(fx.read("man/man1/krypta-extract.1")).unwrap();
    for word in [
        "keep\\-old\\-files",
        "skip\\-existing",
        "wildcards",
        "Exit codes",
    ] {
        assert!(x.contains(word), "krypta-extract.1 lacks {word}");
    }
    // Written again over the same directory: the pages are replaced.
    fx.ok(&["manpage", "-q", "man/man1"]);
    assert_eq!(pages_in(&fx.p("man/man1")), PAGES);
}

#[test]
fn make_man_writes_the_pages() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(make) = std::process::Command::new("make").arg("--version").output() else {
        eprintln!("note: no make; skipped");
        return;
    };
    assert!(make.status.success());
    let fx = Fx::new();
    let o = std::process::Command::new("make")
        .arg("-s")
        .arg("man")
        .arg(format!("KRYPTA={}", env!("CARGO_BIN_EXE_krypta")))
        .arg(format!("MANDIR={}", fx.p("out").display()))
        .current_dir(root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(pages_in(&fx.p("out")), PAGES);
}
