//! The row groups of table 15 ([`super::wait_tables`]): encrypted writes and a pipe, small
//! files, extraction of a tree and of one large file, level 9 on a long input, Argon2id;
//! and the deterministic trees they run on. Each group alternates krypta and its peer
//! through `pair` and adds its rows with the issue's goal.

use std::path::Path;

use crate::crypto::kdf::Kdf;
use crate::error::Result;

use super::archive_tables::{Protect, key_setup};
use super::fixtures::{self, Fixture};
use super::measure::{MB, have, median};
use super::report::Cell;
use super::synth::SplitMix;
use super::wait_tables::{Goal, Rows, Sizes, clear, clear_fresh, pair, run_sh, size_of, write};

/// `n` small files of 2–30 words (a seeded vocabulary of 1,571 made-up words) in 100
/// directories under `root`: the issue's small-file tree, the same on every machine.
pub(super) fn small_tree(root: &Path, n: usize) -> Result<u64> {
    let mut rng = SplitMix(0x5eed_f11e5);
    let vocab: Vec<String> = (0..1571)
        .map(|_| {
            let len = 3 + rng.next() % 8;
            (0..len)
                .map(|_| char::from(b'a' + (rng.next() % 26) as u8))
                .collect()
        })
        .collect();
    let mut total = 0;
    for i in 0..n {
        let words = 2 + rng.next() % 29;
        let mut text = String::new();
        for w in 0..words {
            if w > 0 {
                text.push(' ');
            }
            text.push_str(&vocab[(rng.next() % vocab.len() as u64) as usize]);
        }
        text.push('\n');
        total += text.len() as u64;
        write(
            &root.join(format!("d{:03}/f{i:06}.txt", i % 100)),
            text.as_bytes(),
        )?;
    }
    Ok(total)
}

/// A tree of files of 1–64 KiB cut from the fixtures, `mb` MB in all.
pub(super) fn medium_tree(root: &Path, fx: &[Fixture], mb: usize) -> Result<()> {
    let mut rng = SplitMix(0x7ee5);
    let want = mb * 1_000_000;
    let (mut done, mut n) = (0usize, 0usize);
    while done < want {
        for f in fx.iter().filter(|f| !f.data.is_empty()) {
            let len = (1024 + (rng.next() % (63 * 1024)) as usize).min(want - done.min(want));
            if len == 0 {
                break;
            }
            let at = (rng.next() as usize) % f.data.len();
            let piece: Vec<u8> = f.data.iter().cycle().skip(at).take(len).copied().collect();
            write(&root.join(format!("{}/{n:05}.bin", f.name)), &piece)?;
            done += len;
            n += 1;
        }
    }
    Ok(())
}

