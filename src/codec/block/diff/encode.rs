//! The `diff+base` encoder: krypta's own parser ([`crate::codec::block::delta_parse`], with
//! `any_distance`) finds exact matches in `region ‖ block`; bsdiff's approximate extension
//! (Colin Percival, bsdiff.c) turns them into commands: a copy at one alignment runs on
//! over mismatching bytes while at least half of them agree (the extension that maximises
//! 2 · equal − length, forward from the previous match and backward from the next, the
//! overlap split where it counts most), so a substitution costs one sparse diff byte, not a
//! new match; a match at a new alignment is taken only when it beats the current
//! alignment by more than [`NEW_MATCH_MARGIN`] bytes (bsdiff's rule). The four streams are
//! each one zstd frame.
//!
//! **Which levels use it, and why not the default** (docs/FORMAT.md §16.3; measured
//! 2026-12-07 with `c --base -j 1`, release build, on the four pairs of BENCHMARKS.md
//! table 14, at load 5–6 on 2 cores, so times are compared within one run): at levels 7–9
//! the writer makes this payload beside the zstd frames and keeps the smallest. There it
//! takes ruff's delta from 4,315,336 to 3,503,950 bytes (0.96× `zstd --patch-from -19`),
//! libc6's from 393,277 to 268,006 (0.75×), aws-lc-sys's from 173,847 to 160,604 (1.46×)
//! and typescript's from 5,523 to 5,221 (1.94×), at 2.7× the CPU time of level 7 without
//! it on ruff. At the default it would need to run alone and fast: with the streams at
//! zstd `-1` ruff's delta is 1.05× at 0.64 s of CPU against the default's 0.20 s (under
//! 40 MB/s, where issue 17 asks ≥ 90 MB/s per stream),
//! and typescript's is larger than the zstd frame. So the default keeps `zstd+base`, and
//! the size goal is met at `-l 7` on the executable and the package, not on the source
//! tree or the JavaScript build. `-19` on vals and extra (level 9) gains 2–6 % over `-6` at
//! 3× the time.
//!
//! **Next step (measured 2026-12-07, session 28)**: on typescript this payload loses to the
//! zstd frame on 4 of 6 blocks (`-b 4M -l 7`, block 1: 2,021 against 984 bytes, of which
//! ctrl 1,170 and extra 706 compressed), while bsdiff codes the whole file in 202 commands
//! and 88 extra bytes: the parser's matches leave bytes unmatched and change alignment
//! where bsdiff keeps the current one (repeated text offers the parser other
//! displacements). Matching that prefers the current alignment is where the text pairs'
//! size is.

use super::{HEAD_LEN, VERSION, put_leb, zigzag};
use crate::codec::CodecError;
use crate::codec::block::delta_parse::{Parser, Seq, common};

/// How many more bytes than the current alignment already matches a match at a new
/// alignment must bring to start a new command (bsdiff: 8).
const NEW_MATCH_MARGIN: usize = 8;

/// How many of the matches after a candidate at its alignment count with it, and the
/// largest gap between two of them, bytes (a match at a new alignment after an insertion in
/// a stretch of dense substitutions is 8 bytes long at most: alone it never beats the
/// margin).
const RUN_MATCHES: usize = 16;
const RUN_GAP: usize = 16;

/// zstd levels of the streams (ctrl, gaps, vals, extra) at krypta's levels 7 and 8, and 9.
/// The small streams (commands, gaps) get zstd's optimal parser at every level; vals and
/// extra, most of the bytes, get `-6` below level 9 (ruff's pair: 3,515,239 bytes at
/// 1.3 s, against 3,307,610 at 3.9 s with `-19` on all four; `-3` on both: 3,557,424).
const LEVELS: [[i32; 4]; 2] = [[19, 19, 6, 6], [19, 19, 19, 19]];

/// The encoder's buffers, kept between blocks.
#[derive(Default)]
pub struct DiffEncoder {
    parser: Parser,
    seqs: Vec<Seq>,
    matches: Vec<Match>,
    streams: [Vec<u8>; 4],
    frames: [Vec<u8>; 4],
}

/// A stretch of the block equal to its source `region ‖ block` at one alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Match {
    /// First byte in the block.
    start: usize,
    /// Length, bytes.
    len: usize,
    /// Its source: a position in `region ‖ block`, below `region.len() + start`.
    src: usize,
}

/// Equal bytes of `a` and `b` (same length compared).
fn equal_count(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    let mut eq = 0;
    while i < n {
        let c = common(&a[i..n], &b[i..n]);
        eq += c;
        i += c + 1;
    }
    eq.min(n)
}

