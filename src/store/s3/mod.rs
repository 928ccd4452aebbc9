//! `s3://BUCKET/KEY`: archives as objects on S3-compatible storage (AWS S3, SeaweedFS, MinIO,
//! Ceph RGW, Garage, R2, ...).
//!
//! - [`config`] finds credentials, region and endpoint exactly where the AWS CLI and SDKs look
//!   (environment, then `~/.aws/credentials` and `~/.aws/config` profiles).
//! - [`client`] signs each request (SigV4, presigned, by rusty-s3), sends it (ureq), retries
//!   what is transient and turns every failure into a [`StoreError`] that names the problem;
//!   no message ever carries a URL, key id, secret or session token.
//! - [`S3Source`] reads with ranged GETs pinned to the ETag of the first response, fetching
//!   a few ranges ahead in parallel when the reader says where it is going.
//! - [`S3Sink`] writes a multipart upload (parts uploaded in parallel with compression,
//!   bounded memory), or one PUT for a small archive, conditional on the key being free.
//!
//! Keys are addressed exactly as typed, or refused. An HTTP URL cannot carry every key: a
//! path segment `.` or `..` is resolved away by the URL parser (and its percent-encoded
//! spelling `%2E` is a dot segment too, by the WHATWG URL rules), so `s3://b/../o/k.kry`
//! became `PUT /o/k.kry` — another bucket — and `s3://b/x/../k.kry` the key `k.kry`; empty
//! segments (`//`, a leading `/`) are merged by some servers. So [`ObjectUrl::parse`] refuses
//! a key with a `.`, `..` or empty segment (a usage error naming the URL), and the client
//! checks the same rule again before it signs anything ([`check_key`]): a key other than the
//! one the user typed is never written or read.

mod agents;
pub mod client;
pub mod config;
mod fault;
mod requests;
mod sink;
mod source;
mod watch;

pub use sink::{S3Sink, in_flight_parts, part_size};
pub use source::{AHEAD, CHUNK, MIN_FETCH, OPEN_WINDOW, S3Source};

use crate::error::{Error, Result};

/// Deletes `url` (the bench removes its objects from a user's bucket with it). Errors:
/// StoreConfig, Io ("delete").
pub fn delete(url: &ObjectUrl) -> Result<()> {
    let c = client::Client::new(url, &crate::store::settings())?;
    c.delete_object()
        .map_err(|e| Error::io(c.location(), "delete", e.into_io()))
}

/// The URL scheme of object storage locations.
pub const SCHEME: &str = "s3://";

/// A parsed `s3://BUCKET/KEY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUrl {
    /// Bucket name.
    pub bucket: String,
    /// Object key (may contain `/`).
    pub key: String,
}

impl ObjectUrl {
    /// Parses `s3://BUCKET/KEY`. Errors (Usage): no bucket, no key, a key ending in `/` (a
    /// prefix, not an object), control characters.
    pub fn parse(s: &str) -> Result<ObjectUrl> {
        let rest = s.strip_prefix(SCHEME).unwrap_or(s);
        // The URL as given, escaped: the first refusal is of control characters in it.
        let usage = |why: &str| {
            Error::Usage(format!(
                "{}: {why} (expected s3://BUCKET/KEY)",
                crate::fs::escape_path(s.as_bytes())
            ))
        };
        if s.chars().any(|c| c.is_control()) {
            return Err(usage("control characters in the URL"));
        }
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(usage("no bucket name"));
        }
        // Bucket names are ASCII (S3: lowercase letters, digits, '.' and '-'; older ones
        // uppercase and '_' too): a character beyond, such as a bidirectional control or a
        // zero-width space that would make the name read as another, is refused here.
        if bucket
            .chars()
            .any(|c| !c.is_ascii_graphic() || c == '?' || c == '#')
        {
            return Err(usage(
                "the bucket name has characters a bucket name cannot have",
            ));
        }
        if key.is_empty() {
            return Err(usage("no object key"));
        }
        if key.ends_with('/') {
            return Err(usage("the key ends with '/': give the object's full key"));
        }
        if matches!(bucket, "." | "..") {
            return Err(usage(
                "the bucket name has characters a bucket name cannot have",
            ));
        }
        check_key(key).map_err(|why| usage(&why))?;
        Ok(ObjectUrl {
            bucket: bucket.to_string(),
            key: key.to_string(),
        })
    }

    /// `s3://BUCKET/KEY` as given: the location's name (a path in errors, which show it
    /// escaped). Text for a message is [`ObjectUrl::shown`].
    pub fn display(&self) -> String {
        format!("{SCHEME}{}/{}", self.bucket, self.key)
    }

    /// `s3://BUCKET/KEY` as messages show it: escaped like a file name ([`crate::fs::shown`]),
    /// so a key with a control, bidirectional or zero-width character cannot read as another.
    pub fn shown(&self) -> String {
        crate::fs::escape_path(self.display().as_bytes())
    }
}

