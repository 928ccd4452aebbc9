//! The visitors that consume a scan: extraction to a directory, content to stdout, and the
//! verify-only pass of `test`.

use std::io::Write;

use super::reader::Visitor;
use crate::error::{Error, Result};
use crate::format::{EntryKind, EntryMeta};
use crate::fs::committer::Committer;
use crate::fs::extract::{Extractor, FileSink};

/// Which entries a command asked for: paths as given (raw bytes), each matching itself and
/// everything below it; or, with `--wildcards`, glob patterns (`crate::fs::pattern`) matched
/// against each name and its parents. No paths = everything.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    paths: Vec<Vec<u8>>,
    hits: Vec<bool>,
    /// `--wildcards`: the patterns, and which of them are the root `.` (hit by every entry).
    globs: Option<(crate::fs::pattern::Patterns, Vec<usize>)>,
}

impl Selection {
    /// Builds a selection. Each PATH is compared as names are stored, made relative and
    /// normalised: empty and `.` components are dropped (`/etc//hosts/.` is `etc/hosts`), and a
    /// PATH left with none (`.`, `/`, `./`) is the archive's root, which selects everything.
    /// `..` is kept (no stored name has it, so such a PATH is "not found"), and so is an empty
    /// PATH (it names nothing).
    pub fn new(paths: Vec<Vec<u8>>) -> Self {
        let paths: Vec<Vec<u8>> = paths
            .into_iter()
            .map(|p| {
                let kept: Vec<&[u8]> = p
                    .split(|&b| b == b'/')
                    .filter(|c| !c.is_empty() && *c != b".")
                    .collect();
                if p.is_empty() {
                    p
                } else if kept.is_empty() {
                    crate::format::entry::ROOT_PATH.to_vec()
                } else {
                    kept.join(&b'/')
                }
            })
            .collect();
        let hits = vec![false; paths.len()];
        Selection {
            paths,
            hits,
            globs: None,
        }
    }

    /// A selection of glob patterns (`--wildcards`): a name is selected when a pattern
    /// matches it or one of its parent directories. The grammar and anchoring are those of
    /// `--exclude` (`crate::fs::pattern`), except that a leading `!` is an ordinary character
    /// and a trailing `/` is ignored. The pattern `.` (or `./`) is the archive's root, the
    /// parent of every entry, as without `--wildcards`; patterns that merely match `.`
    /// (`.*`, `?`) match it alone (`.*` is for hidden names, not everything).
    pub fn wildcards(patterns: &[Vec<u8>]) -> Result<Self> {
        let mut b = crate::fs::pattern::PatternsBuilder::new();
        for p in patterns {
            let text = std::str::from_utf8(p).map_err(|_| {
                Error::Usage(format!(
                    "--wildcards: pattern '{}' is not UTF-8 (names are matched as bytes)",
                    crate::fs::escape_path(p)
                ))
            })?;
            let mut t = text.trim_end_matches('/');
            if t.is_empty() {
                t = text;
            }
            let t = if t.starts_with('!') {
                format!("\\{t}")
            } else {
                t.to_string()
            };
            b.add(&t, "--wildcards")?;
        }
        // The patterns that are the root `.`: every entry is below it.
        let root = patterns
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                let t = p.strip_suffix(b"/").unwrap_or(p);
                t == crate::format::entry::ROOT_PATH
            })
            .map(|(i, _)| i)
            .collect();
        Ok(Selection {
            paths: patterns.to_vec(),
            hits: vec![false; patterns.len()],
            globs: Some((b.build()?, root)),
        })
    }

    /// The patterns that match `path` or one of its parents (the root `.` is the parent of
    /// every entry).
    fn glob_hits(
        (globs, root): &(crate::fs::pattern::Patterns, Vec<usize>),
        path: &[u8],
    ) -> Vec<usize> {
        let mut hits = root.clone();
        for (i, &b) in path.iter().enumerate() {
            if b == b'/' {
                hits.extend(globs.hits(&path[..i]));
            }
        }
        hits.extend(globs.hits(path));
        hits
    }

    /// True when no paths were given.
    pub fn is_all(&self) -> bool {
        self.paths.is_empty()
    }

    /// Whether `path` is selected (and notes which selector hit).
    pub fn matches(&mut self, path: &[u8]) -> bool {
        if self.paths.is_empty() {
            return true;
        }
        if let Some(g) = &self.globs {
            let hits = Self::glob_hits(g, path);
            for &i in &hits {
                self.hits[i] = true;
            }
            return !hits.is_empty();
        }
        let mut any = false;
        for (i, p) in self.paths.iter().enumerate() {
            if Self::selects(p, path) {
                self.hits[i] = true;
                any = true;
            }
        }
        any
    }

    /// Whether a selector names `path` itself (a literal PATH equal to it, or a pattern that
    /// matches it), not only one of its parents. Notes nothing.
    pub fn names(&self, path: &[u8]) -> bool {
        match &self.globs {
            Some((globs, _)) => !globs.hits(path).is_empty(),
            None => self.paths.iter().any(|p| p.as_slice() == path),
        }
    }

    /// Whether `path` is selected, without noting a hit.
    pub fn covers(&self, path: &[u8]) -> bool {
        if let Some(g) = &self.globs {
            return self.paths.is_empty() || !Self::glob_hits(g, path).is_empty();
        }
        self.paths.is_empty() || self.paths.iter().any(|p| Self::selects(p, path))
    }

    /// Whether the literal selector `p` names `path` or one of its parents. `.` is the
    /// archive's root (`krypta c A.kry .` stores it as the root entry), the parent of every
    /// entry: it selects them all, as `tar x .` does.
    fn selects(p: &[u8], path: &[u8]) -> bool {
        p == crate::format::entry::ROOT_PATH
            || path == p
            || (path.starts_with(p) && path.get(p.len()) == Some(&b'/'))
    }

    /// The selectors that matched nothing, escaped as listings show names (a newline or a
    /// terminal escape in one cannot forge a line; invalid UTF-8 is `\xHH`, not U+FFFD). A
    /// selector that is krypta key text (`x a.kry KRYPTA-KEY-1-…`: a key typed where a PATH
    /// goes) is shown as `<argument> (key text, not shown)`: it may be the secret itself.
    pub fn unmatched(&self) -> Vec<String> {
        self.paths
            .iter()
            .zip(&self.hits)
            .filter(|(_, h)| !**h)
            .map(|(p, _)| {
                let key = std::str::from_utf8(p)
                    .ok()
                    .and_then(crate::crypto::keytext::kind_of);
                match key {
                    Some(_) => "<argument> (key text, not shown)".to_string(),
                    None => crate::fs::escape_path(p),
                }
            })
            .collect()
    }
}

