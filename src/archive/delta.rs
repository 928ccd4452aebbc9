//! The writer's side of delta archives (docs/FORMAT.md §16): which base bytes each block of
//! a new archive is compressed against.
//!
//! **Matching rule.** A regular file of the new archive is matched to the base's regular
//! file of the same path (raw bytes, exactly as stored); failing that, to the base file with
//! the same path below the first component, when exactly one base file has it — so a
//! versioned top directory (`app-1.0/lib/x.so` then `app-1.1/lib/x.so`, or `v1/…` then
//! `v2/…`) still matches. A new file (no such base file), a renamed one and any non-file get
//! no base: their blocks are plain zstd blocks. A base file that is gone from the new tree is
//! simply not referenced. Renames are not followed (no content-digest matching): the renamed
//! file is stored in full (unless its old bytes happen to lie in a region its block gets
//! for other files). A matched file identical to its base file (64 KiB or more) is stored as
//! a BASE_REF record instead of content (`super::delta_ref`); the map gives each base file
//! its index position and stored digest for that.
//!
//! **Map.** [`BaseMap::build`] takes the base's regular files from its index (path, size,
//! entry number, digest) and starts the walk of the base's record stream on a thread of its
//! own ([`walk`]'s module doc: why beside the writing, not before it). The walk keeps for every
//! base file the stream position of each of its DATA segments (file offset ↦ base stream
//! offset) and the stream offset where each base frame starts, publishing them as it goes; a
//! question of the writer waits only until the walk has passed what it asks about. The map
//! keeps no content; the decoded blocks stay in the base's cache while it has room
//! ([`BaseArchive::block_for_walk`]), so the regions of the blocks written next do not decode
//! those frames a second time; the base's prefetch thread decodes the frames ahead of the
//! walk, which parses their records.
//!
//! **Regions.** While a block is filled, the writer notes each DATA segment it places for a
//! matched file (file offset, length, the new file's size). When the block is cut,
//! [`BaseMap::region`] maps each segment to the base stream: the base file's bytes
//! around the same offset, widened by `widen` bytes on each side, and further on the side an
//! insertion or deletion would shift them to: when the new file is `d` bytes longer than the
//! base file, content at offset `o` was at `o − d..o` in the base if bytes were inserted
//! before it, so the region reaches `d` more bytes to the left (and `−d` to the right when the
//! file shrank). The block's region is the smallest stream range covering every segment's
//! range; when that is longer than `max` bytes, the `max`-byte window covering the most
//! segment bytes. A block whose segments have no base gets no region. The writer cuts a
//! block before a segment that would take that range past `max` once the block has matched
//! bytes ([`DeltaWriter::segment_fits`]): with 32 MiB blocks (`-l 9`), whose region is the
//! block and 2 MiB, files stored as references or removed between a block's files, or a file's
//! growth or shrinkage, left bytes of the block with no base bytes to match.
//!
//! **Memory** (measured 2026-12-07; the model is `crate::memory::delta_worker_bytes`, with
//! its measurements). A writer's worker holds the block, its region (at most
//! [`max_region`]: 32 MiB up to 30 MiB blocks, 34 MiB for `-l 9`'s 32 MiB), the zstd
//! frame's context (5–25 MiB), what a plain worker holds for blocks without a region, and at
//! levels 7–9 the `diff+base` encoder's buffers: a copy of region and block, up to 64 MiB of
//! match tables, streams, payload and check of up to a block each, and zstd -15's or -19's
//! context for a stream (65 or 82 MiB). Modelled per worker: 56.5 MiB at the default `-l 3`,
//! 321 / 401 / 594 MiB at `-l 7` / 8 / 9 (8 / 16 / 32 MiB blocks); measured peak RSS of `c
//! --base` on the aws-lc-sys pair 109 / 349 MiB (`-l 3` / `-l 9`) at `-j 1` and 120 / 536
//! at `-j 2`, and 604 / 1,046 MiB at `-l 9` with the new tar replaced by random bytes. Beside
//! the workers, the base's cache of decoded blocks, shared, which the map walk fills up to
//! its budget ([`BaseArchive::cache_budget`], 256 MiB: `cache_bytes_at_most`). A reader's
//! worker holds the block, its region and the decoder's: `x --base` of those archives peaked
//! at 55–177 MiB.

