//! The walk of a delta base's record stream ([`super::BaseMap`]'s segments and frame starts),
//! run on its own thread beside the writing (`krypta-map`).
//!
//! **Why beside, not before.** Until 2026-12-07 (session 33) the whole base was walked
//! before the writer placed a byte: every base frame decoded (into the base's cache, which
//! the regions use afterwards) while the workers had nothing to do. On ruff's pair of
//! BENCHMARKS.md table 14 (a 24 MB base file) that was 0.05 s of a 0.26–0.35 s `c --base -l 6`
//! write; on aws-lc-sys's (65 MB) 0.07–0.24 s. The writer needs the walk only where a block's
//! region is chosen: which files exist, their sizes and digests come from the base's index
//! (read before, as the reader's) — so the walk now publishes what it has parsed at every base
//! frame it starts, and the writer waits only for the base bytes the next region needs (the
//! segments of the matched file up to the block's offset and its widening; a reference waits
//! for the base file's END_DIGEST). In the common case (files in the same order in both
//! versions) the walk stays ahead of the writer.
//!
//! **What it still guarantees.** Each ENTRY record of the stream must equal the index's
//! entry of that number (path, kind, metadata): the map's files come from the index, so
//! a base whose stream says otherwise is refused as damaged, as `t` of it would report. A
//! base that fails anywhere in the walk fails the write: the error is returned at the next
//! block cut, and at the latest when the archive is finished (`DeltaWriter::walk_result`),
//! before the archive is renamed into place — as before, nothing is written under its final
//! name against a damaged base.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::Segment;
use crate::archive::reader::BaseArchive;
use crate::codec::BlockDecoder;
use crate::error::{Error, Result};
use crate::format::FormatError;
use crate::format::entry::EntryKind;
use crate::format::record::{ExtentCheck, RecordHead, StreamSource, read_record};

/// What the walk has parsed, shared between the walk thread and the writer.
#[derive(Default)]
pub(crate) struct Progress {
    state: Mutex<Walked>,
    moved: Condvar,
    /// Set when the writer no longer needs the walk (dropped): it stops at the next frame.
    cancel: AtomicBool,
}

/// The walk's published state.
#[derive(Default)]
pub(crate) struct Walked {
    /// Per base file (by index entry number): its segments so far, and once its END or
    /// END_DIGEST was parsed whether that agrees with the index (size and digest).
    pub files: HashMap<u64, FileWalked>,
    /// Stream offset of each data frame started so far.
    pub frame_starts: Vec<u64>,
    /// Stream offset of the end of the frames started so far.
    pub covered: u64,
    /// The stream's length, once the walk reached its end.
    pub stream_len: Option<u64>,
    /// The walk ended (at the stream's end, on an error, or cancelled).
    pub done: bool,
    /// The walk's error, until reported.
    pub failed: Option<Error>,
}

#[derive(Default)]
pub(crate) struct FileWalked {
    pub segments: Vec<Segment>,
    /// The file's END or END_DIGEST was parsed (and agrees with the index: the walk fails
    /// on one that does not).
    pub ended: bool,
}

impl Progress {
    /// A walk that already ended with these files and frames.
    #[cfg(test)]
    pub(crate) fn ended(files: HashMap<u64, FileWalked>, starts: Vec<u64>, len: u64) -> Progress {
        Progress {
            state: Mutex::new(Walked {
                files,
                frame_starts: starts,
                covered: len,
                stream_len: Some(len),
                done: true,
                failed: None,
            }),
            ..Progress::default()
        }
    }

    fn lock(&self) -> MutexGuard<'_, Walked> {
        // A panic of the other side while holding it leaves the data as consistent as
        // any published step.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state once `ready` holds of it or the walk ended.
    pub(crate) fn wait(&self, ready: impl Fn(&Walked) -> bool) -> MutexGuard<'_, Walked> {
        let mut w = self.lock();
        while !w.done && !ready(&w) {
            w = self.moved.wait(w).unwrap_or_else(|e| e.into_inner());
        }
        w
    }

    /// Changes the state as a walk would publish it, and wakes the waiters.
    #[cfg(test)]
    pub(crate) fn publish_with(&self, f: impl FnOnce(&mut Walked)) {
        f(&mut self.lock());
        self.moved.notify_all();
    }

    /// The walk's error, once (`None` while it runs or when it succeeded).
    pub(crate) fn take_error(&self) -> Option<Error> {
        self.lock().failed.take()
    }

    pub(crate) fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// Walks `base`'s record stream, publishing into `progress` at every frame it starts, until
