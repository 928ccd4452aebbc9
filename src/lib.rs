//! krypta: an archiver for encrypted, long-lived backups.
//!
//! The pipeline (see `docs/FORMAT.md` for the bytes): inputs are walked into entries,
//! serialised into one logical record stream, cut into blocks, and each block is
//! BCJ-filtered, zstd-compressed and sealed (AES-256-CTR + HMAC-SHA256, or a BLAKE3
//! checksum for unencrypted archives) in parallel, then written strictly in order,
//! followed by the index and an authenticated footer.

// Diagnostics go through `to_stderr!`, output through checked writers: `eprintln!` and
// `println!` panic when the stream fails (stderr on a full disk, stdout to a closed pipe).
#![warn(clippy::disallowed_macros)]

/// `eprintln!` that never panics: a line to stderr, its failure ignored. A warning or a
/// progress line that cannot be shown (stderr on a full disk, a closed log pipe) must not
/// stop a backup or a restore — `eprintln!` panicked there, losing the archive being
/// written. Errors that end the run are printed the same way (there is nowhere else to
/// report them); the exit code still says what happened.
#[macro_export]
macro_rules! to_stderr {
    () => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr().lock());
    }};
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod archive;
pub mod bench;
pub mod closed_stdio;
pub mod codec;
mod create;
pub mod crypto;
mod damage;
pub mod error;
mod extracting;
pub mod format;
pub mod fs;
pub mod kat;
pub mod memory;
pub mod recovery;
mod rekey;
mod repair;
mod repaired;
pub mod store;
pub mod timefmt;

pub use create::{
    CompressRequest, compress, now_or_epoch, reproducible_archive_id, source_date_epoch,
};
pub use damage::{Listing, list_or_salvage};
pub use error::{Error, Result};
pub use extracting::{ExtractRequest, extract};
pub use rekey::{check_output as check_rekey_output, rekey};
pub use repair::{Check, CheckOutcome, RepairOutcome, check_recovery, repair};
pub use repaired::{header_fix_warning, trailing_warning};

use std::io::Write;
use std::path::{Path, PathBuf};

use archive::reader::{Archive, OpenOptions, ScanSummary};
use archive::visit::{ExtractVisitor, StdoutVisitor, VerifyVisitor};
use archive::writer::{ArchiveWriter, WriteOptions, WriteSummary};
use format::index::IndexEntry;
use format::{EntryKind, EntryMeta, Timestamp};

/// Where a library call reports what is not an error: warnings (a file changed while being
/// read, a leading `/` dropped) and progress. The CLI prints them; tests collect them.
pub trait Reporter {
    /// A warning that names the file and the problem.
    fn warn(&mut self, message: &str);
    /// A warning that names an entry a damaged archive lost (not restored, not verified):
    /// part of the run's error, so shown even where warnings are not (`-q`). Default:
    /// [`Reporter::warn`].
    fn lost(&mut self, message: &str) {
        self.warn(message)
    }
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
    /// Which of them name a lost entry ([`Reporter::lost`]), by position.
    lost: Vec<bool>,
}

impl Collect {
    /// Passes the warnings on to `rep`, each as it came ([`Reporter::warn`] or
    /// [`Reporter::lost`]).
    pub fn replay(&self, rep: &mut dyn Reporter) {
        for (i, w) in self.warnings.iter().enumerate() {
            if self.lost.get(i).copied().unwrap_or(false) {
                rep.lost(w);
            } else {
                rep.warn(w);
            }
        }
    }
}

impl Reporter for Collect {
    fn warn(&mut self, message: &str) {
        self.warnings.push(message.to_string());
        self.lost.push(false);
    }
    fn lost(&mut self, message: &str) {
        self.warnings.push(message.to_string());
        self.lost.push(true);
    }
}

/// `-v`: where a remote archive is read from.
fn report_source(ar: &Archive, rep: &mut dyn Reporter) {
    if let Some(d) = ar.source().describe() {
        rep.detail(&d);
    }
}

