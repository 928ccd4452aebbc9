//! The base of a delta archive (docs/FORMAT.md §16): opened with its own keys, bound by id
//! and binding digest, and read by region — the decoded bytes of a run of its data frames —
//! for the `zstd+base` blocks of a delta archive, on the writer's and the reader's workers.
//!
//! Design (why it is so):
//! - **Binding.** `BLAKE3-DK("krypta v2 delta base binding", id ‖ u64 F ‖ tag_0 ‖ … ‖
//!   tag_{F−1})` over the tags of every data and index frame, read from the frames where they
//!   lie (one 32-byte read per frame, no body read). A frame tag is a MAC or checksum of the
//!   archive id, the frame's head (its sequence number) and its body, so the binding changes
//!   when any frame of the base changes — a file's content, an entry, the index — and not
//!   when only the header does: a rekeyed base (`krypta rekey` keeps the file key and the
//!   frames) stays a valid base. The footer is not hashed: it repeats what the frames fix.
//! - **Regions.** A region is `(seq, offset, len)`: `len` decoded bytes starting `offset`
//!   bytes into data frame `seq`'s block and running on through the frames after it. Each
//!   frame is read (`Source::read_at`, so the workers share one source; from object storage,
//!   whole frames ahead in one request when read in order: `base_fetch`), its tag verified
//!   with the base's key before it is decrypted, and decoded; a damaged frame is an error
//!   naming the base, the frame and the byte, never bytes.
//! - **Cache and prefetch**: decoded base blocks are cached and decoded ahead by a thread of
//!   the base's own (`base_cache`, which says why and at what memory cost).
//! - **A damaged base** (docs/FORMAT.md §16.4), opened to read a delta archive
//!   ([`BaseArchive::open_to_read`]): when its index or footer cannot be read (cut short,
//!   zeros over them), its data frames are found by the resynchronising walk of a salvage
//!   without index (`resync`), and the binding cannot be computed ([`BaseArchive::unchecked`]
//!   says why); when the index verifies but the binding differs, [`BaseArchive::damaged_frames`]
//!   tells damage (frames that fail their tags: the binding hashes the tags as they lie)
//!   from another archive of the same id (every frame verifies: refused). Why a base whose
//!   binding cannot be checked may still be read: it has the id the delta archive names
//!   (random per archive; a reproducible unencrypted one, FORMAT §12.4, is shared by every
//!   archive made with the same SOURCE_DATE_EPOCH, so such a base is refused when damaged:
//!   [`BaseError::Uncheckable`]), every base
//!   frame used verifies its own tag (with the base's key when encrypted), and every file
//!   read from it is checked by the digest the delta archive stores (and, with the delta's
//!   index, compared with it before it gets its name: `records`). What the damage costs is
//!   named per delta frame or file, exit 9, as for a damaged frame of a bound base. A base
//!   whose header cannot be read is refused as before: without it there is no id or key.
//!   Writing a delta (`c --base`) refuses any damaged base.
//! - **Chains** are refused: a base that is itself a delta archive cannot be a base
//!   ([`BaseArchive::open`]), so a region never needs a second base. A base whose frames
//!   reference earlier frames of their own stream (format 2 groups, reference length > 0)
//!   is refused the same way (no krypta writer writes them today).

use std::sync::Mutex;

use super::base_binding::{binding_of, fetch_tags, read_exact_at, read_tags, tag_offsets};
use super::base_cache::Cache;
pub use super::base_cache::DEFAULT_CACHE_BUDGET;
pub use super::base_fault::BaseFault;
use super::base_fetch::Window;
use super::base_walk::{MISSING_FRAME, walked_entries, walked_index};
use super::*;
use crate::codec::huge::HugeBuf;
use crate::format::extension::Extension;

/// BLAKE3 derive-key context of the base binding (docs/FORMAT.md §16.1).
pub const BINDING_CONTEXT: &str = "krypta v2 delta base binding";

