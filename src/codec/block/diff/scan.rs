//! The `diff+base` encoder's match finder: where in `S = region ‖ block` each stretch of the
//! block is copied from, as a list of alignment [`Switch`]es; [`super::encode`] turns the
//! list into commands (bsdiff's forward and backward approximate extension).
//!
//! **It follows the current alignment first** (bsdiff's rule, Colin Percival 2003): at each
//! position the bytes at the current alignment are compared before anything is looked up;
//! while they agree the scan moves on without a lookup, and a new alignment is taken only
//! when it agrees with more of the next bytes (a window of at least [`WINDOW`] bytes) than
//! the current one by more than [`MARGIN`]. Why not the sequence parser that fed both
//! this codec and a zstd-sequences frame until 2026-12-07 (`delta_parse.rs`, removed with
//! its frame): it took the first hashed match it found, and in text a 6-byte key (`return`, eight spaces) leads anywhere
//! in the region. On typescript's pair (compiled JavaScript, `-b 4M -l 7`) a block that is
//! the base shifted by 725 bytes came out as ~1,000 commands of 10–30 bytes copied from all
//! over the region (3,813 bytes, where zstd's frame took 984).
//!
//! **Two tables, both of the region's positions and of the block's searched positions**:
//! a long one keyed by [`LONG_KEY`] bytes, which finds the true alignment of text (a
//! 24-byte key is nearly unique there), and a short one of 6-byte keys with [`WAYS`]
//! entries per bucket, which finds the short exact matches between the changed bytes of
//! machine code (a rebuilt call displacement every ~10 bytes). Every candidate is compared
//! byte for byte; no hash is trusted.

use super::Effort;
use crate::codec::huge::HugeBuf;

/// A new alignment: block bytes from `start` on are copied from `src` on (`len` of them
/// exactly equal), until the next switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Switch {
    /// First byte in the block.
    pub start: usize,
    /// Bytes exactly equal at the new alignment from `start`.
    pub len: usize,
    /// Source of `start`: a position in `S`, below `region.len() + start`.
    pub src: usize,
}

