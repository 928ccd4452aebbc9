//! Reading an object with ranged GETs.
//!
//! Opening fetches the first [`OPEN_WINDOW`] bytes (enough for a header with a few
//! recipients), which also gives the object's length and ETag; every later GET carries
//! `If-Match: <that ETag>`, and its `Content-Range` total must equal the first length, so an
//! object replaced mid-read is an error ([`StoreError::Changed`]) and never a mix of two
//! archives.
//!
//! Reads the reader did not announce fetch just what was asked (at least [`MIN_FETCH`]
//! bytes, never past the end): `info` costs the open window and the footer, `l` those plus the
//! index. When the reader announces a range ([`Source::read_ahead_to`]: all the frames for
//! `x`/`t`, the frames holding the selected paths for `x ARCHIVE PATH`, the index for `l`),
//! the range is cut into [`CHUNK`]-byte GETs of which at most [`AHEAD`] are in flight on as
//! many fetch threads, consumed strictly in order: memory is bounded by (AHEAD + 1) × CHUNK =
//! 40 MiB whatever the archive size, and nothing outside the announced range is fetched.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel, sync_channel};
use std::sync::{Arc, Mutex};

use rusty_s3::S3Action;

use super::client::{Client, Fault, Verb};
use super::{ObjectUrl, StoreError};
use crate::error::{Error, Result};
use crate::store::{Counters, Refetch, Source, StoreSettings};

/// Bytes fetched when an object is opened (4 KiB).
pub const OPEN_WINDOW: u64 = 4 << 10;
/// Least bytes one unannounced read fetches (4 KiB).
pub const MIN_FETCH: u64 = 4 << 10;
/// Bytes per GET of an announced range (8 MiB).
pub const CHUNK: u64 = 8 << 20;
/// GETs of an announced range in flight at once.
pub const AHEAD: usize = 4;

/// An object opened for reading. See the module documentation.
pub struct S3Source {
    client: Arc<Client>,
    len: u64,
    etag: Option<String>,
    pos: u64,
    /// The bytes at `cur_start..cur_start + cur.len()`.
    cur: Vec<u8>,
    cur_start: u64,
    /// Announced chunks in flight, in order.
    ahead: VecDeque<Pending>,
    next_fetch: u64,
    plan_end: u64,
    /// Fetch threads (started on the first announced range) and the generation of the
    /// current plan: jobs of an abandoned plan are skipped.
    jobs: Option<Sender<Job>>,
    generation: Arc<AtomicU64>,
    /// The last [`TAIL`] bytes, once a read asked for bytes in them: the recovery trailer
    /// that every open probes for (`store::healing`) holds an archive's footer, so reading
    /// the footer next costs no second request.
    tail: std::sync::Mutex<Option<Vec<u8>>>,
}

/// Bytes of the object's end kept by [`S3Source`]: the recovery trailer's length, which
/// covers the 64-byte footer.
const TAIL: u64 = crate::recovery::TRAILER_LEN as u64;

struct Pending {
    start: u64,
    end: u64,
    rx: Receiver<std::result::Result<Vec<u8>, StoreError>>,
}

struct Job {
    start: u64,
    end: u64,
    generation: u64,
    tx: std::sync::mpsc::SyncSender<std::result::Result<Vec<u8>, StoreError>>,
}

/// What one ranged GET brought.
pub(crate) struct Fetched {
    pub data: Vec<u8>,
    pub total: u64,
    pub etag: Option<String>,
}

