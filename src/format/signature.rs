//! The signature frame of a signed format-2 archive (docs/FORMAT.md §9.1): frame kind 3,
//! between the last index frame and the footer, fixed length.
//!
//! ```text
//! head  (16)   u8 3 ‖ u8 0 ‖ u16 0 ‖ u32 B = 5357 ‖ u64 seq = D + I
//! body  (5357) signer public key (1984: ML-DSA-65 1952 ‖ Ed25519 32)
//!              ‖ ML-DSA-65 signature (3309) ‖ Ed25519 signature (64)
//! check (32)   BLAKE3-DK("krypta v2 signature frame checksum", archive id ‖ head ‖ body)
//! ```
//!
//! The check is a checksum, in encrypted archives too: it tells a damaged signature frame
//! from a forged one; what makes the frame authentic is the signature itself, over a message
//! that holds every frame tag, the header and the footer (`crypto::sign::Transcript`). The
//! body is not encrypted: anyone can verify who signed (as with minisign and signify).
//! Its length is fixed, so a seekable reader finds it at `footer offset − 5405`.

use super::FormatError;
use super::frame::{FRAME_HEADER_LEN, FRAME_KIND_SIGNATURE, TAG_LEN};
use crate::crypto::sign::{HYBRID_SIG_LEN, SIGNER_PUBLIC_LEN};

/// Body length of the signature frame, bytes.
pub const SIGNATURE_BODY_LEN: usize = SIGNER_PUBLIC_LEN + HYBRID_SIG_LEN;
/// Whole signature frame (head, body, check), bytes.
pub const SIGNATURE_FRAME_LEN: usize = FRAME_HEADER_LEN + SIGNATURE_BODY_LEN + TAG_LEN;
/// BLAKE3 derive-key context of the signature frame's checksum.
const CHECK_CONTEXT: &str = "krypta v2 signature frame checksum";

/// What a signature frame carries.
#[derive(Clone)]
pub struct SignatureFrame {
    /// Its sequence number: the number of data and index frames before it.
    pub seq: u64,
    /// The signer's public key bytes (unvalidated here: `crypto::sign::SignerPublic`).
    pub signer: Box<[u8; SIGNER_PUBLIC_LEN]>,
    /// The hybrid signature.
    pub signature: Box<[u8; HYBRID_SIG_LEN]>,
}

fn checksum(archive_id: &[u8; 16], head_body: &[u8]) -> [u8; 32] {
    let mut m = Vec::with_capacity(16 + head_body.len());
    m.extend_from_slice(archive_id);
    m.extend_from_slice(head_body);
    let mut out = [0u8; 32];
    crate::crypto::primitives::blake3_derive_key(CHECK_CONTEXT, &m, &mut out);
    out
}

impl SignatureFrame {
    /// The frame's bytes in the archive with id `archive_id`.
    pub fn to_bytes(&self, archive_id: &[u8; 16]) -> Vec<u8> {
        let mut b = Vec::with_capacity(SIGNATURE_FRAME_LEN);
        b.push(FRAME_KIND_SIGNATURE);
        b.extend_from_slice(&[0, 0, 0]);
        b.extend_from_slice(&(SIGNATURE_BODY_LEN as u32).to_le_bytes());
        b.extend_from_slice(&self.seq.to_le_bytes());
        b.extend_from_slice(&self.signer[..]);
        b.extend_from_slice(&self.signature[..]);
        let check = checksum(archive_id, &b);
        b.extend_from_slice(&check);
        b
    }

    /// Parses the frame's bytes: the head must be exactly kind 3, flags 0, reserved 0, body
    /// length 5357 and sequence number `seq`, and the checksum must match.
    pub fn parse(
        b: &[u8; SIGNATURE_FRAME_LEN],
        archive_id: &[u8; 16],
        seq: u64,
    ) -> Result<SignatureFrame, FormatError> {
        let bad = |p: String| FormatError::invalid("signature frame", p);
        if b[0] != FRAME_KIND_SIGNATURE {
            return Err(bad(format!(
                "frame kind {} where the signature frame (kind 3) must be",
                b[0]
            )));
        }
        if b[1..4] != [0, 0, 0] {
            return Err(bad("flags or reserved bytes are not zero".into()));
        }
        let len = u32::from_le_bytes(b[4..8].try_into().expect("4"));
        if len as usize != SIGNATURE_BODY_LEN {
            return Err(bad(format!(
                "body length {len} (a signature frame's is {SIGNATURE_BODY_LEN})"
            )));
        }
        let found = u64::from_le_bytes(b[8..16].try_into().expect("8"));
        if found != seq {
            return Err(bad(format!("sequence number {found}, expected {seq}")));
        }
        let (head_body, check) = b.split_at(SIGNATURE_FRAME_LEN - TAG_LEN);
        if checksum(archive_id, head_body) != check {
            return Err(bad(
                "checksum mismatch (the signature frame is damaged)".into()
            ));
        }
        let body = &head_body[FRAME_HEADER_LEN..];
        Ok(SignatureFrame {
            seq,
            signer: Box::new(body[..SIGNER_PUBLIC_LEN].try_into().expect("len")),
            signature: Box::new(body[SIGNER_PUBLIC_LEN..].try_into().expect("len")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_frame_parse_of_write_is_identity_and_every_bit_counts() {
        let f = SignatureFrame {
            seq: 7,
            signer: Box::new([3; SIGNER_PUBLIC_LEN]),
            signature: Box::new([4; HYBRID_SIG_LEN]),
        };
        let id = [9u8; 16];
        let b: [u8; SIGNATURE_FRAME_LEN] = f.to_bytes(&id).try_into().unwrap();
        assert_eq!(SIGNATURE_FRAME_LEN, 5405);
        assert_eq!(&b[..8], &[3, 0, 0, 0, 0xed, 0x14, 0, 0]);
        let g = SignatureFrame::parse(&b, &id, 7).unwrap();
        assert_eq!(
            (g.seq, &g.signer[..], &g.signature[..]),
            (7, &f.signer[..], &f.signature[..])
        );
        assert!(SignatureFrame::parse(&b, &id, 8).is_err());
        assert!(SignatureFrame::parse(&b, &[8; 16], 7).is_err());
        for i in (0..SIGNATURE_FRAME_LEN)
            .step_by(97)
            .chain([1, 2, 3, 4, 15, 5404])
        {
            let mut x = b;
            x[i] ^= 0x10;
            assert!(SignatureFrame::parse(&x, &id, 7).is_err(), "byte {i}");
        }
    }
}
