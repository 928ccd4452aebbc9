//! Format 2's typed entry fields: the fields area that follows the fixed part of entry
//! metadata (docs/FORMAT.md §3.1), with its parser, writer and rules.
//!
//! ```text
//! u32 F (0..=1 MiB) ‖ fields, each: u16 type ‖ u32 length ‖ value
//! ```
//! Fields appear in strictly increasing order of (type, value bytes), so an entry has one
//! encoding. Bit 15 of the type marks a field *critical*, as PNG's chunk names do: a reader
//! that does not know a critical type refuses the archive ("needs a newer krypta"); an
//! unknown non-critical field is skipped (this build keeps it in
//! [`EntryMeta::other_fields`], so parse∘write stays the identity). Types:
//!
//! | type | field | value |
//! |---|---|---|
//! | 0x0001 | owner user name | 1..=256 bytes, no NUL; at most once |
//! | 0x0002 | owner group name | 1..=256 bytes, no NUL; at most once |
//! | 0x0003 | extended attribute | name (1..=255 bytes, no NUL) ‖ `00` ‖ value (0..=65,536 bytes) |
//!
//! Type 0 is reserved (invalid). Extended attributes include the POSIX ACLs
//! (`system.posix_acl_access`, `system.posix_acl_default`, in the kernel's binary format, so
//! `getfacl` shows the same after a restore) and file capabilities (`security.capability`).
//!
//! Design choice (a refinement of the lead's draft, which had `u8 name length ‖ name ‖
//! value`): the attribute's name is terminated by a NUL byte instead of prefixed by its
//! length. Names cannot contain NUL, so the encoding is as unambiguous, and then the one
//! canonical order, (type, value bytes), orders attributes by name — the order
//! [`EntryMeta::xattrs`] keeps and `getfattr` prints — where a length prefix would have
//! ordered them by name length first. Two attributes with the same name are refused.

use std::cmp::Ordering;

use super::entry::{EntryKind, EntryMeta, OtherField, ROOT_PATH, Xattr, check_archive_path};
use super::limits::{MAX_FIELDS_LEN, MAX_OWNER_NAME_LEN, MAX_XATTR_NAME_LEN, MAX_XATTR_VALUE_LEN};
use super::{FormatError, Reader, put_u16, put_u32};

/// Field type: owner user name.
pub const FIELD_USER: u16 = 0x0001;
/// Field type: owner group name.
pub const FIELD_GROUP: u16 = 0x0002;
/// Field type: one extended attribute.
pub const FIELD_XATTR: u16 = 0x0003;
/// Bit 15 of a field type: the field is critical (a reader that does not know the type must
/// refuse the archive).
pub const CRITICAL: u16 = 0x8000;
/// Bytes of a field's head (type and length) before its value.
pub const FIELD_HEAD_LEN: usize = 6;

/// The encoded fields of `meta` in canonical order, as (type, value) pairs.
fn fields(meta: &EntryMeta) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::with_capacity(2 + meta.xattrs.len() + meta.other_fields.len());
    if let Some(u) = &meta.user {
        out.push((FIELD_USER, u.clone()));
    }
    if let Some(g) = &meta.group {
        out.push((FIELD_GROUP, g.clone()));
    }
    for x in &meta.xattrs {
        let mut v = Vec::with_capacity(x.name.len() + 1 + x.value.len());
        v.extend_from_slice(&x.name);
        v.push(0);
        v.extend_from_slice(&x.value);
        out.push((FIELD_XATTR, v));
    }
    for f in &meta.other_fields {
        out.push((f.field_type, f.value.clone()));
    }
    out
}

/// Length of `meta`'s fields area (without its `u32` length), bytes.
pub fn fields_len(meta: &EntryMeta) -> usize {
    let names = meta.user.as_ref().map_or(0, |u| FIELD_HEAD_LEN + u.len())
        + meta.group.as_ref().map_or(0, |g| FIELD_HEAD_LEN + g.len());
    let xattrs: usize = meta
        .xattrs
        .iter()
        .map(|x| FIELD_HEAD_LEN + x.name.len() + 1 + x.value.len())
        .sum();
    let other: usize = meta
        .other_fields
        .iter()
        .map(|f| FIELD_HEAD_LEN + f.value.len())
        .sum();
    names + xattrs + other
}

/// Appends `u32 F ‖ fields` for `meta` (whose rules [`check_v2`] checked).
pub fn write_fields(meta: &EntryMeta, out: &mut Vec<u8>) {
    put_u32(out, fields_len(meta) as u32);
    for (t, v) in fields(meta) {
        put_u16(out, t);
        put_u32(out, v.len() as u32);
        out.extend_from_slice(&v);
    }
}

