//! The parallel archive writer and reader: ordering, bounded memory, and the composition of
//! the format, codec and crypto stages.

mod blocks;
pub mod budget;
mod chain;
pub mod delta;
mod delta_ref;
mod fill;
mod finish;
mod group;
mod output;
pub mod pipeline;
pub mod reader;
mod seal;
pub mod visit;
pub mod write_opts;
pub mod writer;

pub use reader::{Archive, OpenOptions, ScanSummary, Visitor};
pub use writer::{ArchiveWriter, BcjMode, ContentSource, ReaderSource, WriteOptions, WriteSummary};

/// Feeds `n` zero bytes (a hole) to a BLAKE3 hasher, 64 KiB at a time: how holes enter a
/// file's digest on both the writing and the reading side.
pub(crate) fn hash_zeros(hasher: &mut blake3::Hasher, mut n: u64) {
    static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
    while n > 0 {
        let k = n.min(ZEROS.len() as u64) as usize;
        hasher.update(&ZEROS[..k]);
        n -= k as u64;
    }
}
