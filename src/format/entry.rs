//! The metadata of one archived entry (file, directory, symbolic link, hard link) and its
//! byte encoding, shared by the in-stream ENTRY record and the index.

use super::{FormatError, Reader, Version, put_bytes_u32};

use super::limits::MAX_LINK_LEN;
pub use super::limits::MAX_PATH_LEN;

/// What kind of filesystem object an entry is. The numeric values are the on-disk codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A regular file; its content follows as DATA segments.
    File = 1,
    /// A directory.
    Dir = 2,
    /// A symbolic link; `EntryMeta::link` is the target, as raw bytes, not followed.
    Symlink = 3,
    /// A hard link to an earlier File entry; `EntryMeta::link` is that entry's path.
    Hardlink = 4,
}

impl EntryKind {
    /// Parses the on-disk code.
    pub fn from_u8(v: u8) -> Result<Self, FormatError> {
        Ok(match v {
            1 => EntryKind::File,
            2 => EntryKind::Dir,
            3 => EntryKind::Symlink,
            4 => EntryKind::Hardlink,
            other => {
                return Err(FormatError::invalid(
                    "entry",
                    format!("unknown entry type {other}"),
                ));
            }
        })
    }
    /// One-letter type as `ls -l` shows it (`-`, `d`, `l`, `h`).
    pub fn letter(self) -> char {
        match self {
            EntryKind::File => '-',
            EntryKind::Dir => 'd',
            EntryKind::Symlink => 'l',
            EntryKind::Hardlink => 'h',
        }
    }
}

/// A point in time: seconds since the Unix epoch (negative before 1970) and nanoseconds
/// (0..1_000_000_000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z.
    pub secs: i64,
    /// Nanoseconds, 0..=999_999_999.
    pub nanos: u32,
}

/// One extended attribute of an entry: its full name (`user.foo`, `security.capability`,
/// `system.posix_acl_access`, …: 1..=255 bytes, no NUL) and its value exactly as the kernel
/// returns it (`getxattr`; ACLs and capabilities in the kernel's binary format), so that
/// `getfattr`, `getfacl` and `getcap` show the same after a restore.
///
/// Ordered by name, then value (the derived order: `name` is the first field), which is the
/// order [`EntryMeta::xattrs`] keeps.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Xattr {
    /// Full attribute name including its namespace prefix, raw bytes.
    pub name: Vec<u8>,
    /// Attribute value, raw bytes (may be empty).
    pub value: Vec<u8>,
}

/// A typed field of format-2 entry metadata that this build does not know, kept as read.
///
/// A format-2 reader skips an unknown *non-critical* field (and refuses an unknown critical
/// one); it keeps the skipped ones here so that parsing and writing an entry gives back the
/// same bytes. krypta's writer never produces them (its filesystem walk leaves this empty).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OtherField {
    /// The field type (bit 15, the critical bit, is clear: critical unknown fields are
    /// refused, never kept).
    pub field_type: u16,
    /// The field's value bytes.
    pub value: Vec<u8>,
}

