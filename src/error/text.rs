//! The words of error messages, whose paths go through [`crate::fs::shown`]: the salvage
//! summary line, what an incomplete archive lacks; and the constructors and accessors of
//! [`Error`].

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{AuthCheck, Error, Inconsistency};
use crate::fs::shown;

/// [`Error::Incomplete`]'s list of what was skipped, left out or changed.
pub(super) fn incomplete_text(skipped: usize, left_out: usize, changed: usize) -> String {
    let parts: Vec<String> = [
        (
            skipped,
            "input(s) could not be read: skipped, or (a directory) stored without its contents",
        ),
        (left_out, "item(s) were left out"),
        (changed, "input(s) changed or vanished while being read"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    let text = match parts.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
    };
    format!("{text} ({})", see_warnings())
}

/// Whether the warnings that errors point to are not printed ([`set_warnings_hidden`]).
static WARNINGS_HIDDEN: AtomicBool = AtomicBool::new(false);

/// Tells the errors that point to warnings ("see warnings") that the program does not print
/// them (`-q`), so that they say so instead of sending the reader to lines that are not
/// there. Process-wide: the reporter that hides warnings sets it once, at start.
pub fn set_warnings_hidden(hidden: bool) {
    WARNINGS_HIDDEN.store(hidden, Ordering::Relaxed);
}

/// Where the items an error counts are named: "see warnings", or under `-q` that they were
/// named in warnings it hid.
pub(super) fn see_warnings() -> &'static str {
    if WARNINGS_HIDDEN.load(Ordering::Relaxed) {
        "named in warnings that -q hid"
    } else {
        "see warnings"
    }
}

impl Error {
    /// The innermost error (through [`Error::InEntry`]).
    pub fn root(&self) -> &Error {
        match self {
            Error::InEntry { source, .. } => source.root(),
            e => e,
        }
    }

    /// Whether this failure is the machine's, not the archive's (exit 4: a read or write the
    /// disk, the store or the system refused — `ENOSPC`, `EIO` —, also the recovery data's
    /// reads and spill file; a buffer that could not be allocated, [`Error::OutOfMemory`]; a
    /// standard stream closed when krypta started, [`Error::StreamClosed`], which
    /// [`Error::io`] builds from an EBADF read): a salvage, or a search for the archive's end,
    /// stops on it with that error, as any run does, rather than counting the frame or entry
    /// it hit as damaged (whose exit code, 4, the salvage's summary would have turned into
    /// the archive's 2, 3 or 5: README's exit-code table).
    pub fn is_io(&self) -> bool {
        self.root().exit_code() == 4
    }

    /// Builds an [`Error::Io`].
    ///
    /// A read of stdin or write to stdout (`<stdin>`, `<stdout>`) that failed because the
    /// stream was closed when krypta started is [`Error::StreamClosed`] instead.
    pub fn io(path: impl Into<PathBuf>, op: &'static str, source: io::Error) -> Self {
        let path = path.into();
        if let Some(closed) = crate::closed_stdio::closed_stream_error(&path, &source) {
            return closed;
        }
        // The recovery encoder's refused allocation reaches a write through `Write` as an
        // `io::Error`: said as itself (out of memory, exit 4), not as a failed write.
        let oom = source
            .get_ref()
            .and_then(|e| e.downcast_ref::<crate::recovery::RecoveryError>())
            .is_some_and(|e| matches!(e, crate::recovery::RecoveryError::OutOfMemory { .. }));
        if oom {
            let kind = source.kind();
            match source
                .into_inner()
                .map(|e| e.downcast::<crate::recovery::RecoveryError>())
            {
                Some(Ok(r)) => return Error::Recovery { path, source: *r },
                Some(Err(e)) => {
                    return Error::Io {
                        path,
                        op,
                        source: io::Error::new(kind, e),
                    };
                }
                None => {
                    return Error::Io {
                        path,
                        op,
                        source: kind.into(),
                    };
                }
            }
        }
        Error::Io { path, op, source }
    }
}

