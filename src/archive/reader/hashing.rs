//! Each file's BLAKE3 digest, computed beside the writing: the content of a large file is
//! hashed on a thread of the scan's own while the reading thread writes the same bytes.
//!
//! Why (issue 13, level 9 and large files): the reading thread parsed, hashed and wrote every
//! byte in turn; hashing is about 0.2 s per GB (BLAKE3 at 4.8 GB/s on one core here), so a
//! 1 GiB level-9 extraction spent a third of its reading thread's time in it while `zstd -d`
//! overlaps its writes with decoding. Here a piece of file content of at least
//! [`ASYNC_MIN`] bytes is handed, as a shared block and a range (no copy), to the hashing
//! thread; the reading thread goes on to write it. Smaller pieces (trees of small files) are
//! hashed on the reading thread as before: a hand-over costs more than hashing them.
//!
//! What does not change: a file's digest is compared, and `Visitor::end` called, only after
//! every byte of it was hashed (the comparison waits for the thread); a piece is hashed in
//! stream order (one thread, one queue); holes are hashed as zeros in their place.
//!
//! Memory: before the reading thread moves past a block ([`Feed::next_block`] calls
//! [`Feed::hashing_caught_up`]) it waits until the thread hashed every piece of that block,
//! so the thread never holds a block the reader has given back: the reader's byte budget
//! (`archive::budget`) still bounds what is held. That wait costs nothing when writing is
//! slower than hashing (the usual case); with nothing to write (`krypta t`, `x --stdout` to
//! /dev/null) the reading thread waits for it at each block, and the hashing overlaps only
//! the decoding of the blocks after it (the pool's workers, the chain thread).

use std::ops::Range;
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use super::feed::Feed;
use super::*;
use crate::archive::group::SharedBlock;

/// Pieces of file content of at least this many bytes are hashed on the hashing thread.
pub(super) const ASYNC_MIN: usize = 256 << 10;

/// One file's digest being computed: here, on the hashing thread, or given up (past the
/// scan's hole allowance: the file's digest is not checked, its frames were).
// One lives on the stack per file being parsed; boxing the hasher would cost an allocation
// per small file.
#[allow(clippy::large_enum_variant)]
pub(super) enum Digest {
    Here(blake3::Hasher),
    There,
    Off,
}

impl Digest {
    /// A new digest, computed here until a large piece comes.
    pub(super) fn new() -> Digest {
        Digest::Here(blake3::Hasher::new())
    }

    /// Whether it is still being computed.
    pub(super) fn is_on(&self) -> bool {
        !matches!(self, Digest::Off)
    }
}

enum Msg {
    /// The state of the next file's digest.
    Begin(Box<blake3::Hasher>),
    Bytes(SharedBlock, Range<usize>),
    Zeros(u64),
    /// Send the state back.
    Finish,
    /// Answer once everything before was hashed.
    Sync,
}

enum Reply {
    State(Box<blake3::Hasher>),
    Synced,
}

/// The scan's hashing thread (started on the first large piece).
pub(super) struct HashThread {
    tx: Option<SyncSender<Msg>>,
    rx: Receiver<Reply>,
    handle: Option<JoinHandle<()>>,
    /// Pieces sent since the last sync.
    unsynced: bool,
}

