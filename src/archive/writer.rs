//! The archive writer: entries in, archive bytes out.
//!
//! The caller adds entries in order; their records (ENTRY, DATA segments, END) are appended
//! to the current block of the record stream. A full block (or a change of BCJ filter) is
//! handed to the worker pool, which filters, compresses and seals it into a frame; frames are
//! written strictly in sequence order. `finish` writes the index frames and the footer.
//!
//! Output bytes depend only on the inputs and options (level, block size, BCJ mode, keys and
//! archive id), never on the number of workers.
//!
//! The writer never writes what its reader would refuse: the header, every entry's metadata,
//! every file's size and the index are checked against the one table of limits
//! (`format::limits`) with the checks the reader uses, before any of their bytes are written
//! ([`Error::Unwritable`], naming the entry). An error from [`ArchiveWriter::add_entry`] or
//! [`ArchiveWriter::add_file`] about an entry's *metadata* leaves the archive as it was (the
//! entry can be skipped); any other error abandons the archive (drop the writer).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::hash_zeros;
use super::pipeline::{Buffers, OrderedPool};
use crate::codec::{BlockEncoder, Codec, Filter, Level, bcj, detect::detect_filter};
use crate::crypto::frame::Protection;
use crate::crypto::keys::{ArchiveId, FileKey, Subkeys};
use crate::crypto::stanza::{Recipient, wrap};
use crate::error::{Error, Result};
use crate::format::entry::EntryKind;
use crate::format::footer::{FOOTER_LEN, Footer};
use crate::format::frame::{
    BLOCK_HEADER_LEN, BlockHeader, FRAME_HEADER_LEN, FrameHeader, FrameKind, TAG_LEN,
};
use crate::format::header::Header;
use crate::format::index::{Index, IndexEntry};
use crate::format::index::{entry_len, index_len};
use crate::format::limits::{MAX_BLOCK_SIZE, MAX_FILE_SIZE, MAX_INDEX_LEN, MIN_BLOCK_SIZE};
use crate::format::record::{self, DATA_HEAD_LEN, MAX_SEGMENT};
use crate::format::{EntryMeta, FormatError};

/// How the BCJ filter is chosen for each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BcjMode {
    /// Detect x86-64 / AArch64 executables (ELF, PE, Mach-O) from each file's first bytes.
    Auto,
    /// Never filter.
    Off,
    /// Apply this filter to every file.
    Force(Filter),
}

/// Options for writing an archive.
pub struct WriteOptions {
    /// krypta level 1..=9, or `None` to store (`-s`).
    pub level: Option<Level>,
    /// Block size, bytes (MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).
    pub block_size: usize,
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// BCJ filter choice.
    pub bcj: BcjMode,
    /// Creation time recorded in the header, seconds since the epoch.
    pub created: i64,
    /// Header comment (authenticated, not encrypted).
    pub comment: String,
    /// Recipients; empty for an unencrypted archive.
    pub recipients: Vec<Recipient>,
    /// Archive id; random when `None`.
    pub archive_id: Option<ArchiveId>,
    /// File key; random when `None` (fixed only for golden vectors and tests).
    pub file_key: Option<FileKey>,
}

