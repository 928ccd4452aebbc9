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

/// The entries of v2 a damaged big.bin leaves intact: what a salvage restores.
const UNDAMAGED: [&str; 8] = [
    "v2/",
    "v2/empty/",
    "v2/s/",
    "v2/s/0.dat",
    "v2/s/2-renamed.dat",
    "v2/s/3.dat",
    "v2/s/4.dat",
    "v2/s/new.dat",
];

/// The files and directories under `root`, relative to it.
fn restored(root: &std::path::Path) -> Vec<String> {
    files_under(root)
        .into_iter()
        .map(|p| p[root.display().to_string().len() + 1..].to_string())
        .collect()
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
    assert_eq!(restored(&fx.p("out")), UNDAMAGED);
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

/// `dd if=/dev/zero of=NAME bs=1 seek=LEN/2 count=200 conv=notrunc`: in base.kry, inside a
/// frame in the middle of v1/big.bin, which only the middle blocks of v2/big.bin reference.
fn zero_middle(fx: &Fx, name: &str) {
    let mut d = std::fs::read(fx.p(name)).unwrap();
    let m = d.len() / 2;
    d[m..m + 200].fill(0);
    std::fs::write(fx.p(name), &d).unwrap();
}

/// Flips the last byte of `name`, its footer's tag: the index cannot be read, so salvage
/// walks the frames front to back.
fn flip_footer(fx: &Fx, name: &str) {
    let mut d = std::fs::read(fx.p(name)).unwrap();
    *d.last_mut().unwrap() ^= 1;
    std::fs::write(fx.p(name), &d).unwrap();
}

/// How the delta is read in [`a_damaged_base_is_salvaged_alike_from_a_pipe_and_without_the_index`].
#[derive(Clone, Copy, Debug)]
enum Path {
    /// `cat delta.kry | krypta x --base base.kry -`.
    Pipe,
    /// delta.kry with its footer damaged: the resynchronising walk.
    NoIndex,
}

/// base.kry and delta.kry as [`archives`] makes them, both encrypted (each to its own key
/// file) when `sealed`; returns the key options of `x` and `t`.
fn archives_sealed(fx: &Fx, sealed: bool) -> Vec<&'static str> {
    if !sealed {
        archives(fx);
        return Vec::new();
    }
    fx.ok(&["keygen", "-q", "-o", "kb"]);
    fx.ok(&["keygen", "-q", "-o", "ko"]);
    fx.ok(&["c", "-q", "-b", "256K", "--keyfile", "kb", "base.kry", "v1"]);
    fx.ok(&[
        "c",
        "-q",
        "-b",
        "256K",
        "--keyfile",
        "ko",
        "--base",
        "base.kry",
        "--base-keyfile",
        "kb",
        "delta.kry",
        "v2",
    ]);
    vec!["--keyfile", "ko", "--base-keyfile", "kb"]
}

#[test]
fn a_damaged_base_is_salvaged_alike_from_a_pipe_and_without_the_index() {
    // Regression: from a pipe, the first delta block whose base region was damaged ended x
    // and t (exit 9, nothing after it restored); without the index, the walk counted such
    // intact delta frames as lost archive bytes (exit 5, or 2 encrypted) and did not name
    // the file they cut. Both now go on as salvage with the index does (FORMAT.md 16.4):
    // exit 9, big.bin named with the base's fault, every other file restored bit for bit.
    for sealed in [false, true] {
        for path in [Path::Pipe, Path::NoIndex] {
            let fx = Fx::new();
            versions(&fx, Change::Small);
            let keys = archives_sealed(&fx, sealed);
            zero_middle(&fx, "base.kry");
            let name = match path {
                Path::Pipe => "-",
                Path::NoIndex => {
                    flip_footer(&fx, "delta.kry");
                    "delta.kry"
                }
            };
            let delta = std::fs::read(fx.p("delta.kry")).unwrap();
            let run = |verb: &str, extra: &[&str]| {
                let args = [&[verb, "--base", "base.kry"][..], &keys, &[name], extra].concat();
                match path {
                    Path::Pipe => fx.run_stdin(&args, &delta),
                    Path::NoIndex => fx.run(&args),
                }
            };
            let case = format!("sealed {sealed}, {path:?}");
            for (verb, done, not) in [
                ("x", "restored", "not restored"),
                ("t", "verified", "not verified"),
            ] {
                let o = run(verb, if verb == "x" { &["-C", "out"] } else { &[] });
                let e = err(&o);
                assert_eq!(code(&o), 9, "{case} {verb}: {e}");
                let lines: Vec<&str> = e.lines().collect();
                let (last, warns) = lines.split_last().expect("stderr");
                assert_eq!(
                    *last,
                    match path {
                        // From a pipe the rest is spooled and read with its index: exact.
                        Path::Pipe => format!("krypta: {name}: {done} 8 of 9 entries, 1 damaged"),
                        // Without the index, entries in the unusable blocks cannot be
                        // counted.
                        Path::NoIndex => format!(
                            "krypta: {name}: {done} 8 of at least 9 entries (the index is lost), 1 damaged"
                        ),
                    },
                    "{case} {verb}: {e}"
                );
                let lost = warns
                    .iter()
                    .filter(|l| l.starts_with(&format!("krypta: warning: v2/big.bin: {not}: ")))
                    .collect::<Vec<_>>();
                assert_eq!(lost.len(), 1, "{case} {verb}: {e}");
                assert!(
                    lost[0].contains(": base region unusable: base.kry: base frame ")
                        || lost[0].contains(": its base region is unusable: base.kry: base frame "),
                    "{case} {verb}: {e}"
                );
                assert!(
                    warns.iter().any(|l| l.starts_with(&format!(
                        "krypta: warning: {name}: delta block unusable (its base is damaged) at byte "
                    ))),
                    "{case} {verb}: {e}"
                );
                // Its data frames are intact: no region of them is called damaged (the
                // footer's own damage is only quoted as why the index could not be read).
                assert!(
                    !e.contains(&format!("krypta: warning: {name}: archive damaged")),
                    "{case} {verb}: {e}"
                );
            }
            assert_eq!(restored(&fx.p("out")), UNDAMAGED, "{case}");
            small_files_restored(&fx);
        }
    }
}