/// The fixtures' bytes repeated (or cut) to `len`.
pub(super) fn repeated(fx: &[&Fixture], len: usize) -> Vec<u8> {
    let all: Vec<u8> = fx.iter().flat_map(|f| f.data.iter().copied()).collect();
    if all.is_empty() {
        return fixtures::random(len);
    }
    all.iter().cycle().take(len).copied().collect()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn small_files(
    exe: &Path,
    cwd: &Path,
    place: &str,
    sizes: &Sizes,
    runs: usize,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<()> {
    if !(have("tar") && have("zstd")) {
        return Ok(());
    }
    let n = sizes.small_files;
    progress(&format!("table 15: {n} small files, {place}"));
    small_tree(&cwd.join("sf"), n)?;
    let none = || Ok(());
    let (kc, tc) = pair(
        exe,
        cwd,
        runs,
        r#""$KRYPTA" c -q -l 3 -f sf.kry sf"#,
        "tar cf - sf | zstd -3 -q > sf.tzst",
        &none,
    )?;
    let (ks, ts) = (
        size_of(&cwd.join("sf.kry"))?,
        size_of(&cwd.join("sf.tzst"))?,
    );
    rows.push(
        format!("{n} small files: archive size, -l 3"),
        place,
        format!("{:.2} MB", ks as f64 / MB),
        format!("tar | zstd -3: {:.2} MB", ts as f64 / MB),
        Some(ks as f64 / ts as f64),
        Goal::AtMost(1.2),
        None,
    );
    rows.times(
        format!("{n} small files: c -l 3"),
        place,
        "tar c | zstd -3",
        kc,
        tc,
        Goal::AtMost(1.0),
    );
    let warm = r#"sf.kry sf.tzst "$KRYPTA" "$(command -v tar)" "$(command -v zstd)""#;
    let clean = || clear_fresh(exe, cwd, &["o1", "o2"], warm);
    for (args, what) in [("", "x"), ("-j 1 ", "x -j 1")] {
        let k = format!(r#""$KRYPTA" x -q {args}sf.kry -o o1"#);
        let (kx, tx) = pair(
            exe,
            cwd,
            runs,
            &k,
            "mkdir o2 && zstd -dc sf.tzst | tar xf - -C o2",
            &clean,
        )?;
        rows.times(
            format!("{n} small files: {what}"),
            place,
            "zstd -dc | tar x",
            kx,
            tx,
            Goal::AtMost(1.0),
        );
    }
    clean()?;
    seven_zip(exe, cwd, place, n, runs, rows)?;
    clear(cwd, &["sf"])
}

/// The small-file tree (`sf`, and krypta's `sf.kry` of it) against 7-Zip's own defaults
/// (`7z a`: LZMA2 level 5, solid), which the issue quotes: size, `c` and `x`, for context
/// (the goals are against `tar | zstd -3`). Left out when no 7-Zip is installed.
fn seven_zip(
    exe: &Path,
    cwd: &Path,
    place: &str,
    n: usize,
    runs: usize,
    rows: &mut Rows,
) -> Result<()> {
    let Some(z) = ["7zz", "7z"].into_iter().find(|t| have(t)) else {
        return Ok(());
    };
    let gone = || {
        let _ = std::fs::remove_file(cwd.join("sf.7z"));
        Ok(())
    };
    let (kc, zc) = pair(
        exe,
        cwd,
        runs,
        r#""$KRYPTA" c -q -l 3 -f sf.kry sf"#,
        &format!("{z} a -bd -bso0 sf.7z sf"),
        &gone,
    )?;
    let (ks, zs) = (size_of(&cwd.join("sf.kry"))?, size_of(&cwd.join("sf.7z"))?);
    rows.push(
        format!("{n} small files: archive size, -l 3"),
        place,
        format!("{:.2} MB", ks as f64 / MB),
        format!("7z a: {:.2} MB", zs as f64 / MB),
        Some(ks as f64 / zs as f64),
        Goal::Info,
        None,
    );
    rows.times(
        format!("{n} small files: c -l 3"),
        place,
        "7z a",
        kc,
        zc,
        Goal::Info,
    );
    let warm = format!(r#"sf.kry sf.7z "$KRYPTA" "$(command -v {z})""#);
    let clean = || clear_fresh(exe, cwd, &["o1", "o2"], &warm);
    let (kx, zx) = pair(
        exe,
        cwd,
        runs,
        r#""$KRYPTA" x -q sf.kry -o o1"#,
        &format!("{z} x -bd -bso0 -oo2 sf.7z"),
        &clean,
    )?;
    rows.times(
        format!("{n} small files: x"),
        place,
        "7z x",
        kx,
        zx,
        Goal::Info,
    );
    clean()?;
    gone()
}

pub(super) fn extraction(
    exe: &Path,
    cwd: &Path,
    fx: &[Fixture],
    sizes: &Sizes,
    runs: usize,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<()> {
    if !(have("tar") && have("zstd")) {
        return Ok(());
    }
    let runs = super::wait_tables::short_rounds(runs);
    progress("table 15: extraction of a tree and of one large file");
    medium_tree(&cwd.join("mt"), fx, sizes.tree_mb)?;
    run_sh(
        exe,
        cwd,
        r#""$KRYPTA" c -q -l 3 -f mt.kry mt && tar cf - mt | zstd -3 -q > mt.tzst"#,
    )?;
    let clean = || clear(cwd, &["o1", "o2"]);
    let (kx, tx) = pair(
        exe,
        cwd,
        runs,
        r#""$KRYPTA" x -q -j 1 mt.kry -o o1"#,
        "mkdir o2 && zstd -dc mt.tzst | tar xf - -C o2",
        &clean,
    )?;
    rows.times(
        format!("tree of {} MB: x -l 3 -j 1", sizes.tree_mb),
        rows.here,
        "zstd -dc | tar x",
        kx,
        tx,
        Goal::AtMost(1.0),
    );
    clean()?;
    clear(cwd, &["mt"])?;
    let all: Vec<&Fixture> = fx.iter().collect();
    write(
        &cwd.join("big.bin"),
        &repeated(&all, sizes.large_mb * 1_000_000),
    )?;
    run_sh(
        exe,
        cwd,
        r#""$KRYPTA" c -q -l 3 -f big.kry big.bin && zstd -3 -q -f big.bin -o big.zst"#,
    )?;
    let (kx, zx) = pair(
        exe,
        cwd,
        runs,
        r#""$KRYPTA" x -q -j 1 big.kry -o o1"#,
        "zstd -q -d -f big.zst -o big.out",
        &clean,
    )?;
    rows.times(
        format!("one file of {} MB: x -l 3 -j 1", sizes.large_mb),
        rows.here,
        "zstd -d",
        kx,
        zx,
        Goal::AtMost(1.0),
    );
    let (k2, k1) = pair(
        exe,
        cwd,
        runs,
        r#""$KRYPTA" x -q -j 2 big.kry -o o1"#,
        r#""$KRYPTA" x -q -j 1 big.kry -o o1"#,
        &clean,
    )?;
    rows.times(
        format!(
            "one file of {} MB: x -j 2 (≥ 1.6× faster than -j 1)",
            sizes.large_mb
        ),
        rows.here,
        "krypta x -j 1",
        k2,
        k1,
        Goal::AtMost(1.0 / 1.6),
    );
    if let Some(cpu) = k1.cpu_secs {
        // On c cores no run can take less than its CPU time / c: the most any -j can gain
        // over -j 1 here, from -j 1's own CPU time.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        rows.note(format!(
            "`x -j 1` of the {} MB file used {cpu:.3} s of CPU (all its threads) in {:.3} s: \
             on {cores} cores no `-j` can take less than {:.3} s, so at most {:.2}× faster \
             than `-j 1` here (the goal asks 1.6×).",
            sizes.large_mb,
            k1.secs,
            cpu / cores as f64,
            k1.secs / (cpu / cores as f64).max(1e-9)
        ));
    }
    clean()?;
    for f in [
        "big.bin", "big.kry", "big.zst", "big.out", "mt.kry", "mt.tzst",
    ] {
        let _ = std::fs::remove_file(cwd.join(f));
    }
    Ok(())
}

pub(super) fn level9(
    exe: &Path,
    cwd: &Path,
    fx: &[Fixture],
    sizes: &Sizes,
    runs: usize,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<()> {
    if !have("zstd") {
        return Ok(());
    }
    let mb = sizes.level9_mb;
    progress(&format!("table 15: level 9 on {mb} MB"));
    let text: Vec<&Fixture> = fx.iter().filter(|f| f.name == "text").collect();
    write(&cwd.join("l9.txt"), &repeated(&text, mb * 1_000_000))?;
    let none = || Ok(());
    let (kc, zc) = pair(
        exe,
        cwd,
        1,
        r#""$KRYPTA" c -q -l 9 -j 1 -f l9.kry l9.txt"#,
        "zstd -q -19 --long=27 -T1 -f l9.txt -o l9.zst",
        &none,
    )?;
    let (ks, zs) = (size_of(&cwd.join("l9.kry"))?, size_of(&cwd.join("l9.zst"))?);
    let peer = "zstd -19 --long=27 -T1";
    rows.push(
        format!("level 9, {mb} MB: size"),
        rows.here,
        format!("{ks} B"),
        format!("{peer}: {zs} B"),
        Some(ks as f64 / zs as f64),
        Goal::AtMost(1.1),
        None,
    );
    rows.memory(
        format!("level 9, {mb} MB: peak memory compressing (-j 1)"),
        peer,
        kc,
        zc,
        Goal::AtMost(1.2),
    );
    rows.times(
        format!("level 9, {mb} MB: c -j 1"),
        rows.here,
        peer,
        kc,
        zc,
        Goal::Info,
    );
    // Extraction to a file, as a user restores: writing 1 GiB to tmpfs varies from run to
    // run (page allocation), hence more runs than elsewhere.
    let clean = || {
        clear(cwd, &["o1"])?;
        let _ = std::fs::remove_file(cwd.join("l9.out"));
        Ok(())
    };
    let (kx, zx) = pair(
        exe,
        cwd,
        2 * runs + 1,
        r#""$KRYPTA" x -q l9.kry -o o1"#,
        "zstd -q -d --long=27 -f l9.zst -o l9.out",
        &clean,
    )?;
    rows.times(
        format!("level 9, {mb} MB: x"),
        rows.here,
        "zstd -d --long=27",
        kx,
        zx,
        Goal::AtMost(1.1),
    );
    rows.memory(
        format!("level 9, {mb} MB: peak memory extracting"),
        "zstd -d --long=27",
        kx,
        zx,
        Goal::AtMost(1.2),
    );
    clean()?;
    // The same without the file system: decoding and verifying alone.
    let (kx, zx) = pair(
        exe,
        cwd,
        2 * runs + 1,
        r#""$KRYPTA" x -q --stdout l9.kry > /dev/null"#,
        "zstd -q -d --long=27 -c l9.zst > /dev/null",
        &none,
    )?;
    rows.times(
        format!("level 9, {mb} MB: x --stdout to /dev/null"),
        rows.here,
        "zstd -dc --long=27",
        kx,
        zx,
        Goal::Info,
    );
    for f in ["l9.txt", "l9.kry", "l9.zst"] {
        let _ = std::fs::remove_file(cwd.join(f));
    }
    Ok(())
}

pub(super) fn argon2id(exe: &Path, cwd: &Path, runs: usize, rows: &mut Rows) -> Result<()> {
    use crate::crypto::kdf::{ARGON2ID_DEFAULT_M_KIB, ARGON2ID_DEFAULT_P, ARGON2ID_DEFAULT_T};
    let ms = match key_setup(&Protect::Password(Kdf::default()), runs)? {
        Cell::Num { value, .. } => value,
        _ => return Ok(()),
    };
    let what = format!(
        "Argon2id, default parameters ({} MiB, t={ARGON2ID_DEFAULT_T}, p={ARGON2ID_DEFAULT_P})",
        ARGON2ID_DEFAULT_M_KIB / 1024
    );
    let (peer, ratio) = if have("argon2") {
        let script = format!(
            "printf pw | argon2 saltsaltsaltsalt -id -t {ARGON2ID_DEFAULT_T} -k {ARGON2ID_DEFAULT_M_KIB} -p {ARGON2ID_DEFAULT_P} -l 32 -r"
        );
        let mut t: Vec<f64> = (0..runs.max(1))
            .map(|_| run_sh(exe, cwd, &script).map(|r| r.secs * 1000.0))
            .collect::<Result<_>>()?;
        let p = median(&mut t);
        (format!("argon2 (reference C): {p:.0} ms"), Some(ms / p))
    } else {
        ("argon2 (reference C): not installed".to_string(), None)
    };
    rows.push(
        what,
        "memory",
        format!("{ms:.0} ms"),
        peer,
        ratio,
        Goal::AtMostMs(350.0),
        Some(ms),
    );
    Ok(())
}
