//! Restoring an entry's metadata onto the file, directory or symbolic link that extraction
//! made, in one fixed order: content (written before) → owner → extended attributes (ACLs and
//! capabilities included) → mode → times.
//!
//! Why this order (keep it):
//! - **Owner before attributes**: `chown` clears `security.capability` (and setuid/setgid),
//!   so capabilities set before it would be lost.
//! - **Attributes before mode**: setting `system.posix_acl_access` rewrites the permission
//!   bits from the ACL; the mode is set after it (it also restores setuid/setgid, which
//!   `chown` cleared).
//! - **Times last**: nothing after it may touch the mtime (for a directory that includes its
//!   children: directories are finished after everything below them).
//! - **As root, owners are restored by name** when the archive holds a name this system
//!   knows (`getpwnam_r` / `getgrnam_r`, cached), else by id; `--numeric-owner` uses ids
//!   only. An ordinary user does not restore owners unless asked (`--same-owner`, as tar).
//! - **Refusals are warnings**: an owner or attribute the kernel will not set (an ordinary
//!   user giving a file away, `trusted.*`, `security.capability`, a filesystem without
//!   attributes) is a warning naming the file and what was not set ([`super::notes`]), and
//!   the entry is restored otherwise. Any other error (an I/O error) fails the entry.
//!
//! System calls, each made only when its effect is not already there (issue 13 item 2
//! counted 11 per small file; a fresh restore of a small file now makes 5: `openat`,
//! `pwrite`, `futimens` (which strace shows as `utimensat`), `linkat`, `close`; the `openat`
//! is `O_TMPFILE` and the `linkat` gives the file its name, see `super::unnamed`):
//! - `fchown` / `fchownat(AT_SYMLINK_NOFOLLOW)`: only when restoring owners and the wanted
//!   owner differs from the one creation gave (this process's euid, and the directory's group
//!   when it is setgid, else the egid; known for the output directory, from one `fstat`, and
//!   for every directory this run created).
//! - `fsetxattr` / `lsetxattr`: one per attribute the entry holds (none for most files).
//! - `fchmod`: only when the mode creation gave is not the wanted one (files are created with
//!   their final permission bits when no `chown` follows, minus the umask the kernel applies;
//!   unknown under a directory with a default ACL, which replaces the umask), or an access ACL
//!   was set.
//! - `futimens` / `utimensat(AT_SYMLINK_NOFOLLOW)`: always, unless `--no-mtime`.
//!
//! A `fchmod` or `futimens` refused with EPERM/EACCES (an existing object of another user) is
//! followed by one `fstat`: when the object already has that mode or mtime, the refusal is
//! not an error (nothing needed changing); otherwise it fails as before.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use rustix::fs::{
    AtFlags, Gid, Mode, Timespec, Timestamps, UTIME_OMIT, Uid, chownat, fchmod, fchown, futimens,
    utimensat,
};
use rustix::io::Errno;

use super::notes::Notes;
use super::owner::IdCache;
use super::xattr::{self, ACL_ACCESS, SetOn, SetOutcome, XattrSelect};
use crate::format::entry::{EntryMeta, Timestamp};
use crate::{Error, Result};

/// The setgid bit of `st_mode`.
const S_ISGID: u32 = 0o2000;

/// How metadata is applied (computed once from `ExtractOptions`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    /// What to do with existing names (`super::conflict`).
    pub existing: super::conflict::Existing,
    /// Leave mtimes at extraction time.
    pub no_mtime: bool,
    /// Keep setuid/setgid/sticky and ignore the umask (root or `--same-permissions`).
    pub keep_special: bool,
    /// The umask applied to stored modes: the process umask, or 0 with `keep_special`.
    pub umask: u32,
    /// The process umask, which the kernel applies to what is created.
    pub process_umask: u32,
    /// `chown` to the stored owner.
    pub restore_owner: bool,
    /// Restore owners by id only, ignoring stored names (`--numeric-owner`).
    pub numeric_owner: bool,
    /// Which extended attributes to restore.
    pub xattrs: XattrSelect,
    /// Effective uid: the owner of what this process creates (its group: [`DirInfo`]).
    pub euid: u32,
}

