//! Local files and stdio behind the store seam.
//!
//! A new local archive is written by [`FileSink`] (`super::file_sink`).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub use super::file_sink::FileSink;
use super::{Sink, Source};
use crate::error::{Error, Result};
use crate::fs::chunked::{self, Chunked};

/// Buffer of local reads, bytes (1 MiB; writes: `crate::fs::chunked::buffered`).
const BUF_LEN: usize = 1 << 20;

/// A local archive file opened for reading.
pub struct FileSource {
    inner: BufReader<File>,
}

impl FileSource {
    /// Opens `path`, a file that can seek (archive paths: [`open_path`]). Errors: Io
    /// ("open", "stat") naming it; IsDirectory for a directory (which `open` accepts, and
    /// whose first read would fail far from the cause).
    pub fn open(path: &Path) -> Result<FileSource> {
        let f = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let m = f.metadata().map_err(|e| Error::io(path, "stat", e))?;
        if m.is_dir() {
            return Err(Error::IsDirectory { path: path.into() });
        }
        Ok(Self::from_file(f))
    }

    /// A file already open (positioned at its start), such as a spooled stream.
    pub fn from_file(f: File) -> FileSource {
        FileSource {
            inner: BufReader::with_capacity(BUF_LEN, f),
        }
    }
}

impl Read for FileSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl Source for FileSource {
    fn seekable(&self) -> bool {
        true
    }
    fn length(&mut self) -> io::Result<Option<u64>> {
        let m = self.inner.get_ref().metadata()?;
        if m.is_file() {
            return Ok(Some(m.len()));
        }
        // A device or other special file: its length is where a seek to the end lands.
        let here = self.inner.stream_position()?;
        let len = self.inner.seek(SeekFrom::End(0))?;
        self.inner.seek(SeekFrom::Start(here))?;
        Ok(Some(len))
    }
    fn seek_to(&mut self, offset: u64) -> io::Result<()> {
        self.inner.seek(SeekFrom::Start(offset)).map(|_| ())
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self.inner.get_ref(), buf, offset)
    }
    fn identity(&self) -> Option<String> {
        let m = self.inner.get_ref().metadata().ok()?;
        Some(format!(
            "{}:{}:{}:{}.{:09}",
            m.dev(),
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec()
        ))
    }
}

/// Opens a local archive path for reading and looks at what it opened (fstat of the open
/// file, so the file checked is the file read; nothing is tried by seeking): a regular file
/// or a block device is a [`FileSource`]; a pipe, character device or socket (`<(cat
/// a.kry)`, a named pipe, `/dev/stdin` on a pipe) a [`ReadSource`], read front to back as `-`
/// is; a directory is refused ([`Error::IsDirectory`]). Errors: Io naming `path`.
pub fn open_path(path: &Path) -> Result<Box<dyn Source>> {
    let f = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    let m = f.metadata().map_err(|e| Error::io(path, "stat", e))?;
    if m.is_dir() {
        return Err(Error::IsDirectory { path: path.into() });
    }
    match stream_kind(m.file_type()) {
        Some(kind) => Ok(Box::new(ReadSource::path(f, kind))),
        None => Ok(Box::new(FileSource::from_file(f))),
    }
}

/// What a file that cannot seek is, in words for messages; None for one that can (a regular
/// file, a block device).
fn stream_kind(t: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        Some("a pipe")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// Bytes a pipe on stdin or stdout is asked to hold ([`widen_pipe`]): 1 MiB, Linux's
/// default `/proc/sys/fs/pipe-max-size` (what an unprivileged process may ask for).
pub const PIPE_BYTES: usize = 1 << 20;

/// Asks the kernel for a [`PIPE_BYTES`] buffer when `fd` is a pipe (`F_SETPIPE_SZ`; a hint:
/// refused or not a pipe, nothing changes). Why: with the default 64 KiB, `cat in | krypta
/// c - …` moved 200 MiB in 3,200 reads, each a wake-up of the other side, and took 1.5-1.7×
/// the time of the same bytes from the file on tmpfs (issue 13 item 6, table 15); a pipe of
/// 1 MiB lets each side run for a block's worth of bytes.
pub fn widen_pipe(fd: std::os::fd::BorrowedFd<'_>) {
    if let Ok(st) = rustix::fs::fstat(fd)
        && rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Fifo
    {
        let _ = rustix::pipe::fcntl_setpipe_size(fd, PIPE_BYTES);
    }
}

fn not_seekable() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "cannot seek in a stream")
}

/// An archive source read front to back, with no seeks: stdin (`-`), a local path that is a
/// stream (a pipe, a character device, a socket: `stream_kind`), or any byte reader (archive
/// bytes held in memory, such as the known-answer vectors:
/// `archive::reader::Archive::open_stream`). `kind` names it in messages ("stdin", "a pipe").
pub struct ReadSource {
    inner: Box<dyn Read + Send>,
    kind: &'static str,
}

