//! The deferred directory pass: [`Extractor::apply_dirs`] gives every directory entry its
//! stored metadata, and every existing directory the run opened up (`super::super::loosen`)
//! its final mode, children before their parents.

use std::collections::BTreeMap;
use std::os::fd::AsFd;

use rustix::fs::{Mode, OFlags, openat};
use rustix::io::Errno;

use super::super::cleanup;
use super::super::confine;
use super::super::loosen::{READ, chmod_fd};
use super::super::restore;
use super::{Extractor, PendingDir};
use crate::{Error, Result};

impl Extractor {
    /// Applies the stored metadata of every directory entry (see
    /// [`Extractor::apply_dirs`]). Tries them all; returns the first error. Warnings about
    /// what could not be set are dropped: call [`Extractor::apply_dirs`] and
    /// [`Extractor::take_warnings`] to get them.
    pub fn finish(mut self) -> Result<()> {
        self.apply_dirs()
    }

    /// Applies the stored owner, attributes, mode and mtime of every directory entry made so
    /// far, children before their parents: paths in descending byte order (the root entry,
    /// the empty path, last), each directory's parents walked with the chain (without
    /// following links), so the whole pass costs about one open per directory. An existing
    /// directory the run opened up that is not a directory entry (the output directory, a
    /// parent of selected members, one `-k` keeps) gets back the mode it had, in the same
    /// order. Tries them all; returns the first error.
    pub fn apply_dirs(&mut self) -> Result<()> {
        if let Some(id) = self.interrupt_note.take() {
            cleanup::unregister(id);
        }
        self.last_parent = None;
        let mut dirs = std::mem::take(&mut self.dirs);
        // Ascending: the deepest (greatest) is taken from the end.
        dirs.sort_by(|a, b| a.rel.cmp(&b.rel));
        let mut opened: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
        let mut first_err = None;
        loop {
            // Opened up so far, also by this pass (a parent it could not search): the first
            // mode recorded is the one a directory had.
            for (rel, mode) in self.loosened.take() {
                opened.entry(rel).or_insert(mode);
            }
            let pending_first = match (dirs.last(), opened.last_key_value()) {
                (None, None) => break,
                (Some(d), Some((o, _))) => d.rel >= *o,
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            let res = if pending_first {
                let Some(d) = dirs.pop() else { break };
                let res = self.apply_dir(&d);
                for (rel, mode) in self.loosened.take() {
                    opened.entry(rel).or_insert(mode);
                }
                if res.is_ok() {
                    // It has its stored mode now; one that failed gets its own mode back.
                    opened.remove(&d.rel);
                }
                res
            } else {
                let Some((rel, mode)) = opened.pop_last() else {
                    break;
                };
                self.put_back(&rel, mode)
            };
            if let Err(e) = res
                && first_err.is_none()
            {
                first_err = Some(e);
            }
        }
        self.loosened.done();
        self.chain.clear();
        first_err.map_or(Ok(()), Err)
    }

    fn apply_dir(&mut self, d: &PendingDir) -> Result<()> {
        if d.rel.is_empty() {
            return restore::apply_fd(
                &self.root,
                &d.meta,
                &d.plan,
                &self.policy,
                &self.root_path,
                &self.notes,
            );
        }
        let comps: Vec<&[u8]> = d.rel.split(|&b| b == b'/').collect();
        let Some((name, parents)) = comps.split_last() else {
            return Ok(());
        };
        let path = confine::on_disk(&self.root_path, &d.rel);
        let parent = self
            .chain
            .open(self.root.as_fd(), &self.root_path, parents, false)?;
        self.opens += 1;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match openat(parent, *name, flags, Mode::empty()) {
            // An existing directory its owner may not read (a restore run again over one
            // whose stored mode is 0o311): opened up to set its metadata, which sets its
            // mode too.
            Err(Errno::ACCESS) => {
                let here = openat(parent, *name, path_flags(), Mode::empty());
                if here.is_ok_and(|h| self.loosened.open_up(h.as_fd(), &d.rel, READ)) {
                    openat(parent, *name, flags, Mode::empty())
                } else {
                    Err(Errno::ACCESS)
                }
            }
            fd => fd,
        }
        .map_err(|e| Error::io(&path, "open directory", e.into()))?;
        restore::apply_fd(&fd, &d.meta, &d.plan, &self.policy, &path, &self.notes)
    }

    /// Gives the directory at `rel` (an existing one this run opened up) back its `mode`.
    fn put_back(&mut self, rel: &[u8], mode: u32) -> Result<()> {
        let path = confine::on_disk(&self.root_path, rel);
        let chmod = |fd| chmod_fd(fd, mode).map_err(|e| Error::io(&path, "chmod", e.into()));
        if rel.is_empty() {
            return chmod(self.root.as_fd());
        }
        let comps: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
        let Some((name, parents)) = comps.split_last() else {
            return Ok(());
        };
        let parent = self
            .chain
            .open(self.root.as_fd(), &self.root_path, parents, false)?;
        self.opens += 1;
        let fd = openat(parent, *name, path_flags(), Mode::empty())
            .map_err(|e| Error::io(&path, "open directory", e.into()))?;
        chmod(fd.as_fd())
    }
}

/// A directory opened only to be named (`O_PATH`), never through a link.
fn path_flags() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}
