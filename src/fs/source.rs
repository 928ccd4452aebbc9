//! Reading one input file's data for the archive: hole-aware, bounded, and honest about files
//! that change while they are read.
//!
//! Choices (copied into the README):
//! - The file is opened with `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY` (and `O_NOATIME`
//!   when permitted), then `fstat`ed: a symbolic link or FIFO swapped in since the walk is
//!   refused, and opening never blocks.
//! - **Holes**: data extents are found with `lseek(SEEK_DATA)` / `lseek(SEEK_HOLE)`; holes are
//!   never read, so a 4 GiB file with 12 KiB of data costs 12 KiB of reads. When the filesystem
//!   does not support them (`EINVAL`), the file is read sequentially as one extent. A file
//!   whose allocated blocks cover its size (`st_blocks × 512 ≥ st_size`: every small file, and
//!   every file written front to back) cannot have a hole, so it is read as one extent with no
//!   probe at all: two `lseek`s per file were a fifth of the system calls when archiving many
//!   small files (issue 13 item 2). (Blocks preallocated past the end with
//!   `fallocate(KEEP_SIZE)` can make a file with a hole look dense; it is then read, not
//!   skipped, and its holes are stored as the zeros they read as: the content is the same.)
//! - **Changes while reading**: at most the size seen at open (`fstat`) is read, like tar. If
//!   the file is longer when reading ends, the warning says it grew and only the first bytes
//!   are stored; if a read ends early, the warning says it shrank and the size recorded is what
//!   was read; if only the modification time moved, the warning says it was modified. The size
//!   recorded ([`FileSource::final_size`]) always equals the end of the last extent returned
//!   plus any trailing hole, never more bytes than were returned as data or hole.

use std::fs::File;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, SeekFrom, fstat, seek};
use rustix::io::Errno;

use super::longpath;
use super::meta::{StatKind, kind_of, mtime_of, size_of};
use crate::archive::ReaderSource;
use crate::format::entry::Timestamp;
use crate::{Error, Result};

/// An open input file being read extent by extent.
#[derive(Debug)]
pub struct FileSource {
    file: File,
    path: PathBuf,
    /// `st_size` when opened: no byte at or past it is read.
    limit: u64,
    /// `st_mtime` when opened, to notice writes that keep the size.
    mtime: Timestamp,
    /// `(st_dev, st_ino)` of the open file.
    dev_ino: (u64, u64),
    /// Offset from which the next extent is searched.
    pos: u64,
    /// Whether `SEEK_DATA`/`SEEK_HOLE` work on this file.
    sparse: bool,
    /// End of the data extent that contains `pos`, as the last `SEEK_HOLE` said: until `pos`
    /// reaches it, the next bytes are data and no probe is needed. Probing before every read
    /// was quadratic on tmpfs, whose `SEEK_HOLE` walks the page cache to the end of the file
    /// (issue 13: 1,604 probes cost 4.1 s on an 800 MiB file).
    extent_end: u64,
    /// `lseek(SEEK_DATA/SEEK_HOLE)` calls made so far (for tests: one pair per extent).
    probes: u64,
    /// Logical size to record, set once the end was reached.
    final_size: Option<u64>,
    /// What changed while reading, if anything.
    change: Option<String>,
}

/// What reading a file needs of its `fstat` (kept small: it travels with every file the walk
/// opens).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StatFacts {
    limit: u64,
    mtime: Timestamp,
    dev_ino: (u64, u64),
    sparse: bool,
}

impl StatFacts {
    pub(crate) fn of(st: &rustix::fs::Stat) -> StatFacts {
        StatFacts {
            limit: size_of(st),
            mtime: mtime_of(st),
            dev_ino: super::meta::identity(st),
            sparse: !covers_its_size(st),
        }
    }
}

/// Whether the blocks allocated to a file cover its size, so it has no hole to skip.
fn covers_its_size(st: &rustix::fs::Stat) -> bool {
    (st.st_blocks as u64).saturating_mul(512) >= size_of(st)
}

/// Runs `open` with the flags every input file is opened with, `O_NOATIME` first (refused with
/// `EPERM` on files this user does not own: then without it).
fn with_noatime(open: impl Fn(OFlags) -> io::Result<OwnedFd>) -> io::Result<OwnedFd> {
    let base =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    match open(base | OFlags::NOATIME) {
        Err(e) if e.raw_os_error() == Some(Errno::PERM.raw_os_error()) => open(base),
        other => other,
    }
}

