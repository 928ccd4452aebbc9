//! Walking the command-line inputs into archive entries, in a deterministic order.
//!
//! Choices (copied into the README):
//! - **Archive paths** are the inputs as given, made relative: a leading `/` is dropped (one
//!   warning per input, like tar), empty and `.` components are dropped, and everything up to
//!   and including the last `..` component is dropped with a warning (`../x` is stored as `x`,
//!   `a/../b` as `b`). An input that names a directory's contents — `.`, `dir/.`, `/`, `..`
//!   — contributes its children, stored under their own names (`dir/.` stores `dir`'s
//!   children at the top, like `tar -C dir .`), and its directory's own metadata (mode,
//!   owner, times, attributes) as the root entry `.`, the first entry of the archive, which
//!   extraction applies to the output directory. Only the first such input gives the root
//!   entry.
//! - **Overlapping inputs** (`src src/README.md`, `src` twice, `a/. b/.`) store each archive
//!   path once, from its first occurrence (see `super::overlap`).
//! - **Owner names and extended attributes** (ACLs and capabilities included) are read with
//!   each entry (see `super::attrs`, `super::xattr`); [`WalkOptions`] says which.
//! - **Order**: inputs in command-line order; inside a directory, entries sorted by name bytes,
//!   depth first, each directory before its children. The same tree always gives the same
//!   entry sequence, so archives are reproducible.
//! - **Symbolic links** are stored as links (target bytes as `readlink` returns them) and never
//!   followed, except with [`WalkOptions::dereference`] (`-L`), where the object pointed to is
//!   stored; a dangling link is then stored as a link with a warning. Inputs named on the
//!   command line are treated like every other path (not followed without `-L`).
//! - **Hard links**: the second and later paths to an inode with `st_nlink > 1` become
//!   `EntryKind::Hardlink` entries whose `link` is the archive path of the first one.
//! - **FIFOs, sockets, character and block devices** are skipped with a warning naming the file
//!   and its type. Device nodes hold no data worth a backup and restoring them needs root; a
//!   FIFO is never opened, so the walk can not hang on one.
//! - **Loops**: a directory already walked in this run (same device and inode, reached again
//!   through `-L` or a bind mount) is stored but not descended into again, with a warning.
//! - **Errors**: an input that can not be `lstat`ed, and anything deeper that vanishes or can
//!   not be read, is a [`WalkEvent::Skipped`] naming it and the I/O error (an unreadable
//!   directory is still stored, empty); the caller decides whether that stops the run
//!   (`--strict`) or is counted (exit code 6). An input `-` is not walked (stdin).
//! - **Selection** (`--exclude`, `--one-file-system`, `--exclude-caches`, a name met twice) is
//!   [`super::select`]'s; the walk asks it before an input, before each entry and after
//!   listing a directory ([`walk_selected`]).
//! - **Deep trees**: directories are opened by path in pieces (see `longpath`), children are
//!   `lstat`ed relative to their directory's descriptor, so paths longer than `PATH_MAX` work;
//!   the walk keeps one directory descriptor open at a time, whatever the depth.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, Mode, OFlags, Stat, fstat, readlinkat, statat};

pub use super::archive_path::archive_path_of;
use super::attrs::EntryAttrs;
use super::longpath;
use super::meta::{StatKind, identity, kind_of, mode_of, mtime_of, size_of};
use super::names::escape_path;
use super::overlap::{self, Overlap};
use super::select::{Selector, Verdict, is_tagged_cache};
use super::xattr::XattrSelect;
use crate::format::entry::{EntryKind, EntryMeta, MAX_PATH_LEN, Xattr};
use crate::{Error, Result};

/// The archive path of the root entry: the directory an input such as `.` or `dir/.` names.
pub const ROOT_PATH: &[u8] = b".";

/// How the walk treats symbolic links and which metadata it reads. The default follows no
/// links and stores owner names and every extended attribute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalkOptions {
    /// Follow symbolic links (`-L/--dereference`) and store what they point to.
    pub dereference: bool,
    /// Which extended attributes to store (`--no-xattrs`, `--no-acls`).
    pub xattrs: XattrSelect,
    /// Store numeric ids only, no owner and group names (`--numeric-owner`).
    pub numeric_owner: bool,
}

