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
//! - **Only the huge pages its bytes fill.** The mapping is rounded up to whole huge pages,
//!   but only the whole huge pages of the length asked for are advised; the rest of the last
//!   one is advised against (`MADV_NOHUGEPAGE`, which also keeps `enabled=always` and
//!   khugepaged off it) and faults 4 KiB at a time. Advice on all of it made a frame of
//!   2 MiB + 52 KiB (`-b 2100K`) fault in 4 MiB: the base cache, held to its budget by the
//!   frames' lengths, then held up to twice its budget (`c --base` of a 393 MiB base made
//!   with `-b 2100K`: 540 MB resident, against 288 MB with `Vec`s). A buffer asked for more
//!   of its capacity later advises the huge pages it then fills.

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
    /// Bytes from the mapping's start advised for huge pages (whole huge pages; 0 for a `Vec`).
    huge: usize,
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
            .field("huge", &self.huge)
            .finish()
    }
}

impl HugeBuf {
    /// An empty buffer (no memory yet).
    pub fn new() -> Self {
        HugeBuf {
            storage: Storage::Heap(Vec::new()),
            len: 0,
            huge: 0,
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
    /// [`HUGE_PAGE`] or more is mapped (rounded up to whole huge pages), and the whole huge
    /// pages of the length asked for are advised for huge pages (module doc); below that, or
    /// when mapping fails, it is an ordinary `Vec`.
    pub fn reserve(&mut self, additional: usize) {
        let need = self.len.saturating_add(additional);
        if need <= self.capacity() {
            self.advise_huge(need);
            return;
        }
        if need >= HUGE_PAGE
            && let Some(cap) = need.checked_next_multiple_of(HUGE_PAGE)
            && let Ok(mut map) = MmapOptions::new().len(cap).map_anon()
        {
            let whole = need / HUGE_PAGE * HUGE_PAGE;
            #[cfg(target_os = "linux")]
            if whole < cap {
                let _ = map.advise_range(Advice::NoHugePage, whole, cap - whole);
            }
            map[..self.len].copy_from_slice(&self[..]);
            self.storage = Storage::Map(map);
            self.huge = 0;
            self.advise_huge(need);
            return;
        }
        if let Storage::Map(m) = &self.storage {
            let mut v = Vec::with_capacity(need);
            v.extend_from_slice(&m[..self.len]);
            self.storage = Storage::Heap(v);
            self.huge = 0;
        }
        if let Storage::Heap(v) = &mut self.storage {
            v.reserve(additional);
        }
    }

    /// [`HugeBuf::reserve`], or [`crate::memory::OutOfMemory`] for `what` when the memory
    /// cannot be had (neither mapped nor allocated), the buffer then as it was.
    pub fn try_reserve(
        &mut self,
        additional: usize,
        what: &'static str,
    ) -> Result<(), crate::memory::OutOfMemory> {
        let need = self.len.saturating_add(additional);
        if need > self.capacity() && need >= HUGE_PAGE {
            // A mapping refused falls back to the heap in `reserve`: check the heap first.
            let mut probe: Vec<u8> = Vec::new();
            if MmapOptions::new().len(need).map_anon().is_err() {
                crate::memory::reserve_exact(&mut probe, need, what)?;
            }
        } else if let Storage::Heap(v) = &mut self.storage {
            crate::memory::reserve(v, need.saturating_sub(v.len()), what)?;
        }
        self.reserve(additional);
        Ok(())
    }

    /// Advises the whole huge pages of a mapped buffer's first `need` bytes (at most its
    /// capacity) for huge pages, those not advised yet: a system call only when `need` covers
    /// a huge page more than before.
    fn advise_huge(&mut self, need: usize) {
        let Storage::Map(m) = &self.storage else {
            return;
        };
        let whole = need.min(m.len()) / HUGE_PAGE * HUGE_PAGE;
        if whole > self.huge {
            #[cfg(target_os = "linux")]
            let _ = m.advise_range(Advice::HugePage, self.huge, whole - self.huge);
            self.huge = whole;
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

    /// Of the mapping holding address `at` in `/proc/self/smaps`: its range, its `VmFlags`
    /// and its `Rss`, bytes.
    #[cfg(target_os = "linux")]
    fn vma_at(at: usize) -> (usize, usize, Vec<String>, usize) {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut found = None;
        let (mut flags, mut rss) = (None, None);
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                if found.is_some() {
                    break;
                }
                if (lo..hi).contains(&at) {
                    found = Some((lo, hi));
                }
            } else if found.is_some() {
                if let Some(f) = line.strip_prefix("VmFlags:") {
                    flags = Some(f.split_whitespace().map(str::to_string).collect());
                } else if let Some(kb) = line.strip_prefix("Rss:") {
                    let kb = kb.trim().trim_end_matches("kB").trim();
                    rss = Some(kb.parse::<usize>().unwrap() * 1024);
                }
            }
        }
        let (lo, hi) = found.expect("the address is in /proc/self/smaps");
        (lo, hi, flags.expect("VmFlags"), rss.expect("Rss"))
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_mapped_buffer_is_advised_for_huge_pages() {
        // /proc/self/smaps flags an advised range "hg" in its VmFlags line.
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
        let mut b = HugeBuf::new();
        b.reserve(4 * HUGE_PAGE);
        let (_, _, flags, _) = vma_at(b.as_ptr() as usize);
        // Without THP in the kernel the advice is refused (and the file is missing).
        if thp.is_ok() {
            assert!(
                flags.iter().any(|f| f == "hg"),
                "VmFlags of the buffer's mapping: {flags:?}"
            );
        }
    }

    /// Regression: a buffer of 2 MiB and a little more was mapped as 4 MiB all advised for
    /// huge pages, so writing its last bytes faulted in a whole second huge page, and the base
    /// cache (held to its budget by the frames' lengths) held up to twice its budget with
    /// frames of such a size (`-b 2100K`: 540 MB resident for a 256 MiB budget).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_part_of_a_huge_page_a_buffer_does_not_fill_is_not_advised_for_huge_pages() {
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
        let mut b = HugeBuf::new();
        let n = HUGE_PAGE + 4096;
        b.filled(n).fill(7);
        assert!(b.is_mapped());
        assert_eq!(b.capacity(), 2 * HUGE_PAGE);
        let at = b.as_ptr() as usize;
        let (lo, hi, flags, rss) = vma_at(at + HUGE_PAGE);
        if thp.is_ok() {
            assert!(
                !flags.iter().any(|f| f == "hg") && flags.iter().any(|f| f == "nh"),
                "VmFlags of the buffer's last huge page: {flags:?}"
            );
            let (_, _, first, _) = vma_at(at);
            assert!(
                first.iter().any(|f| f == "hg"),
                "VmFlags of the buffer's first huge page: {first:?}"
            );
        }
        // Its last 2 MiB hold one written page, not a huge page of them (when that range is
        // a mapping of its own, as it is unless the kernel merged it with a neighbour).
        if (lo, hi) == (at + HUGE_PAGE, at + 2 * HUGE_PAGE) {
            assert_eq!(rss, 4096, "resident bytes of the buffer's last 2 MiB");
        }
        assert!(b.iter().all(|&x| x == 7));
        // Asked for all of its capacity, it advises the rest too.
        b.filled(2 * HUGE_PAGE).fill(8);
        if thp.is_ok() {
            let (_, _, flags, _) = vma_at(at + HUGE_PAGE);
            assert!(
                flags.iter().any(|f| f == "hg"),
                "VmFlags of the buffer's last huge page, all of it asked for: {flags:?}"
            );
        }
        assert!(b.iter().all(|&x| x == 8));
    }
}