/// [`Error::AuthFailed`]'s line. When no stanza opened, a wrong key and a damaged header (a
/// changed stanza or archive id) cannot be told apart (`docs/SECURITY.md`): the line says
/// both, and which check failed, so a user with the right key does not go looking for
/// another. The other checks keep the one line they always had (`-v` names the check).
pub(super) fn auth_failed(path: &Path, check: AuthCheck, detail: Option<&Inconsistency>) -> String {
    match check {
        // The frames verified with the key: it is right, and another key would not help
        // (before: "wrong key or password, or the archive was modified").
        AuthCheck::Structure => {
            let (at, problem) = match detail {
                Some(d) => (
                    d.offset.map_or(String::new(), |o| format!(" at byte {o}")),
                    format!(": {}", d.problem),
                ),
                None => (String::new(), String::new()),
            };
            format!(
                "{}: inconsistent archive{at}{problem}; its frames verified with the key given, so the key is right: the archive was written so by a faulty or hostile writer holding the key",
                shown(path)
            )
        }
        AuthCheck::NoStanzaOpened => format!(
            "{}: authentication failed: no recipient stanza opened with the keys given: wrong key or password, or the archive's header is damaged or modified",
            shown(path)
        ),
        _ => format!(
            "{}: authentication failed: wrong key or password, or the archive was modified",
            shown(path)
        ),
    }
}

/// What [`Error::KdfLimit`] adds after the refusal: krypta never writes a cost beyond
/// `limit`, so an archive written with normal settings has a damaged header; when clearing one
/// bit of `value` gives a cost within the limit (a flipped bit: 65536 KiB read as
/// 2147549184), that value is named.
pub(crate) fn kdf_limit_hint(value: u64, limit: u64) -> String {
    let unflipped = (0..64)
        .rev()
        .map(|b| value & !(1u64 << b))
        .find(|&v| v != value && v > 0 && v <= limit);
    let one_bit = unflipped.map_or(String::new(), |v| {
        format!(" (it is one bit away from {v}, which is within the limit)")
    });
    format!(
        "if this archive was written with normal settings, its header may be damaged{one_bit}: \
         no krypta writes a cost beyond the limit, and the header's MAC cannot be checked \
         before the KDF runs"
    )
}

/// [`Error::Salvaged`]'s line. No entry at all (the damage is before the first entry's
/// record, or the archive was cut inside it) is said so, not "0 of 0".
pub(super) fn salvaged(
    path: &Path,
    verb: &str,
    restored: u64,
    total: u64,
    damaged: u64,
    uncounted: bool,
) -> String {
    if total == 0 {
        format!(
            "{}: nothing {verb}: the damage is before the first entry could be read",
            shown(path)
        )
    } else {
        // Without the index, entries wholly inside lost bytes are not counted: "restored 3381
        // of 3382 entries" read as nearly all when 1,616 were lost (h75, 2026-12-07).
        format!(
            "{}: {verb} {restored} of {}{total} {}{}, {damaged} damaged",
            shown(path),
            if uncounted { "at least " } else { "" },
            if total == 1 { "entry" } else { "entries" },
            if uncounted {
                " (the index is lost)"
            } else {
                ""
            }
        )
    }
}

/// [`super::Error::EditUndone`]'s message: where the inserted or removed bytes are, and what
/// that means for `test` (no recovery data to repair it) or for `c --base` (not written
/// against).
pub(super) fn edit_undone(
    path: &Path,
    base_written: bool,
    at: u64,
    bytes: i64,
    frame: Option<u64>,
) -> String {
    let n = bytes.unsigned_abs();
    let what = if base_written {
        format!(
            "a damaged archive is not written against as a delta base (krypta x restores its files with {} undone; a good copy of it can be the base)",
            crate::them(n)
        )
    } else {
        format!(
            "every entry verified with {} undone, but the archive is not as written and has no recovery data to repair it",
            crate::them(n)
        )
    };
    format!(
        "{}: {} {} at byte {at} ({}): {what}",
        shown(path),
        crate::counted(n, "byte", "bytes"),
        if bytes > 0 { "inserted" } else { "removed" },
        frame.map_or("after the index".to_string(), |f| format!("frame {f}")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    /// Regression (review): names from an archive reached error messages raw, so a file named
    /// `evil\e[31mRED` coloured the terminal; every path in a message is escaped now.
    #[test]
    fn paths_in_error_messages_are_escaped() {
        let path = PathBuf::from(OsStr::from_bytes(b"out/evil\x1b[31mRED\n\xff"));
        let e = Error::Exists { path: path.clone() };
        assert_eq!(
            e.to_string(),
            "out/evil\\x1b[31mRED\\n\\xff: already exists (use -f/--force to overwrite)"
        );
        let e = Error::io(&path, "replace", io::Error::other("Is a directory"));
        assert_eq!(
            e.to_string(),
            "out/evil\\x1b[31mRED\\n\\xff: replace: Is a directory"
        );
    }
}
