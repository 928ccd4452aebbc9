//! Listing one directory for the walk ([`Walker::list_dir`]) and opening the regular files
//! it stores ([`Walker::open_file`]).
//!
//! Choices (keep them; issue 13 item 2, archiving many small files):
//! - Children are `lstat`ed relative to their directory's descriptor (`fstatat`), sorted by
//!   name bytes; a directory replaced between its `lstat` and its opening is stored empty.
//! - **Opening in the walk** ([`WalkOptions::open_files`], which `krypta c` sets): each regular
//!   file stored is opened by the walk, relative to its directory's descriptor (`openat` of one
//!   component, no path lookup), its attributes are read on that descriptor (`flistxattr`), and
//!   the open file goes to the reading thread with the entry ([`InputEntry::opened`]). That
//!   replaced three path-based calls per file (`faccessat` to skip an unreadable file before a
//!   hard link could refer to it, `llistxattr` through `/proc/self/fd/N/NAME`, `openat` of the
//!   whole path on the reading thread): on 100,000 small files on tmpfs the `/proc` listing
//!   alone was 40% of the walk's time. A file that cannot be opened is skipped when it is met,
//!   before it is remembered as the first of its hard links. Without `open_files` (the size
//!   scan of `--progress`, the fs tests' [`walk`](super::walk)) readability is checked with
//!   `faccessat(R_OK)`, attributes are read by path and nothing is held open.
//! - **Descriptors held**: a directory's descriptor (a `dup` of the one it was listed with)
//!   stays open while files listed in it wait to be visited, for at most [`MAX_HELD_DIRS`]
//!   directories at once (fewer under a low descriptor limit: [`Budget`]) (the walk is depth first: one per level whose files are still
//!   pending); deeper than that, and for files reached through `-L`, files are opened by path
//!   (`longpath`, any length). Open files waiting for the reading thread are bounded by the
//!   hand-over queue of [`super::super::ahead`]: at most (`QUEUE` + 2) × `BATCH` = 384. With
//!   the 64 directories that stays inside the usual soft limit of 1,024 descriptors, which
//!   `krypta c` raises towards 4,096 when the hard limit allows ([`raise_descriptor_limit`]);
//!   open files not yet taken by the reading thread are counted and held to half the soft
//!   limit less a reserve of 32 ([`Budget`]); past that, and when an open fails for want of descriptors (`EMFILE`,
//!   `ENFILE`), the file is not skipped: it goes over unopened and the reading thread opens it
//!   by path.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustix::fs::{AtFlags, Dir, Mode, OFlags, Stat, fstat, readlinkat, statat};

#[cfg(doc)]
use super::{InputEntry, WalkOptions};
use super::{Pending, Walker};
use crate::Result;
use crate::format::entry::Xattr;
use crate::fs::longpath;
use crate::fs::meta::{StatKind, identity, kind_of};
use crate::fs::select::is_tagged_cache;
use crate::fs::source::{FileSource, StatFacts};

/// Descriptors the walk never counts on (the archive, the workers, the directory being
/// listed, the reading thread's opens by path).
const RESERVE: usize = 32;

/// Directories whose descriptors the walk keeps open for their files, at most.
pub(crate) const MAX_HELD_DIRS: usize = 64;

/// A directory's descriptor kept for opening its files; `_count` is a clone of
/// `Walker::held`, whose strong count thus says how many are open.
pub(super) struct HeldDir {
    pub(super) fd: OwnedFd,
    pub(super) _count: Rc<()>,
}

/// A regular file the walk opened, handed over with its entry ([`InputEntry::opened`]).
#[derive(Debug)]
pub struct OpenFile {
    fd: Option<OwnedFd>,
    /// What reading it needs of its `fstat`, taken by the walk (not repeated).
    facts: StatFacts,
    /// The walk's count of handed-over files not yet taken ([`Budget::files`]).
    open: Arc<AtomicUsize>,
}

impl OpenFile {
    /// The file, to be read ([`FileSource::from_stat`], with the walk's `fstat`); the walk
    /// counts its descriptor as taken.
    pub fn into_source(mut self, path: &Path) -> Option<FileSource> {
        let fd = self.fd.take()?;
        Some(FileSource::from_stat(fd, &self.facts, path))
    }
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How many descriptors the walk may hold, from this process's soft limit (after
/// [`raise_descriptor_limit`]): half of it for files handed over and not yet taken, an
/// eighth (at most [`MAX_HELD_DIRS`]) for kept directories, the rest for everything else
/// (the archive, the workers, the reading thread's own open).
#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
    pub(super) files: usize,
    pub(super) dirs: usize,
}

