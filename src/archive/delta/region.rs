//! The arithmetic of a delta block's base region (docs/FORMAT.md §16.3, "Regions"): the base
//! stream range of one segment, and the window of a block whose ranges span more than one
//! region.

use super::BaseFile;

/// The base stream range a DATA segment of `len` bytes at `offset` of a file of `new_size`
/// bytes matched to `f` is compressed against: its bytes there widened by `widen` on each
/// side and by the growth (to the left) or shrinkage (to the right) of the file (`super`'s
/// module doc).
pub(super) fn segment_range(
    f: &BaseFile,
    offset: u64,
    len: u64,
    new_size: u64,
    widen: u64,
) -> Option<(u64, u64)> {
    let grow = new_size.saturating_sub(f.size);
    let shrink = f.size.saturating_sub(new_size);
    let a = f.stream_at(offset.saturating_sub(widen + grow))?;
    let b = f.stream_at((offset + len + widen + shrink).min(f.size))?;
    (b > a).then_some((a, b))
}

/// The smallest range covering `span` (when any) and `r`.
pub(super) fn cover(span: Option<(u64, u64)>, r: (u64, u64)) -> (u64, u64) {
    span.map_or(r, |(a, b)| (a.min(r.0), b.max(r.1)))
}

/// The start (from `lo` on) of the `max`-byte window covering the most segment bytes of
/// `ranges` (`(start, end, segment bytes)`, sorted): a range counts with the part of its
/// segment bytes the window overlaps (its bytes taken as spread evenly over the range), and
/// the first best window is kept. The covered bytes, a sum of overlaps, grow or shrink
/// linearly between window positions where an edge meets a range end, and are largest where
/// they stop growing: where the window starts at a range's start or ends at a range's end, so
/// those are the windows tried. Before (h73, 2026-12-07) a range counted whole once it started
/// in a window, so a window could be chosen for a range it cut off after its first bytes
/// (FORMAT.md §16.3 says "covering the most segment bytes"). Since blocks are cut before a
/// segment their region cannot reach ([`DeltaWriter::segment_fits`]), a window is needed
/// only when a block's first segment alone, or its references, reach past one region.
pub(super) fn best_window(ranges: &[(u64, u64, u64)], lo: u64, max: u64) -> u64 {
    let covered = |s: u64| -> u64 {
        let e = s + max;
        ranges
            .iter()
            .filter(|r| r.0 < e && r.1 > s)
            .map(|&(a, b, n)| match (a >= s, b <= e) {
                (true, true) => n,
                _ => {
                    let overlap = b.min(e) - a.max(s);
                    (u128::from(n) * u128::from(overlap) / u128::from(b - a)) as u64
                }
            })
            .sum()
    };
    let starts = ranges.iter().map(|r| r.0);
    let ends = ranges.iter().map(|r| r.1.saturating_sub(max));
    let mut best = (0u64, lo);
    for s in starts.chain(ends) {
        let s = s.max(lo);
        let c = covered(s);
        if c > best.0 {
            best = (c, s);
        }
    }
    best.1
}
