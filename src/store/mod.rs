//! Where archive bytes live: one seam between the archive reader/writer and the medium.
//!
//! A [`Sink`] takes the archive strictly front to back (`write`), then either makes it
//! durable under its final name ([`Sink::finish`]) or discards it ([`Sink::abort`], also what
//! dropping an unfinished sink does): an aborted write leaves nothing under the final name,
//! locally or in a bucket. A [`Source`] gives sequential reads, seeks and ranged reads where
//! the medium allows them, its length, and an identity of the version being read.
//!
//! Implementations, chosen by [`Location::parse`] from the path the user gave:
//! - `-`: stdin / stdout ([`local::ReadSource::stdin`], [`local::StdoutSink`]); not seekable.
//! - a local path: a file ([`local::FileSource`]; a pipe or character device there is read
//!   as a stream like `-`: [`local::ReadSource`]), written under a temporary name in the
//!   target directory and renamed into place ([`local::FileSink`]; noclobber unless `-f`).
//! - `s3://BUCKET/KEY`: an object on S3-compatible storage ([`s3`]): ranged GETs pinned to the
//!   first response's ETag, a multipart upload streamed with bounded memory.
//!
//! The reader and writer never know which one they have. Later users of the seam (repair,
//! rekey, a delta base) open a [`Source`] the same way and may use [`Source::read_at`].
//!
//! ## The S3 client: rusty-s3 + ureq (rustls), no async runtime
//!
//! Weighed by building a probe that does one ranged GET with each stack (clean
//! `cargo build --release` with krypta's release profile, on the development machine: 2 cores
//! shared with other builds, load 5–8 during the runs, so the times are indicative; sizes are
//! exact):
//!
//! | stack | build (s) | stripped binary | crates | `cargo tree` depth | backends |
//! |---|---|---|---|---|---|
//! | rusty-s3 0.11 + ureq 3 (rustls, ring) | 176 | 3.2 MB | 93 | 12 | S3 API only |
//! | object_store 0.14 (`aws`, tokio, reqwest, aws-lc-rs) | 390 | 7.0 MB | 179 | 14 | S3, GCS, Azure, HTTP/WebDAV |
//! | opendal 0.59 (`services-s3`, blocking over tokio, reqwest) | 940 | 4.5 MB | 193 | 13 | 50+ services |
//!
//! In krypta itself (which already builds ring for its crypto), measured before and after
//! the change: stripped release binary 4.49 → 7.58 MB (+3.1 MB: rustls and the webpki roots,
//! ureq, url/idna, rusty-s3 and its XML, this module); `cargo tree` crates 126 → 188, depth
//! 8 → 12; a clean release build 328 → 399 CPU-seconds (user + sys, +22%; wall time on the
//! shared machine varied 2× with load and says nothing).
//!
//! Both object_store and opendal are async and need a tokio runtime (opendal's blocking
//! API wraps one), reqwest and hyper; object_store's `aws` feature also builds aws-lc-rs.
//! krypta's pipeline is threads and blocking I/O, so a runtime would be a second concurrency
//! model for the sake of a few HTTP requests. rusty-s3 is a maintained sans-IO SigV4 signer
//! with the multipart actions and their XML; ureq is a maintained blocking HTTP/1.1 client
//! with rustls, and ring (already in krypta for the crypto) and the webpki roots for TLS to
//! real AWS, plain `http://` for a loopback endpoint. The parallelism krypta needs (a few part
//! uploads, a few ranged GETs ahead) is a handful of threads. What is given up: the other
//! backends. Only `s3://` works; GCS (its XML API with HMAC keys), Cloudflare R2, Backblaze
//! B2, Wasabi, MinIO, Ceph RGW, Garage and SeaweedFS work through `s3://` with
//! `--endpoint-url`; Azure Blob, WebDAV and SFTP do not.
//!
//! Process-wide settings (the `--endpoint-url` option) are set once by the CLI with
//! [`configure`], like the AWS environment variables they complement.