impl Budget {
    pub(super) fn from_limit() -> Budget {
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(FD_WANTED);
        let soft = usize::try_from(soft).unwrap_or(usize::MAX);
        // A fixed reserve first: at very low limits the directories being listed, the archive
        // and the reading thread's own opens still need descriptors.
        let spare = soft.saturating_sub(RESERVE);
        Budget {
            files: spare / 2,
            dirs: if soft < 2 * RESERVE {
                0
            } else {
                (spare / 8).min(MAX_HELD_DIRS)
            },
        }
    }
}

/// What [`Walker::open_file`] did.
// Returned once per file, by value, and taken apart at once: the size is not worth a box.
#[allow(clippy::large_enum_variant)]
pub(super) enum Opened {
    /// The file is open; its `fstat`.
    Now(OpenFile, Stat),
    /// It could not be opened for want of descriptors: the reading thread opens it by path.
    Later,
    /// It could not be opened: skipped, with a [`super::WalkEvent::Skipped`].
    Skipped,
}

/// Whether `e` says this process (`EMFILE`) or the system (`ENFILE`) has no descriptor left.
fn is_out_of_descriptors(e: &io::Error) -> bool {
    [rustix::io::Errno::MFILE, rustix::io::Errno::NFILE]
        .iter()
        .any(|n| e.raw_os_error() == Some(n.raw_os_error()))
}

/// Whether `e` is a want of krypta's own, not a fault of the file it was about: no
/// descriptor left for this process (`EMFILE`, a low `ulimit -n`) or the system (`ENFILE`),
/// or no memory (`ENOMEM`). `krypta c` stops on these instead of leaving the input out: a
/// nightly backup under a low limit stored `/usr/share/doc` empty and exited 6, the code of
/// a socket skipped every night.
pub(crate) fn is_out_of_resources(e: &io::Error) -> bool {
    is_out_of_descriptors(e) || e.raw_os_error() == Some(rustix::io::Errno::NOMEM.raw_os_error())
}

/// Descriptors `krypta c` asks for: the soft limit is raised to this when the hard limit
/// allows (it is often 1,024 by default against a hard limit of 500,000 or more).
const FD_WANTED: u64 = 4096;

/// Raises the soft limit on open descriptors towards [`FD_WANTED`] (never lowers it), as
/// programs that hold many descriptors do; failing that, the walk still works: a file it
/// cannot open for want of descriptors is opened later by the reading thread
/// ([`Opened::Later`]).
pub(crate) fn raise_descriptor_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let lim = getrlimit(Resource::Nofile);
    let Some(cur) = lim.current else { return };
    if cur >= FD_WANTED {
        return;
    }
    let want = lim.maximum.map_or(FD_WANTED, |max| max.min(FD_WANTED));
    if want > cur {
        let _ = setrlimit(
            Resource::Nofile,
            rustix::process::Rlimit {
                current: Some(want),
                maximum: lim.maximum,
            },
        );
    }
}

