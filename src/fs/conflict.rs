//! The conflict policy of extraction: what happens when an entry's name is already taken in
//! the output directory, checked before anything is written where the archive allows it.
//!
//! Decisions (README "Restoring into a tree that is not empty", `krypta x --help`):
//! - **Never abort part-way.** When the archive is a file (it has an index), every selected
//!   entry's name is looked up in the output before anything is written ([`preflight`]):
//!   one `lstat` per entry, through the same no-follow directory chain as extraction, and
//!   skipped entirely when the output is empty or missing (a fresh restore pays nothing).
//!   Without `-k`, `--skip-existing` or `-f`, any existing file in the way refuses the whole
//!   extraction with the list of names ([`crate::Error::Conflicts`], exit 1): nothing was
//!   written, and the user chooses. Why up front rather than "go on and report at the end":
//!   at 3 a.m. a half-restored tree mixing old and new files is worse than a refusal that
//!   names every file in the way and costs nothing to retry with the right flag. A conflict
//!   that cannot be foreseen (an archive read from a pipe, a file created meanwhile, two
//!   entries of one name) does not stop the run either: the existing file is kept, the run
//!   goes on, and every such name is reported at the end (exit 1).
//! - `-k/--keep-old-files` ([`Existing::Keep`]): existing files are kept and each is named in
//!   a warning, everything else is extracted, and the exit code is 6 (GNU tar's `-k` also
//!   reports them and exits non-zero; 6 says "finished, some items skipped, each named").
//! - `--skip-existing` ([`Existing::Skip`]): the same, silently, exit 0 (tar's
//!   `--skip-old-files`); but the entries an existing file cost besides itself (below a kept
//!   non-directory, hard links to a kept file) are named, exit 6 (`Error::NotMade`).
//! - `-f/--force` ([`Existing::Replace`]): existing files and symbolic links are replaced
//!   atomically (new inode renamed over the name; never truncated or written through), a
//!   file where a directory entry goes is removed first. A directory where a file goes is
//!   never replaced: the check refuses it up front, like a kept file otherwise.
//! - An existing directory is reused for a directory entry under every policy. By default and
//!   with `-f` it gets the archive's metadata (tar's `--overwrite-dir`); with `-k` and
//!   `--skip-existing` ([`Existing::keeps_dirs`]) one that existed before the run keeps its
//!   own, silently, as the output directory does for the root entry `.`: "keep what is
//!   there". Directories the run creates (for an entry or as a parent) get the archive's.
//! - A symbolic link in the output at a parent position is refused up front under every
//!   policy ([`crate::Error::UnsafePath`], exit 3): extraction never goes through one. The
//!   exception is a link at the name of a directory entry of the same archive: that entry is
//!   a conflict (kept, so nothing goes below it) or, with `-f`, the link is replaced by a
//!   real directory before anything is written below it.
//! - Entries below a kept non-directory (the output has a file `d`, the archive `d/x`), and
//!   hard links whose target was kept, cannot be made; they are reported with the kept
//!   names and counted the same way.

use std::collections::HashSet;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{FileType, Mode, OFlags, openat};
use rustix::io::Errno;

use super::confine::{self, lstat_type};
use super::dirchain::DirChain;
use super::names::escape_path;
use crate::format::entry::{EntryKind, ROOT_PATH};
use crate::{Error, Result};

/// What to do with an existing name (see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Existing {
    /// Refuse up front; report conflicts found later and exit 1 (the default).
    #[default]
    Refuse,
    /// Keep existing files, name each, exit 6 (`-k`).
    Keep,
    /// Keep existing files silently (`--skip-existing`).
    Skip,
    /// Replace existing files atomically (`-f`).
    Replace,
}

impl Existing {
    /// Whether a directory that existed before the run keeps its metadata: with `-k` and
    /// `--skip-existing` ("keep what is there"). By default and with `-f` an existing
    /// directory gets the archive's owner, mode, times and attributes (tar's default
    /// `--overwrite-dir`).
    pub fn keeps_dirs(self) -> bool {
        matches!(self, Existing::Keep | Existing::Skip)
    }
}

/// Why an entry was not written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// A file, link or other non-directory has the name.
    Exists,
    /// A directory has the name of a non-directory entry (never replaced).
    IsDirectory,
    /// A parent of the entry is an existing non-directory.
    NotADirectory,
    /// A hard link whose target was kept (it may only point at a file extracted now).
    LinkTargetKept(Vec<u8>),
}

/// One entry not written because of what is in the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The name in the output (the existing file, or the link that could not be made).
    pub path: PathBuf,
    /// Why.
    pub reason: Reason,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = escape_path(self.path.as_os_str().as_bytes());
        match &self.reason {
            Reason::Exists => write!(f, "{p}: exists; kept, not replaced"),
            Reason::IsDirectory => write!(
                f,
                "{p}: is a directory; kept (a directory is never replaced by a file)"
            ),
            Reason::NotADirectory => write!(
                f,
                "{p}: is not a directory; kept, and the entries below it were not extracted"
            ),
            Reason::LinkTargetKept(t) => write!(
                f,
                "{p}: hard link not made: its target {} was kept",
                escape_path(t)
            ),
        }
    }
}

