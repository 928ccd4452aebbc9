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
//!   path once, from its first occurrence (see `super::overlap`): the same file reached again
//!   quietly, a *different* file under a stored name as [`WalkEvent::Omitted`] naming both.
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
//! - **FIFOs, sockets, character and block devices** are skipped, named with their type
//!   ([`WalkEvent::Omitted`]: `krypta c` exits 6, as for every input left out). Device nodes hold no data worth a backup and restoring them needs root; a
//!   FIFO is never opened, so the walk can not hang on one.
//! - **A directory reached twice** (same device and inode: with `-L` a link to a directory
//!   of the tree, `src /abs/path/src`, a bind mount) is stored with its contents again under
//!   each name, as `tar -h` does: a restore gives what each name showed. Its files are stored
//!   again too, as hard links where they have `st_nlink > 1` (the walk remembers those
//!   inodes anyway) and as copies otherwise: turning every such file into a hard link would
//!   mean remembering the inode of every file walked, and would restore two names the
//!   source showed as separate files as one. (Storing it empty, as before, lost its contents
//!   under the second name, with a warning blaming a loop.) The same directory reached
//!   twice under the *same* archive path is walked once (`super::overlap`).
//! - **Loops**: a directory that is one of its own ancestors in the walk (a symbolic link or
//!   bind mount to a directory above it) is stored empty and not descended into, with a
//!   warning naming that ancestor; so the walk always ends. Nothing is missing: what is
//!   below it is stored under the ancestor's name, so this does not change the exit code.
//! - **Errors**: an input that can not be `lstat`ed, and anything deeper that vanishes or can
//!   not be read, is a [`WalkEvent::Skipped`] naming it and the I/O error (an unreadable
//!   directory is still stored, empty); the caller decides whether that stops the run
//!   (`--strict`) or is counted (exit code 6).
//! - **Streams**: an input `-` (stdin), or one that is a symbolic link to a pipe or socket
//!   (`<(cmd)`: `/dev/fd/63`), is not walked: it is one entry, a regular file whose bytes
//!   `krypta c` reads from the stream ([`InputEntry::stream`]; `stream` says why and how).
//! - **Selection** (`--exclude`, `--one-file-system`, `--exclude-caches`, a name met twice) is
//!   [`super::select`]'s; the walk asks it before an input, before each entry and after
//!   listing a directory ([`walk_selected`]).
//! - **Deep trees**: directories are opened by path in pieces (see `longpath`), children are
//!   `lstat`ed relative to their directory's descriptor, so paths longer than `PATH_MAX` work;
//!   the walk lists one directory at a time, whatever the depth, and keeps the descriptors of
//!   at most 64 directories whose files are still to be opened (`list` says why and how).

mod list;
mod skipped;
mod stream;

pub use skipped::Skipped;

pub use list::OpenFile;
use list::stat_child;
pub(crate) use list::{is_out_of_resources, raise_descriptor_limit};

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use rustix::fs::{Stat, readlinkat};

pub use super::archive_path::archive_path_of;
use super::attrs::EntryAttrs;
use super::longpath;
use super::meta::{StatKind, identity, kind_of, mode_of, mtime_of, size_of};
use super::names::escape_path;
use super::overlap::{self, Overlap};
use super::select::{Selector, Verdict};
use super::xattr::XattrSelect;
use crate::Result;
use crate::format::entry::{EntryKind, EntryMeta, MAX_PATH_LEN, Xattr};

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
    /// Open each regular file stored and hand it over open ([`InputEntry::opened`]), as
    /// `krypta c` does (see `list`: fewer system calls per file); else only check that it can
    /// be read.
    pub open_files: bool,
}

/// One entry found by the walk.
#[derive(Debug)]
pub struct InputEntry {
    /// The entry's metadata; `path` is the archive path, `link` the symlink target or the
    /// archive path of the first hard link.
    pub meta: EntryMeta,
    /// Where to read it on disk (input path joined with the names below it; may be longer than
    /// `PATH_MAX`, which [`super::source::FileSource::open`] handles).
    pub source: PathBuf,
    /// `st_size` in bytes at walk time for files; 0 for every other kind.
    pub size: u64,
    /// The file, opened by the walk with [`WalkOptions::open_files`] (read it with
    /// [`super::source::FileSource::from_fd`]); `None` for every other kind and without it.
    pub opened: Option<OpenFile>,
    /// A stream, not a file on disk: the input `-` (`source` is `-`) or an input that is a
    /// symbolic link to a pipe or socket (`source` is that link). `meta` is a regular file's,
    /// `size` 0: read it to its end with [`super::source::open_stream`].
    pub stream: bool,
}