/// An opened base archive. See the module doc.
pub struct BaseArchive {
    pub(super) path: PathBuf,
    pub(super) id: ArchiveId,
    binding: [u8; 32],
    /// Where the tags the binding covers lie (`base_binding::tag_offsets`; empty when the
    /// binding could not be computed).
    pub(super) at_tags: Vec<u64>,
    version: Version,
    protection: Arc<Protection>,
    pub(super) input: Mutex<Input>,
    /// Frames read ahead from object storage (`base_fetch`).
    pub(super) window: Mutex<Window>,
    /// The source's second looks (`second_look`; None for a local base).
    pub(super) refetch: Option<Arc<dyn crate::store::Refetch>>,
    /// Its lock-free ranged reads, when it repairs nothing on the way (`base_fetch`).
    pub(super) direct: Option<Arc<dyn crate::store::Refetch>>,
    /// Byte offset of each data frame.
    pub(super) offsets: Vec<u64>,
    index: Index,
    /// Decoded blocks (`base_cache`).
    pub(super) cache: Mutex<Cache>,
    /// Bytes of decoded blocks the cache keeps at most.
    pub(super) cache_budget: u64,
    /// Base frames decoded (cache misses), for tests and `-v`.
    pub(super) decoded: std::sync::atomic::AtomicU64,
    /// The base's block size (its header's): estimates how many frames a region spans.
    pub(super) block_size: u32,
    /// Why the binding could not be computed (the base is damaged: module doc); None when
    /// it was.
    pub(super) unchecked: Option<String>,
    /// Its id is a reproducible archive's (unencrypted, derived from its creation time:
    /// docs/FORMAT.md §12.4), which another archive can share.
    reproducible: bool,
    /// One flipped bit of its header, undone by its tag (`header_fix`).
    header_fix: Option<HeaderFix>,
    /// Bytes inserted or removed in one place, undone ([`Archive::undone_edit`]).
    undone_edit: Option<(u64, i64, u64)>,
    /// Whether it is encrypted.
    encrypted: bool,
    /// [`BaseArchive::set_shared_password`] was noted of this encrypted base.
    pub(crate) shared_password: bool,
    /// Workers that ask for regions at the same time ([`BaseArchive::shared`]).
    pub(super) workers: usize,
    /// Frames for the prefetch thread ([`BaseArchive::shared`]; none without one).
    pub(super) prefetch: Mutex<Option<std::sync::mpsc::Sender<super::base_cache::Hint>>>,
}

