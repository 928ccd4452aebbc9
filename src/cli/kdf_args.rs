//! The KDF of a new password stanza (`c`, `rekey`) or of a protected secret key (`keygen
//! --protect`) from `--kdf`, `--kdf-memory` and `--kdf-iterations`. One parser for all three
//! commands, so each refuses the same mistakes in the same words: `rekey` ignored
//! `--kdf-memory` with `--kdf pbkdf2` (which `c` refuses), and `rekey` and `keygen` showed a
//! memory above the range as a capped number (4294967295 KiB for `5000G`).

use super::args::KdfName;
use super::size::parse_size_in;
use krypta::crypto::kdf::{self, Kdf};
use krypta::{Error, Result};

/// The KDF asked for: Argon2id unless `name` says PBKDF2; `memory` as typed (a plain number
/// is MiB; a whole number of KiB, within Argon2id's range); the defaults for what is not
/// given. Every value is checked against the bounds a reader enforces (README: KDF bounds).
pub(crate) fn kdf_from_args(
    name: Option<KdfName>,
    memory: Option<&str>,
    iterations: Option<u32>,
) -> Result<Kdf> {
    let m_kib = match memory {
        None => None,
        Some(m) => {
            let bytes = parse_size_in(m, 1 << 20)?;
            if bytes % 1024 != 0 {
                return Err(Error::Usage(format!(
                    "--kdf-memory {m} is not a whole number of KiB"
                )));
            }
            let kib = bytes / 1024;
            let range = u64::from(kdf::ARGON2ID_MIN_M_KIB)..=u64::from(kdf::ARGON2ID_MAX_M_KIB);
            if !range.contains(&kib) {
                // Shown in the unit the user typed (a plain number is MiB).
                let typed = m.trim();
                let typed = if typed.bytes().all(|b| b.is_ascii_digit()) {
                    format!("{typed} MiB")
                } else {
                    typed.to_string()
                };
                return Err(Error::Usage(format!(
                    "--kdf-memory {typed} is outside {}..={} MiB",
                    kdf::ARGON2ID_MIN_M_KIB / 1024,
                    kdf::ARGON2ID_MAX_M_KIB / 1024
                )));
            }
            Some(kib as u32)
        }
    };
    let kdf = match name.unwrap_or(KdfName::Argon2id) {
        KdfName::Argon2id => Kdf::Argon2id {
            m_kib: m_kib.unwrap_or(kdf::ARGON2ID_DEFAULT_M_KIB),
            t: iterations.unwrap_or(kdf::ARGON2ID_DEFAULT_T),
            p: kdf::ARGON2ID_DEFAULT_P,
        },
        KdfName::Pbkdf2 => {
            if memory.is_some() {
                return Err(Error::Usage("--kdf-memory applies to argon2id only".into()));
            }
            Kdf::Pbkdf2 {
                iterations: iterations.unwrap_or(kdf::PBKDF2_DEFAULT_ITERATIONS),
            }
        }
    };
    kdf.check_bounds()
        .map_err(|e| Error::Usage(format!("{e} (see README: KDF bounds)")))?;
    Ok(kdf)
}
