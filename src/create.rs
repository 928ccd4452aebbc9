//! `krypta c`: the walk of the inputs into an archive writer and a storage sink, and the
//! creation time and archive id of reproducible archives (`SOURCE_DATE_EPOCH`). Split from
//! `lib.rs` along its seam: everything here writes; the readers stay in `lib.rs`.

use super::*;

use std::collections::HashMap;

/// What `compress` needs beyond the archive options.
pub struct CompressRequest {
    /// Archive path, or `-` for stdout.
    pub output: PathBuf,
    /// Inputs; `-` reads one stream from stdin (stored as the file `stdin`), and so does an
    /// input that is a symbolic link to a pipe or socket (`<(cmd)`: `/dev/fd/63`, stored as
    /// `dev/fd/63`; see `fs::walk`'s streams).
    pub inputs: Vec<PathBuf>,
    /// The directory the inputs are relative to (`-C DIR`): each is read at `DIR/INPUT` and
    /// stored under the name INPUT gives, as if run in DIR; `None`: the current directory.
    pub directory: Option<PathBuf>,
    /// Overwrite an existing output.
    pub force: bool,
    /// `fsync` a local archive and its directory before reporting success (the default;
    /// false for `--no-fsync`): see the fsync policy in `store::local`.
    pub sync: bool,
    /// Follow symlinks (`-L`).
    pub dereference: bool,
    /// Which extended attributes to store (`--no-xattrs`, `--no-acls`; default all).
    pub xattrs: fs::xattr::XattrSelect,
    /// Store numeric owner ids only, no names (`--numeric-owner`).
    pub numeric_owner: bool,
    /// What the walk leaves out (`--exclude`, `--one-file-system`, `--exclude-caches`).
    pub select: fs::select::Selector,
    /// Stop at the first input that cannot be read (`--strict`), writing no archive; without
    /// it, such inputs are skipped, named, and the run ends with [`Error::Incomplete`].
    pub strict: bool,
    /// Archive options.
    pub options: WriteOptions,
}

/// Writes an archive of the inputs to `req.output`: a file, `-` (stdout) or
/// `s3://BUCKET/KEY` (see [`store`]). The archive goes to a [`store::Sink`], which makes it
/// visible under the final name only when complete (a temporary file renamed into place; an
/// upload completed), so a failure never leaves a partial archive under the final name; an
/// existing output is kept unless `force`.
///
/// Errors: IsDirectory (OUTPUT is a directory, with or without `force`, checked first),
/// Exists, Io (naming the file or object), StoreConfig, Usage, OutputIsInput (the
/// existing output would be replaced although the walk reads it: refused even with `force`,
/// before anything is created); NothingArchived when every input was skipped (missing,
/// unreadable, a FIFO, left out): the output is not written and an existing one is kept;
/// `Incomplete` after a complete, valid archive was written when
/// inputs could not be read (and not `strict`), were left out (a different file under a name
/// stored already: `fs::overlap`), changed or vanished while being read.
pub fn compress(req: CompressRequest, rep: &mut dyn Reporter) -> Result<WriteSummary> {
    // First: an OUTPUT that is a directory (arguments swapped) fails before anything else.
    if let Ok(store::Location::Local(p)) = store::Location::parse(&req.output) {
        store::local::refuse_directory(&p)?;
    }
    // Before anything is created: the walk would read the file -f replaces.
    if req.force
        && let Some(path) = fs::select::output_among_inputs(
            &req.output,
            req.directory.as_deref(),
            &req.inputs,
            &req.select,
        )
    {
        return Err(Error::OutputIsInput { path });
    }
    let sink = store::create_sink(&req.output, req.force, req.sync)?;
    if let Some(w) = req
        .options
        .base
        .as_ref()
        .and_then(|b| crate::repaired::base_appended(b))
    {
        rep.warn(&w);
    }
    if let Some(d) = sink.describe() {
        rep.detail(&d);
    }
    let counters = sink.counters();
    let warnings = sink.warnings();
    let details = sink.details();
    let location = req.output.clone();
    let base = req.options.base.clone();
    let r = compress_into(sink, req, rep);
    // The sink is gone (finished, or aborted by its drop): report what it could not.
    if let Ok(mut w) = warnings.lock() {
        for m in w.drain(..) {
            rep.warn(&m);
        }
    }
    if let Ok(mut d) = details.lock() {
        for m in d.drain(..) {
            rep.detail(&m);
        }
    }
    if let Some(c) = counters {
        rep.detail(&format!("{}: {}", crate::fs::shown(&location), c.summary()));
    }
    // A base in object storage: what reading it cost, and a frame changed on the way.
    if let Some(c) = base.as_ref().and_then(|b| b.counters()) {
        let path = base.as_ref().map(|b| b.path()).unwrap_or(&location);
        rep.detail(&format!("{}: {}", crate::fs::shown(path), c.summary()));
        if let Some(w) = c.transfer_warning(path) {
            rep.warn(&w);
        }
    }
    r
}

