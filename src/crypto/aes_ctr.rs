//! AES-256-CTR (SP 800-38A §6.5, 128-bit big-endian counter: §B.1) over aws-lc's
//! `AES_ctr128_encrypt`, through `aws-lc-rs`.
//!
//! Why not the RustCrypto `ctr` + `aes` crates (used before, and still the reference in this
//! module's tests): measured on the development machine (AMD EPYC with VAES, 4 MiB buffers,
//! one core), `ctr::Ctr128BE<Aes256>` ran at 3.6–4.1 GB/s and a hand-made counter loop over
//! `aes`'s block encryption at 4.0–4.2 GB/s, while `openssl speed -evp aes-256-ctr` gave
//! 8.0 GB/s and aws-lc 8.2 GB/s. Sealing a frame is AES-CTR then HMAC-SHA256 on one core
//! (HMAC already at OpenSSL's speed, 1.7 GB/s), so the cipher was a third of a worker's time
//! and the one-core write path stayed at 1.26× the `openssl speed` limit (table 15). The
//! counter semantics are the same: the whole 16-byte block is the counter, incremented
//! modulo 2^128 (checked against `ctr` here, across 32-, 64- and 128-bit carries).
//!
//! Key material: `aws-lc-rs` wipes the AES key schedule (`SymmetricCipherKey`'s `Drop`) and
//! its copy of the key bytes (`UnboundCipherKey`'s buffer) when dropped, as the RustCrypto
//! states did with their `zeroize` features (docs/SECURITY.md, "Secrets in memory").

use aws_lc_rs::cipher::{AES_256, EncryptingKey, EncryptionContext, UnboundCipherKey};

/// An AES-256-CTR key whose schedule is computed once, for many buffers and counters.
pub struct Aes256Ctr(EncryptingKey);

impl Aes256Ctr {
    /// The key schedule of `key`.
    pub fn new(key: &[u8; 32]) -> Aes256Ctr {
        // A 32-byte key is what AES_256 takes: aws-lc-rs refuses only other lengths.
        let unbound = UnboundCipherKey::new(&AES_256, key).expect("a 32-byte AES-256 key");
        Aes256Ctr(EncryptingKey::ctr(unbound).expect("AES-256 has a CTR mode"))
    }

    /// XORs `buf` with the key stream whose first counter block is `iv` (any length,
    /// including 0 and a partial last block). Encryption and decryption are the same.
    pub fn apply(&self, iv: &[u8; 16], buf: &mut [u8]) {
        // CTR takes a 16-byte IV context and any length: aws-lc-rs refuses only another kind
        // of context.
        self.0
            .less_safe_encrypt(buf, EncryptionContext::Iv128((*iv).into()))
            .expect("CTR with a 128-bit IV");
    }
}

/// The counter block `blocks` 16-byte blocks after `iv` (128-bit big-endian, modulo 2^128):
/// where the key stream of a buffer's piece starting `16 × blocks` bytes in begins.
pub fn counter_after(iv: &[u8; 16], blocks: u64) -> [u8; 16] {
    u128::from_be_bytes(*iv)
        .wrapping_add(u128::from(blocks))
        .to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::{KeyIvInit, StreamCipher};

    type Reference = ctr::Ctr128BE<aes::Aes256>;

    fn reference(key: &[u8; 32], iv: &[u8; 16], buf: &mut [u8]) {
        Reference::new(key.into(), iv.into()).apply_keystream(buf);
    }

    #[test]
    fn the_key_stream_is_ctr128_be_at_every_length_and_across_every_carry() {
        let key: [u8; 32] = std::array::from_fn(|i| (i * 7 + 3) as u8);
        let k = Aes256Ctr::new(&key);
        let ivs: [[u8; 16]; 5] = [
            [0; 16],
            // The low 32, 64 and all 128 bits about to wrap within the buffer.
            u128::from(u32::MAX - 3).to_be_bytes(),
            u128::from(u64::MAX - 1).to_be_bytes(),
            (u128::MAX - 2).to_be_bytes(),
            [0x5a; 16],
        ];
        for iv in ivs {
            for len in [0usize, 1, 15, 16, 17, 64, 100, 4096, 65_536 + 5] {
                let plain: Vec<u8> = (0..len).map(|i| (i * 31 + 1) as u8).collect();
                let mut ours = plain.clone();
                k.apply(&iv, &mut ours);
                let mut theirs = plain.clone();
                reference(&key, &iv, &mut theirs);
                assert!(ours == theirs, "iv {iv:02x?}, len {len}");
                k.apply(&iv, &mut ours);
                assert!(ours == plain, "applying twice gives the plaintext back");
            }
        }
    }

    #[test]
    fn a_buffer_in_pieces_matches_one_pass_with_counter_after() {
        let key = [9u8; 32];
        let k = Aes256Ctr::new(&key);
        let iv = u128::from(u64::MAX - 40).to_be_bytes();
        let plain: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let mut whole = plain.clone();
        k.apply(&iv, &mut whole);
        let mut pieces = plain.clone();
        for (j, chunk) in pieces.chunks_mut(1024).enumerate() {
            k.apply(&counter_after(&iv, (j * 1024 / 16) as u64), chunk);
        }
        assert!(pieces == whole);
        assert_eq!(counter_after(&(u128::MAX.to_be_bytes()), 2), {
            let mut one = [0u8; 16];
            one[15] = 1;
            one
        });
    }
}
