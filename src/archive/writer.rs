//! The archive writer: entries in, format-2 archive bytes out.
//!
//! The caller adds entries in order; their records (ENTRY, DATA segments, END or END_DIGEST,
//! PAD) are appended to the current block of the record stream ([`super::fill`] cuts the
//! blocks). A full block (or a change of BCJ filter) is handed to the worker pool, which
//! filters, compresses and seals it into a frame ([`super::seal`]); frames are written
//! strictly in sequence order. `finish` ([`super::finish`]) writes the index frames and the
//! footer.
//!
//! Output bytes depend only on the inputs and options (level, block size, BCJ mode, keys and
//! archive id), never on the number of workers.
//!
//! The writer never writes what its reader would refuse: the header, every entry's metadata,
//! the set of entries ([`EntrySet`]: unique paths, nothing below a non-directory, hard links
//! to earlier files), every file's size and the index are checked against the one table of
//! limits (`format::limits`) with the checks the reader uses, before any of their bytes are
//! written ([`Error::Unwritable`], naming the entry). An error from
//! [`ArchiveWriter::add_entry`] or [`ArchiveWriter::add_file`] about an entry's *metadata*
//! leaves the archive as it was (the entry can be skipped); any other error abandons the
//! archive (drop the writer).
//!
//! Writer policies (docs/FORMAT.md, "how krypta writes"): files of at least
//! [`DIGEST_MIN_SIZE`] bytes end with END_DIGEST (their BLAKE3, b3sum's value), smaller ones
//! with END (their bytes are covered by the frame tags alone: a digest per small file would
//! double the archive of a tree of small files); a hard link takes its target's mode, mtime
//! and owner (it is the same inode) and carries no fields; a symlink is stored with mode
//! 0o777. A delta archive (`WriteOptions::base`, [`super::delta`]) ends every file with
//! END_DIGEST, whatever its size: its blocks decode with base bytes, and the digest is what
//! shows that the right base bytes were used.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::hash_zeros;
use super::pipeline::{Buffers, OrderedPool};
use super::seal::{Job, PREFIX, Sealed, WorkerState, WriteBuffers, new_block, seal_block};
pub use super::write_opts::{
    BcjMode, ContentSource, ReaderSource, TestReference, WriteOptions, WriteSummary,
};
use crate::codec::{BlockEncoder, Filter, bcj, detect::detect_filter};
use crate::crypto::frame::Protection;
use crate::crypto::keys::{ArchiveId, FileKey, Subkeys};
use crate::crypto::sign::{SignerSecret, Transcript};
use crate::crypto::stanza::{Recipient, wrap, wrap_password_with_salt};
use crate::error::{Error, Result};
use crate::format::entry::EntryKind;
use crate::format::entry_set::EntrySet;
use crate::format::extension::Extension;
use crate::format::header::Header;
use crate::format::index::IndexEntry;
use crate::format::index_v2::{entry_len, index_len};
use crate::format::limits::{MAX_BLOCK_SIZE, MAX_FILE_SIZE, MAX_INDEX_LEN, MIN_BLOCK_SIZE};
use crate::format::record::{self, DATA_HEAD_LEN, DIGEST_MIN_SIZE, MAX_SEGMENT};
use crate::format::{EntryMeta, FormatError, Version};

pub(crate) use super::write_opts::check_recipients;
use super::write_opts::{sealing_workers, shown_entry, too_big};

/// The format version the writer writes.
pub const WRITE_VERSION: Version = Version::V2;

/// Bytes read from a file before its filter is chosen (auto BCJ looks at the first 4 KiB).
const FIRST_READ: usize = 64 << 10;

/// Longest single read of file content into the block, bytes: short enough that the bytes
/// are still in cache when BLAKE3 hashes them right after.
const READ_STEP: usize = 1 << 20;

