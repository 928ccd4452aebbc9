//! A bounded, order-preserving parallel map: jobs are submitted in sequence, run on a fixed
//! pool of worker threads (each with its own reusable state, e.g. a zstd context), and their
//! results come back strictly in submission order.
//!
//! Memory bound: at most `max_in_flight` jobs exist at once (queued, running, or finished but
//! waiting for an earlier one), so with blocks of B bytes the pipeline holds about
//! `max_in_flight × (input + output)` ≈ `2 × max_in_flight × B` bytes, whatever the input size.
//! That is the writer's bound (its B is its own setting). The reader does not trust the
//! header's B: its bytes in flight are bounded by `super::budget` from the frames it reads.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Raw bytes of blocks the pipeline aims to keep in flight at most, bytes (512 MiB).
pub const IN_FLIGHT_BUDGET: usize = 512 << 20;

/// Workers that leave the calling thread a core of its own: the cores minus one, at least
/// one. Where the calling thread does as much per byte as a worker (extraction: parse, hash,
/// write; `c -s`: read, hash, write), more workers than this only make all threads wait.
pub fn cores_beside_caller() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .max(1)
}

/// The decode workers a reader runs for `-j jobs` (0: the default): at most the cores the
/// reading thread leaves free ([`cores_beside_caller`]; the reasons are at the reader's
/// open). (A delta base shared by a reader is still told `-j` or the cores: see
/// `workers_or_cores` in the CLI's keys for why.)
pub fn decode_workers(jobs: usize) -> usize {
    let free = cores_beside_caller();
    if jobs == 0 { free } else { jobs.min(free) }
}

/// How many blocks may be in flight for `jobs` workers and blocks of `block_size` bytes:
/// `2 × jobs + 2` (each worker busy with one block while the next waits) unless that
/// exceeds [`IN_FLIGHT_BUDGET`], and never fewer than `jobs + 1` (so every worker has work).
/// With 4 MiB blocks this is `2 × jobs + 2`; with level 9's 128 MiB blocks, `jobs + 1`
/// upward.
pub fn max_in_flight(jobs: usize, block_size: usize) -> usize {
    let jobs = jobs.max(1);
    (IN_FLIGHT_BUDGET / block_size.max(1)).clamp(jobs + 1, 2 * jobs + 2)
}

/// Block buffers handed back and forth between the thread that reads (or writes) the archive
/// and the workers, so that each block does not pay for a fresh multi-MiB allocation (the
/// kernel zeroes every new page: measured about 5% of an extraction's CPU time).
///
/// A buffer taken may hold stale bytes of an earlier block: its `len()` is how many bytes are
/// initialised, which lets the next user `truncate` to a shorter length, or grow by only the
/// difference, instead of zero-filling the whole block again. At most `keep` buffers and
/// [`RECYCLE_BUDGET`] bytes of capacity are held; more are freed. The byte cap matters to the reader, whose `keep` comes from the header's
/// (unverified, informational) block size: a header claiming 64 KiB blocks over 256 MiB
/// frames must not make the free list keep gigabytes.
///
/// The reader's lists ([`Buffers::keeping_one`]) keep one buffer whatever its size: level 9's
/// 64 MiB blocks decode one after the other on the reading thread, and a fresh 64 MiB buffer
/// per block cost 16,384 page faults each (68,810 faults and 0.5 s of system time for a
/// 256 MiB extraction, two thirds of its CPU). One spare block is what the next block takes,
/// so the peak does not grow by it.
#[derive(Clone)]
pub struct Buffers {
    free: Arc<Mutex<FreeList>>,
    keep: usize,
    /// Keep one buffer even when it alone exceeds [`RECYCLE_BUDGET`].
    one_of_any_size: bool,
}

#[derive(Default)]
struct FreeList {
    bufs: Vec<Vec<u8>>,
    /// Sum of the held buffers' capacities, bytes.
    bytes: usize,
}

impl Buffers {
    /// A free list that holds at most `keep` buffers.
    pub fn new(keep: usize) -> Self {
        Buffers {
            free: Arc::new(Mutex::new(FreeList {
                bufs: Vec::with_capacity(keep),
                bytes: 0,
            })),
            keep,
            one_of_any_size: false,
        }
    }

    /// A free list that holds at most `keep` buffers (at least one), and one buffer of any
    /// size when it holds nothing else (see the type's doc).
    pub fn keeping_one(keep: usize) -> Self {
        Buffers {
            one_of_any_size: true,
            ..Buffers::new(keep.max(1))
        }
    }