impl WriteOptions {
    /// Defaults: level default, its block size, all cores, BCJ auto, unencrypted, now.
    pub fn new() -> Self {
        let level = Level::DEFAULT;
        WriteOptions {
            level: Some(level),
            block_size: level.default_block_size(),
            jobs: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            bcj: BcjMode::Auto,
            created: 0,
            comment: String::new(),
            recipients: Vec::new(),
            archive_id: None,
            file_key: None,
        }
    }
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the content of a file comes from: a sequence of data extents (holes skipped).
pub trait ContentSource {
    /// Reads up to `buf.len()` (> 0) bytes of the next data extent into the front of `buf`
    /// and returns its file offset and length (> 0), offsets increasing; `None` at the end.
    /// The writer passes a slice of its block, so content is read once, straight into place.
    fn read_extent(&mut self, buf: &mut [u8]) -> Result<Option<(u64, usize)>>;
    /// Logical size read (including a trailing hole), bytes.
    fn final_size(&self) -> u64;
}

impl ContentSource for crate::fs::source::FileSource {
    fn read_extent(&mut self, buf: &mut [u8]) -> Result<Option<(u64, usize)>> {
        crate::fs::source::FileSource::read_extent(self, buf)
    }
    fn final_size(&self) -> u64 {
        crate::fs::source::FileSource::final_size(self)
    }
}

/// Content from any reader (stdin), read front to back with no holes.
pub struct ReaderSource<R> {
    inner: R,
    pos: u64,
    name: PathBuf,
}

impl<R: std::io::Read> ReaderSource<R> {
    /// Wraps a reader; `name` labels I/O errors.
    pub fn new(inner: R, name: impl Into<PathBuf>) -> Self {
        ReaderSource {
            inner,
            pos: 0,
            name: name.into(),
        }
    }
}

impl<R: std::io::Read> ContentSource for ReaderSource<R> {
    fn read_extent(&mut self, buf: &mut [u8]) -> Result<Option<(u64, usize)>> {
        let mut got = 0;
        while got < buf.len() {
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&self.name, "read", e)),
            }
        }
        if got == 0 {
            return Ok(None);
        }
        let off = self.pos;
        self.pos += got as u64;
        Ok(Some((off, got)))
    }
    fn final_size(&self) -> u64 {
        self.pos
    }
}

/// Bytes in front of the raw data in every block buffer: room for the frame header and the
/// block header, so a stored block is sealed where it lies, never copied into a frame.
const PREFIX: usize = FRAME_HEADER_LEN + BLOCK_HEADER_LEN;

/// Bytes read from a file before its filter is chosen (auto BCJ looks at the first 4 KiB).
const FIRST_READ: usize = 64 << 10;

/// Longest single read of file content into the block, bytes: short enough that the bytes
/// are still in cache when BLAKE3 hashes them right after.
const READ_STEP: usize = 1 << 20;

struct Job {
    header_kind: FrameKind,
    last: bool,
    seq: u64,
    /// `PREFIX` bytes of room, then the raw block.
    block: Vec<u8>,
    filter: Filter,
    filter_start: u64,
}

struct WorkerState {
    encoder: BlockEncoder,
    payload: Vec<u8>,
}

/// Totals reported by [`ArchiveWriter::finish`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// Entries written.
    pub entries: u64,
    /// Content bytes read (logical file sizes, holes included).
    pub content_bytes: u64,
    /// Data frames written.
    pub data_frames: u64,
    /// Archive size, bytes.
    pub archive_bytes: u64,
}

/// Writes one archive. See the module documentation.
pub struct ArchiveWriter<W: Write> {
    out: W,
    out_name: PathBuf,
    offset: u64,
    archive_id: ArchiveId,
    protection: Arc<Protection>,
    pool: OrderedPool<Job, Result<Sealed>>,
    /// Block and frame buffers, recycled between this thread and the workers.
    buffers: WriteBuffers,
    /// `PREFIX` bytes of room, then the record bytes of the block being filled, up to
    /// `fill`. The buffer's length is how much of it is initialised: it grows only as bytes
    /// arrive (memory follows the bytes buffered), and a recycled buffer keeps its length, so
    /// reading content into it costs no zero-fill.
    block: Vec<u8>,
    fill: usize,
    /// Buffer of each file's first read (the filter is chosen from it), kept across files so
    /// a tree of small files does not allocate and zero 64 KiB per file.
    first: Vec<u8>,
    block_filter: Filter,
    stream_pos: u64,
    block_size: usize,
    submitted: u64,
    frame_lens: Vec<u32>,
    entries: Vec<IndexEntry>,
    /// Encoded bytes of `entries` in the index ([`entry_len`]).
    index_entries_len: u64,
    bcj: BcjMode,
    content_bytes: u64,
    on_progress: Option<Box<dyn FnMut(u64) + Send>>,
}

