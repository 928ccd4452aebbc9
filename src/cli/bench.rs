//! `krypta bench`: the benchmark tables on stdout.

use std::io::Write;

use super::args::*;
use krypta::{Error, Result};

/// `krypta bench`: tables on stdout, one status line on stderr when it is a terminal.
pub(crate) fn bench(a: BenchArgs, quiet: bool) -> Result<u8> {
    use std::io::IsTerminal;
    let tty = !quiet && std::io::stderr().is_terminal();
    let mut progress = |m: &str| {
        if tty {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2Kkrypta bench: {m}");
        }
    };
    if let Some(dir) = &a.make_fixtures {
        krypta::bench::make_fixtures(dir, &mut progress)?;
        if tty {
            krypta::to_stderr!();
        }
        return Ok(0);
    }
    let opts = krypta::bench::BenchOptions {
        quick: a.quick,
        tables: a.tables,
        files: a.files,
        fixtures_dir: a.fixtures,
        jobs: a.jobs.unwrap_or(0),
    };
    let report = krypta::bench::run(&opts, &mut progress);
    if tty {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
    }
    let report = report?;
    let text = if a.json {
        format!("{:#}\n", report.to_json())
    } else {
        report.to_markdown()
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| Error::io("<stdout>", "write", e))?;
    Ok(0)
}