/// Parses `u32 F ‖ fields` into `meta`, refusing unknown critical types, unknown non-critical
/// ones are kept in `other_fields`. Order and value rules are checked by [`check_v2`] (the
/// caller runs it), except the order of the encoded fields, checked here.
pub fn parse_fields(r: &mut Reader<'_>, meta: &mut EntryMeta) -> Result<(), FormatError> {
    let len = r.u32()? as usize;
    if len > MAX_FIELDS_LEN {
        return Err(FormatError::invalid(
            "entry fields",
            format!("fields area of {len} bytes (at most {MAX_FIELDS_LEN})"),
        ));
    }
    let mut a = Reader::new(r.take(len)?, "entry fields");
    let mut prev: Option<(u16, &[u8])> = None;
    while a.remaining() > 0 {
        let t = a.u16()?;
        let value = a.bytes_u32()?;
        if let Some((pt, pv)) = prev
            && (pt, pv).cmp(&(t, value)) != Ordering::Less
        {
            return Err(FormatError::invalid(
                "entry fields",
                format!(
                    "field {t:#06x} is out of order or repeated (fields are sorted by type, then value)"
                ),
            ));
        }
        prev = Some((t, value));
        match t {
            FIELD_USER | FIELD_GROUP => {
                let slot = if t == FIELD_USER {
                    &mut meta.user
                } else {
                    &mut meta.group
                };
                if slot.is_some() {
                    return Err(FormatError::invalid(
                        "entry fields",
                        format!("owner name field {t:#06x} appears twice"),
                    ));
                }
                *slot = Some(value.to_vec());
            }
            FIELD_XATTR => {
                let nul = value.iter().position(|&b| b == 0).ok_or_else(|| {
                    FormatError::invalid(
                        "entry fields",
                        "extended attribute without the NUL byte that ends its name",
                    )
                })?;
                meta.xattrs.push(Xattr {
                    name: value[..nul].to_vec(),
                    value: value[nul + 1..].to_vec(),
                });
            }
            0 => {
                return Err(FormatError::invalid(
                    "entry fields",
                    "field type 0 is reserved",
                ));
            }
            t if t & CRITICAL != 0 => {
                return Err(FormatError::NeedsNewer {
                    what: "entry field",
                    code: t,
                });
            }
            t => meta.other_fields.push(OtherField {
                field_type: t,
                value: value.to_vec(),
            }),
        }
    }
    Ok(())
}

fn owner_name(what: &'static str, name: &[u8]) -> Result<(), FormatError> {
    if name.is_empty() || name.len() > MAX_OWNER_NAME_LEN || name.contains(&0) {
        return Err(FormatError::invalid(
            what,
            format!(
                "name of {} bytes is empty, longer than {MAX_OWNER_NAME_LEN} or has a NUL",
                name.len()
            ),
        ));
    }
    Ok(())
}

