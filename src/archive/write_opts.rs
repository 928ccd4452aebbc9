//! What the archive writer is given: its options, where file content comes from, and the
//! totals it reports.

use std::path::{Path, PathBuf};

use crate::codec::{Filter, Level};
use crate::crypto::keys::{ArchiveId, FileKey};
use crate::crypto::stanza::Recipient;
use crate::error::{Error, Result};
use crate::format::limits::MAX_FILE_SIZE;
use crate::format::{EntryMeta, FormatError};

/// How the BCJ filter is chosen for each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BcjMode {
    /// Detect x86-64 / AArch64 executables (ELF, PE, Mach-O) from each file's first bytes.
    Auto,
    /// Never filter.
    Off,
    /// Apply this filter to every file.
    Force(Filter),
}

/// Options for writing an archive.
pub struct WriteOptions {
    /// krypta level 1..=9, or `None` to store (`-s`).
    pub level: Option<Level>,
    /// Block size, bytes (MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).
    pub block_size: usize,
    /// Worker threads (at least 1; stored blocks use at most the cores minus one:
    /// `sealing_workers`).
    pub jobs: usize,
    /// BCJ filter choice.
    pub bcj: BcjMode,
    /// Creation time recorded in the header, seconds since the epoch.
    pub created: i64,
    /// Header comment (authenticated, not encrypted).
    pub comment: String,
    /// Recipients; empty for an unencrypted archive.
    pub recipients: Vec<Recipient>,
    /// Signs the archive with this key (`c --sign`): a signer extension in the header, a
    /// signature frame before the footer (docs/FORMAT.md §9.1).
    pub signer: Option<crate::crypto::sign::SignerSecret>,
    /// Archive id; random when `None`.
    pub archive_id: Option<ArchiveId>,
    /// File key; random when `None` (fixed only for golden vectors and tests).
    pub file_key: Option<FileKey>,
    /// Test-only: make data blocks reference the stream bytes before them (format 2's
    /// reference length), so the reader's support for referencing blocks is tested before
    /// the level-9 writer that will use them exists. `None` in real use.
    #[doc(hidden)]
    pub test_reference: Option<TestReference>,
    /// Reed–Solomon recovery data after the footer (`--recovery PCT`; docs/FORMAT.md §15):
    /// the header then carries the recovery extension. `None`: no recovery data.
    pub recovery: Option<crate::recovery::RecoveryOptions>,
    /// Golden vectors only: the salt of the password stanza (random when `None`), so an
    /// encrypted archive can be a known answer. Never set in real use.
    #[doc(hidden)]
    pub fixed_salt: Option<[u8; 16]>,
    /// Write a delta archive against this base (`c --base`; docs/FORMAT.md §16): the header
    /// names it, files matched by path are compressed against its bytes
    /// ([`crate::archive::delta`]), BCJ is off and every file ends with its digest.
    pub base: Option<std::sync::Arc<crate::archive::reader::BaseArchive>>,
    /// With a base: walk it to its end before the first byte is written, for an output that
    /// cannot be taken back (stdout, a device, a FIFO), so a base damaged anywhere is refused
    /// before the reader downstream sees a byte. Otherwise the walk runs beside the writing
    /// (`crate::archive::delta`'s walk), and a failure of it removes the temporary output.
    pub walk_base_first: bool,
}

/// Test-only parameters of referencing blocks ([`WriteOptions::test_reference`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestReference {
    /// Most stream bytes a block references (the tail of the block before it, at most).
    pub max_len: usize,
    /// Blocks per group: every `group_blocks`-th data block starts a group (references
    /// nothing).
    pub group_blocks: u64,
}

