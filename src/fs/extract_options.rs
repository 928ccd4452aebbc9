//! The options of an extraction ([`ExtractOptions`]): what to do with existing names, which
//! metadata to restore, and the test hooks. Split from `super::extract`, which applies them.

use super::conflict::Existing;
use super::xattr::XattrSelect;

/// How to extract. `ExtractOptions::default()` gives the defaults for the current user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractOptions {
    /// What to do with existing names ([`super::conflict`]): kept and recorded unless
    /// [`Existing::Replace`] (`-f`), which replaces files and links atomically.
    pub existing: Existing,
    /// Leading path components to drop (`--strip-components`); entries left with no name
    /// are skipped.
    pub strip_components: usize,
    /// Do not restore modification times (`--touch` in tar).
    pub no_mtime: bool,
    /// Restore setuid/setgid/sticky and ignore the umask (`-p/--same-permissions`).
    pub same_permissions: bool,
    /// Restore owners (default: effective uid is 0; `--same-owner`, `--no-same-owner`).
    pub restore_owner: bool,
    /// Restore owners by numeric id only, ignoring the stored names (`--numeric-owner`).
    pub numeric_owner: bool,
    /// Which extended attributes to restore (`--no-xattrs`, `--no-acls`; default all).
    pub xattrs: XattrSelect,
    /// Behave as the superuser for permission bits, i.e. as if `same_permissions` were given
    /// (default: effective uid is 0).
    pub as_root: bool,
    /// Test hook simulating a full disk: a sink fails with `ENOSPC` once the bytes passed to
    /// its [`FileSink::write_at`] would exceed this many. `None` (the default) in real use.
    pub fail_write_after: Option<u64>,
    /// Write files under named temporary names (`.krypta-<hex>.tmp`, renamed into place) even
    /// where unnamed `O_TMPFILE` files work: the fallback for file systems without them
    /// (`super::unnamed`); tests use it to cover that path. `false` (the default) in real use.
    pub named_temporaries: bool,
    /// Test hook: giving the file at this stripped path its final name fails with `EIO`
    /// (where `super::committer` may report it late). `None` (the default) in real use.
    pub fail_link_of: Option<Vec<u8>>,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        let root = rustix::process::geteuid().is_root();
        ExtractOptions {
            existing: Existing::Refuse,
            strip_components: 0,
            no_mtime: false,
            same_permissions: false,
            restore_owner: root,
            numeric_owner: false,
            xattrs: XattrSelect::default(),
            as_root: root,
            fail_write_after: None,
            named_temporaries: false,
            fail_link_of: None,
        }
    }
}
