//! The open directory chain of extraction: the directories between the output root and the
//! parent of the entry being extracted, opened one component at a time with
//! `openat(O_NOFOLLOW | O_DIRECTORY)` and kept open, so the next entry reuses the prefix it
//! shares with the previous one instead of walking again from the root.
//!
//! Why: walking every entry's parents from the root costs one `openat` per component per
//! entry, quadratic in the depth of a tree: a 157 KB archive of an 8,192-deep directory
//! chain took 1.05 million `openat` calls per 1,024 levels and 130 s to extract (issue 12
//! #22). With the chain an entry costs one `openat` per component of its parent that the
//! previous entry's parent does not share (amortised, see below), so the chain extracts in
//! N opens and any tree in about one open per directory.
//!
//! Safety is the walk's: every component is opened relative to the descriptor of the one
//! before it, from the root's descriptor, without following a symbolic link (a component that
//! is a link is refused, [`crate::Error::UnsafePath`]). Reusing a descriptor opened earlier in
//! the run is what the walk would get again: within a run the extractor never removes or
//! replaces a directory (a directory is never replaced by a non-directory), so a directory
//! once opened is still the one at that name. (A concurrent local process renaming
//! directories in the output is outside the threat model, for the walk as for this cache.)
//!
//! Bounded descriptors: a path may have 32,768 components, more than a process may hold open
//! (often 1,024). The chain keeps the descriptors of its top [`WINDOW`] levels and of every
//! [`CHECKPOINT`]-th level below them, at most `WINDOW + depth / CHECKPOINT` (384 at the
//! deepest path the format allows, 128 + depth/128 in general). A level whose descriptor was
//! dropped is reopened, when the chain is cut back to it, from the nearest checkpoint below:
//! at most `CHECKPOINT` opens, which restore that many levels, and the levels are dropped
//! again only after `WINDOW` ≥ `CHECKPOINT` further levels were opened above them. So the
//! opens are at most twice the components opened fresh, plus one per entry.

use std::cell::Cell;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags, mkdirat, openat};
use rustix::io::Errno;

use super::confine::{IMPLIED_DIR_MODE, on_disk, refuse_non_dir};
use super::loosen::{Loosened, SEARCH, WRITE};
use crate::{Error, Result};

/// Levels at the top of the chain whose descriptors are always kept.
pub(crate) const WINDOW: usize = 128;
/// Below the window, every `CHECKPOINT`-th level keeps its descriptor (≤ [`WINDOW`], so a
/// rebuild from a checkpoint stays inside the window).
pub(crate) const CHECKPOINT: usize = 128;

const _: () = assert!(CHECKPOINT <= WINDOW);

/// One directory of the chain: its name in the directory below, and its descriptor unless
/// it was dropped to bound the descriptors held.
#[derive(Debug)]
struct Level {
    name: Vec<u8>,
    fd: Option<OwnedFd>,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct DirChain {
    levels: Vec<Level>,
    /// `openat` calls made on directory components so far (a deterministic cost, for tests).
    opens: Cell<u64>,
    /// The directories this chain created (`/`-joined paths below the root), when asked to
    /// record them ([`DirChain::record_made`]): `x -k` leaves the metadata of a directory that
    /// existed before the run alone, and needs to tell one made as a parent in this run.
    made: Option<std::collections::HashSet<Vec<u8>>>,
    /// Where an existing directory the user owns but may not search or write is opened up
    /// (`super::loosen`); without it such a refusal is an error.
    loosen: Option<Loosened>,
}

/// Flags of every directory component open: a path descriptor, a directory, never a link.
fn dir_flags() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

impl DirChain {
    /// An empty chain (at the root).
    pub(crate) fn new() -> Self {
        DirChain::default()
    }

    /// Opens up the directories the user owns but may not search or write ([`Loosened`]).
    pub(crate) fn loosen_with(&mut self, l: Loosened) {
        self.loosen = Some(l);
    }

    /// Whether the directory `dir` (at `parents` below the root) was opened up after `e`
    /// refused `need` in it: try again.
    fn opened_up(&self, e: Errno, dir: BorrowedFd<'_>, parents: &[&[u8]], need: u32) -> bool {
        e == Errno::ACCESS
            && self
                .loosen
                .as_ref()
                .is_some_and(|l| l.open_up(dir, &parents.join(&b'/'), need))
    }

