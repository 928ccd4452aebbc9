//! Timing helpers for the bench tables: medians of repeated runs, MB/s, worker pools, and the
//! machine description printed above every table.

use std::time::Instant;

use crate::error::{Error, Result};

/// One megabyte as the tables count it: 10^6 bytes (MB/s = 10^6 bytes per second).
pub const MB: f64 = 1_000_000.0;

/// A run slower than this, seconds, is not repeated: its one timing is the median.
pub const SLOW_RUN_SECS: f64 = 1.5;

/// Median wall time of `runs` calls of `f`, seconds (at least one call; a first call slower
/// than [`SLOW_RUN_SECS`] is not repeated).
pub fn median_secs(runs: usize, f: impl FnMut() -> Result<()>) -> Result<f64> {
    timed(runs, true, f)
}

/// Median wall time of exactly `runs` calls of `f` (at least one), seconds, however slow.
pub fn median_secs_exact(runs: usize, f: impl FnMut() -> Result<()>) -> Result<f64> {
    timed(runs, false, f)
}

fn timed(runs: usize, cut_slow: bool, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut times = Vec::with_capacity(runs.max(1));
    for i in 0..runs.max(1) {
        let t = Instant::now();
        f()?;
        let secs = t.elapsed().as_secs_f64();
        times.push(secs);
        if cut_slow && i == 0 && secs > SLOW_RUN_SECS {
            break;
        }
    }
    Ok(median(&mut times))
}

/// The rounds a table whose runs are short takes when the plan asks for `runs`: at least
/// `floor` in the full plan (its `runs` > 1), the quick plan's one otherwise.
pub fn rounds(runs: usize, floor: usize) -> usize {
    if runs > 1 {
        runs.max(floor)
    } else {
        runs.max(1)
    }
}

/// The order in which round `round` runs `n` interleaved measurements: as given in even
/// rounds, reversed in odd ones, so each runs first as often as last. Why: the run in first
/// place had an edge of up to 5% on this machine (`c -s` of 200 MiB on tmpfs, 2026-12-06:
/// 255.8 against 267.7 ms with the old binary always first; 270.2 / 270.5 against
/// 269.7 / 273.8 ms alternated), and tables 14 and 15 ran krypta first in every round.
pub fn round_order(round: usize, n: usize) -> Vec<usize> {
    if round.is_multiple_of(2) {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    }
}

/// The median of `v` (mean of the two middle values for an even count); 0 for an empty slice.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Throughput, MB/s (10^6 bytes per second); 0 when `secs` is not positive.
pub fn mb_per_sec(bytes: usize, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / MB / secs
    } else {
        0.0
    }
}

/// A rayon pool of exactly `threads` workers.
pub fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| Error::Usage(format!("cannot start {threads} bench threads: {e}")))
}

/// Splits `data` into consecutive blocks of `block` bytes (the last may be shorter).
pub fn blocks(data: &[u8], block: usize) -> Vec<Vec<u8>> {
    data.chunks(block.max(1)).map(<[u8]>::to_vec).collect()
}

/// The machine a report was measured on.
#[derive(Debug, Clone)]
pub struct Machine {
    /// `model name` from /proc/cpuinfo (or "unknown").
    pub cpu: String,
    /// CPU features that matter here, as found: aes, sha_ni, avx2, vaes, avx512f, pclmulqdq.
    pub features: Vec<String>,
    /// Logical cores available to this process.
    pub cores: usize,
    /// Worker threads used for the "all cores" columns.
    pub jobs: usize,
    /// Kernel release (from /proc/sys/kernel/osrelease).
    pub os: String,
    /// 1-minute load average when the run started (from /proc/loadavg).
    pub load: String,
    /// "release" or "debug" (debug numbers are not meaningful).
    pub profile: &'static str,
    /// krypta version.
    pub version: &'static str,
    /// When the run started, UTC.
    pub date: String,
}

/// The CPU features [`Machine::features`] looks for, as /proc/cpuinfo spells them.
const FEATURES: [&str; 6] = ["aes", "pclmulqdq", "sha_ni", "avx2", "vaes", "avx512f"];

impl Machine {
    /// Describes this machine; `jobs` is the thread count of the all-cores columns.
    pub fn detect(jobs: usize) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpuinfo
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        };
        let flags = field("flags").unwrap_or_default();
        let flags: Vec<&str> = flags.split_whitespace().collect();
        let features = FEATURES
            .iter()
            .filter(|f| flags.contains(f))
            .map(|f| f.to_string())
            .collect();
        let first = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|s| s.split_whitespace().next().map(str::to_string))
                .unwrap_or_else(|| "unknown".into())
        };
        Machine {
            cpu: field("model name").unwrap_or_else(|| "unknown".into()),
            features,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            jobs,
            os: format!("Linux {}", first("/proc/sys/kernel/osrelease")),
            load: first("/proc/loadavg"),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            version: env!("CARGO_PKG_VERSION"),
            date: crate::crypto::boxkey::utc_timestamp(std::time::SystemTime::now()),
        }
    }
}

/// Whether the peer tool `tool` is on `PATH` (`command -v`): the tables leave out, and name,
/// the rows of a peer that is not installed.
pub fn have(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// CPU seconds (user + system) of this process's waited-for children so far
/// (`getrusage(RUSAGE_CHILDREN)`, microseconds); 0 where it cannot be read.
pub(super) fn child_cpu_secs() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 + v.tv_usec() as f64 / 1e6;
        t(u.user_time()) + t(u.system_time())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_the_order_so_each_runs_first_as_often_as_last() {
        assert_eq!(round_order(0, 3), [0, 1, 2]);
        assert_eq!(round_order(1, 3), [2, 1, 0]);
        assert_eq!(round_order(2, 2), [0, 1]);
        assert_eq!(round_order(3, 2), [1, 0]);
        let firsts = (0..10).filter(|&r| round_order(r, 2)[0] == 0).count();
        assert_eq!(firsts, 5);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn mb_per_sec_counts_decimal_megabytes() {
        assert_eq!(mb_per_sec(2_000_000, 0.5), 4.0);
        assert_eq!(mb_per_sec(1, 0.0), 0.0);
    }

    #[test]
    fn fast_runs_are_repeated_the_requested_times() {
        let mut calls = 0;
        median_secs(5, || {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, 5);
    }

    #[test]
    fn blocks_cover_the_input_in_order() {
        let b = blocks(&[1, 2, 3, 4, 5], 2);
        assert_eq!(b, vec![vec![1, 2], vec![3, 4], vec![5]]);
    }
}
