//! What the walk reads about an entry besides `lstat`: the owner and group names
//! ([`super::owner`]) and the extended attributes ([`super::xattr`]), within the room the
//! format gives an entry's fields.
//!
//! Choices (copied into the README):
//! - Hard links carry none of this: the inode's names and attributes come with the entry of
//!   its first path (the format forbids fields on hard-link entries).
//! - `--numeric-owner` stores no names (ids only), as in tar.
//! - An entry's fields take at most 1 MiB in the format (each field: a 6-byte head, then an
//!   attribute's 1-byte name length, name and value). Attributes that would not fit are left
//!   out, largest first, each named in a warning; the small ones that matter most for a
//!   restore (ACLs, capabilities, SELinux labels) are kept. Only filesystems that allow more
//!   than a few KiB of attributes per inode (XFS, btrfs, ext4 with `ea_inode`) can get there.

use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::owner::NameCache;
use super::xattr::{self, XattrReader, XattrSelect};
use crate::format::entry::{EntryKind, EntryMeta, Xattr};

/// Largest fields area of an entry, bytes (format 2, entry metadata: the `u32 F` after the
/// link). Equal to `format::limits::MAX_FIELDS_LEN` of the format-2 reader.
pub(crate) const MAX_FIELDS_LEN: usize = 1 << 20;
/// Bytes of a field's head: `u16 type ‖ u32 length`.
const FIELD_HEAD_LEN: usize = 6;

/// Encoded size of an extended-attribute field, bytes.
fn xattr_field_len(x: &Xattr) -> usize {
    FIELD_HEAD_LEN + 1 + x.name.len() + x.value.len()
}

/// Reads owner names and extended attributes for the walk, with caches and buffers kept for
/// the whole walk.
#[derive(Debug)]
pub(crate) struct EntryAttrs {
    /// `None` with `--numeric-owner`.
    names: Option<NameCache>,
    reader: XattrReader,
    select: XattrSelect,
    /// `/proc/self/fd` is usable (else attributes are read by path).
    proc_ok: bool,
}

impl EntryAttrs {
    /// Reads what `select` keeps, and owner names unless `numeric_owner`.
    pub(crate) fn new(select: XattrSelect, numeric_owner: bool) -> Self {
        EntryAttrs {
            names: (!numeric_owner).then(NameCache::default),
            reader: XattrReader::new(select),
            select,
            proc_ok: !select.nothing() && xattr::proc_fd_available(),
        }
    }

    /// The extended attributes of `name` in the directory `dir` (`fallback` is the same
    /// object's path, used when `/proc` is missing), read without following a symbolic link
    /// unless `follow`. Problems go to `warn` naming the attribute.
    pub(crate) fn xattrs(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &[u8],
        fallback: &Path,
        follow: bool,
        warn: &mut dyn FnMut(String),
    ) -> Vec<Xattr> {
        let mut out = Vec::new();
        if self.select.nothing() {
            return out;
        }
        let path = if self.proc_ok {
            xattr::at_path(dir, name)
        } else {
            fallback.as_os_str().as_bytes().to_vec()
        };
        self.reader.read(&path, follow, &mut out, warn);
        out
    }

    /// The attributes of the open file `fd` (sorted by name) into `out`, if any are kept.
    pub(crate) fn xattrs_fd(
        &mut self,
        fd: BorrowedFd<'_>,
        out: &mut Vec<Xattr>,
        warn: &mut dyn FnMut(String),
    ) {
        out.clear();
        if !self.select.nothing() {
            self.reader.read_fd(fd, out, warn);
        }
    }

    /// Fills `meta`'s owner names and sets its attributes to `xattrs`, leaving out what does
    /// not fit the fields area (largest first, each named in `warn`). Hard links get neither.
    pub(crate) fn complete(
        &mut self,
        meta: &mut EntryMeta,
        mut xattrs: Vec<Xattr>,
        warn: &mut dyn FnMut(String),
    ) {
        if meta.kind == EntryKind::Hardlink {
            meta.user = None;
            meta.group = None;
            meta.xattrs = Vec::new();
            return;
        }
        if let Some(names) = &mut self.names {
            meta.user = names.user(meta.uid);
            meta.group = names.group(meta.gid);
        }
        let names_len: usize = [&meta.user, &meta.group]
            .iter()
            .filter_map(|n| n.as_ref())
            .map(|n| FIELD_HEAD_LEN + n.len())
            .sum();
        let mut total = names_len + xattrs.iter().map(xattr_field_len).sum::<usize>();
        while total > MAX_FIELDS_LEN {
            let Some((i, _)) = xattrs
                .iter()
                .enumerate()
                .max_by_key(|(_, x)| xattr_field_len(x))
            else {
                break;
            };
            let x = xattrs.remove(i);
            total -= xattr_field_len(&x);
            warn(format!(
                "extended attribute {} ({} bytes) left out: the entry's attributes exceed {} bytes",
                super::escape_path(&x.name),
                x.value.len(),
                MAX_FIELDS_LEN
            ));
        }
        meta.xattrs = xattrs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(name: &str, len: usize) -> Xattr {
        Xattr {
            name: name.as_bytes().to_vec(),
            value: vec![1; len],
        }
    }

    #[test]
    fn attributes_beyond_the_fields_area_are_left_out_largest_first() {
        let mut a = EntryAttrs::new(XattrSelect::default(), true);
        let mut meta = EntryMeta {
            path: b"f".to_vec(),
            ..EntryMeta::default()
        };
        // 17 fields of 65,018 bytes (1,105,306) and a capability-sized one; 16 fit. Among
        // equally large ones the last in name order goes first.
        let mut attrs: Vec<Xattr> = (0..17)
            .map(|i| x(&format!("user.big{i:02}"), 65_000))
            .collect();
        attrs.push(x("security.capability", 20));
        let mut warnings = Vec::new();
        a.complete(&mut meta, attrs, &mut |w| warnings.push(w));
        assert_eq!(meta.xattrs.len(), 17, "one large value had to go");
        assert!(meta.xattrs.iter().any(|x| x.name == b"security.capability"));
        let total: usize = meta.xattrs.iter().map(xattr_field_len).sum();
        assert!(total <= MAX_FIELDS_LEN, "{total}");
        assert_eq!(
            warnings,
            vec![
                "extended attribute user.big16 (65000 bytes) left out: the entry's attributes exceed 1048576 bytes"
                    .to_string()
            ]
        );
        assert_eq!((meta.user, meta.group), (None, None), "numeric owner");
    }

    #[test]
    fn hard_links_carry_no_names_or_attributes() {
        let mut a = EntryAttrs::new(XattrSelect::default(), false);
        let mut meta = EntryMeta {
            path: b"l".to_vec(),
            kind: EntryKind::Hardlink,
            link: b"f".to_vec(),
            ..EntryMeta::default()
        };
        a.complete(&mut meta, vec![x("user.a", 1)], &mut |w| panic!("{w}"));
        assert_eq!((meta.user, meta.group, meta.xattrs), (None, None, vec![]));
        let mut file = EntryMeta {
            path: b"f".to_vec(),
            ..EntryMeta::default()
        };
        a.complete(&mut file, vec![x("user.a", 1)], &mut |w| panic!("{w}"));
        assert_eq!(file.user.as_deref(), Some(&b"root"[..]), "uid 0 is root");
        assert_eq!(file.xattrs, vec![x("user.a", 1)]);
    }
}