/// Bytes of the long table's key.
const LONG_KEY: usize = 24;
/// Bounds of log2 of the long table's entries (u64 each), [`table_log`]: 2^12 entries
/// (32 KiB) for the smallest `S`, 2^22 (32 MiB) for an `S` of 32 MiB and more. The short
/// table has as many entries in buckets of [`WAYS`] (log2 of its buckets two less).
const MIN_TABLE_LOG: u32 = 12;
const MAX_TABLE_LOG: u32 = 22;
/// Entries per short bucket, the most recent first.
const WAYS: usize = 4;
/// Every how many region positions go into each table.
const REGION_STEP: usize = 8;
/// Shortest exact match a candidate needs (the short key's length).
const MIN_LEN: usize = 6;
/// Bytes over which a candidate and the current alignment are compared (at least; a longer
/// exact match is compared over its length).
const WINDOW: usize = 64;
/// How many more agreeing bytes (of the window) a new alignment must bring. bsdiff's 8
/// counts exact matches; a command here costs ~5 bytes (a seek of 3–4, two lengths), so a
/// short match in new text is cheaper as extra bytes. Measured on the four pairs of
/// BENCHMARKS.md table 14 (`c --base -l 7`, 2026-12-07): 8 → 24 took typescript's delta
/// from 4,153 to 3,362 bytes and aws-lc-sys's from 146,804 to 132,775, ruff's from 3,542,088
/// to 3,449,558; 32 and 48 gain on aws-lc-sys (131,169, 128,422) and lose on the others.
const MARGIN: usize = 24;
/// The current alignment agreeing this far needs no lookup.
const FOLLOW: usize = 16;
/// How many positions after one being looked up have their table buckets prefetched
/// ([`prefetch`]). A lookup is two loads from tables of up to 32 MiB each, nearly always
/// cache (and TLB) misses, and in machine code most lookups find nothing and move on by one
/// byte: `perf record` of ruff's `c --base -l 7 -j 1` (2026-12-07) put a third of the
/// write's samples on the long table's load alone. Asking for the next two positions'
/// buckets while this one is judged lets the misses overlap. Measured 2026-12-07 (`c --base
/// -l 7 -j 1`, release build, ruff's pair of BENCHMARKS.md table 14, CPU seconds, 3
/// interleaved rounds, load 4–6 from other builds): 2.02 → 1.48 s median (0.73×) with 2
/// ahead, 1.55–1.68 with 1, 1.36–1.65 with 3, 1.6–2.2 with 4 (the hashing outweighs it);
/// output byte-identical. Plain loads of the same entries (`std::hint::black_box`) instead
/// of prefetch instructions gained nothing measurable (1.76–2.04 s): a missed load holds
/// up retirement, a prefetch does not.
const PREFETCH_AHEAD: usize = 2;
/// What the scan does at one [`Effort`].
///
/// **[`Effort::Fast`] (level 6) costs about level 5's `zstd+base` time** (issue 17's ≥ 90
/// MB/s per stream) for a fraction of its size: the short table is not made (the long one
/// finds alignments; the short one finds the short exact matches between the changed bytes
/// of machine code, and alignments where no 24 bytes in a row survive), the long table is
/// capped at 2^20 entries (8 MiB, where a 4 MiB block's `S` would take 2^21), no lookup is
/// made where the current alignment still agrees on [`Search::near_skip`] of the window's 64
/// bytes (scattered substitutions: the alignment is followed on), and the step over new
/// bytes grows every 8 misses, not 64. Measured 2026-12-07 (session 32, `c --base -j 1` of
/// the new files of BENCHMARKS.md table 14's pairs, 4 MiB blocks, streams at `-3`, release
/// build, interleaved rounds at load 1.5–4, so CPU times only as ranges), ruff's bytes for
/// each step: both tables and no skips 3,507,173 (1.0–1.3 s of CPU); skipping at 40 of 64
/// and misses >> 3, 3,684,323 (0.66–0.84 s); without the short table 4,124,350 (0.45–0.48
/// s); skipping at 32, 4,136,418; the long table capped at 2^20 (this effort) 4,239,745
/// (0.30–0.53 s; 2^19 4,415,753, 2^18 4,967,220: region positions overwrite each other).
/// Content-defined
/// anchors (only positions whose hash has 3–5 low zero bits, in region and block, tables of
/// 2^17–2^19) were 4,412,954–5,464,488. On the four pairs (ruff / libc6 / typescript /
/// aws-lc-sys) this effort writes 4,239,745 / 292,507 / 3,857 / 142,513 bytes against
/// level 5's 4,487,131 / 410,216 / 5,603 / 196,305 and level 7's 3,380,576 / 268,697 /
/// 2,716 / 121,818; ruff's write took 0.30–0.39 s of CPU against level 5's 0.29–0.34 (4
/// interleaved rounds, load 4). Where the scan finds nothing (a substitution every 9 bytes of
/// random data: no 24 equal bytes in a row) the block gets level 6's own zstd frame
/// (`codec::block::against`), level 5's size.
#[derive(Clone, Copy, Debug)]
struct Search {
    /// Whether the short table is made and searched.
    short: bool,
    /// Agreeing bytes of the window at which the current alignment is followed on without
    /// a lookup (more than [`WINDOW`]: never).
    near_skip: usize,
    /// The step over new bytes grows by one every 2^this misses.
    miss_shift: u32,
    /// Largest log2 of the long table's entries.
    max_table_log: u32,
}

impl Search {
    fn of(effort: Effort) -> Search {
        match effort {
            Effort::Fast => Search {
                short: false,
                near_skip: 32,
                miss_shift: 3,
                max_table_log: 20,
            },
            Effort::Normal | Effort::Max => Search {
                short: true,
                near_skip: WINDOW + 1,
                miss_shift: 6,
                max_table_log: MAX_TABLE_LOG,
            },
        }
    }
}

