//! The Argon2id memory matrix: where its m KiB live, how they fault in, and how one matrix
//! serves every KDF run of one key recovery. The only module of krypta with `unsafe` code
//! (one line: the view of the mapping as `argon2::Block`s, argued at the `SAFETY` comment).
//!
//! Why not the `argon2` crate's own allocation: it takes 256 MiB (the default m) from the
//! global allocator, which the kernel backs with 4 KiB pages on first touch, so one run took
//! 65,788 page faults and a third of its CPU time in the kernel (issue 13). Here the matrix
//! is an anonymous private mapping (`memmap2`), advised `MADV_HUGEPAGE` and then
//! `MADV_POPULATE_WRITE` before the first use: on a kernel with transparent huge pages in
//! `madvise` or `always` mode it is faulted in 2 MiB at a time, in one call, before Argon2
//! starts (about 380 faults for the whole process instead of 65,788).
//!
//! Measured on the 2-core development machine (kernel 6.18, THP `enabled=madvise`,
//! `defrag=madvise`, load 4.7–5.3 from other builds), default parameters (256 MiB, t = 2,
//! p = 1), `krypta t --pass-file` of a one-file archive (one KDF run; the rest of the
//! process is about 2 ms), 9 interleaved rounds, medians, `/usr/bin/time`:
//!
//! | matrix | page faults | user s | sys s | user + sys s |
//! |---|---|---|---|---|
//! | the crate's allocation (before) | 65,789 | 0.54 | 0.27 | 0.81 (0.73–0.93) |
//! | mapping, `MAP_POPULATE`, 4 KiB pages | 65,785 | 0.52 | 0.18 | 0.72 (0.62–0.85) |
//! | mapping, `MADV_HUGEPAGE`, faulted on use | 377 | 0.42 | 0.34 | 0.75 (0.50–1.01) |
//! | **mapping, `MADV_HUGEPAGE` + `MADV_POPULATE_WRITE`** | 378 | 0.43 | 0.03 | **0.47** (0.43–0.55) |
//! | `argon2` 20190702 CLI (C reference, Debian), same parameters | 131,158 | 1.34 | 0.47 | 1.81 |
//!
//! The user time left is Argon2's compression function itself (the crate's AVX2 path:
//! 512 MiB of block compressions at about 1.2 GB/s), not memory management; on this loaded
//! machine it does not reach the 0.35 s of the goal, and the parameters (one lane)
//! leave no parallelism to use without changing the output.
//!
//! Choices and their reasons:
//!
//! - **Huge pages, populated up front.** Huge pages remove the per-page cost (65,536 4 KiB
//!   faults for 256 MiB). Faulting the huge pages in one by one during the run measured
//!   much more system time (and more variable) than populating them in one call; pre-faulting
//!   4 KiB pages (`MAP_POPULATE`) saves little, since the kernel still walks every page.
//! - **The advice is a hint.** A kernel without THP, or with `enabled=never`, refuses or
//!   ignores it; the run is then as before (4 KiB faults), never an error. With
//!   `defrag=madvise` the kernel may compact memory to find huge pages when the machine is
//!   short of free 2 MiB ranges: that shows as system time under memory pressure.
//! - **One matrix per key recovery.** A reader may run the KDF several times on one archive
//!   (each password given, and for format 1 up to three spellings of each:
//!   `crypto::password::kdf_inputs`); `crypto::stanza::unwrap_versioned` keeps one
//!   [`Argon2Memory`] for all of them, so only the first maps and faults. It is not kept for
//!   the process's lifetime: it is dropped (unmapped) when the key is found, so an
//!   extraction does not carry 256 MiB of KDF state beside its block buffers. Reuse needs no
//!   clearing for correctness: Argon2 version 0x13 overwrites every block in pass 0 before
//!   any block of that pass reads it (RFC 9106 §3.4), so the output is the same bits
//!   (tested, and `benches/crypto.rs` times a reused matrix).
//! - **Wiping.** The matrix is derived from the password. Unmapping returns its pages to the
//!   kernel, which clears them before any other use, so nothing of it stays readable in this
//!   process after drop; it is also advised `MADV_DONTDUMP`, so a core dump taken during the
//!   KDF does not contain it. (The crate's own allocation was freed without wiping either.)

#![allow(unsafe_code)]

use argon2::Block;
use memmap2::{Advice, MmapMut, MmapOptions};

use super::CryptoError;