impl Walker<'_> {
    /// Opens the regular file at `source` (relative to its kept directory `dir` when there is
    /// one, else by path), `fstat`s the descriptor (it must still be a regular file) and reads
    /// its attributes on it into `xattrs`. When no descriptor can be spared ([`Budget`],
    /// `EMFILE`), the file is checked for readability (`faccessat`) and its attributes read by
    /// name instead, and the reading thread opens it ([`Opened::Later`]): so a file that cannot
    /// be read is skipped here, before it can become the first of its hard links.
    pub(super) fn open_file(
        &mut self,
        source: &Path,
        dir: Option<Rc<HeldDir>>,
        xattrs: &mut Vec<Xattr>,
    ) -> Result<Opened> {
        let name = source.file_name().map(|n| n.as_bytes());
        let opened = if self.open.load(Ordering::Relaxed) >= self.budget.files {
            // As many are open as the budget allows: the reading thread opens this one.
            Err(io::Error::from_raw_os_error(
                rustix::io::Errno::MFILE.raw_os_error(),
            ))
        } else {
            match (&dir, name) {
                (Some(dir), Some(name)) => FileSource::open_in(dir.fd.as_fd(), name),
                _ => FileSource::open_fd(source),
            }
        };
        let mut warnings = Vec::new();
        let fd = match opened {
            Ok(fd) => fd,
            Err(e) if is_out_of_descriptors(&e) => {
                // Not the file's fault: the reading thread opens it once descriptors are free.
                let at = |d: BorrowedFd<'_>, n: &[u8]| -> io::Result<()> {
                    rustix::fs::accessat(d, n, rustix::fs::Access::READ_OK, AtFlags::EACCESS)?;
                    Ok(())
                };
                let readable = match (&dir, name) {
                    (Some(dir), Some(name)) => at(dir.fd.as_fd(), name),
                    _ => longpath::with_parent(source, at),
                };
                if let Err(e) = readable {
                    self.skip(source, "read", e, "skipped")?;
                    return Ok(Opened::Skipped);
                }
                let attrs = &mut self.attrs;
                let mut read = |d: BorrowedFd<'_>, n: &[u8]| {
                    *xattrs = attrs.xattrs(d, n, source, false, &mut |w| warnings.push(w));
                };
                match (&dir, name) {
                    (Some(dir), Some(name)) => read(dir.fd.as_fd(), name),
                    _ => {
                        let _ = longpath::with_parent(source, |d, n| {
                            read(d, n);
                            Ok(())
                        });
                    }
                }
                self.warn_all(source, warnings)?;
                return Ok(Opened::Later);
            }
            Err(e) => {
                self.skip(source, "open", e, "skipped")?;
                return Ok(Opened::Skipped);
            }
        };
        let stat = match fstat(&fd) {
            Ok(st) if kind_of(&st) == StatKind::File => st,
            Ok(_) => {
                let e = io::Error::other("is no longer a regular file");
                self.skip(source, "open", e, "skipped")?;
                return Ok(Opened::Skipped);
            }
            Err(e) => {
                self.skip(source, "stat", e.into(), "skipped")?;
                return Ok(Opened::Skipped);
            }
        };
        self.attrs
            .xattrs_fd(fd.as_fd(), xattrs, &mut |w| warnings.push(w));
        self.warn_all(source, warnings)?;
        self.open.fetch_add(1, Ordering::Relaxed);
        let file = OpenFile {
            fd: Some(fd),
            facts: StatFacts::of(&stat),
            open: Arc::clone(&self.open),
        };
        Ok(Opened::Now(file, stat))
    }

    /// Reads a directory's children, sorted by name bytes, with their stats, one level below
    /// the directories entered (`Walker::ancestors`). Problems become warnings and an empty
    /// list.
    pub(super) fn list_dir(
        &mut self,
        source: &Path,
        st: &Stat,
        arch: &[u8],
    ) -> Result<Vec<Pending>> {
        // Loops were refused by the caller (`Walker::enter`); a directory reached again
        // elsewhere is listed again (module documentation, "Loops").
        self.dirs_seen.insert(identity(st));
        let follow = if self.opts.dereference {
            OFlags::empty()
        } else {
            OFlags::NOFOLLOW
        };
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | follow;
        let fd = match longpath::open(source, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) => {
                self.skip(source, "open directory", e, "stored empty")?;
                return Ok(Vec::new());
            }
        };
        match fstat(&fd) {
            Ok(now) if identity(&now) == identity(st) => {}
            _ => {
                let e = io::Error::other("it was replaced while being archived");
                self.skip(source, "read directory", e, "stored empty")?;
                return Ok(Vec::new());
            }
        }
        let mut dir = match Dir::new(fd) {
            Ok(d) => d,
            Err(e) => {
                self.skip(source, "read directory", e.into(), "stored empty")?;
                return Ok(Vec::new());
            }
        };
        let mut names: Vec<Vec<u8>> = Vec::new();
        while let Some(ent) = dir.read() {
            match ent {
                Ok(ent) => {
                    let name = ent.file_name().to_bytes();
                    if name != b"." && name != b".." {
                        names.push(name.to_vec());
                    }
                }
                Err(e) => {
                    self.skip(source, "read directory", e.into(), "listing cut short")?;
                    break;
                }
            }
        }
        names.sort_unstable();
        let dirfd = match dir.fd() {
            Ok(fd) => fd,
            Err(e) => {
                self.skip(source, "read directory", e.into(), "stored empty")?;
                return Ok(Vec::new());
            }
        };
        if self.select.exclude_caches && is_tagged_cache(dirfd.as_fd(), &names) {
            names.retain(|n| n == crate::fs::select::CACHEDIR_TAG);
        }
        let mut out = Vec::with_capacity(names.len());
        // This directory's descriptor, kept for its files (see the module documentation).
        let mut held: Option<Rc<HeldDir>> = None;
        let mut may_hold = self.opts.open_files && Rc::strong_count(&self.held) <= self.budget.dirs;
        for name in names {
            let mut child = source.join(OsStr::from_bytes(&name));
            let (st, via_link) = match stat_child(dirfd.as_fd(), &name, self.opts.dereference) {
                Ok(found) => found,
                Err(e) => {
                    self.skip(&child, "stat", e, "skipped")?;
                    continue;
                }
            };
            if self.opts.dereference && !via_link && kind_of(&st) == StatKind::Symlink {
                self.warn(&child, "dangling symbolic link stored as a link")?;
            }
            if via_link && kind_of(&st) == StatKind::File {
                // FileSource::open refuses a symlink in the last component; give it the target.
                match std::fs::canonicalize(&child) {
                    Ok(real) => child = real,
                    Err(e) => {
                        self.skip(&child, "resolve symbolic link", e, "skipped")?;
                        continue;
                    }
                }
            }
            let link = if kind_of(&st) == StatKind::Symlink {
                match readlinkat(dirfd.as_fd(), name.as_slice(), Vec::new()) {
                    Ok(t) => t.into_bytes(),
                    Err(e) => {
                        self.skip(&child, "read link", e.into(), "skipped")?;
                        continue;
                    }
                }
            } else {
                Vec::new()
            };
            if kind_of(&st) == StatKind::File
                && !self.opts.open_files
                && let Err(e) = rustix::fs::accessat(
                    dirfd.as_fd(),
                    name.as_slice(),
                    rustix::fs::Access::READ_OK,
                    AtFlags::EACCESS,
                )
            {
                self.skip(&child, "read", e.into(), "skipped")?;
                continue;
            }
            let mut child_arch = Vec::with_capacity(arch.len() + 1 + name.len());
            if !arch.is_empty() {
                child_arch.extend_from_slice(arch);
                child_arch.push(b'/');
            }
            child_arch.extend_from_slice(&name);
            let is_file = kind_of(&st) == StatKind::File;
            // An opened file's attributes are read on its descriptor, in `open_file`.
            let xattrs = if matches!(kind_of(&st), StatKind::Special(_))
                || (is_file && self.opts.open_files)
            {
                Vec::new()
            } else {
                let mut warnings = Vec::new();
                let x = self
                    .attrs
                    .xattrs(dirfd.as_fd(), &name, &child, via_link, &mut |w| {
                        warnings.push(w)
                    });
                self.warn_all(&child, warnings)?;
                x
            };
            let mut dir = None;
            if is_file && !via_link && may_hold {
                if held.is_none() {
                    match rustix::io::fcntl_dupfd_cloexec(dirfd.as_fd(), 0) {
                        Ok(fd) => {
                            held = Some(Rc::new(HeldDir {
                                fd,
                                _count: Rc::clone(&self.held),
                            }))
                        }
                        Err(_) => may_hold = false,
                    }
                }
                dir = held.clone();
            }
            out.push(Pending {
                source: child,
                arch: child_arch,
                st,
                link,
                xattrs,
                dir,
                depth: self.ancestors.len(),
                stream: false,
            });
        }
        Ok(out)
    }
}

/// `lstat` of `name` in `dir`; with `deref`, a symbolic link is followed and the result is
/// `(stat of the target, true)`, or `(lstat of the link, false)` when it dangles or loops.
pub(super) fn stat_child(
    dir: BorrowedFd<'_>,
    name: &[u8],
    deref: bool,
) -> io::Result<(Stat, bool)> {
    let lst = statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if !deref || kind_of(&lst) != StatKind::Symlink {
        return Ok((lst, false));
    }
    match statat(dir, name, AtFlags::empty()) {
        Ok(st) => Ok((st, true)),
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::LOOP) => Ok((lst, false)),
        Err(e) => Err(e.into()),
    }
}
