//! Tables 9–11: recovery data (`krypta::recovery`). 9: size overhead and encode / verify /
//! repair MB/s of the layer itself at 1, 5 and 10%, one core and all cores; 10: what
//! `--recovery 5` costs `krypta c -l 3` (this binary, run as a user runs it); 11: the same
//! tree protected by `krypta c --recovery 5` and by `krypta c` + `par2 create -r5` side by
//! side, through the CLI: time to create, verify and repair, size, and which damage each
//! repaired.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::recovery::{
    Locate, RecoveryOptions, RecoveryWriter, RepairOptions, locate, repair_to, verify,
};

use super::Plan;
use super::archive_tables::temp_dir;
use super::fixtures::{self, Fixture};
use super::measure::{MB, mb_per_sec, median, median_secs};
use super::report::{Cell, Table};

fn rec_err(path: &Path) -> impl Fn(crate::recovery::RecoveryError) -> Error + '_ {
    move |source| Error::Recovery {
        path: path.to_path_buf(),
        source,
    }
}

/// P followed by its section at `percent` (in memory), and the seconds it took.
fn encode(p: &[u8], percent: u8, background: bool) -> Result<(Vec<u8>, f64)> {
    let mut o = RecoveryOptions::new(percent);
    o.background = background;
    let t = std::time::Instant::now();
    let mut w = RecoveryWriter::new(Vec::with_capacity(p.len() + p.len() / 8), &o)
        .map_err(rec_err(Path::new("<memory>")))?;
    for c in p.chunks(1 << 20) {
        w.write_all(c)
            .map_err(|e| Error::io("<memory>", "write", e))?;
    }
    let (out, _) = w.finish().map_err(rec_err(Path::new("<memory>")))?;
    Ok((out, t.elapsed().as_secs_f64()))
}

/// Damage of table 9: in every segment, 3/4 of the shards that 1% can repair (⌈k/100⌉),
/// half of them as one zeroed run, half as scattered garbled 4 KiB sectors.
fn damage_each_segment(file: &mut [u8], l: u64) {
    let seg = 128u64 << 20;
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut start = 0;
    while start < l {
        let end = (start + seg).min(l);
        let len = end - start;
        let n = (len.div_ceil(4096).div_ceil(100) * 3 / 4).max(2);
        let run = (n / 2) * 4096;
        let a = (start + len / 3) / 4096 * 4096;
        file[a as usize..(a + run).min(end) as usize].fill(0);
        for _ in 0..n / 2 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (start + x % len) / 4096 * 4096;
            let e = (at + 4096).min(l);
            for b in &mut file[at as usize..e as usize] {
                *b ^= 0x5A;
            }
        }
        start = end;
    }
}

