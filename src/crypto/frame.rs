//! The protection of archive structures: sealing and opening frames, and the header and
//! footer tags, for encrypted archives (AES-256-CTR + HMAC-SHA256) and unencrypted ones
//! (BLAKE3 checksums).
//!
//! Sealed (encrypted) archive, keys from [`Subkeys`]:
//!
//! - frame: `IV = seq (u64 big-endian) ‖ 0u64`; `body ← AES-256-CTR(block_enc, IV)(body)`;
//!   `tag = HMAC-SHA256(block_mac, "krypta/v1/frame" ‖ archive_id ‖ frame_header ‖ IV ‖ body)`.
//!   The IV is unique per frame within an archive because `seq` is unique and one body is far
//!   below 2^64 AES blocks, so the low half (the running counter) never carries into the
//!   high half; the key is unique per archive (HKDF salt = archive id).
//! - header: `tag = HMAC-SHA256(header_mac, header bytes before the tag)`; the header holds the
//!   archive id.
//! - footer: `tag = HMAC-SHA256(footer_mac, archive_id ‖ footer bytes before the tag)`.
//!
//! Plain (unencrypted) archive: bodies are stored as they are, and each tag is a BLAKE3
//! derive-key hash (context strings [`PLAIN_FRAME_CONTEXT`], [`PLAIN_HEADER_CONTEXT`],
//! [`PLAIN_FOOTER_CONTEXT`]) over the same bytes minus the IV and label: a checksum against
//! corruption, not an authenticator.
//!
//! Every tag is 32 bytes and compared in constant time (`subtle`); a sealed body is
//! decrypted only after its tag verified (encrypt-then-MAC).

use hmac::Mac;
use subtle::ConstantTimeEq;

use super::CryptoError;
use super::aes_ctr::{Aes256Ctr, counter_after};
use super::keys::{ArchiveId, Subkeys};
use super::primitives::{aes256_ctr_apply, hmac_sha256, hmac_sha256_state};

/// Domain label that starts every frame MAC input.
pub const FRAME_MAC_LABEL: &[u8] = b"krypta/v1/frame";
/// BLAKE3 derive-key context of plain frame checksums.
pub const PLAIN_FRAME_CONTEXT: &str = "krypta v1 frame checksum";
/// BLAKE3 derive-key context of the plain header checksum.
pub const PLAIN_HEADER_CONTEXT: &str = "krypta v1 header checksum";
/// BLAKE3 derive-key context of the plain footer checksum.
pub const PLAIN_FOOTER_CONTEXT: &str = "krypta v1 footer checksum";

/// Bytes encrypted then MACed per step while sealing, so each piece is still in cache when
/// the MAC reads it (a multiple of the 16-byte AES block).
const SEAL_CHUNK: usize = 64 * 1024;
const _: () = assert!(SEAL_CHUNK.is_multiple_of(16));

/// The 16-byte AES-256-CTR initial counter block of one frame: `seq` as u64 big-endian in
/// the high half, zero in the low half (the per-block counter). The only constructor takes
/// the frame's sequence number, so two frames of one archive never share a counter block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameIv([u8; 16]);

impl FrameIv {
    /// The IV of frame number `seq`.
    pub fn for_seq(seq: u64) -> FrameIv {
        let mut iv = [0u8; 16];
        iv[..8].copy_from_slice(&seq.to_be_bytes());
        FrameIv(iv)
    }

    /// The 16 bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

/// How the structures of one archive are protected.
#[derive(Debug, Clone)]
pub enum Protection {
    /// Unencrypted: BLAKE3 checksums only.
    Plain,
    /// Encrypted and authenticated with the archive's subkeys.
    Sealed(Box<Subkeys>),
}

/// A BLAKE3 derive-key hash of the concatenation of `parts`, 32 bytes.
fn plain_checksum(context: &str, parts: &[&[u8]]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key(context);
    for p in parts {
        h.update(p);
    }
    *h.finalize().as_bytes()
}

/// Constant-time tag comparison.
fn check(expected: &[u8; 32], tag: &[u8; 32]) -> Result<(), CryptoError> {
    if bool::from(expected.ct_eq(tag)) {
        Ok(())
    } else {
        Err(CryptoError::TagMismatch)
    }
}

impl Protection {
    /// True for an encrypted archive.
    pub fn is_sealed(&self) -> bool {
        matches!(self, Protection::Sealed(_))
    }

