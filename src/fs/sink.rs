//! Writing one extracted file: an unnamed (`O_TMPFILE`) file in the target directory, or a
//! named temporary file where that cannot be used (`super::unnamed` says when and why),
//! written at increasing offsets (gaps and all-zero 4 KiB blocks stay holes), then extended to
//! its size when it ends in a hole, given its metadata (`super::restore`: owner, extended
//! attributes, mode, mtime), and linked or renamed to the final name. Never a partial file
//! under the final name: until [`FileSink::commit`] names it, the data lives in a file without
//! a name (freed by the kernel when the sink is dropped, or the process dies) or under
//! `.krypta-<hex>.tmp`, which [`FileSink::abort`] (or dropping the sink) removes.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{Mode, OFlags, ftruncate, openat};
use rustix::io::Errno;

use super::confine;
use super::notes::Notes;
use super::restore::{self, Plan, Policy};
use super::unnamed::{self, Linker};
use crate::format::entry::EntryMeta;
use crate::{Error, Result};

/// Block size for hole detection when writing, in bytes: an aligned block of this many zero
/// bytes is not written (it reads back as zeros from the hole).
pub(crate) const HOLE_BLOCK: usize = 4096;

/// The files committed in this run: the key of each name they were committed at (the archive
/// path after stripping) maps to the key of the archive entry committed there (its path as
/// stored), both 128-bit BLAKE3 prefixes ([`extracted_key`]). A hard link may only point at a
/// name that holds its own target entry: after `--strip-components` two entries may strip to
/// one name (`b/f` and `c/f` to `f`), and a link to `b/f` must not be made to the `f` that
/// `c/f` wrote.
pub(crate) type Extracted = Arc<Mutex<HashMap<[u8; 16], [u8; 16]>>>;

/// Key of a stripped path in [`Extracted`].
pub(crate) fn extracted_key(rel: &[u8]) -> [u8; 16] {
    let mut k = [0u8; 16];
    k.copy_from_slice(&blake3::hash(rel).as_bytes()[..16]);
    k
}

/// Where a file being extracted lives until it is committed.
#[derive(Debug)]
pub(crate) enum Temp {
    /// An unnamed `O_TMPFILE` file, linked to its final name in this way.
    Unnamed(Linker),
    /// A named temporary file in the target directory.
    Named {
        name: Vec<u8>,
        /// Registration in [`super::cleanup`] (removed on interrupt).
        cleanup_id: u64,
    },
}

impl Temp {
    /// Creates the file that will become `path` in `dir`, with `mode` (before the umask):
    /// unnamed when this process can link such files and `dir`'s file system has them, else
    /// under a fresh temporary name (registered for removal on interrupt).
    pub(crate) fn create(
        dir: BorrowedFd<'_>,
        path: &Path,
        mode: u32,
        linker: Linker,
    ) -> Result<(File, Temp)> {
        if linker != Linker::Unavailable
            && let Some(fd) = unnamed::open(dir, mode)
                .map_err(|e| Error::io(path, "create temporary file", e.into()))?
        {
            return Ok((File::from(fd), Temp::Unnamed(linker)));
        }
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let (name, fd, cleanup_id) = confine::create_temp(path, |name| {
            openat(dir, name, flags, Mode::from_raw_mode(mode))
        })?;
        Ok((File::from(fd), Temp::Named { name, cleanup_id }))
    }
}

/// A file being extracted, written without its final name until [`FileSink::commit`].
#[derive(Debug)]
pub struct FileSink {
    pub(crate) file: File,
    /// The target directory (shared with the extractor and the other sinks made in it).
    pub(crate) dir: Arc<OwnedFd>,
    /// Where the data lives until [`FileSink::commit`].
    pub(crate) temp: Temp,
    pub(crate) name: Vec<u8>,
    /// `root/stripped path`, for messages.
    pub(crate) path: PathBuf,
    pub(crate) rel_key: [u8; 16],
    pub(crate) meta: EntryMeta,
    /// Owner and mode decisions made when the file was begun.
    pub(crate) plan: Plan,
    pub(crate) policy: Policy,
    /// Where warnings about metadata that could not be set go.
    pub(crate) notes: Notes,
    pub(crate) extracted: Extracted,
    /// Where a name taken meanwhile is recorded (kept, not replaced) without `-f`.
    pub(crate) conflicts: super::conflict::ConflictLog,
    /// End of the data given so far (next write must start at or after it), in bytes.
    pub(crate) pos: u64,
    /// End of the bytes actually written (all-zero blocks are skipped), in bytes: the length
    /// of the temporary file.
    pub(crate) written_end: u64,
    /// Bytes accepted so far, for the fault hook.
    pub(crate) accepted: u64,
    pub(crate) fail_after: Option<u64>,
    pub(crate) done: bool,
    /// Its directory was created by this run (no name in it can be taken by the output tree).
    pub(crate) fresh: bool,
    /// Test hook: naming it fails with `EIO` (`ExtractOptions::fail_link_of`).
    pub(crate) fail_link: bool,
}