/// Extracts into a directory through the safe [`Extractor`].
pub struct ExtractVisitor<'a> {
    /// The extractor (owns the output root).
    pub ex: Extractor,
    /// The entries asked for.
    pub select: &'a mut Selection,
    sink: Option<FileSink>,
    /// Gives finished files their names on a second thread (`crate::fs::committer`).
    committer: Committer,
    /// Content bytes written so far (for progress).
    pub bytes: u64,
    /// Warnings for the caller to report (hard links whose target was not selected or was
    /// removed by `--strip-components`).
    pub warnings: Vec<String>,
    progress: &'a mut dyn FnMut(u64),
}

impl<'a> ExtractVisitor<'a> {
    /// Wraps an extractor.
    pub fn new(
        ex: Extractor,
        select: &'a mut Selection,
        progress: &'a mut dyn FnMut(u64),
    ) -> Result<Self> {
        Ok(ExtractVisitor {
            ex,
            select,
            sink: None,
            committer: Committer::new()?,
            bytes: 0,
            warnings: Vec::new(),
            progress,
        })
    }

    /// Waits until every finished file has its name; the first failure among them, if any.
    /// Call before using the extractor's results (directories, conflicts).
    pub fn finish_files(&mut self) -> Result<()> {
        self.committer.finish()
    }
}

