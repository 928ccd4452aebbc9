//! The `diff+base` encoder: [`super::scan`] finds where each stretch of the block is copied
//! from (alignment switches in `region ‖ block`, following the current alignment first);
//! bsdiff's approximate extension (Colin Percival, bsdiff.c) turns them into commands: a
//! copy at one alignment runs on over mismatching bytes while at least half of them agree
//! (the extension that maximises 2 · equal − length, forward from the previous switch and
//! backward from the next, the overlap split where it counts most), so a substitution costs
//! one sparse diff byte, not a new command. The four streams are each one zstd frame.
//!
//! **Which levels use it, and why not the default** (docs/FORMAT.md §16.3): at levels 7–9
//! the writer makes this payload beside the zstd frame and keeps the smaller; at level 6 it
//! makes it with the scan's fast effort ([`Effort::Fast`], measured in `scan::Search`) and
//! makes zstd's frame too only where the payload is over half the block. Measured
//! 2026-12-07 (session 29, `c --base -l 7 -j 1`, release build, the four pairs of
//! BENCHMARKS.md table 14): ruff 3,438,884 bytes, libc6 264,425, typescript 3,333,
//! aws-lc-sys 129,355 (table 14's run: 0.94× / 0.74× / 1.27× / 1.24× `zstd --patch-from
//! --long=31 -19`); with the session-28 matcher (a sequence parser's exact matches)
//! 3,494,949 / 268,487 / 5,147 / 161,172. It costs 6–10× the default's CPU time (ruff: ~1.7
//! s against 0.19 s), most of it the scanner's table lookups (two cache misses per searched
//! position, overlapped since 2026-12-07 by prefetching the next positions' buckets:
//! `scan::PREFETCH_AHEAD`, ruff 2.73 → 1.99 s): `perf record` of
//! ruff's `-l 7 -j 1` write (2026-12-07) puts 64 % in [`Scanner::scan`] and about a tenth in
//! zstd (the four streams at [`stream_levels`], the fallback frame, the decode check). The
//! default stays `zstd+base` alone (1.29–2.24× `-19`'s size at ~150 MB/s on one thread):
//! even the fast effort takes about level 5's time, 1.5–2× the default's. Level 9 (`-19` on all four streams) against level 7, measured 2026-12-07
//! (`c --base -j 1`, release build, 3 interleaved rounds, medians, load ~2.5 on 2 cores):
//! ruff 8.1 % smaller at 1.63× the wall time (2.76 against 1.69 s), libc6 1.8 % at 1.39×,
//! aws-lc-sys 1.6 % at 1.0×; a Rust toolchain's `lib` (515 MB, stable against nightly, one
//! run at `-j 2`) 9.5 % at 9.9× (160 against 16 s), where most bytes are new (extra).

use super::scan::{Scanner, Switch, common, read8};
use super::{Effort, HEAD_LEN, VERSION, put_leb, zigzag};
use crate::codec::CodecError;
use zstd::zstd_safe::CParameter;

/// zstd levels of the streams (ctrl, gaps, vals, extra) at an [`Effort`].
/// [`Effort::Normal`] (levels 7 and 8): vals and extra, most of the bytes, get `-6` (ruff's
/// pair, session 28: 3,515,239 bytes at 1.3 s, against 3,307,610 at 3.9 s with `-19` on
/// all four; `-3` on both: 3,557,424). Commands and gaps get `-15`: measured 2026-12-07
/// with `c --base -l 7 -j 1`, two interleaved rounds, `-19` → `-15` took ruff's write from
/// 1.8 to 1.5 s of CPU for 3,438,884 → 3,449,649 bytes (+0.3 %; libc6 +0.1 %, the text
/// pairs +0.0 %); `-12` saved little more (1.45 s) for +0.7 %. [`Effort::Fast`] (level 6):
/// `-3` on all four; `-1` made ruff's delta 8 % larger (4,583,479 against 4,239,745 bytes,
/// session 32) for no time measurably saved, `-15` on ctrl and gaps 1.5 % smaller for ~10 %
/// more time.
pub(crate) fn stream_levels(effort: Effort) -> [i32; 4] {
    match effort {
        Effort::Fast => [3; 4],
        Effort::Normal => [15, 15, 6, 6],
        Effort::Max => [19; 4],
    }
}

