//! Format 2's header extensions: typed values after the comment, so that a later feature
//! (recovery data, signatures, delta archives) needs no new format version.
//!
//! ```text
//! u16 count E (0..=64) ‖ E × { u16 type ‖ u16 0 ‖ u32 length ‖ value }, types strictly increasing
//! ```
//! Bit 15 of the type marks an extension *critical*: a reader that does not know a critical
//! type refuses the archive naming the type ("needs a newer krypta"); an unknown non-critical
//! extension is skipped (this build keeps it as [`Extension::Other`], so a header re-encodes
//! to the same bytes). Types:
//!
//! | type | name | value | status |
//! |---|---|---|---|
//! | 0x0001 | recovery | `u8` percent, 1..=50 | defined: a recovery section follows the protected bytes (header flag bit 1 is set exactly when this extension is present); informational for the reader of P, `info` shows it |
//! | 0x0002 | signer | the signer's fingerprint, 32 bytes | defined: the archive is signed by this key (a signature frame precedes the footer, footer flag bit 0); non-critical |
//! | 0x8001 | delta base | base archive id (16 bytes) ‖ base binding (32 bytes) | defined: the archive is a delta against that base (docs/FORMAT.md §16); critical, so a reader without delta support refuses it |
//!
//! Types 0x0000 and 0x8000 are reserved (invalid).

use super::limits::{MAX_EXTENSIONS, RECOVERY_PERCENT};
use super::{FormatError, Reader, put_u16, put_u32};

/// Extension type: recovery data follows the protected bytes.
pub const EXT_RECOVERY: u16 = 0x0001;
/// Extension type: the fingerprint of the archive's signer (`crypto::sign`).
pub const EXT_SIGNER: u16 = 0x0002;
/// Length of the signer extension's value: a fingerprint, bytes.
pub const SIGNER_FINGERPRINT_LEN: usize = 32;
/// Extension type: the base of a delta archive (docs/FORMAT.md §16; critical).
pub const EXT_DELTA_BASE: u16 = 0x8001;
/// Length of the delta base extension's value: the base's archive id and binding, bytes.
pub const DELTA_BASE_LEN: usize = 48;
/// Bit 15 of an extension type: critical.
pub const CRITICAL: u16 = 0x8000;

/// One header extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extension {
    /// Recovery data (docs/FORMAT.md §15) follows the protected bytes.
    Recovery {
        /// Recovery data as a percentage of the protected bytes, 1..=50.
        percent: u8,
    },
    /// The archive is signed by the key with this fingerprint (docs/FORMAT.md §9.1).
    Signer {
        /// `SHA-256("krypta/v2/signer" ‖ signer public key)`.
        fingerprint: [u8; SIGNER_FINGERPRINT_LEN],
    },
    /// The archive is a delta archive against the base with this id and binding
    /// (docs/FORMAT.md §16): its delta blocks decode only with that base's bytes.
    DeltaBase {
        /// The base's archive id (its header's id field).
        base_id: [u8; 16],
        /// `BLAKE3-DK("krypta v2 delta base binding", base id ‖ base footer ‖ every frame tag)`.
        binding: [u8; 32],
    },
    /// A non-critical extension this build does not know, kept as read.
    Other {
        /// Its type (bit 15 clear).
        ext_type: u16,
        /// Its value bytes.
        value: Vec<u8>,
    },
}

impl Extension {
    /// The type code.
    pub fn ext_type(&self) -> u16 {
        match self {
            Extension::Recovery { .. } => EXT_RECOVERY,
            Extension::Signer { .. } => EXT_SIGNER,
            Extension::DeltaBase { .. } => EXT_DELTA_BASE,
            Extension::Other { ext_type, .. } => *ext_type,
        }
    }

    /// The value bytes.
    pub fn value(&self) -> Vec<u8> {
        match self {
            Extension::Recovery { percent } => vec![*percent],
            Extension::Signer { fingerprint } => fingerprint.to_vec(),
            Extension::DeltaBase { base_id, binding } => [&base_id[..], &binding[..]].concat(),
            Extension::Other { value, .. } => value.clone(),
        }
    }

