//! A new local archive file, named only once it is complete.
//!
//! It is written as an unnamed file (`O_TMPFILE`, `crate::fs::unnamed`, as extraction writes
//! files) in the output's own directory, mode 0o666 minus the umask (as `tar` and `zstd`
//! create their outputs), and `finish` links it under its final name with `linkat`, which
//! never replaces an existing name (an output that appeared meanwhile is not clobbered). With
//! `-f` it is linked under a temporary name and renamed over the output (atomic, never
//! across file systems). An existing output is refused up front too, before any work.
//!
//! Why unnamed (keep it): a `krypta c` killed by `SIGKILL` (the OOM killer, a timeout's
//! `kill -9`) left a full-size hidden `.krypta-tmp-*` next to the archive, every night, that
//! nothing removed; an unnamed file is freed by the kernel with its last descriptor, and the
//! walk of an input directory that holds the output never meets it. Where the directory's
//! file system has no `O_TMPFILE` (FAT, NFS, old kernels) or this process cannot link one,
//! the file is a named temporary (`.krypta-tmp-*`) registered with [`crate::fs::cleanup`],
//! so SIGINT/SIGTERM remove it, renamed into place as before.
//!
//! An existing regular file replaced with `-f` (`c -f`, `rekey -o OUT -f`, `repair -f`) gives
//! the new file its permission bits, and its owner and group where this process may set them
//! (as root; otherwise only a group of its own), before it gets the name: an archive kept
//! 0600, or owned by a backup user, stays so on the nightly re-run instead of becoming 0644
//! and the runner's (an unencrypted backup of /etc world-readable). An output that is a
//! symbolic link to a regular file is followed under `-f`: that file is replaced, the link
//! stays (`through_link` says why).
//!
//! **fsync policy** (README, "Durability"): a new archive is `fsync`ed before it is named and
//! its directory after it, so once `krypta c` exits 0 the archive survives a crash or power
//! loss. The archive is often the only copy (the next command may delete its source) and a
//! lost one is found only when a restore is needed; the cost is one flush of the written
//! bytes: on the development machine's disk 73 ms per 200 MiB when it was idle (issue 13),
//! 0.68 s when other builds were writing (`c -s` of 200 MiB: 1.70 s against 1.02 s with
//! `--no-fsync`, medians of 5 interleaved runs at load 5); nothing on tmpfs.
//! `tar` and `zstd` do not sync; `--no-fsync` (a scratch archive, a test, a disk that is
//! synced by other means) skips both calls. Extraction does not sync (`crate::fs::extract`).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::Sink;
use super::local::refuse_directory;
use crate::error::{Error, Result};
use crate::fs::chunked::{self, Chunked};
use crate::fs::cleanup;
use crate::fs::unnamed::{self, Linker};

/// The file a symbolic link at `path` names, when it is an existing regular file or names
/// nothing yet (a dangling link): the archive is written there (an existing file replaced
/// with `-f`: its directory gets the new file), and the link stays, pointing at the new
/// archive, as `tar`, `zstd`, `age` and the shell's `>` write through a link, and as `repair
/// -f` in place always did. Replacing the link itself left the file it named (on a NAS
/// mount, say) old and put the new archive where the link was; a dangling link was replaced
/// by a regular file with `-f` and refused as existing without it, though nothing was there
/// to overwrite. A link to anything else is `None` (a directory, device or socket is refused
/// before this, as is a link that cannot be followed: `local::refuse_unfollowable`).
fn through_link(path: &Path) -> Option<PathBuf> {
    if !std::fs::symlink_metadata(path)
        .ok()?
        .file_type()
        .is_symlink()
    {
        return None;
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => std::fs::canonicalize(path).ok(),
        Ok(_) => None,
        Err(e) if e.kind() == io::ErrorKind::NotFound => super::local::dangling_end(path),
        Err(_) => None,
    }
}

/// The file being written, before it has its name.
enum Pending {
    /// Unnamed (`O_TMPFILE`): linked into `dir` by `finish`.
    Unnamed { file: File, dir: File, how: Linker },
    /// A named temporary file (no `O_TMPFILE` here), renamed into place.
    Named(tempfile::NamedTempFile),
}

impl Pending {
    fn file(&self) -> &File {
        match self {
            Pending::Unnamed { file, .. } => file,
            Pending::Named(t) => t.as_file(),
        }
    }
}

/// A new local archive file, named by `finish` (module doc).
pub struct FileSink {
    /// The file being written (None once finished).
    tmp: Option<Pending>,
    out: Option<BufWriter<Chunked<File>>>,
    path: PathBuf,
    force: bool,
    /// `fsync` the file before it is named and its directory after it (the default policy).
    sync: bool,
    /// The cleanup registration of a named temporary file (0 when none or unregistered).
    cleanup_id: u64,
    own: Vec<(u64, u64)>,
}

