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
//! The default, m = 256 MiB and t = 2, cost 0.6–0.8 s of one core there when the table was
//! made, with the `argon2` crate's own allocation; its matrix now lives in huge pages faulted
//! in up front (`super::argon2_memory`, which has the measurements: 0.47 s user + system at
//! load 5, of which 0.03 s in the kernel): inside the 0.5–1 s target, and of two settings with equal time the one with more memory is the
//! stronger (RFC 9106 §4). PBKDF2-HMAC-SHA256 with 600,000 iterations (OWASP 2023) takes
//! 0.07 s with SHA-NI.
//!
//! One range of parameters is accepted, the same for writers and readers
//! ([`Kdf::check_bounds`]): the ceilings exist so that a crafted archive cannot make a reader
//! allocate or spin without bound, and the floors so that a reader never runs a KDF far
//! cheaper than any krypta writer produces (a crafted stanza at PBKDF2 c = 1 would turn the
//! victim's reader into a fast password-guess oracle). Both are checked on the parameters
//! stored in a stanza *before* any memory is allocated, and only for a stanza that is about
//! to be tried with a password (`crypto::stanza::unwrap`), so an oversized or undersized
//! password stanza never keeps a key-file or box recipient out.
//!
//! | parameter | default | accepted (writer and reader) |
//! |---|---|---|
//! | argon2id memory | 262 144 KiB (256 MiB) | 8 192 ..= 4 194 304 KiB (8 MiB ..= 4 GiB) |
//! | argon2id iterations t | 2 | 1 ..= 16 |
//! | argon2id lanes p | 1 | 1 ..= 16 |
//! | pbkdf2 iterations | 600 000 | 100 000 ..= 10 000 000 |
//!
//! An archive holds at most one password stanza (`format::stanza::check_stanza_set`; age's
//! rule for its scrypt stanza), so the most KDF work one archive can ask of a reader is one
//! Argon2id run at 4 GiB (4 194 304 KiB) × 16 passes (roughly 16 × 4096 / 256 × 0.4 s ≈ 100 s
//! of one core here) or one PBKDF2 run of 10 000 000 iterations (about 1.2 s), once per
//! password the reader was given. The Argon2id floor of 8 MiB is above the algorithm's own
//! minimum of 8·p KiB for every accepted p (at most 128 KiB).
//!
//! [`Kdf::check_limits`] is the looser check of the KDF primitives themselves (the
//! algorithm's own minimums and the ceilings): the known-answer vectors run cheap costs
//! (64 KiB, 1000 iterations) through it, never through a reader.

use zeroize::Zeroizing;

use super::CryptoError;
use super::argon2_memory::Argon2Memory;
use super::primitives::{argon2id_in, pbkdf2_hmac_sha256};

