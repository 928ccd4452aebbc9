//! [`Whole`]: a [`Source`] as the recovery library reads it (split from `healing`, which
//! repairs through it; `repair` reads through it too).

use std::io;
use std::sync::Mutex;

use super::Source;
use crate::recovery::ByteSource;

/// A [`Source`] as the recovery library reads it: the whole file or object, section
/// included, through positioned reads (serialised by a lock: `ByteSource` is `Sync`, a
/// `Source` only `Send`).
pub struct Whole<'a> {
    src: Mutex<&'a mut (dyn Source + 'static)>,
    len: u64,
}

impl<'a> Whole<'a> {
    /// `src`, of length `len`.
    pub fn new(src: &'a mut (dyn Source + 'static), len: u64) -> Self {
        Whole {
            src: Mutex::new(src),
            len,
        }
    }
}

impl Whole<'_> {
    /// The source's [`super::Refetch`], for a second look at a shard that fails.
    pub(super) fn refetcher(&self) -> Option<std::sync::Arc<dyn super::Refetch>> {
        self.src.lock().ok()?.refetcher()
    }
}

impl ByteSource for Whole<'_> {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let src = self
            .src
            .lock()
            .map_err(|_| io::Error::other("source lock"))?;
        super::read_exact_at(&**src, offset, buf)
    }
}
