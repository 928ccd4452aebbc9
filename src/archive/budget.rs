//! The reader's bound on the bytes it holds for frames in flight, taken from the frames
//! actually read rather than from the header's block size.
//!
//! Why: the header's block size is informational (and unauthenticated until the header tag
//! is checked, and chosen by the writer in any case). The reader used it to size its pipeline,
//! so a 105 KB archive of 256 MiB zero blocks whose header claimed 64 KiB blocks got
//! `2j + 2` blocks decoded ahead: 1.5–1.8 GB at `-j 2` (issue 12 #24). Now every byte a frame
//! holds is counted: its body from when the reader thread reads it until a worker has decoded
//! it, and its decoded block from then until the consumer is done with it.
//!
//! The rule, with `R` the largest block decoded so far in this scan (bytes, up to 256 MiB) and
//! `j` the number of workers: `limit = max(IN_FLIGHT_BUDGET, (j + 1) × R)` (512 MiB, or enough
//! for every worker to hold one block and the consumer one, which is what an honest archive of
//! such blocks needs to keep the workers busy: the same number of blocks in flight as the
//! header-based bound gave it).
//!
//! - The reader thread reads another frame only while the bytes held are below the limit (or
//!   nothing is in flight): [`ByteBudget::admits`], then [`ByteBudget::add_body`].
//! - A worker that verified a frame takes the bytes of its decoded block before decoding
//!   ([`ByteBudget::acquire`]), in frame order (a ticket per frame), waiting while the decoded
//!   blocks held plus this one exceed the limit — unless no decoded block is held at all,
//!   which is what guarantees progress: when the consumer waits for frame k it has released
//!   every block before k, and frames after k cannot take bytes before k. (Since a block is at
//!   most 256 MiB and the limit at least 512 MiB, that exception never exceeds the limit.)
//!   After decoding, the body is given back ([`ByteBudget::body_done`]); a frame that fails
//!   first just passes its turn ([`ByteBudget::skip`]).
//! - The consumer gives a block's bytes back once it has read all of it
//!   ([`ByteBudget::release`]).
//!
//! So, whatever the header says: decoded blocks held ≤ `limit`, and frame bodies held <
//! `limit` plus one body (the reader stops reading ahead once bodies and blocks together
//! reach the limit); together under `2 × limit + 256 MiB`. An honest archive gets exactly
//! the blocks in flight it got before (`(j + 1) × R` is what `j` busy workers and the
//! consumer need), and a crafted one costs what an honest archive with the same frames costs.
//! Closing the budget ([`ByteBudget::close`], when the scan ends early) wakes every waiting
//! worker.

use std::sync::{Condvar, Mutex};

use super::pipeline::IN_FLIGHT_BUDGET;

/// The budget was closed (the scan ended) while a worker waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

#[derive(Debug, Default)]
struct State {
    /// Bytes of frame bodies read and not yet decoded.
    bodies: u64,
    /// Bytes of decoded blocks not yet released by the consumer.
    blocks: u64,
    /// Largest decoded block taken so far, bytes.
    largest: u64,
    /// The ticket (frame number in this scan) whose turn it is to take block bytes.
    turn: u64,
    closed: bool,
    /// Most bytes held at once (bodies + blocks), for tests and measurements.
    peak: u64,
}

