//! The requests krypta makes for one object, each signed (SigV4 presigned URL, rusty-s3), sent
//! (ureq, blocking, rustls) and retried when the failure is transient.
//!
//! Retry policy (bounded): up to `max_attempts` attempts per request (5 unless
//! `AWS_MAX_ATTEMPTS` or the profile's `max_attempts` says otherwise), retrying connection
//! failures, broken-off transfers (a ranged GET resumes where the bytes stopped), timeouts,
//! HTTP 5xx, 429 and the throttling codes (SlowDown, Throttling, RequestTimeout, ...). Before
//! retry n the client sleeps a uniformly random time in `[0, min(20 s, 0.5 s × 2^(n-1)))`
//! (exponential backoff with full jitter, as the AWS SDKs' standard mode). Timeouts: 10 s to
//! connect, 30 s without progress on a read or write, where a request body's next 128 KiB
//! must go out within 30 s ([`super::watch`]: a write that moves a few bytes does not restart
//! the wait).
//! Redirects are not followed: S3's only redirect is to another region, which is reported
//! with the region to set.
//!
//! Secrets: a presigned URL holds the key id, the signature and the session token in its
//! query, so no URL is ever put into a message; server text is cleaned and every credential
//! string scrubbed from it before it is shown.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use url::Url;

use super::ObjectUrl;
use super::StoreError;
use super::agents::{Agents, Lease};
use super::config::{self, Settings};
use super::fault::status_text;
pub(crate) use super::fault::{Fault, xml_field};
use super::watch;
use crate::error::{Error, Result};
use crate::store::{Counters, StoreSettings};

/// Validity of each presigned URL (signed just before each attempt).
const PRESIGN_FOR: Duration = Duration::from_secs(15 * 60);
/// Most bytes of an error or XML response read, bytes.
const MAX_XML: u64 = 1 << 20;
/// An attempt ends when its connection made no progress for this long (module doc).
const TIMEOUT: Duration = Duration::from_secs(30);
/// First backoff ceiling, and the cap.
const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(20);

/// A client for one object (`s3://BUCKET/KEY`), shared by the threads that fetch or upload.
pub struct Client {
    /// The run's agents of this endpoint ([`super::agents`]): one shared by requests without a
    /// body, one leased per attempt of a request with one ([`watch`]).
    agents: Arc<Agents>,
    /// Without progress this long, an attempt ends ([`TIMEOUT`]; shorter in tests).
    timeout: Duration,
    bucket: Bucket,
    creds: Credentials,
    key: String,
    location: String,
    pub(super) endpoint: String,
    path_style: bool,
    pub(super) region: String,
    pub(super) credentials_from: String,
    key_hint: String,
    max_attempts: u32,
    /// Strings never to show (secret, token, key id).
    pub(super) secrets: Vec<String>,
    /// What was sent and received.
    pub counters: Arc<Counters>,
    /// A request ran out of attempts on retryable faults: no more retries ([`retry_with`]).
    gave_up: AtomicBool,
}

/// HTTP methods krypta uses.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Verb {
    Get,
    Head,
    Put,
    Post,
    Delete,
}

/// The user-metadata header that carries a write's upload token (the `sink` module doc).
pub(crate) const UPLOAD_TOKEN: &str = "x-amz-meta-krypta-upload";