/// What to do at one name, from what is there and the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Nothing there (or a non-directory that `-f` replaces by rename): write.
    Write,
    /// A directory entry over an existing directory: reuse it.
    Reuse,
    /// A directory entry over a non-directory, with `-f`: remove it, then create.
    RemoveFirst,
    /// Leave the existing one.
    Keep(Reason),
}

/// The decision table of the module documentation.
pub(crate) fn decide(there: Option<FileType>, entry_is_dir: bool, policy: Existing) -> Outcome {
    match (there, entry_is_dir) {
        (None, _) => Outcome::Write,
        (Some(FileType::Directory), true) => Outcome::Reuse,
        (Some(FileType::Directory), false) => Outcome::Keep(Reason::IsDirectory),
        (Some(_), true) if policy == Existing::Replace => Outcome::RemoveFirst,
        (Some(_), false) if policy == Existing::Replace => Outcome::Write,
        (Some(_), true) => Outcome::Keep(Reason::NotADirectory),
        (Some(_), false) => Outcome::Keep(Reason::Exists),
    }
}

#[derive(Debug, Default)]
struct LogInner {
    list: Vec<Conflict>,
    paths: HashSet<PathBuf>,
    /// Stripped archive paths of kept entries, as 128-bit BLAKE3 prefixes (for hard links).
    kept: HashSet<[u8; 16]>,
    /// Entries kept out, each counted once: a path is listed once however many entries it
    /// kept out (a file where a directory goes keeps out everything below it).
    entries: usize,
}

/// The conflicts of one extraction, shared by the extractor and its file sinks (which may run
/// on other threads). A path is recorded once.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConflictLog(Arc<Mutex<LogInner>>);

impl ConflictLog {
    /// Records a conflict; `rel_key` is the kept entry's key ([`super::sink::extracted_key`]).
    pub(crate) fn record(&self, c: Conflict, rel_key: Option<[u8; 16]>) {
        if let Ok(mut l) = self.0.lock() {
            l.entries += 1;
            if let Some(k) = rel_key {
                l.kept.insert(k);
            }
            if l.paths.insert(c.path.clone()) {
                l.list.push(c);
            }
        }
    }

    /// Notes that the entry with this key was not made (below a kept directory entry),
    /// without listing it.
    pub(crate) fn note_kept(&self, rel_key: [u8; 16]) {
        if let Ok(mut l) = self.0.lock() {
            l.entries += 1;
            l.kept.insert(rel_key);
        }
    }

    /// Whether one of the directories `parents` (stripped components) is a kept entry.
    pub(crate) fn below_kept(&self, parents: &[&[u8]]) -> bool {
        let Ok(l) = self.0.lock() else {
            return false;
        };
        !l.kept.is_empty()
            && (1..=parents.len()).any(|n| {
                l.kept
                    .contains(&super::sink::extracted_key(&parents[..n].join(&b'/')))
            })
    }

    /// Whether the entry with this key was kept.
    pub(crate) fn was_kept(&self, rel_key: &[u8; 16]) -> bool {
        self.0
            .lock()
            .map(|l| l.kept.contains(rel_key))
            .unwrap_or(false)
    }

    /// How many entries were kept out so far (for the summary's count of entries made).
    pub(crate) fn entries(&self) -> usize {
        self.0.lock().map(|l| l.entries).unwrap_or(0)
    }

    /// The conflicts so far, in the order met.
    pub(crate) fn list(&self) -> Vec<Conflict> {
        self.0.lock().map(|l| l.list.clone()).unwrap_or_default()
    }
}

/// Whether an error from opening an entry's parents means "a parent is not a directory".
pub(crate) fn is_not_a_directory(e: &Error) -> Option<PathBuf> {
    match e {
        Error::Io {
            path, op, source, ..
        } if *op == "open directory"
            && source.raw_os_error() == Some(Errno::NOTDIR.raw_os_error()) =>
        {
            Some(path.clone())
        }
        _ => None,
    }
}

/// Whether a lookup's error leaves nothing to decide here: the name is missing, or too long
/// for the file system (a limit below what `statvfs` said; the extraction names it), or in a
/// directory this process may not search (this check changes nothing, so it cannot tell;
/// the extraction opens up a directory the user owns, `super::loosen`, and decides there,
/// race-free, or names the entry it was refused).
fn not_there(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
        || e.raw_os_error() == Some(Errno::NAMETOOLONG.raw_os_error())
        || e.raw_os_error() == Some(Errno::ACCESS.raw_os_error())
}

/// How many conflicting names an error message shows before "and N more".
pub const SHOWN_CONFLICTS: usize = 10;