    /// Seals one frame in place and returns its 32-byte tag. `frame_header` is the 16 clear
    /// header bytes (kind, flags, body_len, seq), `seq` the frame's sequence number, `body`
    /// the whole body (block header and payload). Sealed: the body becomes AES-256-CTR
    /// ciphertext and the tag an HMAC-SHA256 (see the module doc); Plain: the body is left
    /// as it is and the tag is its BLAKE3 checksum.
    pub fn seal_frame(
        &self,
        archive_id: &ArchiveId,
        frame_header: &[u8; 16],
        seq: u64,
        body: &mut [u8],
    ) -> [u8; 32] {
        match self {
            Protection::Plain => {
                plain_checksum(PLAIN_FRAME_CONTEXT, &[archive_id, frame_header, body])
            }
            Protection::Sealed(keys) => {
                let iv = FrameIv::for_seq(seq);
                let cipher = Aes256Ctr::new(keys.block_enc());
                let mut mac = frame_mac(keys, archive_id, frame_header, &iv);
                for (j, chunk) in body.chunks_mut(SEAL_CHUNK).enumerate() {
                    // SEAL_CHUNK is a whole number of 16-byte blocks: each piece's key
                    // stream starts where the one before ended.
                    let at = counter_after(iv.as_bytes(), (j * SEAL_CHUNK / 16) as u64);
                    cipher.apply(&at, chunk);
                    mac.update(chunk);
                }
                mac.finalize().into_bytes().into()
            }
        }
    }

    /// Verifies one frame's `tag` over its head and (still encrypted) `body` without
    /// decrypting it (constant time): `rekey` copies verified ciphertext as it is.
    pub fn verify_frame(
        &self,
        archive_id: &ArchiveId,
        frame_header: &[u8; 16],
        seq: u64,
        body: &[u8],
        tag: &[u8; 32],
    ) -> Result<(), CryptoError> {
        match self {
            Protection::Plain => check(
                &plain_checksum(PLAIN_FRAME_CONTEXT, &[archive_id, frame_header, body]),
                tag,
            ),
            Protection::Sealed(keys) => {
                let iv = FrameIv::for_seq(seq);
                let mut mac = frame_mac(keys, archive_id, frame_header, &iv);
                mac.update(body);
                check(&mac.finalize().into_bytes().into(), tag)
            }
        }
    }

    /// Opens one frame in place: verifies `tag` first (constant time) and only then, for a
    /// sealed archive, decrypts `body`. On [`CryptoError::TagMismatch`] the body is untouched.
    pub fn open_frame(
        &self,
        archive_id: &ArchiveId,
        frame_header: &[u8; 16],
        seq: u64,
        body: &mut [u8],
        tag: &[u8; 32],
    ) -> Result<(), CryptoError> {
        match self {
            Protection::Plain => check(
                &plain_checksum(PLAIN_FRAME_CONTEXT, &[archive_id, frame_header, body]),
                tag,
            ),
            Protection::Sealed(keys) => {
                let iv = FrameIv::for_seq(seq);
                let mut mac = frame_mac(keys, archive_id, frame_header, &iv);
                mac.update(body);
                check(&mac.finalize().into_bytes().into(), tag)?;
                aes256_ctr_apply(keys.block_enc(), iv.as_bytes(), body);
                Ok(())
            }
        }
    }

    /// The tag of a header: `header` is every header byte before the tag. Sealed:
    /// HMAC-SHA256(header_mac, header); Plain: BLAKE3 derive-key checksum.
    pub fn header_tag(&self, header: &[u8]) -> [u8; 32] {
        match self {
            Protection::Plain => plain_checksum(PLAIN_HEADER_CONTEXT, &[header]),
            Protection::Sealed(keys) => hmac_sha256(keys.header_mac(), &[header]),
        }
    }

    /// Verifies a header tag in constant time.
    pub fn verify_header(&self, header: &[u8], tag: &[u8; 32]) -> Result<(), CryptoError> {
        check(&self.header_tag(header), tag)
    }

