//! Writing an object: one PUT for a small archive, else a multipart upload streamed with
//! bounded memory.
//!
//! Parts: the archive bytes fill a part buffer; a full part goes to one of the upload threads
//! while compression goes on. Part `n` (1-based) is `8 MiB × 2^((n-1) / 1000)` bytes (8 MiB
//! for the first 1000 parts, then doubling every 1000), so S3's 10,000-part limit is reached
//! only at about 7.8 TiB. At most `clamp(64 MiB / part, 1, 4)` parts are in flight, so upload
//! memory is at most (in flight + 1) × part size: 40 MiB for archives up to 7.8 GiB, 80 MiB up
//! to 23 GiB, 96 MiB up to 55 GiB, then 2 × part size. An archive smaller than one part is
//! sent with one PUT at the end.
//!
//! Never replacing without `-f`: creating the sink probes the key (a 1-byte GET, which also
//! checks the bucket and the credentials before any work) and refuses an existing object;
//! the final PutObject / CompleteMultipartUpload carries `If-None-Match: *`, so an object
//! created meanwhile by another writer is not replaced either (the store answers 412; the
//! upload is then aborted and the run fails with "already exists"; SeaweedFS 4.48 does this on
//! both calls, as AWS does since August 2024). Stores that ignore the header have only the
//! probe: a writer that creates the key between the probe and the end of the run is
//! overwritten. A second probe just before completing was left out on purpose: it would only
//! narrow that window, and it would hide whether the store honours the header, which
//! `an_object_created_during_the_upload_is_not_replaced` checks.
//!
//! A lost answer: the store can carry out the final request and the answer be lost (the
//! connection drops after the object was committed). The retry then finds the key taken (412,
//! the conditional write), or for CompleteMultipartUpload the upload gone (NoSuchUpload, also
//! with `-f`) or, on AWS, a 409 ConditionalRequestConflict, although the object there is this
//! run's, complete. So every write carries a random 128-bit upload token in user metadata
//! (`x-amz-meta-krypta-upload: <32 hex digits>`, on the PutObject and on
//! CreateMultipartUpload, whose metadata the completed object keeps), and when a final request
//! that took more than one attempt ends in one of those answers, a HEAD of the key decides: an
//! object with this run's token and the size sent is this run's, and the write succeeded (`-v`
//! says the answer was lost and what HEAD showed); any other object, or none, leaves the error
//! as it was ("already exists" for a 412). Such an answer to a first attempt is not checked:
//! nothing of this run can be there. The token is fresh per run and only this run's requests
//! carry it, so another writer's object cannot match; the size is a cheap second check. The
//! ETag is not compared: a PutObject's ETag is the body's MD5 only without SSE-KMS/SSE-C (and
//! krypta computes no MD5), and multipart ETags take different forms on different stores, so
//! it would only add guesses to what the token settles. If the HEAD fails, the run fails with
//! an I/O error saying the object may be this archive (`krypta t` tells). A store that drops
//! user metadata keeps the old behaviour (the retry's error is reported). SeaweedFS 4.48 keeps
//! the metadata, answers a retried conditional PutObject or CompleteMultipartUpload with 412,
//! and a retried unconditional CompleteMultipartUpload with 200; a retried unconditional
//! PutObject (`-f`) just writes the same bytes again, on every store.
//!
//! Aborting: an error, or dropping the unfinished sink, stops the upload threads, waits for
//! the parts in flight, then sends AbortMultipartUpload, so no object and no unfinished upload
//! is left. SIGINT/SIGTERM abort it through [`crate::fs::cleanup`]. When the store cannot be
//! reached to abort (it went away), the upload id is reported with the command that removes it.

use std::io::{self, Write};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::client::{Client, Fault};
use super::{ObjectUrl, StoreError};
use crate::error::{Error, Result};
use crate::fs::cleanup;
use crate::store::{Counters, Sink, StoreSettings};