/// What the walk reports, in order. (Nearly every event is an entry, so a box for the rare
/// warnings' sake would only add an allocation per entry.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum WalkEvent {
    /// An entry to archive.
    Entry(InputEntry),
    /// Something rewritten or noted (a leading `/` removed, a dangling link stored as a
    /// link); nothing is missing from the archive. The text names the file (escaped with
    /// `escape_path`).
    Warning(String),
    /// Something left out of the archive by design, named with the reason: a FIFO, socket or
    /// device, a file under a name another input stored already. `krypta c` counts it as skipped (exit 6); it is
    /// not a read error, so `--strict` does not stop at it.
    Omitted(String),
    /// A file or directory that could not be read: left out (a directory: stored empty).
    Skipped(Skipped),
}

/// A path waiting on the walk's stack: its stat was taken when its directory was listed.
struct Pending {
    source: PathBuf,
    arch: Vec<u8>,
    st: Stat,
    /// Symlink target when `st` is a symlink (read while the parent was open).
    link: Vec<u8>,
    /// Extended attributes, sorted by name (read while the parent was open; a file's when it
    /// is opened, with [`WalkOptions::open_files`]).
    xattrs: Vec<Xattr>,
    /// The directory holding a regular file, kept open to open it (`list`).
    dir: Option<Rc<list::HeldDir>>,
    /// Directories above it in this input's walk (`Walker::ancestors` is cut to this).
    depth: usize,
    /// An input read as a stream (`stream`); `st` is the stream's (the pipe's, stdin's).
    stream: bool,
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
    walk_selected_in(None, inputs, opts, select, on_event)
}

/// [`walk_selected`] with the inputs relative to `dir` (`krypta c -C DIR`): each input is
/// read at `dir/INPUT` ([`on_disk`]) and stored under the name INPUT gives, as if the walk
/// ran in `dir`; `-` is still stdin. Warnings and [`InputEntry::source`] name the file on
/// disk (`dir/INPUT`).
pub fn walk_selected_in(
    dir: Option<&Path>,
    inputs: &[PathBuf],
    opts: &WalkOptions,
    select: &Selector,
    on_event: &mut dyn FnMut(WalkEvent) -> Result<()>,
) -> Result<()> {
    let roots: Vec<Option<Vec<u8>>> = inputs
        .iter()
        .map(|i| Some(stream::input_path(i).0))
        .collect();
    let mut w = Walker {
        opts: *opts,
        links: HashMap::new(),
        dirs_seen: HashSet::new(),
        ancestors: Vec::new(),
        notes_shown: HashSet::new(),
        overlap: Overlap::new(&roots),
        attrs: EntryAttrs::new(opts.xattrs, opts.numeric_owner),
        input: 0,
        on_event,
        select,
        input_dev: 0,
        held: Rc::new(()),
        open: Default::default(),
        budget: list::Budget::from_limit(),
        streams: HashMap::new(),
    };
    if let Some(i) = roots
        .iter()
        .position(|r| r.as_ref().is_some_and(|r| r.is_empty()))
    {
        w.root_entry(&on_disk(dir, &inputs[i]))?;
    }
    for (i, input) in inputs.iter().enumerate() {
        w.input = i;
        w.walk_input(input, &on_disk(dir, input))?;
    }
    Ok(())
}

/// Where the input `input` is read when inputs are relative to `dir` (`-C DIR`): `dir/input`;
/// an absolute input and `-` (stdin) as given, and every input without `dir`.
pub fn on_disk(dir: Option<&Path>, input: &Path) -> PathBuf {
    match dir {
        Some(d) if !stream::is_stdin(input) => d.join(input),
        _ => input.to_path_buf(),
    }
}

