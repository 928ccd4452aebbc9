//! An archive with a run of bytes inserted or removed in one place (a bad copy) and no
//! recovery data to undo it (`crate::recovery::realign` does that with it): the footer
//! still ends the file and verifies, but the index is not where the footer says, and
//! every frame after the edit sits `shift` bytes off its place.
//!
//! Without this, such an archive is read front to back without its index: the frames
//! around the edit are lost and the entries wholly inside them cannot even be named. With
//! it ([`Archive::undo_moved_index`]), the index is found where it ends (right before the
//! footer, or the signature frame) by a backward search for frame heads of the index's
//! kind, sequence numbers and lengths that end exactly there; it must verify as usual.
//! Its frame table gives every data frame's place as written; the first frame whose head
//! is not in its place and the first one after it whose head is found `shift` bytes off
//! bound the edit. The archive is then read through a view with the edit undone
//! ([`crate::store::shifted::Shifted`], as the recovery layer does): only the frames the
//! edit touched fail their tags, and salvage names their entries from the index.
//!
//! Choice: the search runs only when the index was not readable where the verified footer
//! says, and looks for each index frame's head at most [`SEARCH_WINDOW`] bytes before where
//! the frame must end (krypta cuts the index into blocks of at most 4 MiB, so its frames
//! are shorter; a longer one is not found, and the archive is read front to back as
//! before). So an index damaged in place costs a few MiB of reading, not a second read of
//! the whole archive. It never lets anything through that did not verify: the index
//! frames are checked by their tags, the data frames too.

use super::*;

/// Bytes read per step of the backward search.
const SEARCH_CHUNK: usize = 1 << 20;

/// How far before its end an index frame's head is looked for: krypta's index blocks are
/// at most 4 MiB, stored or compressed, plus their block header.
const SEARCH_WINDOW: u64 = (4 << 20) + (64 << 10);

impl Archive {
    /// When the index of this seekable archive is intact but moved by one insertion or
    /// removal before it: replaces the input with the view that undoes the edit and returns
    /// it (where, bytes inserted (negative: removed), and the sequence number of the frame
    /// there). None (the input unchanged) when the footer does not verify, no index is
    /// found, or it is where the footer says.
    pub(super) fn undo_moved_index(&mut self) -> Result<Option<(u64, i64, u64)>> {
        let len = match self.input.length() {
            Ok(Some(len)) => len,
            _ => return Ok(None),
        };
        if len < self.header_len + FOOTER_LEN as u64 {
            return Ok(None);
        }
        let foot_at = len - FOOTER_LEN as u64;
        self.seek_to(foot_at)?;
        let mut fb = [0u8; FOOTER_LEN];
        self.read_exact_at_pos(&mut fb, "footer")?;
        let Ok(footer) = self.check_footer(foot_at, &fb) else {
            return Ok(None);
        };
        let index_end = foot_at.saturating_sub(self.signature_frame_len());
        let Some(found) = self.search_index_start(&footer, index_end)? else {
            return Ok(None);
        };
        let shift = found as i128 - footer.index_offset as i128;
        let Ok(shift) = i64::try_from(shift) else {
            return Ok(None);
        };
        if shift == 0 {
            return Ok(None);
        }
        // The index must verify where it was found, and agree with the footer.
        self.pending_frame = None;
        self.seek_to(found)?;
        let Ok(index) =
            self.read_index_frames(footer.data_frames, Some(footer.index_frames), index_end)
        else {
            return Ok(None);
        };
        if self.pos != index_end || self.check_frame_table(&footer, &index).is_err() {
            return Ok(None);
        }
        let (split, frame) = self.edit_start(&index, footer.index_offset, shift);
        let written = u64::try_from(len as i128 - i128::from(shift)).unwrap_or(0);
        let inner = std::mem::replace(
            &mut self.input,
            Box::new(crate::store::local::ReadSource::new(Box::new(
                std::io::empty(),
            ))),
        );
        self.input = Box::new(crate::store::shifted::Shifted::new(
            inner,
            (split, shift),
            written,
        ));
        self.pending_frame = None;
        self.seek_to(self.header_len)?;
        Ok(Some((split, shift, frame)))
    }