impl FileSink {
    /// Creates the file to be named `path`, in its directory; `sync` = the module's fsync
    /// policy (false: `--no-fsync`). With `force`, an existing regular file at `path` lends
    /// the new file its mode and, where permitted, its owner and group (module doc). Errors:
    /// IsDirectory ([`refuse_directory`]), Usage (a device, pipe or socket: never replaced),
    /// Exists (unless `force`), Io. A symbolic link is written through ([`through_link`]).
    pub fn create(path: &Path, force: bool, sync: bool) -> Result<FileSink> {
        refuse_directory(path)?;
        // A device, pipe or socket is never replaced by a regular file, `-f` or not
        // (`super::create_sink` writes into a pipe or character device instead).
        if let Some((what, _)) = super::local::special_output(path) {
            return Err(super::local::not_a_file(path, what));
        }
        super::local::refuse_existing(path, force)?;
        // Without `force` a link to an existing file was refused just above.
        let resolved = through_link(path);
        let path = resolved.as_deref().unwrap_or(path);
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let (pending, cleanup_id) = match unnamed_in(&dir) {
            Some(p) => (p, 0),
            None => {
                let t = tempfile::Builder::new()
                    .prefix(".krypta-tmp-")
                    .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
                    .tempfile_in(&dir)
                    .map_err(|e| {
                        // Named by the file being written (the directory alone, often ".",
                        // says little); the OS error says what failed. (tempfile's error
                        // adds "at path …" in Rust's quoting; its inner error is private,
                        // and the text before that suffix is the OS error's.)
                        let text = e.to_string();
                        let e = match text.split_once(" at path \"") {
                            Some((os, _)) => io::Error::new(e.kind(), os.to_string()),
                            None => e,
                        };
                        Error::io(path, "create its temporary file (in the same directory)", e)
                    })?;
                let id = cleanup::register(t.path().to_path_buf());
                (Pending::Named(t), id)
            }
        };
        let f = pending
            .file()
            .try_clone()
            .map_err(|e| Error::io(path, "open", e))?;
        // The file being written and the output it replaces are never archived, even when
        // they lie inside an input directory (`krypta::compress` refuses, before this, to
        // replace an output the walk would read: `Error::OutputIsInput`).
        let mut own = Vec::new();
        if let Ok(m) = pending.file().metadata() {
            own.push((m.dev(), m.ino()));
        }
        if let Ok(m) = std::fs::metadata(path) {
            own.push((m.dev(), m.ino()));
        }
        let sink = FileSink {
            tmp: Some(pending),
            out: Some(chunked::buffered(f)),
            path: path.to_path_buf(),
            force,
            sync,
            cleanup_id,
            own,
        };
        if force
            && let Ok(m) = std::fs::metadata(path)
            && m.is_file()
        {
            sink.keep_mode_and_owner(&m)?;
        }
        Ok(sink)
    }

    /// Gives the file being written the mode of `m` and, where permitted, its owner and group
    /// (owner first: `chown` may clear setuid/setgid bits).
    pub fn keep_mode_and_owner(&self, m: &std::fs::Metadata) -> Result<()> {
        self.try_set_owner(m.uid(), m.gid());
        self.set_mode(m.mode())
    }

    /// Sets the permission bits of the file being written (they are what the final name
    /// gets): `repair` keeps the repaired archive's mode (an archive kept 0600 stays 0600).
    pub fn set_mode(&self, mode: u32) -> Result<()> {
        let t = self.tmp.as_ref().expect("not finished");
        t.file()
            .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode & 0o7777))
            .map_err(|e| Error::io(&self.path, "chmod the new file of", e))
    }

    /// Gives the file being written the owner and group `uid`/`gid` where this process may
    /// (root; otherwise its own group memberships): `repair` in place keeps the archive's.
    /// A change that is not permitted is skipped (the file stays the caller's).
    pub fn try_set_owner(&self, uid: u32, gid: u32) {
        let t = self.tmp.as_ref().expect("not finished");
        let _ = rustix::fs::fchown(
            t.file(),
            Some(rustix::fs::Uid::from_raw(uid)),
            Some(rustix::fs::Gid::from_raw(gid)),
        );
    }

    fn unregister(&mut self) {
        if self.cleanup_id != 0 {
            cleanup::unregister(std::mem::take(&mut self.cleanup_id));
        }
    }

    /// Names the unnamed file `file` `self.path` in `dir` (module doc).
    fn link(&self, file: &File, dir: &File, how: Linker) -> Result<()> {
        let name = self.path.file_name().map(|n| n.as_bytes()).ok_or_else(|| {
            Error::Usage(format!("{}: not a file name", crate::fs::shown(&self.path)))
        })?;
        if !self.force {
            return match unnamed::link(how, file.as_fd(), dir.as_fd(), name) {
                Ok(()) => Ok(()),
                Err(rustix::io::Errno::EXIST) => Err(Error::Exists {
                    path: self.path.clone(),
                }),
                Err(e) => Err(Error::io(&self.path, "link into place", e.into())),
            };
        }
        // Replacing: linked under a temporary name (registered for removal on interrupt),
        // then renamed over the output.
        let (tmp, (), id) = crate::fs::confine::create_temp(&self.path, |t| {
            unnamed::link(how, file.as_fd(), dir.as_fd(), t)
        })?;
        let placed = crate::fs::confine::place(dir.as_fd(), &tmp, name, true, &self.path);
        if placed.is_err() {
            crate::fs::confine::remove(dir.as_fd(), &tmp);
        }
        cleanup::unregister(id);
        placed
    }
}

