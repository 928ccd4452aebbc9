//! Salvage without an index (issue 11 §1): a truncated archive, a damaged tail or index, an
//! upload cut short. The data frames are read front to back; where a frame fails, the reader
//! resynchronises on the next frame whose head parses and whose tag verifies, and the record
//! stream restarts at that block's first record (format 2's block header says where one
//! starts; format 1 has no such offset, so its stream cannot restart after damage).
//!
//! The walk ([`Archive::walk_frames`]): at the position after a good frame the next frame is
//! tried first; when it fails, the damaged region is scanned byte by byte. A position is a
//! candidate only if its 16 bytes parse as a frame head (kind data, flags 0, reserved 0,
//! body length within the version's bounds) with a plausible seq: above the last good
//! frame's and at most one more per minimal frame length (48 + block header bytes) of
//! distance from it; only then is its body read and its tag verified. Worst-case cost: a
//! region of n bytes costs n head parses plus one MAC per candidate; random bytes pass the
//! head filters with probability below 2^-40 per position, so on real damage the cost is
//! the n head parses (the window is read once, 8 MiB at a time). A crafted region that makes
//! every position a candidate costs at most one body read and MAC per position, so the
//! walk caps the bytes it MACs at [`MAC_BUDGET_FACTOR`] times the archive length (plus
//! 64 MiB); past that it stops and says so.
//!
//! The runs of consecutive good frames are then scanned ([`Archive::salvage_runs`]) with the
//! ordinary feed and record parser (every check of a scan but the comparison with the
//! index, which is missing), starting at a block whose group starts in the run (level 9: a
//! block whose reference group lost a block is lost too) and at the first ENTRY record at or
//! after that block's first record (records before it are the tail of an entry whose start
//! was lost: read past, never delivered). An entry a run's end cuts is named; entries wholly
//! inside lost bytes cannot be (nothing of them is left), nor counted. A pipe is walked
//! after the rest of it was spooled to a temporary file (`spool`): the walk then starts at
//! the first spooled byte.
//!
//! A delta frame whose tag verified but whose base region is unusable (docs/FORMAT.md §16.4:
//! a damaged base frame) is an intact frame of the archive, not lost bytes: the walk steps
//! over it as over any good frame (no resynchronising, no byte counted lost) and notes it in
//! [`StreamSalvage::base_unusable`]; the runs are split at it, since its records cannot be
//! read. An entry a run's end cuts there is named with the base's fault. A base that cannot
//! be read at all (a file or store error) is I/O and ends the walk, as for the archive.

use super::feed::{Feed, next_record};
use super::records::{Check, parse_records};
use super::salvage::BadFrame;
use super::*;

/// The walk MACs at most this many times the archive length (plus 64 MiB) in candidates.
pub const MAC_BUDGET_FACTOR: u64 = 4;

/// What [`Archive::scan_run`] adds to a run: the entry set and restored files of the whole
/// salvage, and the delta frame right after the run when its base region is unusable.
type RunContext<'a> = (
    &'a mut EntrySet,
    &'a mut std::collections::HashSet<Vec<u8>>,
    Option<&'a BadFrame>,
);

/// A data frame whose tag verified in the walk.
#[derive(Debug, Clone, Copy)]
pub(super) struct GoodFrame {
    seq: u64,
    offset: u64,
    len: u64,
    first_record: Option<u32>,
    group_start: bool,
    /// A delta frame whose base region is unusable: intact, but its records cannot be read.
    unusable: bool,
}

impl GoodFrame {
    /// (seq, offset, frame length in bytes, whether its block starts a group) of the frame.
    pub(super) fn place(&self) -> (u64, u64, u64, bool) {
        (self.seq, self.offset, self.len, self.group_start)
    }
}

