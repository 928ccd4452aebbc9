//! Existing directories the user owns but may not write, search or read, opened up for the
//! duration of an extraction and given their final mode at its end.
//!
//! Why: restoring over an earlier restore of a tree with read-only directories (a Go module
//! cache, a Nix-store-like tree: all `0555`) as an ordinary user failed at the first file with
//! `create temporary file: Permission denied` (exit 4, the rest not restored): the run made
//! those directories `0700` while it filled them, but a directory that exists already had its
//! final, read-only mode. The owner of a directory may always change its mode, so when an
//! operation in an existing directory is refused with `EACCES`, the extractor checks who owns
//! it ([`Loosened::open_up`]): when it is this process's effective user and its mode lacks
//! what the operation needs (write and search to create or replace an entry, search to open
//! a component, read to open it for its metadata), the missing bits are added for the owner,
//! the original mode remembered, and the operation tried once more. A directory owned by
//! someone else is never touched: the refusal stands, naming the entry.
//!
//! At the end ([`super::extract::Extractor::apply_dirs`]) every such directory gets its final
//! mode, children before parents: a directory entry of the archive its stored mode (the
//! deferred directory pass sets it anyway), and a directory that is not an entry (the output
//! directory, a parent of the selected members, a directory `-k` keeps) the mode it had.
//! Interrupted by SIGINT, SIGTERM or SIGHUP, the original modes are put back (a cleanup
//! action); killed by SIGKILL, nothing can run: those directories keep the owner bits added
//! (those of `u+rwx` they lacked; listed in the README), and the next run with `-f` sets the
//! archive's modes again.
//!
//! Cost: nothing unless the kernel refused something: one `fstat` and one `chmod` per
//! directory opened up, one open and one `chmod` per directory at the end.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{Mode, OFlags, openat};
use rustix::io::Errno;

use super::cleanup;
use super::confine::on_disk;

/// Owner write and search: what creating, replacing or removing a name in a directory needs.
pub(crate) const WRITE: u32 = 0o300;
/// Owner search: what opening a name in a directory needs.
pub(crate) const SEARCH: u32 = 0o100;
/// Owner read: what opening a directory `O_RDONLY` (for its metadata) needs.
pub(crate) const READ: u32 = 0o400;

/// What was opened up, shared by the extractor, its directory chains and the interrupt
/// action. Cheap to clone (one `Arc`).
#[derive(Debug, Clone)]
pub(crate) struct Loosened {
    inner: Arc<Mutex<Inner>>,
    root_path: PathBuf,
    euid: u32,
}

#[derive(Debug, Default)]
struct Inner {
    /// Stripped path below the output directory (`/`-joined, empty for the output directory
    /// itself) and the mode (`0o7777` bits) it had before this run opened it up.
    dirs: Vec<(Vec<u8>, u32)>,
    /// The interrupt action that puts the original modes back, while any is recorded.
    interrupt: Option<u64>,
    /// Set by [`Loosened::put_back_all`]: nothing is opened up any more.
    closed: bool,
}

impl Loosened {
    /// Nothing opened up yet, below the output directory `root_path`.
    pub(crate) fn new(root_path: &Path) -> Self {
        Loosened {
            inner: Arc::default(),
            root_path: root_path.to_path_buf(),
            euid: rustix::process::geteuid().as_raw(),
        }
    }

    /// After an operation in the directory `dir` (at `rel` below the output directory) was
    /// refused with `EACCES`: when this process's user owns `dir` and its mode lacks some of
    /// `need` ([`WRITE`], [`SEARCH`], [`READ`]), adds them and returns `true` (try again);
    /// else `false` (the refusal stands: someone else's directory, or refused for a reason
    /// the mode does not give, such as an ACL).
    pub(crate) fn open_up(&self, dir: BorrowedFd<'_>, rel: &[u8], need: u32) -> bool {
        let Ok(st) = rustix::fs::fstat(dir) else {
            return false;
        };
        let mode = st.st_mode & 0o7777;
        if st.st_uid != self.euid || mode & need == need {
            return false;
        }
        // Recorded, the interrupt action registered and the mode changed under one lock,
        // which the interrupt action takes too: an interrupt in between left the directory
        // opened up (found by sending SIGTERM the moment the mode changed), and so did a
        // directory opened up again by the extraction going on while the action ran.
        let Ok(mut inner) = self.inner.lock() else {
            return false;
        };
        if inner.closed {
            return false;
        }
        // A directory opened up twice (for search, then to write) keeps its first mode.
        if !inner.dirs.iter().any(|(r, _)| r == rel) {
            inner.dirs.push((rel.to_vec(), mode));
        }
        if inner.interrupt.is_none() {
            let me = self.clone();
            inner.interrupt = Some(cleanup::register_action(
                Box::new(move || me.put_back_all()),
                INTERRUPTED.to_string(),
            ));
        }
        chmod_fd(dir, mode | need).is_ok()
    }