/// The encoder's buffers, kept between blocks.
#[derive(Default)]
pub struct DiffEncoder {
    scanner: Scanner,
    switches: Vec<Switch>,
    streams: [Vec<u8>; 4],
    frames: [Vec<u8>; 4],
    /// Bytes the last [`DiffEncoder::encode`]'s extensions were given to look over (the
    /// gaps), for the test that holds them linear in the block.
    #[cfg(test)]
    pub(super) gap_bytes: usize,
}

/// The length (0..=`max`) of the forward extension of `new` over `old` that maximises
/// 2 · equal − length.
fn forward(new: &[u8], old: &[u8], max: usize) -> usize {
    let max = max.min(new.len()).min(old.len());
    let (mut i, mut eq) = (0usize, 0usize);
    let (mut best, mut best_len) = (0isize, 0usize);
    while i < max {
        // Eight bytes that all differ change no best: skipped as a word (in new bytes, most
        // words). The break below is then asked 8 bytes later, which changes nothing: the
        // shortfall only grows over differing bytes.
        if i + 8 <= max && !any_zero_byte(read8(new, i) ^ read8(old, i)) {
            i += 8;
            if (best - (2 * eq as isize - i as isize)) as usize > max - i {
                break;
            }
            continue;
        }
        let c = common(&new[i..max], &old[i..max]);
        if c > 0 {
            i += c;
            eq += c;
            let score = 2 * eq as isize - i as isize;
            if score > best {
                best = score;
                best_len = i;
            }
        } else {
            i += 1;
            // Far below the best: no later run of equal bytes that this block's gap could
            // hold would bring it back (a gap is at most the block).
            if (best - (2 * eq as isize - i as isize)) as usize > max - i {
                break;
            }
        }
    }
    best_len
}

/// Whether some byte of `x` is zero (the classic test: exact for "some", not for which).
fn any_zero_byte(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    x.wrapping_sub(ONES) & !x & (ONES << 7) != 0
}

/// The length (0..=`max`) of the backward extension ending at `new_end` / `old_end`.
fn backward(new: &[u8], new_end: usize, old: &[u8], old_end: usize, max: usize) -> usize {
    let max = max.min(new_end).min(old_end);
    let (mut eq, mut best, mut best_len) = (0usize, 0isize, 0usize);
    let mut i = 0;
    while i < max {
        // As in [`forward`]: eight differing bytes in a row are one step.
        if i + 8 <= max && !any_zero_byte(read8(new, new_end - i - 8) ^ read8(old, old_end - i - 8))
        {
            i += 8;
            if (best - (2 * eq as isize - i as isize)) as usize > max - i {
                break;
            }
            continue;
        }
        // A run of equal bytes is taken whole, as [`forward`] does: the score grows along
        // it, so only its end can be a new best.
        let c = common_before(
            &new[new_end - max..new_end - i],
            &old[old_end - max..old_end - i],
        );
        if c > 0 {
            i += c;
            eq += c;
            let score = 2 * eq as isize - i as isize;
            if score > best {
                best = score;
                best_len = i;
            }
        } else {
            i += 1;
            if (best - (2 * eq as isize - i as isize)) as usize > max - i {
                break;
            }
        }
    }
    best_len
}

