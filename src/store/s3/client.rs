//! The requests krypta makes for one object, each signed (SigV4 presigned URL, rusty-s3), sent
//! (ureq, blocking, rustls) and retried when the failure is transient.
//!
//! Retry policy (bounded): up to `max_attempts` attempts per request (5 unless
//! `AWS_MAX_ATTEMPTS` or the profile's `max_attempts` says otherwise), retrying connection
//! failures, broken-off transfers (a ranged GET resumes where the bytes stopped), timeouts,
//! HTTP 5xx, 429 and the throttling codes (SlowDown, Throttling, RequestTimeout, ...). Before
//! retry n the client sleeps a uniformly random time in `[0, min(20 s, 0.5 s × 2^(n-1)))`
//! (exponential backoff with full jitter, as the AWS SDKs' standard mode). Timeouts: 10 s to
//! connect, 30 s without progress on a read or write. Redirects are not followed: S3's only
//! redirect is to another region, which is reported with the region to set.
//!
//! Secrets: a presigned URL holds the key id, the signature and the session token in its
//! query, so no URL is ever put into a message; server text is cleaned and every credential
//! string scrubbed from it before it is shown.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use url::Url;

use super::config::{self, Settings};
use super::{ObjectUrl, StoreError};
use crate::error::{Error, Result};
use crate::store::{Counters, StoreSettings};

/// Validity of each presigned URL (signed just before each attempt).
const PRESIGN_FOR: Duration = Duration::from_secs(15 * 60);
/// Most bytes of an error or XML response read, bytes.
const MAX_XML: u64 = 1 << 20;
/// First backoff ceiling, and the cap.
const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(20);

/// A client for one object (`s3://BUCKET/KEY`), shared by the threads that fetch or upload.
pub struct Client {
    agent: ureq::Agent,
    bucket: Bucket,
    creds: Credentials,
    key: String,
    location: String,
    endpoint: String,
    path_style: bool,
    region: String,
    credentials_from: String,
    key_hint: String,
    max_attempts: u32,
    /// Strings never to show (secret, token, key id).
    secrets: Vec<String>,
    /// What was sent and received.
    pub counters: Arc<Counters>,
}

/// Why one attempt failed, before it is turned into a [`StoreError`].
#[derive(Debug)]
pub(crate) enum Fault {
    /// No usable HTTP exchange (connect, read or write failed, TLS, timeout).
    Transport {
        what: &'static str,
        source: std::io::Error,
        retry: bool,
    },
    /// An HTTP error status with the S3 error code and message.
    Status {
        status: u16,
        code: String,
        message: String,
        region: Option<String>,
    },
    /// A response that cannot be used.
    Protocol(String),
}

impl Fault {
    fn retryable(&self) -> bool {
        match self {
            Fault::Transport { retry, .. } => *retry,
            Fault::Status { status, code, .. } => {
                matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
                    || matches!(
                        code.as_str(),
                        "SlowDown"
                            | "Throttling"
                            | "ThrottlingException"
                            | "RequestThrottled"
                            | "TooManyRequests"
                            | "RequestTimeout"
                            | "InternalError"
                            | "ServiceUnavailable"
                    )
            }
            Fault::Protocol(_) => false,
        }
    }

    /// The HTTP status of a status fault.
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            Fault::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// A transport fault of a body read.
    pub(crate) fn body(source: std::io::Error) -> Fault {
        Fault::Transport {
            what: "the connection broke off with",
            source,
            retry: true,
        }
    }
}

/// HTTP methods krypta uses.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Verb {
    Get,
    Put,
    Post,
    Delete,
}

/// A response: status, the headers krypta reads, and the body to read.
pub(crate) struct Reply {
    pub status: u16,
    pub etag: Option<String>,
    pub content_range: Option<String>,
    pub content_length: Option<u64>,
    pub body: ureq::BodyReader<'static>,
}

impl Client {
    /// A client for `url` with the AWS configuration of this process. Errors: StoreConfig.
    pub fn new(url: &ObjectUrl, store: &StoreSettings) -> Result<Client> {
        let location = url.display();
        let cfg_err = |source: config::ConfigError| Error::StoreConfig {
            location: location.clone().into(),
            source,
        };
        let get = |k: &str| std::env::var(k).ok();
        let s = config::resolve(&get, store.endpoint_url.as_deref()).map_err(cfg_err)?;
        Self::with_settings(url, s)
    }

