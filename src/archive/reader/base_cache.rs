//! The decoded-frame cache of a delta base ([`BaseArchive`], `base`) and its prefetch
//! thread: which decoded base blocks are kept, for how long, and who decodes them.
//!
//! Design (why it is so):
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
//!   worker that needs it reads it again and reports the error itself. Hints are served in
//!   the order they come, except the frames a BASE_REF reader asks for ahead, which go first
//!   ([`Hints`]: the reading thread waits on those, a region's later frames only a block
//!   further on).
//! - **Huge pages.** Decoded frames, and each worker's region, are [`HugeBuf`]s: memory
//!   advised for transparent huge pages (`crate::codec::huge`). Measured (2026-12-06,
//!   `x -j 1 --base`, 15–21 interleaved rounds, medians): page faults per read 8,638 →
//!   4,036 (libc6 pair; a whole-file extract takes 3,912), 12,683 → 5,155 (ruff), and the
//!   read against a whole-file extract 1.31× → 1.07× (libc6), 1.42× → 1.10× (typescript),
//!   1.38× → 1.19× (ruff), 1.23× → 1.15× (aws-lc-sys). The faults, not the decode or the
//!   region's copy, were what a delta read paid beyond the extract.

use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

use super::*;
use crate::codec::huge::HugeBuf;
use crate::format::block::BaseRegion;

/// Bytes of decoded base blocks the cache holds by default: 256 MiB.
pub const DEFAULT_CACHE_BUDGET: u64 = 256 << 20;

/// Largest base block the prefetch thread decodes ahead of the regions asked for (8 MiB,
/// `base_fetch`'s read-ahead), unless a region is longer.
pub const SPECULATE_BLOCK: u64 = 8 << 20;

/// How many frames from `region.seq` the prefetch thread is asked for (estimated from the
/// base's block size `block`): the frames the region spans, and those the next delta block's
/// region runs on into (a record stream written in order: module doc, "Prefetch") when base
/// blocks are no larger than the region or [`SPECULATE_BLOCK`]: `next` bytes past this
/// region, at least one block. A region read into one buffer (`zstd+base`, the writer) passes
/// `next` = 0: one block. A `diff+base` block passes its raw length, since the next block's
/// region starts about that much further on: measured (2026-12-07, `x -j 1 --base` of the
/// aws-lc-sys pair at `-l 7`, 8 MiB blocks over a base of 4 MiB blocks), with one block the
/// worker found the second of the two new frames of each region undecoded and decoded it
/// itself, in series with the diff it applies (`base_region`'s module doc). A frame ahead
/// that no region needs is fetched and decoded for nothing: a one-file `x --base` of a base
/// written with `-b 256M` fetched a second 256 MiB frame after the file's last region (503 MB
/// of the 503 MB base from the bucket, for a 40 MiB file in its first frame). So what a read
/// fetches beyond the frames its regions span is at most one delta block's length of base
/// blocks past the last region (one base block for a `zstd+base` block), and only of blocks
/// of at most `max(region, 8 MiB)`.
pub(super) fn lookahead(region: &BaseRegion, block: u64, next: u64) -> u64 {
    let (offset, len) = (u64::from(region.offset), u64::from(region.len));
    let span = (offset + len).div_ceil(block);
    if block <= len.max(SPECULATE_BLOCK) {
        span + next.div_ceil(block).max(1)
    } else {
        span
    }
}

/// One cache slot: filled once; `claimed` once a worker or the prefetch thread started on
/// it (the prefetch thread skips claimed slots instead of waiting for them).
#[derive(Default)]
struct SlotState {
    claimed: std::sync::atomic::AtomicBool,
    value: OnceLock<std::result::Result<Arc<HugeBuf>, BaseFault>>,
}

type Slot = Arc<SlotState>;

/// The decoded-block cache of one base (module doc).
#[derive(Default)]
pub(super) struct Cache {
    slots: HashMap<u64, Slot>,
    /// Filled slots, least recently used first (eviction order), with their sizes.
    order: VecDeque<(u64, u64)>,
    bytes: u64,
    /// Decoded-block buffers of evicted slots no worker held any more, for the next frames
    /// (a fresh 4 MiB buffer per frame cost more in page faults than the decode: module doc).
    /// The frames a small base keeps are fresh memory all the same; they are in huge pages
    /// ([`HugeBuf`]), which fault in about 7× cheaper.
    free: Vec<HugeBuf>,
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
    /// by the writer's map walk are not counted: the walk reads the whole base (beside the
    /// writing, ahead of it), and the regions start again from the front (past the budget,
    /// from frames evicted).
    seen: std::collections::HashSet<u64>,
}

