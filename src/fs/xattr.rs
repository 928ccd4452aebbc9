//! Extended attributes: reading them when archiving and setting them when restoring. POSIX
//! ACLs are the attributes `system.posix_acl_access` and `system.posix_acl_default`, file
//! capabilities the attribute `security.capability`; all three are stored as the kernel
//! returns them (its binary formats), so `getfacl` and `getcap` show the same after a restore.
//!
//! Choices (copied into the README):
//! - **What is read**: every attribute the kernel lists and lets this process read. As an
//!   ordinary user that is `user.*`, `security.*` (capabilities, SELinux labels) and the
//!   ACLs; as root `trusted.*` too. `--no-xattrs` skips all but the ACLs, `--no-acls` the
//!   ACLs ([`XattrSelect`]).
//! - **Never through a symbolic link**: the calls are the path forms of `*listxattr` /
//!   `*getxattr` / `lsetxattr` on `/proc/self/fd/N/NAME`, where `N` is the descriptor of the
//!   directory holding `NAME` (opened without following links) and `NAME` one component:
//!   the `l*` forms do not follow `NAME` itself, so a symbolic link's own attributes are
//!   read and set (Linux allows `trusted.*` and `security.*` there, never `user.*`). This
//!   also works for paths longer than `PATH_MAX` and for `O_PATH` directory descriptors,
//!   which `f*xattr` refuse. Open files and directories use the `f*` forms. Where `/proc`
//!   is not mounted, archiving falls back to the entry's path; restoring a symbolic link's
//!   attributes is then a warning.
//! - **Reading costs one list call per entry** (two buffers of 64 KiB are reused for the
//!   whole walk: Linux caps a list and a value at 64 KiB, `XATTR_LIST_MAX` and
//!   `XATTR_SIZE_MAX`), plus one `getxattr` per attribute. A regular file that `krypta c`
//!   archives is open already when its attributes are read, so it costs a `flistxattr` on that
//!   descriptor: the path form through `/proc/self/fd/N/NAME` walks procfs on every call and
//!   was 40% of the walk's time on 100,000 small files (issue 13). A filesystem without attributes
//!   (`ENOTSUP`) gives none, silently; any other failure is a warning naming the file and the
//!   attribute, and the entry is stored without it.
//! - **Restoring** sets only the attributes the archive holds (existing ones on a reused
//!   directory are left). An attribute the kernel will not set — not permitted (`trusted.*`,
//!   `security.capability` as an ordinary user, `user.*` on a symbolic link), not supported
//!   by the filesystem, refused as invalid, or too large for it — is a warning naming the
//!   file and the attribute, not a failure; any other error (an I/O error) fails the entry.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;

use rustix::fs::XattrFlags;
use rustix::io::Errno;

use crate::format::entry::Xattr;

/// The access ACL (`getfacl` shows it; setting it also sets the mode's permission bits).
pub const ACL_ACCESS: &[u8] = b"system.posix_acl_access";
/// A directory's default ACL (inherited by what is created in it).
pub const ACL_DEFAULT: &[u8] = b"system.posix_acl_default";
/// File capabilities (`getcap`; cleared by the kernel on `chown`).
pub const CAPABILITY: &[u8] = b"security.capability";

/// Longest attribute name the format stores, bytes (Linux `XATTR_NAME_MAX`).
pub(crate) const MAX_NAME_LEN: usize = 255;
/// Largest attribute value the format stores, bytes (Linux `XATTR_SIZE_MAX`).
pub(crate) const MAX_VALUE_LEN: usize = 64 * 1024;
/// Size of the buffer for an attribute list, bytes (Linux `XATTR_LIST_MAX`).
const LIST_BUF: usize = 64 * 1024;
/// What a list or a value is read with first, bytes; `ERANGE` then retries with the whole
/// buffer. The kernel allocates a buffer of the size offered on every call (a 64 KiB
/// `kvmalloc` per file was 5% of the walk's time on small files); lists and values are
/// almost always far shorter.
const FIRST_TRY: usize = 4096;

/// Whether `name` is one of the two POSIX ACL attributes.
pub fn is_acl(name: &[u8]) -> bool {
    name == ACL_ACCESS || name == ACL_DEFAULT
}

/// Which extended attributes to store (`krypta c`) or restore (`krypta x`). The default keeps
/// all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XattrSelect {
    /// Attributes other than the ACLs (`--no-xattrs` clears it).
    pub xattrs: bool,
    /// The ACL attributes (`--no-acls` clears it).
    pub acls: bool,
}

