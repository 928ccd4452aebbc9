//! The archive reader: opens the header (and the file key), then reads frames in order,
//! verifies and decodes them in parallel, parses the record stream and hands entries and
//! verified content to a [`Visitor`] (the extractor, `test`, `--stdout`).
//!
//! Nothing reaches a visitor before its frame's tag verified (encrypt-then-MAC: the MAC is
//! checked before decryption), and a file's END is reported only after its BLAKE3 digest
//! matched. The index and footer are checked against what the stream held, so an archive
//! that scans clean is exactly the archive that was written.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::budget::ByteBudget;
use super::hash_zeros;
use super::pipeline::{Buffers, OrderedPool};
use crate::codec::{BlockDecoder, Codec, decode_stored_in_place};
use crate::crypto::frame::Protection;
use crate::crypto::keys::{ArchiveId, Subkeys};
use crate::crypto::stanza::{Identity, unwrap_versioned};
use crate::error::{AuthCheck, Error, Result};
use crate::format::entry::EntryKind;
use crate::format::footer::{FOOTER_LEN, Footer};
use crate::format::frame::{
    BLOCK_HEADER_LEN, BlockHeader, FRAME_HEADER_LEN, FrameHeader, FrameKind, TAG_LEN,
};
use crate::format::header::{self, Header, PREFIX_LEN, Prefix, PrefixError};
use crate::format::index::{Index, IndexEntry, MAX_INDEX_LEN};
use crate::format::limits::hole_hash_allowance;
use crate::format::record::{self, ExtentCheck, RecordHead, StreamSource};
use crate::format::{EntryMeta, FormatError};

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

enum Input {
    File(BufReader<File>),
    Stream(Box<dyn Read + Send>),
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Input::File(f) => f.read(buf),
            Input::Stream(s) => s.read(buf),
        }
    }
}

