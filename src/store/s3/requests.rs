//! The requests that write one object (PutObject, the multipart upload's Create, UploadPart,
//! Complete and Abort) and the two that look at the key before and after (a 1-byte GET,
//! HeadObject), each retried as [`Client::retry`] says; [`super::sink`] decides when to send
//! which.

use super::StoreError;
use super::client::{Client, Fault, UPLOAD_TOKEN, Verb, xml_field};
use super::sink::{MAX_PARTS, limit_gib};
use rusty_s3::S3Action;

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
        self.retry(0, || {
            let mut a = self.bucket().put_object(Some(self.creds()), self.key());
            a.headers_mut().insert(UPLOAD_TOKEN, token);
            let mut hs = vec![(UPLOAD_TOKEN, token)];
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
            let url = self.sign(&a);
            let r = self.send(Verb::Post, &url, &[(UPLOAD_TOKEN, token)], Some(&[]))?;
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
    ) -> std::result::Result<String, StoreError> {
        let number = u16::try_from(n).map_err(|_| StoreError::TooLarge {
            max: MAX_PARTS,
            limit_gib: limit_gib(),
        })?;
        self.retry(0, || {
            let a = self
                .bucket()
                .upload_part(Some(self.creds()), self.key(), number, id);
            let url = self.sign(&a);
            let r = self.send(Verb::Put, &url, &[], Some(body))?;
            let etag = r.etag.clone();
            self.read_xml(r.body)?;
            etag.ok_or_else(|| Fault::Protocol("no ETag in the UploadPart answer".into()))
        })
        .map_err(|(f, n)| self.error(f, n))
    }

    pub(super) fn complete_upload(
        &self,
        id: &str,
        etags: &[String],
        if_none_match: bool,
    ) -> std::result::Result<(), (Fault, u32)> {
        self.retry(0, || {
            let parts = || etags.iter().map(String::as_str);
            let mut a = self.bucket().complete_multipart_upload(
                Some(self.creds()),
                self.key(),
                id,
                parts(),
            );
            let mut hs = Vec::new();
            if if_none_match {
                a.headers_mut().insert("if-none-match", "*");
                hs.push(("if-none-match", "*"));
            }
            let url = self.sign(&a);
            let body = self
                .bucket()
                .complete_multipart_upload(Some(self.creds()), self.key(), id, parts())
                .body();
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
