//! The `krypta` command line: definitions (`args`), the mapping of validated options onto
//! library calls (one module per command family), and what is printed. `main.rs` maps the
//! library's one error type to exit codes; nothing here chooses an exit code for an error.

mod args;
mod args_keys;
mod args_read;
mod bench;
mod clock;
mod create;
mod docs;
mod entries;
mod extract;
mod json;
mod kdf_args;
mod key_text;
mod keygen;
mod keys;
mod read;
mod rekey;
mod repair;
mod show;
mod size;

use krypta::Result;

use crate::Term;
pub use args::Cli;
use args::*;
pub(crate) use create::TotalScan;

/// Parses the command line (clap): the arguments, or clap's error (usage, help, version).
/// The matches are kept for checks over every argument ([`refuse_key_text`]).
pub fn parse() -> std::result::Result<(Cli, clap::ArgMatches), clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let m = Cli::command()
        .try_get_matches()
        .map_err(create::second_directory)?;
    Ok((Cli::from_arg_matches(&m)?, m))
}

/// Refuses key text given where a path belongs, without showing it (`key_text`).
pub fn refuse_key_text(m: &clap::ArgMatches) -> Result<()> {
    use clap::CommandFactory;
    key_text::refuse_key_text_paths(&Cli::command(), m)
}

/// Refuses a key, password or list file named by a closed standard stream, naming the option
/// (`key_text::refuse_closed_stream_files`).
pub fn refuse_closed_stream_files(m: &clap::ArgMatches) -> Result<()> {
    use clap::CommandFactory;
    key_text::refuse_closed_stream_files(&Cli::command(), m)
}

/// Runs the parsed command; returns the exit code for success paths.
pub fn run(cli: Cli) -> Result<u8> {
    let quiet = cli.quiet();
    let verbose = cli.verbose();
    // Refused before anything is read (`krypta::closed_stdio`); an archive for stdout is
    // refused where it is opened (`store::create_sink`), `keygen`'s key line by `keygen`.
    if let Some(what) = cli.stdout_result() {
        krypta::closed_stdio::require(krypta::closed_stdio::Stream::Stdout, what)?;
    }
    let mut term = Term::new(quiet, verbose);
    if let Some(s) = cli.store() {
        krypta::store::configure(krypta::store::StoreSettings {
            endpoint_url: s.endpoint_url.clone(),
        });
    }
    let r = match cli.cmd {
        Command::Compress(a) => create::compress(a, &mut term, verbose),
        Command::Extract(a) => extract::extract(a, &mut term, verbose),
        Command::List(a) => read::list(a, verbose, &mut term),
        Command::Test(a) => read::test(a, &mut term),
        Command::Info(a) => read::info(a, &mut term),
        Command::Repair(a) => repair::repair(a, quiet),
        Command::Keygen(a) => keygen::keygen(a, quiet),
        Command::Rekey(a) => rekey::rekey(a, quiet),
        Command::Kat(a) => {
            let report = match &a.dir {
                Some(d) => krypta::kat::run_dir(d)?,
                None => krypta::kat::run_embedded(),
            };
            write_stdout(&report.to_table())?;
            Ok(if report.all_passed() { 0 } else { 1 })
        }
        Command::Bench(a) => bench::bench(a, quiet),
        Command::Completions(a) => docs::completions(a.shell),
        Command::Manpage(a) => {
            let names = docs::manpages(&a.dir)?;
            if !quiet {
                krypta::to_stderr!(
                    "krypta: wrote {} man pages into {}: {}",
                    names.len(),
                    krypta::fs::shown(&a.dir),
                    names.join(" ")
                );
            }
            Ok(0)
        }
    };
    // `c -v` and `x -v` list on stdout: a listing that could not be written fails the run
    // (after the work, which is done), as every other output does.
    match (r, term.take_stdout_error()) {
        (Ok(_), Some(e)) => Err(e),
        (r, _) => r,
    }
}

/// The `test --json` object for a failed run, when that is the command (`main.rs` prints it
/// with the error it maps to an exit code).
pub fn json_test_failure(
    cli_archive: &Option<std::path::PathBuf>,
    e: &krypta::Error,
    error: &str,
    code: i32,
) {
    if let Some(a) = cli_archive {
        let _ = json::print_object(&json::test_failed(a, e, error, code));
    }
}

impl Cli {
    /// The archive of `krypta t --json ARCHIVE`, if that is the command.
    pub fn json_test_archive(&self) -> Option<std::path::PathBuf> {
        match &self.cmd {
            Command::Test(a) if a.json => Some(a.archive.clone()),
            _ => None,
        }
    }

    /// What is lost when stdout is closed, for the commands whose result goes there as they
    /// run (listings, header facts, reports, extracted content): refused before they start.
    /// Not the `-v` listing of `c` and `x` ([`crate::Term::list_entries`]: the archive or the
    /// files are still made, then the run fails) nor an archive (refused where its sink is
    /// opened).
    fn stdout_result(&self) -> Option<&'static str> {
        match &self.cmd {
            Command::Extract(a) if a.stdout => Some("nothing was extracted"),
            Command::List(_) => Some("nothing was listed"),
            Command::Info(_) => Some("nothing was shown"),
            Command::Test(a) if a.json => Some("nothing was tested"),
            Command::Kat(_) | Command::Bench(_) | Command::Completions(_) => Some(""),
            _ => None,
        }
    }

    /// Whether a reader of stdout may stop early (`| head`) with nothing lost, so a broken
    /// pipe there ends the run quietly: listings, header facts, extracted content
    /// (`x --stdout`), reports. Not where stdout carries an archive (`c -`, `rekey -o -`,
    /// `repair -o -`) or a key (`keygen`): one that did not reach its reader is a failed
    /// write (exit 4), or a backup cut short by `| head -c` would exit 0.
    pub fn stdout_may_close_early(&self) -> bool {
        !matches!(
            self.cmd,
            Command::Compress(_) | Command::Rekey(_) | Command::Keygen(_) | Command::Repair(_)
        )
    }
}

/// Writes `text` to stdout and flushes it: a failure (a reader that closed the pipe, a full
/// disk) is an I/O error naming `<stdout>` (quiet when the reader may close early:
/// `Cli::stdout_may_close_early`), never the panic `println!` gives.
pub(crate) fn write_stdout(text: &str) -> krypta::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| krypta::Error::io("<stdout>", "write", e))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every line of every `--help` fits an 80-column terminal.
    #[test]
    fn help_fits_80_columns() {
        let mut cmd = super::Cli::command().term_width(80);
        cmd.build();
        let mut pages = vec![cmd.render_long_help().to_string()];
        for sub in cmd.get_subcommands_mut() {
            let mut sub = sub.clone().term_width(80);
            pages.push(sub.render_help().to_string());
            pages.push(sub.render_long_help().to_string());
        }
        for page in pages {
            for line in page.lines() {
                assert!(line.chars().count() <= 80, "{} chars: {line}", line.len());
            }
        }
    }
}
