//! Table 15: where people wait (issue 13) — each comparison of the issue measured in one run,
//! krypta against the peer a user would reach for, as a ratio of the two, with the goal and
//! whether this run meets it:
//!
//! - encrypted writes, `c -s --keyfile` of 200 and 800 MiB (quick: 16 MiB) against `age -r`
//!   (one core) with the same durability (`super::wait_writes`), and `cp`, at the default
//!   `-j` and at `-j 1`; at `-j 1` to /dev/null against the one-core AES-CTR + HMAC limit
//!   (`openssl speed`); time per MiB at both sizes (linear in size); the same bytes from a
//!   pipe (`cat | krypta c … -`) against the file;
//! - 100,000 small files (quick: 2,000) of 2–30 words: archive size, `c` and `x` against
//!   `tar c | zstd -3` and `zstd -dc | tar x`, and against `7z a` / `7z x` for context;
//! - extraction at `-l 3 -j 1`: a tree of files of 1–64 KiB cut from the fixtures against
//!   `zstd -dc | tar x`, one large file against `zstd -d`, and `-j 2` against `-j 1` (with
//!   the most any `-j` can gain here, from `-j 1`'s CPU time);
//! - level 9 on a long input (1 GiB of the text fixture repeated; quick: 8 MB) against
//!   `zstd -19 --long=27 -T1`: size, peak memory compressing and extracting, extraction time
//!   to a file and to /dev/null;
//! - Argon2id with the default parameters (absolute goal 350 ms; the reference `argon2`
//!   command beside it when installed).
//!
//! Method (keep it: the machines are shared and noisy): krypta runs as the real binary (this
//! process's executable) and every peer as a child process (`sh -c`), timed the same way
//! (wall clock around the child; peak memory from `/usr/bin/time -f %M` when it exists). The
//! two sides of a comparison alternate, each first in every other round (A B, B A …) and the medians are compared. Writes and
//! small files run on tmpfs (`/dev/shm`) and, when the temporary directory is on another
//! file system, on disk too; everything else on tmpfs. Before every run the previous run's
//! output is removed and the file systems are synced (untimed), so no run pays for another's
//! write-back. krypta runs with its defaults (its fsync of the finished archive included)
//! unless the row says `--no-fsync`; it is then compared with a peer that does not sync
//! either, and the default with a peer followed by `sync` of its output.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::error::{Error, Result};

use super::Plan;
use super::fixtures::Fixture;
use super::measure::{have, median};
use super::report::{Cell, Table};
#[cfg(test)]
use super::wait_rows::small_tree;
use super::wait_rows::{argon2id, extraction, level9, small_files};
use super::wait_writes::writes;

/// This table's number.
pub const NUMBER: u8 = 15;

/// The sizes of one run (full plan or `--quick`).
pub(super) struct Sizes {
    pub(super) write_mib: Vec<usize>,
    pub(super) small_files: usize,
    pub(super) tree_mb: usize,
    pub(super) large_mb: usize,
    pub(super) level9_mb: usize,
}

impl Sizes {
    /// Scratch space the largest group needs at once, bytes: the write input with its outputs
    /// (krypta's temporary archive beside the one it replaces), or the level-9 input, or the
    /// small-file tree extracted twice (4 KiB pages each).
    fn scratch_bytes(&self) -> u64 {
        let mib = self.write_mib.iter().max().copied().unwrap_or(0) as u64;
        let writes = 4 * (mib << 20);
        let level9 = 2 * self.level9_mb as u64 * 1_000_000;
        let small = 3 * self.small_files as u64 * 4096;
        writes.max(level9).max(small) + (64 << 20)
    }

    fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                write_mib: vec![16],
                small_files: 2_000,
                tree_mb: 4,
                large_mb: 16,
                level9_mb: 8,
            }
        } else {
            Sizes {
                write_mib: vec![200, 800],
                small_files: 100_000,
                tree_mb: 60,
                large_mb: 200,
                level9_mb: 1024,
            }
        }
    }
}