impl<W: Write> ArchiveWriter<W> {
    /// Starts an archive: generates (or takes) the archive id and file key, wraps the file key
    /// for every recipient, and writes the header. `out_name` labels I/O errors.
    ///
    /// Errors: Usage (a block size outside 64 KiB..=256 MiB, more than one password, more
    /// than 64 recipients), Unwritable (a header the reader would refuse, e.g. a comment over
    /// 4096 bytes), Crypto, Io. Nothing is written before these checks pass.
    pub fn new(out: W, out_name: impl Into<PathBuf>, opts: WriteOptions) -> Result<Self> {
        let out_name = out_name.into();
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&opts.block_size) {
            return Err(Error::Usage(format!(
                "block size {} bytes is outside {}K..={}M",
                opts.block_size,
                MIN_BLOCK_SIZE >> 10,
                MAX_BLOCK_SIZE >> 20
            )));
        }
        let unwritable = |problem| Error::Unwritable {
            what: out_name.display().to_string(),
            problem,
        };
        crate::format::header::check_comment(opts.comment.as_bytes()).map_err(unwritable)?;
        let archive_id = match opts.archive_id {
            Some(id) => id,
            None => {
                let mut id = [0u8; 16];
                crate::crypto::primitives::random_bytes(&mut id)
                    .map_err(|e| Error::Crypto(e.to_string()))?;
                id
            }
        };
        check_recipients(&opts.recipients)?;
        let (stanzas, protection) = if opts.recipients.is_empty() {
            (Vec::new(), Protection::Plain)
        } else {
            let file_key = match opts.file_key {
                Some(k) => k,
                None => FileKey::generate().map_err(|e| Error::Crypto(e.to_string()))?,
            };
            let stanzas = opts
                .recipients
                .iter()
                .map(|r| wrap(r, &file_key, &archive_id))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Error::Crypto(e.to_string()))?;
            (
                stanzas,
                Protection::Sealed(Box::new(Subkeys::derive(&file_key, &archive_id))),
            )
        };
        let header = Header {
            archive_id,
            created: opts.created,
            block_size: opts.block_size as u32,
            level: opts.level.map(|l| l.get()).unwrap_or(0),
            stanzas,
            comment: opts.comment,
        };
        header.check().map_err(unwritable)?;
        let mut bytes = header.write_untagged();
        let tag = protection.header_tag(&bytes);
        bytes.extend_from_slice(&tag);
        let protection = Arc::new(protection);
        let level = opts.level;
        let worker_protection = Arc::clone(&protection);
        // Enough spare buffers to cover the blocks in flight (within a 64 MiB budget), so none
        // is freed and reallocated (with -j 1, too few cost 0.4 s of page faults per 400 MB).
        let in_flight = super::pipeline::max_in_flight(opts.jobs, opts.block_size);
        let keep = super::pipeline::recycle_count(in_flight, opts.block_size);
        let buffers = WriteBuffers {
            blocks: Buffers::new(keep),
            frames: Buffers::new(keep),
        };
        let worker_buffers = buffers.clone();
        let pool = OrderedPool::new(
            opts.jobs,
            in_flight,
            move || WorkerState {
                encoder: BlockEncoder::new(level).expect("level was validated by Level::new"),
                payload: Vec::new(),
            },
            move |st: &mut WorkerState, job: Job| {
                seal_block(st, &worker_protection, &archive_id, &worker_buffers, job)
            },
        );
        let mut w = ArchiveWriter {
            out,
            out_name,
            offset: 0,
            archive_id,
            protection,
            pool,
            block: new_block(&buffers.blocks, opts.block_size),
            fill: PREFIX,
            first: Vec::new(),
            buffers,
            block_filter: Filter::None,
            stream_pos: 0,
            block_size: opts.block_size,
            submitted: 0,
            frame_lens: Vec::new(),
            entries: Vec::new(),
            index_entries_len: 0,
            bcj: opts.bcj,
            content_bytes: 0,
            on_progress: None,
        };
        w.write_out(&bytes)?;
        Ok(w)
    }

    /// Calls `f` with the number of content bytes read so far, after each block.
    pub fn set_progress(&mut self, f: Box<dyn FnMut(u64) + Send>) {
        self.on_progress = Some(f);
    }

    /// Content bytes read so far.
    pub fn content_bytes(&self) -> u64 {
        self.content_bytes
    }

    /// The archive id.
    pub fn archive_id(&self) -> ArchiveId {
        self.archive_id
    }

    fn write_out(&mut self, b: &[u8]) -> Result<()> {
        self.out
            .write_all(b)
            .map_err(|e| Error::io(&self.out_name, "write", e))?;
        self.offset += b.len() as u64;
        Ok(())
    }

    fn emit(&mut self, sealed: Result<Sealed>) -> Result<()> {
        let Sealed { frame, in_block } = sealed?;
        let body_len = (frame.len() - FRAME_HEADER_LEN - TAG_LEN) as u32;
        if frame[0] == FrameKind::Data as u8 {
            self.frame_lens.push(body_len);
        }
        self.write_out(&frame)?;
        if in_block {
            self.buffers.blocks.give(frame);
        } else {
            self.buffers.frames.give(frame);
        }
        Ok(())
    }

    /// Record bytes in the current block.
    fn used(&self) -> usize {
        self.fill - PREFIX
    }

    /// Copies `bytes` to `block[fill..]` (the caller checked the room) and moves `fill`:
    /// over the initialised part, then appended (the buffer's length is never below `fill`).
    fn put(&mut self, bytes: &[u8]) {
        let end = self.fill + bytes.len();
        let init = self.block.len().clamp(self.fill, end);
        let (over, tail) = bytes.split_at(init - self.fill);
        self.block[self.fill..init].copy_from_slice(over);
        self.block.extend_from_slice(tail);
        self.fill = end;
    }

    /// Makes `block[..end]` initialised (zero-filling only what never was) so content can be
    /// read into it.
    fn ensure_init(&mut self, end: usize) {
        if self.block.len() < end {
            self.block.resize(end, 0);
        }
    }

    fn submit(&mut self, job: Job) -> Result<()> {
        while !self.pool.has_capacity() {
            let r = self
                .pool
                .next_result()
                .map_err(|e| Error::Crypto(e.to_string()))?;
            if let Some(r) = r {
                self.emit(r)?;
            }
        }
        self.pool
            .submit(job)
            .map_err(|e| Error::Crypto(e.to_string()))?;
        while let Some(r) = self
            .pool
            .try_next()
            .map_err(|e| Error::Crypto(e.to_string()))?
        {
            self.emit(r)?;
        }
        Ok(())
    }

    /// Waits for every block in flight and writes them in order.
    fn drain(&mut self) -> Result<()> {
        while let Some(r) = self
            .pool
            .next_result()
            .map_err(|e| Error::Crypto(e.to_string()))?
        {
            self.emit(r)?;
        }
        Ok(())
    }

    /// Hands the current block to the workers (if it holds anything).
    fn flush_block(&mut self) -> Result<()> {
        if self.used() == 0 {
            return Ok(());
        }
        let len = self.used() as u64;
        let mut block = std::mem::replace(
            &mut self.block,
            new_block(&self.buffers.blocks, self.block_size),
        );
        block.truncate(self.fill);
        self.fill = PREFIX;
        let job = Job {
            header_kind: FrameKind::Data,
            last: false,
            seq: self.submitted,
            block,
            filter: self.block_filter,
            filter_start: self.stream_pos,
        };
        self.submitted += 1;
        self.stream_pos += len;
        self.submit(job)?;
        if let Some(p) = self.on_progress.as_mut() {
            p(self.content_bytes);
        }
        Ok(())
    }

    /// Appends record bytes, cutting blocks as they fill.
    fn push(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let room = self.block_size - self.used();
            let n = room.min(bytes.len());
            self.put(&bytes[..n]);
            bytes = &bytes[n..];
            if self.used() == self.block_size {
                self.flush_block()?;
            }
        }
        Ok(())
    }

    /// (seq, offset) where the next record byte will land.
    fn position(&self) -> (u64, u32) {
        (self.submitted, self.used() as u32)
    }

    /// Seq of the block holding the last byte pushed.
    fn last_byte_seq(&self) -> u64 {
        if self.used() == 0 {
            self.submitted - 1
        } else {
            self.submitted
        }
    }

    /// Switches the block's filter, starting a new block if the current one holds data.
    /// (Content of grid-aligned filters such as ARM64 is put on the block's instruction grid
    /// by [`ArchiveWriter::place_data`].)
    fn use_filter(&mut self, filter: Filter) -> Result<()> {
        if filter != self.block_filter {
            self.flush_block()?;
            self.block_filter = filter;
        }
        Ok(())
    }

    /// Writes the DATA record(s) of `len` content bytes (file offset `offset`) that sit at
    /// `data_at` in the block, with heads from `head_at` on, and moves `fill` past them.
    ///
    /// A BCJ filter with an instruction grid (ARM64, PowerPC, SPARC and ARM: 4 bytes; IA64:
    /// 16; RISC-V, ARM Thumb: 2) converts only the words that lie on the grid of the block,
    /// so a file's instructions must sit on it: its content bytes must be at block offsets
    /// congruent to their file offsets modulo the grid. Each DATA head is 13 bytes, which
    /// shifts that congruence, so the first `k < align` bytes go out as one-byte records
    /// (each moves it by 13) before one record carries the rest. x86 (grid 1) gets one record.
    /// `data_at` was chosen for the extent continuing the file; when it does not (a hole
    /// before it), the bytes are moved to where the real offset needs them (rare: holes in
    /// executables). The caller reserved `DATA_HEAD_LEN * align` bytes in front of the data.
    fn place_data(
        &mut self,
        head_at: usize,
        data_at: usize,
        offset: u64,
        len: usize,
        align: usize,
    ) {
        let k = grid_splits(head_at - PREFIX, offset, align).min(len - 1);
        let main_head = head_at + (DATA_HEAD_LEN + 1) * k;
        let main_data = main_head + DATA_HEAD_LEN;
        let mut split_bytes = [0u8; 16];
        split_bytes[..k].copy_from_slice(&self.block[data_at..data_at + k]);
        self.ensure_init(main_data + len - k);
        if data_at + k != main_data {
            self.block
                .copy_within(data_at + k..data_at + len, main_data);
        }
        let mut head = Vec::with_capacity(DATA_HEAD_LEN);
        for (i, &b) in split_bytes[..k].iter().enumerate() {
            let at = head_at + (DATA_HEAD_LEN + 1) * i;
            head.clear();
            record::write_data_head(&mut head, offset + i as u64, 1);
            self.block[at..at + DATA_HEAD_LEN].copy_from_slice(&head);
            self.block[at + DATA_HEAD_LEN] = b;
        }
        head.clear();
        record::write_data_head(&mut head, offset + k as u64, (len - k) as u32);
        self.block[main_head..main_data].copy_from_slice(&head);
        self.fill = main_data + len - k;
    }

    /// Adds an entry without content (directory, symlink, hard link).
    pub fn add_entry(&mut self, meta: &EntryMeta) -> Result<()> {
        debug_assert!(meta.kind != EntryKind::File);
        self.admit(meta)?;
        let (first_seq, first_offset) = self.position();
        let mut rec = Vec::new();
        record::write_entry(&mut rec, meta);
        self.push(&rec)?;
        self.entries.push(IndexEntry {
            meta: meta.clone(),
            size: 0,
            digest: [0; 32],
            first_seq,
            first_offset,
            last_seq: self.last_byte_seq(),
        });
        Ok(())
    }

    /// Adds a regular file and its content. `meta.kind` must be File. Returns the size and
    /// BLAKE3 digest recorded: they describe exactly the bytes stored, even when the file
    /// changed while it was read.
    pub fn add_file(
        &mut self,
        meta: &EntryMeta,
        src: &mut dyn ContentSource,
    ) -> Result<(u64, [u8; 32])> {
        self.add_file_with_progress(meta, src, &mut |_| {})
    }

    /// [`ArchiveWriter::add_file`], calling `progress` with the content bytes read so far
    /// (whole archive) after each extent, so a large file shows progress while it is read.
    pub fn add_file_with_progress(
        &mut self,
        meta: &EntryMeta,
        src: &mut dyn ContentSource,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(u64, [u8; 32])> {
        self.admit(meta)?;
        // The first extent (at most FIRST_READ bytes) goes through a small buffer: the
        // filter must be chosen from it before the ENTRY record is placed. The rest is read
        // straight into the block.
        let mut first = std::mem::take(&mut self.first);
        first.resize(FIRST_READ.min(self.block_size), 0);
        let got = src.read_extent(&mut first)?;
        let filter = match (self.bcj, got) {
            (BcjMode::Off, _) => Filter::None,
            (BcjMode::Force(f), _) => f,
            (BcjMode::Auto, Some((0, len))) => detect_filter(&first[..len]),
            (BcjMode::Auto, _) => Filter::None,
        };
        self.use_filter(filter)?;
        let (first_seq, first_offset) = self.position();
        let mut rec = Vec::with_capacity(64 + meta.path.len());
        record::write_entry(&mut rec, meta);
        self.push(&rec)?;
        let mut hasher = blake3::Hasher::new();
        let mut hashed_to = 0u64;
        // Room kept in front of the data of each DATA record: its head plus the heads of up
        // to align - 1 one-byte records that put the data on the filter's grid (`place_data`).
        let align = bcj::alignment(filter) as usize;
        let reserve = DATA_HEAD_LEN * align;
        // The first extent's bytes not yet placed.
        let (mut first_off, mut first_rest) = match got {
            Some((offset, len)) => (offset, &first[..len]),
            None => (0, &first[..0]),
        };
        while got.is_some() {
            if self.block_size - self.used() <= reserve {
                self.flush_block()?;
            }
            // The extent's bytes go to the block where they land when the extent continues
            // the file (the common case), then `place_data` writes the heads around them.
            let head_at = self.fill;
            let room = self.block_size - self.used() - reserve;
            let splits = grid_splits(head_at - PREFIX, hashed_to, align);
            let data_at = head_at + DATA_HEAD_LEN * (splits + 1);
            let (offset, len) = if !first_rest.is_empty() {
                let n = first_rest.len().min(room);
                self.ensure_init(data_at + n);
                self.block[data_at..data_at + n].copy_from_slice(&first_rest[..n]);
                let piece = (first_off, n);
                first_off += n as u64;
                first_rest = &first_rest[n..];
                piece
            } else {
                let max = room.min(READ_STEP).min(MAX_SEGMENT as usize);
                self.ensure_init(data_at + max);
                match src.read_extent(&mut self.block[data_at..data_at + max])? {
                    Some(piece) => piece,
                    None => break,
                }
            };
            if offset.saturating_add(len as u64) > MAX_FILE_SIZE {
                return Err(too_big(meta, offset.saturating_add(len as u64)));
            }
            // Holes before an extent hash as zeros, as the extracted file reads.
            hash_zeros(&mut hasher, offset.saturating_sub(hashed_to));
            hasher.update(&self.block[data_at..data_at + len]);
            hashed_to = offset + len as u64;
            self.place_data(head_at, data_at, offset, len, align);
            self.content_bytes += len as u64;
            progress(self.content_bytes);
            if self.used() == self.block_size {
                self.flush_block()?;
            }
        }
        self.first = first;
        let size = src.final_size().max(hashed_to);
        if size > MAX_FILE_SIZE {
            return Err(too_big(meta, size));
        }
        hash_zeros(&mut hasher, size - hashed_to);
        let digest: [u8; 32] = *hasher.finalize().as_bytes();
        let mut end = Vec::with_capacity(record::END_LEN);
        record::write_end(&mut end, size, &digest);
        self.push(&end)?;
        self.entries.push(IndexEntry {
            meta: meta.clone(),
            size,
            digest,
            first_seq,
            first_offset,
            last_seq: self.last_byte_seq(),
        });
        Ok((size, digest))
    }

    /// Refuses (before anything of it is written) an entry whose metadata a reader would
    /// refuse ([`EntryMeta::check`]) or that would take the index past [`MAX_INDEX_LEN`]
    /// (counting one more data frame), and counts it in the index.
    fn admit(&mut self, meta: &EntryMeta) -> Result<()> {
        meta.check().map_err(|problem| Error::Unwritable {
            what: shown_entry(&meta.path),
            problem,
        })?;
        let len = self.index_entries_len + entry_len(meta);
        if index_len(len, self.submitted + 1) > MAX_INDEX_LEN {
            return Err(Error::Unwritable {
                what: shown_entry(&meta.path),
                problem: FormatError::invalid(
                    "index",
                    format!("it would take the archive index past {MAX_INDEX_LEN} bytes"),
                ),
            });
        }
        self.index_entries_len = len;
        Ok(())
    }

    /// Writes the last data block, the index frames and the footer; returns the totals and
    /// the inner writer (flushed).
    pub fn finish(mut self) -> Result<(WriteSummary, W)> {
        self.flush_block()?;
        self.drain()?;
        let data_frames = self.submitted;
        let total = index_len(self.index_entries_len, data_frames);
        if total > MAX_INDEX_LEN {
            return Err(Error::Unwritable {
                what: self.out_name.display().to_string(),
                problem: FormatError::invalid(
                    "index",
                    format!("{total} bytes (at most {MAX_INDEX_LEN})"),
                ),
            });
        }
        let index_offset = self.offset;
        let index = Index {
            entries: std::mem::take(&mut self.entries),
            frame_body_lens: std::mem::take(&mut self.frame_lens),
        };
        let entries = index.entries.len() as u64;
        let bytes = index.write();
        let chunk = self.block_size.min(crate::codec::DEFAULT_BLOCK_SIZE);
        let chunks: Vec<&[u8]> = bytes.chunks(chunk).collect();
        let n = chunks.len() as u64;
        for (i, c) in chunks.into_iter().enumerate() {
            let mut block = new_block(&self.buffers.blocks, c.len());
            block.truncate(PREFIX);
            block.extend_from_slice(c);
            let job = Job {
                header_kind: FrameKind::Index,
                last: i as u64 + 1 == n,
                seq: self.submitted,
                block,
                filter: Filter::None,
                filter_start: 0,
            };
            self.submitted += 1;
            self.submit(job)?;
        }
        self.drain()?;
        let footer = Footer {
            index_offset,
            data_frames,
            index_frames: n,
        };
        let untagged = footer.untagged();
        let tag = self.protection.footer_tag(&self.archive_id, &untagged);
        let mut fb = [0u8; FOOTER_LEN];
        fb[..32].copy_from_slice(&untagged);
        fb[32..].copy_from_slice(&tag);
        self.write_out(&fb)?;
        self.out
            .flush()
            .map_err(|e| Error::io(&self.out_name, "write", e))?;
        let summary = WriteSummary {
            entries,
            content_bytes: self.content_bytes,
            data_frames,
            archive_bytes: self.offset,
        };
        Ok((summary, self.out))
    }
}