/// Writes one archive. See the module documentation.
pub struct ArchiveWriter<W: Write> {
    pub(super) out: super::output::Output<W>,
    pub(super) out_name: PathBuf,
    pub(super) offset: u64,
    pub(super) archive_id: ArchiveId,
    pub(super) protection: Arc<Protection>,
    pub(super) pool: OrderedPool<Job, Result<Sealed>>,
    /// Block and frame buffers, recycled between this thread and the workers.
    pub(super) buffers: WriteBuffers,
    /// `PREFIX` bytes of room, then the record bytes of the block being filled, up to
    /// `fill`. The buffer's length is how much of it is initialised: it grows only as bytes
    /// arrive (memory follows the bytes buffered), and a recycled buffer keeps its length, so
    /// reading content into it costs no zero-fill.
    pub(super) block: Vec<u8>,
    pub(super) fill: usize,
    /// Offset in the current block of the first record that starts in it.
    pub(super) first_record: Option<u32>,
    /// Buffer of each file's first read (the filter is chosen from it), kept across files so
    /// a tree of small files does not allocate and zero 64 KiB per file.
    pub(super) first: Vec<u8>,
    pub(super) block_filter: Filter,
    /// Stream offset of the current block's first byte.
    pub(super) stream_pos: u64,
    /// Record bytes a block holds at most: the block size rounded down to a multiple of 16,
    /// so every block starts on a 16-byte boundary of the stream (see [`super::fill`]).
    pub(super) cap: usize,
    pub(super) block_size: usize,
    pub(super) submitted: u64,
    pub(super) frame_lens: Vec<u32>,
    pub(super) frame_refs: Vec<u32>,
    pub(super) entries: Vec<IndexEntry>,
    entry_set: EntrySet,
    /// Encoded bytes of `entries` in the index ([`entry_len`]).
    pub(super) index_entries_len: u64,
    bcj: BcjMode,
    pub(super) content_bytes: u64,
    pub(super) on_progress: Option<Box<dyn FnMut(u64) + Send>>,
    /// Test-only referencing blocks: the parameters and what the next prefix needs.
    pub(super) reference: Option<(TestReference, RefState)>,
    /// Level 9's referencing blocks ([`super::chain`]); `None` at levels that do not
    /// reference (and when the test-only references are on).
    pub(super) chain: Option<super::chain::Chain>,
    /// Signing (`WriteOptions::signer`): the key and the transcript of the bytes written.
    pub(super) signing: Option<(SignerSecret, Transcript)>,
    /// A delta archive's base map and the matched segments of the block being filled.
    pub(super) delta: Option<super::delta::DeltaWriter>,
    /// What this run needs and what to change, for an out-of-memory error
    /// ([`crate::memory::compress_advice`]).
    pub(super) memory_advice: String,
}

/// [`Error::OutOfMemory`] for the archive `path`: `source` and the run's `advice`.
pub(super) fn out_of_memory(
    path: &Path,
    source: crate::memory::OutOfMemory,
    advice: &str,
) -> Error {
    Error::OutOfMemory {
        path: path.to_path_buf(),
        source,
        advice: advice.to_string(),
    }
}