/// A goal of the issue for one row: a ratio krypta / peer at most or at least this, an
/// absolute time in ms at most this, or none (shown for context).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Goal {
    AtMost(f64),
    AtMostMs(f64),
    Info,
}

impl Goal {
    fn text(self) -> String {
        match self {
            Goal::AtMost(r) => {
                let shown = format!("{r:.3}");
                format!("≤ {}", shown.trim_end_matches('0').trim_end_matches('.'))
            }
            Goal::AtMostMs(ms) => format!("≤ {ms:.0} ms"),
            Goal::Info => "–".into(),
        }
    }

    /// "yes" or "no" for a row with a goal: `ratio` is krypta / peer, `ms` krypta's time.
    pub(crate) fn met(self, ratio: Option<f64>, ms: Option<f64>) -> Cell {
        let verdict = match (self, ratio, ms) {
            (Goal::AtMost(g), Some(r), _) => r <= g,
            (Goal::AtMostMs(g), _, Some(ms)) => ms <= g,
            _ => return Cell::Missing,
        };
        Cell::text(if verdict { "yes" } else { "no" })
    }
}

/// One timed child process: wall seconds and peak resident memory, KiB, when known.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    pub(super) secs: f64,
    pub(super) rss_kib: Option<u64>,
    /// User + system CPU seconds of the whole child, when known.
    pub(super) cpu_secs: Option<f64>,
}

/// Where the runs of one place happen.
struct Place {
    name: &'static str,
    dir: tempfile::TempDir,
}

/// Runs `script` with `sh -c` in `cwd` (`$KRYPTA` names the krypta binary), timed.
pub(super) fn run_sh(exe: &Path, cwd: &Path, script: &str) -> Result<Run> {
    let time = Path::new("/usr/bin/time");
    let rss_file = cwd.join(".rss");
    let mut cmd = if time.exists() {
        let mut c = Command::new(time);
        c.arg("-f")
            .arg("%M %U %S")
            .arg("-o")
            .arg(&rss_file)
            .arg("sh");
        c
    } else {
        Command::new("sh")
    };
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .env("KRYPTA", exe)
        .env_remove("KRYPTA_PASSWORD")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let out = cmd.output().map_err(|e| Error::io("sh", "run", e))?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(Error::Usage(format!(
            "bench table 15: `{script}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let (rss_kib, cpu_secs) = std::fs::read_to_string(&rss_file)
        .ok()
        .and_then(|s| s.lines().last().map(parse_time_line))
        .unwrap_or((None, None));
    Ok(Run {
        secs,
        rss_kib,
        cpu_secs,
    })
}

impl Run {
    /// The medians of `runs`, each measure on its own (the peak memory and CPU time of the
    /// runs that reported them).
    pub(super) fn median_of(runs: &[Run]) -> Run {
        let med = |mut v: Vec<f64>| (!v.is_empty()).then(|| median(&mut v));
        Run {
            secs: med(runs.iter().map(|r| r.secs).collect()).unwrap_or(0.0),
            rss_kib: med(runs
                .iter()
                .filter_map(|r| r.rss_kib.map(|k| k as f64))
                .collect())
            .map(|k| k as u64),
            cpu_secs: med(runs.iter().filter_map(|r| r.cpu_secs).collect()),
        }
    }
}

/// `/usr/bin/time -f "%M %U %S"`'s line: peak KiB, and user + system seconds.
fn parse_time_line(line: &str) -> (Option<u64>, Option<f64>) {
    let mut f = line.split_whitespace();
    let rss = f.next().and_then(|v| v.parse().ok());
    let user: Option<f64> = f.next().and_then(|v| v.parse().ok());
    let sys: Option<f64> = f.next().and_then(|v| v.parse().ok());
    (rss, user.zip(sys).map(|(u, s)| u + s))
}

/// Medians of `runs` alternating runs of `a` and `b` (A B, B A, A B …); `prepare` runs before
/// each, untimed (it removes what the previous run wrote), then `sync`, so no run pays for
/// writing back what an earlier one left dirty (on a disk that was up to seconds, and it fell
/// on whichever run came next).
pub(super) fn pair(
    exe: &Path,
    cwd: &Path,
    runs: usize,
    a: &str,
    b: &str,
    prepare: &dyn Fn() -> Result<()>,
) -> Result<(Run, Run)> {
    let mut got: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    for round in 0..runs.max(1) {
        // A B, then B A: neither gets the first place's edge (`measure::round_order`).
        for i in super::measure::round_order(round, 2) {
            prepare()?;
            rustix::fs::sync();
            got[i].push(run_sh(exe, cwd, [a, b][i])?);
        }
    }
    Ok((Run::median_of(&got[0]), Run::median_of(&got[1])))
}

/// Rounds of the rows whose runs are short (0.1–1.2 s: the encrypted writes, the
/// extractions of a tree and of one large file) in the full plan; the quick plan keeps its
/// one. With 3 rounds their ratios moved by 0.1–0.2 between two table runs on an idle machine
/// (tmpfs 200 MiB fsync 0.86 then 1.05; `x -j 2` against `-j 1`, the same single decoder on 2
/// cores, 1.01 then 1.13), around goals of 1.0 and 1.25.
pub(super) const SHORT_ROUNDS: usize = 9;

/// The rounds the short rows use when the plan asks for `runs`.
pub(super) fn short_rounds(runs: usize) -> usize {
    super::measure::rounds(runs, SHORT_ROUNDS)
}

pub(super) fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, "create", e))?;
    }
    std::fs::write(path, bytes).map_err(|e| Error::io(path, "write", e))
}

