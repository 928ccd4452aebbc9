//! Decoding the next referencing block while the current one is delivered.
//!
//! A referencing block (level 9: each 64 MiB block's zstd frame copies from the block before
//! it) cannot be decoded by the pool's workers, which see one frame each: it needs the raw
//! bytes of the blocks before it, so it is decoded in stream order (`crate::archive::group`).
//! Done on the reading thread, that decode ran in series with the hashing and writing of
//! the block before it: level-9 extraction took decode + hash + write per block, 1.26× `zstd
//! -d --long=27` on 1 GiB (BENCHMARKS.md, table 15).
//!
//! Here, once the current block is loaded and the next one references (the index's frame
//! table says so; read from a pipe, once a referencing block was met), the reader takes the
//! next pool result at once (its frame was read and verified ahead; for a referencing block
//! that is the cheap part: the body is still compressed) and hands it, with a [`Reference`]
//! to the kept blocks and the current one (shared buffers, no copy), to the scan's chain
//! thread. The reading thread then parses, hashes and writes the current block while the
//! next one decodes. At most one block is decoded ahead; with the frame table the group
//! keeps only what the blocks after the current one reference (`Group::decoded`), so the
//! peak is two blocks as before. Read from a pipe, without the table, it is one block more
//! than before (a maximal reference is kept, plus the block decoding ahead).
//!
//! Checks are not moved: the next block's stream offset, group and reference length are
//! checked against the blocks before it when it is loaded, as before, and only then is the
//! outcome of its decode used (a decode error is reported where it was before, after those
//! checks). A reference longer than the bytes held is refused by [`Reference::decode`],
//! never read out of bounds. Only the scans of `scan.rs` decode ahead; the probes of a
//! salvage (`resync.rs`), which stop at the first entry, do not start work they would drop.
//! The chain thread is one per scan, joined when the scan ends, so no decode outlives it.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use super::feed::Feed;
use super::frames::FrameResult;
use super::*;
use crate::archive::blocks::Decoded;
use crate::archive::group::{Reference, SharedBlock};

/// A decode's outcome: the raw block, or the fault with the output buffer back.
pub(super) type Resolved = std::result::Result<Vec<u8>, (FrameFault, Vec<u8>)>;

struct Job {
    d: Decoded,
    reference: Reference,
    out: Vec<u8>,
}

/// The scan's thread that decodes referencing blocks ahead (started on the first one).
pub(super) struct ChainThread {
    tx: Option<Sender<Job>>,
    rx: Receiver<(Decoded, Resolved)>,
    handle: Option<JoinHandle<()>>,
    /// Offset and frame header of the block decoding now, if any.
    busy: Option<(u64, FrameHeader)>,
}

impl ChainThread {
    fn start() -> Result<ChainThread> {
        let (tx, jobs) = channel::<Job>();
        let (back, rx) = channel();
        let handle = std::thread::Builder::new()
            .name("krypta-chain".into())
            .spawn(move || {
                let Ok(mut dec) = BlockDecoder::new() else {
                    return;
                };
                for Job { d, reference, out } in jobs {
                    let r = reference.decode(&mut dec, &d, out);
                    // The shared blocks are let go before the outcome is seen, so the
                    // reading thread can recycle them.
                    drop(reference);
                    if back.send((d, r)).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| Error::Crypto(format!("starting a decoder thread: {e}")))?;
        Ok(ChainThread {
            tx: Some(tx),
            rx,
            handle: Some(handle),
            busy: None,
        })
    }

    /// Whether a block is decoding.
    pub(super) fn is_busy(&self) -> bool {
        self.busy.is_some()
    }

    /// Waits for the block decoding: its pool result (still pending: the outcome is used
    /// after the checks, as [`Feed::next_block`] does for a block it decodes itself) and the
    /// outcome.
    pub(super) fn finish(&mut self) -> Result<(FrameResult, Resolved)> {
        let (offset, header) = self.busy.take().ok_or_else(stopped)?;
        let (d, r) = self.rx.recv().map_err(|_| stopped())?;
        Ok(((offset, header, Ok(d)), r))
    }
}

impl Drop for ChainThread {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn stopped() -> Error {
    Error::Crypto("internal error: the decoder thread stopped".into())
}

impl ReadBuffers {
    /// A block no longer delivered nor kept: its buffer back to its list when nobody else
    /// holds it (a decoded zstd block starts at 0; a stored block is its frame body).
    pub(super) fn recycle(&self, b: SharedBlock) {
        if let Some((buf, start)) = b.into_unique() {
            if start == 0 {
                self.blocks.give(buf);
            } else {
                self.bodies.give(buf);
            }
        }
    }
}

impl Feed<'_> {
    /// The current block (`seq`) is loaded: when the next block references, takes its pool
    /// result now and starts decoding it against the current block (module doc). Anything
    /// else taken is kept for [`Feed::next_block`] as it is.
    pub(super) fn decode_ahead(&mut self, seq: u64) -> Result<()> {
        let busy = self.chain.as_ref().is_some_and(ChainThread::is_busy);
        if !self.may_decode_ahead || !self.chained || busy || self.ahead.is_some() {
            return Ok(());
        }
        // With the frame table, only when the next block references: a group's first block
        // is decoded by a worker, and waiting for it here would stop this block's writing.
        if self.needs.as_ref().is_some_and(|n| n.after(seq) == 0) {
            return Ok(());
        }
        let Some((offset, header, r)) = self
            .pool
            .pool
            .next_result()
            .map_err(|e| Error::Crypto(e.to_string()))?
        else {
            return Ok(());
        };
        match r {
            Ok(d) if d.pending => {
                if self.chain.is_none() {
                    self.chain = Some(ChainThread::start()?);
                }
                let reference = self
                    .group
                    .reference(Some(&self.block), d.info.reference_len);
                let out = self.ar.buffers.blocks.take();
                let chain = self.chain.as_mut().expect("started above");
                chain
                    .tx
                    .as_ref()
                    .and_then(|t| t.send(Job { d, reference, out }).ok())
                    .ok_or_else(stopped)?;
                chain.busy = Some((offset, header));
            }
            r => self.ahead = Some((offset, header, r)),
        }
        Ok(())
    }

    /// The next block's pool result: the one decoding ahead (its outcome kept in
    /// `self.resolved` for the pending step), the one taken early, or the pool's next.
    pub(super) fn next_result(&mut self) -> Result<Option<FrameResult>> {
        if let Some(c) = self.chain.as_mut().filter(|c| c.is_busy()) {
            let (r, resolved) = c.finish()?;
            self.resolved = Some(resolved);
            return Ok(Some(r));
        }
        if let Some(r) = self.ahead.take() {
            return Ok(Some(r));
        }
        self.pool
            .pool
            .next_result()
            .map_err(|e| Error::Crypto(e.to_string()))
    }
}