impl ReadSource {
    /// Wraps `inner`, "a stream".
    pub fn new(inner: Box<dyn Read + Send>) -> Self {
        ReadSource {
            inner,
            kind: "a stream",
        }
    }

    /// The process's stdin (its pipe widened: [`widen_pipe`]).
    pub fn stdin() -> Self {
        widen_pipe(rustix::stdio::stdin());
        ReadSource {
            inner: Box::new(io::stdin()),
            kind: "stdin",
        }
    }

    /// The open file `f`, a stream of kind `kind` (its pipe widened: [`widen_pipe`]).
    fn path(f: File, kind: &'static str) -> Self {
        use std::os::fd::AsFd;
        widen_pipe(f.as_fd());
        ReadSource {
            inner: Box::new(BufReader::with_capacity(BUF_LEN, f)),
            kind,
        }
    }
}

impl Read for ReadSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl Source for ReadSource {
    fn seekable(&self) -> bool {
        false
    }
    fn stream_kind(&self) -> Option<&'static str> {
        Some(self.kind)
    }
    fn length(&mut self) -> io::Result<Option<u64>> {
        Ok(None)
    }
    fn seek_to(&mut self, _offset: u64) -> io::Result<()> {
        Err(not_seekable())
    }
    fn read_at(&self, _offset: u64, _buf: &mut [u8]) -> io::Result<usize> {
        Err(not_seekable())
    }
    fn identity(&self) -> Option<String> {
        None
    }
}

/// Refuses an output path that names a directory (followed through a symlink), with or
/// without `-f`: nothing can replace it, and arguments given the wrong way round (`krypta c
/// somedir new.kry`) should fail at once, not after reading every input. Errors:
/// IsDirectory (exit 1).
pub fn refuse_directory(path: &Path) -> Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(Error::IsDirectory { path: path.into() });
    }
    Ok(())
}

/// An output path that exists (a file, or a link to one) refused without `force`: Exists
/// (exit 1), before anything else is done. A dangling link is not: the archive is created
/// where it points, as `tar` and the shell's `>` do ([`dangling_end`]). A named pipe or
/// character device is not refused (an archive is written into it: [`DeviceSink`]); a block
/// device or socket is, `-f` or not ([`refuse_special`]).
pub fn refuse_existing(path: &Path, force: bool) -> Result<()> {
    refuse_special(path)?;
    refuse_unfollowable(path)?;
    if !force
        && special_output(path).is_none()
        && std::fs::symlink_metadata(path).is_ok()
        && dangling_end(path).is_none()
    {
        return Err(Error::Exists { path: path.into() });
    }
    Ok(())
}

/// A symbolic link `path` that cannot be followed (a loop, a target in a directory the user
/// may not search, a file used as a directory on the way) refused with what the kernel
/// said, `-f` or not: the archive is written where a link points, and there is no such place
/// (`-f` replaced such a link by a regular file, and without `-f` it was "already exists").
/// A dangling link (ending at a missing name) is not refused ([`dangling_end`]). Errors: Io.
fn refuse_unfollowable(path: &Path) -> Result<()> {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(());
    }
    match std::fs::metadata(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(Error::io(path, "follow the symbolic link", e))
        }
        _ => Ok(()),
    }
}

/// Where the dangling symbolic link `path` ends: the path, relative targets taken from each
/// link's directory, of the first name in its chain that does not exist. `None` when `path`
/// is not a link, when something exists at the end, or after 40 links (the kernel's limit,
/// ELOOP). A target that passes through a missing directory ends there too; creating the
/// archive then fails naming it.
pub fn dangling_end(path: &Path) -> Option<std::path::PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound && p != path => return Some(p),
            Err(_) => return None,
        };
        if !meta.file_type().is_symlink() {
            return None;
        }
        let target = std::fs::read_link(&p).ok()?;
        p = match p.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
    }
    None
}

/// An output path that is a block device or a socket (followed through a symbolic link),
/// refused with or without `-f`: an archive is not written into it, and it is never replaced
/// by a regular file. Usage (exit 1).
pub fn refuse_special(path: &Path) -> Result<()> {
    match special_output(path) {
        Some((what, false)) => Err(not_a_file(path, what)),
        _ => Ok(()),
    }
}

/// The refusal of an output path that is `what` ([`special_output`]), not a regular file.
pub(super) fn not_a_file(path: &Path, what: &str) -> Error {
    Error::Usage(format!(
        "{}: is {what}, not a regular file: an archive is written to a file, to stdout (-) or \
         to s3://; nothing was replaced",
        crate::fs::shown(path)
    ))
}