pub(super) fn size_of(path: &Path) -> Result<u64> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| Error::io(path, "stat", e))
}

/// Removes `dirs` below `cwd` and lets the next run create its files as on a disk where
/// nothing was deleted a moment ago: `sync`, drop the page cache where this process may
/// (root), then read `warm` (a shell word list: the archives and the programs the run uses)
/// back into it, so neither side of a pair starts cold.
///
/// Why: ext4 without a journal (the disk of the VMs this bench runs on: no `journal_task`)
/// will not reuse an inode deleted less than 60 s before while its inode-table block is
/// cached (`recently_deleted()` in fs/ext4/ialloc.c), and checks the freed inodes one by one
/// on every create. After removing the previous run's 100,000-file tree, the next extraction
/// paid for that: 20,000 creates of a small file took 2.4–13.5 s right after an `rm -rf`
/// and `sync` (`perf`: `recently_deleted` and `find_get_block_common` under `ext4_create`),
/// and 0.57–0.64 s with the cache dropped first; 7z had looked 5× faster than tar and krypta
/// only by the luck of which block groups its directories landed in.
pub(super) fn clear_fresh(exe: &Path, cwd: &Path, dirs: &[&str], warm: &str) -> Result<()> {
    clear(cwd, dirs)?;
    rustix::fs::sync();
    let dropped = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"1\n"))
        .is_ok();
    if !dropped {
        return Ok(());
    }
    let _ = Command::new("sh")
        .arg("-c")
        .arg(format!("cat {warm} > /dev/null 2>&1"))
        .current_dir(cwd)
        .env("KRYPTA", exe)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    Ok(())
}

/// Removes `dirs` below `cwd` if they exist.
pub(super) fn clear(cwd: &Path, dirs: &[&str]) -> Result<()> {
    for d in dirs {
        let p = cwd.join(d);
        if p.exists() {
            std::fs::remove_dir_all(&p).map_err(|e| Error::io(&p, "remove", e))?;
        }
    }
    Ok(())
}

/// The rows being built, with the columns of the table.
pub(super) struct Rows {
    table: Table,
    /// Where the rows being measured run ("tmpfs" or "disk").
    pub(super) here: &'static str,
}

impl Rows {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push(
        &mut self,
        what: String,
        place: &str,
        k: String,
        peer: String,
        ratio: Option<f64>,
        goal: Goal,
        ms: Option<f64>,
    ) {
        self.table.rows.push(vec![
            Cell::text(what),
            Cell::text(place),
            Cell::text(k),
            Cell::text(peer),
            ratio.map_or(Cell::Missing, |r| Cell::num(r, 2)),
            Cell::text(goal.text()),
            goal.met(ratio, ms),
        ]);
    }