    /// Where the view undoing a `shift`-byte edit splits: the place (as written) of the first
    /// data frame at or after the first one whose head is not in its place, whose head is
    /// found `shift` bytes off (the index, at `index_offset`, when none is). The frames in
    /// between, and the one before whose body the edit may be in, fail their tags. With the
    /// sequence number of the frame there.
    fn edit_start(&self, index: &Index, index_offset: u64, shift: i64) -> (u64, u64) {
        let mut places = Vec::with_capacity(index.frame_body_lens.len());
        let mut at = self.header_len;
        for &l in &index.frame_body_lens {
            places.push((at, l));
            at += l as u64 + (FRAME_HEADER_LEN + TAG_LEN) as u64;
        }
        let head_at = |pos: i128, seq: usize, body_len: u32| {
            let Ok(pos) = u64::try_from(pos) else {
                return false;
            };
            let want = FrameHeader {
                kind: FrameKind::Data,
                last: false,
                body_len,
                seq: seq as u64,
            }
            .to_bytes();
            let mut got = [0u8; FRAME_HEADER_LEN];
            read_at_exact(&*self.input, pos, &mut got) && got == want
        };
        let first_moved = places
            .iter()
            .enumerate()
            .position(|(seq, &(at, l))| !head_at(at.into(), seq, l))
            .unwrap_or(places.len());
        places[first_moved..]
            .iter()
            .enumerate()
            .find(|(i, (at, l))| head_at(i128::from(*at) + i128::from(shift), first_moved + i, *l))
            .map_or((index_offset, places.len() as u64), |(i, &(at, _))| {
                (at, (first_moved + i) as u64)
            })
    }

    /// The offset of the first index frame of the index that ends at `index_end` (the
    /// footer's `index_frames` frames of sequence numbers from its `data_frames`, the last
    /// one LAST), found by their heads alone: each frame's head is searched backwards from
    /// where the next one starts. None when there is none. Reads each byte at most once.
    fn search_index_start(&self, footer: &Footer, index_end: u64) -> Result<Option<u64>> {
        let head_tag = (FRAME_HEADER_LEN + TAG_LEN) as u64;
        let mut end = index_end;
        for i in (0..footer.index_frames).rev() {
            let seq = footer.data_frames.saturating_add(i);
            let last = i + 1 == footer.index_frames;
            let Some(start) = self.search_head_ending_at(end, seq, last, head_tag)? else {
                return Ok(None);
            };
            end = start;
        }
        Ok(Some(end))
    }

    /// The position `p` of an index frame head of `seq` (LAST when `last`) whose frame ends
    /// at `end` (`p + head_tag + body length = end`), searched backwards from `end`.
    fn search_head_ending_at(
        &self,
        end: u64,
        seq: u64,
        last: bool,
        head_tag: u64,
    ) -> Result<Option<u64>> {
        let lowest = self.header_len.max(end.saturating_sub(SEARCH_WINDOW));
        let mut buf = vec![0u8; SEARCH_CHUNK + FRAME_HEADER_LEN];
        // Candidate heads start at most at `end - head_tag` (an empty body: never valid,
        // but harmless) and at least at `lowest`.
        let Some(mut hi) = end.checked_sub(head_tag) else {
            return Ok(None);
        };
        while hi >= lowest {
            let lo = hi.saturating_sub(SEARCH_CHUNK as u64 - 1).max(lowest);
            let n = (hi - lo) as usize + FRAME_HEADER_LEN;
            if !read_at_exact(&*self.input, lo, &mut buf[..n]) {
                return Ok(None);
            }
            for p in (lo..=hi).rev() {
                let h = &buf[(p - lo) as usize..][..FRAME_HEADER_LEN];
                if h[0] != FrameKind::Index as u8 {
                    continue;
                }
                let body = u64::from(u32::from_le_bytes(h[4..8].try_into().expect("4 bytes")));
                let want = FrameHeader {
                    kind: FrameKind::Index,
                    last,
                    body_len: body as u32,
                    seq,
                }
                .to_bytes();
                if h == want && p + head_tag + body == end {
                    return Ok(Some(p));
                }
            }
            if lo == lowest {
                break;
            }
            hi = lo - 1;
        }
        Ok(None)
    }
}

/// Fills `buf` from `src` at `offset`; false on a short read or an error.
fn read_at_exact(src: &dyn crate::store::Source, offset: u64, buf: &mut [u8]) -> bool {
    super::base_binding::read_exact_at(src, offset, buf).is_ok()
}
