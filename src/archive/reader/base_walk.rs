//! A damaged base's frames and entries found without its index, and the frames that fail
//! (split from `base`; the module doc there, "A damaged base", says when and why such a base
//! is read).

use super::*;
use crate::codec::huge::HugeBuf;

/// Of a base whose index cannot be read, its frames walked (`offsets`): the entries its
/// record stream holds, parsed front to back from frame 0 up to the first frame the walk did
/// not find, each checked as a scan checks it (records, entry-set rules, digests). Every
/// entry before that frame is there, so each has the number the index gave it, and a
/// BASE_REF to it reads (`records::read_reference`); an entry whose records reach a lost
/// frame, or anything after one, is not among them (its number is no longer known). The
/// cost: the found part of the base decoded once more, only for a damaged base.
pub(super) fn walked_entries(ar: &mut Archive, offsets: &[u64]) -> Vec<IndexEntry> {
    struct Nothing;
    impl Visitor for Nothing {
        fn wants(&mut self, _meta: &EntryMeta) -> bool {
            false
        }
        fn entry(&mut self, _meta: &EntryMeta) -> Result<()> {
            Ok(())
        }
        fn data(&mut self, _offset: u64, _bytes: &[u8]) -> Result<()> {
            Ok(())
        }
        fn end(&mut self, _meta: &EntryMeta, _size: u64) -> Result<()> {
            Ok(())
        }
        fn abort(&mut self) {}
    }
    let found = offsets.iter().take_while(|&&o| o != MISSING_FRAME).count() as u64;
    if found == 0 || ar.seek_to(ar.header_len).is_err() {
        return Vec::new();
    }
    let Ok(mut pool) = ar.new_pool() else {
        return Vec::new();
    };
    let version = ar.version;
    let mut feed = super::feed::Feed::new(ar, &mut pool, Some((0, found - 1)), 0);
    let mut parsed = Vec::new();
    let mut set = EntrySet::new(version);
    // An error ends the walk: the entries completed before it are the ones known.
    let _ = super::records::parse_records(
        &mut feed,
        &mut Nothing,
        &mut parsed,
        None,
        super::records::Check::Set(&mut set),
        (0, 0),
    );
    parsed
}

/// `offsets` entry of a data frame the walk of a damaged base did not find.
pub(super) const MISSING_FRAME: u64 = u64::MAX;

/// The data frames of a base whose index cannot be read, found by the resynchronising walk
/// of a salvage without index (`resync`: each verified by its tag, the region between two
/// found frames resynchronised past): an index with no entries and the frame table of the
/// frames up to the last one found, with their offsets ([`MISSING_FRAME`] for those lost).
pub(super) fn walked_index(ar: &mut Archive) -> Result<(Index, Vec<u64>)> {
    let (good, _) = ar.walk_frames()?;
    let n = good.last().map_or(0, |g| g.place().0 + 1) as usize;
    let mut index = Index {
        entries: Vec::new(),
        frame_body_lens: vec![0; n],
        frame_ref_lens: vec![0; n],
    };
    let mut offsets = vec![MISSING_FRAME; n];
    for g in &good {
        let (seq, at, len, group_start) = g.place();
        offsets[seq as usize] = at;
        index.frame_body_lens[seq as usize] = (len - (FRAME_HEADER_LEN + TAG_LEN) as u64) as u32;
        // Level 9 (a frame referencing earlier ones): refused below as with the index.
        index.frame_ref_lens[seq as usize] = u32::from(!group_start);
    }
    Ok((index, offsets))
}

impl BaseArchive {
    /// The data frames that fail (their tag, head or block), read and decoded one by one:
    /// tells a damaged base from another archive of the same id when the binding differs
    /// (module doc). A frame the file ends before is damage (cut short); any other read
    /// error is I/O.
    pub(crate) fn damaged_frames(&self) -> Result<Vec<u64>> {
        let mut dec = BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?;
        let mut bad = Vec::new();
        let mut out = HugeBuf::new();
        for seq in 0..self.data_frames() {
            match self.decode_into(&mut dec, seq, &mut out) {
                Ok(()) => {}
                Err(BaseFault::Read { source, .. })
                    if source.kind() != std::io::ErrorKind::UnexpectedEof =>
                {
                    return Err(Error::io(
                        &self.path,
                        "read the delta base",
                        std::io::Error::new(source.kind(), source.to_string()),
                    ));
                }
                Err(_) => bad.push(seq),
            }
        }
        Ok(bad)
    }
}