/// The longest `S` searched, bytes (2^31): a seek between two positions of `S` (at most
/// 2^31 − 1 either way) is then a format number once zigzag-coded (below 2^32, §16.6), and a
/// position + 1 fits the 32 bits a table entry keeps of it. Format 2 bounds region + block
/// at 2^29 (§16.2), so a block of an archive is always searched.
pub(super) const MAX_JOINED: usize = 1 << 31;

pub(super) fn read8(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

/// Bytes equal at the start of `a` and `b` (also the command writer's).
pub(super) fn common(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = read8(a, i) ^ read8(b, i);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// The long table's index of the key at `i`, and a 32-bit tag of the key kept in the entry
/// (other bits of the same hash), so that a candidate of another key is refused without
/// reading its bytes.
fn hash_long(b: &[u8], i: usize, log: u32) -> (usize, u32) {
    let h = read8(b, i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let h = (h ^ read8(b, i + 8)).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    let h = (h ^ read8(b, i + 16)).wrapping_mul(0x1656_67B1_9E37_79F9);
    ((h >> (64 - log)) as usize, h as u32)
}

fn hash_short(b: &[u8], i: usize, log: u32) -> usize {
    ((read8(b, i) << 16).wrapping_mul(0xCF1B_BCDC_B7A5_6463) >> (64 - log)) as usize
}

/// A short table entry for position `p`: `p + 1` (high 32 bits) and its first 4 bytes, so a
/// candidate whose bytes differ is refused without reading it.
fn entry(b: &[u8], p: usize) -> u64 {
    ((p as u64 + 1) << 32) | u64::from(u32::from_le_bytes(b[p..p + 4].try_into().expect("4")))
}

/// Equal bytes at the same places of `a` and `b` (over the shorter).
///
/// On x86-64, 16 bytes a step with SSE2 (which every x86-64 CPU has: no detection needed),
/// elsewhere 8 a step with the differing bytes of a word counted by a multiply. Not by
/// `count_ones`: the release build targets baseline x86-64, which has no `popcnt`, and the
/// software count (about 15 instructions a word) was an eighth of `c --base -l 6`'s samples
/// on ruff's pair (`perf annotate`, 2026-12-07, session 33); the word count with a multiply
/// was still a sixth of the scan's: it asks this over the 64-byte window at nearly every
/// position it looks up.
pub(super) fn equal_count(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (eq, i) = equal_count_wide(&a[..n], &b[..n]);
    eq + equal_count_words(&a[i..n], &b[i..n])
}

/// [`equal_count`] by words of 8 bytes, the tail byte by byte.
fn equal_count_words(a: &[u8], b: &[u8]) -> usize {
    const LOW: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let n = a.len().min(b.len());
    let mut eq = 0;
    let mut i = 0;
    while i + 8 <= n {
        let x = read8(a, i) ^ read8(b, i);
        // 1 in each byte of x that is not zero (bit 7 of the byte moved to bit 0).
        let nonzero = ((((x & LOW) + LOW) | x) & !LOW) >> 7;
        // Their sum (at most 8) gathered in the top byte.
        eq += 8 - (nonzero.wrapping_mul(ONES) >> 56) as usize;
        i += 8;
    }
    eq + (i..n).filter(|&k| a[k] == b[k]).count()
}

/// The equal bytes of the longest prefix of `a` and `b` (same length) that is whole 16-byte
/// steps, and that prefix's length: SSE2 compares 16 byte pairs at once, and each lane of a
/// counter takes one per equal pair (a compare gives −1 there) for up to 255 steps before a
/// sum of absolute differences adds the lanes up.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn equal_count_wide(a: &[u8], b: &[u8]) -> (usize, usize) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_cvtsi128_si64, _mm_extract_epi16, _mm_loadu_si128,
        _mm_sad_epu8, _mm_setzero_si128, _mm_sub_epi8,
    };
    let whole = a.len().min(b.len()) & !15;
    let (mut eq, mut i) = (0usize, 0usize);
    while i < whole {
        let stop = whole.min(i + 16 * 255);
        // SAFETY: SSE2 is part of every x86-64 CPU (the target's baseline), so its
        // intrinsics can run here; i + 16 <= whole <= a.len(), b.len(), so 16 bytes are
        // readable at each pointer, and `loadu` needs no alignment.
        let sums = unsafe {
            let mut lanes = _mm_setzero_si128();
            while i < stop {
                let x = _mm_loadu_si128(a.as_ptr().add(i).cast::<__m128i>());
                let y = _mm_loadu_si128(b.as_ptr().add(i).cast::<__m128i>());
                lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(x, y));
                i += 16;
            }
            // Two sums of eight lanes each (at most 2040), in the low 16 bits of each half.
            let sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
            (_mm_cvtsi128_si64(sums), _mm_extract_epi16::<4>(sums))
        };
        eq += (sums.0 as u64 & 0xFFFF) as usize + (sums.1 & 0xFFFF) as usize;
    }
    (eq, i)
}