impl WriteOptions {
    /// Defaults: level default, its block size, all cores, BCJ auto, unencrypted, now.
    pub fn new() -> Self {
        let level = Level::DEFAULT;
        WriteOptions {
            level: Some(level),
            block_size: level.default_block_size(),
            jobs: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            bcj: BcjMode::Auto,
            created: 0,
            comment: String::new(),
            recipients: Vec::new(),
            signer: None,
            archive_id: None,
            file_key: None,
            test_reference: None,
            recovery: None,
            fixed_salt: None,
            base: None,
            walk_base_first: false,
        }
    }
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the content of a file comes from: a sequence of data extents (holes skipped).
pub trait ContentSource {
    /// Reads up to `buf.len()` (> 0) bytes of the next data extent into the front of `buf`
    /// and returns its file offset and length (> 0), offsets increasing; `None` at the end.
    /// The writer passes a slice of its block, so content is read once, straight into place.
    fn read_extent(&mut self, buf: &mut [u8]) -> Result<Option<(u64, usize)>>;
    /// Logical size read (including a trailing hole), bytes.
    fn final_size(&self) -> u64;
    /// Whether [`ContentSource::rewind`] can start the content over (a file can, a pipe
    /// cannot). Default: no.
    fn can_rewind(&self) -> bool {
        false
    }
    /// Starts the content over from its first byte (only when [`ContentSource::can_rewind`]).
    fn rewind(&mut self) -> Result<()> {
        Err(crate::Error::Usage(
            "this content source cannot be read twice".into(),
        ))
    }
    /// Waits up to `timeout` for the next bytes (or the end) to be there to read, and says
    /// whether they are; a source whose reads never wait on a producer (a file) says yes at
    /// once. The writer asks before it reads a stream, so that while its producer pauses
    /// it writes the frames sealed meanwhile instead of holding them (see
    /// `ArchiveWriter::write_sealed_while_input_waits`). Default: yes.
    fn wait_readable(&mut self, _timeout: std::time::Duration) -> bool {
        true
    }
    /// Whether the last extent ended early because the producer paused (a stream: more may
    /// follow, at the next offset). The writer then reads on into the same buffer, so that
    /// where a stream's extents end never depends on timing. Default: no.
    fn paused(&self) -> bool {
        false
    }
}

impl ContentSource for crate::fs::source::FileSource {
    fn read_extent(&mut self, buf: &mut [u8]) -> Result<Option<(u64, usize)>> {
        crate::fs::source::FileSource::read_extent(self, buf)
    }
    fn final_size(&self) -> u64 {
        crate::fs::source::FileSource::final_size(self)
    }
    fn can_rewind(&self) -> bool {
        true
    }
    fn rewind(&mut self) -> Result<()> {
        crate::fs::source::FileSource::rewind(self);
        Ok(())
    }
}

/// How long a stream may keep the writer waiting before it writes out what it has: a
/// stream's extent ends early, and the frames sealed meanwhile are written, when no byte
/// comes for this long (a paused `pg_dump`, a slow network).
pub const STREAM_STALL: std::time::Duration = std::time::Duration::from_millis(50);

/// Content from any reader (stdin), read front to back with no holes.
pub struct ReaderSource<R> {
    inner: R,
    pos: u64,
    name: PathBuf,
    /// The descriptor `inner` reads (a pipe, a FIFO, a socket), polled to notice a producer
    /// that pauses ([`ReaderSource::with_poll_fd`]); `None`: reads are taken to never wait.
    poll_fd: Option<std::os::fd::OwnedFd>,
    /// The last extent ended at a pause ([`ContentSource::paused`]).
    paused: bool,
}

impl<R: std::io::Read> ReaderSource<R> {
    /// Wraps a reader; `name` labels I/O errors.
    pub fn new(inner: R, name: impl Into<PathBuf>) -> Self {
        ReaderSource {
            inner,
            pos: 0,
            name: name.into(),
            poll_fd: None,
            paused: false,
        }
    }

    /// Polls `fd` (a duplicate of the descriptor the reader reads) to tell a paused producer:
    /// an extent then ends with the bytes that came before the pause ([`STREAM_STALL`]) and
    /// says so ([`ContentSource::paused`]), and [`ContentSource::wait_readable`] answers
    /// from `poll`.
    pub fn with_poll_fd(mut self, fd: Option<std::os::fd::OwnedFd>) -> Self {
        self.poll_fd = fd;
        self
    }