    /// A recycled buffer (stale contents, see the type's doc) or a new empty one.
    pub fn take(&self) -> Vec<u8> {
        self.free
            .lock()
            .ok()
            .and_then(|mut f| {
                let b = f.bufs.pop()?;
                f.bytes -= b.capacity();
                Some(b)
            })
            .unwrap_or_default()
    }

    /// Hands `buf` back for reuse (freed instead when it has no capacity, or when `keep`
    /// buffers are held or it would take the held capacity past [`RECYCLE_BUDGET`]).
    pub fn give(&self, buf: Vec<u8>) {
        let cap = buf.capacity();
        if cap == 0 {
            return;
        }
        if let Ok(mut f) = self.free.lock()
            && f.bufs.len() < self.keep
            && (f.bytes + cap <= RECYCLE_BUDGET || (self.one_of_any_size && f.bufs.is_empty()))
        {
            f.bytes += cap;
            f.bufs.push(buf);
        }
    }
}

/// Most bytes of spare buffers a free list keeps for blocks of `block_size` bytes: 64 MiB.
/// Recycling saves page faults, which matter at fast levels and small blocks; a list of
/// 128 MiB level-9 blocks would add hundreds of MiB to the peak for nothing measurable.
pub const RECYCLE_BUDGET: usize = 64 << 20;

/// How many spare buffers a free list keeps for `in_flight` blocks of `block_size` bytes:
/// enough to cover every block in flight (`in_flight + 2`), within [`RECYCLE_BUDGET`]
/// (none at all for blocks above 32 MiB).
pub fn recycle_count(in_flight: usize, block_size: usize) -> usize {
    (in_flight + 2).min(RECYCLE_BUDGET / block_size.max(1) / 2)
}

/// The pool. `J` is a job, `R` its result.
pub struct OrderedPool<J: Send + 'static, R: Send + 'static> {
    job_tx: Option<SyncSender<(u64, J)>>,
    res_rx: Receiver<(u64, Result<R, String>)>,
    workers: Vec<JoinHandle<()>>,
    next_submit: u64,
    next_emit: u64,
    pending: BTreeMap<u64, R>,
    max_in_flight: usize,
}

/// A worker panicked: a bug in krypta, reported instead of hanging.
#[derive(Debug, thiserror::Error)]
#[error("internal error: a worker thread panicked: {0}")]
pub struct WorkerPanic(pub String);

impl<J: Send + 'static, R: Send + 'static> OrderedPool<J, R> {
    /// Starts `jobs` workers (at least 1). `init` makes each worker's state; `work` maps a job
    /// to a result. At most `max_in_flight` (at least `jobs`) jobs are outstanding at once.
    /// Errors: the OS refused a thread (its error); the workers already started are stopped
    /// and joined first, so a refused thread is an error the caller reports, never a panic.
    pub fn new<S, I, F>(
        jobs: usize,
        max_in_flight: usize,
        init: I,
        work: F,
    ) -> std::io::Result<Self>
    where
        I: Fn() -> S + Send + Sync + 'static,
        F: Fn(&mut S, J) -> R + Send + Sync + 'static,
    {
        let jobs = jobs.max(1);
        let max_in_flight = max_in_flight.max(jobs);
        let (job_tx, job_rx) = sync_channel::<(u64, J)>(max_in_flight);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (res_tx, res_rx) = channel();
        let init = Arc::new(init);
        let work = Arc::new(work);
        let mut workers = Vec::with_capacity(jobs);
        for i in 0..jobs {
            let spawned = {
                let job_rx = Arc::clone(&job_rx);
                let res_tx: Sender<(u64, Result<R, String>)> = res_tx.clone();
                let init = Arc::clone(&init);
                let work = Arc::clone(&work);
                std::thread::Builder::new()
                    .name(format!("krypta-worker-{i}"))
                    .spawn(move || {
                        let mut state = init();
                        loop {
                            let next = match job_rx.lock() {
                                Ok(rx) => rx.recv(),
                                Err(_) => return,
                            };
                            let Ok((seq, job)) = next else { return };
                            let out = catch_unwind(AssertUnwindSafe(|| work(&mut state, job)))
                                .map_err(|p| panic_message(&*p));
                            let failed = out.is_err();
                            if res_tx.send((seq, out)).is_err() || failed {
                                return;
                            }
                        }
                    })
            };
            match spawned {
                Ok(w) => workers.push(w),
                Err(e) => {
                    // Closing the job channel ends the workers already started.
                    drop(job_tx);
                    for w in workers {
                        let _ = w.join();
                    }
                    return Err(e);
                }
            }
        }
        Ok(OrderedPool {
            job_tx: Some(job_tx),
            res_rx,
            workers,
            next_submit: 0,
            next_emit: 0,
            pending: BTreeMap::new(),
            max_in_flight,
        })
    }