/// `-v`: what reading a remote archive cost; and, always, what the recovery data repaired
/// or could not ([`heal_warnings`]).
pub(crate) fn report_transfer(ar: &Archive, archive: &Path, rep: &mut dyn Reporter) {
    for w in transfer_warnings(ar, archive, rep) {
        rep.warn(&w);
    }
}

/// [`report_transfer`]'s `-v` detail said, its warnings returned (not said).
fn transfer_warnings(ar: &Archive, archive: &Path, rep: &mut dyn Reporter) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(c) = ar.source().counters() {
        rep.detail(&format!("{}: {}", crate::fs::shown(archive), c.summary()));
        warnings.extend(c.transfer_warning(archive));
    }
    if let Some(base) = ar.base()
        && let Some(c) = base.counters()
    {
        rep.detail(&format!(
            "{}: {}",
            crate::fs::shown(base.path()),
            c.summary()
        ));
        warnings.extend(c.transfer_warning(base.path()));
    }
    warnings.extend(repaired::heal_warnings(ar, archive));
    warnings
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
    /// Content bytes passed on so far (progress: kept files' bytes are read and verified too).
    bytes: u64,
    /// Content bytes of the files made (written to their files, or to stdout), holes
    /// included: the summary's "out" ([`Tap::written`]), as the entries reported done are its
    /// count.
    written: u64,
    /// The current file was kept out when it began.
    file_kept: bool,
    /// The visitor's [`KeptCount`] once the current file began: a file given up on later,
    /// while its data is written (`EFBIG` past the file system's size limit), raises it
    /// before the file's end, and is then not done either.
    kept_at_begin: usize,
}

impl<'a, V: archive::Visitor + KeptCount> Tap<'a, V> {
    fn new(inner: &'a mut V, rep: &'a mut dyn Reporter) -> Self {
        Tap {
            inner,
            rep,
            bytes: 0,
            written: 0,
            file_kept: false,
            kept_at_begin: 0,
        }
    }

    /// `s` with its content bytes (`bytes`, the summary's "out") cut to those of the files
    /// made: a file kept out (`-k`, `--skip-existing`, a conflict) or removed by
    /// `--strip-components` was read and verified, but nothing of it was written.
    fn written(&self, s: Result<ScanSummary>) -> Result<ScanSummary> {
        s.map(|s| ScanSummary {
            bytes: self.written,
            ..s
        })
    }
}

/// How many entries a visitor did not make so far (kept out, stripped, skipped links).
trait KeptCount {
    fn kept(&self) -> usize;
}

impl KeptCount for ExtractVisitor<'_> {
    fn kept(&self) -> usize {
        // Entries the extractor did not make, and hard links skipped with a warning.
        self.ex.not_made_count() + self.warnings.len()
    }
}