    /// Whether `poll` says a read would not wait (bytes, the end, or an error to report),
    /// within `timeout`. Without a descriptor, or if `poll` itself fails: yes.
    fn readable_within(&self, timeout: std::time::Duration) -> bool {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let Some(fd) = self.poll_fd.as_ref() else {
            return true;
        };
        let t = Timespec {
            tv_sec: timeout.as_secs() as _,
            tv_nsec: timeout.subsec_nanos() as _,
        };
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        loop {
            match poll(&mut fds, Some(&t)) {
                Ok(n) => return n > 0,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return true,
            }
        }
    }
}

impl<R: std::io::Read> ContentSource for ReaderSource<R> {
    fn read_extent(&mut self, buf: &mut [u8]) -> Result<Option<(u64, usize)>> {
        let mut got = 0;
        self.paused = false;
        while got < buf.len() {
            // A producer that pauses ends the extent with what came before the pause.
            if got > 0 && !self.readable_within(STREAM_STALL) {
                self.paused = true;
                break;
            }
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&self.name, "read", e)),
            }
        }
        if got == 0 {
            return Ok(None);
        }
        let off = self.pos;
        self.pos += got as u64;
        Ok(Some((off, got)))
    }
    fn final_size(&self) -> u64 {
        self.pos
    }
    fn wait_readable(&mut self, timeout: std::time::Duration) -> bool {
        self.readable_within(timeout)
    }
    fn paused(&self) -> bool {
        self.paused
    }
}

/// Totals reported by [`ArchiveWriter::finish`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// Entries written.
    pub entries: u64,
    /// Content bytes read (logical file sizes, holes included).
    pub content_bytes: u64,
    /// Data frames written.
    pub data_frames: u64,
    /// Archive size, bytes (the recovery section included).
    pub archive_bytes: u64,
    /// Of those, the recovery section's bytes (0 without `--recovery`).
    pub recovery_bytes: u64,
    /// Files stored as references to the base (BASE_REF, docs/FORMAT.md §16.5; 0 without
    /// a base).
    pub base_references: u64,
}

/// An entry's archive path for a message: escaped as `list` shows it, and cut after 200
/// characters (paths may be 64 KiB long).
pub(crate) fn shown_entry(path: &[u8]) -> String {
    let text = crate::fs::escape_path(path);
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], path.len()),
        None => text,
    }
}

/// The error for a file whose size (or data end) `size` is past [`MAX_FILE_SIZE`].
pub(crate) fn too_big(meta: &EntryMeta, size: u64) -> Error {
    Error::Unwritable {
        what: shown_entry(&meta.path),
        problem: FormatError::invalid(
            "file",
            format!("{size} bytes exceeds the {MAX_FILE_SIZE}-byte file size limit"),
        ),
    }
}

/// Refuses, before any KDF runs, a recipient list whose stanzas no reader would accept
/// (`format::stanza::check_stanza_set`): more than 64 recipients, or more than one password.
pub(crate) fn check_recipients(recipients: &[Recipient]) -> Result<()> {
    use crate::format::stanza::{MAX_PASSWORD_STANZAS, MAX_STANZAS};
    let passwords = recipients
        .iter()
        .filter(|r| matches!(r, Recipient::Password { .. }))
        .count();
    if passwords > MAX_PASSWORD_STANZAS {
        return Err(Error::Usage(format!(
            "{passwords} passwords given: an archive holds at most one password stanza (add key files or box recipients instead)"
        )));
    }
    if recipients.len() > MAX_STANZAS {
        return Err(Error::Usage(format!(
            "{} recipients given: an archive holds at most {MAX_STANZAS} stanzas",
            recipients.len()
        )));
    }
    Ok(())
}

/// The recovery encoder's options at `percent` for an archive written to `output`: what
/// outgrows its memory budget (64 MiB of recovery shards, the section of about a 1.3 GB
/// archive at 5%) spills to an unnamed temporary file next to a local output, which has room
/// for the section anyway (the system temporary directory may be a small tmpfs); for stdout
/// (`-`), `s3://` and a device or FIFO written into (its directory is `/dev`, say), to the
/// system temporary directory. `c --recovery` and `rekey` use it.
pub fn recovery_options_for(percent: u8, output: &Path) -> crate::recovery::RecoveryOptions {
    let mut o = crate::recovery::RecoveryOptions::new(percent);
    if output != Path::new("-")
        && !crate::store::Location::parse(output).is_ok_and(|l| l.is_remote())
        && crate::store::local::special_output(output).is_none()
    {
        o.spill_dir = Some(match output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        });
    }
    o
}

