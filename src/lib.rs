//! krypta: an archiver for encrypted, long-lived backups.
//!
//! The pipeline (see `docs/FORMAT.md` for the bytes): inputs are walked into entries,
//! serialised into one logical record stream, cut into blocks, and each block is
//! BCJ-filtered, zstd-compressed and sealed (AES-256-CTR + HMAC-SHA256, or a BLAKE3
//! checksum for unencrypted archives) in parallel, then written strictly in order,
//! followed by the index and an authenticated footer.

pub mod archive;
pub mod bench;
pub mod codec;
pub mod crypto;
mod damage;
pub mod error;
pub mod format;
pub mod fs;
pub mod kat;
pub mod recovery;
pub mod store;
pub mod timefmt;

pub use error::{Error, Result};

use std::io::Write;
use std::path::{Path, PathBuf};

use archive::reader::{Archive, OpenOptions, ScanSummary};
use archive::visit::{ExtractVisitor, Selection, StdoutVisitor, VerifyVisitor};
use archive::writer::{ArchiveWriter, ReaderSource, WriteOptions, WriteSummary};
use format::index::IndexEntry;
use format::{EntryKind, EntryMeta, Timestamp};

/// Where a library call reports what is not an error: warnings (a file changed while being
/// read, a leading `/` dropped) and progress. The CLI prints them; tests collect them.
pub trait Reporter {
    /// A warning that names the file and the problem.
    fn warn(&mut self, message: &str);
    /// Work started: `total` bytes expected (None when unknown).
    fn start(&mut self, _total: Option<u64>) {}
    /// Bytes done so far.
    fn progress(&mut self, _done: u64) {}
    /// Work finished.
    fn finish(&mut self) {}
    /// An entry was written to the archive (`c`) or extracted (`x`), for `-v` listings.
    fn entry_done(&mut self, _meta: &EntryMeta) {}
    /// A detail for `-v` (where an object is, what a transfer cost). Default: ignored.
    fn detail(&mut self, _message: &str) {}
}

/// A reporter that keeps warnings in memory and shows nothing.
#[derive(Debug, Default)]
pub struct Collect {
    /// The warnings, in order.
    pub warnings: Vec<String>,
}

impl Reporter for Collect {
    fn warn(&mut self, message: &str) {
        self.warnings.push(message.to_string());
    }
}

