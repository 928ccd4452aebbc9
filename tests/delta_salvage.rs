//! Issue 17: a damaged delta archive without recovery data. `x --base` salvages it like any
//! archive (FORMAT.md §16.4: damage in a delta frame is reported like a damaged frame): the
//! entries whose frames are intact are restored bit for bit, the damaged one is named and
//! not restored, nothing is left under a final or temporary name for it, exit 5.

mod cli_common;
mod common;
mod delta_common;

use cli_common::*;
use common::code;
use delta_common::*;

fn files_under(root: &std::path::Path) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(root).unwrap().flatten() {
        let p = e.path();
        let rel = p.display().to_string();
        if p.is_dir() {
            v.push(format!("{rel}/"));
            v.extend(files_under(&p));
        } else {
            v.push(rel);
        }
    }
    v.sort();
    v
}

/// base.kry of v1 and delta.kry of v2 against it, 256 KiB blocks: big.bin (the first file)
/// is 25 small frames right after the header, the other files follow in frames of their own.
fn archives(fx: &Fx) {
    fx.ok(&["c", "-q", "-b", "256K", "base.kry", "v1"]);
    fx.ok(&[
        "c",
        "-q",
        "-b",
        "256K",
        "--base",
        "base.kry",
        "delta.kry",
        "v2",
    ]);
}

/// `dd if=/dev/zero of=NAME bs=1 seek=H+2000 count=200 conv=notrunc`, H the header length:
/// inside the first data frame.
fn zero_first_frame(fx: &Fx, name: &str) {
    let mut d = std::fs::read(fx.p(name)).unwrap();
    let h = u32::from_le_bytes(d[12..16].try_into().unwrap()) as usize;
    d[h + 2000..h + 2200].fill(0);
    std::fs::write(fx.p(name), &d).unwrap();
}

/// v2's small files are in out/, bit for bit.
fn small_files_restored(fx: &Fx) {
    for f in [
        "s/0.dat",
        "s/2-renamed.dat",
        "s/3.dat",
        "s/4.dat",
        "s/new.dat",
    ] {
        assert_eq!(
            fx.read(&format!("out/v2/{f}")),
            fx.read(&format!("v2/{f}")),
            "{f}"
        );
    }
}

#[test]
fn zeros_over_a_delta_archive_lose_only_the_entry_in_them() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    archives(&fx);
    zero_first_frame(&fx, "delta.kry");

    let o = fx.run(&["x", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert_eq!(code(&o), 5, "{}", err(&o));
    let e = err(&o);
    let lines: Vec<&str> = e.lines().collect();
    // Every line but the last is a warning about the damage or the entry it cost.
    let (last, warns) = lines.split_last().expect("stderr");
    assert_eq!(
        *last, "krypta: delta.kry: restored 8 of 9 entries, 1 damaged",
        "{e}"
    );
    assert!(
        warns
            .iter()
            .any(|l| l.starts_with("krypta: warning: v2/big.bin: not restored: frame ")),
        "{e}"
    );
    assert!(
        warns.iter().all(|l| {
            l.starts_with("krypta: warning: delta.kry: archive damaged at byte ")
                || l.starts_with("krypta: warning: v2/big.bin: not restored: frame ")
        }),
        "{e}"
    );
    // Exactly the undamaged entries, bit for bit; no big.bin, no temporary file.
    let root = fx.p("out");
    let got: Vec<String> = files_under(&root)
        .into_iter()
        .map(|p| p[root.display().to_string().len() + 1..].to_string())
        .collect();
    assert_eq!(
        got,
        [
            "v2/",
            "v2/empty/",
            "v2/s/",
            "v2/s/0.dat",
            "v2/s/2-renamed.dat",
            "v2/s/3.dat",
            "v2/s/4.dat",
            "v2/s/new.dat",
        ]
    );
    small_files_restored(&fx);
    // `t` finds the same damage (exit 5) and `l` still lists all nine entries (the index is
    // intact and needs no base).
    let t = fx.run(&["t", "--base", "base.kry", "delta.kry"]);
    assert_eq!(code(&t), 5, "{}", err(&t));
    assert_eq!(fx.names("delta.kry").len(), 9);
}

#[test]
fn zeros_over_the_base_lose_only_the_entries_whose_blocks_need_those_base_bytes() {
    // Regression: a damaged base frame stopped x and t at the first delta block that needed
    // it (exit 9, nothing after it restored), though FORMAT.md §16.4 and README's exit 9 say
    // salvage goes on with the rest.
    let fx = Fx::new();
    versions(&fx, Change::Small);
    archives(&fx);
    // Base frame 0: the start of v1/big.bin, which only v2/big.bin's blocks reference.
    zero_first_frame(&fx, "base.kry");

    let o = fx.run(&["x", "--base", "base.kry", "delta.kry", "-C", "out"]);
    let e = err(&o);
    assert_eq!(code(&o), 9, "{e}");
    let lines: Vec<&str> = e.lines().collect();
    let (last, warns) = lines.split_last().expect("stderr");
    assert_eq!(
        *last, "krypta: delta.kry: restored 7 of 9 entries, 2 damaged",
        "{e}"
    );
    assert!(
        warns.iter().all(|l| {
            l.starts_with(
                "krypta: warning: delta.kry: delta block unusable (its base is damaged) at byte ",
            ) || l.starts_with("krypta: warning: v2/big.bin: not restored: frame ")
                // v2's own entry record is in big.bin's first block.
                || l.starts_with("krypta: warning: v2: not restored: frame 0 ")
        }),
        "{e}"
    );
    assert!(e.contains("base.kry: base frame 0 at byte "), "{e}");
    assert!(!fx.exists("out/v2/big.bin"));
    small_files_restored(&fx);
    let t = fx.run(&["t", "--base", "base.kry", "delta.kry"]);
    assert_eq!(code(&t), 9, "{}", err(&t));
    assert!(
        err(&t).ends_with("krypta: delta.kry: verified 7 of 9 entries, 2 damaged\n"),
        "{}",
        err(&t)
    );
}

#[test]
fn a_base_its_recovery_data_repaired_is_named_and_t_exits_7() {
    // Regression: the base's recovery data rebuilt what was read of it without a word, and
    // `t --base` exited 0, so the base that needs `krypta repair` went unnoticed.
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["c", "-q", "--recovery", "5", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "--base", "base.kry", "delta.kry", "v2"]);
    zero_first_frame(&fx, "base.kry");
    let warn = "krypta: warning: base.kry: damaged: rebuilt ";
    let t = fx.run(&["t", "--base", "base.kry", "delta.kry"]);
    let e = err(&t);
    assert_eq!(code(&t), 7, "{e}");
    assert!(e.starts_with(warn), "{e}");
    assert!(
        e.contains("krypta: base.kry: the delta base is damaged but repairable: "),
        "{e}"
    );
    let o = fx.run(&["x", "-q", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(fx.read("out/v2/big.bin"), fx.read("v2/big.bin"));
    let o = fx.run(&["x", "--base", "base.kry", "delta.kry", "-C", "out2"]);
    assert!(err(&o).starts_with(warn), "{}", err(&o));
}
