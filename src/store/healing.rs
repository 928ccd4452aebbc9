//! Transparent repair on read: a [`Source`] that presents only the protected bytes P of an
//! archive with a recovery section (docs/FORMAT.md §15) and repairs them as they are read.
//!
//! Every read is widened to whole 4 KiB shards, and each shard is checked against its XXH3-64
//! from the section's checksum table (fetched 64 packets, i.e. one segment's checksums, per
//! read). A shard that fails, or is lost (`super::lost`), makes the source rebuild its segment
//! by Reed–Solomon ([`crate::recovery::repair_segment`], keyless) and serve the repaired
//! bytes from then on. A segment beyond the recovery data is served as read: the archive
//! reader's own checks (frame tags, checksums) then find the damage and salvage reads past
//! it. What was repaired, and what could not be, is in [`HealReport`], which the commands
//! turn into warnings.
//!
//! # Choices, and why
//!
//! - **Verify every shard read, not only after a frame fails.** The reader's checks cover the
//!   frames, but the header, the footer and the bytes between frames are parsed before any
//!   tag is checked, and a damaged header would be reported as "wrong password or key". With
//!   the shard checksums the reader never sees a damaged byte that the recovery data can
//!   repair, whatever structure holds it, and XXH3-64 costs about 1/20 of the BLAKE3 or MAC
//!   work the reader does on the same bytes anyway. The checksum table is 0.2% of P.
//! - **One repaired segment is kept** (up to 128 MiB + its recovery shards while decoding):
//!   the reader reads front to back, so a segment is repaired once; reading far away (the
//!   index) and coming back repairs again rather than holding several segments.
//! - **The source ends at L.** The reader finds the footer at L − 64 exactly as in an archive
//!   without recovery data, and a read-ahead hint never fetches the section from a remote
//!   store.
//! - **Only for seekable sources.** A pipe cannot be read twice; reading from one, the section
//!   after the footer is left unread and damage is salvaged by the reader.

use std::collections::BTreeSet;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Mutex;

use super::lost::bytes_lost;
pub use super::whole::Whole;
use super::{Counters, Source};
use crate::recovery::{
    BeyondRepair, ByteSource, Locate, Located, RecoveryError, RepairedSegment, TableCache, locate,
    packet_valid, repair_segment, xxh3,
};

/// Most bytes read from the inner source per refill of the sequential window (whole
/// shards). A refill after a seek reads [`FIRST_WINDOW`], and each sequential refill twice
/// the last, up to this: `info` or a selective extraction from object storage fetches a few
/// shards more than it asks for, not a mebibyte.
const WINDOW: u64 = 1 << 20;
/// The first refill after a seek.
const FIRST_WINDOW: u64 = 64 << 10;

/// What a [`HealingSource`] has done so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealReport {
    /// The section found.
    pub located: Located,
    /// Segments rebuilt by Reed–Solomon (each counted once).
    pub repaired_segments: BTreeSet<u64>,
    /// Data shards rebuilt in them.
    pub rebuilt_shards: u64,
    /// Segments beyond the recovery data (served as read).
    pub beyond: Vec<BeyondRepair>,
    /// Other failures of a repair (a rebuilt shard failing its checksum, a read error while
    /// repairing), per segment.
    pub failed: Vec<(u64, String)>,
    /// Segments where more checksums are lost (both descriptor copies damaged) than the
    /// recovery data can stand in for, and no shard is known to be damaged: served as read,
    /// checked by the archive's own tags only.
    pub unverified_segments: BTreeSet<u64>,
    /// Bytes inserted (positive) or removed (negative) in one place, and where: undone while
    /// reading ([`super::shifted::Shifted`], `crate::recovery::realign`). None for an
    /// archive of the length first written.
    pub edit: Option<(u64, i64)>,
}

impl HealReport {
    /// Bytes of protected data rebuilt (whole shards).
    pub fn rebuilt_bytes(&self) -> u64 {
        (self.rebuilt_shards * u64::from(self.located.layout.params.shard_size))
            .min(self.located.layout.params.protected_len)
    }
}

/// The state behind the lock (`Source::read_at` takes `&self`).
struct State {
    table: TableCache,
    /// The last repaired segment.
    repaired: Option<RepairedSegment>,
    report: HealReport,
}