    /// The tag of a footer: `footer` is the footer bytes before the tag. Sealed:
    /// HMAC-SHA256(footer_mac, archive_id ‖ footer); Plain: BLAKE3 derive-key checksum.
    pub fn footer_tag(&self, archive_id: &ArchiveId, footer: &[u8]) -> [u8; 32] {
        match self {
            Protection::Plain => plain_checksum(PLAIN_FOOTER_CONTEXT, &[archive_id, footer]),
            Protection::Sealed(keys) => hmac_sha256(keys.footer_mac(), &[archive_id, footer]),
        }
    }

    /// Verifies a footer tag in constant time.
    pub fn verify_footer(
        &self,
        archive_id: &ArchiveId,
        footer: &[u8],
        tag: &[u8; 32],
    ) -> Result<(), CryptoError> {
        check(&self.footer_tag(archive_id, footer), tag)
    }
}

/// The frame MAC state after the fixed prefix `label ‖ archive_id ‖ frame_header ‖ IV`.
fn frame_mac(
    keys: &Subkeys,
    archive_id: &ArchiveId,
    frame_header: &[u8; 16],
    iv: &FrameIv,
) -> hmac::Hmac<sha2::Sha256> {
    let mut mac = hmac_sha256_state(keys.block_mac());
    mac.update(FRAME_MAC_LABEL);
    mac.update(archive_id);
    mac.update(frame_header);
    mac.update(iv.as_bytes());
    mac
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::keys::FileKey;
    use crate::crypto::primitives::hmac_sha256;

    const ID: ArchiveId = [0x11; 16];
    const HDR: [u8; 16] = [1, 0, 0, 0, 40, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0];

    fn sealed() -> Protection {
        Protection::Sealed(Box::new(Subkeys::derive(
            &FileKey::from_bytes([0x22; 32]),
            &ID,
        )))
    }

    fn body() -> Vec<u8> {
        (0..40u8).collect()
    }

    #[test]
    fn iv_is_seq_big_endian_then_zero() {
        let iv = FrameIv::for_seq(0x0102_0304_0506_0708);
        assert_eq!(
            iv.as_bytes(),
            &[1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn sealed_frame_is_ctr_then_hmac_as_documented() {
        let p = sealed();
        let Protection::Sealed(keys) = &p else {
            unreachable!()
        };
        let mut b = body();
        let tag = p.seal_frame(&ID, &HDR, 5, &mut b);
        let mut expect = body();
        let iv = FrameIv::for_seq(5);
        aes256_ctr_apply(keys.block_enc(), iv.as_bytes(), &mut expect);
        assert_eq!(b, expect);
        let mac = hmac_sha256(
            keys.block_mac(),
            &[b"krypta/v1/frame", &ID, &HDR, iv.as_bytes(), &b],
        );
        assert_eq!(tag, mac);
        p.open_frame(&ID, &HDR, 5, &mut b, &tag).unwrap();
        assert_eq!(b, body());
    }

    #[test]
    fn sealing_a_multi_chunk_body_matches_one_pass() {
        let p = sealed();
        let Protection::Sealed(keys) = &p else {
            unreachable!()
        };
        let mut b: Vec<u8> = (0..SEAL_CHUNK * 2 + 77).map(|i| i as u8).collect();
        let plain = b.clone();
        let tag = p.seal_frame(&ID, &HDR, 9, &mut b);
        let mut expect = plain.clone();
        aes256_ctr_apply(
            keys.block_enc(),
            FrameIv::for_seq(9).as_bytes(),
            &mut expect,
        );
        assert_eq!(b, expect);
        p.open_frame(&ID, &HDR, 9, &mut b, &tag).unwrap();
        assert_eq!(b, plain);
    }

    #[test]
    fn plain_frame_keeps_body_and_checks_blake3() {
        let p = Protection::Plain;
        let mut b = body();
        let tag = p.seal_frame(&ID, &HDR, 5, &mut b);
        assert_eq!(b, body());
        let mut cat = ID.to_vec();
        cat.extend_from_slice(&HDR);
        cat.extend_from_slice(&b);
        assert_eq!(tag, blake3::derive_key("krypta v1 frame checksum", &cat));
        p.open_frame(&ID, &HDR, 5, &mut b, &tag).unwrap();
        b[3] ^= 1;
        assert!(matches!(
            p.open_frame(&ID, &HDR, 5, &mut b, &tag),
            Err(CryptoError::TagMismatch)
        ));
    }

    #[test]
    fn every_single_bit_flip_of_header_body_or_tag_is_rejected_and_body_left_untouched() {
        for p in [sealed(), Protection::Plain] {
            let mut sealed_body = body();
            let tag = p.seal_frame(&ID, &HDR, 5, &mut sealed_body);
            for bit in 0..16 * 8 {
                let mut h = HDR;
                h[bit / 8] ^= 1 << (bit % 8);
                let mut b = sealed_body.clone();
                assert!(
                    p.open_frame(&ID, &h, 5, &mut b, &tag).is_err(),
                    "header bit {bit}"
                );
                assert_eq!(b, sealed_body);
            }
            for bit in 0..sealed_body.len() * 8 {
                let mut b = sealed_body.clone();
                b[bit / 8] ^= 1 << (bit % 8);
                let flipped = b.clone();
                assert!(
                    p.open_frame(&ID, &HDR, 5, &mut b, &tag).is_err(),
                    "body bit {bit}"
                );
                assert_eq!(b, flipped);
            }
            for bit in 0..32 * 8 {
                let mut t = tag;
                t[bit / 8] ^= 1 << (bit % 8);
                let mut b = sealed_body.clone();
                assert!(
                    p.open_frame(&ID, &HDR, 5, &mut b, &t).is_err(),
                    "tag bit {bit}"
                );
            }
        }
    }

    #[test]
    fn frame_moved_to_another_seq_or_archive_is_rejected() {
        let p = sealed();
        let mut b = body();
        let tag = p.seal_frame(&ID, &HDR, 5, &mut b);
        let mut c = b.clone();
        assert!(matches!(
            p.open_frame(&ID, &HDR, 6, &mut c, &tag),
            Err(CryptoError::TagMismatch)
        ));
        assert!(matches!(
            p.open_frame(&[0x12; 16], &HDR, 5, &mut c, &tag),
            Err(CryptoError::TagMismatch)
        ));
        // The same file key under another archive id gives other subkeys entirely.
        let other = Protection::Sealed(Box::new(Subkeys::derive(
            &FileKey::from_bytes([0x22; 32]),
            &[0x12; 16],
        )));
        assert!(other.open_frame(&ID, &HDR, 5, &mut c, &tag).is_err());
        let plain = Protection::Plain;
        let mut d = body();
        let ptag = plain.seal_frame(&ID, &HDR, 5, &mut d);
        assert!(
            plain
                .open_frame(&[0x12; 16], &HDR, 5, &mut d, &ptag)
                .is_err()
        );
    }

    #[test]
    fn header_and_footer_tags_verify_and_reject_changes() {
        for p in [sealed(), Protection::Plain] {
            let header = b"\x89KRYPTA\n header bytes".to_vec();
            let tag = p.header_tag(&header);
            p.verify_header(&header, &tag).unwrap();
            let mut bad = header.clone();
            bad[9] ^= 0x80;
            assert!(matches!(
                p.verify_header(&bad, &tag),
                Err(CryptoError::TagMismatch)
            ));
            let footer = [3u8; 32];
            let ftag = p.footer_tag(&ID, &footer);
            p.verify_footer(&ID, &footer, &ftag).unwrap();
            assert!(p.verify_footer(&[0; 16], &footer, &ftag).is_err());
            assert!(p.verify_footer(&ID, &footer[..31], &ftag).is_err());
        }
    }

    #[test]
    fn header_footer_and_frame_tags_use_separate_keys() {
        let p = sealed();
        let Protection::Sealed(keys) = &p else {
            unreachable!()
        };
        assert_eq!(p.header_tag(b"h"), hmac_sha256(keys.header_mac(), &[b"h"]));
        assert_eq!(
            p.footer_tag(&ID, b"f"),
            hmac_sha256(keys.footer_mac(), &[&ID, b"f"])
        );
        assert_ne!(p.header_tag(b"h"), hmac_sha256(keys.block_mac(), &[b"h"]));
        assert!(p.is_sealed());
        assert!(!Protection::Plain.is_sealed());
    }
}
