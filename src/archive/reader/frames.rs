//! Frame I/O: reading one frame at the sequential position (bodies read as they arrive, so a
//! hostile length costs only the bytes present), the worker that verifies then decodes a
//! frame, the pool of workers and its byte budget, and the errors a frame raises.

use super::*;

pub(super) struct FrameJob {
    /// Its place among the frames of this pool, in submission order (the budget's turn).
    pub(super) ticket: u64,
    pub(super) header: FrameHeader,
    pub(super) header_bytes: [u8; FRAME_HEADER_LEN],
    pub(super) body: Vec<u8>,
    pub(super) tag: [u8; TAG_LEN],
    pub(super) offset: u64,
}

pub(super) type FrameResult = (u64, FrameHeader, std::result::Result<Decoded, FrameFault>);

/// Worker: verifies (and decrypts) one frame, then decodes its block
/// ([`super::blocks::decode_body`]). A stored block is unfiltered in place in the body; a
/// zstd block is decoded into a buffer from `buffers.blocks`, and the body goes back to
/// `buffers.bodies`; a referencing block is left pending for the reading thread. With a
/// `budget`, the decoded block's bytes are taken from it (in ticket order, waiting for room)
/// before it is decoded, and the body's bytes given back after. A pending block takes its
/// raw length too: the reading thread decodes it into a block of that size.
// Everything a worker needs comes in as arguments, so the pool's closure stays a plain call.
#[allow(clippy::too_many_arguments)]
pub(super) fn open_frame(
    dec: &mut BlockDecoder,
    protection: &Protection,
    archive_id: &ArchiveId,
    buffers: &ReadBuffers,
    version: Version,
    budget: Option<&ByteBudget>,
    base: Option<&BaseArchive>,
    refetch: Option<&dyn crate::store::Refetch>,
    mut job: FrameJob,
) -> FrameResult {
    let body_len = job.body.len() as u64;
    let mut took_turn = false;
    let r = (|| {
        let seq = job.header.seq;
        let opened = second_look::passes(
            refetch,
            job.offset,
            &job.header_bytes,
            &mut job.body,
            &mut job.tag,
            |body, tag| {
                protection
                    .open_frame(archive_id, &job.header_bytes, seq, body, tag)
                    .is_ok()
            },
        );
        if !opened {
            return Err(FrameFault::Tag);
        }
        let (info, _) =
            block_info(&job.body, version, job.header.kind).map_err(FrameFault::Format)?;
        // A stored block becomes the body itself; a zstd block needs raw_len more bytes.
        let held = if info.codec == Codec::Store {
            body_len
        } else {
            u64::from(info.raw_len)
        };
        if let Some(b) = budget {
            took_turn = true;
            b.acquire(job.ticket, held)
                .map_err(|_| FrameFault::Stopped)?;
        }
        let held = if budget.is_some() { held } else { 0 };
        let body = std::mem::take(&mut job.body);
        match decode_body(
            dec,
            version,
            job.header.kind,
            body,
            &buffers.blocks,
            &buffers.bodies,
            base,
        ) {
            Ok(mut d) => {
                d.held = held;
                Ok(d)
            }
            Err((f, body)) => {
                buffers.bodies.give(body);
                budget.inspect(|b| b.release(held));
                Err(f)
            }
        }
    })();
    buffers.bodies.give(std::mem::take(&mut job.body));
    if let Some(b) = budget {
        if took_turn {
            b.body_done(body_len);
        } else {
            b.skip(job.ticket, body_len);
        }
    }
    (job.offset, job.header, r)
}

/// The workers of one scan and the byte budget they share with the reader thread; dropping
/// it closes the budget first, so no worker stays waiting while the pool joins them.
pub(super) struct FramePool {
    pub(super) pool: OrderedPool<FrameJob, FrameResult>,
    pub(super) budget: Arc<ByteBudget>,
}

impl Drop for FramePool {
    fn drop(&mut self) {
        self.budget.close();
    }
}

impl Archive {
    /// [`open_frame`] on this thread with this archive's keys, buffers and version (no
    /// in-flight budget): what the index, salvage and resync readers use.
    pub(super) fn open_here(&self, dec: &mut BlockDecoder, job: FrameJob) -> FrameResult {
        open_frame(
            dec,
            &self.protection,
            &self.header.archive_id,
            &self.buffers,
            self.version,
            None,
            self.base.as_deref(),
            self.input.refetcher().as_deref(),
            job,
        )
    }

    pub(super) fn tag_error(&self, what: String) -> Error {
        if self.protection.is_sealed() {
            Error::AuthFailed {
                path: self.path.clone(),
                check: AuthCheck::FrameMac,
                detail: None,
            }
        } else {
            Error::Integrity {
                path: self.path.clone(),
                what,
            }
        }
    }