/// A [`Source`] over the protected bytes of an archive with a recovery section (module doc).
pub struct HealingSource {
    /// The whole file or object (locked only by `read_at`, which takes `&self`).
    inner: Mutex<Box<dyn Source>>,
    located: Located,
    /// Sequential position in P.
    pos: u64,
    /// Where the inner source's sequential position is, when known.
    inner_pos: Option<u64>,
    /// Checked (or repaired) bytes `win_start..win_start + window.len()`.
    window: Vec<u8>,
    win_start: u64,
    /// Shared with [`HealingSource::report_handle`], so that what reading found can be read
    /// after the source was handed on and dropped.
    state: std::sync::Arc<Mutex<State>>,
}

fn report_of(state: &Mutex<State>) -> HealReport {
    state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .report
        .clone()
}

/// The inner source behind its lock, for the methods that take `&mut self` (no locking
/// needed; a field, so the other fields stay borrowable).
fn inner_mut(inner: &mut Mutex<Box<dyn Source>>) -> &mut (dyn Source + 'static) {
    &mut **inner.get_mut().unwrap_or_else(|p| p.into_inner())
}

/// How [`protect`] looks for the section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search {
    /// Only the trailer in the last 80 bytes (one small read): the common case.
    Trailer,
    /// The trailer, then a backward scan of the whole source for a descriptor packet (a
    /// damaged or cut-off tail).
    Scan,
}

/// Wraps a seekable `inner` in a [`HealingSource`] when a recovery section is found; gives
/// `inner` back otherwise (also for a pipe). `path` names the archive in errors.
pub fn protect(
    mut inner: Box<dyn Source>,
    path: &Path,
    search: Search,
) -> crate::Result<Result<HealingSource, Box<dyn Source>>> {
    if !inner.seekable() {
        return Ok(Err(inner));
    }
    let len = match inner.length() {
        Ok(Some(len)) => len,
        Ok(None) => return Ok(Err(inner)),
        Err(e) => return Err(crate::Error::io(path, "seek", e)),
    };
    let found = {
        let whole = Whole::new(&mut *inner, len);
        locate(
            &whole,
            &Locate {
                protected_len: None,
                scan: search == Search::Scan,
            },
        )
    };
    match found {
        Ok(located) => {
            inner
                .seek_to(0)
                .map_err(|e| crate::Error::io(path, "seek", e))?;
            Ok(Ok(HealingSource::new(inner, located)))
        }
        Err(RecoveryError::NotFound { .. }) => {
            // One run of bytes inserted or removed (a bad copy): the trailer still ends the
            // file. Looked for only with a scan (the header announces recovery data); it
            // reads the whole archive once.
            let realigned = if search == Search::Scan {
                let whole = Whole::new(&mut *inner, len);
                crate::recovery::realign(&whole)
                    .ok()
                    .flatten()
                    .map(|(view, located)| (view.edit(), located))
            } else {
                None
            };
            inner
                .seek_to(0)
                .map_err(|e| crate::Error::io(path, "seek", e))?;
            Ok(match realigned {
                Some((edit, located)) => {
                    let shifted =
                        super::shifted::Shifted::new(inner, edit, located.layout.file_len);
                    let h = HealingSource::new(Box::new(shifted), located);
                    h.state
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .report
                        .edit = Some(edit);
                    Ok(h)
                }
                None => Err(inner),
            })
        }
        Err(source) => Err(crate::Error::Recovery {
            path: path.into(),
            source,
        }),
    }
}

