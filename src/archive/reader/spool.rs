//! Salvage from a pipe (issue 11 §1–§2): when damage stops a read from stdin, the rest of
//! the stream is copied to an unnamed temporary file (`$TMPDIR`), which the walk of a salvage
//! without the index then reads with seeks, as it reads a file. The bytes consumed before the
//! damage was found (the damaged frame and the frames read ahead after it, at most the
//! in-flight budget) are gone with the pipe: they are reported as a lost region. A read
//! stopped by a delta block whose base region is unusable (docs/FORMAT.md §16.4) is spooled
//! the same way; that block is reported as such, with the frames read ahead after it, not as
//! the archive's damage.
//!
//! Choice: spooling, rather than a single-pass walk with a pushback buffer, keeps one walk
//! for files, objects and pipes; its price is disk space in `$TMPDIR` for the rest of the
//! stream, and only after damage was met.
//!
//! `x --signer` from a stream spools the whole stream before opening it
//! ([`Archive::open_spooled`]): a signature comes last, and nothing may be written before it
//! verified.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::sync::atomic::Ordering;

use super::*;
use crate::store::{Counters, Source};

/// The rest of a pipe in a temporary file, at its offsets in the archive (`base` onwards).
struct SpooledTail {
    file: std::fs::File,
    base: u64,
    len: u64,
    pos: u64,
}

impl Read for SpooledTail {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Source for SpooledTail {
    fn seekable(&self) -> bool {
        true
    }
    fn length(&mut self) -> io::Result<Option<u64>> {
        Ok(Some(self.len))
    }
    fn seek_to(&mut self, offset: u64) -> io::Result<()> {
        if offset < self.base {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("byte {offset} was read from the pipe before the damage and is gone"),
            ));
        }
        self.pos = offset;
        Ok(())
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        if offset < self.base {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("byte {offset} was read from the pipe before the damage and is gone"),
            ));
        }
        std::os::unix::fs::FileExt::read_at(&self.file, buf, offset - self.base)
    }
    fn identity(&self) -> Option<String> {
        None
    }
    fn counters(&self) -> Option<std::sync::Arc<Counters>> {
        None
    }
}

/// What failed when the spool file could not be written (`$TMPDIR` full or read-only).
const SPOOL_WRITE: &str =
    "copy the rest of the damaged stream to a temporary file (to read past the damage) in";