    /// Jobs submitted and not yet returned by [`OrderedPool::next`].
    pub fn in_flight(&self) -> usize {
        (self.next_submit - self.next_emit) as usize
    }

    /// True when another job may be submitted without exceeding the bound.
    pub fn has_capacity(&self) -> bool {
        self.in_flight() < self.max_in_flight
    }

    /// Submits a job. The caller must have checked [`OrderedPool::has_capacity`] (or taken a
    /// result with [`OrderedPool::next`]) so that the bound holds.
    pub fn submit(&mut self, job: J) -> Result<(), WorkerPanic> {
        debug_assert!(self.has_capacity());
        let seq = self.next_submit;
        self.next_submit += 1;
        match &self.job_tx {
            Some(tx) => tx
                .send((seq, job))
                .map_err(|_| WorkerPanic("workers stopped".into())),
            None => Err(WorkerPanic("pool finished".into())),
        }
    }

    /// The next result in submission order, waiting for it; `None` when nothing is in flight.
    pub fn next_result(&mut self) -> Result<Option<R>, WorkerPanic> {
        if self.in_flight() == 0 {
            return Ok(None);
        }
        loop {
            if let Some(r) = self.pending.remove(&self.next_emit) {
                self.next_emit += 1;
                return Ok(Some(r));
            }
            match self.res_rx.recv() {
                Ok((seq, Ok(r))) => {
                    self.pending.insert(seq, r);
                }
                Ok((_, Err(msg))) => return Err(WorkerPanic(msg)),
                Err(_) => return Err(WorkerPanic("all workers stopped".into())),
            }
        }
    }

    /// The next result if it is already finished, without waiting.
    pub fn try_next(&mut self) -> Result<Option<R>, WorkerPanic> {
        while let Ok(msg) = self.res_rx.try_recv() {
            match msg {
                (seq, Ok(r)) => {
                    self.pending.insert(seq, r);
                }
                (_, Err(msg)) => return Err(WorkerPanic(msg)),
            }
        }
        if let Some(r) = self.pending.remove(&self.next_emit) {
            self.next_emit += 1;
            return Ok(Some(r));
        }
        Ok(None)
    }
}