/// What an existing output path is when it is not a regular file or a directory (followed
/// through a symbolic link): `Some(("a named pipe", true))`, the bool saying whether an
/// archive may be written into it as a stream ([`DeviceSink`]: a FIFO, a character device
/// such as `/dev/null` or a tape); a block device or a socket cannot (`false`). `None` for a
/// regular file, a directory, or no such path.
pub fn special_output(path: &Path) -> Option<(&'static str, bool)> {
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::metadata(path).ok()?.file_type();
    if t.is_fifo() {
        Some(("a named pipe", true))
    } else if t.is_char_device() {
        Some(("a character device", true))
    } else if t.is_block_device() {
        Some(("a block device", false))
    } else if t.is_socket() {
        Some(("a socket", false))
    } else {
        None
    }
}

/// An archive written into an existing named pipe or character device (`krypta c /dev/null
/// dir`, as `tar cf /dev/null dir` tests a backup; a FIFO a reader waits on), front to back
/// as to stdout. Such a path is never replaced by a regular file: `c -f /dev/null` as root
/// turned the device into a 600-byte file (found by helper-31), and `-f` over a FIFO left
/// its reader waiting for good. Nothing is replaced, so no `-f` is needed.
pub struct DeviceSink {
    out: BufWriter<Chunked<File>>,
    path: PathBuf,
}

impl DeviceSink {
    /// Opens `path` (a FIFO or character device: [`special_output`]) for writing (not as a
    /// controlling terminal); a FIFO waits for a reader, as `cat > fifo` does. Errors: Io
    /// (open) naming `path`; Usage when what was opened is no longer one.
    pub fn open(path: &Path) -> Result<DeviceSink> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
            .open(path)
            .map_err(|e| Error::io(path, "open", e))?;
        // What was opened, not what the path was when checked: a FIFO swapped for a link to
        // a regular file in between must not be written over (no O_TRUNC, no noclobber).
        use std::os::unix::fs::FileTypeExt;
        let t = f
            .metadata()
            .map_err(|e| Error::io(path, "stat", e))?
            .file_type();
        if !t.is_fifo() && !t.is_char_device() {
            return Err(Error::Usage(format!(
                "{}: changed while it was opened (no longer a named pipe or character device); \
                 nothing was written",
                crate::fs::shown(path)
            )));
        }
        widen_pipe(f.as_fd());
        Ok(DeviceSink {
            out: chunked::buffered(f),
            path: path.to_path_buf(),
        })
    }
}

impl Write for DeviceSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Sink for DeviceSink {
    fn finish(mut self: Box<Self>) -> Result<()> {
        self.out
            .flush()
            .map_err(|e| Error::io(&self.path, "write", e))
    }
    fn abort(self: Box<Self>) {}
}

/// Standard output as an archive sink (written as it goes; `abort` cannot take bytes back).
pub struct StdoutSink {
    out: BufWriter<Chunked<io::Stdout>>,
}

impl StdoutSink {
    /// Wraps the process's stdout with a 1 MiB buffer (its pipe widened: [`widen_pipe`]).
    pub fn new() -> Self {
        widen_pipe(rustix::stdio::stdout());
        StdoutSink {
            out: chunked::buffered(io::stdout()),
        }
    }
}

impl Default for StdoutSink {
    fn default() -> Self {
        Self::new()
    }
}

impl Write for StdoutSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Sink for StdoutSink {
    fn finish(mut self: Box<Self>) -> Result<()> {
        self.out
            .flush()
            .map_err(|e| Error::io("<stdout>", "write", e))
    }
    fn abort(self: Box<Self>) {}
    fn own_files(&self) -> Vec<(u64, u64)> {
        // The file stdout points to (`krypta c - dir > dir/a.kry`) is not archived.
        match rustix::fs::fstat(io::stdout()) {
            Ok(st) => vec![(st.st_dev, st.st_ino)],
            Err(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn file_source_reads_at_offsets_without_moving_its_position() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let mut s = FileSource::open(&p).unwrap();
        let mut b = [0u8; 3];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"012");
        assert_eq!(s.read_at(7, &mut b).unwrap(), 3);
        assert_eq!(&b, b"789");
        assert_eq!(s.length().unwrap(), Some(10));
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"345");
        s.seek_to(9).unwrap();
        assert_eq!(s.read(&mut b).unwrap(), 1);
        assert_eq!(b[0], b'9');
    }

    #[test]
    fn a_pipe_is_widened_to_1_mib_and_a_file_is_left_alone() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        widen_pipe(r.as_fd());
        // One buffer, seen from both ends; an unprivileged process gets at most pipe-max-size.
        let max: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(PIPE_BYTES);
        let want = if rustix::process::geteuid().is_root() || max >= PIPE_BYTES {
            PIPE_BYTES
        } else {
            64 << 10
        };
        assert_eq!(rustix::pipe::fcntl_getpipe_size(&w).unwrap(), want);
        let f = tempfile::tempfile().unwrap();
        widen_pipe(f.as_fd());
        assert!(rustix::pipe::fcntl_getpipe_size(&f).is_err(), "not a pipe");
    }
}