#[cfg(not(target_arch = "x86_64"))]
fn equal_count_wide(_a: &[u8], _b: &[u8]) -> (usize, usize) {
    (0, 0)
}

/// The scanner's tables and `S`, kept between blocks, in memory advised for huge pages
/// ([`HugeBuf`]): the lookups read the tables (up to 32 MiB each) and `S` at random, and
/// with 4 KiB pages nearly every one was also a TLB miss. Measured 2026-12-07 (`c --base
/// -l 7 -j 1`, release build, the four pairs of BENCHMARKS.md table 14, 5 interleaved
/// rounds, load 2–3, CPU seconds, medians): ruff 1.58 → 1.39, libc6 0.27 → 0.22,
/// typescript 0.28 → 0.20, aws-lc-sys 0.77 → 0.67; output byte-identical.
#[derive(Default)]
pub(super) struct Scanner {
    buf: HugeBuf,
    long: HugeBuf,
    short: HugeBuf,
}

impl Scanner {
    /// Memory held, bytes.
    pub(super) fn memory_bytes(&self) -> usize {
        self.buf.capacity() + self.long.capacity() + self.short.capacity()
    }

    /// `S = region ‖ block` of the last [`Scanner::scan`].
    pub(super) fn joined(&self) -> &[u8] {
        &self.buf
    }

