//! The library's one error type; the exit code each kind maps to is in `exit`
//! ([`Error::exit_code`]).

use std::io;
use std::path::PathBuf;

use crate::format::FormatError;
use crate::recovery::RecoveryError;

/// Shorthand for results carrying [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

mod base;
mod detail;
mod exit;
mod text;

use crate::fs::shown;
pub use text::set_warnings_hidden;
use text::{auth_failed, edit_undone, incomplete_text, salvaged, see_warnings};

pub use base::BaseError;
pub use detail::{AuthCheck, Inconsistency, KeyNeeds, SignatureProblem};

/// Every error the library returns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Wrong command-line usage or option values.
    #[error("{0}")]
    Usage(String),
    /// The password given for a protected secret key file is wrong (exit 2).
    #[error("{}: wrong password for this protected secret key file", shown(path))]
    KeyPassword {
        /// The key file.
        path: PathBuf,
    },
    /// The archive's signature was refused (exit 8): see [`SignatureProblem`].
    #[error("{}: {problem}", shown(path))]
    Signature {
        /// The archive path.
        path: PathBuf,
        /// What was refused.
        problem: SignatureProblem,
    },
    /// A big buffer could not be allocated (out of memory, `ulimit -v`, a cgroup's
    /// `memory.max`): exit 4, as other resources krypta ran out of.
    #[error("{}: out of memory: {source}; {advice}", shown(path))]
    OutOfMemory {
        /// The archive being written or read.
        path: PathBuf,
        /// What could not be allocated.
        #[source]
        source: crate::memory::OutOfMemory,
        /// What the run needs about, and what to change (`crate::memory::compress_advice`).
        advice: String,
    },
    /// An I/O operation on a named path failed.
    #[error("{}: {op}: {source}", shown(path))]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// What was being done ("open", "read", "write", "rename", ...).
        op: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A standard stream krypta was to carry data on was closed when it started (`>&-`,
    /// `<&-`): refused before anything is read or written, not taken as `/dev/null`
    /// ([`crate::closed_stdio`]). Exit 4, as a failed write to stdout.
    #[error(
        "{}{}{}",
        crate::closed_stdio::describe(*stream),
        if what.is_empty() { "" } else { ": " },
        what
    )]
    StreamClosed {
        /// The stream.
        stream: crate::closed_stdio::Stream,
        /// What that means for the command ("nothing was written"), or empty.
        what: &'static str,
    },
    /// A file option names a stream closed at start (`--pass-file /dev/stdin <&-`). Exit 4.
    #[error("{option} {}: {}: there is nothing to read from it", shown(path), crate::closed_stdio::describe(*stream))]
    OptionStreamClosed {
        /// The option (`--pass-file`).
        option: String,
        /// The path given with it.
        path: PathBuf,
        /// The stream it names.
        stream: crate::closed_stdio::Stream,
    },
    /// An archive path names a directory (exit 1: the argument names the wrong thing, and
    /// nothing failed that trying again could fix; as `repair -o DIR`).
    #[error("{}: is a directory, not an archive", shown(path))]
    IsDirectory {
        /// The path as given.
        path: PathBuf,
    },
    /// A command that reads the archive at offsets or twice (`repair`, a delta base) was
    /// given a stream (`-`, a pipe, a character device): exit 1, as a bad option.
    #[error("{}: not seekable ({kind}): {needs}", shown(path))]
    NotSeekable {
        /// The path as given.
        path: PathBuf,
        /// What it is ("a pipe", "stdin", "a character device").
        kind: &'static str,
        /// Why the command needs to seek, and what to give instead.
        needs: &'static str,
    },
    /// The input is not a krypta archive (bad magic, empty file).
    #[error("{}: not a krypta archive ({reason})", shown(path))]
    NotAnArchive {
        /// The archive path (`-` for stdin).
        path: PathBuf,
        /// What was found instead.
        reason: &'static str,
    },
    /// The archive's format version is not one this build reads.
    #[error(
        "{}: unsupported format version {version} (this krypta reads versions 1 to {supported})",
        shown(path)
    )]
    UnsupportedVersion {
        /// The archive path.
        path: PathBuf,
        /// Version found.
        version: u16,
        /// Version supported.
        supported: u16,
    },
    /// A structure of the archive is malformed or the archive is truncated.
    #[error("{}: corrupt archive at byte {offset}: {source}", shown(path))]
    Corrupt {
        /// The archive path.
        path: PathBuf,
        /// Byte offset in the archive of the structure that failed.
        offset: u64,
        /// What was wrong.
        #[source]
        source: FormatError,
    },
    /// The archive uses a critical feature (format 2: a critical header extension or entry
    /// field type) this build does not know: it needs a newer krypta.
    #[error("{}: unsupported feature at byte {offset}: {source}", shown(path))]
    Unsupported {
        /// The archive path.
        path: PathBuf,
        /// Byte offset in the archive of the structure that holds it.
        offset: u64,
        /// Which type.
        #[source]
        source: FormatError,
    },
    /// Authentication failed: wrong password / key / identity, or the archive was tampered
    /// with. A wrong key and a damaged stanza cannot be told apart (`docs/SECURITY.md`): when
    /// no stanza opened, the message says both, and that no stanza opened ([`auth_failed`]).
    /// With [`AuthCheck::Structure`] the key is right (frames verified with it): the message
    /// says so and names the structure from `detail`.
    #[error("{}", auth_failed(path, *check, detail.as_deref()))]
    AuthFailed {
        /// The archive path.
        path: PathBuf,
        /// Which check failed (printed only with `-v`).
        check: AuthCheck,
        /// For [`AuthCheck::Structure`]: which structure, where.
        detail: Option<Box<Inconsistency>>,
    },
    /// A stanza opened with the key given, so the key is right, but the header's tag does not
    /// verify (nor under one flipped bit undone: `header_fix`): the header is damaged or
    /// modified, not the key wrong. Exit 2, as every failed check of an encrypted archive.
    #[error(
        "{}: the archive's header is damaged or modified: the key is right (a recipient stanza opened with it), but the header's MAC does not verify",
        shown(path)
    )]
    HeaderDamaged {
        /// The archive path.
        path: PathBuf,
    },
    /// No stanza opened with the keys given, and the header has stanzas of kinds this build
    /// does not know (format 2 skips them): a newer krypta may open the archive with them, or
    /// a stanza's kind byte is damaged (which the bytes cannot tell apart: both are said).
    #[error(
        "{}: authentication failed: no stanza opened with the keys given; {unknown} stanza(s) of kinds this krypta does not know were skipped (a newer krypta may open them), or the archive's header is damaged or modified",
        shown(path)
    )]
    StanzasUnknown {
        /// The archive path.
        path: PathBuf,
        /// How many stanzas of unknown kinds the header has.
        unknown: usize,
    },
    /// The archive is encrypted and no key was given, or none of the keys given is of a kind
    /// its stanzas open with (a password for a key-file archive): the key it needs is missing.
    #[error(
        "{}: archive is encrypted ({kinds}){}: give {}",
        shown(path),
        if *unfit { " and no key given is of a kind that opens it" } else { "" },
        needs.options(false)
    )]
    KeyRequired {
        /// The archive path.
        path: PathBuf,
        /// Stanza kinds present, e.g. "argon2id, pq-box".
        kinds: String,
        /// The kinds of key that open it.
        needs: KeyNeeds,
        /// True when keys were given, none of them of those kinds.
        unfit: bool,
    },
    /// Reading a delta archive with its base failed because of the base (docs/FORMAT.md
    /// §16): see [`BaseError`]. Exit 9.
    #[error(transparent)]
    Base(#[from] BaseError),
    /// A key was given but the archive is not encrypted. Anyone can write an unencrypted
    /// archive (its checksums are unkeyed), so one swapped in for an encrypted archive would
    /// otherwise be read as if the key had opened it. Refused unless the caller allows it
    /// (`--allow-unencrypted`); exit code 2, as an archive that fails authentication.
    #[error(
        "{}: the archive is not encrypted, but a key was given: refusing it (an unencrypted archive proves nothing about who wrote it; give --allow-unencrypted to read it anyway)",
        shown(path)
    )]
    NotEncrypted {
        /// The archive path.
        path: PathBuf,
    },
    /// A data frame of an archive whose header verified failed its tag: the key is known to
    /// be right (a stanza opened and the header tag verified), so this is damage or
    /// modification, never a wrong key (issue 11). Exit 2 (encrypted).
    #[error(
        "{}: archive damaged or modified at byte {offset} (frame {frame})",
        shown(path)
    )]
    Damaged {
        /// The archive path.
        path: PathBuf,
        /// The frame's offset, bytes.
        offset: u64,
        /// The frame's sequence number.
        frame: u64,
    },
    /// `test` of an archive without recovery data read with one insertion or removal undone
    /// (`archive::reader::moved`): every entry verified, but the file is not as written; or
    /// such an archive given as the base of a new delta archive (`c --base`), which refuses
    /// it as it refuses any damaged base. Exit 2 encrypted, 5 unencrypted.
    #[error("{}", edit_undone(path, *base_written, *at, *bytes, *frame))]
    EditUndone {
        /// The archive path.
        path: PathBuf,
        /// It was given as the base of a new delta archive (`c --base`), which refuses it.
        base_written: bool,
        /// Where the edit is (as written).
        at: u64,
        /// Bytes inserted (negative: removed).
        bytes: i64,
        /// The frame there; None after the index (before the footer).
        frame: Option<u64>,
        /// The archive is encrypted (exit 2, else 5).
        sealed: bool,
    },
    /// `test` of an archive followed by bytes that are not its own and not zero padding
    /// (`store::clamped`): every entry verified, but the file is not the archive as written.
    /// Exit 2 encrypted, 5 unencrypted.
    #[error(
        "{}: {} the footer (at byte {at}): every entry verified without {}, but the file is not the archive as written",
        shown(path),
        crate::bytes_follow(*bytes),
        crate::them(*bytes),
    )]
    Appended {
        /// The archive path.
        path: PathBuf,
        /// Where the archive ends.
        at: u64,
        /// Bytes after it.
        bytes: u64,
        /// The archive is encrypted (exit 2, else 5).
        sealed: bool,
    },
    /// `test` of an archive without recovery data whose header had one flipped bit, undone
    /// by its tag (`archive::reader::header_fix`): every entry verified, but the file is not
    /// as written. Exit 2 encrypted, 5 unencrypted.
    #[error(
        "{}: one bit of the header is flipped (byte {byte}, bit {bit}): {}",
        shown(path),
        if *base_written {
            "a damaged archive is not written against as a delta base (krypta x restores its files with the bit undone)"
        } else if *recovery {
            "every entry verified with it undone, but the archive is not as written (its recovery data, not read from a pipe, can repair it: krypta repair)"
        } else {
            "every entry verified with it undone, but the archive is not as written and has no recovery data to repair it"
        }
    )]
    HeaderFixed {
        /// The archive path.
        path: PathBuf,
        /// It was given as the base of a new delta archive (`c --base`), which refuses it.
        base_written: bool,
        /// Its header announces recovery data (read from a pipe, which does not use it).
        recovery: bool,
        /// The byte, from the start.
        byte: usize,
        /// The bit in it (0 = least significant).
        bit: u8,
        /// The archive is encrypted (exit 2, else 5).
        sealed: bool,
    },
    /// `test` of a delta archive whose base is damaged where nothing the test read needed
    /// it (the base's index or footer cannot be read, or frames no delta block uses fail):
    /// every entry verified, but the base is not the archive as written, and the next
    /// delta read may need its damaged part. Exit 2 when the base is encrypted, else 5, as
    /// for bytes appended to the base ([`Error::Appended`]).
    #[error(
        "{}: every entry verified, but its base {} is damaged ({why}): the base is not the archive as written; keep a good copy of it",
        shown(path),
        shown(base)
    )]
    BaseNotAsWritten {
        /// The delta archive.
        path: PathBuf,
        /// The base given.
        base: PathBuf,
        /// What is damaged.
        why: String,
        /// The base is encrypted (exit 2, else 5).
        sealed: bool,
    },
    /// As [`Error::Damaged`], for the footer of an encrypted archive whose MAC failed after
    /// the header verified (the key is right: not "wrong password or key").
    #[error(
        "{}: archive damaged or modified at byte {offset} (the footer: its MAC does not verify)",
        shown(path)
    )]
    DamagedFooter {
        /// The archive path.
        path: PathBuf,
        /// The footer's offset, bytes.
        offset: u64,
    },
    /// A read that went on past damage (salvage): what was restored (or verified) and what
    /// was not; the damaged entries were named in warnings before. Its exit code is the worst
    /// failure salvage read past: 2 in an encrypted archive, 5 in an unencrypted one when a
    /// frame failed its checksum or bytes were missing, 3 when only structures that verified
    /// failed to parse or decode; 9 when every failure was a delta archive's base's, none its
    /// own (`damage::salvage_code`).
    #[error("{}", salvaged(path, verb, *restored, *total, *damaged, *uncounted))]
    Salvaged {
        /// The archive path.
        path: PathBuf,
        /// "restored" (extract) or "verified" (test).
        verb: &'static str,
        /// Entries restored or verified.
        restored: u64,
        /// Entries asked for.
        total: u64,
        /// Entries not restored.
        damaged: u64,
        /// `total` is a lower bound: read without the index past lost bytes, which may hold
        /// entries nobody can count.
        uncounted: bool,
        /// The exit code (2, 3 or 5).
        code: u8,
    },
    /// `test`: every entry verified, but only because the recovery data repaired what was
    /// read, or the recovery data itself is damaged or missing (exit 7).
    #[error("{}: {what}; every entry verified", shown(path))]
    Repairable {
        /// The archive path.
        path: PathBuf,
        /// What is damaged.
        what: String,
        /// What was verified.
        summary: Box<crate::archive::reader::ScanSummary>,
    },
    /// A checksum mismatch in an unencrypted archive (data corruption).
    #[error("{}: integrity check failed: {what}", shown(path))]
    Integrity {
        /// The archive path.
        path: PathBuf,
        /// What failed, e.g. "block 12 checksum mismatch" or "content digest of docs/a.txt".
        what: String,
    },
    /// A KDF parameter in an archive is beyond what this build accepts.
    /// The message also says the header may be damaged (`text::kdf_limit_hint`).
    #[error(
        "{}: {param} = {value} exceeds the limit {limit} (refusing to run the KDF); {}",
        shown(path),
        crate::error::text::kdf_limit_hint(*value, *limit)
    )]
    KdfLimit {
        /// The archive path.
        path: PathBuf,
        /// Parameter name ("argon2id memory KiB", "pbkdf2 iterations", ...).
        param: &'static str,
        /// Value found.
        value: u64,
        /// The ceiling.
        limit: u64,
    },
    /// A KDF parameter in an archive is below the floor every krypta writer respects: such a
    /// stanza was not written by krypta, and running it would let a crafted archive test
    /// password guesses cheaply. A parameter error, not an authentication failure.
    #[error(
        "{}: {param} = {value} is below the minimum {min} (refusing to run the KDF on a stanza weaker than any krypta writes); if krypta wrote this archive, its header is damaged (the header's MAC cannot be checked before the KDF runs)",
        shown(path)
    )]
    KdfTooWeak {
        /// The archive path.
        path: PathBuf,
        /// Parameter name ("argon2id memory KiB", "pbkdf2 iterations", ...).
        param: &'static str,
        /// Value found.
        value: u64,
        /// The floor.
        min: u64,
    },
    /// A key file is malformed, of the wrong kind, or fails its checksum.
    #[error("{}: {problem}", shown(path))]
    BadKeyFile {
        /// The key file (or `<argument>` for key text given inline).
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// Something the writer was asked to store breaks a limit every reader enforces
    /// (docs/FORMAT.md §10, `format::limits`): refused before any of it is written, so
    /// krypta never writes an archive its reader refuses.
    #[error("{what}: cannot be archived: {problem}")]
    Unwritable {
        /// The entry (its archive path, escaped and shortened) or the archive.
        what: String,
        /// The limit broken.
        #[source]
        problem: FormatError,
    },
    /// An output already exists and `--force` was not given.
    #[error("{}: already exists (use -f/--force to overwrite)", shown(path))]
    Exists {
        /// The existing path.
        path: PathBuf,
    },
    /// An archive entry would be written outside the output directory or through a link.
    #[error("{}: unsafe entry path: {reason}", shown(path))]
    UnsafePath {
        /// The entry path as stored (lossily shown).
        path: PathBuf,
        /// Why it was refused.
        reason: &'static str,
    },
    /// Something went wrong in a cryptographic primitive (e.g. the OS random source failed).
    #[error("crypto: {0}")]
    Crypto(String),
    /// An error met while reading the content of one entry: names the entry (the file being
    /// extracted or verified) as well as the archive. The exit code is the inner error's.
    #[error("{source} (while reading {entry})")]
    InEntry {
        /// The entry's path as stored (undecodable bytes escaped).
        entry: String,
        /// What went wrong.
        #[source]
        source: Box<Error>,
    },
    /// Recovery data (`krypta::recovery`): locating, verifying, repairing or writing it failed.
    #[error("{}: {source}", shown(path))]
    Recovery {
        /// The archive path.
        path: PathBuf,
        /// What failed.
        #[source]
        source: RecoveryError,
    },
    /// `repair`: no recovery section in an archive whose header announces one, and what the
    /// archive's own structure says ([`crate::archive::reader::archive_end`]): cut short or
    /// damaged, the section lost with it (exit 5, beyond the recovery data), or only the
    /// section missing (exit 3: nothing to repair from; `repair --check` says it with 7).
    #[error("{}: {found}", shown(path))]
    SectionLost {
        /// The archive path.
        path: PathBuf,
        /// Where the archive ends, or is cut or damaged.
        found: crate::archive::reader::SectionLost,
    },
    /// Object storage cannot be used as configured (no credentials, a profile krypta cannot
    /// use, a malformed endpoint URL): nothing was sent.
    #[error("{}: {source}", shown(location))]
    StoreConfig {
        /// The `s3://BUCKET/KEY` location.
        location: PathBuf,
        /// What is missing or wrong.
        #[source]
        source: crate::store::s3::config::ConfigError,
    },
    /// The archive was written, but some inputs could not be read (skipped), were left out
    /// (each named in a warning), or changed or vanished while being read.
    #[error("archive written, but {}", incomplete_text(*skipped, *left_out, *changed))]
    Incomplete {
        /// Inputs that could not be read and are not in the archive.
        skipped: usize,
        /// Entries left out by design, each named (a different file under a name stored
        /// already): not in the archive.
        left_out: usize,
        /// Inputs that changed or vanished while being read (stored as read).
        changed: usize,
        /// What was written.
        summary: Box<crate::archive::writer::WriteSummary>,
    },
    /// `krypta c`: not one input could be archived (each was missing, unreadable or left out,
    /// and named in a warning), so no archive was made: an existing output is left as it was
    /// (a nightly run over a missing mount must not replace the last good backup with an
    /// empty archive), and a new one is not created. Exit 4, as a missing input.
    #[error(
        "{}: not written: nothing could be archived ({count} input(s) or item(s) skipped, {}){}",
        shown(path),
        see_warnings(),
        if *existed { "; the existing archive is left as it was" } else { "" }
    )]
    NothingArchived {
        /// The output as given.
        path: PathBuf,
        /// Inputs and items skipped or left out.
        count: usize,
        /// The output existed (and is kept).
        existed: bool,
    },
    /// The existing output is one of the inputs (or lies inside an input directory and is
    /// reached by the walk): replacing it would destroy an input. Refused even with `-f`;
    /// nothing was written.
    #[error(
        "{}: the output is also an input: replacing it would destroy it (nothing was written; write the archive elsewhere or exclude it)",
        shown(path)
    )]
    OutputIsInput {
        /// The output as the walk reached it.
        path: PathBuf,
    },
    /// Extraction found existing files at entries' names and was not told what to do with
    /// them (`-k`, `--skip-existing`, `-f`). Found by the check before extraction: nothing
    /// was written. Found during it (an archive read from a stream, or a file that appeared
    /// meanwhile): everything else was extracted and the existing files were kept.
    #[error("{}: {count} existing file(s) in the way: {}{} ({}; {})",
        shown(output), names.join(", "), if *count > names.len() { format!(", and {} more", count - names.len()) } else { String::new() },
        if *before_start { "nothing was extracted" } else { "they were kept; everything else was extracted" },
        if *forced {
            "-f does not replace a directory where a file goes, nor a file where a directory the archive does not list goes: move it away or extract elsewhere"
        } else {
            "-k or --skip-existing keeps existing files, -f replaces them"
        })]
    Conflicts {
        /// The output directory.
        output: PathBuf,
        /// How many entries conflict.
        count: usize,
        /// The first few, as shown (escaped paths in the output).
        names: Vec<String>,
        /// True when found before anything was written.
        before_start: bool,
        /// True when `-f` was given (so the hint does not suggest it).
        forced: bool,
    },
    /// Extracted, but entries that are not existing files could not be made, each named in a
    /// warning: entries below an existing non-directory with `--skip-existing`, hard links
    /// whose target was not selected. Exit 6.
    #[error(
        "extracted, but {} could not be made ({})",
        crate::counted(*count as u64, "entry", "entries"),
        see_warnings()
    )]
    NotMade {
        /// Entries not made.
        count: usize,
        /// What was extracted.
        summary: Box<crate::archive::reader::ScanSummary>,
    },
    /// Extracted, but the kernel refused to make some entries (`EACCES`: a directory of
    /// another user that this user may not write), each named in a warning; the rest was
    /// restored, as GNU tar goes on. Exit 4.
    #[error(
        "extracted, but {} could not be made: permission denied (see warnings)",
        crate::counted(*count as u64, "entry", "entries")
    )]
    Denied {
        /// Entries not made.
        count: usize,
        /// What was extracted.
        summary: Box<crate::archive::reader::ScanSummary>,
    },
    /// Extracted with `-k`: everything else was extracted, the existing files were kept.
    #[error(
        "extracted, but {count} existing file(s) were kept, not replaced (-k; {})",
        see_warnings()
    )]
    KeptExisting {
        /// Existing files kept (and entries that could not be made because of them).
        count: usize,
        /// What was extracted.
        summary: Box<crate::archive::reader::ScanSummary>,
    },
}
