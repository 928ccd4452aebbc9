//! The writer's worker side: one block in, one sealed frame out (BCJ filter, zstd or store,
//! format-2 block header, AES-256-CTR + HMAC-SHA256 or a BLAKE3 checksum), and the block
//! buffers recycled between the writer thread and the workers.
//!
//! A block travels with `PREFIX` bytes of room in front of its raw bytes (the frame header
//! and the block header) and room for the tag behind, so a stored block is sealed where it
//! lies and never copied into a frame; a compressed one is written into a frame buffer and
//! its block buffer goes back to the free list.

use std::sync::Arc;

use super::chain::Prefix;
use super::pipeline::Buffers;
use crate::archive::reader::BaseArchive;
use crate::codec::{BlockDecoder, BlockEncoder, Codec, Filter};
use crate::crypto::frame::Protection;
use crate::crypto::keys::ArchiveId;
use crate::error::{Error, Result};
use crate::format::block::{BASE_REGION_LEN, BaseRegion};
use crate::format::block::{BLOCK_HEADER_LEN_V2, BlockHeaderV2};
use crate::format::frame::{FRAME_HEADER_LEN, FrameHeader, FrameKind, TAG_LEN};

/// Bytes in front of the raw data in every block buffer: room for the frame header and the
/// format-2 block header.
pub(crate) const PREFIX: usize = FRAME_HEADER_LEN + BLOCK_HEADER_LEN_V2;

/// One block for a worker.
pub(crate) struct Job {
    pub header_kind: FrameKind,
    pub last: bool,
    pub seq: u64,
    /// `PREFIX` bytes of room, then the raw block (shared with the level-9 chain, which
    /// hands it to the next block as its prefix: `super::chain`).
    pub block: Arc<Vec<u8>>,
    pub filter: Filter,
    /// The block's offset in its stream (format 2's stream offset, the BCJ position).
    pub stream_offset: u64,
    /// Offset of the first record starting in the block (`Some(0)` for index blocks).
    pub first_record: Option<u32>,
    /// The stream bytes right before the block that its zstd frame may use as a prefix
    /// (level 9's chain, or test-only referencing blocks; empty: independent).
    pub prefix: Prefix,
    /// Delta archives: the base region the block is compressed against (`archive::delta`).
    pub base: Option<BaseRegion>,
}

/// A worker's reusable state: the zstd context and its output buffer.
pub(crate) struct WorkerState {
    pub encoder: BlockEncoder,
    pub payload: Vec<u8>,
    /// Delta archives: the base region's bytes, and the decoder that reads base frames.
    pub region: crate::codec::huge::HugeBuf,
    pub decoder: Option<BlockDecoder>,
}

/// A sealed frame, whether it is a block buffer sealed in place (stored block), and the
/// reference length its block header records.
pub(crate) struct Sealed {
    pub frame: Vec<u8>,
    pub in_block: bool,
    pub reference_len: u32,
}

/// The recycled buffers of a writer, in two lists so that a small compressed frame never
/// holds a block-sized buffer's pages.
#[derive(Clone)]
pub(crate) struct WriteBuffers {
    /// Blocks being filled (a stored block is sealed in its block, so those come back here).
    pub blocks: Buffers,
    /// Frames of compressed blocks.
    pub frames: Buffers,
}

/// A block buffer from `buffers` for `capacity` bytes of records, with `PREFIX` bytes in
/// front (for the frame and block headers) and room for the tag behind. Only the prefix is
/// initialised in a new buffer (its other pages are not touched until bytes arrive); a
/// recycled one keeps its stale, initialised length.
/// [`crate::memory::OutOfMemory`] when the allocator refuses a new buffer.
pub(crate) fn new_block(
    buffers: &Buffers,
    capacity: usize,
) -> Result<Vec<u8>, crate::memory::OutOfMemory> {
    let mut b = buffers.take();
    let want = PREFIX + capacity + TAG_LEN;
    if b.capacity() < want {
        let more = want - b.len();
        crate::memory::reserve_exact(&mut b, more, "a block buffer")?;
    }
    if b.len() < PREFIX {
        b.resize(PREFIX, 0);
    }
    Ok(b)
}

