//! The archive reader: opens the header (and the file key), then reads frames in order,
//! verifies and decodes them in parallel, parses the record stream and hands entries and
//! verified content to a [`Visitor`] (the extractor, `test`, `--stdout`).
//!
//! Nothing reaches a visitor before its frame's tag verified (encrypt-then-MAC: the MAC is
//! checked before decryption), and a file's END is reported only after its BLAKE3 digest
//! matched. The index and footer are checked against what the stream held, so an archive
//! that scans clean is exactly the archive that was written.
//!
//! Split along its seams: `open` (the header, version dispatch, the file key, `info`'s
//! facts), `frames` (frame I/O, the parallel verify+decode pool, the errors a frame can
//! raise), `index` (the index and footer, the entry-set rules on an index), `scan` (whole and
//! selective scans), `records` (record parsing for v1 and v2 against the entry-set rules or
//! the index), `feed` (the decoded record stream across blocks and groups), `archive_end`
//! (where an archive whose recovery section is not found ends, without a key), `base`,
//! `base_binding` and `base_ref` (a delta archive's base: regions, binding, referenced
//! entries) and `salvage`
//! (reading past damage, with the index) and
//! `resync` (without it: resynchronising on the next good frame).

mod archive_end;
mod base;
mod base_binding;
mod base_cache;
mod base_fault;
mod base_fetch;
mod base_ref;
mod base_region;
mod base_walk;
mod feed;
mod feed_faults;
mod frames;
mod header_fix;
mod header_read;
pub use header_fix::HeaderFix;
mod hashing;
mod index;
mod moved;
mod open;
mod prefetch;
mod records;
mod rekey;
mod replay;
mod resync;
mod salvage;
mod scan;
mod second_look;
mod signed;
mod spool;
mod stream_end;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::blocks::{Decoded, FrameFault, block_info, decode_body};
use super::budget::ByteBudget;
use super::hash_zeros;
use super::pipeline::{Buffers, OrderedPool};
use crate::codec::{BlockDecoder, Codec};
use crate::crypto::frame::Protection;
use crate::crypto::keys::{ArchiveId, Subkeys};
use crate::crypto::stanza::{Identity, unwrap_among};
use crate::error::{AuthCheck, BaseError, Error, Result};
use crate::format::entry::EntryKind;
use crate::format::entry_set::EntrySet;
use crate::format::footer::{FOOTER_LEN, Footer};
use crate::format::frame::{FRAME_HEADER_LEN, FrameHeader, FrameKind, TAG_LEN};
use crate::format::header::{self, Header, PREFIX_LEN, Prefix, PrefixError};
use crate::format::index::{Index, IndexEntry, MAX_INDEX_LEN};
use crate::format::limits::hole_hash_allowance;
use crate::format::record::{self, ExtentCheck, RecordHead, StreamSource};
use crate::format::{EntryMeta, FormatError, Version};

pub use archive_end::{ArchiveEnd, Part, SectionLost, archive_end};
pub use base::{BINDING_CONTEXT, BaseArchive, BaseFault, DEFAULT_CACHE_BUDGET, hex as base_hex};
use frames::{FrameJob, FramePool};
use header_read::corrupt;
pub use header_read::{ArchiveFacts, TRAILING_SEARCH, facts, read_header_only};
pub use rekey::{RekeyOptions, RekeySummary};
pub use resync::{MAC_BUDGET_FACTOR, StreamSalvage};
pub use salvage::{BASE_UNUSABLE, BadFrame, DamagedEntry, Salvage};
pub use signed::{VerifiedSignature, walk_and_verify};
pub use stream_end::SectionProblem;

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
#[derive(Default, Clone)]
pub struct OpenOptions {
    /// Keys to try against the stanzas. When any is given, an unencrypted archive is refused
    /// ([`Error::NotEncrypted`]) unless `allow_unencrypted`: a key means the caller expects
    /// an archive only a key holder could have written.
    pub identities: Vec<Identity>,
    /// Decode worker threads (0 = one per core but one); capped at the cores minus one, since
    /// the reading thread hashes and writes (see `open.rs`).
    pub jobs: usize,
    /// Read an unencrypted archive even though `identities` is not empty (the CLI's
    /// `--allow-unencrypted`, and a password that came only from `KRYPTA_PASSWORD`).
    pub allow_unencrypted: bool,
    /// Base of the byte budget for frames in flight, bytes (`archive::budget`); `None` is
    /// 512 MiB. The budget is at least `(jobs + 1)` times the largest block read.
    pub in_flight_budget: Option<u64>,
    /// Signers to require (`--signer`, any of them): an archive that is unsigned or signed
    /// by another key is refused, and every byte is checked against the signature before
    /// anything is used (docs/SECURITY.md, "Signatures"). Empty: a signed archive's
    /// signature is still checked.
    pub signers: Vec<crate::crypto::sign::SignerPublic>,
    /// The base of a delta archive (`--base`): checked against the header's delta base
    /// extension when the archive is opened ([`BaseError::Wrong`]), then read by the workers
    /// for the archive's `zstd+base` blocks. Refused for an archive that is not a delta.
    pub base: Option<Arc<BaseArchive>>,
}

