//! The version pairs of table 14 (delta archives): consecutive releases of real artifacts,
//! listed in `fixtures/pairs.tsv` (compiled in), fetched by `scripts/fetch_pairs.sh` into
//! `DIR/pairs/` and checked here against their pinned SHA-256 before anything is measured.
//!
//! Design choices:
//! - The manifest is one tab-separated line per side (pair, side, client, package, version,
//!   container SHA-256, unpack step, file, file SHA-256, kind), read by both the fetch script
//!   and this module, so the two cannot disagree on names or digests. It is compiled in: the
//!   bench knows what it should measure even where nothing was fetched, and names it.
//! - Nothing here touches the network. Fetching needs the package clients (pip, apt, npm,
//!   cargo) and is `make fixtures`' job; CI and tests never download. A pair with a side
//!   missing or not matching its digest is skipped with the reason, never measured on
//!   other bytes.
//! - The files are plain (containers unpacked: `.crate` and `.tgz` gunzipped to tar, `.deb`
//!   to its data tar, the wheel's executable taken out), since compression hides the
//!   similarity between versions that a delta finds.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The manifest as committed (`fixtures/pairs.tsv`).
pub const MANIFEST: &str = include_str!("../../fixtures/pairs.tsv");

/// Which version of a pair a manifest line describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The earlier version: the base.
    Old,
    /// The later version: stored as a delta against the old one.
    New,
}

/// One manifest line: one side of a pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Pair name (also the file name inside the bench archives).
    pub pair: String,
    /// Old or new.
    pub side: Side,
    /// Package client that fetches it (`pip`, `apt`, `npm`, `cargo`).
    pub client: String,
    /// Package name.
    pub package: String,
    /// Package version.
    pub version: String,
    /// SHA-256 of the package file as the client fetches it, hex.
    pub container_sha256: String,
    /// How the plain file is taken out of the container (`gunzip`, `deb-data`, `wheel:MEMBER`).
    pub unpack: String,
    /// File name under `pairs/`.
    pub file: String,
    /// SHA-256 of that file, hex.
    pub file_sha256: String,
    /// What kind of artifact it is, for the table.
    pub kind: String,
}

/// Parses the manifest: `#` lines and blank lines are skipped; every other line has the ten
/// tab-separated fields, a side of `old` or `new` and 64-hex-digit digests, and each pair has
/// exactly one old and one new side. Errors: Usage naming the line and the problem.
pub fn parse_manifest(text: &str) -> Result<Vec<Entry>> {
    let bad = |n: usize, what: String| Error::Usage(format!("fixtures/pairs.tsv line {n}: {what}"));
    let mut out: Vec<Entry> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 10 {
            return Err(bad(
                n,
                format!("{} tab-separated fields, expected 10", f.len()),
            ));
        }
        let side = match f[1] {
            "old" => Side::Old,
            "new" => Side::New,
            other => return Err(bad(n, format!("side {other:?}, expected old or new"))),
        };
        for (name, hex) in [("container_sha256", f[5]), ("file_sha256", f[8])] {
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(n, format!("{name} {hex:?} is not 64 hex digits")));
            }
        }
        if f[7].is_empty() || f[7].contains('/') {
            return Err(bad(n, format!("file {:?} must be a plain file name", f[7])));
        }
        if out.iter().any(|e| e.pair == f[0] && e.side == side) {
            return Err(bad(n, format!("pair {} has a second {} side", f[0], f[1])));
        }
        out.push(Entry {
            pair: f[0].to_string(),
            side,
            client: f[2].to_string(),
            package: f[3].to_string(),
            version: f[4].to_string(),
            container_sha256: f[5].to_ascii_lowercase(),
            unpack: f[6].to_string(),
            file: f[7].to_string(),
            file_sha256: f[8].to_ascii_lowercase(),
            kind: f[9].to_string(),
        });
    }
    if let Some(lone) = out
        .iter()
        .find(|e| out.iter().filter(|o| o.pair == e.pair).count() != 2)
    {
        return Err(Error::Usage(format!(
            "fixtures/pairs.tsv: pair {} needs one old and one new line",
            lone.pair
        )));
    }
    Ok(out)
}

/// A pair ready to measure: both files present with their pinned digests.
#[derive(Debug, Clone)]
pub struct Pair {
    /// Pair name.
    pub name: String,
    /// What kind of artifact.
    pub kind: String,
    /// The old version's file.
    pub old: PathBuf,
    /// The new version's file.
    pub new: PathBuf,
    /// Old file size, bytes.
    pub old_len: u64,
    /// New file size, bytes.
    pub new_len: u64,
    /// One line: package, versions, client.
    pub origin: String,
}

/// The pairs of the manifest found in `dir` (`DIR/pairs/FILE`), and one line per pair that
/// is skipped (a side missing, unreadable or with another digest), in manifest order.
pub fn load_pairs(entries: &[Entry], dir: &Path) -> (Vec<Pair>, Vec<String>) {
    let mut pairs = Vec::new();
    let mut skipped = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for e in entries {
        if !names.contains(&e.pair.as_str()) {
            names.push(&e.pair);
        }
    }
    for name in names {
        let side = |s: Side| entries.iter().find(|e| e.pair == name && e.side == s);
        let (Some(old), Some(new)) = (side(Side::Old), side(Side::New)) else {
            continue;
        };
        match (check(old, dir), check(new, dir)) {
            (Ok(old_len), Ok(new_len)) => pairs.push(Pair {
                name: name.to_string(),
                kind: old.kind.clone(),
                old: dir.join("pairs").join(&old.file),
                new: dir.join("pairs").join(&new.file),
                old_len,
                new_len,
                origin: format!(
                    "{} {} → {} ({})",
                    old.package, old.version, new.version, old.client
                ),
            }),
            (a, b) => {
                let why: Vec<String> = [a.err(), b.err()].into_iter().flatten().collect();
                skipped.push(format!("pair `{name}` skipped: {}", why.join("; ")));
            }
        }
    }
    (pairs, skipped)
}