/// The format-2 rules of [`EntryMeta::check`] beyond those both versions share: the path
/// (canonical, or exactly `.` for the root directory), symlink mode 0o777, no fields on hard
/// links, owner names of 1..=256 bytes without NUL, attribute names of 1..=255 bytes
/// without NUL in strictly increasing order, values of at most 64 KiB, kept fields of
/// non-critical types ≥ 4 in strictly increasing (type, value) order, and a fields area of
/// at most 1 MiB.
pub fn check_v2(meta: &EntryMeta) -> Result<(), FormatError> {
    if meta.path == ROOT_PATH {
        if meta.kind != EntryKind::Dir {
            return Err(FormatError::invalid(
                "entry path",
                "'.' (the archive root) must be a directory",
            ));
        }
    } else {
        check_archive_path(&meta.path)?;
    }
    if meta.kind == EntryKind::Symlink && meta.mode != 0o777 {
        return Err(FormatError::invalid(
            "entry",
            format!("symlink mode {:#o} (format 2 stores 0o777)", meta.mode),
        ));
    }
    if meta.kind == EntryKind::Hardlink && meta.has_fields() {
        return Err(FormatError::invalid(
            "entry",
            "a hard link carries no fields (its target's owner names and attributes are the inode's)",
        ));
    }
    if let Some(u) = &meta.user {
        owner_name("entry user name", u)?;
    }
    if let Some(g) = &meta.group {
        owner_name("entry group name", g)?;
    }
    for (i, x) in meta.xattrs.iter().enumerate() {
        if x.name.is_empty() || x.name.len() > MAX_XATTR_NAME_LEN || x.name.contains(&0) {
            return Err(FormatError::invalid(
                "entry extended attribute",
                format!(
                    "name of {} bytes is empty, longer than {MAX_XATTR_NAME_LEN} or has a NUL",
                    x.name.len()
                ),
            ));
        }
        if x.value.len() > MAX_XATTR_VALUE_LEN {
            return Err(FormatError::invalid(
                "entry extended attribute",
                format!(
                    "value of {} bytes (at most {MAX_XATTR_VALUE_LEN})",
                    x.value.len()
                ),
            ));
        }
        if i > 0 && meta.xattrs[i - 1].name >= x.name {
            return Err(FormatError::invalid(
                "entry extended attribute",
                format!(
                    "{} is out of order or repeated (attributes are sorted by name)",
                    crate::fs::escape_path(&x.name)
                ),
            ));
        }
    }
    for (i, f) in meta.other_fields.iter().enumerate() {
        if f.field_type <= FIELD_XATTR || f.field_type & CRITICAL != 0 {
            return Err(FormatError::invalid(
                "entry fields",
                format!(
                    "kept field type {:#06x} is a known, reserved or critical type",
                    f.field_type
                ),
            ));
        }
        if i > 0 && meta.other_fields[i - 1] >= *f {
            return Err(FormatError::invalid(
                "entry fields",
                format!("field {:#06x} is out of order or repeated", f.field_type),
            ));
        }
    }
    let len = fields_len(meta);
    if len > MAX_FIELDS_LEN {
        return Err(FormatError::invalid(
            "entry fields",
            format!("fields area of {len} bytes (at most {MAX_FIELDS_LEN})"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Timestamp, Version};

    fn rich() -> EntryMeta {
        EntryMeta {
            path: b"usr/bin/ping".to_vec(),
            kind: EntryKind::File,
            mode: 0o4755,
            mtime: Timestamp {
                secs: -1,
                nanos: 999_999_999,
            },
            uid: 0,
            gid: 0,
            user: Some(b"root".to_vec()),
            group: Some(b"wheel".to_vec()),
            xattrs: vec![
                Xattr {
                    name: b"security.capability".to_vec(),
                    value: vec![
                        1, 0, 0, 2, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                    ],
                },
                Xattr {
                    name: b"user.a".to_vec(),
                    value: vec![],
                },
                Xattr {
                    name: b"user.ab".to_vec(),
                    value: b"\x00x".to_vec(),
                },
            ],
            other_fields: vec![OtherField {
                field_type: 0x0042,
                value: b"later".to_vec(),
            }],
            ..EntryMeta::default()
        }
    }

    fn encode(m: &EntryMeta) -> Vec<u8> {
        let mut b = Vec::new();
        m.write(&mut b, Version::V2);
        b
    }

    #[test]
    fn v2_entry_parse_of_write_is_identity_with_every_field_kind() {
        let m = rich();
        m.check(Version::V2).unwrap();
        let b = encode(&m);
        let fixed = 36 + m.path.len();
        assert_eq!(
            u32::from_le_bytes(b[fixed..fixed + 4].try_into().unwrap()) as usize,
            fields_len(&m)
        );
        // user: 6 + 4, group: 6 + 5, xattrs: 6 + 19 + 1 + 20, 6 + 6 + 1, 6 + 7 + 1 + 2,
        // other: 6 + 5.
        assert_eq!(fields_len(&m), 10 + 11 + 46 + 13 + 16 + 11);
        assert_eq!(b.len(), fixed + 4 + fields_len(&m));
        let mut r = Reader::new(&b, "entry");
        assert_eq!(EntryMeta::parse(&mut r, Version::V2).unwrap(), m);
        r.finish().unwrap();
        // The first field is the user name, type 1, length 4.
        assert_eq!(&b[fixed + 4..fixed + 14], b"\x01\x00\x04\x00\x00\x00root");
    }

    #[test]
    fn an_entry_without_fields_has_an_empty_fields_area() {
        let m = EntryMeta {
            path: b"d".to_vec(),
            kind: EntryKind::Dir,
            mode: 0o755,
            ..EntryMeta::default()
        };
        let b = encode(&m);
        assert_eq!(b.len(), 37 + 4);
        assert_eq!(&b[37..], &[0, 0, 0, 0]);
    }

    #[test]
    fn unknown_critical_fields_are_refused_and_unknown_others_kept() {
        let base = EntryMeta {
            path: b"f".to_vec(),
            ..EntryMeta::default()
        };
        let mut b = Vec::new();
        base.write_fixed(&mut b, b"f");
        let with = |t: u16, v: &[u8]| {
            let mut x = b.clone();
            put_u32(&mut x, (6 + v.len()) as u32);
            put_u16(&mut x, t);
            put_u32(&mut x, v.len() as u32);
            x.extend_from_slice(v);
            EntryMeta::parse(&mut Reader::new(&x, "entry"), Version::V2)
        };
        assert_eq!(
            with(0x8123, b"z").unwrap_err(),
            FormatError::NeedsNewer {
                what: "entry field",
                code: 0x8123
            }
        );
        assert_eq!(
            with(0x0123, b"z").unwrap().other_fields,
            vec![OtherField {
                field_type: 0x0123,
                value: b"z".to_vec()
            }]
        );
        assert!(with(0, b"").is_err(), "type 0 is reserved");
        assert!(with(FIELD_XATTR, b"no-nul").is_err());
        assert!(with(FIELD_XATTR, b"\x00v").is_err(), "empty attribute name");
        assert!(with(FIELD_USER, b"").is_err(), "empty user name");
    }

    #[test]
    fn fields_out_of_order_or_repeated_are_refused() {
        let mut m = rich();
        m.xattrs.swap(1, 2);
        assert!(m.check(Version::V2).is_err());
        let mut m = rich();
        m.xattrs[2].name = b"user.a".to_vec();
        assert!(m.check(Version::V2).is_err(), "same attribute name twice");
        // Encoded out of order: group before user.
        let m = EntryMeta {
            path: b"f".to_vec(),
            ..EntryMeta::default()
        };
        let mut b = Vec::new();
        m.write_fixed(&mut b, b"f");
        put_u32(&mut b, 18);
        for (t, v) in [(FIELD_GROUP, b"grp"), (FIELD_USER, b"usr")] {
            put_u16(&mut b, t);
            put_u32(&mut b, 3);
            b.extend_from_slice(v);
        }
        let e = EntryMeta::parse(&mut Reader::new(&b, "entry"), Version::V2).unwrap_err();
        assert!(e.to_string().contains("out of order"), "{e}");
    }

    #[test]
    fn v2_rules_root_symlink_mode_and_hard_links() {
        let root = EntryMeta {
            path: b".".to_vec(),
            kind: EntryKind::Dir,
            mode: 0o755,
            ..EntryMeta::default()
        };
        root.check(Version::V2).unwrap();
        assert!(
            root.check(Version::V1).is_err(),
            "format 1 has no root entry"
        );
        let file_root = EntryMeta {
            kind: EntryKind::File,
            ..root.clone()
        };
        assert!(file_root.check(Version::V2).is_err());
        let link = EntryMeta {
            path: b"l".to_vec(),
            kind: EntryKind::Symlink,
            mode: 0o755,
            link: b"t".to_vec(),
            ..EntryMeta::default()
        };
        assert!(link.check(Version::V2).is_err());
        link.check(Version::V1).unwrap();
        EntryMeta {
            mode: 0o777,
            ..link
        }
        .check(Version::V2)
        .unwrap();
        let hard = EntryMeta {
            path: b"h".to_vec(),
            kind: EntryKind::Hardlink,
            mode: 0o644,
            link: b"f".to_vec(),
            user: Some(b"u".to_vec()),
            ..EntryMeta::default()
        };
        assert!(hard.check(Version::V2).is_err());
        assert!(rich().check(Version::V1).is_err(), "v1 cannot store fields");
    }

    #[test]
    fn field_limits_are_the_table_values() {
        let mut m = rich();
        m.user = Some(vec![b'u'; MAX_OWNER_NAME_LEN]);
        m.check(Version::V2).unwrap();
        m.user = Some(vec![b'u'; MAX_OWNER_NAME_LEN + 1]);
        assert!(m.check(Version::V2).is_err());
        let mut m = rich();
        m.xattrs[0].name = vec![b'n'; MAX_XATTR_NAME_LEN];
        m.xattrs[0].value = vec![7; MAX_XATTR_VALUE_LEN];
        m.check(Version::V2).unwrap();
        let b = encode(&m);
        assert_eq!(
            EntryMeta::parse(&mut Reader::new(&b, "entry"), Version::V2).unwrap(),
            m
        );
        m.xattrs[0].value.push(7);
        assert!(m.check(Version::V2).is_err());
        let mut m = rich();
        m.xattrs = (0..17)
            .map(|i| Xattr {
                name: format!("user.{i:02}").into_bytes(),
                value: vec![0; MAX_XATTR_VALUE_LEN],
            })
            .collect();
        let e = m.check(Version::V2).unwrap_err();
        assert!(e.to_string().contains("at most 1048576"), "{e}");
    }
}
