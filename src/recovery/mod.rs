//! Reed–Solomon recovery data: an outer, keyless layer over the protected bytes P (every byte
//! of an archive as written: header, stanzas, frames, index, footer; ciphertext when
//! encrypted). It knows nothing of frames. Encode while writing ([`RecoveryWriter`]),
//! locate ([`locate`]), verify ([`verify`]) and repair ([`repair_segment`], [`repair_range`],
//! [`repair_to`]) on read. The byte layout is docs/FORMAT.md §15.
//!
//! # Layout in one picture
//!
//! ```text
//! P (L bytes) ‖ 0-pad to 4096 ‖ copy A: n packets ‖ recovery shards (M × S) ‖ 0-pad to 4096
//!             ‖ copy B: n packets ‖ trailer (80 bytes)
//! ```
//!
//! # Using it
//!
//! ```text
//! // Writing (`c --recovery 5`): the archive writer writes into a RecoveryWriter.
//! let rw = RecoveryWriter::new(file, &RecoveryOptions::new(5))?;
//! let mut w = ArchiveWriter::new(rw, path, opts)?;  ...  let (summary, rw) = w.finish()?;
//! let (file, section) = rw.finish()?;               // appends the section; L = summary.archive_bytes
//!
//! // Reading: find the section (trailer, or L from the caller, or a backward scan).
//! let src = FileSource::new(File::open(path)?)?;    // or any ByteSource (S3 ranged reads)
//! let loc = locate(&src, &Locate { protected_len: None, scan: true })?;
//! let l = loc.layout.params.protected_len;          // the archive is bytes 0..l
//! let report = verify(&src, &loc);                  // per segment: intact / repairable / beyond
//! // Transparent repair: a frame at offset X failed its tag.
//! let seg = repair_segment(&src, &loc, loc.layout.segment_of(X))?;  // keep it for the next frames
//! // `krypta repair`: repaired bytes + regenerated section, and whether byte-identical.
//! let (out, summary) = repair_to(&src, &loc, out, &RepairOptions::default())?;
//! ```
//!
//! Errors are [`RecoveryError`]s; `crate::Error::Recovery` wraps one with the archive path
//! and maps it to an exit code (5 beyond repair, 3 not found or malformed, 4 I/O).
//!
//! # Choices, and why (do not undo without reading this)
//!
//! - **Shards of S = 4096 bytes.** A lost aligned 512 B or 4 KiB sector costs exactly one
//!   shard; a single flipped bit costs one shard (4 KiB of recovery capacity). Smaller shards
//!   would waste less per flip but make the checksum table (8 bytes per shard, stored twice)
//!   and the shard count per segment grow; 4 KiB keeps the table at 0.2% of P per copy.
//!   Everything after P is 4096-aligned too, so a lost sector there also costs one packet or
//!   one recovery shard.
//! - **Segments of K = 32768 shards (128 MiB).** Each segment is one Reed–Solomon code over
//!   GF(2^16): shard i of the segment is one symbol of each of its S/2 = 2048 codewords (one
//!   per 16-bit position), so erasure decoding needs no interleaving: a burst of b shards
//!   erases b symbols of *every* codeword of that segment and is repaired while b ≤ m_s. The
//!   segment is therefore the burst unit: its capacity is m_s shards = p% of 128 MiB (1.28 MiB
//!   at 1%, 6.4 MiB at 5%, 12.8 MiB at 10%), and a 1 MiB zeroed run (257 shards when not
//!   aligned) is repaired at 1%, 5% and 10% when it falls in a segment of at least 100 MiB,
//!   20 MiB and 10 MiB respectively: every segment but the last is 128 MiB, the last holds
//!   the rest of L and has m = ⌈k·p/100⌉ (so in a small archive the whole archive is that
//!   last segment). 32768 is the
//!   largest power of two that leaves room in GF(2^16) for the recovery chunk at every p
//!   ≤ 100; the price is that repairing one byte reads (and holds) its whole segment, and
//!   decoding one full segment takes about 0.7 s of one core here.
//! - **Incremental, streaming encoding.** The writer never holds a segment: chunks of C
//!   shards (C = next power of two ≥ ⌈K·p/100⌉) are IFFT'd into an accumulator as they fill
//!   (code.rs), so the writer's memory grows with p, not with K or L.
//! - **Checksum: XXH3-64** (seed 0) of each shard, each packet and the trailer. It only has to
//!   catch random damage, and does so with a 2^-64 miss rate at ~20 GB/s, so per-shard
//!   checksums cost nothing next to the FFT; BLAKE3 truncated would cost a second full hash
//!   pass on top of the one BLAKE3 of P. Integrity against tampering is the archive's job
//!   (its MACs and checksums), not this layer's. A shard that passes its checksum wrongly
//!   still cannot yield wrong output: every rebuilt shard is checked against its own checksum,
//!   and `repair_to` checks the BLAKE3 of all of P.
//! - **BLAKE3 of P** (plain hash, `b3sum` of the archive without its section) in every packet
//!   and the trailer: `repair_to` says "byte-identical" only when it matches.
//! - **The descriptor twice, in self-checking packets.** The checksum table is cut into
//!   4096-byte packets, each with the magic, all parameters, its index and an XXH3-64; copy A
//!   follows P, copy B precedes the trailer, so one burst cannot hit both copies of a packet
//!   without also covering the whole recovery area. Any intact copy of each packet suffices;
//!   a packet is only accepted at the offset its own parameters give it, so packets of an
//!   archive stored inside this one are never mistaken for this file's. With the parameters
//!   in every packet, one surviving packet locates everything.
//! - **Determinism.** The section is a pure function of P and (S, K, p): `repair_to` streams
//!   the repaired P through a new [`RecoveryWriter`] and gets the section back bit for bit.
//!
//! # What it can and cannot repair
//!
//! Per segment: any damage that leaves at most m_s = ⌈k_s·p/100⌉ of its k_s + m_s shards
//! damaged, missing or without a surviving checksum. A truncated tail that cuts only into the
//! section is fully repairable (P is read, verified against its BLAKE3, and the section
//! regenerated) as long as one packet survives; a cut that reaches into P removes the whole
//! section with it and is beyond repair (an end-placed section cannot help there).
//!
//! # Memory
//!
//! Writer: 3·C·S (two chunk buffers + the accumulator; 2·C·S without the background thread)
//! plus the spool budget (default 64 MiB, beyond it a temporary file) + 8·K bytes. At the
//! defaults: 6 MiB at 1%, 24 MiB at 5%, 48 MiB at 10%, 192 MiB at 50%, plus the budget.
//! The library's GF(2^16) tables (about 8.5 MiB) are allocated once per process. Reader:
//! verification holds a 4 MiB block; repair holds per segment in flight k_s·S + m_s·S + the
//! decoder's work area in 8 MiB column slices (at most 128 + 64 + 8 MiB; 142 MiB at the
//! defaults and 5%), times `RepairOptions::jobs` in [`repair_to`].
//!
//! Every one of these big buffers is allocated fallibly: a refusal (`ulimit -v`, a cgroup's
//! `memory.max`) is [`RecoveryError::OutOfMemory`] (exit 4), never an abort. The library's
//! tables and the decoder's work area are allocated inside `reed-solomon-simd`, so as much is
//! asked for first (code.rs). The spools take a refusal as the end of their budget and spill;
//! verification falls back to reading shard by shard.

