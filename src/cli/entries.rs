//! What a listing shows about each index entry, read through one adapter ([`view`]) so that a
//! change of the index (format 2 makes the digest optional and adds per-frame lengths) is met
//! in one place, and the stored (compressed) bytes of each entry; and the PATH arguments of
//! `x` and `l` as member names ([`member_args`]).
//!
//! Decision on "stored": blocks hold the records of many entries (small files share one),
//! and the index gives each entry the frames it spans, not its bytes in them. So each data
//! frame's bytes in the archive (frame header, body and tag) are shared among the entries
//! whose records lie in it, in proportion to their weight: content size plus their metadata
//! (64 bytes plus path and link), an entry spanning `n` frames putting `1/n` of its weight
//! in each. For a file that has its blocks to itself (anything over a few blocks) this is
//! exactly its blocks' bytes; for small files it is their fair share of the block, not the
//! whole block. The shares are integers and each frame's bytes are handed out completely, so
//! the column sums to the archive's data-frame bytes exactly. `list -v` still shows the
//! frames an entry spans and their total, as before.

use krypta::format::EntryMeta;
use krypta::format::frame::{FRAME_HEADER_LEN, TAG_LEN};
use krypta::format::index::IndexEntry;

/// One entry as listings see it.
#[derive(Debug, Clone)]
pub struct EntryView<'a> {
    /// Path, kind, mode, mtime, owner, link.
    pub meta: &'a EntryMeta,
    /// Content size, bytes.
    pub size: u64,
    /// BLAKE3 of the content, when the archive stores one (files).
    pub digest: Option<[u8; 32]>,
    /// First and last data frame of the entry's records.
    pub frames: (u64, u64),
}

/// The adapter: an index entry as listings see it.
pub fn view(e: &IndexEntry) -> EntryView<'_> {
    EntryView {
        meta: &e.meta,
        size: e.size,
        // Files only; in format 2 not those under 4096 bytes (docs/JSON.md: `null`).
        digest: e.digest,
        frames: (e.first_seq, e.last_seq),
    }
}

/// Bytes one data frame of `body_len` takes in the archive.
pub fn frame_bytes(body_len: u32) -> u64 {
    (FRAME_HEADER_LEN + TAG_LEN) as u64 + u64::from(body_len)
}

/// The frame range `first..=last` clamped to the frame table (a crafted index may point past
/// it; such ranges get nothing).
fn span(v: &EntryView<'_>, frames: usize) -> Option<(usize, usize)> {
    let (first, last) = v.frames;
    let (first, last) = (usize::try_from(first).ok()?, usize::try_from(last).ok()?);
    if first >= frames || last < first {
        return None;
    }
    Some((first, last.min(frames - 1)))
}

/// Total bytes of the frames an entry spans (what `list -v` shows).
pub fn spanned_bytes(v: &EntryView<'_>, frame_lens: &[u32]) -> u64 {
    span(v, frame_lens.len())
        .map(|(a, b)| frame_lens[a..=b].iter().map(|&l| frame_bytes(l)).sum())
        .unwrap_or(0)
}

/// Each entry's share of the data-frame bytes (module documentation), in entry order.
pub fn stored_shares(views: &[EntryView<'_>], frame_lens: &[u32]) -> Vec<u64> {
    const SCALE: u128 = 1 << 20;
    let n = frame_lens.len();
    let weight = |v: &EntryView<'_>| {
        u128::from(v.size) + 64 + v.meta.path.len() as u128 + v.meta.link.len() as u128
    };
    let share = |v: &EntryView<'_>, (a, b): (usize, usize)| {
        (weight(v) * SCALE / (b - a + 1) as u128).max(1)
    };
    let mut total = vec![0u128; n];
    for v in views {
        if let Some(s) = span(v, n) {
            let w = share(v, s);
            for t in &mut total[s.0..=s.1] {
                *t += w;
            }
        }
    }
    let mut out = vec![0u64; views.len()];
    let mut given = vec![0u64; n];
    // Per frame, the entry with the largest share takes the rounding remainder.
    let mut best: Vec<Option<(u128, usize)>> = vec![None; n];
    for (i, v) in views.iter().enumerate() {
        let Some(s) = span(v, n) else { continue };
        let w = share(v, s);
        for k in s.0..=s.1 {
            let bytes = frame_bytes(frame_lens[k]);
            let part = (u128::from(bytes) * w / total[k]) as u64;
            out[i] += part;
            given[k] += part;
            if best[k].is_none_or(|(bw, _)| w > bw) {
                best[k] = Some((w, i));
            }
        }
    }
    for k in 0..n {
        if let Some((_, i)) = best[k] {
            out[i] += frame_bytes(frame_lens[k]) - given[k];
        }
    }
    out
}

/// The PATH arguments of `x` and `l` as member names: unquoted as `l` escapes names
/// ([`krypta::fs::member_name`]) unless `--no-unquote`; glob patterns (`--wildcards`) as given,
/// since `\` is their own escape (a name with a control character: match it with `?`).
pub(crate) fn member_args(
    paths: &[std::ffi::OsString],
    wildcards: bool,
    no_unquote: bool,
) -> Vec<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    paths
        .iter()
        .map(|p| krypta::fs::member_name(p.as_bytes(), !wildcards && !no_unquote))
        .collect()
}