impl Client {
    /// GETs bytes `start..end` (resuming after a broken-off body), pinned to `pin` when given;
    /// `total` is the object length the answer must report (None for the first GET, which
    /// may get fewer bytes when the object is shorter).
    pub(crate) fn get_range(
        &self,
        start: u64,
        end: u64,
        pin: Option<&str>,
        total: Option<u64>,
    ) -> std::result::Result<Fetched, (Fault, u32)> {
        let mut data: Vec<u8> = Vec::with_capacity((end - start).min(CHUNK) as usize);
        let mut seen = (total, None::<String>);
        let mut end = end;
        self.retry(0, || {
            let from = start + data.len() as u64;
            if from >= end {
                return Ok(());
            }
            let range = format!("bytes={}-{}", from, end - 1);
            let mut a = self.bucket().get_object(Some(self.creds()), self.key());
            a.headers_mut().insert("range", range.clone());
            if let Some(p) = pin {
                a.headers_mut().insert("if-match", p.to_string());
            }
            let url = self.sign(&a);
            let mut hs = vec![("range", range.as_str())];
            if let Some(p) = pin {
                hs.push(("if-match", p));
            }
            let reply = self.send(Verb::Get, &url, &hs, None)?;
            let obj_len = match (reply.status, reply.content_range.as_deref()) {
                (206, Some(cr)) => {
                    let (a, b, t) = parse_content_range(cr).ok_or_else(|| {
                        Fault::Protocol(format!("bad Content-Range '{}'", self.clean(cr)))
                    })?;
                    if a != from || b >= end || (b + 1 < end && b + 1 != t) {
                        return Err(Fault::Protocol(format!(
                            "asked for bytes {from}-{}, got {a}-{b}",
                            end - 1
                        )));
                    }
                    t
                }
                (200, _) if from == 0 => reply.content_length.ok_or_else(|| {
                    Fault::Protocol("no Content-Length on a whole-object answer".into())
                })?,
                (s, _) => {
                    return Err(Fault::Protocol(format!(
                        "HTTP {s} without a usable Content-Range to a ranged GET"
                    )));
                }
            };
            if let (Some(p), Some(e)) = (pin, reply.etag.as_deref())
                && p != e
            {
                return Err(Fault::Status {
                    status: 412,
                    code: "PreconditionFailed".into(),
                    message: "ETag changed".into(),
                    region: None,
                });
            }
            match seen.0 {
                Some(t) if t != obj_len => {
                    return Err(Fault::Status {
                        status: 412,
                        code: "PreconditionFailed".into(),
                        message: "length changed".into(),
                        region: None,
                    });
                }
                _ => seen.0 = Some(obj_len),
            }
            if seen.1.is_none() {
                seen.1 = reply.etag.clone();
            }
            end = end.min(obj_len);
            let want = end.saturating_sub(from);
            let before = data.len();
            let r = reply.body.take(want).read_to_end(&mut data);
            Counters::add(&self.counters.bytes_in, (data.len() - before) as u64);
            match r {
                Err(e) => Err(Fault::body(e)),
                Ok(n) if (n as u64) < want => Err(Fault::body(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the answer ended early",
                ))),
                Ok(_) => Ok(()),
            }
        })?;
        Ok(Fetched {
            data,
            total: seen.0.unwrap_or(0),
            etag: seen.1,
        })
    }

    /// The error for a failed pinned GET: a failed precondition means the object changed.
    fn read_error(&self, (fault, n): (Fault, u32), etag: Option<&str>) -> StoreError {
        if fault.status() == Some(412) {
            return StoreError::Changed {
                etag: etag.unwrap_or("-").to_string(),
            };
        }
        self.error(fault, n)
    }
}

/// `bytes A-B/TOTAL` → (A, B, TOTAL).
fn parse_content_range(v: &str) -> Option<(u64, u64, u64)> {
    let r = v.trim().strip_prefix("bytes ")?;
    let (span, total) = r.split_once('/')?;
    let (a, b) = span.split_once('-')?;
    let (a, b, t) = (a.parse().ok()?, b.parse().ok()?, total.parse().ok()?);
    (a <= b && b < t).then_some((a, b, t))
}

impl S3Source {
    /// Opens `s3://BUCKET/KEY`: fetches the first bytes, the length and the ETag. Errors: Io
    /// naming the object ("open": NotFound for a missing key or bucket, PermissionDenied for
    /// refused credentials), StoreConfig.
    pub fn open(url: &ObjectUrl, store: &StoreSettings) -> Result<S3Source> {
        let client = Arc::new(Client::new(url, store)?);
        let first = match client.get_range(0, OPEN_WINDOW, None, None) {
            Ok(f) => f,
            // An empty object: no range of it can be satisfied.
            Err((f, _)) if f.status() == Some(416) => Fetched {
                data: Vec::new(),
                total: 0,
                etag: None,
            },
            Err(e) => {
                let e = client.read_error(e, None);
                return Err(Error::io(client.location(), "open", e.into_io()));
            }
        };
        Ok(S3Source {
            len: first.total,
            etag: first.etag,
            pos: 0,
            cur: first.data,
            cur_start: 0,
            ahead: VecDeque::new(),
            next_fetch: 0,
            plan_end: 0,
            jobs: None,
            generation: Arc::new(AtomicU64::new(0)),
            tail: std::sync::Mutex::new(None),
            client,
        })
    }

