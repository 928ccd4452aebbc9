//! Password key derivation: the Argon2id and PBKDF2 parameter sets, their defaults, the
//! bounds a writer accepts and the ceilings a reader enforces before running a KDF.
//!
//! Defaults were measured on the development machine (x86-64 with AES-NI, SHA-NI, AVX2; one
//! thread, release build, thread CPU time, medians of 3, ranges over 3 runs;
//! `tests/crypto_measure.rs`):
//!
//! | Argon2id, p = 1 | t = 2 | t = 3 | t = 4 |
//! |---|---|---|---|
//! | m = 64 MiB  | 0.14–0.18 s | 0.18–0.24 s | 0.21–0.29 s |
//! | m = 128 MiB | 0.32–0.36 s | 0.39–0.52 s | 0.49–0.65 s |
//! | m = 256 MiB | 0.63–0.78 s | 0.85–1.02 s | 1.12–1.28 s |
//!
//! The default, m = 256 MiB and t = 2, costs 0.6–0.8 s of one core there: inside the
//! 0.5–1 s target, and of two settings with equal time the one with more memory is the
//! stronger (RFC 9106 §4). PBKDF2-HMAC-SHA256 with 600,000 iterations (OWASP 2023) takes
//! 0.07 s with SHA-NI.
//!
//! Ceilings exist so that a crafted archive cannot make a reader allocate or spin without
//! bound: they are checked on the parameters stored in a stanza *before* any memory is
//! allocated.
//!
//! | parameter | default | writer bounds | reader accepts |
//! |---|---|---|---|
//! | argon2id memory | 262 144 KiB (256 MiB) | 8 192 ..= 4 194 304 KiB (8 MiB ..= 4 GiB) | 8·p ..= 4 194 304 KiB |
//! | argon2id iterations t | 2 | 1 ..= 16 | 1 ..= 16 |
//! | argon2id lanes p | 1 | 1 ..= 16 | 1 ..= 16 |
//! | pbkdf2 iterations | 600 000 | 100 000 ..= 10 000 000 | 1 ..= 10 000 000 |
//!
//! The worst case a reader accepts is Argon2id with 4 GiB and t = 16 (4 GiB of memory and
//! roughly 16 × 4096 / 256 × 0.4 s ≈ 100 s of one core here), or PBKDF2 with 10 million
//! iterations (about 1.2 s). The same two figures also bound the sum over all password
//! stanzas of one archive ([`check_total_work`]), so 64 stanzas at the ceiling are refused
//! rather than tried for hours.

use zeroize::Zeroizing;

use super::CryptoError;
use super::primitives::{argon2id, pbkdf2_hmac_sha256};

/// Default Argon2id memory, KiB (256 MiB).
pub const ARGON2ID_DEFAULT_M_KIB: u32 = 256 * 1024;
/// Default Argon2id iterations (time cost t).
pub const ARGON2ID_DEFAULT_T: u32 = 2;
/// Default Argon2id lanes (parallelism p).
pub const ARGON2ID_DEFAULT_P: u32 = 1;
/// Smallest Argon2id memory a writer accepts, KiB (8 MiB).
pub const ARGON2ID_CREATE_MIN_M_KIB: u32 = 8 * 1024;
/// Largest Argon2id memory written or read, KiB (4 GiB).
pub const ARGON2ID_MAX_M_KIB: u32 = 4 * 1024 * 1024;
/// Largest Argon2id iteration count written or read.
pub const ARGON2ID_MAX_T: u32 = 16;
/// Largest Argon2id lane count written or read.
pub const ARGON2ID_MAX_P: u32 = 16;
/// Default PBKDF2-HMAC-SHA256 iterations (OWASP 2023 recommendation).
pub const PBKDF2_DEFAULT_ITERATIONS: u32 = 600_000;
/// Fewest PBKDF2 iterations a writer accepts.
pub const PBKDF2_CREATE_MIN_ITERATIONS: u32 = 100_000;
/// Most PBKDF2 iterations written or read.
pub const PBKDF2_MAX_ITERATIONS: u32 = 10_000_000;