impl Archive {
    /// Copies the rest of a non-seekable input to a temporary file and reads from it from now
    /// on (module doc); returns the offset of its first byte. Errors: Io (the pipe, or no room
    /// in `$TMPDIR`).
    ///
    /// `damage` is the error that stopped the read: its offset and frame (when it names
    /// them) start the lost region reported by the salvage that follows; a delta frame whose
    /// base region is unusable ([`Error::BaseDamaged`]) is reported as that instead (its
    /// `what` begins with [`BASE_UNUSABLE`]), with the frames read ahead after it.
    pub fn spool_rest(&mut self, damage: &Error) -> Result<u64> {
        // An intact delta frame whose base region is unusable, and the frames read ahead
        // after it, are still at hand (`replay`): the spool starts with it, nothing is lost.
        let replayed = match (damage.root(), &self.replay) {
            (Error::BaseDamaged { offset, frame, .. }, Some(r)) => r
                .lock()
                .ok()
                .and_then(|mut r| r.take_from(*offset))
                .map(|b| (*offset, *frame, b)),
            // A file stored as a reference to an unusable base entry (§16.5): from the frame
            // its records were being read in.
            (Error::BaseEntry { .. }, Some(r)) => r.lock().ok().and_then(|mut r| {
                let (at, seq) = r.first();
                r.take_from(at).map(|b| (at, seq, b))
            }),
            (_, Some(r)) => {
                if let Ok(mut r) = r.lock() {
                    r.take_from(u64::MAX);
                }
                None
            }
            _ => None,
        };
        self.replay = None;
        let base = replayed.as_ref().map_or(self.pos, |(at, _, _)| *at);
        self.replayed_from = replayed.as_ref().map(|(_, seq, _)| *seq);
        let lost = |seq: u64, at: u64| BadFrame {
            seq,
            offset: at.min(base),
            what: if at < base {
                format!("bytes {at}..{base} lost (read from the pipe before the damage was found)")
            } else if at == base {
                format!("the stream is damaged or cut at byte {at}")
            } else {
                format!(
                    "the damaged frame and the frames read ahead after it, before byte {base}, were read from the pipe and are lost"
                )
            },
        };
        // The index and footer come last: damage in them alone lost nothing else.
        self.lost_before_walk = (replayed.is_none() && !self.index_alone(damage)).then(|| match damage.root() {
            Error::Damaged { offset, frame, .. } => lost(*frame, *offset),
            // Its frame is the one whose head was read last, when it was before.
            // Its frame is the one whose head was read last when it is inside that frame,
            // the next one when it is at or past its end (a frame boundary: a cut there, or
            // bytes inserted between two frames).
            Error::Corrupt { offset, .. } => match self.last_head {
                Some((_, seq, end)) if *offset >= end => lost(seq + 1, end),
                Some((at, seq, _)) if at <= *offset => lost(seq, at),
                Some(_) => lost(0, *offset),
                None => lost(0, self.header_len),
            },
            // An intact delta frame whose base region is unusable (docs/FORMAT.md §16.4): the
            // frames read ahead after it are lost with the pipe, not to damage.
            Error::BaseDamaged {
                offset,
                frame,
                problem,
                ..
            } => BadFrame {
                seq: *frame,
                offset: *offset,
                what: format!(
                    "{BASE_UNUSABLE}: {problem}; the frames read ahead after it, before byte {base}, were read from the pipe and are lost with it"
                ),
            },
            // An error that names its frame in text only (an unencrypted frame's checksum):
            // the frame that failed last, when one did.
            _ => match self.last_fault.each_ref().map(|a| a.load(Ordering::Relaxed)) {
                [at, seq] if at < base => lost(seq, at),
                _ => lost(0, base),
            },
        });
        let tmp = std::env::temp_dir();
        let mut file = tempfile::tempfile().map_err(|e| {
            Error::io(
                &tmp,
                "create a temporary file (to read past the damage of the stream) in",
                e,
            )
        })?;
        let copied = {
            let mut w = crate::fs::chunked::buffered(&mut file);
            if let Some((_, _, b)) = &replayed {
                w.write_all(b)
                    .map_err(|e| Error::io(&tmp, SPOOL_WRITE, e))?;
            }
            // Not io::copy: a full or missing $TMPDIR must be named as that, not as a read
            // of the archive.
            let mut n = replayed.as_ref().map_or(0, |(_, _, b)| b.len() as u64);
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let got = match self.input.read(&mut buf) {
                    Ok(0) => break,
                    Ok(got) => got,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Error::io(&self.path, "read", e)),
                };
                w.write_all(&buf[..got])
                    .map_err(|e| Error::io(&tmp, SPOOL_WRITE, e))?;
                n += got as u64;
            }
            w.flush().map_err(|e| Error::io(&tmp, SPOOL_WRITE, e))?;
            n
        };
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(&tmp, "seek", e))?;
        self.input = Box::new(SpooledTail {
            file,
            base,
            len: base + copied,
            pos: base,
        });
        self.pending_frame = None;
        self.walk_from = base;
        Ok(base)
    }

    /// Whether `damage`, met reading a stream front to back, is in its index or footer alone:
    /// every data frame before it was read whole and verified, so nothing was lost with the
    /// pipe but the index (as when a file's index is damaged: `crate::damage`).
    pub fn index_alone(&self, damage: &Error) -> bool {
        crate::damage::footer_only(damage)
            || self.data_end.is_some_and(|end| match damage.root() {
                Error::Damaged { offset, .. } | Error::Corrupt { offset, .. } => *offset >= end,
                _ => false,
            })
    }

    /// The data frame the spooled rest starts with when it was kept (`replay`): a delta
    /// frame whose base region is unusable, or the one a reference to an unusable base entry
    /// was read in. None when the spool starts where the pipe was (or nothing was spooled).
    pub fn replayed_from(&self) -> Option<u64> {
        self.replayed_from
    }

    /// Whether bytes read from the pipe before the spooled rest are reported lost (not when
    /// a delta frame stopped the read on its base: `replay` kept it and the frames after it).
    pub fn lost_with_pipe(&self) -> bool {
        self.lost_before_walk.is_some()
    }

    /// Whether the rest of this archive was spooled from a pipe after damage
    /// ([`Archive::spool_rest`]): the frames before the spooled rest were read once and
    /// are gone.
    pub fn spooled(&self) -> bool {
        self.walk_from > self.header_len
    }

    /// [`Archive::open`] for a reader that must verify a signature before it uses a byte
    /// (`x --signer`): a seekable archive is opened as it is (`signed` verifies it at open);
    /// a stream (`-`, a pipe, a character device) is first copied whole to an unnamed
    /// temporary file (O_TMPFILE where the file system has it, so nothing is left behind
    /// even by a crash) in `dir` when it exists, else in `$TMPDIR`, and read from there.
    /// Errors: as [`Archive::open`]; Io naming the stream (read) or the directory (write).
    pub fn open_spooled(path: &Path, opts: OpenOptions, dir: Option<&Path>) -> Result<Archive> {
        let mut input = crate::store::open_source(path)?;
        if input.seekable() {
            return Archive::open_opened(input, path, opts);
        }
        let dir = match dir {
            Some(d) if d.is_dir() => d.to_path_buf(),
            _ => std::env::temp_dir(),
        };
        let mut file = tempfile::tempfile_in(&dir)
            .map_err(|e| Error::io(&dir, "create a temporary file in", e))?;
        // A loop of its own rather than `io::copy`, which would give a full disk the
        // stream's name.
        let spool = |e| Error::io(&dir, "spool the archive to a temporary file in", e);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(path, "read", e)),
            };
            file.write_all(&buf[..n]).map_err(spool)?;
        }
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(&dir, "seek", e))?;
        // Opened as a file is, with its recovery layer: read without it, a spooled archive
        // with recovery data warned "the header announces recovery data, but none was found".
        let spooled = Box::new(crate::store::local::FileSource::from_file(file));
        Archive::open_opened(spooled, path, opts)
    }
}