    /// Bytes `offset..` of the object's last [`TAIL`] bytes into `buf`, fetching them once;
    /// None when `offset` lies before them.
    fn read_tail(&self, offset: u64, buf: &mut [u8]) -> io::Result<Option<usize>> {
        let start = self.len.saturating_sub(TAIL);
        if offset < start || offset >= self.len {
            return Ok(None);
        }
        if self.cur_start <= offset && self.cur_end() >= self.len {
            // The bytes already fetched reach the end (a small object: the open GET).
            let rel = (offset - self.cur_start) as usize;
            let n = buf.len().min(self.cur.len() - rel);
            buf[..n].copy_from_slice(&self.cur[rel..rel + n]);
            return Ok(Some(n));
        }
        let mut tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.is_none() {
            let f = self
                .client
                .get_range(start, self.len, self.etag.as_deref(), Some(self.len))
                .map_err(|e| self.client.read_error(e, self.etag.as_deref()).into_io())?;
            *tail = Some(f.data);
        }
        let t = tail.as_ref().expect("just fetched");
        let rel = (offset - start) as usize;
        let n = buf.len().min(t.len().saturating_sub(rel));
        buf[..n].copy_from_slice(&t[rel..rel + n]);
        Ok(Some(n))
    }

    fn cur_end(&self) -> u64 {
        self.cur_start + self.cur.len() as u64
    }