/// `s` as one word for a POSIX shell, for the commands messages give: as it is when it has
/// only characters no shell treats specially; in single quotes when it has others and
/// [`crate::fs::escape_path`] leaves it as it is; else (a control, bidirectional or zero-width
/// character) as bash's `$'…'` of the escaped text, whose `\xHH` bash turns back into the
/// bytes, so the command both shows what the key holds and addresses it exactly.
pub(crate) fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-/+=:@,%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return s.to_string();
    }
    let escaped = crate::fs::escape_path(s.as_bytes());
    if escaped == s {
        return format!("'{}'", s.replace('\'', "'\\''"));
    }
    format!("$'{}'", escaped.replace('\'', "\\'"))
}

/// Refuses a key an HTTP URL would not address exactly (module doc): one with a `.` or `..`
/// path segment, which the URL would resolve away (another key, or with path-style URLs
/// another bucket), or an empty one (`a//b`, a leading `/`), which servers may merge. The
/// error says which, without the URL (the caller names it).
pub fn check_key(key: &str) -> std::result::Result<(), String> {
    if key.is_empty() {
        return Err("no object key".into());
    }
    for segment in key.split('/') {
        match segment {
            "" => {
                return Err(
                    "the key has an empty path segment ('//' or a leading '/'), which the request URL cannot keep: krypta addresses keys exactly as given"
                        .into(),
                );
            }
            "." | ".." => {
                return Err(format!(
                    "the key has a '{segment}' path segment, which the request URL would resolve to another key: krypta addresses keys exactly as given"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// What went wrong talking to the store. Shown after `s3://BUCKET/KEY: OP: `; server text is
/// cleaned of control characters, cut to 300 characters and scrubbed of any credential.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The bucket does not exist (NoSuchBucket).
    #[error("the bucket does not exist (NoSuchBucket at {endpoint})")]
    NoSuchBucket {
        /// The endpoint asked.
        endpoint: String,
    },
    /// The key does not exist in the bucket (NoSuchKey).
    #[error("no such object in the bucket (NoSuchKey)")]
    NoSuchKey,
    /// The server refused the credentials or the access.
    #[error(
        "access denied: {reason} ({code}; credentials from {credentials}; endpoint {endpoint})"
    )]
    Denied {
        /// The S3 error code (InvalidAccessKeyId, SignatureDoesNotMatch, AccessDenied, ...).
        code: String,
        /// What it means, in plain words.
        reason: String,
        /// Where the credentials came from (never the credentials).
        credentials: String,
        /// The endpoint asked.
        endpoint: String,
    },
    /// The bucket lives in another region than the one requests were signed for.
    #[error("the bucket is in region {region}, not {configured}: set AWS_REGION={region}")]
    WrongRegion {
        /// The bucket's region (from the server's redirect).
        region: String,
        /// The region krypta used.
        configured: String,
    },
    /// A ranged GET pinned to the first ETag failed its precondition: the object was replaced.
    #[error(
        "the object was replaced while it was being read (its ETag is no longer {etag}); nothing of the new version was used"
    )]
    Changed {
        /// The ETag of the version being read.
        etag: String,
    },
    /// A conditional write found the key taken.
    #[error("the key was created by someone else meanwhile (the conditional write failed)")]
    Taken,
    /// The final request's answer was lost, and HEAD could not tell whether the object under
    /// the key is this run's (`sink` module doc).
    #[error(
        "{lost}, and checking the object failed ({check}): it may be this archive, complete (`krypta t` tells)"
    )]
    Unconfirmed {
        /// What was lost and what the retry found.
        lost: String,
        /// Why the HEAD failed.
        check: String,
    },
    /// The connection could not be made or broke off, on every attempt.
    #[error("{what} {endpoint}: {source} (gave up after {attempts} attempt(s))")]
    Network {
        /// "cannot connect to", "the connection broke off with", "no answer from".
        what: &'static str,
        /// The endpoint.
        endpoint: String,
        /// The last transport error.
        #[source]
        source: std::io::Error,
        /// Attempts made.
        attempts: u32,
    },
    /// The server answered with an error status.
    #[error(
        "the server answered HTTP {status} {code}: {message} (gave up after {attempts} attempt(s))"
    )]
    Server {
        /// HTTP status.
        status: u16,
        /// S3 error code, or "-".
        code: String,
        /// The server's message, cleaned.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// A response krypta cannot use (missing header, bad XML, wrong range).
    #[error("unexpected response from the server: {problem}")]
    Protocol {
        /// What was wrong.
        problem: String,
    },
    /// The archive needs more parts than S3 allows.
    #[error(
        "the archive would need more than {max} parts (S3's limit); the largest object krypta can upload is about {limit_gib} GiB"
    )]
    TooLarge {
        /// Most parts of one upload.
        max: u32,
        /// The size those parts reach, GiB.
        limit_gib: u64,
    },
    /// The OS refused every upload thread (the upload was aborted).
    #[error("cannot start an upload thread: {source}")]
    NoThread {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The upload was already abandoned after an earlier failure.
    #[error("the upload was abandoned after an earlier error: {first}")]
    Abandoned {
        /// The first error, as text.
        first: String,
    },
}