/// Default Argon2id memory, KiB (256 MiB).
pub const ARGON2ID_DEFAULT_M_KIB: u32 = 256 * 1024;
/// Default Argon2id iterations (time cost t).
pub const ARGON2ID_DEFAULT_T: u32 = 2;
/// Default Argon2id lanes (parallelism p).
pub const ARGON2ID_DEFAULT_P: u32 = 1;
/// Smallest Argon2id memory written or read, KiB (8 MiB).
pub const ARGON2ID_MIN_M_KIB: u32 = 8 * 1024;
/// Largest Argon2id memory written or read, KiB (4 GiB).
pub const ARGON2ID_MAX_M_KIB: u32 = 4 * 1024 * 1024;
/// Largest Argon2id iteration count written or read.
pub const ARGON2ID_MAX_T: u32 = 16;
/// Largest Argon2id lane count written or read.
pub const ARGON2ID_MAX_P: u32 = 16;
/// Default PBKDF2-HMAC-SHA256 iterations (OWASP 2023 recommendation).
pub const PBKDF2_DEFAULT_ITERATIONS: u32 = 600_000;
/// Fewest PBKDF2 iterations written or read.
pub const PBKDF2_MIN_ITERATIONS: u32 = 100_000;
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

    /// The algorithm's own minimums (Argon2id: p ≥ 1, t ≥ 1, m ≥ 8·p KiB, RFC 9106 §3.1;
    /// PBKDF2: c ≥ 1) and the ceilings above: what [`Kdf::derive_kek`] needs to run safely.
    /// Not a reader's rule: readers and writers use [`Kdf::check_bounds`].
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

    /// The range writers write and readers accept (module doc table): ceilings
    /// ([`CryptoError::KdfLimit`]) and floors ([`CryptoError::KdfTooWeak`]: at least 8 MiB
    /// for Argon2id, 100,000 PBKDF2 iterations). Cheap; run before any KDF, so nothing is
    /// allocated for a refused stanza.
    pub fn check_bounds(&self) -> Result<(), CryptoError> {
        match *self {
            // The 8 MiB floor is above the algorithm's 8·p KiB for every accepted p, so this
            // also implies everything `check_limits` asks.
            Kdf::Argon2id { m_kib, t, p } => {
                bound(param::ARGON2ID_LANES, p, 1, ARGON2ID_MAX_P)?;
                bound(param::ARGON2ID_ITERATIONS, t, 1, ARGON2ID_MAX_T)?;
                bound(
                    param::ARGON2ID_MEMORY,
                    m_kib,
                    ARGON2ID_MIN_M_KIB,
                    ARGON2ID_MAX_M_KIB,
                )
            }
            Kdf::Pbkdf2 { iterations } => bound(
                param::PBKDF2_ITERATIONS,
                iterations,
                PBKDF2_MIN_ITERATIONS,
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
    /// `salt`, after [`Kdf::check_limits`] (the caller applies [`Kdf::check_bounds`] first
    /// when the stanza comes from an archive). Argon2id runs with no secret and no associated
    /// data, tag length 32.
    pub fn derive_kek(
        &self,
        password: &[u8],
        salt: &[u8; 16],
    ) -> Result<Zeroizing<[u8; 32]>, CryptoError> {
        self.derive_kek_in(&mut Argon2Memory::new(), password, salt)
    }

    /// [`Kdf::derive_kek`] with the Argon2id matrix in `memory`, so several runs (passwords
    /// tried on one stanza) map and fault it in once (`super::argon2_memory`).
    pub fn derive_kek_in(
        &self,
        memory: &mut Argon2Memory,
        password: &[u8],
        salt: &[u8; 16],
    ) -> Result<Zeroizing<[u8; 32]>, CryptoError> {
        self.check_limits()?;
        let mut kek = Zeroizing::new([0u8; 32]);
        match *self {
            Kdf::Argon2id { m_kib, t, p } => {
                argon2id_in(memory, password, salt, m_kib, t, p, &[], &[], &mut kek[..])?
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
    use crate::crypto::primitives::argon2id;
    use std::time::Instant;

    #[test]
    fn defaults_are_within_the_writer_bounds() {
        Kdf::default().check_bounds().unwrap();
        Kdf::default_pbkdf2().check_bounds().unwrap();
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
    fn primitive_minimums_follow_the_algorithms() {
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
        Kdf::Pbkdf2 { iterations: 1 }.check_limits().unwrap();
    }

    #[test]
    fn writers_and_readers_accept_exactly_the_bounds_table() {
        let argon = |m_kib, t, p| Kdf::Argon2id { m_kib, t, p }.check_bounds();
        let pbkdf2 = |iterations| Kdf::Pbkdf2 { iterations }.check_bounds();
        for ok in [
            argon(8192, 1, 1),
            argon(4 << 20, 16, 16),
            pbkdf2(100_000),
            pbkdf2(10_000_000),
        ] {
            ok.unwrap();
        }
        let e = argon(8191, 1, 1).unwrap_err();
        assert!(matches!(
            e,
            CryptoError::KdfTooWeak {
                param: "argon2id memory KiB",
                value: 8191,
                min: 8192,
            }
        ));
        assert_eq!(
            e.to_string(),
            "argon2id memory KiB = 8191 is below the minimum 8192"
        );
        assert!(matches!(
            argon(8192, 0, 1).unwrap_err(),
            CryptoError::KdfTooWeak {
                param: "argon2id iterations",
                value: 0,
                min: 1
            }
        ));
        assert!(matches!(
            argon(8192, 1, 0).unwrap_err(),
            CryptoError::KdfTooWeak {
                param: "argon2id lanes",
                value: 0,
                min: 1
            }
        ));
        for iterations in [99_999u32, 1, 0] {
            assert!(matches!(
                pbkdf2(iterations).unwrap_err(),
                CryptoError::KdfTooWeak {
                    param: "pbkdf2 iterations",
                    value: v,
                    min: 100_000
                } if v == u64::from(iterations)
            ));
        }
        assert!(matches!(
            argon(4 << 20 | 1, 1, 1).unwrap_err(),
            CryptoError::KdfLimit {
                value: 4_194_305,
                limit: 4_194_304,
                ..
            }
        ));
        assert!(matches!(
            pbkdf2(10_000_001).unwrap_err(),
            CryptoError::KdfLimit {
                value: 10_000_001,
                limit: 10_000_000,
                ..
            }
        ));
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