/// Where the archive bytes come from: a file, stdin or an object (see [`crate::store`]).
type Input = Box<dyn crate::store::Source>;

/// The "frame" of an edit undone between the index and the footer ([`Archive::undone_edit`]).
pub const AFTER_INDEX: u64 = u64::MAX;

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
    /// The offset, sequence number and end of the last frame whose head was read
    /// sequentially (None before any): names the frame a stream broke in when the error
    /// cannot (`spool`), and where the spooled rest's numbering starts (`resync`).
    last_head: Option<(u64, u64, u64)>,
    /// The offset and sequence number of the last frame that failed ([`Archive::fault`];
    /// `u64::MAX` before any): names the frame of an error that carries only text (an
    /// unencrypted frame's checksum mismatch) when a pipe is spooled past it (`spool`).
    last_fault: [std::sync::atomic::AtomicU64; 2],
    /// A frame read ahead by the data feed that belongs to the index.
    pending_frame: Option<FrameJob>,
    /// Recycled frame bodies and decoded blocks, shared with the workers.
    buffers: ReadBuffers,
    /// Base of the byte budget, bytes.
    in_flight_base: u64,
    /// A signed archive's signature: verified first, or being gathered (`signed`).
    signature: Option<signed::SigState>,
    /// Read with `--signer`: every frame must be what was signed, so a frame whose tag does
    /// not verify its body is a refused signature (exit 8), not damage to salvage past — from
    /// a stream as from a file (`signed`, "strict").
    strict_signer: bool,
    /// The file key the stanzas gave (encrypted archives), for `rekey` (zeroized on drop).
    file_key: Option<crate::crypto::keys::FileKey>,
    /// Where a salvage without the index starts walking: the first frame, or, once the rest
    /// of a pipe was spooled after damage (`spool`), the first spooled byte.
    walk_from: u64,
    /// A damaged region before `walk_from` that the walk reports first (the bytes a pipe
    /// gave before the damage was found: `spool`).
    lost_before_walk: Option<BadFrame>,
    /// Of a stream scanned front to back: where its data frames ended (the first index
    /// frame's offset), once every one was read and verified ([`Archive::index_alone`]).
    data_end: Option<u64>,
    /// The base of a delta archive, checked against the header ([`Archive::set_base`]).
    base: Option<Arc<BaseArchive>>,
    /// An announced recovery section not used because more bytes are missing than it can
    /// rebuild: (missing, written, rebuildable) (`store::healing::missing_beyond_recovery`).
    missing_beyond_recovery: Option<(u64, u64, u64)>,
    /// One insertion or removal undone without recovery data (`moved`): where, bytes
    /// inserted (negative: removed), and the sequence number of the frame there
    /// ([`AFTER_INDEX`] for bytes inserted between the index and the footer).
    undone_edit: Option<(u64, i64, u64)>,
    /// One flipped bit of the header, undone by its tag (`header_fix`).
    header_fix: Option<header_fix::HeaderFix>,
    /// The base given is damaged: why its binding could not be checked
    /// ([`Archive::base_damage`]).
    base_damage: Option<String>,
    /// Of a delta archive read from a stream: the bytes of the frames read ahead of the one
    /// being delivered (`replay`).
    replay: Option<Arc<std::sync::Mutex<replay::Replay>>>,
    /// The data frame a spooled rest starts with when `replay` kept it
    /// ([`Archive::replayed_from`]).
    replayed_from: Option<u64>,
    /// A spool of the rest of a damaged stream stopped before its file system filled: the
    /// directory, the stream offset it stopped at, the bytes free then
    /// ([`Archive::spool_stopped`]).
    spool_stopped: Option<(std::path::PathBuf, u64, u64)>,
    /// Bytes read after the footer of a stream (at, count, all zero): [`Archive::trailing`].
    stream_trailing: Option<(u64, u64, bool)>,
    /// Of a stream with a recovery section: what is wrong with it, if anything
    /// ([`Archive::stream_section_problem`]).
    stream_section: Option<stream_end::SectionProblem>,
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
    /// Bytes the data frames read decoded to (their raw blocks: file contents and entry
    /// records), over all runs of the scan. `x`'s summary shows `frame_bytes` as a share of
    /// it: how well what was read compressed, whatever part of it was written.
    pub block_bytes: u64,
    /// The fingerprint of the signer whose signature verified (`test`; a signed archive).
    pub signer: Option<[u8; 32]>,
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
