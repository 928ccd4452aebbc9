//! The per-archive file key and the subkeys derived from it (HKDF-SHA256, RFC 5869).

use zeroize::{Zeroize, ZeroizeOnDrop};

use super::CryptoError;
use super::primitives::{hkdf_sha256_array, random_bytes};

/// The random 16-byte archive id stored in the header: the HKDF salt of every subkey and of
/// every stanza wrap, and bound into every frame and footer tag.
pub type ArchiveId = [u8; 16];

/// HKDF info label of the block (frame body) encryption key.
pub const LABEL_BLOCK_ENC: &[u8] = b"krypta/v1/block-enc";
/// HKDF info label of the block (frame) MAC key.
pub const LABEL_BLOCK_MAC: &[u8] = b"krypta/v1/block-mac";
/// HKDF info label of the header MAC key.
pub const LABEL_HEADER_MAC: &[u8] = b"krypta/v1/header-mac";
/// HKDF info label of the footer MAC key.
pub const LABEL_FOOTER_MAC: &[u8] = b"krypta/v1/footer-mac";

/// The 32-byte file key: fresh and random per archive, the only key the archive's contents
/// depend on; stanzas wrap it. Zeroized on drop; `Debug` does not print it.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct FileKey([u8; 32]);

impl FileKey {
    /// A fresh key from the OS CSPRNG (32 bytes).
    pub fn generate() -> Result<FileKey, CryptoError> {
        let mut key = FileKey([0; 32]);
        random_bytes(&mut key.0)?;
        Ok(key)
    }

    /// Wraps known bytes (golden vectors, unwrapped stanzas).
    pub fn from_bytes(bytes: [u8; 32]) -> FileKey {
        FileKey(bytes)
    }

    /// The 32 key bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Debug for FileKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FileKey(<redacted>)")
    }
}

/// The four 32-byte subkeys of one archive, each
/// `HKDF-SHA256(ikm = file key, salt = archive id, info = label)` with the labels
/// [`LABEL_BLOCK_ENC`], [`LABEL_BLOCK_MAC`], [`LABEL_HEADER_MAC`], [`LABEL_FOOTER_MAC`]
/// (RFC 5869 §2; one key per purpose, never reused across purposes). Zeroized on drop.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Subkeys {
    block_enc: [u8; 32],
    block_mac: [u8; 32],
    header_mac: [u8; 32],
    footer_mac: [u8; 32],
}

impl Subkeys {
    /// Derives the subkeys of the archive `archive_id` from its file key.
    pub fn derive(file_key: &FileKey, archive_id: &ArchiveId) -> Subkeys {
        let one = |label: &[u8]| *hkdf_sha256_array::<32>(file_key.as_bytes(), archive_id, label);
        Subkeys {
            block_enc: one(LABEL_BLOCK_ENC),
            block_mac: one(LABEL_BLOCK_MAC),
            header_mac: one(LABEL_HEADER_MAC),
            footer_mac: one(LABEL_FOOTER_MAC),
        }
    }

    /// AES-256-CTR key for frame bodies, 32 bytes.
    pub fn block_enc(&self) -> &[u8; 32] {
        &self.block_enc
    }

    /// HMAC-SHA256 key for frame tags, 32 bytes.
    pub fn block_mac(&self) -> &[u8; 32] {
        &self.block_mac
    }

    /// HMAC-SHA256 key for the header tag, 32 bytes.
    pub fn header_mac(&self) -> &[u8; 32] {
        &self.header_mac
    }

    /// HMAC-SHA256 key for the footer tag, 32 bytes.
    pub fn footer_mac(&self) -> &[u8; 32] {
        &self.footer_mac
    }
}

impl std::fmt::Debug for Subkeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subkeys(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::primitives::hkdf_sha256;

    #[test]
    fn subkeys_are_hkdf_of_the_file_key_with_distinct_labels() {
        let fk = FileKey::from_bytes([7; 32]);
        let id = [9u8; 16];
        let sk = Subkeys::derive(&fk, &id);
        let mut expect = [0u8; 32];
        hkdf_sha256(&[7; 32], &id, b"krypta/v1/block-enc", &mut expect).unwrap();
        assert_eq!(sk.block_enc(), &expect);
        hkdf_sha256(&[7; 32], &id, b"krypta/v1/footer-mac", &mut expect).unwrap();
        assert_eq!(sk.footer_mac(), &expect);
        let all = [
            sk.block_enc(),
            sk.block_mac(),
            sk.header_mac(),
            sk.footer_mac(),
        ];
        for i in 0..4 {
            for j in i + 1..4 {
                assert_ne!(all[i], all[j]);
            }
        }
    }

    #[test]
    fn another_archive_id_gives_other_subkeys() {
        let fk = FileKey::from_bytes([7; 32]);
        let a = Subkeys::derive(&fk, &[0; 16]);
        let b = Subkeys::derive(&fk, &[1; 16]);
        assert_ne!(a.block_mac(), b.block_mac());
    }

    #[test]
    fn debug_output_redacts_keys() {
        let fk = FileKey::from_bytes([0xab; 32]);
        assert_eq!(format!("{fk:?}"), "FileKey(<redacted>)");
        assert_eq!(
            format!("{:?}", Subkeys::derive(&fk, &[0; 16])),
            "Subkeys(<redacted>)"
        );
    }

    #[test]
    fn generated_file_keys_differ() {
        assert_ne!(
            FileKey::generate().unwrap().as_bytes(),
            FileKey::generate().unwrap().as_bytes()
        );
    }
}