/// What a salvage without index found.
#[derive(Debug, Clone, Default)]
pub struct StreamSalvage {
    /// Damaged regions, as the frames the walk expected there (offset = where the region
    /// starts; seq = the first frame lost).
    pub lost: Vec<BadFrame>,
    /// Delta frames that verified but whose base region is unusable (their `what` begins
    /// with [`super::BASE_UNUSABLE`]): not the archive's damage (docs/FORMAT.md §16.4).
    pub base_unusable: Vec<BadFrame>,
    /// A run of frames that verified failed for a reason of its own (a rule broken across
    /// them, not damage around it or the base): the archive's own fault.
    pub broken_run: bool,
    /// Runs whose records, in frames that verified, broke a rule of the format before the
    /// run's bytes ran out (an unsafe path, a name given twice, an entry below a symbolic
    /// link, …): what was refused, and that the rest of the run was not read. Never silent:
    /// every entry after it in the run is lost with it.
    pub refused: Vec<String>,
    /// Entries seen whose content was cut by damage: (path, why).
    pub damaged: Vec<(String, String)>,
    /// Entries restored.
    pub restored: u64,
    /// Where the data frames end (the first index frame, or the end of the input).
    pub end: u64,
    /// Whether the index frames were found after the data.
    pub index_seen: bool,
    /// The walk stopped at its MAC budget (a crafted region).
    pub budget_hit: bool,
}