impl State {
    fn held(&self) -> u64 {
        self.bodies + self.blocks
    }
    fn note_peak(&mut self) {
        self.peak = self.peak.max(self.held());
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct ByteBudget {
    state: Mutex<State>,
    wake: Condvar,
    jobs: u64,
    base: u64,
}

impl ByteBudget {
    /// A budget for `jobs` workers with the standard base of [`IN_FLIGHT_BUDGET`] bytes.
    pub fn new(jobs: usize) -> Self {
        Self::with_base(jobs, IN_FLIGHT_BUDGET as u64)
    }

    /// A budget with another base, bytes (`OpenOptions::in_flight_budget`).
    pub fn with_base(jobs: usize, base: u64) -> Self {
        ByteBudget {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            jobs: jobs.max(1) as u64,
            base,
        }
    }

    fn limit(&self, st: &State) -> u64 {
        self.base.max((self.jobs + 1) * st.largest)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock only ever happens in a worker that the pool reports;
        // the counts are still usable for the remaining cleanup.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bytes held may grow by another frame: below the limit, or nothing in flight.
    pub fn admits(&self) -> bool {
        let st = self.lock();
        st.held() == 0 || st.held() < self.limit(&st)
    }

    /// A frame body of `n` bytes was read.
    pub fn add_body(&self, n: u64) {
        let mut st = self.lock();
        st.bodies += n;
        st.note_peak();
    }

    /// Waits until it is `ticket`'s turn and its decoded block of `n` bytes fits beside the
    /// decoded blocks held (or none is held), then counts it and passes the turn on.
    pub fn acquire(&self, ticket: u64, n: u64) -> Result<(), Closed> {
        let mut st = self.lock();
        loop {
            if st.closed {
                return Err(Closed);
            }
            if st.turn == ticket {
                st.largest = st.largest.max(n);
                if st.blocks == 0 || st.blocks + n <= self.limit(&st) {
                    break;
                }
            }
            st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st.blocks += n;
        st.turn += 1;
        st.note_peak();
        drop(st);
        self.wake.notify_all();
        Ok(())
    }

    /// Ticket `ticket`'s frame failed before decoding: waits for its turn, passes it on, and
    /// gives its body of `body` bytes back.
    pub fn skip(&self, ticket: u64, body: u64) {
        let mut st = self.lock();
        while !st.closed && st.turn != ticket {
            st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if st.turn == ticket {
            st.turn += 1;
        }
        st.bodies = st.bodies.saturating_sub(body);
        drop(st);
        self.wake.notify_all();
    }

    /// A frame body of `n` bytes was decoded (its buffer given back or become the block).
    pub fn body_done(&self, n: u64) {
        let mut st = self.lock();
        st.bodies = st.bodies.saturating_sub(n);
        drop(st);
        self.wake.notify_all();
    }

    /// The consumer is done with a decoded block of `n` bytes.
    pub fn release(&self, n: u64) {
        let mut st = self.lock();
        st.blocks = st.blocks.saturating_sub(n);
        drop(st);
        self.wake.notify_all();
    }

    /// Ends the scan: waiting workers return [`Closed`].
    pub fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_all();
    }

    /// Most bytes held at once so far.
    pub fn peak(&self) -> u64 {
        self.lock().peak
    }

    /// The limit now (it grows with the largest block seen), bytes.
    pub fn current_limit(&self) -> u64 {
        let st = self.lock();
        self.limit(&st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn the_limit_follows_the_largest_block_read_not_a_claim() {
        let b = ByteBudget::with_base(2, 1000);
        assert_eq!(b.current_limit(), 1000);
        b.add_body(10);
        b.acquire(0, 100).unwrap();
        assert_eq!(b.current_limit(), 1000, "3 × 100 is below the base");
        b.acquire(1, 600).unwrap();
        assert_eq!(b.current_limit(), 1800, "(2 + 1) × 600");
        assert_eq!(b.peak(), 710);
    }

    #[test]
    fn admission_stops_at_the_limit_and_resumes_on_release() {
        let b = ByteBudget::with_base(1, 1000);
        assert!(b.admits(), "nothing in flight");
        b.add_body(400);
        b.acquire(0, 400).unwrap();
        b.body_done(400);
        assert!(b.admits(), "400 < 1000");
        b.add_body(300);
        b.acquire(1, 300).unwrap();
        b.body_done(300);
        b.add_body(300);
        assert!(!b.admits(), "1000 held");
        b.release(400);
        assert!(b.admits());
    }

    #[test]
    fn a_block_waits_for_room_in_frame_order_and_never_deadlocks() {
        // Base 1000, one worker: the limit is max(1000, 2 × 400) = 1000.
        let b = Arc::new(ByteBudget::with_base(1, 1000));
        b.acquire(0, 400).unwrap();
        b.acquire(1, 400).unwrap();
        // Frame 2 waits for room (800 + 400 > 1000); frame 3 cannot go before it.
        let later = {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.acquire(3, 10))
        };
        let first = {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.acquire(2, 400))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!first.is_finished() && !later.is_finished());
        // The consumer is done with frame 0: frame 2 fits (800), then frame 3 (810).
        b.release(400);
        first.join().unwrap().unwrap();
        later.join().unwrap().unwrap();
        assert_eq!(b.peak(), 810);
    }

    #[test]
    fn bodies_read_ahead_do_not_hold_back_decoding_but_stop_reading() {
        let b = ByteBudget::with_base(1, 1000);
        b.add_body(900);
        assert!(b.admits());
        b.add_body(200);
        assert!(!b.admits(), "1100 held");
        // The frames' blocks still go (decoded blocks alone are within the limit).
        b.acquire(0, 700).unwrap();
        b.body_done(900);
        assert_eq!(b.peak(), 1800);
        assert_eq!(b.current_limit(), 1400, "(1 + 1) × 700");
        assert!(b.admits(), "900 held: 700 of block and 200 of body");
    }

    #[test]
    fn a_block_larger_than_the_room_goes_when_no_block_is_held() {
        let b = ByteBudget::with_base(1, 100);
        // 300 > the base, and the limit is max(100, 2 × 300) = 600 anyway; with no decoded
        // block held it goes whatever, as the consumer can only be waiting for it.
        b.acquire(0, 300).unwrap();
        assert_eq!(b.peak(), 300);
    }

    #[test]
    fn a_failed_frame_passes_its_turn_and_close_wakes_waiters() {
        let b = Arc::new(ByteBudget::with_base(1, 100));
        b.add_body(50);
        b.skip(0, 50);
        b.acquire(1, 80).unwrap();
        b.acquire(2, 80).unwrap();
        let waiting = {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.acquire(3, 80))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !waiting.is_finished(),
            "160 + 80 > max(100, 2 × 80) while frames 1 and 2 are held"
        );
        b.close();
        assert_eq!(waiting.join().unwrap(), Err(Closed));
    }
}