/// Bytes of the first 1000 parts (8 MiB, the AWS CLI's default part size).
pub const FIRST_PART: usize = 8 << 20;
/// Parts of one size before the size doubles.
pub const PARTS_PER_SIZE: u32 = 1000;
/// Most parts of one upload (S3's limit).
pub const MAX_PARTS: u32 = 10_000;
/// Most part bytes in flight (the in-flight count shrinks as parts grow), bytes.
pub const IN_FLIGHT_BUDGET: usize = 64 << 20;
/// Most parts in flight.
pub const MAX_IN_FLIGHT: usize = 4;

/// The warning for upload `id` that could not be aborted (`e`): its id and the command that
/// removes it.
fn not_aborted(client: &Client, id: &str, e: &StoreError) -> String {
    format!(
        "{}: the unfinished multipart upload {id} could not be aborted ({e}); remove it with {} (a lifecycle rule AbortIncompleteMultipartUpload does it too)",
        client.shown(),
        abort_command(client, id)
    )
}

/// The command that aborts upload `id`, in backquotes, with the key quoted for a POSIX shell
/// ([`super::shell_word`]: a key with a character `shown` escapes is given as `$'…'`).
fn abort_command(client: &Client, id: &str) -> String {
    format!(
        "`aws s3api abort-multipart-upload --bucket {} --key {} --upload-id {}`",
        super::shell_word(client.bucket().name()),
        super::shell_word(client.key()),
        super::shell_word(id)
    )
}

/// Size of part `n` (1-based), bytes.
pub fn part_size(n: u32) -> usize {
    FIRST_PART << (n.saturating_sub(1) / PARTS_PER_SIZE).min(9)
}

/// Parts uploaded at once while parts are `part` bytes.
pub fn in_flight_parts(part: usize) -> usize {
    (IN_FLIGHT_BUDGET / part.max(1)).clamp(1, MAX_IN_FLIGHT)
}

/// A new object being written. See the module documentation.
pub struct S3Sink {
    client: Arc<Client>,
    force: bool,
    buf: Vec<u8>,
    /// Number of the part `buf` fills.
    part: u32,
    upload: Option<Upload>,
    failed: Option<String>,
    done: bool,
    warnings: Arc<Mutex<Vec<String>>>,
    details: Arc<Mutex<Vec<String>>>,
    /// This write's upload token (32 hex digits), sent as [`UPLOAD_TOKEN`].
    token: String,
    /// Archive bytes written, so far.
    sent: u64,
}

/// The final request of a write.
#[derive(Clone, Copy)]
enum Final {
    Put,
    Complete,
}

impl Final {
    fn name(self) -> &'static str {
        match self {
            Final::Put => "PutObject",
            Final::Complete => "CompleteMultipartUpload",
        }
    }
}

struct Upload {
    id: String,
    cleanup_id: u64,
    jobs: Option<Sender<(u32, Vec<u8>)>>,
    results: Receiver<(u32, std::result::Result<super::requests::Part, StoreError>)>,
    workers: Vec<JoinHandle<()>>,
    outstanding: usize,
    parts: Vec<Option<super::requests::Part>>,
}

/// The largest archive the part sizes allow, GiB.
pub(super) fn limit_gib() -> u64 {
    (1..=MAX_PARTS).map(|n| part_size(n) as u64).sum::<u64>() >> 30
}

/// [`Error::Exists`] when the client's object exists (one HEAD request).
fn refuse_existing_with(client: &Client) -> Result<()> {
    let exists = client
        .exists()
        .map_err(|e| Error::io(client.location(), "create", e.into_io()))?;
    if exists {
        return Err(Error::Exists {
            path: client.location().into(),
        });
    }
    Ok(())
}

impl S3Sink {
    /// An existing `s3://BUCKET/KEY` refused ([`Error::Exists`]) with one HEAD request, before
    /// `c` or `rekey` reads anything ([`crate::store::refuse_existing`]).
    /// Errors: Exists, Io ("check"), StoreConfig.
    pub fn refuse_existing(url: &ObjectUrl, store: &StoreSettings) -> Result<()> {
        refuse_existing_with(&Client::new(url, store)?)
    }