impl Archive {
    /// Walks the data frames of a seekable archive from the first, resynchronising past
    /// damage (module doc); returns the good frames and the damaged regions.
    pub(super) fn walk_frames(&mut self) -> Result<(Vec<GoodFrame>, StreamSalvage)> {
        let len = match self.input.length() {
            Ok(Some(l)) if self.input.seekable() => l,
            Ok(_) => {
                return Err(Error::Usage(format!(
                    "{}: salvage without an index needs a seekable archive (not a pipe)",
                    crate::fs::shown(&self.path)
                )));
            }
            Err(e) => return Err(Error::io(&self.path, "seek", e)),
        };
        let mut out = StreamSalvage::default();
        let spooled = self.spooled();
        // From a pipe, what was lost before the spool: a damaged region, or (a base fault
        // stopped the scan) a delta frame whose base region is unusable.
        match self.lost_before_walk.take() {
            Some(b) if b.what.starts_with(super::BASE_UNUSABLE) => out.base_unusable.push(b),
            b => out.lost.extend(b),
        }
        let mut good: Vec<GoodFrame> = Vec::new();
        let mut dec = BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?;
        let min_frame = (FRAME_HEADER_LEN + TAG_LEN) as u64
            + *crate::format::frame::body_len_range(self.version).start() as u64;
        let mut budget = MAC_BUDGET_FACTOR * len + (64 << 20);
        let mut pos = self.walk_from;
        // From a pipe, the frames up to the last head read from it are gone: the spooled
        // rest starts with the next one (or, `replay` having kept them, with the delta frame
        // it kept), which is how its lost regions are numbered.
        let first_seq = match (spooled, self.replayed_from) {
            (false, _) => 0,
            (true, Some(seq)) => seq,
            (true, None) => self.last_head.map_or(0, |(_, seq, _)| seq + 1),
        };
        let mut scanning = false;
        let mut window: (u64, Vec<u8>) = (0, Vec::new());
        // From a pipe whose read-ahead went past the index frame, the spooled rest is the
        // archive's end: the footer alone, or for a signed archive the signature frame and the
        // footer. The index was lost with the pipe (reported before the walk), not missing,
        // and the rest is not damage (a signature frame was walked byte by byte and reported
        // as "bytes … lost").
        let rest = len.saturating_sub(pos);
        let end_left = spooled
            && (rest <= FOOTER_LEN as u64
                || (self.header.signer().is_some()
                    && rest
                        == (crate::format::signature::SIGNATURE_FRAME_LEN + FOOTER_LEN) as u64
                    && {
                        let mut kind = [0u8; 1];
                        self.seek_to(pos)?;
                        self.read_exact_at_pos(&mut kind, "archive")?;
                        kind[0] == crate::format::frame::FRAME_KIND_SIGNATURE
                    }));
        while !end_left && pos + min_frame <= len {
            // The 16 head bytes at `pos`, from an 8 MiB window.
            if pos < window.0 || pos + FRAME_HEADER_LEN as u64 > window.0 + window.1.len() as u64 {
                let n = (8u64 << 20).min(len - pos) as usize;
                let mut buf = vec![0u8; n];
                self.seek_to(pos)?;
                self.read_exact_at_pos(&mut buf, "archive")?;
                window = (pos, buf);
            }
            let w = (pos - window.0) as usize;
            let hb: [u8; FRAME_HEADER_LEN] = window.1[w..w + FRAME_HEADER_LEN]
                .try_into()
                .expect("16 bytes");
            let (last_seq, last_end) = good
                .last()
                .map(|g| (Some(g.seq), g.offset + g.len))
                .unwrap_or((None, self.header_len));
            let next_seq = last_seq.map_or(first_seq, |s| s + 1);
            let head = FrameHeader::parse(&hb, self.version).ok().filter(|h| {
                let max_seq = next_seq + (pos - last_end) / min_frame;
                (!h.last || h.kind == FrameKind::Index)
                    && h.seq >= next_seq
                    && h.seq <= max_seq
                    && pos + h.frame_len() <= len
                    && (h.kind == FrameKind::Data
                        || h.seq == next_seq
                        // From a pipe, the frames before the spooled rest are gone: the
                        // index may be its first frame, any number after the header.
                        || (spooled && good.is_empty()))
            });
            let ok = match head {
                Some(h) if h.kind == FrameKind::Index => {
                    if !scanning {
                        out.index_seen = true;
                        break;
                    }
                    false
                }
                Some(h) => {
                    if budget < h.frame_len() {
                        out.budget_hit = true;
                        break;
                    }
                    budget -= h.frame_len();
                    self.seek_to(pos)?;
                    match self.read_frame() {
                        Ok(job) => {
                            let (_, fh, r) = self.open_here(&mut dec, job);
                            match r {
                                Ok(d) => {
                                    good.push(GoodFrame {
                                        seq: fh.seq,
                                        offset: pos,
                                        len: fh.frame_len(),
                                        first_record: d.info.first_record,
                                        group_start: d.info.reference_len == 0,
                                        unusable: false,
                                    });
                                    self.buffers.blocks.give(d.buf);
                                    true
                                }
                                // Its tag verified: the frame is intact, its base is not.
                                // A base that cannot be read is I/O (exit 4), as for the
                                // archive's own bytes.
                                Err(FrameFault::Base(f @ BaseFault::Read { .. })) => {
                                    return Err(f.reading(self.path.clone(), pos, fh.seq));
                                }
                                // (No base at all, NoBase, is `l` without --base: as before,
                                // a frame that cannot be read.)
                                Err(FrameFault::Base(
                                    f @ (BaseFault::Damaged { .. } | BaseFault::Invalid { .. }),
                                )) => {
                                    good.push(GoodFrame {
                                        seq: fh.seq,
                                        offset: pos,
                                        len: fh.frame_len(),
                                        first_record: None,
                                        // A zstd+base block starts a group (§16.2).
                                        group_start: true,
                                        unusable: true,
                                    });
                                    out.base_unusable.push(BadFrame {
                                        seq: fh.seq,
                                        offset: pos,
                                        what: format!("{}: {f}", super::BASE_UNUSABLE),
                                    });
                                    true
                                }
                                Err(f) if f.out_of_memory() => {
                                    return Err(self.fault(pos, fh.seq, f));
                                }
                                Err(_) => false,
                            }
                        }
                        Err(e) if e.is_io() => return Err(e),
                        Err(_) => false,
                    }
                }
                None => false,
            };
            if ok {
                let g = *good.last().expect("just pushed");
                if scanning {
                    scanning = false;
                    if let Some(l) = out.lost.last_mut() {
                        l.what = if g.seq > l.seq {
                            format!(
                                "bytes {}..{} lost (frames {}..{})",
                                l.offset,
                                pos,
                                l.seq,
                                g.seq - 1
                            )
                        } else {
                            // No whole frame is missing: bytes inserted before frame
                            // `g.seq`, or the tail of a frame lost before it.
                            format!("bytes {}..{} lost (before frame {})", l.offset, pos, g.seq)
                        };
                    }
                }
                pos += g.len;
            } else {
                if !scanning {
                    scanning = true;
                    out.lost.push(BadFrame {
                        seq: next_seq,
                        offset: pos,
                        what: format!("bytes {pos}..{len} lost"),
                    });
                }
                pos += 1;
            }
        }
        if !out.index_seen && !scanning && pos < len && !end_left {
            out.lost.push(BadFrame {
                seq: good.last().map_or(0, |g| g.seq + 1),
                offset: pos,
                what: format!("bytes {pos}..{len} lost (no index frame after the data)"),
            });
        } else if !out.index_seen && !scanning && pos == len && !spooled {
            // The file ends right after a whole frame, with no index: cut there. What
            // followed (frames, entries) is lost, however many there were; it is damage,
            // not "the index alone" (regression: exit 3 from a file, 5 from a pipe).
            out.lost.push(BadFrame {
                seq: good.last().map_or(0, |g| g.seq + 1),
                offset: pos,
                what: format!(
                    "the archive ends at byte {len}, after a whole frame and with no index: what followed it is lost"
                ),
            });
        }
        out.end = pos;
        Ok((good, out))
    }