    /// From now on, remembers the directories this chain creates ([`DirChain::made`]).
    pub(crate) fn record_made(&mut self) {
        self.made.get_or_insert_with(Default::default);
    }

    /// Whether this chain created the directory `rel` (`/`-joined, below the root) since
    /// [`DirChain::record_made`].
    pub(crate) fn made(&self, rel: &[u8]) -> bool {
        self.made.as_ref().is_some_and(|m| m.contains(rel))
    }

    /// `openat` calls made on directory components so far.
    pub(crate) fn opens(&self) -> u64 {
        self.opens.get()
    }

    fn count_open(&self) {
        self.opens.set(self.opens.get() + 1);
    }

    /// Descriptors held now (for tests of the bound).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.levels.iter().filter(|l| l.fd.is_some()).count()
    }

    /// The directory `parents` below `root` (whose path is `root_path`, for messages),
    /// creating missing components (mode 0o777 minus umask) when `create`. Reuses the
    /// levels shared with the chain opened last; the returned descriptor lives in the chain
    /// until the next call. A component that is a symbolic link is refused
    /// ([`Error::UnsafePath`]); one that is not a directory is an I/O error.
    pub(crate) fn open<'a>(
        &'a mut self,
        root: BorrowedFd<'a>,
        root_path: &Path,
        parents: &[&[u8]],
        create: bool,
    ) -> Result<BorrowedFd<'a>> {
        let common = self
            .levels
            .iter()
            .zip(parents)
            .take_while(|(l, p)| l.name == **p)
            .count();
        self.levels.truncate(common);
        self.restore_top(root, root_path)?;
        for i in common..parents.len() {
            let comp = parents[i];
            let here = || on_disk(root_path, &parents[..=i].join(&b'/'));
            let cur = self.top(root);
            self.count_open();
            let mut created = false;
            let mut opened = openat(cur, comp, dir_flags(), Mode::empty());
            if let Err(e) = opened
                && self.opened_up(e, cur, &parents[..i], SEARCH)
            {
                opened = openat(cur, comp, dir_flags(), Mode::empty());
            }
            let next = match opened {
                Ok(fd) => fd,
                Err(Errno::NOENT) if create => {
                    let mkdir = || mkdirat(cur, comp, Mode::from_raw_mode(IMPLIED_DIR_MODE));
                    let made = match mkdir() {
                        Err(e) if self.opened_up(e, cur, &parents[..i], WRITE) => mkdir(),
                        made => made,
                    };
                    match made {
                        Ok(()) => created = true,
                        Err(Errno::EXIST) => {}
                        Err(e) => return Err(Error::io(here(), "create directory", e.into())),
                    }
                    self.count_open();
                    openat(cur, comp, dir_flags(), Mode::empty())
                        .map_err(|e| refuse_non_dir(cur, comp, here(), e))?
                }
                Err(e) => return Err(refuse_non_dir(cur, comp, here(), e)),
            };
            self.push(comp, next);
            if created && let Some(m) = self.made.as_mut() {
                m.insert(parents[..=i].join(&b'/'));
            }
        }
        Ok(self.top(root))
    }

    /// Forgets every level (the next open starts at the root).
    pub(crate) fn clear(&mut self) {
        self.levels.clear();
    }

    /// The descriptor of the top level (the root for an empty chain). The caller made sure
    /// it is held ([`DirChain::restore_top`]).
    fn top<'a>(&'a self, root: BorrowedFd<'a>) -> BorrowedFd<'a> {
        match self.levels.last() {
            Some(l) => l.fd.as_ref().expect("top level is open").as_fd(),
            None => root,
        }
    }

    /// Adds an opened level and drops the descriptor that leaves the window (unless it is a
    /// checkpoint).
    fn push(&mut self, name: &[u8], fd: OwnedFd) {
        self.levels.push(Level {
            name: name.to_vec(),
            fd: Some(fd),
        });
        let len = self.levels.len();
        if len > WINDOW {
            let depth = len - WINDOW;
            if !depth.is_multiple_of(CHECKPOINT) {
                self.levels[depth - 1].fd = None;
            }
        }
    }

    /// Makes the top level's descriptor held again after a cut: reopens the levels above the
    /// nearest held one (a checkpoint, at most `CHECKPOINT - 1` levels below).
    fn restore_top(&mut self, root: BorrowedFd<'_>, root_path: &Path) -> Result<()> {
        let Some(top) = self.levels.len().checked_sub(1) else {
            return Ok(());
        };
        if self.levels[top].fd.is_some() {
            return Ok(());
        }
        let from = self.levels[..top]
            .iter()
            .rposition(|l| l.fd.is_some())
            .map_or(0, |i| i + 1);
        for i in from..=top {
            let opened = {
                let (below, rest) = self.levels.split_at(i);
                let cur = below
                    .last()
                    .map_or(root, |l| l.fd.as_ref().expect("held").as_fd());
                let name = &rest[0].name;
                let here = || {
                    let names: Vec<&[u8]> = self.levels[..=i]
                        .iter()
                        .map(|l| l.name.as_slice())
                        .collect();
                    on_disk(root_path, &names.join(&b'/'))
                };
                openat(cur, name.as_slice(), dir_flags(), Mode::empty())
                    .map_err(|e| refuse_non_dir(cur, name, here(), e))?
            };
            self.count_open();
            self.levels[i].fd = Some(opened);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(dir: &Path) -> OwnedFd {
        openat(
            rustix::fs::CWD,
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap()
    }

    #[test]
    fn a_deep_chain_costs_one_open_per_level_and_bounded_descriptors() {
        let tmp = tempfile::tempdir().unwrap();
        let r = root(tmp.path());
        let mut c = DirChain::new();
        let names: Vec<Vec<u8>> = (0..1000).map(|i| format!("d{i}").into_bytes()).collect();
        let comps: Vec<&[u8]> = names.iter().map(|n| n.as_slice()).collect();
        for depth in 1..=comps.len() {
            c.open(r.as_fd(), tmp.path(), &comps[..depth], true)
                .unwrap();
        }
        // Each level: one open that fails (missing) and one after mkdir.
        assert_eq!(c.opens(), 2000);
        assert_eq!(c.held(), WINDOW + (1000 - WINDOW) / CHECKPOINT);
        // Back up the chain one level at a time: the window is free, then each checkpoint
        // rebuild reopens at most CHECKPOINT - 1 levels.
        let before = c.opens();
        for depth in (0..comps.len()).rev() {
            c.open(r.as_fd(), tmp.path(), &comps[..depth], false)
                .unwrap();
        }
        assert_eq!(c.opens() - before, 1000 - WINDOW as u64 - 6);
        assert!(c.held() <= WINDOW + 1000 / CHECKPOINT);
    }

    #[test]
    fn siblings_reuse_the_shared_prefix() {
        let tmp = tempfile::tempdir().unwrap();
        let r = root(tmp.path());
        let mut c = DirChain::new();
        c.open(r.as_fd(), tmp.path(), &[b"a", b"b", b"c"], true)
            .unwrap();
        let n = c.opens();
        c.open(r.as_fd(), tmp.path(), &[b"a", b"b", b"d"], true)
            .unwrap();
        assert_eq!(c.opens() - n, 2, "one failed open and one after mkdir");
        let n = c.opens();
        c.open(r.as_fd(), tmp.path(), &[b"a", b"b", b"c"], false)
            .unwrap();
        assert_eq!(c.opens() - n, 1);
        let n = c.opens();
        c.open(r.as_fd(), tmp.path(), &[b"a", b"b", b"c"], false)
            .unwrap();
        assert_eq!(c.opens() - n, 0);
        assert!(tmp.path().join("a/b/d").is_dir());
    }

    #[test]
    fn a_symlink_component_is_refused_even_after_its_prefix_was_reused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("a/real")).unwrap();
        std::os::unix::fs::symlink("/tmp", tmp.path().join("a/link")).unwrap();
        let r = root(tmp.path());
        let mut c = DirChain::new();
        c.open(r.as_fd(), tmp.path(), &[b"a", b"real"], false)
            .unwrap();
        match c.open(r.as_fd(), tmp.path(), &[b"a", b"link", b"x"], true) {
            Err(Error::UnsafePath { path, .. }) => assert_eq!(path, tmp.path().join("a/link")),
            other => panic!("expected UnsafePath, got {other:?}"),
        }
        assert!(!Path::new("/tmp/x").exists() || Path::new("/tmp/x").is_dir());
    }
}
