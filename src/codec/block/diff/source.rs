//! The base region a `diff+base` payload is decoded against (docs/FORMAT.md §16.6), read
//! where it lies: one slice, or the pieces of the decoded base blocks it spans, in order.
//!
//! Why pieces, not one buffer: a reader's region is N bytes running through several decoded
//! base blocks, which its cache already holds (`archive::reader::base_cache`). Assembling
//! them into one buffer per block was a copy of the whole region (block + 2 MiB, 10 MiB at
//! `-l 7`) into a buffer of the worker's, whose first use was fresh memory: in the 2-core VM
//! of BENCHMARKS.md fresh memory costs 0.5–1.3 ms per MiB to fault in (a page first touched
//! after the host took it back), against 0.05 ms per MiB to write memory already faulted in.
//! Measured 2026-12-07 (`x -j 1 --base` of the ruff pair at `-l 7`; module doc of
//! `archive::reader::base_region`). A zstd frame (codec 2) needs its prefix contiguous, so
//! `zstd+base` blocks still assemble it; the diff decoder reads the pieces.
//!
//! Cost of the pieces: each byte the decoder reads by position first finds its piece. The
//! decoder reads in runs (a copy run is one lookup per piece it crosses) and single bytes
//! (one per nonzero diff byte), and both move forward through the region, so the piece of
//! the last read is tried first and a search over the pieces' starts only follows a seek
//! across a piece boundary.

/// The region as pieces (module doc); a position `s` in `0..len` is byte `s − starts[i]` of
/// piece `i`, the last piece whose start is at most `s`.
pub struct Pieces<'a> {
    parts: Vec<&'a [u8]>,
    /// Where each piece starts in the region; strictly increasing (empty pieces dropped).
    starts: Vec<u64>,
    len: u64,
    /// The piece of the last read, and where it starts.
    cur: &'a [u8],
    cur_start: u64,
}

impl<'a> Pieces<'a> {
    /// The region made of `parts`, in order (empty parts are skipped).
    pub fn new(parts: &[&'a [u8]]) -> Self {
        let mut p = Pieces {
            parts: Vec::with_capacity(parts.len()),
            starts: Vec::with_capacity(parts.len()),
            len: 0,
            cur: &[],
            cur_start: 0,
        };
        for &part in parts.iter().filter(|p| !p.is_empty()) {
            p.starts.push(p.len);
            p.len += part.len() as u64;
            p.parts.push(part);
        }
        p
    }

    /// The region's length N, bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Makes the piece holding position `s` (`s < len`) the current one.
    #[cold]
    fn seek(&mut self, s: u64) {
        let i = self.starts.partition_point(|&x| x <= s) - 1;
        self.cur = self.parts[i];
        self.cur_start = self.starts[i];
    }

    /// The byte at position `s` (`s < len`).
    #[inline(always)]
    pub fn byte(&mut self, s: u64) -> u8 {
        let at = s.wrapping_sub(self.cur_start);
        if at < self.cur.len() as u64 {
            return self.cur[at as usize];
        }
        self.seek(s);
        self.cur[(s - self.cur_start) as usize]
    }

    /// Appends the `n` bytes at `s..s + n` (within the region) to `out`.
    pub fn copy_to(&mut self, out: &mut Vec<u8>, s: u64, n: u64) {
        let (mut s, mut n) = (s, n);
        while n > 0 {
            if s.wrapping_sub(self.cur_start) >= self.cur.len() as u64 {
                self.seek(s);
            }
            let at = (s - self.cur_start) as usize;
            let k = (self.cur.len() - at).min(n as usize);
            out.extend_from_slice(&self.cur[at..at + k]);
            s += k as u64;
            n -= k as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_read_like_the_bytes_they_join() {
        let whole: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
        let cuts: &[&[u8]] = &[
            &whole[..1],
            &[],
            &whole[1..64],
            &whole[64..65],
            &whole[65..],
        ];
        let mut p = Pieces::new(cuts);
        assert_eq!(p.len(), 200);
        // Forward, backward and jumping reads of single bytes.
        for s in (0..200)
            .chain((0..200).rev())
            .chain([150, 0, 64, 63, 65, 199, 1])
        {
            assert_eq!(p.byte(s), whole[s as usize], "byte {s}");
        }
        // Runs across every boundary.
        for (s, n) in [
            (0, 200),
            (0, 1),
            (1, 63),
            (60, 10),
            (63, 2),
            (64, 1),
            (199, 1),
            (5, 0),
        ] {
            let mut out = vec![9];
            p.copy_to(&mut out, s, n);
            assert_eq!(out[1..], whole[s as usize..(s + n) as usize], "run {s}+{n}");
        }
    }
}