    /// Salvage without an index: walks the frames, then scans each run of good frames,
    /// passing every entry that verified to `visitor`. `done`: the paths of the entries
    /// already restored before the salvage (a failed scan's), which hard links may point to.
    pub fn salvage_stream(
        &mut self,
        visitor: &mut dyn Visitor,
        done: &std::collections::HashSet<Vec<u8>>,
    ) -> Result<StreamSalvage> {
        let (good, mut out) = self.walk_frames()?;
        let mut set = EntrySet::new(self.version).salvaging();
        let mut files = done.clone();
        let mut i = 0;
        let mut first_run = true;
        while i < good.len() {
            if good[i].unusable {
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < good.len()
                && !good[j].unusable
                && good[j].seq == good[j - 1].seq + 1
                && good[j].offset == good[j - 1].offset + good[j - 1].len
            {
                j += 1;
            }
            let run = &good[i..j];
            // The run ends at a delta frame whose base is unusable: an entry cut there is
            // lost to the base.
            let at_base = good.get(j).filter(|g| {
                g.unusable
                    && g.seq == run[run.len() - 1].seq + 1
                    && g.offset == run[run.len() - 1].offset + run[run.len() - 1].len
            });
            let at_base =
                at_base.and_then(|g| out.base_unusable.iter().find(|b| b.seq == g.seq).cloned());
            i = j;
            // Where the record stream can start in this run: the first ENTRY record at or
            // after the first record start of a block whose group starts in the run.
            let target = if first_run && run[0].seq == 0 {
                Some((0, 0))
            } else if self.version == Version::V1 {
                None
            } else {
                match run
                    .iter()
                    .position(|g| g.group_start && g.first_record.is_some())
                {
                    Some(p) => self.probe_entry(&run[p..])?,
                    None => None,
                }
            };
            first_run = false;
            let Some((seq, skip)) = target else { continue };
            let Some(g) = run.iter().rposition(|f| f.seq <= seq && f.group_start) else {
                continue;
            };
            let at = (seq, skip);
            let ctx = (&mut set, &mut files, at_base.as_ref());
            self.scan_run(&run[g..], at, visitor, ctx, &mut out)?;
        }
        Ok(out)
    }

    /// The (seq, offset) of the first ENTRY record in `run` (whose first block starts a
    /// group and has a record start): the records before it are the tail of an entry whose
    /// start was lost, read past without being delivered. None when the run holds none, or
    /// its records do not parse.
    fn probe_entry(&mut self, run: &[GoodFrame]) -> Result<Option<(u64, u32)>> {
        let (first, last) = (run[0].seq, run[run.len() - 1].seq);
        self.pending_frame = None;
        self.seek_to(run[0].offset)?;
        let mut pool = self.new_pool()?;
        let mut feed = Feed::new(self, &mut pool, Some((first, last)), first);
        feed.skip = run[0].first_record.unwrap_or(0) as usize;
        let r = (|| -> Result<Option<(u64, u32)>> {
            loop {
                if !feed.record_start()? {
                    return Ok(None);
                }
                let at = feed.position();
                match next_record(&mut feed)? {
                    None => return Ok(None),
                    Some(RecordHead::Entry(_)) => return Ok(Some(at)),
                    Some(RecordHead::Data { len, .. }) => {
                        let mut done = 0u64;
                        while done < len as u64 {
                            done += feed.take((len as u64 - done) as usize)?.len() as u64;
                        }
                    }
                    Some(_) => {}
                }
            }
        })();
        drop(feed);
        drop(pool);
        match r {
            Err(e) if e.is_io() => Err(e),
            Err(_) => Ok(None),
            Ok(t) => Ok(t),
        }
    }

    /// Scans one run from block `at.0` at record offset `at.1` (an ENTRY record); the run
    /// starts at the first block of that block's group. `files`: the paths of the files
    /// restored so far (in this run and the runs before it); `at_base`: the delta frame right
    /// after the run when its base region is unusable. Returns whether it ended cleanly.
    fn scan_run(
        &mut self,
        run: &[GoodFrame],
        (seq, skip): (u64, u32),
        visitor: &mut dyn Visitor,
        (set, files, at_base): RunContext<'_>,
        out: &mut StreamSalvage,
    ) -> Result<bool> {
        struct Count<'a> {
            inner: &'a mut dyn Visitor,
            ended: u64,
            current: Option<String>,
            files: &'a mut std::collections::HashSet<Vec<u8>>,
            /// Hard links whose target was lost: (path, why).
            lost_links: Vec<(String, String)>,
        }
        impl Visitor for Count<'_> {
            fn wants(&mut self, m: &EntryMeta) -> bool {
                self.current = Some(crate::fs::escape_path(&m.path));
                self.inner.wants(m)
            }
            fn entry(&mut self, m: &EntryMeta) -> Result<()> {
                // A hard link whose wanted target was not restored (lost to the damage, or
                // cut by it) cannot be made: it is named with its target's loss, and the run
                // goes on (it stopped here, losing every entry after it in the run).
                if m.kind == EntryKind::Hardlink && !self.files.contains(&m.link) {
                    let target = EntryMeta {
                        path: m.link.clone(),
                        kind: EntryKind::File,
                        ..EntryMeta::default()
                    };
                    if self.inner.wants(&target) {
                        self.lost_links.push((
                            crate::fs::escape_path(&m.path),
                            format!(
                                "hard link to {}, which was damaged (not restored)",
                                crate::fs::escape_path(&m.link)
                            ),
                        ));
                        self.current = None;
                        return Ok(());
                    }
                }
                self.inner.entry(m)?;
                if m.kind != EntryKind::File {
                    self.ended += 1;
                    self.current = None;
                }
                Ok(())
            }
            fn data(&mut self, o: u64, b: &[u8]) -> Result<()> {
                self.inner.data(o, b)
            }
            fn end(&mut self, m: &EntryMeta, s: u64) -> Result<()> {
                self.inner.end(m, s)?;
                self.ended += 1;
                self.current = None;
                self.files.insert(m.path.clone());
                Ok(())
            }
            fn abort(&mut self) {
                self.inner.abort()
            }
        }
        let (first, last) = (run[0].seq, run[run.len() - 1].seq);
        self.pending_frame = None;
        self.seek_to(run[0].offset)?;
        self.input
            .read_ahead_to(Some(run[run.len() - 1].offset + run[run.len() - 1].len));
        let mut count = Count {
            inner: visitor,
            ended: 0,
            current: None,
            files,
            lost_links: Vec::new(),
        };
        let mut pool = self.new_pool()?;
        let mut feed = Feed::new(self, &mut pool, Some((first, last)), seq);
        feed.skip = skip as usize;
        let mut parsed = Vec::new();
        let r = parse_records(
            &mut feed,
            &mut count,
            &mut parsed,
            None,
            Check::Set(set),
            (0, 0),
        );
        // Parsing failed before the run's blocks ran out: on bytes that verified, not at
        // the damage that ends the run.
        let ran_out = feed.exhausted;
        drop(feed);
        drop(pool);
        let (ended, current) = (count.ended, count.current.take());
        out.restored += ended;
        out.damaged.append(&mut count.lost_links);
        let on_base = r.as_ref().is_err_and(Error::lost_to_base);
        match r {
            Ok(_) => Ok(true),
            Err(e) if e.is_io() => Err(e),
            Err(e) if !ran_out && !on_base => {
                out.broken_run = true;
                let why = refusal(&e);
                let entry = match &e {
                    Error::InEntry { entry, .. } => Some(entry.clone()),
                    _ => current,
                };
                if let Some(entry) = entry {
                    out.damaged.push((entry, why.clone()));
                }
                out.refused.push(if first == last {
                    format!(
                        "frame {first} verified, but its records are refused ({why}): the entries after that point in it were not read"
                    )
                } else {
                    format!(
                        "frames {first} to {last} verified, but their records are refused ({why}): the entries after that point in them were not read"
                    )
                });
                Ok(false)
            }
            // Cut where the next frame's base is unusable: lost to the base, named with it.
            Err(e) if at_base.is_some() && !on_base => {
                let b = at_base.expect("checked");
                let entry = match e {
                    Error::InEntry { entry, .. } => Some(entry),
                    _ => current,
                };
                if let Some(entry) = entry {
                    out.damaged.push((
                        entry,
                        format!(
                            "cut after frame {last}: frame {} at byte {}: {}",
                            b.seq, b.offset, b.what
                        ),
                    ));
                }
                Ok(false)
            }
            Err(Error::InEntry { entry, source }) => {
                out.broken_run |= !on_base;
                let why = cut_reason(&source, last);
                out.damaged
                    .push((entry, format!("cut by damage after frame {last}: {why}")));
                Ok(false)
            }
            Err(e) => {
                out.broken_run |= !on_base;
                if let Some(c) = current {
                    out.damaged
                        .push((c, format!("cut by damage: {}", cut_reason(&e, last))));
                }
                Ok(false)
            }
        }
    }
}

/// Why the records of frames that verified were refused: the error, or in an encrypted
/// archive (where such an error reads as a wrong key: the key is known to be right here)
/// that whoever held the key wrote them so.
fn refusal(e: &Error) -> String {
    match e.root() {
        Error::AuthFailed { .. } => {
            "they break a rule of the format, though they verified under the key".into()
        }
        root => root.to_string(),
    }
}

/// Why an entry was cut where a run of good frames ended after frame `last`. In an encrypted
/// archive a record stream cut short reads as a structure that does not hold ("wrong key or
/// password, or the archive was modified"): in a salvage the key is known to be right and
/// the cut is the damage's.
fn cut_reason(e: &Error, last: u64) -> String {
    match e.root() {
        Error::AuthFailed { .. } => {
            format!("its records go on past frame {last}, into the damaged or missing bytes")
        }
        _ => e.to_string(),
    }
}
