//! The whole key schedule: primitives, the file key and its subkeys, frame/header/footer
//! sealing, recipient stanzas (password KDFs, key files) and the typed key text format.
//!
//! Nothing outside this module touches key material. The construction, in one place:
//!
//! 1. A fresh random 32-byte [`keys::FileKey`] per archive ([`keys::FileKey::generate`]).
//! 2. [`keys::Subkeys::derive`]: HKDF-SHA256 (RFC 5869) with the 16-byte archive id as salt
//!    and one label per purpose gives the block encryption, block MAC, header MAC and footer
//!    MAC keys.
//! 3. [`frame::Protection`] seals every frame (AES-256-CTR, then HMAC-SHA256 over the frame's
//!    meaning, IV and ciphertext; verify before decrypt) and tags header and footer.
//! 4. [`stanza`] wraps the file key once per recipient: a key-encryption key from Argon2id,
//!    PBKDF2 or a key file, then [`stanza::seal_file_key`].
//! 5. [`sign`] signs an archive (hybrid ML-DSA-65 + Ed25519 over its transcript);
//!    [`signkey`] reads and writes the signer's key files.

pub mod aes_ctr;
pub mod argon2_memory;
pub mod boxkey;
pub mod frame;
pub mod kdf;
pub mod keyfile;
pub mod keys;
pub mod keytext;
pub mod password;
pub mod pqbox;
pub mod primitives;
pub mod protect;
pub mod sign;
pub mod signkey;
pub mod stanza;

pub use frame::Protection;
pub use keys::{ArchiveId, FileKey, Subkeys};
pub use keytext::KeyKind;
pub use stanza::{Identity, Kdf, Recipient};

/// Why a cryptographic operation failed. The variants that mean "wrong key or tampered"
/// ([`CryptoError::TagMismatch`], [`CryptoError::NoStanzaOpened`]) carry no detail on purpose.
#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
    /// A MAC or checksum did not verify (tampered, corrupt, or the wrong key).
    #[error("authentication tag mismatch")]
    TagMismatch,
    /// No identity given opened any stanza (wrong password or key, or tampered stanzas).
    #[error("no recipient stanza opened with the keys given")]
    NoStanzaOpened,
    /// A KDF parameter is above the documented ceiling; refused before the KDF runs.
    #[error("{param} = {value} exceeds the limit {limit}")]
    KdfLimit {
        /// Which parameter ("argon2id memory KiB", "argon2id iterations", "argon2id lanes",
        /// "pbkdf2 iterations").
        param: &'static str,
        /// Value found.
        value: u64,
        /// The ceiling.
        limit: u64,
    },
    /// A KDF parameter is below the floor writers and readers share ([`kdf`]), or below the
    /// algorithm's own minimum; refused before the KDF runs.
    #[error("{param} = {value} is below the minimum {min}")]
    KdfTooWeak {
        /// Which parameter (same names as [`CryptoError::KdfLimit`]).
        param: &'static str,
        /// Value found.
        value: u64,
        /// The minimum.
        min: u64,
    },
    /// The stanzas break a rule every header follows (more than 64, or more than one
    /// password stanza): see `format::stanza::check_stanza_set`.
    #[error("{0}")]
    StanzaSet(crate::format::FormatError),
    /// An empty password was given while creating an archive.
    #[error("empty password refused")]
    EmptyPassword,
    /// The operating system's random source failed.
    #[error("the OS random number generator failed: {0}")]
    Random(getrandom::Error),
    /// Key text (a key file's contents) is malformed, damaged or of another kind.
    #[error("{problem}")]
    BadKeyText {
        /// What is wrong, in plain words (names both kinds on a kind mismatch).
        problem: String,
    },
    /// An HKDF-SHA256 output longer than RFC 5869 allows was requested.
    #[error("HKDF output of {requested} bytes requested, at most {max} allowed")]
    HkdfLength {
        /// Bytes requested.
        requested: usize,
        /// 255 × 32 = 8160.
        max: usize,
    },
    /// A password was needed and asking for it on the terminal failed (no terminal, or the
    /// two entries differ); the text says what to do instead.
    #[error("{0}")]
    Prompt(String),
    /// The Argon2 implementation refused its inputs (parameters outside RFC 9106 §3.1).
    #[error("argon2id: {0}")]
    Argon2(argon2::Error),
    /// The kernel refused to map the Argon2id memory matrix (out of memory or address space).
    #[error("argon2id: cannot map {bytes} bytes of memory: {source}")]
    Argon2Memory {
        /// Bytes asked for (m KiB × 1024).
        bytes: usize,
        /// The `mmap` error.
        source: std::io::Error,
    },
}
