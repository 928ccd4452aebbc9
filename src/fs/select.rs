//! What the walk of `krypta c` leaves out: exclude patterns (`--exclude`, `--exclude-from`,
//! grammar in [`super::pattern`]), other file systems (`--one-file-system`), cache
//! directories (`--exclude-caches`), and a name met twice. The walk ([`super::walk`]) asks
//! this module at three places: before an input (are its parents excluded?), before each
//! entry (is it excluded, is it a second copy, may the walk descend?), and after listing a
//! directory (is it a tagged cache?).
//!
//! Decisions (README "Choosing what goes in"):
//! - An excluded name is not stored, and an excluded directory is not read at all (nothing
//!   below it is stat'ed). Patterns apply to inputs named on the command line too, and to
//!   the parents of an input (`c b.kry proj/build/x --exclude build/` stores nothing), as
//!   tar and restic do.
//! - `--one-file-system`: a directory on another device than the input it was reached from
//!   is stored as an empty directory (so a restore recreates the mount point) and not
//!   descended into, as tar's `--one-file-system` and restic's `-x` do. Bind mounts of the
//!   same device are not detected (their `st_dev` is the same).
//! - `--exclude-caches`: a directory holding a regular file `CACHEDIR.TAG` that starts with
//!   the 43-byte signature of the Cache Directory Tagging Specification
//!   (`Signature: 8a477f597d28d172789f06886806bc55`, <https://bford.info/cachedir/>) is stored
//!   with its `CACHEDIR.TAG` and nothing else, as GNU tar's `--exclude-caches`: the restored
//!   tree shows that a cache was there, and tools that look for the tag still find it. The
//!   tag is opened with `O_NOFOLLOW | O_NONBLOCK` and checked to be a regular file, so a
//!   FIFO or symlink named `CACHEDIR.TAG` neither blocks the walk nor counts.
//! - **A name is stored once**: when several inputs reach the same stored name (`c b.kry d
//!   d/x`, or `find . -print0 | krypta c --files-from - --null`, which names every directory
//!   and then everything in it), the second and later copies are left out silently. The walk
//!   remembers 16 bytes (a BLAKE3 prefix) per stored name for this, only when there is more
//!   than one input.

use std::io::Read;
use std::os::fd::BorrowedFd;

use rustix::fs::{FileType, Mode, OFlags, fstat, openat};

use super::pattern::Patterns;

/// Where the walk of `inputs` would read the existing file `output` (the file `krypta c -f`
/// would replace), as the walk names it: `output` given as an input itself, or a file below
/// an input directory whose stored name `select` does not leave out by pattern, or
/// `<stdin>` for the input `-` when stdin is that file. `None` when
/// `output` does not exist or no input reaches it. Compared by real location
/// (`canonicalize`), so `./t/x`, `t/../t/x` and an absolute path are the same file; an input
/// that is a symbolic link is not followed into (the walk stores the link). This is the check
/// before anything is written; the walk checks again by device and inode while archiving
/// (`-L`, bind mounts). With `dir` (`-C DIR`), inputs are read below it
/// ([`super::walk::on_disk`]) and stored under the names they give.
pub fn output_among_inputs(
    output: &std::path::Path,
    dir: Option<&std::path::Path>,
    inputs: &[std::path::PathBuf],
    select: &Selector,
) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let real_out = std::fs::canonicalize(output).ok()?;
    // A device or FIFO output is written into, never replaced (`store::create_sink`).
    if crate::store::local::special_output(&real_out).is_some() {
        return None;
    }
    for input in inputs {
        if input.as_os_str() == "-" {
            // Stdin redirected from the output (`krypta c -f x.kry - < x.kry`), refused as
            // `/dev/stdin` is (it read the old archive into the new one).
            use std::os::unix::fs::MetadataExt;
            let out = std::fs::metadata(&real_out).ok()?;
            if rustix::fs::fstat(std::io::stdin())
                .is_ok_and(|st| (st.st_dev, st.st_ino) == (out.dev(), out.ino()))
            {
                return Some(std::path::PathBuf::from("<stdin>"));
            }
            continue;
        }
        let stored_in = super::walk::archive_path_of(input.as_os_str().as_bytes()).0;
        let input = &super::walk::on_disk(dir, input);
        let Ok(lmeta) = std::fs::symlink_metadata(input) else {
            continue;
        };
        let Ok(real_in) = std::fs::canonicalize(input) else {
            continue;
        };
        let (reached, stored) = if real_out == real_in {
            (input.clone(), stored_in)
        } else if lmeta.is_dir()
            && let Ok(rest) = real_out.strip_prefix(&real_in)
        {
            let mut stored = stored_in;
            if !stored.is_empty() {
                stored.push(b'/');
            }
            stored.extend_from_slice(rest.as_os_str().as_bytes());
            (input.join(rest), stored)
        } else {
            continue;
        };
        if select.excludes_a_parent(&stored) || select.excludes(&stored, false) {
            continue;
        }
        return Some(reached);
    }
    None
}

/// Name of the cache directory tag file.
pub const CACHEDIR_TAG: &[u8] = b"CACHEDIR.TAG";
/// The first bytes a `CACHEDIR.TAG` must hold (Cache Directory Tagging Specification 1.0).
pub const CACHEDIR_SIGNATURE: &[u8; 43] = b"Signature: 8a477f597d28d172789f06886806bc55";