    /// Encoded length, bytes.
    pub fn encoded_len(&self) -> usize {
        8 + match self {
            Extension::Recovery { .. } => 1,
            Extension::Signer { .. } => SIGNER_FINGERPRINT_LEN,
            Extension::DeltaBase { .. } => DELTA_BASE_LEN,
            Extension::Other { value, .. } => value.len(),
        }
    }
}

/// Checks a list of extensions: at most [`MAX_EXTENSIONS`], types strictly increasing, no
/// reserved or critical type kept as [`Extension::Other`], and a recovery percentage within
/// [`RECOVERY_PERCENT`].
pub fn check_extensions(exts: &[Extension]) -> Result<(), FormatError> {
    if exts.len() > MAX_EXTENSIONS {
        return Err(FormatError::invalid(
            "header extensions",
            format!("{} extensions (at most {MAX_EXTENSIONS})", exts.len()),
        ));
    }
    for (i, e) in exts.iter().enumerate() {
        if i > 0 && exts[i - 1].ext_type() >= e.ext_type() {
            return Err(FormatError::invalid(
                "header extensions",
                format!(
                    "extension type {:#06x} is out of order or repeated",
                    e.ext_type()
                ),
            ));
        }
        match e {
            Extension::Recovery { percent } if !RECOVERY_PERCENT.contains(percent) => {
                return Err(FormatError::invalid(
                    "header extension recovery",
                    format!(
                        "percent {percent} outside {}..={}",
                        RECOVERY_PERCENT.start(),
                        RECOVERY_PERCENT.end()
                    ),
                ));
            }
            Extension::Other { ext_type, .. }
                if *ext_type & !CRITICAL == 0
                    || *ext_type & CRITICAL != 0
                    || *ext_type == EXT_RECOVERY
                    || *ext_type == EXT_SIGNER =>
            {
                return Err(FormatError::invalid(
                    "header extensions",
                    format!("extension type {ext_type:#06x} cannot be kept as unknown"),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Appends `u16 E ‖ extensions`.
pub fn write_extensions(exts: &[Extension], out: &mut Vec<u8>) {
    put_u16(out, exts.len() as u16);
    for e in exts {
        let v = e.value();
        put_u16(out, e.ext_type());
        put_u16(out, 0);
        put_u32(out, v.len() as u32);
        out.extend_from_slice(&v);
    }
}

/// Parses `u16 E ‖ extensions` (checked with [`check_extensions`]); an unknown critical type
/// is [`FormatError::NeedsNewer`].
pub fn parse_extensions(r: &mut Reader<'_>) -> Result<Vec<Extension>, FormatError> {
    let n = r.u16()? as usize;
    if n > MAX_EXTENSIONS {
        return Err(FormatError::invalid(
            "header extensions",
            format!("{n} extensions (at most {MAX_EXTENSIONS})"),
        ));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = r.u16()?;
        r.reserved_zero(2)?;
        let value = r.bytes_u32()?;
        let e = match t {
            EXT_RECOVERY => {
                let [percent] = value else {
                    return Err(FormatError::invalid(
                        "header extension recovery",
                        format!("value of {} bytes (expected 1)", value.len()),
                    ));
                };
                Extension::Recovery { percent: *percent }
            }
            EXT_SIGNER => {
                let Ok(fingerprint) = <[u8; SIGNER_FINGERPRINT_LEN]>::try_from(value) else {
                    return Err(FormatError::invalid(
                        "header extension signer",
                        format!(
                            "value of {} bytes (expected {SIGNER_FINGERPRINT_LEN})",
                            value.len()
                        ),
                    ));
                };
                Extension::Signer { fingerprint }
            }
            EXT_DELTA_BASE => {
                if value.len() != DELTA_BASE_LEN {
                    return Err(FormatError::invalid(
                        "header extension delta base",
                        format!("value of {} bytes (expected {DELTA_BASE_LEN})", value.len()),
                    ));
                }
                Extension::DeltaBase {
                    base_id: value[..16].try_into().expect("16 bytes"),
                    binding: value[16..].try_into().expect("32 bytes"),
                }
            }
            0 | CRITICAL => {
                return Err(FormatError::invalid(
                    "header extensions",
                    format!("extension type {t:#06x} is reserved"),
                ));
            }
            t if t & CRITICAL != 0 => {
                return Err(FormatError::NeedsNewer {
                    what: "header extension",
                    code: t,
                });
            }
            t => Extension::Other {
                ext_type: t,
                value: value.to_vec(),
            },
        };
        out.push(e);
    }
    check_extensions(&out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(exts: &[Extension]) -> Vec<u8> {
        let mut b = Vec::new();
        write_extensions(exts, &mut b);
        b
    }

    #[test]
    fn extensions_parse_of_write_is_identity() {
        for exts in [
            vec![],
            vec![Extension::Recovery { percent: 5 }],
            vec![
                Extension::Recovery { percent: 50 },
                Extension::Signer {
                    fingerprint: [0xfe; 32],
                },
                Extension::Other {
                    ext_type: 0x0003,
                    value: b"future".to_vec(),
                },
            ],
        ] {
            let b = encode(&exts);
            assert_eq!(
                b.len(),
                2 + exts.iter().map(|e| e.encoded_len()).sum::<usize>()
            );
            let mut r = Reader::new(&b, "header");
            assert_eq!(parse_extensions(&mut r).unwrap(), exts);
            r.finish().unwrap();
        }
        assert_eq!(
            encode(&[Extension::Recovery { percent: 7 }]),
            [1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7]
        );
    }

    #[test]
    fn unknown_critical_extensions_need_a_newer_krypta() {
        // 0x8001 (delta base) is known since issue 17; 0x8002 is not.
        let b = [1, 0, 0x02, 0x80, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            parse_extensions(&mut Reader::new(&b, "header")).unwrap_err(),
            FormatError::NeedsNewer {
                what: "header extension",
                code: 0x8002
            }
        );
    }

    #[test]
    fn the_delta_base_extension_is_48_bytes_and_round_trips() {
        let e = Extension::DeltaBase {
            base_id: [7; 16],
            binding: [9; 32],
        };
        let b = encode(std::slice::from_ref(&e));
        assert_eq!(&b[..8], &[1, 0, 0x01, 0x80, 0, 0, 48, 0]);
        assert_eq!(b.len(), 2 + 8 + 48);
        let mut r = Reader::new(&b, "header");
        assert_eq!(parse_extensions(&mut r).unwrap(), vec![e]);
        let short = [1, 0, 0x01, 0x80, 0, 0, 1, 0, 0, 0, 0];
        let err = parse_extensions(&mut Reader::new(&short, "header"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("value of 1 bytes (expected 48)"), "{err}");
    }

    #[test]
    fn bad_extensions_are_refused() {
        for bad in [
            vec![Extension::Recovery { percent: 0 }],
            vec![Extension::Recovery { percent: 51 }],
            vec![
                Extension::Other {
                    ext_type: 3,
                    value: vec![],
                },
                Extension::Other {
                    ext_type: 2,
                    value: vec![],
                },
            ],
            vec![Extension::Other {
                ext_type: 0x8002,
                value: vec![],
            }],
        ] {
            assert!(check_extensions(&bad).is_err(), "{bad:?}");
            assert!(parse_extensions(&mut Reader::new(&encode(&bad), "h")).is_err());
        }
        // A signer value of the wrong length, kept as unknown, or given twice.
        assert!(
            parse_extensions(&mut Reader::new(&[1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 5], "h")).is_err()
        );
        assert!(
            check_extensions(&[Extension::Other {
                ext_type: EXT_SIGNER,
                value: vec![0; 32]
            }])
            .is_err()
        );
        // Reserved bytes and a recovery value of the wrong length.
        assert!(
            parse_extensions(&mut Reader::new(&[1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 5], "h")).is_err()
        );
        assert!(
            parse_extensions(&mut Reader::new(&[1, 0, 1, 0, 0, 0, 2, 0, 0, 0, 5, 5], "h")).is_err()
        );
        let many: Vec<Extension> = (0..65)
            .map(|t| Extension::Other {
                ext_type: 0x100 + t,
                value: vec![],
            })
            .collect();
        assert!(check_extensions(&many).is_err());
    }
}
