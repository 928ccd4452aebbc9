//! The rules on the set of entries of an archive (docs/FORMAT.md §3.3): one implementation,
//! used by the writer (it never writes a set a reader refuses), by the reader on the record
//! stream and on the index, so that `test` refuses exactly what `extract` refuses.
//!
//! Format 2:
//! - Paths are unique. `.` (the archive root) may appear only as the first entry (and is a
//!   directory: [`super::entry_v2::check_v2`]).
//! - No entry lies below a non-directory entry (file, symlink or hard link) of the archive,
//!   whichever comes first.
//! - Parents need not have entries (an extractor creates them), and a directory entry may
//!   come after entries below it.
//! - A hard link's target is an earlier *file* entry (not a directory, a symlink, a hard link
//!   — no chains — or a later entry), and the link's mode, mtime, uid and gid equal the
//!   target's (a hard link is the same inode; it has no metadata of its own).
//!
//! Format 1 follows the same rules, but for what krypta's format-1 writer did write: it gave
//! overlapping inputs (`krypta c a.kry src src/x`, or `src` twice) a second entry of the same
//! path and type, so in format 1 a repeated path of the same type is accepted and replaces
//! the earlier entry ([`Admit::Replaces`]; `x -f` extracted such archives, and extraction now
//! does without `-f` too), and a hard link's own mode and times are not compared (they are
//! ignored). A repeated path of another type is refused in both versions.
//!
//! Cost: each path is hashed in one pass over its bytes, which yields the hash of every
//! ancestor on the way (a polynomial hash's running value), and the ancestors are looked up
//! deepest first, stopping at the first one already known; each distinct ancestor is
//! inserted once. So the check is linear in the total path bytes of the stream, also for deep
//! trees (issue 12 #22's 8,192-deep chain) and for one path of 32,768 components.
//!
//! Paths are kept as 122-bit hashes, not as bytes: two polynomial hashes modulo the prime
//! 2⁶¹ − 1 with bases drawn at random for each set (bytes map to 1..=256, a component end
//! to 257). Two distinct paths of at most 65,536 bytes collide with probability at most
//! (65,537 / 2⁶¹)² per pair, about 10⁻²⁷, and a crafted collision needs the bases, which never
//! leave the process. (A collision would only make a valid archive be refused or an extraction
//! fail later in the extractor, which checks the filesystem again.)

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

/// The maps' hasher: the keys are already random-keyed 122-bit hashes, so hashing them again
/// with SipHash (std's default) only costs time (it was half the cost of the check); this
/// folds the two halves into 64 well-mixed bits.
#[derive(Default)]
struct KeyHash(u64);

impl Hasher for KeyHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u128(&mut self, v: u128) {
        let (hi, lo) = ((v >> 64) as u64, v as u64);
        self.0 = (hi.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ lo.rotate_left(29))
            .wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    }
}

type Keyed<V> = HashMap<u128, V, BuildHasherDefault<KeyHash>>;
type KeySet = HashSet<u128, BuildHasherDefault<KeyHash>>;

/// The Mersenne prime 2⁶¹ − 1.
const P61: u64 = (1 << 61) - 1;

/// `a * b mod 2⁶¹ − 1` for `a, b < 2⁶¹ − 1`.
fn mulmod(a: u64, b: u64) -> u64 {
    let x = a as u128 * b as u128;
    let r = (x & P61 as u128) as u64 + (x >> 61) as u64;
    if r >= P61 { r - P61 } else { r }
}

/// One step of the polynomial hash: `h · base + v (mod 2⁶¹ − 1)`, `v <= 257`.
fn step(h: u64, base: u64, v: u64) -> u64 {
    let r = mulmod(h, base) + v;
    if r >= P61 { r - P61 } else { r }
}

/// A random base in 2⁸..2⁶¹ − 1 (from the OS-seeded keys of `std`'s `RandomState`).
fn random_base() -> u64 {
    let v = RandomState::new().build_hasher().finish();
    (v % (P61 - 512)) + 512
}

use super::entry::{EntryKind, EntryMeta, ROOT_PATH, Timestamp};
use super::{FormatError, Version};

/// What admitting an entry found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// A path not seen before.
    New,
    /// Format 1 only: the path was seen before with the same type; this entry replaces it
    /// (the extractor may replace what it extracted for the earlier one in this run).
    Replaces,
}

/// The attributes a hard link must share with its target (format 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InodeAttrs {
    /// Permission bits.
    pub mode: u32,
    /// Modification time.
    pub mtime: Timestamp,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
}