fn compress_into(
    sink: Box<dyn store::Sink>,
    req: CompressRequest,
    rep: &mut dyn Reporter,
) -> Result<WriteSummary> {
    let out_name = if req.output == Path::new("-") {
        PathBuf::from("<stdout>")
    } else {
        req.output.clone()
    };
    // The files being written (the temporary archive, or the file stdout points to) are never
    // archived, even when they lie inside an input directory. An existing output that the
    // walk reaches is an input: replacing it (with -f) would destroy it, so that is refused
    // (checked before the sink was made, `fs::select::output_among_inputs`, and here again
    // by device and inode for what only the walk finds: -L, bind mounts).
    let own_files = sink.own_files();
    let replaced: Option<(u64, u64)> = if req.output == Path::new("-")
        || store::Location::parse(&req.output).is_ok_and(|l| l.is_remote())
        || store::local::special_output(&req.output).is_some()
    {
        None
    } else {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&req.output)
            .ok()
            .map(|m| (m.dev(), m.ino()))
    };
    let out = sink;
    let mut w = ArchiveWriter::new(out, &out_name, req.options)?;
    let mut changed = 0usize;
    let mut skipped = 0usize;
    // Entries the walk left out by design, each named (`WalkEvent::Omitted`).
    let mut left_out = 0usize;
    // Entries given to the writer: none while inputs were skipped means nothing could be
    // archived, and then no archive replaces the output (`Error::NothingArchived`).
    let mut stored = 0usize;
    let strict = req.strict;
    // Files the walk listed but this thread could not store (opened too late and refused,
    // or the archive itself), by archive path → the later hard link now holding their content.
    // A hard link to one of them is stored as the file, from its own path: the writer would
    // refuse a link to an entry that is not in the archive, and aborting would lose the backup.
    let mut unstored: HashMap<Vec<u8>, Option<Vec<u8>>> = HashMap::new();
    rep.start(None);
    // One walk over all inputs, so hard links are found across them and each path-rewriting
    // note is shown once; a stream (`-`, `<(cmd)`) comes as one entry in its place.
    let opts = fs::walk::WalkOptions {
        dereference: req.dereference,
        xattrs: req.xattrs,
        numeric_owner: req.numeric_owner,
        open_files: true,
    };
    let mut on_event = |ev: fs::walk::WalkEvent| -> Result<()> {
        match ev {
            fs::walk::WalkEvent::Warning(m) => {
                rep.warn(&m);
                Ok(())
            }
            fs::walk::WalkEvent::Omitted(m) => {
                rep.warn(&m);
                left_out += 1;
                Ok(())
            }
            fs::walk::WalkEvent::Skipped(s) => {
                if strict || fs::walk::is_out_of_resources(&s.error) {
                    return Err(s.into_error());
                }
                rep.warn(&s.to_string());
                skipped += 1;
                Ok(())
            }
            fs::walk::WalkEvent::Entry(mut e) => {
                let mut first_of = None;
                if e.meta.kind == EntryKind::Hardlink {
                    match unstored.get(&e.meta.link) {
                        Some(Some(now)) => e.meta.link = now.clone(),
                        Some(None) => {
                            // (Its owner names and attributes were not read: a hard link's
                            // are its first link's. The numeric ids, mode and time are its.)
                            e.meta.kind = EntryKind::File;
                            first_of = Some(std::mem::take(&mut e.meta.link));
                        }
                        None => {}
                    }
                }
                let mut not_stored = |path: &[u8]| {
                    if first_of.is_none() {
                        unstored.insert(path.to_vec(), None);
                    }
                };
                if e.meta.path == fs::walk::ROOT_PATH && format::header::VERSION < 2 {
                    // Format 1 has no root entry (its paths have no `.` component); the
                    // format-2 writer stores it.
                    return Ok(());
                }
                if e.meta.kind != EntryKind::File {
                    w.add_entry(&e.meta)?;
                    stored += 1;
                    rep.entry_done(&e.meta);
                    return Ok(());
                }
                let mut skip = |err: Error| {
                    let ours = matches!(err.root(), Error::Io { source, .. }
                        if fs::walk::is_out_of_resources(source));
                    if strict || ours {
                        return Err(err);
                    }
                    // Vanished or became unreadable since the walk (a stream: could not be
                    // opened, such as a socket other than stdin): skip it, say so.
                    rep.warn(&format!("skipped: {err}"));
                    skipped += 1;
                    Ok(())
                };
                if e.stream {
                    // `-` or `<(cmd)`: read to its end, no size known before.
                    let mut src = match fs::source::open_stream(&e.source) {
                        Ok(s) => s,
                        Err(err) => return skip(err),
                    };
                    w.add_file_with_progress(&e.meta, &mut src, &mut |b| rep.progress(b))?;
                    stored += 1;
                    rep.entry_done(&e.meta);
                    return Ok(());
                }
                let opened = match e.opened.and_then(|f| f.into_source(&e.source)) {
                    Some(src) => Ok(src),
                    None => fs::source::FileSource::open(&e.source, e.size),
                };
                let mut src = match opened {
                    Ok(s) => s,
                    Err(err) => {
                        not_stored(&e.meta.path);
                        return skip(err);
                    }
                };
                // Compared on the open file (its fstat), not the path: no extra system call
                // per file, and no race between the check and the read.
                if replaced == Some(src.dev_ino()) {
                    return Err(Error::OutputIsInput {
                        path: e.source.clone(),
                    });
                }
                if own_files.contains(&src.dev_ino()) {
                    // Named as the output too: the temporary name means nothing to the user.
                    rep.warn(&format!(
                        "{}: skipped: it is the archive being written (to become {})",
                        crate::fs::shown(&e.source),
                        crate::fs::shown(&out_name)
                    ));
                    not_stored(&e.meta.path);
                    return Ok(());
                }
                w.add_file_with_progress(&e.meta, &mut src, &mut |b| rep.progress(b))?;
                stored += 1;
                if let Some(first) = first_of {
                    unstored.insert(first, Some(e.meta.path.clone()));
                }
                if let Some(m) = src.change_warning() {
                    rep.warn(&format!("{}: {m}", crate::fs::shown(&e.source)));
                    changed += 1;
                }
                rep.progress(w.content_bytes());
                rep.entry_done(&e.meta);
                Ok(())
            }
        }
    };
    // The walk runs ahead on its own thread (`fs::ahead` says why) and opens the files.
    fs::walk::raise_descriptor_limit();
    fs::walk_ahead_in(
        req.directory.as_deref(),
        &req.inputs,
        &opts,
        &req.select,
        &mut on_event,
    )?;
    if stored == 0 && skipped + left_out > 0 {
        // Dropping the writer drops the sink unfinished: the temporary file is removed (an
        // upload aborted), nothing is renamed over the output.
        drop(w);
        rep.finish();
        return Err(Error::NothingArchived {
            existed: replaced.is_some(),
            path: req.output,
            count: skipped + left_out,
        });
    }
    let (summary, out) = w.finish()?;
    out.finish()?;
    rep.finish();
    if changed + skipped + left_out > 0 {
        return Err(Error::Incomplete {
            skipped,
            left_out,
            changed,
            summary: Box::new(summary),
        });
    }
    Ok(summary)
}

