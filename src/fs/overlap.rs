//! Overlapping inputs: `krypta c a.kry src src/README.md`, `src` twice, or `a/.` and `b/.`
//! (both stored at the archive root) would give the same archive path twice, an archive that
//! `krypta x` refuses. Each archive path is stored once, from its first occurrence.
//!
//! The format allows each path once (FORMAT.md, "Entry paths"; `crate::format::entry_set`
//! refuses a duplicate), so a second source for a stored name cannot be stored under it.
//!
//! Choices (copied into the README):
//! - **The same file reached twice** (same device and inode: `src src/README.md`, `src`
//!   twice, two hard links that map to one name) is stored once, from its first occurrence,
//!   quietly: nothing is lost.
//! - **A directory met again** is not stored again, but what is below it is walked (so `a/.`
//!   and `b/.` merge, as tar merges them, and a file of `b` that `a` lacks is stored), unless
//!   it is the very directory already walked (`src` twice costs one walk).
//! - **A different file, link or directory under a name already stored** (`h1/. h2/.` both
//!   holding `etc/hosts`; `etc ../etc` once `..` is stripped; a file where a directory was
//!   stored, or the reverse) is not stored, with everything below it, and so is an input
//!   that would lie below a stored non-directory (the format allows no entry below a file or
//!   link). Never silently: each is a [`Verdict::Taken`] naming both sources and the name,
//!   which `krypta c` counts as left out (exit 6). Data of the second source is not in the
//!   archive; archive the inputs separately or under different names to keep both.
//! - Cost: nothing for one input or for inputs whose archive paths cannot meet (neither is a
//!   prefix of the other, component-wise). Otherwise the paths of each input that a later
//!   one may meet are kept as 16-byte BLAKE3 keys (2⁻⁶⁴ collision odds at 4 billion paths),
//!   each with its kind, device and inode and the path it was read from (for the warning).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Key of an archive path in the set of paths stored.
fn key(path: &[u8]) -> [u8; 16] {
    let mut k = [0u8; 16];
    k.copy_from_slice(&blake3::hash(path).as_bytes()[..16]);
    k
}

/// Whether the archive paths below `a` and below `b` can meet: one is a component-wise
/// prefix of the other (the root, empty, is a prefix of everything).
fn related(a: &[u8], b: &[u8]) -> bool {
    let below = |short: &[u8], long: &[u8]| {
        short.is_empty()
            || long == short
            || (long.starts_with(short) && long.get(short.len()) == Some(&b'/'))
    };
    below(a, b) || below(b, a)
}

/// What to do with an entry met while walking an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not stored before: store it.
    New,
    /// A directory stored before: do not store it again, but walk what is below it.
    SameDir,
    /// The same file (device and inode) stored before under this name: skip it, quietly.
    Duplicate,
    /// The name holds another file, link or directory already: skip it and what is below
    /// it, naming both.
    Taken {
        /// Where the stored entry was read from.
        first: PathBuf,
        /// The stored entry is of another kind (a directory against a file or link).
        other_kind: bool,
    },
}

/// A stored path a later input may meet.
#[derive(Debug)]
struct Seen {
    dir: bool,
    id: (u64, u64),
    source: PathBuf,
    /// A parent directory an input below the root implies (`d` of `d/file`), with no entry
    /// of its own: a later directory of that name is stored (its mode, owner and times),
    /// anything else is taken.
    implied: bool,
}

/// The paths stored so far by inputs that later inputs may meet (module documentation).
#[derive(Debug, Default)]
pub(crate) struct Overlap {
    /// Per input: a later input may meet its paths, so they are kept.
    record: Vec<bool>,
    /// Per input: an earlier input may have stored its paths, so they are looked up.
    check: Vec<bool>,
    /// Key of each kept path → what was stored there.
    seen: HashMap<[u8; 16], Seen>,
    /// The archive path of each input (its root entry's), as given to [`Overlap::new`].
    roots: Vec<Option<Vec<u8>>>,
}

impl Overlap {
    /// For inputs with these archive roots (the archive path of each input, empty for one
    /// stored at the root; `None` for inputs not walked, such as `-`).
    pub(crate) fn new(roots: &[Option<Vec<u8>>]) -> Self {
        let n = roots.len();
        let mut record = vec![false; n];
        let mut check = vec![false; n];
        for i in 0..n {
            for j in i + 1..n {
                if let (Some(a), Some(b)) = (&roots[i], &roots[j])
                    && related(a, b)
                {
                    record[i] = true;
                    check[j] = true;
                }
            }
        }
        Overlap {
            record,
            check,
            seen: HashMap::new(),
            roots: roots.to_vec(),
        }
    }

