//! The recovery section checked as a stream (an archive read from a pipe): every part after
//! the first descriptor packet, in file order, read once — what `test` of the file checks
//! (`HealingSource::check_section`: recovery shards against their checksums, both copies
//! of every packet, the zero padding, the trailer), without seeking back.
//!
//! Design (why it is so):
//! - **Order.** The section's parts come in the order copy A, recovery shards, padding,
//!   copy B, trailer (docs/FORMAT.md §15.1). Copy A carries the checksum table before the
//!   shards it covers, so a shard is checked as it passes against the sum copy A gave;
//!   where copy A's packet is damaged, the shard's sum is kept until copy B's packet for it
//!   passes (and counted damaged, "checksum lost", when that one is damaged too — as the
//!   file's check counts it).
//! - **Memory** grows with the input actually read, never with what a packet claims: 9
//!   bytes per recovery shard whose checksum a copy-A packet read so far carried (0.2% of
//!   the recovery shards at the default 4 KiB), plus 16 per shard waiting for copy B, and
//!   no more than [`MAX_SUMS`] shards' worth (about 200 MiB at most, every copy-A packet
//!   damaged; 72 MiB when they are intact: a section of 32 GiB of
//!   recovery shards at 4 KiB, an archive of 640 GB at 5%). Shards past that many are not
//!   checked from a stream (`krypta repair --check FILE` checks them all); every packet,
//!   the padding and the trailer still are. The file's check re-reads the table instead
//!   (`TableCache`), which a pipe cannot.
//! - The data shards (the archive itself) are not hashed here: the reader verified every
//!   frame of the archive as it read it; a data shard's damage is the archive's failure.

use std::io;

use super::layout::{self, Layout, PACKET_HEAD, PACKET_LEN, TRAILER_LEN};
use super::locate::packet_valid;

/// Bytes read at a time while walking the recovery shards.
const CHUNK: usize = 1 << 20;

/// Recovery shards whose checksums a streamed check keeps at most (module doc, "Memory").
pub const MAX_SUMS: u64 = 8 << 20;

/// What [`check_stream`] found after the first packet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamCheck {
    /// Recovery shards that fail their checksum, or whose checksum both packet copies lost.
    pub damaged_recovery_shards: u64,
    /// Descriptor packets of either copy that do not check out.
    pub damaged_packets: u64,
    /// The zero padding after the recovery shards holds other bytes.
    pub padding_damaged: bool,
    /// The trailer is damaged.
    pub trailer_damaged: bool,
    /// The input ended before the section did: the file offset where it ended (nothing
    /// after that offset was judged).
    pub cut_at: Option<u64>,
}

impl StreamCheck {
    /// What is wrong, as items of a list (empty when nothing is).
    pub fn problems(&self) -> Vec<String> {
        let mut v = damage_items(self.damaged_recovery_shards, self.damaged_packets);
        if self.padding_damaged {
            v.push("the zero padding after its recovery shards does not check out".into());
        }
        if self.trailer_damaged {
            v.push("the trailer at its end does not check out".into());
        }
        v
    }
}

/// Damaged recovery shards and descriptor packets as items of a list, as `test` says them
/// of a file (`crate::repaired`) and of a stream ([`StreamCheck::problems`]).
pub fn damage_items(shards: u64, packets: u64) -> Vec<String> {
    let mut v = Vec::new();
    if shards > 0 {
        v.push(format!(
            "{} damaged or unverifiable (checksum lost)",
            crate::counted(shards, "recovery shard", "recovery shards")
        ));
    }
    if packets > 0 {
        v.push(format!(
            "{} damaged",
            crate::counted(packets, "descriptor packet", "descriptor packets")
        ));
    }
    v
}

/// The recovery checksums the copy-A packets read so far carried, by recovery shard number
/// (the shards' order in the file), and the shards still waiting for copy B.
struct Sums {
    layout: Layout,
    from_a: Vec<u64>,
    /// Whether `from_a[r]` is known (its copy-A packet checked out).
    known: Vec<bool>,
    /// Shards checked at most ([`MAX_SUMS`]).
    cap: u64,
    /// (recovery shard, its xxh3) of shards whose copy-A checksum was not known.
    pending: Vec<(u64, u64)>,
}

