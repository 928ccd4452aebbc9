//! A file of a delta archive stored as a reference to a base entry (BASE_REF, docs/FORMAT.md
//! §16.5): its content is read from the base, entry by entry, for the record parser.
//!
//! Design (why it is so):
//! - **Where the bytes come from.** The base's index (checked when the base was opened, and
//!   fixed by the binding) says where base entry `n` starts (`first_seq`, `first_offset`) and
//!   in which frame its records end (`last_seq`). The base's records are walked from there:
//!   they must be that entry's ENTRY record (equal to the index entry), its DATA segments and
//!   its END or END_DIGEST (size and digest equal to the index's), all within frames
//!   `first_seq..=last_seq`. Every base frame is read through [`BaseArchive::block`]: its tag
//!   verified with the base's key before it is decrypted, its head checked against the frame
//!   table, its block decoded; exactly the checks a `zstd+base` region gets (§16.4).
//! - **Which thread.** The record parser's (the thread that hashes and writes): a reference
//!   has no delta block to decode, so the delta's workers have nothing to do for it. The
//!   base's prefetch thread decodes the next frames of the entry while this thread hashes
//!   and hands out the current one ([`BaseArchive::ahead`], `workers + 1` frames ahead), so
//!   base decoding still runs beside hashing and writing.
//! - **Memory.** One decoded base block held at a time here, plus the base's cache held to
//!   its working set — at least `(workers + 1)` base blocks, at most the cache budget
//!   (256 MiB) — and the record parser's block decoder. Content goes to the visitor in pieces
//!   of at most one base block; nothing is collected per file.
//! - **Verification.** The caller hashes what this walk hands out (holes as zeros, under the
//!   scan's hole allowance) and compares it with the delta archive's END_DIGEST before the
//!   visitor ends the file; a mismatch is the base's failure (exit 9), as is any failure
//!   here. So a reference never weakens verification: the bytes are the base's verified
//!   bytes, and their BLAKE3 is the one the delta archive recorded.

use super::*;

/// What the walk hands to the record parser, in file order.
pub(super) enum Piece<'a> {
    /// `n` bytes of hole (zeros) before the next piece or the end.
    Hole(u64),
    /// Content bytes at a file offset.
    Bytes(u64, &'a [u8]),
}

/// Why a base entry could not be read.
pub(super) enum RefError {
    /// The base failed (damaged frame, records that are not the entry): the message names
    /// the base and, for a frame, its number and byte.
    Base(String),
    /// Reading the base failed (a file or store error, not damage).
    Read(BaseFault),
    /// The caller's sink failed (writing the file).
    Sink(Error),
}

/// The decoded record stream of one base entry's frames.
struct EntryStream<'a> {
    base: &'a BaseArchive,
    dec: &'a mut BlockDecoder,
    block: Arc<crate::codec::huge::HugeBuf>,
    seq: u64,
    pos: usize,
    last_seq: u64,
    /// Frames to ask the prefetch thread for ahead of the walk.
    ahead: u64,
}

impl EntryStream<'_> {
    /// Makes `block[pos..]` non-empty; false past the entry's last frame.
    fn ensure(&mut self) -> std::result::Result<bool, Problem> {
        while self.pos == self.block.len() {
            if self.seq >= self.last_seq {
                return Ok(false);
            }
            self.seq += 1;
            self.base.ahead(
                self.seq + 1,
                (self.seq + 1 + self.ahead).min(self.last_seq + 1),
            );
            self.block = self
                .base
                .block(self.dec, self.seq)
                .map_err(Problem::Fault)?;
            self.pos = 0;
        }
        Ok(true)
    }

    /// Up to `max` (> 0) next bytes.
    fn take(&mut self, max: usize) -> std::result::Result<&[u8], Problem> {
        if !self.ensure()? {
            return Err(self.past_end());
        }
        let n = (self.block.len() - self.pos).min(max);
        let at = self.pos;
        self.pos += n;
        Ok(&self.block[at..at + n])
    }

    fn past_end(&self) -> Problem {
        Problem::Text(format!(
            "{}: its records run past base frame {}, where the base's index ends the entry",
            crate::fs::shown(self.base.path()),
            self.last_seq
        ))
    }
}

