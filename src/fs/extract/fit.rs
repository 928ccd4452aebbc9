//! Entry names the output's file system cannot hold: a path component longer than its
//! `NAME_MAX` (255 bytes on Linux file systems; an archive written elsewhere, or crafted, may
//! hold longer ones). Such an entry is named in a warning and skipped, with everything below
//! it and the hard links to it, and the rest of the archive is restored (exit 6, as for any
//! entry that could not be made), as GNU tar reports "File name too long" for that member
//! and goes on; before, the kernel's `ENAMETOOLONG` stopped the whole run (exit 4).
//! A symbolic link whose target is longer than the file system holds (4,095 bytes on Linux;
//! the format allows 65,536), and a hard link to a file that has as many links as the file
//! system allows (`EMLINK`: 65,000 on ext4), are named and skipped the same way, and so is a
//! file larger than the file system holds in one file (`EFBIG`: 4 GiB on FAT, a `ulimit -f`),
//! never left cut short under its name. Also [`Extractor::target`], where every entry's name
//! is first looked at.

use std::collections::{HashMap, HashSet};
use std::os::fd::AsFd;

use super::super::confine::{self, Target};
use super::super::names::escape_path;
use super::super::sink::{FileSink, extracted_key};
use super::Extractor;
use crate::Result;
use crate::format::entry::{EntryKind, EntryMeta};

/// The longest name component, in bytes, of the file system holding `dir` (`statvfs`'s
/// `f_namemax`); 255, Linux's `NAME_MAX`, when the file system does not say.
pub(crate) fn name_max(dir: impl AsFd) -> usize {
    match rustix::fs::fstatvfs(dir) {
        Ok(s) if s.f_namemax > 0 => usize::try_from(s.f_namemax).unwrap_or(usize::MAX),
        _ => 255,
    }
}

/// Whether `e` is the kernel's "File name too long" (`ENAMETOOLONG`).
pub(crate) fn too_long(e: &crate::Error) -> bool {
    is_errno(e, rustix::io::Errno::NAMETOOLONG)
}

/// Whether `e` is an I/O error with this `errno`.
pub(crate) fn is_errno(e: &crate::Error, errno: rustix::io::Errno) -> bool {
    matches!(e, crate::Error::Io { source, .. } if source.raw_os_error() == Some(errno.raw_os_error()))
}

/// The number of leading components of `comps` up to and including the first one longer
/// than `max` bytes, or `None` when every component fits.
pub(crate) fn first_too_long(comps: &[&[u8]], max: usize) -> Option<usize> {
    comps.iter().position(|c| c.len() > max).map(|i| i + 1)
}

/// The entries not made because of a name too long, and their warnings.
#[derive(Debug, Default)]
pub(crate) struct Unmade {
    /// One warning per too-long name (entries below it are counted, not listed again).
    warnings: Vec<String>,
    /// Entries not made (also those below a reported name and hard links to them).
    count: usize,
    /// The stripped paths, up to the too-long component, already reported.
    reported: HashSet<Vec<u8>>,
    /// Keys ([`extracted_key`]) of the files not made, for the hard links to them, and what
    /// a hard link's warning says of that target.
    files: HashMap<[u8; 16], &'static str>,
    /// Entries the kernel refused to make (`EACCES`), not in `count` ([`Extractor::skip_denied`]).
    denied: usize,
    /// The refusals already named (entries below one directory get the same message).
    denied_named: HashSet<String>,
}

impl Unmade {
    /// Entries not made so far.
    pub(crate) fn count(&self) -> usize {
        self.count
    }
}

impl Extractor {
    /// Whether `--strip-components` removes `path` entirely (nothing of it is left).
    pub fn strips_away(&self, path: &[u8]) -> bool {
        path.split(|&b| b == b'/').count() <= self.strip
    }

