//! Verification: reads every shard, packet and the trailer once and says, per segment,
//! whether it is intact, damaged but repairable, or damaged beyond the recovery data, and
//! whether the protected bytes hash to the stored BLAKE3. Memory: one 4 MiB block plus one
//! segment's checksums.

use super::error::BeyondRepair;
use super::layout::{Layout, TRAILER_LEN, parse_trailer};
use super::locate::{ByteSource, Located, TableReader, read};
use super::segment::{self, ShardState};

/// At most this many damaged ranges are listed per segment (the counts stay exact).
pub const MAX_RANGES: usize = 1024;

/// A segment's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentState {
    /// Every data shard verified (recovery shards may still be damaged: see the counts).
    Intact,
    /// Damaged, and the surviving shards suffice to rebuild it.
    Repairable,
    /// No shard is known to be damaged, but more checksums are lost (both descriptor copies
    /// damaged there) than recovery shards could stand in for: its bytes cannot be checked
    /// shard by shard. Only the BLAKE3 of all of P can vouch for them, and `repair_to` passes
    /// them through and reports whether that hash matched.
    Unverified,
    /// More shards are lost than it has recovery shards.
    BeyondRepair,
}

/// One segment's findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentReport {
    /// Segment number.
    pub index: u64,
    /// Protected bytes it covers: `start..end`.
    pub start: u64,
    /// End (exclusive).
    pub end: u64,
    /// Data shards k_s.
    pub data_shards: u64,
    /// Recovery shards m_s.
    pub recovery_shards: u64,
    /// Data shards that fail their checksum or cannot be read.
    pub damaged_data: u64,
    /// Data shards whose checksum is lost (both descriptor copies damaged there).
    pub unverifiable_data: u64,
    /// Recovery shards that fail their checksum, cannot be read, or whose checksum is lost.
    pub damaged_recovery: u64,
    /// Protected byte ranges of the damaged data shards, merged, at most [`MAX_RANGES`].
    pub damaged_ranges: Vec<(u64, u64)>,
    /// The verdict.
    pub state: SegmentState,
}

impl SegmentReport {
    /// Shards that must be rebuilt or cannot be used.
    pub fn erased(&self) -> u64 {
        self.damaged_data + self.unverifiable_data + self.damaged_recovery
    }
}

/// Everything verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Where the section is and how it was found.
    pub located: Located,
    /// Per segment, in order.
    pub segments: Vec<SegmentReport>,
    /// Damaged (or missing) packets of copy A and of copy B.
    pub damaged_packets: [u64; 2],
    /// Packets damaged in both copies (their checksums are lost).
    pub lost_packets: u64,
    /// Whether the trailer is intact and ends the source.
    pub trailer_ok: bool,
    /// Whether the zero padding of the section is zero (see [`padding_ok`]).
    pub padding_ok: bool,
    /// Whether the protected bytes as read hash to the stored BLAKE3.
    pub protected_intact: bool,
}

impl VerifyReport {
    /// Protected bytes and the whole section are exactly as written.
    pub fn all_intact(&self) -> bool {
        self.protected_intact
            && self.damaged_packets == [0, 0]
            && self.trailer_ok
            && self.padding_ok
            && self.located.source_len == self.located.layout.file_len
            && self.segments.iter().all(|s| s.damaged_recovery == 0)
    }

    /// Every segment is intact or repairable (so `repair_to` will succeed).
    pub fn repairable(&self) -> bool {
        self.segments
            .iter()
            .all(|s| s.state != SegmentState::BeyondRepair)
    }

    /// The segments beyond repair.
    pub fn beyond_repair(&self) -> Vec<BeyondRepair> {
        self.segments
            .iter()
            .filter(|s| s.state == SegmentState::BeyondRepair)
            .map(|s| BeyondRepair {
                segment: s.index,
                start: s.start,
                end: s.end,
                erased: s.erased(),
                recovery: s.recovery_shards,
            })
            .collect()
    }
}

