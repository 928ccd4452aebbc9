//! Scans: the whole archive front to back (compared with its index when that was read
//! first), and selective runs over the frames that hold the wanted entries.

use super::feed::Feed;
use super::records::{Check, parse_records};
use super::*;

impl Archive {
    /// Reads the whole archive front to back (works on pipes): every data frame is verified and
    /// decoded, every record parsed, every file digest checked, then the index and footer are
    /// checked against the stream. Entries the visitor does not want are verified but not
    /// passed on.
    pub fn scan(&mut self, visitor: &mut dyn Visitor) -> Result<ScanSummary> {
        self.scan_against(None, visitor)
    }

    /// [`Archive::scan`] of an archive whose footer and index were read (and checked) first
    /// ([`Archive::read_index`], then [`Archive::rewind_to_data`]): each entry of the stream
    /// is compared with the index as soon as it is parsed, so a stream that differs from its
    /// index is refused before the visitor sees the differing entry; the entry-set rules,
    /// which the index passed, need no second check, and the index is not read again (the
    /// data frames must end where the footer says, with the reference lengths the frame
    /// table gives).
    pub fn scan_against(
        &mut self,
        known: Option<(&Footer, &Index)>,
        visitor: &mut dyn Visitor,
    ) -> Result<ScanSummary> {
        self.input.read_ahead_to(None);
        let mut pool = self.new_pool()?;
        let mut feed = Feed::new(self, &mut pool, None, 0);
        // The frame table (checked against the stream at the end) tells how much of its
        // group each block still needs, so the blocks kept for references are no more.
        feed.needs = known.map(|(_, ix)| crate::archive::group::Needs::of(&ix.frame_ref_lens));
        // A table with referencing blocks: decode each one ahead from the first (`prefetch`).
        feed.chained = feed.needs.as_ref().is_some_and(|n| n.any());
        feed.may_decode_ahead = true;
        let mut parsed = Vec::new();
        let mut set = EntrySet::new(feed.ar.version);
        let check = match known {
            Some((_, ix)) => Check::Index(&ix.entries),
            None => Check::Set(&mut set),
        };
        let mut summary = parse_records(&mut feed, visitor, &mut parsed, None, check, (0, 0))?;
        let (data_frames, index_offset) = feed.finish_data()?;
        let refs = std::mem::take(&mut feed.refs_seen);
        summary.peak_held = pool.budget.peak();
        drop(pool);
        self.data_end = Some(index_offset);
        if let Some((footer, index)) = known {
            if summary.entries != index.entries.len() as u64
                || data_frames != footer.data_frames
                || index_offset != footer.index_offset
                || index.frame_ref_lens != refs
            {
                return Err(self.sequence_error(
                    index_offset,
                    "index disagrees with the record stream".into(),
                ));
            }
            return Ok(summary);
        }
        // Then the index frames and the footer.
        let index = self.read_index_and_footer(data_frames, index_offset)?;
        if index.entries != parsed || index.frame_ref_lens != refs {
            return Err(self.sequence_error(
                index_offset,
                "index disagrees with the record stream".into(),
            ));
        }
        Ok(summary)
    }

    /// Extracts only the index entries at `wanted` positions (seekable archives): decodes just
    /// the frames that hold them, from the start of their group (format 2: the frames a
    /// referencing block needs before it; the frame table says where a group starts).
    pub fn scan_selected(
        &mut self,
        index: &Index,
        wanted: &[usize],
        visitor: &mut dyn Visitor,
    ) -> Result<ScanSummary> {
        let mut offsets = Vec::with_capacity(index.frame_body_lens.len());
        let mut off = self.header_len;
        for &l in &index.frame_body_lens {
            offsets.push(off);
            off += l as u64 + (FRAME_HEADER_LEN + TAG_LEN) as u64;
        }
        let mut total = ScanSummary::default();
        let mut i = 0;
        while i < wanted.len() {
            // A run: consecutive wanted entries whose frames overlap or touch.
            let first = &index.entries[wanted[i]];
            let mut last_seq = first.last_seq;
            let mut j = i + 1;
            while j < wanted.len() && index.entries[wanted[j]].first_seq <= last_seq + 1 {
                last_seq = last_seq.max(index.entries[wanted[j]].last_seq);
                j += 1;
            }
            let run_entries: Vec<&IndexEntry> =
                index.entries[wanted[i]..=wanted[j - 1]].iter().collect();
            let want_set: std::collections::HashSet<usize> = wanted[i..j].iter().copied().collect();
            let start = crate::format::index_v2::group_start(index, first.first_seq);
            self.seek_to(offsets[start as usize])?;
            let run_end = offsets.get(last_seq as usize + 1).copied().unwrap_or(off);
            self.input.read_ahead_to(Some(run_end));
            let mut pool = self.new_pool()?;
            let mut feed = Feed::new(self, &mut pool, Some((start, last_seq)), first.first_seq);
            feed.skip = first.first_offset as usize;
            feed.expected_refs = Some(&index.frame_ref_lens);
            feed.may_decode_ahead = true;
            let mut filter = SelectVisitor {
                inner: visitor,
                base: wanted[i],
                want: &want_set,
                n: 0,
            };
            let mut parsed = Vec::new();
            let expected: Vec<IndexEntry> = run_entries.iter().map(|&e| e.clone()).collect();
            let r = parse_records(
                &mut feed,
                &mut filter,
                &mut parsed,
                Some(run_entries.len()),
                Check::Index(&expected),
                (total.holes_hashed, total.frame_bytes),
            );
            drop(feed);
            total.peak_held = total.peak_held.max(pool.budget.peak());
            drop(pool);
            let s = r?;
            if s.entries != expected.len() as u64 {
                return Err(self.sequence_error(
                    offsets[first.first_seq as usize],
                    "record stream disagrees with the index".into(),
                ));
            }
            total.entries += s.entries;
            total.files += s.files;
            total.bytes += s.bytes;
            total.frames += s.frames;
            total.block_bytes += s.block_bytes;
            total.unverified.extend(s.unverified);
            total.holes_hashed = s.holes_hashed;
            total.frame_bytes = s.frame_bytes;
            i = j;
        }
        Ok(total)
    }
}

/// Passes on only the wanted entries of a run (by index position).
pub(super) struct SelectVisitor<'a> {
    pub(super) inner: &'a mut dyn Visitor,
    pub(super) base: usize,
    pub(super) want: &'a std::collections::HashSet<usize>,
    pub(super) n: usize,
}

impl Visitor for SelectVisitor<'_> {
    fn wants(&mut self, meta: &EntryMeta) -> bool {
        let pos = self.base + self.n;
        self.n += 1;
        self.want.contains(&pos) && self.inner.wants(meta)
    }
    fn entry(&mut self, meta: &EntryMeta) -> Result<()> {
        self.inner.entry(meta)
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        self.inner.data(offset, bytes)
    }
    fn end(&mut self, meta: &EntryMeta, size: u64) -> Result<()> {
        self.inner.end(meta, size)
    }
    fn abort(&mut self) {
        self.inner.abort()
    }
}