    /// A time comparison: krypta's and the peer's median seconds.
    pub(super) fn times(
        &mut self,
        what: String,
        place: &str,
        peer: &str,
        k: Run,
        p: Run,
        goal: Goal,
    ) {
        self.push(
            what,
            place,
            format!("{:.3} s", k.secs),
            format!("{peer}: {:.3} s", p.secs),
            Some(k.secs / p.secs.max(1e-9)),
            goal,
            None,
        );
    }

    /// A line of the table's reading (computed from the numbers measured).
    pub(super) fn note(&mut self, line: String) {
        self.table.reading.push(line);
    }

    /// A peak-memory comparison, when both are known.
    pub(super) fn memory(&mut self, what: String, peer: &str, k: Run, p: Run, goal: Goal) {
        let (Some(a), Some(b)) = (k.rss_kib, p.rss_kib) else {
            return;
        };
        self.push(
            what,
            self.here,
            format!("{a} KiB"),
            format!("{peer}: {b} KiB"),
            Some(a as f64 / (b as f64).max(1.0)),
            goal,
            None,
        );
    }
}

/// Table 15 (see the module documentation).
pub fn table15(
    fx: &[Fixture],
    plan: &Plan,
    quick: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<Table> {
    let exe = std::env::current_exe().map_err(|e| Error::io("krypta", "locate", e))?;
    let sizes = Sizes::new(quick);
    let runs = plan.runs;
    let mut rows = Rows {
        here: "tmpfs",
        table: Table::new(
            NUMBER,
            "Where people wait: krypta against the peer, in the same run",
            format!(
                "each row one comparison of issue 13, krypta (this binary, its defaults \
                 unless the row says) and the peer as child processes timed alike, \
                 alternating A B, B A (each first in every other round), medians of {runs} run(s) each ({} for the encrypted \
                 writes and the extractions of a tree and of one large file; level 9 \
                 compression: one run each); ratio = krypta / peer (time, size or peak \
                 memory: below 1 is krypta ahead), except the rows marked \"context\", \
                 which time a peer against itself (from a pipe / from the file); peak memory \
                 from /usr/bin/time. Small \
                 files: {} files of 2–30 words in 100 directories; tree: {} MB of the fixtures cut into files of \
                 1–64 KiB; large file: {} MB of the fixtures; level 9: {} MB of the text \
                 fixture repeated.",
                short_rounds(runs),
                sizes.small_files,
                sizes.tree_mb,
                sizes.large_mb,
                sizes.level9_mb
            ),
            &[
                "comparison",
                "where",
                "krypta",
                "peer",
                "krypta / peer",
                "goal",
                "met",
            ],
        ),
    };
    let places = places(sizes.scratch_bytes())?;
    let tools_missing: Vec<&str> = ["zstd", "tar", "age", "age-keygen"]
        .into_iter()
        .filter(|t| !have(t))
        .collect();
    for place in &places {
        let cwd = place.dir.path();
        rows.here = place.name;
        writes(&exe, cwd, place.name, &sizes, runs, &mut rows, progress)?;
        small_files(&exe, cwd, place.name, &sizes, runs, &mut rows, progress)?;
    }
    if let Some(first) = places.first() {
        let cwd = first.dir.path();
        rows.here = first.name;
        extraction(&exe, cwd, fx, &sizes, runs, &mut rows, progress)?;
        level9(&exe, cwd, fx, &sizes, runs, &mut rows, progress)?;
    }
    progress("table 15: argon2id");
    argon2id(&exe, places[0].dir.path(), runs, &mut rows)?;
    let t = &mut rows.table;
    if !tools_missing.is_empty() {
        t.reading.push(format!(
            "Not installed here, so their rows are missing: {}.",
            tools_missing.join(", ")
        ));
    }
    let (met, total) = t.rows.iter().fold((0, 0), |(m, n), r| match r.last() {
        Some(Cell::Text(s)) if s == "yes" => (m + 1, n + 1),
        Some(Cell::Text(s)) if s == "no" => (m, n + 1),
        _ => (m, n),
    });
    t.reading
        .push(format!("{met} of the {total} goals are met in this run."));
    Ok(rows.table)
}

/// tmpfs first (`/dev/shm`, when it has `need` bytes free), then the temporary directory when it is on another device.
fn places(need: u64) -> Result<Vec<Place>> {
    use std::os::unix::fs::MetadataExt;
    let mk = |base: &Path| {
        tempfile::Builder::new()
            .prefix("krypta-bench-15-")
            .tempdir_in(base)
            .map_err(|e| Error::io(base, "create a directory in", e))
    };
    let shm = Path::new("/dev/shm");
    let tmp: PathBuf = std::env::temp_dir();
    let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    let mut out = Vec::new();
    // tmpfs is memory: used only when it has room for the largest run (a container's default
    // /dev/shm is 64 MiB).
    let room =
        |p: &Path| rustix::fs::statvfs(p).map_or(0, |v| v.f_bavail.saturating_mul(v.f_frsize));
    let shm_ok = shm.is_dir() && room(shm) >= need;
    if shm_ok {
        out.push(Place {
            name: "tmpfs",
            dir: mk(shm)?,
        });
    }
    if !shm_ok || dev(shm) != dev(&tmp) {
        out.push(Place {
            name: "disk",
            dir: mk(&tmp)?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_lines_give_peak_memory_and_cpu_seconds() {
        let (rss, cpu) = parse_time_line("140108 0.32 0.51");
        assert_eq!(rss, Some(140108));
        assert!((cpu.unwrap() - 0.83).abs() < 1e-9, "{cpu:?}");
        assert_eq!(parse_time_line("140108"), (Some(140108), None));
        assert_eq!(parse_time_line("Command exited"), (None, None));
        let r = |secs, cpu| Run {
            secs,
            rss_kib: Some(10),
            cpu_secs: cpu,
        };
        let m = Run::median_of(&[r(3.0, Some(1.0)), r(1.0, None), r(2.0, Some(5.0))]);
        assert_eq!((m.secs, m.rss_kib), (2.0, Some(10)));
        assert_eq!(
            m.cpu_secs,
            Some(3.0),
            "the median of the runs that reported it"
        );
    }

    #[test]
    fn goals_judge_the_ratio_or_the_time_and_say_nothing_without_a_value() {
        assert_eq!(Goal::AtMost(1.0).met(Some(0.93), None), Cell::text("yes"));
        assert_eq!(Goal::AtMost(1.0).met(Some(1.01), None), Cell::text("no"));
        assert_eq!(Goal::AtMost(1.2).met(None, None), Cell::Missing);
        assert_eq!(
            Goal::AtMostMs(350.0).met(None, Some(470.0)),
            Cell::text("no")
        );
        assert_eq!(
            Goal::AtMostMs(350.0).met(Some(9.0), Some(340.0)),
            Cell::text("yes")
        );
        assert_eq!(Goal::Info.met(Some(0.5), Some(1.0)), Cell::Missing);
        assert_eq!(Goal::AtMost(0.625).text(), "≤ 0.625");
        assert_eq!(Goal::AtMost(1.0).text(), "≤ 1");
        assert_eq!(Goal::AtMost(1.25).text(), "≤ 1.25");
    }

    #[test]
    fn the_small_file_tree_is_the_same_on_every_machine() {
        let a = tempfile::tempdir().unwrap();
        let bytes = small_tree(a.path(), 300).unwrap();
        let first = std::fs::read_to_string(a.path().join("d000/f000000.txt")).unwrap();
        let words = first.split_whitespace().count();
        assert!((2..=30).contains(&words), "{first:?}");
        assert_eq!(std::fs::read_dir(a.path()).unwrap().count(), 100);
        let b = tempfile::tempdir().unwrap();
        assert_eq!(small_tree(b.path(), 300).unwrap(), bytes);
        assert_eq!(
            std::fs::read(b.path().join("d042/f000142.txt")).unwrap(),
            std::fs::read(a.path().join("d042/f000142.txt")).unwrap()
        );
    }
}
