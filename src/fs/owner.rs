//! Owner and group names: the names stored next to the numeric ids when archiving, and the
//! ids those names have on the restoring system.
//!
//! Choices (copied into the README):
//! - Lookups go through the C library (`getpwuid_r`, `getgrgid_r`, `getpwnam_r`,
//!   `getgrnam_r`, via the `nix` crate), so NSS sources (LDAP, sssd) answer as they do for
//!   `ls -l` and `tar`. Every answer, found or not, is cached for the run: a tree has few
//!   distinct owners, and an NSS lookup may cost a file read or a network round trip.
//! - A name is stored only when the lookup finds one that the format can hold (1..=256 bytes,
//!   no NUL) and that is valid UTF-8 (the C library's bytes are read through `nix`, which
//!   decodes them as UTF-8; a name that does not decode is not stored rather than stored
//!   altered). Without a name the id alone is stored, and a restore uses the id.
//! - A failed lookup (no entry, or an NSS error) is "no name", never an error: the numeric id
//!   is always stored and is always a valid fallback.

use std::collections::HashMap;

use nix::unistd::{Gid, Group, Uid, User};

/// Longest owner or group name stored, bytes (glibc allows 256; the format's limit).
pub(crate) const MAX_NAME_LEN: usize = 256;

/// Whether a name is one the format can store (1..=[`MAX_NAME_LEN`] bytes, no NUL).
fn storable(name: &[u8]) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME_LEN && !name.contains(&0)
}

/// A name from the C library as `nix` returns it, or `None` when it cannot be stored
/// unaltered (see the module documentation).
fn from_lossy(name: String) -> Option<Vec<u8>> {
    // `nix` decodes with `to_string_lossy`: a replacement character means the bytes were not
    // UTF-8 (or were that character, which no real system uses in account names).
    if name.contains('\u{FFFD}') || !storable(name.as_bytes()) {
        return None;
    }
    Some(name.into_bytes())
}

/// Names of ids, for archiving (`getpwuid_r` / `getgrgid_r`), cached.
#[derive(Debug, Default)]
pub(crate) struct NameCache {
    users: HashMap<u32, Option<Vec<u8>>>,
    groups: HashMap<u32, Option<Vec<u8>>>,
}

impl NameCache {
    /// The user name of `uid`, if this system has one that can be stored.
    pub(crate) fn user(&mut self, uid: u32) -> Option<Vec<u8>> {
        self.users
            .entry(uid)
            .or_insert_with(|| {
                User::from_uid(Uid::from_raw(uid))
                    .ok()
                    .flatten()
                    .and_then(|u| from_lossy(u.name))
            })
            .clone()
    }

    /// The group name of `gid`, if this system has one that can be stored.
    pub(crate) fn group(&mut self, gid: u32) -> Option<Vec<u8>> {
        self.groups
            .entry(gid)
            .or_insert_with(|| {
                Group::from_gid(Gid::from_raw(gid))
                    .ok()
                    .flatten()
                    .and_then(|g| from_lossy(g.name))
            })
            .clone()
    }
}

/// Ids of names, for restoring (`getpwnam_r` / `getgrnam_r`), cached.
#[derive(Debug, Default)]
pub(crate) struct IdCache {
    users: HashMap<Vec<u8>, Option<u32>>,
    groups: HashMap<Vec<u8>, Option<u32>>,
}

impl IdCache {
    /// The uid this system gives the user `name`, if it has such a user.
    pub(crate) fn uid(&mut self, name: &[u8]) -> Option<u32> {
        if let Some(found) = self.users.get(name) {
            return *found;
        }
        let found = std::str::from_utf8(name)
            .ok()
            .filter(|_| storable(name))
            .and_then(|n| User::from_name(n).ok().flatten())
            .map(|u| u.uid.as_raw());
        self.users.insert(name.to_vec(), found);
        found
    }

    /// The gid this system gives the group `name`, if it has such a group.
    pub(crate) fn gid(&mut self, name: &[u8]) -> Option<u32> {
        if let Some(found) = self.groups.get(name) {
            return *found;
        }
        let found = std::str::from_utf8(name)
            .ok()
            .filter(|_| storable(name))
            .and_then(|n| Group::from_name(n).ok().flatten())
            .map(|g| g.gid.as_raw());
        self.groups.insert(name.to_vec(), found);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_named_root_both_ways() {
        let mut names = NameCache::default();
        assert_eq!(names.user(0).as_deref(), Some(&b"root"[..]));
        assert_eq!(names.group(0).as_deref(), Some(&b"root"[..]));
        let mut ids = IdCache::default();
        assert_eq!(ids.uid(b"root"), Some(0));
        assert_eq!(ids.gid(b"root"), Some(0));
    }

    #[test]
    fn unknown_ids_and_names_have_no_counterpart() {
        let mut names = NameCache::default();
        // Far above any allocated id (and not the overflow id 65534).
        assert_eq!(names.user(3_999_999_999), None);
        assert_eq!(names.group(3_999_999_999), None);
        let mut ids = IdCache::default();
        assert_eq!(ids.uid(b"no-such-user-krypta-test"), None);
        assert_eq!(ids.gid(b"no-such-group-krypta-test"), None);
        assert_eq!(ids.uid(b"\xff\xfe"), None, "not UTF-8: the id is used");
        assert_eq!(ids.uid(b""), None);
        assert_eq!(ids.uid(b"ro\0ot"), None);
    }

    #[test]
    fn names_that_cannot_be_stored_unaltered_are_not_stored() {
        assert_eq!(from_lossy("ab\u{FFFD}c".into()), None);
        assert_eq!(from_lossy("x".repeat(257)), None);
        assert_eq!(from_lossy(String::new()), None);
        assert_eq!(from_lossy("daemon".into()), Some(b"daemon".to_vec()));
        assert_eq!(
            from_lossy("x".repeat(256)).map(|v| v.len()),
            Some(MAX_NAME_LEN)
        );
    }
}