struct Walker<'a> {
    opts: WalkOptions,
    /// (dev, ino) of files with st_nlink > 1 → archive path of the first one stored.
    links: HashMap<(u64, u64), Vec<u8>>,
    /// (dev, ino) of directories already descended into.
    dirs_seen: HashSet<(u64, u64)>,
    /// (dev, ino) and source of the directories above the entry being visited (loops).
    ancestors: Vec<((u64, u64), PathBuf)>,
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
    /// One clone per directory descriptor kept open (`list::HeldDir`).
    held: Rc<()>,
    /// Files opened and handed over, not yet taken (`list::OpenFile`).
    open: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// How many of each the walk may hold.
    budget: list::Budget,
    /// (dev, ino) of each stream stored → the input it was read from (a second name for it
    /// would read nothing).
    streams: HashMap<(u64, u64), PathBuf>,
}

impl Walker<'_> {
    fn warn(&mut self, path: &Path, what: impl std::fmt::Display) -> Result<()> {
        let shown = escape_path(path.as_os_str().as_bytes());
        (self.on_event)(WalkEvent::Warning(format!("{shown}: {what}")))
    }

    /// Reports `path` as left out of the archive, and why ([`WalkEvent::Omitted`]).
    fn omit(&mut self, path: &Path, why: impl std::fmt::Display) -> Result<()> {
        let shown = escape_path(path.as_os_str().as_bytes());
        (self.on_event)(WalkEvent::Omitted(format!("{shown}: {why}")))
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
            opened: None,
            stream: false,
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

    /// Walks the input `given` (its archive path comes from this), read at `input`.
    fn walk_input(&mut self, given: &Path, input: &Path) -> Result<()> {
        let (arch, note) = stream::input_path(given);
        if let Some(note) = note
            && self.notes_shown.insert(note.clone())
        {
            (self.on_event)(WalkEvent::Warning(note))?;
        }
        if let Some((name, first)) = self.overlap.below_non_dir(self.input, &arch) {
            return self.omit(
                input,
                format_args!(
                    "skipped: it would lie below {}, a file or link stored from {}",
                    escape_path(&name),
                    escape_path(first.as_os_str().as_bytes())
                ),
            );
        }
        if self.select.excludes_a_parent(&arch) {
            return Ok(());
        }
        let deref = self.opts.dereference;
        let mut warnings = Vec::new();
        let found = if stream::is_stdin(input) {
            stream::stdin_stat().map(|st| (st, false, Vec::new(), true))
        } else {
            longpath::with_parent(input, |dir, name| {
                let (st, via_link) = stat_child(dir, name, deref)?;
                if let Some(pipe) = stream::behind_link(input, dir, name, &st, via_link) {
                    return Ok((pipe, false, Vec::new(), true));
                }
                // The root's own attributes went into the root entry.
                let xattrs = if arch.is_empty() || matches!(kind_of(&st), StatKind::Special(_)) {
                    Vec::new()
                } else {
                    self.attrs
                        .xattrs(dir, name, input, via_link, &mut |w| warnings.push(w))
                };
                Ok((st, via_link, xattrs, false))
            })
        };
        self.warn_all(input, warnings)?;
        let (st, via_link, xattrs, stream) = match found {
            Ok(found) => found,
            Err(e) => return self.skip(input, "stat", e, "skipped"),
        };
        let mut source = input.to_path_buf();
        if via_link && kind_of(&st) == StatKind::File && !stream {
            source = match std::fs::canonicalize(input) {
                Ok(real) => real,
                Err(e) => return self.skip(input, "resolve symbolic link", e, "skipped"),
            };
        }
        let link = if kind_of(&st) == StatKind::Symlink && !stream {
            match longpath::with_parent(input, |dir, name| Ok(readlinkat(dir, name, Vec::new())?)) {
                Ok(t) => t.into_bytes(),
                Err(e) => return self.skip(input, "read link", e, "skipped"),
            }
        } else {
            Vec::new()
        };
        self.input_dev = st.st_dev;
        if arch.is_empty() && kind_of(&st) != StatKind::Dir {
            return self.omit(
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
            dir: None,
            depth: 0,
            stream,
        }];
        self.ancestors.clear();
        while let Some(p) = stack.pop() {
            self.visit(p, &mut stack)?;
        }
        Ok(())
    }

    /// Lists the directory `source` to walk below it, unless it is one of its own ancestors (a
    /// loop: warned, nothing listed). Its children come one level deeper.
    fn enter(&mut self, source: &Path, st: &Stat, arch: &[u8]) -> Result<Vec<Pending>> {
        let id = identity(st);
        if let Some((_, above)) = self.ancestors.iter().find(|(a, _)| *a == id) {
            let above = escape_path(above.as_os_str().as_bytes());
            self.warn(
                source,
                format_args!(
                    "directory loop: it is {above}, a directory above it (symbolic link or bind mount); stored empty, not descended"
                ),
            )?;
            return Ok(Vec::new());
        }
        self.ancestors.push((id, source.to_path_buf()));
        self.list_dir(source, st, arch)
    }

    fn visit(&mut self, mut p: Pending, stack: &mut Vec<Pending>) -> Result<()> {
        // What is deeper than `p`'s parent was finished (the walk is depth first).
        self.ancestors.truncate(p.depth);
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
            _ if p.stream => EntryKind::File,
            StatKind::Special(noun) => return self.omit(&p.source, format!("skipping {noun}")),
            StatKind::File => EntryKind::File,
            StatKind::Dir => EntryKind::Dir,
            StatKind::Symlink => EntryKind::Symlink,
        };
        if !p.arch.is_empty() {
            let is_dir = kind == EntryKind::Dir;
            match self
                .overlap
                .admit(self.input, &p.arch, is_dir, identity(&p.st), &p.source)
            {
                overlap::Verdict::New => {}
                overlap::Verdict::Duplicate => return Ok(()),
                overlap::Verdict::Taken { first, other_kind } => {
                    // (Two directories merge: `SameDir`.)
                    let (what, below) = if other_kind {
                        ("another kind of entry", " with what is below it")
                    } else {
                        ("a different file", "")
                    };
                    return self.omit(
                        &p.source,
                        format_args!(
                            "skipped{below}: its name {} holds {} already ({what} from an earlier input)",
                            escape_path(&p.arch),
                            escape_path(first.as_os_str().as_bytes())
                        ),
                    );
                }
                overlap::Verdict::SameDir => {
                    // Stored already; walk below it unless it is the directory walked then.
                    if !self.dirs_seen.contains(&identity(&p.st)) {
                        let children = self.enter(&p.source, &p.st, &p.arch)?;
                        stack.extend(children.into_iter().rev());
                    }
                    return Ok(());
                }
            }
        }
        if p.stream {
            if let Some(first) = self.streams.get(&identity(&p.st)) {
                let first = escape_path(first.as_os_str().as_bytes());
                let why = format!(
                    "skipped: the pipe or socket it names was stored already, from {first}"
                );
                return self.omit(&p.source, why);
            }
            self.streams.insert(identity(&p.st), p.source.clone());
        }
        let mut meta = if p.stream {
            stream::meta(p.arch)
        } else {
            EntryMeta {
                path: p.arch,
                kind,
                mode: mode_of(&p.st),
                mtime: mtime_of(&p.st),
                uid: p.st.st_uid,
                gid: p.st.st_gid,
                link: p.link,
                ..Default::default()
            }
        };
        let mut size = 0;
        let mut opened = None;
        match kind {
            _ if p.stream => {}
            EntryKind::File => {
                size = size_of(&p.st);
                let id = identity(&p.st);
                if let Some(first) = self.links.get(&id).filter(|_| p.st.st_nlink > 1) {
                    // Not the same path: overlapping inputs were stored once above.
                    meta.kind = EntryKind::Hardlink;
                    meta.link = first.clone();
                    size = 0;
                } else {
                    let mut first_link = p.st.st_nlink > 1;
                    if self.opts.open_files {
                        // Skipped (not remembered as a first link) when it cannot be opened.
                        match self.open_file(&p.source, p.dir.take(), &mut p.xattrs)? {
                            list::Opened::Now(f, st) => {
                                if identity(&st) != id {
                                    // Replaced since it was listed: what is stored is the file
                                    // opened, with its own metadata, and it is nobody's link.
                                    (meta.mode, meta.mtime) = (mode_of(&st), mtime_of(&st));
                                    (meta.uid, meta.gid) = (st.st_uid, st.st_gid);
                                    size = size_of(&st);
                                    first_link = false;
                                }
                                opened = Some(f);
                            }
                            list::Opened::Later => {}
                            list::Opened::Skipped => return Ok(()),
                        }
                    }
                    if first_link {
                        self.links.insert(id, meta.path.clone());
                    }
                }
            }
            EntryKind::Dir if descend => {
                let children = self.enter(&p.source, &p.st, &meta.path)?;
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
            opened,
            stream: p.stream,
        }))
    }
}
