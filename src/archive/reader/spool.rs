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
//!
//! Neither copy fills its file system: a stream's length is not known, and one that never
//! ends (`(cat damaged.kry; cat /dev/zero) | krypta t -`, helper-27: 10.6 GB of `/tmp` in 12
//! s) would take every byte of it from everything else on the machine. The copy stops while
//! [`spool_reserve`] is still free (2% of the file system, at least 256 MiB; at most half
//! of what was free when the copy began), checked every 64 MiB: after damage, what was
//! copied is salvaged and the rest said unread; for `--signer`, the run fails, naming the
//! directory (nothing was written).

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

/// The least a spool leaves free on its file system, bytes (module doc).
const SPOOL_RESERVE_MIN: u64 = 256 << 20;

/// Bytes copied between two looks at the free space.
const SPOOL_CHECK: u64 = 64 << 20;

/// What a spool leaves free on a file system of `total` bytes: 2% of it, at least 256 MiB.
fn spool_reserve(total: u64) -> u64 {
    (total / 50).max(SPOOL_RESERVE_MIN)
}

/// Free bytes for an unprivileged writer, and the reserve, of the file system holding `f`;
/// None when it cannot be asked (then nothing stops the copy but the file system itself).
fn room(f: &std::fs::File) -> Option<(u64, u64)> {
    let v = rustix::fs::fstatvfs(f).ok()?;
    let free = v.f_bavail.saturating_mul(v.f_frsize);
    Some((free, spool_reserve(v.f_blocks.saturating_mul(v.f_frsize))))
}

/// How a guarded copy ended.
#[derive(Debug, PartialEq, Eq)]
struct Copied {
    /// Bytes copied.
    bytes: u64,
    /// Stopped with this many bytes free on the file system (at most its reserve), the
    /// input not at its end.
    stopped: Option<u64>,
}

