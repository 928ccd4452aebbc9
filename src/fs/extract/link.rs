//! Links: [`Extractor::make_hardlink`] — a hard link is made only to the file its own target
//! entry committed in this run; a target kept, stripped away or not selected is named, not an
//! error — and [`Extractor::make_symlink`], made under a temporary name like a file.

use std::os::fd::AsFd;

use rustix::fs::{AtFlags, linkat, symlinkat};

use super::super::confine;
use super::super::conflict::Reason;
use super::super::loosen::{self, WRITE};
use super::super::restore::{self, Made, On};
use super::super::sink::extracted_key;
use super::Extractor;
use crate::format::entry::{EntryKind, EntryMeta};
use crate::{Error, Result};

impl Extractor {
    /// Creates a hard link to `meta.link`, which must be a file committed earlier in this run
    /// (after stripping the same number of components); otherwise [`Error::UnsafePath`].
    pub fn make_hardlink(&mut self, meta: &EntryMeta) -> Result<()> {
        let Some(t) = self.target(meta)? else {
            return Ok(());
        };
        let path = confine::on_disk(&self.root_path, &t.rel);
        let target = confine::split_entry(&meta.link, self.strip)?;
        if let Some(tt) = &target
            && let Some(why) = self.unmade_file(&tt.rel)
        {
            // Its target could not be made (`super::fit`).
            self.unmade_link(&t, &meta.link, why);
            return Ok(());
        }
        // Not made, and named, when the target's name does not hold the target's file: it was
        // kept (an existing file), or another entry stripped to the same name holds it (with
        // -f a later one replaced it). Only a target never extracted at all is a hostile
        // archive's link (below).
        if let Some(tt) = &target
            && !self.holds(&tt.rel, &meta.link)
            && (self.conflicts.was_kept(&extracted_key(&tt.rel)) || self.taken(&tt.rel))
        {
            // The link's own name is taken already (a restore run again over an earlier one:
            // the target's own file; or another file): an existing file, kept as any other
            // (silent with --skip-existing, named by -k). Only a link that could not be made
            // and is not there is 'not made'.
            let reason = match std::fs::symlink_metadata(&path) {
                Ok(m) if !m.is_dir() => Reason::Exists,
                _ => Reason::LinkTargetKept(tt.rel.clone()),
            };
            self.keep(path, reason, &t);
            return Ok(());
        }
        let Some(target) = target.filter(|tt| self.holds(&tt.rel, &meta.link)) else {
            return Err(Error::UnsafePath {
                path,
                reason: "hard link target was not extracted in this run",
            });
        };
        if target.rel == t.rel {
            return Err(Error::UnsafePath {
                path,
                reason: "hard link to itself",
            });
        }
        let target_dir = self
            .link_chain
            .open(self.root.as_fd(), &self.root_path, &target.parents, false)?
            .try_clone_to_owned()
            .map_err(|e| Error::io(&self.root_path, "duplicate descriptor", e))?;
        let Some((dir, info)) = self.parent_or_keep(&t)? else {
            return Ok(());
        };
        if !info.is_some_and(|i| i.fresh) && !self.free_for_file(&dir, &t, &path)? {
            return Ok(());
        }
        let made = self.loosened.retry(
            dir.as_fd(),
            &t.parents.join(&b'/'),
            WRITE,
            loosen::denied,
            || {
                confine::create_temp(&path, |name| {
                    linkat(&target_dir, target.name, &*dir, name, AtFlags::empty())
                })
            },
        );
        let (tmp, (), cleanup_id) = match made {
            // The target has as many links as the file system allows (65,000 on ext4; the
            // archive may come from one that allows more): this link is named and skipped.
            Err(e) if super::fit::is_errno(&e, rustix::io::Errno::MLINK) => {
                self.unmade_link(
                    &t,
                    &meta.link,
                    "which has as many links as the file system allows",
                );
                return Ok(());
            }
            made => made?,
        };
        let res = confine::place(dir.as_fd(), &tmp, t.name, self.policy.replace(), &path);
        let res = self.placed(res, &t);
        if !matches!(res, Ok(true)) {
            confine::remove(dir.as_fd(), &tmp);
        } else if let Ok(mut map) = self.extracted.lock() {
            map.insert(extracted_key(&t.rel), extracted_key(&meta.path));
        }
        crate::fs::cleanup::unregister(cleanup_id);
        res.map(|_| ())
    }

    /// Creates a symbolic link with the stored target (not checked, never followed), owner,
    /// attributes and mtime, under a temporary name renamed into place like a file.
    pub fn make_symlink(&mut self, meta: &EntryMeta) -> Result<()> {
        let Some(t) = self.target(meta)? else {
            return Ok(());
        };
        let path = confine::on_disk(&self.root_path, &t.rel);
        if meta.kind != EntryKind::Symlink || meta.link.is_empty() {
            return Err(Error::UnsafePath {
                path,
                reason: "symbolic link entry without a target",
            });
        }
        let Some((dir, info)) = self.parent_or_keep(&t)? else {
            return Ok(());
        };
        if !info.is_some_and(|i| i.fresh) && !self.free_for_file(&dir, &t, &path)? {
            return Ok(());
        }
        let plan = self
            .policy
            .plan(meta, info.as_ref(), &mut self.ids, Made::Symlink);
        let made = self.loosened.retry(
            dir.as_fd(),
            &t.parents.join(&b'/'),
            WRITE,
            loosen::denied,
            || confine::create_temp(&path, |name| symlinkat(meta.link.as_slice(), &*dir, name)),
        );
        let (tmp, (), cleanup_id) = match made {
            // A target longer than the file system holds (4,095 bytes on Linux; the format
            // allows 65,536): this link is named and skipped, the rest restored.
            Err(e) if super::fit::too_long(&e) => {
                self.unmade_symlink(&t, meta.link.len());
                return Ok(());
            }
            made => made?,
        };
        let res = restore::apply(
            On::Link(dir.as_fd(), &tmp),
            meta,
            &plan,
            &self.policy,
            &path,
            &self.notes,
        )
        .and_then(|()| confine::place(dir.as_fd(), &tmp, t.name, self.policy.replace(), &path));
        let res = self.placed(res, &t);
        if !matches!(res, Ok(true)) {
            confine::remove(dir.as_fd(), &tmp);
        }
        super::super::cleanup::unregister(cleanup_id);
        res.map(|_| ())
    }
}
