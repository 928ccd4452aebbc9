//! The requests that write one object (PutObject, the multipart upload's Create, UploadPart,
//! Complete and Abort) and the two that look at the key before and after (a 1-byte GET,
//! HeadObject), each retried as [`Client::retry`] says; [`super::sink`] decides when to send
//! which.
//!
//! **Every body the store keeps carries its SHA-256** (`x-amz-checksum-sha256`, base64), which
//! the store checks against the bytes it received before it keeps them, answering 400
//! `BadDigest` when they differ; the request is then sent again (a byte changed on the way
//! is a transient fault, [`super::fault`]). Without it, a byte changed between krypta and the
//! store (a faulty NIC or proxy, plain `http://` on a LAN) became part of the object, `c`
//! exited 0, and only `t` or a restore found the damage. The presigned URLs krypta sends
//! sign no payload (UNSIGNED-PAYLOAD), so nothing else covered the bytes. SHA-256 because
//! it is what krypta already computes at SHA-NI speed (`sha2`; about 1.5 GB/s, 5 ms per 8 MiB
//! part, on the upload threads); `Content-MD5` would do on a single PUT but needs an MD5 of
//! its own. A multipart upload declares the algorithm when it is created
//! (`x-amz-checksum-algorithm: SHA256`) and lists each part's checksum in the Complete
//! request, as AWS requires once parts carry checksums (the AWS CLI's `--checksum-algorithm
//! SHA256` does the same); SeaweedFS 4.48 checks both (tested, `tests/s3/integrity.rs`).

use super::StoreError;
use super::client::{Client, Fault, UPLOAD_TOKEN, Verb, xml_field};
use super::sink::{MAX_PARTS, limit_gib};
use base64::Engine;
use rusty_s3::S3Action;
use sha2::Digest;

/// The header carrying a body's SHA-256 (module doc).
const CHECKSUM: &str = "x-amz-checksum-sha256";
/// The header declaring a multipart upload's part checksums (module doc).
const ALGORITHM: &str = "x-amz-checksum-algorithm";

/// The base64 SHA-256 of `body`, as `x-amz-checksum-sha256` carries it.
pub(super) fn checksum(body: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(body))
}

/// An uploaded part: its ETag (the store's answer) and the SHA-256 it was sent with, both
/// named again in CompleteMultipartUpload.
#[derive(Debug, Clone)]
pub(super) struct Part {
    pub etag: String,
    pub sha256: String,
}

/// Escapes the five XML specials of `s` (an ETag is opaque to krypta).
fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The CompleteMultipartUpload body: every part's number, ETag and SHA-256.
pub(super) fn complete_body(parts: &[Part]) -> String {
    let mut x = String::from("<CompleteMultipartUpload>");
    for (i, p) in parts.iter().enumerate() {
        x.push_str(&format!(
            "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag><ChecksumSHA256>{}</ChecksumSHA256></Part>",
            i + 1,
            xml_text(&p.etag),
            xml_text(&p.sha256)
        ));
    }
    x.push_str("</CompleteMultipartUpload>");
    x
}

/// What HEAD says of the object under the key.
pub(super) struct Head {
    pub size: Option<u64>,
    pub token: Option<String>,
}

impl Client {
    /// The key's size and upload token (HeadObject), or None when there is no object.
    pub(super) fn head(&self) -> std::result::Result<Option<Head>, StoreError> {
        self.retry(0, || {
            let a = self.bucket().head_object(Some(self.creds()), self.key());
            let url = self.sign(&a);
            match self.send(Verb::Head, &url, &[], None) {
                Ok(r) => Ok(Some(Head {
                    size: r.content_length,
                    token: r.upload_token,
                })),
                Err(Fault::Status { status: 404, .. }) => Ok(None),
                Err(f) => Err(f),
            }
        })
        .map_err(|(f, n)| self.error(f, n))
    }

    pub(super) fn precondition_or(&self, (f, n): (Fault, u32)) -> StoreError {
        if f.status() == Some(412) {
            StoreError::Taken
        } else {
            self.error(f, n)
        }
    }

    /// Whether the key exists (a 1-byte GET; it also checks bucket and credentials).
    pub(super) fn exists(&self) -> std::result::Result<bool, StoreError> {
        match self.get_range(0, 1, None, None) {
            Ok(_) => Ok(true),
            Err((f, _)) if f.status() == Some(416) => Ok(true),
            Err(e) => match self.error(e.0, e.1) {
                StoreError::NoSuchKey => Ok(false),
                other => Err(other),
            },
        }
    }

    pub(super) fn put_object(
        &self,
        body: &[u8],
        if_none_match: bool,
        token: &str,
    ) -> std::result::Result<(), (Fault, u32)> {
        let sum = checksum(body);
        self.retry(0, || {
            let mut a = self.bucket().put_object(Some(self.creds()), self.key());
            a.headers_mut().insert(UPLOAD_TOKEN, token);
            a.headers_mut().insert(CHECKSUM, sum.as_str());
            let mut hs = vec![(UPLOAD_TOKEN, token), (CHECKSUM, sum.as_str())];
            if if_none_match {
                a.headers_mut().insert("if-none-match", "*");
                hs.push(("if-none-match", "*"));
            }
            let url = self.sign(&a);
            let r = self.send(Verb::Put, &url, &hs, Some(body))?;
            self.read_xml(r.body).map(|_| ())
        })
    }