use std::collections::HashMap;
use std::sync::Arc;

use crate::archive::reader::BaseArchive;
use crate::error::{Error, Result};
use crate::format::block::BaseRegion;
use crate::format::entry::EntryKind;
use crate::format::record;

/// Most bytes of base region krypta's writer gives one block: 32 MiB.
pub const MAX_REGION: u64 = 32 << 20;

/// One DATA segment of a base file: its file offset, length and base stream offset.
#[derive(Debug, Clone, Copy)]
struct Segment {
    file_offset: u64,
    len: u64,
    stream: u64,
}

/// What the map knows of one base file: from the base's index its size, entry and digest;
/// its segments from the walk ([`walk`]), as far as the walk has come.
pub struct BaseFile {
    /// The file's size in the base, bytes (the index's, which the walk checks its END
    /// against).
    pub size: u64,
    /// Its position in the base's index (what a BASE_REF names: `super::delta_ref`).
    pub entry: u64,
    /// Its BLAKE3 as the base's index stores it; referenced only where its END_DIGEST
    /// agrees ([`BaseFile::digest`]). `None` for a file stored without one (END), which is
    /// never referenced: krypta stores a digest for every file of at least 4 KiB, and
    /// references start at 64 KiB (`delta_ref`).
    indexed_digest: Option<[u8; 32]>,
    walk: Arc<Progress>,
}

impl std::fmt::Debug for BaseFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaseFile")
            .field("size", &self.size)
            .field("entry", &self.entry)
            .finish_non_exhaustive()
    }
}

impl BaseFile {
    /// The file's digest when the index stores one and the walk has passed the file's
    /// END_DIGEST, which then agrees with it (the walk fails on one that does not); `None`
    /// when the walk ended before it. Waits for the walk to pass the file.
    pub fn digest(&self) -> Option<[u8; 32]> {
        self.indexed_digest?;
        let w = self.walk.wait(|w| self.walked(w).is_some_and(|f| f.ended));
        let ended = self.walked(&w).is_some_and(|f| f.ended);
        self.indexed_digest.filter(|_| ended)
    }

    /// The digest the base's index stores for the file (whether the stream agrees is
    /// [`BaseFile::digest`]).
    pub fn indexed_digest(&self) -> Option<[u8; 32]> {
        self.indexed_digest
    }

    fn walked<'a>(&self, w: &'a walk::Walked) -> Option<&'a walk::FileWalked> {
        w.files.get(&self.entry)
    }

    /// The base stream offset of file offset `x`, clamped to the file's stored bytes
    /// (a hole or the tail maps to the nearest stored byte); `None` for a file with no
    /// stored bytes. Waits until the walk has parsed the file's segments up to `x`.
    fn stream_at(&self, x: u64) -> Option<u64> {
        let w = self.walk.wait(|w| {
            self.walked(w)
                .is_some_and(|f| f.ended || f.segments.last().is_some_and(|s| s.file_offset > x))
        });
        let segments = &self.walked(&w)?.segments;
        let i = segments.partition_point(|s| s.file_offset <= x);
        if i == 0 {
            return segments.first().map(|s| s.stream);
        }
        let s = segments[i - 1];
        Some(s.stream + (x - s.file_offset).min(s.len))
    }
}

/// A DATA segment the writer placed in the block being filled, for a matched file.
#[derive(Debug, Clone)]
pub(crate) struct Placed {
    pub file: Arc<BaseFile>,
    pub offset: u64,
    pub len: u64,
    /// The new file's size as its source reports it when it is opened.
    pub new_size: u64,
    /// For a file stored as a base reference (`super::delta_ref`): the base stream range
    /// of its base file's records to compress its own records against (no segment).
    pub records: Option<(u64, u64)>,
}

