//! The Reed–Solomon code of one segment, through `reed-solomon-simd` (GF(2^16), Leopard-RS
//! high-rate FFT encoding; no field arithmetic here).
//!
//! Encoding is incremental so the writer never holds a whole segment: the library's
//! high-rate encoder computes `recovery = FFT_C(⊕_j IFFT_C(chunk_j, skew (j+1)·C))` over
//! chunks of C data shards (C = the next power of two ≥ the segment's recovery count), and
//! XOR is associative, so [`ChunkEncoder`] runs the same engine calls one chunk at a time
//! into a C-shard accumulator: memory is 2·C shards (accumulator + the chunk), not K. The
//! result is bit-identical to `HighRateEncoder::encode` (tested below for many shapes).
//!
//! Every segment, the short last one included, is coded with the chunk C of a FULL segment
//! (recovery count ⌈K·p/100⌉): a streaming writer cannot know a segment is the last until the
//! stream ends, and by then its earlier chunks were transformed with C. A short segment
//! stores only the first m_s = ⌈k_s·p/100⌉ of the C parity symbols; the library's decoder
//! handles that as `HighRateDecoder::new(k_s, ⌈K·p/100⌉, S)` given recovery shards 0..m_s
//! (the rest count as lost), which is the same code.

use reed_solomon_simd::engine::{DefaultEngine, Engine, ShardsRefMut, utils};
use reed_solomon_simd::rate::{HighRateDecoder, RateDecoder};

use super::error::RecoveryError;
use crate::memory::OutOfMemory;

/// Bytes of shard data one decoding pass works on. The code applies to each 64-byte column
/// of the shards independently (the engine's butterflies work on 64-byte blocks at the same
/// position), so a segment can be decoded in column slices of W bytes per shard: the
/// decoder's work area (the next power of two ≥ C + k shards) is then at most this many
/// bytes instead of 256 MiB for a full segment of 4 KiB shards. Measured on the development
/// machine (a full 128 MiB segment, 257 shards lost): 8 MiB slices decode at ~180 MB/s and
/// peak 435 MB RSS, whole shards at ~150 MB/s and 687 MB. (Encoding in slices was measured
/// too and gave no gain, so the encoder works on whole shards.)
const DECODE_WORKING_SET: usize = 8 << 20;

/// The width, in 64-byte blocks, of column slices of shards of `len64` blocks so that
/// `count` shards of one slice fit in `budget` bytes: the largest divisor of `len64` that
/// fits (at least 1).
fn slice_blocks(len64: usize, count: usize, budget: usize) -> usize {
    let fit = (budget / 64 / count.max(1)).max(1);
    (1..=len64.min(fit))
        .rev()
        .find(|&d| len64.is_multiple_of(d))
        .unwrap_or(1)
}

/// Bytes of the engine's GF(2^16) tables (an 8 MiB multiplication table and four of
/// 128 KiB), which `reed-solomon-simd` allocates once per process on the first
/// `DefaultEngine::new`.
const ENGINE_TABLES: usize = (8 << 20) + (512 << 10);

/// The Reed–Solomon engine. The library allocates its tables inside, where a refusal
/// aborts (`repair` under `ulimit -v 30000` died with "memory allocation of 8388608 bytes
/// failed"): the first call asks for as much first, so that a limit they would hit is an
/// [`OutOfMemory`] (freed at once; the library's allocation then reuses the room).
fn engine() -> Result<DefaultEngine, OutOfMemory> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static MADE: AtomicBool = AtomicBool::new(false);
    if !MADE.load(Ordering::Acquire) {
        let mut probe: Vec<u8> = Vec::new();
        crate::memory::reserve_exact(&mut probe, ENGINE_TABLES, "the Reed-Solomon tables")?;
        drop(probe);
    }
    let e = DefaultEngine::new();
    MADE.store(true, Ordering::Release);
    Ok(e)
}

/// `n` zeroed 64-byte blocks, a refused allocation as [`OutOfMemory`] for `what` (a
/// chunk of recovery shards is 6–64 MiB: `c --recovery` under `ulimit -v` aborted here).
pub fn zeroed_blocks(n: usize, what: &'static str) -> Result<Vec<[u8; 64]>, OutOfMemory> {
    let mut v = Vec::new();
    crate::memory::reserve_exact(&mut v, n, what)?;
    v.resize(n, [0u8; 64]);
    Ok(v)
}