// The cast below relies on a `Block` being exactly its 1 KiB of `u64`s (no padding) and on
// a page-aligned address being aligned enough for it.
const _: () = assert!(size_of::<Block>() == Block::SIZE);
const _: () = assert!(align_of::<Block>() <= 4096);

/// A reusable Argon2id memory matrix: grown on demand to the largest m asked of it, its
/// pages mapped fresh (zeroed) once and reused by later runs.
#[derive(Default)]
pub struct Argon2Memory {
    /// The mapping, `None` until the first run; its length is a whole number of blocks.
    map: Option<MmapMut>,
}

impl std::fmt::Debug for Argon2Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the contents: they are derived from a password.
        f.debug_struct("Argon2Memory")
            .field("bytes", &self.map.as_ref().map_or(0, |m| m.len()))
            .finish()
    }
}

impl Argon2Memory {
    /// An empty matrix: nothing is mapped until [`Argon2Memory::blocks`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes mapped now (0 before the first run): `blocks × 1024`.
    pub fn mapped_bytes(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    /// The first `count` blocks of the matrix (1 KiB each), mapping a larger matrix when
    /// this one is smaller. [`CryptoError::Argon2Memory`] when the kernel refuses the
    /// mapping (out of memory or address space).
    pub fn blocks(&mut self, count: usize) -> Result<&mut [Block], CryptoError> {
        let bytes = count
            .checked_mul(Block::SIZE)
            .ok_or(CryptoError::Argon2Memory {
                bytes: usize::MAX,
                source: std::io::ErrorKind::OutOfMemory.into(),
            })?;
        if count == 0 {
            return Ok(&mut []);
        }
        if self.mapped_bytes() < bytes {
            self.map = None; // unmap the smaller one first: never hold both
            self.map = Some(map_matrix(bytes)?);
        }
        let map = self.map.as_mut().expect("mapped above");
        let ptr = map.as_mut_ptr();
        debug_assert_eq!(ptr.align_offset(align_of::<Block>()), 0);
        // SAFETY: `map` is a live, writable, private anonymous mapping of at least
        // `count * 1024` bytes (checked above) starting at a page-aligned address, which is
        // aligned for `Block` (align 64 ≤ 4096, asserted at compile time). A `Block` is
        // exactly 1024 bytes of `u64`s (size asserted at compile time, so no padding), and
        // every bit pattern is a valid `u64`, so the mapped bytes (zeroed by the kernel, or
        // left by an earlier run) are valid `Block`s. The returned slice borrows `self`
        // mutably, so the mapping can be neither dropped, remapped nor aliased while it lives.
        Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast::<Block>(), count) })
    }
}

/// Maps `bytes` of zeroed anonymous memory advised for huge pages and excluded from core
/// dumps. Both pieces of advice are hints: a kernel that refuses one leaves the mapping as
/// it is (4 KiB pages, or dumped), which is still correct.
fn map_matrix(bytes: usize) -> Result<MmapMut, CryptoError> {
    let map = MmapOptions::new()
        .len(bytes)
        .map_anon()
        .map_err(|source| CryptoError::Argon2Memory { bytes, source })?;
    #[cfg(target_os = "linux")]
    {
        // Each may fail with EINVAL (no CONFIG_TRANSPARENT_HUGEPAGE, a kernel before 5.14
        // for MADV_POPULATE_WRITE): the run then faults its pages in as it goes.
        let _ = map.advise(Advice::HugePage);
        let _ = map.advise(Advice::PopulateWrite);
        let _ = map.advise(Advice::DontDump);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_zeroed_on_first_map_and_sized_as_asked() {
        let mut m = Argon2Memory::new();
        assert_eq!(m.mapped_bytes(), 0);
        let b = m.blocks(8192).unwrap();
        assert_eq!(b.len(), 8192);
        assert!(b.iter().all(|blk| blk.as_ref().iter().all(|&w| w == 0)));
        assert_eq!(m.mapped_bytes(), 8192 * 1024);
    }

    #[test]
    fn a_smaller_request_reuses_the_mapping_a_larger_one_grows_it() {
        let mut m = Argon2Memory::new();
        m.blocks(16).unwrap()[3].as_mut()[0] = 0xdead;
        // Same mapping: the earlier write is still there.
        assert_eq!(m.blocks(8).unwrap()[3].as_ref()[0], 0xdead);
        assert_eq!(m.mapped_bytes(), 16 * 1024);
        // A larger request maps afresh (zeroed).
        assert_eq!(m.blocks(32).unwrap()[3].as_ref()[0], 0);
        assert_eq!(m.mapped_bytes(), 32 * 1024);
    }
}
