//! The glob grammar shared by `c --exclude`/`--exclude-from` and by the `--wildcards` PATH
//! arguments of `x` and `l`: patterns compiled once (`globset`) and matched against stored
//! names, which are raw bytes.
//!
//! Decisions (README "Choosing what goes in", `--help`):
//! - **Syntax** is gitignore's: `*` matches any run of characters but `/`, `?` one character
//!   but `/`, `[abc]`/`[a-z]`/`[!a-z]` one of a set, `{a,b}` either, `**` any number of whole
//!   components (`a/**/b`, `**/x`), `\` makes the next character literal. A trailing `/`
//!   makes the pattern match directories only (`cache/`). `!pattern` re-includes what an
//!   earlier pattern matched: the last pattern that matches a name decides, as in gitignore.
//! - **Anchoring**: a pattern is compared with the stored name, the path as given on the
//!   command line made relative (`/home/me` is stored as `home/me`). A pattern with a leading
//!   `/` (or `./`) is anchored at the start of the stored name: `/home/me/.cache` matches
//!   `home/me/.cache` only. Any other pattern matches at any depth, against every tail of the
//!   name made of whole components: `*.o` matches `a.o` and `src/a.o`, `build/tmp` matches
//!   `build/tmp` and `x/build/tmp`. This is what tar (`--no-anchored`, its default for
//!   `--exclude`) and restic do; gitignore differs only in anchoring a pattern with a slash
//!   in its middle, which is written here with a leading `/`. Why: one exclude file then
//!   works for `krypta c b.kry ~/x` and for `krypta c b.kry x` run from `~`.
//! - **Directories**: a directory that matches is left out with everything below it (the
//!   walk never reads it); for `--wildcards`, a directory that matches selects everything
//!   below it, as a literal PATH does.
//! - Names are matched as bytes (a name that is not UTF-8 still matches `*`); patterns must be
//!   UTF-8. Matching is case-sensitive, as the file systems krypta runs on.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use globset::{Candidate, GlobBuilder, GlobSet, GlobSetBuilder};

use crate::{Error, Result};

/// One compiled pattern's flags, in the order given.
#[derive(Debug, Clone)]
struct Rule {
    /// `!pattern`: a match re-includes.
    negated: bool,
    /// Trailing `/`: matches directories only.
    dir_only: bool,
}

/// Patterns being collected; [`PatternsBuilder::build`] compiles them.
#[derive(Debug)]
pub struct PatternsBuilder {
    set: GlobSetBuilder,
    rules: Vec<Rule>,
    texts: Vec<String>,
}

/// A compiled, ordered list of patterns.
#[derive(Debug, Clone)]
pub struct Patterns {
    set: GlobSet,
    rules: Vec<Rule>,
    texts: Vec<String>,
}

impl Default for Patterns {
    fn default() -> Self {
        Patterns {
            set: GlobSet::empty(),
            rules: Vec::new(),
            texts: Vec::new(),
        }
    }
}

impl Default for PatternsBuilder {
    fn default() -> Self {
        PatternsBuilder {
            set: GlobSetBuilder::new(),
            rules: Vec::new(),
            texts: Vec::new(),
        }
    }
}