/// The sealing workers a writer starts for `jobs` (`-j`) at `level` (`None`: `-s`, stored
/// blocks). Stored blocks get at most the cores the filling thread leaves free (at least
/// one), like extraction's decoders (`reader::open`): without compression a worker only
/// encrypts and MACs (or checksums) a block, about as much work per byte as the filling
/// thread's own (read, BLAKE3 of every file, write), so a second worker on 2 cores made all
/// three threads wait on each other. Measured (`c -s --keyfile --no-fsync` of 800 MiB of
/// random bytes on tmpfs, 2 cores, 7 interleaved rounds, medians): `-j 1` 734 ms, `-j 2`
/// 839 ms; `perf` at `-j 1`: the filling thread 662 ms of CPU, the worker 610 ms. Compressing
/// levels get one worker per core: there the workers do most of the work, and more workers
/// than cores only add blocks in flight (memory) — and a `-j` of 100000 asked the OS for
/// 100000 threads, which it refuses.
pub(crate) fn sealing_workers(jobs: usize, level: Option<Level>) -> usize {
    let jobs = jobs.max(1);
    if level.is_some() {
        return jobs.min(std::thread::available_parallelism().map_or(1, |n| n.get()));
    }
    jobs.min(super::pipeline::cores_beside_caller())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_blocks_leave_the_filling_thread_a_core_and_compression_gets_a_worker_per_core() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let free = cores.saturating_sub(1).max(1);
        assert_eq!(crate::archive::pipeline::cores_beside_caller(), free);
        assert_eq!(sealing_workers(cores, None), free);
        assert_eq!(sealing_workers(cores + 3, None), free);
        assert_eq!(sealing_workers(1, None), 1);
        assert_eq!(sealing_workers(0, None), 1);
        let l3 = Some(Level::DEFAULT);
        assert_eq!(sealing_workers(cores, l3), cores);
        assert_eq!(sealing_workers(cores + 3, l3), cores);
        assert_eq!(sealing_workers(100_000, l3), cores);
        assert_eq!(sealing_workers(0, l3), 1);
    }

    #[test]
    fn a_stream_whose_producer_pauses_ends_its_extent_and_says_it_would_wait() {
        use std::io::Write;
        use std::time::Duration;
        let (r, w) = rustix::pipe::pipe().unwrap();
        let poll = r.try_clone().ok();
        let mut src = ReaderSource::new(std::fs::File::from(r), "pipe").with_poll_fd(poll);
        let mut w = std::fs::File::from(w);
        // Nothing written yet, the write end open: a read would wait.
        assert!(!src.wait_readable(Duration::from_millis(1)));
        w.write_all(&[1u8; 3000]).unwrap();
        assert!(src.wait_readable(Duration::from_millis(1)));
        // A buffer larger than what came: the extent ends with the 3000 bytes and says it
        // ended at a pause, instead of waiting for more (it blocked here for good before).
        // On another thread, so that a regression fails the test instead of hanging it.
        let (tx, rx) = std::sync::mpsc::channel();
        let reading = std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 20];
            let got = src.read_extent(&mut buf).unwrap();
            let _ = tx.send((got, src.paused(), buf[..3000].iter().all(|&b| b == 1)));
            src
        });
        let first = rx.recv_timeout(Duration::from_secs(60));
        w.write_all(&[2u8; 10]).unwrap();
        drop(w);
        let mut src = reading.join().unwrap();
        assert_eq!(
            first.expect("the read waited for more"),
            (Some((0, 3000)), true, true)
        );
        // The end is "readable" too: the read that follows returns it at once, and the last
        // extent, cut by the end and not a pause, says so.
        assert!(src.wait_readable(Duration::from_millis(1)));
        let mut buf = vec![0u8; 1 << 20];
        assert_eq!(src.read_extent(&mut buf).unwrap(), Some((3000, 10)));
        assert!(!src.paused());
        assert_eq!(&buf[..10], &[2u8; 10]);
        assert_eq!(src.read_extent(&mut buf).unwrap(), None);
        assert!(!src.paused());
        assert_eq!(src.final_size(), 3010);
    }

    #[test]
    fn a_source_without_a_descriptor_to_poll_reads_to_fill_and_never_says_wait() {
        let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let mut src = ReaderSource::new(std::io::Cursor::new(data.clone()), "mem");
        assert!(src.wait_readable(std::time::Duration::ZERO));
        let mut buf = vec![0u8; 4096];
        assert_eq!(src.read_extent(&mut buf).unwrap(), Some((0, 4096)));
        assert!(!src.paused());
        assert_eq!(src.read_extent(&mut buf).unwrap(), Some((4096, 904)));
        assert_eq!(&buf[..904], &data[4096..]);
        assert_eq!(src.read_extent(&mut buf).unwrap(), None);
    }
}
