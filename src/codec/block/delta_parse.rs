//! krypta's own match finder for `zstd+base` blocks: the sequences (literals, then a match
//! at an offset into `region ‖ block`) that [`super::sequences`] turns into a zstd frame.
//!
//! Why not zstd's own parsers: a new version of a file differs from its base by edits
//! scattered through long stretches that still match (a version string renamed in 36,197
//! places of a source tree, a call displacement changed in most functions of a rebuilt
//! executable). zstd's fast strategies resume a match after such an edit only where their
//! hash tables happen to hold the position, and its optimal parsers, which do, index the
//! whole region at 1–4 MB/s. This parser follows the base: after every match it tries to
//! resume at the recent offsets a few bytes further on (a substitution costs one literal
//! and a repeat-offset match), and otherwise looks the position up in a hash table of the
//! region and of the block so far.
//!
//! Every match it returns has been compared byte for byte (no hash is trusted); the caller
//! still decodes the frame before using it.

/// One zstd sequence: `lit_len` literals, then `match_len` bytes copied from `offset` bytes
/// back in `region ‖ block`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seq {
    /// Literal bytes before the match.
    pub lit_len: u32,
    /// Distance back from the match's first byte, 1 or more.
    pub offset: u32,
    /// Bytes matched, at least [`MIN_REP`].
    pub match_len: u32,
}

/// Shortest match at a recent offset (zstd's minimum is 3).
pub const MIN_REP: usize = 4;
/// Shortest match found through the hash table (the hashed key's length).
const MIN_HASHED: usize = 6;
/// How many bytes on a match at a recent offset is looked for before a new offset is taken.
const LOOK_AHEAD: usize = 4;
/// How much shorter (in bytes reached) a match at a recent offset may be and still win.
const REP_BONUS: usize = 8;
/// Extra length asked of a match per step of distance (64 KiB, 1 MiB).
const FAR_EXTRA: usize = 2;
/// Only hash matches shorter than this look ahead for a recent offset.
const LOOK_AHEAD_BELOW: usize = 48;
/// Every how many region positions go into the hash table.
const REGION_STEP: usize = 8;
/// log2 of the hash table's buckets ([`WAYS`] entries of 8 bytes each: 8 MiB). Measured on
/// ruff's pair (BENCHMARKS.md table 14) at the same 8 MiB: one entry per hash and 2^20 of
/// them gave 4,597,193 bytes, four per hash and 2^18 buckets 4,430,964 (a block's novel
/// positions no longer push the region's out); 2^17 buckets 4,835,811.
const HASH_LOG: u32 = 18;

