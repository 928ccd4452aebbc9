//! How a base's frames are fetched (split from `base`): from a file, one positioned read per
//! frame; from object storage, whole frames ahead in one request when the frames are read in
//! order, and the binding's tags many at a time (`base_binding::fetch_tags`).
//!
//! Why: every base frame was one ranged GET, in turn (the workers share the base's source
//! behind a lock). A base of 64 KiB blocks has ~3,000 frames per 200 MB, and writing a delta
//! against it walks all of them (the map walk), as reading one in order does: measured on
//! loopback SeaweedFS, `c --base s3://…` of a 200 MB file took 9.4 s and 6,111 requests, most
//! of it one round trip per frame; at a cloud store's 20–50 ms per request, minutes. A read
//! that starts where the last one ended (a walk, a region's next frame) now fetches whole
//! frames ahead — twice as many bytes as the last such fetch, up to [`AHEAD_BYTES`] — and
//! serves the next reads from them; any other read fetches its frame alone, so a region in
//! the middle of a large base costs what it did. The doubling keeps what a broken run fetched
//! for nothing small: extracting /usr/share/doc (4,993 entries) against its 46 MB base from
//! loopback SeaweedFS fetched 78 MB of it at the default `-j` and 91 MB at `-j 1` (the cache
//! decodes some frames twice), against 74 and 88 MB with every frame fetched alone and 77 and
//! 102 MB with 8 MiB fetched ahead at once; requests 47 and 55 against 77 and 84.
//! A frame read out of order is fetched alone without replacing the window (`Window::read`):
//! with one damaged frame among a base's 48, which each region that needs it reads again,
//! `x --base` from loopback SeaweedFS fetched 4.37 MB of the 3.1 MB base in 78.8 requests on
//! average (40 runs; the order of the reads varies), the frames after the damaged one again,
//! and 4.09 MB in 72.1 when those reads left the window.
//! A base with recovery data is read through its checks (`store::healing`), as before: those
//! reads go through the source, which repairs what it reads.

use std::sync::Arc;

use super::base_binding::{binding_of, fetch_tags, read_exact_at};
use super::*;
use crate::store::Refetch;

/// Most bytes of whole frames one request fetches ahead (8 MiB, the archive reader's GET
/// size: `store::s3::source::CHUNK`); a frame larger than this is fetched alone.
pub(super) const AHEAD_BYTES: u64 = 8 << 20;

/// Frames fetched ahead from object storage: the bytes at `start..start + bytes.len()`, where
/// the last read ended and how long the last frame read alone was.
#[derive(Default)]
pub(crate) struct Window {
    start: u64,
    bytes: Vec<u8>,
    last_end: Option<u64>,
    last_alone: u64,
}

impl Window {
    /// Reads the `buf.len()` bytes at `at` (one whole frame) from the window, or with `fetch`
    /// (`run_end(reach)`: where the run of whole frames from this one within `reach` bytes
    /// of it ends, [`BaseArchive::frames_end_within`]).
    ///
    /// A read the window does not hold that continues the window, or the frame read alone
    /// just before it, fetches twice that run ahead (at least this frame, at most
    /// [`AHEAD_BYTES`]) into the window. Any other read fetches its frame alone into `buf` and
    /// leaves the window as it is: a frame read out of order (a worker's region while the
    /// prefetch thread walks on, a damaged frame each region that needs it reads again) threw
    /// the window away, and the frames after it were fetched a second time, one by one.
    fn read(
        &mut self,
        at: u64,
        buf: &mut [u8],
        run_end: impl FnOnce(u64) -> u64,
        fetch: &dyn Refetch,
    ) -> std::io::Result<()> {
        let len = buf.len() as u64;
        let end = at + len;
        let window_end = self.start + self.bytes.len() as u64;
        if self.start <= at && end <= window_end {
            let rel = (at - self.start) as usize;
            buf.copy_from_slice(&self.bytes[rel..rel + buf.len()]);
            self.last_end = Some(end);
            return Ok(());
        }
        let run = if !self.bytes.is_empty() && at == window_end {
            self.bytes.len() as u64
        } else if self.last_end == Some(at) {
            self.last_alone
        } else {
            0
        };
        let upto = if run == 0 {
            end
        } else {
            run_end((run * 2).min(AHEAD_BYTES))
        };
        if upto <= end {
            fetch.fetch(at, buf)?;
            self.last_end = Some(end);
            self.last_alone = len;
            return Ok(());
        }
        self.bytes.clear();
        self.start = at;
        self.bytes.resize((upto - at) as usize, 0);
        if let Err(e) = fetch.fetch(at, &mut self.bytes) {
            self.bytes.clear();
            return Err(e);
        }
        buf.copy_from_slice(&self.bytes[..buf.len()]);
        self.last_end = Some(end);
        Ok(())
    }
}

