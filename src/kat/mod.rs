//! Known-answer tests: the vector files of `test-vectors/`, embedded in the binary, their
//! parser, and the runners behind `krypta kat`, each calling krypta's own wrappers (the
//! functions the archive uses), never the underlying crates.
//!
//! # Vector file format
//!
//! One file per vector set, UTF-8 text, read line by line:
//!
//! - a line whose first non-blank character is `#` is a comment;
//! - blank lines separate blocks; every other line is `key = value` (spaces around `=` are
//!   ignored, the value may be empty, keys are unique within a block);
//! - the first block opens with the line `[set]` and is the header: `name` (shown in the
//!   table), `kind` (which runner checks the vectors), `source` (the document), `section`,
//!   `licence`, `cite` (the short source shown in the table), and any parameters the kind
//!   needs for every vector (e.g. the BLAKE3 key, the BCJ filter);
//! - every later block is one vector: an `id` and the kind's fields. Byte strings are hex
//!   (either case; empty = zero bytes), counts and lengths are decimal.
//!
//! A vector passes when every expected field equals what krypta computes; a set passes when
//! it has at least one vector and all pass. A file that does not parse fails its set.
//!
//! The `krypta-*` sets are krypta's own golden vectors (frame seal, stanzas, archive bytes),
//! produced by the seeded generator in [`golden`]; `tests/kat_golden.rs` checks that
//! regenerating them reproduces the committed files byte for byte.

pub mod golden;
mod golden_archive;
mod golden_signed;
mod golden_stanza;
pub mod parse;
pub mod signatures;
pub mod standard;

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::crypto::CryptoError;
use parse::{Block, encode_hex};

/// Why a vector (or a whole set) failed.
#[derive(Debug, thiserror::Error)]
pub enum KatError {
    /// The file does not follow the grammar in the module doc.
    #[error("line {line}: {problem}")]
    Syntax {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: &'static str,
    },
    /// A field the kind needs is absent.
    #[error("block at line {line}: missing `{key}`")]
    Missing {
        /// The key.
        key: String,
        /// First line of the block.
        line: usize,
    },
    /// A field does not have the expected form.
    #[error("block at line {line}: `{key}` must be {expected}")]
    BadValue {
        /// The key.
        key: String,
        /// First line of the block.
        line: usize,
        /// The form expected.
        expected: &'static str,
    },
    /// A byte-string field has the wrong length.
    #[error("block at line {line}: `{key}` must be {expected} bytes, got {got}")]
    BadLength {
        /// The key.
        key: String,
        /// First line of the block.
        line: usize,
        /// Expected length, bytes.
        expected: usize,
        /// Length found, bytes.
        got: usize,
    },
    /// A file, value or parameter is above the cap that bounds the runner's time and memory.
    #[error("{what} of {len} exceeds the limit {limit}")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its size or value.
        len: usize,
        /// The cap.
        limit: usize,
    },
    /// The header names a kind no runner handles.
    #[error("unknown vector kind `{kind}`")]
    UnknownKind {
        /// The kind given.
        kind: String,
    },
    /// krypta computed something other than the expected value.
    #[error("`{field}` differs from byte {at}: expected {expected}, got {got}")]
    Mismatch {
        /// The field compared.
        field: String,
        /// Offset of the first differing byte (or the shorter length).
        at: usize,
        /// Expected bytes from `at`, hex (at most 32 bytes shown), and the total length.
        expected: String,
        /// Computed bytes from `at`, hex (at most 32 bytes shown), and the total length.
        got: String,
    },
    /// A property check failed (e.g. a verifier accepted a modified tag).
    #[error("check failed: {what}")]
    Check {
        /// The property.
        what: &'static str,
    },
    /// A krypta wrapper returned an error.
    #[error("{call} failed: {source}")]
    Crypto {
        /// The wrapper called.
        call: &'static str,
        /// Its error.
        #[source]
        source: CryptoError,
    },
    /// The archive writer returned an error (golden archive vectors).
    #[error("{call} failed: {source}")]
    Archive {
        /// The call.
        call: &'static str,
        /// Its error.
        #[source]
        source: Box<crate::Error>,
    },
    /// A file of the set could not be read (`--dir` mode).
    #[error("cannot read {file}: {source}")]
    Read {
        /// The file name.
        file: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Compares an expected byte string with a computed one; on a difference, reports the first
/// differing byte offset and up to 32 bytes from there on each side.
pub(crate) fn expect(field: &str, expected: &[u8], got: &[u8]) -> Result<(), KatError> {
    if expected == got {
        return Ok(());
    }
    let at = expected
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(got.len()));
    let window = |b: &[u8]| {
        let end = b.len().min(at + 32);
        let more = if end < b.len() { "…" } else { "" };
        format!(
            "{}{more} ({} bytes)",
            encode_hex(&b[at.min(b.len())..end]),
            b.len()
        )
    };
    Err(KatError::Mismatch {
        field: field.to_string(),
        at,
        expected: window(expected),
        got: window(got),
    })
}

