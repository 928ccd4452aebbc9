//! The recovery section's bytes: the 64-byte parameter block, the 4096-byte descriptor
//! packets, the 80-byte trailer, and every offset that follows from the parameters
//! (docs/FORMAT.md §15 is the normative description; this file implements it).
//!
//! The whole layout is a pure function of [`Params`]: given `L`, the shard size `S`, the
//! shards per segment `K`, the percentage `p` and the BLAKE3 of the protected bytes, every
//! segment, recovery shard, packet and the trailer sit at offsets computed here with checked
//! arithmetic. A parser therefore needs no length fields that could disagree with each other,
//! and a value that passes [`Params::parse`] can never make an offset overflow.

use super::error::RecoveryError;

/// Alignment of the section's parts (copy A, the recovery area, copy B), bytes: one 4 KiB
/// sector, so a lost aligned sector costs exactly one packet or one 4 KiB recovery shard.
pub const ALIGN: u64 = 4096;
/// Length of one descriptor packet, bytes.
pub const PACKET_LEN: usize = 4096;
/// Payload bytes per packet (checksum table bytes carried by one packet).
pub const PACKET_PAYLOAD: usize = PACKET_LEN - PACKET_HEAD - 8;
/// Bytes before a packet's payload: magic, parameters, copy, reserved, index.
pub const PACKET_HEAD: usize = 8 + PARAMS_LEN + 8;
/// Length of the trailer that ends the file, bytes.
pub const TRAILER_LEN: usize = 8 + PARAMS_LEN + 8;
/// Length of the encoded parameters, bytes.
pub const PARAMS_LEN: usize = 64;
/// Packet magic, `\x89KRYREC\n`.
pub const PACKET_MAGIC: [u8; 8] = *b"\x89KRYREC\n";
/// Trailer magic, `KRYRECZ\n` (like the archive footer's `KRYPTAZ\n`).
pub const TRAILER_MAGIC: [u8; 8] = *b"KRYRECZ\n";
/// The layout version this code reads and writes.
pub const LAYOUT_VERSION: u16 = 1;

/// Default shard size, bytes (one 4 KiB sector).
pub const DEFAULT_SHARD_SIZE: u32 = 4096;
/// Default data shards per segment: 32768 × 4 KiB = 128 MiB of protected bytes.
pub const DEFAULT_SHARDS_PER_SEGMENT: u32 = 32768;
/// Smallest and largest shard size, bytes (multiples of 64: the Reed–Solomon engine works on
/// 64-byte blocks).
pub const SHARD_SIZE_RANGE: (u32, u32) = (64, 65536);
/// Largest number of data shards per segment (a power of two; 32768 + any recovery chunk
/// stays within the 65536 points of GF(2^16)).
pub const MAX_SHARDS_PER_SEGMENT: u32 = 32768;
/// Smallest and largest segment (K × S), bytes: the floor bounds the number of segments a
/// crafted section can make a reader walk per byte of file, the ceiling bounds memory.
pub const SEGMENT_BYTES_RANGE: (u64, u64) = (64 << 10, 128 << 20);
/// Largest protected length a reader accepts, bytes (2^56 = 64 PiB).
pub const MAX_PROTECTED_LEN: u64 = 1 << 56;

/// The parameters that define a recovery section. Stored in every packet and in the trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Recovery shards per segment as a percentage of its data shards, 1..=100.
    pub percent: u8,
    /// Shard size S, bytes: a multiple of 64 in 64..=65536.
    pub shard_size: u32,
    /// Data shards per full segment K: a power of two, with K × S in 64 KiB..=128 MiB.
    pub shards_per_segment: u32,
    /// Protected length L: the archive bytes the section protects, bytes.
    pub protected_len: u64,
    /// BLAKE3 (plain hash, as `b3sum` prints it) of the L protected bytes.
    pub blake3: [u8; 32],
}

