//! Record parsing (formats 1 and 2): entries, DATA and END records, digests and holes, each
//! entry checked against the entry-set rules or against the index entry it must equal.

use super::base_ref::{Piece, RefError, read_base_entry};
use super::feed::{Feed, next_record};
use super::hashing::Digest;
use super::*;

/// Reads the next record that is not a PAD (format 2's alignment records are skipped),
/// checking each record start against its block's first-record offset.
pub(super) fn next_non_pad(feed: &mut Feed<'_>) -> Result<Option<RecordHead>> {
    loop {
        if !feed.record_start()? {
            return Ok(None);
        }
        match next_record(feed)? {
            Some(RecordHead::Pad) => continue,
            r => return Ok(r),
        }
    }
}

/// How a scan checks the entries it parses besides their own rules.
pub(super) enum Check<'a> {
    /// Against the entry-set rules (a stream read without its index first: a pipe).
    Set(&'a mut EntrySet),
    /// Against index entries (which passed the entry-set rules), one by one, in order.
    Index(&'a [IndexEntry]),
}

/// Parses records from the feed, verifying digests and passing wanted entries on. Collects
/// what it parsed as index entries (for the comparison with the index). With `limit`, stops
/// after that many entries. `check` is the entry-set rules or the index the entries must
/// equal (their metadata before the visitor sees them, their size, digest and location once
/// parsed). `holes` carries (hole bytes hashed, data frame bytes read) from earlier runs of
/// the same scan.
pub(super) fn parse_records(
    feed: &mut Feed<'_>,
    visitor: &mut dyn Visitor,
    parsed: &mut Vec<IndexEntry>,
    limit: Option<usize>,
    mut check: Check<'_>,
    holes: (u64, u64),
) -> Result<ScanSummary> {
    let (hashed_before, frames_before) = holes;
    let mut summary = ScanSummary {
        holes_hashed: hashed_before,
        ..ScanSummary::default()
    };
    loop {
        if limit.is_some_and(|l| summary.entries >= l as u64) {
            break;
        }
        let rec = loop {
            if !feed.record_start()? {
                break None;
            }
            // What the entry is read with, from its first record on.
            feed.read_base = feed.block_on_base;
            let at = feed.position();
            match next_record(feed)? {
                Some(RecordHead::Pad) => continue,
                r => break r.map(|r| (at, r)),
            }
        };
        let Some(((first_seq, first_offset), rec)) = rec else {
            break;
        };
        let meta = match rec {
            RecordHead::Entry(m) => m,
            _ => {
                return Err(feed.corrupt("a DATA, BASE_REF or END record outside a file"));
            }
        };
        match &mut check {
            Check::Set(set) => {
                set.admit(&meta).map_err(|e| feed.corrupt_with(e))?;
            }
            Check::Index(ix) => {
                if ix
                    .get(summary.entries as usize)
                    .is_none_or(|e| e.meta != meta)
                {
                    let what = "does not match this archive's index (its entry record differs)";
                    return Err(
                        base_fault(feed, &meta.path, false, what).unwrap_or_else(|| {
                            feed.ar.sequence_error(
                                feed.ar.pos,
                                "index disagrees with the record stream".into(),
                            )
                        }),
                    );
                }
            }
        }
        summary.entries += 1;
        let wanted = visitor.wants(&meta);
        if meta.kind != EntryKind::File {
            if wanted {
                visitor.entry(&meta)?;
            }
            check.entry_done(
                feed,
                parsed,
                summary.entries - 1,
                IndexEntry {
                    meta,
                    size: 0,
                    digest: None,
                    first_seq,
                    first_offset,
                    last_seq: feed.last_byte_seq(),
                },
            )?;
            continue;
        }
        if wanted {
            visitor.entry(&meta)?;
        }
        let in_entry = |e: Error| Error::InEntry {
            entry: crate::fs::escape_path(&meta.path),
            source: Box::new(e),
        };
        let holes_hashed = &mut summary.holes_hashed;
        let unverified = &mut summary.unverified;
        // A BASE_REF was read: the file's content came out of the base.
        let mut by_ref = false;
        let r = (|| -> Result<(u64, Option<[u8; 32]>)> {
            let mut digest_of = Digest::new();
            let mut hashed_to = 0u64;
            let mut extents = ExtentCheck::default();
            // A BASE_REF record read (docs/FORMAT.md §16.5): the base entry and its size.
            let mut referenced: Option<(u64, u64)> = None;
            let mut any_data = false;
            // Holes read as zeros and are hashed as zeros; a crafted archive could claim
            // terabytes of them, so the zeros hashed per scan are capped by what the scan has
            // read (hole_hash_allowance, checked before hashing, cumulative). Past the cap a
            // file's digest is not checked (its stored bytes still are, by the frame tags)
            // and the caller is told which file.
            let zeros = |feed: &mut Feed<'_>, d: &mut Digest, n: u64, hashed: &mut u64| {
                if !d.is_on() {
                    return Ok(());
                }
                let allowed = hole_hash_allowance(frames_before + feed.frame_bytes);
                if hashed.saturating_add(n) <= allowed {
                    *hashed += n;
                    feed.hash_zeros(d, n)
                } else {
                    feed.digest_off(d)
                }
            };
            loop {
                let rec = next_non_pad(feed)
                    .map_err(in_entry)?
                    .ok_or_else(|| in_entry(feed.corrupt("the stream ends inside a file")))?;
                match rec {
                    RecordHead::Data { .. } if referenced.is_some() => {
                        return Err(in_entry(
                            feed.corrupt("a DATA record in a file stored as a base reference"),
                        ));
                    }
                    RecordHead::BaseRef { entry } => {
                        if feed.ar.header.delta_base().is_none() {
                            return Err(in_entry(feed.corrupt(
                                "a BASE_REF record in an archive that is not a delta archive",
                            )));
                        }
                        if any_data || referenced.is_some() {
                            return Err(in_entry(
                                feed.corrupt("a BASE_REF record after the file's content began"),
                            ));
                        }
                        // The base's content is hashed here (it is not in this archive's
                        // blocks); the hole allowance grows with this archive's frames.
                        let allowed = hole_hash_allowance(frames_before + feed.frame_bytes);
                        let mut here = match std::mem::replace(&mut digest_of, Digest::Off) {
                            Digest::Here(h) => Some(h),
                            _ => None,
                        };
                        let size = read_reference(feed, &meta, entry, &mut |p| {
                            match p {
                                Piece::Hole(n) => {
                                    if let Some(h) = here.as_mut() {
                                        if holes_hashed.saturating_add(n) <= allowed {
                                            *holes_hashed += n;
                                            hash_zeros(h, n);
                                        } else {
                                            here = None;
                                        }
                                    }
                                }
                                Piece::Bytes(off, b) => {
                                    if let Some(h) = here.as_mut() {
                                        h.update(b);
                                    }
                                    if wanted {
                                        visitor.data(off, b)?;
                                    }
                                }
                            }
                            Ok(())
                        })?;
                        digest_of = here.map_or(Digest::Off, Digest::Here);
                        referenced = Some((entry, size));
                        by_ref = true;
                        hashed_to = size;
                    }
                    RecordHead::Data { offset, len } => {
                        any_data = true;
                        extents
                            .segment(offset, len)
                            .map_err(|e| in_entry(feed.corrupt_with(e)))?;
                        zeros(feed, &mut digest_of, offset - hashed_to, holes_hashed)?;
                        let mut done = 0u64;
                        while done < len as u64 {
                            let r = feed
                                .take_range((len as u64 - done) as usize)
                                .map_err(in_entry)?;
                            let n = r.len();
                            feed.hash_taken(&mut digest_of, r.clone())?;
                            if wanted {
                                visitor.data(offset + done, feed.taken(r))?;
                            }
                            done += n as u64;
                        }
                        hashed_to = offset + len as u64;
                    }
                    RecordHead::End { size, digest } => {
                        extents
                            .end(size)
                            .map_err(|e| in_entry(feed.corrupt_with(e)))?;
                        if let Some((n, base_size)) = referenced {
                            let Some(digest) = digest else {
                                return Err(in_entry(feed.corrupt(
                                    "a file stored as a base reference ends with END, not END_DIGEST",
                                )));
                            };
                            if size != base_size {
                                return Err(in_entry(feed.corrupt(&format!(
                                    "its END_DIGEST says {size} bytes, its base entry {n} has {base_size}"
                                ))));
                            }
                            match feed.digest(std::mem::replace(&mut digest_of, Digest::Off))? {
                                Some(h) if h.as_bytes() != &digest => {
                                    let base = feed.ar.base.as_ref().map_or_else(
                                        || "the base".to_string(),
                                        |b| crate::fs::shown(b.path()),
                                    );
                                    return Err(reference_error(
                                        feed,
                                        &meta,
                                        n,
                                        format!(
                                            "its content in {base} does not match the file's digest (END_DIGEST)"
                                        ),
                                    ));
                                }
                                Some(_) => {}
                                None => unverified.push(crate::fs::escape_path(&meta.path)),
                            }
                            return Ok((size, Some(digest)));
                        }
                        let Some(digest) = digest else {
                            // Format 2's END: no digest; every byte was covered by the tags
                            // of the frames that held it.
                            return Ok((size, None));
                        };
                        zeros(feed, &mut digest_of, size - hashed_to, holes_hashed)?;
                        match feed.digest(std::mem::replace(&mut digest_of, Digest::Off))? {
                            Some(h) if h.as_bytes() != &digest => {
                                let what = "does not match its digest (END_DIGEST)";
                                return Err(base_fault(feed, &meta.path, false, what)
                                    .unwrap_or_else(|| in_entry(feed.digest_error(&meta.path))));
                            }
                            Some(_) => {}
                            None => unverified.push(crate::fs::escape_path(&meta.path)),
                        }
                        return Ok((size, Some(digest)));
                    }
                    RecordHead::Entry(_) => {
                        return Err(in_entry(feed.corrupt("an ENTRY record inside a file")));
                    }
                    RecordHead::Pad => unreachable!("next_non_pad skips PAD records"),
                }
            }
        })();
        match r {
            Ok((size, digest)) => {
                let e = IndexEntry {
                    meta,
                    size,
                    digest,
                    first_seq,
                    first_offset,
                    last_seq: feed.last_byte_seq(),
                };
                // Compared with the index before the file gets its name (scan_against's
                // promise: a stream that differs from its index is refused before the visitor
                // takes the differing entry), so a file whose size, digest or place the index
                // does not confirm is never left under its name. A mismatch of a file read
                // with a damaged base, whose binding could not be checked, is blamed on the
                // base (`base_fault`).
                if let Err(err) = check.entry_done(feed, parsed, summary.entries - 1, e.clone()) {
                    if wanted {
                        visitor.abort();
                    }
                    let what = check.differs(summary.entries - 1, &e);
                    return Err(base_fault(feed, &e.meta.path, by_ref, what).unwrap_or_else(
                        || Error::InEntry {
                            entry: crate::fs::escape_path(&e.meta.path),
                            source: Box::new(err),
                        },
                    ));
                }
                if wanted {
                    visitor.end(&e.meta, size)?;
                }
                summary.files += 1;
                summary.bytes += size;
            }
            Err(e) => {
                if wanted {
                    visitor.abort();
                }
                return Err(e);
            }
        }
    }
    summary.frames = feed.frames_done;
    summary.frame_bytes = frames_before + feed.frame_bytes;
    summary.block_bytes = feed.block_bytes;
    Ok(summary)
}

