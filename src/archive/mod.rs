//! The parallel archive writer and reader: ordering, bounded memory, and the composition of
//! the format, codec and crypto stages.

pub mod pipeline;
