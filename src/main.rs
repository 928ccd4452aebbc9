//! The `krypta` command line: parses arguments (clap), calls the library, prints results and
//! maps the library's one error type to the documented exit codes. Nothing else in krypta
//! chooses an exit code or prints to the terminal.
//!
//! Signals: SIGINT, SIGTERM and SIGHUP are caught by a thread (`signal-hook`), which puts the
//! terminal back if a password prompt had turned echo off, removes the temporary files of an
//! unfinished extraction or archive (completed files are already in place), and exits with
//! 128 + the signal number, as a shell reports a process killed by it: 130 for Ctrl-C (also
//! at a password prompt), 143 for SIGTERM, 129 for SIGHUP. A second signal while the cleanup
//! still runs (an upload's abort waiting on a stalled store) exits at once, printing what the
//! unfinished cleanup leaves behind (the upload's id and the command that removes it).
//! SIGXFSZ gets a handler that does nothing, so a write past `ulimit -f` is an error (EFBIG)
//! naming the file, exit 4, not a silent death.
//!
//! A standard stream closed when krypta started (`>&-`) is noted before std's runtime puts
//! `/dev/null` in its place (`RECORD_CLOSED_STDIO`, `krypta::closed_stdio`): an archive, data,
//! a key or a listing for a closed stdout, or read from a closed stdin, is refused (exit 4),
//! never written into nothing.

// Diagnostics through `krypta::to_stderr!` (clippy.toml says why).
#![warn(clippy::disallowed_macros)]

mod cli;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use krypta::format::{EntryKind, EntryMeta};
use krypta::{Error, Reporter};

/// Prints warnings, the `-v` listing of entries done, and drives a progress bar on stderr
/// (only on a terminal, only after the work has taken about a second, never with `-q`).
pub struct Term {
    quiet: bool,
    verbose: bool,
    bar: Option<ProgressBar>,
    started: Instant,
    total: Option<u64>,
    shown: bool,
    /// `-v`: list each entry done, on stderr (`true`) or stdout.
    list: Option<bool>,
    /// The size scan that gives `c` its total (`cli::create`).
    scan: Option<Arc<cli::TotalScan>>,
    /// Entries reported done so far.
    done: u64,
    /// The first failed write of the `-v` listing to stdout (not a reader that left early):
    /// the run goes on, then ends with it ([`Term::take_stdout_error`]).
    stdout_error: Option<std::io::Error>,
    /// `-v` asked for a listing on a stdout closed when krypta started ([`Term::list_entries`]).
    listing_closed: bool,
}

impl Term {
    fn new(quiet: bool, verbose: bool) -> Self {
        // `-q` hides warnings: the errors that count what they named must not say "see
        // warnings".
        krypta::error::set_warnings_hidden(quiet);
        Term {
            quiet,
            verbose,
            bar: None,
            started: Instant::now(),
            total: None,
            shown: false,
            list: None,
            scan: None,
            done: 0,
            stdout_error: None,
            listing_closed: false,
        }
    }
}

impl Term {
    /// `-q` was given.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// Whether a progress bar will be drawn (stderr is a terminal, no `-q`).
    pub(crate) fn shows_progress(&self) -> bool {
        !self.quiet && std::io::stderr().is_terminal()
    }

    /// `-v`: print each entry as it is done, as tar does: on stdout, or on stderr when
    /// stdout carries data (`c` to `-`, `x --stdout`).
    /// A stdout closed when krypta started takes no listing: the command's work goes on
    /// (an archive is still written, as by `tar cvf`), then the run fails naming it.
    pub(crate) fn list_entries(&mut self, to_stderr: bool) {
        use krypta::closed_stdio::{Stream, was_closed};
        if !to_stderr && was_closed(Stream::Stdout) {
            self.listing_closed = true;
            return;
        }
        self.list = Some(to_stderr);
    }

    /// The `-v` listing's failed write to stdout, if one failed: the command's work was
    /// done, but the listing the user asked for is incomplete (exit 4, naming `<stdout>`).
    pub(crate) fn take_stdout_error(&mut self) -> Option<Error> {
        if std::mem::take(&mut self.listing_closed) {
            return Some(Error::StreamClosed {
                stream: krypta::closed_stdio::Stream::Stdout,
                what: "the -v listing was not written",
            });
        }
        self.stdout_error
            .take()
            .map(|e| Error::io("<stdout>", "write", e))
    }

