//! krypta: an archiver for encrypted, long-lived backups.
//!
//! The pipeline (see `docs/FORMAT.md` for the bytes): inputs are walked into entries,
//! serialised into one logical record stream, cut into blocks, and each block is
//! BCJ-filtered, zstd-compressed and sealed (AES-256-CTR + HMAC-SHA256, or a BLAKE3
//! checksum for unencrypted archives) in parallel, then written strictly in order,
//! followed by the index and an authenticated footer.

pub mod archive;
pub mod bench;
pub mod codec;
pub mod crypto;
pub mod error;
pub mod format;
pub mod fs;
pub mod kat;

pub use error::{Error, Result};