/// What `compress` needs beyond the archive options.
pub struct CompressRequest {
    /// Archive path, or `-` for stdout.
    pub output: PathBuf,
    /// Inputs; `-` reads one stream from stdin (stored as the file `stdin`).
    pub inputs: Vec<PathBuf>,
    /// Overwrite an existing output.
    pub force: bool,
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
/// Errors: Exists, Io (naming the file or object), StoreConfig, Usage, OutputIsInput (the
/// existing output would be replaced although the walk reads it: refused even with `force`,
/// before anything is created); `Incomplete` after a complete, valid archive was written when
/// inputs could not be read (and not `strict`), changed or vanished while being read.
pub fn compress(req: CompressRequest, rep: &mut dyn Reporter) -> Result<WriteSummary> {
    // Before anything is created: the walk would read the file -f replaces.
    if req.force
        && let Some(path) = fs::select::output_among_inputs(&req.output, &req.inputs, &req.select)
    {
        return Err(Error::OutputIsInput { path });
    }
    let sink = store::create_sink(&req.output, req.force)?;
    if let Some(d) = sink.describe() {
        rep.detail(&d);
    }
    let counters = sink.counters();
    let warnings = sink.warnings();
    let location = req.output.clone();
    let r = compress_into(sink, req, rep);
    // The sink is gone (finished, or aborted by its drop): report what it could not.
    if let Ok(mut w) = warnings.lock() {
        for m in w.drain(..) {
            rep.warn(&m);
        }
    }
    if let Some(c) = counters {
        rep.detail(&format!("{}: {}", location.display(), c.summary()));
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
    let strict = req.strict;
    rep.start(None);
    // One walk over all filesystem inputs, so hard links are found across them and each
    // path-rewriting note is shown once; a `-` input adds the stdin stream after them.
    let fs_inputs: Vec<PathBuf> = req
        .inputs
        .iter()
        .filter(|p| p.as_os_str() != "-")
        .cloned()
        .collect();
    let opts = fs::walk::WalkOptions {
        dereference: req.dereference,
        xattrs: req.xattrs,
        numeric_owner: req.numeric_owner,
    };
    let mut on_event = |ev: fs::walk::WalkEvent| -> Result<()> {
        match ev {
            fs::walk::WalkEvent::Warning(m) => {
                rep.warn(&m);
                Ok(())
            }
            fs::walk::WalkEvent::Skipped(s) => {
                if strict {
                    return Err(s.into_error());
                }
                rep.warn(&s.to_string());
                skipped += 1;
                Ok(())
            }
            fs::walk::WalkEvent::Entry(e) => {
                if e.meta.path == fs::walk::ROOT_PATH && format::header::VERSION < 2 {
                    // Format 1 has no root entry (its paths have no `.` component); the
                    // format-2 writer stores it.
                    return Ok(());
                }
                if e.meta.kind != EntryKind::File {
                    w.add_entry(&e.meta)?;
                    rep.entry_done(&e.meta);
                    return Ok(());
                }
                let mut src = match fs::source::FileSource::open(&e.source, e.size) {
                    Ok(s) => s,
                    Err(err) if strict => return Err(err),
                    Err(err) => {
                        // Vanished or became unreadable since the walk: skip it, say so.
                        rep.warn(&format!("skipped: {err}"));
                        skipped += 1;
                        return Ok(());
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
                    rep.warn(&format!(
                        "{}: skipped: it is the archive being written",
                        e.source.display()
                    ));
                    return Ok(());
                }
                w.add_file_with_progress(&e.meta, &mut src, &mut |b| rep.progress(b))?;
                if let Some(m) = src.change_warning() {
                    rep.warn(&format!("{}: {m}", e.source.display()));
                    changed += 1;
                }
                rep.progress(w.content_bytes());
                rep.entry_done(&e.meta);
                Ok(())
            }
        }
    };
    if !fs_inputs.is_empty() {
        fs::walk::walk_selected(&fs_inputs, &opts, &req.select, &mut on_event)?;
    }
    if req.inputs.iter().any(|p| p.as_os_str() == "-") {
        let meta = EntryMeta {
            path: b"stdin".to_vec(),
            kind: EntryKind::File,
            mode: 0o644,
            mtime: now_or_epoch(),
            uid: rustix::process::getuid().as_raw(),
            gid: rustix::process::getgid().as_raw(),
            link: Vec::new(),
            ..Default::default()
        };
        let mut src = ReaderSource::new(std::io::stdin().lock(), "<stdin>");
        w.add_file_with_progress(&meta, &mut src, &mut |b| rep.progress(b))?;
        rep.entry_done(&meta);
    }
    let (summary, out) = w.finish()?;
    out.finish()?;
    rep.finish();
    if changed + skipped > 0 {
        return Err(Error::Incomplete {
            skipped,
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

/// What `extract` needs.
pub struct ExtractRequest {
    /// Output directory.
    pub output: PathBuf,
    /// Entries to extract (raw bytes); empty = all.
    pub paths: Vec<Vec<u8>>,
    /// `paths` are glob patterns (`--wildcards`, [`archive::visit::Selection::wildcards`]).
    pub wildcards: bool,
    /// Write file contents to stdout instead of creating files.
    pub stdout: bool,
    /// Filesystem options (force, strip components, mtimes, permissions, owners).
    pub fs: fs::extract::ExtractOptions,
    /// Go on past damage (issue 11 §1): restore every entry the damage did not touch and end
    /// with [`Error::Salvaged`]; false stops at the first error (`--fail-fast`).
    pub salvage: bool,
}

/// Extracts an archive (`-` = stdin). Every byte written was verified first; each file is
/// written under a temporary name and renamed only once its digest matched.
///
/// Errors: as [`Archive::open`], plus Corrupt/AuthFailed/Integrity from the data, Io and
/// UnsafePath from the filesystem, Usage when a requested path is not in the archive.
/// Existing names follow [`fs::extract::ExtractOptions::existing`] ([`fs::conflict`]): found
/// before anything is written, [`Error::Conflicts`] (`before_start`); found while
/// extracting, everything else is extracted and each is reported with [`Reporter::warn`],
/// then [`Error::Conflicts`] (refuse or replace), [`Error::KeptExisting`] (keep) or nothing
/// (skip).
pub fn extract(
    archive: &Path,
    open: OpenOptions,
    req: ExtractRequest,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    let mut ar = open_warning(archive, open, rep)?;
    report_source(&ar, rep);
    let r = extract_opened(&mut ar, archive, req, rep);
    report_transfer(&ar, archive, rep);
    r
}

/// `-v`: where a remote archive is read from.
fn report_source(ar: &Archive, rep: &mut dyn Reporter) {
    if let Some(d) = ar.source().describe() {
        rep.detail(&d);
    }
}

/// `-v`: what reading a remote archive cost.
fn report_transfer(ar: &Archive, archive: &Path, rep: &mut dyn Reporter) {
    if let Some(c) = ar.source().counters() {
        rep.detail(&format!("{}: {}", archive.display(), c.summary()));
    }
}

fn extract_opened(
    ar: &mut Archive,
    archive: &Path,
    req: ExtractRequest,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    let mut select = if req.wildcards {
        Selection::wildcards(&req.paths)?
    } else {
        Selection::new(req.paths)
    };
    let (index, mut no_index) = damage::read_index_or_salvage(ar, req.salvage)?;
    let policy = req.fs.existing;
    if !req.stdout
        && let Some((_, ix)) = &index
    {
        // The conflict check before anything is written (fs::conflict).
        let targets = ix
            .entries
            .iter()
            .filter(|e| {
                select.covers(&e.meta.path)
                    && (e.meta.kind != EntryKind::Hardlink || select.covers(&e.meta.link))
            })
            .map(|e| (e.meta.path.as_slice(), e.meta.kind));
        fs::conflict::preflight(&req.output, targets, req.fs.strip_components, policy)?;
    }
    if let Some((_, ix)) = &index {
        rep.start(Some(total_size(&ix.entries)));
    } else {
        rep.start(None);
    }
    // Salvage's warnings, reported once the visitor (which holds `rep` for progress) is done.
    let mut sw = Collect::default();
    let summary = if req.stdout {
        let stdout = std::io::stdout();
        let mut v = StdoutVisitor::new(
            std::io::BufWriter::with_capacity(1 << 20, stdout.lock()),
            &mut select,
        );
        let mut tap = Tap::new(&mut v, rep);
        let mut t = damage::Tracker::new(&mut tap);
        let s = damage::scan_or_salvage(
            ar,
            archive,
            index.as_ref(),
            no_index.take(),
            &mut t,
            req.salvage,
            &mut sw,
        );
        v.out
            .flush()
            .map_err(|e| Error::io("<stdout>", "write", e))?;
        s
    } else {
        let ex = fs::extract::Extractor::new(&req.output, req.fs)?;
        let mut no_progress = |_: u64| {};
        let mut v = ExtractVisitor::new(ex, &mut select, &mut no_progress);
        let mut tap = Tap::new(&mut v, rep);
        let mut t = damage::Tracker::new(&mut tap);
        let s = damage::scan_or_salvage(
            ar,
            archive,
            index.as_ref(),
            no_index.take(),
            &mut t,
            req.salvage,
            &mut sw,
        );
        let warnings = std::mem::take(&mut v.warnings);
        let ExtractVisitor { mut ex, .. } = v;
        for w in &warnings {
            rep.warn(w);
        }
        // Directories (and the root entry) get their metadata after the scan, also after a
        // salvage: what was restored is complete.
        let dirs = ex.apply_dirs();
        let done = s.and_then(|s| dirs.map(|()| s));
        for w in ex.take_warnings() {
            rep.warn(&w);
        }
        'dirs: {
            let s = match done {
                Ok(s) => s,
                Err(e) => break 'dirs Err(e),
            };
            let conflicts = ex.conflicts();
            if !conflicts.is_empty() {
                rep.finish();
                if policy != fs::conflict::Existing::Skip {
                    for c in &conflicts {
                        rep.warn(&c.to_string());
                    }
                }
                match policy {
                    fs::conflict::Existing::Skip => {}
                    fs::conflict::Existing::Keep => {
                        break 'dirs Err(Error::KeptExisting {
                            count: conflicts.len(),
                            summary: Box::new(s),
                        });
                    }
                    fs::conflict::Existing::Refuse | fs::conflict::Existing::Replace => {
                        break 'dirs Err(Error::Conflicts {
                            output: req.output.clone(),
                            count: conflicts.len(),
                            names: conflicts
                                .iter()
                                .take(fs::conflict::SHOWN_CONFLICTS)
                                .map(|c| fs::escape_path(c.path.as_os_str().as_encoded_bytes()))
                                .collect(),
                            before_start: false,
                        });
                    }
                }
            }
            Ok(s)
        }
    };
    for w in &sw.warnings {
        rep.warn(w);
    }
    let summary = summary?;
    rep.finish();
    warn_unverified(&summary, rep);
    let missing = select.unmatched();
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "not found in {}: {}",
            archive.display(),
            missing.join(", ")
        )));
    }
    Ok(summary)
}

