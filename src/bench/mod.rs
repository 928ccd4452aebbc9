//! `krypta bench`: the benchmark tables of `BENCHMARKS.md` (codec, BCJ, hashing, encryption
//! overhead, stage cost, compute tax, peers), measured through krypta's real code paths on
//! deterministic fixtures, and the fixture generator (`--make-fixtures`).
//!
//! Tables: 1 codec (ratio, compress and extract MB/s per input × level), 2 BCJ gain, 3
//! hashing, 4 encryption overhead (per MB and one-time), 5 stage cost, 6 compute tax end to
//! end, 7 peers (zstd, xz, gzip, 7z, age when installed); then, when tables 1, 3, 4 and 6
//! ran, 8: the side-by-side with VaptVupt's published figures; 9–11 recovery data (size and
//! speed, its cost inside `c -l 3`, par2 side by side); 12 and 13 object storage
//! (upload/download vs the AWS CLI and a local file; one file of a large archive), when a
//! server is available (see `store_tables`); 14 delta archives on real version pairs
//! (krypta's modes beside xdelta3 and `zstd --patch-from`, DeltaGlider's figures quoted; see
//! `delta_tables`); 15 where people wait: each comparison of issue 13 (writes, small files,
//! extraction, level 9, Argon2id) against its peer in the same run, with the goal (see
//! `wait_tables`). MB = 10^6 bytes.

mod archive_tables;
mod codec_tables;
mod compare;
mod crypto_tables;
mod delta_reading;
mod delta_report;
mod delta_tables;
mod elf;
pub mod fixtures;
mod measure;
pub mod pairs;
mod peers;
mod recovery_tables;
mod report;
mod sha256_scalar;
mod store_tables;
mod synth;
mod wait_rows;
mod wait_tables;
mod wait_writes;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub use fixtures::{Fixture, load_fixtures};
pub use measure::Machine;
pub use report::{BenchReport, Cell, Table};

/// What `krypta bench` should run.
#[derive(Debug, Clone, Default)]
pub struct BenchOptions {
    /// Small inputs and one run per measurement: finishes in under a minute on 2 cores.
    pub quick: bool,
    /// Table numbers (1..=7, 9..=15) to run; empty = all.
    pub tables: Vec<u8>,
    /// The user's own files: when given, table 1 runs on them (and nothing else).
    pub files: Vec<PathBuf>,
    /// Read fixtures from (or make them in) this directory; None = make them in memory.
    pub fixtures_dir: Option<PathBuf>,
    /// Threads of the "all cores" columns; 0 = all cores.
    pub jobs: usize,
}

/// Sizes and repetitions of one run (full or `--quick`).
#[derive(Debug, Clone)]
pub struct Plan {
    /// Runs per measurement (the median is reported).
    pub runs: usize,
    /// Bytes of each fixture used (fixtures are cut to this).
    pub fixture_len: usize,
    /// Buffer hashed by table 3, bytes.
    pub hash_len: usize,
    /// The large archive of table 4, MB (the small one is 1 MB).
    pub overhead_mb: usize,
    /// Levels of table 2.
    pub bcj_levels: Vec<u8>,
    /// Table 6 input, MB at least: the fixtures repeated until they reach it, so the
    /// pipeline's start and drain (a block or two each) weigh little.
    pub tax_mb: usize,
    /// Fixtures of table 7.
    pub peer_fixtures: Vec<&'static str>,
    /// P of table 9 (recovery data speed), MB.
    pub recovery_mb: usize,
    /// Input of tables 9 and 10 (object storage), MB.
    pub s3_mb: usize,
    /// Bytes of each version of a table 14 pair used (cut to this).
    pub pair_len: usize,
}

impl Plan {
    /// The full plan (median of 3, whole fixtures) or the quick one (1 MB inputs, one run).
    pub fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                runs: 1,
                fixture_len: 1_000_000,
                hash_len: 8_000_000,
                overhead_mb: 8,
                bcj_levels: vec![1, 3, 9],
                tax_mb: 8,
                peer_fixtures: vec!["text", "binary"],
                recovery_mb: 8,
                s3_mb: 64,
                pair_len: 8_000_000,
            }
        } else {
            Plan {
                runs: 3,
                fixture_len: usize::MAX,
                hash_len: 64_000_000,
                overhead_mb: 40,
                bcj_levels: (1..=9).collect(),
                tax_mb: 200,
                peer_fixtures: fixtures::NAMES.to_vec(),
                // Two full 128 MiB segments and a short one, so "all jobs" repairs in parallel.
                recovery_mb: 280,
                s3_mb: 1000,
                pair_len: usize::MAX,
            }
        }
    }
}

/// Writes the five fixtures and their manifest into `dir` (see [`fixtures`]).
pub fn make_fixtures(dir: &Path, progress: &mut dyn FnMut(&str)) -> Result<()> {
    fixtures::make_fixtures(dir, progress)
}

