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
//!   frame is read (`Source::read_at`, so the workers share one source), its tag verified
//!   with the base's key before it is decrypted, and decoded; a damaged frame is an error
//!   naming the base, the frame and the byte, never bytes.
//! - **Cache.** Neighbouring delta blocks reference overlapping regions, so decoded base
//!   blocks are cached: one slot per frame, filled once (a worker that needs a frame another
//!   is decoding waits for it, none decodes it twice), evicted oldest first beyond
//!   [`BaseArchive::cache_budget`] bytes. Memory: the cache budget, plus per worker the
//!   region being assembled (at most the region length, 256 MiB by the format, krypta's
//!   writer uses at most [`crate::archive::delta::MAX_REGION`]) and the block.
//! - **Prefetch.** Profiled (`perf`, ruff and aws-lc-sys pairs, `x -j 1 --base`): the
//!   worker spent about half its time decoding base frames, one after the other with the
//!   delta blocks that need them, while the reading thread idled — so a delta read took
//!   1.7-1.8× a whole-file extract although each base frame was read, verified and decoded
//!   exactly once. A base opened with [`BaseArchive::shared`] has one prefetch thread of its
//!   own: each region asked for names the frames it spans and as many after it (the next
//!   delta block's region, in a record stream written in order), and the prefetch thread
//!   decodes those a worker has not started yet into the cache, in order. A worker that needs
//!   a frame the prefetch thread is decoding waits for it; one it needs first it decodes
//!   itself. So base decoding runs beside delta decoding instead of before it. Lookahead is
//!   at most one region's frames beyond the last region asked for, so a delta referencing
//!   little of its base makes little extra work; every prefetched frame is verified exactly
//!   as one a worker decodes (the same code), and a frame that fails is not cached: the
//!   worker that needs it reads it again and reports the error itself.
//! - **Chains** are refused: a base that is itself a delta archive cannot be a base
//!   ([`BaseArchive::open`]), so a region never needs a second base. A base whose frames
//!   reference earlier frames of their own stream (format 2 groups, reference length > 0)
//!   is refused the same way (no krypta writer writes them today).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, OnceLock};

use super::base_binding::{binding_of, read_exact_at};
pub use super::base_fault::BaseFault;
use super::*;
use crate::format::block::BaseRegion;
use crate::format::extension::Extension;

/// BLAKE3 derive-key context of the base binding (docs/FORMAT.md §16.1).
pub const BINDING_CONTEXT: &str = "krypta v2 delta base binding";

/// Bytes of decoded base blocks the cache holds by default: 256 MiB.
pub const DEFAULT_CACHE_BUDGET: u64 = 256 << 20;

/// One cache slot: filled once; `claimed` once a worker or the prefetch thread started on
/// it (the prefetch thread skips claimed slots instead of waiting for them).
#[derive(Default)]
struct SlotState {
    claimed: std::sync::atomic::AtomicBool,
    value: OnceLock<std::result::Result<Arc<Vec<u8>>, BaseFault>>,
}

type Slot = Arc<SlotState>;

#[derive(Default)]
struct Cache {
    slots: HashMap<u64, Slot>,
    /// Filled slots, least recently used first (eviction order), with their sizes.
    order: VecDeque<(u64, u64)>,
    bytes: u64,
    /// Decoded-block buffers of evicted slots no worker held any more, for the next frames
    /// (a fresh 4 MiB buffer per frame cost more in page faults than the decode: module doc).
    free: Vec<Vec<u8>>,
    /// The working set the cache is held to: see [`BaseArchive::working_set`].
    working: u64,
    /// Frames decoded into the cache at least once. The prefetch thread skips them: the
    /// regions move forward through the base, so a frame decoded and since evicted is behind
    /// the reader, and a hint for it is stale (the thread fell behind while the workers
    /// decoded the frames themselves). Decoding it again evicted a frame still ahead, whose
    /// stale hint then did the same: under load a `-j 1` read decoded 25 frames 41–49 times.
    /// A worker that does need such a frame again still decodes it itself: a delta whose
    /// blocks point back to earlier base frames (reordered files, two files matched to one
    /// base file) loses only the prefetch of those frames, never bytes. Frames decoded
    /// by the writer's map walk are not counted: the walk reads the whole base first, and the
    /// regions after it start again from the front (past the budget, from frames evicted).
    seen: std::collections::HashSet<u64>,
}