/// Recovery shards for a segment of `k` data shards at `percent`: ⌈k·p/100⌉ (at least 1
/// when k ≥ 1).
pub fn recovery_count(k: u64, percent: u8) -> u64 {
    (k * u64::from(percent)).div_ceil(100)
}

impl Params {
    /// Checks the writer-side choices (everything but L and the hash).
    pub fn check_choice(
        percent: u8,
        shard_size: u32,
        shards_per_segment: u32,
    ) -> Result<(), RecoveryError> {
        let bad =
            |field: &'static str, value: u64| Err(RecoveryError::BadParameter { field, value });
        if !(1..=100).contains(&percent) {
            return bad("recovery percent (1..=100)", percent.into());
        }
        if !shard_size.is_multiple_of(64)
            || shard_size < SHARD_SIZE_RANGE.0
            || shard_size > SHARD_SIZE_RANGE.1
        {
            return bad(
                "shard size (a multiple of 64 in 64..=65536)",
                shard_size.into(),
            );
        }
        if !shards_per_segment.is_power_of_two() || shards_per_segment > MAX_SHARDS_PER_SEGMENT {
            return bad(
                "shards per segment (a power of two up to 32768)",
                shards_per_segment.into(),
            );
        }
        let seg = u64::from(shard_size) * u64::from(shards_per_segment);
        if seg < SEGMENT_BYTES_RANGE.0 || seg > SEGMENT_BYTES_RANGE.1 {
            return bad("segment size in bytes (64 KiB..=128 MiB)", seg);
        }
        Ok(())
    }

    /// The 64 encoded bytes.
    pub fn to_bytes(&self) -> [u8; PARAMS_LEN] {
        let mut b = [0u8; PARAMS_LEN];
        b[0..2].copy_from_slice(&LAYOUT_VERSION.to_le_bytes());
        b[2] = self.percent;
        b[4..8].copy_from_slice(&self.shard_size.to_le_bytes());
        b[8..12].copy_from_slice(&self.shards_per_segment.to_le_bytes());
        b[16..24].copy_from_slice(&self.protected_len.to_le_bytes());
        b[24..56].copy_from_slice(&self.blake3);
        b
    }

    /// Parses and validates 64 bytes (version, ranges, reserved bytes zero).
    pub fn parse(b: &[u8; PARAMS_LEN]) -> Result<Params, RecoveryError> {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let version = u16::from_le_bytes([b[0], b[1]]);
        if version != LAYOUT_VERSION {
            return Err(RecoveryError::BadParameter {
                field: "layout version",
                value: version.into(),
            });
        }
        if b[3] != 0 || b[12..16] != [0; 4] || b[56..64] != [0; 8] {
            return Err(RecoveryError::BadParameter {
                field: "reserved parameter bytes",
                value: 1,
            });
        }
        let p = Params {
            percent: b[2],
            shard_size: u32_at(4),
            shards_per_segment: u32_at(8),
            protected_len: u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
            blake3: b[24..56].try_into().expect("32 bytes"),
        };
        Params::check_choice(p.percent, p.shard_size, p.shards_per_segment)?;
        if p.protected_len > MAX_PROTECTED_LEN {
            return Err(RecoveryError::BadParameter {
                field: "protected length (at most 2^56)",
                value: p.protected_len,
            });
        }
        Ok(p)
    }
}