/// `err` with a hint added when it is the "not found in ARCHIVE" of a PATH that unquoting
/// changed and that had a backslash in it (`'C:\new'`, `'a\nb'` meant as typed): the listing
/// shows such a name's own backslash as `\\`, and only there or with `--no-unquote` does the
/// PATH name it. Without the hint the message named the PATH as typed, the very name `ls`
/// shows, and said it was not there. Also a hint when a PATH not found has `*`, `?` or `[`
/// and `--wildcards` was not given (tar's "Use --wildcards to enable pattern matching").
pub(crate) fn with_path_hints(
    err: krypta::Error,
    paths: &[std::ffi::OsString],
    wildcards: bool,
    no_unquote: bool,
) -> krypta::Error {
    use std::os::unix::ffi::OsStrExt;
    let krypta::Error::Usage(msg) = err else {
        return err;
    };
    let Some(listed) = msg.strip_prefix("not found in ") else {
        return krypta::Error::Usage(msg);
    };
    // Among the PATHs not found: one that unquoting changed and that held a backslash, and
    // a glob typed without --wildcards, which is a name (as in tar, which says "Use
    // --wildcards to enable pattern matching"; h75 found no word of it here, 2026-12-07).
    let (mut changed, mut pattern) = (false, false);
    for p in paths {
        let raw = p.as_bytes();
        let name = krypta::fs::member_name(raw, !wildcards && !no_unquote);
        if listed.contains(&krypta::fs::escape_path(&name)) {
            changed |= raw.contains(&b'\\') && name != raw;
            pattern |= !wildcards && looks_like_a_pattern(raw);
        }
    }
    let mut hints = Vec::new();
    if changed {
        hints.push(
            "(a PATH is read as `l` prints names: a backslash that is part of a name is \\\\ \
             there, so 'a\\\\nb' names a\\nb; or give --no-unquote to take PATHs as typed)",
        );
    }
    if pattern {
        hints.push("(a PATH with *, ? or [ is a name unless --wildcards makes it a pattern)");
    }
    if hints.is_empty() {
        return krypta::Error::Usage(msg);
    }
    krypta::Error::Usage(format!("{msg} {}", hints.join(" ")))
}

/// Whether `raw` has a glob's `*`, `?` or a `[…]` class (a lone `[`, as in a terminal
/// escape sequence, is not one).
fn looks_like_a_pattern(raw: &[u8]) -> bool {
    raw.iter().any(|b| matches!(b, b'*' | b'?'))
        || raw
            .iter()
            .position(|&b| b == b'[')
            .is_some_and(|i| raw[i + 1..].contains(&b']'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use krypta::format::{EntryKind, Timestamp};

    fn meta(path: &str, kind: EntryKind) -> EntryMeta {
        EntryMeta {
            path: path.as_bytes().to_vec(),
            kind,
            mode: 0o644,
            mtime: Timestamp { secs: 0, nanos: 0 },
            uid: 0,
            gid: 0,
            link: Vec::new(),
            ..Default::default()
        }
    }

    fn entry(m: &EntryMeta, size: u64, frames: (u64, u64)) -> EntryView<'_> {
        EntryView {
            meta: m,
            size,
            digest: None,
            frames,
        }
    }

    #[test]
    fn a_pattern_is_a_star_a_question_mark_or_a_bracket_class() {
        assert!(looks_like_a_pattern(b"t/*.c"));
        assert!(looks_like_a_pattern(b"t/?"));
        assert!(looks_like_a_pattern(b"t/[ab].c"));
        assert!(!looks_like_a_pattern(b"t/a\x1b[31m"));
        assert!(!looks_like_a_pattern(b"t/plain"));
    }

    #[test]
    fn a_file_alone_in_its_frames_gets_exactly_their_bytes() {
        let (d, big) = (meta("d", EntryKind::Dir), meta("d/big", EntryKind::File));
        let views = [entry(&d, 0, (0, 0)), entry(&big, 10 << 20, (0, 2))];
        let frames = [1000, 2000, 3000];
        let s = stored_shares(&views, &frames);
        assert_eq!(s.iter().sum::<u64>(), 6000 + 3 * 48);
        // The directory's share of frame 0 is its metadata weight against 3.3 MiB.
        assert_eq!(s[0], 0);
        assert_eq!(s[1], 6144);
    }

    #[test]
    fn small_files_in_one_frame_share_it_by_size() {
        let (a, b) = (meta("a", EntryKind::File), meta("b", EntryKind::File));
        let views = [entry(&a, 935, (0, 0)), entry(&b, 2935, (0, 0))];
        let s = stored_shares(&views, &[952]);
        // Weights 1000 and 3000 share the 1000 bytes of the frame.
        assert_eq!(s, vec![250, 750]);
    }

    #[test]
    fn out_of_range_frames_get_nothing_and_nothing_panics() {
        let a = meta("a", EntryKind::File);
        let views = [entry(&a, 5, (7, 9)), entry(&a, 5, (2, 1))];
        assert_eq!(stored_shares(&views, &[10]), vec![0, 0]);
        assert_eq!(spanned_bytes(&views[0], &[10]), 0);
        let views = [entry(&a, 5, (0, 9))];
        assert_eq!(spanned_bytes(&views[0], &[10, 20]), 30 + 96);
    }
}