    /// A client for `url` with the given settings. Errors: StoreConfig.
    pub fn with_settings(url: &ObjectUrl, s: Settings) -> Result<Client> {
        let location = url.display();
        let bad = |name: &'static str, value: &str, problem: &'static str| Error::StoreConfig {
            location: location.clone().into(),
            source: config::ConfigError::BadValue {
                name,
                value: value.to_string(),
                problem,
            },
        };
        let (endpoint_text, custom) = match &s.endpoint {
            Some(e) => (e.clone(), true),
            None => (format!("https://s3.{}.amazonaws.com", s.region), false),
        };
        let mut endpoint: Url = endpoint_text
            .parse()
            .map_err(|_| bad("endpoint URL", &endpoint_text, "not a URL"))?;
        if !matches!(endpoint.scheme(), "http" | "https") || endpoint.host_str().is_none() {
            return Err(bad(
                "endpoint URL",
                &endpoint_text,
                "expected http://HOST[:PORT] or https://HOST[:PORT]",
            ));
        }
        let _ = endpoint.set_username("");
        let _ = endpoint.set_password(None);
        let path_style = s.path_style.unwrap_or(custom || url.bucket.contains('.'));
        let style = if path_style {
            UrlStyle::Path
        } else {
            UrlStyle::VirtualHost
        };
        let bucket = Bucket::new(
            endpoint.clone(),
            style,
            url.bucket.clone(),
            s.region.clone(),
        )
        .map_err(|_| {
            bad(
                "bucket",
                &url.bucket,
                "not a valid bucket name for this endpoint",
            )
        })?;
        let creds = match &s.keys.session_token {
            Some(t) => Credentials::new_with_token(
                s.keys.access_key_id.clone(),
                s.keys.secret_access_key.clone(),
                t.clone(),
            ),
            None => Credentials::new(
                s.keys.access_key_id.clone(),
                s.keys.secret_access_key.clone(),
            ),
        };
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(pem) = &s.ca_bundle {
            let bytes = std::fs::read(pem).map_err(|e| Error::io(pem, "read the CA bundle", e))?;
            let certs: Vec<_> = ureq::tls::parse_pem(&bytes)
                .filter_map(|i| match i {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(bad(
                    "AWS_CA_BUNDLE",
                    &pem.display().to_string(),
                    "no PEM certificate in the file",
                ));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent(format!("krypta/{}", env!("CARGO_PKG_VERSION")))
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_per_read(Some(Duration::from_secs(30)))
            .timeout_per_write(Some(Duration::from_secs(30)))
            .max_idle_connections_per_host(16)
            .tls_config(tls.build())
            .build()
            .into();
        let mut secrets = vec![
            s.keys.secret_access_key.clone(),
            s.keys.access_key_id.clone(),
        ];
        secrets.extend(s.keys.session_token.clone());
        secrets.retain(|x| x.len() >= 4);
        let mut shown = endpoint.clone();
        shown.set_query(None);
        let endpoint = shown.as_str().trim_end_matches('/').to_string();
        Ok(Client {
            agent,
            bucket,
            creds,
            key: url.key.clone(),
            location,
            endpoint,
            path_style,
            region: s.region,
            credentials_from: s.credentials_from,
            key_hint: config::key_hint(&s.keys.access_key_id),
            max_attempts: s.max_attempts,
            secrets,
            counters: Arc::new(Counters::default()),
        })
    }

    /// `s3://BUCKET/KEY`.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The bucket and the object key.
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    /// The object key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The credentials requests are signed with.
    pub(crate) fn creds(&self) -> &Credentials {
        &self.creds
    }

    /// One line for `-v`: endpoint, addressing, region, where credentials came from.
    pub fn describe(&self) -> String {
        format!(
            "{}: endpoint {} ({}), region {}, credentials from {} (key id {})",
            self.location,
            self.endpoint,
            if self.path_style {
                "path-style"
            } else {
                "virtual-host style"
            },
            self.region,
            self.credentials_from,
            self.key_hint
        )
    }

    /// Deletes the object (an object already gone counts as deleted).
    pub(crate) fn delete_object(&self) -> std::result::Result<(), StoreError> {
        self.retry(0, || {
            let a = self.bucket().delete_object(Some(self.creds()), self.key());
            let url = self.sign(&a);
            match self.send(Verb::Delete, &url, &[], None) {
                Ok(r) => self.read_xml(r.body).map(|_| ()),
                Err(Fault::Status { status: 404, .. }) => Ok(()),
                Err(f) => Err(f),
            }
        })
        .map_err(|(f, n)| self.error(f, n))
    }

    /// Attempts per request.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Signs an action for now.
    pub(crate) fn sign<'a>(&self, action: &impl S3Action<'a>) -> Url {
        action.sign(PRESIGN_FOR)
    }

    /// Sends one request; a response of any status is a [`Reply`] for 2xx and a fault
    /// otherwise (the error body is read for its code and message).
    pub(crate) fn send(
        &self,
        verb: Verb,
        url: &Url,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> std::result::Result<Reply, Fault> {
        Counters::add(&self.counters.requests, 1);
        let u = url.as_str();
        let r = match verb {
            Verb::Get | Verb::Delete => {
                let mut b = match verb {
                    Verb::Get => self.agent.get(u),
                    _ => self.agent.delete(u),
                };
                for (k, v) in headers {
                    b = b.header(*k, *v);
                }
                b.call()
            }
            Verb::Put | Verb::Post => {
                let mut b = match verb {
                    Verb::Put => self.agent.put(u),
                    _ => self.agent.post(u),
                };
                for (k, v) in headers {
                    b = b.header(*k, *v);
                }
                let data = body.unwrap_or(&[]);
                Counters::add(&self.counters.bytes_out, data.len() as u64);
                b.send(data)
            }
        };
        let resp = r.map_err(|e| self.transport_fault(e))?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let etag = header("etag");
        let content_range = header("content-range");
        let content_length = header("content-length").and_then(|v| v.parse().ok());
        let region = header("x-amz-bucket-region");
        let body = resp.into_body().into_reader();
        if (200..300).contains(&status) {
            return Ok(Reply {
                status,
                etag,
                content_range,
                content_length,
                body,
            });
        }
        let text = self.read_xml(body).unwrap_or_default();
        let code = xml_field(&text, "Code").unwrap_or_else(|| "-".into());
        let message = xml_field(&text, "Message").unwrap_or_else(|| status_text(status).into());
        let region = region.or_else(|| xml_field(&text, "Region"));
        Err(Fault::Status {
            status,
            code: self.clean(&code),
            message: self.clean(&message),
            region: region.map(|r| self.clean(&r)),
        })
    }

    /// Reads an XML body (at most 1 MiB), counting its bytes.
    pub(crate) fn read_xml(
        &self,
        body: ureq::BodyReader<'static>,
    ) -> std::result::Result<String, Fault> {
        let mut text = String::new();
        let n = body
            .take(MAX_XML)
            .read_to_string(&mut text)
            .map_err(Fault::body)?;
        Counters::add(&self.counters.bytes_in, n as u64);
        Ok(text)
    }

    fn transport_fault(&self, e: ureq::Error) -> Fault {
        use std::io::{Error as IoError, ErrorKind as K};
        let t = |what: &'static str, kind: K, msg: String, retry: bool| Fault::Transport {
            what,
            source: IoError::new(kind, msg),
            retry,
        };
        match e {
            ureq::Error::Io(io) => {
                let what = match io.kind() {
                    K::ConnectionRefused | K::AddrNotAvailable | K::NetworkUnreachable => {
                        "cannot connect to"
                    }
                    K::TimedOut | K::WouldBlock => "no answer from",
                    _ => "the connection broke off with",
                };
                let msg = self.clean(&io.to_string());
                Fault::Transport {
                    what,
                    source: IoError::new(io.kind(), msg),
                    retry: true,
                }
            }
            ureq::Error::Timeout(w) => t(
                "no answer from",
                K::TimedOut,
                format!("timed out ({w})"),
                true,
            ),
            ureq::Error::HostNotFound => {
                t("cannot resolve", K::NotFound, "host not found".into(), true)
            }
            ureq::Error::ConnectionFailed => t(
                "cannot connect to",
                K::ConnectionRefused,
                "connection failed".into(),
                true,
            ),
            ureq::Error::Protocol(p) => t(
                "the connection broke off with",
                K::InvalidData,
                self.clean(&format!("HTTP protocol error: {p}")),
                true,
            ),
            ureq::Error::Tls(m) => t("TLS failed with", K::Other, m.to_string(), false),
            ureq::Error::Rustls(r) => t(
                "TLS failed with",
                K::Other,
                self.clean(&r.to_string()),
                false,
            ),
            // These variants carry the URL (and so the presigned query): never shown.
            ureq::Error::BadUri(_) | ureq::Error::RequireHttpsOnly(_) => {
                Fault::Protocol("the request URL was refused by the HTTP client".into())
            }
            ureq::Error::ConnectProxyFailed(_) | ureq::Error::InvalidProxyUrl => t(
                "cannot connect through the proxy to",
                K::ConnectionRefused,
                "the HTTP(S)_PROXY proxy failed".into(),
                true,
            ),
            other => Fault::Protocol(self.clean(&other.to_string())),
        }
    }

    /// Runs `f` until it succeeds, fails for good, or `attempts` attempts were made (0: the
    /// configured count), sleeping with backoff between attempts.
    pub(crate) fn retry<T>(
        &self,
        attempts: u32,
        mut f: impl FnMut() -> std::result::Result<T, Fault>,
    ) -> std::result::Result<T, (Fault, u32)> {
        let max = if attempts == 0 {
            self.max_attempts
        } else {
            attempts
        };
        let mut n = 1;
        loop {
            match f() {
                Ok(v) => return Ok(v),
                Err(fault) if n < max && fault.retryable() => {
                    std::thread::sleep(backoff(n));
                    Counters::add(&self.counters.retries, 1);
                    n += 1;
                }
                Err(fault) => return Err((fault, n)),
            }
        }
    }

    /// The error to report for a fault after `attempts` attempts.
    pub(crate) fn error(&self, fault: Fault, attempts: u32) -> StoreError {
        match fault {
            Fault::Transport { what, source, .. } => StoreError::Network {
                what,
                endpoint: self.endpoint.clone(),
                source,
                attempts,
            },
            Fault::Protocol(problem) => StoreError::Protocol { problem },
            Fault::Status {
                status,
                code,
                message,
                region,
            } => {
                let denied = |reason: String| StoreError::Denied {
                    code: code.clone(),
                    reason,
                    credentials: self.credentials_from.clone(),
                    endpoint: self.endpoint.clone(),
                };
                match code.as_str() {
                    "NoSuchBucket" => StoreError::NoSuchBucket {
                        endpoint: self.endpoint.clone(),
                    },
                    "NoSuchKey" => StoreError::NoSuchKey,
                    "InvalidAccessKeyId" => {
                        denied("the server does not know this access key id".into())
                    }
                    "SignatureDoesNotMatch" => denied(
                        "the request signature does not match: is the secret access key right?"
                            .into(),
                    ),
                    "ExpiredToken" | "InvalidToken" | "TokenRefreshRequired" => {
                        denied("the session token is expired or invalid".into())
                    }
                    "RequestTimeTooSkewed" => {
                        denied("this machine's clock is too far from the server's".into())
                    }
                    "PermanentRedirect"
                    | "AuthorizationHeaderMalformed"
                    | "IllegalLocationConstraintException"
                        if region.is_some() =>
                    {
                        StoreError::WrongRegion {
                            region: region.unwrap_or_default(),
                            configured: self.region.clone(),
                        }
                    }
                    _ if status == 403 => denied(message),
                    _ if (300..400).contains(&status) && region.is_some() => {
                        StoreError::WrongRegion {
                            region: region.unwrap_or_default(),
                            configured: self.region.clone(),
                        }
                    }
                    _ => StoreError::Server {
                        status,
                        code,
                        message,
                        attempts,
                    },
                }
            }
        }
    }

    /// Server or transport text made safe to show: control characters dropped, at most 300
    /// characters, every credential string replaced.
    pub(crate) fn clean(&self, s: &str) -> String {
        let mut t: String = s
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(300)
            .collect();
        for secret in &self.secrets {
            t = t.replace(secret.as_str(), "<redacted>");
        }
        t.trim().to_string()
    }
}

/// Exponential backoff with full jitter before retry `n` (1-based).
fn backoff(n: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1u32 << (n - 1).min(16))
        .min(BACKOFF_CAP);
    let r = getrandom::u64().unwrap_or(u64::MAX / 2);
    ceiling.mul_f64((r >> 11) as f64 / (1u64 << 53) as f64)
}

/// The text of the first `<NAME>…</NAME>` element (S3 error and result documents are flat).
pub(crate) fn xml_field(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&close)? + start;
    Some(unescape_xml(&xml[start..end]))
}