    /// Runs `op`, an operation in the directory `dir` (at `rel`); when the kernel refuses it
    /// (`denied`) and [`Loosened::open_up`] adds `need`, runs it once more.
    pub(crate) fn retry<T, E>(
        &self,
        dir: BorrowedFd<'_>,
        rel: &[u8],
        need: u32,
        denied: impl Fn(&E) -> bool,
        mut op: impl FnMut() -> Result<T, E>,
    ) -> Result<T, E> {
        match op() {
            Err(e) if denied(&e) && self.open_up(dir, rel, need) => op(),
            done => done,
        }
    }

    /// Takes what is recorded so far (the caller sets each one's final mode), by path.
    pub(crate) fn take(&self) -> std::collections::BTreeMap<Vec<u8>, u32> {
        match self.inner.lock() {
            Ok(mut inner) => std::mem::take(&mut inner.dirs).into_iter().collect(),
            Err(_) => Default::default(),
        }
    }

    /// Whether anything is recorded.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.inner.lock().map(|i| i.dirs.is_empty()).unwrap_or(true)
    }

    /// Forgets the interrupt action (every directory got its final mode).
    pub(crate) fn done(&self) {
        if let Ok(mut inner) = self.inner.lock()
            && inner.dirs.is_empty()
            && let Some(id) = inner.interrupt.take()
        {
            cleanup::unregister(id);
        }
    }

    /// Interrupt time, or an extractor dropped before its end: puts every original mode back,
    /// deepest first, by path (never following a link at the last component).
    pub(crate) fn put_back_all(&self) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        inner.closed = true;
        let mut dirs = std::mem::take(&mut inner.dirs);
        dirs.sort_by(|a, b| b.0.cmp(&a.0));
        for (rel, mode) in dirs {
            let path = on_disk(&self.root_path, &rel);
            if let Ok(fd) = openat(
                rustix::fs::CWD,
                &path,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                let _ = chmod_fd(fd.as_fd(), mode);
            }
        }
    }
}

/// Sets the mode of the directory open as `fd`, also an `O_PATH` descriptor (which `fchmod`
/// refuses with `EBADF`: then through `/proc/self/fd/N`, which names exactly that inode).
pub(crate) fn chmod_fd(fd: BorrowedFd<'_>, mode: u32) -> Result<(), Errno> {
    match rustix::fs::fchmod(fd, Mode::from_raw_mode(mode)) {
        Err(Errno::BADF) => {
            let proc = format!("/proc/self/fd/{}", fd.as_raw_fd());
            rustix::fs::chmod(proc.as_str(), Mode::from_raw_mode(mode))
        }
        other => other,
    }
}

/// Whether `e` is the kernel's "Permission denied".
pub(crate) fn denied(e: &crate::Error) -> bool {
    super::extract::is_errno(e, Errno::ACCESS)
}

/// Whether `e` is `EACCES` ([`Loosened::retry`] of a system call).
pub(crate) fn denied_errno(e: &Errno) -> bool {
    *e == Errno::ACCESS
}

/// Whether `e` is `EACCES` ([`Loosened::retry`] of an `io` call).
pub(crate) fn denied_io(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(Errno::ACCESS.raw_os_error())
}

/// What an interrupt leaves behind if the action putting the modes back never finishes.
const INTERRUPTED: &str = "existing directories opened up (u+wx) for the extraction keep that mode: run the extraction again with -f";

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn an_owned_read_only_directory_is_opened_up_once_and_put_back() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("ro");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).unwrap();
        let fd = openat(
            rustix::fs::CWD,
            &d,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let l = Loosened::new(tmp.path());
        assert!(l.open_up(fd.as_fd(), b"ro", WRITE));
        assert_eq!(mode(&d), 0o755);
        // Its mode has what is needed now: nothing more to do, and the first mode is kept.
        assert!(!l.open_up(fd.as_fd(), b"ro", WRITE));
        assert!(!l.is_empty());
        l.put_back_all();
        assert_eq!(mode(&d), 0o555);
        assert!(l.is_empty());
        l.done();
    }
}