/// Copies `input` to `w` (writing `file`) to its end, or until the file system holding
/// `file` has no more than its reserve free, asked every `every` bytes (module doc). The
/// reserve is `room(file)`'s, at most half of what was free at the start: a file system
/// already near its reserve (a small `/tmp`, a nearly full disk) still takes a stream that
/// fits in half its free space (helper-28: every spool there stopped after 64 MiB). A stream
/// that ends right at a check is copied whole, not said cut. Errors: a read fails
/// (`read_err`), a write fails (`write_err`).
fn copy_guarded(
    input: &mut dyn Read,
    w: &mut dyn Write,
    file: &std::fs::File,
    every: u64,
    room: &dyn Fn(&std::fs::File) -> Option<(u64, u64)>,
    read_err: &dyn Fn(io::Error) -> Error,
    write_err: &dyn Fn(io::Error) -> Error,
) -> Result<Copied> {
    let keep = room(file).map(|(free, reserve)| reserve.min(free / 2));
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    let mut next = every;
    let mut stopping = None;
    loop {
        if bytes >= next && stopping.is_none() {
            next = bytes + every;
            // Written bytes still buffered are not on the file system yet: flushed first.
            w.flush().map_err(write_err)?;
            if let (Some(keep), Some((free, _))) = (keep, room(file))
                && free <= keep
            {
                // One more read tells a stream that ends here from one that goes on.
                stopping = Some(free);
            }
        }
        let got = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_err(e)),
        };
        w.write_all(&buf[..got]).map_err(write_err)?;
        bytes += got as u64;
        if stopping.is_some() {
            w.flush().map_err(write_err)?;
            return Ok(Copied {
                bytes,
                stopped: stopping,
            });
        }
    }
    w.flush().map_err(write_err)?;
    Ok(Copied {
        bytes,
        stopped: None,
    })
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
    /// base region is unusable ([`BaseError::Region`]) is reported as that instead (its
    /// `what` begins with [`BASE_UNUSABLE`]), with the frames read ahead after it.
    pub fn spool_rest(&mut self, damage: &Error) -> Result<u64> {
        // An intact delta frame whose base region is unusable, and the frames read ahead
        // after it, are still at hand (`replay`): the spool starts with it, nothing is lost.
        let replayed = match (damage.root(), &self.replay) {
            (Error::Base(BaseError::Region { offset, frame, .. }), Some(r)) => r
                .lock()
                .ok()
                .and_then(|mut r| r.take_from(*offset))
                .map(|b| (*offset, *frame, b)),
            // A file stored as a reference to an unusable base entry (§16.5), or read with a
            // damaged base and not as the index has it or not parsing (§16.4): from the frame
            // its records were being read in.
            (Error::Base(b), Some(r)) if b.lost_to_base() => r.lock().ok().and_then(|mut r| {
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
            Error::Base(BaseError::Region {
                offset,
                frame,
                problem,
                ..
            }) => BadFrame {
                seq: *frame,
                offset: *offset,
                what: format!(
                    "{BASE_UNUSABLE}: {problem}; the frames read ahead after it, before byte {base}, were read from the pipe and are lost with it"
                ),
            },
            // An error that names its frame in text only (an unencrypted frame's checksum):
            // the frame that failed last, when one did; else the frame whose head was read
            // last, or the next one when the stream stopped at its end (as for a structure
            // above), not "frame 0", which named the first frame for damage met anywhere.
            _ => match self.last_fault.each_ref().map(|a| a.load(Ordering::Relaxed)) {
                [at, seq] if at < base => lost(seq, at),
                _ => match self.last_head {
                    Some((_, seq, end)) if base >= end => lost(seq + 1, end),
                    Some((at, seq, _)) => lost(seq, at),
                    None => lost(0, self.header_len),
                },
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
        let probe = file
            .try_clone()
            .map_err(|e| Error::io(&tmp, SPOOL_WRITE, e))?;
        let copied = {
            let mut w = crate::fs::chunked::buffered(&mut file);
            let mut n = 0;
            if let Some((_, _, b)) = &replayed {
                w.write_all(b)
                    .map_err(|e| Error::io(&tmp, SPOOL_WRITE, e))?;
                n = b.len() as u64;
            }
            // Not io::copy: a full or missing $TMPDIR must be named as that, not as a read
            // of the archive.
            let path = self.path.clone();
            let c = copy_guarded(
                &mut self.input,
                &mut w,
                &probe,
                SPOOL_CHECK,
                &room,
                &|e| Error::io(&path, "read", e),
                &|e| Error::io(&tmp, SPOOL_WRITE, e),
            )?;
            self.spool_stopped = c
                .stopped
                .map(|free| (tmp.clone(), base + n + c.bytes, free));
            n + c.bytes
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

    /// A spool of the rest of a damaged stream that stopped before its file system filled
    /// (module doc): the message saying so, naming the directory and where it stopped.
    pub fn spool_stopped(&self) -> Option<String> {
        self.spool_stopped.as_ref().map(|(dir, at, free)| {
            format!(
                "{}: the rest of the damaged stream did not fit in {} (stopped at byte {at} with {free} bytes free, which other programs need): what follows it is not read (read the archive as a file, or set TMPDIR to a larger file system)",
                crate::fs::shown(&self.path),
                crate::fs::shown(dir)
            )
        })
    }

    /// Whether bytes read from the pipe before the spooled rest are reported lost (not when
    /// a delta frame stopped the read on its base: `replay` kept it and the frames after it).
    pub fn lost_with_pipe(&self) -> bool {
        self.lost_before_walk.is_some()
    }

    /// The first data frame whose bytes were lost with the pipe (the damaged one), when
    /// [`Archive::lost_with_pipe`].
    pub fn lost_from_frame(&self) -> Option<u64> {
        self.lost_before_walk.as_ref().map(|b| b.seq)
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
        let file = spool_to_file(&mut input, &[], &dir, path)?;
        // Opened as a file is, with its recovery layer: read without it, a spooled archive
        // with recovery data warned "the header announces recovery data, but none was found".
        let spooled = Box::new(crate::store::local::FileSource::from_file(file));
        Archive::open_opened(spooled, path, opts)
    }
}

/// The rest of `input`, a stream whose `header` was read, with that header in front: a
/// temporary file in `$TMPDIR` (unnamed, as [`Archive::open_spooled`]'s) read as a file from
/// here on, at the same offsets. For a delta archive whose base's binding cannot be checked
/// (`open`): read as a file, its index is read first and every entry compared with it.
/// Read as a file in every other way too: through its recovery layer when it has one
/// (`recovery`: the header announces it; found as `header_read` finds a file's). Without it,
/// an intact stream with recovery data warned "the header announces recovery data, but none
/// was found", which its file did not.
/// Errors: Io naming the stream (read) or the directory (write, or too little room left);
/// Recovery (a recovery section that is there but unusable, as for a file).
pub(super) fn spool_stream(
    mut input: Input,
    header: &[u8],
    recovery: bool,
    path: &Path,
) -> Result<Input> {
    use crate::store::healing::{Search, protect};
    let file = spool_to_file(&mut input, header, &std::env::temp_dir(), path)?;
    let spooled: Input = Box::new(crate::store::local::FileSource::from_file(file));
    let search = if recovery {
        Search::Scan
    } else {
        Search::Trailer
    };
    Ok(match protect(spooled, path, search)? {
        Ok(healing) => Box::new(healing),
        Err(spooled) => spooled,
    })
}

/// `head` and then the rest of `input` (the stream `path`) in an unnamed temporary file in
/// `dir`, positioned at its start. Stops, with nothing written anywhere else, when the file
/// system would be left with less room than other programs need ([`room`]).
/// Errors: Io naming the stream (read) or `dir` (create, write, too little room, seek).
fn spool_to_file(input: &mut Input, head: &[u8], dir: &Path, path: &Path) -> Result<std::fs::File> {
    let mut file =
        tempfile::tempfile_in(dir).map_err(|e| Error::io(dir, "create a temporary file in", e))?;
    // A loop of its own rather than `io::copy`, which would give a full disk the
    // stream's name.
    let spool = |e| Error::io(dir, "spool the archive to a temporary file in", e);
    file.write_all(head).map_err(spool)?;
    let probe = file.try_clone().map_err(spool)?;
    let c = copy_guarded(
        input,
        &mut file,
        &probe,
        SPOOL_CHECK,
        &room,
        &|e| Error::io(path, "read", e),
        &spool,
    )?;
    if let Some(free) = c.stopped {
        // A signature comes last: a part of the stream proves nothing (module doc).
        return Err(spool(io::Error::new(
            io::ErrorKind::StorageFull,
            format!(
                "the stream is larger than it can hold: stopped after {} bytes with {free} bytes free, which other programs need (set TMPDIR to a larger file system, or give the archive as a file); nothing was written",
                c.bytes
            ),
        )));
    }
    file.seek(SeekFrom::Start(0))
        .map_err(|e| Error::io(dir, "seek", e))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(len: usize, room: &dyn Fn(&std::fs::File) -> Option<(u64, u64)>) -> (Copied, Vec<u8>) {
        let data: Vec<u8> = (0..len).map(|i| (i * 31 + i / 7) as u8).collect();
        let file = tempfile::tempfile().unwrap();
        let mut out = Vec::new();
        let c = copy_guarded(
            &mut std::io::Cursor::new(&data),
            &mut out,
            &file,
            1 << 20,
            room,
            &|e| Error::io(Path::new("in"), "read", e),
            &|e| Error::io(Path::new("out"), "write", e),
        )
        .unwrap();
        assert_eq!(out, data[..out.len()], "a prefix of the input, in order");
        (c, out)
    }

    #[test]
    fn a_spool_stops_while_its_file_system_keeps_its_reserve() {
        // Regression (helper-27): an endless stream after damage filled `/tmp` at 1 GB/s.
        // Free space falling to the reserve (100 free at the start, a reserve of 40): at the
        // first look at or below it, one more read, and stopped.
        let free = std::cell::Cell::new(100u64);
        let falling = |_: &std::fs::File| {
            let f = free.get();
            free.set(f.saturating_sub(30));
            Some((f, 40))
        };
        let (c, out) = copy(10 << 20, &falling);
        // Looks: at the start (100), after 1 MiB (70), 2 MiB (40: one more read, stop).
        assert_eq!(
            c,
            Copied {
                bytes: 3 << 20,
                stopped: Some(40)
            }
        );
        assert_eq!(out.len(), 3 << 20);
        // The same where the stream ends right there: copied whole, not said cut
        // (helper-28: it was said stopped).
        free.set(100);
        let (c, out) = copy(2 << 20, &falling);
        assert_eq!(
            c,
            Copied {
                bytes: 2 << 20,
                stopped: None
            }
        );
        assert_eq!(out.len(), 2 << 20);
        // A file system already at its reserve keeps half of what it had free: with 100
        // free and a reserve of 500, the copy goes on while more than 50 is free
        // (helper-28: it stopped at the first look).
        free.set(100);
        let below = |_: &std::fs::File| {
            let f = free.get();
            free.set(f.saturating_sub(20));
            Some((f, 500))
        };
        let (c, _) = copy(10 << 20, &below);
        // Looks: 100 at the start; 80, 60 go on; 40 <= 50: one more read, stop.
        assert_eq!(
            c,
            Copied {
                bytes: 4 << 20,
                stopped: Some(40)
            }
        );
        // Room to spare, or the free space unknown: copied to the end.
        for room in [
            &(|_: &std::fs::File| Some((1u64 << 40, 200u64)))
                as &dyn Fn(&std::fs::File) -> Option<(u64, u64)>,
            &|_| None,
        ] {
            let (c, out) = copy((10 << 20) + 5, room);
            assert_eq!(
                c,
                Copied {
                    bytes: (10 << 20) + 5,
                    stopped: None
                }
            );
            assert_eq!(out.len(), (10 << 20) + 5);
        }
        // The reserve: 2% of the file system, at least 256 MiB.
        assert_eq!(spool_reserve(1 << 30), 256 << 20);
        assert_eq!(spool_reserve(1_000_000_000_000), 20_000_000_000);
        // A real file system answers.
        let f = tempfile::tempfile().unwrap();
        let (free, reserve) = room(&f).expect("fstatvfs of a temporary file");
        assert!(free > 0 && reserve >= 256 << 20, "{free} {reserve}");
    }
}