/// `n` zeroed bytes, a refused allocation as [`OutOfMemory`] for `what` (a segment being
/// repaired is 128 MiB).
pub fn zeroed_bytes(n: usize, what: &'static str) -> Result<Vec<u8>, OutOfMemory> {
    let mut v = Vec::new();
    crate::memory::reserve_exact(&mut v, n, what)?;
    v.resize(n, 0);
    Ok(v)
}

/// Incremental high-rate encoder of one segment at a time.
pub struct ChunkEncoder {
    engine: DefaultEngine,
    /// Shard size in 64-byte blocks.
    len64: usize,
    /// Chunk C, shards.
    chunk: usize,
    /// The XOR of the IFFT'd chunks so far (C shards), then the recovery shards.
    acc: Vec<[u8; 64]>,
    /// Whether `acc` holds a chunk of the current segment yet.
    started: bool,
}

impl ChunkEncoder {
    /// An encoder for shards of `shard_size` bytes (a multiple of 64) and chunk `chunk` (a
    /// power of two). Errors: [`OutOfMemory`] when its accumulator (C × S bytes) cannot be
    /// allocated.
    pub fn new(shard_size: usize, chunk: usize) -> Result<ChunkEncoder, OutOfMemory> {
        let len64 = shard_size / 64;
        Ok(ChunkEncoder {
            engine: engine()?,
            len64,
            chunk,
            acc: zeroed_blocks(chunk * len64, "the recovery encoder's accumulator")?,
            started: false,
        })
    }

    /// Bytes of one chunk buffer (C shards).
    pub fn chunk_bytes(&self) -> usize {
        self.chunk * self.len64 * 64
    }

    /// Adds one chunk: `buf` holds C shards, of which the first `count` are data (the rest
    /// are zeroed here); `first` is the segment position of its first shard (a multiple of
    /// C). `buf` is transformed in place (its contents are garbage afterwards).
    pub fn add_chunk(&mut self, buf: &mut [[u8; 64]], count: usize, first: usize) {
        debug_assert_eq!(buf.len(), self.chunk * self.len64);
        debug_assert!(count >= 1 && count <= self.chunk && first.is_multiple_of(self.chunk));
        buf[count * self.len64..].fill([0; 64]);
        let mut shards = ShardsRefMut::new(self.chunk, self.len64, buf);
        self.engine
            .ifft(&mut shards, 0, self.chunk, count, first + self.chunk);
        if self.started {
            utils::xor(&mut self.acc, buf);
        } else {
            self.acc.copy_from_slice(buf);
            self.started = true;
        }
    }

    /// Ends the segment: the first `m` recovery shards (m ≤ C), `m × S` bytes. The next
    /// [`add_chunk`](Self::add_chunk) starts a new segment.
    pub fn finish(&mut self, m: usize) -> &[u8] {
        debug_assert!(self.started && m >= 1 && m <= self.chunk);
        let mut shards = ShardsRefMut::new(self.chunk, self.len64, &mut self.acc);
        self.engine.fft(&mut shards, 0, self.chunk, m, 0);
        self.started = false;
        self.acc[..m * self.len64].as_flattened()
    }
}