impl<W: Write> KeptCount for StdoutVisitor<'_, W> {
    fn kept(&self) -> usize {
        // Hard links whose content was not written (their target was not selected).
        self.warnings.len()
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
            self.kept_at_begin = self.inner.kept();
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
        self.inner.end(meta, size)?;
        self.rep.progress(self.bytes);
        if !self.file_kept && self.inner.kept() == self.kept_at_begin {
            self.written += size;
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
    ar.require_base()?;
    if let Some(w) = ar.base_damage() {
        rep.warn(&w);
    }
    report_source(&ar, rep);
    // With `--signer`, a stream that fails before its signature verified is refused, not
    // salvaged ([`unverifiable_stream`]).
    let salvage = salvage && !ar.strict_stream();
    let r = test_opened(&mut ar, archive, salvage, rep);
    let r = unverifiable_stream(&ar, archive, r);
    let warnings = transfer_warnings(&ar, archive, rep);
    let r = r.and_then(|s| repaired::repairable(&mut ar, archive, s));
    // A warning the error ending the run repeats word for word is not said twice (`t -` of
    // a stream whose recovery data is damaged said the same sentence as a warning and then
    // as the error). Every warning starts with the archive's name and ": ".
    let said = r.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
    for w in warnings {
        let body = w.split_once(": ").map_or(w.as_str(), |(_, b)| b);
        if !said.contains(body) {
            rep.warn(&w);
        }
    }
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
    sw.replay(rep);
    let mut s = s?;
    s.signer = ar.verified_signer().map(|p| p.fingerprint());
    warn_unverified(&s, rep);
    Ok(s)
}

/// With `--signer`, an archive read front to back ([`Archive::strict_stream`]) whose bytes
/// fail before its signature could be verified is refused as a signature that cannot be
/// verified (exit 8), as the same bytes are from a file before anything is used
/// (`archive::reader::signed`): never salvaged past or reported as damage (2, 3, 5). I/O,
/// usage and delta-base errors keep their own codes.
pub(crate) fn unverifiable_stream<T>(ar: &Archive, archive: &Path, r: Result<T>) -> Result<T> {
    match r {
        Err(e) if ar.strict_stream() && matches!(e.exit_code(), 2 | 3 | 5) => {
            let said = e.to_string();
            let shown = format!("{}: ", crate::fs::shown(archive));
            Err(Error::Signature {
                path: archive.into(),
                problem: error::SignatureProblem::Unverifiable {
                    reason: said.strip_prefix(&shown).unwrap_or(&said).to_string(),
                },
            })
        }
        r => r,
    }
}

/// [`Archive::open`], with a warning when keys were given (and allowed past, see
/// [`OpenOptions::allow_unencrypted`]) but the archive is not encrypted: nothing was
/// authenticated, and the key was not used.
pub(crate) fn open_warning(
    archive: &Path,
    open: OpenOptions,
    rep: &mut dyn Reporter,
) -> Result<Archive> {
    open_warning_with(archive, open, rep, |o| Archive::open(archive, o))
}

/// [`open_warning`] with the archive opened by `opener`.
fn open_warning_with(
    archive: &Path,
    open: OpenOptions,
    rep: &mut dyn Reporter,
    opener: impl FnOnce(OpenOptions) -> Result<Archive>,
) -> Result<Archive> {
    let keyed = open.identities.iter().any(|i| !i.is_prompt());
    // A base the key opened (`KRYPTA_PASSWORD`, which serves the base and the archive alike
    // when no `--base-*` key is given): "not used" would be untrue. A base opened with keys of
    // its own, or not encrypted, leaves the key given unused, and that is said (it said "only
    // its base is" of any encrypted base, though the password had opened nothing).
    let encrypted_base = open
        .base
        .as_ref()
        .filter(|b| b.shared_password)
        .map(|b| b.path().to_path_buf());
    let ar = opener(open)?;
    if keyed && !ar.header().encrypted() {
        let key = match &encrypted_base {
            Some(base) => format!("only its base {} is", crate::fs::shown(base)),
            None => "the key given was not used".to_string(),
        };
        rep.warn(&format!(
            "{}: the archive is not encrypted: {key}, and its checksums do not show who wrote it",
            crate::fs::shown(archive)
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
    let mut ar = open_warning(archive, open, rep)?;
    report_source(&ar, rep);
    let ix = if ar.seekable() {
        ar.read_index()?.1
    } else {
        let r = ar.read_index_streaming();
        unverifiable_stream(&ar, archive, r)?
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
    let mut ar = open_warning(archive, open, rep)?;
    report_source(&ar, rep);
    let r = list_digests_opened(&mut ar);
    let r = unverifiable_stream(&ar, archive, r);
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

/// "N bytes follow", of bytes after an archive: past the most a reader reads of them (a
/// stream's, [`archive::reader::TRAILING_SEARCH`]: counted as one more), "more than N bytes
/// follow".
pub fn bytes_follow(n: u64) -> String {
    let most = archive::reader::TRAILING_SEARCH;
    if n > most {
        format!("more than {most} bytes follow")
    } else {
        counted(n, "byte follows", "bytes follow")
    }
}

/// The pronoun for `n` bytes just counted: "it" for one, else "them" ("1 byte follows …:
/// read without it").
pub fn them(n: u64) -> &'static str {
    if n == 1 { "it" } else { "them" }
}

/// `n` and the word for it, singular for one: "1 entry", "2 entries" (the summaries and
/// errors count entries, files, blocks).
pub fn counted(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