impl Check<'_> {
    /// Entry number `i` of the stream, just parsed: collected (entry-set mode) or compared
    /// with index entry `i`.
    pub(super) fn entry_done(
        &self,
        feed: &Feed<'_>,
        parsed: &mut Vec<IndexEntry>,
        i: u64,
        e: IndexEntry,
    ) -> Result<()> {
        match self {
            Check::Set(_) => parsed.push(e),
            Check::Index(ix) => {
                if ix.get(i as usize) != Some(&e) {
                    return Err(feed.ar.sequence_error(
                        feed.ar.pos,
                        "index disagrees with the record stream".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Check<'_> {
    /// How entry number `i`, which does not equal its index entry, differs from it (the
    /// words of [`BaseError::Mismatch`]).
    fn differs(&self, i: u64, e: &IndexEntry) -> &'static str {
        match self {
            Check::Index(ix) => match ix.get(i as usize) {
                None => "is not in this archive's index",
                Some(x) if x.digest != e.digest => {
                    "does not match this archive's index (its digest differs)"
                }
                Some(x) if x.size != e.size => {
                    "does not match this archive's index (its size differs)"
                }
                Some(_) => "does not match this archive's index (its place in the stream differs)",
            },
            Check::Set(_) => "does not match this archive's index",
        }
    }
}

/// The error of a file that does not match its index entry or its digest (`what`), when it
/// was read with a base whose binding could not be checked (a damaged base, `base`): its
/// records or content came out of the base (`by_ref`: a BASE_REF; else a block decoded
/// against a base region, [`Feed::read_base`]), so the base is to blame, not this archive,
/// whose frames verified (exit 9, [`BaseError::Mismatch`]). None otherwise: the error is the
/// archive's own, as with a base that is bound or no base at all.
fn base_fault(feed: &Feed<'_>, path: &[u8], by_ref: bool, what: &'static str) -> Option<Error> {
    let base = feed.ar.base.as_ref()?;
    feed.ar.base_damage.as_ref()?;
    (by_ref || feed.read_base).then(|| {
        Error::Base(BaseError::Mismatch {
            path: feed.ar.path.clone(),
            entry: crate::fs::escape_path(path),
            base: base.path().to_path_buf(),
            what,
            sealed: feed.ar.protection.is_sealed(),
        })
    })
}

/// Reads the content of a file stored as a BASE_REF to base entry `n` (docs/FORMAT.md
/// §16.5) from the base into `sink`; returns the base entry's size. A delta archive read
/// without its base, or a reference to an entry that is not a file of the base, is refused.
fn read_reference(
    feed: &mut Feed<'_>,
    meta: &EntryMeta,
    n: u64,
    sink: &mut dyn FnMut(Piece<'_>) -> Result<()>,
) -> Result<u64> {
    let Some(base) = feed.ar.base.clone() else {
        return Err(Error::Base(BaseError::Required {
            path: feed.ar.path.clone(),
            base_id: feed
                .ar
                .header
                .delta_base()
                .map(|(id, _)| base::hex(&id))
                .unwrap_or_default(),
        }));
    };
    let entries = &base.index().entries;
    if let Some(why) = base.unchecked()
        && n as usize >= entries.len()
    {
        // The entries of a damaged base are those its stream gave before its first lost
        // frame (`base::walked_entries`).
        return Err(reference_error(
            feed,
            meta,
            n,
            format!(
                "the base's index, which places its entries, cannot be read ({why}), and its entry {n} is not among the {} its intact frames hold",
                entries.len()
            ),
        ));
    }
    if entries
        .get(n as usize)
        .is_none_or(|e| e.meta.kind != EntryKind::File)
    {
        return Err(Error::InEntry {
            entry: crate::fs::escape_path(&meta.path),
            source: Box::new(feed.corrupt(&format!(
                "a BASE_REF to base entry {n}, which is not a file of the base's {} entries",
                entries.len()
            ))),
        });
    }
    let mut dec = match feed.dec.take() {
        Some(d) => d,
        None => BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?,
    };
    let r = read_base_entry(&base, &mut dec, n, feed.ar.jobs, sink);
    feed.dec = Some(dec);
    match r {
        Ok(size) => Ok(size),
        Err(RefError::Sink(e)) => Err(e),
        Err(RefError::Base(problem)) => Err(reference_error(feed, meta, n, problem)),
        // A failed read of the base is I/O (exit 4), as for any archive.
        Err(RefError::Read(fault)) => Err(fault.reading(feed.ar.path.clone(), 0, 0)),
    }
}

/// The exit-9 error of a reference whose base entry is unusable.
fn reference_error(feed: &Feed<'_>, meta: &EntryMeta, n: u64, problem: String) -> Error {
    let base_path = feed
        .ar
        .base
        .as_ref()
        .and_then(|b| b.index().entries.get(n as usize))
        .map(|e| crate::fs::escape_path(&e.meta.path))
        .unwrap_or_else(|| "its path unknown".into());
    Error::Base(BaseError::Entry {
        path: feed.ar.path.clone(),
        entry: crate::fs::escape_path(&meta.path),
        base_entry: n,
        base_path,
        problem,
    })
}
