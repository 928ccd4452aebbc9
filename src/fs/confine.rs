//! Keeping extraction inside the output directory: entry paths split and checked, the errors
//! of a directory walk that meets a link (the walk itself, one component at a time from the
//! root's descriptor with `openat(O_NOFOLLOW | O_DIRECTORY)`, is `super::dirchain`),
//! temporary names, and the final no-replace/replace rename (what to do with an existing name
//! is `super::conflict`'s policy).

use std::ffi::OsStr;
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, RenameFlags, renameat, renameat_with, statat, unlinkat};
use rustix::io::Errno;

use crate::format::entry::check_archive_path;
use crate::{Error, Result};

/// Mode of directories created only because an entry below them needed them (before umask).
pub(crate) const IMPLIED_DIR_MODE: u32 = 0o777;

/// An entry path after `--strip-components`, split into parent components and final name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target<'a> {
    /// Directory components between the root and the final name (may be empty).
    pub parents: Vec<&'a [u8]>,
    /// The final component.
    pub name: &'a [u8],
    /// The stripped path, `/`-joined (the key for hard-link targets).
    pub rel: Vec<u8>,
}

/// Re-checks an archive path (defence in depth: the format refused these at parse time too)
/// and strips `strip` leading components. `Ok(None)` when nothing is left.
pub(crate) fn split_entry(path: &[u8], strip: usize) -> Result<Option<Target<'_>>> {
    if check_archive_path(path).is_err() {
        let reason = if path.first() == Some(&b'/') {
            "absolute path"
        } else if path.split(|&b| b == b'/').any(|c| c == b"..") {
            "'..' component"
        } else {
            "empty, '.' or NUL-containing component, or bad length"
        };
        return Err(Error::UnsafePath {
            path: shown(path),
            reason,
        });
    }
    let comps: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    if comps.len() <= strip {
        return Ok(None);
    }
    let kept = &comps[strip..];
    let (name, parents) = match kept.split_last() {
        Some((name, parents)) => (*name, parents.to_vec()),
        None => return Ok(None),
    };
    Ok(Some(Target {
        parents,
        name,
        rel: kept.join(&b'/'),
    }))
}

/// The entry path as a `PathBuf` for messages (bytes kept as they are).
pub(crate) fn shown(path: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(path))
}

/// `root/rel` for messages naming the file on disk.
pub(crate) fn on_disk(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(rel))
}

/// Turns a failed directory open into the right error: a symbolic link is an unsafe path.
pub(crate) fn refuse_non_dir(dir: BorrowedFd<'_>, comp: &[u8], path: PathBuf, e: Errno) -> Error {
    if matches!(e, Errno::LOOP | Errno::NOTDIR)
        && matches!(lstat_type(dir, comp), Ok(Some(FileType::Symlink)))
    {
        return Error::UnsafePath {
            path,
            reason: "a parent directory in the output is a symbolic link (never followed)",
        };
    }
    Error::io(path, "open directory", e.into())
}