/// the end, an error (published as `failed`) or a cancel.
/// A panic of the walk is its error too (as the write pool's workers report theirs): else
/// `done` stayed unset and the writer waited for the walk forever (review of session 33: a
/// worker panicking while it held the base cache's lock poisons it, and the walk's next
/// frame then panics).
pub(crate) fn run(base: &BaseArchive, progress: &Progress) {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| walk(base, progress)))
        .unwrap_or_else(|panic| {
            let what = crate::archive::pipeline::panic_message(&*panic);
            Err(Error::Crypto(format!(
                "internal error: the delta base walk panicked: {what}"
            )))
        });
    let mut w = progress.lock();
    if let Err(e) = result {
        w.failed = Some(e);
    }
    w.done = true;
    drop(w);
    progress.moved.notify_all();
}

fn walk(base: &BaseArchive, progress: &Progress) -> Result<()> {
    base.hint_walk();
    let mut walk = Walk {
        base,
        progress,
        dec: BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?,
        seq: 0,
        block: std::sync::Arc::new(Default::default()),
        pos: 0,
        stream: 0,
        starts: Vec::new(),
        segments: Vec::new(),
        ends: Vec::new(),
    };
    let entries = &base.index().entries;
    // The current file's entry number and its segments' order check, from its ENTRY to its
    // END: the rules `t` holds a file's records to (FORMAT.md §6), which the map's waits
    // rely on (a file's segments in increasing order: `BaseFile::stream_at`).
    let mut current: Option<(u64, ExtentCheck)> = None;
    // Entry number of the next ENTRY record (stream order is index order).
    let mut number = 0u64;
    // What `t` of the base would report (reader::base_fault): not a usage error. A record
    // that breaks a rule is placed at the base frame its first byte is in (a record may run
    // on into the next frame), by the frame's number and the byte its head starts at; a
    // rule broken at the stream's end, at the last frame (before, every such error said "at
    // byte 0"; review of session 34: placing it where the walk stopped named the next frame
    // for a record that crossed into it).
    let err = |e: WalkError, frame: Option<u64>| match e {
        WalkError::Format(e) => {
            let at = frame.and_then(|f| base.frame_offset(f));
            let problem = match frame {
                Some(f) => format!("base frame {f}: {e}"),
                None => e.to_string(),
            };
            if base.is_sealed() {
                Error::AuthFailed {
                    path: base.path().to_path_buf(),
                    check: crate::error::AuthCheck::Structure,
                    detail: Some(Box::new(crate::error::Inconsistency {
                        offset: at,
                        problem: format!("delta base record stream: {problem}"),
                    })),
                }
            } else {
                Error::Corrupt {
                    path: base.path().to_path_buf(),
                    offset: at.unwrap_or(0),
                    source: FormatError::invalid("delta base record stream", problem),
                }
            }
        }
        WalkError::Base(f) => f.writing(),
        // Seen by no one: the writer that cancels has gone.
        WalkError::Cancelled => Error::Usage("the base walk was cancelled".into()),
    };
    // A record of base frame `frame` that breaks a rule of `what`.
    let invalid = |what: &'static str, problem: String, frame: Option<u64>| {
        err(
            WalkError::Format(FormatError::invalid(what, problem)),
            frame,
        )
    };
    loop {
        let rec = walk.next_record_frame();
        let Some(head) = read_record(&mut walk, base.version()).map_err(|e| err(e, rec))? else {
            break;
        };
        match head {
            RecordHead::Entry(meta) => {
                if current.is_some() {
                    return Err(invalid(
                        "record",
                        format!("file entry {} has no END record", number - 1),
                        rec,
                    ));
                }
                if entries.get(number as usize).is_none_or(|e| e.meta != meta) {
                    return Err(invalid(
                        "ENTRY record",
                        format!("entry {number} is not the index's entry {number}"),
                        rec,
                    ));
                }
                let file = meta.kind == EntryKind::File;
                current = file.then(|| (number, ExtentCheck::default()));
                number += 1;
            }
            RecordHead::Data { offset, len } => {
                let stream = walk.position();
                let Some((n, extents)) = current.as_mut() else {
                    return Err(err(WalkError::Format(outside()), rec));
                };
                extents
                    .segment(offset, len)
                    .map_err(|e| err(e.into(), rec))?;
                let segment = Segment {
                    file_offset: offset,
                    len: len as u64,
                    stream,
                };
                walk.segments.push((*n, segment));
                walk.skip(len as u64).map_err(|e| err(e, rec))?;
            }
            RecordHead::End { size, digest } => {
                let Some((n, extents)) = current.take() else {
                    return Err(err(WalkError::Format(outside()), rec));
                };
                extents.end(size).map_err(|e| err(e.into(), rec))?;
                // The index's size and digest must be the stream's, as `t` of the base holds
                // them (exit 3, "index disagrees with the record stream"); before (h78,
                // session 33) such a file was only left unreferenced and the write went on.
                let e = &entries[n as usize];
                if e.size != size || e.digest != digest {
                    return Err(invalid(
                        "END record",
                        format!("file entry {n}'s size or digest is not the index's"),
                        rec,
                    ));
                }
                walk.ends.push(n);
            }
            RecordHead::BaseRef { .. } => {
                return Err(invalid(
                    "base record stream",
                    "a BASE_REF record in a base (a base is not a delta archive)".into(),
                    rec,
                ));
            }
            RecordHead::Pad => {}
        }
    }
    if current.is_some() {
        return Err(invalid(
            "record",
            format!("file entry {} has no END record", number - 1),
            walk.seq.checked_sub(1),
        ));
    }
    if number != entries.len() as u64 {
        return Err(invalid(
            "record",
            format!("{number} ENTRY records, the index has {}", entries.len()),
            walk.seq.checked_sub(1),
        ));
    }
    walk.publish(Some(walk.stream));
    Ok(())
}