/// Parameter names used in [`CryptoError::KdfLimit`] and [`CryptoError::KdfTooWeak`].
pub mod param {
    /// Argon2id memory, KiB.
    pub const ARGON2ID_MEMORY: &str = "argon2id memory KiB";
    /// Argon2id time cost.
    pub const ARGON2ID_ITERATIONS: &str = "argon2id iterations";
    /// Argon2id parallelism.
    pub const ARGON2ID_LANES: &str = "argon2id lanes";
    /// PBKDF2 iteration count.
    pub const PBKDF2_ITERATIONS: &str = "pbkdf2 iterations";
    /// Σ memory KiB × iterations over the Argon2id stanzas of one archive.
    pub const ARGON2ID_TOTAL_WORK: &str = "argon2id memory KiB × iterations, all stanzas";
    /// Σ iterations over the PBKDF2 stanzas of one archive.
    pub const PBKDF2_TOTAL_ITERATIONS: &str = "pbkdf2 iterations, all stanzas";
}

/// Most Argon2id work one archive may ask of a reader, summed over its stanzas, KiB × passes:
/// one stanza at both ceilings (4 GiB, t = 16). Bounds the time a crafted archive with many
/// expensive stanzas can cost (each is tried with each password given).
pub const ARGON2ID_MAX_TOTAL_WORK: u64 = ARGON2ID_MAX_M_KIB as u64 * ARGON2ID_MAX_T as u64;
/// Most PBKDF2 iterations one archive may ask of a reader, summed over its stanzas.
pub const PBKDF2_MAX_TOTAL_ITERATIONS: u64 = PBKDF2_MAX_ITERATIONS as u64;

/// Checks the summed cost of all password stanzas of one archive against
/// [`ARGON2ID_MAX_TOTAL_WORK`] and [`PBKDF2_MAX_TOTAL_ITERATIONS`] ([`CryptoError::KdfLimit`]).
/// Run after [`Kdf::check_limits`] on each, before any KDF.
pub fn check_total_work(kdfs: impl IntoIterator<Item = Kdf>) -> Result<(), CryptoError> {
    let (mut argon, mut pbkdf) = (0u64, 0u64);
    for kdf in kdfs {
        match kdf {
            Kdf::Argon2id { m_kib, t, .. } => {
                argon = argon.saturating_add(u64::from(m_kib) * u64::from(t))
            }
            Kdf::Pbkdf2 { iterations } => pbkdf = pbkdf.saturating_add(u64::from(iterations)),
        }
    }
    if argon > ARGON2ID_MAX_TOTAL_WORK {
        return Err(CryptoError::KdfLimit {
            param: param::ARGON2ID_TOTAL_WORK,
            value: argon,
            limit: ARGON2ID_MAX_TOTAL_WORK,
        });
    }
    if pbkdf > PBKDF2_MAX_TOTAL_ITERATIONS {
        return Err(CryptoError::KdfLimit {
            param: param::PBKDF2_TOTAL_ITERATIONS,
            value: pbkdf,
            limit: PBKDF2_MAX_TOTAL_ITERATIONS,
        });
    }
    Ok(())
}

/// A password KDF and its cost parameters, as stored in a stanza.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kdf {
    /// Argon2id, version 0x13 (RFC 9106): memory in KiB, iterations, lanes.
    Argon2id {
        /// Memory cost, KiB.
        m_kib: u32,
        /// Iterations (time cost).
        t: u32,
        /// Lanes (parallelism).
        p: u32,
    },
    /// PBKDF2-HMAC-SHA256 (RFC 8018 §5.2).
    Pbkdf2 {
        /// Iteration count.
        iterations: u32,
    },
}

impl Default for Kdf {
    /// Argon2id with the default costs.
    fn default() -> Self {
        Kdf::Argon2id {
            m_kib: ARGON2ID_DEFAULT_M_KIB,
            t: ARGON2ID_DEFAULT_T,
            p: ARGON2ID_DEFAULT_P,
        }
    }
}

/// Refuses `value` outside `min..=max`, naming the parameter.
fn bound(param: &'static str, value: u32, min: u32, max: u32) -> Result<(), CryptoError> {
    if value > max {
        return Err(CryptoError::KdfLimit {
            param,
            value: value.into(),
            limit: max.into(),
        });
    }
    if value < min {
        return Err(CryptoError::KdfTooWeak {
            param,
            value: value.into(),
            min: min.into(),
        });
    }
    Ok(())
}

impl Kdf {
    /// PBKDF2 with the default 600,000 iterations.
    pub fn default_pbkdf2() -> Kdf {
        Kdf::Pbkdf2 {
            iterations: PBKDF2_DEFAULT_ITERATIONS,
        }
    }

