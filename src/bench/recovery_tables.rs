//! Tables 9–11: recovery data (`krypta::recovery`). 9: size overhead and encode / verify /
//! repair MB/s at 1, 5 and 10%, one core and all cores; 10: what encoding at 5% costs inside
//! a real `c -l 3` (the archive writer writing through a `RecoveryWriter`); 11: the same
//! archive protected by `par2 create -r5` side by side: time to create, verify and repair,
//! size, and which damage each repaired.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::archive::writer::{ArchiveWriter, BcjMode, ReaderSource, WriteOptions};
use crate::codec::Level;
use crate::error::{Error, Result};
use crate::format::{EntryKind, EntryMeta, Timestamp};
use crate::recovery::{
    FileSource, Locate, RecoveryOptions, RecoveryWriter, RepairOptions, locate, repair_to, verify,
};

use super::Plan;
use super::archive_tables::{Protect, temp_dir, write_archive};
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

/// Writes an archive of `files` at -l 3 through an optional RecoveryWriter at `percent`.
fn write_protected(
    path: &Path,
    files: &[(&str, &[u8])],
    percent: Option<u8>,
    jobs: usize,
) -> Result<u64> {
    let mut opts = WriteOptions::new();
    opts.level = Some(Level::DEFAULT);
    opts.block_size = Level::DEFAULT.default_block_size();
    opts.jobs = jobs.max(1);
    opts.bcj = BcjMode::Auto;
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, "create", e))?;
    let out = std::io::BufWriter::with_capacity(1 << 20, file);
    let meta = |name: &str| EntryMeta {
        path: name.as_bytes().to_vec(),
        kind: EntryKind::File,
        mode: 0o644,
        mtime: Timestamp { secs: 0, nanos: 0 },
        uid: 0,
        gid: 0,
        link: Vec::new(),
        ..EntryMeta::default()
    };
    type AddFile<'a> = dyn FnMut(&EntryMeta, &[u8], &str) -> Result<()> + 'a;
    let add = |w: &mut AddFile| -> Result<()> {
        for (name, data) in files {
            w(&meta(name), data, name)?;
        }
        Ok(())
    };
    match percent {
        None => {
            let mut w = ArchiveWriter::new(out, path, opts)?;
            add(&mut |m, d, n| w.add_file(m, &mut ReaderSource::new(d, n)).map(|_| ()))?;
            let (s, out) = w.finish()?;
            out.into_inner()
                .map_err(|e| Error::io(path, "write", e.into_error()))?;
            Ok(s.archive_bytes)
        }
        Some(pct) => {
            let rw = RecoveryWriter::new(out, &RecoveryOptions::new(pct)).map_err(rec_err(path))?;
            let mut w = ArchiveWriter::new(rw, path, opts)?;
            add(&mut |m, d, n| w.add_file(m, &mut ReaderSource::new(d, n)).map(|_| ()))?;
            let (_, rw) = w.finish()?;
            let (out, s) = rw.finish().map_err(rec_err(path))?;
            out.into_inner()
                .map_err(|e| Error::io(path, "write", e.into_error()))?;
            Ok(s.layout.file_len)
        }
    }
}

/// Names of the fixtures repeated (as separate files) until they reach `mb` MB.
fn repeated_names(fixtures: &[Fixture], mb: usize) -> Vec<String> {
    let one_pass: usize = fixtures.iter().map(|f| f.data.len()).sum();
    let passes = (mb * 1_000_000).div_ceil(one_pass.max(1)).max(1);
    (0..passes)
        .flat_map(|k| fixtures.iter().map(move |f| format!("{}.{k}", f.name)))
        .collect()
}

/// Table 10: `c -l 3` with and without recovery data at 5%, runs interleaved.
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
    let path = dir.path().join("r.kry");
    let runs = plan.runs.max(1) * 2 + 1;
    let mut t = Table::new(
        10,
        "Recovery data inside `c -l 3`",
        format!(
            "the fixtures repeated to {:.1} MB ({} files) written at -l 3 (BCJ auto, 4 MiB \
             blocks) by the archive writer to a file on {}, directly or through a \
             RecoveryWriter at 5% (default layout, background thread) — the real code path of \
             `c --recovery 5`. Runs alternate between the two (median of {runs} each), so load \
             changes hit both alike; CPU is the user + system time of this process per run.",
            total as f64 / MB,
            files.len(),
            dir.path().parent().unwrap_or(dir.path()).display(),
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
        let (mut plain, mut rec) = (Vec::new(), Vec::new());
        let (mut plain_cpu, mut rec_cpu) = (Vec::new(), Vec::new());
        let mut size = 0;
        for _ in 0..runs {
            let (s, c) = (std::time::Instant::now(), cpu_secs());
            size = write_protected(&path, &files, None, j)?;
            plain.push(s.elapsed().as_secs_f64());
            plain_cpu.push(cpu_secs() - c);
            let (s, c) = (std::time::Instant::now(), cpu_secs());
            write_protected(&path, &files, Some(5), j)?;
            rec.push(s.elapsed().as_secs_f64());
            rec_cpu.push(cpu_secs() - c);
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
            "-j {j}: recovery data at 5% costs {:+.1}% of the `c -l 3` wall time (goal: under \
             10%) and {:+.1}% of its CPU time (user + system of this process, which load from \
             other processes disturbs far less than wall time).",
            (b / a - 1.0) * 100.0,
            (bc / ac.max(1e-9) - 1.0) * 100.0
        ));
    }
    Ok(t)
}