    pub(super) fn create_upload(&self, token: &str) -> std::result::Result<String, StoreError> {
        self.retry(0, || {
            let mut a = self
                .bucket()
                .create_multipart_upload(Some(self.creds()), self.key());
            a.headers_mut().insert(UPLOAD_TOKEN, token);
            a.headers_mut().insert(ALGORITHM, "SHA256");
            let url = self.sign(&a);
            let hs = [(UPLOAD_TOKEN, token), (ALGORITHM, "SHA256")];
            let r = self.send(Verb::Post, &url, &hs, Some(&[]))?;
            let text = self.read_xml(r.body)?;
            rusty_s3::actions::CreateMultipartUpload::parse_response(&text)
                .map(|r| r.upload_id().to_string())
                .map_err(|_| {
                    Fault::Protocol("no UploadId in the CreateMultipartUpload answer".into())
                })
        })
        .map_err(|(f, n)| self.error(f, n))
    }

    pub(super) fn upload_part(
        &self,
        id: &str,
        n: u32,
        body: &[u8],
    ) -> std::result::Result<Part, StoreError> {
        let number = u16::try_from(n).map_err(|_| StoreError::TooLarge {
            max: MAX_PARTS,
            limit_gib: limit_gib(),
        })?;
        let sum = checksum(body);
        self.retry(0, || {
            let mut a = self
                .bucket()
                .upload_part(Some(self.creds()), self.key(), number, id);
            a.headers_mut().insert(CHECKSUM, sum.as_str());
            let url = self.sign(&a);
            let r = self.send(Verb::Put, &url, &[(CHECKSUM, sum.as_str())], Some(body))?;
            let etag = r.etag.clone();
            self.read_xml(r.body)?;
            let etag =
                etag.ok_or_else(|| Fault::Protocol("no ETag in the UploadPart answer".into()))?;
            Ok(Part {
                etag,
                sha256: sum.clone(),
            })
        })
        .map_err(|(f, n)| self.error(f, n))
    }

    pub(super) fn complete_upload(
        &self,
        id: &str,
        parts: &[Part],
        if_none_match: bool,
    ) -> std::result::Result<(), (Fault, u32)> {
        let body = complete_body(parts);
        self.retry(0, || {
            let etags = || parts.iter().map(|p| p.etag.as_str());
            let mut a = self.bucket().complete_multipart_upload(
                Some(self.creds()),
                self.key(),
                id,
                etags(),
            );
            let mut hs = Vec::new();
            if if_none_match {
                a.headers_mut().insert("if-none-match", "*");
                hs.push(("if-none-match", "*"));
            }
            let url = self.sign(&a);
            let r = self.send(Verb::Post, &url, &hs, Some(body.as_bytes()))?;
            let text = self.read_xml(r.body)?;
            // S3 may answer 200 and then report an error in the body.
            if let Some(code) = xml_field(&text, "Code").filter(|_| text.contains("<Error>")) {
                return Err(Fault::Status {
                    status: if code == "PreconditionFailed" {
                        412
                    } else {
                        500
                    },
                    code: self.clean(&code),
                    message: self.clean(&xml_field(&text, "Message").unwrap_or_default()),
                    region: None,
                });
            }
            Ok(())
        })
    }

    /// Aborts an upload (an upload already gone counts as aborted).
    pub(crate) fn abort_upload(
        &self,
        id: &str,
        attempts: u32,
    ) -> std::result::Result<(), StoreError> {
        self.delete(attempts, || {
            let a = self
                .bucket()
                .abort_multipart_upload(Some(self.creds()), self.key(), id);
            self.sign(&a)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_checksum_is_the_base64_sha256_s3_expects() {
        // The SHA-256 of "hello\n", as `openssl dgst -sha256 -binary | base64` gives it.
        assert_eq!(
            checksum(b"hello\n"),
            "WJG1tSLV3whtD/CxEPvZ0hu0/HFjrzTQgoai6Eb2vgM="
        );
    }

    #[test]
    fn the_complete_body_names_every_part_with_its_etag_and_checksum_in_order() {
        let parts = [
            Part {
                etag: "\"e1\"".into(),
                sha256: "c1=".into(),
            },
            Part {
                etag: "a&b<c>".into(),
                sha256: "c2=".into(),
            },
        ];
        assert_eq!(
            complete_body(&parts),
            "<CompleteMultipartUpload>\
             <Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag><ChecksumSHA256>c1=</ChecksumSHA256></Part>\
             <Part><PartNumber>2</PartNumber><ETag>a&amp;b&lt;c&gt;</ETag><ChecksumSHA256>c2=</ChecksumSHA256></Part>\
             </CompleteMultipartUpload>"
        );
    }
}