/// Runs the selected tables and returns their numbers. `progress` receives one line per
/// step (for a terminal status line). Errors: Usage for a table outside 1..=7 and 9..=15 or
/// missing fixture inputs, Io for files.
pub fn run(opts: &BenchOptions, progress: &mut dyn FnMut(&str)) -> Result<BenchReport> {
    if let Some(bad) = opts
        .tables
        .iter()
        .find(|t| !(1..=7).contains(*t) && !(9..=15).contains(*t))
    {
        return Err(Error::Usage(format!(
            "there is no table {bad}: tables are 1 to 7 and 9 to 15 (8 is computed from 1, 3, 4 and 6)"
        )));
    }
    let plan = Plan::new(opts.quick);
    let jobs = if opts.jobs == 0 {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    } else {
        opts.jobs
    };
    let machine = Machine::detect(jobs);
    let wants = |n: u8| opts.tables.is_empty() || opts.tables.contains(&n);
    let mut report = BenchReport {
        machine,
        quick: opts.quick,
        runs: plan.runs,
        fixtures: Vec::new(),
        tables: Vec::new(),
    };
    if !opts.files.is_empty() {
        let files = opts
            .files
            .iter()
            .map(|p| fixtures::user_file(p))
            .collect::<Result<Vec<_>>>()?;
        report.fixtures = files
            .iter()
            .map(|f| format!("`{}`: {} bytes, {}", f.name, f.data.len(), f.origin))
            .collect();
        report
            .tables
            .push(codec_tables::table1(&files, &plan, progress)?);
        return Ok(report);
    }
    let needs_fixtures = [1, 2, 3, 5, 6, 7, 10, 11, wait_tables::NUMBER]
        .iter()
        .any(|&n| wants(n));
    let (all, skipped) = if needs_fixtures {
        load_fixtures(opts.fixtures_dir.as_deref(), progress)?
    } else {
        (Vec::new(), Vec::new())
    };
    let fx: Vec<Fixture> = all.iter().map(|f| f.truncated(plan.fixture_len)).collect();
    report.fixtures = fx
        .iter()
        .map(|f| format!("`{}`: {} bytes ({})", f.name, f.data.len(), f.origin))
        .chain(skipped)
        .collect();
    let mixed: Vec<u8> = fx.iter().flat_map(|f| f.data.iter().copied()).collect();
    if wants(1) {
        report
            .tables
            .push(codec_tables::table1(&fx, &plan, progress)?);
    }
    if wants(2)
        && let Some(bin) = fx.iter().find(|f| f.name == "binary")
    {
        report
            .tables
            .push(codec_tables::table2(bin, &plan, progress)?);
    }
    if wants(3) {
        let buf = fixtures::random(plan.hash_len);
        report
            .tables
            .push(crypto_tables::table3(&buf, &plan, jobs, progress)?);
    }
    if wants(4) {
        report.tables.push(archive_tables::table4(&plan, progress)?);
    }
    if wants(5) {
        report
            .tables
            .push(crypto_tables::table5(&mixed, &plan, jobs, progress)?);
    }
    if wants(6) {
        report
            .tables
            .push(archive_tables::table6(&fx, &plan, jobs, progress)?);
    }
    if wants(7) {
        let peers: Vec<Fixture> = fx
            .iter()
            .filter(|f| plan.peer_fixtures.contains(&f.name.as_str()))
            .cloned()
            .collect();
        report.tables.push(peers::table7(&peers, &plan, progress)?);
    }
    if wants(9) {
        report
            .tables
            .push(recovery_tables::table9(&plan, jobs, progress)?);
    }
    if wants(10) {
        report
            .tables
            .push(recovery_tables::table10(&fx, &plan, jobs, progress)?);
    }
    if wants(11) {
        report
            .tables
            .push(recovery_tables::table11(&fx, &plan, progress)?);
    }
    if let Some(t) = compare::side_by_side(&report.tables) {
        report.tables.push(t);
    }
    if wants(12) || wants(13) {
        let t = store_tables::tables(&plan, progress)?;
        report
            .tables
            .extend(t.into_iter().filter(|t| wants(t.number)));
    }
    if wants(delta_report::NUMBER) {
        report.tables.push(delta_tables::table14(
            opts.fixtures_dir.as_deref(),
            &plan,
            jobs,
            progress,
        )?);
    }
    if wants(wait_tables::NUMBER) {
        report
            .tables
            .push(wait_tables::table15(&fx, &plan, opts.quick, progress)?);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_numbers_outside_the_list_are_usage_errors() {
        for bad in [8, 16] {
            let opts = BenchOptions {
                tables: vec![bad],
                ..Default::default()
            };
            let err = run(&opts, &mut |_| {}).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "there is no table {bad}: tables are 1 to 7 and 9 to 15 (8 is computed from 1, 3, 4 and 6)"
                )
            );
        }
    }

    #[test]
    fn user_files_get_table_one_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, b"hello hello hello hello\n".repeat(1000)).unwrap();
        let opts = BenchOptions {
            quick: true,
            files: vec![path],
            ..Default::default()
        };
        let report = run(&opts, &mut |_| {}).unwrap();
        assert_eq!(report.tables.len(), 1);
        assert_eq!(report.tables[0].number, 1);
        assert_eq!(report.tables[0].rows.len(), 4);
        assert_eq!(report.tables[0].rows[0][0], Cell::text("notes.txt"));
        assert_eq!(report.tables[0].rows[0][4], Cell::num(1.0, 3));
    }
}
