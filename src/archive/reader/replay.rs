//! The bytes a pipe gave for the data frames read ahead of the one being delivered, kept so
//! that a delta frame whose base region is unusable (docs/FORMAT.md §16.4) costs no intact
//! frame after it when the rest of the stream is spooled (`spool`).
//!
//! Why: the reader reads frames ahead of the one whose records it parses (the in-flight
//! budget) and a pipe cannot give them again. For the archive's own damage the frames after
//! the damaged one are lost with the pipe (the walk resynchronises past them), but a delta
//! frame that fails on its base is intact, and so are the frames read ahead after it:
//! losing them lost whole entries no warning named. So for a delta archive read from a
//! stream, every byte read after the header is also kept here until the frame it belongs
//! to was delivered ([`Replay::release_before`]); [`Archive::spool_rest`] writes the kept
//! bytes from the failed frame on into the spool file, before the rest of the pipe.
//!
//! Cost: one copy of each byte of the stream, and memory for the frames in flight (at most
//! the in-flight budget, as their bodies). Only delta archives read from a stream keep
//! bytes; files and objects are read again at their offsets instead.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::{Arc, Mutex};

use crate::store::{Counters, Source};

/// The bytes kept: `bytes[0]` is byte `start` of the archive.
#[derive(Debug, Default)]
pub(super) struct Replay {
    start: u64,
    /// The data frame that starts at `start` (once one was delivered).
    start_seq: u64,
    bytes: VecDeque<u8>,
    /// Off once the rest of the stream is being spooled (nothing more to keep).
    off: bool,
}

impl Replay {
    /// Forgets the bytes before archive byte `offset`, where data frame `seq` starts (the
    /// frame being delivered: its records are parsed now, and a file stored as a reference
    /// to an unusable base entry, §16.5, stops the read inside it).
    pub(super) fn release_before(&mut self, offset: u64, seq: u64) {
        let n = offset
            .saturating_sub(self.start)
            .min(self.bytes.len() as u64);
        self.bytes.drain(..n as usize);
        self.start += n;
        if self.start == offset {
            self.start_seq = seq;
        }
    }

    /// (offset, seq) of the first data frame kept.
    pub(super) fn first(&self) -> (u64, u64) {
        (self.start, self.start_seq)
    }

    /// The bytes kept from archive byte `from` on (None when they were released), and stops
    /// keeping bytes.
    pub(super) fn take_from(&mut self, from: u64) -> Option<Vec<u8>> {
        self.off = true;
        let skip = from.checked_sub(self.start)?;
        let bytes = std::mem::take(&mut self.bytes);
        (skip <= bytes.len() as u64).then(|| bytes.into_iter().skip(skip as usize).collect())
    }
}

/// A stream that keeps what it gives in a [`Replay`].
pub(super) struct Keeping {
    inner: Box<dyn Source>,
    kept: Arc<Mutex<Replay>>,
}

impl Keeping {
    /// `inner` (at archive byte `at`), keeping its bytes in the [`Replay`] it returns too.
    pub(super) fn new(inner: Box<dyn Source>, at: u64) -> (Self, Arc<Mutex<Replay>>) {
        let kept = Arc::new(Mutex::new(Replay {
            start: at,
            ..Replay::default()
        }));
        (
            Keeping {
                inner,
                kept: kept.clone(),
            },
            kept,
        )
    }
}

impl Read for Keeping {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Ok(mut k) = self.kept.lock()
            && !k.off
        {
            k.bytes.extend(&buf[..n]);
        }
        Ok(n)
    }
}

impl Source for Keeping {
    fn seekable(&self) -> bool {
        false
    }
    fn stream_kind(&self) -> Option<&'static str> {
        self.inner.stream_kind()
    }
    fn length(&mut self) -> io::Result<Option<u64>> {
        self.inner.length()
    }
    fn seek_to(&mut self, offset: u64) -> io::Result<()> {
        self.inner.seek_to(offset)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(offset, buf)
    }
    fn identity(&self) -> Option<String> {
        self.inner.identity()
    }
    fn counters(&self) -> Option<Arc<Counters>> {
        self.inner.counters()
    }
    fn describe(&self) -> Option<String> {
        self.inner.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_bytes_start_where_released_and_end_where_read() {
        let mut r = Replay {
            start: 100,
            ..Replay::default()
        };
        r.bytes.extend(0u8..50);
        r.release_before(110, 3);
        assert_eq!(r.first(), (110, 3));
        assert_eq!(r.take_from(120), Some((20u8..50).collect()));
        assert!(r.off);
        let mut r = Replay {
            start: 100,
            ..Replay::default()
        };
        r.bytes.extend(0u8..50);
        r.release_before(110, 3);
        // Bytes released are gone.
        assert_eq!(r.take_from(105), None);
    }
}