    /// Checks parameters read from an archive: the ceilings above, and the algorithm's own
    /// minimums (Argon2id: p ≥ 1, t ≥ 1, m ≥ 8·p KiB, RFC 9106 §3.1; PBKDF2: c ≥ 1). Cheap;
    /// run before any KDF, so nothing is allocated for a refused stanza.
    pub fn check_limits(&self) -> Result<(), CryptoError> {
        match *self {
            Kdf::Argon2id { m_kib, t, p } => {
                bound(param::ARGON2ID_LANES, p, 1, ARGON2ID_MAX_P)?;
                bound(param::ARGON2ID_ITERATIONS, t, 1, ARGON2ID_MAX_T)?;
                bound(param::ARGON2ID_MEMORY, m_kib, 8 * p, ARGON2ID_MAX_M_KIB)
            }
            Kdf::Pbkdf2 { iterations } => bound(
                param::PBKDF2_ITERATIONS,
                iterations,
                1,
                PBKDF2_MAX_ITERATIONS,
            ),
        }
    }

    /// Checks parameters for a new archive: the same ceilings, and stricter minimums (at
    /// least 8 MiB for Argon2id, 100,000 PBKDF2 iterations) so no weak archive is written.
    pub fn check_create(&self) -> Result<(), CryptoError> {
        self.check_limits()?;
        match *self {
            Kdf::Argon2id { m_kib, .. } => bound(
                param::ARGON2ID_MEMORY,
                m_kib,
                ARGON2ID_CREATE_MIN_M_KIB,
                ARGON2ID_MAX_M_KIB,
            ),
            Kdf::Pbkdf2 { iterations } => bound(
                param::PBKDF2_ITERATIONS,
                iterations,
                PBKDF2_CREATE_MIN_ITERATIONS,
                PBKDF2_MAX_ITERATIONS,
            ),
        }
    }

