//! Command-line operands read as one stream, not walked: `-` (stdin) and an operand that is a
//! symbolic link to a pipe or a socket (`krypta c db.kry <(pg_dump db)`, whose operand is
//! `/dev/fd/63`; `/dev/stdin` when stdin is a pipe; `/proc/self/fd/N`).
//!
//! Choices (copied into the README):
//! - **And stdin redirected from a file**: `/dev/stdin` (or `/proc/self/fd/0`) with
//!   `< file` is a link to `/proc/self/fd/0`, which names nothing once krypta exits: it is
//!   read as stdin too, its bytes stored. Any other link to a regular file stays a link.
//! - **Why**: the walk stores a symbolic link as a link, so `<(pg_dump db)` was stored as a
//!   link to `pipe:[N]`, which names nothing once the command ended, and the run exited 0: a
//!   backup of nothing reported as success. A link to a pipe or socket named on the command
//!   line stands for the bytes that come through it, as `-` does.
//! - **Only the operand itself**: a link to a FIFO or socket met below a directory is a link
//!   as always (with `-L`, the FIFO or socket it names is left out, as any found in a tree);
//!   a FIFO named directly is left out too (it is no link: nothing asked for its bytes). An
//!   operand that resolves to a character or block device, a regular file or a directory
//!   is walked as before (a link, or with `-L` what it names).
//! - **Stored** as a regular file under the name any operand gets (the path as given, less a
//!   leading `/` and up to the last `..`: `/dev/fd/63` as `dev/fd/63`; `-` as `stdin`),
//!   mode 0644, modified now (`SOURCE_DATE_EPOCH` when set), owned by the user running
//!   `krypta c`: the pipe's own metadata says nothing about the data.
//! - **Like every operand**: in command-line order (`-` too), `--exclude` applies to its
//!   name, and a name stored already is not stored twice (`super::overlap`). The same pipe or
//!   socket named twice under different names (`- /dev/stdin`) is read once: the second is
//!   left out, named (exit 6), since it would read nothing.
//! - **Reading** is `krypta c`'s ([`crate::fs::source::open_stream`]): stdin itself for `-`
//!   and for a link to the pipe or socket that stdin is (a socket cannot be opened through
//!   `/proc`: a link to another one is skipped, named, exit 6), else the link opened: a link
//!   to a named FIFO waits for a writer, as `cat` does.

use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Stat, statat};

use super::archive_path_of;
use crate::format::entry::{EntryKind, EntryMeta};

/// The archive path of the operand `-`.
const STDIN_PATH: &[u8] = b"stdin";

/// Whether `input` is the operand `-` (stdin).
pub(super) fn is_stdin(input: &Path) -> bool {
    input.as_os_str() == "-"
}

/// The archive path of the input `input` and the note on what was dropped from it (a leading
/// `/`, `..`): [`archive_path_of`], and [`STDIN_PATH`] for `-`.
pub(super) fn input_path(input: &Path) -> (Vec<u8>, Option<String>) {
    if is_stdin(input) {
        return (STDIN_PATH.to_vec(), None);
    }
    archive_path_of(input.as_os_str().as_bytes())
}

/// The `fstat` of stdin, for the operand `-`.
pub(super) fn stdin_stat() -> std::io::Result<Stat> {
    Ok(rustix::fs::fstat(std::io::stdin())?)
}

/// The pipe or socket the operand `input` (`name` in `dir`) leads to, when the operand is a
/// symbolic link to one, or the file a link leads to through descriptor 0 when that file is
/// what stdin is (`/dev/stdin` with `< file`: the link itself, to `/proc/self/fd/0`, names
/// nothing a restore could use):
/// `st` is its `stat_child` (`via_link`: followed with `-L`). `None` for everything else,
/// also for a link that cannot be followed (the walk stores it as a link).
pub(super) fn behind_link(
    input: &Path,
    dir: BorrowedFd<'_>,
    name: &[u8],
    st: &Stat,
    via_link: bool,
) -> Option<Stat> {
    let target = match FileType::from_raw_mode(st.st_mode) {
        FileType::Symlink => statat(dir, name, AtFlags::empty()).ok()?,
        _ if via_link => *st,
        _ => return None,
    };
    let is_stdin =
        || stdin_stat().is_ok_and(|s| (s.st_dev, s.st_ino) == (target.st_dev, target.st_ino));
    (matches!(
        FileType::from_raw_mode(target.st_mode),
        FileType::Fifo | FileType::Socket
    ) || (FileType::from_raw_mode(target.st_mode) == FileType::RegularFile
        && is_stdin()
        && through_fd0(input)))
    .then_some(target)
}

/// Whether the link `input` leads, link by link, through this process's descriptor 0
/// (`/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/0`): `l.sql`, a link to `dump.sql`, is a
/// link to store (or with `-L`, a file with its own metadata) also when stdin is redirected
/// from `dump.sql`. At most 40 links are followed, as the kernel does.
fn through_fd0(input: &Path) -> bool {
    let fd0 = Path::new("/proc")
        .join(std::process::id().to_string())
        .join("fd/0");
    let mut at = input.to_path_buf();
    for _ in 0..40 {
        let (Some(parent), Some(file)) = (at.parent(), at.file_name()) else {
            return false;
        };
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        let Ok(parent) = std::fs::canonicalize(parent) else {
            return false;
        };
        let here = parent.join(file);
        if here == fd0 {
            return true;
        }
        match std::fs::read_link(&here) {
            Ok(target) => at = parent.join(target),
            Err(_) => return false,
        }
    }
    false
}

/// The metadata of a stream stored as `path` (module documentation); owner names are added
/// as for every entry (`super::super::attrs`).
pub(super) fn meta(path: Vec<u8>) -> EntryMeta {
    EntryMeta {
        path,
        kind: EntryKind::File,
        mode: 0o644,
        mtime: crate::now_or_epoch(),
        uid: rustix::process::getuid().as_raw(),
        gid: rustix::process::getgid().as_raw(),
        ..Default::default()
    }
}
