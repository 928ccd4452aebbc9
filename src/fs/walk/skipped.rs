//! A file the walk could not read ([`Skipped`]): what failed and what the walk did about
//! it. Split from `walk/mod.rs`, which reports it.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::escape_path;
use crate::Error;

/// A file the walk could not read, and what was done about it.
#[derive(Debug)]
pub struct Skipped {
    /// The file on disk.
    pub path: PathBuf,
    /// What failed ("stat", "open directory", "read", ...).
    pub op: &'static str,
    /// The error.
    pub error: io::Error,
    /// What the walk did: "skipped", "stored empty", "listing cut short".
    pub outcome: &'static str,
}

impl Skipped {
    /// The I/O error this skip stands for ([`Error::Io`] naming the file), for `--strict`.
    pub fn into_error(self) -> Error {
        Error::io(self.path, self.op, self.error)
    }
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: cannot {} ({}); {}",
            escape_path(self.path.as_os_str().as_bytes()),
            self.op,
            self.error,
            self.outcome
        )
    }
}