pub mod clamped;
pub mod file_sink;
pub mod healing;
pub mod local;
mod lost;
pub mod s3;
pub mod shifted;
pub mod whole;

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Where an archive path points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// `-`: stdin when reading, stdout when writing.
    Stdio,
    /// A local file.
    Local(PathBuf),
    /// `s3://BUCKET/KEY`.
    S3(s3::ObjectUrl),
}

impl Location {
    /// Classifies a path as given on the command line: `-`, `s3://BUCKET/KEY` (validated:
    /// Usage error for a missing bucket or key), or a local path.
    pub fn parse(path: &Path) -> Result<Location> {
        if path == Path::new("-") {
            return Ok(Location::Stdio);
        }
        match path.to_str() {
            Some(s) if s.starts_with(s3::SCHEME) => Ok(Location::S3(s3::ObjectUrl::parse(s)?)),
            _ => Ok(Location::Local(path.to_path_buf())),
        }
    }

    /// True for `s3://` locations.
    pub fn is_remote(&self) -> bool {
        matches!(self, Location::S3(_))
    }

    /// True when `self` and `other` name the same archive, however spelled: two local paths
    /// to one file (`a.kry`, `./a.kry`, `$PWD/a.kry`, a symbolic or hard link) — the same
    /// device and inode when both exist, else the same canonical path (the parent directory
    /// canonicalized, the last component as given) —, or two `s3://` URLs with the same
    /// bucket and key (keys are sent exactly as given: [`s3`]). Stdio is never the same as
    /// anything: it is no archive that could be replaced.
    pub fn same_archive(&self, other: &Location) -> bool {
        match (self, other) {
            (Location::S3(a), Location::S3(b)) => a == b,
            (Location::Local(a), Location::Local(b)) => same_local_file(a, b),
            _ => false,
        }
    }
}

