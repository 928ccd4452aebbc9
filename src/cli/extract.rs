//! `krypta x`: the conflict policy flags, the selection (literal or `--wildcards`), the
//! library call and the summary line.

use std::os::unix::ffi::OsStrExt;
use std::time::Instant;

use super::args::*;
use super::keys::open_options;
use super::size::human_bytes;
use crate::Term;
use krypta::fs::conflict::Existing;
use krypta::{Error, Result};

pub(crate) fn extract(a: ExtractArgs, term: &mut Term, verbose: bool) -> Result<u8> {
    // `x` restores into a local directory: `-o s3://…` made a directory named `s3:`.
    if a.output.as_os_str().as_bytes().starts_with(b"s3://") {
        return Err(Error::Usage(format!(
            "-o {}: x restores files into a local directory; s3:// names archives only",
            krypta::fs::shown(&a.output)
        )));
    }
    let mut open = open_options(&a.keys, &a.archive)?;
    open.base = super::keys::open_base_to_read(&a.delta, &a.keys, &a.archive)?;
    let existing = if a.force {
        Existing::Replace
    } else if a.keep_old_files {
        Existing::Keep
    } else if a.skip_existing {
        Existing::Skip
    } else {
        Existing::Refuse
    };
    let d = krypta::fs::extract::ExtractOptions::default();
    let req = krypta::ExtractRequest {
        output: a.output.clone(),
        paths: super::entries::member_args(&a.paths, a.wildcards, a.no_unquote),
        wildcards: a.wildcards,
        stdout: a.stdout,
        fs: krypta::fs::extract::ExtractOptions {
            existing,
            strip_components: a.strip_components,
            no_mtime: a.no_mtime,
            same_permissions: a.same_permissions,
            restore_owner: (d.restore_owner || a.owner.same_owner) && !a.owner.no_same_owner,
            numeric_owner: a.meta.numeric_owner,
            xattrs: a.meta.xattrs(),
            ..d
        },
        salvage: !a.fail_fast,
    };
    if verbose {
        term.list_entries(a.stdout);
    }
    let started = Instant::now();
    let result = krypta::extract(&a.archive, open, req, term);
    let summary = match &result {
        Ok(s) => Some(s.clone()),
        Err(
            Error::KeptExisting { summary, .. }
            | Error::NotMade { summary, .. }
            | Error::Denied { summary, .. },
        ) => Some((**summary).clone()),
        Err(_) => None,
    };
    if let Some(s) = summary
        && !term.is_quiet()
    {
        krypta::to_stderr!(
            "krypta: {}: {} extracted, {} in, {} out ({}), {}",
            krypta::fs::shown(&a.archive),
            krypta::counted(term.entries_done(), "entry", "entries"),
            human_bytes(s.frame_bytes),
            human_bytes(s.bytes),
            super::show::ratio(s.frame_bytes, s.block_bytes),
            super::clock::duration(started.elapsed())
        );
    }
    result
        .map(|_| 0)
        .map_err(|e| super::entries::with_path_hints(e, &a.paths, a.wildcards, a.no_unquote))
}