    /// Entries written or extracted so far (for summaries: kept ones are not counted).
    pub(crate) fn entries_done(&self) -> u64 {
        self.done
    }

    /// Takes the total (and so the ETA) from a size scan running alongside.
    pub(crate) fn set_total_scan(&mut self, scan: Arc<cli::TotalScan>) {
        self.scan = Some(scan);
    }

    fn bar_style(total: bool) -> ProgressStyle {
        if total {
            ProgressStyle::with_template(
                "{spinner} {bytes}/{total_bytes} {bar:30} {binary_bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
        } else {
            ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} {elapsed} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner())
        }
    }
}

impl Reporter for Term {
    fn warn(&mut self, message: &str) {
        if !self.quiet {
            self.lost(message);
        }
    }
    /// `-q` prints nothing but errors: which entries a damaged archive lost is part of the
    /// error that ends the run ("restored 8 of 9 entries, 1 damaged" alone names none).
    fn lost(&mut self, message: &str) {
        let line = format!("krypta: warning: {message}");
        match &self.bar {
            Some(b) if self.shown => b.println(line),
            _ => krypta::to_stderr!("{line}"),
        }
    }
    fn start(&mut self, total: Option<u64>) {
        self.started = Instant::now();
        self.total = total;
        if self.quiet || !std::io::stderr().is_terminal() {
            return;
        }
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden())
            .with_style(Self::bar_style(total.is_some()));
        if total.is_none() && self.scan.is_some() {
            bar.set_message("(counting)");
        }
        self.bar = Some(bar);
    }
    fn progress(&mut self, done: u64) {
        if self.total.is_none()
            && let (Some(scan), Some(b)) = (&self.scan, &self.bar)
            && scan.done.load(Ordering::Acquire)
        {
            let t = scan.bytes.load(Ordering::Relaxed);
            self.total = Some(t);
            b.set_length(t.max(done));
            b.set_style(Self::bar_style(true));
        }
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
    fn entry_done(&mut self, meta: &EntryMeta) {
        self.done += 1;
        let Some(to_stderr) = self.list else {
            return;
        };
        let mut line = krypta::fs::escape_path(&meta.path);
        if meta.kind == EntryKind::Dir {
            line.push('/');
        }
        let print = || -> std::io::Result<()> {
            if to_stderr {
                krypta::to_stderr!("{line}");
                Ok(())
            } else {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{line}").and_then(|()| out.flush())
            }
        };
        let printed = match &self.bar {
            Some(b) if self.shown => b.suspend(print),
            _ => print(),
        };
        if let Err(e) = printed
            && e.kind() != std::io::ErrorKind::BrokenPipe
            && self.stdout_error.is_none()
        {
            self.stdout_error = Some(e);
        }
    }
    fn detail(&mut self, message: &str) {
        if self.verbose && !self.quiet {
            let line = format!("krypta: {message}");
            match &self.bar {
                Some(b) if self.shown => b.println(line),
                _ => krypta::to_stderr!("{line}"),
            }
        }
    }
}

/// Notes which of descriptors 0, 1, 2 were closed, before std's runtime reopens them on
/// `/dev/null` and a closed stdout swallows an archive (`krypta::closed_stdio` says what
/// stands in their place). An `.init_array` entry runs before `main` and before std's own
/// start-up, on the one thread there is; the function takes no arguments and touches only
/// descriptors 0 to 2 and an atomic.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
#[used]
#[unsafe(link_section = ".init_array")]
static RECORD_CLOSED_STDIO: extern "C" fn() = krypta::closed_stdio::record;