/// What this run knows of a directory it creates entries in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirInfo {
    /// The group a new entry made in it gets: the directory's group when it is setgid, else
    /// the process's egid.
    pub new_gid: u32,
    /// The directory is setgid (a directory made in it inherits that).
    pub setgid: bool,
    /// It has a default ACL (inherited by what is made in it; the umask then does not apply).
    pub default_acl: bool,
    /// This run created it, so nothing was in it before the run.
    pub fresh: bool,
}

impl DirInfo {
    /// What is known of an existing directory open as `fd` (one `fstat`, one `fgetxattr`;
    /// `fd` must not be an `O_PATH` descriptor).
    pub(crate) fn probe(fd: BorrowedFd<'_>, egid: u32) -> io::Result<DirInfo> {
        let st = rustix::fs::fstat(fd)?;
        let setgid = st.st_mode & S_ISGID != 0;
        let mut one = [0u8; 1];
        let default_acl = match rustix::fs::fgetxattr(fd, xattr::ACL_DEFAULT, &mut one[..]) {
            Ok(_) | Err(Errno::RANGE) => true,
            Err(_) => false,
        };
        Ok(DirInfo {
            new_gid: if setgid { st.st_gid } else { egid },
            setgid,
            default_acl,
            fresh: false,
        })
    }

    /// What is known of a directory this run just created inside this one.
    pub(crate) fn child(&self) -> DirInfo {
        DirInfo {
            // Made in a setgid directory: its group and setgid; else the egid, which is
            // `new_gid` then too.
            new_gid: self.new_gid,
            setgid: self.setgid,
            default_acl: self.default_acl,
            fresh: true,
        }
    }
}

/// What to apply to one restored object, decided on the extracting thread (owner names
/// resolved there) and applied by [`apply`], possibly on another thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// `chown` to this (uid, gid) first; `None` when not restoring owners or when creation
    /// gave this owner already.
    pub owner: Option<(u32, u32)>,
    /// The mode to set (0o7777 mask); `None` for symbolic links, which have none.
    pub mode: Option<u32>,
    /// The mode to create a file with (its final permission bits when no `chown` follows,
    /// else 0o600 so that nobody else reads it before it has its owner).
    pub create_mode: u32,
    /// The mode creation gives, when known; `fchmod` is skipped when it equals `mode` and no
    /// access ACL was set.
    pub created_mode: Option<u32>,
}

impl Policy {
    /// Existing non-directories are replaced (`-f`).
    pub(crate) fn replace(&self) -> bool {
        self.existing == super::conflict::Existing::Replace
    }

    /// The mode to set for a stored mode (`0o7777` mask).
    pub(crate) fn mode(&self, stored: u32) -> u32 {
        if self.keep_special {
            stored & 0o7777
        } else {
            stored & 0o777 & !self.umask
        }
    }

    /// Times for `futimens`/`utimensat`: access time left alone, mtime as stored.
    pub(crate) fn times(&self, mtime: Timestamp) -> Option<Timestamps> {
        if self.no_mtime {
            return None;
        }
        Some(Timestamps {
            last_access: Timespec {
                tv_sec: 0,
                tv_nsec: UTIME_OMIT,
            },
            last_modification: Timespec {
                tv_sec: mtime.secs,
                tv_nsec: i64::from(mtime.nanos),
            },
        })
    }

    /// The owner to give `meta`'s object when restoring owners: by name when this system
    /// knows the stored name (unless `numeric_owner`), else the stored id.
    pub(crate) fn owner_of(&self, meta: &EntryMeta, ids: &mut IdCache) -> (u32, u32) {
        if self.numeric_owner {
            return (meta.uid, meta.gid);
        }
        let uid = meta.user.as_deref().and_then(|n| ids.uid(n));
        let gid = meta.group.as_deref().and_then(|n| ids.gid(n));
        (uid.unwrap_or(meta.uid), gid.unwrap_or(meta.gid))
    }