/// `ELOOP` from an `O_NOFOLLOW` open means a symbolic link is there now: say so.
fn swapped_link(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) {
        io::Error::other("became a symbolic link since it was listed")
    } else {
        e
    }
}

/// Whether `path` names this process's standard input: `-`, or the same file as descriptor 0
/// (`/dev/stdin`, `/proc/self/fd/0`, or the file redirected in with `<`), by device and inode.
/// When stdin was closed at start, the `/dev/null` that stands in for it
/// ([`crate::closed_stdio`]) is not stdin: only the names of descriptor 0 itself are.
pub fn names_stdin(path: &Path) -> bool {
    if path.as_os_str() == "-" {
        return true;
    }
    if crate::closed_stdio::was_closed(crate::closed_stdio::Stream::Stdin) {
        return crate::closed_stdio::names_closed(path) == Some(crate::closed_stdio::Stream::Stdin);
    }
    match (rustix::fs::stat(path), fstat(std::io::stdin())) {
        (Ok(a), Ok(b)) => (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino),
        _ => false,
    }
}

/// The bytes of a stream input ([`super::walk::InputEntry::stream`]), to be read to their
/// end: stdin itself for `-` and for a link to the pipe or socket stdin is (a socket cannot
/// be opened through `/proc`: `ENXIO`), else `path` opened through its link (a named FIFO
/// waits for a writer, as `cat` does). A pipe is asked for a wider buffer
/// ([`crate::store::local::widen_pipe`]), and polled so that a producer's pause lets the
/// writer write what it has sealed ([`ReaderSource::with_poll_fd`]). Errors: Io (open)
/// naming `path`.
///
/// Speed (issue 13 item 6; keep the reads inline, straight into the block): a stream costs what a
/// file costs: `c -q -s --no-fsync --keyfile` of 200 MiB on tmpfs with stdin redirected from the
/// file took 0.96× the time of the file named as input (2-core VM, quiet, medians of 11
/// interleaved rounds; 1.04× with other builds running). Through `cat FILE |` it took 1.2–1.4×
/// (medians of 9–21 rounds in several runs; 1.29–1.38× at 200 and 800 MiB in the last), 1.03–1.19×
/// with other builds loading both cores, and 1.01–1.16× at the default level, where the workers,
/// not the filling thread, set the pace. The difference is the producer: `cat`'s ~50 ms of CPU per
/// 200 MiB (its read, its copy into the pipe) on 2 cores that `-s` already keeps 1.7–1.8 busy, and
/// the kernel wakes a pipe's writer on the CPU of the reader that made room (a synchronous
/// wake-up), so `perf sched` showed `cat` taking turns with the filling thread on one core while
/// the worker's core idled 20–40% of the run. With the archive written to `/dev/null` (the filling
/// thread's writes gone) the pipe took 1.04× the file's time. Tried, measured the same way, and
/// not kept (none faster): reading ahead on a thread of its own into 1–4 MiB chunks, also with
/// BLAKE3 moved there (3–11% slower: a copy of every byte, and a thread that takes turns with
/// `cat` too); reads capped at 128–512 KiB with each piece hashed before the next read;
/// `preadv2(RWF_NOWAIT)` in place of the `poll` before a read; pipe buffers of 256 and 512 KiB;
/// the archive written by a thread of its own (12–20% slower); two sealing workers at `-s` (file
/// 10% slower, pipe no faster). With a core to spare for the producer (3 or more), the pipe should
/// cost what the redirected file does.
pub fn open_stream(path: &Path) -> Result<ReaderSource<Box<dyn io::Read>>> {
    use std::os::fd::AsFd;
    if names_stdin(path) {
        let stdin = io::stdin();
        crate::store::local::widen_pipe(stdin.as_fd());
        let name = if path.as_os_str() == "-" {
            Path::new("<stdin>")
        } else {
            path
        };
        // Through a duplicate of descriptor 0, not `Stdin`'s buffer: a byte that buffer held
        // would be invisible to the `poll` that tells a paused producer.
        let fd = stdin
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::io(name, "open", e))?;
        return Ok(polled(File::from(fd), name));
    }
    let f = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    crate::store::local::widen_pipe(f.as_fd());
    Ok(polled(f, path))
}

/// `f` as a stream source named `name`, polled through a duplicate of its descriptor
/// ([`ReaderSource::with_poll_fd`]; without one if the duplicate is refused).
fn polled(f: File, name: &Path) -> ReaderSource<Box<dyn io::Read>> {
    use std::os::fd::AsFd;
    let poll = f.as_fd().try_clone_to_owned().ok();
    let reader: Box<dyn io::Read> = Box::new(f);
    ReaderSource::new(reader, name).with_poll_fd(poll)
}