/// Bytes equal at the ends of `a` and `b` ([`common`] from the back).
fn common_before(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut i = 0;
    while i + 8 <= n {
        let x = read8(a, n - i - 8) ^ read8(b, n - i - 8);
        if x != 0 {
            return i + (x.leading_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[n - 1 - i] == b[n - 1 - i] {
        i += 1;
    }
    i
}

/// The streams being built.
struct Streams<'a> {
    ctrl: &'a mut Vec<u8>,
    gaps: &'a mut Vec<u8>,
    vals: &'a mut Vec<u8>,
    extra: &'a mut Vec<u8>,
    /// Zero diff bytes since the last value.
    zeros: u64,
}

impl Streams<'_> {
    /// A seek, then a copy of `new` over `old` (same length), then `extra`. The streams grow
    /// through [`crate::memory::reserve`]: for new bytes they come to a block's length, and a
    /// refusal aborted the process (`c --base -l 7` of random bytes under `prlimit --as`,
    /// 2026-12-07).
    fn command(
        &mut self,
        seek: i64,
        new: &[u8],
        old: &[u8],
        extra: &[u8],
    ) -> Result<(), crate::memory::OutOfMemory> {
        const WHAT: &str = "a diff stream";
        let n = new.len();
        let mut i = 0;
        while i < n {
            let c = common(&new[i..], &old[i..n]);
            self.zeros += c as u64;
            i += c;
            if i < n {
                crate::memory::reserve(self.gaps, 10, WHAT)?;
                crate::memory::reserve(self.vals, 1, WHAT)?;
                put_leb(self.gaps, self.zeros);
                self.vals.push(new[i].wrapping_sub(old[i]));
                self.zeros = 0;
                i += 1;
            }
        }
        crate::memory::reserve(self.extra, extra.len(), WHAT)?;
        crate::memory::reserve(self.ctrl, 30, WHAT)?;
        self.extra.extend_from_slice(extra);
        put_leb(self.ctrl, zigzag(seek));
        put_leb(self.ctrl, n as u64);
        put_leb(self.ctrl, extra.len() as u64);
        Ok(())
    }
}

impl DiffEncoder {
    /// Memory held, bytes.
    pub fn memory_bytes(&self) -> usize {
        self.scanner.memory_bytes()
            + self.switches.capacity() * std::mem::size_of::<Switch>()
            + self.streams.iter().map(Vec::capacity).sum::<usize>()
            + self.frames.iter().map(Vec::capacity).sum::<usize>()
    }

    /// Writes into `out` (cleared) the `diff+base` payload of `raw` against `region`
    /// (docs/FORMAT.md §16.6), without the 16-byte region descriptor. The caller decodes it
    /// before keeping it. `effort`: how hard the scan searches and the streams' zstd levels
    /// ([`stream_levels`]).
    pub fn encode(
        &mut self,
        raw: &[u8],
        region: &[u8],
        effort: Effort,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        out.clear();
        #[cfg(test)]
        {
            self.gap_bytes = 0;
        }
        self.scanner.scan(region, raw, effort, &mut self.switches)?;
        for s in &mut self.streams {
            s.clear();
        }
        let s = self.scanner.joined();
        let [ctrl, gaps, vals, extra] = &mut self.streams;
        let mut st = Streams {
            ctrl,
            gaps,
            vals,
            extra,
            zeros: 0,
        };
        // bsdiff's loop over the switches: [last_new, next switch) is copied at the current
        // alignment (source last_old) as far as the forward extension goes, and the next
        // alignment's copy starts as far back as the backward extension goes.
        let (mut last_new, mut last_old) = (0usize, 0usize);
        // The decoder's source cursor after the commands so far.
        let mut cursor = 0usize;
        // Where the switch before the previous one starts, and the previous one.
        let (mut before_prev, mut prev_scan) = (0usize, 0usize);
        for i in 0..=self.switches.len() {
            let (scan, pos) = match self.switches.get(i) {
                Some(w) => (w.start, Some(w.src)),
                None => (raw.len(), None),
            };
            let gap = scan - last_new;
            #[cfg(test)]
            {
                self.gap_bytes += gap;
            }
            // A copy reads only bytes before the one it makes: the first alignment (region
            // byte 0 for block byte 0) has none when the region is empty.
            let mut lenf = if last_old < region.len() + last_new {
                forward(&raw[last_new..scan], &s[last_old..], gap)
            } else {
                0
            };
            // A backward extension over the whole gap leaves `last_new` where it was, and the
            // next gap then holds this one. bsdiff lets that repeat; in a run of one repeated
            // byte every switch extends back over everything, and the gaps (and the
            // extensions and the overlap split over them) grew with every switch: a 147 MB
            // file with 123,457 bytes of `Q` inserted took 26 s at `-l 6` against 1.7 s at
            // `-l 7` (h78, session 33). So a backward extension reaches back at most to the
            // start of the switch before the previous one: `last_new` is then never behind
            // it, each gap spans at most three switches' distance, and the block's work is
            // linear. A switch swallowed by the next stays allowed: capping every extension at
            // the previous switch's start made the four pairs of BENCHMARKS.md table 14
            // 0.3–4 % larger at `-l 6` (typescript 3,857 → 4,012 bytes, aws-lc-sys 142,506 →
            // 145,775); this rule moves them by under 0.6 % (`-l 6`: ruff 4,239,744 →
            // 4,240,169, typescript 3,857 → 3,879, aws-lc-sys 142,506 → 142,815).
            let reach = gap.min(scan - before_prev);
            let mut lenb = match pos {
                Some(pos) => backward(raw, scan, s, pos, reach),
                None => 0,
            };
            (before_prev, prev_scan) = (prev_scan, scan);
            if lenf + lenb > gap {
                let overlap = lenf + lenb - gap;
                let (mut sc, mut best, mut lens) = (0isize, 0isize, 0usize);
                for k in 0..overlap {
                    let a = last_new + lenf - overlap + k;
                    if raw[a] == s[last_old + lenf - overlap + k] {
                        sc += 1;
                    }
                    let b = scan - lenb + k;
                    if raw[b] == s[pos.expect("overlap only before a switch") - lenb + k] {
                        sc -= 1;
                    }
                    if sc > best {
                        best = sc;
                        lens = k + 1;
                    }
                }
                lenf = lenf + lens - overlap;
                lenb -= lens;
            }
            let (next_new, next_old) = match pos {
                Some(pos) => (scan - lenb, pos - lenb),
                None => (raw.len(), 0),
            };
            // A command that makes nothing is not written (the format refuses it); a seek
            // goes with the next copy.
            if lenf > 0 || next_new > last_new + lenf {
                let seek = if lenf > 0 {
                    let d = last_old as i64 - cursor as i64;
                    cursor = last_old + lenf;
                    d
                } else {
                    0
                };
                st.command(
                    seek,
                    &raw[last_new..last_new + lenf],
                    &s[last_old..last_old + lenf],
                    &raw[last_new + lenf..next_new],
                )?;
            }
            last_new = next_new;
            last_old = next_old;
        }
        self.frame(effort, out)
    }

    /// The head and the four frames into `out`.
    fn frame(&mut self, effort: Effort, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let levels = stream_levels(effort);
        for (k, (src, f)) in self.streams.iter().zip(&mut self.frames).enumerate() {
            f.clear();
            if src.is_empty() {
                continue;
            }
            crate::memory::reserve(
                f,
                zstd::zstd_safe::compress_bound(src.len()),
                "a diff stream",
            )?;
            // zstd::bulk::Compressor's frame, with a refused allocation as OutOfMemory (the
            // context it needed: `crate::memory::diff_stream_context_bytes`), not an abort
            // or an anonymous zstd error.
            let e = |code: usize| match crate::codec::block::zstd_error(code) {
                CodecError::OutOfMemory(mut o) => {
                    o.bytes = crate::memory::diff_stream_context_bytes(levels[k], src.len());
                    CodecError::OutOfMemory(o)
                }
                other => other,
            };
            let mut c = crate::codec::block::new_cctx()?;
            for p in [
                CParameter::CompressionLevel(levels[k]),
                CParameter::ChecksumFlag(false),
                CParameter::ContentSizeFlag(true),
            ] {
                c.set_parameter(p).map_err(e)?;
            }
            if k == 0 {
                c.set_parameter(CParameter::WindowLog(23)).map_err(e)?;
            }
            c.compress2(f, src.as_slice()).map_err(e)?;
        }
        let total: usize = self.frames.iter().map(Vec::len).sum();
        crate::memory::reserve_exact(out, HEAD_LEN + total, "a diff payload")?;
        out.push(VERSION);
        for f in &self.frames {
            out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        }
        for f in &self.frames {
            out.extend_from_slice(f);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan::equal_count;
    use super::*;

    /// bsdiff's extensions byte by byte, as they were before the word steps.
    fn forward_bytes(new: &[u8], old: &[u8], max: usize) -> usize {
        let max = max.min(new.len()).min(old.len());
        let (mut eq, mut best, mut best_len) = (0usize, 0isize, 0usize);
        for i in 1..=max {
            if new[i - 1] == old[i - 1] {
                eq += 1;
                if 2 * eq as isize - i as isize > best {
                    best = 2 * eq as isize - i as isize;
                    best_len = i;
                }
            }
        }
        best_len
    }

    fn backward_bytes(new: &[u8], ne: usize, old: &[u8], oe: usize, max: usize) -> usize {
        let max = max.min(ne).min(oe);
        let (mut eq, mut best, mut best_len) = (0usize, 0isize, 0usize);
        for i in 1..=max {
            if new[ne - i] == old[oe - i] {
                eq += 1;
                if 2 * eq as isize - i as isize > best {
                    best = 2 * eq as isize - i as isize;
                    best_len = i;
                }
            }
        }
        best_len
    }

    /// `old` equal to `new` at each byte with probability `keep`/16, runs included.
    fn pair(n: usize, keep: u64, seed: &mut u64) -> (Vec<u8>, Vec<u8>) {
        let new: Vec<u8> = (0..n)
            .map(|_| super::super::tests::rng(seed) as u8)
            .collect();
        let old = new
            .iter()
            .map(|&b| {
                if super::super::tests::rng(seed) % 16 < keep {
                    b
                } else {
                    b ^ (1 + (super::super::tests::rng(seed) % 255) as u8)
                }
            })
            .collect();
        (new, old)
    }

    #[test]
    fn word_steps_give_the_byte_by_byte_extensions_and_counts() {
        let mut seed = 17;
        let mut nonzero = [0usize; 2];
        for keep in [0, 1, 8, 12, 15, 16] {
            // Past 255 steps of 16 (4,080 bytes) the SSE2 count adds its lanes up.
            for n in [
                0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200, 1000, 4080, 4097, 9000,
            ] {
                let (new, old) = pair(n, keep, &mut seed);
                for max in [n, n / 2, 3] {
                    let f = forward(&new, &old, max);
                    assert_eq!(
                        f,
                        forward_bytes(&new, &old, max),
                        "forward {keep} {n} {max}"
                    );
                    let b = backward(&new, n, &old, n, max);
                    assert_eq!(
                        b,
                        backward_bytes(&new, n, &old, n, max),
                        "back {keep} {n} {max}"
                    );
                    nonzero[0] += usize::from(f > 0);
                    nonzero[1] += usize::from(b > 0);
                }
                let naive = new.iter().zip(&old).filter(|(a, b)| a == b).count();
                assert_eq!(equal_count(&new, &old), naive, "equal_count {keep} {n}");
            }
        }
        // The comparison saw extensions, not only empty ones.
        assert!(nonzero[0] > 20 && nonzero[1] > 20, "{nonzero:?}");
    }
}