impl FileSink {
    /// Writes `data` at byte `offset`. Offsets must not go backwards (`offset >=` the end of the
    /// previous write); skipped ranges and aligned all-zero 4 KiB blocks stay holes.
    pub fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        if offset < self.pos {
            return Err(Error::io(
                &self.path,
                "write",
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("offset {offset} is before {}", self.pos),
                ),
            ));
        }
        let Some(end) = offset.checked_add(data.len() as u64) else {
            return Err(Error::io(&self.path, "write", Errno::FBIG.into()));
        };
        if let Some(limit) = self.fail_after
            && self.accepted.saturating_add(data.len() as u64) > limit
        {
            return Err(Error::io(&self.path, "write", Errno::NOSPC.into()));
        }
        // Split at absolute HOLE_BLOCK boundaries; write maximal runs that are not whole
        // zero blocks.
        let mut run: Option<usize> = None;
        let mut i = 0;
        while i < data.len() {
            let abs = offset + i as u64;
            let end = (i + HOLE_BLOCK - (abs % HOLE_BLOCK as u64) as usize).min(data.len());
            let hole = end - i == HOLE_BLOCK && is_zero(&data[i..end]);
            match (hole, run) {
                (true, Some(start)) => {
                    self.write_run(offset, start, &data[start..i])?;
                    run = None;
                }
                (false, None) => run = Some(i),
                _ => {}
            }
            i = end;
        }
        if let Some(start) = run {
            self.write_run(offset, start, &data[start..])?;
        }
        self.pos = end;
        self.accepted = self.accepted.saturating_add(data.len() as u64);
        Ok(())
    }

    fn write_run(&mut self, offset: u64, start: usize, bytes: &[u8]) -> Result<()> {
        let at = offset + start as u64;
        super::chunked::write_all_at(&self.file, bytes, at)
            .map_err(|e| Error::io(&self.path, "write", e))?;
        self.written_end = at + bytes.len() as u64;
        Ok(())
    }

    /// Extends the file to `size` bytes when its data ends before (a trailing hole: one
    /// `ftruncate`, which [`FileSink::commit`] then does not repeat). Done before the commit,
    /// which may run on another thread, so that a size the file system cannot hold
    /// (`EFBIG`) is known while the entry is still the current one.
    pub fn extend_to(&mut self, size: u64) -> Result<()> {
        if size > self.written_end && size >= self.pos {
            ftruncate(&self.file, size)
                .map_err(|e| Error::io(&self.path, "set length", e.into()))?;
            self.written_end = size;
        }
        Ok(())
    }

    /// Sets the final length `size` in bytes (a trailing gap becomes a hole; `ftruncate` only
    /// then), the metadata (owner when restoring owners, extended attributes, mode, mtime, in
    /// that order), then gives the file its final name (`linkat` of the unnamed file, or a
    /// rename of the named temporary one: `super::unnamed`): an existing name is refused
    /// without force ([`Error::Exists`]) and replaced atomically with
    /// it (an existing symbolic link is replaced, never followed). A name taken meanwhile
    /// without `-f` is recorded as a conflict (the existing file kept) and is not an error.
    /// On any error the temporary file is removed and nothing appears under the final name.
    pub fn commit(mut self, size: u64) -> Result<()> {
        if size < self.pos {
            return Err(Error::io(
                &self.path,
                "truncate",
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("size {size} is below data written up to {}", self.pos),
                ),
            ));
        }
        if size != self.written_end {
            ftruncate(&self.file, size)
                .map_err(|e| Error::io(&self.path, "set length", e.into()))?;
        }
        restore::apply_fd(
            &self.file,
            &self.meta,
            &self.plan,
            &self.policy,
            &self.path,
            &self.notes,
        )?;
        match self.place() {
            Ok(()) => {}
            Err(Error::Exists { path }) => {
                // The temporary file is removed on drop (`done` stays false).
                self.conflicts.record(
                    super::conflict::Conflict {
                        path,
                        reason: super::conflict::Reason::Exists,
                    },
                    Some(self.rel_key),
                );
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        self.done = true;
        if let Temp::Named { cleanup_id, .. } = &self.temp {
            super::cleanup::unregister(*cleanup_id);
        }
        if let Ok(mut map) = self.extracted.lock() {
            map.insert(self.rel_key, extracted_key(&self.meta.path));
        }
        Ok(())
    }

    /// Whether its directory was created by this run (`super::committer` commits only those
    /// on its own thread).
    pub fn in_fresh_dir(&self) -> bool {
        self.fresh
    }

    /// Abandons the file: the temporary file is removed (also done on drop).
    pub fn abort(self) {}

    /// Gives the finished file its final name: links an unnamed file (when the name is taken
    /// and replacing is asked for, under a temporary name that is then renamed over it), or
    /// renames a named one.
    fn place(&mut self) -> Result<()> {
        if self.fail_link {
            return Err(Error::io(&self.path, "link into place", Errno::IO.into()));
        }
        let dir = self.dir.as_fd();
        let force = self.policy.replace();
        let how = match &self.temp {
            Temp::Named { name, .. } => {
                return confine::place(dir, name, &self.name, force, &self.path);
            }
            Temp::Unnamed(how) => *how,
        };
        let fd = self.file.as_fd();
        match unnamed::link(how, fd, dir, &self.name) {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) if force => {
                let (name, (), cleanup_id) =
                    confine::create_temp(&self.path, |name| unnamed::link(how, fd, dir, name))?;
                let placed = confine::place(dir, &name, &self.name, true, &self.path);
                // From here the file is named: dropping the sink after an error removes it.
                self.temp = Temp::Named { name, cleanup_id };
                placed
            }
            Err(Errno::EXIST) => Err(Error::Exists {
                path: self.path.clone(),
            }),
            Err(e) => Err(Error::io(&self.path, "link into place", e.into())),
        }
    }
}

/// Whether every byte is zero (checks the first bytes first, so data exits early).
fn is_zero(block: &[u8]) -> bool {
    let head = block.len().min(16);
    block[..head].iter().all(|&b| b == 0) && block[head..].iter().fold(0u8, |acc, &b| acc | b) == 0
}

impl Drop for FileSink {
    fn drop(&mut self) {
        if !self.done
            && let Temp::Named { name, cleanup_id } = &self.temp
        {
            confine::remove(self.dir.as_fd(), name);
            super::cleanup::unregister(*cleanup_id);
        }
    }
}
