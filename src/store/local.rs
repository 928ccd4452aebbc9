//! Local files and stdio behind the store seam.
//!
//! A new archive file is written under a temporary name (`.krypta-tmp-*`, mode 0o666 minus
//! the umask, as `tar` and `zstd` create their outputs) in the output's own directory, so the
//! final rename is atomic and never crosses a filesystem; it is registered with
//! [`crate::fs::cleanup`] so SIGINT/SIGTERM removes it. `finish` syncs it and renames it into
//! place: with `link`+`unlink` semantics (noclobber) unless `-f`, so an output that appeared
//! meanwhile is not replaced. An existing output is refused up front too, before any work.
//! An existing regular file replaced with `-f` (`c -f`, `rekey -o OUT -f`, `repair -f`) gives
//! the new file its permission bits, and its owner and group where this process may set them
//! (as root; otherwise only a group of its own), before the rename: an archive kept 0600, or
//! owned by a backup user, stays so on the nightly re-run instead of becoming 0644 and the
//! runner's (an unencrypted backup of /etc world-readable). An output that is a symbolic
//! link to a regular file is followed under `-f`: that file is replaced, the link stays
//! (`through_link` says why).
//!
//! **fsync policy** (README, "Durability"): a new archive is `fsync`ed before the rename and
//! its directory after it, so once `krypta c` exits 0 the archive survives a crash or power
//! loss. The archive is often the only copy (the next command may delete its source) and a
//! lost one is found only when a restore is needed; the cost is one flush of the written
//! bytes: on the development machine's disk 73 ms per 200 MiB when it was idle (issue 13),
//! 0.68 s when other builds were writing (`c -s` of 200 MiB: 1.70 s against 1.02 s with
//! `--no-fsync`, medians of 5 interleaved runs at load 5); nothing on tmpfs.
//! `tar` and `zstd` do not sync; `--no-fsync` (a scratch archive, a test, a disk that is
//! synced by other means) skips both calls. Extraction does not sync (`crate::fs::extract`).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{Sink, Source};
use crate::error::{Error, Result};
use crate::fs::chunked::{self, Chunked};
use crate::fs::cleanup;

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

/// The file a symbolic link at `path` names, when it is an existing regular file: `-f`
/// replaces that file (its directory gets the temporary file; the link stays, pointing at
/// the new archive), as `tar`, `zstd` and `age`, which open their output through a link,
/// write the file it names, and as `repair -f` in place always did. Replacing the link
/// itself left the file it named (on a NAS mount, say) old and put the new archive where
/// the link was. A dangling link, or one to anything but a regular file, is `None`: the
/// link itself is replaced.
fn through_link(path: &Path) -> Option<PathBuf> {
    let link = std::fs::symlink_metadata(path).ok()?;
    if !link.file_type().is_symlink() || !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    std::fs::canonicalize(path).ok()
}

/// A new local archive file: a temporary file renamed into place by `finish`.
pub struct FileSink {
    /// The temporary file (None once finished).
    tmp: Option<tempfile::NamedTempFile>,
    out: Option<BufWriter<Chunked<File>>>,
    path: PathBuf,
    force: bool,
    /// `fsync` the file before the rename and its directory after it (the default policy).
    sync: bool,
    /// The cleanup registration of the temporary file (0 once unregistered).
    cleanup_id: u64,
    own: Vec<(u64, u64)>,
}

impl FileSink {
    /// Creates the temporary file next to `path`; `sync` = the module's fsync policy (false:
    /// `--no-fsync`). With `force`, an existing regular file at `path` lends the new file its
    /// mode and, where permitted, its owner and group (module documentation). Errors:
    /// IsDirectory ([`refuse_directory`]), Exists (unless `force`), Io.
    pub fn create(path: &Path, force: bool, sync: bool) -> Result<FileSink> {
        refuse_directory(path)?;
        if !force && std::fs::symlink_metadata(path).is_ok() {
            return Err(Error::Exists { path: path.into() });
        }
        let resolved = force.then(|| through_link(path)).flatten();
        let path = resolved.as_deref().unwrap_or(path);
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let t = tempfile::Builder::new()
            .prefix(".krypta-tmp-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(&dir)
            .map_err(|e| {
                // Named by the file being written (the directory alone, often ".", says
                // little); the OS error says what failed.
                // (tempfile's error says "at path …" in Rust's quoting: the OS error alone.)
                // (Its inner error is private; the text before the suffix is the OS error's.)
                let text = e.to_string();
                let e = match text.split_once(" at path \"") {
                    Some((os, _)) => io::Error::new(e.kind(), os.to_string()),
                    None => e,
                };
                Error::io(path, "create its temporary file (in the same directory)", e)
            })?;
        let f = t
            .as_file()
            .try_clone()
            .map_err(|e| Error::io(t.path(), "open", e))?;
        // The temporary archive and the output it replaces are never archived, even when
        // they lie inside an input directory (`krypta::compress` refuses, before this, to
        // replace an output the walk would read: `Error::OutputIsInput`).
        let mut own = Vec::new();
        if let Ok(m) = t.as_file().metadata() {
            own.push((m.dev(), m.ino()));
        }
        if let Ok(m) = std::fs::metadata(path) {
            own.push((m.dev(), m.ino()));
        }
        let cleanup_id = cleanup::register(t.path().to_path_buf());
        let sink = FileSink {
            tmp: Some(t),
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
        t.as_file()
            .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode & 0o7777))
            .map_err(|e| Error::io(t.path(), "chmod", e))
    }

    /// Gives the file being written the owner and group `uid`/`gid` where this process may
    /// (root; otherwise its own group memberships): `repair` in place keeps the archive's.
    /// A change that is not permitted is skipped (the file stays the caller's).
    pub fn try_set_owner(&self, uid: u32, gid: u32) {
        let t = self.tmp.as_ref().expect("not finished");
        let _ = rustix::fs::fchown(
            t.as_file(),
            Some(rustix::fs::Uid::from_raw(uid)),
            Some(rustix::fs::Gid::from_raw(gid)),
        );
    }

    fn unregister(&mut self) {
        if self.cleanup_id != 0 {
            cleanup::unregister(std::mem::take(&mut self.cleanup_id));
        }
    }
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
        self.unregister();
        if self.sync {
            t.as_file()
                .sync_all()
                .map_err(|e| Error::io(&self.path, "sync", e))?;
        }
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
        if self.sync {
            // The rename is durable only once the directory holding the new name is.
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
        // The temporary file (if any) is removed by NamedTempFile's own drop.
        self.out = None;
        self.tmp = None;
        self.unregister();
    }
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
    fn an_aborted_file_sink_leaves_no_file_and_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.kry");
        let mut s: Box<dyn Sink> = Box::new(FileSink::create(&p, false, true).unwrap());
        s.write_all(b"partial").unwrap();
        s.abort();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_finished_file_sink_is_renamed_into_place_and_never_clobbers() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.kry");
        let mut s: Box<dyn Sink> = Box::new(FileSink::create(&p, false, true).unwrap());
        s.write_all(b"one").unwrap();
        // Another writer takes the name meanwhile: finishing refuses to replace it.
        std::fs::write(&p, b"other").unwrap();
        assert!(matches!(s.finish(), Err(Error::Exists { .. })));
        assert_eq!(std::fs::read(&p).unwrap(), b"other");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // With force it is replaced.
        let mut s: Box<dyn Sink> = Box::new(FileSink::create(&p, true, true).unwrap());
        s.write_all(b"two").unwrap();
        s.finish().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
    }

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