    pub(super) fn fault(&self, offset: u64, seq: u64, f: FrameFault) -> Error {
        if !matches!(f, FrameFault::Stopped) {
            use std::sync::atomic::Ordering::Relaxed;
            self.last_fault[0].store(offset, Relaxed);
            self.last_fault[1].store(seq, Relaxed);
        }
        match f {
            // With `--signer`, a frame that is not what was signed refuses the archive (from a
            // file this is found before the scan: `Archive::verify_signed_frames`).
            FrameFault::Tag if self.strict_signer && self.signature.is_some() => Error::Signature {
                path: self.path.clone(),
                problem: crate::error::SignatureProblem::Changed { frame: seq, offset },
            },
            // Once the header verified, a frame tag that fails is damage, not a wrong key.
            FrameFault::Tag if self.protection.is_sealed() => Error::Damaged {
                path: self.path.clone(),
                offset,
                frame: seq,
            },
            FrameFault::Tag => {
                self.tag_error(format!("frame {seq} at byte {offset}: checksum mismatch"))
            }
            FrameFault::Format(e) => self.structure_error(offset, e),
            FrameFault::Codec(m) => {
                self.structure_error(offset, FormatError::invalid("block payload", m))
            }
            FrameFault::Base(fault) => fault.reading(self.path.clone(), offset, seq),
            FrameFault::OutOfMemory(source) => Error::OutOfMemory {
                path: self.path.clone(),
                source,
                advice: crate::memory::read_advice(self.jobs),
            },
            FrameFault::Stopped => Error::Crypto(format!(
                "internal error: frame {seq} was stopped while the scan still needed it"
            )),
        }
    }

    /// A rule broken inside bytes whose tag verified (block header, payload, records, entries,
    /// index): in an encrypted archive an inconsistent authenticated structure, reported as
    /// an authentication failure (exit 2); in an unencrypted one a corrupt structure (exit 3).
    /// A critical type this build does not know is always "needs a newer krypta" (exit 3).
    /// This is the order of checks of docs/FORMAT.md §11.
    pub(super) fn structure_error(&self, offset: u64, e: FormatError) -> Error {
        if self.protection.is_sealed() && !matches!(e, FormatError::NeedsNewer { .. }) {
            Error::AuthFailed {
                path: self.path.clone(),
                check: AuthCheck::Structure,
                detail: Some(Box::new(crate::error::Inconsistency {
                    offset: Some(offset),
                    problem: e.to_string(),
                })),
            }
        } else {
            corrupt(&self.path, offset, e)
        }
    }

    /// A structural rule broken in a frame sequence: for sealed archives whose frames all
    /// verified this can only be tampering (reordering, dropping, splicing).
    pub(super) fn sequence_error(&self, offset: u64, problem: String) -> Error {
        if self.protection.is_sealed() {
            Error::AuthFailed {
                path: self.path.clone(),
                check: AuthCheck::Structure,
                detail: Some(Box::new(crate::error::Inconsistency {
                    offset: Some(offset),
                    problem: format!("frame sequence: {problem}"),
                })),
            }
        } else {
            corrupt(
                &self.path,
                offset,
                FormatError::invalid("frame sequence", problem),
            )
        }
    }

    /// A data frame with the LAST flag: corrupt, or tampering in a sealed archive (the flag is
    /// under the frame MAC) — unless the frame's tag fails too ([`Archive::head_error`]).
    pub(super) fn check_last_flag(&self, job: &FrameJob) -> Result<()> {
        job.header.check_last_flag().map_err(|e| match e {
            FormatError::Invalid { problem, .. } => self.head_error(
                job,
                job.header.seq,
                self.sequence_error(job.offset, problem),
            ),
            e => corrupt(&self.path, job.offset, e),
        })
    }

    /// The error for data frame `job`, expected as frame `seq`, whose head breaks a sequence
    /// rule (its seq, its LAST flag): `structure` when its tag verifies (a frame moved or a
    /// flag set under the key: tampering or a miswritten archive), else damage, as a frame
    /// whose tag fails ([`Archive::fault`]). The head is under the tag, so a bit flipped in
    /// it by a disk is caught by the tag: reporting it as a structure error made an encrypted
    /// archive say "wrong key or password" with the right key, and kept a pipe's salvage from
    /// reading past it. Costs one tag check (and a copy of the body) on this error path only.
    pub(super) fn head_error(&self, job: &FrameJob, seq: u64, structure: Error) -> Error {
        let mut body = job.body.clone();
        match self.protection.open_frame(
            &self.header.archive_id,
            &job.header_bytes,
            job.header.seq,
            &mut body,
            &job.tag,
        ) {
            Ok(()) => structure,
            Err(_) => self.fault(job.offset, seq, FrameFault::Tag),
        }
    }

    pub(super) fn read_exact_at_pos(&mut self, buf: &mut [u8], what: &'static str) -> Result<()> {
        let got = read_full(&mut self.input, buf).map_err(|e| Error::io(&self.path, "read", e))?;
        if got < buf.len() {
            return Err(corrupt(
                &self.path,
                self.pos + got as u64,
                FormatError::Truncated {
                    what,
                    needed: buf.len() as u64,
                    got: got as u64,
                },
            ));
        }
        self.pos += buf.len() as u64;
        Ok(())
    }

