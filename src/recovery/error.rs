//! The recovery layer's error type: every failure of encoding, locating, verifying and
//! repairing, with the numbers that explain it.

use std::io;

/// A segment that cannot be repaired from what survives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeyondRepair {
    /// Segment number.
    pub segment: u64,
    /// Protected bytes it covers, `start..end`.
    pub start: u64,
    /// End (exclusive).
    pub end: u64,
    /// Shards that are damaged, missing or unverifiable (data and recovery).
    pub erased: u64,
    /// Recovery shards the segment has: at most this many erasures can be repaired.
    pub recovery: u64,
}

/// Every error of `krypta::recovery`.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    /// A parameter (option or stored field) is outside its range.
    #[error("recovery data: {field} is {value}, which is not allowed")]
    BadParameter {
        /// Which parameter, with its allowed range.
        field: &'static str,
        /// The value given or found.
        value: u64,
    },
    /// A packet or the trailer failed a check (used while locating; never fatal alone).
    #[error("recovery data: descriptor packet rejected: {why}")]
    BadPacket {
        /// What failed.
        why: &'static str,
    },
    /// No recovery section was found in the source.
    #[error("no recovery data found in {len} bytes (no intact trailer or descriptor packet)")]
    NotFound {
        /// Length of the source searched, bytes.
        len: u64,
    },
    /// Reading the source failed.
    #[error("recovery data: reading {len} bytes at offset {offset}: {source}")]
    Read {
        /// Offset of the read, bytes.
        offset: u64,
        /// Length of the read, bytes.
        len: u64,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// Writing the output (protected bytes or the section) failed.
    #[error("recovery data: writing the {what}: {source}")]
    Write {
        /// What was being written.
        what: &'static str,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The encoder's spill file (recovery shards beyond the memory budget) failed.
    #[error("recovery data: temporary spill file{}: {op}: {source}", in_dir(.dir.as_deref()))]
    Spill {
        /// What was being done.
        op: &'static str,
        /// The directory of the spill file (`TMPDIR` unless set), when one was involved: a
        /// full or read-only temporary directory is a different fix from a full output.
        dir: Option<std::path::PathBuf>,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A requested range is not inside the protected bytes.
    #[error("recovery data: range {offset}+{len} is outside the {protected_len} protected bytes")]
    OutOfRange {
        /// Start of the range.
        offset: u64,
        /// Length of the range.
        len: u64,
        /// L.
        protected_len: u64,
    },
    /// Some segments have more damage than their recovery shards can repair.
    #[error("damaged beyond the recovery data: {}", describe(.segments))]
    BeyondRepair {
        /// The segments that cannot be repaired, in order.
        segments: Vec<BeyondRepair>,
    },
    /// The trailer ending the file is intact and says the file was written `missing` bytes
    /// longer: more bytes are gone than the recovery data can rebuild (`rebuildable`).
    #[error(
        "damaged beyond the recovery data: {missing} bytes of the {written} it was written with are missing (a bad copy?), more than its recovery data can rebuild ({rebuildable} bytes)"
    )]
    TooMuchMissing {
        /// Bytes missing.
        missing: u64,
        /// The file's length as written (the trailer's).
        written: u64,
        /// Bytes the recovery data can rebuild at most.
        rebuildable: u64,
    },
    /// A shard rebuilt by Reed–Solomon does not match its stored checksum: the surviving
    /// shards or the descriptor are inconsistent (crafted, or damage that passed a checksum).
    /// Nothing rebuilt is returned.
    #[error(
        "recovery data: rebuilt shard {shard} of segment {segment} does not match its checksum (inconsistent recovery data); nothing was repaired"
    )]
    Inconsistent {
        /// Segment number.
        segment: u64,
        /// Shard number within the segment.
        shard: u64,
    },
    /// The Reed–Solomon library refused a call (cannot happen with validated parameters).
    #[error("recovery data: Reed-Solomon: {0}")]
    Code(#[from] reed_solomon_simd::Error),
    /// A big buffer of the recovery layer (the encoder's chunk buffers and accumulator, a
    /// segment being repaired, its recovery shards) could not be allocated: out of memory,
    /// `ulimit -v`, a cgroup's `memory.max`. Exit 4, as `crate::Error::OutOfMemory`.
    #[error("out of memory: {source}; {advice}")]
    OutOfMemory {
        /// What could not be allocated.
        #[source]
        source: crate::memory::OutOfMemory,
        /// What the step needs about, and what to change.
        advice: String,
    },
    /// The background encoder thread stopped unexpectedly.
    #[error("recovery data: the encoder thread stopped unexpectedly")]
    WorkerLost,
}

fn describe(segments: &[BeyondRepair]) -> String {
    let mut parts: Vec<String> = segments
        .iter()
        .take(8)
        .map(|b| {
            format!(
                "segment {} (bytes {}..{}): {} shards lost, {} recovery shards",
                b.segment, b.start, b.end, b.erased, b.recovery
            )
        })
        .collect();
    if segments.len() > 8 {
        parts.push(format!("and {} more segments", segments.len() - 8));
    }
    parts.join("; ")
}

impl RecoveryError {
    /// [`RecoveryError::OutOfMemory`] of the encoder (`c --recovery`, `repair`'s regenerated
    /// section) at `percent`, whose bound is `bound` bytes (`RecoveryOptions::memory_bound`).
    pub fn encoder_out_of_memory(
        source: crate::memory::OutOfMemory,
        percent: u8,
        bound: u64,
    ) -> Self {
        RecoveryError::OutOfMemory {
            source,
            advice: format!(
                "recovery data at {percent}% needs about {} while it is written (three chunk \
                 buffers, and recovery shards kept in memory up to 64 MiB before they go to a \
                 temporary file); try a lower --recovery, or give krypta more memory (a higher \
                 ulimit -v or memory.max)",
                crate::memory::mib(bound)
            ),
        }
    }

    /// [`RecoveryError::OutOfMemory`] of a repair holding a segment of `segment` bytes.
    pub fn repair_out_of_memory(source: crate::memory::OutOfMemory, segment: usize) -> Self {
        RecoveryError::OutOfMemory {
            source,
            advice: format!(
                "repairing with the recovery data holds a whole segment ({}), its recovery \
                 shards and an 8 MiB work area (up to 200 MiB) per segment repaired at once; \
                 nothing was repaired: give krypta more memory (a higher ulimit -v or \
                 memory.max)",
                crate::memory::mib(segment as u64)
            ),
        }
    }

    /// A read error at `offset..offset+len`.
    pub fn read(offset: u64, len: u64, source: io::Error) -> Self {
        RecoveryError::Read {
            offset,
            len,
            source,
        }
    }
}

/// " in DIR" for a spill file's directory, shown as every user-facing path is.
fn in_dir(dir: Option<&std::path::Path>) -> String {
    dir.map(|d| format!(" in {}", crate::fs::shown(d)))
        .unwrap_or_default()
}
