//! The `krypta` command line: definitions (`args`), the mapping of validated options onto
//! library calls (one module per command family), and what is printed. `main.rs` maps the
//! library's one error type to exit codes; nothing here chooses an exit code for an error.

mod args;
mod bench;
mod create;
mod keygen;
mod keys;
mod show;
mod size;

use std::os::unix::ffi::OsStrExt;

use krypta::Result;

use crate::Term;
pub use args::Cli;
use args::*;
use bench::bench;
use create::compress;
use keygen::keygen;
use keys::*;
use show::*;

/// Runs the parsed command; returns the exit code for success paths.
pub fn run(cli: Cli) -> Result<u8> {
    let quiet = cli.quiet();
    let verbose = cli.verbose();
    let mut term = Term::new(quiet, verbose);
    if let Some(s) = cli.store() {
        krypta::store::configure(krypta::store::StoreSettings {
            endpoint_url: s.endpoint_url.clone(),
        });
    }
    match cli.cmd {
        Command::Compress(a) => compress(a, &mut term, verbose),
        Command::Extract(a) => {
            let open = open_options(&a.keys, &a.archive)?;
            let req = krypta::ExtractRequest {
                output: a.output,
                paths: a.paths.iter().map(|p| p.as_bytes().to_vec()).collect(),
                stdout: a.stdout,
                fs: krypta::fs::extract::ExtractOptions {
                    force: a.force,
                    strip_components: a.strip_components,
                    no_mtime: a.no_mtime,
                    same_permissions: a.same_permissions,
                    ..Default::default()
                },
                salvage: !a.fail_fast,
            };
            let s = krypta::extract(&a.archive, open, req, &mut term)?;
            if verbose {
                eprintln!(
                    "krypta: extracted {} entries, {} files, {} bytes",
                    s.entries, s.files, s.bytes
                );
            }
            Ok(0)
        }
        Command::List(a) => {
            let open = open_options(&a.keys, &a.archive)?;
            let (entries, frames) = if a.b3 {
                krypta::list_with_digests(&a.archive, open, &mut term)?
            } else {
                krypta::list_with(&a.archive, open, &mut term)?
            };
            crate::cli::print_list(&entries, &frames, a.b3, verbose)?;
            Ok(0)
        }
        Command::Test(a) => {
            let open = open_options(&a.keys, &a.archive)?;
            let s = krypta::test_salvaging(&a.archive, open, !a.fail_fast, &mut term)?;
            if !quiet {
                eprintln!(
                    "krypta: {}: OK ({} entries, {} files, {} bytes, {} blocks verified)",
                    a.archive.display(),
                    s.entries,
                    s.files,
                    s.bytes,
                    s.frames
                );
            }
            Ok(0)
        }
        Command::Info(a) => {
            let f = krypta::archive::reader::facts(&a.archive)?;
            for d in &f.details {
                krypta::Reporter::detail(&mut term, d);
            }
            print_info(&a.archive, &f);
            Ok(0)
        }
        Command::Keygen(a) => keygen(a, quiet),
        Command::Kat(a) => {
            let report = match &a.dir {
                Some(d) => krypta::kat::run_dir(d)?,
                None => krypta::kat::run_embedded(),
            };
            print!("{}", report.to_table());
            Ok(if report.all_passed() { 0 } else { 1 })
        }
        Command::Bench(a) => bench(a, quiet),
    }
}
