//! The `diff+base` block codec (codec 3, docs/FORMAT.md §16.6): a bsdiff-style delta of a
//! block against its base region. The payload after the 16-byte region descriptor is a
//! version byte, four stream lengths and four zstd frames: **ctrl** (commands: copy length,
//! extra length, seek), **gaps** and **vals** (the diff bytes of the copies, stored sparse:
//! zero-run lengths and the nonzero values) and **extra** (bytes copied verbatim). The
//! decoder is in [`decode`], the encoder in [`encode`] (which says why the writer uses it).
//!
//! Why this shape: a new version of a file differs from its base by substitutions spread
//! through long stretches that still match (a renamed version string, changed call
//! displacements, tar header times). zstd codes each as a literal and a repeat-offset match
//! (several bits of entropy-coded sequence per changed byte); here a substitution is one
//! nonzero diff byte and a zero-run length, and a stretch with many of them stays one copy
//! command (bsdiff's approximate match, Colin Percival 2003).

pub(crate) mod decode;
pub(crate) mod encode;
mod scan;
pub(crate) mod source;
pub(crate) use encode::stream_levels as diff_stream_levels;
pub(crate) use scan::table_bytes as diff_table_bytes;
#[cfg(test)]
mod shape_tests;
#[cfg(test)]
mod tests;

/// How hard the encoder works for a smaller payload: which of the scan's tables and skips
/// it uses ([`scan`]) and the zstd levels of its streams ([`encode`]). The payload's format
/// is the same at every effort; only the writer's choices differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effort {
    /// Level 6: the long table alone (capped at 2^20 entries), no lookup where the current
    /// alignment still agrees on half the window, streams at zstd `-3`.
    Fast,
    /// Levels 7 and 8: both tables, a lookup at every position the alignment does not
    /// cover, commands and gaps at `-15`, diff values and extra bytes at `-6`.
    Normal,
    /// Level 9: as [`Effort::Normal`], all four streams at `-19`.
    Max,
}

impl Effort {
    /// Every effort, fastest first.
    pub const ALL: [Effort; 3] = [Effort::Fast, Effort::Normal, Effort::Max];
}

/// The payload's version byte (the only one defined).
pub const VERSION: u8 = 0;
/// Bytes before the four frames: the version and four u32 LE lengths.
pub const HEAD_LEN: usize = 1 + 4 * 4;
/// The streams' names, in payload order.
pub const STREAMS: [&str; 4] = ["ctrl", "gaps", "vals", "extra"];
/// log2 of the largest window a ctrl frame may declare (16 MiB): the only stream decoded
/// streaming (it may be longer than the block), so its window is the decoder's memory.
pub const CTRL_WINDOW_LOG_MAX: u32 = 24;

/// A damaged `diff+base` payload: what is wrong, with the numbers that show it. The caller
/// names the archive and the frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    /// The payload is shorter than its version byte and four lengths.
    #[error("diff payload of {len} bytes is shorter than its {HEAD_LEN}-byte head")]
    ShortHead {
        /// Payload length after the region descriptor, bytes.
        len: usize,
    },
    /// A version byte other than 0.
    #[error("diff payload version {got} (only 0 is defined)")]
    Version {
        /// The version byte.
        got: u8,
    },
    /// The four stream lengths do not add up to the bytes after the head.
    #[error("diff stream lengths add up to {declared} bytes, but {got} follow the head")]
    Lengths {
        /// Sum of the four lengths.
        declared: u64,
        /// Bytes after the head.
        got: u64,
    },
    /// A stream's zstd frame breaks the frame rules or does not decode.
    #[error("diff stream {stream}: {problem}")]
    Frame {
        /// Which stream.
        stream: &'static str,
        /// What the zstd layer said.
        problem: String,
    },
    /// A stream declares more bytes than a block of this raw length can use.
    #[error(
        "diff stream {stream} declares {declared} bytes, more than the {max} a {raw_len}-byte block can use"
    )]
    TooLong {
        /// Which stream.
        stream: &'static str,
        /// Its declared content size, bytes.
        declared: u64,
        /// The most it may hold, bytes.
        max: u64,
        /// The block's raw length R, bytes.
        raw_len: usize,
    },
    /// A number (LEB128) is cut off at the end of its stream or does not fit 32 bits.
    #[error("diff stream {stream}: a number is {problem}")]
    BadNumber {
        /// Which stream.
        stream: &'static str,
        /// "cut off" or "over 32 bits".
        problem: &'static str,
    },
    /// A stream ends before the commands are done with it.
    #[error("diff stream {stream} ends too early (at output byte {at})")]
    RunsOut {
        /// Which stream.
        stream: &'static str,
        /// Output bytes made so far.
        at: u64,
    },
    /// A stream has bytes left after the block is complete.
    #[error("diff stream {stream} has data left after the last command")]
    Leftover {
        /// Which stream.
        stream: &'static str,
    },
    /// A value byte of 0 (zeros are coded as gaps).
    #[error("diff stream vals holds a zero value (at output byte {at})")]
    ZeroValue {
        /// Output bytes made so far.
        at: u64,
    },
    /// A command that makes no byte.
    #[error("diff command at output byte {at} copies and adds nothing")]
    EmptyCommand {
        /// Output bytes made so far.
        at: u64,
    },
    /// A command would make more than the block's raw length.
    #[error(
        "diff command at output byte {at} makes {want} more bytes, past the {raw_len}-byte block"
    )]
    PastBlock {
        /// Output bytes made so far.
        at: u64,
        /// Bytes the command makes.
        want: u64,
        /// The block's raw length R.
        raw_len: usize,
    },
    /// A copy reads a source byte that does not exist yet.
    #[error(
        "diff copy at output byte {at} reads source byte {source_at}, but only {available} exist (region and output so far)"
    )]
    CopyPastSource {
        /// Output bytes made so far.
        at: u64,
        /// The source position read.
        source_at: u64,
        /// Region length + output so far.
        available: u64,
    },
    /// A seek moves the cursor outside 0..=available.
    #[error(
        "diff seek at output byte {at} moves the source cursor to {to}, outside 0..={available}"
    )]
    SeekOutOfRange {
        /// Output bytes made so far.
        at: u64,
        /// Where the seek goes.
        to: i64,
        /// Region length + output so far.
        available: u64,
    },
    /// The commands end before the block is complete.
    #[error("diff commands make {got} bytes, the block has {raw_len}")]
    Short {
        /// Bytes made.
        got: u64,
        /// The block's raw length R.
        raw_len: usize,
    },
}

/// Appends `v` as unsigned LEB128 (7 bits a byte, low first; high bit = more follow).
pub fn put_leb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zigzag: 0, −1, 1, −2, … → 0, 1, 2, 3, …
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}