    /// The stanza name of this KDF ("argon2id" or "pbkdf2").
    pub fn name(&self) -> &'static str {
        match self {
            Kdf::Argon2id { .. } => "argon2id",
            Kdf::Pbkdf2 { .. } => "pbkdf2",
        }
    }

    /// Derives the 32-byte key-encryption key from `password` and the stanza's 16-byte
    /// `salt`, after [`Kdf::check_limits`]. Argon2id runs with no secret and no associated
    /// data, tag length 32.
    pub fn derive_kek(
        &self,
        password: &[u8],
        salt: &[u8; 16],
    ) -> Result<Zeroizing<[u8; 32]>, CryptoError> {
        self.check_limits()?;
        let mut kek = Zeroizing::new([0u8; 32]);
        match *self {
            Kdf::Argon2id { m_kib, t, p } => {
                argon2id(password, salt, m_kib, t, p, &[], &[], &mut kek[..])?
            }
            Kdf::Pbkdf2 { iterations } => {
                pbkdf2_hmac_sha256(password, salt, iterations, &mut kek[..])
            }
        }
        Ok(kek)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn defaults_are_within_the_writer_bounds() {
        Kdf::default().check_create().unwrap();
        Kdf::default_pbkdf2().check_create().unwrap();
        assert_eq!(
            Kdf::default(),
            Kdf::Argon2id {
                m_kib: 262_144,
                t: 2,
                p: 1
            }
        );
        assert_eq!(
            Kdf::default_pbkdf2(),
            Kdf::Pbkdf2 {
                iterations: 600_000
            }
        );
    }

    #[test]
    fn ceilings_name_the_parameter_value_and_limit() {
        let e = Kdf::Argon2id {
            m_kib: u32::MAX,
            t: 3,
            p: 1,
        }
        .check_limits()
        .unwrap_err();
        assert!(matches!(
            e,
            CryptoError::KdfLimit {
                param: "argon2id memory KiB",
                value: 4_294_967_295,
                limit: 4_194_304
            }
        ));
        let e = Kdf::Argon2id {
            m_kib: 65_536,
            t: 17,
            p: 1,
        }
        .check_limits()
        .unwrap_err();
        assert!(matches!(
            e,
            CryptoError::KdfLimit {
                param: "argon2id iterations",
                value: 17,
                limit: 16
            }
        ));
        let e = Kdf::Argon2id {
            m_kib: 65_536,
            t: 1,
            p: 17,
        }
        .check_limits()
        .unwrap_err();
        assert!(matches!(
            e,
            CryptoError::KdfLimit {
                param: "argon2id lanes",
                value: 17,
                limit: 16
            }
        ));
        let e = Kdf::Pbkdf2 {
            iterations: 10_000_001,
        }
        .check_limits()
        .unwrap_err();
        assert!(matches!(
            e,
            CryptoError::KdfLimit {
                param: "pbkdf2 iterations",
                value: 10_000_001,
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "pbkdf2 iterations = 10000001 exceeds the limit 10000000"
        );
    }

    #[test]
    fn reader_minimums_follow_the_algorithms_and_writer_minimums_are_stricter() {
        Kdf::Argon2id {
            m_kib: 8,
            t: 1,
            p: 1,
        }
        .check_limits()
        .unwrap();
        let e = Kdf::Argon2id {
            m_kib: 15,
            t: 1,
            p: 2,
        }
        .check_limits()
        .unwrap_err();
        assert!(matches!(
            e,
            CryptoError::KdfTooWeak {
                param: "argon2id memory KiB",
                value: 15,
                min: 16
            }
        ));
        assert!(
            Kdf::Argon2id {
                m_kib: 64,
                t: 0,
                p: 1
            }
            .check_limits()
            .is_err()
        );
        assert!(Kdf::Pbkdf2 { iterations: 0 }.check_limits().is_err());
        let e = Kdf::Argon2id {
            m_kib: 8191,
            t: 1,
            p: 1,
        }
        .check_create()
        .unwrap_err();
        assert!(matches!(
            e,
            CryptoError::KdfTooWeak {
                value: 8191,
                min: 8192,
                ..
            }
        ));
        let e = Kdf::Pbkdf2 { iterations: 99_999 }
            .check_create()
            .unwrap_err();
        assert!(matches!(
            e,
            CryptoError::KdfTooWeak {
                value: 99_999,
                min: 100_000,
                ..
            }
        ));
    }

    #[test]
    fn summed_cost_of_all_stanzas_is_bounded() {
        let max = Kdf::Argon2id {
            m_kib: ARGON2ID_MAX_M_KIB,
            t: ARGON2ID_MAX_T,
            p: 1,
        };
        check_total_work([max, Kdf::default_pbkdf2()]).unwrap();
        let e = check_total_work([
            max,
            Kdf::Argon2id {
                m_kib: 8,
                t: 1,
                p: 1,
            },
        ])
        .unwrap_err();
        assert!(matches!(
            e,
            CryptoError::KdfLimit {
                param: "argon2id memory KiB × iterations, all stanzas",
                value: 67_108_872,
                limit: 67_108_864
            }
        ));
        let many = std::iter::repeat_n(
            Kdf::Pbkdf2 {
                iterations: 1_000_000,
            },
            11,
        );
        let e = check_total_work(many).unwrap_err();
        assert!(matches!(
            e,
            CryptoError::KdfLimit {
                value: 11_000_000,
                limit: 10_000_000,
                ..
            }
        ));
        let defaults = std::iter::repeat_n(Kdf::default(), 64);
        check_total_work(defaults).unwrap();
    }

    #[test]
    fn huge_memory_is_refused_before_any_allocation() {
        let start = Instant::now();
        let r = Kdf::Argon2id {
            m_kib: u32::MAX,
            t: u32::MAX,
            p: 1,
        }
        .derive_kek(b"pw", &[0; 16]);
        assert!(matches!(r, Err(CryptoError::KdfLimit { .. })));
        assert!(start.elapsed().as_millis() < 100);
    }

    #[test]
    fn derive_kek_matches_the_primitives() {
        let k = Kdf::Pbkdf2 { iterations: 2 }
            .derive_kek(b"pw", &[5; 16])
            .unwrap();
        let mut expect = [0u8; 32];
        pbkdf2_hmac_sha256(b"pw", &[5; 16], 2, &mut expect);
        assert_eq!(*k, expect);
        let k = Kdf::Argon2id {
            m_kib: 64,
            t: 1,
            p: 1,
        }
        .derive_kek(b"pw", &[5; 16])
        .unwrap();
        argon2id(b"pw", &[5; 16], 64, 1, 1, &[], &[], &mut expect).unwrap();
        assert_eq!(*k, expect);
    }
}