    /// The alignment switches of `block` against `region` into `out` (cleared), in block
    /// order. None (the block copied at the first alignment or added as extra bytes) for a
    /// block under 32 bytes or when `S` is longer than [`MAX_JOINED`]. `S` and the tables
    /// are reserved exactly, and a refusal is an error: grown by `extend`, `S` took twice its
    /// length whenever a block's `S` was longer than the last one's (132 MiB of address space
    /// for a 66 MiB `S` at `-l 9`, measured 2026-12-07), and a refusal aborted the process.
    pub(super) fn scan(
        &mut self,
        region: &[u8],
        block: &[u8],
        effort: Effort,
        out: &mut Vec<Switch>,
    ) -> Result<(), crate::memory::OutOfMemory> {
        let search = Search::of(effort);
        out.clear();
        self.buf.clear();
        let r = region.len();
        let n = block.len();
        self.buf
            .try_reserve(r + n, "the diff's copy of region and block")?;
        self.buf.extend_from_slice(region);
        self.buf.extend_from_slice(block);
        if n < 32 || r + n > MAX_JOINED {
            return Ok(());
        }
        let long_log = table_log(r + n, effort);
        let short_log = long_log - 2;
        let long = zeroed(&mut self.long, 8 << long_log)?;
        // Without the short table (the fast effort) its buffer stays as it is, unread.
        let mut short = if search.short {
            Some(zeroed(&mut self.short, (8 * WAYS) << short_log)?)
        } else {
            None
        };
        let s = &self.buf[..];
        let mut q = 0;
        while q + LONG_KEY <= r {
            let (h, tag) = hash_long(s, q, long_log);
            put(long, h, ((q as u64 + 1) << 32) | u64::from(tag));
            if let Some(t) = short.as_deref_mut() {
                insert(t, hash_short(s, q, short_log), entry(s, q));
            }
            q += REGION_STEP;
        }
        // The current alignment: the source of block byte p is p + delta.
        let mut delta: Option<isize> = None;
        // The alignments before the current one, the latest first (MIN: none).
        let mut reps = [isize::MIN; 3];
        let mut p = 0usize;
        let mut misses = 0usize;
        // Positions from which a key and a window can be read.
        let keyed = n.saturating_sub(LONG_KEY.max(WINDOW));
        while p < n {
            let cur = r + p;
            let here = delta
                .map(|d| p as isize + d)
                .filter(|&x| x >= 0)
                .map(|x| x as usize);
            let c = here.map_or(0, |src| common(&s[cur..], &s[src..]));
            if c >= FOLLOW || p >= keyed {
                p += c.max(1);
                misses = 0;
                continue;
            }
            // How much of the window the current alignment agrees with.
            let near = here.map_or(0, |h| equal_count(&s[cur..cur + WINDOW], &s[h..]));
            if near >= search.near_skip {
                p += c.max(1);
                continue;
            }
            // The next positions' buckets, asked for now: a lookup that finds nothing moves
            // on by a byte or a few, and their loads then overlap this one's (below `keyed`,
            // so their keys can be read).
            for k in 1..=PREFETCH_AHEAD {
                prefetch(long, hash_long(s, cur + k, long_log).0);
                if let Some(t) = short.as_deref() {
                    prefetch(t, hash_short(s, cur + k, short_log) * WAYS);
                }
            }
            // A candidate: (agreeing bytes over the window, exact length) when it beats the
            // current alignment by the margin.
            let judge = |src: usize| -> Option<(usize, usize)> {
                if Some(src as isize - p as isize) == delta {
                    return None;
                }
                let len = common(&s[cur..], &s[src..]);
                if len < MIN_LEN {
                    return None;
                }
                let w = len.max(WINDOW).min(n - p);
                let agree = if len >= w {
                    len
                } else {
                    len + equal_count(&s[cur + len..cur + w], &s[src + len..])
                };
                let old = if w == WINDOW {
                    near
                } else {
                    here.map_or(0, |h| equal_count(&s[cur..cur + w], &s[h..]))
                };
                (agree > old + MARGIN).then_some((agree, len))
            };
            let mut best: Option<(usize, usize, usize)> = None; // (agree, len, src)
            let consider = |best: &mut Option<(usize, usize, usize)>, src: usize| {
                if let Some((agree, len)) = judge(src)
                    && best.is_none_or(|b| agree > b.0)
                {
                    *best = Some((agree, len, src));
                }
            };
            // Recent alignments first: their bytes are near ones read lately.
            for &d in &reps {
                let src = p as isize + d;
                if d != isize::MIN && src >= 0 && (src as usize) < cur {
                    consider(&mut best, src as usize);
                }
            }
            let (hl, tag) = hash_long(s, cur, long_log);
            // The short key's bucket and entry, where that table is made.
            let key = short
                .as_ref()
                .map(|_| (hash_short(s, cur, short_log), entry(s, cur)));
            if best.is_none() {
                let e = at(long, hl);
                if e != 0 && e as u32 == tag {
                    consider(&mut best, (e >> 32) as usize - 1);
                }
                if let (Some(t), Some((hs, now))) = (short.as_deref(), key) {
                    for e in (hs * WAYS..hs * WAYS + WAYS).map(|i| at(t, i)) {
                        if e != 0 && e as u32 == now as u32 {
                            consider(&mut best, (e >> 32) as usize - 1);
                        }
                    }
                }
            }
            if let Some((_, len, src)) = best {
                // Grown fallibly like `S` and the tables: at most one switch per six block
                // bytes (a match is at least [`MIN_LEN`] long), 4 bytes of list per byte.
                crate::memory::reserve(out, 1, "the diff's alignment switches")?;
                out.push(Switch { start: p, len, src });
                if let Some(d) = delta {
                    reps = [d, reps[0], reps[1]];
                }
                delta = Some(src as isize - p as isize);
                p += len;
                misses = 0;
                continue;
            }
            put(long, hl, ((cur as u64 + 1) << 32) | u64::from(tag));
            if let (Some(t), Some((hs, now))) = (short.as_deref_mut(), key) {
                insert(t, hs, now);
            }
            if c >= 4 {
                misses = 0;
                p += c;
            } else {
                misses += 1;
                // Far from any match (new bytes): look up less often the longer it lasts.
                p += 1 + (misses >> search.miss_shift);
            }
        }
        Ok(())
    }
}