/// Full scan, or (with an index and a selection) only the frames holding the selected
/// entries.
fn run_scan(
    ar: &mut Archive,
    index: Option<&(format::footer::Footer, format::index::Index)>,
    v: &mut dyn archive::Visitor,
) -> Result<ScanSummary> {
    match index {
        Some((footer, ix)) => {
            // Ask the visitor which entries it wants, then read only their frames.
            let wanted: Vec<usize> = ix
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| v.wants(&e.meta))
                .map(|(i, _)| i)
                .collect();
            if wanted.len() == ix.entries.len() {
                ar.rewind_to_data()?;
                ar.scan_against(Some((footer, ix)), v)
            } else {
                ar.scan_selected(ix, &wanted, &mut WantAll(v))
            }
        }
        None => ar.scan(v),
    }
}

/// Passes a scan through to a visitor, reporting progress and each entry done
/// ([`Reporter::entry_done`], for `-v`): a non-file once the visitor made it, a file once its
/// digest matched and the visitor took it; an entry the extractor kept out (a conflict) is
/// not reported as done.
struct Tap<'a, V: archive::Visitor + KeptCount> {
    inner: &'a mut V,
    rep: &'a mut dyn Reporter,
    bytes: u64,
    /// The current file was kept out when it began.
    file_kept: bool,
}

