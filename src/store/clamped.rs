//! A seekable [`Source`] that ends early: an archive with bytes after its footer (a tape's
//! padded last block, `dd conv=sync`, a download with junk appended), seen as it was written.
//!
//! Why a view and not a check in each reader step: every part of the reader that looks for
//! the end (the footer and index, the moved-index search, salvage's frame walk, signatures)
//! asks the source for its length; ending the source at the footer keeps them all right at
//! once. `archive::reader::header_read` decides where the footer is (the last 64 bytes that
//! parse as a footer, searched back from the end) and wraps the source; the reader reports
//! what followed ([`Source::trailing`]).

use std::io::{self, Read};

use super::{Counters, Source};

/// `inner` cut at `end`, with `extra` bytes after it (`zeros`: all of them zero).
pub struct Clamped {
    inner: Box<dyn Source>,
    end: u64,
    extra: u64,
    zeros: bool,
    pos: u64,
}

impl Clamped {
    /// The view of `inner` (seekable) ending at `end`, where `extra` bytes follow (`zeros`:
    /// all zero), its sequential position moved to `pos`.
    pub fn new(
        mut inner: Box<dyn Source>,
        pos: u64,
        end: u64,
        extra: u64,
        zeros: bool,
    ) -> io::Result<Clamped> {
        inner.seek_to(pos)?;
        Ok(Clamped {
            inner,
            end,
            extra,
            zeros,
            pos,
        })
    }
}

impl Read for Clamped {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = self.end.saturating_sub(self.pos);
        let n = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if n == 0 {
            return Ok(0);
        }
        let got = self.inner.read(&mut buf[..n])?;
        self.pos += got as u64;
        Ok(got)
    }
}

impl Source for Clamped {
    fn seekable(&self) -> bool {
        true
    }
    fn length(&mut self) -> io::Result<Option<u64>> {
        Ok(Some(self.end))
    }
    fn seek_to(&mut self, offset: u64) -> io::Result<()> {
        self.inner.seek_to(offset)?;
        self.pos = offset;
        Ok(())
    }
    fn read_ahead_to(&mut self, end: Option<u64>) {
        let end = end.map_or(self.end, |e| e.min(self.end));
        self.inner.read_ahead_to(Some(end));
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let room = self.end.saturating_sub(offset);
        let n = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if n == 0 {
            return Ok(0);
        }
        self.inner.read_at(offset, &mut buf[..n])
    }
    fn identity(&self) -> Option<String> {
        self.inner.identity()
    }
    fn refetcher(&self) -> Option<std::sync::Arc<dyn super::Refetch>> {
        self.inner.refetcher()
    }
    fn counters(&self) -> Option<std::sync::Arc<Counters>> {
        self.inner.counters()
    }
    fn describe(&self) -> Option<String> {
        self.inner.describe()
    }
    fn trailing(&self) -> Option<(u64, u64, bool)> {
        Some((self.end, self.extra, self.zeros))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_past_the_end_is_read() {
        let data: Vec<u8> = (0..100u8).collect();
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, &data).unwrap();
        let src = crate::store::local::FileSource::from_file(f);
        let mut c = Clamped::new(Box::new(src), 0, 60, 40, false).unwrap();
        assert_eq!(c.length().unwrap(), Some(60));
        let mut all = Vec::new();
        c.read_to_end(&mut all).unwrap();
        assert_eq!(all, (0..60u8).collect::<Vec<_>>());
        let mut b = [0u8; 20];
        assert_eq!(c.read_at(50, &mut b).unwrap(), 10);
        assert_eq!(&b[..10], &(50..60u8).collect::<Vec<_>>()[..]);
        assert_eq!(c.read_at(60, &mut b).unwrap(), 0);
        c.seek_to(55).unwrap();
        assert_eq!(c.read(&mut b).unwrap(), 5);
        assert_eq!(c.trailing(), Some((60, 40, false)));
    }
}
