//! The parallel archive writer and reader: ordering, bounded memory, and the composition of
//! the format, codec and crypto stages.

pub mod pipeline;
pub mod reader;
pub mod visit;
pub mod writer;

pub use reader::{Archive, OpenOptions, ScanSummary, Visitor};
pub use writer::{ArchiveWriter, BcjMode, ContentSource, ReaderSource, WriteOptions, WriteSummary};