impl<'a, V: archive::Visitor + KeptCount> Tap<'a, V> {
    fn new(inner: &'a mut V, rep: &'a mut dyn Reporter) -> Self {
        Tap {
            inner,
            rep,
            bytes: 0,
            file_kept: false,
        }
    }
}

/// How many entries a visitor kept out so far (conflicts of the extractor).
trait KeptCount {
    fn kept(&self) -> usize;
}

impl KeptCount for ExtractVisitor<'_> {
    fn kept(&self) -> usize {
        self.ex.conflict_count()
    }
}

impl<W: Write> KeptCount for StdoutVisitor<'_, W> {
    fn kept(&self) -> usize {
        0
    }
}

impl<V: archive::Visitor + KeptCount> archive::Visitor for Tap<'_, V> {
    fn wants(&mut self, meta: &EntryMeta) -> bool {
        self.inner.wants(meta)
    }
    fn entry(&mut self, meta: &EntryMeta) -> Result<()> {
        let before = self.inner.kept();
        self.inner.entry(meta)?;
        let kept = self.inner.kept() != before;
        if meta.kind == EntryKind::File {
            self.file_kept = kept;
        } else if !kept {
            self.rep.entry_done(meta);
        }
        Ok(())
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        self.inner.data(offset, bytes)?;
        self.bytes += bytes.len() as u64;
        self.rep.progress(self.bytes);
        Ok(())
    }
    fn end(&mut self, meta: &EntryMeta, size: u64) -> Result<()> {
        let before = self.inner.kept();
        self.inner.end(meta, size)?;
        self.rep.progress(self.bytes);
        if !self.file_kept && self.inner.kept() == before {
            self.rep.entry_done(meta);
        }
        Ok(())
    }
    fn abort(&mut self) {
        self.inner.abort()
    }
}