/// Buffers the cache keeps for reuse at most.
const FREE_BUFFERS: usize = 8;

impl Cache {
    /// Evicts least recently used slots until `bytes <= limit` (keeping at least one),
    /// keeping the buffers no one holds for reuse. A block a thread holds (a worker's region
    /// being assembled, the block a BASE_REF walk reads from, a slot being waited on) is not
    /// evicted: its memory stays until the holder drops it all the same, and evicting it only
    /// made the next asker decode it again. With blocks as large as the budget (`-b 256M`:
    /// one fits) the record parser, in one base frame, and the workers, in the next, evicted
    /// each other's frame: `t --base` fetched each of a bucket's two frames twice (1.0 GB of a
    /// 503 MB base); with held blocks kept, once. So the cache holds at most its limit plus
    /// the blocks held (one or two per worker and per parser), memory the holders keep anyway.
    fn evict_to(&mut self, limit: u64) {
        let mut i = 0;
        while self.bytes > limit && self.order.len() > 1 && i < self.order.len() {
            let held = self.slots.get(&self.order[i].0).is_some_and(|s| {
                Arc::strong_count(s) > 1
                    || s.value
                        .get()
                        .is_some_and(|v| v.as_ref().is_ok_and(|b| Arc::strong_count(b) > 1))
            });
            if held {
                i += 1;
                continue;
            }
            let (old, n) = self.order.remove(i).expect("in range");
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

/// What a prefetch hint is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HintKind {
    /// The frames a delta block's region spans and those after it.
    Region,
    /// The frames a BASE_REF reader reads next ([`BaseArchive::ahead`]).
    Ahead,
    /// A walk over the whole base (the writer's map).
    Walk,
}

/// One frame the prefetch thread is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Hint {
    seq: u64,
    kind: HintKind,
}

/// The prefetch thread's queue of hints: first come first served, except that the frames a
/// BASE_REF reader asks for ahead go before every region's. Why (session 34, a temporary
/// trace of who decodes each base frame, `x --base` of a delta of three identical 30 MB
/// files and an executable): the block holding the BASE_REF records has as its region the
/// base files' END_DIGEST records, spread over the base (frames 7–27 of 28), and its hints
/// were queued first, so the reading thread, which writes each referenced file from the base
/// frame after frame, found none of its next frames decoded and decoded frames 0–6 itself,
/// in series with writing them. The reader waits on its frames now; a region's later frames
/// are needed only by blocks further on.
#[derive(Debug, Default)]
struct Hints {
    /// A BASE_REF reader's frames, served first, in the order asked.
    ahead: VecDeque<Hint>,
    /// Every other hint, in the order it came.
    rest: VecDeque<Hint>,
}

impl Hints {
    fn is_empty(&self) -> bool {
        self.ahead.is_empty() && self.rest.is_empty()
    }

    fn add(&mut self, h: Hint) {
        match h.kind {
            HintKind::Ahead => self.ahead.push_back(h),
            HintKind::Region | HintKind::Walk => self.rest.push_back(h),
        }
    }