impl StoreError {
    /// The I/O error kind that carries this error (NotFound for a missing key or bucket).
    pub fn kind(&self) -> std::io::ErrorKind {
        use std::io::ErrorKind as K;
        match self {
            StoreError::NoSuchBucket { .. } | StoreError::NoSuchKey => K::NotFound,
            StoreError::Denied { .. } => K::PermissionDenied,
            // A broken pipe to the server must not read as a closed stdout (which ends
            // quietly): it is a reset connection. A body cut off on the way is an aborted
            // connection, not an object that ends early (which a reader of recovery data
            // rebuilds as lost bytes: `store::healing`).
            StoreError::Network { source, .. } => match source.kind() {
                K::BrokenPipe => K::ConnectionReset,
                K::UnexpectedEof => K::ConnectionAborted,
                k => k,
            },
            StoreError::Taken => K::AlreadyExists,
            _ => K::Other,
        }
    }

    /// Wraps this error in an [`std::io::Error`] of its kind.
    pub fn into_io(self) -> std::io::Error {
        super::io_error(self.kind(), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_word_addresses_the_key_and_shows_what_it_holds() {
        assert_eq!(shell_word("backups/2026/a.kry"), "backups/2026/a.kry");
        assert_eq!(shell_word("my file's.kry"), "'my file'\\''s.kry'");
        // U+202E (right-to-left override) and U+200B (zero-width space): bash's $'\xHH'.
        assert_eq!(
            shell_word("a\u{202e}yrk.exe\u{200b}"),
            "$'a\\xe2\\x80\\xaeyrk.exe\\xe2\\x80\\x8b'"
        );
        assert_eq!(shell_word("it's\n"), "$'it\\'s\\n'");
    }

    #[test]
    fn object_urls_need_a_bucket_and_a_full_key() {
        let u = ObjectUrl::parse("s3://my-bkt/backups/2026/a.kry").unwrap();
        assert_eq!(u.bucket, "my-bkt");
        assert_eq!(u.key, "backups/2026/a.kry");
        assert_eq!(u.display(), "s3://my-bkt/backups/2026/a.kry");
        for bad in [
            "s3://",
            "s3:///k",
            "s3://b",
            "s3://b/",
            "s3://b/dir/",
            "s3://b c/k",
            "s3://bkt/../other/esc.kry",
            "s3://bkt/x/../v.kry",
            "s3://bkt/./v.kry",
            "s3://bkt/x/..",
            "s3://bkt/.",
            "s3://bkt//v.kry",
            "s3://bkt/x//v.kry",
            "s3://../x.kry",
            "s3://./x.kry",
        ] {
            match ObjectUrl::parse(bad) {
                Err(Error::Usage(m)) => assert!(m.starts_with(bad), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn keys_with_dots_inside_names_are_addressed_as_given() {
        for good in [
            "a..b.kry",
            ".hidden.kry",
            "x/...kry",
            "x/.../y.kry",
            "v1./a.kry",
        ] {
            let u = ObjectUrl::parse(&format!("s3://bkt/{good}")).unwrap();
            assert_eq!(u.key, good);
        }
        let m = match ObjectUrl::parse("s3://bkt/../other/esc.kry") {
            Err(Error::Usage(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            m,
            "s3://bkt/../other/esc.kry: the key has a '..' path segment, which the request URL would resolve to another key: krypta addresses keys exactly as given (expected s3://BUCKET/KEY)"
        );
    }

    #[test]
    fn a_broken_connection_is_not_a_closed_stdout() {
        let e = StoreError::Network {
            what: "the connection broke off with",
            endpoint: "http://127.0.0.1:1".into(),
            source: std::io::Error::from(std::io::ErrorKind::BrokenPipe),
            attempts: 3,
        };
        assert_eq!(e.into_io().kind(), std::io::ErrorKind::ConnectionReset);
    }

    #[test]
    fn a_body_cut_off_by_the_network_is_not_an_object_that_ends_early() {
        let e = StoreError::Network {
            what: "the connection broke off with",
            endpoint: "http://127.0.0.1:1".into(),
            source: std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            attempts: 3,
        };
        assert_eq!(e.into_io().kind(), std::io::ErrorKind::ConnectionAborted);
    }

    #[test]
    fn store_errors_carry_the_io_kind_of_the_problem() {
        assert_eq!(
            StoreError::NoSuchKey.into_io().kind(),
            std::io::ErrorKind::NotFound
        );
        let e = StoreError::Changed {
            etag: "\"abc\"".into(),
        }
        .into_io();
        assert_eq!(
            e.to_string(),
            "the object was replaced while it was being read (its ETag is no longer \"abc\"); nothing of the new version was used"
        );
    }
}