impl PatternsBuilder {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one pattern given as an argument; `origin` names it in errors
    /// (`--exclude`, `FILE:3`).
    pub fn add(&mut self, pattern: &str, origin: &str) -> Result<()> {
        let bad = |why: String| Error::Usage(format!("{origin}: bad pattern '{pattern}': {why}"));
        let (negated, rest) = match pattern.strip_prefix('!') {
            Some(r) => (true, r),
            None => (false, pattern),
        };
        let dir_only = rest.len() > 1 && rest.ends_with('/') && !rest.ends_with("\\/");
        let body = if dir_only {
            rest.trim_end_matches('/')
        } else {
            rest
        };
        let (anchored, body) = if let Some(b) = body.strip_prefix("./") {
            (true, b.trim_start_matches('/'))
        } else if body.starts_with('/') {
            (true, body.trim_start_matches('/'))
        } else {
            (false, body)
        };
        if body.is_empty() {
            return Err(bad("it matches no name".into()));
        }
        // Stored names are made relative and normalised (no `.` or `..` component; the one
        // name `.` is the root entry of an archive made from `dir/.`), so such a pattern
        // could never match: said, rather than silently leaving everything in.
        if let Some(c) = body
            .split('/')
            .find(|c| *c == ".." || (*c == "." && body != "."))
        {
            return Err(bad(format!(
                "it matches no name (stored names have no '{c}' component: patterns are compared with the stored name, the path as given made relative)"
            )));
        }
        let glob = if anchored || body.starts_with("**/") || body == "**" {
            body.to_string()
        } else {
            format!("**/{body}")
        };
        let compiled = GlobBuilder::new(&glob)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| bad(e.kind().to_string()))?;
        self.set.add(compiled);
        self.rules.push(Rule { negated, dir_only });
        self.texts.push(pattern.to_string());
        Ok(())
    }

    /// Adds the patterns of an exclude file (`--exclude-from`): one per line; blank lines and
    /// lines starting with `#` are skipped; a trailing `\r` and unescaped trailing spaces are
    /// removed (`\ ` keeps one), as gitignore reads its files. `name` is the file, for errors.
    pub fn add_lines(&mut self, text: &[u8], name: &str) -> Result<()> {
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = std::str::from_utf8(line).map_err(|_| {
                Error::Usage(format!(
                    "{name}:{}: a pattern must be UTF-8 (names are matched as bytes)",
                    i + 1
                ))
            })?;
            let line = trim_unescaped_trailing_spaces(line);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            self.add(line, &format!("{name}:{}", i + 1))?;
        }
        Ok(())
    }

    /// True when no pattern was added.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Compiles the list.
    pub fn build(self) -> Result<Patterns> {
        let set = self
            .set
            .build()
            .map_err(|e| Error::Usage(format!("bad pattern: {e}")))?;
        Ok(Patterns {
            set,
            rules: self.rules,
            texts: self.texts,
        })
    }
}

/// `foo  ` → `foo`, `foo\ ` → `foo\ ` (the backslash still escapes the space for the glob).
fn trim_unescaped_trailing_spaces(line: &str) -> &str {
    let mut end = line.len();
    while end > 0 && line.as_bytes()[end - 1] == b' ' {
        if end >= 2 && line.as_bytes()[end - 2] == b'\\' {
            break;
        }
        end -= 1;
    }
    &line[..end]
}

impl Patterns {
    /// True when the list holds no pattern.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Number of patterns.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// The pattern at `i` as given.
    pub fn text(&self, i: usize) -> &str {
        &self.texts[i]
    }

    /// The decision for a stored name: `Some((i, true))` when pattern `i`, the last one that
    /// matches, selects it (a plain pattern), `Some((i, false))` when it is a `!` pattern,
    /// `None` when none matches. `is_dir` says whether the name is a directory (for patterns
    /// ending in `/`).
    pub fn decide(&self, name: &[u8], is_dir: bool) -> Option<(usize, bool)> {
        if self.rules.is_empty() {
            return None;
        }
        let cand = Candidate::new(Path::new(OsStr::from_bytes(name)));
        let hits = self.set.matches_candidate(&cand);
        hits.iter()
            .rev()
            .find(|&&i| is_dir || !self.rules[i].dir_only)
            .map(|&i| (i, !self.rules[i].negated))
    }

    /// The indices of every pattern that matches `name` as a directory or not (its `!` and
    /// trailing-`/` flags ignored), in order.
    pub fn hits(&self, name: &[u8]) -> Vec<usize> {
        if self.rules.is_empty() {
            return Vec::new();
        }
        self.set
            .matches_candidate(&Candidate::new(Path::new(OsStr::from_bytes(name))))
    }