    /// `meta.path` after `--strip-components`, or `None` (counted) when nothing is left or
    /// when a component is longer than the output's file system allows (named once per
    /// too-long name, counted as not made).
    pub(super) fn target<'m>(&mut self, meta: &'m EntryMeta) -> Result<Option<Target<'m>>> {
        let Some(t) = confine::split_entry(&meta.path, self.strip)? else {
            self.stripped += 1;
            return Ok(None);
        };
        let comps: Vec<&[u8]> = t.parents.iter().copied().chain([t.name]).collect();
        let Some(n) = first_too_long(&comps, self.name_max) else {
            return Ok(Some(t));
        };
        let prefix = comps[..n].join(&b'/');
        let u = &mut self.unmade;
        u.count += 1;
        u.files.insert(
            extracted_key(&t.rel),
            "whose name is too long for the file system",
        );
        if u.reported.insert(prefix.clone()) {
            let on_disk = confine::on_disk(&self.root_path, &prefix).into_os_string();
            // A name on the way to the entry, or a directory's own: what is below goes too.
            let what = if n < comps.len() || meta.kind == EntryKind::Dir {
                "skipped, and everything below it"
            } else {
                "skipped"
            };
            u.warnings.push(format!(
                "{}: {what}: its name is {} bytes, longer than the {} bytes the file system allows",
                escape_path(&on_disk.into_encoded_bytes()),
                comps[n - 1].len(),
                self.name_max
            ));
        }
        Ok(None)
    }

    /// Why the file at stripped path `rel` was not made (for a hard link's warning), when
    /// it was skipped here.
    pub(super) fn unmade_file(&self, rel: &[u8]) -> Option<&'static str> {
        self.unmade.files.get(&extracted_key(rel)).copied()
    }

    /// Records a hard link not made for a reason of the file system's: its target was
    /// skipped for its name, or has as many links as the file system allows (`why`).
    pub(super) fn unmade_link(&mut self, t: &Target<'_>, target: &[u8], why: &str) {
        self.unmade.count += 1;
        let on_disk = confine::on_disk(&self.root_path, &t.rel).into_os_string();
        self.unmade.warnings.push(format!(
            "{}: skipped: hard link to {}, {why}",
            escape_path(&on_disk.into_encoded_bytes()),
            escape_path(target)
        ));
    }

    /// Records a symbolic link not made because the file system refused its target's
    /// length (`len` bytes).
    pub(super) fn unmade_symlink(&mut self, t: &Target<'_>, len: usize) {
        self.unmade.count += 1;
        let on_disk = confine::on_disk(&self.root_path, &t.rel).into_os_string();
        self.unmade.warnings.push(format!(
            "{}: skipped: symbolic link whose target of {len} bytes is longer than the file system allows",
            escape_path(&on_disk.into_encoded_bytes()),
        ));
    }

    /// For a file whose content failed with `e`: when `e` is `EFBIG` (the file is larger than
    /// the file system holds in one file: 4 GiB on FAT, or a `ulimit -f`), removes its
    /// temporary file and records it as not made (hard links to it are skipped too), `Ok`;
    /// any other error is returned as it is (the sink's temporary file removed all the same).
    pub fn skip_too_large(&mut self, sink: FileSink, e: crate::Error) -> Result<()> {
        if !is_errno(&e, rustix::io::Errno::FBIG) {
            return Err(e);
        }
        self.unmade.count += 1;
        self.unmade.files.insert(
            sink.rel_key,
            "which is larger than the file system allows for one file",
        );
        self.unmade.warnings.push(format!(
            "{}: skipped: larger than the file system allows for one file ({})",
            escape_path(sink.path.as_os_str().as_encoded_bytes()),
            std::io::Error::from(rustix::io::Errno::FBIG)
        ));
        sink.abort();
        Ok(())
    }

    /// For an entry whose making gave `made`: `EACCES` (a directory this user may not write
    /// and does not own, so it was not opened up, `super::super::loosen`) is named in a
    /// warning (once per message: what is below a refused directory is refused alike) and
    /// counted, and the rest is restored, as GNU tar goes on; hard links to a refused file are
    /// skipped too. The run then ends with [`crate::Error::Denied`] (exit 4). Any other error
    /// is returned as it is.
    pub fn skip_denied(&mut self, meta: &EntryMeta, made: Result<()>) -> Result<()> {
        let e = match made {
            Err(e) if super::super::loosen::denied(&e) => e,
            made => return made,
        };
        self.unmade.denied += 1;
        if meta.kind == EntryKind::File
            && let Ok(Some(t)) = confine::split_entry(&meta.path, self.strip)
        {
            self.unmade.files.insert(
                extracted_key(&t.rel),
                "which could not be made (permission denied)",
            );
        }
        let msg = e.to_string();
        if self.unmade.denied_named.insert(msg.clone()) {
            self.unmade.warnings.push(msg);
        }
        Ok(())
    }

    /// How many entries the kernel refused to make ([`Extractor::skip_denied`]).
    pub fn denied_count(&self) -> usize {
        self.unmade.denied
    }

    /// The warnings about entries skipped for a too-long name so far (emptied), and how
    /// many entries that cost in all.
    pub fn take_unmade(&mut self) -> (Vec<String>, usize) {
        (std::mem::take(&mut self.unmade.warnings), self.unmade.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_component_over_the_limit_is_found() {
        let long = [b'a'; 256];
        assert_eq!(first_too_long(&[b"d", b"f"], 255), None);
        assert_eq!(first_too_long(&[&[b'a'; 255][..]], 255), None);
        assert_eq!(first_too_long(&[b"d", &long, b"f"], 255), Some(2));
        assert_eq!(first_too_long(&[&long], 255), Some(1));
    }
}
