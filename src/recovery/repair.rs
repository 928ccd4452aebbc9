//! Repair: one segment (for a reader that met a bad frame: "transparent repair"), a byte
//! range, or everything into a writer with the section regenerated (`krypta repair`).
//!
//! A segment's shards are sorted (segment.rs); the erased ones (damaged, missing, or with a
//! lost checksum) are rebuilt by Reed–Solomon from intact shards only, and every rebuilt
//! shard whose checksum is known must match it, or nothing is returned
//! ([`RecoveryError::Inconsistent`]). Memory for one segment: its bytes (k_s·S), its
//! recovery shards (m_s·S) and the decoder's work area, decoded in column slices of at most
//! 8 MiB (code.rs): at most 128 + 64 + 8 MiB, 128 + 6.4 + 8 MiB at the defaults and 5%.

use std::io::Write;

use super::code;
use super::error::{BeyondRepair, RecoveryError};
use super::layout::{Layout, xxh3};
use super::locate::{ByteSource, Located};
use super::segment::{self, ShardState};
use super::writer::{RecoveryOptions, RecoveryWriter, SectionSummary};

/// One segment's protected bytes, repaired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairedSegment {
    /// Segment number.
    pub index: u64,
    /// Offset of `bytes[0]` in the protected bytes.
    pub start: u64,
    /// The segment's protected bytes (`end − start` of them).
    pub bytes: Vec<u8>,
    /// Data shards rebuilt by Reed–Solomon.
    pub rebuilt: u64,
    /// Data shards passed through unverified: their checksums are lost and there were too
    /// few recovery shards to rebuild them (only [`repair_to`]'s final BLAKE3 can vouch for
    /// them; [`repair_segment`] refuses them).
    pub unverified: u64,
}

/// Repairs segment `index` (< the layout's segment count). Errors:
/// [`RecoveryError::BeyondRepair`] when too few shards survive, [`RecoveryError::Inconsistent`]
/// when a rebuilt shard fails its checksum.
pub fn repair_segment<S: ByteSource + ?Sized>(
    src: &S,
    located: &Located,
    index: u64,
) -> Result<RepairedSegment, RecoveryError> {
    let r = load(src, &located.layout, index, false)?;
    Ok(r)
}

/// The repaired protected bytes `offset..offset+len`. Errors as [`repair_segment`], and
/// [`RecoveryError::OutOfRange`].
pub fn repair_range<S: ByteSource + ?Sized>(
    src: &S,
    located: &Located,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, RecoveryError> {
    let layout = &located.layout;
    let l = layout.params.protected_len;
    let end = offset
        .checked_add(len)
        .filter(|&e| e <= l)
        .ok_or(RecoveryError::OutOfRange {
            offset,
            len,
            protected_len: l,
        })?;
    let mut out = Vec::new();
    crate::memory::reserve_exact(&mut out, len as usize, "the repaired bytes")
        .map_err(|e| RecoveryError::repair_out_of_memory(e, len as usize))?;
    if len == 0 {
        return Ok(out);
    }
    for g in layout.segment_of(offset)..=layout.segment_of(end - 1) {
        let seg = load(src, layout, g, false)?;
        let a = offset.max(seg.start) - seg.start;
        let b = end.min(seg.start + seg.bytes.len() as u64) - seg.start;
        out.extend_from_slice(&seg.bytes[a as usize..b as usize]);
    }
    Ok(out)
}

/// What [`repair_to`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairSummary {
    /// Whether the protected bytes written hash to the stored BLAKE3, i.e. are byte-identical
    /// to what was first written (then the whole output is, the section being a function of
    /// them).
    pub identical: bool,
    /// Segments that needed Reed–Solomon.
    pub repaired_segments: u64,
    /// Data shards rebuilt.
    pub rebuilt_shards: u64,
    /// Data shards passed through unverified (lost checksums, too few recovery shards).
    pub unverified_shards: u64,
    /// The regenerated section.
    pub section: SectionSummary,
}

/// How [`repair_to`] runs.
#[derive(Debug, Clone)]
pub struct RepairOptions {
    /// Segments repaired at once (≥ 1): memory is this many times one segment's (module doc).
    pub jobs: usize,
    /// Options of the encoder that regenerates the section (percent, shard size and segment
    /// size are taken from the located section; the budget and spill directory from here).
    pub encoder: RecoveryOptions,
}

impl Default for RepairOptions {
    fn default() -> Self {
        RepairOptions {
            jobs: 1,
            encoder: RecoveryOptions::new(1),
        }
    }
}