/// Turns a failed property into a [`KatError::Check`].
pub(crate) fn expect_true(what: &'static str, ok: bool) -> Result<(), KatError> {
    if ok {
        Ok(())
    } else {
        Err(KatError::Check { what })
    }
}

/// The vector files carried by the binary: (file name, contents), in table order.
pub const SETS: &[(&str, &str)] = &[
    (
        "sha256_fips180.txt",
        include_str!("../../test-vectors/sha256_fips180.txt"),
    ),
    (
        "sha256_cavp.txt",
        include_str!("../../test-vectors/sha256_cavp.txt"),
    ),
    (
        "hmac_sha256.txt",
        include_str!("../../test-vectors/hmac_sha256.txt"),
    ),
    (
        "aes256_block.txt",
        include_str!("../../test-vectors/aes256_block.txt"),
    ),
    (
        "aes256_ctr.txt",
        include_str!("../../test-vectors/aes256_ctr.txt"),
    ),
    (
        "hkdf_sha256.txt",
        include_str!("../../test-vectors/hkdf_sha256.txt"),
    ),
    (
        "pbkdf2_sha256.txt",
        include_str!("../../test-vectors/pbkdf2_sha256.txt"),
    ),
    (
        "argon2id.txt",
        include_str!("../../test-vectors/argon2id.txt"),
    ),
    ("x25519.txt", include_str!("../../test-vectors/x25519.txt")),
    (
        "mlkem768.txt",
        include_str!("../../test-vectors/mlkem768.txt"),
    ),
    (
        "mldsa65.txt",
        include_str!("../../test-vectors/mldsa65.txt"),
    ),
    (
        "ed25519.txt",
        include_str!("../../test-vectors/ed25519.txt"),
    ),
    ("blake3.txt", include_str!("../../test-vectors/blake3.txt")),
    (
        "bcj_x86.txt",
        include_str!("../../test-vectors/bcj_x86.txt"),
    ),
    (
        "bcj_arm64.txt",
        include_str!("../../test-vectors/bcj_arm64.txt"),
    ),
    (
        "krypta_frame_seal.txt",
        include_str!("../../test-vectors/krypta_frame_seal.txt"),
    ),
    (
        "krypta_pqbox_stanza.txt",
        include_str!("../../test-vectors/krypta_pqbox_stanza.txt"),
    ),
    (
        "krypta_password_stanza.txt",
        include_str!("../../test-vectors/krypta_password_stanza.txt"),
    ),
    (
        "krypta_keyfile_stanza.txt",
        include_str!("../../test-vectors/krypta_keyfile_stanza.txt"),
    ),
    (
        "krypta_archive.txt",
        include_str!("../../test-vectors/krypta_archive.txt"),
    ),
    (
        "krypta_archive_v2.txt",
        include_str!("../../test-vectors/krypta_archive_v2.txt"),
    ),
    (
        "krypta_archive_signed.txt",
        include_str!("../../test-vectors/krypta_archive_signed.txt"),
    ),
];

/// The outcome of one vector set.
#[derive(Debug)]
pub struct SetResult {
    /// The file name (as in [`SETS`]).
    pub file: String,
    /// The header's `name` (the file name when the header could not be read).
    pub name: String,
    /// The header's short citation (`cite`, else `source`).
    pub source: String,
    /// Vectors that passed.
    pub passed: usize,
    /// Vectors in the set.
    pub total: usize,
    /// Failed vectors: (vector id, why).
    pub failures: Vec<(String, KatError)>,
    /// Why the whole set failed before any vector ran (unreadable file, bad header).
    pub error: Option<KatError>,
    /// Wall time spent parsing and running the set.
    pub elapsed: Duration,
}

impl SetResult {
    /// True when the set parsed, has at least one vector, and every vector passed.
    pub fn passed_all(&self) -> bool {
        self.error.is_none() && self.total > 0 && self.passed == self.total
    }
}

/// The outcome of a `krypta kat` run: one [`SetResult`] per vector file.
#[derive(Debug)]
pub struct KatReport {
    /// One entry per set, in [`SETS`] order.
    pub sets: Vec<SetResult>,
}

impl KatReport {
    /// True when every set passed (and there is at least one set).
    pub fn all_passed(&self) -> bool {
        !self.sets.is_empty() && self.sets.iter().all(SetResult::passed_all)
    }

