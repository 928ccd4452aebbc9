//! The archive reader: opens the header (and the file key), then reads frames in order,
//! verifies and decodes them in parallel, parses the record stream and hands entries and
//! verified content to a [`Visitor`] (the extractor, `test`, `--stdout`).
//!
//! Nothing reaches a visitor before its frame's tag verified (encrypt-then-MAC: the MAC is
//! checked before decryption), and a file's END is reported only after its BLAKE3 digest
//! matched. The index and footer are checked against what the stream held, so an archive
//! that scans clean is exactly the archive that was written.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::blocks::{Decoded, FrameFault, Group, block_info, decode_body};
use super::budget::ByteBudget;
use super::hash_zeros;
use super::pipeline::{Buffers, OrderedPool};
use crate::codec::{BlockDecoder, Codec};
use crate::crypto::frame::Protection;
use crate::crypto::keys::{ArchiveId, Subkeys};
use crate::crypto::stanza::{Identity, unwrap_versioned};
use crate::error::{AuthCheck, Error, Result};
use crate::format::entry::EntryKind;
use crate::format::entry_set::EntrySet;
use crate::format::footer::{FOOTER_LEN, Footer};
use crate::format::frame::{FRAME_HEADER_LEN, FrameHeader, FrameKind, TAG_LEN};
use crate::format::header::{self, Header, PREFIX_LEN, Prefix, PrefixError};
use crate::format::index::{Index, IndexEntry, MAX_INDEX_LEN};
use crate::format::limits::hole_hash_allowance;
use crate::format::record::{self, ExtentCheck, RecordHead, StreamSource};
use crate::format::{EntryMeta, FormatError, Version};

/// Receives what a scan finds, in stream order. Every byte given was verified first.
pub trait Visitor {
    /// Whether this entry is wanted (its content is then passed on). Default: all.
    fn wants(&mut self, _meta: &EntryMeta) -> bool {
        true
    }
    /// An entry (for files: before its content).
    fn entry(&mut self, meta: &EntryMeta) -> Result<()>;
    /// Content of the current file at `offset` (holes are not reported; they read as zeros).
    fn data(&mut self, offset: u64, bytes: &[u8]) -> Result<()>;
    /// The current file ended; its digest matched. `size` includes a trailing hole.
    fn end(&mut self, meta: &EntryMeta, size: u64) -> Result<()>;
    /// The current file failed (bad digest, bad block, truncated archive): discard it.
    fn abort(&mut self);
}

/// Options for opening an archive.
#[derive(Default)]
pub struct OpenOptions {
    /// Keys to try against the stanzas. When any is given, an unencrypted archive is refused
    /// ([`Error::NotEncrypted`]) unless `allow_unencrypted`: a key means the caller expects
    /// an archive only a key holder could have written.
    pub identities: Vec<Identity>,
    /// Worker threads (0 = all cores).
    pub jobs: usize,
    /// Read an unencrypted archive even though `identities` is not empty (the CLI's
    /// `--allow-unencrypted`, and a password that came only from `KRYPTA_PASSWORD`).
    pub allow_unencrypted: bool,
    /// Base of the byte budget for frames in flight, bytes (`archive::budget`); `None` is
    /// 512 MiB. The budget is at least `(jobs + 1)` times the largest block read.
    pub in_flight_budget: Option<u64>,
}

/// Where the archive bytes come from: a file, stdin or an object (see [`crate::store`]).
type Input = Box<dyn crate::store::Source>;

/// An opened archive: header parsed and authenticated.
pub struct Archive {
    input: Input,
    path: PathBuf,
    header: Header,
    /// The header's format version: every structure after the header follows it.
    version: Version,
    header_len: u64,
    protection: Arc<Protection>,
    jobs: usize,
    /// Bytes consumed from the input so far (sequential position).
    pos: u64,
    /// A frame read ahead by the data feed that belongs to the index.
    pending_frame: Option<FrameJob>,
    /// Recycled frame bodies and decoded blocks, shared with the workers.
    buffers: ReadBuffers,
    /// Base of the byte budget, bytes.
    in_flight_base: u64,
}

/// The reader's recycled buffers, in two lists so that a small compressed body never holds
/// a block-sized buffer's pages (mixing them doubled peak memory with 128 MiB blocks).
#[derive(Clone)]
struct ReadBuffers {
    /// Frame bodies as read (a stored block is decoded in its body, so those come back here).
    bodies: Buffers,
    /// Decoded zstd blocks.
    blocks: Buffers,
}

/// Totals of a scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanSummary {
    /// Entries seen in the stream.
    pub entries: u64,
    /// Files whose digest verified.
    pub files: u64,
    /// Content bytes (logical sizes).
    pub bytes: u64,
    /// Data frames decoded.
    pub frames: u64,
    /// Files whose whole-content digest was not checked because hashing their holes would
    /// have gone past the scan's hole allowance (`format::limits::hole_hash_allowance`);
    /// their stored bytes were checked by the frame tags.
    pub unverified: Vec<String>,
    /// Most bytes of frame bodies and decoded blocks held at once for frames in flight
    /// (bounded by the frames actually read: `archive::budget`).
    pub peak_held: u64,
    /// Hole bytes hashed in this scan so far.
    pub holes_hashed: u64,
    /// Bytes of data frames read in this scan so far (header, body and tag of each): what
    /// the hole allowance grows with.
    pub frame_bytes: u64,
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads and parses the header of `path` (`-` = stdin) without any key: for `info`, and the
/// first step of [`Archive::open`]. Returns the header, its bytes and the input.
fn read_header(path: &Path) -> Result<(Header, Vec<u8>, Input)> {
    let input = crate::store::open_source(path)?;
    read_header_from(input, path)
}

/// [`read_header`] from an input already open; `path` names it in errors.
fn read_header_from(mut input: Input, path: &Path) -> Result<(Header, Vec<u8>, Input)> {
    let mut prefix = [0u8; PREFIX_LEN];
    let got = read_full(&mut input, &mut prefix).map_err(|e| Error::io(path, "read", e))?;
    if got == 0 {
        return Err(Error::NotAnArchive {
            path: path.into(),
            reason: "the file is empty",
        });
    }
    if got < PREFIX_LEN {
        if prefix[..got] == header::MAGIC[..got.min(8)] {
            return Err(corrupt(
                path,
                0,
                FormatError::Truncated {
                    what: "header",
                    needed: PREFIX_LEN as u64,
                    got: got as u64,
                },
            ));
        }
        return Err(Error::NotAnArchive {
            path: path.into(),
            reason: "too short to be a krypta archive",
        });
    }
    let p = Prefix::parse(&prefix).map_err(|e| prefix_error(path, e))?;
    let mut bytes = prefix.to_vec();
    bytes.resize(p.header_len as usize, 0);
    let got =
        read_full(&mut input, &mut bytes[PREFIX_LEN..]).map_err(|e| Error::io(path, "read", e))?;
    if got < bytes.len() - PREFIX_LEN {
        return Err(corrupt(
            path,
            0,
            FormatError::Truncated {
                what: "header",
                needed: p.header_len as u64,
                got: (PREFIX_LEN + got) as u64,
            },
        ));
    }
    let (h, _tag) = Header::parse(&bytes).map_err(|e| prefix_error(path, e))?;
    Ok((h, bytes, input))
}