#[test]
fn without_the_index_the_archives_own_damage_still_decides_the_exit_code() {
    // A damaged delta frame and a damaged base frame, the index lost: the delta's own
    // damage is exit 5 (2 encrypted) as for any archive, and the intact delta frames whose
    // base is damaged are still named as such, not as lost archive bytes.
    for (sealed, want, kind) in [
        (false, 5, "archive damaged"),
        (true, 2, "archive damaged or modified"),
    ] {
        let fx = Fx::new();
        versions(&fx, Change::Small);
        let keys = archives_sealed(&fx, sealed);
        zero_middle(&fx, "base.kry");
        zero_first_frame(&fx, "delta.kry");
        flip_footer(&fx, "delta.kry");
        let args = [
            &["x", "--base", "base.kry"][..],
            &keys,
            &["delta.kry", "-C", "out"],
        ]
        .concat();
        let o = fx.run(&args);
        let e = err(&o);
        assert_eq!(code(&o), want, "sealed {sealed}: {e}");
        let at = |what: &str| {
            e.lines()
                .filter(|l| l.starts_with(&format!("krypta: warning: delta.kry: {what} at byte ")))
                .count()
        };
        assert_eq!(at(kind), 1, "sealed {sealed}: {e}");
        assert!(
            at("delta block unusable (its base is damaged)") > 0,
            "sealed {sealed}: {e}"
        );
        small_files_restored(&fx);
        assert!(!fx.exists("out/v2/big.bin"), "sealed {sealed}");
    }
}

#[test]
fn l_of_a_delta_without_its_index_names_the_base_it_needs_and_lists_with_it() {
    // Regression: `l` took no --base, and without the index it read the delta's blocks
    // front to back with no base: exit 5 and no entry listed, nothing said of the base.
    let fx = Fx::new();
    versions(&fx, Change::Small);
    archives(&fx);
    flip_footer(&fx, "delta.kry");
    let id = archive_id(&fx, "base.kry");
    let o = fx.run(&["l", "delta.kry"]);
    assert_eq!(code(&o), 9, "{}", err(&o));
    assert!(out(&o).is_empty(), "{}", out(&o));
    assert_eq!(
        err(&o).lines().last().unwrap(),
        format!(
            "krypta: delta.kry: a delta archive: give --base with its base archive (archive id {id}), and the base's keys if it is encrypted"
        )
    );
    // With the base: every entry listed from the blocks, and the run ends with the footer's
    // damage (an unencrypted footer's checksum: exit 5), as for any archive.
    let o = fx.run(&["l", "--base", "base.kry", "delta.kry"]);
    assert_eq!(code(&o), 5, "{}", err(&o));
    assert_eq!(out(&o).lines().count(), 9, "{}", out(&o));
    assert!(
        err(&o).contains(
            "every data frame verified, and all 9 entries read front to back were listed"
        ),
        "{}",
        err(&o)
    );
}