mod code;
mod error;
mod layout;
mod locate;
mod realign;
mod repair;
mod segment;
mod spool;
mod stream_check;
mod verify;
mod writer;

pub use error::{BeyondRepair, RecoveryError};
pub use layout::{
    DEFAULT_SHARD_SIZE, DEFAULT_SHARDS_PER_SEGMENT, Layout, PACKET_LEN, PACKET_MAGIC, Params,
    Segment, TRAILER_LEN, TRAILER_MAGIC, align_up, packet_of, parse_trailer, recovery_count,
    stream_packet_a0, xxh3,
};
pub use locate::{
    ByteSource, FileSource, FoundBy, Locate, Located, TABLE_PREFETCH, TableCache, locate,
    packet_valid,
};
pub use realign::{Realigned, missing_beyond_recovery, realign, rebuildable, shifted_trailer};
pub use repair::{
    RepairOptions, RepairSummary, RepairedSegment, repair_range, repair_segment, repair_to,
};
pub use stream_check::{StreamCheck, check_stream, damage_items};
pub use verify::{MAX_RANGES, SegmentReport, SegmentState, VerifyReport, padding_ok, verify};
pub use writer::{RecoveryOptions, RecoveryWriter, SectionSummary};

/// Parses one 4096-byte block as a descriptor packet and 80 bytes as a trailer, for
/// fuzzing and tools. Returns the packet's layout with the packet re-encoded from what was
/// parsed (equal to the input: the encoding is canonical), and the trailer's layout. Never
/// panics.
pub fn parse_structures(
    packet: &[u8; PACKET_LEN],
    trailer: &[u8; TRAILER_LEN],
) -> (Option<(Layout, [u8; PACKET_LEN])>, Option<Layout>) {
    let pk = layout::parse_packet(packet).ok().map(|(p, l)| {
        let (s, e) = l.packet_range(p.index);
        let payload = &packet[layout::PACKET_HEAD..layout::PACKET_HEAD + (e - s) as usize];
        (
            l,
            layout::write_packet(&p.params, p.copy, p.index as u32, payload),
        )
    });
    (pk, layout::parse_trailer(trailer).ok())
}
