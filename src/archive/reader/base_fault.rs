//! Why a base frame or region could not be had ([`BaseFault`]), and the exit code each kind
//! gets: a read of the base that failed (a file or store error) is I/O, exit 4, whether a
//! delta is being written or read; damage is what `t` of the base would say when writing a
//! delta (exit 2 encrypted, 5 unencrypted; 3 for a structure that verified but breaks a
//! rule), and the delta-base error (exit 9) when reading one.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{BaseError, Error};
use crate::format::FormatError;

/// What to do when a delta block's base region or base frames could not be allocated.
const DELTA_ADVICE: &str = "each worker holds a delta block's base region and the base \
    frames it spans; try -j 1, or give krypta more memory (a higher ulimit -v or memory.max)";

/// What went wrong with a base frame or region. Each message names the base, and the frame
/// and its byte where one failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BaseFault {
    /// No base was given for a `zstd+base` block.
    #[error("a delta block needs its base archive (--base)")]
    NoBase,
    /// Reading the base's bytes failed (file or store): not damage.
    #[error(
        "{}: reading base frame {seq} at byte {at}: {source}",
        crate::fs::shown(path)
    )]
    Read {
        /// The base.
        path: PathBuf,
        /// The frame's sequence number.
        seq: u64,
        /// Its byte offset in the base.
        at: u64,
        /// The I/O or store error (shared: a cached outcome is handed to every asker).
        source: Arc<io::Error>,
    },
    /// The frame's tag (MAC or checksum) does not verify.
    #[error(
        "{}: base frame {seq} at byte {at}: damaged (its tag does not verify)",
        crate::fs::shown(path)
    )]
    Damaged {
        /// The base.
        path: PathBuf,
        /// The frame's sequence number.
        seq: u64,
        /// Its byte offset in the base.
        at: u64,
        /// The base is encrypted.
        sealed: bool,
    },
    /// The frame verified (or was read) but breaks a rule: not the frame the index places
    /// there, a block that does not decode, or a region past the base.
    #[error("{}: {problem}", crate::fs::shown(path))]
    Invalid {
        /// The base.
        path: PathBuf,
        /// The frame's sequence number.
        seq: u64,
        /// Its byte offset in the base (0 when the region, not a frame, is wrong).
        at: u64,
        /// The base is encrypted.
        sealed: bool,
        /// What is wrong, naming the frame and byte.
        problem: String,
    },
    /// A buffer for a base region or a decoded base frame could not be allocated.
    #[error("{}: out of memory: {source}", crate::fs::shown(path))]
    OutOfMemory {
        /// The base.
        path: PathBuf,
        /// What could not be allocated.
        source: crate::memory::OutOfMemory,
    },
}

impl BaseFault {
    /// [`BaseFault::OutOfMemory`] of the base at `path`, as a `map_err` function.
    pub(crate) fn out_of_memory(
        path: &std::path::Path,
    ) -> impl FnOnce(crate::memory::OutOfMemory) -> BaseFault + '_ {
        move |source| BaseFault::OutOfMemory {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The error of writing a delta against this base: what reading the base itself would
    /// report (module doc).
    pub(crate) fn writing(self) -> Error {
        match self {
            BaseFault::NoBase => Error::Usage(self.to_string()),
            BaseFault::OutOfMemory { path, source } => Error::OutOfMemory {
                path,
                source,
                advice: DELTA_ADVICE.into(),
            },
            BaseFault::Read {
                path,
                seq,
                at,
                source,
            } => {
                let source = io::Error::new(
                    source.kind(),
                    format!("base frame {seq} at byte {at}: {source}"),
                );
                Error::io(path, "read the delta base", source)
            }
            // Sealed: a tag that fails or a structure under it that breaks a rule is damage
            // after the base's header verified with its key, never "wrong key".
            BaseFault::Damaged {
                path,
                seq,
                at,
                sealed: true,
            }
            | BaseFault::Invalid {
                path,
                seq,
                at,
                sealed: true,
                ..
            } => Error::Damaged {
                path,
                offset: at,
                frame: seq,
            },
            BaseFault::Damaged {
                path,
                seq,
                at,
                sealed: false,
            } => Error::Integrity {
                path,
                what: format!("base frame {seq} at byte {at}: checksum mismatch"),
            },
            BaseFault::Invalid {
                path, at, problem, ..
            } => Error::Corrupt {
                path,
                offset: at,
                source: FormatError::invalid("delta base", problem),
            },
        }
    }

    /// The error of reading `delta`'s frame `frame` at byte `offset`, whose base region this
    /// fault made unusable: a failed read of the base is I/O (exit 4), as it is for any
    /// archive; anything else is the delta-base error (exit 9).
    pub(crate) fn reading(self, delta: PathBuf, offset: u64, frame: u64) -> Error {
        match &self {
            BaseFault::Read { source, .. } => {
                let source = io::Error::new(
                    source.kind(),
                    format!("frame {frame} at byte {offset}: {self}"),
                );
                Error::io(delta, "read its base", source)
            }
            BaseFault::OutOfMemory { source, .. } => Error::OutOfMemory {
                path: delta,
                source: *source,
                advice: DELTA_ADVICE.into(),
            },
            _ => Error::Base(BaseError::Region {
                path: delta,
                offset,
                frame,
                problem: self.to_string(),
            }),
        }
    }
}