/// The length (0..=`max`) of the forward extension of `new` over `old` that maximises
/// 2 · equal − length.
fn forward(new: &[u8], old: &[u8], max: usize) -> usize {
    let max = max.min(new.len()).min(old.len());
    let (mut i, mut eq) = (0usize, 0usize);
    let (mut best, mut best_len) = (0isize, 0usize);
    while i < max {
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

/// The length (0..=`max`) of the backward extension ending at `new_end` / `old_end`.
fn backward(new: &[u8], new_end: usize, old: &[u8], old_end: usize, max: usize) -> usize {
    let max = max.min(new_end).min(old_end);
    let (mut eq, mut best, mut best_len) = (0usize, 0isize, 0usize);
    for i in 1..=max {
        if new[new_end - i] == old[old_end - i] {
            eq += 1;
            let score = 2 * eq as isize - i as isize;
            if score > best {
                best = score;
                best_len = i;
            }
        } else if (best - (2 * eq as isize - i as isize)) as usize > max - i {
            break;
        }
    }
    best_len
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
    /// A seek, then a copy of `new` over `old` (same length), then `extra`.
    fn command(&mut self, seek: i64, new: &[u8], old: &[u8], extra: &[u8]) {
        let n = new.len();
        let mut i = 0;
        while i < n {
            let c = common(&new[i..], &old[i..n]);
            self.zeros += c as u64;
            i += c;
            if i < n {
                put_leb(self.gaps, self.zeros);
                self.vals.push(new[i].wrapping_sub(old[i]));
                self.zeros = 0;
                i += 1;
            }
        }
        self.extra.extend_from_slice(extra);
        put_leb(self.ctrl, zigzag(seek));
        put_leb(self.ctrl, n as u64);
        put_leb(self.ctrl, extra.len() as u64);
    }
}

impl DiffEncoder {
    /// Memory held, bytes.
    pub fn memory_bytes(&self) -> usize {
        self.parser.memory_bytes()
            + self.seqs.capacity() * std::mem::size_of::<Seq>()
            + self.matches.capacity() * std::mem::size_of::<Match>()
            + self.streams.iter().map(Vec::capacity).sum::<usize>()
            + self.frames.iter().map(Vec::capacity).sum::<usize>()
    }

    /// Writes into `out` (cleared) the `diff+base` payload of `raw` against `region`
    /// (docs/FORMAT.md §16.6), without the 16-byte region descriptor. The caller decodes it
    /// before keeping it. `max`: the zstd levels of krypta's level 9 ([`LEVELS`]).
    pub fn encode(
        &mut self,
        raw: &[u8],
        region: &[u8],
        max: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        out.clear();
        self.parser.any_distance = true;
        self.parser.parse(region, raw, &mut self.seqs);
        self.matches.clear();
        let mut p = 0usize;
        for q in &self.seqs {
            p += q.lit_len as usize;
            self.matches.push(Match {
                start: p,
                len: q.match_len as usize,
                src: region.len() + p - q.offset as usize,
            });
            p += q.match_len as usize;
        }
        for s in &mut self.streams {
            s.clear();
        }
        let s = self.parser.joined();
        // Without a parse (a block under 16 bytes, or too large), S is region ‖ raw all
        // the same.
        let joined;
        let s: &[u8] = if s.len() == region.len() + raw.len() {
            s
        } else {
            joined = [region, raw].concat();
            &joined
        };
        let [ctrl, gaps, vals, extra] = &mut self.streams;
        let mut st = Streams {
            ctrl,
            gaps,
            vals,
            extra,
            zeros: 0,
        };
        // bsdiff's loop over the matches: [last_new, next match) is copied at the current
        // alignment (source last_old) as far as the forward extension goes.
        let (mut last_new, mut last_old) = (0usize, 0usize);
        // The decoder's source cursor after the commands so far.
        let mut cursor = 0usize;
        let mut i = 0;
        let matches = &self.matches;
        loop {
            let (scan, pos) = loop {
                let Some(&Match { start, len, src }) = matches.get(i) else {
                    break (raw.len(), None);
                };
                i += 1;
                // The same alignment as the current copy: it goes on over this match.
                if src as isize - start as isize == last_old as isize - last_new as isize {
                    continue;
                }
                // The matches right after it at its alignment count with it (dense edits
                // leave only short exact matches, which resume at the same offset).
                let align = src as isize - start as isize;
                let (mut run, mut end) = (len, start + len);
                for m in matches[i..].iter().take(RUN_MATCHES) {
                    if m.src as isize - m.start as isize != align || m.start > end + RUN_GAP {
                        break;
                    }
                    run += m.len;
                    end = m.start + m.len;
                }
                let here = (start as isize + last_old as isize - last_new as isize) as usize;
                let old_score = equal_count(&raw[start..end], &s[here..here + end - start]);
                if run > old_score + NEW_MATCH_MARGIN {
                    break (start, Some(src));
                }
            };
            let gap = scan - last_new;
            let mut lenf = forward(&raw[last_new..scan], &s[last_old..], gap);
            let mut lenb = match pos {
                Some(pos) => backward(raw, scan, s, pos, gap),
                None => 0,
            };
            if lenf + lenb > gap {
                let overlap = lenf + lenb - gap;
                let (mut sc, mut best, mut lens) = (0isize, 0isize, 0usize);
                for k in 0..overlap {
                    let a = last_new + lenf - overlap + k;
                    if raw[a] == s[last_old + lenf - overlap + k] {
                        sc += 1;
                    }
                    let b = scan - lenb + k;
                    if raw[b] == s[pos.expect("overlap only before a match") - lenb + k] {
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
                );
            }
            if pos.is_none() {
                break;
            }
            last_new = next_new;
            last_old = next_old;
        }
        self.frame(max, out)
    }

    /// The head and the four frames into `out`.
    fn frame(&mut self, max: bool, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let levels = LEVELS[usize::from(max)];
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
            let mut c = zstd::bulk::Compressor::new(levels[k]).map_err(CodecError::Zstd)?;
            c.include_checksum(false).map_err(CodecError::Zstd)?;
            c.include_contentsize(true).map_err(CodecError::Zstd)?;
            if k == 0 {
                c.window_log(23).map_err(CodecError::Zstd)?;
            }
            c.compress_to_buffer(src, f).map_err(CodecError::Zstd)?;
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