/// The check before extraction (see the module documentation): looks up each target (entry
/// path and kind, before `--strip-components`) in `root`. Refuses with
/// [`Error::Conflicts`] (`before_start`) what the policy would not resolve, and with
/// [`Error::UnsafePath`] a symbolic link at a parent position. Reads nothing but names.
pub fn preflight<'a>(
    root: &Path,
    targets: impl IntoIterator<Item = (&'a [u8], EntryKind)>,
    strip: usize,
    policy: Existing,
) -> Result<()> {
    let empty = std::fs::read_dir(root).map_or(true, |mut d| d.next().is_none());
    if empty {
        return Ok(());
    }
    let fd = openat(
        rustix::fs::CWD,
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io(root, "open", e.into()))?;
    // Names the file system cannot hold are skipped by the extraction (named there): they
    // are in nobody's way, and looking them up would fail (fs::extract's `fit`).
    let name_max = super::extract::name_max(&fd);
    let mut chain = DirChain::new();
    let mut found: Vec<Conflict> = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    // Directory entries whose name holds a non-directory now: kept (a conflict already
    // counted) or, with -f, replaced by a real directory before anything goes below it. The
    // entries below them are decided by that, not by what is on disk now.
    let mut settled: HashSet<Vec<u8>> = HashSet::new();
    for (path, kind) in targets {
        // The root entry (`krypta c A.kry .`) names the output directory itself, which is
        // reused, never a conflict (Extractor::make_dir); it is not a name inside it.
        if path == ROOT_PATH && kind == EntryKind::Dir {
            continue;
        }
        let Some(t) = confine::split_entry(path, strip)? else {
            continue;
        };
        let comps: Vec<&[u8]> = t.parents.iter().copied().chain([t.name]).collect();
        if super::extract::first_too_long(&comps, name_max).is_some() {
            continue;
        }
        let here = confine::on_disk(root, &t.rel);
        let below_settled =
            (1..=t.parents.len()).any(|n| settled.contains(&t.parents[..n].join(&b'/')));
        if below_settled {
            continue;
        }
        let dir = match chain.open(fd.as_fd(), root, &t.parents, false) {
            Ok(d) => d,
            Err(e) => {
                if let Some(p) = is_not_a_directory(&e) {
                    if policy != Existing::Keep
                        && policy != Existing::Skip
                        && seen.insert(p.clone())
                    {
                        found.push(Conflict {
                            path: p,
                            reason: Reason::NotADirectory,
                        });
                    }
                    chain.clear();
                    continue;
                }
                match e {
                    Error::Io { ref source, .. } if not_there(source) => {
                        chain.clear();
                        continue;
                    }
                    e => return Err(e),
                }
            }
        };
        let there = match lstat_type(dir, t.name) {
            Ok(there) => there,
            Err(e) if not_there(&e) => continue,
            Err(e) => return Err(Error::io(&here, "stat", e)),
        };
        let outcome = decide(there, kind == EntryKind::Dir, policy);
        if kind == EntryKind::Dir && matches!(outcome, Outcome::Keep(_) | Outcome::RemoveFirst) {
            settled.insert(t.rel.clone());
        }
        if let Outcome::Keep(reason) = outcome {
            let refused = match policy {
                Existing::Refuse => true,
                Existing::Replace => reason == Reason::IsDirectory,
                Existing::Keep | Existing::Skip => false,
            };
            if refused && seen.insert(here.clone()) {
                found.push(Conflict { path: here, reason });
            }
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    Err(Error::Conflicts {
        output: root.to_path_buf(),
        count: found.len(),
        names: found
            .iter()
            .take(SHOWN_CONFLICTS)
            .map(|c| escape_path(c.path.as_os_str().as_bytes()))
            .collect(),
        before_start: true,
        forced: policy == Existing::Replace,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_table() {
        use Existing::*;
        let file = Some(FileType::RegularFile);
        let dir = Some(FileType::Directory);
        let link = Some(FileType::Symlink);
        for p in [Refuse, Keep, Skip, Replace] {
            assert_eq!(decide(None, false, p), Outcome::Write);
            assert_eq!(decide(None, true, p), Outcome::Write);
            assert_eq!(decide(dir, true, p), Outcome::Reuse);
            assert_eq!(decide(dir, false, p), Outcome::Keep(Reason::IsDirectory));
        }
        for p in [Refuse, Keep, Skip] {
            assert_eq!(decide(file, false, p), Outcome::Keep(Reason::Exists));
            assert_eq!(decide(link, false, p), Outcome::Keep(Reason::Exists));
            assert_eq!(decide(file, true, p), Outcome::Keep(Reason::NotADirectory));
            assert_eq!(decide(link, true, p), Outcome::Keep(Reason::NotADirectory));
        }
        assert_eq!(decide(file, false, Replace), Outcome::Write);
        assert_eq!(decide(link, false, Replace), Outcome::Write);
        assert_eq!(decide(link, true, Replace), Outcome::RemoveFirst);
    }

    #[test]
    fn a_path_is_logged_once() {
        let log = ConflictLog::default();
        let c = Conflict {
            path: "out/d".into(),
            reason: Reason::NotADirectory,
        };
        log.record(c.clone(), Some([1; 16]));
        log.record(c.clone(), None);
        assert_eq!(log.list(), vec![c]);
        assert!(log.was_kept(&[1; 16]));
        assert!(!log.was_kept(&[2; 16]));
    }
}
