//! Resolving paths longer than the kernel's `PATH_MAX` (4096 bytes) by opening them in chunks.
//!
//! A single system call refuses a path of 4096 bytes or more (`ENAMETOOLONG`). Deep trees can hold
//! files whose full path is longer, so every path the fs layer hands to the kernel goes through
//! [`with_parent`]: short paths are used as they are (relative to the current directory), long ones
//! are split at `/` boundaries into pieces of at most [`CHUNK`] bytes, each leading piece opened as
//! a directory (`O_PATH | O_DIRECTORY`, following symbolic links exactly as one long call would),
//! and the last piece resolved relative to the last directory opened.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{CWD, Mode, OFlags, openat};

/// Longest piece of a path given to one system call, in bytes (below `PATH_MAX` = 4096, which
/// counts the terminating NUL).
pub(crate) const CHUNK: usize = 3072;

/// Calls `f(dir, rest)` where `rest` resolved relative to `dir` names the same object as `path`
/// and `rest` is at most [`CHUNK`] bytes (or one over-long component, which then fails in `f`).
pub(crate) fn with_parent<T>(
    path: &Path,
    f: impl FnOnce(BorrowedFd<'_>, &[u8]) -> io::Result<T>,
) -> io::Result<T> {
    let mut rest = path.as_os_str().as_bytes();
    let mut dir: Option<OwnedFd> = None;
    while rest.len() > CHUNK {
        let Some(cut) = rest[..=CHUNK].iter().rposition(|&b| b == b'/') else {
            return Err(io::Error::from_raw_os_error(
                rustix::io::Errno::NAMETOOLONG.raw_os_error(),
            ));
        };
        let head: &[u8] = if cut == 0 { b"/" } else { &rest[..cut] };
        let base = match &dir {
            Some(fd) => fd.as_fd(),
            None => CWD,
        };
        let fd = openat(
            base,
            head,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        dir = Some(fd);
        rest = &rest[cut + 1..];
    }
    if rest.is_empty() {
        rest = b".";
    }
    let base = match &dir {
        Some(fd) => fd.as_fd(),
        None => CWD,
    };
    f(base, rest)
}

/// `openat` of a path of any length with `flags` (and `mode` for `O_CREAT`).
pub(crate) fn open(path: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    with_parent(path, |dir, rest| Ok(openat(dir, rest, flags, mode)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_longer_than_path_max_opens_in_chunks() {
        let tmp = tempfile::tempdir().unwrap();
        let name = "d".repeat(200);
        let mut deep = tmp.path().to_path_buf();
        let mut rel = std::path::PathBuf::new();
        for _ in 0..25 {
            rel.push(&name);
        }
        // Create the tree with relative mkdirs so no single call sees the whole path.
        let mut cur = openat(
            CWD,
            tmp.path(),
            OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        for _ in 0..25 {
            rustix::fs::mkdirat(&cur, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
            cur = openat(
                &cur,
                name.as_str(),
                OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .unwrap();
        }
        rustix::fs::mkdirat(&cur, "leaf", Mode::from_raw_mode(0o700)).unwrap();
        deep.push(rel);
        deep.push("leaf");
        assert!(deep.as_os_str().len() > 5000);
        let fd = open(&deep, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        let st = rustix::fs::fstat(&fd).unwrap();
        assert_eq!(st.st_mode & 0o7777, 0o700);
    }
}