    /// Prepares `s3://BUCKET/KEY` for a new archive: checks the credentials and the bucket,
    /// and (unless `force`) that the key is free. Errors: Exists, Io ("check"), StoreConfig.
    pub fn create(url: &ObjectUrl, store: &StoreSettings, force: bool) -> Result<S3Sink> {
        let client = Arc::new(Client::new(url, store)?);
        let mut t = [0u8; 16];
        getrandom::fill(&mut t).map_err(|e| {
            Error::io(
                client.location(),
                "create",
                io::Error::other(format!("no randomness for the upload token: {e}")),
            )
        })?;
        let token = t.iter().map(|b| format!("{b:02x}")).collect();
        if !force {
            refuse_existing_with(&client)?;
        }
        Ok(S3Sink {
            client,
            force,
            buf: Vec::new(),
            part: 1,
            upload: None,
            failed: None,
            done: false,
            warnings: Arc::new(Mutex::new(Vec::new())),
            details: Arc::new(Mutex::new(Vec::new())),
            token,
            sent: 0,
        })
    }

    fn fail(&mut self, e: StoreError) -> io::Error {
        if self.failed.is_none() {
            self.failed = Some(e.to_string());
        }
        e.into_io()
    }

    fn start_upload(&mut self) -> std::result::Result<(), StoreError> {
        let id = self.client.create_upload(&self.token)?;
        let client = Arc::clone(&self.client);
        let abort_id = id.clone();
        // At SIGINT/SIGTERM: two quick attempts, then the process exits; an upload that
        // could not be aborted is named with the command that removes it, as on the error
        // path (`Sink::abort`).
        let note = format!(
            "krypta: warning: {}: interrupted again before the unfinished multipart upload {id} was aborted; remove it with {} (a lifecycle rule AbortIncompleteMultipartUpload does it too)",
            self.client.shown(),
            abort_command(&self.client, &id)
        );
        let cleanup_id = cleanup::register_action(
            Box::new(move || {
                if let Err(e) = client.abort_upload(&abort_id, 2) {
                    crate::to_stderr!("krypta: warning: {}", not_aborted(&client, &abort_id, &e));
                }
            }),
            note,
        );
        let (jobs, job_rx) = channel::<(u32, Vec<u8>)>();
        let (res_tx, results) = channel();
        let job_rx = Arc::new(Mutex::new(job_rx));
        // Upload threads the OS refuses are done without (fewer parts in flight); with none
        // at all the upload is aborted and the refusal is the error.
        let mut refused = None;
        let workers: Vec<JoinHandle<()>> = (0..MAX_IN_FLIGHT)
            .filter_map(|_| {
                let (client, id) = (Arc::clone(&self.client), id.clone());
                let (job_rx, res_tx) = (Arc::clone(&job_rx), res_tx.clone());
                let spawned = std::thread::Builder::new().spawn(move || {
                    loop {
                        let job = match job_rx.lock().map(|r| r.recv()) {
                            Ok(Ok(j)) => j,
                            _ => return,
                        };
                        let (n, body) = job;
                        let r = client.upload_part(&id, n, &body);
                        drop(body);
                        if res_tx.send((n, r)).is_err() {
                            return;
                        }
                    }
                });
                spawned.map_err(|e| refused = Some(e)).ok()
            })
            .collect();
        let none = workers.is_empty();
        self.upload = Some(Upload {
            id,
            cleanup_id,
            jobs: Some(jobs),
            results,
            workers,
            outstanding: 0,
            parts: Vec::new(),
        });
        if let (true, Some(source)) = (none, refused) {
            self.abort_upload();
            return Err(StoreError::NoThread { source });
        }
        Ok(())
    }