    /// The plan for `meta`, created in a directory described by `dir` (`None`: not known),
    /// as a new object of mode `made` before the umask (files: [`Plan::create_mode`];
    /// directories: 0o700; `None` for symbolic links and for objects that existed already).
    pub(crate) fn plan(
        &self,
        meta: &EntryMeta,
        dir: Option<&DirInfo>,
        ids: &mut IdCache,
        kind: Made,
    ) -> Plan {
        // An access ACL restored with the entry states its permissions exactly (its mask is
        // the group bits): the umask is not applied to them, as GNU tar does with `--acls`,
        // or chmod would cut the mask and `getfacl` would differ from the source.
        let exact_acl =
            self.xattrs.keeps(ACL_ACCESS) && meta.xattrs.iter().any(|x| x.name == ACL_ACCESS);
        let wanted = if exact_acl && !self.keep_special {
            meta.mode & 0o777
        } else {
            self.mode(meta.mode)
        };
        let created_owner = dir.map(|d| (self.euid, d.new_gid));
        let owner = if self.restore_owner {
            let want = self.owner_of(meta, ids);
            (created_owner != Some(want) || kind == Made::Existing).then_some(want)
        } else {
            None
        };
        let create_mode = if owner.is_none() {
            wanted & 0o777
        } else {
            0o600
        };
        let umask_applies = dir.is_some_and(|d| !d.default_acl);
        let created_mode = match kind {
            Made::File if umask_applies => Some(create_mode & !self.process_umask),
            Made::Dir(req) if umask_applies => {
                let inherited = if dir.is_some_and(|d| d.setgid) {
                    S_ISGID
                } else {
                    0
                };
                Some((req & !self.process_umask) | inherited)
            }
            _ => None,
        };
        Plan {
            owner,
            mode: (kind != Made::Symlink).then_some(wanted),
            create_mode,
            created_mode,
        }
    }
}

/// How the object a [`Plan`] is for comes to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Made {
    /// A new file, created with [`Plan::create_mode`].
    File,
    /// A new directory, created with this mode (before the umask).
    Dir(u32),
    /// A new symbolic link.
    Symlink,
    /// Something that existed before (a reused directory, the output directory): nothing is
    /// known of its owner or mode.
    Existing,
}

/// The object metadata is applied to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum On<'a> {
    /// An open file or directory.
    Fd(BorrowedFd<'a>),
    /// The symbolic link `name` in the directory `dir` (never followed).
    Link(BorrowedFd<'a>, &'a [u8]),
}

/// Whether a failed `chown` is a refusal (warning): not permitted, or an id this system (or
/// user namespace) cannot represent.
fn chown_refused(e: Errno) -> bool {
    matches!(e, Errno::PERM | Errno::INVAL)
}

/// Applies `plan` and `meta`'s attributes and times to `on`, in the order of the module
/// documentation. `path` names the object in messages; refusals go to `notes`.
pub(crate) fn apply(
    on: On<'_>,
    meta: &EntryMeta,
    plan: &Plan,
    policy: &Policy,
    path: &Path,
    notes: &Notes,
) -> Result<()> {
    if let Some((uid, gid)) = plan.owner {
        let (u, g) = (Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)));
        let res = match on {
            On::Fd(fd) => fchown(fd, u, g),
            On::Link(dir, name) => chownat(dir, name, u, g, AtFlags::SYMLINK_NOFOLLOW),
        };
        match res {
            Ok(()) => {}
            Err(e) if chown_refused(e) => {
                notes.cannot_set(path, &owner_text(meta, uid, gid), &e.into());
            }
            Err(e) => return Err(Error::io(path, "chown", e.into())),
        }
    }
    let mut acl_set = false;
    if !policy.xattrs.nothing() {
        let set_on = match on {
            On::Fd(fd) => SetOn::Fd(fd),
            On::Link(dir, name) => SetOn::Link(dir, name),
        };
        for x in meta.xattrs.iter().filter(|x| policy.xattrs.keeps(&x.name)) {
            match xattr::set_one(set_on, x, path)? {
                SetOutcome::Set => acl_set |= x.name == ACL_ACCESS,
                SetOutcome::Refused(e) => notes.cannot_set(
                    path,
                    &format!("extended attribute {}", super::escape_path(&x.name)),
                    &e,
                ),
            }
        }
    }
    if let (On::Fd(fd), Some(mode)) = (on, plan.mode)
        && (plan.created_mode != Some(mode) || acl_set)
    {
        match fchmod(fd, Mode::from_raw_mode(mode)) {
            Err(e) if refused(e) && stat(on).is_some_and(|st| st.st_mode & 0o7777 == mode) => {}
            r => r.map_err(|e| Error::io(path, "chmod", e.into()))?,
        }
    }
    if let Some(t) = policy.times(meta.mtime) {
        match match on {
            On::Fd(fd) => futimens(fd, &t),
            On::Link(dir, name) => utimensat(dir, name, &t, AtFlags::SYMLINK_NOFOLLOW),
        } {
            Err(e)
                if refused(e)
                    && stat(on).is_some_and(|st| {
                        st.st_mtime == meta.mtime.secs
                            && i64::try_from(st.st_mtime_nsec).ok()
                                == Some(i64::from(meta.mtime.nanos))
                    }) => {}
            r => r.map_err(|e| Error::io(path, "set mtime", e.into()))?,
        }
    }
    Ok(())
}