/// Writes the repaired protected bytes and a regenerated section to `out` (`krypta repair`).
/// Errors: [`RecoveryError::BeyondRepair`] naming every segment that cannot be repaired
/// (what was written to `out` by then is incomplete: discard it), `Inconsistent`, `Read`,
/// `Write`.
pub fn repair_to<S: ByteSource + ?Sized, W: Write + Send>(
    src: &S,
    located: &Located,
    out: W,
    opts: &RepairOptions,
) -> Result<(W, RepairSummary), RecoveryError> {
    let layout = located.layout;
    let mut enc_opts = opts.encoder.clone();
    enc_opts.percent = layout.params.percent;
    enc_opts.shard_size = layout.params.shard_size;
    enc_opts.shards_per_segment = layout.params.shards_per_segment;
    let mut w = RecoveryWriter::new(out, &enc_opts)?;
    let jobs = opts.jobs.max(1) as u64;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs as usize)
        .build()
        .map_err(|e| RecoveryError::Spill {
            op: "start the repair threads",
            dir: None,
            source: std::io::Error::other(e),
        })?;
    let mut beyond: Vec<BeyondRepair> = Vec::new();
    let (mut repaired, mut rebuilt, mut unverified) = (0, 0, 0);
    let mut g = 0;
    while g < layout.segments {
        let window: Vec<u64> = (g..(g + jobs).min(layout.segments)).collect();
        let results: Vec<Result<RepairedSegment, RecoveryError>> = pool.install(|| {
            use rayon::prelude::*;
            window
                .par_iter()
                .map(|&i| load(src, &layout, i, true))
                .collect()
        });
        for r in results {
            match r {
                Ok(seg) if beyond.is_empty() => {
                    repaired += u64::from(seg.rebuilt > 0);
                    rebuilt += seg.rebuilt;
                    unverified += seg.unverified;
                    w.write_all(&seg.bytes)
                        .map_err(|source| RecoveryError::Write {
                            what: "repaired protected bytes",
                            source,
                        })?;
                }
                Ok(_) => {}
                Err(RecoveryError::BeyondRepair { segments }) => beyond.extend(segments),
                Err(e) => return Err(e),
            }
        }
        g += jobs;
    }
    if !beyond.is_empty() {
        return Err(RecoveryError::BeyondRepair { segments: beyond });
    }
    let (out, section) = w.finish()?;
    let identical = section.layout.params.blake3 == layout.params.blake3;
    Ok((
        out,
        RepairSummary {
            identical,
            repaired_segments: repaired,
            rebuilt_shards: rebuilt,
            unverified_shards: unverified,
            section,
        },
    ))
}

/// Reads and (when needed) rebuilds segment `index`. `pass_unverified`: shards whose
/// checksum is lost and that cannot be rebuilt are passed through instead of failing.
fn load<S: ByteSource + ?Sized>(
    src: &S,
    layout: &Layout,
    index: u64,
    pass_unverified: bool,
) -> Result<RepairedSegment, RecoveryError> {
    let seg = layout.segment(index);
    let s = layout.shard_size();
    let k = seg.data_shards as usize;
    let len = (seg.end - seg.start) as usize;
    let sums = segment::sums(src, layout, &seg);
    let oom = |e| RecoveryError::repair_out_of_memory(e, k * s);
    let mut bytes =
        code::zeroed_bytes(k * s, "a segment of the archive being repaired").map_err(oom)?;
    let data = segment::data_states(src, layout, &seg, &sums.data, Some(&mut bytes), &mut |_| {});
    let erased: Vec<bool> = data.iter().map(|d| d.erased()).collect();
    let lost = erased.iter().filter(|&&e| e).count();
    let mut result = RepairedSegment {
        index,
        start: seg.start,
        bytes: Vec::new(),
        rebuilt: 0,
        unverified: 0,
    };
    if lost > 0 {
        let m = seg.recovery_shards as usize;
        let mut rec = code::zeroed_bytes(m * s, "a segment's recovery shards").map_err(oom)?;
        let rstates = segment::recovery_states(src, layout, &seg, &sums.recovery, Some(&mut rec));
        let good: Vec<(usize, &[u8])> = rec
            .chunks_exact(s)
            .enumerate()
            .filter(|(j, _)| rstates[*j] == ShardState::Intact)
            .collect();
        let known_bad = data
            .iter()
            .filter(|d| matches!(d, ShardState::Damaged | ShardState::Missing))
            .count();
        if good.len() >= lost {
            code::rebuild(s, layout.full_recovery as usize, &mut bytes, &erased, &good)?;
            for (i, shard) in bytes.chunks_exact(s).enumerate() {
                if erased[i]
                    && let Some(v) = sums.data[i]
                    && xxh3(shard) != v
                {
                    return Err(RecoveryError::Inconsistent {
                        segment: index,
                        shard: i as u64,
                    });
                }
            }
            result.rebuilt = lost as u64;
        } else if known_bad == 0 && pass_unverified {
            result.unverified = lost as u64;
        } else {
            return Err(RecoveryError::BeyondRepair {
                segments: vec![BeyondRepair {
                    segment: index,
                    start: seg.start,
                    end: seg.end,
                    erased: (lost + m - good.len()) as u64,
                    recovery: m as u64,
                }],
            });
        }
    }
    bytes.truncate(len);
    result.bytes = bytes;
    Ok(result)
}