fn unescape_xml(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#34;", "\"")
        .replace("&amp;", "&")
}

fn status_text(status: u16) -> &'static str {
    match status {
        400 => "bad request",
        403 => "forbidden",
        404 => "not found",
        412 => "precondition failed",
        416 => "range not satisfiable",
        429 => "too many requests",
        500 => "internal server error",
        502 => "bad gateway",
        503 => "service unavailable",
        504 => "gateway timeout",
        _ => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_and_stays_under_its_cap() {
        for _ in 0..200 {
            assert!(backoff(1) < Duration::from_millis(500));
            assert!(backoff(3) < Duration::from_secs(2));
            assert!(backoff(10) < Duration::from_secs(20));
        }
    }

    #[test]
    fn error_documents_give_their_code_and_message() {
        let x = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The key &amp; &quot;x&quot;</Message><Key>a</Key></Error>";
        assert_eq!(xml_field(x, "Code").as_deref(), Some("NoSuchKey"));
        assert_eq!(xml_field(x, "Message").as_deref(), Some("The key & \"x\""));
        assert_eq!(xml_field(x, "Region"), None);
    }

    #[test]
    fn throttling_and_server_errors_are_retried_and_client_errors_are_not() {
        let st = |status: u16, code: &str| Fault::Status {
            status,
            code: code.into(),
            message: String::new(),
            region: None,
        };
        assert!(st(503, "SlowDown").retryable());
        assert!(st(500, "InternalError").retryable());
        assert!(st(429, "-").retryable());
        assert!(st(400, "RequestTimeout").retryable());
        assert!(!st(403, "AccessDenied").retryable());
        assert!(!st(404, "NoSuchKey").retryable());
        assert!(!st(412, "PreconditionFailed").retryable());
    }
}
