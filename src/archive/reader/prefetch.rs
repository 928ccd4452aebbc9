//! Decoding the next referencing block while the current one is delivered.
//!
//! A referencing block (level 9: each 64 MiB block's zstd frame copies from the block before
//! it) cannot be decoded by the pool's workers, which see one frame each: it needs the raw
//! bytes of the blocks before it, so it is decoded in stream order (`crate::archive::group`).
//! Done on the reading thread, that decode ran in series with the hashing and writing of
//! the block before it: level-9 extraction took decode + hash + write per block, 1.26× `zstd
//! -d --long=27` on 1 GiB (BENCHMARKS.md, table 15).
//!
//! Here, once the current block is loaded and a referencing block has been met, the reader
//! takes the next pool result at once (its frame was read and verified ahead; for a
//! referencing block that is the cheap part: the body is still compressed) and, when it
//! references, starts its decode on a thread of its own with a [`Reference`] to the kept
//! blocks and the current one: shared buffers, no copy. The reading thread then parses,
//! hashes and writes the current block while the next one decodes. At most one block is
//! decoded ahead, so the memory added is one block (its budget bytes were taken by the worker
//! that verified it, as before).
//!
//! Checks are not moved: the next block's stream offset, group and reference length are
//! checked against the blocks before it when it is loaded, as before, and a decode made
//! against a reference those checks refuse is thrown away with the error. A reference longer
//! than the bytes held is refused by [`Reference::decode`], never read out of bounds.

use std::thread::JoinHandle;

use super::feed::Feed;
use super::frames::FrameResult;
use super::*;
use crate::archive::blocks::Decoded;
use crate::archive::group::{Reference, SharedBlock};

type Outcome = (
    BlockDecoder,
    Decoded,
    std::result::Result<Vec<u8>, (FrameFault, Vec<u8>)>,
);

/// A referencing block decoding on its own thread.
pub(super) struct Prefetched {
    offset: u64,
    header: FrameHeader,
    handle: JoinHandle<Outcome>,
}

impl Prefetched {
    /// Starts decoding `d` (pending, verified) against `reference` with `dec`, into `out`.
    fn start(
        offset: u64,
        header: FrameHeader,
        d: Decoded,
        reference: Reference,
        mut dec: BlockDecoder,
        out: Vec<u8>,
    ) -> Result<Prefetched> {
        let handle = std::thread::Builder::new()
            .name("krypta-chain".into())
            .spawn(move || {
                let r = reference.decode(&mut dec, &d, out);
                // The shared blocks are released before the result is seen, so the reading
                // thread can recycle them.
                drop(reference);
                (dec, d, r)
            })
            .map_err(|e| Error::Crypto(format!("starting a decoder thread: {e}")))?;
        Ok(Prefetched {
            offset,
            header,
            handle,
        })
    }

    /// Waits for the decode: the block as a pool result (decoded, no longer pending), and the
    /// decoder back.
    pub(super) fn finish(self, buffers: &ReadBuffers) -> Result<(BlockDecoder, FrameResult)> {
        let (dec, mut d, r) = self
            .handle
            .join()
            .map_err(|_| Error::Crypto("internal error: a decoder thread panicked".into()))?;
        let r = match r {
            Ok(raw) => {
                let body = std::mem::replace(&mut d.buf, raw);
                buffers.bodies.give(body);
                d.start = 0;
                d.pending = false;
                Ok(d)
            }
            Err((f, out)) => {
                buffers.blocks.give(out);
                buffers.bodies.give(std::mem::take(&mut d.buf));
                Err(f)
            }
        };
        Ok((dec, (self.offset, self.header, r)))
    }
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
    /// The current block is loaded: when this stream has referencing blocks, takes the next
    /// pool result now and, if it references, starts decoding it against the current block
    /// (module doc). Anything else taken is kept for [`Feed::next_block`] as it is.
    pub(super) fn decode_ahead(&mut self) -> Result<()> {
        if !self.chained || self.prefetch.is_some() || self.ahead.is_some() {
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
                let dec = match self.dec.take() {
                    Some(d) => d,
                    None => BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?,
                };
                let reference = self
                    .group
                    .reference(Some(&self.block), d.info.reference_len);
                let out = self.ar.buffers.blocks.take();
                self.prefetch = Some(Prefetched::start(offset, header, d, reference, dec, out)?);
            }
            r => self.ahead = Some((offset, header, r)),
        }
        Ok(())
    }

    /// [`Prefetched::finish`], keeping the decoder for the next block.
    pub(super) fn finish_prefetch(&mut self, p: Prefetched) -> Result<FrameResult> {
        let (dec, r) = p.finish(&self.ar.buffers)?;
        self.dec = Some(dec);
        Ok(r)
    }
}