impl BaseArchive {
    /// Reads data frame `seq`, at `at`, into `buf` (its whole length), from the window when
    /// it holds it ([`Window::read`]); returns the source's [`Refetch`] for the frame's second
    /// look.
    pub(super) fn read_frame_bytes(
        &self,
        seq: u64,
        at: u64,
        buf: &mut [u8],
    ) -> std::io::Result<Option<Arc<dyn Refetch>>> {
        let refetch = self.refetch.clone();
        let Some(fetch) = &self.direct else {
            let input = self.input.lock().expect("base input lock");
            read_exact_at(&**input, at, buf)?;
            return Ok(refetch);
        };
        let end = at + buf.len() as u64;
        let mut w = self.window.lock().expect("base window lock");
        w.read(
            at,
            buf,
            |reach| self.frames_end_within(seq, end, reach),
            &**fetch,
        )?;
        Ok(refetch)
    }

    /// The end of the run of data frames that starts with frame `seq` (ending at `end`) and
    /// lies within `reach` bytes of its start: the frames are contiguous, so one request
    /// holds them (at least frame `seq`). The run stops at a frame that does not start where
    /// the one before it ends, among them a frame a damaged base's walk did not find
    /// ([`MISSING_FRAME`](super::base_walk::MISSING_FRAME): its offset is no place, and
    /// adding its length to it overflowed, a panic in a debug build).
    fn frames_end_within(&self, seq: u64, end: u64, reach: u64) -> u64 {
        let at = self.offsets[seq as usize];
        let mut upto = end;
        for j in seq as usize + 1..self.offsets.len() {
            if self.offsets[j] != upto {
                break;
            }
            let len =
                (FRAME_HEADER_LEN + self.index().frame_body_lens[j] as usize + TAG_LEN) as u64;
            if upto + len - at > reach {
                break;
            }
            upto += len;
        }
        upto
    }