/// Size of `DIR/pairs/FILE` when its SHA-256 is the pinned one; else why not.
fn check(e: &Entry, dir: &Path) -> std::result::Result<u64, String> {
    let path = dir.join("pairs").join(&e.file);
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "{} missing (run `make fixtures`, which fetches {} {} with {})",
                path.display(),
                e.package,
                e.version,
                e.client
            ));
        }
        Err(err) => return Err(format!("{}: cannot read: {err}", path.display())),
    };
    let got = hex(&Sha256::digest(&data));
    if got != e.file_sha256 {
        return Err(format!(
            "{} has SHA-256 {got}, the manifest pins {}",
            path.display(),
            e.file_sha256
        ));
    }
    Ok(data.len() as u64)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE_OLD: &str = "p\told\tnpm\tpkg\t1.0.0\t\
        ef938a45323df5775664ea5d55e8bc0ab2027a40db1ff857bb957fe7bbaa4434\tgunzip\tp-1.tar\t\
        2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\tsome kind";

    fn line_new(file_sha: &str) -> String {
        format!(
            "p\tnew\tnpm\tpkg\t1.0.1\t\
             72e75dbeb92c2e6eb9a34cb59d74fab5c2ee6f32a0324a89405f6165d5a08374\tgunzip\tp-2.tar\t\
             {file_sha}\tsome kind"
        )
    }

    #[test]
    fn committed_manifest_lists_four_pairs_of_two_sides() {
        let e = parse_manifest(MANIFEST).unwrap();
        assert_eq!(e.len(), 8);
        let names: Vec<&str> = e.iter().step_by(2).map(|e| e.pair.as_str()).collect();
        assert_eq!(names, ["ruff", "libc6", "typescript", "aws-lc-sys"]);
        assert_eq!(e[0].side, Side::Old);
        assert_eq!(e[1].side, Side::New);
        assert_eq!(e[0].unpack, "wheel:ruff-0.17.4.data/scripts/ruff");
        assert_eq!(e[7].file, "aws-lc-sys-0.47.0.tar");
        assert_eq!(
            e[7].file_sha256,
            "c9367614ff9757282b015b8ddbde4fffbfc0ffd718416c10ed848b76e57cd3d7"
        );
    }

    #[test]
    fn manifest_errors_name_the_line_and_the_problem() {
        let cases = [
            (
                "a\tb".to_string(),
                "fixtures/pairs.tsv line 1: 2 tab-separated fields, expected 10",
            ),
            (
                LINE_OLD.replace("\told\t", "\tmiddle\t"),
                "fixtures/pairs.tsv line 1: side \"middle\", expected old or new",
            ),
            (
                format!("# comment\n\n{}", line_new("abc")),
                "fixtures/pairs.tsv line 3: file_sha256 \"abc\" is not 64 hex digits",
            ),
            (
                LINE_OLD.replace("p-1.tar", "../p-1.tar"),
                "fixtures/pairs.tsv line 1: file \"../p-1.tar\" must be a plain file name",
            ),
            (
                format!("{LINE_OLD}\n{LINE_OLD}"),
                "fixtures/pairs.tsv line 2: pair p has a second old side",
            ),
            (
                LINE_OLD.to_string(),
                "fixtures/pairs.tsv: pair p needs one old and one new line",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_manifest(&text).unwrap_err().to_string(),
                want,
                "{text}"
            );
        }
    }

    #[test]
    fn pairs_load_only_with_both_sides_at_their_pinned_digest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pairs")).unwrap();
        // SHA-256("hello") is the old side's pinned digest.
        std::fs::write(dir.path().join("pairs/p-1.tar"), b"hello").unwrap();
        let sha_world = "486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7";
        let text = format!("{LINE_OLD}\n{}", line_new(sha_world));
        let entries = parse_manifest(&text).unwrap();

        let (pairs, skipped) = load_pairs(&entries, dir.path());
        assert!(pairs.is_empty());
        let missing = dir.path().join("pairs/p-2.tar");
        assert_eq!(
            skipped,
            [format!(
                "pair `p` skipped: {} missing (run `make fixtures`, which fetches pkg 1.0.1 with npm)",
                missing.display()
            )]
        );

        std::fs::write(&missing, b"World").unwrap();
        let (pairs, skipped) = load_pairs(&entries, dir.path());
        assert!(pairs.is_empty());
        assert_eq!(
            skipped,
            [format!(
                "pair `p` skipped: {} has SHA-256 \
                 78ae647dc5544d227130a0682a51e30bc7777fbb6d8a8f17007463a3ecd1d524, the manifest \
                 pins {sha_world}",
                missing.display()
            )]
        );

        std::fs::write(&missing, b"world").unwrap();
        let (pairs, skipped) = load_pairs(&entries, dir.path());
        assert!(skipped.is_empty());
        assert_eq!(pairs.len(), 1);
        assert_eq!(pairs[0].name, "p");
        assert_eq!((pairs[0].old_len, pairs[0].new_len), (5, 5));
        assert_eq!(pairs[0].origin, "pkg 1.0.0 → 1.0.1 (npm)");
        assert_eq!(pairs[0].new, missing);
    }
}
