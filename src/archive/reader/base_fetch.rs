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
//! A base with recovery data is read through its checks (`store::healing`), as before: those
//! reads go through the source, which repairs what it reads.

use std::sync::Arc;

use super::base_binding::{binding_of, fetch_tags, read_exact_at};
use super::*;
use crate::store::Refetch;

/// Most bytes of whole frames one request fetches ahead (8 MiB, the archive reader's GET
/// size: `store::s3::source::CHUNK`); a frame larger than this is fetched alone.
pub(super) const AHEAD_BYTES: u64 = 8 << 20;

/// Frames fetched ahead from object storage: the bytes at `start..start + bytes.len()`, and
/// where the last read ended.
#[derive(Default)]
pub(crate) struct Window {
    start: u64,
    bytes: Vec<u8>,
    last_end: Option<u64>,
}

impl BaseArchive {
    /// Reads data frame `seq`, at `at`, into `buf` (its whole length), from the window when
    /// it holds it (module doc); returns the source's [`Refetch`] for the frame's second look.
    pub(super) fn read_frame_bytes(
        &self,
        seq: u64,
        at: u64,
        buf: &mut [u8],
    ) -> std::io::Result<Option<Arc<dyn Refetch>>> {
        let input = self.input.lock().expect("base input lock");
        let refetch = input.refetcher();
        let Some(fetch) = refetch.clone().filter(|_| input.heal_report().is_none()) else {
            read_exact_at(&**input, at, buf)?;
            return Ok(refetch);
        };
        drop(input);
        let mut w = self.window.lock().expect("base window lock");
        let end = at + buf.len() as u64;
        let held = w.start <= at && end <= w.start + w.bytes.len() as u64;
        if !held {
            // In order: twice the last run, at least this frame, at most AHEAD_BYTES.
            let reach = if w.last_end == Some(at) {
                (w.bytes.len() as u64 * 2).min(AHEAD_BYTES)
            } else {
                0
            };
            let upto = self.frames_end_within(seq, end, reach);
            w.bytes.clear();
            w.start = at;
            w.bytes.resize((upto - at) as usize, 0);
            if let Err(e) = fetch.fetch(at, &mut w.bytes) {
                w.bytes.clear();
                return Err(e);
            }
        }
        let rel = (at - w.start) as usize;
        buf.copy_from_slice(&w.bytes[rel..rel + buf.len()]);
        w.last_end = Some(end);
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
        let Some(r) = self.input.lock().ok().and_then(|i| i.refetcher()) else {
            return false;
        };
        if !r.may_look_again() {
            return false;
        }
        match fetch_tags(&self.at_tags, &*r).map(|tags| binding_of(&self.id, &tags)) {
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
