//! Warnings of an extraction about metadata that could not be set (an attribute the kernel
//! refuses, an owner an ordinary user may not give away), collected from every
//! [`super::extract::FileSink`] (which may run on other threads) and passed to the caller's
//! reporter when the extraction ends.
//!
//! Each warning names the file and the attribute. So that restoring 100,000 files with
//! `trusted.*` attributes as an ordinary user does not print 100,000 lines, the first
//! [`SHOWN_PER_KIND`] warnings of one kind (the same attribute and the same error) are shown
//! and the rest counted in one closing line per kind.

use std::collections::HashMap;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Warnings shown of one kind before the rest are only counted.
pub const SHOWN_PER_KIND: u64 = 10;

#[derive(Debug, Default)]
struct Inner {
    lines: Vec<String>,
    /// (what, error text) → how many were met; the order kinds were first met in.
    counts: HashMap<(String, String), u64>,
    kinds: Vec<(String, String)>,
}

/// A shared, cheap-to-clone collector (see the module documentation).
#[derive(Debug, Clone, Default)]
pub(crate) struct Notes(Arc<Mutex<Inner>>);

impl Notes {
    /// Notes that `what` (e.g. "extended attribute trusted.x", "owner 1000:1000") could not
    /// be set on `path`, because of `err`.
    pub(crate) fn cannot_set(&self, path: &Path, what: &str, err: &io::Error) {
        let Ok(mut inner) = self.0.lock() else {
            return;
        };
        let why = err.to_string();
        let k = (what.to_string(), why.clone());
        let n = inner.counts.entry(k.clone()).or_insert(0);
        *n += 1;
        let n = *n;
        if n == 1 {
            inner.kinds.push(k);
        }
        if n <= SHOWN_PER_KIND {
            let shown = super::escape_path(path.as_os_str().as_bytes());
            inner
                .lines
                .push(format!("{shown}: cannot set {what}: {why}"));
        }
    }

    /// The warnings so far, with one closing line per kind that had more than
    /// [`SHOWN_PER_KIND`]; the collector is emptied.
    pub(crate) fn take(&self) -> Vec<String> {
        let Ok(mut inner) = self.0.lock() else {
            return Vec::new();
        };
        let inner = std::mem::take(&mut *inner);
        let mut out = inner.lines;
        for k in &inner.kinds {
            let n = inner.counts[k];
            if n > SHOWN_PER_KIND {
                out.push(format!(
                    "... and {} more files: cannot set {}: {}",
                    n - SHOWN_PER_KIND,
                    k.0,
                    k.1
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_kinds_are_counted_after_the_first_ten() {
        let notes = Notes::default();
        let perm = io::Error::from_raw_os_error(1);
        for i in 0..25 {
            notes.cannot_set(
                Path::new(&format!("out/f{i}")),
                "extended attribute trusted.x",
                &perm,
            );
        }
        notes.cannot_set(Path::new("out/l\n"), "owner 7:7", &perm);
        let got = notes.take();
        assert_eq!(got.len(), 12);
        assert_eq!(
            got[0],
            "out/f0: cannot set extended attribute trusted.x: Operation not permitted (os error 1)"
        );
        assert_eq!(
            got[10],
            "out/l\\n: cannot set owner 7:7: Operation not permitted (os error 1)"
        );
        assert_eq!(
            got[11],
            "... and 15 more files: cannot set extended attribute trusted.x: Operation not permitted (os error 1)"
        );
        assert!(notes.take().is_empty());
    }
}