impl InodeAttrs {
    /// The attributes of `meta`.
    pub fn of(meta: &EntryMeta) -> Self {
        InodeAttrs {
            mode: meta.mode,
            mtime: meta.mtime,
            uid: meta.uid,
            gid: meta.gid,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    kind: EntryKind,
    attrs: InodeAttrs,
}

/// The entries admitted so far. See the module documentation for the rules.
#[derive(Debug)]
pub struct EntrySet {
    version: Version,
    bases: (u64, u64),
    entries: Keyed<Slot>,
    /// Every proper ancestor of an admitted entry (a directory, with or without an entry).
    implied: KeySet,
    count: u64,
    /// The ancestors' keys of the entry being admitted (kept to reuse its allocation).
    scratch: Vec<u128>,
    /// Salvage without an index ([`EntrySet::salvaging`]): a hard link whose target was
    /// never admitted is admitted too.
    salvaging: bool,
}

// An entry's path for a message: escaped as `list` shows it, cut after 200 characters.
use super::entry::shown_path as shown;

impl EntrySet {
    /// An empty set for an archive of `version`.
    pub fn new(version: Version) -> Self {
        Self::with_capacity(version, 0)
    }

    /// The set of a salvage without an index (`archive::reader::resync`): the entries of the
    /// damaged regions were never seen, so a hard link may point to a target the set has not
    /// admitted — lost, not necessarily later. It is admitted (every other rule holds): the
    /// reader cannot make it (its target was not restored) and names it as lost with its
    /// target, instead of refusing the rest of the run after it.
    pub fn salvaging(mut self) -> Self {
        self.salvaging = true;
        self
    }

    /// An empty set with room for `entries` entries (when the count is known: the index).
    pub fn with_capacity(version: Version, entries: usize) -> Self {
        EntrySet {
            version,
            bases: (random_base(), random_base()),
            entries: Keyed::with_capacity_and_hasher(entries, Default::default()),
            implied: KeySet::with_capacity_and_hasher(entries / 8, Default::default()),
            count: 0,
            scratch: Vec::new(),
            salvaging: false,
        }
    }

    /// Entries admitted so far.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// True when nothing was admitted yet.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The keys of every proper ancestor of `path` (shallowest first) and of `path` itself,
    /// in one pass over its bytes.
    fn keys_of(&self, path: &[u8]) -> (Vec<u128>, u128) {
        let mut ancestors = Vec::new();
        let key = self.keys_into(path, &mut ancestors);
        (ancestors, key)
    }

    /// [`EntrySet::keys_of`] into `ancestors` (cleared first); returns the path's key.
    fn keys_into(&self, path: &[u8], ancestors: &mut Vec<u128>) -> u128 {
        ancestors.clear();
        let (ba, bb) = self.bases;
        let (mut a, mut b) = (0u64, 0u64);
        for &c in path {
            if c == b'/' {
                a = step(a, ba, 257);
                b = step(b, bb, 257);
                ancestors.push(((a as u128) << 64) | b as u128);
            } else {
                a = step(a, ba, c as u64 + 1);
                b = step(b, bb, c as u64 + 1);
            }
        }
        a = step(a, ba, 257);
        b = step(b, bb, 257);
        ((a as u128) << 64) | b as u128
    }

    /// The attributes of the file entry at `path`, if one was admitted (what a hard link to
    /// it must carry in format 2).
    pub fn file_attrs(&self, path: &[u8]) -> Option<InodeAttrs> {
        let (_, key) = self.keys_of(path);
        self.entries
            .get(&key)
            .filter(|s| s.kind == EntryKind::File)
            .map(|s| s.attrs)
    }

    /// Admits the next entry (in stream order) or says which rule it breaks. The entry's
    /// own metadata rules ([`EntryMeta::check`]) are the caller's.
    pub fn admit(&mut self, meta: &EntryMeta) -> Result<Admit, FormatError> {
        let what = "entry set";
        if meta.path == ROOT_PATH {
            if self.count != 0 {
                return Err(FormatError::invalid(
                    what,
                    "'.' (the archive root) is not the first entry",
                ));
            }
            self.count = 1;
            let (_, key) = self.keys_of(ROOT_PATH);
            self.entries.insert(
                key,
                Slot {
                    kind: EntryKind::Dir,
                    attrs: InodeAttrs::of(meta),
                },
            );
            return Ok(Admit::New);
        }
        let mut ancestors = std::mem::take(&mut self.scratch);
        let key = self.keys_into(&meta.path, &mut ancestors);
        let r = self.admit_keyed(meta, key, &ancestors);
        self.scratch = ancestors;
        r
    }

    fn admit_keyed(
        &mut self,
        meta: &EntryMeta,
        key: u128,
        ancestors: &[u128],
    ) -> Result<Admit, FormatError> {
        let what = "entry set";
        let dir = meta.kind == EntryKind::Dir;
        let mut admit = Admit::New;
        if let Some(prev) = self.entries.get(&key) {
            if self.version == Version::V2 || prev.kind != meta.kind {
                return Err(FormatError::invalid(
                    what,
                    format!("{} appears more than once", shown(&meta.path)),
                ));
            }
            admit = Admit::Replaces;
        }
        if !dir && self.implied.contains(&key) {
            return Err(FormatError::invalid(
                what,
                format!(
                    "entries lie below {}, which is not a directory",
                    shown(&meta.path)
                ),
            ));
        }
        // Deepest ancestor first: once one is known, all above it are (and were checked).
        // Nothing is inserted before every rule passed, so a refused entry leaves the set
        // as it was (the writer skips it and goes on).
        let mut new_ancestors = Vec::new();
        for (depth, a) in ancestors.iter().enumerate().rev() {
            if self.implied.contains(a) {
                break;
            }
            if let Some(s) = self.entries.get(a)
                && s.kind != EntryKind::Dir
            {
                let parent: Vec<u8> = meta
                    .path
                    .split(|&c| c == b'/')
                    .take(depth + 1)
                    .collect::<Vec<_>>()
                    .join(&b'/');
                return Err(FormatError::invalid(
                    what,
                    format!(
                        "{} lies below {}, which is not a directory",
                        shown(&meta.path),
                        shown(&parent)
                    ),
                ));
            }
            new_ancestors.push(*a);
        }
        if meta.kind == EntryKind::Hardlink {
            let (_, target) = self.keys_of(&meta.link);
            let seen = self.entries.get(&target);
            match seen.filter(|s| s.kind == EntryKind::File) {
                Some(_) => {}
                None if self.salvaging && seen.is_none() => {}
                None => {
                    return Err(FormatError::invalid(
                        what,
                        format!(
                            "hard link {} points to {}, which is not an earlier file entry",
                            shown(&meta.path),
                            shown(&meta.link)
                        ),
                    ));
                }
            }
            if self.version == Version::V2
                && let Some(t) = seen
                && t.attrs != InodeAttrs::of(meta)
            {
                return Err(FormatError::invalid(
                    what,
                    format!(
                        "hard link {} has a mode, mtime or owner other than its target {}'s",
                        shown(&meta.path),
                        shown(&meta.link)
                    ),
                ));
            }
        }
        self.implied.extend(new_ancestors);
        self.entries.insert(
            key,
            Slot {
                kind: meta.kind,
                attrs: InodeAttrs::of(meta),
            },
        );
        self.count += 1;
        Ok(admit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(path: &str, kind: EntryKind) -> EntryMeta {
        EntryMeta {
            path: path.as_bytes().to_vec(),
            kind,
            mode: if kind == EntryKind::Symlink {
                0o777
            } else {
                0o644
            },
            link: match kind {
                EntryKind::Symlink => b"t".to_vec(),
                _ => Vec::new(),
            },
            ..EntryMeta::default()
        }
    }

    fn link(path: &str, target: &str) -> EntryMeta {
        EntryMeta {
            link: target.as_bytes().to_vec(),
            ..e(path, EntryKind::Hardlink)
        }
    }

    fn run(version: Version, entries: &[EntryMeta]) -> Result<Vec<Admit>, String> {
        let mut s = EntrySet::new(version);
        entries
            .iter()
            .map(|m| s.admit(m).map_err(|e| e.to_string()))
            .collect()
    }

    use EntryKind::{Dir, File, Symlink};

    #[test]
    fn a_tree_in_any_order_with_missing_parents_is_accepted() {
        let tree = [
            e("a/b/c", File),
            e("a/b", Dir),
            e("a", Dir),
            e("x/y/z", Symlink),
            link("h", "a/b/c"),
        ];
        for v in [Version::V1, Version::V2] {
            assert_eq!(run(v, &tree).unwrap(), vec![Admit::New; 5]);
        }
    }

    #[test]
    fn duplicates_are_refused_in_v2_and_replace_in_v1_when_the_type_matches() {
        let dup = [e("d", Dir), e("d/f", File), e("d", Dir), e("d/f", File)];
        let err = run(Version::V2, &dup).unwrap_err();
        assert_eq!(err, "entry set: d appears more than once");
        assert_eq!(
            run(Version::V1, &dup).unwrap(),
            vec![Admit::New, Admit::New, Admit::Replaces, Admit::Replaces]
        );
        for v in [Version::V1, Version::V2] {
            let err = run(v, &[e("p", File), e("p", Dir)]).unwrap_err();
            assert!(err.contains("more than once"), "{err}");
        }
    }

    #[test]
    fn nothing_lies_below_a_non_directory_in_either_order() {
        for v in [Version::V1, Version::V2] {
            for parent in [File, Symlink] {
                let err = run(v, &[e("s", parent), e("s/x/y", File)]).unwrap_err();
                assert_eq!(
                    err,
                    "entry set: s/x/y lies below s, which is not a directory"
                );
                let err = run(v, &[e("s/x/y", File), e("s", parent)]).unwrap_err();
                assert_eq!(
                    err,
                    "entry set: entries lie below s, which is not a directory"
                );
            }
            let err = run(v, &[e("f", File), link("l", "f"), e("l/x", Dir)]).unwrap_err();
            assert!(err.contains("below l"), "{err}");
        }
    }

    #[test]
    fn hard_links_point_to_earlier_files_only() {
        for v in [Version::V1, Version::V2] {
            for bad in [
                vec![link("h", "f"), e("f", File)],
                vec![e("d", Dir), link("h", "d")],
                vec![e("f", File), link("h", "f"), link("h2", "h")],
                vec![e("s", Symlink), link("h", "s")],
                vec![link("h", "h")],
            ] {
                let err = run(v, &bad).unwrap_err();
                assert!(err.contains("not an earlier file entry"), "{v:?} {err}");
            }
        }
        // Format 2 compares the link's attributes with its target's; format 1 ignores them.
        let mut l = link("h", "f");
        l.mode = 0o600;
        let set = [e("f", File), l];
        assert!(
            run(Version::V2, &set)
                .unwrap_err()
                .contains("mode, mtime or owner")
        );
        run(Version::V1, &set).unwrap();
    }

    #[test]
    fn a_refused_entry_leaves_the_set_unchanged() {
        let mut s = EntrySet::new(Version::V2);
        s.admit(&e("f", File)).unwrap();
        assert!(s.admit(&link("a/b/h", "missing")).is_err());
        // "a" got no implied children from the refused link, so a file "a" is fine.
        s.admit(&e("a", File)).unwrap();
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn the_root_entry_comes_first_and_once() {
        let root = EntryMeta {
            mode: 0o755,
            ..e(".", Dir)
        };
        run(Version::V2, &[root.clone(), e("a", File)]).unwrap();
        let err = run(Version::V2, &[e("a", File), root.clone()]).unwrap_err();
        assert!(err.contains("not the first entry"), "{err}");
        assert!(run(Version::V2, &[root.clone(), root]).is_err());
    }

    #[test]
    fn mulmod_is_multiplication_modulo_the_mersenne_prime() {
        for (a, b) in [
            (0, 5),
            (P61 - 1, P61 - 1),
            (1 << 60, 3),
            (123_456_789, 987_654_321),
        ] {
            assert_eq!(mulmod(a, b) as u128, a as u128 * b as u128 % P61 as u128);
        }
        let s = EntrySet::new(Version::V2);
        // A path's key equals its ancestor's key in a longer path.
        let (anc, _) = s.keys_of(b"a/bc/d");
        assert_eq!(anc, vec![s.keys_of(b"a").1, s.keys_of(b"a/bc").1]);
        assert_ne!(s.keys_of(b"ab").1, s.keys_of(b"a/b").1);
    }

    #[test]
    fn a_deep_chain_is_linear() {
        // 5,000 nested directories, each admitted after its parent: every entry inserts one
        // new ancestor and stops at the next (total work linear in the path bytes).
        let mut s = EntrySet::new(Version::V2);
        let mut path = String::from("d");
        for _ in 0..5_000 {
            s.admit(&e(&path, Dir)).unwrap();
            path.push_str("/d");
        }
        assert_eq!(s.len(), 5_000);
        assert_eq!(s.implied.len(), 4_999);
        assert_eq!(s.file_attrs(b"d"), None);
    }
}
