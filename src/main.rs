//! The `krypta` command line: parses arguments (clap), calls the library, prints results and
//! maps the library's one error type to the documented exit codes. Nothing else in krypta
//! chooses an exit code or prints to the terminal.

mod cli;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use krypta::{Error, Reporter};

/// Prints warnings and drives a progress bar on stderr (only on a terminal, only after the
/// work has taken about a second, never with `-q`).
pub struct Term {
    quiet: bool,
    verbose: bool,
    bar: Option<ProgressBar>,
    started: Instant,
    total: Option<u64>,
    shown: bool,
}

impl Term {
    fn new(quiet: bool, verbose: bool) -> Self {
        Term {
            quiet,
            verbose,
            bar: None,
            started: Instant::now(),
            total: None,
            shown: false,
        }
    }
}

impl Term {
    /// `-q` was given.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }
}

impl Reporter for Term {
    fn warn(&mut self, message: &str) {
        if !self.quiet {
            let line = format!("krypta: warning: {message}");
            match &self.bar {
                Some(b) if self.shown => b.println(line),
                _ => eprintln!("{line}"),
            }
        }
    }
    fn start(&mut self, total: Option<u64>) {
        self.started = Instant::now();
        self.total = total;
        if self.quiet || !std::io::stderr().is_terminal() {
            return;
        }
        let bar = match total {
            Some(t) => ProgressBar::with_draw_target(Some(t), ProgressDrawTarget::hidden())
                .with_style(
                    ProgressStyle::with_template(
                        "{spinner} {bytes}/{total_bytes} {bar:30} {binary_bytes_per_sec} eta {eta}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                ),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()).with_style(
                ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        self.bar = Some(bar);
    }
    fn progress(&mut self, done: u64) {
        if let Some(b) = &self.bar {
            if !self.shown && self.started.elapsed().as_millis() >= 1000 {
                b.set_draw_target(ProgressDrawTarget::stderr());
                self.shown = true;
            }
            b.set_position(done);
        }
    }
    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
    fn detail(&mut self, message: &str) {
        if self.verbose && !self.quiet {
            let line = format!("krypta: {message}");
            match &self.bar {
                Some(b) if self.shown => b.println(line),
                _ => eprintln!("{line}"),
            }
        }
    }
}

fn main() -> ExitCode {
    // clap exits with 2 on a usage error, but 2 means "authentication failed" here: a bad
    // option is a usage error, exit 1 (README, `--help`). Help and version stay 0.
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // On SIGINT/SIGTERM, remove the temporary files of an unfinished extraction or archive
    // (completed files are already in place) and exit as a shell reports an interrupt.
    let _ = ctrlc::set_handler(|| {
        krypta::fs::cleanup::remove_all();
        std::process::exit(130);
    });
    let verbose = args.verbose();
    let quiet = args.quiet();
    match cli::run(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_stdout(&e) {
                // The reader of our stdout went away (`| head`): stop quietly.
                return ExitCode::SUCCESS;
            }
            let mut stderr = std::io::stderr().lock();
            // An authentication failure reads the same whatever failed (wrong key or tampering,
            // and in which entry); `-v` adds the detail.
            let shown: &Error = match (&e, e.root()) {
                (Error::InEntry { .. }, root @ Error::AuthFailed { .. }) if !verbose => root,
                _ => &e,
            };
            if !(quiet && matches!(e, Error::Incomplete { .. })) {
                let _ = writeln!(stderr, "krypta: {shown}");
            }
            if verbose && let Error::AuthFailed { check, .. } = e.root() {
                let _ = writeln!(stderr, "krypta: (verbose) failed check: {check}");
            }
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// Only a broken pipe on stdout itself ends quietly: one from a connection to object storage
/// or from a FIFO given as OUTPUT is a failed write like any other.
fn is_broken_stdout(e: &Error) -> bool {
    matches!(e.root(), Error::Io { path, source, .. }
        if source.kind() == std::io::ErrorKind::BrokenPipe && path.as_os_str() == "<stdout>")
}