/// The base's files (from its index) and the walk of its stream. See the module doc.
pub struct BaseMap {
    files: HashMap<Vec<u8>, Arc<BaseFile>>,
    /// Base files by their path below its first component (`None`: more than one has it).
    below_top: HashMap<Vec<u8>, Option<Arc<BaseFile>>>,
    /// The walk's segments, frame starts and stream length as far as it has come.
    walk: Arc<Progress>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BaseMap {
    /// The base's files from its index, and its stream walked on a thread of its own
    /// ([`walk`]'s module doc).
    pub fn build(base: &Arc<BaseArchive>) -> Result<BaseMap> {
        let walk = Arc::new(Progress::default());
        let thread = {
            let (b, w) = (Arc::clone(base), Arc::clone(&walk));
            std::thread::Builder::new()
                .name("krypta-map".into())
                .spawn(move || walk::run(&b, &w))
                .map_err(|e| Error::io(base.path(), "starting a thread to walk", e))?
        };
        let files = base
            .index()
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.meta.kind == EntryKind::File)
            .map(|(n, e)| {
                let f = BaseFile {
                    size: e.size,
                    entry: n as u64,
                    indexed_digest: e.digest,
                    walk: Arc::clone(&walk),
                };
                (e.meta.path.clone(), Arc::new(f))
            })
            .collect();
        Ok(BaseMap::with_files(files, walk, Some(thread)))
    }

    fn with_files(
        files: HashMap<Vec<u8>, Arc<BaseFile>>,
        walk: Arc<Progress>,
        thread: Option<std::thread::JoinHandle<()>>,
    ) -> BaseMap {
        let mut below_top: HashMap<Vec<u8>, Option<Arc<BaseFile>>> = HashMap::new();
        for (p, f) in &files {
            if let Some(rest) = below_first(p) {
                below_top
                    .entry(rest.to_vec())
                    .and_modify(|e| *e = None)
                    .or_insert_with(|| Some(Arc::clone(f)));
            }
        }
        BaseMap {
            files,
            below_top,
            walk,
            thread,
        }
    }

    /// Waits for the walk's end: its error, if it failed (once).
    pub(crate) fn walk_result(&self) -> Result<()> {
        drop(self.walk.wait(|_| false));
        self.walk.take_error().map_or(Ok(()), Err)
    }

    /// The stream offset `x` clamped to the stream's length: waits until the walk has
    /// started a frame past `x` or ended.
    fn clamp_to_stream(&self, x: u64) -> u64 {
        let w = self.walk.wait(|w| w.covered > x);
        w.stream_len.map_or(x, |len| x.min(len))
    }

    /// The base file matched to `path` (module doc: the same path, else the same path below
    /// the first component when unique; regular files).
    pub(crate) fn file(&self, path: &[u8]) -> Option<Arc<BaseFile>> {
        if let Some(f) = self.files.get(path) {
            return Some(Arc::clone(f));
        }
        self.below_top.get(below_first(path)?).cloned().flatten()
    }

    /// The region for a block holding `placed` (module doc), at most `max` bytes.
    pub(crate) fn region(&self, placed: &[Placed], widen: u64, max: u64) -> Option<BaseRegion> {
        let mut ranges: Vec<(u64, u64, u64)> = placed
            .iter()
            .filter_map(|p| {
                if let Some((a, b)) = p.records {
                    let b = self.clamp_to_stream(b);
                    return (b > a).then_some((a, b, b - a));
                }
                let (a, b) = segment_range(&p.file, p.offset, p.len, p.new_size, widen)?;
                Some((a, b, p.len))
            })
            .collect();
        if ranges.is_empty() {
            return None;
        }
        ranges.sort_unstable();
        let lo = ranges[0].0;
        let hi = ranges.iter().map(|r| r.1).max().expect("non-empty");
        let (start, end) = if hi - lo <= max {
            (lo, hi)
        } else {
            let s = best_window(&ranges, lo, max);
            (s, self.clamp_to_stream(s + max))
        };
        // The frame holding `start`: the walk has started it (`start` is a parsed
        // segment's, or below one), unless it failed.
        let w = self.walk.wait(|w| w.covered > start);
        let seq = w
            .frame_starts
            .partition_point(|&f| f <= start)
            .checked_sub(1)?;
        Some(BaseRegion {
            seq: seq as u64,
            offset: (start - w.frame_starts[seq]) as u32,
            len: (end - start) as u32,
        })
    }
}