    /// Decides on `path` (a directory when `is_dir`; device and inode `id`, read from
    /// `source`) met while walking input `input`, and remembers it when it is stored and a
    /// later input may meet it.
    pub(crate) fn admit(
        &mut self,
        input: usize,
        path: &[u8],
        is_dir: bool,
        id: (u64, u64),
        source: &Path,
    ) -> Verdict {
        let record = self.record.get(input).copied().unwrap_or(false);
        let check = self.check.get(input).copied().unwrap_or(false);
        if !record && !check {
            return Verdict::New;
        }
        let k = key(path);
        if check && let Some(was) = self.seen.get(&k) {
            return match (was.dir, is_dir) {
                // Only implied so far: this directory is its first entry (`d/file d` stored
                // d as it did before parents were implied; SameDir would leave it out).
                (true, true) if was.implied => {
                    self.seen.insert(
                        k,
                        Seen {
                            dir: true,
                            id,
                            source: source.to_path_buf(),
                            implied: false,
                        },
                    );
                    Verdict::New
                }
                (true, true) => Verdict::SameDir,
                (false, false) if was.id == id => Verdict::Duplicate,
                (a, b) => Verdict::Taken {
                    first: was.source.clone(),
                    other_kind: a != b,
                },
            };
        }
        if record {
            self.seen.insert(
                k,
                Seen {
                    dir: is_dir,
                    id,
                    source: source.to_path_buf(),
                    implied: false,
                },
            );
            if self.roots.get(input).and_then(Option::as_deref) == Some(path) {
                self.implied_parents(path, source);
            }
        }
        Verdict::New
    }

    /// An input stored below the archive root (`d/file`) implies its parent directories
    /// (`d`): the archive holds no entry for them, but nothing else may be stored under their
    /// names, or `d/file` would lie below a file or link `d` of a later input (`d/file b/.`
    /// with a link `b/d`), which the entry set refuses: the whole run failed (exit 1).
    /// Each is kept as an implied directory read from the input's own parent, so a later
    /// directory of that name is stored (it has no entry yet: [`Verdict::New`], then it
    /// merges as any stored directory does) and anything else is [`Verdict::Taken`].
    fn implied_parents(&mut self, path: &[u8], source: &Path) {
        let mut from = source.ancestors().skip(1);
        for i in (0..path.len()).rev().filter(|&i| path[i] == b'/') {
            let source = from.next().map_or_else(PathBuf::new, Path::to_path_buf);
            self.seen.entry(key(&path[..i])).or_insert(Seen {
                dir: true,
                id: (u64::MAX, u64::MAX),
                source,
                implied: true,
            });
        }
    }