impl Sums {
    /// Calls `f(r, checksum)` for each recovery-shard entry packet `index` carries, in
    /// order (`packet`: its bytes, or None to visit the entries with no checksum).
    fn entries(
        &self,
        index: u64,
        packet: Option<&[u8; PACKET_LEN]>,
        f: &mut dyn FnMut(u64, Option<u64>),
    ) {
        let (start, end) = self.layout.packet_range(index);
        let k = u64::from(self.layout.params.shards_per_segment);
        let per_segment = k + self.layout.full_recovery;
        let mut e = start / 8;
        while e < end / 8 {
            let g = e / per_segment;
            let w = e % per_segment;
            if g >= self.layout.segments {
                return;
            }
            let seg = self.layout.segment(g);
            if w < seg.data_shards {
                // Skip this segment's data-shard entries at once.
                e += seg.data_shards - w;
                continue;
            }
            let j = w - seg.data_shards;
            if j >= seg.recovery_shards {
                e += 1;
                continue;
            }
            let sum = packet.map(|p| {
                let rel = (e * 8 - start) as usize;
                u64::from_le_bytes(
                    p[PACKET_HEAD + rel..PACKET_HEAD + rel + 8]
                        .try_into()
                        .expect("8 bytes"),
                )
            });
            f(g * self.layout.full_recovery + j, sum);
            e += 1;
        }
    }

    /// Copy A's packet `index`: its entries recorded (unknown when it is damaged).
    fn copy_a(&mut self, index: u64, packet: Option<&[u8; PACKET_LEN]>) {
        let mut got = Vec::new();
        self.entries(index, packet, &mut |r, s| got.push((r, s)));
        for (r, s) in got {
            if r >= self.cap {
                return;
            }
            debug_assert_eq!(r, self.from_a.len() as u64, "table order is shard order");
            self.from_a.push(s.unwrap_or(0));
            self.known.push(s.is_some());
        }
    }
}

/// Checks the recovery section of `layout` from its second packet on, reading `input`
/// (positioned just after copy A's packet 0, `packet_a0`, which the caller found intact:
/// [`layout::stream_packet_a0`]) to the section's end and not beyond (module doc).
pub fn check_stream(
    layout: &Layout,
    packet_a0: &[u8; PACKET_LEN],
    input: &mut dyn FnMut(&mut [u8]) -> io::Result<usize>,
) -> io::Result<StreamCheck> {
    check_capped(layout, packet_a0, input, MAX_SUMS)
}

