//! A seekable [`Source`] seen with one run of inserted or removed bytes undone: the
//! archive as first written, for [`super::healing`] to verify and repair as it reads
//! (`crate::recovery::realign` found the edit; that module says why and how).

use std::io::{self, Read};

use super::{Counters, Refetch, Source};

/// `inner` with `shift` bytes inserted (positive) or removed (negative) at `split` undone:
/// an offset below `split` is read where it is, one at or above it `shift` bytes further.
/// Its length is `len`, the archive's as first written.
pub struct Shifted {
    inner: Box<dyn Source>,
    split: u64,
    shift: i64,
    len: u64,
    pos: u64,
}

impl Shifted {
    /// The view of `inner` (seekable) with the edit undone.
    pub fn new(inner: Box<dyn Source>, (split, shift): (u64, i64), len: u64) -> Shifted {
        Shifted {
            inner,
            split,
            shift,
            len,
            pos: 0,
        }
    }
}

impl Read for Shifted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Source for Shifted {
    fn seekable(&self) -> bool {
        true
    }
    fn length(&mut self) -> io::Result<Option<u64>> {
        Ok(Some(self.len))
    }
    fn seek_to(&mut self, offset: u64) -> io::Result<()> {
        self.pos = offset;
        Ok(())
    }
    /// Up to `buf.len()` bytes at `offset`, never across `split` in one call (a short read
    /// there); 0 at the end.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        if offset >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let mut n = buf.len().min((self.len - offset) as usize);
        if offset < self.split {
            n = n.min((self.split - offset) as usize);
            return self.inner.read_at(offset, &mut buf[..n]);
        }
        let at = u64::try_from(i128::from(offset) + i128::from(self.shift))
            .map_err(|_| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        self.inner.read_at(at, &mut buf[..n])
    }
    fn identity(&self) -> Option<String> {
        self.inner.identity()
    }
    fn counters(&self) -> Option<std::sync::Arc<Counters>> {
        self.inner.counters()
    }
    fn refetcher(&self) -> Option<std::sync::Arc<dyn Refetch>> {
        let inner = self.inner.refetcher()?;
        Some(std::sync::Arc::new(ShiftedRefetch {
            inner,
            split: self.split,
            shift: self.shift,
        }))
    }
    fn describe(&self) -> Option<String> {
        self.inner.describe()
    }
}

/// [`Source::refetcher`] of a [`Shifted`]: the inner source's, at the offsets the edit moved.
struct ShiftedRefetch {
    inner: std::sync::Arc<dyn Refetch>,
    split: u64,
    shift: i64,
}

impl Refetch for ShiftedRefetch {
    fn fetch(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let before = usize::try_from(self.split.saturating_sub(offset))
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let (a, b) = buf.split_at_mut(before);
        self.inner.fetch(offset, a)?;
        if b.is_empty() {
            return Ok(());
        }
        let from = offset + before as u64;
        let at = u64::try_from(i128::from(from) + i128::from(self.shift))
            .map_err(|_| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        self.inner.fetch(at, b)
    }
    fn may_look_again(&self) -> bool {
        self.inner.may_look_again()
    }
    fn healed(&self) {
        self.inner.healed();
    }
    fn failed(&self) {
        self.inner.failed();
    }
}