/// Table 9: overhead and speeds at 1, 5 and 10%.
pub fn table9(plan: &Plan, jobs: usize, progress: &mut dyn FnMut(&str)) -> Result<Table> {
    let p = fixtures::random(plan.recovery_mb * 1_000_000);
    let l = p.len() as u64;
    let mut t = Table::new(
        9,
        "Recovery data: size and speed",
        format!(
            "{:.0} MB of random bytes as P (what compressed or encrypted archives look like), \
             default layout (4 KiB shards, 128 MiB segments). Encode: a RecoveryWriter in \
             memory, 1 MiB writes; \"1 core\" encodes on the calling thread, \"2 threads\" on \
             its background thread while the caller copies. Verify: locate + read and check \
             every shard, packet and the BLAKE3 of P. Repair: `repair_to` into a sink after \
             damaging, in every segment, 3/4 of the shards 1% can repair (half as one zeroed \
             run, half as scattered 4 KiB sectors; section regenerated, result checked \
             byte-identical); \"{jobs} jobs\" repairs that many \
             segments at once. MB/s are of P. Median of {} run(s).",
            l as f64 / MB,
            plan.runs
        ),
        &[
            "recovery",
            "size overhead %",
            "encode MB/s, 1 core",
            "encode MB/s, 2 threads",
            "verify MB/s",
            "repair MB/s, 1 job",
            &format!("repair MB/s, {jobs} jobs"),
        ],
    );
    for percent in [1u8, 5, 10] {
        progress(&format!("table 9: {percent}%"));
        let mut file = Vec::new();
        let mut one = Vec::new();
        let mut two = Vec::new();
        for _ in 0..plan.runs.max(1) {
            one.push(encode(&p, percent, false)?.1);
            let (f, s) = encode(&p, percent, true)?;
            two.push(s);
            file = f;
        }
        let overhead = (file.len() as f64 - l as f64) / l as f64 * 100.0;
        let mem = Path::new("<memory>");
        let loc = locate(&file[..], &Locate::default()).map_err(rec_err(mem))?;
        let ver = median_secs(plan.runs, || {
            std::hint::black_box(verify(&file[..], &loc));
            Ok(())
        })?;
        let mut damaged = file.clone();
        damage_each_segment(&mut damaged, l);
        let loc = locate(&damaged[..], &Locate::default()).map_err(rec_err(mem))?;
        let repair = |j: usize| -> Result<f64> {
            median_secs(plan.runs, || {
                let mut o = RepairOptions {
                    jobs: j,
                    ..Default::default()
                };
                o.encoder.background = true;
                let (_, s) =
                    repair_to(&damaged[..], &loc, std::io::sink(), &o).map_err(rec_err(mem))?;
                if !s.identical {
                    return Err(Error::Usage("bench: repair was not byte-identical".into()));
                }
                Ok(())
            })
        };
        let (r1, rn) = (repair(1)?, repair(jobs)?);
        t.rows.push(vec![
            Cell::text(format!("{percent}%")),
            Cell::num(overhead, 2),
            Cell::auto(mb_per_sec(p.len(), median(&mut one))),
            Cell::auto(mb_per_sec(p.len(), median(&mut two))),
            Cell::auto(mb_per_sec(p.len(), ver)),
            Cell::auto(mb_per_sec(p.len(), r1)),
            Cell::auto(mb_per_sec(p.len(), rn)),
        ]);
    }
    t.reading.push(
        "Size overhead = (section bytes) / L: the recovery shards plus two copies of the \
         checksum table (8 bytes per 4 KiB shard each, 0.2% per copy) and 8 KiB of padding at most."
            .into(),
    );
    Ok(t)
}

/// Writes `files` as a directory tree `src` in `dir` (what the CLI rows archive).
fn write_tree(dir: &Path, files: &[(&str, &[u8])]) -> Result<std::path::PathBuf> {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).map_err(|e| Error::io(&src, "create", e))?;
    for (name, data) in files {
        let p = src.join(name);
        std::fs::write(&p, data).map_err(|e| Error::io(&p, "write", e))?;
    }
    Ok(src)
}

/// `krypta c -q -f -l 3 EXTRA… OUT src`: the archive of the tables' tree, as the CLI rows
/// write it.
fn c_l3<'a>(extra: &[&'a str], out: &'a str) -> Vec<&'a str> {
    let mut a = vec!["c", "-q", "-f", "-l", "3"];
    a.extend_from_slice(extra);
    a.extend([out, "src"]);
    a
}

/// Runs this krypta binary with `args` in `dir`; wall seconds and the CPU seconds (user +
/// system) of the child. Fails unless it exits 0 (or `allowed`).
fn krypta_cli(dir: &Path, args: &[&str], allowed: &[i32]) -> Result<(i32, f64, f64)> {
    let exe = std::env::current_exe().map_err(|e| Error::io("krypta", "locate", e))?;
    let c0 = super::measure::child_cpu_secs();
    let t = std::time::Instant::now();
    let st = Command::new(exe)
        .args(args)
        .current_dir(dir)
        .env_remove("KRYPTA_PASSWORD")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| Error::io("krypta", "run", e))?;
    let wall = t.elapsed().as_secs_f64();
    let code = st.code().unwrap_or(-1);
    if code != 0 && !allowed.contains(&code) {
        return Err(Error::Usage(format!(
            "bench: krypta {} exited {code}",
            args.join(" ")
        )));
    }
    Ok((code, wall, super::measure::child_cpu_secs() - c0))
}