impl Visitor for ExtractVisitor<'_> {
    fn wants(&mut self, meta: &EntryMeta) -> bool {
        self.select.matches(&meta.path)
    }
    fn entry(&mut self, meta: &EntryMeta) -> Result<()> {
        self.committer.check()?;
        match meta.kind {
            EntryKind::Dir => {
                let made = self.ex.make_dir(meta);
                self.ex.skip_denied(meta, made)
            }
            EntryKind::Symlink => {
                let made = self.ex.make_symlink(meta);
                self.ex.skip_denied(meta, made)
            }
            EntryKind::Hardlink if !self.select.covers(&meta.link) => {
                // Its target was not asked for, so there is nothing to link to (GNU tar fails
                // here); skip it and say so instead of stopping the extraction.
                self.warnings.push(format!(
                    "{}: skipped: hard link to {}, which was not selected",
                    crate::fs::escape_path(&meta.path),
                    crate::fs::escape_path(&meta.link)
                ));
                Ok(())
            }
            EntryKind::Hardlink
                if self.ex.strips_away(&meta.link) && !self.ex.strips_away(&meta.path) =>
            {
                // --strip-components removed its target: nothing to link to (GNU tar: "Cannot
                // hard link"); skip it and say so, as for a target not selected.
                self.warnings.push(format!(
                    "{}: skipped: hard link to {}, which --strip-components removed",
                    crate::fs::escape_path(&meta.path),
                    crate::fs::escape_path(&meta.link)
                ));
                Ok(())
            }
            EntryKind::Hardlink => {
                // Its target must have its name first.
                self.committer.finish()?;
                let made = self.ex.make_hardlink(meta);
                self.ex.skip_denied(meta, made)
            }
            EntryKind::File => {
                let begun = self.ex.begin_file(meta).map(|s| self.sink = s);
                self.ex.skip_denied(meta, begun)
            }
        }
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        self.bytes += bytes.len() as u64;
        if let Some(s) = self.sink.as_mut() {
            self.committer.before_write(offset, bytes.len())?;
            if let Err(e) = s.write_at(offset, bytes) {
                // Larger than the file system holds in one file (FAT's 4 GiB): named and
                // skipped, the rest restored; any other failure stops the run.
                return match self.sink.take() {
                    Some(s) => self.ex.skip_too_large(s, e),
                    None => Err(e),
                };
            }
        }
        (self.progress)(self.bytes);
        Ok(())
    }
    fn end(&mut self, _meta: &EntryMeta, size: u64) -> Result<()> {
        if let Some(mut s) = self.sink.take() {
            if let Err(e) = s.extend_to(size) {
                return self.ex.skip_too_large(s, e);
            }
            self.committer.commit(s, size)?;
        }
        (self.progress)(self.bytes);
        Ok(())
    }
    fn abort(&mut self) {
        if let Some(s) = self.sink.take() {
            s.abort();
        }
    }
}

/// Writes the content of the selected files to a writer (stdout), holes as zeros, and
/// nothing else. A selected hard link whose target was not selected is not silently nothing:
/// it is named in [`StdoutVisitor::warnings`] (its content is its target's, which was not
/// written), as `x` without `--stdout` names it; one whose target was selected wrote its
/// content there.
pub struct StdoutVisitor<'a, W: Write> {
    /// Destination.
    pub out: W,
    /// The entries asked for.
    pub select: &'a mut Selection,
    pos: u64,
    /// Hard links selected whose content was not written (their target was not selected),
    /// and symbolic links named, which have no content.
    pub warnings: Vec<String>,
    /// Symbolic links already named in `warnings` (`wants` is asked several times per entry).
    links_said: std::collections::HashSet<Vec<u8>>,
}

impl<'a, W: Write> StdoutVisitor<'a, W> {
    /// Wraps a writer.
    pub fn new(out: W, select: &'a mut Selection) -> Self {
        StdoutVisitor {
            out,
            select,
            pos: 0,
            warnings: Vec::new(),
            links_said: Default::default(),
        }
    }

    fn zeros(&mut self, mut n: u64) -> Result<()> {
        static Z: [u8; 64 * 1024] = [0; 64 * 1024];
        while n > 0 {
            let k = n.min(Z.len() as u64) as usize;
            self.out
                .write_all(&Z[..k])
                .map_err(|e| Error::io("<stdout>", "write", e))?;
            n -= k as u64;
        }
        Ok(())
    }
}

impl<W: Write> Visitor for StdoutVisitor<'_, W> {
    fn wants(&mut self, meta: &EntryMeta) -> bool {
        // Every selected entry is found (a PATH naming a symbolic link or a directory without
        // files is in the archive, not "not found"); only files have content to write.
        if !self.select.matches(&meta.path) {
            return false;
        }
        if meta.kind == EntryKind::Symlink
            && self.select.names(&meta.path)
            && self.links_said.insert(meta.path.clone())
        {
            // Named itself, it writes nothing: said, never an empty output taken for its
            // content (asked for several times per entry: said once, without searching the
            // warnings, which a glob naming many links would make quadratic).
            self.warnings.push(format!(
                "{}: not written: a symbolic link (to {}) has no content for --stdout (name \
                 its target)",
                crate::fs::escape_path(&meta.path),
                crate::fs::escape_path(&meta.link)
            ));
        }
        matches!(meta.kind, EntryKind::File | EntryKind::Hardlink)
    }
    fn entry(&mut self, meta: &EntryMeta) -> Result<()> {
        self.pos = 0;
        if meta.kind == EntryKind::Hardlink && !self.select.covers(&meta.link) {
            self.warnings.push(format!(
                "{}: not written: hard link to {}, which was not selected (name it for the \
                 content)",
                crate::fs::escape_path(&meta.path),
                crate::fs::escape_path(&meta.link)
            ));
        }
        Ok(())
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        self.zeros(offset - self.pos)?;
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io("<stdout>", "write", e))?;
        self.pos = offset + bytes.len() as u64;
        Ok(())
    }
    fn end(&mut self, _meta: &EntryMeta, size: u64) -> Result<()> {
        self.zeros(size - self.pos)?;
        self.pos = size;
        Ok(())
    }
    fn abort(&mut self) {}
}

