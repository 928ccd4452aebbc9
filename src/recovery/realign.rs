//! An archive with bytes inserted or removed in one place (a copy that duplicated or dropped
//! a run of bytes, a transfer in text mode that added some): the recovery section still ends
//! the file and its trailer is intact, but every byte after the edit sits `shift` bytes off
//! where the layout puts it, so the trailer's length disagrees with the file's and no
//! packet is "in its place" ([`super::locate`] finds nothing).
//!
//! [`realign`] undoes one such edit: the trailer at the end gives the layout and the shift
//! (file length − layout length); a view with every byte from the section on moved back by
//! the shift verifies the data shards before the edit and fails every one after it; where
//! that run of damaged shards reaching the end of the data begins is where the edit is (a
//! flipped bit before it is a damaged shard of its own), and the view that moves back every
//! byte from that shard on ([`Realigned`]) leaves only the shards the edit touched damaged,
//! which the recovery data rebuilds like any other damage. One edit only: a second one elsewhere leaves every shard after it
//! damaged (beyond repair unless the recovery data covers them). par2 goes further with a
//! sliding checksum over every offset; one edit is the common accident and costs two reads.

use std::io;

use super::error::RecoveryError;
use super::layout::{self, Layout, TRAILER_LEN};
use super::locate::{ByteSource, FoundBy, Located, read};

/// `src` seen as the file first written, one insertion or removal of `shift` bytes at
/// `split` undone: offsets below `split` are read where they are, the rest `shift` bytes
/// further (positive: bytes were inserted). Its length is the layout's.
pub struct Realigned<'a, S: ?Sized> {
    src: &'a S,
    split: u64,
    shift: i64,
    len: u64,
}

impl<'a, S: ByteSource + ?Sized> Realigned<'a, S> {
    /// The view of `src` with the edit at `split` undone.
    pub fn new(src: &'a S, split: u64, shift: i64, len: u64) -> Self {
        Realigned {
            src,
            split,
            shift,
            len,
        }
    }

    /// Where the edit was undone, and its size (bytes inserted; negative: removed).
    pub fn edit(&self) -> (u64, i64) {
        (self.split, self.shift)
    }
}

impl<S: ByteSource + ?Sized> ByteSource for Realigned<'_, S> {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let end = offset + buf.len() as u64;
        let (head, tail) = if offset >= self.split {
            buf.split_at_mut(0)
        } else {
            buf.split_at_mut((end.min(self.split) - offset) as usize)
        };
        if !head.is_empty() {
            self.src.read_at(offset, head)?;
        }
        if !tail.is_empty() {
            let at = offset.max(self.split) as i128 + i128::from(self.shift);
            let at = u64::try_from(at).map_err(|_| io::ErrorKind::UnexpectedEof)?;
            if at + tail.len() as u64 > self.src.len() {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.src.read_at(at, tail)?;
        }
        Ok(())
    }
}

/// The layout of the intact trailer the last bytes of `src` are, if they are one (one read).
fn intact_trailer<S: ByteSource + ?Sized>(src: &S) -> Result<Option<Layout>, RecoveryError> {
    let len = src.len();
    if len < TRAILER_LEN as u64 {
        return Ok(None);
    }
    let mut t = [0u8; TRAILER_LEN];
    read(src, len - TRAILER_LEN as u64, &mut t)?;
    Ok(layout::parse_trailer(&t).ok())
}

/// The layout of an intact trailer ending `src` and the bytes `src` has more (negative:
/// fewer) than that layout, when they differ: one read of the last bytes. None when there is
/// no such trailer, the lengths agree, or a removal that cannot be one bad copy
/// ([`removal_is_plausible`]).
pub fn shifted_trailer<S: ByteSource + ?Sized>(
    src: &S,
) -> Result<Option<(Layout, i64)>, RecoveryError> {
    let len = src.len();
    let Some(lay) = intact_trailer(src)? else {
        return Ok(None);
    };
    let shift = i64::try_from(len as i128 - lay.file_len as i128).unwrap_or(0);
    if shift < 0 && !removal_is_plausible(&lay, shift.unsigned_abs(), len) {
        return Ok(None);
    }
    Ok((shift != 0).then_some((lay, shift)))
}

/// When `src` ends with an intact trailer whose layout is longer than `src` by more bytes
/// than its recovery data can rebuild (but no more than `src` has, [`removal_is_plausible`]):
/// that layout and the bytes missing. One read of the last bytes. A bad copy that dropped
/// that much is beyond repair, which a reader and `repair` say instead of "no recovery data".
pub fn missing_beyond_recovery<S: ByteSource + ?Sized>(
    src: &S,
) -> Result<Option<(Layout, u64)>, RecoveryError> {
    let len = src.len();
    let Some(lay) = intact_trailer(src)? else {
        return Ok(None);
    };
    let Some(missing) = lay.file_len.checked_sub(len).filter(|&m| m > 0) else {
        return Ok(None);
    };
    Ok((missing <= len && !removal_is_plausible(&lay, missing, len)).then_some((lay, missing)))
}

/// The bytes the recovery data of `lay` can rebuild at most (all its shards).
pub fn rebuildable(lay: &Layout) -> u64 {
    lay.recovery_shards
        .saturating_mul(u64::from(lay.params.shard_size))
}