impl HashThread {
    fn start() -> Result<HashThread> {
        let (tx, jobs) = sync_channel::<Msg>(16);
        let (back, rx) = channel::<Reply>();
        let handle = std::thread::Builder::new()
            .name("krypta-hash".into())
            .spawn(move || {
                let mut state: Option<Box<blake3::Hasher>> = None;
                for msg in jobs {
                    match msg {
                        Msg::Begin(h) => state = Some(h),
                        Msg::Bytes(block, range) => {
                            if let Some(h) = state.as_mut() {
                                h.update(&block.buf[range]);
                            }
                        }
                        Msg::Zeros(n) => {
                            if let Some(h) = state.as_mut() {
                                crate::archive::hash_zeros(h, n);
                            }
                        }
                        Msg::Finish => {
                            let h = state.take().unwrap_or_default();
                            if back.send(Reply::State(h)).is_err() {
                                return;
                            }
                        }
                        Msg::Sync => {
                            if back.send(Reply::Synced).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .map_err(|e| Error::Crypto(format!("starting the hashing thread: {e}")))?;
        Ok(HashThread {
            tx: Some(tx),
            rx,
            handle: Some(handle),
            unsynced: false,
        })
    }

    fn send(&mut self, m: Msg) -> Result<()> {
        self.tx
            .as_ref()
            .and_then(|t| t.send(m).ok())
            .ok_or_else(stopped)
    }

    fn finish(&mut self) -> Result<blake3::Hasher> {
        self.send(Msg::Finish)?;
        self.unsynced = false;
        match self.rx.recv() {
            Ok(Reply::State(h)) => Ok(*h),
            _ => Err(stopped()),
        }
    }

    fn sync(&mut self) -> Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        self.send(Msg::Sync)?;
        self.unsynced = false;
        match self.rx.recv() {
            Ok(Reply::Synced) => Ok(()),
            _ => Err(stopped()),
        }
    }
}

impl Drop for HashThread {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn stopped() -> Error {
    Error::Crypto("internal error: the hashing thread stopped".into())
}

impl Feed<'_> {
    /// Hashes the piece `range` of the current block, just taken ([`Feed::take_range`]): on
    /// the hashing thread when it is large or the digest is there already.
    pub(super) fn hash_taken(&mut self, d: &mut Digest, range: Range<usize>) -> Result<()> {
        match d {
            Digest::Off => Ok(()),
            Digest::Here(h) if range.len() < ASYNC_MIN => {
                h.update(&self.block.buf[range]);
                Ok(())
            }
            Digest::Here(_) | Digest::There => {
                if self.hasher.is_none() {
                    self.hasher = Some(HashThread::start()?);
                }
                let t = self.hasher.as_mut().expect("started above");
                if let Digest::Here(h) = std::mem::replace(d, Digest::There) {
                    t.send(Msg::Begin(Box::new(h)))?;
                }
                t.send(Msg::Bytes(self.block.clone(), range))?;
                t.unsynced = true;
                Ok(())
            }
        }
    }

    /// Hashes `n` zero bytes (a hole) in their place.
    pub(super) fn hash_zeros(&mut self, d: &mut Digest, n: u64) -> Result<()> {
        match d {
            Digest::Off => Ok(()),
            Digest::Here(h) => {
                crate::archive::hash_zeros(h, n);
                Ok(())
            }
            Digest::There => self
                .hasher
                .as_mut()
                .ok_or_else(stopped)?
                .send(Msg::Zeros(n)),
        }
    }

    /// The digest of everything hashed (waiting for the thread), or `None` when it was given
    /// up.
    pub(super) fn digest(&mut self, d: Digest) -> Result<Option<blake3::Hash>> {
        Ok(match d {
            Digest::Off => None,
            Digest::Here(h) => Some(h.finalize()),
            Digest::There => Some(
                self.hasher
                    .as_mut()
                    .ok_or_else(stopped)?
                    .finish()?
                    .finalize(),
            ),
        })
    }

    /// Gives up a digest (past the hole allowance), taking its state back from the thread.
    pub(super) fn digest_off(&mut self, d: &mut Digest) -> Result<()> {
        if let Digest::There = d {
            self.hasher.as_mut().ok_or_else(stopped)?.finish()?;
        }
        *d = Digest::Off;
        Ok(())
    }

    /// Waits until the hashing thread hashed every piece it was given, before the current
    /// block is given back (module doc).
    pub(super) fn hashing_caught_up(&mut self) -> Result<()> {
        match self.hasher.as_mut() {
            Some(t) => t.sync(),
            None => Ok(()),
        }
    }
}