impl Drop for BaseMap {
    /// Stops the walk (at its next frame) and waits for it: the thread reads the base.
    fn drop(&mut self) {
        self.walk.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The writer's delta state: the base map, the file being added and the matched segments
/// of the block being filled.
pub(crate) struct DeltaWriter {
    map: BaseMap,
    current: Option<(Arc<BaseFile>, u64)>,
    placed: Vec<Placed>,
    widen: u64,
    max: u64,
    /// Files stored as base references so far (`super::delta_ref`).
    pub(crate) referenced: u64,
    /// The base stream range the references of the block being filled span.
    ref_span: Option<(u64, u64)>,
    /// The base stream range its segments and references span (what its region would be).
    span: Option<(u64, u64)>,
}

impl DeltaWriter {
    /// A writer's delta state for blocks of `block_size` bytes: regions widened by
    /// [`widen_for`] on each side, at most [`max_region`]`(block_size)`.
    pub(crate) fn new(map: BaseMap, block_size: usize) -> DeltaWriter {
        DeltaWriter {
            map,
            current: None,
            placed: Vec::new(),
            widen: widen_for(block_size),
            max: max_region(block_size),
            referenced: 0,
            ref_span: None,
            span: None,
        }
    }

    /// The delta state of a writer with `base` (`None` without one) and blocks of
    /// `block_size` bytes, with the delta base extension appended to `extensions`: the base's
    /// walk starts now, and with `walk_first` ends (its error returned) before this returns.
    pub(crate) fn for_options(
        base: Option<&Arc<BaseArchive>>,
        block_size: usize,
        walk_first: bool,
        extensions: &mut Vec<crate::format::extension::Extension>,
    ) -> Result<Option<DeltaWriter>> {
        let Some(b) = base else {
            return Ok(None);
        };
        extensions.push(b.extension());
        let map = BaseMap::build(b)?;
        if walk_first {
            map.walk_result()?;
        }
        Ok(Some(DeltaWriter::new(map, block_size)))
    }

    /// The base file matched to the file being added, if any.
    pub(crate) fn current(&self) -> Option<&Arc<BaseFile>> {
        self.current.as_ref().map(|(f, _)| f)
    }

    /// Notes a file stored as a reference to base file `f`: its END_DIGEST's 32-byte digest,
    /// which does not compress on its own, compresses against the base file's END_DIGEST
    /// record ([`reference_range`]).
    pub(crate) fn note_reference(&mut self, f: &Arc<BaseFile>) {
        let Some(range) = reference_range(f) else {
            return;
        };
        let span = self
            .ref_span
            .map_or(range, |(a, b)| (a.min(range.0), b.max(range.1)));
        self.ref_span = Some(span);
        self.span = Some(cover(self.span, range));
        self.placed.push(Placed {
            file: Arc::clone(f),
            offset: 0,
            len: 0,
            new_size: f.size,
            records: Some(range),
        });
    }

    /// Whether a reference to `f` keeps the block's reference ranges within one region
    /// (`max` bytes). When it does not, the writer cuts the block first: a block of
    /// references only is tiny, and one region cannot reach the records of a whole large
    /// base (measured on /usr/share/doc: one 4 MiB block of 4,075 references against a
    /// 46 MB base left a third of the entries without their base records).
    pub(crate) fn reference_fits(&self, f: &BaseFile) -> bool {
        match (self.ref_span, reference_range(f)) {
            (Some((a, b)), Some((lo, hi))) => b.max(hi) - a.min(lo) <= self.max,
            _ => true,
        }
    }

    /// Whether the next DATA segment of the file being added, at `offset` and at most `len`
    /// bytes, keeps what the block's segments and references span in the base within one
    /// region (`max` bytes). When it does not, the writer cuts the block first: the region
    /// could not reach all of them, and bytes of the block would be compressed against
    /// nothing. With 32 MiB blocks (`-l 9 --base`) the region (block + 2 MiB) had no room for
    /// base bytes between the block's files (files stored as references, files removed) or
    /// for a file's growth or shrinkage: a 40 MB file with 10 MB cut near its start took
    /// 440,323 bytes at `-l 9` and 1,307 at `-l 8` (h73, 2026-12-07).
    pub(crate) fn segment_fits(&self, offset: u64, len: u64) -> bool {
        let (Some((f, new_size)), Some((lo, hi))) = (&self.current, self.span) else {
            return true;
        };
        let len = len.min(new_size.saturating_sub(offset)).max(1);
        match segment_range(f, offset, len, *new_size, self.widen) {
            Some((a, b)) => hi.max(b) - lo.min(a) <= self.max,
            None => true,
        }
    }

    /// Notes one DATA segment placed in the block (for a matched file).
    pub(crate) fn note(&mut self, offset: u64, len: u64) {
        if let Some((f, new_size)) = &self.current {
            if let Some(r) = segment_range(f, offset, len, *new_size, self.widen) {
                self.span = Some(cover(self.span, r));
            }
            self.placed.push(Placed {
                file: Arc::clone(f),
                offset,
                len,
                new_size: *new_size,
                records: None,
            });
        }
    }

    /// The region of the block just cut, and a fresh start for the next one; the base
    /// walk's error once it failed.
    pub(crate) fn take_region(&mut self) -> Result<Option<BaseRegion>> {
        let r = self.map.region(&self.placed, self.widen, self.max);
        self.placed.clear();
        self.ref_span = None;
        self.span = None;
        match self.map.walk.take_error() {
            Some(e) => Err(e),
            None => Ok(r),
        }
    }

    /// Waits for the base walk's end: its error, if it failed. The writer asks before it
    /// finishes the archive, so a base damaged past the last region needed still fails the
    /// write.
    pub(crate) fn walk_result(&self) -> Result<()> {
        self.map.walk_result()
    }
}

/// The base stream range a reference to `f` compresses its records against: the base
/// file's END_DIGEST record (after its last content byte, with room for PAD), whose digest
/// the reference's END_DIGEST repeats (`None` for a file with no stored bytes).
fn reference_range(f: &BaseFile) -> Option<(u64, u64)> {
    let end = f.stream_at(f.size)?;
    Some((end, end + record::END_LEN as u64 + 16))
}

/// Most bytes of base region the writer gives a block of `block_size` bytes: [`MAX_REGION`],
/// or the block and [`widen_for`] on each side when that is more, but never more than the
/// format allows a region (docs/FORMAT.md §16.2: 256 MiB, [`MAX_REFERENCE_LEN`]). Without
/// that cap, blocks of more than 254 MiB (`-b 255M`, `-b 256M`) over a base file of more
/// than 256 MiB got regions of up to 258 MiB, which every reader refuses ("base region:
/// length … outside 1..=268435456"): `c` wrote an archive nothing could read. Region and
/// block then stay within the 512 MiB zstd window of §5.1 too (256 + 256 MiB).
///
/// [`MAX_REFERENCE_LEN`]: crate::format::limits::MAX_REFERENCE_LEN
pub fn max_region(block_size: usize) -> u64 {
    MAX_REGION
        .max(block_size as u64 + 2 * widen_for(block_size))
        .min(u64::from(crate::format::limits::MAX_REFERENCE_LEN))
}

/// Bytes a region reaches beyond a segment on each side: 1 MiB, whatever the block size.
/// Measured on real version pairs (an ELF binary, a Debian package's data, a JS build, a
/// source tree: /work/notes/delta-findings.md, BENCHMARKS.md): 1 MiB finds the matches, and
/// widening to 4 or 16 MiB changed sizes by under 2 % while the region zstd must index per
/// block grew (the write speed fell 4× at 16 MiB). Growth and shrinkage of the file widen it
/// further on their side (module doc).
pub fn widen_for(_block_size: usize) -> u64 {
    1 << 20
}

impl<W: std::io::Write> super::writer::ArchiveWriter<W> {
    /// A file is being added: its base file, when the path matches one (module doc).
    pub(super) fn delta_begin_file(&mut self, path: &[u8], size: u64) {
        if let Some(d) = self.delta.as_mut() {
            d.current = d.map.file(path).map(|f| (f, size));
        }
    }

    /// The file ended.
    pub(super) fn delta_end_file(&mut self) {
        if let Some(d) = self.delta.as_mut() {
            d.current = None;
        }
    }
}

/// `path` after its first component and `/` (`None` for a one-component path).
fn below_first(path: &[u8]) -> Option<&[u8]> {
    let i = path.iter().position(|&b| b == b'/')?;
    Some(&path[i + 1..])
}

mod region;
mod walk;
use region::{best_window, cover, segment_range};
use walk::Progress;

#[cfg(test)]
mod tests;