/// An unnamed file in `dir` and how to link it, or None where that cannot be done (module
/// doc: a named temporary file is used instead).
fn unnamed_in(dir: &Path) -> Option<Pending> {
    let d = File::open(dir).ok()?;
    let how = unnamed::probe(d.as_fd(), dir).unwrap_or(Linker::Unavailable);
    if how == Linker::Unavailable {
        return None;
    }
    let fd = unnamed::open(d.as_fd(), 0o666).ok()??;
    Some(Pending::Unnamed {
        file: File::from(fd),
        dir: d,
        how,
    })
}

impl Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.out {
            Some(o) => o.write(buf),
            None => Err(io::Error::other("archive already finished")),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Some(o) => o.flush(),
            None => Ok(()),
        }
    }
}

impl Sink for FileSink {
    fn finish(mut self: Box<Self>) -> Result<()> {
        if let Some(mut o) = self.out.take() {
            o.flush().map_err(|e| Error::io(&self.path, "write", e))?;
        }
        let Some(t) = self.tmp.take() else {
            return Ok(());
        };
        if self.sync {
            t.file()
                .sync_all()
                .map_err(|e| Error::io(&self.path, "sync", e))?;
        }
        match t {
            Pending::Unnamed { file, dir, how } => self.link(&file, &dir, how)?,
            Pending::Named(t) => {
                self.unregister();
                if self.force {
                    t.persist(&self.path)
                        .map_err(|e| Error::io(&self.path, "rename into place", e.error))?;
                } else {
                    t.persist_noclobber(&self.path).map_err(|e| {
                        if e.error.kind() == io::ErrorKind::AlreadyExists {
                            Error::Exists {
                                path: self.path.clone(),
                            }
                        } else {
                            Error::io(&self.path, "rename into place", e.error)
                        }
                    })?;
                }
            }
        }
        if self.sync {
            // The new name is durable only once the directory holding it is.
            let dir = match self.path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| Error::io(dir, "sync the directory", e))?;
        }
        Ok(())
    }
    fn abort(self: Box<Self>) {
        drop(self);
    }
    fn own_files(&self) -> Vec<(u64, u64)> {
        self.own.clone()
    }
}

impl Drop for FileSink {
    fn drop(&mut self) {
        // An unnamed file is freed with its descriptor; a named one is removed by
        // NamedTempFile's own drop.
        self.out = None;
        self.tmp = None;
        self.unregister();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_aborted_file_sink_leaves_no_file_and_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.kry");
        let mut s: Box<dyn Sink> = Box::new(FileSink::create(&p, false, true).unwrap());
        s.write_all(b"partial").unwrap();
        s.abort();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_finished_file_sink_is_named_and_never_clobbers() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.kry");
        let mut s: Box<dyn Sink> = Box::new(FileSink::create(&p, false, true).unwrap());
        s.write_all(b"one").unwrap();
        // Nothing has a name while it is written (O_TMPFILE where the file system has it:
        // the test directory's does, on Linux's tmpfs and ext4).
        if matches!(
            FileSink::create(&d.path().join("b.kry"), false, true)
                .unwrap()
                .tmp,
            Some(Pending::Unnamed { .. })
        ) {
            assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        }
        // Another writer takes the name meanwhile: finishing refuses to replace it.
        std::fs::write(&p, b"other").unwrap();
        assert!(matches!(s.finish(), Err(Error::Exists { .. })));
        assert_eq!(std::fs::read(&p).unwrap(), b"other");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // With force it is replaced, and nothing else is left.
        let mut s: Box<dyn Sink> = Box::new(FileSink::create(&p, true, true).unwrap());
        s.write_all(b"two").unwrap();
        s.finish().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
