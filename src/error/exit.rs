//! The process exit code of each kind of [`Error`].
//!
//! `main.rs` alone turns an [`Error`] into a process exit code via [`Error::exit_code`]:
//! 0 ok, 1 usage or general, 2 authentication failed (wrong key or password, or tampered, or
//! an encrypted archive damaged; or a key was given for an unencrypted archive), 3 not an
//! archive / unsupported version / corrupt structure (`repair`: no recovery data), 4 I/O,
//! 5 data integrity (checksum mismatch in an unencrypted archive; damage beyond the recovery
//! data, also an archive cut short before its recovery section), 6 finished but incomplete,
//! each item named in a warning (`c`: inputs that could not be read, changed or vanished;
//! `x -k`: existing files kept), 7 damaged but repairable (`t`, `repair --check`: the
//! recovery data rebuilt what was read, or is itself damaged or missing), 8 signature
//! refused (`--signer` given and the archive unsigned or signed by another key; or a signed
//! archive whose signature fails or whose bytes differ from what was signed), 9 a delta
//! archive's base missing, not the one it names, or unusable. A signal ends the process as a
//! shell reports it: 130 for SIGINT (Ctrl-C, also at a password prompt), 143 for SIGTERM,
//! 129 for SIGHUP (`main.rs`).

use super::Error;
use crate::recovery::RecoveryError;

impl Error {
    /// The process exit code for this error (documented in README.md and `--help`).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::InEntry { source, .. } => source.exit_code(),
            Error::Usage(_)
            | Error::Exists { .. }
            | Error::KeyRequired { .. }
            | Error::BadKeyFile { .. }
            | Error::Unwritable { .. }
            | Error::StoreConfig { .. }
            | Error::OutputIsInput { .. }
            | Error::IsDirectory { .. }
            | Error::NotSeekable { .. }
            | Error::Conflicts { .. } => 1,
            Error::Crypto(_) => 1,
            Error::Salvaged { code, .. } => i32::from(*code),
            Error::AuthFailed { .. }
            | Error::KeyPassword { .. }
            | Error::Damaged { .. }
            | Error::DamagedFooter { .. }
            | Error::HeaderDamaged { .. }
            | Error::NotEncrypted { .. }
            | Error::StanzasUnknown { .. } => 2,
            Error::NotAnArchive { .. }
            | Error::UnsupportedVersion { .. }
            | Error::Corrupt { .. }
            | Error::Unsupported { .. }
            | Error::KdfLimit { .. }
            | Error::KdfTooWeak { .. }
            | Error::UnsafePath { .. } => 3,
            Error::Io { .. }
            | Error::NothingArchived { .. }
            | Error::StreamClosed { .. }
            | Error::OptionStreamClosed { .. }
            | Error::OutOfMemory { .. } => 4,
            Error::Integrity { .. } => 5,
            Error::EditUndone { sealed, .. }
            | Error::HeaderFixed { sealed, .. }
            | Error::BaseNotAsWritten { sealed, .. }
            | Error::Appended { sealed, .. } => {
                if *sealed {
                    2
                } else {
                    5
                }
            }
            Error::Signature { .. } => 8,
            Error::Denied { .. } => 4,
            Error::Base(_) => 9,
            Error::Incomplete { .. } | Error::KeptExisting { .. } | Error::NotMade { .. } => 6,
            Error::Repairable { .. } => 7,
            Error::SectionLost { found, .. } => {
                if found.archive_damaged() {
                    5
                } else {
                    3
                }
            }
            Error::Recovery { source, .. } => match source {
                RecoveryError::BeyondRepair { .. }
                | RecoveryError::TooMuchMissing { .. }
                | RecoveryError::Inconsistent { .. } => 5,
                RecoveryError::NotFound { .. }
                | RecoveryError::BadParameter { .. }
                | RecoveryError::BadPacket { .. } => 3,
                RecoveryError::Read { .. }
                | RecoveryError::Write { .. }
                | RecoveryError::Spill { .. }
                | RecoveryError::OutOfMemory { .. } => 4,
                RecoveryError::OutOfRange { .. }
                | RecoveryError::Code(_)
                | RecoveryError::WorkerLost => 1,
            },
        }
    }
}
