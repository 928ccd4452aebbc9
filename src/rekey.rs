//! `krypta rekey` as a library call: open IN, write OUT through a sink with a new stanza set
//! ([`crate::archive::reader::Archive::rekey_into`] does the work).

use std::path::Path;

use crate::archive::reader::{Archive, OpenOptions, RekeyOptions, RekeySummary};
use crate::error::{Error, Result};
use crate::store;

/// What `krypta rekey` refuses about OUT before anything is read or asked (IN opened, a key
/// file read, a password asked for, OUT's new password among them): OUT that is IN (the
/// same file however spelled, the same bucket and key), with or without `force` (Usage); a
/// directory (IsDirectory); an existing local file or link without `force` (Exists).
/// [`rekey`] calls it first; the command calls it before it reads the new keys.
pub fn check_output(input: &Path, output: &Path, force: bool) -> Result<()> {
    let same_object = matches!(
        (store::Location::parse(input), store::Location::parse(output)),
        (Ok(store::Location::S3(a)), Ok(store::Location::S3(b)))
            if a.bucket == b.bucket && a.key == b.key
    );
    if same_object
        || matches!(
            (std::fs::canonicalize(input), std::fs::canonicalize(output)),
            (Ok(a), Ok(b)) if a == b
        )
    {
        return Err(Error::Usage(format!(
            "{}: rekey writes a new archive and reads this one meanwhile, so it cannot write \
             over it: give -o another name, then rename the new archive over the old",
            crate::fs::shown(input)
        )));
    }
    if let Ok(store::Location::Local(p)) = store::Location::parse(output) {
        store::local::refuse_directory(&p)?;
    }
    // An object too (one HEAD request).
    store::refuse_existing(output, force)
}

/// `krypta rekey`: opens `input` with `open`, writes it to `output` (a file, `-` or an
/// object; an existing one only with `force`) with the stanzas of `opts`
/// ([`archive::reader::Archive::rekey_into`]). OUT appears under its name only when complete.
/// Errors: as [`Archive::open`], Usage (unencrypted IN, no new key, OUT is IN), Exists, the
/// reader's errors for a damaged IN, Io.
pub fn rekey(
    input: &Path,
    open: OpenOptions,
    output: &Path,
    force: bool,
    opts: RekeyOptions,
) -> Result<RekeySummary> {
    check_output(input, output, force)?;
    let mut ar = Archive::open(input, open)?;
    // A local OUT takes a local IN's mode and owner, as `repair`'s output does.
    let sink = store::create_sink_like(output, input, force, true)?;
    let (mut summary, sink) = ar.rekey_into(sink, output, opts)?;
    sink.finish()?;
    // OUT is as written either way; IN is not, and its owner should hear it, in the words
    // `x` and `t` use (rekey said nothing of bytes appended to IN, which `t` fails, nor of
    // bytes rebuilt from IN's recovery data, bytes after its recovery section or a damaged
    // section, all of which `t` ends with exit 7).
    summary
        .warnings
        .extend(crate::repaired::heal_warnings(&ar, input));
    // IN in object storage: a frame changed on the way was fetched again.
    if let Some(c) = ar.source().counters() {
        summary.warnings.extend(c.transfer_warning(input));
    }
    Ok(summary)
}