/// One entry found by the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputEntry {
    /// The entry's metadata; `path` is the archive path, `link` the symlink target or the
    /// archive path of the first hard link.
    pub meta: EntryMeta,
    /// Where to read it on disk (input path joined with the names below it; may be longer than
    /// `PATH_MAX`, which [`super::source::FileSource::open`] handles).
    pub source: PathBuf,
    /// `st_size` in bytes at walk time for files; 0 for every other kind.
    pub size: u64,
}

/// What the walk reports, in order.
#[derive(Debug)]
pub enum WalkEvent {
    /// An entry to archive.
    Entry(InputEntry),
    /// Something left out by design (a FIFO, a loop) or rewritten; the text names the file
    /// (escaped with `escape_path`).
    Warning(String),
    /// A file or directory that could not be read: left out (a directory: stored empty).
    Skipped(Skipped),
}

/// A file the walk could not read, and what was done about it.
#[derive(Debug)]
pub struct Skipped {
    /// The file on disk.
    pub path: PathBuf,
    /// What failed ("stat", "open directory", "read", ...).
    pub op: &'static str,
    /// The error.
    pub error: io::Error,
    /// What the walk did: "skipped", "stored empty", "listing cut short".
    pub outcome: &'static str,
}

impl Skipped {
    /// The I/O error this skip stands for ([`Error::Io`] naming the file), for `--strict`.
    pub fn into_error(self) -> Error {
        Error::io(self.path, self.op, self.error)
    }
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: cannot {} ({}); {}",
            escape_path(self.path.as_os_str().as_bytes()),
            self.op,
            self.error,
            self.outcome
        )
    }
}

/// A path waiting on the walk's stack: its stat was taken when its directory was listed.
struct Pending {
    source: PathBuf,
    arch: Vec<u8>,
    st: Stat,
    /// Symlink target when `st` is a symlink (read while the parent was open).
    link: Vec<u8>,
    /// Extended attributes, sorted by name (read while the parent was open).
    xattrs: Vec<Xattr>,
}

/// Walks `inputs` and calls `on_event` for every entry and warning, in the order described in
/// the module documentation. Stops at the first error `on_event` returns.
pub fn walk(
    inputs: &[PathBuf],
    opts: &WalkOptions,
    on_event: &mut dyn FnMut(WalkEvent) -> Result<()>,
) -> Result<()> {
    walk_selected(inputs, opts, &Selector::default(), on_event)
}

/// [`walk`], leaving out what `select` says ([`super::select`]).
pub fn walk_selected(
    inputs: &[PathBuf],
    opts: &WalkOptions,
    select: &Selector,
    on_event: &mut dyn FnMut(WalkEvent) -> Result<()>,
) -> Result<()> {
    let roots: Vec<Option<Vec<u8>>> = inputs
        .iter()
        .map(|i| (i.as_os_str() != "-").then(|| archive_path_of(i.as_os_str().as_bytes()).0))
        .collect();
    let mut w = Walker {
        opts: *opts,
        links: HashMap::new(),
        dirs_seen: HashSet::new(),
        notes_shown: HashSet::new(),
        overlap: Overlap::new(&roots),
        attrs: EntryAttrs::new(opts.xattrs, opts.numeric_owner),
        input: 0,
        on_event,
        select,
        input_dev: 0,
    };
    if let Some(i) = roots
        .iter()
        .position(|r| r.as_ref().is_some_and(|r| r.is_empty()))
    {
        w.root_entry(&inputs[i])?;
    }
    for (i, input) in inputs.iter().enumerate() {
        if roots[i].is_none() {
            continue;
        }
        w.input = i;
        w.walk_input(input)?;
    }
    Ok(())
}

struct Walker<'a> {
    opts: WalkOptions,
    /// (dev, ino) of files with st_nlink > 1 → archive path of the first one stored.
    links: HashMap<(u64, u64), Vec<u8>>,
    /// (dev, ino) of directories already descended into.
    dirs_seen: HashSet<(u64, u64)>,
    /// Path-rewriting notes already shown (each is shown once per walk, like tar).
    notes_shown: HashSet<String>,
    /// Archive paths already stored, for overlapping inputs.
    overlap: Overlap,
    /// Owner names and extended attributes.
    attrs: EntryAttrs,
    /// Index of the input being walked (in the `inputs` given to [`walk`]).
    input: usize,
    on_event: &'a mut dyn FnMut(WalkEvent) -> Result<()>,
    select: &'a Selector,
    /// Device of the input being walked (`--one-file-system`).
    input_dev: u64,
}