/// What `krypta c` leaves out (see the module documentation). `Selector::default()` keeps
/// everything.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    /// Exclude patterns, in the order given (`--exclude` first, then each `--exclude-from`).
    pub excludes: Patterns,
    /// Do not descend into directories on another device than their input.
    pub one_file_system: bool,
    /// Keep only `CACHEDIR.TAG` of a tagged cache directory.
    pub exclude_caches: bool,
}

/// The decision for one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not stored (excluded, or a second copy of a name already stored).
    Leave,
    /// Stored; for a directory, its children are read.
    Store,
    /// Stored, but (a directory on another file system) its children are not read.
    StoreNoDescend,
}

impl Selector {
    /// True when nothing is left out by choice.
    pub fn is_everything(&self) -> bool {
        self.excludes.is_empty() && !self.one_file_system && !self.exclude_caches
    }

    /// Whether an exclude pattern leaves out `name` (`is_dir`: it is a directory).
    pub fn excludes(&self, name: &[u8], is_dir: bool) -> bool {
        self.excludes.matches(name, is_dir)
    }

    /// Whether a proper parent directory of the input stored as `name` is excluded.
    pub fn excludes_a_parent(&self, name: &[u8]) -> bool {
        if self.excludes.is_empty() {
            return false;
        }
        name.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'/')
            .any(|(i, _)| self.excludes(&name[..i], true))
    }

    /// The decision for the entry stored as `name`; `other_device` is true for a directory
    /// on another device than its input. (Overlapping inputs are the walk's
    /// `super::overlap`, which also knows the kind of what was stored first.)
    pub fn verdict(&self, name: &[u8], is_dir: bool, other_device: bool) -> Verdict {
        if !name.is_empty() && self.excludes(name, is_dir) {
            return Verdict::Leave;
        }
        if is_dir && other_device && self.one_file_system {
            Verdict::StoreNoDescend
        } else {
            Verdict::Store
        }
    }
}

/// Whether the directory open as `dir`, whose entry names are `names`, is a tagged cache:
/// it holds a regular file `CACHEDIR.TAG` starting with [`CACHEDIR_SIGNATURE`].
pub fn is_tagged_cache(dir: BorrowedFd<'_>, names: &[Vec<u8>]) -> bool {
    if !names.iter().any(|n| n == CACHEDIR_TAG) {
        return false;
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let Ok(fd) = openat(dir, CACHEDIR_TAG, flags, Mode::empty()) else {
        return false;
    };
    match fstat(&fd) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {}
        _ => return false,
    }
    let mut head = [0u8; 43];
    let mut f = std::fs::File::from(fd);
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    got == head.len() && &head == CACHEDIR_SIGNATURE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::pattern::PatternsBuilder;

    fn sel(patterns: &[&str]) -> Selector {
        let mut b = PatternsBuilder::new();
        for p in patterns {
            b.add(p, "--exclude").unwrap();
        }
        Selector {
            excludes: b.build().unwrap(),
            ..Default::default()
        }
    }

    #[test]
    fn excluded_parents_of_an_input_are_found() {
        let s = sel(&["build/"]);
        assert!(s.excludes_a_parent(b"proj/build/x"));
        assert!(!s.excludes_a_parent(b"proj/build"));
        assert!(!s.excludes_a_parent(b"proj/src/x"));
    }

    #[test]
    fn verdicts_for_excluded_and_other_device_entries() {
        let mut s = sel(&["*.o"]);
        s.one_file_system = true;
        assert_eq!(s.verdict(b"a.o", false, false), Verdict::Leave);
        assert_eq!(s.verdict(b"d", true, false), Verdict::Store);
        assert_eq!(s.verdict(b"mnt", true, true), Verdict::StoreNoDescend);
        assert_eq!(s.verdict(b"f", false, true), Verdict::Store);
        s.one_file_system = false;
        assert_eq!(s.verdict(b"mnt", true, true), Verdict::Store);
    }

    #[test]
    fn a_cache_needs_the_exact_signature_in_a_regular_file() {
        let tmp = tempfile::tempdir().unwrap();
        let d = std::fs::File::open(tmp.path()).unwrap();
        let names = vec![CACHEDIR_TAG.to_vec()];
        let tag = tmp.path().join("CACHEDIR.TAG");
        std::fs::write(
            &tag,
            b"Signature: 8a477f597d28d172789f06886806bc55\n# cargo",
        )
        .unwrap();
        assert!(is_tagged_cache(std::os::fd::AsFd::as_fd(&d), &names));
        assert!(!is_tagged_cache(std::os::fd::AsFd::as_fd(&d), &[]));
        std::fs::write(&tag, b"Signature: 8a477f597d28d172789f06886806bc5").unwrap();
        assert!(!is_tagged_cache(std::os::fd::AsFd::as_fd(&d), &names));
        std::fs::remove_file(&tag).unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, &tag, Mode::from_raw_mode(0o644)).unwrap();
        assert!(!is_tagged_cache(std::os::fd::AsFd::as_fd(&d), &names));
    }
}