/// Rebuilds the erased data shards of one segment in place.
///
/// `data` holds the segment's k data shards (k × S bytes); `erased[i]` marks the shards to
/// rebuild; `recovery` gives intact recovery shards as (index j < m_s, bytes), at least as
/// many as erased shards; `full_recovery` is ⌈K·p/100⌉ (it fixes the chunk C). Decodes in
/// column slices (see [`DECODE_WORKING_SET`]). Returns the number of shards rebuilt.
pub fn rebuild(
    shard_size: usize,
    full_recovery: usize,
    data: &mut [u8],
    erased: &[bool],
    recovery: &[(usize, &[u8])],
) -> Result<usize, RecoveryError> {
    let k = erased.len();
    let lost = erased.iter().filter(|&&e| e).count();
    if lost == 0 {
        return Ok(0);
    }
    if recovery.len() < lost {
        return Err(RecoveryError::Code(
            reed_solomon_simd::Error::NotEnoughShards {
                original_count: k,
                original_received_count: k - lost,
                recovery_received_count: recovery.len(),
            },
        ));
    }
    let work = (full_recovery.next_power_of_two() + k).next_power_of_two();
    let w = slice_blocks(shard_size / 64, work, DECODE_WORKING_SET) * 64;
    let mut dec: Option<HighRateDecoder<DefaultEngine>> = None;
    for q in 0..shard_size / w {
        let col = q * w..(q + 1) * w;
        let d = match &mut dec {
            Some(d) => {
                d.reset(k, full_recovery, w)?;
                d
            }
            None => {
                // The decoder allocates its work area (`work` shards of `w` bytes) inside the
                // library, where a refusal would abort: ask for as much first, so that a
                // limit it would hit is an error (freed at once; the library's own
                // allocation then reuses the room).
                let mut probe: Vec<u8> = Vec::new();
                crate::memory::reserve_exact(
                    &mut probe,
                    work * w,
                    "the Reed-Solomon decoder's work area",
                )
                .map_err(|source| RecoveryError::repair_out_of_memory(source, k * shard_size))?;
                drop(probe);
                dec.insert(HighRateDecoder::new(
                    k,
                    full_recovery,
                    w,
                    engine().map_err(|e| RecoveryError::repair_out_of_memory(e, k * shard_size))?,
                    None,
                )?)
            }
        };
        for (i, shard) in data.chunks_exact(shard_size).enumerate() {
            if !erased[i] {
                d.add_original_shard(i, &shard[col.clone()])?;
            }
        }
        for (j, shard) in recovery.iter().take(lost) {
            d.add_recovery_shard(*j, &shard[col.clone()])?;
        }
        let result = d.decode()?;
        for (i, shard) in data.chunks_exact_mut(shard_size).enumerate() {
            if erased[i] {
                let restored = result.restored_original(i).ok_or(RecoveryError::Code(
                    reed_solomon_simd::Error::NotEnoughShards {
                        original_count: k,
                        original_received_count: k - lost,
                        recovery_received_count: recovery.len(),
                    },
                ))?;
                shard[col.clone()].copy_from_slice(restored);
            }
        }
    }
    Ok(lost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reed_solomon_simd::rate::{HighRateEncoder, RateEncoder};

    fn pseudo(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// Incremental encoding of `k` shards with chunk pow2(`full`), first `m` outputs.
    fn incremental(data: &[u8], s: usize, k: usize, full: usize, m: usize) -> Vec<u8> {
        let c = full.next_power_of_two();
        let mut enc = ChunkEncoder::new(s, c).unwrap();
        let mut first = 0;
        while first < k {
            let count = c.min(k - first);
            let mut buf = vec![[0xAAu8; 64]; c * s / 64];
            // Shards past `count` are garbage on purpose: they must be ignored.
            buf.as_flattened_mut()[..count * s]
                .copy_from_slice(&data[first * s..(first + count) * s]);
            enc.add_chunk(&mut buf, count, first);
            first += c;
        }
        enc.finish(m).to_vec()
    }

    #[test]
    fn incremental_encoding_equals_the_librarys_high_rate_encoder() {
        for &(k, full, s) in &[
            (1, 1, 64),
            (2, 1, 64),
            (7, 3, 128),
            (64, 4, 64),
            (100, 5, 192),
            (513, 26, 64),
            (1024, 52, 64),
            (1000, 333, 64),
            (300, 200, 4096),
        ] {
            let data = pseudo(k * s, k as u64);
            let mut enc =
                HighRateEncoder::<DefaultEngine>::new(k, full, s, DefaultEngine::new(), None)
                    .unwrap();
            for shard in data.chunks_exact(s) {
                enc.add_original_shard(shard).unwrap();
            }
            let expected: Vec<u8> = enc
                .encode()
                .unwrap()
                .recovery_iter()
                .flatten()
                .copied()
                .collect();
            assert_eq!(
                incremental(&data, s, k, full, full),
                expected,
                "k={k} full={full} s={s}"
            );
        }
    }

    /// The code as docs/FORMAT.md §15 defines it, checked with field arithmetic written
    /// here for the test alone (carry-less multiplication mod x^16+x^5+x^3+x^2+1): for every
    /// 16-bit position, the C parity symbols r_j (all of them, stored or not) and the data
    /// symbols d_i satisfy Σ_j φ(r_j)·ω_j^e + Σ_i φ(d_i)·ω_{C+i}^e = 0 for e = 0..C, where
    /// φ maps a 16-bit value to the field through the Cantor basis and ω_p = φ(p).
    #[test]
    fn recovery_shards_satisfy_the_specified_parity_checks() {
        const BASIS: [u32; 16] = [
            0x0001, 0xACCA, 0x3C0E, 0x163E, 0xC582, 0xED2E, 0x914C, 0x4012, 0x6C98, 0x10D8, 0x6A72,
            0xB900, 0xFDB8, 0xFB34, 0xFF38, 0x991E,
        ];
        fn mul(mut a: u32, mut b: u32) -> u32 {
            let mut r = 0;
            while b != 0 {
                if b & 1 != 0 {
                    r ^= a;
                }
                b >>= 1;
                a <<= 1;
                if a & 0x1_0000 != 0 {
                    a ^= 0x1_002D;
                }
            }
            r
        }
        fn phi(v: u16) -> u32 {
            (0..16)
                .filter(|b| v >> b & 1 == 1)
                .fold(0, |acc, b| acc ^ BASIS[b])
        }
        // Symbol e of a shard: low byte at 64·(e/32) + e%32, high byte 32 further.
        fn sym(shard: &[u8], e: usize) -> u16 {
            let (b, i) = (e / 32, e % 32);
            u16::from(shard[64 * b + i]) | u16::from(shard[64 * b + 32 + i]) << 8
        }
        assert_eq!(
            reed_solomon_simd::engine::CANTOR_BASIS.map(u32::from),
            BASIS
        );
        assert_eq!(reed_solomon_simd::engine::GF_POLYNOMIAL, 0x1_002D);
        for &(k, full) in &[(1, 1), (3, 2), (5, 3), (17, 4), (40, 5), (100, 13)] {
            let s = 128;
            let c = usize::next_power_of_two(full);
            let data = pseudo(k * s, 40 + k as u64);
            let rec = incremental(&data, s, k, full, c);
            for e in 0..s / 2 {
                for pow in 0..c as u32 {
                    let mut acc = 0;
                    for p in 0..c + k {
                        let v = if p < c {
                            sym(&rec[p * s..], e)
                        } else {
                            sym(&data[(p - c) * s..], e)
                        };
                        let w = phi(p as u16);
                        let wp = (0..pow).fold(1, |x, _| mul(x, w));
                        acc ^= mul(phi(v), wp);
                    }
                    assert_eq!(acc, 0, "k={k} C={c} position {e} equation {pow}");
                }
            }
        }
    }

    #[test]
    fn a_short_segment_stores_a_prefix_of_the_full_chunks_parity_and_decodes() {
        // Full segments have 40 recovery shards (C = 64); a short one of 30 shards keeps 2.
        let (s, k, full, m) = (64, 30, 40, 2);
        let data = pseudo(k * s, 9);
        let rec = incremental(&data, s, k, full, m);
        let mut damaged = data.clone();
        damaged[3 * s..4 * s].fill(0);
        damaged[29 * s..30 * s].fill(0xFF);
        let mut erased = vec![false; k];
        erased[3] = true;
        erased[29] = true;
        let shards = [(0, &rec[..s]), (1, &rec[s..2 * s])];
        assert_eq!(rebuild(s, full, &mut damaged, &erased, &shards).unwrap(), 2);
        assert_eq!(damaged, data);
    }

    #[test]
    fn decoding_in_column_slices_restores_every_byte() {
        // C = 256, k = 2000, S = 4096: work area 4096 × 4 KiB = 16 MiB → two 2 KiB slices.
        let (s, k, full) = (4096, 2000, 200);
        let data = pseudo(k * s, 11);
        let rec = incremental(&data, s, k, full, full);
        let mut d = data.clone();
        let mut erased = vec![false; k];
        for i in (0..k).step_by(11).take(190) {
            erased[i] = true;
            d[i * s..(i + 1) * s].fill(0);
        }
        let shards: Vec<(usize, &[u8])> = rec.chunks_exact(s).enumerate().skip(5).collect();
        assert_eq!(rebuild(s, full, &mut d, &erased, &shards).unwrap(), 182);
        assert!(d == data);
    }

    #[test]
    fn slices_divide_the_shard_and_fit_the_budget() {
        assert_eq!(slice_blocks(64, 2048, 512 << 10), 4);
        assert_eq!(slice_blocks(64, 16, 512 << 10), 64);
        assert_eq!(slice_blocks(3, 100_000, 512 << 10), 1);
        assert_eq!(slice_blocks(6, 2000, 512 << 10), 3);
    }

    #[test]
    fn rebuild_with_too_few_recovery_shards_is_an_error() {
        let (s, k, full) = (64, 10, 2);
        let data = pseudo(k * s, 3);
        let rec = incremental(&data, s, k, full, full);
        let mut d = data.clone();
        let erased: Vec<bool> = (0..k).map(|i| i < 3).collect();
        let shards = [(0, &rec[..s]), (1, &rec[s..])];
        assert!(rebuild(s, full, &mut d, &erased, &shards).is_err());
    }
}