impl FileSource {
    /// Opens `path` for reading without following a symbolic link swapped in since the walk
    /// and without blocking on a FIFO (`O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`), then `fstat`s it:
    /// it must be a regular file. `expected_size` is the walk's `st_size` in bytes; a different
    /// size now is not an error (the size read is what is recorded).
    pub fn open(path: &Path, expected_size: u64) -> Result<FileSource> {
        let fd = FileSource::open_fd(path).map_err(|e| Error::io(path, "open", e))?;
        // The walk's size is informational: what is read now is what gets recorded, and a
        // change between the walk and this open is not a change *while reading*.
        let _ = expected_size;
        FileSource::from_fd(fd, path)
    }

    /// Opens `path` as [`FileSource::open`] does, for [`FileSource::from_fd`].
    pub(crate) fn open_fd(path: &Path) -> io::Result<OwnedFd> {
        with_noatime(|flags| longpath::open(path, flags, Mode::empty())).map_err(swapped_link)
    }

    /// Opens `name`, one component, in the directory `dir` as [`FileSource::open`] opens a
    /// path, for [`FileSource::from_fd`]: no path lookup. The walk opens the files `krypta c`
    /// stores this way (`super::walk`), so an unreadable file is skipped before it is listed.
    pub(crate) fn open_in(dir: BorrowedFd<'_>, name: &[u8]) -> io::Result<OwnedFd> {
        with_noatime(|flags| Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?))
            .map_err(swapped_link)
    }

    /// Reads the file open as `fd` (`path` names it in messages): `fstat`s it, which must show
    /// a regular file.
    pub fn from_fd(fd: OwnedFd, path: &Path) -> Result<FileSource> {
        let st = fstat(&fd).map_err(|e| Error::io(path, "stat", e.into()))?;
        if kind_of(&st) != StatKind::File {
            return Err(Error::io(
                path,
                "open",
                io::Error::other("is no longer a regular file"),
            ));
        }
        Ok(FileSource::from_stat(fd, &StatFacts::of(&st), path))
    }

    /// Reads the regular file open as `fd`, whose `fstat` gave `facts` (taken by the walk,
    /// which opened it with [`FileSource::open_in`]).
    pub(crate) fn from_stat(fd: OwnedFd, facts: &StatFacts, path: &Path) -> FileSource {
        FileSource {
            file: File::from(fd),
            path: path.to_path_buf(),
            limit: facts.limit,
            mtime: facts.mtime,
            dev_ino: facts.dev_ino,
            pos: 0,
            sparse: facts.sparse,
            extent_end: 0,
            probes: 0,
            final_size: None,
            change: None,
        }
    }

    /// Next data extent, skipping holes: appends up to `max` bytes (must be > 0) to `buf` and
    /// returns `Some((file_offset, len))`, offsets strictly increasing and `len > 0`; or `None`
    /// at the end, after which [`FileSource::final_size`] is the size to record. Never returns
    /// bytes at or past that size.
    pub fn next_extent(&mut self, buf: &mut Vec<u8>, max: usize) -> Result<Option<(u64, usize)>> {
        if max == 0 {
            return Err(Error::Usage("FileSource::next_extent needs max > 0".into()));
        }
        let old = buf.len();
        buf.resize(old + max, 0);
        let r = self.read_extent(&mut buf[old..]);
        let got = match &r {
            Ok(Some((_, n))) => *n,
            _ => 0,
        };
        buf.truncate(old + got);
        r
    }

    /// [`FileSource::next_extent`] into a slice: reads up to `buf.len()` (> 0) bytes of the
    /// next data extent into the front of `buf` and returns its file offset and length (the
    /// bytes after it are left as they were); `None` at the end. Lets the archive writer read
    /// straight into its block.
    pub fn read_extent(&mut self, buf: &mut [u8]) -> Result<Option<(u64, usize)>> {
        let max = buf.len();
        if max == 0 {
            return Err(Error::Usage(
                "FileSource::read_extent needs a buffer".into(),
            ));
        }
        loop {
            if self.final_size.is_some() {
                return Ok(None);
            }
            if self.pos >= self.limit {
                self.finish(self.limit)?;
                continue;
            }
            let (start, end) = match self.find_data()? {
                Some(range) => range,
                None => {
                    // Only a hole left (or the file shrank): the size is the current length.
                    let now = self.stat_size()?;
                    self.finish(now.clamp(self.pos, self.limit))?;
                    continue;
                }
            };
            let want = usize::try_from(end - start).unwrap_or(usize::MAX).min(max);
            let got = self.read_fully(start, &mut buf[..want])?;
            if got < want {
                // The file shrank under us: what was read is all there is.
                self.finish(start + got as u64)?;
                if got == 0 {
                    continue;
                }
            } else {
                self.pos = start + got as u64;
            }
            return Ok(Some((start, got)));
        }
    }

    /// Starts over from the first byte, as just opened (the same open file: a second read of
    /// the same inode). The writer of a delta archive hashes a file whose size equals its
    /// base file's before it decides between a base reference and its content
    /// (docs/FORMAT.md §16.3); when they differ, it reads the content again from here.
    pub fn rewind(&mut self) {
        self.pos = 0;
        self.extent_end = 0;
        self.final_size = None;
        self.change = None;
    }

    /// Logical size in bytes to record (including a trailing hole); valid once
    /// [`FileSource::next_extent`] returned `None`. Before that, the size seen at open.
    pub fn final_size(&self) -> u64 {
        self.final_size.unwrap_or(self.limit)
    }

    /// `Some("grew from 10 to 20 bytes while being read; stored the first 10")` and the like
    /// when the file changed while it was read (the caller prefixes the file name, unlike walk
    /// warnings, which carry it); `None` otherwise.
    /// Valid once [`FileSource::next_extent`] returned `None`.
    pub fn change_warning(&self) -> Option<String> {
        self.change.clone()
    }

    /// `(st_dev, st_ino)` of the file as opened (to recognise the archive being written).
    pub fn dev_ino(&self) -> (u64, u64) {
        self.dev_ino
    }

    /// Number of `lseek(SEEK_DATA)`/`lseek(SEEK_HOLE)` calls made so far: two per data extent
    /// (one when the filesystem has no hole support), however many reads the extent takes.
    pub fn seek_probes(&self) -> u64 {
        self.probes
    }

    /// The next data range `[start, end)` at or after `pos`, clipped to `limit`, or `None`.
    /// Inside an extent already probed, answers from memory; probes once per extent.
    fn find_data(&mut self) -> Result<Option<(u64, u64)>> {
        if !self.sparse {
            return Ok(Some((self.pos, self.limit)));
        }
        if self.pos < self.extent_end {
            return Ok(Some((self.pos, self.extent_end.min(self.limit))));
        }
        self.probes += 1;
        let start = match seek(&self.file, SeekFrom::Data(self.pos)) {
            Ok(s) => s,
            Err(Errno::NXIO) => return Ok(None),
            Err(Errno::INVAL | Errno::NOTSUP) => {
                self.sparse = false;
                return Ok(Some((self.pos, self.limit)));
            }
            Err(e) => return Err(Error::io(&self.path, "seek", e.into())),
        };
        if start >= self.limit {
            return Ok(None);
        }
        self.probes += 1;
        let end = match seek(&self.file, SeekFrom::Hole(start)) {
            Ok(e) => e.min(self.limit),
            Err(Errno::NXIO) => start,
            Err(e) => return Err(Error::io(&self.path, "seek", e.into())),
        };
        if end <= start {
            // The file was cut between the two calls; let the caller re-check the size.
            return Ok(None);
        }
        self.extent_end = end;
        Ok(Some((start, end)))
    }

    /// `pread`s until `buf` is full or end of file; returns the bytes read.
    fn read_fully(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&self.path, "read", e)),
            }
        }
        Ok(done)
    }

    fn stat_size(&self) -> Result<u64> {
        let st = fstat(&self.file).map_err(|e| Error::io(&self.path, "stat", e.into()))?;
        Ok(size_of(&st))
    }

    /// Records the final size and compares the file's state now with the state at open.
    fn finish(&mut self, size: u64) -> Result<()> {
        self.final_size = Some(size);
        self.pos = size;
        let st = fstat(&self.file).map_err(|e| Error::io(&self.path, "stat", e.into()))?;
        let now = size_of(&st);
        self.change = if size < self.limit {
            Some(format!(
                "shrank from {} to {size} bytes while being read",
                self.limit
            ))
        } else if now > self.limit {
            Some(format!(
                "grew from {} to {now} bytes while being read; stored the first {}",
                self.limit, self.limit
            ))
        } else if now < self.limit {
            Some(format!(
                "shrank from {} to {now} bytes after being read",
                self.limit
            ))
        } else if mtime_of(&st) != self.mtime {
            Some("was modified while being read".to_string())
        } else {
            None
        };
        Ok(())
    }
}