impl Default for XattrSelect {
    fn default() -> Self {
        XattrSelect {
            xattrs: true,
            acls: true,
        }
    }
}

impl XattrSelect {
    /// Whether the attribute `name` is kept.
    pub fn keeps(&self, name: &[u8]) -> bool {
        if is_acl(name) { self.acls } else { self.xattrs }
    }

    /// Whether nothing is kept (then no attribute call is made at all).
    pub fn nothing(&self) -> bool {
        !self.xattrs && !self.acls
    }
}

/// The path naming `name` inside the directory `dir` for a path-based call: `name` itself
/// when `dir` is the current directory, else `/proc/self/fd/N/name`.
pub(crate) fn at_path(dir: BorrowedFd<'_>, name: &[u8]) -> Vec<u8> {
    if dir.as_raw_fd() == rustix::fs::CWD.as_raw_fd() {
        return name.to_vec();
    }
    let mut p = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
    p.extend_from_slice(name);
    p
}

/// Whether `/proc/self/fd` can be used for [`at_path`] (checked once per walk or extraction).
pub(crate) fn proc_fd_available() -> bool {
    rustix::fs::stat("/proc/self/fd").is_ok()
}

/// Reads attributes with two reusable buffers (see the module documentation).
#[derive(Debug)]
pub(crate) struct XattrReader {
    select: XattrSelect,
    list: Vec<u8>,
    value: Vec<u8>,
}

impl XattrReader {
    /// A reader keeping what `select` keeps. Allocates its buffers on first use.
    pub(crate) fn new(select: XattrSelect) -> Self {
        XattrReader {
            select,
            list: Vec::new(),
            value: Vec::new(),
        }
    }

    /// The attributes of the object at `path` (following a symbolic link in its last
    /// component only when `follow`), sorted by name, into `out` (cleared first). Problems are
    /// passed to `warn` as text naming the attribute (the caller adds the file).
    pub(crate) fn read(
        &mut self,
        path: &[u8],
        follow: bool,
        out: &mut Vec<Xattr>,
        warn: &mut dyn FnMut(String),
    ) {
        self.read_from(Target::Path(path, follow), out, warn);
    }

    /// [`XattrReader::read`] of an open file (`flistxattr`/`fgetxattr`: no path lookup, and
    /// the attributes are those of the very file whose bytes are archived).
    pub(crate) fn read_fd(
        &mut self,
        fd: BorrowedFd<'_>,
        out: &mut Vec<Xattr>,
        warn: &mut dyn FnMut(String),
    ) {
        self.read_from(Target::Fd(fd), out, warn);
    }

    fn read_from(
        &mut self,
        target: Target<'_>,
        out: &mut Vec<Xattr>,
        warn: &mut dyn FnMut(String),
    ) {
        out.clear();
        if self.select.nothing() {
            return;
        }
        if self.list.len() < LIST_BUF {
            self.list.resize(LIST_BUF, 0);
            self.value.resize(MAX_VALUE_LEN, 0);
        }
        let list = |buf: &mut [u8]| match target {
            Target::Path(path, true) => rustix::fs::listxattr(path, buf),
            Target::Path(path, false) => rustix::fs::llistxattr(path, buf),
            Target::Fd(fd) => rustix::fs::flistxattr(fd, buf),
        };
        // A short buffer first: the kernel allocates as much as it is offered, per call.
        let listed = match list(&mut self.list[..FIRST_TRY]) {
            Err(Errno::RANGE) => list(&mut self.list[..]),
            other => other,
        };
        let n = match listed {
            Ok(n) => n,
            Err(Errno::NOTSUP) => return,
            Err(e) => {
                warn(format!(
                    "cannot list extended attributes ({}); none stored",
                    io::Error::from(e)
                ));
                return;
            }
        };
        for name in self.list[..n].split(|&b| b == 0).filter(|n| !n.is_empty()) {
            if !self.select.keeps(name) {
                continue;
            }
            let shown = crate::fs::escape_path(name);
            if name.len() > MAX_NAME_LEN {
                warn(format!(
                    "extended attribute {shown}: name longer than {MAX_NAME_LEN} bytes; not stored"
                ));
                continue;
            }
            let get = |buf: &mut [u8]| match target {
                Target::Path(path, true) => rustix::fs::getxattr(path, name, buf),
                Target::Path(path, false) => rustix::fs::lgetxattr(path, name, buf),
                Target::Fd(fd) => rustix::fs::fgetxattr(fd, name, buf),
            };
            let got = match get(&mut self.value[..FIRST_TRY]) {
                Err(Errno::RANGE) => get(&mut self.value[..]),
                other => other,
            };
            match got {
                Ok(len) => out.push(Xattr {
                    name: name.to_vec(),
                    value: self.value[..len].to_vec(),
                }),
                // Removed between the list and the read: it is not there to store.
                Err(Errno::NODATA) => {}
                Err(Errno::RANGE | Errno::TOOBIG) => warn(format!(
                    "extended attribute {shown}: value longer than {MAX_VALUE_LEN} bytes; not stored"
                )),
                Err(e) => warn(format!(
                    "cannot read extended attribute {shown} ({}); not stored",
                    io::Error::from(e)
                )),
            }
        }
        out.sort();
    }
}

