//! The details an [`Error`](super::Error) carries about a failed check: which authentication
//! check failed ([`AuthCheck`]) and why a signature was refused ([`SignatureProblem`]).

/// Where and how a structure decoded from frames whose tags verified breaks a rule of the
/// format ([`AuthCheck::Structure`]): the key is right (the tags verified with it), so the
/// message names the structure and its offset rather than suggesting another key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inconsistency {
    /// Byte offset in the archive of the frame or structure, when known.
    pub offset: Option<u64>,
    /// The structure and the rule it breaks ("index block header: stream offset 5 where ...").
    pub problem: String,
}

/// Which authentication check failed. Shown only with `-v`: without it, a wrong key and a
/// tampered archive print the same message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthCheck {
    /// No stanza opened with the keys given (wrong password, key file or identity).
    NoStanzaOpened,
    /// The header MAC did not verify.
    HeaderMac,
    /// A frame's MAC did not verify.
    FrameMac,
    /// The footer MAC did not verify.
    FooterMac,
    /// A verified structure was inconsistent (e.g. an entry digest mismatch under a valid MAC,
    /// or frames out of sequence).
    Structure,
}

impl std::fmt::Display for AuthCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AuthCheck::NoStanzaOpened => "no recipient stanza opened with the keys given",
            AuthCheck::HeaderMac => "header MAC mismatch",
            AuthCheck::FrameMac => "frame MAC mismatch",
            AuthCheck::FooterMac => "footer MAC mismatch",
            AuthCheck::Structure => "authenticated structure is inconsistent",
        })
    }
}

/// Why an archive's signature was refused (`--signer`, or any signed archive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureProblem {
    /// A signer was required and the archive is not signed.
    Unsigned,
    /// A signer was required and the archive is signed by another key (its fingerprint).
    OtherSigner {
        /// The fingerprint the archive names, as shown by `info`.
        found: String,
    },
    /// The signature frame's key is not the signer the header names.
    KeyMismatch,
    /// The signature does not verify (which half failed).
    Invalid {
        /// "the ML-DSA-65 signature does not verify", ...
        reason: String,
    },
    /// The signature could not be checked: the signed structure is damaged or malformed.
    Unverifiable {
        /// What is wrong, with the byte offset.
        reason: String,
    },
    /// The header had one flipped bit, undone by its tag (`archive::reader::header_fix`):
    /// what is read would be what was signed, but the file is not.
    HeaderChanged {
        /// The byte, from the start.
        byte: usize,
        /// The bit in it.
        bit: u8,
    },
    /// A frame differs from what was signed (its tag fails, or another tag than the signed one).
    Changed {
        /// The frame's sequence number.
        frame: u64,
        /// Its offset, bytes.
        offset: u64,
    },
}

impl std::fmt::Display for SignatureProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignatureProblem::Unsigned => {
                f.write_str("refused: the archive is not signed (--signer requires a signature)")
            }
            SignatureProblem::OtherSigner { found } => write!(
                f,
                "refused: signed by another key (fingerprint {found}), not by a --signer key"
            ),
            SignatureProblem::KeyMismatch => f.write_str(
                "refused: bad signature (the signature frame's key is not the signer the header names)",
            ),
            SignatureProblem::Invalid { reason } => {
                write!(f, "refused: bad signature ({reason})")
            }
            SignatureProblem::Unverifiable { reason } => {
                write!(f, "refused: the signature cannot be verified ({reason})")
            }
            SignatureProblem::HeaderChanged { byte, bit } => write!(
                f,
                "refused: the header is not what was signed (bit {bit} of byte {byte} is flipped: damaged or modified)"
            ),
            SignatureProblem::Changed { frame, offset } => write!(
                f,
                "refused: frame {frame} at byte {offset} is not what was signed (modified or damaged)"
            ),
        }
    }
}

/// The kinds of key an encrypted archive's stanzas open with (the options to suggest).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyNeeds {
    /// An `argon2id` or `pbkdf2` stanza: a password.
    pub password: bool,
    /// A `keyfile` stanza: a key file.
    pub keyfile: bool,
    /// A `pq-box` stanza: a box secret key.
    pub pqbox: bool,
}

impl KeyNeeds {
    /// The options that give those keys: the archive's, or (`base`) a delta base's; for a
    /// password also `KRYPTA_PASSWORD` (README "Passwords and keys"), which opens the
    /// archive, and a base, whenever no password option is given.
    pub fn options(self, base: bool) -> String {
        let mut o: Vec<&str> = Vec::new();
        if self.password {
            o.extend(if base {
                ["--base-pass-file", "--base-pass-fd", "--base-password"]
            } else {
                ["--pass-file", "--pass-fd", "-p"]
            });
        }
        if self.keyfile {
            o.push(if base { "--base-keyfile" } else { "--keyfile" });
        }
        if self.pqbox {
            o.push(if base { "--base-identity" } else { "-i" });
        }
        let listed = match o.split_last() {
            None => "a key of a kind this krypta knows".to_string(),
            Some((last, [])) => (*last).to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        };
        if self.password {
            format!("{listed}, or set {}", crate::crypto::password::PASSWORD_ENV)
        } else {
            listed
        }
    }
}