/// An opened archive: header parsed and authenticated.
pub struct Archive {
    input: Input,
    path: PathBuf,
    header: Header,
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

/// What went wrong with one frame, before the caller adds the archive path.
#[derive(Debug)]
enum FrameFault {
    Tag,
    Format(FormatError),
    Codec(String),
    /// The scan ended while the frame waited for room in the byte budget.
    Stopped,
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
    let mut input = if path == Path::new("-") {
        Input::Stream(Box::new(std::io::stdin()))
    } else {
        let f = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        Input::File(BufReader::with_capacity(1 << 20, f))
    };
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

fn corrupt(path: &Path, offset: u64, source: FormatError) -> Error {
    Error::Corrupt {
        path: path.into(),
        offset,
        source,
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
}

/// Reads the header and (for a file) the footer without any key.
pub fn facts(path: &Path) -> Result<ArchiveFacts> {
    let (header, bytes, input) = read_header(path)?;
    let header_len = bytes.len() as u64;
    let mut footer = None;
    let mut size = None;
    if let Input::File(mut f) = input {
        let len = f
            .seek(SeekFrom::End(0))
            .map_err(|e| Error::io(path, "seek", e))?;
        size = Some(len);
        if len >= header_len + FOOTER_LEN as u64 {
            let mut fb = [0u8; FOOTER_LEN];
            f.seek(SeekFrom::Start(len - FOOTER_LEN as u64))
                .map_err(|e| Error::io(path, "seek", e))?;
            f.read_exact(&mut fb)
                .map_err(|e| Error::io(path, "read", e))?;
            let (ft, tag) =
                Footer::parse(&fb).map_err(|e| corrupt(path, len - FOOTER_LEN as u64, e))?;
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
    Ok(ArchiveFacts {
        header,
        header_len,
        size,
        footer,
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

/// A decoded block: its raw bytes are `buf[start..]` (a stored block is decoded in place,
/// after its block header).
struct Decoded {
    buf: Vec<u8>,
    start: usize,
    /// Bytes taken from the byte budget for it (0 outside a pool).
    held: u64,
}

impl Decoded {
    fn raw(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

type FrameResult = (u64, FrameHeader, std::result::Result<Decoded, FrameFault>);

/// Worker: verifies (and decrypts) one frame, then decodes its block. A stored block is
/// unfiltered in place in the body; a zstd block is decoded into a buffer from
/// `buffers.blocks`, and the body goes back to `buffers.bodies`. With a `budget`, the
/// decoded block's bytes are taken from it (in ticket order, waiting for room) before it is
/// decoded, and the body's bytes given back after.
fn open_frame(
    dec: &mut BlockDecoder,
    protection: &Protection,
    archive_id: &ArchiveId,
    buffers: &ReadBuffers,
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
        let bh = BlockHeader::parse(&job.body).map_err(FrameFault::Format)?;
        let codec_fault = |e: crate::codec::CodecError| FrameFault::Codec(e.to_string());
        // A stored block becomes the body itself; a zstd block needs raw_len more bytes.
        let held = if bh.codec == Codec::Store {
            body_len
        } else {
            u64::from(bh.raw_len)
        };
        if let Some(b) = budget {
            took_turn = true;
            b.acquire(job.ticket, held)
                .map_err(|_| FrameFault::Stopped)?;
        }
        let held = if budget.is_some() { held } else { 0 };
        if bh.codec == Codec::Store {
            let r = decode_stored_in_place(
                bh.filter,
                bh.filter_start,
                &mut job.body[BLOCK_HEADER_LEN..],
                bh.raw_len as usize,
            );
            if let Err(e) = r {
                budget.inspect(|b| b.release(held));
                return Err(codec_fault(e));
            }
            return Ok(Decoded {
                buf: std::mem::take(&mut job.body),
                start: BLOCK_HEADER_LEN,
                held,
            });
        }
        let mut out = buffers.blocks.take();
        let r = dec.decode(
            bh.codec,
            bh.filter,
            bh.filter_start,
            &job.body[BLOCK_HEADER_LEN..],
            bh.raw_len as usize,
            &mut out,
        );
        if let Err(e) = r {
            buffers.blocks.give(out);
            budget.inspect(|b| b.release(held));
            return Err(codec_fault(e));
        }
        Ok(Decoded {
            buf: out,
            start: 0,
            held,
        })
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
            let version = <&[u8; PREFIX_LEN]>::try_from(&bytes[..PREFIX_LEN])
                .ok()
                .and_then(|b| header::Prefix::parse(b).ok())
                .map_or(header::VERSION, |p| p.version);
            let key = unwrap_versioned(
                &opts.identities,
                &header.stanzas,
                &header.archive_id,
                version,
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
                _ => Error::AuthFailed {
                    path: path.into(),
                    check: AuthCheck::NoStanzaOpened,
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

    /// True when the input can seek (a file, not a pipe).
    pub fn seekable(&self) -> bool {
        matches!(self.input, Input::File(_))
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
            FrameFault::Format(e) => corrupt(&self.path, offset, e),
            FrameFault::Codec(m) => {
                corrupt(&self.path, offset, FormatError::invalid("block payload", m))
            }
            FrameFault::Stopped => Error::Crypto(format!(
                "internal error: frame {seq} was stopped while the scan still needed it"
            )),
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
        let header = FrameHeader::parse(&hb).map_err(|e| corrupt(&self.path, offset, e))?;
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
        match &mut self.input {
            Input::File(f) => {
                f.seek(SeekFrom::Start(offset))
                    .map_err(|e| Error::io(&self.path, "seek", e))?;
                self.pos = offset;
                Ok(())
            }
            Input::Stream(_) => Err(Error::Usage(format!(
                "{}: cannot seek in a stream",
                self.path.display()
            ))),
        }
    }

    fn new_pool(&self) -> FramePool {
        let protection = Arc::clone(&self.protection);
        let id = self.header.archive_id;
        let buffers = self.buffers.clone();
        let budget = Arc::new(ByteBudget::with_base(self.jobs, self.in_flight_base));
        let worker_budget = Arc::clone(&budget);
        // The header's block size only sizes the pool's job count (a performance hint); the
        // memory bound is the byte budget, taken from the frames actually read.
        let pool = OrderedPool::new(
            self.jobs,
            super::pipeline::max_in_flight(self.jobs, self.header.block_size as usize),
            || BlockDecoder::new().expect("zstd decoder context"),
            move |dec: &mut BlockDecoder, job: FrameJob| {
                open_frame(dec, &protection, &id, &buffers, Some(&worker_budget), job)
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
        self.read_index_and_footer(seq, index_offset)
    }

    /// After the data frames of a stream: reads the index frames and the footer, requires the
    /// end of the input after it, and checks the footer and frame table against what was
    /// read (`data_frames` frames, the first index frame at `index_offset`).
    fn read_index_and_footer(&mut self, data_frames: u64, index_offset: u64) -> Result<Index> {
        let index = self.read_index_frames(data_frames, None, u64::MAX)?;
        let foot_at = self.pos;
        let mut fb = [0u8; FOOTER_LEN];
        self.read_exact_at_pos(&mut fb, "footer")?;
        let footer = self.check_footer(foot_at, &fb)?;
        let mut extra = [0u8; 1];
        if read_full(&mut self.input, &mut extra).map_err(|e| Error::io(&self.path, "read", e))?
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
        Ok(index)
    }

    /// Reads and verifies the footer and the index of a seekable archive.
    pub fn read_index(&mut self) -> Result<(Footer, Index)> {
        let len = match &mut self.input {
            Input::File(f) => f
                .seek(SeekFrom::End(0))
                .map_err(|e| Error::io(&self.path, "seek", e))?,
            Input::Stream(_) => {
                return Err(Error::Usage(
                    "reading the index needs a seekable archive".into(),
                ));
            }
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
            return Err(corrupt(
                &self.path,
                foot_at,
                FormatError::invalid("footer", "index offset outside the archive"),
            ));
        }
        self.seek_to(footer.index_offset)?;
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
        let (footer, tag) = Footer::parse(fb).map_err(|e| corrupt(&self.path, at, e))?;
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
        if index.frame_body_lens.len() as u64 != footer.data_frames {
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
                None,
                job,
            );
            let decoded = r.map_err(|f| self.fault(offset, h.seq, f))?;
            let raw = decoded.raw();
            if bytes.len() as u64 + raw.len() as u64 > MAX_INDEX_LEN {
                return Err(corrupt(
                    &self.path,
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
        Index::parse(&bytes).map_err(|e| corrupt(&self.path, self.pos, e))
    }

    /// Reads the whole archive front to back (works on pipes): every data frame is verified and
    /// decoded, every record parsed, every file digest checked, then the index and footer are
    /// checked against the stream. Entries the visitor does not want are verified but not
    /// passed on.
    pub fn scan(&mut self, visitor: &mut dyn Visitor) -> Result<ScanSummary> {
        let mut pool = self.new_pool();
        let mut feed = Feed::new(self, &mut pool, None);
        let mut parsed = Vec::new();
        let mut summary = parse_records(&mut feed, visitor, &mut parsed, None, (0, 0))?;
        let (data_frames, index_offset) = feed.finish_data()?;
        summary.peak_held = pool.budget.peak();
        drop(pool);
        // Then the index frames and the footer.
        let index = self.read_index_and_footer(data_frames, index_offset)?;
        if index.entries != parsed {
            return Err(self.sequence_error(
                index_offset,
                "index disagrees with the record stream".into(),
            ));
        }
        Ok(summary)
    }

    /// Extracts only the index entries at `wanted` positions (seekable archives): decodes just
    /// the frames that hold them.
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
            self.seek_to(offsets[first.first_seq as usize])?;
            let mut pool = self.new_pool();
            let mut feed = Feed::new(self, &mut pool, Some((first.first_seq, last_seq)));
            feed.skip = first.first_offset as usize;
            let mut filter = SelectVisitor {
                inner: visitor,
                base: wanted[i],
                want: &want_set,
                n: 0,
            };
            let mut parsed = Vec::new();
            let r = parse_records(
                &mut feed,
                &mut filter,
                &mut parsed,
                Some(run_entries.len()),
                (total.holes_hashed, total.frame_bytes),
            );
            drop(feed);
            total.peak_held = total.peak_held.max(pool.budget.peak());
            drop(pool);
            let s = r?;
            let expected: Vec<IndexEntry> = run_entries.into_iter().cloned().collect();
            if parsed != expected {
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

/// Parses records from the feed, verifying digests and passing wanted entries on. Collects
/// what it parsed as index entries (for the comparison with the index). With `limit`, stops
/// after that many entries. `holes` carries (hole bytes hashed, data frame bytes read) from
/// earlier runs of the same scan.
fn parse_records(
    feed: &mut Feed<'_>,
    visitor: &mut dyn Visitor,
    parsed: &mut Vec<IndexEntry>,
    limit: Option<usize>,
    holes: (u64, u64),
) -> Result<ScanSummary> {
    let (hashed_before, frames_before) = holes;
    let mut summary = ScanSummary {
        holes_hashed: hashed_before,
        ..ScanSummary::default()
    };
    loop {
        if limit.is_some_and(|l| parsed.len() >= l) {
            break;
        }
        let (first_seq, first_offset) = feed.position();
        let Some(rec) = next_record(feed)? else { break };
        let meta = match rec {
            RecordHead::Entry(m) => m,
            _ => return Err(feed.corrupt("a DATA or END record outside a file")),
        };
        summary.entries += 1;
        let wanted = visitor.wants(&meta);
        if meta.kind != EntryKind::File {
            if wanted {
                visitor.entry(&meta)?;
            }
            parsed.push(IndexEntry {
                meta,
                size: 0,
                digest: [0; 32],
                first_seq,
                first_offset,
                last_seq: feed.last_byte_seq(),
            });
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
        let r = (|| -> Result<(u64, [u8; 32])> {
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
                let rec = next_record(feed)
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
                        return Ok((size, digest));
                    }
                    RecordHead::Entry(_) => {
                        return Err(in_entry(feed.corrupt("an ENTRY record inside a file")));
                    }
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
                parsed.push(IndexEntry {
                    meta,
                    size,
                    digest,
                    first_seq,
                    first_offset,
                    last_seq: feed.last_byte_seq(),
                });
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

/// The decoded record stream: reads data frames ahead into the pool and yields their bytes
/// in order.
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
    /// Bytes to drop from the start of the first block (selective extraction).
    skip: usize,
    /// (first, last) seq to read; None = all data frames until the first index frame.
    range: Option<(u64, u64)>,
    /// The first index frame's header once seen (sequential mode).
    stopped: bool,
    index_offset: u64,
    frames_done: u64,
    /// Bytes of the data frames loaded so far (header, body and tag).
    frame_bytes: u64,
    pending_index: bool,
}

impl<'a> Feed<'a> {
    fn new(ar: &'a mut Archive, pool: &'a mut FramePool, range: Option<(u64, u64)>) -> Self {
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
            range,
            stopped: false,
            index_offset: 0,
            frames_done: 0,
            frame_bytes: 0,
            pending_index: false,
        }
    }

    fn corrupt(&self, problem: &str) -> Error {
        self.corrupt_with(FormatError::invalid("record stream", problem.to_string()))
    }

    fn corrupt_with(&self, e: FormatError) -> Error {
        if self.ar.protection.is_sealed() {
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
            None => (self.next_read_seq, self.skip as u32),
        }
    }

    fn last_byte_seq(&self) -> u64 {
        self.cur_seq.unwrap_or(0)
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

    /// Loads the next decoded block; false at the end of the data. The current block is
    /// fully read when this is called: it is given back (buffer and budget bytes) first, so
    /// the budget's room is there for the frames still to come.
    fn next_block(&mut self) -> Result<bool> {
        let old = std::mem::take(&mut self.block);
        if self.base == 0 {
            self.ar.buffers.blocks.give(old);
        } else {
            self.ar.buffers.bodies.give(old);
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
        let decoded = r.map_err(|f| self.ar.fault(offset, h.seq, f))?;
        self.block = decoded.buf;
        self.block_held = decoded.held;
        self.base = decoded.start;
        let skip = std::mem::take(&mut self.skip);
        self.at = self.base + skip.min(self.block.len() - self.base);
        self.cur_seq = Some(h.seq);
        self.frames_done += 1;
        self.frame_bytes += h.frame_len();
        self.fill_pool()?;
        Ok(true)
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
    record::read_record(feed).map_err(|e| match e {
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