    /// A markdown table (set, source, passed/total, status), then one line per failure.
    pub fn to_table(&self) -> String {
        let mut out =
            String::from("| set | source | passed | status | ms |\n|---|---|---|---|---:|\n");
        for s in &self.sets {
            let status = if s.passed_all() { "ok" } else { "FAIL" };
            let _ = writeln!(
                out,
                "| {} | {} | {}/{} | {} | {} |",
                s.name,
                s.source,
                s.passed,
                s.total,
                status,
                s.elapsed.as_millis()
            );
        }
        let passed_sets = self.sets.iter().filter(|s| s.passed_all()).count();
        let total: Duration = self.sets.iter().map(|s| s.elapsed).sum();
        let _ = writeln!(
            out,
            "\n{passed_sets}/{} sets passed in {:.2} s",
            self.sets.len(),
            total.as_secs_f64()
        );
        for s in &self.sets {
            if let Some(e) = &s.error {
                let _ = writeln!(out, "FAIL {} ({}): {e}", s.name, s.file);
            }
            for (id, e) in &s.failures {
                let _ = writeln!(out, "FAIL {} [{id}]: {e}", s.name);
            }
        }
        out
    }
}

/// Runs every set embedded in the binary ([`SETS`]).
pub fn run_embedded() -> KatReport {
    KatReport {
        sets: SETS
            .iter()
            .map(|(file, text)| run_set(file, text))
            .collect(),
    }
}

/// Runs the files named in [`SETS`] from `dir` instead of the embedded copies; a missing or
/// unreadable file fails its set. Errors only when `dir` itself cannot be read.
pub fn run_dir(dir: &Path) -> Result<KatReport, crate::Error> {
    std::fs::read_dir(dir).map_err(|e| crate::Error::io(dir, "read directory", e))?;
    let sets = SETS
        .iter()
        .map(|(file, _)| match read_capped(&dir.join(file)) {
            Ok(text) => run_set(file, &text),
            Err(source) => SetResult {
                file: file.to_string(),
                name: file.to_string(),
                source: String::new(),
                passed: 0,
                total: 0,
                failures: Vec::new(),
                error: Some(KatError::Read {
                    file: file.to_string(),
                    source,
                }),
                elapsed: Duration::ZERO,
            },
        })
        .collect();
    Ok(KatReport { sets })
}

/// Reads a whole vector file, refusing one larger than [`parse::MAX_FILE_LEN`].
fn read_capped(path: &Path) -> std::io::Result<String> {
    let len = std::fs::metadata(path)?.len();
    if len > parse::MAX_FILE_LEN as u64 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{len} bytes is above the {} byte limit",
                parse::MAX_FILE_LEN
            ),
        ));
    }
    std::fs::read_to_string(path)
}

/// Parses and runs one vector file.
pub fn run_set(file: &str, text: &str) -> SetResult {
    let start = Instant::now();
    let mut result = run_set_untimed(file, text);
    result.elapsed = start.elapsed();
    result
}

fn run_set_untimed(file: &str, text: &str) -> SetResult {
    let mut result = SetResult {
        file: file.to_string(),
        name: file.to_string(),
        source: String::new(),
        passed: 0,
        total: 0,
        failures: Vec::new(),
        error: None,
        elapsed: Duration::ZERO,
    };
    let parsed = match parse::parse_file(text) {
        Ok(parsed) => parsed,
        Err(e) => {
            result.error = Some(e);
            return result;
        }
    };
    let header = &parsed.header;
    if let Some(name) = header.opt("name") {
        result.name = name.to_string();
    }
    result.source = header
        .opt("cite")
        .or_else(|| header.opt("source"))
        .unwrap_or_default()
        .to_string();
    let kind = match header.text("kind") {
        Ok(kind) => kind,
        Err(e) => {
            result.error = Some(e);
            return result;
        }
    };
    result.total = parsed.vectors.len();
    for v in &parsed.vectors {
        match run_vector(kind, header, v) {
            Ok(()) => result.passed += 1,
            Err(e) => result.failures.push((v.id(), e)),
        }
    }
    result
}

/// Dispatches one vector to the runner of `kind`.
fn run_vector(kind: &str, header: &Block, v: &Block) -> Result<(), KatError> {
    match kind {
        "sha256" => standard::sha256(v),
        "hmac_sha256" => standard::hmac_sha256(v),
        "aes256_block" => standard::aes256_block(v),
        "aes256_ctr" => standard::aes256_ctr(v),
        "hkdf_sha256" => standard::hkdf_sha256(v),
        "pbkdf2_sha256" => standard::pbkdf2_sha256(v),
        "argon2id" => standard::argon2id(v),
        "x25519" => standard::x25519(v),
        "mlkem768" => standard::mlkem768(v),
        "mldsa65" => signatures::mldsa65(v),
        "ed25519" => signatures::ed25519(v),
        "blake3" => standard::blake3(header, v),
        "bcj" => standard::bcj(header, v),
        other => golden::run_vector(other, header, v),
    }
}
