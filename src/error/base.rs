//! The errors of a delta archive's base (docs/FORMAT.md §16), all exit 9: the base missing,
//! not the one the delta archive was made against, or unusable where a file needs it. Split
//! from the one [`Error`](super::Error) (as its variant `Error::Base`) because they share a
//! code and a question salvage asks of them: does this failure cost files on the base's
//! account, not the delta archive's own ([`BaseError::lost_to_base`])?
//!
//! A base that is damaged where nothing a `t` read needed it is not among them: that ends
//! with the base's damage as for an archive's own ([`Error::BaseNotAsWritten`](super::Error),
//! 2 or 5).

use std::path::PathBuf;

use crate::format::FormatError;
use crate::fs::shown;

/// Why a delta archive could not be read with the base given (or without one). Exit 9.
#[derive(Debug, thiserror::Error)]
pub enum BaseError {
    /// `x` or `t` of a delta archive without `--base` (docs/FORMAT.md §16). Exit 9.
    #[error(
        "{}: a delta archive: give --base with its base archive (archive id {base_id}), and the base's keys if it is encrypted",
        shown(path)
    )]
    Required {
        /// The delta archive.
        path: PathBuf,
        /// The base's archive id, hex.
        base_id: String,
    },
    /// The base given is not the one the delta archive was made against. Exit 9.
    #[error(
        "{}: made against base {want_id}, but {} {}: refusing it",
        shown(path),
        shown(base),
        if *same_id { format!("(id {got_id}) has other frames: it was modified or re-created since") } else { format!("is archive {got_id}") }
    )]
    Wrong {
        /// The delta archive.
        path: PathBuf,
        /// The base given.
        base: PathBuf,
        /// The id the delta archive names, hex.
        want_id: String,
        /// The id of the base given, hex.
        got_id: String,
        /// The ids agree (the binding does not).
        same_id: bool,
    },
    /// The base given is damaged, so its binding cannot be checked, and nothing else tells it
    /// from another archive: its id is a reproducible one (docs/FORMAT.md §12.4), which any
    /// archive made with the same SOURCE_DATE_EPOCH shares, or the delta archive's own index,
    /// which every entry read with it must then equal, cannot be read either. Exit 9.
    #[error(
        "{}: its base {} is damaged ({why}), and {because}: refusing it (repair it from its recovery data, or use an intact copy)",
        shown(path),
        shown(base)
    )]
    Uncheckable {
        /// The delta archive.
        path: PathBuf,
        /// The base given.
        base: PathBuf,
        /// Why its binding cannot be checked.
        why: String,
        /// Why nothing else can stand in for the binding.
        because: &'static str,
    },
    /// A delta block could not be decoded because its base region could not be read (a
    /// damaged base frame). Exit 9.
    #[error(
        "{}: frame {frame} at byte {offset}: its base region is unusable: {problem}",
        shown(path)
    )]
    Region {
        /// The delta archive.
        path: PathBuf,
        /// Byte offset of the delta frame.
        offset: u64,
        /// Its sequence number.
        frame: u64,
        /// What went wrong, naming the base, its frame and byte.
        problem: String,
    },
    /// A file stored as a reference to a base entry (BASE_REF, docs/FORMAT.md §16.5) could
    /// not be restored from the base: the base frames holding that entry fail, its records
    /// there are not that entry, or its content does not match the file's digest. Exit 9.
    #[error(
        "{}: {entry}: its content is base entry {base_entry} ({base_path}), which is unusable: {problem}",
        shown(path)
    )]
    Entry {
        /// The delta archive.
        path: PathBuf,
        /// The file, escaped for display.
        entry: String,
        /// The base entry's number in the base's index.
        base_entry: u64,
        /// The base entry's path, escaped for display.
        base_path: String,
        /// What went wrong, naming the base (and its frame and byte when one failed).
        problem: String,
    },
    /// A file read with a damaged base (whose binding to the delta archive could not be
    /// checked: docs/FORMAT.md §16.4) does not match the delta's index or its digest: what
    /// came out of the base is not what the delta was made against (a forged or modified
    /// base), while the delta's own frames verified. The file is not restored. Exit 9.
    #[error(
        "{}: {entry}: read with its base {}, it {what}: that base is damaged, so its binding to this archive could not be checked, and it is not the base this archive was made against (modified or forged){}: use an intact copy of the base",
        shown(path),
        shown(base),
        if *sealed { "" } else { ", unless this unencrypted archive was modified itself" }
    )]
    Mismatch {
        /// The delta archive.
        path: PathBuf,
        /// The file, escaped for display.
        entry: String,
        /// The base given.
        base: PathBuf,
        /// How the file differs ("does not match this archive's index (its digest differs)").
        what: &'static str,
        /// The delta archive is encrypted (its own bytes cannot have been forged).
        sealed: bool,
    },
    /// Records read with a damaged base (whose binding to the delta archive could not be
    /// checked: docs/FORMAT.md §16.4), out of blocks decoded against it, do not parse or
    /// break a rule: what came out of the base is not what the delta was made against (a
    /// forged or modified base: its bytes decode into anything), while the delta's own
    /// frames verified. The file they belong to is not restored. Exit 9, as
    /// [`BaseError::Mismatch`] for records that parse but differ from the index.
    #[error(
        "{}: read with its base {}, its records do not parse ({problem}): that base is damaged, so its binding to this archive could not be checked, and it is not the base this archive was made against (modified or forged){}: use an intact copy of the base",
        shown(path),
        shown(base),
        if *sealed { "" } else { ", unless this unencrypted archive was modified itself" }
    )]
    Records {
        /// The delta archive.
        path: PathBuf,
        /// The base given.
        base: PathBuf,
        /// What does not parse.
        #[source]
        problem: FormatError,
        /// The delta archive is encrypted (its own bytes cannot have been forged).
        sealed: bool,
    },
}

impl BaseError {
    /// Whether the failure costs what a damaged or forged base touched while the delta
    /// archive was read — a delta block whose base region is unusable, a file stored as a
    /// reference to a base entry, a file read with a base whose binding could not be checked
    /// (not as the index has it, or its records not parsing) — and not the whole read:
    /// salvage goes on past it with the other files, and counts it as the base's fault, not
    /// the delta archive's. False for the refusals made before anything is read (no base,
    /// another base, one that cannot be checked at all).
    pub fn lost_to_base(&self) -> bool {
        match self {
            BaseError::Region { .. }
            | BaseError::Entry { .. }
            | BaseError::Mismatch { .. }
            | BaseError::Records { .. } => true,
            BaseError::Required { .. }
            | BaseError::Wrong { .. }
            | BaseError::Uncheckable { .. } => false,
        }
    }

    /// The file it costs, escaped for display, when it names one (a reference's, a file
    /// read with an unchecked base).
    pub fn entry(&self) -> Option<&str> {
        match self {
            BaseError::Entry { entry, .. } | BaseError::Mismatch { entry, .. } => Some(entry),
            _ => None,
        }
    }
}

impl super::Error {
    /// Whether this failure (through [`super::Error::InEntry`]) is one a damaged or forged
    /// base caused while the delta archive was read ([`BaseError::lost_to_base`]).
    pub fn lost_to_base(&self) -> bool {
        matches!(self.root(), super::Error::Base(b) if b.lost_to_base())
    }
}