fn main() -> ExitCode {
    krypta::memory::fit_allocator_to_limit();
    // clap exits with 2 on a usage error, but 2 means "authentication failed" here: a bad
    // option is a usage error, exit 1 (README, `--help`). Help and version stay 0.
    let (args, matches) = match cli::parse() {
        Ok(parsed) => parsed,
        Err(e) => {
            if e.use_stderr() {
                let _ = e.print();
                return ExitCode::from(1);
            }
            // Help and version go to stdout: a failed write there (a full disk) is exit 4
            // naming <stdout>, as for every other output, and so is a stdout closed when
            // krypta started (which takes every write: krypta::closed_stdio); a reader that
            // stopped early (`krypta --help | head`) is not an error.
            if let Err(closed) =
                krypta::closed_stdio::require(krypta::closed_stdio::Stream::Stdout, "")
            {
                krypta::to_stderr!("krypta: {closed}");
                return ExitCode::from(closed.exit_code() as u8);
            }
            let printed = e.print().and_then(|()| std::io::stdout().flush());
            return match printed {
                Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                    let failure = Error::io("<stdout>", "write", err);
                    krypta::to_stderr!("krypta: {failure}");
                    ExitCode::from(failure.exit_code() as u8)
                }
                _ => ExitCode::SUCCESS,
            };
        }
    };
    if let Err(e) =
        cli::refuse_key_text(&matches).and_then(|()| cli::refuse_closed_stream_files(&matches))
    {
        krypta::to_stderr!("krypta: {e}");
        return ExitCode::from(e.exit_code() as u8);
    }
    drop(matches);
    handle_signals();
    let verbose = args.verbose();
    let quiet = args.quiet();
    let json_test = args.json_test_archive();
    let may_close_early = args.stdout_may_close_early();
    match cli::run(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if may_close_early && is_broken_stdout(&e) {
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
            cli::json_test_failure(&json_test, &e, &shown.to_string(), e.exit_code());
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// See the module documentation. If the handler cannot be installed the default actions
/// stay (the process dies by the signal, temporary files may remain).
fn handle_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGXFSZ};
    // A write past the file-size limit (`ulimit -f`, RLIMIT_FSIZE) raises SIGXFSZ, whose
    // default action killed krypta without a word (exit 153), the hidden temporary file of a
    // file system without `O_TMPFILE` left behind. With a handler installed the write fails
    // with EFBIG instead, reported as any failed write: the file named, exit 4, temporary
    // files removed. (A handler, unlike SIG_IGN, is reset for any program krypta starts.)
    let _ =
        signal_hook::flag::register(SIGXFSZ, Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("krypta-signals".into())
        .spawn(move || {
            let mut forever = signals.forever();
            let Some(sig) = forever.next() else {
                return;
            };
            // The cleanup runs on a thread of its own, so a second signal is read while an
            // action waits on the network (an upload's abort against a stalled store took a
            // minute): it exits at once, naming what the unfinished actions leave behind.
            if std::thread::Builder::new()
                .spawn(move || clean_up_and_exit(sig))
                .is_err()
            {
                clean_up_and_exit(sig);
            }
            // The same signal again within 50 ms is one interrupt delivered twice, not a
            // user pressing twice: `timeout -s INT` signals the process and then its process
            // group, which holds it, and that second SIGINT skipped the cleanup, leaving a
            // multipart upload behind in 1 run of 3 (h78, session 33).
            let first = std::time::Instant::now();
            for again in forever.by_ref() {
                if again == sig && first.elapsed() < std::time::Duration::from_millis(50) {
                    continue;
                }
                for note in krypta::fs::cleanup::unfinished() {
                    krypta::to_stderr!("{note}");
                }
                std::process::exit(128 + again);
            }
        });
}

/// The interrupt's cleanup: the terminal back as it was, temporary files removed, actions run
/// (`krypta::fs::cleanup`), then exit with 128 + `sig`.
fn clean_up_and_exit(sig: i32) -> ! {
    krypta::crypto::password::restore_terminal();
    krypta::fs::cleanup::remove_all();
    std::process::exit(128 + sig)
}

/// Only a broken pipe on stdout itself ends quietly, and only for the commands whose stdout a
/// reader may close early (`Cli::stdout_may_close_early`): one from a connection to object
/// storage, from a FIFO given as OUTPUT, or under an archive written to stdout is a failed
/// write like any other.
fn is_broken_stdout(e: &Error) -> bool {
    matches!(e.root(), Error::Io { path, source, .. }
        if source.kind() == std::io::ErrorKind::BrokenPipe && path.as_os_str() == "<stdout>")
}