/// Names of the fixtures repeated (as separate files) until they reach `mb` MB.
fn repeated_names(fixtures: &[Fixture], mb: usize) -> Vec<String> {
    let one_pass: usize = fixtures.iter().map(|f| f.data.len()).sum();
    let passes = (mb * 1_000_000).div_ceil(one_pass.max(1)).max(1);
    (0..passes)
        .flat_map(|k| fixtures.iter().map(move |f| format!("{}.{k}", f.name)))
        .collect()
}

/// Table 10: `krypta c -l 3` with and without `--recovery 5`, runs interleaved.
pub fn table10(
    fixtures: &[Fixture],
    plan: &Plan,
    jobs: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Table> {
    let names = repeated_names(fixtures, plan.tax_mb);
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .zip(fixtures.iter().cycle())
        .map(|(n, f)| (n.as_str(), f.data.as_slice()))
        .collect();
    let total: usize = files.iter().map(|f| f.1.len()).sum();
    let dir = temp_dir()?;
    let d = dir.path();
    write_tree(d, &files)?;
    let runs = plan.runs.max(1) * 2 + 1;
    let mut t = Table::new(
        10,
        "Recovery data inside `c -l 3`",
        format!(
            "the fixtures repeated to {:.1} MB ({} files) in a directory, archived by this krypta binary: `krypta c -f -l 3 -j N r.kry src` and the same with `--recovery 5`, output on {}. Runs alternate between the two (median of {runs} each), so load changes hit both alike; CPU is the user + system time of the krypta process per run.",
            total as f64 / MB,
            files.len(),
            d.parent().unwrap_or(d).display(),
        ),
        &[
            "threads (-j)",
            "archive MB",
            "c -l 3 s",
            "c -l 3 --recovery 5 s",
            "wall slowdown %",
            "c -l 3 CPU s",
            "c -l 3 --recovery 5 CPU s",
            "CPU cost %",
        ],
    );
    for j in [1, jobs] {
        progress(&format!("table 10: -j {j}"));
        let js = j.to_string();
        let (mut plain, mut rec) = (Vec::new(), Vec::new());
        let (mut plain_cpu, mut rec_cpu) = (Vec::new(), Vec::new());
        let mut size = 0;
        let without = c_l3(&["-j", &js], "r.kry");
        let with_rec = c_l3(&["-j", &js, "--recovery", "5"], "r.kry");
        // Each first in every other round (`measure::round_order`).
        for round in 0..runs {
            for k in super::measure::round_order(round, 2) {
                if k == 0 {
                    let (_, w, c) = krypta_cli(d, &without, &[])?;
                    plain.push(w);
                    plain_cpu.push(c);
                } else {
                    let (_, w, c) = krypta_cli(d, &with_rec, &[])?;
                    rec.push(w);
                    rec_cpu.push(c);
                    size = std::fs::metadata(d.join("r.kry")).map_or(0, |m| m.len());
                }
            }
        }
        let (a, b) = (median(&mut plain), median(&mut rec));
        let (ac, bc) = (median(&mut plain_cpu), median(&mut rec_cpu));
        t.rows.push(vec![
            Cell::text(format!("{j}")),
            Cell::auto(size as f64 / MB),
            Cell::num(a, 3),
            Cell::num(b, 3),
            Cell::num((b / a - 1.0) * 100.0, 1),
            Cell::num(ac, 2),
            Cell::num(bc, 2),
            Cell::num((bc / ac.max(1e-9) - 1.0) * 100.0, 1),
        ]);
        t.reading.push(format!(
            "-j {j}: `--recovery 5` costs {:+.1}% of the `c -l 3` wall time (goal: under \
             10%) and {:+.1}% of its CPU time (which load from other processes disturbs far \
             less than wall time).",
            (b / a - 1.0) * 100.0,
            (bc / ac.max(1e-9) - 1.0) * 100.0
        ));
    }
    Ok(t)
}

/// The damages of table 11, applied to the archive's own bytes (length `l`), with their names.
#[allow(clippy::type_complexity)]
fn damages(l: u64) -> Vec<(String, Box<dyn Fn(&mut Vec<u8>)>)> {
    // 3% of the 4 KiB shards: within krypta's 5%, above par2's 100 recovery blocks when the
    // archive is over 13.6 MB.
    let flips = (l / 4096 * 3 / 100).max(1);
    vec![
        (
            format!("{flips} scattered bit flips"),
            Box::new(move |f: &mut Vec<u8>| {
                let mut x = 7u64;
                for _ in 0..flips {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let at = (x >> 11) % l;
                    f[at as usize] ^= 1 << (x % 8);
                }
            }),
        ),
        (
            "20 lost 4 KiB sectors (zeroed)".into(),
            Box::new(move |f: &mut Vec<u8>| {
                for i in 0..20 {
                    let at = (l / 21 * (i + 1)) / 4096 * 4096;
                    f[at as usize..(at + 4096).min(l) as usize].fill(0);
                }
            }),
        ),
        (
            "a zeroed 1 MiB run".into(),
            Box::new(move |f: &mut Vec<u8>| {
                let a = (l / 2) as usize;
                let e = (a + (1 << 20)).min(l as usize);
                f[a..e].fill(0);
            }),
        ),
        (
            "first 4 KiB zeroed (header)".into(),
            Box::new(|f: &mut Vec<u8>| f[..4096].fill(0)),
        ),
        (
            "last 64 KiB of the file cut off (krypta: the protected file, so its section; par2: the archive)".into(),
            Box::new(|f: &mut Vec<u8>| {
                let n = f.len();
                f.truncate(n - (64 << 10).min(n));
            }),
        ),
    ]
}

fn sh(cmd: &str, dir: &Path) -> Result<(bool, f64)> {
    let t = std::time::Instant::now();
    let st = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| Error::io("sh", "run", e))?;
    Ok((st.success(), t.elapsed().as_secs_f64()))
}