    /// Whether the list selects `name` (the last matching pattern is not a `!` pattern).
    pub fn matches(&self, name: &[u8], is_dir: bool) -> bool {
        matches!(self.decide(name, is_dir), Some((_, true)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pats(list: &[&str]) -> Patterns {
        let mut b = PatternsBuilder::new();
        for p in list {
            b.add(p, "--exclude").unwrap();
        }
        b.build().unwrap()
    }

    #[test]
    fn unanchored_patterns_match_at_any_depth_by_whole_components() {
        let p = pats(&["*.o", "build/tmp", "node_modules"]);
        assert!(p.matches(b"a.o", false));
        assert!(p.matches(b"src/deep/a.o", false));
        assert!(!p.matches(b"a.o.txt", false));
        assert!(p.matches(b"build/tmp", true));
        assert!(p.matches(b"x/build/tmp", true));
        assert!(!p.matches(b"xbuild/tmp", true));
        assert!(!p.matches(b"build/tmpx", true));
        assert!(p.matches(b"web/node_modules", true));
        assert!(!p.matches(b"web/node_modules2", true));
    }

    #[test]
    fn leading_slash_or_dot_slash_anchors_at_the_start_of_the_stored_name() {
        let p = pats(&["/home/me/.cache", "./top"]);
        assert!(p.matches(b"home/me/.cache", true));
        assert!(!p.matches(b"x/home/me/.cache", true));
        assert!(p.matches(b"top", false));
        assert!(!p.matches(b"a/top", false));
    }

    #[test]
    fn star_stays_in_one_component_and_double_star_crosses() {
        let p = pats(&["/src/*.c"]);
        assert!(p.matches(b"src/a.c", false));
        assert!(!p.matches(b"src/sub/a.c", false));
        let p = pats(&["/src/**/*.c"]);
        assert!(p.matches(b"src/a.c", false));
        assert!(p.matches(b"src/sub/deeper/a.c", false));
        let p = pats(&["a?c", "[xy]z", "{one,two}.txt"]);
        assert!(p.matches(b"d/abc", false));
        assert!(!p.matches(b"a/c", false));
        assert!(p.matches(b"yz", false));
        assert!(p.matches(b"two.txt", false));
        assert!(!p.matches(b"three.txt", false));
    }

    #[test]
    fn trailing_slash_matches_directories_only() {
        let p = pats(&["cache/"]);
        assert!(p.matches(b"a/cache", true));
        assert!(!p.matches(b"a/cache", false));
    }

    #[test]
    fn the_last_matching_pattern_decides_and_bang_re_includes() {
        let p = pats(&["*.log", "!keep.log"]);
        assert!(p.matches(b"x/a.log", false));
        assert!(!p.matches(b"x/keep.log", false));
        assert_eq!(p.decide(b"x/keep.log", false), Some((1, false)));
        assert_eq!(p.decide(b"x/other", false), None);
        let p = pats(&["!keep.log", "*.log"]);
        assert!(p.matches(b"keep.log", false));
    }

    #[test]
    fn names_are_bytes_and_backslash_escapes() {
        let p = pats(&["caf*"]);
        assert!(p.matches(b"dir/caf\xff", false));
        let p = pats(&["\\*star", "\\!bang"]);
        assert!(p.matches(b"*star", false));
        assert!(!p.matches(b"xstar", false));
        assert!(p.matches(b"!bang", false));
    }

    #[test]
    fn exclude_files_skip_comments_blank_lines_and_trailing_spaces() {
        let mut b = PatternsBuilder::new();
        b.add_lines(b"# comment\n\n*.tmp  \r\nspace\\ \n  lead\n", "ex.txt")
            .unwrap();
        let p = b.build().unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p.text(0), "*.tmp");
        assert!(p.matches(b"a/b.tmp", false));
        assert!(p.matches(b"space ", false));
        assert!(!p.matches(b"space", false));
        assert!(p.matches(b"  lead", false));
    }

    #[test]
    fn a_pattern_with_a_dot_or_dot_dot_component_is_refused_as_matching_nothing() {
        for (pat, c) in [
            ("../x", ".."),
            ("a/../b", ".."),
            ("!/x/..", ".."),
            ("a/./b", "."),
        ] {
            let e = PatternsBuilder::new()
                .add(pat, "--exclude")
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                format!(
                    "--exclude: bad pattern '{pat}': it matches no name (stored names have no '{c}' component: patterns are compared with the stored name, the path as given made relative)"
                )
            );
        }
        // Dots inside a component, and a leading `./` (anchoring), still work.
        let mut b = PatternsBuilder::new();
        b.add("..hidden", "--exclude").unwrap();
        b.add("./top/x.", "--exclude").unwrap();
        b.add("*.o", "--exclude").unwrap();
        b.add(".", "--exclude").unwrap();
        let p = b.build().unwrap();
        assert!(p.matches(b".", true));
        assert!(p.matches(b"a/..hidden", false));
        assert!(p.matches(b"top/x.", false));
        assert!(p.matches(b"a.o", false));
    }

    #[test]
    fn bad_patterns_name_their_origin() {
        let mut b = PatternsBuilder::new();
        let e = b.add("a[", "--exclude").unwrap_err().to_string();
        assert!(e.starts_with("--exclude: bad pattern 'a[': "), "{e}");
        let e = b.add("/", "--exclude").unwrap_err().to_string();
        assert_eq!(e, "--exclude: bad pattern '/': it matches no name");
        let e = b
            .add_lines(b"ok\n\xff\n", "ex.txt")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "ex.txt:2: a pattern must be UTF-8 (names are matched as bytes)"
        );
    }
}