impl std::fmt::Debug for BaseArchive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaseArchive")
            .field("path", &self.path)
            .field("id", &hex(&self.id))
            .finish()
    }
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl BaseArchive {
    /// Opens `path` (a file or `s3://` object; seekable) with `opts` (the base's own keys),
    /// reads and checks its index, and computes its binding. Refused: a stream
    /// ([`Error::NotSeekable`], before a byte is read or a key tried), a delta
    /// archive (chains), a base with referencing frames, and everything [`Archive::open`]
    /// and [`Archive::read_index`] refuse.
    pub fn open(path: &Path, opts: OpenOptions) -> Result<BaseArchive> {
        Self::open_as(path, opts, false)
    }

    /// [`BaseArchive::open`] of the base a delta archive is read with (`x`, `t`, `l
    /// --base`): the same checks, and a refusal that speaks of reading (a delta archive given
    /// as a base, perhaps its own).
    pub fn open_to_read(path: &Path, opts: OpenOptions) -> Result<BaseArchive> {
        Self::open_as(path, opts, true)
    }

    fn open_as(path: &Path, opts: OpenOptions, reading: bool) -> Result<BaseArchive> {
        let input = crate::store::open_seekable(
            path,
            "a delta base is read at the offsets of its frames; give it as a file or an s3:// object",
        )?;
        let mut ar = Archive::open_opened(input, path, opts)?;
        if let Some(f) = ar.header_fix
            && !reading
        {
            // Writing a delta refuses a damaged base (module doc, "A damaged base").
            return Err(Error::HeaderFixed {
                path: path.to_path_buf(),
                base_written: true,
                recovery: false,
                byte: f.byte,
                bit: f.bit,
                sealed: ar.header.encrypted(),
            });
        }
        if let Some(b) = ar.header.delta_base()
            && reading
        {
            return Err(Error::Usage(format!(
                "{}: given as --base, but it is itself a delta archive (against base {}): a delta archive is read with the full archive it was made against as --base",
                crate::fs::shown(path),
                hex(&b.0)
            )));
        }
        if let Some(b) = ar.header.delta_base() {
            return Err(Error::Usage(format!(
                "{}: is itself a delta archive (against base {}): a delta of a delta is not supported; use a full archive as the base",
                crate::fs::shown(path),
                hex(&b.0)
            )));
        }
        let (index, offsets, unchecked, footer) = match ar.read_index() {
            Ok((footer, index)) => {
                let mut offsets = Vec::with_capacity(index.frame_body_lens.len());
                let mut off = ar.header_len;
                for &l in &index.frame_body_lens {
                    offsets.push(off);
                    off += l as u64 + (FRAME_HEADER_LEN + TAG_LEN) as u64;
                }
                (index, offsets, None, Some(footer))
            }
            // Reading a delta: the data frames of a base whose index is damaged are found
            // front to back (module doc, "A damaged base").
            Err(e) if reading && crate::damage::is_index_damage(&e) => {
                let (mut index, offsets) = walked_index(&mut ar)?;
                index.entries = walked_entries(&mut ar, &offsets);
                (index, offsets, Some(e.to_string()), None)
            }
            Err(e) => return Err(e),
        };
        if let Some((at, bytes, frame)) = ar.undone_edit
            && !reading
        {
            // An insertion or removal undone (`moved`) is damage (module doc, "A damaged base").
            return Err(Error::EditUndone {
                path: path.to_path_buf(),
                base_written: true,
                at,
                bytes,
                frame: (frame != super::AFTER_INDEX).then_some(frame),
                sealed: ar.header.encrypted(),
            });
        }
        if let Some(k) = index.frame_ref_lens.iter().position(|&l| l != 0) {
            return Err(Error::Usage(format!(
                "{}: data frame {k} references earlier frames of its stream (a level-9 group): such an archive cannot be a delta base",
                crate::fs::shown(path)
            )));
        }
        // Asked once, not per frame read (`base_fetch`): the source's second looks, and its
        // lock-free ranged reads when nothing is repaired on the way (recovery data).
        let refetch = ar.input.refetcher();
        let direct = refetch.clone().filter(|_| ar.input.heal_report().is_none());
        let (binding, at_tags) = match &footer {
            Some(footer) => {
                let at_tags = tag_offsets(&ar, footer, &offsets, &index)?;
                // From object storage, many requests at once (`fetch_tags`); through the
                // recovery data's checks (`store::healing`) or from a file, in turn.
                let tags = match &direct {
                    Some(f) => fetch_tags(&at_tags, &**f),
                    None => read_tags(&at_tags, |at, buf| read_exact_at(&*ar.input, at, buf)),
                }
                .map_err(|e| Error::io(&ar.path, "read", e))?;
                (binding_of(&ar.header.archive_id, &tags), at_tags)
            }
            None => ([0; 32], Vec::new()),
        };
        let Archive {
            input,
            path,
            header,
            version,
            protection,
            header_fix,
            undone_edit,
            ..
        } = ar;
        Ok(BaseArchive {
            path,
            id: header.archive_id,
            binding,
            at_tags,
            version,
            protection,
            input: Mutex::new(input),
            window: Mutex::new(Window::default()),
            refetch,
            direct,
            offsets,
            index,
            cache: Mutex::new(Cache::default()),
            cache_budget: DEFAULT_CACHE_BUDGET,
            decoded: Default::default(),
            prefetch: Mutex::new(None),
            block_size: header.block_size,
            workers: 1,
            unchecked,
            header_fix,
            undone_edit,
            encrypted: header.encrypted(),
            shared_password: false,
            reproducible: !header.encrypted()
                && header.archive_id == crate::create::reproducible_archive_id(header.created),
        })
    }

    /// Why the binding could not be computed: the base's index or footer cannot be read (it
    /// is damaged or cut short; module doc, "A damaged base"). None for a base whose binding
    /// was computed.
    pub fn unchecked(&self) -> Option<&str> {
        self.unchecked.as_deref()
    }

    /// One flipped bit of its header the reader undid (`header_fix`): read as written, but
    /// the file is not (a warning; `test` fails).
    pub fn header_fix(&self) -> Option<HeaderFix> {
        self.header_fix
    }

    /// Bytes inserted or removed in one place that the reader undid (its index found
    /// moved): where, bytes inserted (negative: removed), and the frame there
    /// ([`Archive::undone_edit`]). Read as written, but the file is not (`test` fails).
    pub fn undone_edit(&self) -> Option<(u64, i64, u64)> {
        self.undone_edit
    }

    /// Whether it is encrypted.
    pub fn encrypted(&self) -> bool {
        self.encrypted
    }

    /// Notes that this base, if encrypted, was opened with keys holding the archive's password
    /// (`KRYPTA_PASSWORD`): `open_warning` then does not call that password unused.
    pub fn set_shared_password(&mut self) {
        self.shared_password = self.encrypted;
    }

    /// Bytes after its footer, left out ([`Archive::trailing`]).
    pub fn trailing(&self) -> Option<(u64, u64, bool)> {
        self.input.lock().ok()?.trailing()
    }

    /// Whether its id is a reproducible archive's (docs/FORMAT.md §12.4): one a damaged
    /// base must not have to be read without its binding (`Archive::set_base`).
    pub fn reproducible(&self) -> bool {
        self.reproducible
    }

    /// The base's format version (its records are read in it).
    pub(crate) fn version(&self) -> Version {
        self.version
    }

    /// What the base's recovery data repaired (or could not) while its frames were read
    /// (`store::healing`); `None` for a base without recovery data.
    pub(crate) fn heal_report(&self) -> Option<crate::store::healing::HealReport> {
        self.input.lock().ok()?.heal_report()
    }

    /// Its source's transfer counters (a base in object storage).
    pub fn counters(&self) -> Option<Arc<crate::store::Counters>> {
        self.input.lock().ok()?.counters()
    }

    /// The base's path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The base's archive id.
    pub fn id(&self) -> ArchiveId {
        self.id
    }

    /// The binding digest (module doc).
    pub fn binding(&self) -> [u8; 32] {
        self.binding
    }

    /// The header extension a delta archive against this base carries.
    pub fn extension(&self) -> Extension {
        Extension::DeltaBase {
            base_id: self.id,
            binding: self.binding,
        }
    }

    /// The base's index (checked).
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Bytes of decoded base blocks the cache keeps at most.
    pub fn cache_budget(&self) -> u64 {
        self.cache_budget
    }

    /// Sets the cache budget, bytes.
    pub fn set_cache_budget(&mut self, bytes: u64) {
        self.cache_budget = bytes;
    }

    /// Base frames decoded so far (each once while it stays cached).
    pub fn frames_decoded(&self) -> u64 {
        self.decoded.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Number of data frames.
    pub fn data_frames(&self) -> u64 {
        self.offsets.len() as u64
    }

    /// Where data frame `seq` starts in the base (its head's first byte), when it was found.
    pub(crate) fn frame_offset(&self, seq: u64) -> Option<u64> {
        self.offsets
            .get(seq as usize)
            .copied()
            .filter(|&at| at != MISSING_FRAME)
    }

    /// A [`BaseFault::Invalid`] of frame `seq` at byte `at`.
    pub(super) fn invalid(&self, seq: u64, at: u64, problem: String) -> BaseFault {
        BaseFault::Invalid {
            path: self.path.clone(),
            seq,
            at,
            sealed: self.protection.is_sealed(),
            problem,
        }
    }

    /// Whether the base is encrypted.
    pub(crate) fn is_sealed(&self) -> bool {
        self.protection.is_sealed()
    }

    /// Reads, verifies and decodes data frame `seq` (no cache) into a buffer in huge pages
    /// (one an evicted frame left, or a new one): the cache keeps it, so it is memory just
    /// mapped, and 4 KiB faults on it cost a delta read more than the decode
    /// ([`crate::codec::huge`]).
    pub(crate) fn decode_frame(
        &self,
        dec: &mut BlockDecoder,
        seq: u64,
    ) -> std::result::Result<HugeBuf, BaseFault> {
        let mut out = self.reuse_buffer();
        self.decode_into(dec, seq, &mut out)?;
        Ok(out)
    }

    /// Reads, verifies and decodes data frame `seq` into `out`.
    pub(super) fn decode_into(
        &self,
        dec: &mut BlockDecoder,
        seq: u64,
        out: &mut HugeBuf,
    ) -> std::result::Result<(), BaseFault> {
        let at = self.offsets[seq as usize];
        if at == MISSING_FRAME {
            return Err(self.invalid(
                seq,
                0,
                format!(
                    "base frame {seq} is lost in the damaged base (not found where its frames were walked: {})",
                    self.unchecked.as_deref().unwrap_or("its index cannot be read")
                ),
            ));
        }
        let body_len = self.index.frame_body_lens[seq as usize] as usize;
        // The frame is read into the worker's frame buffer (kept across frames: no fresh
        // memory per frame) and opened in place.
        let mut buf = std::mem::take(&mut dec.frame);
        buf.clear();
        let len = FRAME_HEADER_LEN + body_len + TAG_LEN;
        let room = crate::memory::reserve_exact(&mut buf, len, "a delta base frame");
        buf.resize(if room.is_ok() { len } else { 0 }, 0);
        let r = room
            .map_err(BaseFault::out_of_memory(&self.path))
            .and_then(|()| self.open_in(dec, seq, at, body_len, &mut buf, out));
        dec.frame = buf;
        r
    }

    /// [`BaseArchive::decode_frame`] of the frame read into `buf`.
    fn open_in(
        &self,
        dec: &mut BlockDecoder,
        seq: u64,
        at: u64,
        body_len: usize,
        buf: &mut [u8],
        out: &mut HugeBuf,
    ) -> std::result::Result<(), BaseFault> {
        let refetch = self
            .read_frame_bytes(seq, at, buf)
            .map_err(|e| BaseFault::Read {
                path: self.path.clone(),
                seq,
                at,
                source: Arc::new(e),
            })?;
        let bad =
            |what: String| self.invalid(seq, at, format!("base frame {seq} at byte {at}: {what}"));
        // The frame's place and length come from the verified index, and its tag covers its
        // head: the tag is checked first, so a bit flipped in the head is damage (exit 5 or 2,
        // as `t` of the base says), and only a head that verified and still is not the frame
        // the index places there is an invalid base (a structure error).
        let mut head: [u8; FRAME_HEADER_LEN] = buf[..FRAME_HEADER_LEN].try_into().expect("16");
        let mut tag: [u8; TAG_LEN] = buf[buf.len() - TAG_LEN..].try_into().expect("32");
        let body = &mut buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + body_len];
        // A base in object storage gets a second look (`second_look`), as the archive does;
        // its head too (the index, not the head, placed the frame).
        let opened = super::second_look::passes_placed(
            refetch.as_deref(),
            at,
            &mut head,
            body,
            &mut tag,
            |head, body, tag| {
                self.protection
                    .open_frame(&self.id, head, seq, body, tag)
                    .is_ok()
            },
        );
        if !opened {
            return Err(BaseFault::Damaged {
                path: self.path.clone(),
                seq,
                at,
                sealed: self.protection.is_sealed(),
            });
        }
        let header = FrameHeader::parse(&head, self.version).map_err(|e| bad(e.to_string()))?;
        if header.kind != FrameKind::Data
            || header.seq != seq
            || header.body_len as usize != body_len
        {
            return Err(bad(
                "not the data frame the base's index places there".into()
            ));
        }
        let (info, hl) =
            block_info(body, self.version, FrameKind::Data).map_err(|e| bad(e.to_string()))?;
        if info.reference_len != 0 || info.codec.reads_base() {
            return Err(bad(
                "references other bytes (a base must decode frame by frame)".into(),
            ));
        }
        let payload = &mut body[hl..];
        if info.codec == Codec::Store {
            crate::codec::decode_stored_in_place(
                info.filter,
                info.stream_offset,
                payload,
                info.raw_len as usize,
            )
            .map_err(|e| bad(e.to_string()))?;
            out.clear();
            out.extend_from_slice(payload);
            return Ok(());
        }
        // `block_info` held the raw length to 1..=MAX_BLOCK_SIZE: the buffer it maps is bounded.
        let raw_len = info.raw_len as usize;
        out.clear();
        let oom = BaseFault::out_of_memory(&self.path);
        out.try_reserve(raw_len, "a decoded base block")
            .map_err(oom)?;
        let r = dec.decode_v2_into(
            info.codec,
            info.filter,
            info.stream_offset,
            payload,
            out.filled(raw_len),
        );
        if let Err(e) = r {
            out.clear();
            return Err(bad(e.to_string()));
        }
        Ok(())
    }
}
