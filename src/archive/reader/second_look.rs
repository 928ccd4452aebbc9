//! A second look at a frame whose tag fails, when its bytes came over a network.
//!
//! A tag that fails on bytes fetched from object storage is either the store's copy (damage:
//! reported, salvaged past) or the transfer (a byte changed between the store and krypta).
//! The frame is fetched once more with a new request ([`crate::store::Refetch`]) and checked
//! again, exactly as the first time: the same head (its bytes must be the ones the reader
//! parsed, or the frame is left as it failed: a head changed in transit moved the reader
//! elsewhere, and only the salvage that follows can find the frames again), the same
//! sequence number, the same key. So a second look never accepts a byte the check would
//! refuse; it only replaces bytes that were not the stored ones with the stored ones. A
//! frame that passes the second time is counted (`Counters::refetched`) and the command
//! warns: the archive is intact, the path to it is not.
//!
//! Where it is taken: every frame a worker opens (data, index, salvage), a delta base's
//! frames and its binding's tags (a binding that differs is fetched again before the base is
//! called another archive), `--signer`'s check of every frame, `rekey`'s, and the header: one
//! that does not parse is parsed again from a new fetch before any search for recovery data
//! (`header_read`), one that parses but does not open (the key seems wrong) is fetched again
//! and opened again only if its bytes came otherwise ([`Archive::open_read`]). The shards of
//! an archive with recovery data get theirs in `store::healing`, and the footer at the end of
//! a seekable archive its own (`index`). Not covered: a frame head changed on the way (the
//! reader went elsewhere; salvage finds the frames again and the run reports damage), and a
//! `--signer` transcript's tag changed on the way.
//!
//! Bounded: a source stops taking second looks once
//! [`crate::store::MAX_FAILED_SECOND_LOOKS`] of them failed again (the store's copy is
//! damaged), so a damaged or crafted archive costs at most that many requests more.
//!
//! Local files get no second look: bytes read twice from a disk are the same bytes (a read
//! error is an error, not other bytes), and a damaged file must not cost a re-read per frame.

use std::path::Path;

use super::{Archive, OpenOptions, header_read};
use crate::error::{Error, Result};
use crate::format::frame::{FRAME_HEADER_LEN, TAG_LEN};
use crate::store::Refetch;

/// Whether the frame at `offset` (its head `head`, body `body`, tag `tag` as read) passes
/// `check`, given one more try on bytes fetched again when `refetch` is Some and the first
/// try fails. On a pass after the refetch, `body` and `tag` hold the bytes fetched again
/// (and `check`'s effect on them, e.g. decrypted).
pub(super) fn passes(
    refetch: Option<&dyn Refetch>,
    offset: u64,
    head: &[u8; FRAME_HEADER_LEN],
    body: &mut [u8],
    tag: &mut [u8; TAG_LEN],
    mut check: impl FnMut(&mut [u8], &[u8; TAG_LEN]) -> bool,
) -> bool {
    let mut head = *head;
    look(refetch, offset, &mut head, false, body, tag, |_, b, t| {
        check(b, t)
    })
}

/// [`passes`] of a frame whose place and length the reader knows without its head (a delta
/// base's frame: from the base's verified index, or the walk that found it), and whose tag
/// covers its head: a head changed on the way is replaced by the one fetched again with the
/// rest, and `check` judges that head with that body and tag. (`passes` refuses bytes fetched
/// again under another head: there the head the reader parsed decided where the frame is.)
pub(super) fn passes_placed(
    refetch: Option<&dyn Refetch>,
    offset: u64,
    head: &mut [u8; FRAME_HEADER_LEN],
    body: &mut [u8],
    tag: &mut [u8; TAG_LEN],
    check: impl FnMut(&[u8; FRAME_HEADER_LEN], &mut [u8], &[u8; TAG_LEN]) -> bool,
) -> bool {
    look(refetch, offset, head, true, body, tag, check)
}

/// [`passes`] and [`passes_placed`] (`placed`: the head fetched again may differ).
fn look(
    refetch: Option<&dyn Refetch>,
    offset: u64,
    head: &mut [u8; FRAME_HEADER_LEN],
    placed: bool,
    body: &mut [u8],
    tag: &mut [u8; TAG_LEN],
    mut check: impl FnMut(&[u8; FRAME_HEADER_LEN], &mut [u8], &[u8; TAG_LEN]) -> bool,
) -> bool {
    if check(head, body, tag) {
        return true;
    }
    let Some(r) = refetch else {
        return false;
    };
    let mut again = vec![0u8; FRAME_HEADER_LEN + body.len() + TAG_LEN];
    if r.refetch(offset, &mut again).is_err() {
        return false;
    }
    let (h, rest) = again.split_at(FRAME_HEADER_LEN);
    if !placed && h != &head[..] {
        r.failed();
        return false;
    }
    head.copy_from_slice(h);
    let (b, t) = rest.split_at(body.len());
    body.copy_from_slice(b);
    tag.copy_from_slice(t);
    let ok = check(head, body, tag);
    if ok {
        r.healed();
    } else {
        r.failed();
    }
    ok
}