/// What [`XattrReader`] reads the attributes of.
#[derive(Debug, Clone, Copy)]
enum Target<'a> {
    /// A path, following a symbolic link in its last component when `true`.
    Path(&'a [u8], bool),
    /// An open file.
    Fd(BorrowedFd<'a>),
}

/// Where attributes are set when restoring.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SetOn<'a> {
    /// An open file or directory (`fsetxattr`).
    Fd(BorrowedFd<'a>),
    /// A symbolic link `name` in the directory `dir`, set without following it (`lsetxattr`
    /// on [`at_path`]).
    Link(BorrowedFd<'a>, &'a [u8]),
}

/// Why an attribute could not be set, when that is a warning rather than a failure: not
/// permitted, not supported here, refused as invalid, or too large for this filesystem.
pub(crate) fn is_refusal(e: Errno) -> bool {
    matches!(
        e,
        Errno::PERM
            | Errno::ACCESS
            | Errno::NOTSUP
            | Errno::INVAL
            | Errno::NOSPC
            | Errno::DQUOT
            | Errno::TOOBIG
            | Errno::RANGE
            | Errno::NAMETOOLONG
    )
}

/// What happened when setting one attribute.
#[derive(Debug)]
pub(crate) enum SetOutcome {
    /// Set.
    Set,
    /// Not set, for a reason that is a warning ([`is_refusal`]).
    Refused(io::Error),
}

/// Sets one attribute (creating or replacing it). Errors other than refusals are returned.
pub(crate) fn set_one(on: SetOn<'_>, x: &Xattr, path: &Path) -> crate::Result<SetOutcome> {
    let res = match on {
        SetOn::Fd(fd) => {
            rustix::fs::fsetxattr(fd, x.name.as_slice(), &x.value, XattrFlags::empty())
        }
        SetOn::Link(dir, name) => rustix::fs::lsetxattr(
            at_path(dir, name).as_slice(),
            x.name.as_slice(),
            &x.value,
            XattrFlags::empty(),
        ),
    };
    match res {
        Ok(()) => Ok(SetOutcome::Set),
        Err(e) if is_refusal(e) => Ok(SetOutcome::Refused(e.into())),
        Err(e) => {
            let e = io::Error::from(e);
            let named = io::Error::new(
                e.kind(),
                format!("{}: {e}", crate::fs::escape_path(&x.name)),
            );
            Err(crate::Error::io(path, "set extended attribute", named))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn select_splits_acls_from_the_rest() {
        let all = XattrSelect::default();
        assert!(all.keeps(b"user.a") && all.keeps(ACL_ACCESS) && all.keeps(CAPABILITY));
        let no_x = XattrSelect {
            xattrs: false,
            acls: true,
        };
        assert!(!no_x.keeps(b"user.a") && !no_x.keeps(CAPABILITY));
        assert!(no_x.keeps(ACL_ACCESS) && no_x.keeps(ACL_DEFAULT));
        let no_acl = XattrSelect {
            xattrs: true,
            acls: false,
        };
        assert!(no_acl.keeps(b"trusted.t") && !no_acl.keeps(ACL_DEFAULT));
        assert!(
            XattrSelect {
                xattrs: false,
                acls: false
            }
            .nothing()
        );
        assert!(!is_acl(b"system.posix_acl_accessX"));
    }

    #[test]
    fn at_path_goes_through_proc_except_for_the_current_directory() {
        assert_eq!(at_path(rustix::fs::CWD, b"a/b"), b"a/b".to_vec());
        let tmp = tempfile::tempdir().unwrap();
        let d = std::fs::File::open(tmp.path()).unwrap();
        let p = at_path(d.as_fd(), b"x");
        assert_eq!(p, format!("/proc/self/fd/{}/x", d.as_raw_fd()).into_bytes());
    }

    #[test]
    fn user_attributes_round_trip_through_the_proc_path_sorted_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        let d = std::fs::File::open(tmp.path()).unwrap();
        let file = std::fs::File::open(&f).unwrap();
        let long = format!("user.{}", "n".repeat(250));
        let attrs = [
            Xattr {
                name: b"user.zz".to_vec(),
                value: vec![0, 1, 2, 255],
            },
            Xattr {
                name: long.as_bytes().to_vec(),
                value: vec![],
            },
            Xattr {
                name: b"user.a".to_vec(),
                value: vec![7; MAX_VALUE_LEN.min(3000)],
            },
        ];
        for x in &attrs {
            match set_one(SetOn::Fd(file.as_fd()), x, &f) {
                Ok(SetOutcome::Set) => {}
                Ok(SetOutcome::Refused(e)) => {
                    crate::to_stderr!("skipped: this filesystem does not take user xattrs ({e})");
                    return;
                }
                Err(e) => panic!("{e}"),
            }
        }
        let mut r = XattrReader::new(XattrSelect::default());
        let mut got = Vec::new();
        let mut warnings = Vec::new();
        r.read(&at_path(d.as_fd(), b"f"), false, &mut got, &mut |w| {
            warnings.push(w)
        });
        let mut want = attrs.to_vec();
        want.sort();
        assert_eq!(got, want);
        assert!(warnings.is_empty(), "{warnings:?}");
        // The same through the plain path (the fallback without /proc).
        r.read(f.as_os_str().as_bytes(), false, &mut got, &mut |w| {
            warnings.push(w)
        });
        assert_eq!(got, want);
        // Nothing selected: nothing read.
        let mut none = XattrReader::new(XattrSelect {
            xattrs: false,
            acls: false,
        });
        none.read(f.as_os_str().as_bytes(), false, &mut got, &mut |w| {
            warnings.push(w)
        });
        assert!(got.is_empty());
    }

    #[test]
    fn lists_and_values_longer_than_the_first_try_are_read_whole() {
        // tmpfs takes user attributes of any size; ext4 keeps them within one block.
        let tmp = tempfile::tempdir_in("/dev/shm").unwrap();
        let f = tmp.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        let file = std::fs::File::open(&f).unwrap();
        let mut attrs = vec![Xattr {
            name: b"user.big".to_vec(),
            value: (0..20_000u32).map(|i| (i % 251) as u8).collect(),
        }];
        for i in 0..40 {
            attrs.push(Xattr {
                name: format!("user.{}", format!("n{i:02}").repeat(60)).into_bytes(),
                value: vec![i as u8],
            });
        }
        for x in &attrs {
            match set_one(SetOn::Fd(file.as_fd()), x, &f) {
                Ok(SetOutcome::Set) => {}
                Ok(SetOutcome::Refused(e)) => {
                    crate::to_stderr!("skipped: /dev/shm does not take user xattrs ({e})");
                    return;
                }
                Err(e) => panic!("{e}"),
            }
        }
        let list_len: usize = attrs.iter().map(|x| x.name.len() + 1).sum();
        assert!(list_len > FIRST_TRY && attrs[0].value.len() > FIRST_TRY);
        attrs.sort();
        let mut r = XattrReader::new(XattrSelect::default());
        let (mut by_fd, mut by_path, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
        r.read_fd(file.as_fd(), &mut by_fd, &mut |w| warnings.push(w));
        r.read(f.as_os_str().as_bytes(), false, &mut by_path, &mut |w| {
            warnings.push(w)
        });
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(by_fd, attrs);
        assert_eq!(by_path, attrs);
    }

    #[test]
    fn a_missing_file_is_a_warning_not_a_panic() {
        let mut r = XattrReader::new(XattrSelect::default());
        let mut got = vec![Xattr {
            name: b"user.stale".to_vec(),
            value: vec![],
        }];
        let mut warnings = Vec::new();
        r.read(b"/nonexistent/krypta-test", false, &mut got, &mut |w| {
            warnings.push(w)
        });
        assert!(got.is_empty());
        assert_eq!(
            warnings,
            vec!["cannot list extended attributes (No such file or directory (os error 2)); none stored".to_string()]
        );
    }
}