/// An entry's archive path for a message: escaped as `list` shows it, and cut after 200
/// characters (paths may be 64 KiB long).
fn shown_entry(path: &[u8]) -> String {
    let text = crate::fs::escape_path(path);
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], path.len()),
        None => text,
    }
}

/// The error for a file whose size (or data end) `size` is past [`MAX_FILE_SIZE`].
fn too_big(meta: &EntryMeta, size: u64) -> Error {
    Error::Unwritable {
        what: shown_entry(&meta.path),
        problem: FormatError::invalid(
            "file",
            format!("{size} bytes exceeds the {MAX_FILE_SIZE}-byte file size limit"),
        ),
    }
}

/// Refuses, before any KDF runs, a recipient list whose stanzas no reader would accept
/// (`format::stanza::check_stanza_set`): more than 64 recipients, or more than one password.
fn check_recipients(recipients: &[Recipient]) -> Result<()> {
    use crate::format::stanza::{MAX_PASSWORD_STANZAS, MAX_STANZAS};
    let passwords = recipients
        .iter()
        .filter(|r| matches!(r, Recipient::Password { .. }))
        .count();
    if passwords > MAX_PASSWORD_STANZAS {
        return Err(Error::Usage(format!(
            "{passwords} passwords given: an archive holds at most one password stanza (add key files or box recipients instead)"
        )));
    }
    if recipients.len() > MAX_STANZAS {
        return Err(Error::Usage(format!(
            "{} recipients given: an archive holds at most {MAX_STANZAS} stanzas",
            recipients.len()
        )));
    }
    Ok(())
}