/// Metadata of one entry.
///
/// Format 1 stores the fixed fields only (`path` … `link`); format 2 also stores the owner
/// names, the extended attributes and any [`OtherField`]s as typed fields. Build one with
/// struct-update syntax over [`EntryMeta::default`], so that a later field costs no edit at
/// every constructor:
///
/// ```
/// # use krypta::format::{EntryKind, EntryMeta};
/// let m = EntryMeta { path: b"etc/hosts".to_vec(), kind: EntryKind::File, mode: 0o644,
///                     ..EntryMeta::default() };
/// assert!(m.user.is_none() && m.xattrs.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryMeta {
    /// Archive path: relative, components separated by `/`, raw bytes (not necessarily
    /// UTF-8), no empty, `.` or `..` components, no leading `/`, 1..=MAX_PATH_LEN bytes; or,
    /// in format 2, exactly `.` for the archive-root directory ([`ROOT_PATH`]).
    pub path: Vec<u8>,
    /// Entry type.
    pub kind: EntryKind,
    /// Permission bits, including setuid/setgid/sticky (mask 0o7777).
    pub mode: u32,
    /// Modification time.
    pub mtime: Timestamp,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
    /// Symlink target or hard-link target path (raw bytes); empty for files and directories.
    pub link: Vec<u8>,
    /// Owner user name (as `getpwuid` gave it when archiving; 1..=256 bytes, no NUL), or
    /// `None` when it was not known (no passwd entry) or not stored (format 1). A restore as
    /// root uses the name when it exists on the restoring system, else `uid`.
    pub user: Option<Vec<u8>>,
    /// Owner group name, as [`EntryMeta::user`] for `gid`.
    pub group: Option<Vec<u8>>,
    /// Extended attributes (ACLs and file capabilities included), sorted by name with no
    /// name twice. Empty for hard links (the inode's attributes come with the target) and in
    /// format 1.
    pub xattrs: Vec<Xattr>,
    /// Format-2 non-critical fields this build does not know, kept as read (see
    /// [`OtherField`]); sorted by (type, value), empty for anything krypta writes.
    pub other_fields: Vec<OtherField>,
}

impl Default for EntryMeta {
    /// An empty file entry with no path, mode 0, time 0, owner 0:0, no link, names or
    /// attributes. A base for struct-update syntax; on its own it is not a valid entry (its
    /// path is empty).
    fn default() -> Self {
        EntryMeta {
            path: Vec::new(),
            kind: EntryKind::File,
            mode: 0,
            mtime: Timestamp::default(),
            uid: 0,
            gid: 0,
            link: Vec::new(),
            user: None,
            group: None,
            xattrs: Vec::new(),
            other_fields: Vec::new(),
        }
    }
}

/// Checks that an archive path is canonical (see [`EntryMeta::path`]). An error names the
/// path (escaped, cut after 200 characters: [`shown_path`]) and its first bad component.
pub fn check_archive_path(path: &[u8]) -> Result<(), FormatError> {
    check_path_field("entry path", path)
}

/// [`check_archive_path`] of a path held in the field `what` (the entry's path, or a hard
/// link's target), so that the message says which of the two is refused.
fn check_path_field(what: &'static str, path: &[u8]) -> Result<(), FormatError> {
    if path.is_empty() || path.len() > MAX_PATH_LEN {
        return Err(FormatError::invalid(
            what,
            format!("length {} is outside 1..={MAX_PATH_LEN}", path.len()),
        ));
    }
    if path.contains(&0) {
        return Err(FormatError::invalid(
            what,
            format!("{} contains a NUL byte", shown_path(path)),
        ));
    }
    for comp in path.split(|&b| b == b'/') {
        let why = match comp {
            _ if path[0] == b'/' => "a leading '/'",
            b"" => "an empty component",
            b"." => "a '.' component",
            b".." => "a '..' component",
            _ => continue,
        };
        return Err(FormatError::invalid(
            what,
            format!("{} has {why}", shown_path(path)),
        ));
    }
    Ok(())
}