/// Buffers the cache keeps for reuse at most.
const FREE_BUFFERS: usize = 8;

impl Cache {
    /// Evicts least recently used slots until `bytes <= limit` (keeping at least one),
    /// keeping the buffers no one holds for reuse.
    fn evict_to(&mut self, limit: u64) {
        while self.bytes > limit && self.order.len() > 1 {
            let (old, n) = self.order.pop_front().expect("non-empty");
            self.bytes -= n;
            if let Some(slot) = self.slots.remove(&old)
                && let Ok(state) = Arc::try_unwrap(slot)
                && let Some(Ok(block)) = state.value.into_inner()
                && let Ok(buf) = Arc::try_unwrap(block)
                && self.free.len() < FREE_BUFFERS
            {
                self.free.push(buf);
            }
        }
    }

    /// Marks filled slot `seq` as just used.
    fn touch(&mut self, seq: u64) {
        if let Some(i) = self.order.iter().rposition(|&(s, _)| s == seq)
            && i + 1 != self.order.len()
        {
            let e = self.order.remove(i).expect("in range");
            self.order.push_back(e);
        }
    }
}

/// An opened base archive. See the module doc.
pub struct BaseArchive {
    path: PathBuf,
    id: ArchiveId,
    binding: [u8; 32],
    version: Version,
    protection: Arc<Protection>,
    input: Mutex<Input>,
    /// Byte offset of each data frame.
    offsets: Vec<u64>,
    index: Index,
    cache: Mutex<Cache>,
    cache_budget: u64,
    /// Base frames decoded (cache misses), for tests and `-v`.
    decoded: std::sync::atomic::AtomicU64,
    /// The base's block size (its header's): estimates how many frames a region spans.
    block_size: u32,
    /// Workers that ask for regions at the same time ([`BaseArchive::shared`]).
    workers: usize,
    /// Frames for the prefetch thread ([`BaseArchive::shared`]; none without one).
    prefetch: Mutex<Option<std::sync::mpsc::Sender<(u64, bool)>>>,
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
        if let Some(b) = ar.header.delta_base()
            && reading
        {
            return Err(Error::Usage(format!(
                "{}: given as --base, but it is itself a delta archive (against base {}): a delta archive is read with the full archive it was made against as --base",
                path.display(),
                hex(&b.0)
            )));
        }
        if let Some(b) = ar.header.delta_base() {
            return Err(Error::Usage(format!(
                "{}: is itself a delta archive (against base {}): a delta of a delta is not supported; use a full archive as the base",
                path.display(),
                hex(&b.0)
            )));
        }
        let (footer, index) = ar.read_index()?;
        if let Some(k) = index.frame_ref_lens.iter().position(|&l| l != 0) {
            return Err(Error::Usage(format!(
                "{}: data frame {k} references earlier frames of its stream (a level-9 group): such an archive cannot be a delta base",
                path.display()
            )));
        }
        let mut offsets = Vec::with_capacity(index.frame_body_lens.len());
        let mut off = ar.header_len;
        for &l in &index.frame_body_lens {
            offsets.push(off);
            off += l as u64 + (FRAME_HEADER_LEN + TAG_LEN) as u64;
        }
        let binding = binding_of(&ar, &footer, &offsets, &index)?;
        let Archive {
            input,
            path,
            header,
            version,
            protection,
            ..
        } = ar;
        Ok(BaseArchive {
            path,
            id: header.archive_id,
            binding,
            version,
            protection,
            input: Mutex::new(input),
            offsets,
            index,
            cache: Mutex::new(Cache::default()),
            cache_budget: DEFAULT_CACHE_BUDGET,
            decoded: Default::default(),
            prefetch: Mutex::new(None),
            block_size: header.block_size,
            workers: 1,
        })
    }

    /// The base shared by the workers, with its prefetch thread (module doc). The thread
    /// holds only a weak reference: it ends when the last `Arc` is dropped (its channel
    /// closes with the base).
    pub fn shared(mut self, workers: usize) -> Arc<BaseArchive> {
        self.workers = workers.max(1);
        let base = Arc::new(self);
        let (tx, rx) = std::sync::mpsc::channel::<(u64, bool)>();
        let weak = Arc::downgrade(&base);
        let spawned = std::thread::Builder::new()
            .name("krypta-base".into())
            .spawn(move || {
                let Ok(mut dec) = BlockDecoder::new() else {
                    return;
                };
                while let Ok((seq, walk)) = rx.recv() {
                    let Some(b) = weak.upgrade() else {
                        return;
                    };
                    b.prefetch_one(&mut dec, seq, walk);
                }
            });
        if spawned.is_ok() {
            *base.prefetch.lock().expect("base prefetch lock") = Some(tx);
        }
        base
    }

    /// The prefetch thread's turn on frame `seq`: decoded into the cache unless a worker
    /// started on it (or it is cached, or was decoded once already: [`Cache`]'s `seen`), and
    /// only while the cache has room for it (its working set, or for a `walk` the whole
    /// budget).
    fn prefetch_one(&self, dec: &mut BlockDecoder, seq: u64, walk: bool) {
        let slot = {
            let mut c = self.cache.lock().expect("base cache lock");
            let room = if walk { self.cache_budget } else { c.working };
            if !c.slots.contains_key(&seq) && (c.bytes >= room || c.seen.contains(&seq)) {
                return;
            }
            Arc::clone(c.slots.entry(seq).or_default())
        };
        if slot.claimed.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let _ = self.fill(&slot, dec, seq, walk);
    }

    /// Frame `seq` decoded for a walk over the whole base (the writer's map): through the
    /// cache while it has room, so the blocks the writer's regions need first are decoded
    /// once, not twice; past the budget decoded and dropped (the cache keeps the stream's
    /// start, which the regions need first, instead of evicting it for its end).
    pub(crate) fn block_for_walk(
        &self,
        dec: &mut BlockDecoder,
        seq: u64,
    ) -> std::result::Result<Arc<Vec<u8>>, BaseFault> {
        let slot = {
            let mut c = self.cache.lock().expect("base cache lock");
            if !c.slots.contains_key(&seq) && c.bytes >= self.cache_budget {
                None
            } else {
                Some(Arc::clone(c.slots.entry(seq).or_default()))
            }
        };
        match slot {
            Some(slot) => {
                slot.claimed
                    .store(true, std::sync::atomic::Ordering::Release);
                self.fill(&slot, dec, seq, true)
            }
            None => self.decode_frame(dec, seq).map(Arc::new),
        }
    }

    /// Grows the cache's working set for regions of up to `span` bytes (a region and the
    /// block it may start in): room for the region of every worker and the one the prefetch
    /// thread decodes ahead — `(workers + 1) × span`, at most the budget. Neighbouring delta
    /// blocks find their shared frames cached, and the frames the record stream has left
    /// behind are evicted and their buffers reused: measured (`x -j 1 --base`, aws-lc-sys
    /// pair), keeping every decoded base block of a 65 MB base cost 18,000 more page faults
    /// than a whole-file extract, more system time than the base decode took in user time.
    fn working_set(&self, span: u64) {
        let want = (self.workers as u64 + 1)
            .saturating_mul(span)
            .min(self.cache_budget);
        let mut c = self.cache.lock().expect("base cache lock");
        if want > c.working {
            c.working = want;
        }
    }

    /// Asks the prefetch thread for frames `from..to` (clamped to the data frames).
    fn hint(&self, from: u64, to: u64) {
        self.send(from, to, false);
    }

    /// Asks the prefetch thread for frames `from..to`, which a reader walking one base entry's
    /// records in order (a BASE_REF, docs/FORMAT.md §16.5) reads next, holding the cache's
    /// working set to at least a block per worker and one more.
    pub(crate) fn ahead(&self, from: u64, to: u64) {
        self.working_set(u64::from(self.block_size.max(1)));
        self.hint(from, to);
    }

    /// The base's format version (its records are read in it).
    pub(crate) fn version(&self) -> Version {
        self.version
    }

    /// Asks the prefetch thread to decode the frames a walk over the whole base reads next
    /// (the writer's map, [`BaseArchive::block_for_walk`]), so the walk parses while the
    /// prefetch thread decodes; only into room the budget has, like the walk.
    pub(crate) fn hint_walk(&self) {
        self.send(0, self.data_frames(), true);
    }

    fn send(&self, from: u64, to: u64, walk: bool) {
        let to = to.min(self.data_frames());
        if let Some(tx) = self.prefetch.lock().expect("base prefetch lock").as_ref() {
            for seq in from..to {
                if tx.send((seq, walk)).is_err() {
                    return;
                }
            }
        }
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

    /// The decoded block of data frame `seq` (verified first), from the cache or read now.
    pub fn block(
        &self,
        dec: &mut BlockDecoder,
        seq: u64,
    ) -> std::result::Result<Arc<Vec<u8>>, BaseFault> {
        let slot = {
            let mut c = self.cache.lock().expect("base cache lock");
            if c.slots.get(&seq).is_some_and(|s| s.value.get().is_some()) {
                c.touch(seq);
            }
            Arc::clone(c.slots.entry(seq).or_default())
        };
        slot.claimed
            .store(true, std::sync::atomic::Ordering::Release);
        self.fill(&slot, dec, seq, false)
    }

    /// Fills `slot` (frame `seq`) once, or waits for whoever fills it. The cache is then
    /// held to its working set (`walk`: to the whole budget, evicting nothing the walk
    /// itself filled while there is room: [`BaseArchive::block_for_walk`]).
    fn fill(
        &self,
        slot: &Slot,
        dec: &mut BlockDecoder,
        seq: u64,
        walk: bool,
    ) -> std::result::Result<Arc<Vec<u8>>, BaseFault> {
        let r = slot.value.get_or_init(|| {
            let r = self.decode_frame(dec, seq).map(Arc::new);
            if let Ok(b) = &r {
                self.decoded
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut c = self.cache.lock().expect("base cache lock");
                if !walk {
                    c.seen.insert(seq);
                }
                c.order.push_back((seq, b.len() as u64));
                c.bytes += b.len() as u64;
                let limit = if walk { self.cache_budget } else { c.working };
                c.evict_to(limit);
            }
            r
        });
        if r.is_err() {
            // A failure is not cached: the next asker reads the frame again (and fails the
            // same way when the damage is in the file).
            let mut c = self.cache.lock().expect("base cache lock");
            if c.slots.get(&seq).is_some_and(|s| Arc::ptr_eq(s, slot)) {
                c.slots.remove(&seq);
            }
        }
        r.clone()
    }

    /// The bytes of `region`, assembled from the decoded blocks it spans.
    pub fn region(
        &self,
        dec: &mut BlockDecoder,
        region: &BaseRegion,
        out: &mut Vec<u8>,
    ) -> std::result::Result<(), BaseFault> {
        out.clear();
        out.reserve(region.len as usize);
        if self.data_frames() > 0 {
            // The frames this region spans after its first (estimated from the base's block
            // size) and one more, the next delta block's: module doc, "Prefetch".
            let block = u64::from(self.block_size.max(1));
            self.working_set(u64::from(region.len) + block);
            let span = (u64::from(region.offset) + u64::from(region.len)).div_ceil(block);
            self.hint(region.seq + 1, region.seq + span + 1);
        }
        let mut seq = region.seq;
        let mut skip = region.offset as usize;
        let mut left = region.len as usize;
        while left > 0 {
            if seq >= self.data_frames() {
                return Err(self.invalid(region.seq, 0, format!(
                    "base region ({} bytes from frame {} offset {}) runs past the base's {} data frames",
                    region.len,
                    region.seq,
                    region.offset,
                    self.data_frames()
                )));
            }
            let b = self.block(dec, seq)?;
            if skip >= b.len() {
                return Err(self.invalid(
                    seq,
                    self.offsets[seq as usize],
                    format!(
                        "base region offset {} is past the {}-byte block of base frame {seq}",
                        region.offset,
                        b.len()
                    ),
                ));
            }
            let n = (b.len() - skip).min(left);
            out.extend_from_slice(&b[skip..skip + n]);
            left -= n;
            skip = 0;
            seq += 1;
        }
        Ok(())
    }

    /// A [`BaseFault::Invalid`] of frame `seq` at byte `at`.
    fn invalid(&self, seq: u64, at: u64, problem: String) -> BaseFault {
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

    /// Reads, verifies and decodes data frame `seq` (no cache).
    pub(crate) fn decode_frame(
        &self,
        dec: &mut BlockDecoder,
        seq: u64,
    ) -> std::result::Result<Vec<u8>, BaseFault> {
        let at = self.offsets[seq as usize];
        let body_len = self.index.frame_body_lens[seq as usize] as usize;
        // The frame is read into the worker's frame buffer (kept across frames: no fresh
        // memory per frame) and opened in place.
        let mut buf = std::mem::take(&mut dec.frame);
        buf.clear();
        buf.resize(FRAME_HEADER_LEN + body_len + TAG_LEN, 0);
        let r = self.open_in(dec, seq, at, body_len, &mut buf);
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
    ) -> std::result::Result<Vec<u8>, BaseFault> {
        {
            let input = self.input.lock().expect("base input lock");
            read_exact_at(&**input, at, buf).map_err(|e| BaseFault::Read {
                path: self.path.clone(),
                seq,
                at,
                source: Arc::new(e),
            })?;
        }
        let bad =
            |what: String| self.invalid(seq, at, format!("base frame {seq} at byte {at}: {what}"));
        let head: [u8; FRAME_HEADER_LEN] = buf[..FRAME_HEADER_LEN].try_into().expect("16");
        let header = FrameHeader::parse(&head, self.version).map_err(|e| bad(e.to_string()))?;
        if header.kind != FrameKind::Data
            || header.seq != seq
            || header.body_len as usize != body_len
        {
            return Err(bad(
                "not the data frame the base's index places there".into()
            ));
        }
        let tag: [u8; TAG_LEN] = buf[buf.len() - TAG_LEN..].try_into().expect("32");
        let body = &mut buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + body_len];
        self.protection
            .open_frame(&self.id, &head, seq, body, &tag)
            .map_err(|_| BaseFault::Damaged {
                path: self.path.clone(),
                seq,
                at,
                sealed: self.protection.is_sealed(),
            })?;
        let (info, hl) =
            block_info(body, self.version, FrameKind::Data).map_err(|e| bad(e.to_string()))?;
        if info.reference_len != 0 || info.codec == Codec::ZstdBase {
            return Err(bad(
                "references other bytes (a base must decode frame by frame)".into(),
            ));
        }
        let mut out = self
            .cache
            .lock()
            .expect("base cache lock")
            .free
            .pop()
            .unwrap_or_default();
        match info.codec {
            Codec::Store => {
                crate::codec::decode_stored_in_place(
                    info.filter,
                    info.stream_offset,
                    &mut body[hl..],
                    info.raw_len as usize,
                )
                .map_err(|e| bad(e.to_string()))?;
                out.clear();
                out.extend_from_slice(&body[hl..]);
            }
            _ => dec
                .decode_v2(
                    info.codec,
                    info.filter,
                    info.stream_offset,
                    &body[hl..],
                    info.raw_len as usize,
                    &[],
                    &mut out,
                )
                .map_err(|e| bad(e.to_string()))?,
        }
        Ok(out)
    }
}