/// Whether `removed` bytes missing from a `len`-byte file whose trailer gives `lay` can be
/// one removal the recovery data undoes: no more than the file has left, and no more than
/// the recovery data can rebuild (the removed bytes are lost, so they are damage).
/// Anything longer is not one bad copy but a trailer that does not belong to the file — a
/// hostile one claiming a 64 PiB archive made a reader verify 2^29 segments of nothing
/// (an insertion needs no bound: its layout is shorter than the file, and so is the work).
fn removal_is_plausible(lay: &Layout, removed: u64, len: u64) -> bool {
    removed <= len && removed <= rebuildable(lay)
}

/// When `src` ends with an intact trailer whose layout is `shift` ≠ 0 bytes longer or
/// shorter than `src`: the view that undoes that one edit ([`Realigned`], module doc) and the
/// section located in it. None when there is no such trailer (or no shift). Reads the
/// whole source once.
pub fn realign<S: ByteSource + ?Sized>(
    src: &S,
) -> Result<Option<(Realigned<'_, S>, Located)>, RecoveryError> {
    let Some((lay, shift)) = shifted_trailer(src)? else {
        return Ok(None);
    };
    let located = Located {
        layout: lay,
        found_by: FoundBy::Trailer,
        source_len: lay.file_len,
    };
    // The section moved back: the data shards before the edit verify, and every one from
    // the edit to the end of P is out of place.
    let protected = lay.params.protected_len;
    let whole = Realigned::new(src, protected, shift, lay.file_len);
    let report = super::verify(&whole, &located);
    let ranges: Vec<(u64, u64)> = report
        .segments
        .iter()
        .flat_map(|s| s.damaged_ranges.iter().copied())
        .collect();
    Ok(Some((
        Realigned::new(src, edit_at(&ranges, protected), shift, lay.file_len),
        located,
    )))
}

/// Where the edit is, from the damaged ranges (in order) of the view with only the section
/// moved back: the start of the run of damaged shards that reaches the end of P
/// (`protected`), so that damage before the edit (a flipped bit) is rebuilt like any other
/// instead of being taken for the edit, which would leave every shard between it and the
/// edit out of place. Without such a run (the edit is in the section), the first damaged
/// shard; without damage, `protected`.
fn edit_at(ranges: &[(u64, u64)], protected: u64) -> u64 {
    match ranges.last() {
        Some(&(mut start, end)) if end == protected => {
            for &(a, b) in ranges.iter().rev().skip(1) {
                if b != start {
                    break;
                }
                start = a;
            }
            start
        }
        _ => ranges.first().map_or(protected, |r| r.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_reads_before_the_split_in_place_and_after_it_shifted() {
        let src: Vec<u8> = (0u8..100).collect();
        // 10 bytes inserted at 40: the original is src minus 40..50.
        let v = Realigned::new(&src, 40, 10, 90);
        let mut b = [0u8; 20];
        v.read_at(30, &mut b).unwrap();
        let want: Vec<u8> = (30u8..40).chain(50..60).collect();
        assert_eq!(b.to_vec(), want);
        let mut e = [0u8; 5];
        assert!(v.read_at(88, &mut e).is_err(), "past the source's end");
        // 5 bytes removed at 20: reads after the split come 5 bytes earlier.
        let v = Realigned::new(&src, 20, -5, 105);
        let mut b = [0u8; 4];
        v.read_at(18, &mut b).unwrap();
        assert_eq!(b, [18, 19, 15, 16]);
        assert_eq!(v.edit(), (20, -5));
    }

    /// A valid trailer claiming `protected_len` protected bytes, 5% recovery.
    fn trailer_of(protected_len: u64) -> ([u8; TRAILER_LEN], Layout) {
        let params = layout::Params {
            percent: 5,
            shard_size: 4096,
            shards_per_segment: 32768,
            protected_len,
            blake3: [7; 32],
        };
        (layout::write_trailer(&params), Layout::new(params).unwrap())
    }

    #[test]
    fn a_trailer_far_longer_than_its_file_is_not_taken_for_one_removal() {
        // Regression: a hostile 1 MiB file ending in a valid trailer of a 64 PiB archive was
        // "realigned" and its 2^29 segments verified, one failed read after another.
        let mut src = vec![0u8; 1 << 20];
        let (t, _) = trailer_of(layout::MAX_PROTECTED_LEN);
        src.extend_from_slice(&t);
        let started = std::time::Instant::now();
        assert!(realign(&src).unwrap().is_none());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // More removed than the recovery data holds (here: the file's layout is 2 MiB longer,
        // its recovery data about 100 KiB): not one bad copy either.
        let (t, lay) = trailer_of(2 << 20);
        let mut src = vec![0u8; (lay.file_len - (1 << 20)) as usize - TRAILER_LEN];
        src.extend_from_slice(&t);
        assert!(shifted_trailer(&src).unwrap().is_none());
        // A removal the recovery data can rebuild is still one.
        let removed = 1000;
        let mut src = vec![0u8; (lay.file_len - removed) as usize - TRAILER_LEN];
        src.extend_from_slice(&t);
        let (_, shift) = shifted_trailer(&src).unwrap().unwrap();
        assert_eq!(shift, -1000);
    }

    #[test]
    fn the_edit_is_where_the_damage_reaching_the_end_begins() {
        // A flipped shard at 4096, the edit at 40960: every shard after it out of place,
        // across a segment boundary (ranges merged per segment).
        let r = [(4096, 8192), (40960, 65536), (65536, 100_000)];
        assert_eq!(edit_at(&r, 100_000), 40960);
        // Edit in the section: only the flipped shard.
        assert_eq!(edit_at(&r[..1], 100_000), 4096);
        assert_eq!(edit_at(&[], 100_000), 100_000);
        assert_eq!(edit_at(&[(0, 100_000)], 100_000), 0);
    }
}
