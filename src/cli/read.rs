//! `krypta l`, `krypta t` and `krypta info`: reading an archive and printing what it holds,
//! as text or JSON (`super::json`).

use super::args::*;
use super::clock::Clock;
use super::entries::{stored_shares, view};
use super::keys::open_options;
use super::show::{ListStyle, print_info, print_list};
use crate::Term;
use krypta::archive::visit::Selection;
use krypta::{Error, Result};

pub(crate) fn list(a: ListArgs, verbose: bool, term: &mut Term) -> Result<u8> {
    let mut open = open_options(&a.keys, &a.archive)?;
    // A delta archive's index lists it without the base; its blocks (read for --b3, or
    // front to back when the index is damaged) decode only against it.
    open.base = super::keys::open_base_to_read(&a.delta, &a.keys, &a.archive)?;
    let paths = super::entries::member_args(&a.paths, a.wildcards, a.no_unquote);
    let mut select = if a.wildcards {
        Selection::wildcards(&paths)?
    } else {
        Selection::new(paths)
    };
    // --b3 needs every file's digest: format 2 stores none for small files, so those are
    // read and hashed (krypta::list_with_digests).
    // Without a readable index (a truncated archive), the entries a salvage verified are
    // listed, and the run ends with its error.
    let (entries, frames, salvaged) = if a.b3 {
        let (mut e, f) = krypta::list_with_digests(&a.archive, open, term)?;
        link_digests(&mut e);
        (e, f, None)
    } else {
        krypta::list_or_salvage(&a.archive, open, term)?
    };
    let all: Vec<_> = entries.iter().map(view).collect();
    // Shares are computed over every entry (a frame is shared by all its entries), then the
    // filter picks the lines.
    let stored = stored_shares(&all, &frames);
    let (views, stored): (Vec<_>, Vec<u64>) = all
        .into_iter()
        .zip(stored)
        .filter(|(v, _)| select.matches(&v.meta.path))
        .unzip();
    let missing = select.unmatched();
    if a.json {
        super::json::print_entries(&views, &stored)?;
    } else {
        let style = if a.b3 {
            ListStyle::B3
        } else if a.long && verbose {
            ListStyle::LongVerbose
        } else if a.long {
            ListStyle::Long
        } else if verbose {
            ListStyle::Verbose
        } else {
            ListStyle::Short
        };
        print_list(
            &views,
            &stored,
            &frames,
            (style, a.numeric_owner),
            &Clock::new(a.utc),
        )?;
    }
    if let Some(e) = salvaged {
        return Err(e);
    }
    if !missing.is_empty() {
        let e = Error::Usage(format!(
            "not found in {}: {}",
            krypta::fs::escape_path(a.archive.as_os_str().as_encoded_bytes()),
            missing.join(", ")
        ));
        return Err(super::entries::with_path_hints(
            e,
            &a.paths,
            a.wildcards,
            a.no_unquote,
        ));
    }
    Ok(0)
}

/// Gives each hard link its target's digest: extracted, it is a name of the same content,
/// which `b3sum --check` reads like any file (a hard link named alone was listed as nothing).
fn link_digests(entries: &mut [krypta::format::index::IndexEntry]) {
    use krypta::format::EntryKind;
    let files: std::collections::HashMap<Vec<u8>, [u8; 32]> = entries
        .iter()
        .filter(|e| e.meta.kind == EntryKind::File)
        .filter_map(|e| Some((e.meta.path.clone(), e.digest?)))
        .collect();
    for e in entries.iter_mut() {
        if e.meta.kind == EntryKind::Hardlink {
            e.digest = files.get(&e.meta.link).copied();
        }
    }
}

pub(crate) fn test(a: TestArgs, term: &mut Term) -> Result<u8> {
    let mut open = open_options(&a.keys, &a.archive)?;
    open.base = super::keys::open_base_to_read(&a.delta, &a.keys, &a.archive)?;
    let s = krypta::test_salvaging(&a.archive, open, !a.fail_fast, term)?;
    if a.json {
        super::json::print_object(&super::json::test_ok(&a.archive, &s))?;
    } else if !term.is_quiet() {
        krypta::to_stderr!(
            "krypta: {}: OK ({}, {}, {}, {} verified)",
            krypta::fs::shown(&a.archive),
            krypta::counted(s.entries, "entry", "entries"),
            krypta::counted(s.files, "file", "files"),
            krypta::counted(s.bytes, "byte", "bytes"),
            krypta::counted(s.frames, "block", "blocks")
        );
        if let Some(fp) = &s.signer {
            krypta::to_stderr!(
                "krypta: {}: signed by {} (ML-DSA-65 + Ed25519 signature verified)",
                krypta::fs::shown(&a.archive),
                krypta::crypto::sign::fingerprint_hex(fp)
            );
        }
    }
    Ok(0)
}

pub(crate) fn info(a: InfoArgs, term: &mut Term) -> Result<u8> {
    let f = krypta::archive::reader::facts(&a.archive)?;
    for d in &f.details {
        krypta::Reporter::detail(term, d);
    }
    let name = krypta::fs::escape_path(a.archive.as_os_str().as_encoded_bytes());
    if let Some(fix) = f.header_fix {
        krypta::Reporter::warn(term, &krypta::header_fix_warning(&name, fix));
    }
    if let Some(w) = f.trailing.and_then(|t| krypta::trailing_warning(&name, t)) {
        krypta::Reporter::warn(term, &w);
    }
    if let Some(r) = &f.recovery
        && let Some(w) = recovery_length_warning(&name, &r.located)
    {
        krypta::Reporter::warn(term, &w);
    }
    if f.footer_unknown {
        krypta::Reporter::warn(
            term,
            &format!(
                "{name}: its last 64 bytes are not its footer, or its index is damaged (the index is not where they say), and no footer of it lies within {} bytes of the end: its block counts are not shown (krypta t with its key tells which)",
                krypta::archive::reader::TRAILING_SEARCH
            ),
        );
    }
    if a.json {
        super::json::print_object(&super::json::info_object(&a.archive, &f))?;
    } else {
        print_info(&a.archive, &f, &Clock::new(a.utc))?;
    }
    Ok(0)
}

/// `info` of an archive with recovery data whose file is longer or shorter than the archive
/// and its section (bytes appended, `cat a.kry a.kry`, a tape's padding; a cut): `t` fails
/// it (exit 7) and `info` said nothing, its size line alone differing from the sum.
fn recovery_length_warning(name: &str, l: &krypta::recovery::Located) -> Option<String> {
    let (want, have) = (l.layout.file_len, l.source_len);
    match have.cmp(&want) {
        std::cmp::Ordering::Equal => None,
        std::cmp::Ordering::Greater => Some(format!(
            "{name}: the file holds {} more than the archive and its recovery data ({want} bytes: a bad copy, or something appended?): krypta t tells what is wrong, krypta repair writes the archive as written",
            krypta::counted(have - want, "byte", "bytes")
        )),
        std::cmp::Ordering::Less => Some(format!(
            "{name}: the file is {} shorter than the archive and its recovery data ({want} bytes: cut short?): krypta repair --check tells what its recovery data can still do",
            krypta::counted(want - have, "byte", "bytes")
        )),
    }
}
