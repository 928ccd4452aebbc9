//! The streaming encoder: [`RecoveryWriter`] passes the archive bytes through unchanged and
//! feeds them to the Reed–Solomon encoder; [`RecoveryWriter::finish`] appends the section.
//!
//! The calling thread only copies bytes into chunk buffers of C shards (C = the recovery
//! chunk, see `code.rs`). A full chunk goes to one background thread that hashes it (BLAKE3
//! of P, XXH3-64 of each shard), IFFTs it into the segment's accumulator and, at a segment's
//! end, FFTs the accumulator into the segment's recovery shards, which go to the spools (memory
//! up to the budget, then a temporary file). Two chunk buffers exist at most, so the caller
//! fills one while the worker transforms the other; when the worker falls behind, `write`
//! waits (back-pressure), so memory stays at 3·C·S + budget + 8·K bytes whatever L is.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use super::code::ChunkEncoder;
use super::error::RecoveryError;
use super::layout::{self, Layout, PACKET_PAYLOAD, Params, recovery_count, xxh3};
use super::spool::{Budget, Spool};

/// How to encode (see the module documentation of `krypta::recovery` for the defaults'
/// reasons).
#[derive(Debug, Clone)]
pub struct RecoveryOptions {
    /// Recovery shards per segment, percent of its data shards (1..=100; the CLI offers 1..=50).
    pub percent: u8,
    /// Shard size S, bytes (default 4096).
    pub shard_size: u32,
    /// Data shards per segment K (default 32768: 128 MiB segments).
    pub shards_per_segment: u32,
    /// Memory for finished segments' recovery shards and checksums before they spill to a
    /// temporary file, bytes (default 64 MiB).
    pub memory_budget: usize,
    /// Encode on a background thread (default true); false encodes on the calling thread.
    pub background: bool,
    /// Directory of the spill file (default: the system temporary directory).
    pub spill_dir: Option<PathBuf>,
}

impl RecoveryOptions {
    /// The defaults at `percent`.
    pub fn new(percent: u8) -> RecoveryOptions {
        RecoveryOptions {
            percent,
            shard_size: layout::DEFAULT_SHARD_SIZE,
            shards_per_segment: layout::DEFAULT_SHARDS_PER_SEGMENT,
            memory_budget: 64 << 20,
            background: true,
            spill_dir: None,
        }
    }

    /// The encoder's memory bound for these options, bytes: chunk buffers and accumulator
    /// (3·C·S with a background thread, 2·C·S without), the budget, and one segment's data
    /// checksums (8·K).
    pub fn memory_bound(&self) -> u64 {
        let k = u64::from(self.shards_per_segment);
        let c = recovery_count(k, self.percent).next_power_of_two();
        let buffers = if self.background { 3 } else { 2 };
        buffers * c * u64::from(self.shard_size) + self.memory_budget as u64 + 8 * k
    }
}

impl RecoveryOptions {
    /// What the encoder needs that cannot give way, bytes: [`memory_bound`](Self::memory_bound)
    /// without the spool budget (memory the allocator refuses there goes to the spill file
    /// instead) plus the Reed–Solomon tables (8.5 MiB). `c`'s default `-j` leaves this much of
    /// a memory limit to the recovery data (`crate::memory`).
    pub fn fixed_bytes(&self) -> u64 {
        self.memory_bound() - self.memory_budget as u64 + (17 << 19)
    }
}

/// What [`RecoveryWriter::finish`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionSummary {
    /// The section's layout (parameters with L and BLAKE3 of P, all offsets).
    pub layout: Layout,
    /// Whether the spools outgrew the memory budget and used a temporary file.
    pub spilled: bool,
}

/// The worker side: hashes, transforms and stores.
struct Encoder {
    percent: u8,
    shard_size: usize,
    code: ChunkEncoder,
    hasher: blake3::Hasher,
    len: u64,
    segment_sums: Vec<u64>,
    table: Spool,
    recovery: Spool,
    budget: Budget,
}