/// Table 11: `krypta c --recovery 5` next to `krypta c` + `par2 create -r5`, through the CLI.
pub fn table11(fixtures: &[Fixture], plan: &Plan, progress: &mut dyn FnMut(&str)) -> Result<Table> {
    let dir = temp_dir()?;
    let d = dir.path();
    let names = repeated_names(fixtures, plan.tax_mb / 2);
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .zip(fixtures.iter().cycle())
        .map(|(n, f)| (n.as_str(), f.data.as_slice()))
        .collect();
    write_tree(d, &files)?;
    let has_par2 = sh("command -v par2", d)?.0;
    let arch = d.join("a.kry");
    let prot = d.join("p.kry");
    progress("table 11: create");
    let runs = plan.runs.max(1);
    let (mut kc, mut plain) = (Vec::new(), Vec::new());
    let without = c_l3(&[], "a.kry");
    let with_rec = c_l3(&["--recovery", "5"], "p.kry");
    // Each first in every other round (`measure::round_order`).
    for round in 0..runs {
        for k in super::measure::round_order(round, 2) {
            if k == 0 {
                plain.push(krypta_cli(d, &without, &[])?.1);
            } else {
                kc.push(krypta_cli(d, &with_rec, &[])?.1);
            }
        }
    }
    let (plain, kc) = (median(&mut plain), median(&mut kc));
    let p = std::fs::read(&arch).map_err(|e| Error::io(&arch, "read", e))?;
    let protected = std::fs::read(&prot).map_err(|e| Error::io(&prot, "read", e))?;
    let l = p.len() as u64;
    let lk = locate(&protected[..], &Locate::default())
        .map_err(rec_err(&prot))?
        .layout
        .params
        .protected_len;
    let section = protected.len() as u64 - lk;
    let mut t = Table::new(
        11,
        "Recovery data next to par2",
        format!(
            "the fixtures repeated to {} MB in a directory, archived at -l 3 by this krypta \
             binary ({:.1} MB). krypta: `krypta c -l 3 --recovery 5` (recovery data written \
             as the archive streams out), verified keylessly with `krypta repair --check`, \
             repaired with `krypta repair -o`; par2: `par2 create -q -q -r5` on the archive \
             `krypta c -l 3` wrote (par2cmdline defaults: 2000 source blocks, all cores), \
             `par2 verify`, `par2 repair`, recovery files beside the archive. Files on {}. \
             Each damage is applied to a fresh copy; \"repaired\" means the result is \
             byte-identical to the original. Median of {runs} run(s) for create and verify; \
             repairs timed once.{}",
            plan.tax_mb / 2,
            l as f64 / MB,
            d.parent().unwrap_or(d).display(),
            if has_par2 {
                ""
            } else {
                " par2 is not installed (apt-get install par2): its column is empty."
            }
        ),
        &["", "krypta c --recovery 5", "krypta c + par2 create -r5"],
    );
    let kv = median_secs(plan.runs, || {
        krypta_cli(d, &["repair", "-q", "--check", "p.kry"], &[]).map(|_| ())
    })?;
    let (pc, pv, psize) = if has_par2 {
        let pc = median_secs(plan.runs, || {
            sh(
                "rm -f a.kry*.par2 && par2 create -q -q -r5 a.kry.par2 a.kry",
                d,
            )
            .map(|_| ())
        })?;
        let pv = median_secs(plan.runs, || {
            sh("par2 verify -q -q a.kry.par2", d).map(|_| ())
        })?;
        let size: u64 = std::fs::read_dir(d)
            .map_err(|e| Error::io(d, "list", e))?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".par2"))
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum();
        (Some(pc), Some(pv), Some(size))
    } else {
        (None, None, None)
    };
    let secs = |s: Option<f64>| {
        s.map(|v| Cell::text(format!("{v:.3} s")))
            .unwrap_or(Cell::Missing)
    };
    t.rows.push(vec![
        Cell::text("write the archive and its recovery data"),
        secs(Some(kc)),
        secs(pc.map(|c| plain + c)),
    ]);
    t.rows.push(vec![
        Cell::text("of which the recovery data"),
        // A difference of two noisy medians says nothing at this size; table 10 measures
        // krypta's share with interleaved runs.
        Cell::text("see table 10"),
        secs(pc),
    ]);
    t.rows.push(vec![
        Cell::text("verify (intact, no key)"),
        secs(Some(kv)),
        secs(pv),
    ]);
    let pct = |b: u64, of: u64| Cell::text(format!("{:.2}%", b as f64 / of as f64 * 100.0));
    t.rows.push(vec![
        Cell::text("size overhead"),
        pct(section, lk),
        psize.map(|b| pct(b, l)).unwrap_or(Cell::Missing),
    ]);
    for ((name, apply), (_, kapply)) in damages(l).into_iter().zip(damages(lk)) {
        progress(&format!("table 11: {name}"));
        let mut kd = protected.clone();
        kapply(&mut kd);
        let dmg = d.join("dmg.kry");
        std::fs::write(&dmg, &kd).map_err(|e| Error::io(&dmg, "write", e))?;
        let (code, ks, _) = krypta_cli(
            d,
            &["repair", "-q", "-f", "dmg.kry", "-o", "fixed.kry"],
            &[1, 3, 4, 5],
        )?;
        let fixed = std::fs::read(d.join("fixed.kry")).unwrap_or_default();
        let _ = std::fs::remove_file(d.join("fixed.kry"));
        let kcell = Cell::text(if code == 0 && fixed == protected {
            format!("repaired, {ks:.3} s")
        } else {
            format!("not repaired ({ks:.3} s)")
        });
        let pcell = if has_par2 {
            let mut pd = p.clone();
            apply(&mut pd);
            std::fs::write(&arch, &pd).map_err(|e| Error::io(&arch, "write", e))?;
            let (_, ps) = sh("par2 repair -q -q a.kry.par2 && rm -f a.kry.1", d)?;
            let back = std::fs::read(&arch).unwrap_or_default();
            std::fs::write(&arch, &p).map_err(|e| Error::io(&arch, "write", e))?;
            Cell::text(if back == p {
                format!("repaired, {ps:.3} s")
            } else {
                format!("not repaired ({ps:.3} s)")
            })
        } else {
            Cell::Missing
        };
        t.rows
            .push(vec![Cell::text(format!("repair: {name}")), kcell, pcell]);
    }
    t.reading.push(
        "par2 at its default 2000 blocks uses blocks of L/2000 bytes, so each scattered flip \
         costs a whole block; krypta's 4 KiB shards make flips and sectors cheap, at the price of \
         a larger checksum table. A cut-off tail is repairable by krypta only while the cut stays \
         inside its section (an end-placed section cannot restore P's own tail); par2's separate \
         recovery files survive a cut of the archive itself."
            .into(),
    );
    Ok(t)
}