/// Everything that follows from [`Params`]: counts and offsets, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The parameters.
    pub params: Params,
    /// Data shards N = ⌈L / S⌉.
    pub data_shards: u64,
    /// Segments G = ⌈N / K⌉.
    pub segments: u64,
    /// Recovery shards of a full segment, ⌈K·p/100⌉.
    pub full_recovery: u64,
    /// The Reed–Solomon chunk C: the next power of two ≥ `full_recovery`. Every segment,
    /// the short last one included, is coded with this chunk (its parity positions are
    /// 0..C, its data positions C..C+k).
    pub chunk: u64,
    /// Recovery shards M in total.
    pub recovery_shards: u64,
    /// Checksum table length T = 8·(N + M), bytes.
    pub table_len: u64,
    /// Packets per descriptor copy, max(1, ⌈T / 4008⌉).
    pub packets: u64,
    /// Offset of copy A (first packet): L rounded up to 4096.
    pub copy_a: u64,
    /// Offset of the first recovery shard.
    pub recovery_start: u64,
    /// Offset of copy B: the end of the recovery shards rounded up to 4096.
    pub copy_b: u64,
    /// Offset of the trailer.
    pub trailer: u64,
    /// Length of the whole file (protected bytes + section), bytes.
    pub file_len: u64,
}

/// One segment's place: its data shards in P and its recovery shards in the section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Segment number, 0-based.
    pub index: u64,
    /// First data shard (global shard number).
    pub first_shard: u64,
    /// Data shards k_s.
    pub data_shards: u64,
    /// Recovery shards m_s = ⌈k_s·p/100⌉.
    pub recovery_shards: u64,
    /// Protected bytes covered: `start..end` (end ≤ L; the last shard may be partial).
    pub start: u64,
    /// End of the covered protected bytes (exclusive).
    pub end: u64,
    /// Offset of its first recovery shard in the file.
    pub recovery_offset: u64,
    /// Offset of its first checksum in the table, bytes (data checksums, then recovery).
    pub table_offset: u64,
}

impl Layout {
    /// Derives the layout. Cannot fail for parameters that passed [`Params::parse`] (L ≤ 2^56
    /// keeps every sum far from u64 overflow); returns an error otherwise.
    pub fn new(params: Params) -> Result<Layout, RecoveryError> {
        let overflow = || RecoveryError::BadParameter {
            field: "protected length (layout overflows)",
            value: params.protected_len,
        };
        let s = u64::from(params.shard_size);
        let k = u64::from(params.shards_per_segment);
        let n = params.protected_len.div_ceil(s);
        let g = n.div_ceil(k);
        let full_recovery = recovery_count(k, params.percent);
        let chunk = full_recovery.next_power_of_two();
        let last_k = if g == 0 { 0 } else { n - (g - 1) * k };
        let m_total = if g == 0 {
            0
        } else {
            (g - 1)
                .checked_mul(full_recovery)
                .and_then(|x| x.checked_add(recovery_count(last_k, params.percent)))
                .ok_or_else(overflow)?
        };
        let table_len = n
            .checked_add(m_total)
            .and_then(|x| x.checked_mul(8))
            .ok_or_else(overflow)?;
        let packets = table_len.div_ceil(PACKET_PAYLOAD as u64).max(1);
        let copy_len = packets
            .checked_mul(PACKET_LEN as u64)
            .ok_or_else(overflow)?;
        let copy_a = align_up(params.protected_len).ok_or_else(overflow)?;
        let recovery_start = copy_a.checked_add(copy_len).ok_or_else(overflow)?;
        let rec_end = m_total
            .checked_mul(s)
            .and_then(|x| x.checked_add(recovery_start))
            .ok_or_else(overflow)?;
        let copy_b = align_up(rec_end).ok_or_else(overflow)?;
        let trailer = copy_b.checked_add(copy_len).ok_or_else(overflow)?;
        let file_len = trailer
            .checked_add(TRAILER_LEN as u64)
            .ok_or_else(overflow)?;
        Ok(Layout {
            params,
            data_shards: n,
            segments: g,
            full_recovery,
            chunk,
            recovery_shards: m_total,
            table_len,
            packets,
            copy_a,
            recovery_start,
            copy_b,
            trailer,
            file_len,
        })
    }

    /// Shard size S as a usize.
    pub fn shard_size(&self) -> usize {
        self.params.shard_size as usize
    }

    /// Section length: file length minus L, bytes.
    pub fn section_len(&self) -> u64 {
        self.file_len - self.params.protected_len
    }

