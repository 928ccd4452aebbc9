//! Salvage: reading past damage so that it costs only the entries it touches (issue 11 §1).
//!
//! The fast path is the ordinary scan; salvage runs only after it failed with a damage-class
//! error (a frame tag, a frame that does not decode, a structure that does not parse), and
//! only when the index and footer of the archive verified: the index is what says which
//! entries a frame holds, so each failed frame names exactly the entries it costs, including
//! entries wholly inside it.
//!
//! How: [`Archive::verify_frames`] reads every data frame at the offset the frame table
//! gives and verifies (and decodes) it on its own, one at a time, so a damaged frame cannot
//! take its neighbours with it (its header may be garbage; its place is known from the
//! table). An entry is damaged when a failed frame lies in `[group_start(first_seq),
//! last_seq]`: its own frames and, at level 9, the earlier blocks of its reference group
//! that its blocks are decoded against (a lost block loses its group's later blocks).
//! [`Archive::salvage_selected`] then runs the ordinary selective scan over the intact
//! entries only, so nothing of a damaged entry reaches the visitor, and every byte that does
//! was verified exactly as in an ordinary scan (frame tags, digests, the index comparison).
//! Should a run of intact entries still fail (a frame that verified and decoded alone but
//! breaks a rule across blocks: tampering, not bit rot), its entries are retried one by one
//! and those that fail are named with the error.
//!
//! Cost: one extra pass over the data frames (read, verify, decode) on a damaged archive;
//! nothing on an intact one. Memory: one frame at a time in the verify pass.
//!
//! Without an index (a truncated archive, a damaged tail) salvage resynchronises instead:
//! `resync`.

use super::*;

/// How [`BadFrame::what`] begins for a delta frame that is intact but whose base region could
/// not be read (a damaged base frame, docs/FORMAT.md §16.4): exit 9, not the archive's own
/// damage.
pub const BASE_UNUSABLE: &str = "base region unusable";

/// A data frame that failed on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFrame {
    /// Its sequence number.
    pub seq: u64,
    /// Its offset in the archive, bytes.
    pub offset: u64,
    /// What failed ("tag mismatch", "frame header does not parse", "missing: the archive
    /// ends at byte N", ...).
    pub what: String,
}

/// An entry that salvage could not restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedEntry {
    /// Its position in the index.
    pub index: usize,
    /// Its path, escaped for display.
    pub path: String,
    /// Why (which frame, what failed).
    pub why: String,
    /// Lost to its base alone: a BASE_REF whose base entry is unusable (its own frames
    /// verified; docs/FORMAT.md §16.5), or a file read with a damaged base that is not what
    /// the delta's index holds (§16.4).
    pub on_base: bool,
    /// Lost on its own account in frames that verified: a rule broken across them or a digest
    /// that does not match, not caused by the base (a file of an unencrypted archive rewritten
    /// with its checksums recomputed, say). The exit code of that failure (2, 3 or 5), which
    /// counts toward the salvage's as a failed frame's does. None when a failed frame or the
    /// base cost it (or, for a hard link, its target's loss).
    pub own_code: Option<u8>,
}

/// What a salvage run found.
#[derive(Debug, Clone, Default)]
pub struct Salvage {
    /// The data frames that failed.
    pub bad_frames: Vec<BadFrame>,
    /// The wanted entries that were not restored, in index order.
    pub damaged: Vec<DamagedEntry>,
    /// Totals of the entries that were.
    pub summary: ScanSummary,
}

impl Archive {
    /// Verifies and decodes every data frame of an archive whose index verified, each on its
    /// own at the offset the frame table gives; returns those that failed (in order).
    pub fn verify_frames(&mut self, index: &Index) -> Result<Vec<BadFrame>> {
        let mut bad = Vec::new();
        let mut dec = BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?;
        let len = self
            .input
            .length()
            .map_err(|e| Error::io(&self.path, "seek", e))?;
        let mut off = self.header_len;
        self.pending_frame = None;
        for (seq, &body_len) in index.frame_body_lens.iter().enumerate() {
            let seq = seq as u64;
            let frame_len = body_len as u64 + (FRAME_HEADER_LEN + TAG_LEN) as u64;
            let at = off;
            off += frame_len;
            if self.spooled() && at < self.walk_from {
                // Read from a pipe before its rest was spooled: verified then (`spool`), or,
                // from the damaged frame on, read ahead and lost with the pipe: each such
                // frame is lost, so the index names every entry it held.
                if let Some(b) = self.lost_before_walk.as_ref().filter(|b| seq >= b.seq) {
                    bad.push(BadFrame {
                        seq,
                        offset: at,
                        what: b.what.clone(),
                    });
                }
                continue;
            }
            if let Some(len) = len
                && at + frame_len > len
            {
                bad.push(BadFrame {
                    seq,
                    offset: at,
                    what: format!("missing: the archive ends at byte {len}"),
                });
                continue;
            }
            self.seek_to(at)?;
            let what = match self.read_frame() {
                Err(e) if e.is_io() => return Err(e),
                Err(e) => Some(format!("frame does not read: {e}")),
                Ok(job) if job.header.seq != seq || job.header.kind != FrameKind::Data => {
                    Some(format!(
                        "frame header damaged ({:?} seq {} where data frame {seq} belongs)",
                        job.header.kind, job.header.seq
                    ))
                }
                Ok(job) if job.body.len() != body_len as usize => Some(format!(
                    "frame header damaged (body of {} bytes where the index says {body_len})",
                    job.body.len()
                )),
                Ok(job) => {
                    let (_, _, r) = self.open_here(&mut dec, job);
                    match r {
                        // Krypta's want, not damage: the run stops (exit 4).
                        Err(
                            f @ (FrameFault::OutOfMemory(_)
                            | FrameFault::Base(super::BaseFault::OutOfMemory { .. })),
                        ) => return Err(self.fault(at, seq, f)),
                        Ok(d) => {
                            self.buffers.blocks.give(d.buf);
                            None
                        }
                        Err(FrameFault::Tag) => Some("tag mismatch".to_string()),
                        Err(FrameFault::Format(e)) => Some(format!("block does not parse: {e}")),
                        Err(FrameFault::Codec(m)) => Some(format!("block does not decode: {m}")),
                        // The base could not be read (a file or store error): I/O, as
                        // for the archive's own frames, never a damaged frame.
                        Err(FrameFault::Base(f @ super::BaseFault::Read { .. })) => {
                            return Err(f.reading(self.path.clone(), at, seq));
                        }
                        Err(FrameFault::Base(m)) => Some(format!("{BASE_UNUSABLE}: {m}")),
                        Err(FrameFault::Stopped) => Some("stopped".to_string()),
                    }
                }
            };
            if let Some(what) = what {
                bad.push(BadFrame {
                    seq,
                    offset: at,
                    what,
                });
            }
        }
        self.pending_frame = None;
        Ok(bad)
    }