fn prefix_error(path: &Path, e: PrefixError) -> Error {
    match e {
        PrefixError::NotAnArchive => Error::NotAnArchive {
            path: path.into(),
            reason: "no krypta magic at the start",
        },
        PrefixError::Version(v) => Error::UnsupportedVersion {
            path: path.into(),
            version: v,
            supported: header::VERSION,
        },
        PrefixError::Format(f) => corrupt(path, 0, f),
    }
}

/// A structure that does not parse ([`Error::Corrupt`]), or one that needs a newer krypta
/// ([`Error::Unsupported`]).
fn corrupt(path: &Path, offset: u64, source: FormatError) -> Error {
    match source {
        FormatError::NeedsNewer { .. } => Error::Unsupported {
            path: path.into(),
            offset,
            source,
        },
        source => Error::Corrupt {
            path: path.into(),
            offset,
            source,
        },
    }
}

/// Reads only the header (no key needed): what `info` shows.
pub fn read_header_only(path: &Path) -> Result<Header> {
    Ok(read_header(path)?.0)
}

/// Facts about an archive available without a key (for `info`).
#[derive(Debug, Clone)]
pub struct ArchiveFacts {
    /// The header.
    pub header: Header,
    /// Header length, bytes.
    pub header_len: u64,
    /// Total size, bytes (None for a stream).
    pub size: Option<u64>,
    /// The footer, when the input is a file (its tag verified only for unencrypted archives).
    pub footer: Option<Footer>,
    /// Lines for `-v` about a remote archive: where it was read from, what that cost.
    pub details: Vec<String>,
}

/// Reads the header and (for a file) the footer without any key.
pub fn facts(path: &Path) -> Result<ArchiveFacts> {
    let (header, bytes, mut input) = read_header(path)?;
    let header_len = bytes.len() as u64;
    let mut footer = None;
    let mut size = None;
    if let Some(len) = input.length().map_err(|e| Error::io(path, "seek", e))? {
        size = Some(len);
        if header.recovery_percent().is_some() {
            // The footer ends the protected bytes, which a recovery section follows: it is
            // not at the end of the file (the recovery layer locates it).
        } else if len >= header_len + FOOTER_LEN as u64 {
            let mut fb = [0u8; FOOTER_LEN];
            input
                .seek_to(len - FOOTER_LEN as u64)
                .map_err(|e| Error::io(path, "seek", e))?;
            input
                .read_exact(&mut fb)
                .map_err(|e| Error::io(path, "read", e))?;
            let (ft, tag) = Footer::parse(&fb, header.version)
                .map_err(|e| corrupt(path, len - FOOTER_LEN as u64, e))?;
            if !header.encrypted() {
                let p = Protection::Plain;
                p.verify_header(
                    &bytes[..bytes.len() - 32],
                    bytes[bytes.len() - 32..].try_into().expect("32"),
                )
                .map_err(|_| Error::Integrity {
                    path: path.into(),
                    what: "header checksum mismatch".into(),
                })?;
                p.verify_footer(&header.archive_id, &fb[..32], &tag)
                    .map_err(|_| Error::Integrity {
                        path: path.into(),
                        what: "footer checksum mismatch".into(),
                    })?;
            }
            footer = Some(ft);
        } else {
            return Err(corrupt(
                path,
                len,
                FormatError::Truncated {
                    what: "archive",
                    needed: header_len + FOOTER_LEN as u64,
                    got: len,
                },
            ));
        }
    }
    let mut details: Vec<String> = input.describe().into_iter().collect();
    if let Some(c) = input.counters() {
        details.push(format!("{}: {}", path.display(), c.summary()));
    }
    Ok(ArchiveFacts {
        header,
        header_len,
        size,
        footer,
        details,
    })
}

struct FrameJob {
    /// Its place among the frames of this pool, in submission order (the budget's turn).
    ticket: u64,
    header: FrameHeader,
    header_bytes: [u8; FRAME_HEADER_LEN],
    body: Vec<u8>,
    tag: [u8; TAG_LEN],
    offset: u64,
}

type FrameResult = (u64, FrameHeader, std::result::Result<Decoded, FrameFault>);