    /// Segment `index` (< `segments`).
    pub fn segment(&self, index: u64) -> Segment {
        debug_assert!(index < self.segments);
        let s = u64::from(self.params.shard_size);
        let k = u64::from(self.params.shards_per_segment);
        let first_shard = index * k;
        let data_shards = k.min(self.data_shards - first_shard);
        let recovery_shards = recovery_count(data_shards, self.params.percent);
        let start = first_shard * s;
        let end = (start + data_shards * s).min(self.params.protected_len);
        Segment {
            index,
            first_shard,
            data_shards,
            recovery_shards,
            start,
            end,
            recovery_offset: self.recovery_start + index * self.full_recovery * s,
            table_offset: index * (k + self.full_recovery) * 8,
        }
    }

    /// The segment holding protected byte `offset` (< L).
    pub fn segment_of(&self, offset: u64) -> u64 {
        offset / (u64::from(self.params.shard_size) * u64::from(self.params.shards_per_segment))
    }

    /// File offset of packet `index` of copy `copy` (0 = A, 1 = B).
    pub fn packet_offset(&self, copy: u8, index: u64) -> u64 {
        let base = if copy == 0 { self.copy_a } else { self.copy_b };
        base + index * PACKET_LEN as u64
    }

    /// The table bytes packet `index` carries: `start..end` of the checksum table.
    pub fn packet_range(&self, index: u64) -> (u64, u64) {
        let start = index * PACKET_PAYLOAD as u64;
        (
            start.min(self.table_len),
            (start + PACKET_PAYLOAD as u64).min(self.table_len),
        )
    }
}

/// `x` rounded up to a multiple of [`ALIGN`]; None on overflow.
pub fn align_up(x: u64) -> Option<u64> {
    x.checked_add(ALIGN - 1).map(|v| v / ALIGN * ALIGN)
}

/// XXH3-64 (seed 0) of `bytes`: the shard, packet and trailer checksum.
pub fn xxh3(bytes: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(bytes)
}

/// Builds packet `index` of copy `copy` carrying `payload` (≤ 4008 bytes of the table).
pub fn write_packet(params: &Params, copy: u8, index: u32, payload: &[u8]) -> [u8; PACKET_LEN] {
    debug_assert!(payload.len() <= PACKET_PAYLOAD);
    let mut b = [0u8; PACKET_LEN];
    b[0..8].copy_from_slice(&PACKET_MAGIC);
    b[8..72].copy_from_slice(&params.to_bytes());
    b[72] = copy;
    b[76..80].copy_from_slice(&index.to_le_bytes());
    b[PACKET_HEAD..PACKET_HEAD + payload.len()].copy_from_slice(payload);
    let sum = xxh3(&b[..PACKET_LEN - 8]);
    b[PACKET_LEN - 8..].copy_from_slice(&sum.to_le_bytes());
    b
}

/// A packet that passed every check that does not need its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The parameters it carries.
    pub params: Params,
    /// 0 = copy A, 1 = copy B.
    pub copy: u8,
    /// Packet index within its copy.
    pub index: u64,
}

/// Parses a packet: magic, checksum, parameters, copy, reserved bytes, index < packet count,
/// and the payload bytes past the table's end are zero. The caller checks the position with
/// [`Layout::packet_offset`].
pub fn parse_packet(b: &[u8; PACKET_LEN]) -> Result<(Packet, Layout), RecoveryError> {
    let bad = |why: &'static str| RecoveryError::BadPacket { why };
    if b[0..8] != PACKET_MAGIC {
        return Err(bad("no packet magic"));
    }
    let stored = u64::from_le_bytes(b[PACKET_LEN - 8..].try_into().expect("8 bytes"));
    if xxh3(&b[..PACKET_LEN - 8]) != stored {
        return Err(bad("checksum mismatch"));
    }
    let params = Params::parse(b[8..72].try_into().expect("64 bytes"))?;
    let copy = b[72];
    if copy > 1 {
        return Err(bad("copy number is not 0 or 1"));
    }
    if b[73..76] != [0; 3] {
        return Err(bad("reserved bytes are not zero"));
    }
    let index = u64::from(u32::from_le_bytes(b[76..80].try_into().expect("4 bytes")));
    let layout = Layout::new(params)?;
    if index >= layout.packets {
        return Err(bad("packet index beyond the packet count"));
    }
    let (start, end) = layout.packet_range(index);
    let used = (end - start) as usize;
    if b[PACKET_HEAD + used..PACKET_LEN - 8]
        .iter()
        .any(|&x| x != 0)
    {
        return Err(bad("padding after the table is not zero"));
    }
    Ok((
        Packet {
            params,
            copy,
            index,
        },
        layout,
    ))
}