    /// Restores what can be restored of the index entries at `wanted` positions after an
    /// ordinary scan failed: the entries touched by a failed frame (see the module doc) are
    /// reported, never passed to the visitor; the others are scanned as in
    /// [`Archive::scan_selected`]. `skip` holds the positions already restored by the
    /// failed scan (they are neither read again nor counted as damaged); `cut`, one of them,
    /// the entry that scan was cut in, which is lost: a hard link to it is named with its
    /// loss, as one to a damaged entry is.
    pub fn salvage_selected(
        &mut self,
        index: &Index,
        wanted: &[usize],
        skip: &std::collections::HashSet<usize>,
        cut: Option<usize>,
        visitor: &mut dyn Visitor,
    ) -> Result<Salvage> {
        let bad_frames = self.verify_frames(index)?;
        let mut damaged = Vec::new();
        let mut intact = Vec::new();
        for &i in wanted {
            if skip.contains(&i) {
                continue;
            }
            let e = &index.entries[i];
            let start = crate::format::index_v2::group_start(index, e.first_seq);
            let hit = bad_frames
                .iter()
                .find(|b| b.seq >= start && b.seq <= e.last_seq);
            match hit {
                Some(b) => damaged.push(DamagedEntry {
                    index: i,
                    path: crate::fs::escape_path(&e.meta.path),
                    why: if b.seq < e.first_seq {
                        format!(
                            "block {} of its reference group (frame {} at byte {}) was lost: {}",
                            b.seq, b.seq, b.offset, b.what
                        )
                    } else {
                        format!("frame {} at byte {}: {}", b.seq, b.offset, b.what)
                    },
                    on_base: false,
                    own_code: None,
                }),
                None => intact.push(i),
            }
        }
        // A hard link whose target is damaged cannot be made (nor its content verified): it
        // is named with its target's loss, by `t` as by `x` (the extractor refused it as a
        // link "to a target not extracted", and `t` counted it as verified).
        let lost: std::collections::HashSet<&[u8]> = damaged
            .iter()
            .map(|d: &DamagedEntry| d.index)
            .chain(cut)
            .map(|i| index.entries[i].meta.path.as_slice())
            .collect();
        intact.retain(|&i| {
            let m = &index.entries[i].meta;
            if m.kind != EntryKind::Hardlink || !lost.contains(m.link.as_slice()) {
                return true;
            }
            damaged.push(DamagedEntry {
                index: i,
                path: crate::fs::escape_path(&m.path),
                why: format!(
                    "hard link to {}, which is damaged",
                    crate::fs::escape_path(&m.link)
                ),
                on_base: false,
                own_code: None,
            });
            false
        });
        damaged.sort_by_key(|d| d.index);
        let mut summary = ScanSummary::default();
        match self.scan_selected(index, &intact, visitor) {
            Ok(s) => summary = s,
            Err(e) if e.is_io() => return Err(e),
            Err(_) => {
                // One by one: only the entries that fail on their own are lost.
                for &i in &intact {
                    match self.scan_selected(index, &[i], visitor) {
                        Ok(s) => add(&mut summary, s),
                        Err(e) if e.is_io() => return Err(e),
                        Err(e) => damaged.push(DamagedEntry {
                            index: i,
                            path: crate::fs::escape_path(&index.entries[i].meta.path),
                            why: e.root().to_string(),
                            on_base: e.lost_to_base(),
                            own_code: (!e.lost_to_base())
                                .then(|| u8::try_from(e.exit_code()).unwrap_or(1)),
                        }),
                    }
                }
                damaged.sort_by_key(|d| d.index);
            }
        }
        Ok(Salvage {
            bad_frames,
            damaged,
            summary,
        })
    }
}

fn add(total: &mut ScanSummary, s: ScanSummary) {
    total.entries += s.entries;
    total.files += s.files;
    total.bytes += s.bytes;
    total.frames += s.frames;
    total.block_bytes += s.block_bytes;
    total.unverified.extend(s.unverified);
    total.peak_held = total.peak_held.max(s.peak_held);
    total.holes_hashed = s.holes_hashed;
    total.frame_bytes = s.frame_bytes;
}