fn outside() -> FormatError {
    FormatError::invalid("record", "a DATA or END record outside a file")
}

enum WalkError {
    Format(FormatError),
    Base(crate::archive::reader::BaseFault),
    Cancelled,
}

impl From<FormatError> for WalkError {
    fn from(e: FormatError) -> Self {
        WalkError::Format(e)
    }
}

/// The base's record stream, frame after frame, and what it parsed since it last
/// published.
struct Walk<'a> {
    base: &'a BaseArchive,
    progress: &'a Progress,
    dec: BlockDecoder,
    seq: u64,
    block: std::sync::Arc<crate::codec::huge::HugeBuf>,
    pos: usize,
    /// Stream offset of `block[pos]`.
    stream: u64,
    starts: Vec<u64>,
    /// Segments and file ends parsed since the last publish (entry number first).
    segments: Vec<(u64, Segment)>,
    ends: Vec<u64>,
}

impl Walk<'_> {
    fn position(&self) -> u64 {
        self.stream
    }

    /// The base frame the next record starts in: the current block's while it has bytes
    /// left, else the next frame's (the last one's at the stream's end; none before any).
    fn next_record_frame(&self) -> Option<u64> {
        if self.pos < self.block.len() || self.seq == self.base.data_frames() {
            self.seq.checked_sub(1)
        } else {
            Some(self.seq)
        }
    }

    /// Hands what was parsed to the writer; `Some(len)` at the stream's end.
    fn publish(&mut self, stream_len: Option<u64>) {
        let mut w = self.progress.lock();
        for (n, s) in self.segments.drain(..) {
            w.files.entry(n).or_default().segments.push(s);
        }
        for n in self.ends.drain(..) {
            w.files.entry(n).or_default().ended = true;
        }
        let published = w.frame_starts.len();
        w.frame_starts.extend_from_slice(&self.starts[published..]);
        w.covered = self.stream + (self.block.len() - self.pos) as u64;
        w.stream_len = stream_len;
        drop(w);
        self.progress.moved.notify_all();
    }

    /// Makes `block[pos..]` non-empty; false at the end of the data frames.
    fn ensure(&mut self) -> std::result::Result<bool, WalkError> {
        while self.pos == self.block.len() {
            if self.seq == self.base.data_frames() {
                return Ok(false);
            }
            if self.progress.cancel.load(Ordering::Relaxed) {
                return Err(WalkError::Cancelled);
            }
            let next = self
                .base
                .block_for_walk(&mut self.dec, self.seq)
                .map_err(WalkError::Base)?;
            self.base.recycle(std::mem::replace(&mut self.block, next));
            self.starts.push(self.stream);
            self.seq += 1;
            self.pos = 0;
            self.publish(None);
        }
        Ok(true)
    }

    fn skip(&mut self, mut n: u64) -> std::result::Result<(), WalkError> {
        while n > 0 {
            if !self.ensure()? {
                return Err(FormatError::Truncated {
                    what: "data record",
                    needed: n,
                    got: 0,
                }
                .into());
            }
            let k = ((self.block.len() - self.pos) as u64).min(n);
            self.pos += k as usize;
            self.stream += k;
            n -= k;
        }
        Ok(())
    }
}

impl StreamSource for Walk<'_> {
    type Error = WalkError;

    fn fill(&mut self, buf: &mut [u8]) -> std::result::Result<bool, WalkError> {
        let mut got = 0;
        while got < buf.len() {
            if !self.ensure()? {
                if got == 0 {
                    return Ok(false);
                }
                return Err(FormatError::Truncated {
                    what: "record",
                    needed: buf.len() as u64,
                    got: got as u64,
                }
                .into());
            }
            let k = (self.block.len() - self.pos).min(buf.len() - got);
            buf[got..got + k].copy_from_slice(&self.block[self.pos..self.pos + k]);
            got += k;
            self.pos += k;
            self.stream += k as u64;
        }
        Ok(true)
    }
}