/// How many one-byte DATA records must come first so that the content of a DATA record
/// whose head is at block offset `head_at` and whose first byte has file offset `offset`
/// lands on a filter grid of `align` bytes (a power of two, at most 16): the smallest `k` in
/// `0..align` with `head_at + 14k + 13 ≡ offset + k (mod align)`. 13 is odd, so it exists.
fn grid_splits(head_at: usize, offset: u64, align: usize) -> usize {
    let mask = align as u64 - 1;
    (0..align)
        .find(|&k| {
            let data = (head_at + (DATA_HEAD_LEN + 1) * k + DATA_HEAD_LEN) as u64;
            data.wrapping_sub(offset + k as u64) & mask == 0
        })
        .unwrap_or(0)
}

/// A block buffer from `buffers` for `capacity` bytes of records, with `PREFIX` bytes in
/// front (for the frame and block headers) and room for the tag behind. Only the prefix is
/// initialised in a new buffer (its other pages are not touched until bytes arrive); a
/// recycled one keeps its stale, initialised length.
fn new_block(buffers: &Buffers, capacity: usize) -> Vec<u8> {
    let mut b = buffers.take();
    let want = PREFIX + capacity + TAG_LEN;
    if b.capacity() < want {
        b.reserve_exact(want - b.len());
    }
    if b.len() < PREFIX {
        b.resize(PREFIX, 0);
    }
    b
}