    fn next(&mut self) -> Option<Hint> {
        self.ahead.pop_front().or_else(|| self.rest.pop_front())
    }
}

impl BaseArchive {
    /// The base shared by the workers, with its prefetch thread (module doc). The thread
    /// holds only a weak reference: it ends when the last `Arc` is dropped (its channel
    /// closes with the base).
    pub fn shared(mut self, workers: usize) -> Arc<BaseArchive> {
        self.workers = workers.max(1);
        let base = Arc::new(self);
        let (tx, rx) = std::sync::mpsc::channel::<Hint>();
        let weak = Arc::downgrade(&base);
        let spawned = std::thread::Builder::new()
            .name("krypta-base".into())
            .spawn(move || {
                let Ok(mut dec) = BlockDecoder::new() else {
                    return;
                };
                let mut hints = Hints::default();
                loop {
                    if hints.is_empty() {
                        match rx.recv() {
                            Ok(h) => hints.add(h),
                            Err(_) => return,
                        }
                    }
                    while let Ok(h) = rx.try_recv() {
                        hints.add(h);
                    }
                    let Some(h) = hints.next() else { continue };
                    let Some(b) = weak.upgrade() else {
                        return;
                    };
                    b.prefetch_one(&mut dec, h.seq, h.kind == HintKind::Walk);
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
    ) -> std::result::Result<Arc<HugeBuf>, BaseFault> {
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

    /// Most bytes of decoded base blocks the cache comes to hold as `c --base` uses it
    /// (`crate::memory::compress_bytes`): the writer's map walk keeps every block it decodes
    /// while the budget has room ([`BaseArchive::block_for_walk`]), so the whole base when it
    /// is smaller, and a cache evicts only once a block is in, so one base block (the header's
    /// block size) over; and the walk's own, beside the workers since it runs beside the
    /// writing (`archive::delta`'s walk): a block it decodes past the budget and its
    /// decoder's frame, two blocks more.
    pub fn cache_bytes_at_most(&self) -> u64 {
        let block = u64::from(self.block_size.max(1));
        self.cache_budget
            .min(self.data_frames().saturating_mul(block))
            .saturating_add(3 * block)
    }

    /// Grows the cache's working set for regions of up to `span` bytes (a region and the
    /// block it may start in): room for the region of every worker and the one the prefetch
    /// thread decodes ahead — `(workers + 1) × span`, at most the budget. Neighbouring delta
    /// blocks find their shared frames cached, and the frames the record stream has left
    /// behind are evicted and their buffers reused: measured (`x -j 1 --base`, aws-lc-sys
    /// pair), keeping every decoded base block of a 65 MB base cost 18,000 more page faults
    /// than a whole-file extract, more system time than the base decode took in user time.
    pub(super) fn working_set(&self, span: u64) {
        let want = (self.workers as u64 + 1)
            .saturating_mul(span)
            .min(self.cache_budget);
        let mut c = self.cache.lock().expect("base cache lock");
        if want > c.working {
            c.working = want;
        }
    }

    /// Asks the prefetch thread for frames `from..to` (clamped to the data frames).
    pub(super) fn hint(&self, from: u64, to: u64) {
        self.send(from, to, HintKind::Region);
    }

    /// Asks the prefetch thread for frames `from..to`, which a reader walking one base entry's
    /// records in order (a BASE_REF, docs/FORMAT.md §16.5) reads next, holding the cache's
    /// working set to at least a block per worker and one more.
    pub(crate) fn ahead(&self, from: u64, to: u64) {
        self.working_set(u64::from(self.block_size.max(1)));
        self.send(from, to, HintKind::Ahead);
    }

    /// Asks the prefetch thread to decode the frames a walk over the whole base reads next
    /// (the writer's map, [`BaseArchive::block_for_walk`]), so the walk parses while the
    /// prefetch thread decodes; only into room the budget has, like the walk.
    pub(crate) fn hint_walk(&self) {
        self.send(0, self.data_frames(), HintKind::Walk);
    }

    fn send(&self, from: u64, to: u64, kind: HintKind) {
        let to = to.min(self.data_frames());
        if let Some(tx) = self.prefetch.lock().expect("base prefetch lock").as_ref() {
            for seq in from..to {
                if tx.send(Hint { seq, kind }).is_err() {
                    return;
                }
            }
        }
    }

    /// The decoded block of data frame `seq` (verified first), from the cache or read now.
    pub fn block(
        &self,
        dec: &mut BlockDecoder,
        seq: u64,
    ) -> std::result::Result<Arc<HugeBuf>, BaseFault> {
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
    ) -> std::result::Result<Arc<HugeBuf>, BaseFault> {
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

    /// Takes back a block the caller is done with: kept for the next decode when no one
    /// else holds it (a frame a walk past the budget decoded outside the cache, which would
    /// otherwise be a fresh mapping per frame), dropped otherwise.
    pub(crate) fn recycle(&self, block: Arc<HugeBuf>) {
        if let Ok(buf) = Arc::try_unwrap(block) {
            let mut c = self.cache.lock().expect("base cache lock");
            if c.free.len() < FREE_BUFFERS {
                c.free.push(buf);
            }
        }
    }

    /// A decoded-block buffer of an evicted frame for the next decode, or a new one.
    pub(super) fn reuse_buffer(&self) -> HugeBuf {
        self.cache
            .lock()
            .expect("base cache lock")
            .free
            .pop()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BASE_REF reader's frames go before every region's, in the order asked; the rest
    /// keep theirs.
    #[test]
    fn ahead_hints_go_first_and_keep_their_order() {
        let mut h = Hints::default();
        let hint = |seq, kind| Hint { seq, kind };
        h.add(hint(5, HintKind::Region));
        h.add(hint(6, HintKind::Region));
        h.add(hint(1, HintKind::Ahead));
        h.add(hint(2, HintKind::Ahead));
        h.add(hint(7, HintKind::Walk));
        assert_eq!(h.next(), Some(hint(1, HintKind::Ahead)));
        h.add(hint(3, HintKind::Ahead));
        let order: Vec<u64> = std::iter::from_fn(|| h.next()).map(|x| x.seq).collect();
        assert_eq!(order, [2, 3, 5, 6, 7]);
        assert!(h.is_empty());
        assert!(h.ahead.is_empty() && h.rest.is_empty());
    }
}