/// Verifies without writing anything (`krypta test`).
pub struct VerifyVisitor<'a> {
    /// Content bytes verified so far.
    pub bytes: u64,
    progress: &'a mut dyn FnMut(u64),
}

impl<'a> VerifyVisitor<'a> {
    /// A verify-only visitor reporting progress.
    pub fn new(progress: &'a mut dyn FnMut(u64)) -> Self {
        VerifyVisitor { bytes: 0, progress }
    }
}

impl Visitor for VerifyVisitor<'_> {
    fn wants(&mut self, _meta: &EntryMeta) -> bool {
        true
    }
    fn entry(&mut self, _meta: &EntryMeta) -> Result<()> {
        Ok(())
    }
    fn data(&mut self, _offset: u64, bytes: &[u8]) -> Result<()> {
        self.bytes += bytes.len() as u64;
        (self.progress)(self.bytes);
        Ok(())
    }
    fn end(&mut self, _meta: &EntryMeta, _size: u64) -> Result<()> {
        (self.progress)(self.bytes);
        Ok(())
    }
    fn abort(&mut self) {}
}

/// Computes the BLAKE3 digest of every file it is given (holes hashed as zeros, so the
/// digest is what `b3sum` prints for the extracted file): for `list --b3` on files whose
/// digest the archive does not store (format 2's small files).
#[derive(Default)]
pub struct DigestVisitor {
    /// Only files are wanted (a selective run over chosen files); otherwise every entry is
    /// recorded, files with their digest.
    pub only_files: bool,
    /// (metadata, size, digest) of each file, in stream order.
    pub found: Vec<(EntryMeta, u64, [u8; 32])>,
    /// Every entry seen (when not `only_files`), in stream order, with its size and digest.
    entries: Vec<crate::format::index::IndexEntry>,
    current: Option<(blake3::Hasher, u64)>,
}

impl DigestVisitor {
    /// The entries seen, with digests for files (block locations unknown: 0).
    pub fn into_entries(self) -> Vec<crate::format::index::IndexEntry> {
        self.entries
    }
}

impl Visitor for DigestVisitor {
    fn wants(&mut self, meta: &EntryMeta) -> bool {
        !self.only_files || meta.kind == EntryKind::File
    }
    fn entry(&mut self, meta: &EntryMeta) -> Result<()> {
        if meta.kind == EntryKind::File {
            self.current = Some((blake3::Hasher::new(), 0));
        } else if !self.only_files {
            self.entries.push(crate::format::index::IndexEntry {
                meta: meta.clone(),
                size: 0,
                digest: None,
                first_seq: 0,
                first_offset: 0,
                last_seq: 0,
            });
        }
        Ok(())
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        if let Some((h, pos)) = self.current.as_mut() {
            super::hash_zeros(h, offset - *pos);
            h.update(bytes);
            *pos = offset + bytes.len() as u64;
        }
        Ok(())
    }
    fn end(&mut self, meta: &EntryMeta, size: u64) -> Result<()> {
        if let Some((mut h, pos)) = self.current.take() {
            super::hash_zeros(&mut h, size - pos);
            let d = *h.finalize().as_bytes();
            if !self.only_files {
                self.entries.push(crate::format::index::IndexEntry {
                    meta: meta.clone(),
                    size,
                    digest: Some(d),
                    first_seq: 0,
                    first_offset: 0,
                    last_seq: 0,
                });
            }
            self.found.push((meta.clone(), size, d));
        }
        Ok(())
    }
    fn abort(&mut self) {
        self.current = None;
    }
}

#[cfg(test)]
mod tests {
    use super::Selection;

    #[test]
    fn a_path_is_compared_as_names_are_stored_whatever_its_spelling() {
        for spelling in [
            "d/a", "/d/a", "./d/a", "d//a", "d/a/", "d/./a", "d/a/.", ".//d/a",
        ] {
            let mut s = Selection::new(vec![spelling.as_bytes().to_vec()]);
            assert!(s.matches(b"d/a"), "{spelling}");
            assert!(s.matches(b"d/a/x"), "{spelling}");
            assert!(!s.matches(b"d/ab"), "{spelling}");
            assert!(s.unmatched().is_empty(), "{spelling}");
        }
        for root in [".", "/", "./", "//", "/./"] {
            let mut s = Selection::new(vec![root.as_bytes().to_vec()]);
            assert!(s.matches(b"anything/at/all"), "{root}");
        }
        for nothing in ["", "d/../d/a", ".."] {
            let mut s = Selection::new(vec![nothing.as_bytes().to_vec()]);
            assert!(!s.matches(b"d/a"), "{nothing:?}");
            assert_eq!(s.unmatched().len(), 1, "{nothing:?}");
        }
    }
}
