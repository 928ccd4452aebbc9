//! [`HugeBuf`]: a byte buffer in memory advised for transparent huge pages, for the buffers
//! of a delta read that are filled afresh and kept (a base's decoded frames, a worker's
//! base region).
//!
//! Why: on Linux each fresh 4 KiB page costs a fault, in which the kernel zeroes it and
//! charges it to the cgroup; in the 2-core VM of BENCHMARKS.md a fault cost about 2.8 µs
//! (64 MiB touched page by page: 46 ms), against about 0.4 µs per 4 KiB for the same memory
//! advised `MADV_HUGEPAGE` (6.5 ms, faulted 2 MiB at a time). A delta read keeps every
//! decoded base frame (the base's cache) and assembles each block's region in a buffer of
//! its worker's, so `x -j 1 --base` of the libc6 pair took 8,600 faults against a
//! whole-file extract's 3,800, and its system time was 48 ms against 26 ms.
//!
//! Choices and their reasons:
//! - **A mapping of our own, not advice on a `Vec`.** The allocator places a large `Vec`
//!   where it likes: glibc maps it at a 4 KiB offset of a 2 MiB boundary, or carves it from
//!   a heap, so advice on it won about a third of its pages (6,800 faults left, not 1,000).
//!   A [`memmap2`] anonymous mapping whose length is a multiple of 2 MiB is placed on a
//!   2 MiB boundary by the kernel (Linux 6.7 and later), so all of it can be huge; and its
//!   safe `advise` keeps `madvise` out of krypta's code.
//! - **Faulted on use, not populated up front.** Unlike the Argon2 matrix, a frame or
//!   region is written front to back right after it is mapped, and a region may be shorter
//!   than the buffer's capacity: populating would back bytes nobody writes.
//! - **A hint, never an error.** A kernel without THP, or with `enabled=never`, refuses or
//!   ignores the advice: the buffer then faults 4 KiB at a time, as a `Vec` did. If the
//!   mapping itself fails, the buffer is an ordinary `Vec` (the allocator reports memory
//!   exhaustion the usual way). With `defrag=madvise` the kernel may compact memory to find a
//!   free 2 MiB range, which shows as system time under memory pressure (the trade
//!   `crypto::argon2_memory` makes for its matrix).
//! - **Memory.** The capacity is rounded up to whole huge pages, and a huge page is backed
//!   whole once any byte of it is written: a buffer of n bytes may hold up to n + 2 MiB
//!   (a base's 4 MiB frames exactly 4 MiB; its last, shorter frame at most 2 MiB more).
//! - **Only for 2 MiB and more.** A smaller buffer is an ordinary `Vec`: it cannot hold an
//!   aligned huge page, and a mapping per small buffer would cost a system call each.

use memmap2::{Advice, MmapMut, MmapOptions};

/// One huge page on x86-64 and arm64 (4 KiB base pages): the smallest capacity mapped, and
/// the unit capacities are rounded up to.
pub const HUGE_PAGE: usize = 2 << 20;

/// Where a [`HugeBuf`]'s bytes live.
enum Storage {
    Heap(Vec<u8>),
    Map(MmapMut),
}

/// A growable byte buffer whose capacity, from [`HUGE_PAGE`] up, is an anonymous mapping
/// advised for transparent huge pages (module doc). Dereferences to its `len` bytes.
pub struct HugeBuf {
    storage: Storage,
    len: usize,
}

impl Default for HugeBuf {
    fn default() -> Self {
        HugeBuf::new()
    }
}

impl std::fmt::Debug for HugeBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HugeBuf")
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .field("mapped", &matches!(self.storage, Storage::Map(_)))
            .finish()
    }
}

impl HugeBuf {
    /// An empty buffer (no memory yet).
    pub fn new() -> Self {
        HugeBuf {
            storage: Storage::Heap(Vec::new()),
            len: 0,
        }
    }

    /// Bytes it can hold without growing.
    pub fn capacity(&self) -> usize {
        match &self.storage {
            Storage::Heap(v) => v.capacity(),
            Storage::Map(m) => m.len(),
        }
    }

    /// Empties it, keeping its memory.
    pub fn clear(&mut self) {
        self.len = 0;
        if let Storage::Heap(v) = &mut self.storage {
            v.clear();
        }
    }