/// Verifies the protected bytes and the section in `src`. Never fails on damage (that is
/// what the report is for); source read errors count as damage too.
pub fn verify<S: ByteSource + ?Sized>(src: &S, located: &Located) -> VerifyReport {
    let layout = located.layout;
    let mut hasher = blake3::Hasher::new();
    let mut segments = Vec::with_capacity(layout.segments.min(1 << 20) as usize);
    for g in 0..layout.segments {
        let seg = layout.segment(g);
        let sums = segment::sums(src, &layout, &seg);
        let data = segment::data_states(src, &layout, &seg, &sums.data, None, &mut |b| {
            hasher.update(b);
        });
        let rec = segment::recovery_states(src, &layout, &seg, &sums.recovery, None);
        segments.push(report(&layout, &seg, &data, &rec));
    }
    let protected_intact = *hasher.finalize().as_bytes() == layout.params.blake3;
    if protected_intact {
        // Every data byte is as written, whatever checksums were lost.
        for s in &mut segments {
            s.unverifiable_data = 0;
            s.damaged_data = 0;
            s.damaged_ranges.clear();
            s.state = SegmentState::Intact;
        }
    }
    let (damaged_packets, lost_packets) = packet_health(src, &layout);
    VerifyReport {
        located: *located,
        segments,
        damaged_packets,
        lost_packets,
        trailer_ok: trailer_ok(src, &layout),
        padding_ok: padding_ok(src, &layout),
        protected_intact,
    }
}

/// Whether the zero padding after P and after the recovery shards (docs/FORMAT.md §15.1) is
/// zero and present: bytes written there change no shard, but the file is then not the one
/// first written.
pub fn padding_ok<S: ByteSource + ?Sized>(src: &S, layout: &Layout) -> bool {
    let rec_end =
        layout.recovery_start + layout.recovery_shards * u64::from(layout.params.shard_size);
    [
        (layout.params.protected_len, layout.copy_a),
        (rec_end, layout.copy_b),
    ]
    .iter()
    .all(|&(a, b)| {
        let mut buf = vec![0u8; (b - a) as usize];
        read(src, a, &mut buf).is_ok() && buf.iter().all(|&x| x == 0)
    })
}

fn report(
    layout: &Layout,
    seg: &super::layout::Segment,
    data: &[ShardState],
    rec: &[ShardState],
) -> SegmentReport {
    let s = u64::from(layout.params.shard_size);
    let count = |v: &[ShardState], f: &dyn Fn(ShardState) -> bool| {
        v.iter().filter(|&&x| f(x)).count() as u64
    };
    let damaged_data = count(data, &|x| {
        matches!(x, ShardState::Damaged | ShardState::Missing)
    });
    let unverifiable_data = count(data, &|x| x == ShardState::Unverifiable);
    let damaged_recovery = count(rec, &|x| x.erased());
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for (i, st) in data.iter().enumerate() {
        if matches!(st, ShardState::Damaged | ShardState::Missing) {
            let a = seg.start + i as u64 * s;
            let b = (a + s).min(seg.end);
            let n = ranges.len();
            match ranges.last_mut() {
                Some(last) if last.1 == a => last.1 = b,
                _ if n < MAX_RANGES => ranges.push((a, b)),
                _ => {}
            }
        }
    }
    let erased = damaged_data + unverifiable_data + damaged_recovery;
    let state = if damaged_data == 0 && unverifiable_data == 0 {
        SegmentState::Intact
    } else if erased <= seg.recovery_shards {
        SegmentState::Repairable
    } else if damaged_data == 0 {
        SegmentState::Unverified
    } else {
        SegmentState::BeyondRepair
    };
    SegmentReport {
        index: seg.index,
        start: seg.start,
        end: seg.end,
        data_shards: seg.data_shards,
        recovery_shards: seg.recovery_shards,
        damaged_data,
        unverifiable_data,
        damaged_recovery,
        damaged_ranges: ranges,
        state,
    }
}

/// Damaged packets per copy, and packets damaged in both.
fn packet_health<S: ByteSource + ?Sized>(src: &S, layout: &Layout) -> ([u64; 2], u64) {
    let t = TableReader::new(src, *layout);
    let mut damaged = [0u64; 2];
    let mut lost = 0;
    for i in 0..layout.packets {
        let a = t.packet_ok(0, i).is_none();
        let b = t.packet_ok(1, i).is_none();
        damaged[0] += u64::from(a);
        damaged[1] += u64::from(b);
        lost += u64::from(a && b);
    }
    (damaged, lost)
}

fn trailer_ok<S: ByteSource + ?Sized>(src: &S, layout: &Layout) -> bool {
    if src.len() < layout.file_len {
        return false;
    }
    let mut t = [0u8; TRAILER_LEN];
    read(src, layout.trailer, &mut t).is_ok() && parse_trailer(&t).is_ok_and(|l| l == *layout)
}