fn read8(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

fn hash6(b: &[u8], i: usize) -> usize {
    ((read8(b, i) << 16).wrapping_mul(0xCF1B_BCDC_B7A5_6463) >> (64 - HASH_LOG)) as usize
}

fn read4(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

/// Bytes equal at the start of `a` and `b` (also the diff encoder's).
pub(crate) fn common(a: &[u8], b: &[u8]) -> usize {
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

/// Memory a parser keeps between blocks (reused, so that a block does not fault in fresh
/// pages): `region ‖ block` laid end to end, and the 8 MiB hash table.
#[derive(Default)]
pub struct Parser {
    buf: Vec<u8>,
    /// Per hash: the position + 1 (high 32 bits) and its first 4 bytes (low 32 bits), so a
    /// candidate whose bytes differ is refused without reading it (the read is the miss).
    table: Vec<u64>,
    /// Take every hashed match of [`MIN_HASHED`] bytes whatever its distance (the
    /// `diff+base` encoder, whose commands cost the same at any distance: a match of a
    /// stretch with a substitution every 9 bytes is 8 bytes long, under [`min_hashed`]'s
    /// 10 for a source over 1 MiB back, and without it such a block found no match at all).
    pub any_distance: bool,
}

impl Parser {
    /// Memory held, bytes.
    pub fn memory_bytes(&self) -> usize {
        self.buf.capacity() + self.table.capacity() * std::mem::size_of::<u64>()
    }

    /// `region ‖ block` of the last [`Parser::parse`] (empty when it made no sequence
    /// because of the block's size).
    pub fn joined(&self) -> &[u8] {
        &self.buf
    }

    /// Parses `block` against `region` into `seqs` (cleared). Bytes after the last sequence
    /// are literals. No sequence at all (the block as literals) for a block under 16 bytes
    /// or when `region ‖ block` reaches 2^32 bytes (positions are kept in 32 bits; format
    /// 2 bounds a delta frame's window at 2^29).
    pub fn parse(&mut self, region: &[u8], block: &[u8], seqs: &mut Vec<Seq>) {
        seqs.clear();
        self.buf.clear();
        if block.len() < 16 || region.len() + block.len() >= u32::MAX as usize {
            return;
        }
        let n = region.len();
        self.buf.extend_from_slice(region);
        self.buf.extend_from_slice(block);
        self.table.clear();
        self.table.resize(WAYS << HASH_LOG, 0);
        let any_distance = self.any_distance;
        let buf = &self.buf[..];
        let table = &mut self.table[..];
        let mut p = 0;
        while p + 8 <= n {
            insert(table, hash6(buf, p), entry(buf, p));
            p += REGION_STEP;
        }
        let end = buf.len() - 8;
        let mut reps: [usize; 3] = [1, 4, 8];
        let mut anchor = n;
        let mut cur = n;
        let mut misses = 0usize;
        while cur < end {
            let (mut best_len, mut best_off) = best_rep(buf, cur, &reps);
            let now = entry(buf, cur);
            let mut found = (0usize, 0usize);
            let h = hash6(buf, cur);
            for &e in &table[h * WAYS..h * WAYS + WAYS] {
                if e != 0 && e as u32 == now as u32 {
                    let src = (e >> 32) as usize - 1;
                    let len = common(&buf[src..], &buf[cur..]);
                    let min = if any_distance {
                        MIN_HASHED
                    } else {
                        min_hashed(cur - src)
                    };
                    if len > found.0 && len >= min {
                        found = (len, cur - src);
                    }
                }
            }
            insert(table, h, now);
            if found.0 > best_len + 2 {
                let len = found.0;
                // A new offset costs about three bytes, a repeat one about one: when
                // a recent offset matches a few bytes on and reaches about as far, the
                // bytes between become literals (the usual edit: one changed byte).
                let ahead = if len < LOOK_AHEAD_BELOW {
                    (1..=LOOK_AHEAD).find_map(|k| {
                        let (rl, d) = best_rep(buf, (cur + k).min(end), &reps);
                        (rl >= MIN_REP && k + rl + REP_BONUS >= len).then_some((k, rl, d))
                    })
                } else {
                    None
                };
                if let Some((k, rl, d)) = ahead {
                    cur = (cur + k).min(end);
                    best_len = rl;
                    best_off = d;
                } else {
                    best_len = len;
                    best_off = found.1;
                }
            }
            if best_len < MIN_REP {
                misses += 1;
                cur += 1 + (misses >> 6);
                continue;
            }
            misses = 0;
            // Extend backwards over the pending literals.
            let mut start = cur;
            while start > anchor && start > best_off && buf[start - best_off - 1] == buf[start - 1]
            {
                start -= 1;
            }
            let len = best_len + (cur - start);
            seqs.push(Seq {
                lit_len: (start - anchor) as u32,
                offset: best_off as u32,
                match_len: len as u32,
            });
            if reps[0] != best_off {
                reps = if reps[1] == best_off {
                    [best_off, reps[0], reps[2]]
                } else {
                    [best_off, reps[0], reps[1]]
                };
            }
            let stop = start + len;
            // Index a few positions the match covered, for later matches inside the block.
            let mut k = cur + 1;
            while k < stop && k <= end {
                insert(table, hash6(buf, k), entry(buf, k));
                k += 16;
            }
            cur = stop;
            anchor = stop;
        }
    }
}

/// The shortest match worth a new offset that far back: a far offset costs more bytes
/// than a few literals.
fn min_hashed(offset: usize) -> usize {
    match offset {
        0..0x1_0000 => MIN_HASHED,
        0x1_0000..0x10_0000 => MIN_HASHED + FAR_EXTRA,
        _ => MIN_HASHED + 2 * FAR_EXTRA,
    }
}

/// Entries per hash (32 bytes, one cache line's half), the most recent first.
const WAYS: usize = 4;

/// Puts `e` first in bucket `h`, dropping the oldest.
fn insert(table: &mut [u64], h: usize, e: u64) {
    let b = &mut table[h * WAYS..h * WAYS + WAYS];
    b.copy_within(0..WAYS - 1, 1);
    b[0] = e;
}

/// A hash table entry for position `p`.
fn entry(buf: &[u8], p: usize) -> u64 {
    ((p as u64 + 1) << 32) | u64::from(read4(buf, p))
}

/// The longest match at one of the recent offsets at `cur`: (length, offset), length 0 when
/// none reaches [`MIN_REP`].
fn best_rep(buf: &[u8], cur: usize, reps: &[usize; 3]) -> (usize, usize) {
    let v = read4(buf, cur);
    let mut best = (0, 0);
    for &d in reps {
        if d <= cur && read4(buf, cur - d) == v {
            let len = common(&buf[cur - d..], &buf[cur..]);
            if len > best.0 {
                best = (len, d);
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays `seqs` over `region ‖ literals of block`, as a zstd decoder would.
    pub(super) fn replay(region: &[u8], block: &[u8], seqs: &[Seq]) -> Vec<u8> {
        let mut out: Vec<u8> = Vec::new();
        let mut i = 0;
        for s in seqs {
            out.extend_from_slice(&block[i..i + s.lit_len as usize]);
            i += s.lit_len as usize;
            for _ in 0..s.match_len {
                let p = region.len() + out.len() - s.offset as usize;
                let b = if p < region.len() {
                    region[p]
                } else {
                    out[p - region.len()]
                };
                out.push(b);
            }
            i += s.match_len as usize;
        }
        out.extend_from_slice(&block[i..]);
        out
    }

    #[test]
    fn substitutions_resume_at_the_same_offset() {
        let mut region = Vec::new();
        for k in 0..2000u32 {
            region
                .extend_from_slice(format!("fn aws_lc_0_46_0_sym{k}(x: u32) -> u32;\n").as_bytes());
        }
        let block: Vec<u8> = String::from_utf8(region.clone())
            .unwrap()
            .replace("0_46_0", "0_47_0")
            .into_bytes();
        let mut seqs = Vec::new();
        Parser::default().parse(&region, &block, &mut seqs);
        assert_eq!(replay(&region, &block, &seqs), block);
        let literals: u32 = seqs.iter().map(|s| s.lit_len).sum::<u32>()
            + (block.len() as u32 - seqs.iter().map(|s| s.lit_len + s.match_len).sum::<u32>());
        // One literal per substitution (the '7'), plus the few before the first match.
        assert!(literals <= 2000 + 16, "{literals} literals");
    }

    /// A small deterministic generator (xorshift), so that failures reproduce.
    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// Every sequence of every input shape is one a zstd decoder can follow (an offset no
    /// further back than `region ‖ block` so far, a match of at least MIN_REP bytes, lengths
    /// inside the block) and replaying them gives back the block: empty and tiny regions,
    /// blocks around the 16-byte minimum, zeros, random bytes, and edited copies.
    #[test]
    fn sequences_are_valid_and_replay_to_the_block_for_every_shape() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut parser = Parser::default();
        let mut seqs = Vec::new();
        for case in 0..300 {
            let region_len = [0, 1, 7, 8, 100, 5000, 70_000][case % 7];
            let block_len = [0, 15, 16, 17, 64, 4096, 100_000][(case / 7) % 7];
            let region: Vec<u8> = (0..region_len)
                .map(|_| match case % 3 {
                    0 => 0,
                    1 => (rng(&mut seed) % 4) as u8,
                    _ => rng(&mut seed) as u8,
                })
                .collect();
            // The block: pieces of the region (some edited), runs and fresh bytes.
            let mut block = Vec::with_capacity(block_len);
            while block.len() < block_len {
                let k = rng(&mut seed) % 4;
                let len = (rng(&mut seed) % 700) as usize + 1;
                if k < 2 && region_len > 0 {
                    let at = (rng(&mut seed) as usize) % region_len;
                    let end = (at + len).min(region_len);
                    block.extend_from_slice(&region[at..end]);
                    if k == 1 {
                        let last = block.len() - 1;
                        block[last] ^= 0x5A;
                    }
                } else if k == 2 {
                    block.extend(std::iter::repeat_n(rng(&mut seed) as u8, len));
                } else {
                    block.extend((0..len).map(|_| rng(&mut seed) as u8));
                }
            }
            block.truncate(block_len);
            parser.parse(&region, &block, &mut seqs);
            let mut at = 0usize;
            for s in &seqs {
                at += s.lit_len as usize;
                assert!(s.match_len as usize >= MIN_REP, "case {case}: {s:?}");
                assert!(
                    s.offset >= 1 && s.offset as usize <= region.len() + at,
                    "case {case}: {s:?} at {at}"
                );
                at += s.match_len as usize;
                assert!(at <= block.len(), "case {case}: past the block");
            }
            assert_eq!(replay(&region, &block, &seqs), block, "case {case}");
        }
    }
}