/// Whether a `chmod` or `utimes` was refused for want of ownership (EPERM: not the owner, as
/// over an existing directory of another user). A refused change the object already has is
/// no change (`x -f` as a user over a 1777 directory of root's with the stored mode and time,
/// which exited 4 as GNU tar does): the caller skips it after one [`stat`]; a real difference
/// still fails.
fn refused(e: Errno) -> bool {
    matches!(e, Errno::PERM | Errno::ACCESS)
}

/// The object's status (never following a link); `None` when it cannot be had.
fn stat(on: On<'_>) -> Option<rustix::fs::Stat> {
    match on {
        On::Fd(fd) => rustix::fs::fstat(fd),
        On::Link(dir, name) => rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW),
    }
    .ok()
}

/// "owner 1000:100" or, with stored names, "owner alice:users (1000:100)".
fn owner_text(meta: &EntryMeta, uid: u32, gid: u32) -> String {
    match (&meta.user, &meta.group) {
        (Some(u), Some(g)) => format!(
            "owner {}:{} ({uid}:{gid})",
            super::escape_path(u),
            super::escape_path(g)
        ),
        _ => format!("owner {uid}:{gid}"),
    }
}

/// Applies to an open descriptor (files and directories).
pub(crate) fn apply_fd(
    fd: impl AsFd,
    meta: &EntryMeta,
    plan: &Plan,
    policy: &Policy,
    path: &Path,
    notes: &Notes,
) -> Result<()> {
    apply(On::Fd(fd.as_fd()), meta, plan, policy, path, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(root: bool) -> Policy {
        Policy {
            existing: crate::fs::conflict::Existing::Refuse,
            no_mtime: false,
            keep_special: root,
            umask: if root { 0 } else { 0o022 },
            process_umask: 0o022,
            restore_owner: root,
            numeric_owner: false,
            xattrs: XattrSelect::default(),
            euid: if root { 0 } else { 1000 },
        }
    }

    fn meta(mode: u32, uid: u32, gid: u32) -> EntryMeta {
        EntryMeta {
            path: b"f".to_vec(),
            mode,
            uid,
            gid,
            ..EntryMeta::default()
        }
    }

    fn plain(new_gid: u32) -> DirInfo {
        DirInfo {
            new_gid,
            setgid: false,
            default_acl: false,
            fresh: true,
        }
    }

    #[test]
    fn a_file_already_right_at_creation_needs_no_chown_or_chmod() {
        let mut ids = IdCache::default();
        let p = policy(true).plan(&meta(0o644, 0, 0), Some(&plain(0)), &mut ids, Made::File);
        assert_eq!(
            p,
            Plan {
                owner: None,
                mode: Some(0o644),
                create_mode: 0o644,
                created_mode: Some(0o644)
            }
        );
        // Non-root: the umask masks the stored mode, and creation applies the same umask.
        let p = policy(false).plan(&meta(0o666, 5, 5), Some(&plain(1000)), &mut ids, Made::File);
        assert_eq!(
            (p.owner, p.mode, p.created_mode),
            (None, Some(0o644), Some(0o644))
        );
    }

    /// Regression (review): as an ordinary user with umask 022, a file of mode 664 with an
    /// access ACL came back 644 with its ACL mask cut to r--. The ACL's permissions are
    /// restored exactly; without an ACL, or with ACLs not restored, the umask still applies.
    #[test]
    fn an_access_acl_keeps_its_permissions_from_the_umask() {
        let mut ids = IdCache::default();
        let mut m = meta(0o664, 5, 5);
        m.xattrs = vec![crate::format::entry::Xattr {
            name: ACL_ACCESS.to_vec(),
            value: vec![2, 0, 0, 0],
        }];
        let p = policy(false).plan(&m, Some(&plain(1000)), &mut ids, Made::File);
        assert_eq!(p.mode, Some(0o664));
        let mut no_acls = policy(false);
        no_acls.xattrs.acls = false;
        assert_eq!(
            no_acls
                .plan(&m, Some(&plain(1000)), &mut ids, Made::File)
                .mode,
            Some(0o644)
        );
        let p = policy(false).plan(&meta(0o664, 5, 5), Some(&plain(1000)), &mut ids, Made::File);
        assert_eq!(p.mode, Some(0o644));
    }

    #[test]
    fn another_owner_means_chown_then_chmod_from_0600() {
        let mut ids = IdCache::default();
        let p = policy(true).plan(
            &meta(0o4755, 1000, 1000),
            Some(&plain(0)),
            &mut ids,
            Made::File,
        );
        assert_eq!(
            p,
            Plan {
                owner: Some((1000, 1000)),
                mode: Some(0o4755),
                create_mode: 0o600,
                created_mode: Some(0o600)
            }
        );
    }

    #[test]
    fn unknown_directories_and_default_acls_make_no_assumption() {
        let mut ids = IdCache::default();
        let p = policy(true).plan(&meta(0o644, 0, 0), None, &mut ids, Made::File);
        assert_eq!((p.owner, p.created_mode), (Some((0, 0)), None));
        let acl = DirInfo {
            default_acl: true,
            ..plain(0)
        };
        let p = policy(true).plan(&meta(0o644, 0, 0), Some(&acl), &mut ids, Made::File);
        assert_eq!((p.owner, p.created_mode), (None, None));
        let p = policy(true).plan(
            &meta(0o755, 0, 0),
            Some(&plain(0)),
            &mut ids,
            Made::Existing,
        );
        assert_eq!((p.owner, p.created_mode), (Some((0, 0)), None));
    }

    #[test]
    fn a_setgid_directory_gives_its_group_and_its_setgid_bit_to_new_directories() {
        let mut ids = IdCache::default();
        let sg = DirInfo {
            new_gid: 50,
            setgid: true,
            default_acl: false,
            fresh: false,
        };
        assert_eq!(sg.child(), DirInfo { fresh: true, ..sg });
        let p = policy(true).plan(&meta(0o755, 0, 50), Some(&sg), &mut ids, Made::Dir(0o700));
        assert_eq!((p.owner, p.created_mode), (None, Some(0o2700)));
        let p = policy(true).plan(&meta(0o755, 0, 0), Some(&sg), &mut ids, Made::Dir(0o700));
        assert_eq!(p.owner, Some((0, 0)));
    }

    #[test]
    fn names_win_over_ids_unless_numeric_owner() {
        let mut ids = IdCache::default();
        let m = EntryMeta {
            user: Some(b"nobody".to_vec()),
            group: Some(b"no-such-group-krypta".to_vec()),
            ..meta(0o644, 1234, 5678)
        };
        let pol = policy(true);
        assert_eq!(pol.owner_of(&m, &mut ids), (65534, 5678));
        let numeric = Policy {
            numeric_owner: true,
            ..pol
        };
        assert_eq!(numeric.owner_of(&m, &mut ids), (1234, 5678));
        assert_eq!(
            owner_text(&m, 65534, 5678),
            "owner nobody:no-such-group-krypta (65534:5678)"
        );
    }
}