/// Of a section read as a stream: the layout its first packet gives, when `b` (read at L
/// rounded up to 4096) is packet 0 of copy A of the section protecting `protected_len`
/// bytes — the parameters' L equal to it, so the packet is this archive's and sits where its
/// own parameters place it.
pub fn stream_packet_a0(b: &[u8; PACKET_LEN], protected_len: u64) -> Option<Layout> {
    let (p, l) = parse_packet(b).ok()?;
    (p.copy == 0 && p.index == 0 && l.params.protected_len == protected_len).then_some(l)
}

/// Whether `b` is a descriptor packet (any copy, any index) of the section protecting
/// `protected_len` bytes: a stream's section whose first packet is damaged is still there
/// when another of its packets is.
pub fn packet_of(b: &[u8; PACKET_LEN], protected_len: u64) -> bool {
    parse_packet(b).is_ok_and(|(_, l)| l.params.protected_len == protected_len)
}

/// Builds the trailer.
pub fn write_trailer(params: &Params) -> [u8; TRAILER_LEN] {
    let mut b = [0u8; TRAILER_LEN];
    b[0..8].copy_from_slice(&TRAILER_MAGIC);
    b[8..72].copy_from_slice(&params.to_bytes());
    let sum = xxh3(&b[..TRAILER_LEN - 8]);
    b[TRAILER_LEN - 8..].copy_from_slice(&sum.to_le_bytes());
    b
}