/// A response: status, the headers krypta reads, and the body to read.
pub(crate) struct Reply {
    pub status: u16,
    pub etag: Option<String>,
    pub content_range: Option<String>,
    pub content_length: Option<u64>,
    /// The object's upload token ([`UPLOAD_TOKEN`]), on a HEAD or GET of one krypta wrote.
    pub upload_token: Option<String>,
    pub body: ureq::BodyReader<'static>,
    /// The agent the request was sent on, when leased ([`super::agents`]): returned once the body
    /// (declared before it, so dropped first) is done with.
    _lease: Option<Lease>,
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
        let shown = url.shown();
        // ObjectUrl's fields are public: the rule of `ObjectUrl::parse` is checked again here,
        // where the request URLs are made (the module doc of `s3`).
        super::check_key(&url.key)
            .map_err(|why| Error::Usage(format!("{shown}: {why} (expected s3://BUCKET/KEY)")))?;
        if matches!(url.bucket.as_str(), "" | "." | "..")
            || url.bucket.contains('/')
            || url.bucket.chars().any(|c| !c.is_ascii_graphic())
        {
            return Err(Error::Usage(format!(
                "{shown}: the bucket name has characters a bucket name cannot have (expected s3://BUCKET/KEY)"
            )));
        }
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
                    &crate::fs::shown(pem),
                    "no PEM certificate in the file",
                ));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
        }
        // One set of agents per endpoint and CA bundle for the run (`super::agents`).
        let agents = Agents::for_endpoint(
            format!(
                "{endpoint}\0{}",
                s.ca_bundle
                    .as_ref()
                    .map(|p| crate::fs::shown(p))
                    .unwrap_or_default()
            ),
            http_config(tls.build(), TIMEOUT),
        );
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
            agents,
            timeout: TIMEOUT,
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
            gave_up: AtomicBool::new(false),
        })
    }

    /// `s3://BUCKET/KEY` as given: for errors' paths, which are shown escaped.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// `s3://BUCKET/KEY` as messages show it, escaped ([`ObjectUrl::shown`]).
    pub fn shown(&self) -> String {
        crate::fs::escape_path(self.location.as_bytes())
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
            self.shown(),
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
        self.delete(0, || {
            self.sign(&self.bucket().delete_object(Some(self.creds()), self.key()))
        })
    }

    /// Sends the DELETE whose signed URL `url` makes, retried (`attempts`, 0: the default);
    /// a 404 (already gone) counts as done.
    pub(super) fn delete(
        &self,
        attempts: u32,
        url: impl Fn() -> Url,
    ) -> std::result::Result<(), StoreError> {
        self.retry(attempts, || {
            match self.send(Verb::Delete, &url(), &[], None) {
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
        let mut lease = None;
        let r = match verb {
            Verb::Get | Verb::Head | Verb::Delete => {
                let a = self.agents.shared();
                let mut b = match verb {
                    Verb::Get => a.get(u),
                    Verb::Head => a.head(u),
                    _ => a.delete(u),
                };
                for (k, v) in headers {
                    b = b.header(*k, *v);
                }
                b.call()
            }
            Verb::Put | Verb::Post => {
                let data = body.unwrap_or(&[]);
                Counters::add(&self.counters.bytes_out, data.len() as u64);
                let req = |a: &ureq::Agent| {
                    let mut b = match verb {
                        Verb::Put => a.put(u),
                        _ => a.post(u),
                    };
                    for (k, v) in headers {
                        b = b.header(*k, *v);
                    }
                    b
                };
                if data.is_empty() {
                    req(self.agents.shared()).send(data)
                } else {
                    let l = self.agents.lease();
                    match watch::send(l.agent(), self.timeout, req, data) {
                        (r, watch::Stall::No) => {
                            lease = Some(l);
                            r
                        }
                        // Shut down by the watchdog: the agent is not used again.
                        (Err(_), stall) => {
                            l.spoil();
                            return Err(self.stalled(stall));
                        }
                        (r, _) => {
                            l.spoil();
                            r
                        }
                    }
                }
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
        let upload_token = header(UPLOAD_TOKEN);
        let region = header("x-amz-bucket-region");
        let body = resp.into_body().into_reader();
        if (200..300).contains(&status) {
            return Ok(Reply {
                status,
                etag,
                content_range,
                content_length,
                upload_token,
                body,
                _lease: lease,
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

    /// The fault of an attempt the watchdog ended ([`watch`]): its body stopped moving for the
    /// timeout, or, its last piece handed over, that piece's write and the answer took over two
    /// timeouts.
    fn stalled(&self, stall: watch::Stall) -> Fault {
        let t = self.timeout.as_secs_f64();
        let why = match stall {
            watch::Stall::Answer => format!(
                "timed out (the end of the request body and the answer took over {} s)",
                2.0 * t
            ),
            _ => format!("timed out (the request body did not move for {t} s)"),
        };
        Fault::Transport {
            what: "no answer from",
            source: std::io::Error::new(std::io::ErrorKind::TimedOut, why),
            retry: true,
        }
    }

    /// The same client with `timeout` for [`TIMEOUT`] (tests: a stall in seconds, not minutes).
    #[cfg(test)]
    pub(super) fn with_timeout(mut self, timeout: Duration) -> Client {
        let http = http_config(self.agents.config().tls_config().clone(), timeout);
        self.agents = Agents::new(http);
        self.timeout = timeout;
        self
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

    /// Runs `f` until it succeeds, fails for good, or `attempts` attempts were made (0: the
    /// configured count), sleeping with backoff between attempts; one attempt only once
    /// the store was given up on ([`retry_with`]).
    pub(crate) fn retry<T>(
        &self,
        attempts: u32,
        f: impl FnMut() -> std::result::Result<T, Fault>,
    ) -> std::result::Result<T, (Fault, u32)> {
        let max = if attempts == 0 {
            self.max_attempts
        } else {
            attempts
        };
        retry_with(max, &self.gave_up, &self.counters, f)
    }
}

/// The HTTP client's configuration: no redirects, every status an answer, and the timeouts.
fn http_config(tls: ureq::tls::TlsConfig, timeout: Duration) -> ureq::config::Config {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .user_agent(format!("krypta/{}", env!("CARGO_PKG_VERSION")))
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_per_read(Some(timeout))
        .timeout_per_write(Some(timeout))
        .output_buffer_size(watch::PIECE)
        .max_idle_connections_per_host(16)
        .tls_config(tls)
        .build()
}

/// [`Client::retry`]'s loop. `gave_up` is the client's: set when a request ran out of
/// attempts on faults that retrying should cure (timeouts, refused connections, 5xx,
/// throttling: the store is stalled, gone or overloaded). Every request of the client that
/// starts after that gets one attempt. (Requests already retrying on other threads go on:
/// they wait at the same time as the one that gave up, not after it, and the error a run
/// reports keeps saying the attempts its policy gives.)
///
/// Why: what follows a request that failed so is cleanup (aborting the multipart upload, a
/// HEAD that settles whether the final request's lost answer wrote the object) or the rest
/// of a transfer that has failed already, and each waited the whole policy again: with the
/// store stopped (SIGSTOP) `c` to it exited after 623 s (measured: the final request, the
/// HEAD and the abort, each 5 attempts of 30 s, plus the parts in flight). The cleanup that
/// cannot be done is named with its command (`sink::not_aborted`), as before.
fn retry_with<T>(
    max: u32,
    gave_up: &AtomicBool,
    counters: &Counters,
    mut f: impl FnMut() -> std::result::Result<T, Fault>,
) -> std::result::Result<T, (Fault, u32)> {
    let max = if gave_up.load(Ordering::Relaxed) {
        1
    } else {
        max
    };
    let mut n = 1;
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(fault) if n < max && fault.retryable() => {
                std::thread::sleep(backoff(n));
                Counters::add(&counters.retries, 1);
                n += 1;
            }
            Err(fault) => {
                if fault.retryable() {
                    gave_up.store(true, Ordering::Relaxed);
                }
                return Err((fault, n));
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn slow_down() -> Fault {
        Fault::Status {
            status: 503,
            code: "SlowDown".into(),
            message: String::new(),
            region: None,
        }
    }

    #[test]
    fn once_a_request_ran_out_of_attempts_no_request_is_retried() {
        let (gave_up, counters) = (AtomicBool::new(false), Counters::default());
        let mut calls = 0;
        // A fault that is not retryable ends at once, and does not give the store up.
        let r: std::result::Result<(), _> = retry_with(3, &gave_up, &counters, || {
            calls += 1;
            Err(Fault::Protocol("bad answer".into()))
        });
        assert_eq!((r.unwrap_err().1, calls), (1, 1));
        assert!(!gave_up.load(Ordering::Relaxed));
        // Retryable: 3 attempts, 2 retries counted, then the store is given up on.
        calls = 0;
        let r: std::result::Result<(), _> = retry_with(3, &gave_up, &counters, || {
            calls += 1;
            Err(slow_down())
        });
        assert_eq!((r.unwrap_err().1, calls), (3, 3));
        assert_eq!(counters.retries.load(Ordering::Relaxed), 2);
        assert!(gave_up.load(Ordering::Relaxed));
        // The next request (an abort, a HEAD) gets one attempt.
        calls = 0;
        let r: std::result::Result<(), _> = retry_with(5, &gave_up, &counters, || {
            calls += 1;
            Err(slow_down())
        });
        assert_eq!((r.unwrap_err().1, calls), (1, 1));
        assert_eq!(counters.retries.load(Ordering::Relaxed), 2);
        // A request that succeeds still does.
        assert_eq!(retry_with(5, &gave_up, &counters, || Ok(7)).unwrap(), 7);
    }

    #[test]
    fn backoff_grows_exponentially_and_stays_under_its_cap() {
        for _ in 0..200 {
            assert!(backoff(1) < Duration::from_millis(500));
            assert!(backoff(3) < Duration::from_secs(2));
            assert!(backoff(10) < Duration::from_secs(20));
        }
    }
}