/// The recycled buffers of a writer, in two lists so that a small compressed frame never
/// holds a block-sized buffer's pages.
#[derive(Clone)]
struct WriteBuffers {
    /// Blocks being filled (a stored block is sealed in its block, so those come back here).
    blocks: Buffers,
    /// Frames of compressed blocks.
    frames: Buffers,
}

/// A sealed frame, and whether it is a block buffer sealed in place (stored block).
struct Sealed {
    frame: Vec<u8>,
    in_block: bool,
}

/// Worker: filter + compress + seal one block into a complete frame. A block that is stored
/// becomes the frame where it lies (headers into its prefix, encrypted in place, tag
/// appended); a compressed one is copied into a frame buffer from `buffers`, and its block
/// buffer goes back there.
fn seal_block(
    st: &mut WorkerState,
    protection: &Protection,
    archive_id: &ArchiveId,
    buffers: &WriteBuffers,
    job: Job,
) -> Result<Sealed> {
    let raw = &job.block[PREFIX..];
    let raw_len = raw.len();
    let (codec, filter) = if st.encoder.stores() {
        (Codec::Store, Filter::None)
    } else {
        st.encoder
            .encode(raw, job.filter, job.filter_start, &mut st.payload)
            .map_err(|e| Error::Crypto(format!("compressing block {}: {e}", job.seq)))?
    };
    let in_block = codec == Codec::Store;
    let mut frame = match codec {
        // `encode` stores blocks unfiltered, exactly the raw bytes.
        Codec::Store => job.block,
        Codec::Zstd => {
            let mut frame = buffers.frames.take();
            frame.clear();
            frame.reserve(PREFIX + st.payload.len() + TAG_LEN);
            frame.resize(PREFIX, 0);
            frame.extend_from_slice(&st.payload);
            buffers.blocks.give(job.block);
            frame
        }
    };
    let bh = BlockHeader {
        codec,
        filter,
        raw_len: raw_len as u32,
        filter_start: job.filter_start,
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
    Ok(Sealed { frame, in_block })
}