/// `SOURCE_DATE_EPOCH` (reproducible builds): `None` when unset; a value that is not an
/// integer number of seconds is refused (the reproducible-builds specification asks tools to
/// fail), since it would otherwise give an archive id derived from the current second,
/// neither random nor reproducible.
pub fn source_date_epoch() -> Result<Option<i64>> {
    match std::env::var_os("SOURCE_DATE_EPOCH") {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .and_then(|t| t.trim().parse::<i64>().ok())
            .map(Some)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "SOURCE_DATE_EPOCH={}: not an integer number of seconds since 1970",
                    fs::escape_path(v.as_encoded_bytes())
                ))
            }),
    }
}

/// The creation time to record: `SOURCE_DATE_EPOCH` when set (reproducible builds), else now.
/// (`compress` refuses an unparsable `SOURCE_DATE_EPOCH` first, see [`source_date_epoch`].)
pub fn now_or_epoch() -> Timestamp {
    if let Ok(Some(secs)) = source_date_epoch() {
        return Timestamp { secs, nanos: 0 };
    }
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp {
        secs: d.as_secs() as i64,
        nanos: d.subsec_nanos(),
    }
}

/// A deterministic archive id for reproducible unencrypted archives (`SOURCE_DATE_EPOCH`).
pub fn reproducible_archive_id(epoch: i64) -> [u8; 16] {
    let mut id = [0u8; 16];
    crypto::primitives::blake3_derive_key(
        "krypta 2026 reproducible archive id",
        &epoch.to_le_bytes(),
        &mut id,
    );
    id
}