    /// Records finished parts; waits while `limit` parts are in flight.
    fn collect(&mut self, limit: usize) -> std::result::Result<(), StoreError> {
        let Some(u) = self.upload.as_mut() else {
            return Ok(());
        };
        let mut first_err = None;
        loop {
            let got = if u.outstanding >= limit && u.outstanding > 0 {
                u.results.recv().ok()
            } else {
                u.results.try_recv().ok()
            };
            let Some((n, r)) = got else { break };
            u.outstanding -= 1;
            match r {
                Ok(part) => {
                    let i = n as usize - 1;
                    if u.parts.len() <= i {
                        u.parts.resize(i + 1, None);
                    }
                    u.parts[i] = Some(part);
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Hands the full part buffer to the upload threads.
    fn ship(&mut self) -> std::result::Result<(), StoreError> {
        if self.upload.is_none() {
            self.start_upload()?;
        }
        let size = part_size(self.part);
        self.collect(in_flight_parts(size))?;
        let body = std::mem::take(&mut self.buf);
        let u = self.upload.as_mut().expect("started");
        let sent = u.jobs.as_ref().map(|j| j.send((self.part, body)).is_ok());
        if sent != Some(true) {
            return Err(StoreError::Protocol {
                problem: "the upload threads stopped".into(),
            });
        }
        u.outstanding += 1;
        self.part += 1;
        Ok(())
    }

    /// Stops the upload threads (after the parts in flight) and aborts the upload.
    fn abort_upload(&mut self) {
        let Some(mut u) = self.upload.take() else {
            return;
        };
        u.jobs = None;
        for w in u.workers.drain(..) {
            let _ = w.join();
        }
        if let Err(e) = self.client.abort_upload(&u.id, 0)
            && let Ok(mut w) = self.warnings.lock()
        {
            w.push(not_aborted(&self.client, &u.id, &e));
        }
        cleanup::unregister(u.cleanup_id);
    }

    fn finish_inner(&mut self) -> std::result::Result<(), StoreError> {
        if let Some(f) = &self.failed {
            return Err(StoreError::Abandoned { first: f.clone() });
        }
        let conditional = !self.force;
        if self.upload.is_none() {
            let body = std::mem::take(&mut self.buf);
            return match self.client.put_object(&body, conditional, &self.token) {
                Ok(()) => Ok(()),
                Err(e) => self.settle(Final::Put, e),
            };
        }
        if !self.buf.is_empty() {
            self.ship()?;
        }
        self.collect(1)?;
        let u = self.upload.as_ref().expect("started");
        let parts: Vec<super::requests::Part> = u
            .parts
            .iter()
            .enumerate()
            .map(|(i, e)| {
                e.clone().ok_or_else(|| StoreError::Protocol {
                    problem: format!("part {} has no ETag", i + 1),
                })
            })
            .collect::<std::result::Result<_, _>>()?;
        match self.client.complete_upload(&u.id, &parts, conditional) {
            Ok(()) => Ok(()),
            Err(e) => self.settle(Final::Complete, e),
        }
    }

    /// After the final request failed: Ok when an earlier attempt wrote this run's object and
    /// only its answer was lost (module doc), else the error to report.
    fn settle(
        &self,
        call: Final,
        (fault, attempts): (Fault, u32),
    ) -> std::result::Result<(), StoreError> {
        let found = match (call, fault.status(), fault.code()) {
            (_, Some(412), _) => "the key taken (HTTP 412)",
            (Final::Complete, _, Some("NoSuchUpload")) => "the upload gone (NoSuchUpload)",
            // AWS's answer to a conditional write that overlaps another on the same key (here
            // possibly the lost attempt itself); the upload is gone after it.
            (_, Some(409), Some("ConditionalRequestConflict")) => {
                "a conflicting write (HTTP 409 ConditionalRequestConflict)"
            }
            _ => return Err(self.client.precondition_or((fault, attempts))),
        };
        if attempts < 2 {
            return Err(self.client.precondition_or((fault, attempts)));
        }
        let what = format!(
            "the answer to {} was lost and the retry found {found}",
            call.name()
        );
        let head = match self.client.head() {
            Ok(h) => h,
            Err(e) => {
                return Err(StoreError::Unconfirmed {
                    lost: what,
                    check: e.to_string(),
                });
            }
        };
        let lost = format!("{}: {what}", self.client.shown());
        let ours = head.as_ref().is_some_and(|h| {
            h.token.as_deref() == Some(self.token.as_str()) && h.size == Some(self.sent)
        });
        let note = if ours {
            format!(
                "{lost}; HEAD shows this run's object there (its upload token and size, {} bytes): written",
                self.sent
            )
        } else if head.is_some() {
            format!("{lost}; HEAD shows an object this run did not write")
        } else {
            format!("{lost}; HEAD shows no object")
        };
        if let Ok(mut d) = self.details.lock() {
            d.push(note);
        }
        if ours {
            Ok(())
        } else {
            Err(self.client.precondition_or((fault, attempts)))
        }
    }
}

impl Write for S3Sink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if let Some(f) = &self.failed {
            return Err(StoreError::Abandoned { first: f.clone() }.into_io());
        }
        if data.is_empty() {
            return Ok(0);
        }
        if self.part > MAX_PARTS {
            let e = StoreError::TooLarge {
                max: MAX_PARTS,
                limit_gib: limit_gib(),
            };
            return Err(self.fail(e));
        }
        let size = part_size(self.part);
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(size);
        }
        let n = data.len().min(size - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        self.sent += n as u64;
        if self.buf.len() == size
            && let Err(e) = self.ship()
        {
            return Err(self.fail(e));
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink for S3Sink {
    fn finish(mut self: Box<Self>) -> Result<()> {
        let location = self.client.location().to_string();
        match self.finish_inner() {
            Ok(()) => {
                self.done = true;
                if let Some(mut u) = self.upload.take() {
                    u.jobs = None;
                    for w in u.workers.drain(..) {
                        let _ = w.join();
                    }
                    cleanup::unregister(u.cleanup_id);
                }
                Ok(())
            }
            Err(StoreError::Taken) => {
                self.abort_upload();
                self.done = true;
                Err(Error::Exists {
                    path: location.into(),
                })
            }
            Err(e) => {
                self.abort_upload();
                self.done = true;
                Err(Error::io(location, "upload", e.into_io()))
            }
        }
    }
    fn abort(self: Box<Self>) {
        drop(self);
    }
    fn counters(&self) -> Option<Arc<Counters>> {
        Some(Arc::clone(&self.client.counters))
    }
    fn describe(&self) -> Option<String> {
        Some(self.client.describe())
    }
    fn warnings(&self) -> Arc<Mutex<Vec<String>>> {
        Arc::clone(&self.warnings)
    }
    fn details(&self) -> Arc<Mutex<Vec<String>>> {
        Arc::clone(&self.details)
    }
}

impl Drop for S3Sink {
    fn drop(&mut self) {
        if !self.done {
            self.abort_upload();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_grow_so_that_ten_thousand_reach_terabytes() {
        assert_eq!(part_size(1), 8 << 20);
        assert_eq!(part_size(1000), 8 << 20);
        assert_eq!(part_size(1001), 16 << 20);
        assert_eq!(part_size(2001), 32 << 20);
        assert_eq!(part_size(10_000), 4 << 30);
        // 8 MiB × 1000 × (1 + 2 + ... + 512) = 7,992 GiB.
        assert_eq!(limit_gib(), 7992);
        assert!(part_size(10_000) <= 5 << 30, "S3's largest part");
    }

    #[test]
    fn parts_in_flight_stay_within_the_budget() {
        assert_eq!(in_flight_parts(8 << 20), 4);
        assert_eq!(in_flight_parts(16 << 20), 4);
        assert_eq!(in_flight_parts(32 << 20), 2);
        assert_eq!(in_flight_parts(64 << 20), 1);
        assert_eq!(in_flight_parts(4 << 30), 1);
    }
}