/// The type of `name` in `dir` without following a link, or `None` if it does not exist.
pub(crate) fn lstat_type(dir: BorrowedFd<'_>, name: &[u8]) -> io::Result<Option<FileType>> {
    match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A fresh temporary name in the target directory: `.krypta-` + 16 hex digits + `.tmp`; the
/// caller creates it with `O_EXCL` and retries. The digits are the first 8 bytes of a keyed
/// BLAKE3 hash of a per-process counter, under a key read once from the OS random source: as
/// unpredictable to other users as 8 fresh random bytes, without a `getrandom` call per file.
pub(crate) fn temp_name() -> Result<Vec<u8>> {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let key = match KEY.get() {
        Some(k) => k,
        None => {
            let mut k = [0u8; 32];
            getrandom::fill(&mut k)
                .map_err(|e| Error::Crypto(format!("random temporary name: {e}")))?;
            KEY.get_or_init(|| k)
        }
    };
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let h = blake3::keyed_hash(key, &n.to_le_bytes());
    let hex: String = h.as_bytes()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(format!(".krypta-{hex}.tmp").into_bytes())
}

/// Creates something under a fresh temporary name with `make(name)` (which must fail with
/// `EEXIST` when the name is taken), retrying on collisions. Returns the name used.
pub(crate) fn create_temp<T>(
    path: &Path,
    mut make: impl FnMut(&[u8]) -> std::result::Result<T, Errno>,
) -> Result<(Vec<u8>, T, u64)> {
    let parent = path.parent().unwrap_or(Path::new(""));
    for _ in 0..16 {
        let name = temp_name()?;
        // Registered before it exists, so an interrupt at any moment removes it: a name
        // registered after creation left a window in which SIGINT/SIGTERM leaked it (found by
        // killing `krypta x` at random moments). [`super::cleanup`] parks a thread that
        // registers once the interrupt handler has run, so nothing is created after it.
        let id = super::cleanup::register(parent.join(std::ffi::OsStr::from_bytes(&name)));
        match make(&name) {
            Ok(v) => return Ok((name, v, id)),
            Err(Errno::EXIST) => {
                super::cleanup::unregister(id);
                continue;
            }
            Err(e) => {
                super::cleanup::unregister(id);
                return Err(Error::io(path, "create temporary file", e.into()));
            }
        }
    }
    Err(Error::io(
        path,
        "create temporary file",
        io::Error::from(io::ErrorKind::AlreadyExists),
    ))
}

/// Renames `tmp` to `name` in `dir`. Without `force` an existing name is never replaced
/// (`RENAME_NOREPLACE`; [`Error::Exists`]); with it, an existing file or symbolic link is
/// replaced atomically (the link itself, never what it points to). On error `tmp` is left for
/// the caller to remove.
pub(crate) fn place(
    dir: BorrowedFd<'_>,
    tmp: &[u8],
    name: &[u8],
    force: bool,
    path: &Path,
) -> Result<()> {
    let res = if force {
        renameat(dir, tmp, dir, name)
    } else {
        match renameat_with(dir, tmp, dir, name, RenameFlags::NOREPLACE) {
            Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {
                // Filesystem without RENAME_NOREPLACE: check, then rename (a small race).
                match lstat_type(dir, name) {
                    Ok(None) => renameat(dir, tmp, dir, name),
                    Ok(Some(_)) => Err(Errno::EXIST),
                    Err(e) => return Err(Error::io(path, "stat", e)),
                }
            }
            other => other,
        }
    };
    match res {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) => Err(Error::Exists {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(Error::io(path, "rename into place", e.into())),
    }
}

/// Removes `name` (not a directory) from `dir`, ignoring "already gone".
pub(crate) fn remove(dir: BorrowedFd<'_>, name: &[u8]) {
    let _ = unlinkat(dir, name, AtFlags::empty());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_distinct_and_shaped_like_before() {
        let names: std::collections::HashSet<Vec<u8>> =
            (0..1000).map(|_| temp_name().unwrap()).collect();
        assert_eq!(names.len(), 1000);
        for n in &names {
            assert_eq!(n.len(), ".krypta-".len() + 16 + ".tmp".len());
            assert!(n.starts_with(b".krypta-") && n.ends_with(b".tmp"));
            assert!(n[8..24].iter().all(|b| b.is_ascii_hexdigit()));
        }
    }

    #[test]
    fn split_entry_strips_components_and_keeps_the_rest() {
        let t = split_entry(b"a/b/c", 1).unwrap().unwrap();
        assert_eq!(t.parents, vec![&b"b"[..]]);
        assert_eq!(t.name, b"c");
        assert_eq!(t.rel, b"b/c".to_vec());
        assert_eq!(split_entry(b"a/b", 2).unwrap(), None);
        let t = split_entry(b"f", 0).unwrap().unwrap();
        assert!(t.parents.is_empty());
    }

    #[test]
    fn split_entry_refuses_absolute_dotdot_and_empty_components() {
        let reason = |p: &[u8]| match split_entry(p, 0) {
            Err(Error::UnsafePath { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason(b"/etc/passwd"), "absolute path");
        assert_eq!(reason(b"a/../../x"), "'..' component");
        assert_eq!(
            reason(b"a//b"),
            "empty, '.' or NUL-containing component, or bad length"
        );
        assert_eq!(
            reason(b""),
            "empty, '.' or NUL-containing component, or bad length"
        );
    }
}