impl Walker<'_> {
    fn warn(&mut self, path: &Path, what: impl std::fmt::Display) -> Result<()> {
        let shown = escape_path(path.as_os_str().as_bytes());
        (self.on_event)(WalkEvent::Warning(format!("{shown}: {what}")))
    }

    /// Passes warnings collected while reading `path`'s attributes on.
    fn warn_all(&mut self, path: &Path, warnings: Vec<String>) -> Result<()> {
        for w in warnings {
            self.warn(path, w)?;
        }
        Ok(())
    }

    /// Stores the root entry `.` with the metadata of `input`, an input naming a directory's
    /// contents (`.`, `dir/.`), if it is a directory. Problems are left to [`Self::walk_input`],
    /// which meets the same input again.
    fn root_entry(&mut self, input: &Path) -> Result<()> {
        let deref = self.opts.dereference;
        let mut warnings = Vec::new();
        let found = longpath::with_parent(input, |dir, name| {
            let (st, via_link) = stat_child(dir, name, deref)?;
            let xattrs = if kind_of(&st) == StatKind::Dir {
                self.attrs
                    .xattrs(dir, name, input, via_link, &mut |w| warnings.push(w))
            } else {
                Vec::new()
            };
            Ok((st, xattrs))
        });
        self.warn_all(input, warnings)?;
        let Ok((st, xattrs)) = found else {
            return Ok(());
        };
        if kind_of(&st) != StatKind::Dir {
            return Ok(());
        }
        let mut meta = EntryMeta {
            path: ROOT_PATH.to_vec(),
            kind: EntryKind::Dir,
            mode: mode_of(&st),
            mtime: mtime_of(&st),
            uid: st.st_uid,
            gid: st.st_gid,
            ..Default::default()
        };
        let mut warnings = Vec::new();
        self.attrs
            .complete(&mut meta, xattrs, &mut |w| warnings.push(w));
        self.warn_all(input, warnings)?;
        (self.on_event)(WalkEvent::Entry(InputEntry {
            meta,
            source: input.to_path_buf(),
            size: 0,
        }))
    }

    fn skip(
        &mut self,
        path: &Path,
        op: &'static str,
        error: io::Error,
        outcome: &'static str,
    ) -> Result<()> {
        (self.on_event)(WalkEvent::Skipped(Skipped {
            path: path.to_path_buf(),
            op,
            error,
            outcome,
        }))
    }

    fn walk_input(&mut self, input: &Path) -> Result<()> {
        let (arch, note) = archive_path_of(input.as_os_str().as_bytes());
        if let Some(note) = note
            && self.notes_shown.insert(note.clone())
        {
            (self.on_event)(WalkEvent::Warning(note))?;
        }
        if self.overlap.below_non_dir(self.input, &arch) {
            return self.warn(
                input,
                "lies below a file or link stored from an earlier input; skipped",
            );
        }
        if self.select.excludes_a_parent(&arch) {
            return Ok(());
        }
        let deref = self.opts.dereference;
        let mut warnings = Vec::new();
        let found = longpath::with_parent(input, |dir, name| {
            let (st, via_link) = stat_child(dir, name, deref)?;
            // The root's own attributes went into the root entry.
            let xattrs = if arch.is_empty() || matches!(kind_of(&st), StatKind::Special(_)) {
                Vec::new()
            } else {
                self.attrs
                    .xattrs(dir, name, input, via_link, &mut |w| warnings.push(w))
            };
            Ok((st, via_link, xattrs))
        });
        self.warn_all(input, warnings)?;
        let (st, via_link, xattrs) = match found {
            Ok(found) => found,
            Err(e) => return self.skip(input, "stat", e, "skipped"),
        };
        let mut source = input.to_path_buf();
        if via_link && kind_of(&st) == StatKind::File {
            source = match std::fs::canonicalize(input) {
                Ok(real) => real,
                Err(e) => return self.skip(input, "resolve symbolic link", e, "skipped"),
            };
        }
        let link = if kind_of(&st) == StatKind::Symlink {
            match longpath::with_parent(input, |dir, name| Ok(readlinkat(dir, name, Vec::new())?)) {
                Ok(t) => t.into_bytes(),
                Err(e) => return self.skip(input, "read link", e, "skipped"),
            }
        } else {
            Vec::new()
        };
        self.input_dev = st.st_dev;
        if arch.is_empty() && kind_of(&st) != StatKind::Dir {
            return self.warn(
                input,
                "names no file once '.', '..' and '/' are removed; skipped",
            );
        }
        let mut stack = vec![Pending {
            source,
            arch,
            st,
            link,
            xattrs,
        }];
        while let Some(p) = stack.pop() {
            self.visit(p, &mut stack)?;
        }
        Ok(())
    }

    fn visit(&mut self, p: Pending, stack: &mut Vec<Pending>) -> Result<()> {
        if p.arch.len() > MAX_PATH_LEN {
            let e = io::Error::new(
                io::ErrorKind::InvalidFilename,
                format!("its path is longer than {MAX_PATH_LEN} bytes"),
            );
            return self.skip(&p.source, "archive", e, "skipped");
        }
        let is_dir = kind_of(&p.st) == StatKind::Dir;
        let other_device = p.st.st_dev != self.input_dev;
        let descend = match self.select.verdict(&p.arch, is_dir, other_device) {
            Verdict::Leave => return Ok(()),
            Verdict::Store => true,
            Verdict::StoreNoDescend => false,
        };
        let kind = match kind_of(&p.st) {
            StatKind::Special(noun) => return self.warn(&p.source, format!("skipping {noun}")),
            StatKind::File => EntryKind::File,
            StatKind::Dir => EntryKind::Dir,
            StatKind::Symlink => EntryKind::Symlink,
        };
        if !p.arch.is_empty() {
            match self
                .overlap
                .admit(self.input, &p.arch, kind == EntryKind::Dir)
            {
                overlap::Verdict::New => {}
                overlap::Verdict::Duplicate => return Ok(()),
                overlap::Verdict::Conflict => {
                    return self.warn(
                        &p.source,
                        "stored already as another kind of entry from an earlier input; skipped with what is below it",
                    );
                }
                overlap::Verdict::SameDir => {
                    // Stored already; walk below it unless it is the directory walked then.
                    if !self.dirs_seen.contains(&identity(&p.st)) {
                        let children = self.list_dir(&p.source, &p.st, &p.arch)?;
                        stack.extend(children.into_iter().rev());
                    }
                    return Ok(());
                }
            }
        }
        let mut meta = EntryMeta {
            path: p.arch,
            kind,
            mode: mode_of(&p.st),
            mtime: mtime_of(&p.st),
            uid: p.st.st_uid,
            gid: p.st.st_gid,
            link: p.link,
            ..Default::default()
        };
        let mut size = 0;
        match kind {
            EntryKind::File => {
                size = size_of(&p.st);
                if p.st.st_nlink > 1 {
                    let id = identity(&p.st);
                    if let Some(first) = self.links.get(&id) {
                        // Not the same path: overlapping inputs were stored once above.
                        meta.kind = EntryKind::Hardlink;
                        meta.link = first.clone();
                        size = 0;
                    } else {
                        self.links.insert(id, meta.path.clone());
                    }
                }
            }
            EntryKind::Dir if descend => {
                let children = self.list_dir(&p.source, &p.st, &meta.path)?;
                stack.extend(children.into_iter().rev());
            }
            _ => {}
        }
        if meta.path.is_empty() {
            return Ok(());
        }
        let mut warnings = Vec::new();
        self.attrs
            .complete(&mut meta, p.xattrs, &mut |w| warnings.push(w));
        self.warn_all(&p.source, warnings)?;
        (self.on_event)(WalkEvent::Entry(InputEntry {
            meta,
            source: p.source,
            size,
        }))
    }

    /// Reads a directory's children, sorted by name bytes, with their stats. Problems become
    /// warnings and an empty list.
    fn list_dir(&mut self, source: &Path, st: &Stat, arch: &[u8]) -> Result<Vec<Pending>> {
        if !self.dirs_seen.insert(identity(st)) {
            self.warn(
                source,
                "directory already stored (symbolic link loop or bind mount); not descending",
            )?;
            return Ok(Vec::new());
        }
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
            names.retain(|n| n == super::select::CACHEDIR_TAG);
        }
        let mut out = Vec::with_capacity(names.len());
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
            let xattrs = if matches!(kind_of(&st), StatKind::Special(_)) {
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
            out.push(Pending {
                source: child,
                arch: child_arch,
                st,
                link,
                xattrs,
            });
        }
        Ok(out)
    }
}

/// `lstat` of `name` in `dir`; with `deref`, a symbolic link is followed and the result is
/// `(stat of the target, true)`, or `(lstat of the link, false)` when it dangles or loops.
fn stat_child(dir: BorrowedFd<'_>, name: &[u8], deref: bool) -> io::Result<(Stat, bool)> {
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