/// [`Location::same_archive`] of two local paths.
fn same_local_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return (x.dev(), x.ino()) == (y.dev(), y.ino());
    }
    match (canonical(a), canonical(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// `p` made absolute through its parent directory's canonical path (the file itself may not
/// exist yet, or be a dangling link); None when the parent cannot be resolved.
fn canonical(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = std::fs::canonicalize(p) {
        return Some(c);
    }
    let name = p.file_name()?;
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(parent).ok()?.join(name))
}

/// Counters of one remote transfer: what `-v` reports and the tests check.
#[derive(Debug, Default)]
pub struct Counters {
    /// HTTP requests sent (retries included).
    pub requests: AtomicU64,
    /// Requests that were retries of an earlier attempt.
    pub retries: AtomicU64,
    /// Response body bytes received (object data and XML).
    pub bytes_in: AtomicU64,
    /// Request body bytes sent.
    pub bytes_out: AtomicU64,
    /// Frames (or headers) whose bytes failed their check as received and passed it when
    /// fetched again ([`Refetch::healed`]): changed on the way, not in the store.
    pub refetched: AtomicU64,
    /// Second looks whose bytes failed the check again ([`Refetch::failed`]): damage in the
    /// store, confirmed. Past [`MAX_FAILED_SECOND_LOOKS`] no more are taken.
    pub second_looks_failed: AtomicU64,
}

/// Second looks that may fail again (the store's copy is damaged) before a source takes no
/// more: a damaged region (or one crafted to hold a plausible frame head every 16 bytes, which
/// salvage's walk tries one by one) would otherwise cost one more request per frame tried —
/// 16,545 GETs for 256 KiB of such heads — where the first reads came from one 8 MiB window.
/// Past it, a frame that fails is damage as before the second look existed.
pub const MAX_FAILED_SECOND_LOOKS: u64 = 32;

impl Counters {
    /// Whether a second look may still be taken ([`MAX_FAILED_SECOND_LOOKS`]).
    pub fn may_look_again(&self) -> bool {
        self.second_looks_failed.load(Ordering::Relaxed) < MAX_FAILED_SECOND_LOOKS
    }
}

impl Counters {
    /// Adds `n` to a counter.
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// One line for `-v`: `N requests (R retried), I bytes received, O bytes sent`, and
    /// `, F fetched again after a transfer error` when [`Counters::refetched`] is not 0.
    pub fn summary(&self) -> String {
        let refetched = self.refetched.load(Ordering::Relaxed);
        format!(
            "{} requests ({} retried), {} bytes received, {} bytes sent{}",
            self.requests.load(Ordering::Relaxed),
            self.retries.load(Ordering::Relaxed),
            self.bytes_in.load(Ordering::Relaxed),
            self.bytes_out.load(Ordering::Relaxed),
            if refetched > 0 {
                format!(", {refetched} fetched again after a transfer error")
            } else {
                String::new()
            }
        )
    }

    /// The warning every command prints when [`Counters::refetched`] is not 0: the archive
    /// is intact, the network path to it is not.
    pub fn transfer_warning(&self, location: &Path) -> Option<String> {
        let n = self.refetched.load(Ordering::Relaxed);
        (n > 0).then(|| {
            format!(
                "{}: {n} {} failed {} check as received and passed it when fetched again: the stored archive is intact, but something between krypta and the store changed bytes in transit (a proxy, a network card, memory; over https this cannot happen unnoticed)",
                crate::fs::shown(location),
                if n == 1 { "read" } else { "reads" },
                if n == 1 { "its" } else { "their" },
            )
        })
    }
}

/// A second, fresh read of bytes that failed a check, for sources whose bytes cross a
/// network ([`Source::refetcher`]).
///
/// Why: a frame's tag or the header's checksum that fails on bytes fetched from object
/// storage may be the store's copy (damage: report it, salvage past it) or the transfer (a
/// byte changed between the store and krypta: plain http through a faulty proxy, NIC or
/// memory). Only a second fetch tells them apart, and it costs one request on an error path
/// only. Before, a transfer error was reported as damage in the archive (exit 5 on an
/// intact object, and `x` re-read the whole archive to salvage). The bytes fetched again are
/// checked exactly as the first were, so a second opinion can never let through a byte the
/// first check would refuse: it only turns a refusal of bytes that were not the stored ones
/// into a read of the stored ones.
///
/// It is also the source's ranged read without a lock (`Sync`), for readers that fetch many
/// ranges at once or in runs ([`Refetch::fetch`]: a delta base's frames and tags).
pub trait Refetch: Send + Sync {
    /// Exactly `buf.len()` bytes at `offset`, fetched with a new request (never from bytes
    /// kept by the source); a short object is `UnexpectedEof`.
    fn fetch(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Whether a second look may still be taken ([`MAX_FAILED_SECOND_LOOKS`]).
    fn may_look_again(&self) -> bool {
        true
    }
    /// [`Refetch::fetch`] for a second look: an error, with no request, once
    /// [`Refetch::may_look_again`] says no.
    fn refetch(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if !self.may_look_again() {
            return Err(io::Error::other(
                "no more second looks: the stored object failed too many already",
            ));
        }
        self.fetch(offset, buf)
    }
    /// The bytes fetched again passed the check the first copy failed: counted, and warned
    /// about by the commands ([`Counters::transfer_warning`]).
    fn healed(&self);
    /// The bytes fetched again failed the check too (or were the same bytes): the store's
    /// copy is damaged. Counted, so that a source stops taking second looks past
    /// [`MAX_FAILED_SECOND_LOOKS`] (then [`Refetch::refetch`] is an error, with no request).
    fn failed(&self) {}
}

/// Where archive bytes come from: sequential reads at a position, seeks and ranged reads
/// where the medium allows them.
pub trait Source: Read + Send {
    /// True when [`Source::seek_to`], [`Source::length`] and [`Source::read_at`] work (a file or
    /// an object, not a pipe).
    fn seekable(&self) -> bool;
    /// What a source that cannot seek is, for refusals by commands that must seek ("a
    /// pipe", "stdin"); None for seekable sources.
    fn stream_kind(&self) -> Option<&'static str> {
        None
    }
    /// Total length, bytes; None for a stream.
    fn length(&mut self) -> io::Result<Option<u64>>;
    /// Moves the sequential position to `offset` (Unsupported on a stream).
    fn seek_to(&mut self, offset: u64) -> io::Result<()>;
    /// A hint: the next sequential reads go from the current position up to `end` (None: to
    /// the end). A remote source fetches that range ahead, in parallel, and nothing beyond
    /// it; reads past `end` still work. Local sources ignore it.
    fn read_ahead_to(&mut self, _end: Option<u64>) {}
    /// Reads up to `buf.len()` bytes at `offset`, independent of the sequential position
    /// (for repair, rekey and delta bases); 0 at the end. Unsupported on a stream.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// An identity of the version being read (an object's ETag; a file's device, inode,
    /// size and mtime), when the medium has one.
    fn identity(&self) -> Option<String>;
    /// Transfer counters (remote sources).
    fn counters(&self) -> Option<std::sync::Arc<Counters>> {
        None
    }
    /// A way to fetch bytes again, bypassing everything the source keeps, for sources whose
    /// bytes cross a network ([`Refetch`]); None for local files and streams, whose bytes
    /// read twice are the same bytes. Offsets are this source's own.
    fn refetcher(&self) -> Option<std::sync::Arc<dyn Refetch>> {
        None
    }
    /// What transparent repair did ([`healing::HealingSource`]; None for other sources).
    fn heal_report(&self) -> Option<healing::HealReport> {
        None
    }
    /// Checks the recovery section's own parts ([`healing::HealingSource::check_section`]).
    fn check_section(&mut self) -> Option<healing::SectionCheck> {
        None
    }
    /// Where the bytes come from, for `-v` (remote sources: endpoint, region, credentials).
    fn describe(&self) -> Option<String> {
        None
    }
    /// Bytes after the archive's footer that the source leaves out ([`clamped::Clamped`]):
    /// where the archive ends, how many follow, whether all of them are zero.
    fn trailing(&self) -> Option<(u64, u64, bool)> {
        None
    }
}

/// Exactly `buf.len()` bytes at `offset` of `src` (ranged reads); a short read is
/// `UnexpectedEof`.
pub fn read_exact_at(src: &dyn Source, mut offset: u64, mut buf: &mut [u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match src.read_at(offset, buf) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                offset += n as u64;
                buf = &mut buf[n..];
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Where a new archive goes: written front to back, then finished or aborted.
pub trait Sink: Write + Send {
    /// Makes everything written durable under the final name. Errors: Exists when the name
    /// was taken meanwhile (and `force` was not given), Io.
    fn finish(self: Box<Self>) -> Result<()>;
    /// Discards what was written: nothing is left under the final name, no temporary file,
    /// no unfinished upload. Dropping an unfinished sink does the same.
    fn abort(self: Box<Self>);
    /// (device, inode) of local files this sink writes or replaces, which an archive of a
    /// directory tree must not include.
    fn own_files(&self) -> Vec<(u64, u64)> {
        Vec::new()
    }
    /// Transfer counters (remote sinks).
    fn counters(&self) -> Option<std::sync::Arc<Counters>> {
        None
    }
    /// Where the bytes go, for `-v` (remote sinks).
    fn describe(&self) -> Option<String> {
        None
    }
    /// Warnings the sink could only record (e.g. an upload it could not abort while being
    /// dropped after an error); read them after the sink is gone.
    fn warnings(&self) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
        Default::default()
    }
    /// Details for `-v` the sink could only record (e.g. a lost answer to the final request,
    /// and how the object was confirmed); read them after the sink is gone.
    fn details(&self) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
        Default::default()
    }
}

/// Process-wide store settings (set by the CLI from its options).
#[derive(Debug, Clone, Default)]
pub struct StoreSettings {
    /// `--endpoint-url`: overrides `AWS_ENDPOINT_URL` and the profile's `endpoint_url`.
    pub endpoint_url: Option<String>,
}

static SETTINGS: OnceLock<StoreSettings> = OnceLock::new();

/// Sets the process-wide store settings; the first call wins (later ones are ignored).
pub fn configure(settings: StoreSettings) {
    let _ = SETTINGS.set(settings);
}

/// The process-wide settings (defaults when [`configure`] was not called).
pub fn settings() -> StoreSettings {
    SETTINGS.get().cloned().unwrap_or_default()
}

/// Opens `path` for reading: `-` is stdin, `s3://BUCKET/KEY` an object (its first bytes are
/// fetched here: errors such as a missing key or wrong credentials surface now), anything
/// else a local path: a file, or a pipe or device read as a stream like `-`
/// ([`local::open_path`]). Errors: Io naming the path (NotFound for a missing file, key or
/// bucket), IsDirectory, StoreConfig, Usage for a malformed `s3://` URL, StreamClosed for
/// `-` when stdin was closed ([`crate::closed_stdio`]).
pub fn open_source(path: &Path) -> Result<Box<dyn Source>> {
    // `-`, or `/dev/stdin`, naming a stdin closed when krypta started: the /dev/null that
    // stands in for it holds no archive.
    crate::closed_stdio::require_archive_path(path, false)?;
    match Location::parse(path)? {
        Location::Stdio => Ok(Box::new(local::ReadSource::stdin())),
        Location::Local(p) => local::open_path(&p),
        Location::S3(url) => Ok(Box::new(s3::S3Source::open(&url, &settings())?)),
    }
}

/// [`open_source`] for commands that read the archive at offsets or more than once
/// (`repair`, a delta base): a stream (`-`, a pipe, a character device) is refused with
/// [`Error::NotSeekable`] before a byte of it is read; `needs` says why, in the message.
pub fn open_seekable(path: &Path, needs: &'static str) -> Result<Box<dyn Source>> {
    let src = open_source(path)?;
    if src.seekable() {
        return Ok(src);
    }
    Err(Error::NotSeekable {
        path: path.into(),
        kind: src.stream_kind().unwrap_or("a stream"),
        needs,
    })
}

/// Creates a sink for a new archive at `path`: `-` is stdout, `s3://BUCKET/KEY` an object,
/// an existing named pipe or character device is written into as a stream
/// ([`local::DeviceSink`], never replaced), anything else a local file. Unless `force`, an existing file or object is an Exists error
/// now, and is never replaced later (noclobber rename; conditional write on the store).
/// `sync`: a local file is `fsync`ed, and its directory after the rename (`local`'s fsync
/// policy; false for `--no-fsync`); stdout and objects are not files krypta can sync. `-`
/// (or `/dev/stdout`) when stdout was closed is StreamClosed ([`crate::closed_stdio`]).
pub fn create_sink(path: &Path, force: bool, sync: bool) -> Result<Box<dyn Sink>> {
    crate::closed_stdio::require_archive_path(path, true)?;
    match Location::parse(path)? {
        Location::Stdio => Ok(Box::new(local::StdoutSink::new())),
        Location::Local(p) if matches!(local::special_output(&p), Some((_, true))) => {
            Ok(Box::new(local::DeviceSink::open(&p)?))
        }
        Location::Local(p) => Ok(Box::new(local::FileSink::create(&p, force, sync)?)),
        Location::S3(url) => Ok(Box::new(s3::S3Sink::create(&url, &settings(), force)?)),
    }
}

/// For `c` and `rekey`, before anything is read, opened or asked for: an existing OUT
/// without `force` is refused ([`Error::Exists`], exit 1), so that neither a delta base's key
/// nor a password is asked for an archive that will not be written. A file: as
/// [`local::refuse_existing`] (a socket or block device is refused even with `force`); an
/// object: one HEAD request (the upload checks again, [`s3::S3Sink::create`]); stdout: never.
/// Errors: Exists, Usage, Io naming the object (the store cannot be asked).
pub fn refuse_existing(path: &Path, force: bool) -> Result<()> {
    match Location::parse(path)? {
        Location::Local(p) => local::refuse_existing(&p, force),
        Location::S3(url) if !force => s3::S3Sink::refuse_existing(&url, &settings()),
        _ => Ok(()),
    }
}

/// [`create_sink`] for a new archive made from the archive `like` (`repair`, `rekey`): when
/// both are local files and OUT does not exist yet, OUT takes `like`'s permission bits, and
/// its owner and group where krypta may set them, before it is renamed into place, as `cp`
/// and `zstd` give their output their input's mode (an archive kept 0600 is not re-keyed
/// into a 0644 one). An existing OUT replaced with `force` keeps its own, as `c -f` does (an
/// archive set up 0640 for a backup group stays so on the nightly re-run). A device or FIFO
/// is written into; objects have no mode.
/// Errors: as [`create_sink`]; Io setting the mode or owner.
pub fn create_sink_like(
    path: &Path,
    like: &Path,
    force: bool,
    sync: bool,
) -> Result<Box<dyn Sink>> {
    let device = local::special_output(path).is_some();
    match (Location::parse(path)?, Location::parse(like)?) {
        (Location::Local(t), Location::Local(a)) if !device => {
            let new = std::fs::metadata(&t).is_err();
            let s = local::FileSink::create(&t, force, sync)?;
            if new && let Ok(m) = std::fs::metadata(&a) {
                s.keep_mode_and_owner(&m)?;
            }
            Ok(Box::new(s))
        }
        _ => create_sink(path, force, sync),
    }
}

/// An [`io::Error`] carrying a store error of the given kind (so the library's `Error::Io`
/// names the location, and the exit code stays the I/O one).
pub(crate) fn io_error<E>(kind: io::ErrorKind, e: E) -> io::Error
where
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    io::Error::new(kind, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_archive_spelled_many_ways_is_the_same_archive() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("same.kry");
        std::fs::write(&a, b"x").unwrap();
        std::os::unix::fs::symlink(&a, d.path().join("link.kry")).unwrap();
        std::fs::hard_link(&a, d.path().join("hard.kry")).unwrap();
        std::fs::write(d.path().join("other.kry"), b"x").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let loc = |p: PathBuf| Location::parse(&p).unwrap();
        let same = loc(a.clone());
        for p in [
            d.path().join("./same.kry"),
            d.path().join("sub/../same.kry"),
            d.path().join("link.kry"),
            d.path().join("hard.kry"),
        ] {
            assert!(same.same_archive(&loc(p.clone())), "{}", p.display());
        }
        assert!(!same.same_archive(&loc(d.path().join("other.kry"))));
        // A name that does not exist yet: compared through its parent's canonical path.
        let new = loc(d.path().join("new.kry"));
        assert!(new.same_archive(&loc(d.path().join("sub/../new.kry"))));
        assert!(!new.same_archive(&same));
        let s3 = |u: &str| Location::parse(Path::new(u)).unwrap();
        assert!(s3("s3://b/k.kry").same_archive(&s3("s3://b/k.kry")));
        assert!(!s3("s3://b/k.kry").same_archive(&s3("s3://c/k.kry")));
        assert!(!s3("s3://b/k.kry").same_archive(&s3("s3://b/K.kry")));
        assert!(!Location::Stdio.same_archive(&Location::Stdio));
    }

    #[test]
    fn locations_are_classified_by_their_spelling() {
        assert_eq!(Location::parse(Path::new("-")).unwrap(), Location::Stdio);
        assert_eq!(
            Location::parse(Path::new("a/b.kry")).unwrap(),
            Location::Local(PathBuf::from("a/b.kry"))
        );
        // A local directory named like the scheme is still local when spelled as a path.
        assert_eq!(
            Location::parse(Path::new("./s3://x/y")).unwrap(),
            Location::Local(PathBuf::from("./s3://x/y"))
        );
        match Location::parse(Path::new("s3://bkt/dir/a.kry")).unwrap() {
            Location::S3(u) => {
                assert_eq!(u.bucket, "bkt");
                assert_eq!(u.key, "dir/a.kry");
            }
            other => panic!("{other:?}"),
        }
    }
}