/// CPU seconds (user + system) this process has used so far, from /proc/self/stat (clock
/// ticks of 1/100 s, Linux's USER_HZ); 0 where it cannot be read.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the parenthesised command name, utime and stime are the 12th and 13th fields.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
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

/// Table 11: krypta's recovery data at 5% next to `par2 create -r5` on the same archive.
pub fn table11(fixtures: &[Fixture], plan: &Plan, progress: &mut dyn FnMut(&str)) -> Result<Table> {
    let dir = temp_dir()?;
    let d = dir.path();
    let names = repeated_names(fixtures, plan.tax_mb / 2);
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .zip(fixtures.iter().cycle())
        .map(|(n, f)| (n.as_str(), f.data.as_slice()))
        .collect();
    let arch = d.join("a.kry");
    let l = write_archive(&arch, &files, Some(Level::DEFAULT), &Protect::Plain, 2)?;
    let p = std::fs::read(&arch).map_err(|e| Error::io(&arch, "read", e))?;
    let has_par2 = sh("command -v par2", d)?.0;
    let mut t = Table::new(
        11,
        "Recovery data next to par2",
        format!(
            "the fixtures repeated to {} MB as one -l 3 archive ({:.1} MB). krypta: recovery data at 5% \
             (default layout) appended by a RecoveryWriter, verified with `verify`, repaired with \
             `repair_to` into a file, both on this process's threads; par2: `par2 create -q -q \
             -r5` (par2cmdline defaults: 2000 source blocks, all cores), `par2 verify`, `par2 \
             repair`, recovery files beside the archive. Files on {}. Each damage is applied to \
             a fresh copy; \"repaired\" means the result is byte-identical to the original. \
             Median of {} run(s) for create and verify; repairs timed once.{}",
            plan.tax_mb / 2,
            l as f64 / MB,
            d.parent().unwrap_or(d).display(),
            plan.runs,
            if has_par2 {
                ""
            } else {
                " par2 is not installed (apt-get install par2): its column is empty."
            }
        ),
        &["", "krypta --recovery 5", "par2 create -r5"],
    );
    progress("table 11: create");
    let prot = d.join("p.kry");
    let mut section = 0;
    let kc = median_secs(plan.runs, || {
        let (out, _) = encode(&p, 5, true)?;
        section = out.len() - p.len();
        std::fs::write(&prot, &out).map_err(|e| Error::io(&prot, "write", e))
    })?;
    let protected = std::fs::read(&prot).map_err(|e| Error::io(&prot, "read", e))?;
    let kv = median_secs(plan.runs, || {
        let f = std::fs::File::open(&prot).map_err(|e| Error::io(&prot, "open", e))?;
        let src = FileSource::new(f).map_err(|e| Error::io(&prot, "open", e))?;
        let loc = locate(&src, &Locate::default()).map_err(rec_err(&prot))?;
        std::hint::black_box(verify(&src, &loc));
        Ok(())
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
    t.rows
        .push(vec![Cell::text("create"), secs(Some(kc)), secs(pc)]);
    t.rows.push(vec![
        Cell::text("verify (intact)"),
        secs(Some(kv)),
        secs(pv),
    ]);
    let pct = |b: u64| Cell::text(format!("{:.2}%", b as f64 / l as f64 * 100.0));
    t.rows.push(vec![
        Cell::text("size overhead"),
        pct(section as u64),
        psize.map(pct).unwrap_or(Cell::Missing),
    ]);
    for (name, apply) in damages(l) {
        progress(&format!("table 11: {name}"));
        // krypta: damage the protected file (P + section) at the same offsets within P.
        let mut kd = protected.clone();
        apply(&mut kd);
        let s = std::time::Instant::now();
        let kres = krypta_repair(&kd, &protected);
        let ks = s.elapsed().as_secs_f64();
        let kcell = Cell::text(match kres {
            true => format!("repaired, {ks:.3} s"),
            false => format!("not repaired ({ks:.3} s)"),
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

/// Repairs `damaged` to a buffer; true when the result equals `original`.
fn krypta_repair(damaged: &[u8], original: &[u8]) -> bool {
    let opts = Locate {
        protected_len: None,
        scan: true,
    };
    let Ok(loc) = locate(damaged, &opts) else {
        return false;
    };
    let ro = RepairOptions {
        jobs: 2,
        ..Default::default()
    };
    match repair_to(damaged, &loc, Vec::with_capacity(original.len()), &ro) {
        Ok((out, s)) => s.identical && out == original,
        Err(_) => false,
    }
}