/// Errors a header changed in transit can give: it does not parse, its checksum or tag
/// fails, a flipped bit was undone, its signature fails, or the key seems wrong (an
/// encrypted header's tag, or a stanza, changed). Not I/O, usage or policy errors.
pub(super) fn header_may_have_changed(e: &Error) -> bool {
    matches!(
        e,
        Error::NotAnArchive { .. }
            | Error::UnsupportedVersion { .. }
            | Error::Corrupt { .. }
            | Error::Integrity { .. }
            | Error::AuthFailed { .. }
            | Error::HeaderDamaged { .. }
            | Error::Signature { .. }
            | Error::HeaderFixed { .. }
            | Error::Damaged { .. }
    )
}

impl Archive {
    /// [`Archive::open_parsed`] of a header read from `path`, with a second look when the
    /// archive is in object storage (its source has a [`Refetch`]) and the header fails
    /// (module doc):
    /// - a header that did not read was parsed again from a new fetch already
    ///   ([`header_read::read_header_opened`]);
    /// - a header that read but did not open (the key seemed wrong, a tag failed, a flipped
    ///   bit was undone) is fetched again and compared: only if the bytes differ — the
    ///   first fetch was changed on the way — is the archive opened again, so a wrong key
    ///   costs one small request, not a second key derivation. (A password asked on the
    ///   terminal is asked again then: the first answer is not kept.)
    pub(super) fn open_read(
        path: &Path,
        opts: OpenOptions,
        read: Result<header_read::HeaderRead>,
    ) -> Result<Archive> {
        // A header that did not read had its second look (`header_read::read_header_opened`).
        let read = read?;
        let Some(refetch) = read.2.refetcher() else {
            return Self::open_parsed(path, opts, read);
        };
        // The header's bytes as fetched: a flipped bit undone by its tag (`header_fix`) is
        // flipped back, or the bytes fetched again, when the stored header has that flip,
        // differ from the fixed ones, and damage in the store is called a transfer error (the
        // header opened again, a password asked again, and "the stored archive is intact"
        // said beside "one bit of the header is flipped").
        let mut first = read.1.clone();
        if let Some(f) = &read.3
            && let Some(b) = first.get_mut(f.fix.byte)
        {
            *b ^= 1 << f.fix.bit;
        }
        let fixed = read.3.is_some();
        let first_version = read.2.identity();
        let retry = opts.clone();
        let opened = Self::open_parsed(path, opts, read);
        let failed = match &opened {
            Ok(ar) => fixed || ar.header_fix.is_some(),
            Err(e) => header_may_have_changed(e),
        };
        if !failed {
            return opened;
        }
        let mut again = vec![0u8; first.len()];
        if refetch.refetch(0, &mut again).is_err() || again == first {
            return opened;
        }
        // The header came otherwise the second time (the fetch again is pinned to the first
        // ETag): the first fetch was changed on the way. Opened again from a new source; if
        // the object was replaced in between, that one is another version: its own checks
        // decide, and nothing is called a transfer error.
        let ar = Self::open_parsed(path, retry, header_read::read_header(path)?)?;
        if let Some(r) = ar.input.refetcher()
            && ar.input.identity() == first_version
        {
            r.healed();
        }
        Ok(ar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A "network" that returns `stored` (and counts), standing in for a store's new GET.
    struct Stored {
        bytes: Vec<u8>,
        fetches: AtomicU64,
        healed: AtomicU64,
        failed: AtomicU64,
    }

    impl Refetch for Stored {
        fn fetch(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            self.fetches.fetch_add(1, Ordering::Relaxed);
            let at = offset as usize;
            let src = self
                .bytes
                .get(at..at + buf.len())
                .ok_or(std::io::ErrorKind::UnexpectedEof)?;
            buf.copy_from_slice(src);
            Ok(())
        }
        fn healed(&self) {
            self.healed.fetch_add(1, Ordering::Relaxed);
        }
        fn failed(&self) {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A frame of 16 + 8 + 32 bytes at offset 3 whose "tag" is its body repeated four times.
    fn stored() -> Stored {
        let mut bytes = vec![0xaa; 3];
        bytes.extend([7u8; FRAME_HEADER_LEN]);
        let body: Vec<u8> = (1..=8).collect();
        bytes.extend(&body);
        for _ in 0..4 {
            bytes.extend(&body);
        }
        Stored {
            bytes,
            fetches: AtomicU64::new(0),
            healed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    fn tag_ok(body: &mut [u8], tag: &[u8; TAG_LEN]) -> bool {
        tag.chunks(8).all(|c| c == body)
    }

    #[test]
    fn a_frame_changed_in_transit_is_fetched_again_and_passes_with_the_stored_bytes() {
        let s = stored();
        let head = [7u8; FRAME_HEADER_LEN];
        let mut body: Vec<u8> = (1..=8).collect();
        body[5] ^= 0x10;
        let mut tag: [u8; TAG_LEN] = s.bytes[27..59].try_into().unwrap();
        assert!(passes(Some(&s), 3, &head, &mut body, &mut tag, tag_ok));
        assert_eq!(body, (1..=8).collect::<Vec<u8>>());
        assert_eq!(s.fetches.load(Ordering::Relaxed), 1);
        assert_eq!(s.healed.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_frame_damaged_in_the_store_fails_twice_and_is_not_counted_as_healed() {
        let mut s = stored();
        s.bytes[3 + FRAME_HEADER_LEN + 2] ^= 1;
        let head = [7u8; FRAME_HEADER_LEN];
        let mut body = s.bytes[19..27].to_vec();
        let mut tag: [u8; TAG_LEN] = s.bytes[27..59].try_into().unwrap();
        assert!(!passes(Some(&s), 3, &head, &mut body, &mut tag, tag_ok));
        assert_eq!(s.fetches.load(Ordering::Relaxed), 1);
        assert_eq!(s.healed.load(Ordering::Relaxed), 0);
        assert_eq!(s.failed.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_frame_that_passes_or_has_no_network_is_not_fetched_again() {
        let s = stored();
        let head = [7u8; FRAME_HEADER_LEN];
        let mut body: Vec<u8> = (1..=8).collect();
        let mut tag: [u8; TAG_LEN] = s.bytes[27..59].try_into().unwrap();
        assert!(passes(Some(&s), 3, &head, &mut body, &mut tag, tag_ok));
        assert_eq!(s.fetches.load(Ordering::Relaxed), 0);
        body[0] ^= 1;
        assert!(!passes(None, 3, &head, &mut body, &mut tag, tag_ok));
    }

    #[test]
    fn a_placed_frame_whose_head_changed_in_transit_is_fetched_again_head_and_all() {
        // A delta base's frame: its place is the index's, its tag covers its head.
        let s = stored();
        let check = |h: &[u8; FRAME_HEADER_LEN], b: &mut [u8], t: &[u8; TAG_LEN]| {
            *h == [7u8; FRAME_HEADER_LEN] && tag_ok(b, t)
        };
        let mut head = [7u8; FRAME_HEADER_LEN];
        head[4] ^= 1;
        let mut body: Vec<u8> = (1..=8).collect();
        let mut tag: [u8; TAG_LEN] = s.bytes[27..59].try_into().unwrap();
        assert!(passes_placed(
            Some(&s),
            3,
            &mut head,
            &mut body,
            &mut tag,
            check
        ));
        assert_eq!(head, [7u8; FRAME_HEADER_LEN]);
        assert_eq!(s.healed.load(Ordering::Relaxed), 1);
        // Stored so: it fails again, and is counted as failed.
        let mut s = stored();
        s.bytes[3 + 4] ^= 1;
        let mut head: [u8; FRAME_HEADER_LEN] = s.bytes[3..19].try_into().unwrap();
        assert!(!passes_placed(
            Some(&s),
            3,
            &mut head,
            &mut body,
            &mut tag,
            check
        ));
        assert_eq!(s.healed.load(Ordering::Relaxed), 0);
        assert_eq!(s.failed.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn bytes_fetched_again_under_another_head_are_not_used() {
        // The head the reader parsed differs from the stored one (changed in transit): the
        // body it framed is not the stored frame's, so the second copy is not taken.
        let s = stored();
        let head = [8u8; FRAME_HEADER_LEN];
        let mut body = vec![0u8; 8];
        let mut tag: [u8; TAG_LEN] = s.bytes[27..59].try_into().unwrap();
        assert!(!passes(Some(&s), 3, &head, &mut body, &mut tag, tag_ok));
        assert_eq!(body, vec![0u8; 8]);
        assert_eq!(s.healed.load(Ordering::Relaxed), 0);
        assert_eq!(s.failed.load(Ordering::Relaxed), 1);
    }
}