impl<J: Send + 'static, R: Send + 'static> Drop for OrderedPool<J, R> {
    fn drop(&mut self) {
        // Closing the job channel stops the workers once the queue is drained; results still
        // in the channel are dropped with it.
        self.job_tx = None;
        while self.res_rx.try_recv().is_ok() {}
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// What a caught panic says (its `&str` or `String` payload), or "unknown panic".
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader's decode workers: never more than the cores beside the reading thread,
    /// whatever `-j` asks (on 2 cores `-j 2` is one worker).
    #[test]
    fn decode_workers_leave_the_reading_thread_a_core() {
        let free = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .saturating_sub(1)
            .max(1);
        assert_eq!(decode_workers(0), free);
        assert_eq!(decode_workers(1), 1);
        assert_eq!(decode_workers(free + 1), free);
        assert_eq!(decode_workers(1000), free);
    }

    #[test]
    fn results_come_back_in_order_with_bounded_in_flight() {
        let mut pool = OrderedPool::new(
            4,
            6,
            || 0u64,
            |calls: &mut u64, x: u64| {
                *calls += 1;
                // Uneven work so results finish out of order.
                std::thread::sleep(std::time::Duration::from_micros((x % 7) * 50));
                x * 2
            },
        )
        .unwrap();
        let mut got = Vec::new();
        for i in 0..200u64 {
            while !pool.has_capacity() {
                got.push(pool.next_result().unwrap().unwrap());
            }
            assert!(pool.in_flight() < 6);
            pool.submit(i).unwrap();
        }
        while let Some(r) = pool.next_result().unwrap() {
            got.push(r);
        }
        assert_eq!(got, (0..200u64).map(|x| x * 2).collect::<Vec<_>>());
    }

    #[test]
    fn in_flight_bound_shrinks_for_big_blocks_but_keeps_workers_busy() {
        assert_eq!(max_in_flight(2, 4 << 20), 6);
        assert_eq!(max_in_flight(2, 128 << 20), 4);
        assert_eq!(max_in_flight(2, 256 << 20), 3);
        assert_eq!(max_in_flight(8, 256 << 20), 9);
        assert_eq!(max_in_flight(0, 0), 4);
    }

    #[test]
    fn recycling_covers_small_blocks_in_flight_and_skips_big_ones() {
        let mib = 1 << 20;
        assert_eq!(recycle_count(max_in_flight(1, 4 * mib), 4 * mib), 6);
        assert_eq!(recycle_count(max_in_flight(2, 4 * mib), 4 * mib), 8);
        assert_eq!(recycle_count(max_in_flight(2, 16 * mib), 16 * mib), 2);
        assert_eq!(recycle_count(max_in_flight(2, 32 * mib), 32 * mib), 1);
        assert_eq!(recycle_count(max_in_flight(2, 128 * mib), 128 * mib), 0);
        assert_eq!(recycle_count(max_in_flight(8, 64 << 10), 64 << 10), 20);
    }

    #[test]
    fn a_reader_list_keeps_one_block_of_any_size() {
        let big = 64 << 20;
        let plain = Buffers::new(recycle_count(2, big));
        plain.give(Vec::with_capacity(big + 64));
        assert_eq!(plain.take().capacity(), 0, "over the budget: freed");
        let one = Buffers::keeping_one(recycle_count(2, big));
        one.give(Vec::with_capacity(big + 64));
        one.give(Vec::with_capacity(big + 64));
        assert_eq!(one.take().capacity(), big + 64);
        assert_eq!(one.take().capacity(), 0, "only one");
    }

    #[test]
    fn buffers_are_reused_up_to_the_keep_bound() {
        let b = Buffers::new(2);
        assert!(b.take().capacity() == 0, "an empty list gives a new buffer");
        let mut v = Vec::with_capacity(1000);
        v.extend_from_slice(&[7u8; 10]);
        let ptr = v.as_ptr();
        b.give(v);
        let again = b.take();
        assert_eq!(again.as_ptr(), ptr, "the same allocation comes back");
        assert_eq!(again, vec![7u8; 10], "stale contents and length are kept");
        for n in [1usize, 2, 3] {
            b.give(vec![n as u8; 4]);
        }
        let held: Vec<Vec<u8>> = (0..3).map(|_| b.take()).collect();
        assert_eq!(held[0], vec![2u8; 4]);
        assert_eq!(held[1], vec![1u8; 4]);
        assert_eq!(
            held[2].capacity(),
            0,
            "the third buffer was freed, not kept"
        );
        b.give(Vec::new());
        assert_eq!(b.take().capacity(), 0);
    }

    #[test]
    fn recycled_buffers_are_bounded_in_bytes_whatever_keep_says() {
        // A reader's keep comes from the header's block size: claiming 64 KiB blocks gives a
        // large count, but 256 MiB buffers are never kept and the bytes stay within 64 MiB.
        let b = Buffers::new(512);
        b.give(Vec::with_capacity(256 << 20));
        assert_eq!(b.take().capacity(), 0, "a block over 64 MiB is freed");
        for _ in 0..5 {
            b.give(Vec::with_capacity(20 << 20));
        }
        let kept: Vec<Vec<u8>> = (0..5).map(|_| b.take()).collect();
        let n = kept.iter().filter(|v| v.capacity() > 0).count();
        assert_eq!(n, 3, "3 × 20 MiB fit in 64 MiB, the 4th does not");
        for v in kept {
            b.give(v);
        }
        assert_eq!(b.free.lock().unwrap().bytes, 3 * (20 << 20));
    }

    #[test]
    fn a_panicking_job_is_an_error_not_a_hang() {
        let mut pool = OrderedPool::new(
            2,
            2,
            || (),
            |_: &mut (), x: u32| {
                assert!(x != 1, "boom");
                x
            },
        )
        .unwrap();
        pool.submit(0).unwrap();
        pool.submit(1).unwrap();
        assert_eq!(pool.next_result().unwrap(), Some(0));
        let err = pool.next_result().unwrap_err();
        assert!(err.0.contains("boom"), "{err}");
    }
}