    /// The ancestor of `path` stored as a non-directory by an earlier input, if any, and
    /// where it was read from (then nothing may be stored at or below `path`).
    pub(crate) fn below_non_dir(&self, input: usize, path: &[u8]) -> Option<(Vec<u8>, PathBuf)> {
        if !self.check.get(input).copied().unwrap_or(false) {
            return None;
        }
        path.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'/')
            .find_map(|(i, _)| match self.seen.get(&key(&path[..i])) {
                Some(s) if !s.dir => Some((path[..i].to_vec(), s.source.clone())),
                _ => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(r: &[&str]) -> Vec<Option<Vec<u8>>> {
        r.iter().map(|s| Some(s.as_bytes().to_vec())).collect()
    }

    /// `admit` of a file or directory with inode `ino`, read from `src`.
    fn at(o: &mut Overlap, input: usize, path: &[u8], dir: bool, ino: u64, src: &str) -> Verdict {
        o.admit(input, path, dir, (1, ino), Path::new(src))
    }

    fn taken(first: &str, other_kind: bool) -> Verdict {
        Verdict::Taken {
            first: PathBuf::from(first),
            other_kind,
        }
    }

    #[test]
    fn related_is_a_component_wise_prefix_either_way() {
        assert!(related(b"src", b"src"));
        assert!(related(b"src", b"src/README.md"));
        assert!(related(b"src/README.md", b"src"));
        assert!(related(b"", b"anything"));
        assert!(!related(b"src", b"srcx"));
        assert!(!related(b"a/b", b"a/c"));
    }

    #[test]
    fn disjoint_inputs_keep_nothing() {
        let mut o = Overlap::new(&roots(&["a", "b", "c/d"]));
        for i in 0..3 {
            assert_eq!(at(&mut o, i, b"a/x", false, i as u64, "x"), Verdict::New);
        }
        assert!(o.seen.is_empty());
    }

    #[test]
    fn the_first_occurrence_wins_and_directories_merge() {
        let mut o = Overlap::new(&roots(&["src", "src/README.md", "src"]));
        assert_eq!(at(&mut o, 0, b"src", true, 1, "src"), Verdict::New);
        assert_eq!(
            at(&mut o, 0, b"src/README.md", false, 2, "src/R"),
            Verdict::New
        );
        assert_eq!(
            at(&mut o, 1, b"src/README.md", false, 2, "R"),
            Verdict::Duplicate
        );
        assert_eq!(at(&mut o, 2, b"src", true, 1, "src"), Verdict::SameDir);
        assert_eq!(at(&mut o, 2, b"src/new", false, 3, "n"), Verdict::New);
        assert_eq!(
            at(&mut o, 2, b"src/README.md", true, 2, "d"),
            taken("src/R", true)
        );
    }

    #[test]
    fn an_input_below_the_root_keeps_its_parents_as_directories() {
        // `d/file b/.` where b holds a link `d`: the link is taken (d/file would lie below
        // it), a directory `d` of b merges, and the walk of `d/file` itself is unaffected.
        let mut o = Overlap::new(&roots(&["d/e/file", "", ""]));
        assert_eq!(
            at(&mut o, 0, b"d/e/file", false, 1, "x/d/e/file"),
            Verdict::New
        );
        assert_eq!(at(&mut o, 1, b"d", false, 2, "b/./d"), taken("x/d", true));
        assert_eq!(at(&mut o, 2, b"d", true, 3, "c/./d"), Verdict::New);
        assert_eq!(
            at(&mut o, 2, b"d/e", false, 4, "c/./d/e"),
            taken("x/d/e", true)
        );
        assert_eq!(
            at(&mut o, 2, b"d/e/file", false, 1, "c/./d/e/file"),
            Verdict::Duplicate
        );
    }

    #[test]
    fn an_implied_parent_met_as_a_directory_is_stored_once() {
        // `d/file d`: d has no entry of its own until the second input stores it (its mode,
        // owner and times); a third input meeting d merges with it.
        let mut o = Overlap::new(&roots(&["d/file", "d", ""]));
        assert_eq!(at(&mut o, 0, b"d/file", false, 1, "d/file"), Verdict::New);
        assert_eq!(at(&mut o, 1, b"d", true, 2, "d"), Verdict::New);
        assert_eq!(
            at(&mut o, 1, b"d/file", false, 1, "d/file"),
            Verdict::Duplicate
        );
        assert_eq!(at(&mut o, 2, b"d", true, 2, "./d"), Verdict::SameDir);
    }

    #[test]
    fn another_file_under_a_stored_name_is_taken_naming_the_first() {
        // h1/. h2/. both holding etc/hosts: different inodes, so not the same file.
        let mut o = Overlap::new(&roots(&["", ""]));
        assert_eq!(at(&mut o, 0, b"etc", true, 1, "h1/./etc"), Verdict::New);
        assert_eq!(
            at(&mut o, 0, b"etc/hosts", false, 2, "h1/./etc/hosts"),
            Verdict::New
        );
        assert_eq!(at(&mut o, 1, b"etc", true, 3, "h2/./etc"), Verdict::SameDir);
        assert_eq!(
            at(&mut o, 1, b"etc/hosts", false, 4, "h2/./etc/hosts"),
            taken("h1/./etc/hosts", false)
        );
        // A hard link to the stored file under the same name is the same file: quiet.
        assert_eq!(
            at(&mut o, 1, b"etc/hosts", false, 2, "h3/etc/hosts"),
            Verdict::Duplicate
        );
    }

    #[test]
    fn a_third_input_sees_what_the_second_added() {
        let mut o = Overlap::new(&roots(&["", "", ""]));
        assert_eq!(at(&mut o, 0, b"a", false, 1, "a"), Verdict::New);
        assert_eq!(at(&mut o, 1, b"b", false, 2, "b"), Verdict::New);
        assert_eq!(at(&mut o, 2, b"b", false, 2, "b"), Verdict::Duplicate);
        assert_eq!(at(&mut o, 2, b"a", false, 1, "a"), Verdict::Duplicate);
        assert_eq!(at(&mut o, 2, b"a", false, 9, "z/a"), taken("a", false));
    }

    #[test]
    fn nothing_lies_below_a_stored_file() {
        let mut o = Overlap::new(&roots(&["x", "x/y/z"]));
        assert_eq!(at(&mut o, 0, b"x", false, 1, "src/x"), Verdict::New);
        assert_eq!(
            o.below_non_dir(1, b"x/y/z"),
            Some((b"x".to_vec(), PathBuf::from("src/x")))
        );
        assert_eq!(o.below_non_dir(1, b"x"), None);
        assert_eq!(
            o.below_non_dir(0, b"x/y/z"),
            None,
            "the first input checks nothing"
        );
    }
}