/// Worker: verifies (and decrypts) one frame, then decodes its block
/// ([`super::blocks::decode_body`]). A stored block is unfiltered in place in the body; a
/// zstd block is decoded into a buffer from `buffers.blocks`, and the body goes back to
/// `buffers.bodies`; a referencing block is left pending for the reading thread. With a
/// `budget`, the decoded block's bytes are taken from it (in ticket order, waiting for room)
/// before it is decoded, and the body's bytes given back after. A pending block takes its
/// raw length too: the reading thread decodes it into a block of that size.
fn open_frame(
    dec: &mut BlockDecoder,
    protection: &Protection,
    archive_id: &ArchiveId,
    buffers: &ReadBuffers,
    version: Version,
    budget: Option<&ByteBudget>,
    mut job: FrameJob,
) -> FrameResult {
    let body_len = job.body.len() as u64;
    let mut took_turn = false;
    let r = (|| {
        protection
            .open_frame(
                archive_id,
                &job.header_bytes,
                job.header.seq,
                &mut job.body,
                &job.tag,
            )
            .map_err(|_| FrameFault::Tag)?;
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
struct FramePool {
    pool: OrderedPool<FrameJob, FrameResult>,
    budget: Arc<ByteBudget>,
}

impl Drop for FramePool {
    fn drop(&mut self) {
        self.budget.close();
    }
}

impl Archive {
    /// Opens `path` (`-` = stdin): parses the header, recovers the file key from the first
    /// stanza an identity opens (encrypted archives), and verifies the header tag.
    ///
    /// Errors: NotAnArchive, UnsupportedVersion, Corrupt (malformed header), KeyRequired (an
    /// encrypted archive and no identities), NotEncrypted (identities given, an unencrypted
    /// archive and not `allow_unencrypted`), KdfLimit and KdfTooWeak (the password stanza,
    /// when a password is tried on it), AuthFailed (no stanza opened or the
    /// header MAC failed), Integrity (unencrypted header checksum), Io.
    pub fn open(path: &Path, opts: OpenOptions) -> Result<Archive> {
        let (header, bytes, input) = read_header(path)?;
        Self::open_parsed(path, opts, header, bytes, input)
    }

    /// [`Archive::open`] on archive bytes from any reader, read front to back as from a pipe
    /// (no seeks); `name` labels errors. For archives held in memory (known-answer vectors).
    pub fn open_stream(
        input: Box<dyn Read + Send>,
        name: &Path,
        opts: OpenOptions,
    ) -> Result<Archive> {
        let (header, bytes, input) =
            read_header_from(Box::new(crate::store::local::ReadSource::new(input)), name)?;
        Self::open_parsed(name, opts, header, bytes, input)
    }

    fn open_parsed(
        path: &Path,
        opts: OpenOptions,
        header: Header,
        bytes: Vec<u8>,
        input: Input,
    ) -> Result<Archive> {
        // A prompt (`Identity::Prompt`) is no key the caller gave: it asks only when needed.
        let keys_given = opts.identities.iter().any(|i| !i.is_prompt());
        if !header.encrypted() && keys_given && !opts.allow_unencrypted {
            return Err(Error::NotEncrypted { path: path.into() });
        }
        let (body, tag) = bytes.split_at(bytes.len() - 32);
        let tag: [u8; 32] = tag.try_into().expect("32 bytes");
        let protection = if header.encrypted() {
            let has_password_stanza = header
                .stanzas
                .iter()
                .any(|s| crate::crypto::stanza::stanza_kdf(s).is_some());
            // Only a prompt was given: it can answer a password stanza, nothing else.
            let can_prompt = has_password_stanza && opts.identities.iter().any(|i| i.is_prompt());
            if !keys_given && !can_prompt {
                let mut kinds: Vec<&str> = header.stanzas.iter().map(|s| s.name()).collect();
                kinds.dedup();
                return Err(Error::KeyRequired {
                    path: path.into(),
                    kinds: kinds.join(", "),
                });
            }
            let key = unwrap_versioned(
                &opts.identities,
                &header.stanzas,
                &header.archive_id,
                header.version as u16,
            )
            .map_err(|e| match e {
                crate::crypto::CryptoError::KdfLimit {
                    param,
                    value,
                    limit,
                } => Error::KdfLimit {
                    path: path.into(),
                    param,
                    value,
                    limit,
                },
                crate::crypto::CryptoError::KdfTooWeak { param, value, min } => Error::KdfTooWeak {
                    path: path.into(),
                    param,
                    value,
                    min,
                },
                crate::crypto::CryptoError::StanzaSet(f) => corrupt(path, 0, f),
                crate::crypto::CryptoError::Prompt(m) => Error::Usage(m),
                _ => match header
                    .stanzas
                    .iter()
                    .filter(|s| matches!(s, crate::format::Stanza::Unknown { .. }))
                    .count()
                {
                    0 => Error::AuthFailed {
                        path: path.into(),
                        check: AuthCheck::NoStanzaOpened,
                    },
                    unknown => Error::StanzasUnknown {
                        path: path.into(),
                        unknown,
                    },
                },
            })?;
            let p = Protection::Sealed(Box::new(Subkeys::derive(&key, &header.archive_id)));
            p.verify_header(body, &tag).map_err(|_| Error::AuthFailed {
                path: path.into(),
                check: AuthCheck::HeaderMac,
            })?;
            p
        } else {
            let p = Protection::Plain;
            p.verify_header(body, &tag).map_err(|_| Error::Integrity {
                path: path.into(),
                what: "header checksum mismatch".into(),
            })?;
            p
        };
        let jobs = if opts.jobs == 0 {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        } else {
            opts.jobs
        };
        let header_len = bytes.len() as u64;
        // Spare buffers for the blocks in flight, within the recycling budget (see the writer).
        let in_flight = super::pipeline::max_in_flight(jobs, header.block_size as usize);
        let keep = super::pipeline::recycle_count(in_flight, header.block_size as usize);
        let buffers = ReadBuffers {
            bodies: Buffers::new(keep),
            blocks: Buffers::new(keep),
        };
        Ok(Archive {
            input,
            path: path.into(),
            version: header.version,
            header,
            header_len,
            protection: Arc::new(protection),
            jobs,
            pos: header_len,
            pending_frame: None,
            buffers,
            in_flight_base: opts
                .in_flight_budget
                .unwrap_or(super::pipeline::IN_FLIGHT_BUDGET as u64),
        })
    }

    /// The verified header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// True when the input can seek (a file or an object, not a pipe).
    pub fn seekable(&self) -> bool {
        self.input.seekable()
    }

    /// Where the archive bytes come from (transfer counters, `-v` description).
    pub fn source(&self) -> &dyn crate::store::Source {
        self.input.as_ref()
    }

    fn tag_error(&self, what: String) -> Error {
        if self.protection.is_sealed() {
            Error::AuthFailed {
                path: self.path.clone(),
                check: AuthCheck::FrameMac,
            }
        } else {
            Error::Integrity {
                path: self.path.clone(),
                what,
            }
        }
    }

    fn fault(&self, offset: u64, seq: u64, f: FrameFault) -> Error {
        match f {
            FrameFault::Tag => {
                self.tag_error(format!("frame {seq} at byte {offset}: checksum mismatch"))
            }
            FrameFault::Format(e) => self.structure_error(offset, e),
            FrameFault::Codec(m) => {
                self.structure_error(offset, FormatError::invalid("block payload", m))
            }
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
    fn structure_error(&self, offset: u64, e: FormatError) -> Error {
        if self.protection.is_sealed() && !matches!(e, FormatError::NeedsNewer { .. }) {
            Error::AuthFailed {
                path: self.path.clone(),
                check: AuthCheck::Structure,
            }
        } else {
            corrupt(&self.path, offset, e)
        }
    }

    /// A structural rule broken in a frame sequence: for sealed archives whose frames all
    /// verified this can only be tampering (reordering, dropping, splicing).
    fn sequence_error(&self, offset: u64, problem: String) -> Error {
        if self.protection.is_sealed() {
            Error::AuthFailed {
                path: self.path.clone(),
                check: AuthCheck::Structure,
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
    /// under the frame MAC).
    fn check_last_flag(&self, job: &FrameJob) -> Result<()> {
        job.header.check_last_flag().map_err(|e| match e {
            FormatError::Invalid { problem, .. } => self.sequence_error(job.offset, problem),
            e => corrupt(&self.path, job.offset, e),
        })
    }

    fn read_exact_at_pos(&mut self, buf: &mut [u8], what: &'static str) -> Result<()> {
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

    /// Reads one frame at the current position.
    fn read_frame(&mut self) -> Result<FrameJob> {
        if let Some(job) = self.pending_frame.take() {
            return Ok(job);
        }
        let offset = self.pos;
        let mut hb = [0u8; FRAME_HEADER_LEN];
        self.read_exact_at_pos(&mut hb, "frame header")?;
        let header =
            FrameHeader::parse(&hb, self.version).map_err(|e| corrupt(&self.path, offset, e))?;
        // Read the body as it arrives instead of allocating the declared length up front, so
        // a truncated or hostile length costs no more memory than the bytes really present.
        // A recycled buffer already that long is overwritten in place (no zero-fill, no new
        // pages); otherwise the body grows as bytes arrive.
        let want = header.body_len as usize;
        let mut body = self.buffers.bodies.take();
        let got = if body.len() >= want {
            body.truncate(want);
            read_full(&mut self.input, &mut body)
        } else {
            body.clear();
            body.reserve(want.min(8 << 20));
            (&mut self.input).take(want as u64).read_to_end(&mut body)
        }
        .map_err(|e| Error::io(&self.path, "read", e))?;
        if got < want {
            return Err(corrupt(
                &self.path,
                self.pos + got as u64,
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
        Ok(FrameJob {
            ticket: 0,
            header,
            header_bytes: hb,
            body,
            tag,
            offset,
        })
    }

    fn seek_to(&mut self, offset: u64) -> Result<()> {
        if !self.input.seekable() {
            return Err(Error::Usage(format!(
                "{}: cannot seek in a stream",
                self.path.display()
            )));
        }
        self.input
            .seek_to(offset)
            .map_err(|e| Error::io(&self.path, "seek", e))?;
        self.pos = offset;
        Ok(())
    }

    fn new_pool(&self) -> FramePool {
        let protection = Arc::clone(&self.protection);
        let id = self.header.archive_id;
        let buffers = self.buffers.clone();
        let version = self.version;
        let budget = Arc::new(ByteBudget::with_base(self.jobs, self.in_flight_base));
        let worker_budget = Arc::clone(&budget);
        // The header's block size only sizes the pool's job count (a performance hint); the
        // memory bound is the byte budget, taken from the frames actually read.
        let pool = OrderedPool::new(
            self.jobs,
            super::pipeline::max_in_flight(self.jobs, self.header.block_size as usize),
            || BlockDecoder::new().expect("zstd decoder context"),
            move |dec: &mut BlockDecoder, job: FrameJob| {
                open_frame(
                    dec,
                    &protection,
                    &id,
                    &buffers,
                    version,
                    Some(&worker_budget),
                    job,
                )
            },
        );
        FramePool { pool, budget }
    }

    /// Seeks back to the first data frame (after [`Archive::read_index`]).
    pub fn rewind_to_data(&mut self) -> Result<()> {
        self.pending_frame = None;
        self.seek_to(self.header_len)
    }

    /// Reads the index of a stream: data frames are read past (their sequence checked, not
    /// decoded), then the index frames and the footer are verified.
    pub fn read_index_streaming(&mut self) -> Result<Index> {
        let mut seq = 0u64;
        let index_offset = loop {
            let job = self.read_frame()?;
            if job.header.kind == FrameKind::Index {
                let at = job.offset;
                self.pending_frame = Some(job);
                break at;
            }
            if job.header.seq != seq {
                return Err(self.sequence_error(
                    job.offset,
                    format!("expected data frame seq {seq}, found {}", job.header.seq),
                ));
            }
            self.check_last_flag(&job)?;
            seq += 1;
        };
        let index = self.read_index_and_footer(seq, index_offset)?;
        self.check_entry_set(&index)?;
        Ok(index)
    }

    /// After the data frames of a stream: reads the index frames and the footer, requires the
    /// end of the input after it, and checks the footer and frame table against what was
    /// read (`data_frames` frames, the first index frame at `index_offset`).
    fn read_index_and_footer(&mut self, data_frames: u64, index_offset: u64) -> Result<Index> {
        Ok(self
            .read_index_and_footer_of_stream(data_frames, index_offset)?
            .1)
    }

    /// [`Archive::read_index_and_footer`], returning the footer too. After the footer of a
    /// format-2 archive whose header announces a recovery section, the bytes that follow are
    /// that section's (not read here).
    fn read_index_and_footer_of_stream(
        &mut self,
        data_frames: u64,
        index_offset: u64,
    ) -> Result<(Footer, Index)> {
        let index = self.read_index_frames(data_frames, None, u64::MAX)?;
        let foot_at = self.pos;
        let mut fb = [0u8; FOOTER_LEN];
        self.read_exact_at_pos(&mut fb, "footer")?;
        let footer = self.check_footer(foot_at, &fb)?;
        let mut extra = [0u8; 1];
        if self.header.recovery_percent().is_none()
            && read_full(&mut self.input, &mut extra)
                .map_err(|e| Error::io(&self.path, "read", e))?
                != 0
        {
            return Err(corrupt(
                &self.path,
                self.pos,
                FormatError::invalid("archive", "bytes after the footer"),
            ));
        }
        if footer.data_frames != data_frames || footer.index_offset != index_offset {
            return Err(
                self.sequence_error(foot_at, "footer disagrees with the frames read".into())
            );
        }
        self.check_frame_table(&footer, &index)?;
        Ok((footer, index))
    }

    /// Reads and verifies the footer and the index of a seekable archive.
    ///
    /// A format-2 archive with a recovery section has its footer before that section, not at
    /// the end of the file; without the recovery layer's locator this build reaches it the
    /// way a pipe does (data frames read past, not decoded), then rewinds.
    pub fn read_index(&mut self) -> Result<(Footer, Index)> {
        let (footer, index) = self.read_index_unchecked()?;
        self.check_entry_set(&index)?;
        Ok((footer, index))
    }

    fn read_index_unchecked(&mut self) -> Result<(Footer, Index)> {
        if self.header.recovery_percent().is_some() && self.seekable() {
            self.seek_to(self.header_len)?;
            let mut seq = 0u64;
            let index_offset = loop {
                let job = self.read_frame()?;
                if job.header.kind == FrameKind::Index {
                    let at = job.offset;
                    self.pending_frame = Some(job);
                    break at;
                }
                if job.header.seq != seq {
                    return Err(self.sequence_error(
                        job.offset,
                        format!("expected data frame seq {seq}, found {}", job.header.seq),
                    ));
                }
                seq += 1;
            };
            return self.read_index_and_footer_of_stream(seq, index_offset);
        }
        let len = match self.input.length() {
            Ok(Some(len)) if self.input.seekable() => len,
            Ok(_) => {
                return Err(Error::Usage(
                    "reading the index needs a seekable archive".into(),
                ));
            }
            Err(e) => return Err(Error::io(&self.path, "seek", e)),
        };
        if len < self.header_len + FOOTER_LEN as u64 {
            return Err(corrupt(
                &self.path,
                len,
                FormatError::Truncated {
                    what: "archive (no footer)",
                    needed: self.header_len + FOOTER_LEN as u64,
                    got: len,
                },
            ));
        }
        let foot_at = len - FOOTER_LEN as u64;
        self.seek_to(foot_at)?;
        let mut fb = [0u8; FOOTER_LEN];
        self.read_exact_at_pos(&mut fb, "footer")?;
        let footer = self.check_footer(foot_at, &fb)?;
        if footer.index_offset < self.header_len || footer.index_offset >= foot_at {
            return Err(
                self.sequence_error(foot_at, "footer: index offset outside the archive".into())
            );
        }
        self.seek_to(footer.index_offset)?;
        self.input.read_ahead_to(Some(foot_at));
        let index =
            self.read_index_frames(footer.data_frames, Some(footer.index_frames), foot_at)?;
        if self.pos != foot_at {
            return Err(
                self.sequence_error(self.pos, "bytes between the index and the footer".into())
            );
        }
        self.check_frame_table(&footer, &index)?;
        Ok((footer, index))
    }

    fn check_footer(&self, at: u64, fb: &[u8; FOOTER_LEN]) -> Result<Footer> {
        let (footer, tag) =
            Footer::parse(fb, self.version).map_err(|e| corrupt(&self.path, at, e))?;
        self.protection
            .verify_footer(&self.header.archive_id, &fb[..32], &tag)
            .map_err(|_| {
                if self.protection.is_sealed() {
                    Error::AuthFailed {
                        path: self.path.clone(),
                        check: AuthCheck::FooterMac,
                    }
                } else {
                    Error::Integrity {
                        path: self.path.clone(),
                        what: "footer checksum mismatch".into(),
                    }
                }
            })?;
        Ok(footer)
    }

    fn check_frame_table(&self, footer: &Footer, index: &Index) -> Result<()> {
        if index.frame_body_lens.len() as u64 != footer.data_frames
            || index.frame_ref_lens.len() != index.frame_body_lens.len()
        {
            return Err(self.sequence_error(
                footer.index_offset,
                "index frame table disagrees with the footer".into(),
            ));
        }
        let total: u64 = index
            .frame_body_lens
            .iter()
            .map(|&l| l as u64 + (FRAME_HEADER_LEN + TAG_LEN) as u64)
            .sum::<u64>()
            + self.header_len;
        if total != footer.index_offset {
            return Err(self.sequence_error(
                footer.index_offset,
                "data frame lengths do not add up to the index offset".into(),
            ));
        }
        Ok(())
    }

    /// Reads `count` index frames (seq data_frames..) at the current position and parses them.
    fn read_index_frames(
        &mut self,
        data_frames: u64,
        count: Option<u64>,
        limit: u64,
    ) -> Result<Index> {
        let mut dec = BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?;
        let mut bytes = Vec::new();
        let mut i = 0u64;
        loop {
            if self.pos >= limit {
                return Err(corrupt(
                    &self.path,
                    self.pos,
                    FormatError::invalid("index", "index frames run into the footer"),
                ));
            }
            let job = self.read_frame()?;
            let (offset, h) = (job.offset, job.header);
            if h.kind != FrameKind::Index || h.seq != data_frames + i {
                return Err(self.sequence_error(
                    offset,
                    format!(
                        "expected index frame seq {}, found {:?} seq {}",
                        data_frames + i,
                        h.kind,
                        h.seq
                    ),
                ));
            }
            let (_, _, r) = open_frame(
                &mut dec,
                &self.protection,
                &self.header.archive_id,
                &self.buffers,
                self.version,
                None,
                job,
            );
            let decoded = r.map_err(|f| self.fault(offset, h.seq, f))?;
            if self.version == Version::V2 && decoded.info.stream_offset != bytes.len() as u64 {
                return Err(corrupt(
                    &self.path,
                    offset,
                    FormatError::invalid(
                        "index block header",
                        format!(
                            "stream offset {} where the index blocks before it end at {}",
                            decoded.info.stream_offset,
                            bytes.len()
                        ),
                    ),
                ));
            }
            let raw = decoded.raw();
            if bytes.len() as u64 + raw.len() as u64 > MAX_INDEX_LEN {
                return Err(self.structure_error(
                    offset,
                    FormatError::invalid("index", format!("larger than {MAX_INDEX_LEN} bytes")),
                ));
            }
            if bytes.is_empty() && decoded.start == 0 {
                // The usual single compressed index frame: keep its buffer, no copy.
                bytes = decoded.buf;
            } else {
                bytes.extend_from_slice(raw);
            }
            i += 1;
            if h.last {
                break;
            }
        }
        if let Some(count) = count
            && i != count
        {
            return Err(
                self.sequence_error(self.pos, format!("{i} index frames, footer says {count}"))
            );
        }
        Index::parse(&bytes, self.version).map_err(|e| self.structure_error(self.pos, e))
    }

    /// The entry-set rules on an index (FORMAT.md §7.3), so that `list`, `test` and `extract`
    /// all refuse an archive whose set of entries breaks them before reading its data. (A
    /// scan checks the stream instead, or compares it entry by entry with an index that was
    /// checked.)
    fn check_entry_set(&self, index: &Index) -> Result<()> {
        let mut set = EntrySet::with_capacity(self.version, index.entries.len());
        for e in &index.entries {
            set.admit(&e.meta)
                .map_err(|e| self.structure_error(self.pos, e))?;
        }
        Ok(())
    }

    /// Reads the whole archive front to back (works on pipes): every data frame is verified and
    /// decoded, every record parsed, every file digest checked, then the index and footer are
    /// checked against the stream. Entries the visitor does not want are verified but not
    /// passed on.
    pub fn scan(&mut self, visitor: &mut dyn Visitor) -> Result<ScanSummary> {
        self.scan_against(None, visitor)
    }

    /// [`Archive::scan`] of an archive whose footer and index were read (and checked) first
    /// ([`Archive::read_index`], then [`Archive::rewind_to_data`]): each entry of the stream
    /// is compared with the index as soon as it is parsed, so a stream that differs from its
    /// index is refused before the visitor sees the differing entry; the entry-set rules,
    /// which the index passed, need no second check, and the index is not read again (the
    /// data frames must end where the footer says, with the reference lengths the frame
    /// table gives).
    pub fn scan_against(
        &mut self,
        known: Option<(&Footer, &Index)>,
        visitor: &mut dyn Visitor,
    ) -> Result<ScanSummary> {
        self.input.read_ahead_to(None);
        let mut pool = self.new_pool();
        let mut feed = Feed::new(self, &mut pool, None, 0);
        let mut parsed = Vec::new();
        let mut set = EntrySet::new(feed.ar.version);
        let check = match known {
            Some((_, ix)) => Check::Index(&ix.entries),
            None => Check::Set(&mut set),
        };
        let mut summary = parse_records(&mut feed, visitor, &mut parsed, None, check, (0, 0))?;
        let (data_frames, index_offset) = feed.finish_data()?;
        let refs = std::mem::take(&mut feed.refs_seen);
        summary.peak_held = pool.budget.peak();
        drop(pool);
        if let Some((footer, index)) = known {
            if summary.entries != index.entries.len() as u64
                || data_frames != footer.data_frames
                || index_offset != footer.index_offset
                || index.frame_ref_lens != refs
            {
                return Err(self.sequence_error(
                    index_offset,
                    "index disagrees with the record stream".into(),
                ));
            }
            return Ok(summary);
        }
        // Then the index frames and the footer.
        let index = self.read_index_and_footer(data_frames, index_offset)?;
        if index.entries != parsed || index.frame_ref_lens != refs {
            return Err(self.sequence_error(
                index_offset,
                "index disagrees with the record stream".into(),
            ));
        }
        Ok(summary)
    }

    /// Extracts only the index entries at `wanted` positions (seekable archives): decodes just
    /// the frames that hold them, from the start of their group (format 2: the frames a
    /// referencing block needs before it; the frame table says where a group starts).
    pub fn scan_selected(
        &mut self,
        index: &Index,
        wanted: &[usize],
        visitor: &mut dyn Visitor,
    ) -> Result<ScanSummary> {
        let mut offsets = Vec::with_capacity(index.frame_body_lens.len());
        let mut off = self.header_len;
        for &l in &index.frame_body_lens {
            offsets.push(off);
            off += l as u64 + (FRAME_HEADER_LEN + TAG_LEN) as u64;
        }
        let mut total = ScanSummary::default();
        let mut i = 0;
        while i < wanted.len() {
            // A run: consecutive wanted entries whose frames overlap or touch.
            let first = &index.entries[wanted[i]];
            let mut last_seq = first.last_seq;
            let mut j = i + 1;
            while j < wanted.len() && index.entries[wanted[j]].first_seq <= last_seq + 1 {
                last_seq = last_seq.max(index.entries[wanted[j]].last_seq);
                j += 1;
            }
            let run_entries: Vec<&IndexEntry> =
                index.entries[wanted[i]..=wanted[j - 1]].iter().collect();
            let want_set: std::collections::HashSet<usize> = wanted[i..j].iter().copied().collect();
            let start = crate::format::index_v2::group_start(index, first.first_seq);
            self.seek_to(offsets[start as usize])?;
            let run_end = offsets.get(last_seq as usize + 1).copied().unwrap_or(off);
            self.input.read_ahead_to(Some(run_end));
            let mut pool = self.new_pool();
            let mut feed = Feed::new(self, &mut pool, Some((start, last_seq)), first.first_seq);
            feed.skip = first.first_offset as usize;
            feed.expected_refs = Some(&index.frame_ref_lens);
            let mut filter = SelectVisitor {
                inner: visitor,
                base: wanted[i],
                want: &want_set,
                n: 0,
            };
            let mut parsed = Vec::new();
            let expected: Vec<IndexEntry> = run_entries.iter().map(|&e| e.clone()).collect();
            let r = parse_records(
                &mut feed,
                &mut filter,
                &mut parsed,
                Some(run_entries.len()),
                Check::Index(&expected),
                (total.holes_hashed, total.frame_bytes),
            );
            drop(feed);
            total.peak_held = total.peak_held.max(pool.budget.peak());
            drop(pool);
            let s = r?;
            if s.entries != expected.len() as u64 {
                return Err(self.sequence_error(
                    offsets[first.first_seq as usize],
                    "record stream disagrees with the index".into(),
                ));
            }
            total.entries += s.entries;
            total.files += s.files;
            total.bytes += s.bytes;
            total.frames += s.frames;
            total.unverified.extend(s.unverified);
            total.holes_hashed = s.holes_hashed;
            total.frame_bytes = s.frame_bytes;
            i = j;
        }
        Ok(total)
    }
}

/// Passes on only the wanted entries of a run (by index position).
struct SelectVisitor<'a> {
    inner: &'a mut dyn Visitor,
    base: usize,
    want: &'a std::collections::HashSet<usize>,
    n: usize,
}

impl Visitor for SelectVisitor<'_> {
    fn wants(&mut self, meta: &EntryMeta) -> bool {
        let pos = self.base + self.n;
        self.n += 1;
        self.want.contains(&pos) && self.inner.wants(meta)
    }
    fn entry(&mut self, meta: &EntryMeta) -> Result<()> {
        self.inner.entry(meta)
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        self.inner.data(offset, bytes)
    }
    fn end(&mut self, meta: &EntryMeta, size: u64) -> Result<()> {
        self.inner.end(meta, size)
    }
    fn abort(&mut self) {
        self.inner.abort()
    }
}

/// Reads the next record that is not a PAD (format 2's alignment records are skipped),
/// checking each record start against its block's first-record offset.
fn next_non_pad(feed: &mut Feed<'_>) -> Result<Option<RecordHead>> {
    loop {
        if !feed.record_start()? {
            return Ok(None);
        }
        match next_record(feed)? {
            Some(RecordHead::Pad) => continue,
            r => return Ok(r),
        }
    }
}

/// How a scan checks the entries it parses besides their own rules.
enum Check<'a> {
    /// Against the entry-set rules (a stream read without its index first: a pipe).
    Set(&'a mut EntrySet),
    /// Against index entries (which passed the entry-set rules), one by one, in order.
    Index(&'a [IndexEntry]),
}

/// Parses records from the feed, verifying digests and passing wanted entries on. Collects
/// what it parsed as index entries (for the comparison with the index). With `limit`, stops
/// after that many entries. `check` is the entry-set rules or the index the entries must
/// equal (their metadata before the visitor sees them, their size, digest and location once
/// parsed). `holes` carries (hole bytes hashed, data frame bytes read) from earlier runs of
/// the same scan.
fn parse_records(
    feed: &mut Feed<'_>,
    visitor: &mut dyn Visitor,
    parsed: &mut Vec<IndexEntry>,
    limit: Option<usize>,
    mut check: Check<'_>,
    holes: (u64, u64),
) -> Result<ScanSummary> {
    let (hashed_before, frames_before) = holes;
    let mut summary = ScanSummary {
        holes_hashed: hashed_before,
        ..ScanSummary::default()
    };
    loop {
        if limit.is_some_and(|l| summary.entries >= l as u64) {
            break;
        }
        let rec = loop {
            if !feed.record_start()? {
                break None;
            }
            let at = feed.position();
            match next_record(feed)? {
                Some(RecordHead::Pad) => continue,
                r => break r.map(|r| (at, r)),
            }
        };
        let Some(((first_seq, first_offset), rec)) = rec else {
            break;
        };
        let meta = match rec {
            RecordHead::Entry(m) => m,
            _ => return Err(feed.corrupt("a DATA or END record outside a file")),
        };
        match &mut check {
            Check::Set(set) => {
                set.admit(&meta).map_err(|e| feed.corrupt_with(e))?;
            }
            Check::Index(ix) => {
                if ix
                    .get(summary.entries as usize)
                    .is_none_or(|e| e.meta != meta)
                {
                    return Err(feed.ar.sequence_error(
                        feed.ar.pos,
                        "index disagrees with the record stream".into(),
                    ));
                }
            }
        }
        summary.entries += 1;
        let wanted = visitor.wants(&meta);
        if meta.kind != EntryKind::File {
            if wanted {
                visitor.entry(&meta)?;
            }
            check.entry_done(
                feed,
                parsed,
                summary.entries - 1,
                IndexEntry {
                    meta,
                    size: 0,
                    digest: None,
                    first_seq,
                    first_offset,
                    last_seq: feed.last_byte_seq(),
                },
            )?;
            continue;
        }
        if wanted {
            visitor.entry(&meta)?;
        }
        let in_entry = |e: Error| Error::InEntry {
            entry: crate::fs::escape_path(&meta.path),
            source: Box::new(e),
        };
        let holes_hashed = &mut summary.holes_hashed;
        let unverified = &mut summary.unverified;
        let r = (|| -> Result<(u64, Option<[u8; 32]>)> {
            let mut hasher = Some(blake3::Hasher::new());
            let mut hashed_to = 0u64;
            let mut extents = ExtentCheck::default();
            // Holes read as zeros and are hashed as zeros; a crafted archive could claim
            // terabytes of them, so the zeros hashed per scan are capped by what the scan has
            // read (hole_hash_allowance, checked before hashing, cumulative). Past the cap a
            // file's digest is not checked (its stored bytes still are, by the frame tags)
            // and the caller is told which file.
            let mut zeros = |hasher: &mut Option<blake3::Hasher>, n: u64, frame_bytes: u64| {
                if let Some(h) = hasher.as_mut() {
                    let allowed = hole_hash_allowance(frame_bytes);
                    if holes_hashed.saturating_add(n) <= allowed {
                        *holes_hashed += n;
                        hash_zeros(h, n);
                    } else {
                        *hasher = None;
                    }
                }
            };
            loop {
                let rec = next_non_pad(feed)
                    .map_err(in_entry)?
                    .ok_or_else(|| in_entry(feed.corrupt("the stream ends inside a file")))?;
                match rec {
                    RecordHead::Data { offset, len } => {
                        extents
                            .segment(offset, len)
                            .map_err(|e| in_entry(feed.corrupt_with(e)))?;
                        zeros(
                            &mut hasher,
                            offset - hashed_to,
                            frames_before + feed.frame_bytes,
                        );
                        let mut done = 0u64;
                        while done < len as u64 {
                            let bytes =
                                feed.take((len as u64 - done) as usize).map_err(in_entry)?;
                            if let Some(h) = hasher.as_mut() {
                                h.update(bytes);
                            }
                            if wanted {
                                visitor.data(offset + done, bytes)?;
                            }
                            done += bytes.len() as u64;
                        }
                        hashed_to = offset + len as u64;
                    }
                    RecordHead::End { size, digest } => {
                        extents
                            .end(size)
                            .map_err(|e| in_entry(feed.corrupt_with(e)))?;
                        let Some(digest) = digest else {
                            // Format 2's END: no digest; every byte was covered by the tags
                            // of the frames that held it.
                            return Ok((size, None));
                        };
                        zeros(
                            &mut hasher,
                            size - hashed_to,
                            frames_before + feed.frame_bytes,
                        );
                        match hasher.take() {
                            Some(h) if h.finalize().as_bytes() != &digest => {
                                return Err(in_entry(feed.digest_error(&meta.path)));
                            }
                            Some(_) => {}
                            None => unverified.push(crate::fs::escape_path(&meta.path)),
                        }
                        return Ok((size, Some(digest)));
                    }
                    RecordHead::Entry(_) => {
                        return Err(in_entry(feed.corrupt("an ENTRY record inside a file")));
                    }
                    RecordHead::Pad => unreachable!("next_non_pad skips PAD records"),
                }
            }
        })();
        match r {
            Ok((size, digest)) => {
                if wanted {
                    visitor.end(&meta, size)?;
                }
                summary.files += 1;
                summary.bytes += size;
                check.entry_done(
                    feed,
                    parsed,
                    summary.entries - 1,
                    IndexEntry {
                        meta,
                        size,
                        digest,
                        first_seq,
                        first_offset,
                        last_seq: feed.last_byte_seq(),
                    },
                )?;
            }
            Err(e) => {
                if wanted {
                    visitor.abort();
                }
                return Err(e);
            }
        }
    }
    summary.frames = feed.frames_done;
    summary.frame_bytes = frames_before + feed.frame_bytes;
    Ok(summary)
}

impl Check<'_> {
    /// Entry number `i` of the stream, just parsed: collected (entry-set mode) or compared
    /// with index entry `i`.
    fn entry_done(
        &self,
        feed: &Feed<'_>,
        parsed: &mut Vec<IndexEntry>,
        i: u64,
        e: IndexEntry,
    ) -> Result<()> {
        match self {
            Check::Set(_) => parsed.push(e),
            Check::Index(ix) => {
                if ix.get(i as usize) != Some(&e) {
                    return Err(feed.ar.sequence_error(
                        feed.ar.pos,
                        "index disagrees with the record stream".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The decoded record stream: reads data frames ahead into the pool and yields their bytes
/// in order, checking format 2's rules between blocks (stream offsets, groups, first-record
/// offsets, reference lengths against the index) and decoding referencing blocks with the
/// blocks before them.
struct Feed<'a> {
    ar: &'a mut Archive,
    pool: &'a mut FramePool,
    /// Frames submitted to the pool so far (the next frame's budget ticket).
    submitted: u64,
    /// The current block's buffer: its raw bytes are `block[base..]`, the next unread one is
    /// `block[at]`.
    block: Vec<u8>,
    /// Budget bytes the current block holds.
    block_held: u64,
    base: usize,
    at: usize,
    /// Seq of the current block (valid once one is loaded).
    cur_seq: Option<u64>,
    next_read_seq: u64,
    /// Bytes to drop from the start of the first delivered block (selective extraction).
    skip: usize,
    /// Blocks before this seq are decoded (a later block of their group references them)
    /// but not delivered.
    deliver_from: u64,
    /// (first, last) seq to read; None = all data frames until the first index frame.
    range: Option<(u64, u64)>,
    /// The first index frame's header once seen (sequential mode).
    stopped: bool,
    index_offset: u64,
    frames_done: u64,
    /// Bytes of the data frames loaded so far (header, body and tag).
    frame_bytes: u64,
    pending_index: bool,
    /// Format 2: stream offsets and the blocks a referencing block needs.
    group: Group,
    /// Format 2: the current block's first-record offset, and whether a record start in it
    /// was seen (checked against it) or the block is the first of a selective run (whose
    /// first record parsed is at `skip`, not necessarily the block's first).
    first_record: Option<u32>,
    first_checked: bool,
    /// Reference length of every block read (compared with the index's frame table).
    refs_seen: Vec<u32>,
    /// The index's frame table, when known before reading (selective runs).
    expected_refs: Option<&'a [u32]>,
    dec: Option<BlockDecoder>,
}

impl<'a> Feed<'a> {
    fn new(
        ar: &'a mut Archive,
        pool: &'a mut FramePool,
        range: Option<(u64, u64)>,
        deliver_from: u64,
    ) -> Self {
        let next_read_seq = range.map(|r| r.0).unwrap_or(0);
        Feed {
            ar,
            pool,
            submitted: 0,
            block: Vec::new(),
            block_held: 0,
            base: 0,
            at: 0,
            cur_seq: None,
            next_read_seq,
            skip: 0,
            deliver_from,
            range,
            stopped: false,
            index_offset: 0,
            frames_done: 0,
            frame_bytes: 0,
            pending_index: false,
            group: Group::default(),
            first_record: None,
            first_checked: true,
            refs_seen: Vec::new(),
            expected_refs: None,
            dec: None,
        }
    }

    fn corrupt(&self, problem: &str) -> Error {
        self.corrupt_with(FormatError::invalid("record stream", problem.to_string()))
    }

    fn corrupt_with(&self, e: FormatError) -> Error {
        if self.ar.protection.is_sealed() && !matches!(e, FormatError::NeedsNewer { .. }) {
            Error::AuthFailed {
                path: self.ar.path.clone(),
                check: AuthCheck::Structure,
            }
        } else {
            corrupt(&self.ar.path, self.ar.pos, e)
        }
    }

    fn digest_error(&self, path: &[u8]) -> Error {
        let p = String::from_utf8_lossy(path).into_owned();
        if self.ar.protection.is_sealed() {
            Error::AuthFailed {
                path: self.ar.path.clone(),
                check: AuthCheck::Structure,
            }
        } else {
            Error::Integrity {
                path: self.ar.path.clone(),
                what: format!("content digest of {p} does not match"),
            }
        }
    }

    /// (seq, offset) of the next byte.
    fn position(&mut self) -> (u64, u32) {
        match self.cur_seq {
            Some(s) if self.at < self.block.len() => (s, (self.at - self.base) as u32),
            Some(s) => (s + 1, 0),
            None => (self.deliver_from, self.skip as u32),
        }
    }

    fn last_byte_seq(&self) -> u64 {
        self.cur_seq.unwrap_or(0)
    }

    /// A record starts at the next byte: loads the block that holds it (false at the end of
    /// the stream) and, in format 2, checks it against the block's first-record offset.
    fn record_start(&mut self) -> Result<bool> {
        while self.at >= self.block.len() {
            if !self.next_block()? {
                return Ok(false);
            }
        }
        if !self.first_checked {
            self.first_checked = true;
            let at = (self.at - self.base) as u32;
            if self.first_record != Some(at) {
                return Err(self.corrupt_with(FormatError::invalid(
                    "block header",
                    format!(
                        "first record {:?} of block {}, but a record starts at {at}",
                        self.first_record,
                        self.cur_seq.unwrap_or(0)
                    ),
                )));
            }
        }
        Ok(true)
    }

    /// Format 2, on leaving the current block: a block in which no record started must say
    /// so.
    fn check_left_block(&self) -> Result<()> {
        if !self.first_checked && self.first_record.is_some() {
            return Err(self.corrupt_with(FormatError::invalid(
                "block header",
                format!(
                    "block {} says a record starts at {:?}, but none does",
                    self.cur_seq.unwrap_or(0),
                    self.first_record
                ),
            )));
        }
        Ok(())
    }

    /// Keeps the pool busy: reads frames while it has room for another job and the byte
    /// budget admits another frame (`archive::budget`).
    fn fill_pool(&mut self) -> Result<()> {
        while !self.stopped && self.pool.pool.has_capacity() && self.pool.budget.admits() {
            if let Some((_, last)) = self.range
                && self.next_read_seq > last
            {
                self.stopped = true;
                break;
            }
            let job = self.ar.read_frame()?;
            if job.header.kind == FrameKind::Index {
                if self.range.is_some() {
                    return Err(self
                        .ar
                        .sequence_error(job.offset, "index frame inside the data range".into()));
                }
                // End of the data frames: remember where, and rewind over this frame so the
                // index reader sees it.
                self.index_offset = job.offset;
                self.stopped = true;
                self.pending_index = true;
                self.ar.pending_frame = Some(job);
                break;
            }
            self.ar.check_last_flag(&job)?;
            if job.header.seq != self.next_read_seq {
                let (off, seq) = (job.offset, job.header.seq);
                return Err(self.ar.sequence_error(
                    off,
                    format!(
                        "expected data frame seq {}, found seq {seq}",
                        self.next_read_seq
                    ),
                ));
            }
            self.next_read_seq += 1;
            let mut job = job;
            job.ticket = self.submitted;
            self.submitted += 1;
            self.pool.budget.add_body(job.body.len() as u64);
            self.pool
                .pool
                .submit(job)
                .map_err(|e| Error::Crypto(e.to_string()))?;
        }
        Ok(())
    }

    /// Loads the next block to deliver; false at the end of the data. Blocks before
    /// `deliver_from` are decoded and kept for the references of the blocks after them.
    /// The current block is fully read when this is called: its budget bytes are given back
    /// first, so the budget's room is there for the frames still to come. (Blocks the group
    /// keeps for a later block's reference are no longer counted: at most
    /// `MAX_REFERENCE_LEN` bytes of them.)
    fn next_block(&mut self) -> Result<bool> {
        loop {
            if self.cur_seq.is_some_and(|s| s >= self.deliver_from) {
                self.check_left_block()?;
            }
            self.pool
                .budget
                .release(std::mem::take(&mut self.block_held));
            self.fill_pool()?;
            let Some((offset, h, r)) = self
                .pool
                .pool
                .next_result()
                .map_err(|e| Error::Crypto(e.to_string()))?
            else {
                return Ok(false);
            };
            let mut decoded = r.map_err(|f| self.ar.fault(offset, h.seq, f))?;
            let info = decoded.info;
            if self.ar.version == Version::V2 {
                let problem = self.group.check(&info).err().or_else(|| {
                    self.expected_refs
                        .and_then(|t| t.get(h.seq as usize))
                        .filter(|&&r| r != info.reference_len)
                        .map(|r| {
                            FormatError::invalid(
                                "block header",
                                format!(
                                    "reference length {} where the index says {r}",
                                    info.reference_len
                                ),
                            )
                        })
                });
                if let Some(p) = problem {
                    return Err(self.ar.fault(offset, h.seq, FrameFault::Format(p)));
                }
            }
            self.refs_seen.push(info.reference_len);
            // The block left behind: kept if this one references it, else recycled.
            let old = std::mem::take(&mut self.block);
            let prev = (self.cur_seq.is_some() && !old.is_empty()).then_some((old, self.base));
            let buffers = self.ar.buffers.clone();
            self.group.advance(prev, &info, &mut |b, start| {
                if start == 0 {
                    buffers.blocks.give(b);
                } else {
                    buffers.bodies.give(b);
                }
            });
            if decoded.pending {
                let dec = match self.dec.as_mut() {
                    Some(d) => d,
                    None => self
                        .dec
                        .insert(BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?),
                };
                let out = self.ar.buffers.blocks.take();
                let raw = self
                    .group
                    .resolve(dec, &mut decoded, out)
                    .map_err(|(f, out)| {
                        self.ar.buffers.blocks.give(out);
                        self.ar.fault(offset, h.seq, f)
                    })?;
                let body = std::mem::replace(&mut decoded.buf, raw);
                self.ar.buffers.bodies.give(body);
                decoded.start = 0;
                decoded.pending = false;
            }
            self.block = decoded.buf;
            self.block_held = decoded.held;
            self.base = decoded.start;
            self.cur_seq = Some(h.seq);
            self.frames_done += 1;
            self.frame_bytes += h.frame_len();
            self.first_record = info.first_record;
            if h.seq < self.deliver_from {
                // Not delivered: only there for the references of the blocks after it.
                self.at = self.block.len();
                self.first_checked = true;
                continue;
            }
            let skip = std::mem::take(&mut self.skip);
            self.at = self.base + skip.min(self.block.len() - self.base);
            self.first_checked = self.ar.version == Version::V1;
            if skip > 0 && !self.first_checked {
                // A selective run starts at an entry's record, which need not be the first
                // record of its block, but is one.
                self.first_checked = true;
                if self.first_record.is_none_or(|f| f as usize > skip) {
                    return Err(self.corrupt_with(FormatError::invalid(
                        "block header",
                        format!(
                            "first record {:?} of block {} is after the entry at {skip}",
                            self.first_record, h.seq
                        ),
                    )));
                }
            }
            self.fill_pool()?;
            return Ok(true);
        }
    }

    /// The next up to `max` bytes (at least 1) of the stream, borrowed from the current
    /// block (no copy): fewer than `max` where the block ends.
    fn take(&mut self, max: usize) -> Result<&[u8]> {
        while self.at >= self.block.len() {
            if !self.next_block()? {
                return Err(self.corrupt("the stream ends inside a record"));
            }
        }
        let n = max.min(self.block.len() - self.at);
        let start = self.at;
        self.at += n;
        Ok(&self.block[start..start + n])
    }

    /// Drains the pool and reads past the rest of the data frames; returns (data frame count,
    /// offset of the first index frame). Sequential mode only.
    fn finish_data(&mut self) -> Result<(u64, u64)> {
        if self.at < self.block.len() {
            return Err(self.corrupt("bytes left over after the last record"));
        }
        while self.next_block()? {
            if self.block.len() > self.base {
                return Err(self.corrupt("bytes left over after the last record"));
            }
        }
        if !self.pending_index {
            return Err(corrupt(
                &self.ar.path,
                self.ar.pos,
                FormatError::invalid("archive", "no index after the data frames"),
            ));
        }
        Ok((self.next_read_seq, self.index_offset))
    }
}

/// Errors inside the feed: a record-level format error (mapped with the archive path by
/// [`next_record`]) or any other error.
enum FeedError {
    Format(FormatError),
    Other(Error),
}

impl From<FormatError> for FeedError {
    fn from(e: FormatError) -> Self {
        FeedError::Format(e)
    }
}

impl From<Error> for FeedError {
    fn from(e: Error) -> Self {
        FeedError::Other(e)
    }
}

fn next_record(feed: &mut Feed<'_>) -> Result<Option<RecordHead>> {
    let version = feed.ar.version;
    record::read_record(feed, version).map_err(|e| match e {
        FeedError::Format(f) => feed.corrupt_with(f),
        FeedError::Other(e) => e,
    })
}

impl StreamSource for Feed<'_> {
    type Error = FeedError;
    fn fill(&mut self, buf: &mut [u8]) -> std::result::Result<bool, FeedError> {
        let mut done = 0;
        while done < buf.len() {
            if self.at >= self.block.len() {
                if !self.next_block()? {
                    if done == 0 {
                        return Ok(false);
                    }
                    return Err(self.corrupt("the stream ends inside a record").into());
                }
                continue;
            }
            let n = (buf.len() - done).min(self.block.len() - self.at);
            buf[done..done + n].copy_from_slice(&self.block[self.at..self.at + n]);
            self.at += n;
            done += n;
        }
        Ok(true)
    }
}