impl Encoder {
    fn chunk(
        &mut self,
        buf: &mut [[u8; 64]],
        bytes: usize,
        first: usize,
        ends: bool,
    ) -> Result<(), RecoveryError> {
        let s = self.shard_size;
        let count = bytes.div_ceil(s);
        let flat = buf.as_flattened_mut();
        self.hasher.update(&flat[..bytes]);
        flat[bytes..count * s].fill(0);
        self.segment_sums
            .extend(flat[..count * s].chunks_exact(s).map(xxh3));
        self.code.add_chunk(buf, count, first);
        self.len += bytes as u64;
        if ends {
            self.end_segment()?;
        }
        Ok(())
    }

    /// Runs one job; returns the chunk buffer for reuse.
    fn run(&mut self, job: Job) -> Result<Option<Vec<[u8; 64]>>, RecoveryError> {
        match job {
            Job::Chunk {
                mut buf,
                bytes,
                first,
                ends,
            } => {
                self.chunk(&mut buf, bytes, first, ends)?;
                Ok(Some(buf))
            }
            Job::EndSegment => {
                self.end_segment()?;
                Ok(None)
            }
        }
    }

    fn end_segment(&mut self) -> Result<(), RecoveryError> {
        let k = self.segment_sums.len() as u64;
        let m = recovery_count(k, self.percent) as usize;
        let rec = self.code.finish(m);
        let mut sums: Vec<u8> = Vec::with_capacity(8 * (self.segment_sums.len() + m));
        for v in &self.segment_sums {
            sums.extend_from_slice(&v.to_le_bytes());
        }
        for shard in rec.chunks_exact(self.shard_size) {
            sums.extend_from_slice(&xxh3(shard).to_le_bytes());
        }
        self.recovery.push(rec, &mut self.budget)?;
        self.table.push(&sums, &mut self.budget)?;
        self.segment_sums.clear();
        Ok(())
    }
}

/// Work for the encoder.
enum Job {
    /// A chunk of `bytes` protected bytes whose first shard is shard `first` of its segment;
    /// `ends` when the segment ends with it.
    Chunk {
        buf: Vec<[u8; 64]>,
        bytes: usize,
        first: usize,
        ends: bool,
    },
    /// The stream ended on a chunk boundary inside a segment: end the segment.
    EndSegment,
}

enum Sink {
    Inline(Box<Encoder>),
    Thread {
        jobs: Option<SyncSender<Job>>,
        free: Receiver<Vec<[u8; 64]>>,
        handle: Option<JoinHandle<Result<Box<Encoder>, RecoveryError>>>,
        allocated: usize,
    },
    /// The worker failed or finish() took the encoder.
    Gone,
}

/// A `Write` adapter that protects everything written through it with recovery data.
///
/// Bytes reach the inner writer unchanged and in order; [`finish`](Self::finish) appends the
/// recovery section (docs/FORMAT.md §15) and returns the inner writer. Dropping it
/// without `finish` leaves the inner writer with the protected bytes only.
pub struct RecoveryWriter<W: Write> {
    inner: W,
    /// [`RecoveryOptions::memory_bound`], for an out-of-memory error's advice.
    bound: u64,
    params: (u8, u32, u32),
    chunk_bytes: usize,
    chunk_shards: usize,
    segment_shards: usize,
    buf: Option<Vec<[u8; 64]>>,
    fill: usize,
    /// Shards of the current segment already handed over.
    sent: usize,
    sink: Sink,
    failed: Option<String>,
}