    /// Reads up to `want` bytes into `body` (cleared first), growing it as bytes arrive (by
    /// 8 MiB, then doubling, never past `want`: a hostile length costs only the bytes
    /// present), each step a fallible reservation: [`Error::OutOfMemory`] when the memory
    /// cannot be had. Returns the bytes read (fewer than `want` at the end of the input).
    fn read_growing(&mut self, body: &mut Vec<u8>, want: usize) -> Result<usize> {
        body.clear();
        while body.len() < want {
            let step = body.len().max(8 << 20).min(want - body.len());
            crate::memory::reserve_exact(body, step, "a frame read").map_err(|source| {
                Error::OutOfMemory {
                    path: self.path.clone(),
                    source,
                    advice: crate::memory::read_advice(self.jobs),
                }
            })?;
            // Within the capacity just reserved: `read_to_end` grows nothing at the limit.
            let n = (&mut self.input)
                .take(step as u64)
                .read_to_end(body)
                .map_err(|e| Error::io(&self.path, "read", e))?;
            if n < step {
                break;
            }
        }
        Ok(body.len())
    }

    /// Reads one frame at the current position.
    pub(super) fn read_frame(&mut self) -> Result<FrameJob> {
        if let Some(job) = self.pending_frame.take() {
            return Ok(job);
        }
        let offset = self.pos;
        let mut hb = [0u8; FRAME_HEADER_LEN];
        self.read_exact_at_pos(&mut hb, "frame header")?;
        let header =
            FrameHeader::parse(&hb, self.version).map_err(|e| corrupt(&self.path, offset, e))?;
        self.last_head = Some((offset, header.seq, offset + header.frame_len()));
        // Read the body as it arrives instead of allocating the declared length up front, so
        // a truncated or hostile length costs no more memory than the bytes really present.
        // A recycled buffer already that long is overwritten in place (no zero-fill, no new
        // pages); otherwise the body grows as bytes arrive.
        let want = header.body_len as usize;
        let mut body = self.buffers.bodies.take();
        // A recycled buffer with room for the body but fewer initialised bytes is grown to
        // it (zeroing only the difference, usually a few KiB: bodies of one archive are of
        // similar size), so the read goes straight into it: `read_to_end` would zero the
        // whole spare capacity first on every frame (`Read::read_buf`'s default).
        if body.len() < want && body.capacity() >= want {
            body.resize(want, 0);
        }
        let got = if body.len() >= want {
            body.truncate(want);
            read_full(&mut self.input, &mut body).map_err(|e| Error::io(&self.path, "read", e))?
        } else {
            self.read_growing(&mut body, want)?
        };
        if got < want {
            // The bytes are consumed: a pipe salvaged after this goes on from its end.
            self.pos += got as u64;
            return Err(corrupt(
                &self.path,
                self.pos,
                FormatError::Truncated {
                    what: "frame body",
                    needed: want as u64,
                    got: got as u64,
                },
            ));
        }
        self.pos += want as u64;
        let mut tag = [0u8; TAG_LEN];
        self.read_exact_at_pos(&mut tag, "frame tag")?;
        if self.signature.is_some() {
            self.signature_frame_read(offset, header.seq, &tag)?;
        }
        Ok(FrameJob {
            ticket: 0,
            header,
            header_bytes: hb,
            body,
            tag,
            offset,
        })
    }

    pub(super) fn seek_to(&mut self, offset: u64) -> Result<()> {
        if !self.input.seekable() {
            return Err(Error::Usage(format!(
                "{}: cannot seek in a stream",
                crate::fs::shown(&self.path)
            )));
        }
        self.input
            .seek_to(offset)
            .map_err(|e| Error::io(&self.path, "seek", e))?;
        self.pos = offset;
        Ok(())
    }

    /// Errors: Io when the OS refuses a decoder thread.
    pub(super) fn new_pool(&self) -> Result<FramePool> {
        let protection = Arc::clone(&self.protection);
        let id = self.header.archive_id;
        let buffers = self.buffers.clone();
        let version = self.version;
        let base = self.base.clone();
        let refetch = self.input.refetcher();
        let budget = Arc::new(ByteBudget::with_base(self.jobs, self.in_flight_base));
        let worker_budget = Arc::clone(&budget);
        // The header's block size only sizes the pool's job count (a performance hint); the
        // memory bound is the byte budget, taken from the frames actually read.
        let pool = OrderedPool::new(
            self.jobs,
            crate::archive::pipeline::max_in_flight(self.jobs, self.header.block_size as usize),
            || BlockDecoder::new().expect("zstd decoder context"),
            move |dec: &mut BlockDecoder, job: FrameJob| {
                open_frame(
                    dec,
                    &protection,
                    &id,
                    &buffers,
                    version,
                    Some(&worker_budget),
                    base.as_deref(),
                    refetch.as_deref(),
                    job,
                )
            },
        )
        .map_err(|e| Error::io(self.path.clone(), "start a decoder thread", e))?;
        Ok(FramePool { pool, budget })
    }
}
