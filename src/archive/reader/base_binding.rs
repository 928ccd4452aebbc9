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

/// The binding (module doc) of the archive `id` whose frame tags lie at `at_tags`, each read
/// with `read` (the source's ranged reads; or, for a second look, fetched again).
pub(super) fn binding_of(
    id: &ArchiveId,
    at_tags: &[u64],
    mut read: impl FnMut(u64, &mut [u8]) -> std::io::Result<()>,
) -> std::io::Result<[u8; 32]> {
    let frames = at_tags.len() as u64;
    let mut m = Vec::with_capacity(16 + 8 + at_tags.len() * TAG_LEN);
    m.extend_from_slice(id);
    m.extend_from_slice(&frames.to_le_bytes());
    let mut tag = [0u8; TAG_LEN];
    for &at in at_tags {
        read(at, &mut tag)?;
        m.extend_from_slice(&tag);
    }
    let mut out = [0u8; 32];
    crate::crypto::primitives::blake3_derive_key(super::BINDING_CONTEXT, &m, &mut out);
    Ok(out)
}