/// Whether seekable `inner` ends with an intact recovery trailer whose file length is not
/// `inner`'s (bytes inserted or removed in one place: `crate::recovery::realign`): one read
/// of the last 80 bytes. The reader asks it of a file without the krypta magic, which an
/// edit in its first bytes leaves so, before searching it whole with [`protect`].
pub fn ends_with_shifted_trailer(inner: &mut (dyn Source + 'static)) -> bool {
    let Ok(Some(len)) = inner.length() else {
        return false;
    };
    let whole = Whole::new(inner, len);
    matches!(crate::recovery::shifted_trailer(&whole), Ok(Some(_)))
}

/// When seekable `inner` ends with an intact recovery trailer that says it was written
/// longer, by more bytes than its recovery data can rebuild: (bytes missing, bytes written,
/// bytes the recovery data rebuilds at most). One read of the last 80 bytes.
pub fn missing_beyond_recovery(inner: &mut (dyn Source + 'static)) -> Option<(u64, u64, u64)> {
    let Ok(Some(len)) = inner.length() else {
        return None;
    };
    let whole = Whole::new(inner, len);
    let (lay, missing) = crate::recovery::missing_beyond_recovery(&whole).ok()??;
    Some((missing, lay.file_len, crate::recovery::rebuildable(&lay)))
}

impl HealingSource {
    /// Wraps `inner` (positioned at 0), whose section is `located`.
    pub fn new(inner: Box<dyn Source>, located: Located) -> HealingSource {
        HealingSource {
            inner: Mutex::new(inner),
            located,
            pos: 0,
            inner_pos: Some(0),
            window: Vec::new(),
            win_start: 0,
            state: std::sync::Arc::new(Mutex::new(State {
                table: TableCache::new(located.layout),
                repaired: None,
                report: HealReport {
                    located,
                    repaired_segments: BTreeSet::new(),
                    rebuilt_shards: 0,
                    beyond: Vec::new(),
                    failed: Vec::new(),
                    unverified_segments: BTreeSet::new(),
                    edit: None,
                },
            })),
        }
    }

    fn len(&self) -> u64 {
        self.located.layout.params.protected_len
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, Box<dyn Source>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Checks (and where needed repairs) `raw`, the protected bytes at `start` (a multiple of
    /// the shard size) as read; `got` of them were actually read (the rest is missing).
    fn heal(&mut self, start: u64, raw: &mut [u8], got: usize) {
        let whole = Whole::new(inner_mut(&mut self.inner), self.located.source_len);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        heal_bytes(&mut st, &whole, &self.located, start, raw, got);
    }

    /// Reads `len` protected bytes at `start` (a multiple of the shard size), checked and
    /// repaired, sequentially when the inner position allows it.
    fn fetch(&mut self, start: u64, len: usize) -> io::Result<Vec<u8>> {
        // The window's buffer is reused: no allocation (and page faults) per refill.
        let mut raw = std::mem::take(&mut self.window);
        raw.clear();
        raw.resize(len, 0);
        let inner = inner_mut(&mut self.inner);
        if self.inner_pos != Some(start) {
            inner.seek_to(start)?;
        }
        let mut got = 0;
        while got < len {
            match inner.read(&mut raw[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // An unreadable region: what follows is missing; the recovery data may
                // rebuild it (read again shard by shard while repairing).
                Err(e) if bytes_lost(&e) => break,
                // The medium could not be asked: an I/O error, not damage.
                Err(e) => {
                    self.inner_pos = None;
                    return Err(e);
                }
            }
        }
        self.inner_pos = if got == len {
            Some(start + len as u64)
        } else {
            None
        };
        self.heal(start, &mut raw, got);
        Ok(raw)
    }

    /// What has been repaired so far.
    pub fn report(&self) -> HealReport {
        report_of(&self.state)
    }

    /// [`HealingSource::report`], callable after the source itself was handed on (to a
    /// reader that drops it when it fails).
    pub fn report_handle(&self) -> impl Fn() -> HealReport + use<> {
        let state = std::sync::Arc::clone(&self.state);
        move || report_of(&state)
    }

    /// Checks the parts of the section that reading P does not touch: every recovery shard
    /// against its checksum, both copies of every descriptor packet, and the trailer (`test`).
    /// Reads the section once (about p% of P).
    pub fn check_section(&mut self) -> SectionCheck {
        let located = self.located;
        let layout = located.layout;
        let whole = Whole::new(inner_mut(&mut self.inner), located.source_len);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let s = u64::from(layout.params.shard_size);
        let mut check = SectionCheck::default();
        let mut buf = vec![0u8; (4 << 20) as usize];
        for g in 0..layout.segments {
            let seg = layout.segment(g);
            let mut j = 0;
            while j < seg.recovery_shards {
                let n = (seg.recovery_shards - j).min(buf.len() as u64 / s);
                let at = seg.recovery_offset + j * s;
                let b = &mut buf[..(n * s) as usize];
                let whole_read = at + n * s <= located.source_len && whole.read_at(at, b).is_ok();
                for (i, shard) in b.chunks_exact_mut(s as usize).enumerate() {
                    let off = at + i as u64 * s;
                    // A block that does not read is read again shard by shard, so a cut or
                    // an unreadable sector costs the shards it holds, not the block.
                    let readable = whole_read
                        || (off + s <= located.source_len && whole.read_at(off, shard).is_ok());
                    let sum = st.table.recovery_checksum(&whole, g, j + i as u64);
                    if !readable || sum != Some(xxh3(shard)) {
                        check.damaged_recovery_shards += 1;
                    }
                }
                j += n;
            }
        }
        let mut pk = [0u8; crate::recovery::PACKET_LEN];
        for copy in 0..2u8 {
            for i in 0..layout.packets {
                let off = layout.packet_offset(copy, i);
                let ok = off + pk.len() as u64 <= located.source_len
                    && whole.read_at(off, &mut pk).is_ok()
                    && packet_valid(&layout, copy, i, &pk);
                if !ok {
                    check.damaged_packets += 1;
                }
            }
        }
        check.padding_damaged = !crate::recovery::padding_ok(&whole, &layout);
        check.trailer_damaged = located.found_by != crate::recovery::FoundBy::Trailer;
        check.length_differs = located.source_len != layout.file_len || st.report.edit.is_some();
        check
    }
}

/// What [`HealingSource::check_section`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SectionCheck {
    /// Recovery shards that fail their checksum or cannot be read (or whose checksum is
    /// lost).
    pub damaged_recovery_shards: u64,
    /// Descriptor packets (of both copies) that are damaged or missing.
    pub damaged_packets: u64,
    /// The trailer is damaged or missing (the section was found by a scan).
    pub trailer_damaged: bool,
    /// The zero padding of the section holds other bytes.
    pub padding_damaged: bool,
    /// The file is longer or shorter than the section says.
    pub length_differs: bool,
}

/// The shard check and repair behind every read (module doc).
fn heal_bytes(
    st: &mut State,
    whole: &Whole<'_>,
    located: &Located,
    start: u64,
    raw: &mut [u8],
    got: usize,
) {
    let layout = located.layout;
    let s = layout.params.shard_size as usize;
    // Segments with a shard that fails (true) or only shards whose checksum is lost (false).
    let mut bad_segments: std::collections::BTreeMap<u64, bool> = Default::default();
    let mut pad = vec![0u8; s];
    // The last shard of P is checked padded with zeros to the shard size.
    let mut differs = |shard: &[u8], sum: u64| {
        if shard.len() == s {
            return xxh3(shard) != sum;
        }
        pad[..shard.len()].copy_from_slice(shard);
        pad[shard.len()..].fill(0);
        xxh3(&pad) != sum
    };
    let refetch = whole.refetcher();
    for (i, shard) in raw.chunks_mut(s).enumerate() {
        let off = start + (i * s) as u64;
        let index = off / s as u64;
        let have = got.saturating_sub(i * s).min(shard.len());
        let verdict = if have < shard.len() {
            Some(true)
        } else {
            match st.table.data_checksum(whole, index) {
                // Lost with both descriptor copies: rebuilt when the segment can stand it
                // (the lost checksums count as erasures), else served as read and left to
                // the frame tags.
                None => Some(false),
                Some(sum) if !differs(shard, sum) => None,
                // Bytes from a network that fail are fetched again once before the
                // segment is rebuilt (`super::Refetch`): a byte changed in transit is not
                // damage to repair, and the store's copy may be intact.
                Some(sum) => match &refetch {
                    Some(r) => {
                        let mut again = vec![0u8; shard.len()];
                        match r.refetch(off, &mut again) {
                            Ok(()) if !differs(&again, sum) => {
                                shard.copy_from_slice(&again);
                                r.healed();
                                None
                            }
                            Ok(()) => {
                                r.failed();
                                Some(true)
                            }
                            Err(_) => Some(true),
                        }
                    }
                    None => Some(true),
                },
            }
        };
        if let Some(bad) = verdict {
            *bad_segments.entry(layout.segment_of(off)).or_default() |= bad;
        }
    }
    for (g, known_bad) in bad_segments {
        // A segment first met through shards whose checksums are lost (unverified) is beyond
        // the recovery data once a shard of it is known to be damaged: say so instead.
        if known_bad && st.report.unverified_segments.remove(&g) {
            // Tried again for the exact counts (rare: lost checksums and damage together).
            match repair_segment(whole, located, g) {
                Err(RecoveryError::BeyondRepair { segments }) => st.report.beyond.extend(segments),
                Err(e) => st.report.failed.push((g, e.to_string())),
                Ok(_) => {
                    st.report
                        .failed
                        .push((g, "repaired on a second try only".into()));
                }
            }
        }
        if st.report.beyond.iter().any(|b| b.segment == g)
            || st.report.failed.iter().any(|(s, _)| *s == g)
            || st.report.unverified_segments.contains(&g)
        {
            continue;
        }
        if st.repaired.as_ref().is_none_or(|r| r.index != g) {
            st.repaired = None;
            match repair_segment(whole, located, g) {
                Ok(r) => {
                    if st.report.repaired_segments.insert(g) {
                        st.report.rebuilt_shards += r.rebuilt;
                    }
                    st.repaired = Some(r);
                }
                Err(RecoveryError::BeyondRepair { .. }) if !known_bad => {
                    // Only checksums are lost, more than the recovery data can stand in
                    // for: nothing is known to be damaged; the frame tags check the bytes.
                    st.report.unverified_segments.insert(g);
                    continue;
                }
                Err(RecoveryError::BeyondRepair { segments }) => {
                    st.report.beyond.extend(segments);
                    continue;
                }
                Err(e) => {
                    st.report.failed.push((g, e.to_string()));
                    continue;
                }
            }
        }
        let r = st.repaired.as_ref().expect("just repaired");
        let end = start + raw.len() as u64;
        let (a, b) = (start.max(r.start), end.min(r.start + r.bytes.len() as u64));
        if a < b {
            raw[(a - start) as usize..(b - start) as usize]
                .copy_from_slice(&r.bytes[(a - r.start) as usize..(b - r.start) as usize]);
        }
    }
}

impl Read for HealingSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let len = self.len();
        if buf.is_empty() || self.pos >= len {
            return Ok(0);
        }
        let win_end = self.win_start + self.window.len() as u64;
        if self.pos < self.win_start || self.pos >= win_end {
            let s = u64::from(self.located.layout.params.shard_size);
            let start = self.pos / s * s;
            let size = if start == win_end && !self.window.is_empty() {
                (self.window.len() as u64 * 2).clamp(FIRST_WINDOW, WINDOW)
            } else {
                FIRST_WINDOW
            };
            let end = (start + size.max(s)).min(len);
            self.window = self.fetch(start, (end - start) as usize)?;
            self.win_start = start;
        }
        let rel = (self.pos - self.win_start) as usize;
        let n = buf.len().min(self.window.len() - rel);
        buf[..n].copy_from_slice(&self.window[rel..rel + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Source for HealingSource {
    fn seekable(&self) -> bool {
        true
    }
    fn length(&mut self) -> io::Result<Option<u64>> {
        Ok(Some(self.len()))
    }
    fn seek_to(&mut self, offset: u64) -> io::Result<()> {
        self.pos = offset;
        Ok(())
    }
    fn read_ahead_to(&mut self, end: Option<u64>) {
        let len = self.len();
        self.inner
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .read_ahead_to(Some(end.map_or(len, |e| e.min(len))));
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let len = self.len();
        if offset >= len || buf.is_empty() {
            return Ok(0);
        }
        let s = u64::from(self.located.layout.params.shard_size);
        let want = (buf.len() as u64).min(len - offset);
        let start = offset / s * s;
        let end = (offset + want).div_ceil(s).saturating_mul(s).min(len);
        let mut raw = vec![0u8; (end - start) as usize];
        let mut inner = self.locked();
        let got = match super::read_exact_at(&**inner, start, &mut raw) {
            Ok(()) => raw.len(),
            Err(e) if bytes_lost(&e) => 0,
            Err(e) => return Err(e),
        };
        let whole = Whole::new(&mut **inner, self.located.source_len);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        heal_bytes(&mut st, &whole, &self.located, start, &mut raw, got);
        let rel = (offset - start) as usize;
        buf[..want as usize].copy_from_slice(&raw[rel..rel + want as usize]);
        Ok(want as usize)
    }
    fn identity(&self) -> Option<String> {
        self.locked().identity()
    }
    fn counters(&self) -> Option<std::sync::Arc<Counters>> {
        self.locked().counters()
    }
    /// The inner source's: P's offsets are the file's (the section follows P).
    fn refetcher(&self) -> Option<std::sync::Arc<dyn super::Refetch>> {
        self.locked().refetcher()
    }
    fn describe(&self) -> Option<String> {
        self.locked().describe()
    }
    fn heal_report(&self) -> Option<HealReport> {
        Some(self.report())
    }
    fn check_section(&mut self) -> Option<SectionCheck> {
        Some(HealingSource::check_section(self))
    }
}