/// Passes everything through, answering `wants` with true (the selection was applied when
/// choosing frames).
pub(crate) struct WantAll<'a>(pub(crate) &'a mut dyn archive::Visitor);

impl archive::Visitor for WantAll<'_> {
    fn wants(&mut self, _meta: &EntryMeta) -> bool {
        true
    }
    fn entry(&mut self, meta: &EntryMeta) -> Result<()> {
        self.0.entry(meta)
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        self.0.data(offset, bytes)
    }
    fn end(&mut self, meta: &EntryMeta, size: u64) -> Result<()> {
        self.0.end(meta, size)
    }
    fn abort(&mut self) {
        self.0.abort()
    }
}

/// Sum of the entries' sizes, bytes, for a progress total. Saturating: the sizes come from
/// the index, which a crafted archive may fill with values whose sum overflows a u64.
fn total_size(entries: &[IndexEntry]) -> u64 {
    entries.iter().fold(0u64, |t, e| t.saturating_add(e.size))
}

/// Reads and verifies everything, writing nothing (`krypta test`).
pub fn test(archive: &Path, open: OpenOptions, rep: &mut dyn Reporter) -> Result<ScanSummary> {
    test_salvaging(archive, open, false, rep)
}

/// [`test`]; with `salvage`, a scan that meets damage goes on past it, names each damaged
/// entry in a warning and ends with [`Error::Salvaged`] ("verified N of M entries, K
/// damaged").
pub fn test_salvaging(
    archive: &Path,
    open: OpenOptions,
    salvage: bool,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    let mut ar = open_warning(archive, open, rep)?;
    report_source(&ar, rep);
    let r = test_opened(&mut ar, archive, salvage, rep);
    report_transfer(&ar, archive, rep);
    r
}

fn test_opened(
    ar: &mut Archive,
    archive: &Path,
    salvage: bool,
    rep: &mut dyn Reporter,
) -> Result<ScanSummary> {
    let (known, no_index) = damage::read_index_or_salvage(ar, salvage)?;
    match &known {
        Some((_, ix)) => {
            rep.start(Some(total_size(&ix.entries)));
            ar.rewind_to_data()?;
        }
        None => rep.start(None),
    }
    let mut sw = Collect::default();
    let mut progress = |b: u64| rep.progress(b);
    let mut v = VerifyVisitor::new(&mut progress);
    let mut t = damage::Tracker::new(&mut v);
    let s = match no_index {
        Some(e) => damage::salvage_without_index(ar, archive, &mut t, "verified", e, &mut sw),
        None => {
            let s = ar.scan_against(known.as_ref().map(|(f, i)| (f, i)), &mut t);
            damage::salvage_if(
                ar,
                archive,
                known.as_ref(),
                &mut t,
                salvage,
                "verified",
                s,
                &mut sw,
            )
        }
    };
    drop(t);
    rep.finish();
    for w in &sw.warnings {
        rep.warn(w);
    }
    let s = s?;
    warn_unverified(&s, rep);
    Ok(s)
}