    /// Whether the binding is `want` with its tags fetched again (`second_look`): for a
    /// base in object storage whose binding differed as first read, before it is called
    /// another archive or damaged. False for a local base (read twice, the same bytes).
    pub(crate) fn binding_fetched_again_is(&self, want: [u8; 32]) -> bool {
        let Some(r) = &self.refetch else {
            return false;
        };
        if !r.may_look_again() {
            return false;
        }
        match fetch_tags(&self.at_tags, &**r).map(|tags| binding_of(&self.id, &tags)) {
            Ok(b) if b == want => {
                r.healed();
                true
            }
            Ok(_) => {
                r.failed();
                false
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// An object whose byte at offset `o` is `o % 251`, of `len` bytes; records each fetch
    /// (offset, length), and fails the ones at `fail`.
    struct Object {
        len: u64,
        fetches: Mutex<Vec<(u64, u64)>>,
        fail: Mutex<Option<u64>>,
    }

    impl Refetch for Object {
        fn fetch(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            self.fetches
                .lock()
                .unwrap()
                .push((offset, buf.len() as u64));
            if *self.fail.lock().unwrap() == Some(offset) {
                return Err(std::io::ErrorKind::ConnectionReset.into());
            }
            if offset + buf.len() as u64 > self.len {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            for (i, b) in buf.iter_mut().enumerate() {
                *b = ((offset + i as u64) % 251) as u8;
            }
            Ok(())
        }
        fn healed(&self) {}
    }

    /// Frames of these lengths, contiguous from offset 100.
    struct Frames(Vec<(u64, u64)>);

    impl Frames {
        fn new(lens: &[u64]) -> Frames {
            let mut at = 100;
            Frames(
                lens.iter()
                    .map(|&l| {
                        at += l;
                        (at - l, l)
                    })
                    .collect(),
            )
        }
        /// [`BaseArchive::frames_end_within`] of these frames.
        fn run_end(&self, seq: usize, reach: u64) -> u64 {
            let (at, len) = self.0[seq];
            let mut upto = at + len;
            for &(a, l) in &self.0[seq + 1..] {
                if a != upto || upto + l - at > reach {
                    break;
                }
                upto += l;
            }
            upto
        }
        /// Reads frame `seq` through `w` and checks its bytes.
        fn read(&self, w: &mut Window, o: &Object, seq: usize) -> std::io::Result<()> {
            let (at, len) = self.0[seq];
            let mut buf = vec![0xeeu8; len as usize];
            w.read(at, &mut buf, |reach| self.run_end(seq, reach), o)?;
            for (i, &b) in buf.iter().enumerate() {
                assert_eq!(b, ((at + i as u64) % 251) as u8, "frame {seq} byte {i}");
            }
            Ok(())
        }
    }

    fn object(frames: &Frames) -> Object {
        let (at, len) = *frames.0.last().unwrap();
        Object {
            len: at + len + 64,
            fetches: Mutex::new(Vec::new()),
            fail: Mutex::new(None),
        }
    }

    #[test]
    fn frames_read_in_order_come_in_runs_that_double_and_hold_the_right_bytes() {
        let f = Frames::new(&[10; 40]);
        let o = object(&f);
        let mut w = Window::default();
        for seq in 0..40 {
            f.read(&mut w, &o, seq).unwrap();
        }
        // 1, 2, 4, 8, 16 frames, and the 9 left.
        let lens: Vec<u64> = o.fetches.lock().unwrap().iter().map(|f| f.1 / 10).collect();
        assert_eq!(lens, [1, 2, 4, 8, 16, 9]);
    }

    #[test]
    fn a_frame_read_out_of_order_is_fetched_alone_and_leaves_the_run() {
        let f = Frames::new(&[10; 40]);
        let o = object(&f);
        let mut w = Window::default();
        for seq in 0..4 {
            f.read(&mut w, &o, seq).unwrap();
        }
        // The window holds frames 3..7; frame 30 (another region) and frame 1 again (a
        // damaged frame read again) are fetched alone, and 4..7 still come from the window.
        f.read(&mut w, &o, 30).unwrap();
        f.read(&mut w, &o, 1).unwrap();
        for seq in 4..7 {
            f.read(&mut w, &o, seq).unwrap();
        }
        let fetches = o.fetches.lock().unwrap().clone();
        assert_eq!(
            fetches,
            [(100, 10), (110, 20), (130, 40), (400, 10), (110, 10)],
            "{fetches:?}"
        );
        // Frame 7 continues the window: 8 frames ahead.
        f.read(&mut w, &o, 7).unwrap();
        assert_eq!(o.fetches.lock().unwrap().last(), Some(&(170, 80)));
    }

    #[test]
    fn a_failed_fetch_leaves_no_bytes_behind() {
        let f = Frames::new(&[10; 20]);
        let o = object(&f);
        let mut w = Window::default();
        // Frame 0 alone, 1..3 in the window; frame 3's run (3..7) fails.
        for seq in 0..3 {
            f.read(&mut w, &o, seq).unwrap();
        }
        *o.fail.lock().unwrap() = Some(130);
        assert!(f.read(&mut w, &o, 3).is_err());
        *o.fail.lock().unwrap() = None;
        // Frame 2 (held before the failure) and on: the right bytes (checked by `read`),
        // fetched anew (the failed run left nothing, and the window it replaced is gone).
        for seq in 2..8 {
            f.read(&mut w, &o, seq).unwrap();
        }
        let fetches = o.fetches.lock().unwrap().clone();
        assert_eq!(
            &fetches[2..],
            [(130, 40), (120, 10), (130, 20), (150, 40)],
            "{fetches:?}"
        );
    }

    #[test]
    fn a_run_stops_where_the_frames_do_not_follow_or_reach_past_the_limit() {
        // Frames of 3 MiB: a run of two is 6 MiB, three would pass AHEAD_BYTES.
        let mib = 1 << 20;
        let mut f = Frames::new(&[3 * mib; 6]);
        // Frame 4 is not where frame 3 ends (a gap, or a frame the walk did not find).
        f.0[4].0 += 7;
        f.0[5].0 += 7;
        let o = object(&f);
        let mut w = Window::default();
        for seq in 0..6 {
            f.read(&mut w, &o, seq).unwrap();
        }
        let fetches: Vec<(u64, u64)> = o.fetches.lock().unwrap().clone();
        let runs: Vec<u64> = fetches.iter().map(|f| f.1 / (3 * mib)).collect();
        // 0 alone; 1..3; 3 alone (4 does not follow it); 4 alone (out of order); 5.
        assert_eq!(runs, [1, 2, 1, 1, 1], "{fetches:?}");
        // A frame larger than AHEAD_BYTES: alone, in order or not.
        let f = Frames::new(&[9 * mib; 3]);
        let o = object(&f);
        let mut w = Window::default();
        for seq in 0..3 {
            f.read(&mut w, &o, seq).unwrap();
        }
        let runs: Vec<u64> = o
            .fetches
            .lock()
            .unwrap()
            .iter()
            .map(|f| f.1 / (9 * mib))
            .collect();
        assert_eq!(runs, [1, 1, 1]);
    }
}
