//! Overlapping inputs: `krypta c a.kry src src/README.md`, `src` twice, or `a/.` and `b/.`
//! (both stored at the archive root) would give the same archive path twice, an archive that
//! `krypta x` refuses. Each archive path is stored once, from its first occurrence.
//!
//! Choices (copied into the README):
//! - The first occurrence wins, quietly, when both are the same kind; a directory met again
//!   is not stored again, but what is below it is walked (so `a/.` and `b/.` merge, and a
//!   file of `b` that `a` lacks is stored), unless it is the very directory already walked
//!   (same device and inode: `src` twice costs one walk).
//! - A path met again as another kind (a file where a directory was stored, or the reverse:
//!   possible when `..`-stripping maps two sources to one name) is skipped with a warning,
//!   with everything below it, and so is an input that would lie below a stored
//!   non-directory: the format allows no entry below a file or link.
//! - Cost: nothing for one input or for inputs whose archive paths cannot meet (neither is a
//!   prefix of the other, component-wise). Otherwise the paths of each input that a later
//!   one may meet are kept as 16-byte BLAKE3 keys (2⁻⁶⁴ collision odds at 4 billion paths).

use std::collections::HashMap;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not stored before: store it.
    New,
    /// A directory stored before: do not store it again, but walk what is below it.
    SameDir,
    /// Stored before as the same kind: skip it, quietly.
    Duplicate,
    /// Stored before as another kind: skip it and what is below it, with a warning.
    Conflict,
}

/// The paths stored so far by inputs that later inputs may meet (module documentation).
#[derive(Debug, Default)]
pub(crate) struct Overlap {
    /// Per input: a later input may meet its paths, so they are kept.
    record: Vec<bool>,
    /// Per input: an earlier input may have stored its paths, so they are looked up.
    check: Vec<bool>,
    /// Key of each kept path → whether it was stored as a directory.
    seen: HashMap<[u8; 16], bool>,
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
        }
    }

    /// Decides on `path` (a directory when `is_dir`) met while walking input `input`, and
    /// remembers it when it is stored and a later input may meet it.
    pub(crate) fn admit(&mut self, input: usize, path: &[u8], is_dir: bool) -> Verdict {
        let record = self.record.get(input).copied().unwrap_or(false);
        let check = self.check.get(input).copied().unwrap_or(false);
        if !record && !check {
            return Verdict::New;
        }
        let k = key(path);
        if check && let Some(&was_dir) = self.seen.get(&k) {
            return match (was_dir, is_dir) {
                (true, true) => Verdict::SameDir,
                (false, false) => Verdict::Duplicate,
                _ => Verdict::Conflict,
            };
        }
        if record {
            self.seen.insert(k, is_dir);
        }
        Verdict::New
    }

    /// Whether an ancestor of `path` was stored as a non-directory by an earlier input (then
    /// nothing may be stored at or below `path`).
    pub(crate) fn below_non_dir(&self, input: usize, path: &[u8]) -> bool {
        if !self.check.get(input).copied().unwrap_or(false) {
            return false;
        }
        path.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'/')
            .any(|(i, _)| self.seen.get(&key(&path[..i])) == Some(&false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(r: &[&str]) -> Vec<Option<Vec<u8>>> {
        r.iter().map(|s| Some(s.as_bytes().to_vec())).collect()
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
            assert_eq!(o.admit(i, b"a/x", false), Verdict::New);
        }
        assert!(o.seen.is_empty());
    }

    #[test]
    fn the_first_occurrence_wins_and_directories_merge() {
        let mut o = Overlap::new(&roots(&["src", "src/README.md", "src"]));
        assert_eq!(o.admit(0, b"src", true), Verdict::New);
        assert_eq!(o.admit(0, b"src/README.md", false), Verdict::New);
        assert_eq!(o.admit(1, b"src/README.md", false), Verdict::Duplicate);
        assert_eq!(o.admit(2, b"src", true), Verdict::SameDir);
        assert_eq!(o.admit(2, b"src/new", false), Verdict::New);
        assert_eq!(o.admit(2, b"src/README.md", true), Verdict::Conflict);
    }

    #[test]
    fn a_third_input_sees_what_the_second_added() {
        let mut o = Overlap::new(&roots(&["", "", ""]));
        assert_eq!(o.admit(0, b"a", false), Verdict::New);
        assert_eq!(o.admit(1, b"b", false), Verdict::New);
        assert_eq!(o.admit(2, b"b", false), Verdict::Duplicate);
        assert_eq!(o.admit(2, b"a", false), Verdict::Duplicate);
    }

    #[test]
    fn nothing_lies_below_a_stored_file() {
        let mut o = Overlap::new(&roots(&["x", "x/y/z"]));
        assert_eq!(o.admit(0, b"x", false), Verdict::New);
        assert!(o.below_non_dir(1, b"x/y/z"));
        assert!(!o.below_non_dir(1, b"x"));
        assert!(
            !o.below_non_dir(0, b"x/y/z"),
            "the first input checks nothing"
        );
    }
}