/// Parses a trailer (magic, checksum, parameters); the caller checks that it ends the file.
pub fn parse_trailer(b: &[u8; TRAILER_LEN]) -> Result<Layout, RecoveryError> {
    if b[0..8] != TRAILER_MAGIC {
        return Err(RecoveryError::BadPacket {
            why: "no trailer magic",
        });
    }
    let stored = u64::from_le_bytes(b[TRAILER_LEN - 8..].try_into().expect("8 bytes"));
    if xxh3(&b[..TRAILER_LEN - 8]) != stored {
        return Err(RecoveryError::BadPacket {
            why: "trailer checksum mismatch",
        });
    }
    Layout::new(Params::parse(b[8..72].try_into().expect("64 bytes"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(l: u64) -> Params {
        Params {
            percent: 5,
            shard_size: 4096,
            shards_per_segment: 32768,
            protected_len: l,
            blake3: [7; 32],
        }
    }

    #[test]
    fn layout_of_a_three_segment_archive_has_exact_offsets() {
        // 300 MiB + 1 byte: 76801 shards, segments of 32768, 32768, 11265.
        let l = 300 * (1 << 20) + 1;
        let lay = Layout::new(params(l)).unwrap();
        assert_eq!(lay.data_shards, 76801);
        assert_eq!(lay.segments, 3);
        assert_eq!(lay.full_recovery, 1639);
        assert_eq!(lay.chunk, 2048);
        assert_eq!(lay.segment(2).data_shards, 11265);
        assert_eq!(lay.segment(2).recovery_shards, 564);
        assert_eq!(lay.recovery_shards, 2 * 1639 + 564);
        assert_eq!(lay.table_len, 8 * (76801 + 3842));
        assert_eq!(lay.packets, (8 * (76801 + 3842u64)).div_ceil(4008));
        assert_eq!(lay.copy_a, l + 4095);
        assert_eq!(lay.recovery_start, lay.copy_a + 4096 * lay.packets);
        assert_eq!(lay.copy_b, lay.recovery_start + 4096 * 3842);
        assert_eq!(lay.file_len, lay.copy_b + 4096 * lay.packets + 80);
        assert_eq!(
            lay.segment(1).recovery_offset,
            lay.recovery_start + 1639 * 4096
        );
        assert_eq!(lay.segment(2).table_offset, 2 * 8 * (32768 + 1639));
        assert_eq!(lay.segment(2).end, l);
    }

    #[test]
    fn empty_protected_bytes_still_get_one_packet_per_copy() {
        let lay = Layout::new(params(0)).unwrap();
        assert_eq!(
            (lay.segments, lay.recovery_shards, lay.table_len),
            (0, 0, 0)
        );
        assert_eq!(lay.packets, 1);
        assert_eq!(lay.copy_a, 0);
        assert_eq!(lay.copy_b, 4096);
        assert_eq!(lay.file_len, 8192 + 80);
    }

    #[test]
    fn recovery_count_rounds_up_and_is_at_least_one() {
        assert_eq!(recovery_count(1, 1), 1);
        assert_eq!(recovery_count(100, 1), 1);
        assert_eq!(recovery_count(101, 1), 2);
        assert_eq!(recovery_count(32768, 10), 3277);
        assert_eq!(recovery_count(0, 50), 0);
    }

    #[test]
    fn packets_and_trailer_parse_back_to_what_was_written() {
        let p = params(123_456);
        let lay = Layout::new(p).unwrap();
        let (s, e) = lay.packet_range(0);
        let payload: Vec<u8> = (0..(e - s)).map(|i| i as u8).collect();
        let b = write_packet(&p, 1, 0, &payload);
        let (pk, lay2) = parse_packet(&b).unwrap();
        assert_eq!(
            pk,
            Packet {
                params: p,
                copy: 1,
                index: 0
            }
        );
        assert_eq!(lay2, lay);
        assert_eq!(parse_trailer(&write_trailer(&p)).unwrap(), lay);
    }

    #[test]
    fn any_flipped_bit_in_a_packet_or_trailer_is_refused() {
        let p = params(1 << 20);
        let b = write_packet(&p, 0, 0, &[1; 100]);
        for bit in [0, 77, 8 * 100, 8 * 4000, 8 * 4095 + 7] {
            let mut d = b;
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(parse_packet(&d).is_err(), "bit {bit}");
        }
        let t = write_trailer(&p);
        for bit in [3, 8 * 30, 8 * 79] {
            let mut d = t;
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(parse_trailer(&d).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn parameters_outside_their_ranges_are_refused() {
        let mut p = params(10);
        assert!(Params::parse(&p.to_bytes()).is_ok());
        p.percent = 0;
        assert!(Params::parse(&p.to_bytes()).is_err());
        p.percent = 101;
        assert!(Params::parse(&p.to_bytes()).is_err());
        let mut p = params(10);
        p.shard_size = 100;
        assert!(Params::parse(&p.to_bytes()).is_err());
        let mut p = params(10);
        p.shards_per_segment = 3000;
        assert!(Params::parse(&p.to_bytes()).is_err());
        let mut p = params(10);
        p.shard_size = 64;
        p.shards_per_segment = 512; // 32 KiB segments: below the floor
        assert!(Params::parse(&p.to_bytes()).is_err());
        let mut p = params(10);
        p.protected_len = (1 << 56) + 1;
        assert!(Params::parse(&p.to_bytes()).is_err());
        let mut b = params(10).to_bytes();
        b[60] = 1;
        assert!(Params::parse(&b).is_err());
    }
}
