//! Writing one extracted file: a temporary file in the target directory, written at increasing
//! offsets (gaps and all-zero 4 KiB blocks stay holes), then truncated to its size, given its
//! owner, mode and mtime, and renamed over the final name. Never a partial file under the final
//! name: until [`FileSink::commit`] renames it, the data lives under `.krypta-<hex>.tmp`, which
//! [`FileSink::abort`] (or dropping the sink) removes.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustix::fs::{
    Gid, Mode, Timespec, Timestamps, UTIME_OMIT, Uid, fchmod, fchown, ftruncate, futimens,
};
use rustix::io::Errno;

use super::confine;
use crate::format::entry::{EntryMeta, Timestamp};
use crate::{Error, Result};

/// Block size for hole detection when writing, in bytes: an aligned block of this many zero
/// bytes is not written (it reads back as zeros from the hole).
pub(crate) const HOLE_BLOCK: usize = 4096;

/// The archive paths (after stripping) of files committed in this run, as 128-bit BLAKE3
/// digests: hard links may only point at these.
pub(crate) type Extracted = Arc<Mutex<HashSet<[u8; 16]>>>;

/// Key of a stripped path in [`Extracted`].
pub(crate) fn extracted_key(rel: &[u8]) -> [u8; 16] {
    let mut k = [0u8; 16];
    k.copy_from_slice(&blake3::hash(rel).as_bytes()[..16]);
    k
}

/// How metadata is applied (computed once from `ExtractOptions`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    /// What to do with existing names (`super::conflict`).
    pub existing: super::conflict::Existing,
    /// Leave mtimes at extraction time.
    pub no_mtime: bool,
    /// Keep setuid/setgid/sticky and ignore the umask (root or `--same-permissions`).
    pub keep_special: bool,
    /// The process umask, applied to modes when `keep_special` is off.
    pub umask: u32,
    /// `chown` to the stored uid/gid.
    pub restore_owner: bool,
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

    /// Applies owner, then mode (after chown, which clears setuid), then mtime to an open fd.
    pub(crate) fn apply_fd(
        &self,
        fd: impl AsFd,
        meta: &EntryMeta,
        path: &std::path::Path,
    ) -> Result<()> {
        if self.restore_owner {
            fchown(
                &fd,
                Some(Uid::from_raw(meta.uid)),
                Some(Gid::from_raw(meta.gid)),
            )
            .map_err(|e| Error::io(path, "chown", e.into()))?;
        }
        fchmod(&fd, Mode::from_raw_mode(self.mode(meta.mode)))
            .map_err(|e| Error::io(path, "chmod", e.into()))?;
        if let Some(t) = self.times(meta.mtime) {
            futimens(&fd, &t).map_err(|e| Error::io(path, "set mtime", e.into()))?;
        }
        Ok(())
    }
}

/// A file being extracted, written under a temporary name until [`FileSink::commit`].
#[derive(Debug)]
pub struct FileSink {
    pub(crate) file: File,
    pub(crate) dir: OwnedFd,
    /// Registration in [`super::cleanup`] (removed on interrupt).
    pub(crate) cleanup_id: u64,
    pub(crate) tmp: Vec<u8>,
    pub(crate) name: Vec<u8>,
    /// `root/stripped path`, for messages.
    pub(crate) path: PathBuf,
    pub(crate) rel_key: [u8; 16],
    pub(crate) meta: EntryMeta,
    pub(crate) policy: Policy,
    pub(crate) extracted: Extracted,
    /// Where a name taken meanwhile is recorded (kept, not replaced) without `-f`.
    pub(crate) conflicts: super::conflict::ConflictLog,
    /// End of the data written so far (next write must start at or after it), in bytes.
    pub(crate) pos: u64,
    /// Bytes accepted so far, for the fault hook.
    pub(crate) accepted: u64,
    pub(crate) fail_after: Option<u64>,
    pub(crate) done: bool,
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

    fn write_run(&self, offset: u64, start: usize, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all_at(bytes, offset + start as u64)
            .map_err(|e| Error::io(&self.path, "write", e))
    }

    /// Sets the final length `size` in bytes (a trailing gap becomes a hole), the owner (when
    /// restoring owners), mode and mtime, then renames the file over its final name: an
    /// existing name is refused without force ([`Error::Exists`]) and replaced atomically with
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
        ftruncate(&self.file, size).map_err(|e| Error::io(&self.path, "set length", e.into()))?;
        self.policy.apply_fd(&self.file, &self.meta, &self.path)?;
        match confine::place(
            self.dir.as_fd(),
            &self.tmp,
            &self.name,
            self.policy.replace(),
            &self.path,
        ) {
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
        super::cleanup::unregister(self.cleanup_id);
        if let Ok(mut set) = self.extracted.lock() {
            set.insert(self.rel_key);
        }
        Ok(())
    }

    /// Abandons the file: the temporary file is removed (also done on drop).
    pub fn abort(self) {}
}

/// Whether every byte is zero (checks the first bytes first, so data exits early).
fn is_zero(block: &[u8]) -> bool {
    let head = block.len().min(16);
    block[..head].iter().all(|&b| b == 0) && block[head..].iter().fold(0u8, |acc, &b| acc | b) == 0
}

impl Drop for FileSink {
    fn drop(&mut self) {
        if !self.done {
            confine::remove(self.dir.as_fd(), &self.tmp);
            super::cleanup::unregister(self.cleanup_id);
        }
    }
}
