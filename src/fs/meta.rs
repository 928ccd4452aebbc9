//! Turning an `lstat`/`fstat` result into the archive's metadata fields (kind, mode, mtime).

use rustix::fs::{FileType, Stat};

use crate::format::entry::Timestamp;

/// What kind of object a `Stat` describes, as far as the archive cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A FIFO, socket, character or block device: skipped with a warning. The string is the
    /// noun used in the warning ("FIFO", "socket", "character device", "block device").
    Special(&'static str),
}

/// Classifies `st_mode`.
pub(crate) fn kind_of(st: &Stat) -> StatKind {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => StatKind::File,
        FileType::Directory => StatKind::Dir,
        FileType::Symlink => StatKind::Symlink,
        FileType::Fifo => StatKind::Special("FIFO"),
        FileType::Socket => StatKind::Special("socket"),
        FileType::CharacterDevice => StatKind::Special("character device"),
        FileType::BlockDevice => StatKind::Special("block device"),
        FileType::Unknown => StatKind::Special("file of unknown type"),
    }
}

/// Permission bits including setuid, setgid and sticky (`st_mode & 0o7777`).
pub(crate) fn mode_of(st: &Stat) -> u32 {
    st.st_mode & 0o7777
}

/// Modification time with nanoseconds. Before 1970 `secs` is negative and `nanos` still counts
/// forward from it (the `timespec` convention: -0.5 s is `secs = -1, nanos = 500_000_000`).
pub(crate) fn mtime_of(st: &Stat) -> Timestamp {
    // The kernel keeps st_mtime_nsec in 0..10^9; clamp anyway so a bad value cannot produce
    // a Timestamp the format refuses.
    let nanos = u32::try_from(st.st_mtime_nsec)
        .unwrap_or(0)
        .min(999_999_999);
    Timestamp {
        secs: st.st_mtime,
        nanos,
    }
}

/// Size in bytes (`st_size`, never negative for a real file; 0 if it were).
pub(crate) fn size_of(st: &Stat) -> u64 {
    u64::try_from(st.st_size).unwrap_or(0)
}

/// Device and inode number: the identity used for hard links and loop detection.
pub(crate) fn identity(st: &Stat) -> (u64, u64) {
    (st.st_dev, st.st_ino)
}