/// [`check_stream`], checking the first `cap` recovery shards against their checksums.
fn check_capped(
    layout: &Layout,
    packet_a0: &[u8; PACKET_LEN],
    input: &mut dyn FnMut(&mut [u8]) -> io::Result<usize>,
    cap: u64,
) -> io::Result<StreamCheck> {
    let mut check = StreamCheck::default();
    let mut sums = Sums {
        layout: *layout,
        from_a: Vec::new(),
        known: Vec::new(),
        cap,
        pending: Vec::new(),
    };
    let mut pos = layout.copy_a + PACKET_LEN as u64;
    // Reads `buf.len()` bytes at `pos`; when the input ends first, sets `cut_at` and returns
    // how many it did read (the shards among them are still checked: helper-28).
    let mut read = |buf: &mut [u8], pos: &mut u64, check: &mut StreamCheck| -> io::Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            let n = input(&mut buf[got..])?;
            if n == 0 {
                check.cut_at = Some(*pos + got as u64);
                break;
            }
            got += n;
        }
        *pos += got as u64;
        Ok(got)
    };
    sums.copy_a(0, Some(packet_a0));
    let mut pk = [0u8; PACKET_LEN];
    for i in 1..layout.packets {
        if read(&mut pk, &mut pos, &mut check)? < PACKET_LEN {
            return Ok(check);
        }
        let ok = packet_valid(layout, 0, i, &pk);
        check.damaged_packets += u64::from(!ok);
        sums.copy_a(i, ok.then_some(&pk));
    }
    debug_assert_eq!(pos, layout.recovery_start);
    let s = layout.shard_size();
    let mut buf = vec![0u8; (CHUNK / s).max(1) * s];
    let mut r = 0;
    while r < layout.recovery_shards {
        let n = (layout.recovery_shards - r).min((buf.len() / s) as u64) as usize;
        let b = &mut buf[..n * s];
        let got = read(b, &mut pos, &mut check)?;
        for shard in b[..got].chunks_exact(s) {
            let sum = layout::xxh3(shard);
            let i = r as usize;
            if r >= cap {
                // Not checked from a stream (module doc, "Memory").
            } else if sums.known.get(i) == Some(&true) {
                check.damaged_recovery_shards += u64::from(sums.from_a[i] != sum);
            } else {
                sums.pending.push((r, sum));
            }
            r += 1;
        }
        if got < n * s {
            return Ok(check);
        }
    }
    let mut padding = vec![0u8; (layout.copy_b - pos) as usize];
    if read(&mut padding, &mut pos, &mut check)? < padding.len() {
        return Ok(check);
    }
    check.padding_damaged = padding.iter().any(|&x| x != 0);
    let mut pending = std::mem::take(&mut sums.pending).into_iter().peekable();
    for i in 0..layout.packets {
        if read(&mut pk, &mut pos, &mut check)? < PACKET_LEN {
            return Ok(check);
        }
        let ok = packet_valid(layout, 1, i, &pk);
        check.damaged_packets += u64::from(!ok);
        if pending.peek().is_none() {
            continue;
        }
        // The shards this packet covers that waited for it: checked now, or lost.
        sums.entries(i, ok.then_some(&pk), &mut |r, want| {
            while let Some(&(p, sum)) = pending.peek() {
                if p > r {
                    break;
                }
                if p == r {
                    check.damaged_recovery_shards += u64::from(want != Some(sum));
                }
                pending.next();
            }
        });
    }
    // Shards no packet of copy B covered (cannot happen for a table in order; counted lost).
    check.damaged_recovery_shards += pending.count() as u64;
    debug_assert_eq!(pos, layout.trailer);
    let mut t = [0u8; TRAILER_LEN];
    if read(&mut t, &mut pos, &mut check)? < TRAILER_LEN {
        return Ok(check);
    }
    check.trailer_damaged = !layout::parse_trailer(&t).is_ok_and(|l| l == *layout);
    Ok(check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::{RecoveryOptions, RecoveryWriter};

    /// A protected part of `len` bytes and its section, written by the recovery writer.
    fn archive(len: usize, percent: u8, shard: u32, per_segment: u32) -> (Vec<u8>, Layout) {
        use std::io::Write;
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + i / 300) as u8).collect();
        let mut opts = RecoveryOptions::new(percent);
        opts.shard_size = shard;
        opts.shards_per_segment = per_segment;
        let mut w = RecoveryWriter::new(Vec::new(), &opts).unwrap();
        w.write_all(&data).unwrap();
        let (all, summary) = w.finish().unwrap();
        let l = summary.layout;
        assert_eq!(l.file_len, all.len() as u64);
        (all, l)
    }

    /// [`check_stream`] of `bytes` (a whole file: protected part and section), fed in
    /// pieces of `piece` bytes.
    fn run(bytes: &[u8], l: &Layout, piece: usize) -> StreamCheck {
        run_capped(bytes, l, piece, MAX_SUMS)
    }

    fn run_capped(bytes: &[u8], l: &Layout, piece: usize, cap: u64) -> StreamCheck {
        let a0: [u8; PACKET_LEN] = bytes[l.copy_a as usize..][..PACKET_LEN].try_into().unwrap();
        let mut at = l.copy_a as usize + PACKET_LEN;
        check_capped(
            l,
            &a0,
            &mut |buf: &mut [u8]| {
                let n = buf.len().min(piece).min(bytes.len() - at);
                buf[..n].copy_from_slice(&bytes[at..at + n]);
                at += n;
                Ok(n)
            },
            cap,
        )
        .unwrap()
    }

    #[test]
    fn an_intact_section_checks_out_and_every_damaged_part_is_counted() {
        // Several segments, a short last one, more than one packet per copy (small shards:
        // 64 B, so the table outgrows a packet), and padding after the shards (S = 192 is
        // not a multiple of 4096).
        for (len, pct, s, k) in [
            (3_000_000, 10, 192, 1024),
            (700_000, 50, 64, 1024),
            (3_000_000, 3, 4096, 32),
        ] {
            let (a, l) = archive(len, pct, s, k);
            assert!(l.segments > 1 && l.packets > 1, "{l:?}");
            assert_eq!(run(&a, &l, 1 << 20), StreamCheck::default(), "{l:?}");
            assert_eq!(run(&a, &l, 777), StreamCheck::default(), "{l:?}");
            let flip = |at: u64| {
                let mut b = a.clone();
                b[at as usize] ^= 1;
                b
            };
            let s = u64::from(l.params.shard_size);
            // A recovery shard in the last segment, and the first.
            let last = l.recovery_start + (l.recovery_shards - 1) * s + 3;
            assert_eq!(run(&flip(last), &l, 1 << 20).damaged_recovery_shards, 1);
            assert_eq!(
                run(&flip(l.recovery_start), &l, 999).damaged_recovery_shards,
                1
            );
            // A packet of copy A: the shards it covers are checked against copy B.
            let c = run(&flip(l.packet_offset(0, 1) + 100), &l, 1 << 20);
            assert_eq!(
                (c.damaged_packets, c.damaged_recovery_shards),
                (1, 0),
                "{c:?}"
            );
            // ... and a shard it covers, damaged too, is still caught.
            let mut b = flip(l.packet_offset(0, l.packets - 1) + 100);
            b[(l.recovery_start + l.recovery_shards * s - 1) as usize] ^= 4;
            let c = run(&b, &l, 1 << 20);
            assert_eq!(
                (c.damaged_packets, c.damaged_recovery_shards),
                (1, 1),
                "{c:?}"
            );
            // Both copies of a packet: its shards' checksums are lost.
            let mut b = flip(l.packet_offset(0, l.packets - 1) + 100);
            b[(l.packet_offset(1, l.packets - 1) + 100) as usize] ^= 1;
            let c = run(&b, &l, 1 << 20);
            assert_eq!(c.damaged_packets, 2);
            assert!(c.damaged_recovery_shards > 0, "{c:?}");
            // Copy B alone, the trailer.
            assert_eq!(run(&flip(l.copy_b + 5), &l, 1 << 20).damaged_packets, 1);
            assert!(run(&flip(l.trailer + 10), &l, 1 << 20).trailer_damaged);
            // Padding after the shards (only where there is some).
            let rec_end = l.recovery_start + l.recovery_shards * s;
            if rec_end < l.copy_b {
                assert!(run(&flip(rec_end), &l, 1 << 20).padding_damaged);
            }
            // Past the cap, shards are not checked; the packets still are.
            let mut b = flip(last);
            b[l.recovery_start as usize] ^= 1;
            b[(l.copy_b + 5) as usize] ^= 1;
            let c = run_capped(&b, &l, 1 << 20, l.recovery_shards - 1);
            assert_eq!(
                (c.damaged_recovery_shards, c.damaged_packets),
                (1, 1),
                "{c:?}"
            );
            // Damage before a cut inside a read of shards is still counted (helper-28: the
            // whole shards of the last, short read were dropped).
            let cut = l.recovery_start + 3 * s + 7;
            let c = run(&flip(l.recovery_start + 1)[..cut as usize], &l, 1 << 20);
            assert_eq!(
                (c.cut_at, c.damaged_recovery_shards),
                (Some(cut), 1),
                "{l:?}"
            );
            // Cut anywhere: the offset where the input ended.
            for cut in [
                l.copy_a + PACKET_LEN as u64 + 1,
                l.recovery_start + 5,
                l.trailer + 79,
            ] {
                let c = run(&a[..cut as usize], &l, 1 << 20);
                assert_eq!(c.cut_at, Some(cut), "{l:?}");
            }
        }
    }
}