/// log2 of the long table's entries for an `S` of `joined` bytes: one entry per region
/// position inserted (every [`REGION_STEP`]), rounded up to a power of two, within
/// [`MIN_TABLE_LOG`]..=[`MAX_TABLE_LOG`] (the tables: 2^12..=2^22 entries each, 64 KiB..=64
/// MiB together). Fixed tables of 2^20 entries were overwritten ever more as blocks grew past
/// 4 MiB (and cost a 16 MiB clear for a block of a few bytes). Measured 2026-12-07 on the
/// four pairs of BENCHMARKS.md table 14 (`c --base -j 1`, ruff / libc6 / typescript /
/// aws-lc-sys): ruff's delta with 16 MiB blocks 3,929,296 bytes at 2^20 entries, 3,451,430
/// at 2^21, 3,356,089 at 2^22 (the others within 1 %); at `-l 7`'s 8 MiB blocks, rounded
/// down (2^21) against up (2^22): 3,419,309 / 268,760 / 2,924 / 122,244 against 3,380,576
/// / 268,697 / 2,716 / 121,818 bytes, for 5–10 % more CPU time. [`Effort::Fast`] caps it
/// at 2^20 ([`Search`]).
pub(super) fn table_log(joined: usize, effort: Effort) -> u32 {
    let positions = (joined / REGION_STEP).max(1);
    (usize::BITS - positions.leading_zeros()).clamp(MIN_TABLE_LOG, Search::of(effort).max_table_log)
}

/// Bytes of the tables for an `S` of `joined` bytes at `effort` (u64 entries,
/// 2^[`table_log`] in each table made).
pub(crate) fn table_bytes(joined: usize, effort: Effort) -> u64 {
    let tables = if Search::of(effort).short { 2 } else { 1 };
    (8 * tables) << table_log(joined, effort)
}

/// `buf` emptied and `bytes` long, all zeros: a match table (u64 entries, [`at`]/[`put`]).
fn zeroed(buf: &mut HugeBuf, bytes: usize) -> Result<&mut [u8], crate::memory::OutOfMemory> {
    buf.clear();
    buf.try_reserve(bytes, "the diff's match tables")?;
    let t = buf.filled(bytes);
    t.fill(0);
    Ok(t)
}

/// Entry `i` of a match table.
fn at(table: &[u8], i: usize) -> u64 {
    u64::from_ne_bytes(table[8 * i..8 * i + 8].try_into().expect("8 bytes"))
}

/// Sets entry `i` of a match table.
fn put(table: &mut [u8], i: usize, e: u64) {
    table[8 * i..8 * i + 8].copy_from_slice(&e.to_ne_bytes());
}

/// Asks the CPU to bring the cache line of entry `i` of `table` in (x86-64's `prefetcht0`; elsewhere
/// nothing), a hint that changes no value: see [`PREFETCH_AHEAD`]. An index past the table
/// asks for nothing.
#[allow(unsafe_code)]
fn prefetch(table: &[u8], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(e) = table.get(8 * i) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: `_mm_prefetch` needs only SSE, which every x86-64 CPU has; it reads
        // nothing the program sees and cannot fault, and the pointer is to a live element
        // of `table`.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(e).cast::<i8>()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (table, i);
}

/// Puts `e` first in bucket `h`, dropping the oldest.
fn insert(table: &mut [u8], h: usize, e: u64) {
    let b = &mut table[8 * h * WAYS..8 * (h * WAYS + WAYS)];
    b.copy_within(0..8 * (WAYS - 1), 8);
    b[..8].copy_from_slice(&e.to_ne_bytes());
}