/// [`Archive::open`], with a warning when keys were given (and allowed past, see
/// [`OpenOptions::allow_unencrypted`]) but the archive is not encrypted: nothing was
/// authenticated, and the key was not used.
fn open_warning(archive: &Path, open: OpenOptions, rep: &mut dyn Reporter) -> Result<Archive> {
    let keyed = open.identities.iter().any(|i| !i.is_prompt());
    let ar = Archive::open(archive, open)?;
    if keyed && !ar.header().encrypted() {
        rep.warn(&format!(
            "{}: the archive is not encrypted: the key given was not used, and its checksums do not show who wrote it",
            archive.display()
        ));
    }
    Ok(ar)
}

/// Names the files whose whole-content digest was skipped (holes beyond the hashing budget).
fn warn_unverified(s: &ScanSummary, rep: &mut dyn Reporter) {
    for p in &s.unverified {
        rep.warn(&format!(
            "{p}: content digest not checked: its holes exceed what this scan may hash ({} GiB plus {} bytes per archive byte read; every stored byte was verified)",
            format::limits::HOLE_HASH_BASE >> 30,
            format::limits::HOLE_HASH_PER_FRAME_BYTE
        ));
    }
}

/// The index entries (`krypta list`): from the index of a file, or by reading a stream to its
/// index (data frames are skipped, not decoded).
pub fn list(archive: &Path, open: OpenOptions) -> Result<(Vec<IndexEntry>, Vec<u32>)> {
    list_with(archive, open, &mut Collect::default())
}

/// [`list`], with `-v` details (a remote archive's location and transfer) to `rep`.
pub fn list_with(
    archive: &Path,
    open: OpenOptions,
    rep: &mut dyn Reporter,
) -> Result<(Vec<IndexEntry>, Vec<u32>)> {
    let mut ar = Archive::open(archive, open)?;
    report_source(&ar, rep);
    let ix = if ar.seekable() {
        ar.read_index()?.1
    } else {
        ar.read_index_streaming()?
    };
    report_transfer(&ar, archive, rep);
    Ok((ix.entries, ix.frame_body_lens))
}

/// [`list`] with every file's BLAKE3 digest (`list --b3`). Format 2 stores no digest for
/// files below 4096 bytes (their bytes are covered by the frame tags), so their content is
/// read and hashed (holes as zeros, as `b3sum` reads the extracted file): on a seekable
/// archive only the frames that hold them, from a pipe the whole stream (then the entries'
/// block locations are not known and are 0). Everything read is verified as `test` verifies
/// it. `-v` details (a remote archive's location and transfer) go to `rep`.
pub fn list_with_digests(
    archive: &Path,
    open: OpenOptions,
    rep: &mut dyn Reporter,
) -> Result<(Vec<IndexEntry>, Vec<u32>)> {
    let mut ar = Archive::open(archive, open)?;
    report_source(&ar, rep);
    let r = list_digests_opened(&mut ar);
    report_transfer(&ar, archive, rep);
    r
}

fn list_digests_opened(ar: &mut Archive) -> Result<(Vec<IndexEntry>, Vec<u32>)> {
    let mut v = archive::visit::DigestVisitor::default();
    if !ar.seekable() {
        ar.scan(&mut v)?;
        return Ok((v.into_entries(), Vec::new()));
    }
    let mut ix = ar.read_index()?.1;
    let wanted: Vec<usize> = ix
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.meta.kind == EntryKind::File && e.digest.is_none())
        .map(|(i, _)| i)
        .collect();
    if !wanted.is_empty() {
        v.only_files = true;
        ar.scan_selected(&ix, &wanted, &mut v)?;
        for (i, (_, _, d)) in wanted.iter().zip(v.found) {
            ix.entries[*i].digest = Some(d);
        }
    }
    Ok((ix.entries, ix.frame_body_lens))
}