/// The stream bytes a test-only referencing block may use ([`TestReference`]).
#[derive(Default)]
pub(super) struct RefState {
    /// The group's bytes before the previous block (at most `max_len`).
    pub group_tail: Vec<u8>,
    /// The previous block's raw bytes.
    pub previous: Vec<u8>,
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
            what: crate::fs::shown(&out_name),
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
                .map(|r| match (r, opts.fixed_salt) {
                    (Recipient::Password { password, kdf }, Some(salt)) => {
                        kdf.check_bounds()?;
                        wrap_password_with_salt(
                            password.as_bytes(),
                            kdf,
                            salt,
                            &file_key,
                            &archive_id,
                        )
                    }
                    _ => wrap(r, &file_key, &archive_id),
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| match e {
                    crate::crypto::CryptoError::Argon2Memory { bytes, .. } => {
                        crate::memory::argon2_out_of_memory(&out_name, bytes, false)
                    }
                    e => Error::Crypto(e.to_string()),
                })?;
            (
                stanzas,
                Protection::Sealed(Box::new(Subkeys::derive(&file_key, &archive_id))),
            )
        };
        // In type order: recovery (0x0001), then the signer (0x0002).
        let mut extensions: Vec<Extension> = opts
            .recovery
            .iter()
            .map(|r| Extension::Recovery { percent: r.percent })
            .collect();
        if let Some(sk) = &opts.signer {
            // The signer's fingerprint goes in the header, under the header tag: the stanzas
            // and the signer are bound together (docs/SECURITY.md, "Signatures").
            extensions.push(Extension::Signer {
                fingerprint: sk.public().fingerprint(),
            });
        }
        // A delta archive (0x8001, last in type order) names its base; its map's walk starts
        // now, beside the writing (before it for an output that cannot be taken back).
        let delta = super::delta::DeltaWriter::for_options(
            opts.base.as_ref(),
            opts.block_size,
            opts.walk_base_first,
            &mut extensions,
        )?;
        let header = Header {
            version: WRITE_VERSION,
            archive_id,
            created: opts.created,
            block_size: opts.block_size as u32,
            level: opts.level.map(|l| l.get()).unwrap_or(0),
            stanzas,
            comment: opts.comment,
            extensions,
        };
        header.check().map_err(unwritable)?;
        let out = match &opts.recovery {
            None => super::output::Output::Plain(out),
            Some(r) => super::output::Output::Recovery(Box::new(
                crate::recovery::RecoveryWriter::new(out, r).map_err(|source| Error::Recovery {
                    path: out_name.clone(),
                    source,
                })?,
            )),
        };
        let mut bytes = header.write_untagged();
        let tag = protection.header_tag(&bytes);
        bytes.extend_from_slice(&tag);
        let signing = opts.signer.map(|sk| (sk, Transcript::new(&bytes)));
        let protection = Arc::new(protection);
        let level = opts.level;
        let worker_protection = Arc::clone(&protection);
        // Enough spare buffers to cover the blocks in flight (within a 64 MiB budget), so none
        // is freed and reallocated (with -j 1, too few cost 0.4 s of page faults per 400 MB).
        // A referencing level (9) keeps one block per worker in flight: each carries its
        // predecessor's bytes as well, zstd 19 takes seconds per block, and this thread fills
        // the next block meanwhile, so more in flight would only add to the peak.
        let jobs = sealing_workers(opts.jobs, level);
        let in_flight = if level.is_some_and(|l| l.references()) {
            jobs
        } else {
            super::pipeline::max_in_flight(jobs, opts.block_size)
        };
        let keep = super::pipeline::recycle_count(in_flight, opts.block_size);
        let memory_advice = crate::memory::compress_advice(
            level,
            opts.block_size,
            jobs,
            opts.base
                .as_deref()
                .map(super::reader::BaseArchive::cache_bytes_at_most),
        );
        let buffers = WriteBuffers {
            blocks: Buffers::new(keep),
            frames: Buffers::new(keep),
        };
        let worker_buffers = buffers.clone();
        let worker_base = opts.base.clone();
        let pool = OrderedPool::new(
            jobs,
            in_flight,
            move || WorkerState {
                encoder: BlockEncoder::new(level).expect("level was validated by Level::new"),
                payload: Vec::new(),
                region: Default::default(),
                decoder: None,
            },
            move |st: &mut WorkerState, job: Job| {
                seal_block(
                    st,
                    &worker_protection,
                    &archive_id,
                    &worker_buffers,
                    worker_base.as_deref(),
                    job,
                )
            },
        )
        .map_err(|e| Error::io(out_name.clone(), "start a worker thread", e))?;
        let block = new_block(&buffers.blocks, opts.block_size)
            .map_err(|source| out_of_memory(&out_name, source, &memory_advice))?;
        let mut w = ArchiveWriter {
            out,
            out_name,
            offset: 0,
            archive_id,
            protection,
            pool,
            block,
            fill: PREFIX,
            first_record: None,
            first: Vec::new(),
            buffers,
            block_filter: Filter::None,
            stream_pos: 0,
            cap: opts.block_size & !15,
            block_size: opts.block_size,
            submitted: 0,
            frame_lens: Vec::new(),
            frame_refs: Vec::new(),
            entries: Vec::new(),
            entry_set: EntrySet::new(WRITE_VERSION),
            index_entries_len: 0,
            // Base regions are decoded (unfiltered) content: a delta archive's blocks are not
            // filtered, so they match them.
            bcj: if delta.is_some() {
                BcjMode::Off
            } else {
                opts.bcj
            },
            content_bytes: 0,
            on_progress: None,
            // A block has one raw-content prefix: in a delta archive it is the base region,
            // so level 9's chained references (the predecessor block) are off there.
            chain: level
                .filter(|l| l.references() && opts.test_reference.is_none() && delta.is_none())
                .map(|l| super::chain::Chain::new(l.window_log())),
            reference: opts.test_reference.map(|r| (r, RefState::default())),
            signing,
            delta,
            memory_advice,
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

    /// Adds an entry without content (directory, symlink, hard link). A hard link is stored
    /// with its target's mode, mtime and owner and without fields (it is the same inode; see
    /// the module doc).
    pub fn add_entry(&mut self, meta: &EntryMeta) -> Result<()> {
        debug_assert!(meta.kind != EntryKind::File);
        let meta = self.normalised(meta);
        self.admit(&meta, false)?;
        let (first_seq, first_offset) = self.position();
        let mut rec = Vec::new();
        record::write_entry(&mut rec, &meta, WRITE_VERSION);
        self.push_record(&rec)?;
        self.entries.push(IndexEntry {
            meta: meta.into_owned(),
            size: 0,
            digest: None,
            first_seq,
            first_offset,
            last_seq: self.last_byte_seq(),
        });
        Ok(())
    }

    /// A hard link with its target's attributes and no fields, a symlink with mode 0o777
    /// (format 2 stores no other: Linux has no mode for symlinks, `lstat` reports 0o777);
    /// anything else as it is.
    fn normalised<'m>(&self, meta: &'m EntryMeta) -> Cow<'m, EntryMeta> {
        if meta.kind == EntryKind::Symlink && meta.mode != 0o777 {
            return Cow::Owned(EntryMeta {
                mode: 0o777,
                ..meta.clone()
            });
        }
        if meta.kind != EntryKind::Hardlink {
            return Cow::Borrowed(meta);
        }
        let Some(a) = self.entry_set.file_attrs(&meta.link) else {
            // The entry set refuses it, naming the problem.
            return Cow::Borrowed(meta);
        };
        Cow::Owned(EntryMeta {
            path: meta.path.clone(),
            kind: EntryKind::Hardlink,
            mode: a.mode,
            mtime: a.mtime,
            uid: a.uid,
            gid: a.gid,
            link: meta.link.clone(),
            ..EntryMeta::default()
        })
    }

    /// Adds a regular file and its content. `meta.kind` must be File. Returns the size and
    /// BLAKE3 digest of exactly the bytes stored, even when the file changed while it was read
    /// (the digest is computed for every file; it is stored for files of at least
    /// [`DIGEST_MIN_SIZE`] bytes).
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
        self.admit(meta, true)?;
        self.delta_begin_file(&meta.path, src.final_size());
        if let Some(stored) = self.add_reference(meta, src, progress)? {
            return Ok(stored);
        }
        // The first extent (at most FIRST_READ bytes) goes through a small buffer: the
        // filter must be chosen from it before the ENTRY record is placed. The rest is read
        // straight into the block.
        let mut first = std::mem::take(&mut self.first);
        first.resize(FIRST_READ.min(self.block_size), 0);
        self.write_sealed_while_input_waits(src)?;
        let mut got = src.read_extent(&mut first)?;
        while let Some(at) = super::fill::read_on_at(got, first.len(), src) {
            self.write_sealed_while_input_waits(src)?;
            got = super::fill::joined(got, src.read_extent(&mut first[at..])?);
        }
        let filter = match (self.bcj, got) {
            (BcjMode::Off, _) => Filter::None,
            (BcjMode::Force(f), _) => f,
            (BcjMode::Auto, Some((0, len))) => detect_filter(&first[..len]),
            (BcjMode::Auto, _) => Filter::None,
        };
        self.use_filter(filter)?;
        let (first_seq, first_offset) = self.position();
        let mut rec = Vec::with_capacity(64 + meta.path.len());
        record::write_entry(&mut rec, meta, WRITE_VERSION);
        self.push_record(&rec)?;
        let mut hasher = blake3::Hasher::new();
        let mut hashed_to = 0u64;
        // Room kept in front of the data of each DATA record: its head plus up to align - 1
        // PAD records that put the data on the filter's grid (`place_data`).
        let align = bcj::alignment(filter) as usize;
        let reserve = DATA_HEAD_LEN + align - 1;
        // The first extent's bytes not yet placed.
        let (mut first_off, mut first_rest) = match got {
            Some((offset, len)) => (offset, &first[..len]),
            None => (0, &first[..0]),
        };
        while got.is_some() {
            // A full block is cut; so is one whose region could not reach this segment's
            // base bytes too (`DeltaWriter::segment_fits`).
            let room = (self.cap - self.used()).saturating_sub(reserve) as u64;
            if room == 0
                || (self.used() > 0)
                    && self
                        .delta
                        .as_ref()
                        .is_some_and(|d| !d.segment_fits(hashed_to, room))
            {
                self.flush_block()?;
            }
            // The extent's bytes go to the block where they land when the extent continues
            // the file (the common case), then `place_data` writes the heads around them.
            let head_at = self.fill;
            let room = self.cap - self.used() - reserve;
            let data_at =
                head_at + super::fill::grid_pad(head_at - PREFIX, hashed_to, align) + DATA_HEAD_LEN;
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
                self.write_sealed_while_input_waits(src)?;
                let mut got = src.read_extent(&mut self.block[data_at..data_at + max])?;
                while let Some(at) = super::fill::read_on_at(got, max, src) {
                    self.write_sealed_while_input_waits(src)?;
                    let rest = &mut self.block[data_at + at..data_at + max];
                    got = super::fill::joined(got, src.read_extent(rest)?);
                }
                match got {
                    Some(piece) => piece,
                    None => break,
                }
            };
            if offset.saturating_add(len as u64) > MAX_FILE_SIZE {
                return Err(too_big(meta, offset.saturating_add(len as u64)));
            }
            // Holes before an extent hash as zeros, as the extracted file reads, and count
            // as content: `content_bytes` is the logical size, holes included.
            let hole = offset.saturating_sub(hashed_to);
            hash_zeros(&mut hasher, hole);
            hasher.update(&self.block[data_at..data_at + len]);
            hashed_to = offset + len as u64;
            self.place_data(head_at, data_at, offset, len, align);
            self.content_bytes += hole + len as u64;
            progress(self.content_bytes);
            if self.used() == self.cap {
                self.flush_block()?;
            }
        }
        self.first = first;
        let size = src.final_size().max(hashed_to);
        if size > MAX_FILE_SIZE {
            return Err(too_big(meta, size));
        }
        hash_zeros(&mut hasher, size - hashed_to);
        self.content_bytes += size - hashed_to;
        let digest: [u8; 32] = *hasher.finalize().as_bytes();
        let stored = (size >= DIGEST_MIN_SIZE || self.delta.is_some()).then_some(digest);
        self.delta_end_file();
        let mut end = Vec::with_capacity(record::END_LEN);
        record::write_end(&mut end, size, stored.as_ref(), WRITE_VERSION);
        self.push_record(&end)?;
        if stored.is_none() {
            // `admit` counted a digest for every file.
            self.index_entries_len -= 32;
        }
        self.entries.push(IndexEntry {
            meta: meta.clone(),
            size,
            digest: stored,
            first_seq,
            first_offset,
            last_seq: self.last_byte_seq(),
        });
        Ok((size, digest))
    }

    /// Refuses (before anything of it is written) an entry whose metadata a reader would
    /// refuse ([`EntryMeta::check`]), that breaks the entry-set rules ([`EntrySet::admit`]),
    /// or that would take the index past [`MAX_INDEX_LEN`] (counting one more data frame and,
    /// for a file, a digest), and counts it in the index.
    fn admit(&mut self, meta: &EntryMeta, file: bool) -> Result<()> {
        let unwritable = |problem| Error::Unwritable {
            what: shown_entry(&meta.path),
            problem,
        };
        meta.check(WRITE_VERSION).map_err(unwritable)?;
        if (meta.kind == EntryKind::File) != file {
            return Err(unwritable(FormatError::invalid(
                "entry",
                "a file must be added with its content (add_file), anything else without",
            )));
        }
        let prev = self.entries.last().map_or(&[][..], |e| &e.meta.path);
        let len = self.index_entries_len + entry_len(prev, meta, file);
        if index_len(len, self.submitted + 1) > MAX_INDEX_LEN {
            return Err(unwritable(FormatError::invalid(
                "index",
                format!("it would take the archive index past {MAX_INDEX_LEN} bytes"),
            )));
        }
        self.entry_set.admit(meta).map_err(unwritable)?;
        self.index_entries_len = len;
        Ok(())
    }
}