/// An entry's path (or link target) for a message: escaped as `list` shows it, cut after 200
/// characters.
pub(crate) fn shown_path(path: &[u8]) -> String {
    let text = crate::fs::escape_path(path);
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// The path of the archive-root entry (format 2): the metadata of an input given as `.` or
/// `dir/.`, applied to the extraction root.
pub const ROOT_PATH: &[u8] = b".";

impl EntryMeta {
    /// True for the archive-root entry (format 2: a directory whose path is exactly `.`).
    pub fn is_root(&self) -> bool {
        self.path == ROOT_PATH
    }

    /// True when the entry has format-2 typed fields (owner names, extended attributes or
    /// fields kept from a newer writer).
    pub fn has_fields(&self) -> bool {
        self.user.is_some()
            || self.group.is_some()
            || !self.xattrs.is_empty()
            || !self.other_fields.is_empty()
    }

    /// Appends the encoding for `version`: the fixed part (format 1 and 2 alike), then for
    /// format 2 the fields area ([`super::entry_v2`]). Format 1:
    /// `u8 kind, u8 0, u16 0, u32 mode, i64 mtime_secs, u32 mtime_nanos, u32 uid, u32 gid,
    /// u32 path_len, path, u32 link_len, link` (little-endian).
    pub fn write(&self, out: &mut Vec<u8>, version: Version) {
        self.write_fixed(out, &self.path);
        if version == Version::V2 {
            super::entry_v2::write_fields(self, out);
        }
    }

    /// Appends the part both versions share, with `path` in the path field (the index of
    /// format 2 stores only a suffix there).
    pub(crate) fn write_fixed(&self, out: &mut Vec<u8>, path: &[u8]) {
        out.push(self.kind as u8);
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&self.mode.to_le_bytes());
        out.extend_from_slice(&self.mtime.secs.to_le_bytes());
        out.extend_from_slice(&self.mtime.nanos.to_le_bytes());
        out.extend_from_slice(&self.uid.to_le_bytes());
        out.extend_from_slice(&self.gid.to_le_bytes());
        put_bytes_u32(out, path);
        put_bytes_u32(out, &self.link);
    }

    /// Checks every rule an entry's metadata follows in `version`, the same for the writer
    /// (before it writes the entry, so it never writes one a reader refuses) and the parser.
    ///
    /// Both versions: mode bits within 0o7777, mtime nanoseconds below 10⁹, a canonical path
    /// ([`check_archive_path`]), no link for files and directories, a symlink target of
    /// 1..=[`MAX_LINK_LEN`] bytes without NUL, and a hard link's target a canonical path.
    /// Format 1 stores no typed fields, so an entry with any is refused for it (never
    /// silently dropped). Format 2 ([`super::entry_v2::check_v2`]): the root entry `.` (a
    /// directory), symlink mode exactly 0o777, no fields on hard links, and the field rules.
    pub fn check(&self, version: Version) -> Result<(), FormatError> {
        if self.mode & !0o7777 != 0 {
            return Err(FormatError::invalid(
                "entry",
                format!("mode {:#o} has bits beyond 0o7777", self.mode),
            ));
        }
        if self.mtime.nanos >= 1_000_000_000 {
            return Err(FormatError::invalid(
                "entry",
                format!("mtime nanoseconds {} >= 10^9", self.mtime.nanos),
            ));
        }
        match version {
            Version::V1 => {
                check_archive_path(&self.path)?;
                if self.has_fields() {
                    return Err(FormatError::invalid(
                        "entry",
                        "format 1 cannot store owner names or extended attributes",
                    ));
                }
            }
            Version::V2 => super::entry_v2::check_v2(self)?,
        }
        let link = &self.link;
        match self.kind {
            EntryKind::File | EntryKind::Dir if !link.is_empty() => Err(FormatError::invalid(
                "entry",
                "a file or directory has a link target",
            )),
            EntryKind::Symlink
                if link.is_empty() || link.len() > MAX_LINK_LEN || link.contains(&0) =>
            {
                Err(FormatError::invalid(
                    "entry",
                    format!(
                        "symlink target of {} bytes is empty, longer than {MAX_LINK_LEN} or has a NUL",
                        link.len()
                    ),
                ))
            }
            EntryKind::Hardlink => check_path_field("hard link target", link),
            _ => Ok(()),
        }
    }

    /// Parses the part both versions share (up to and including the link), without checks.
    pub(crate) fn parse_fixed(r: &mut Reader<'_>) -> Result<Self, FormatError> {
        let kind = EntryKind::from_u8(r.u8()?)?;
        r.reserved_zero(3)?;
        let mode = r.u32()?;
        let secs = r.i64()?;
        let nanos = r.u32()?;
        let uid = r.u32()?;
        let gid = r.u32()?;
        let path = r.bytes_u32()?.to_vec();
        let link = r.bytes_u32()?.to_vec();
        Ok(EntryMeta {
            path,
            kind,
            mode,
            mtime: Timestamp { secs, nanos },
            uid,
            gid,
            link,
            ..EntryMeta::default()
        })
    }

    /// Parses what [`EntryMeta::write`] wrote for `version`, rejecting every non-canonical
    /// encoding ([`EntryMeta::check`]).
    pub fn parse(r: &mut Reader<'_>, version: Version) -> Result<Self, FormatError> {
        let mut meta = Self::parse_fixed(r)?;
        if version == Version::V2 {
            super::entry_v2::parse_fields(r, &mut meta)?;
        }
        meta.check(version)?;
        Ok(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> EntryMeta {
        EntryMeta {
            path: b"dir/f\xffile\n".to_vec(),
            kind: EntryKind::File,
            mode: 0o4755,
            mtime: Timestamp {
                secs: -86_400,
                nanos: 123_456_789,
            },
            uid: 1000,
            gid: 100,
            link: Vec::new(),
            ..Default::default()
        }
    }

    #[test]
    fn entry_parse_of_write_is_identity() {
        let e = sample();
        let mut buf = Vec::new();
        e.write(&mut buf, Version::V1);
        assert_eq!(buf.len(), 4 + 4 + 8 + 4 + 4 + 4 + 4 + e.path.len() + 4);
        let mut r = Reader::new(&buf, "entry");
        assert_eq!(EntryMeta::parse(&mut r, Version::V1).unwrap(), e);
        r.finish().unwrap();
    }

    #[test]
    fn dotdot_and_absolute_paths_are_rejected() {
        for bad in [&b"../x"[..], b"/etc/passwd", b"a//b", b"a/./b", b"", b"a/"] {
            assert!(check_archive_path(bad).is_err(), "{:?}", bad);
        }
        check_archive_path(b"a/b..c/.d").unwrap();
    }

    /// Regression (h75): every refused path said "has an empty, '.' or '..' component or a
    /// leading '/'" without the path, and a hard link's target was called the entry path.
    #[test]
    fn a_refused_path_is_named_with_its_bad_component_and_field() {
        let said = |p: &[u8]| check_archive_path(p).unwrap_err().to_string();
        assert_eq!(said(b"../x"), "entry path: ../x has a '..' component");
        assert_eq!(said(b"/etc/x"), "entry path: /etc/x has a leading '/'");
        assert_eq!(said(b"a/./x"), "entry path: a/./x has a '.' component");
        assert_eq!(said(b"a//x"), "entry path: a//x has an empty component");
        assert_eq!(said(b"a/"), "entry path: a/ has an empty component");
        assert_eq!(
            said(b"a\nb/../\xff"),
            "entry path: a\\nb/../\\xff has a '..' component"
        );
        assert_eq!(said(b"a\0b"), "entry path: a\\x00b contains a NUL byte");
        let long = [b"../".as_slice(), &[b'p'; 300]].concat();
        assert_eq!(
            said(&long),
            format!("entry path: ../{}… has a '..' component", "p".repeat(197))
        );
        let link = EntryMeta {
            path: b"h".to_vec(),
            kind: EntryKind::Hardlink,
            link: b"a/../../x".to_vec(),
            ..EntryMeta::default()
        };
        assert_eq!(
            link.check(Version::V2).unwrap_err().to_string(),
            "hard link target: a/../../x has a '..' component"
        );
    }

    #[test]
    fn huge_path_length_is_truncation_not_allocation() {
        let mut buf = Vec::new();
        sample().write(&mut buf, Version::V1);
        // Overwrite the path length with u32::MAX.
        buf[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = EntryMeta::parse(&mut Reader::new(&buf, "entry"), Version::V1).unwrap_err();
        assert!(
            matches!(
                err,
                FormatError::Truncated {
                    needed: 4_294_967_295,
                    ..
                }
            ),
            "{err:?}"
        );
    }
}