/// A worker's codec error: a refused allocation as [`Error::OutOfMemory`] (its path and
/// advice are filled in by the writer, `ArchiveWriter::out_of_memory`), anything else as
/// what it was compressing.
fn compress_error(seq: u64, e: crate::codec::CodecError) -> Error {
    match e {
        crate::codec::CodecError::OutOfMemory(source) => Error::OutOfMemory {
            path: Default::default(),
            source,
            advice: String::new(),
        },
        e => Error::Crypto(format!("compressing block {seq}: {e}")),
    }
}

/// Worker: filter + compress + seal one block into a complete frame. A block that is stored
/// becomes the frame where it lies (headers into its prefix, encrypted in place, tag
/// appended); a compressed one is copied into a frame buffer from `buffers`, and its block
/// buffer goes back there.
pub(crate) fn seal_block(
    st: &mut WorkerState,
    protection: &Protection,
    archive_id: &ArchiveId,
    buffers: &WriteBuffers,
    base: Option<&BaseArchive>,
    job: Job,
) -> Result<Sealed> {
    let raw = &job.block[PREFIX..];
    let raw_len = raw.len();
    let against = match (job.base, base) {
        (Some(region), Some(base)) if !st.encoder.stores() => {
            let dec = match st.decoder.as_mut() {
                Some(d) => d,
                None => st
                    .decoder
                    .insert(BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?),
            };
            base.region(dec, &region, &mut st.region)
                .map_err(|m| match m {
                    crate::archive::reader::BaseFault::OutOfMemory { source, .. } => {
                        compress_error(job.seq, source.into())
                    }
                    m => Error::Usage(format!("delta base: {m}")),
                })?;
            st.encoder
                .encode_delta(raw, &st.region, &mut st.payload)
                .map_err(|e| compress_error(job.seq, e))?
                .map(|codec| (region, codec))
        }
        _ => None,
    };
    let (codec, filter, referenced) = if let Some((_, codec)) = against {
        (codec, Filter::None, false)
    } else if st.encoder.stores() {
        (Codec::Store, Filter::None, false)
    } else {
        st.encoder
            .encode_referencing(
                raw,
                job.filter,
                job.stream_offset,
                job.prefix.as_slice(),
                &mut st.payload,
            )
            .map_err(|e| compress_error(job.seq, e))?
    };
    let reference_len = if referenced {
        job.prefix.as_slice().len() as u32
    } else {
        0
    };
    let in_block = codec == Codec::Store;
    let mut frame = match codec {
        // `encode` stores blocks unfiltered, exactly the raw bytes; sealed in place, so a
        // block the chain still shares is copied first.
        Codec::Store => match Arc::try_unwrap(job.block) {
            Ok(block) => block,
            Err(shared) => {
                let mut copy = Vec::new();
                crate::memory::reserve_exact(&mut copy, shared.len() + TAG_LEN, "a stored block")
                    .map_err(|e| compress_error(job.seq, e.into()))?;
                copy.extend_from_slice(&shared);
                copy
            }
        },
        Codec::Zstd | Codec::ZstdBase | Codec::DiffBase => {
            let mut frame = buffers.frames.take();
            frame.clear();
            let want = PREFIX + BASE_REGION_LEN + st.payload.len() + TAG_LEN;
            crate::memory::reserve(&mut frame, want, "a compressed frame")
                .map_err(|e| compress_error(job.seq, e.into()))?;
            frame.resize(PREFIX, 0);
            if let Some((r, _)) = &against {
                frame.extend_from_slice(&r.to_bytes());
            }
            frame.extend_from_slice(&st.payload);
            if let Ok(block) = Arc::try_unwrap(job.block) {
                buffers.blocks.give(block);
            }
            frame
        }
    };
    let bh = BlockHeaderV2 {
        codec,
        filter,
        raw_len: raw_len as u32,
        stream_offset: job.stream_offset,
        first_record: job.first_record,
        reference_len,
    };
    let fh = FrameHeader {
        kind: job.header_kind,
        last: job.last,
        body_len: (frame.len() - FRAME_HEADER_LEN) as u32,
        seq: job.seq,
    };
    let fh_bytes = fh.to_bytes();
    frame[..FRAME_HEADER_LEN].copy_from_slice(&fh_bytes);
    frame[FRAME_HEADER_LEN..PREFIX].copy_from_slice(&bh.to_bytes());
    let tag = protection.seal_frame(
        archive_id,
        &fh_bytes,
        job.seq,
        &mut frame[FRAME_HEADER_LEN..],
    );
    frame.extend_from_slice(&tag);
    Ok(Sealed {
        frame,
        in_block,
        reference_len,
    })
}