    fn cancel_plan(&mut self) {
        self.ahead.clear();
        self.plan_end = 0;
        self.next_fetch = 0;
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    fn fetch_threads(&mut self) -> &Sender<Job> {
        self.jobs.get_or_insert_with(|| {
            let (tx, rx) = channel::<Job>();
            let rx = Arc::new(Mutex::new(rx));
            for _ in 0..AHEAD {
                let rx = Arc::clone(&rx);
                let client = Arc::clone(&self.client);
                let generation = Arc::clone(&self.generation);
                let (len, etag) = (self.len, self.etag.clone());
                // A fetch thread the OS refuses is done without: with none, the job channel
                // is closed, nothing is fetched ahead and every read is a direct GET.
                let _ = std::thread::Builder::new().spawn(move || {
                    loop {
                        let job = match rx.lock().map(|r| r.recv()) {
                            Ok(Ok(j)) => j,
                            _ => return,
                        };
                        if job.generation != generation.load(Ordering::Relaxed) {
                            continue;
                        }
                        let r = client
                            .get_range(job.start, job.end, etag.as_deref(), Some(len))
                            .map(|f| f.data)
                            .map_err(|e| client.read_error(e, etag.as_deref()));
                        let _ = job.tx.send(r);
                    }
                });
            }
            tx
        })
    }

    /// Keeps up to [`AHEAD`] chunks of the announced range in flight.
    fn top_up(&mut self) {
        while self.ahead.len() < AHEAD && self.next_fetch < self.plan_end {
            let start = self.next_fetch;
            let end = (start + CHUNK).min(self.plan_end);
            let (tx, rx) = sync_channel(1);
            let generation = self.generation.load(Ordering::Relaxed);
            let job = Job {
                start,
                end,
                generation,
                tx,
            };
            if self.fetch_threads().send(job).is_err() {
                return;
            }
            self.ahead.push_back(Pending { start, end, rx });
            self.next_fetch = end;
        }
    }

    /// Makes `cur` cover `pos`: the next announced chunk, or a direct GET of at least `want`.
    fn load(&mut self, want: usize) -> io::Result<()> {
        self.top_up();
        while let Some(p) = self.ahead.front() {
            if p.end <= self.pos {
                self.ahead.pop_front();
                self.top_up();
                continue;
            }
            if p.start > self.pos {
                break;
            }
            let p = self.ahead.pop_front().expect("front exists");
            let data =
                p.rx.recv()
                    .map_err(|_| io::Error::other("a fetch thread ended without an answer"))?;
            let data = data.map_err(StoreError::into_io)?;
            self.cur = data;
            self.cur_start = p.start;
            self.top_up();
            return Ok(());
        }
        self.cancel_plan();
        let end = (self.pos + (want as u64).max(MIN_FETCH)).min(self.len);
        let f = self
            .client
            .get_range(self.pos, end, self.etag.as_deref(), Some(self.len))
            .map_err(|e| self.client.read_error(e, self.etag.as_deref()).into_io())?;
        self.cur = f.data;
        self.cur_start = self.pos;
        Ok(())
    }
}

impl Read for S3Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.pos >= self.len {
            return Ok(0);
        }
        if !(self.cur_start..self.cur_end()).contains(&self.pos) {
            let cached = self.tail.lock().map(|t| t.is_some()).unwrap_or(false);
            if cached && let Some(n) = self.read_tail(self.pos, buf)? {
                self.pos += n as u64;
                return Ok(n);
            }
            self.load(buf.len())?;
        }
        let off = (self.pos - self.cur_start) as usize;
        let n = buf.len().min(self.cur.len() - off);
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the object ended early",
            ));
        }
        buf[..n].copy_from_slice(&self.cur[off..off + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Source for S3Source {
    fn seekable(&self) -> bool {
        true
    }
    fn length(&mut self) -> io::Result<Option<u64>> {
        Ok(Some(self.len))
    }
    fn seek_to(&mut self, offset: u64) -> io::Result<()> {
        self.pos = offset;
        Ok(())
    }
    fn read_ahead_to(&mut self, end: Option<u64>) {
        self.cancel_plan();
        let end = end.unwrap_or(self.len).min(self.len);
        let start = if (self.cur_start..self.cur_end()).contains(&self.pos) {
            self.cur_end()
        } else {
            self.pos
        };
        if start < end {
            self.plan_end = end;
            self.next_fetch = start;
            self.top_up();
        }
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        if offset >= self.len || buf.is_empty() {
            return Ok(0);
        }
        if let Some(n) = self.read_tail(offset, buf)? {
            return Ok(n);
        }
        let end = (offset + buf.len() as u64).min(self.len);
        let f = self
            .client
            .get_range(offset, end, self.etag.as_deref(), Some(self.len))
            .map_err(|e| self.client.read_error(e, self.etag.as_deref()).into_io())?;
        buf[..f.data.len()].copy_from_slice(&f.data);
        Ok(f.data.len())
    }
    fn identity(&self) -> Option<String> {
        self.etag.clone()
    }
    fn counters(&self) -> Option<std::sync::Arc<Counters>> {
        Some(std::sync::Arc::clone(&self.client.counters))
    }
    fn refetcher(&self) -> Option<Arc<dyn Refetch>> {
        Some(Arc::new(S3Refetch {
            client: Arc::clone(&self.client),
            etag: self.etag.clone(),
            len: self.len,
        }))
    }
    fn describe(&self) -> Option<String> {
        Some(self.client.describe())
    }
}

/// [`Source::refetcher`] of an [`S3Source`]: a new ranged GET pinned to the same ETag and
/// length (the open window, the cached tail and the chunks read ahead are not used).
struct S3Refetch {
    client: Arc<Client>,
    etag: Option<String>,
    len: u64,
}

impl Refetch for S3Refetch {
    fn fetch(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let end = offset.saturating_add(buf.len() as u64);
        if end > self.len {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if buf.is_empty() {
            return Ok(());
        }
        let f = self
            .client
            .get_range(offset, end, self.etag.as_deref(), Some(self.len))
            .map_err(|e| self.client.read_error(e, self.etag.as_deref()).into_io())?;
        if f.data.len() != buf.len() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.copy_from_slice(&f.data);
        Ok(())
    }
    fn may_look_again(&self) -> bool {
        self.client.counters.may_look_again()
    }
    fn healed(&self) {
        Counters::add(&self.client.counters.refetched, 1);
    }
    fn failed(&self) {
        Counters::add(&self.client.counters.second_looks_failed, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_parse_and_refuse_nonsense() {
        assert_eq!(
            parse_content_range("bytes 0-4095/100000"),
            Some((0, 4095, 100000))
        );
        assert_eq!(parse_content_range("bytes 5-4/10"), None);
        assert_eq!(parse_content_range("bytes 0-10/10"), None);
        assert_eq!(parse_content_range("bytes */10"), None);
        assert_eq!(parse_content_range("items 0-1/2"), None);
    }
}