    /// Makes room for `additional` more bytes, keeping the bytes it holds. A capacity of
    /// [`HUGE_PAGE`] or more is mapped (rounded up to whole huge pages) and advised for
    /// huge pages; below that, or when mapping fails, it is an ordinary `Vec`.
    pub fn reserve(&mut self, additional: usize) {
        let need = self.len.saturating_add(additional);
        if need <= self.capacity() {
            return;
        }
        if need >= HUGE_PAGE
            && let Some(cap) = need.checked_next_multiple_of(HUGE_PAGE)
            && let Ok(mut map) = MmapOptions::new().len(cap).map_anon()
        {
            #[cfg(target_os = "linux")]
            let _ = map.advise(Advice::HugePage);
            map[..self.len].copy_from_slice(&self[..]);
            self.storage = Storage::Map(map);
            return;
        }
        if let Storage::Map(m) = &self.storage {
            let mut v = Vec::with_capacity(need);
            v.extend_from_slice(&m[..self.len]);
            self.storage = Storage::Heap(v);
        }
        if let Storage::Heap(v) = &mut self.storage {
            v.reserve(additional);
        }
    }

    /// Appends `bytes`.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        match &mut self.storage {
            Storage::Heap(v) => v.extend_from_slice(bytes),
            Storage::Map(m) => m[self.len..self.len + bytes.len()].copy_from_slice(bytes),
        }
        self.len += bytes.len();
    }

    /// Empties it and gives its first `n` bytes to be written (they hold zeros or stale
    /// bytes): its length is then `n`.
    pub fn filled(&mut self, n: usize) -> &mut [u8] {
        self.clear();
        self.reserve(n);
        self.len = n;
        match &mut self.storage {
            Storage::Heap(v) => {
                v.resize(n, 0);
                v
            }
            Storage::Map(m) => &mut m[..n],
        }
    }

    /// Whether its capacity is a huge-page mapping (for tests).
    pub fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Map(_))
    }
}

impl std::ops::Deref for HugeBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.storage {
            Storage::Heap(v) => v,
            Storage::Map(m) => &m[..self.len],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_stays_a_vec_large_is_mapped_and_bytes_are_kept_across_growth() {
        let mut b = HugeBuf::new();
        b.extend_from_slice(b"kept");
        assert!(!b.is_mapped());
        assert_eq!(&b[..], b"kept");
        let big: Vec<u8> = (0..3 * HUGE_PAGE + 5).map(|i| (i % 251) as u8).collect();
        b.extend_from_slice(&big);
        assert!(b.is_mapped());
        assert_eq!(b.len(), 4 + big.len());
        assert_eq!(b.capacity(), 4 * HUGE_PAGE);
        assert_eq!(&b[..4], b"kept");
        assert_eq!(&b[4..], &big[..]);
        // Cleared, it keeps its mapping and holds new bytes from the start.
        b.clear();
        assert_eq!(b.len(), 0);
        b.extend_from_slice(b"new");
        assert!(b.is_mapped());
        assert_eq!(&b[..], b"new");
        assert_eq!(b.capacity(), 4 * HUGE_PAGE);
        // Growing a mapped buffer keeps its bytes.
        b.extend_from_slice(&big);
        b.extend_from_slice(&big);
        assert_eq!(b.len(), 3 + 2 * big.len());
        assert_eq!(&b[..3], b"new");
        assert_eq!(&b[3 + big.len()..], &big[..]);
        assert_eq!(b.capacity() % HUGE_PAGE, 0);
        // `filled` gives exactly n writable bytes, mapped or not.
        let cap = b.capacity();
        b.filled(HUGE_PAGE + 1).fill(9);
        assert_eq!(b.len(), HUGE_PAGE + 1);
        assert!(b.iter().all(|&x| x == 9));
        assert_eq!(b.capacity(), cap);
        let mut small = HugeBuf::new();
        small.filled(10).copy_from_slice(b"0123456789");
        assert!(!small.is_mapped());
        assert_eq!(&small[..], b"0123456789");
        small.filled(3).copy_from_slice(b"abc");
        assert_eq!(&small[..], b"abc");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_mapped_buffer_is_advised_for_huge_pages() {
        // /proc/self/smaps flags an advised range "hg" in its VmFlags line.
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
        let mut b = HugeBuf::new();
        b.reserve(4 * HUGE_PAGE);
        let at = b.as_ptr() as usize;
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let mut flags = None;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&at);
            } else if inside && let Some(f) = line.strip_prefix("VmFlags:") {
                flags = Some(f.to_string());
            }
        }
        let flags = flags.expect("the buffer's mapping is in /proc/self/smaps");
        // Without THP in the kernel the advice is refused (and the file is missing).
        if thp.is_ok() {
            assert!(
                flags.split_whitespace().any(|f| f == "hg"),
                "VmFlags of the buffer's mapping: {flags}"
            );
        }
    }
}
