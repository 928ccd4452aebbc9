//! The base binding of docs/FORMAT.md §16.1, computed from an opened base's frame tags
//! (split from `base`, which reads the base's regions and entries): the tags are read where
//! the frames lie, 32 bytes per frame, no body read.

use super::*;

/// `buf.len()` bytes at `at` of `input`, or an error (a short read is one).
pub(super) fn read_exact_at(
    input: &dyn crate::store::Source,
    at: u64,
    buf: &mut [u8],
) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match input.read_at(at + got as u64, &mut buf[got..]) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the archive ends early",
                ));
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Where the tags the binding covers lie in an opened archive whose index was read: its
/// data frames' (at the frame table's offsets) and its index frames' (walked from the
/// footer's index offset, each head giving the next).
pub(super) fn tag_offsets(
    ar: &Archive,
    footer: &Footer,
    offsets: &[u64],
    index: &Index,
) -> Result<Vec<u64>> {
    let io = |e| Error::io(&ar.path, "read", e);
    let mut at_tags = Vec::with_capacity(offsets.len() + footer.index_frames as usize);
    for (k, &at) in offsets.iter().enumerate() {
        at_tags.push(at + (FRAME_HEADER_LEN + index.frame_body_lens[k] as usize) as u64);
    }
    let mut at = footer.index_offset;
    for _ in 0..footer.index_frames {
        let mut head = [0u8; FRAME_HEADER_LEN];
        read_exact_at(&*ar.input, at, &mut head).map_err(io)?;
        let h = FrameHeader::parse(&head, ar.version).map_err(|e| corrupt(&ar.path, at, e))?;
        let end = at + (FRAME_HEADER_LEN + h.body_len as usize) as u64;
        at_tags.push(end);
        at = end + TAG_LEN as u64;
    }
    Ok(at_tags)
}

/// The tags at `at_tags`, each read with `read` in turn (a local file: one `pread` each).
pub(super) fn read_tags(
    at_tags: &[u64],
    mut read: impl FnMut(u64, &mut [u8]) -> std::io::Result<()>,
) -> std::io::Result<Vec<u8>> {
    let mut tags = vec![0u8; at_tags.len() * TAG_LEN];
    for (&at, tag) in at_tags.iter().zip(tags.chunks_exact_mut(TAG_LEN)) {
        read(at, tag)?;
    }
    Ok(tags)
}

/// Ranged GETs of tags in flight at once ([`fetch_tags`]).
const TAG_FETCHERS: usize = 8;

/// [`read_tags`] from object storage: one request per tag, [`TAG_FETCHERS`] at a time (each
/// 32-byte GET costs a round trip: a 300 MB base of 64 KiB blocks has ~4,800 tags, ~6 s one
/// by one on loopback, minutes at a cloud store's 20–50 ms).
pub(super) fn fetch_tags(
    at_tags: &[u64],
    fetch: &dyn crate::store::Refetch,
) -> std::io::Result<Vec<u8>> {
    let mut tags = vec![0u8; at_tags.len() * TAG_LEN];
    let per = at_tags.len().div_ceil(TAG_FETCHERS).max(1);
    std::thread::scope(|s| {
        let runs: Vec<_> = at_tags
            .chunks(per)
            .zip(tags.chunks_mut(per * TAG_LEN))
            .map(|(ats, out)| {
                s.spawn(move || {
                    for (&at, tag) in ats.iter().zip(out.chunks_exact_mut(TAG_LEN)) {
                        fetch.fetch(at, tag)?;
                    }
                    Ok::<(), std::io::Error>(())
                })
            })
            .collect();
        runs.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("a tag fetch thread panicked")))
        })
    })?;
    Ok(tags)
}

/// The binding (module doc) of the archive `id` whose frame tags, in order, are `tags`.
pub(super) fn binding_of(id: &ArchiveId, tags: &[u8]) -> [u8; 32] {
    let frames = (tags.len() / TAG_LEN) as u64;
    let mut m = Vec::with_capacity(16 + 8 + tags.len());
    m.extend_from_slice(id);
    m.extend_from_slice(&frames.to_le_bytes());
    m.extend_from_slice(tags);
    let mut out = [0u8; 32];
    crate::crypto::primitives::blake3_derive_key(super::BINDING_CONTEXT, &m, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Refetch;

    /// Bytes whose value at offset `o` is `o % 251`.
    struct Counting;

    impl Refetch for Counting {
        fn fetch(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            if offset >= 1 << 20 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            for (i, b) in buf.iter_mut().enumerate() {
                *b = ((offset + i as u64) % 251) as u8;
            }
            Ok(())
        }
        fn healed(&self) {}
    }

    #[test]
    fn tags_fetched_at_once_are_in_the_order_read_in_turn_gives() {
        for n in [0usize, 1, 7, 8, 9, 100, 1001] {
            let at_tags: Vec<u64> = (0..n as u64).map(|k| k * 97 + 3).collect();
            let fetched = fetch_tags(&at_tags, &Counting).unwrap();
            let read = read_tags(&at_tags, |at, buf| Counting.fetch(at, buf)).unwrap();
            assert_eq!(fetched.len(), n * TAG_LEN);
            assert_eq!(fetched, read, "{n} tags");
            if n > 0 {
                assert_eq!(fetched[TAG_LEN * (n - 1)], ((at_tags[n - 1]) % 251) as u8);
            }
        }
        // A tag that cannot be fetched is an error, from whichever thread.
        assert!(fetch_tags(&[5, 1 << 20, 9], &Counting).is_err());
    }
}
