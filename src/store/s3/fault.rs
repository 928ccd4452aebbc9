//! What can go wrong with one request, and how it is told: a [`Fault`] per attempt (retryable
//! or not), then one [`StoreError`] for the user. S3 error codes become plain words
//! (InvalidAccessKeyId: "the server does not know this access key id"); server and transport
//! text is cleaned and scrubbed of credentials before it is shown; URLs never are.

use super::StoreError;
use super::client::Client;

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
    pub(crate) fn retryable(&self) -> bool {
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
                            // The body's checksum did not match what the store received
                            // (`super::requests`): a byte changed on the way; the bytes
                            // are sent again.
                            | "BadDigest"
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

    /// The S3 error code of a status fault.
    pub(crate) fn code(&self) -> Option<&str> {
        match self {
            Fault::Status { code, .. } => Some(code),
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

impl Client {
    pub(crate) fn transport_fault(&self, e: ureq::Error) -> Fault {
        use std::io::{Error as IoError, ErrorKind as K};
        let t = |what: &'static str, kind: K, msg: String, retry: bool| Fault::Transport {
            what,
            source: IoError::new(kind, msg),
            retry,
        };
        match e {
            // rustls reports certificate and handshake failures through I/O errors: those
            // are not transient, and not a connection that broke off.
            ureq::Error::Io(io)
                if io
                    .get_ref()
                    .is_some_and(|e| e.downcast_ref::<rustls::Error>().is_some()) =>
            {
                t(
                    "TLS failed with",
                    K::Other,
                    self.clean(&io.to_string()),
                    false,
                )
            }
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

pub(super) fn status_text(status: u16) -> &'static str {
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
