//! `krypta completions SHELL` and `krypta manpage DIR`: shell completion scripts
//! (`clap_complete`) and man pages (`clap_mangen`), both generated from the same clap
//! definitions as `--help` (`super::args`), so they can never disagree with it.

use std::path::Path;

use clap::CommandFactory;

use super::args::Cli;
use krypta::{Error, Result};

/// Prints the completion script for `shell` on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "krypta", &mut out);
    std::io::Write::write_all(&mut std::io::stdout().lock(), &out)
        .map_err(|e| Error::io("<stdout>", "write", e))?;
    Ok(0)
}

/// Writes `krypta.1` and `krypta-COMMAND.1` for every command into `dir` (created if
/// missing; existing pages of those names are replaced). Returns the file names written,
/// sorted.
pub(crate) fn manpages(dir: &Path) -> Result<Vec<String>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .map_err(|e| Error::io(dir, "write man pages into", e))?;
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, "read", e))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("krypta") && n.ends_with(".1"))
        .collect();
    names.sort();
    Ok(names)
}