impl<W: Write> RecoveryWriter<W> {
    /// Wraps `inner`. Errors: [`RecoveryError::BadParameter`] for options out of range.
    pub fn new(inner: W, opts: &RecoveryOptions) -> Result<Self, RecoveryError> {
        Params::check_choice(opts.percent, opts.shard_size, opts.shards_per_segment)?;
        let k = opts.shards_per_segment as usize;
        let chunk = recovery_count(k as u64, opts.percent).next_power_of_two() as usize;
        let oom = |e| RecoveryError::encoder_out_of_memory(e, opts.percent, opts.memory_bound());
        let code = ChunkEncoder::new(opts.shard_size as usize, chunk).map_err(oom)?;
        let chunk_bytes = code.chunk_bytes();
        let enc = Box::new(Encoder {
            percent: opts.percent,
            shard_size: opts.shard_size as usize,
            code,
            hasher: blake3::Hasher::new(),
            len: 0,
            segment_sums: Vec::new(),
            table: Spool::default(),
            recovery: Spool::default(),
            budget: Budget {
                left: opts.memory_budget,
                dir: opts.spill_dir.clone(),
            },
        });
        let sink = if opts.background {
            let (jobs_tx, jobs_rx) = sync_channel::<Job>(1);
            let (free_tx, free_rx) = channel();
            let handle = std::thread::Builder::new()
                .name("krypta-recovery".into())
                .spawn(move || work(enc, jobs_rx, free_tx))
                .map_err(|source| RecoveryError::Spill {
                    op: "start the encoder thread",
                    dir: None,
                    source,
                })?;
            Sink::Thread {
                jobs: Some(jobs_tx),
                free: free_rx,
                handle: Some(handle),
                allocated: 0,
            }
        } else {
            Sink::Inline(enc)
        };
        Ok(RecoveryWriter {
            inner,
            bound: opts.memory_bound(),
            params: (opts.percent, opts.shard_size, opts.shards_per_segment),
            chunk_bytes,
            chunk_shards: chunk,
            segment_shards: k,
            buf: None,
            fill: 0,
            sent: 0,
            sink,
            failed: None,
        })
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Hands the current chunk (`fill` bytes) to the encoder.
    fn send(&mut self) -> Result<(), RecoveryError> {
        let buf = self.buf.take().expect("a chunk is being filled");
        let shards = self.fill.div_ceil(self.shard_size());
        let first = self.sent;
        let ends = self.fill < self.chunk_bytes || first + self.chunk_shards == self.segment_shards;
        let job = Job::Chunk {
            buf,
            bytes: self.fill,
            first,
            ends,
        };
        self.fill = 0;
        self.sent = if ends { 0 } else { first + shards };
        self.submit(job)
    }

    /// Runs `job` inline or hands it to the worker.
    fn submit(&mut self, job: Job) -> Result<(), RecoveryError> {
        match &mut self.sink {
            Sink::Inline(enc) => {
                if let Some(buf) = enc.run(job)? {
                    self.buf = Some(buf);
                }
                Ok(())
            }
            Sink::Thread { jobs, .. } => {
                let sent = jobs
                    .as_ref()
                    .map(|tx| tx.send(job).is_ok())
                    .unwrap_or(false);
                if sent {
                    Ok(())
                } else {
                    Err(self.worker_error())
                }
            }
            Sink::Gone => Err(RecoveryError::WorkerLost),
        }
    }

    fn shard_size(&self) -> usize {
        self.params.1 as usize
    }

    /// A buffer to fill: recycled from the worker, or new while fewer than two exist.
    fn next_buffer(&mut self) -> Result<Vec<[u8; 64]>, RecoveryError> {
        let blocks = self.chunk_bytes / 64;
        let (percent, bound) = (self.params.0, self.bound);
        let new = || {
            super::code::zeroed_blocks(blocks, "a chunk buffer of recovery data")
                .map_err(|e| RecoveryError::encoder_out_of_memory(e, percent, bound))
        };
        match &mut self.sink {
            Sink::Inline(_) => new(),
            Sink::Thread {
                free, allocated, ..
            } => {
                if let Ok(b) = free.try_recv() {
                    return Ok(b);
                }
                if *allocated < 2 {
                    *allocated += 1;
                    return new();
                }
                match free.recv() {
                    Ok(b) => Ok(b),
                    Err(_) => Err(self.worker_error()),
                }
            }
            Sink::Gone => Err(RecoveryError::WorkerLost),
        }
    }

    /// Joins a worker that stopped and returns its error.
    fn worker_error(&mut self) -> RecoveryError {
        match std::mem::replace(&mut self.sink, Sink::Gone) {
            Sink::Thread { jobs, handle, .. } => {
                drop(jobs);
                match handle.map(JoinHandle::join) {
                    Some(Ok(Err(e))) => e,
                    _ => RecoveryError::WorkerLost,
                }
            }
            _ => RecoveryError::WorkerLost,
        }
    }

    /// Feeds bytes that the inner writer accepted.
    fn feed(&mut self, mut bytes: &[u8]) -> Result<(), RecoveryError> {
        while !bytes.is_empty() {
            if self.buf.is_none() {
                self.buf = Some(self.next_buffer()?);
            }
            let buf = self.buf.as_mut().expect("just set").as_flattened_mut();
            let n = (self.chunk_bytes - self.fill).min(bytes.len());
            buf[self.fill..self.fill + n].copy_from_slice(&bytes[..n]);
            self.fill += n;
            bytes = &bytes[n..];
            if self.fill == self.chunk_bytes {
                self.send()?;
            }
        }
        Ok(())
    }

    /// Ends the protected bytes, appends the recovery section and returns the inner writer
    /// (not flushed beyond what `write_all` did) with what was written.
    pub fn finish(mut self) -> Result<(W, SectionSummary), RecoveryError> {
        if let Some(msg) = self.failed.take() {
            return Err(RecoveryError::Write {
                what: "protected bytes (an earlier write failed)",
                source: io::Error::other(msg),
            });
        }
        if self.fill > 0 {
            self.send()?;
        } else if self.sent > 0 {
            self.sent = 0;
            self.submit(Job::EndSegment)?;
        }
        let enc = match std::mem::replace(&mut self.sink, Sink::Gone) {
            Sink::Inline(enc) => enc,
            Sink::Thread { jobs, handle, .. } => {
                drop(jobs);
                match handle.map(JoinHandle::join) {
                    Some(Ok(r)) => r?,
                    _ => return Err(RecoveryError::WorkerLost),
                }
            }
            Sink::Gone => return Err(RecoveryError::WorkerLost),
        };
        let (percent, shard_size, shards_per_segment) = self.params;
        let params = Params {
            percent,
            shard_size,
            shards_per_segment,
            protected_len: enc.len,
            blake3: *enc.hasher.finalize().as_bytes(),
        };
        let layout = Layout::new(params)?;
        debug_assert_eq!(enc.table.len(), layout.table_len);
        debug_assert_eq!(
            enc.recovery.len(),
            layout.recovery_shards * u64::from(shard_size)
        );
        let mut out = io::BufWriter::with_capacity(1 << 20, &mut self.inner);
        write_section(&mut out, &layout, &enc.table, &enc.recovery)
            .map_err(|e| e.into_error(enc.budget.dir.as_deref()))?;
        out.flush().map_err(|source| RecoveryError::Write {
            what: "recovery section",
            source,
        })?;
        drop(out);
        let spilled = enc.table.spilled() || enc.recovery.spilled();
        Ok((self.inner, SectionSummary { layout, spilled }))
    }
}

/// What failed while the section was written: reading the spooled table and recovery
/// shards back (from memory, or from the spill file once the budget ran out), or writing.
#[derive(Debug)]
enum Section {
    Read(io::Error),
    Write(io::Error),
}

impl Section {
    /// The error of the failed side: a read names the spill file's directory (`spill_dir`,
    /// else the system's temporary directory), since spooled bytes that do not read back live
    /// there and the output is not what failed (the fix is TMPDIR, not the disk written to).
    fn into_error(self, spill_dir: Option<&std::path::Path>) -> RecoveryError {
        match self {
            Section::Read(source) => RecoveryError::Spill {
                op: "read back",
                dir: Some(spill_dir.map_or_else(std::env::temp_dir, PathBuf::from)),
                source,
            },
            Section::Write(source) => RecoveryError::Write {
                what: "recovery section",
                source,
            },
        }
    }
}

/// Writes everything after P: zero padding, copy A, the recovery shards, padding, copy B and
/// the trailer.
fn write_section(
    out: &mut dyn Write,
    layout: &Layout,
    table: &Spool,
    recovery: &Spool,
) -> Result<(), Section> {
    let zeros = [0u8; 4096];
    let l = layout.params.protected_len;
    let w = Section::Write;
    out.write_all(&zeros[..(layout.copy_a - l) as usize])
        .map_err(w)?;
    write_copy(out, layout, 0, table)?;
    let mut r = recovery.reader();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Section::Read(e)),
        };
        out.write_all(&buf[..n]).map_err(w)?;
    }
    let rec_end = layout.recovery_start + recovery.len();
    out.write_all(&zeros[..(layout.copy_b - rec_end) as usize])
        .map_err(w)?;
    write_copy(out, layout, 1, table)?;
    out.write_all(&layout::write_trailer(&layout.params))
        .map_err(w)
}