impl StreamSource for EntryStream<'_> {
    type Error = Problem;
    fn fill(&mut self, buf: &mut [u8]) -> std::result::Result<bool, Problem> {
        let mut got = 0;
        while got < buf.len() {
            if !self.ensure()? {
                if got == 0 {
                    return Ok(false);
                }
                return Err(self.past_end());
            }
            let n = (self.block.len() - self.pos).min(buf.len() - got);
            buf[got..got + n].copy_from_slice(&self.block[self.pos..self.pos + n]);
            self.pos += n;
            got += n;
        }
        Ok(true)
    }
}

/// A base failure's message (the stream's error type: a record that does not parse is one).
enum Problem {
    /// What is wrong, naming the base.
    Text(String),
    /// A base frame failed.
    Fault(BaseFault),
}

impl From<FormatError> for Problem {
    fn from(e: FormatError) -> Problem {
        Problem::Text(e.to_string())
    }
}

impl From<BaseFault> for RefError {
    fn from(f: BaseFault) -> RefError {
        match f {
            BaseFault::Read { .. } => RefError::Read(f),
            f => RefError::Base(f.to_string()),
        }
    }
}

impl From<Problem> for RefError {
    fn from(p: Problem) -> RefError {
        match p {
            Problem::Text(m) => RefError::Base(m),
            Problem::Fault(f) => f.into(),
        }
    }
}

/// Reads base entry `n` (a file of the base's index: the caller checked) and hands its
/// content to `sink` in file order; returns its size. `workers` sizes the prefetch
/// lookahead.
pub(super) fn read_base_entry(
    base: &BaseArchive,
    dec: &mut BlockDecoder,
    n: u64,
    workers: usize,
    sink: &mut dyn FnMut(Piece<'_>) -> Result<()>,
) -> std::result::Result<u64, RefError> {
    let e = &base.index().entries[n as usize];
    let name = || {
        format!(
            "{}: entry {n} ({})",
            crate::fs::shown(base.path()),
            crate::fs::escape_path(&e.meta.path)
        )
    };
    let bad = |what: String| RefError::Base(format!("{}: {what}", name()));
    let ahead = workers as u64 + 1;
    base.ahead(
        e.first_seq + 1,
        (e.first_seq + 1 + ahead).min(e.last_seq + 1),
    );
    let block = base.block(dec, e.first_seq)?;
    if e.first_offset as usize >= block.len() {
        return Err(bad(format!(
            "the index places it at offset {} of base frame {}, past its {}-byte block",
            e.first_offset,
            e.first_seq,
            block.len()
        )));
    }
    let mut s = EntryStream {
        base,
        dec,
        block,
        seq: e.first_seq,
        pos: e.first_offset as usize,
        last_seq: e.last_seq,
        ahead,
    };
    let version = base.version();
    let first = record::read_record(&mut s, version).map_err(|p| match p {
        Problem::Text(m) => bad(m),
        Problem::Fault(f) => f.into(),
    })?;
    match first {
        Some(RecordHead::Entry(m)) if m == e.meta => {}
        _ => {
            return Err(bad(
                "the base's records where its index places it are not that entry".into(),
            ));
        }
    }
    let mut extents = ExtentCheck::default();
    let mut hashed_to = 0u64;
    loop {
        let rec = record::read_record(&mut s, version)?
            .ok_or_else(|| bad("the base's record stream ends inside it".into()))?;
        match rec {
            RecordHead::Pad => {}
            RecordHead::Data { offset, len } => {
                extents
                    .segment(offset, len)
                    .map_err(|f| bad(f.to_string()))?;
                if offset > hashed_to {
                    sink(Piece::Hole(offset - hashed_to)).map_err(RefError::Sink)?;
                }
                let mut done = 0u64;
                while done < len as u64 {
                    let bytes = s.take((len as u64 - done) as usize)?;
                    let k = bytes.len() as u64;
                    sink(Piece::Bytes(offset + done, bytes)).map_err(RefError::Sink)?;
                    done += k;
                }
                hashed_to = offset + len as u64;
            }
            RecordHead::End { size, digest } => {
                extents.end(size).map_err(|f| bad(f.to_string()))?;
                if size != e.size || digest != e.digest {
                    return Err(bad(
                        "its END record disagrees with the base's index (size or digest)".into(),
                    ));
                }
                if size > hashed_to {
                    sink(Piece::Hole(size - hashed_to)).map_err(RefError::Sink)?;
                }
                return Ok(size);
            }
            RecordHead::Entry(_) | RecordHead::BaseRef { .. } => {
                return Err(bad(
                    "the base's records hold another entry or a base reference inside it".into(),
                ));
            }
        }
    }
}