fn write_copy(
    out: &mut dyn Write,
    layout: &Layout,
    copy: u8,
    table: &Spool,
) -> Result<(), Section> {
    let mut r = table.reader();
    let mut payload = [0u8; PACKET_PAYLOAD];
    for i in 0..layout.packets {
        let (s, e) = layout.packet_range(i);
        let n = (e - s) as usize;
        r.read_exact(&mut payload[..n]).map_err(Section::Read)?;
        out.write_all(&layout::write_packet(
            &layout.params,
            copy,
            i as u32,
            &payload[..n],
        ))
        .map_err(Section::Write)?;
    }
    Ok(())
}

/// The background thread: encode every chunk, return its buffer, until the sender is dropped.
fn work(
    mut enc: Box<Encoder>,
    jobs: Receiver<Job>,
    free: std::sync::mpsc::Sender<Vec<[u8; 64]>>,
) -> Result<Box<Encoder>, RecoveryError> {
    while let Ok(job) = jobs.recv() {
        if let Some(buf) = enc.run(job)? {
            // The caller may have finished and stopped listening; that is fine.
            let _ = free.send(buf);
        }
    }
    Ok(enc)
}

impl<W: Write> Write for RecoveryWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(msg) = &self.failed {
            return Err(io::Error::other(msg.clone()));
        }
        let n = self.inner.write(buf)?;
        if let Err(e) = self.feed(&buf[..n]) {
            self.failed = Some(e.to_string());
            return Err(io::Error::other(e));
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoder's fixed need (what `c`'s default -j leaves to it): three chunks of
    /// C = 8192 shards of 4 KiB at 50%, a segment's checksums and the 8.5 MiB of tables.
    #[test]
    fn fixed_bytes_are_the_chunk_buffers_checksums_and_tables() {
        let o = RecoveryOptions::new(50);
        assert_eq!(o.fixed_bytes(), 3 * (64 << 20) + 8 * 32768 + (17 << 19));
        assert_eq!(o.memory_bound(), o.fixed_bytes() - (17 << 19) + (64 << 20));
        let o = RecoveryOptions::new(1);
        assert_eq!(o.fixed_bytes(), 3 * 512 * 4096 + 8 * 32768 + (17 << 19));
    }

    /// A spill file that fails when read back is named as the spill file, read: not as a
    /// failed write of the output (which had been "recovery data: writing the recovery
    /// section: Bad file descriptor").
    #[test]
    fn spill_file_that_cannot_be_read_back_is_named_as_read_not_as_the_output() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("spill");
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        // Opened for writing only: every read of it fails (EBADF), as a spill file on a
        // failing disk would.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let layout = Layout::new(Params {
            percent: 5,
            shard_size: 4096,
            shards_per_segment: 64,
            protected_len: 4096,
            blake3: [0; 32],
        })
        .unwrap();
        let table = Spool::in_file(f, layout.table_len);
        let mut out = Vec::new();
        let e = write_section(&mut out, &layout, &table, &Spool::default()).unwrap_err();
        let e = e.into_error(Some(d.path()));
        assert_eq!(
            e.to_string(),
            format!(
                "recovery data: temporary spill file in {}: read back: Bad file descriptor (os error 9)",
                d.path().display()
            )
        );
        // A failed write of the output is still said as one.
        let table = Spool::in_file(std::fs::File::open(&path).unwrap(), layout.table_len);
        let mut full = [0u8; 0];
        let e = write_section(&mut &mut full[..], &layout, &table, &Spool::default())
            .unwrap_err()
            .into_error(Some(d.path()));
        assert!(
            e.to_string()
                .starts_with("recovery data: writing the recovery section: "),
            "{e}"
        );
    }
}
