//! Committing finished files on a second thread: the last steps of a file whose content is
//! complete and verified — its length, metadata (`futimens`, and `fchown`/`fchmod` when
//! needed), the `linkat` that gives it its name, and the `close` — run on a thread of their
//! own while the extracting thread goes on with the next entries.
//!
//! Why (issue 13 item 2; keep it): on a tree of small files extraction is a chain of system
//! calls, and on one thread krypta spent 3.05 s on 100,000 small files against 2.15 s for
//! `zstd -dc | tar x` (whose two processes overlap decompression and file creation). These
//! three calls are more than half of the kernel time per file; overlapping them with the next
//! file's parsing, checking and writing is what the second core is for.
//!
//! Rules that keep extraction's promises:
//! - Only files whose content the reader has verified reach [`Committer::commit`] (it is
//!   called from `Visitor::end`), so nothing changes about what may get a final name.
//! - Only files in a directory this run created, without `--strip-components`, are
//!   committed here: there, no later entry can take the name (paths are unique and nothing
//!   lies below a non-directory, FORMAT §7.3 — stripping can map two paths to one), so the
//!   conflict outcomes that `-v` and the "kept" counts report per entry cannot arise late.
//!   Other files are committed inline.
//! - The first error of a deferred commit is returned by the next [`Committer::check`] (the
//!   visitor calls it for every entry) or by [`Committer::finish`]; it names its own file.
//!   Files after it may have been committed meanwhile: they are complete and verified.
//! - [`Committer::finish`] (before hard links are made, directories finished and conflicts
//!   counted) waits until every file handed over is committed.
//! - **A long file is not begun behind unnamed ones**: before a file's content is written
//!   past its first [`LONG`] bytes, every earlier file gets its name ([`Committer::finish`]).
//!   So an interrupted extraction (Ctrl-C, `SIGKILL`) has every file before the one being
//!   written in place; only while a run of small files is being written can the last few
//!   (at most `QUEUE × BATCH` + `BATCH`, finished within milliseconds) be lost to an
//!   interrupt — complete and verified, but not yet named (`-v` may have listed them). A
//!   failure, unlike an interrupt, still names them all before the run ends.
//! - Files are handed over in batches of [`BATCH`], at most [`QUEUE`] batches waiting (each
//!   file an open descriptor).

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::sink::FileSink;
use crate::{Error, Result};

/// Content bytes of one file past which every earlier file is committed first.
pub(crate) const LONG: u64 = 64 * 1024;

/// Batches waiting to be committed, at most.
pub(crate) const QUEUE: usize = 4;

/// Files handed over together: one wake-up of the committing thread per batch, not per file
/// (a wake-up per file cost about as much as the calls it moved). At most
/// `QUEUE × BATCH` (+ one batch being filled) open descriptors wait.
pub(crate) const BATCH: usize = 32;

#[derive(Default)]
struct State {
    /// Files handed over and not yet committed.
    pending: usize,
    /// The first failure, until reported.
    failed: Option<Error>,
}

/// Commits finished files on a thread of its own (module doc).
pub struct Committer {
    tx: Option<SyncSender<Vec<(FileSink, u64)>>>,
    /// Files not handed over yet.
    batch: Vec<(FileSink, u64)>,
    /// Files were handed over since the last [`Committer::finish`].
    outstanding: bool,
    thread: Option<JoinHandle<()>>,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl Committer {
    /// Starts the committing thread.
    pub fn new() -> Result<Committer> {
        let (tx, rx) = sync_channel::<Vec<(FileSink, u64)>>(QUEUE);
        let state = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let st = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("krypta-commit".into())
            .spawn(move || run(rx, &st))
            .map_err(|e| Error::io("<thread>", "start the committing thread", e))?;
        Ok(Committer {
            tx: Some(tx),
            batch: Vec::with_capacity(BATCH),
            outstanding: false,
            thread: Some(thread),
            state,
        })
    }

    /// Commits `sink` with final length `size`: on the committing thread when its directory
    /// was created by this run, else here and now.
    pub fn commit(&mut self, sink: FileSink, size: u64) -> Result<()> {
        self.check()?;
        if !sink.in_fresh_dir() {
            return sink.commit(size);
        }
        if self.tx.is_none() {
            return sink.commit(size);
        }
        self.batch.push((sink, size));
        if self.batch.len() >= BATCH {
            self.hand_over()?;
        }
        Ok(())
    }

    /// Sends the files collected so far to the committing thread.
    fn hand_over(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let n = batch.len();
        let Some(tx) = &self.tx else {
            return commit_all(batch);
        };
        self.lock().pending += n;
        self.outstanding = true;
        if let Err(std::sync::mpsc::SendError(batch)) = tx.send(batch) {
            // The thread is gone (it cannot panic short of a bug): commit here.
            self.lock().pending -= n;
            return commit_all(batch);
        }
        Ok(())
    }

    /// Called before writing `len` bytes of the current file's content at `offset`: content
    /// reaching past [`LONG`] bytes is written only after every earlier file has its name
    /// (module doc).
    pub fn before_write(&mut self, offset: u64, len: usize) -> Result<()> {
        if offset.saturating_add(len as u64) > LONG && (self.outstanding || !self.batch.is_empty())
        {
            self.finish()
        } else {
            Ok(())
        }
    }

    /// The first deferred failure, if one happened since the last check.
    pub fn check(&mut self) -> Result<()> {
        match self.lock().failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Waits until every file handed over is committed; then [`Committer::check`].
    pub fn finish(&mut self) -> Result<()> {
        self.hand_over()?;
        let (m, cv) = &*self.state;
        let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
        while g.pending > 0 {
            g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        drop(g);
        self.outstanding = false;
        self.check()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Commits every file of `batch` (all of them, also after a failure: each is complete and
/// verified); the first failure.
fn commit_all(batch: Vec<(FileSink, u64)>) -> Result<()> {
    let mut first = Ok(());
    for (sink, size) in batch {
        if let Err(e) = sink.commit(size)
            && first.is_ok()
        {
            first = Err(e);
        }
    }
    first
}

fn run(rx: Receiver<Vec<(FileSink, u64)>>, state: &(Mutex<State>, Condvar)) {
    let (m, cv) = state;
    while let Ok(batch) = rx.recv() {
        let n = batch.len();
        // A panic (a bug) must not leave `pending` up: `finish` would wait for ever.
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| commit_all(batch)))
            .unwrap_or_else(|_| {
                Err(Error::io(
                    "<thread>",
                    "commit extracted files",
                    std::io::Error::other("the committing thread panicked"),
                ))
            });
        let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = res
            && g.failed.is_none()
        {
            g.failed = Some(e);
        }
        g.pending -= n;
        if g.pending == 0 {
            cv.notify_all();
        }
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        // Files still collected are committed (they are complete and verified); closing the
        // channel ends the thread once the queue is empty.
        let _ = self.hand_over();
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl std::fmt::Debug for Committer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Committer")
            .field("pending", &self.lock().pending)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::entry::{EntryKind, EntryMeta, Timestamp};
    use crate::fs::extract::{ExtractOptions, Extractor};

    fn meta(path: &[u8], kind: EntryKind) -> EntryMeta {
        EntryMeta {
            path: path.to_vec(),
            kind,
            mode: if kind == EntryKind::Dir { 0o755 } else { 0o644 },
            mtime: Timestamp { secs: 7, nanos: 0 },
            ..Default::default()
        }
    }

    #[test]
    fn files_in_new_directories_get_their_names_by_finish_and_a_late_failure_names_its_file() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ex = Extractor::new(tmp.path(), ExtractOptions::default()).unwrap();
        let mut c = Committer::new().unwrap();
        ex.make_dir(&meta(b"d", EntryKind::Dir)).unwrap();
        ex.make_dir(&meta(b"gone", EntryKind::Dir)).unwrap();
        // More than a batch, so some are committed while others are still collected.
        for i in 0..(BATCH + 5) {
            let name = format!("d/f{i}");
            let mut s = ex
                .begin_file(&meta(name.as_bytes(), EntryKind::File))
                .unwrap()
                .unwrap();
            assert!(s.in_fresh_dir());
            s.write_at(0, name.as_bytes()).unwrap();
            c.commit(s, name.len() as u64).unwrap();
        }
        // A file whose directory disappears before its commit: linkat fails (ENOENT).
        let mut s = ex
            .begin_file(&meta(b"gone/f", EntryKind::File))
            .unwrap()
            .unwrap();
        s.write_at(0, b"x").unwrap();
        std::fs::remove_dir(tmp.path().join("gone")).unwrap();
        c.commit(s, 1).unwrap();
        let err = c.finish().unwrap_err();
        match &err {
            Error::Io { path, op, .. } => {
                assert_eq!(path, &tmp.path().join("gone/f"));
                assert!(
                    *op == "link into place" || *op == "rename into place",
                    "{err}"
                );
            }
            other => panic!("{other:?}"),
        }
        // Reported once; every other file is there, complete, with its mtime.
        c.finish().unwrap();
        for i in 0..(BATCH + 5) {
            let p = tmp.path().join(format!("d/f{i}"));
            assert_eq!(std::fs::read(&p).unwrap(), format!("d/f{i}").into_bytes());
            use std::os::unix::fs::MetadataExt;
            assert_eq!(std::fs::metadata(&p).unwrap().mtime(), 7);
        }
    }

    #[test]
    fn content_reaching_past_long_waits_for_every_earlier_name_even_in_its_first_write() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ex = Extractor::new(tmp.path(), ExtractOptions::default()).unwrap();
        let mut c = Committer::new().unwrap();
        ex.make_dir(&meta(b"d", EntryKind::Dir)).unwrap();
        let mut s = ex
            .begin_file(&meta(b"d/a", EntryKind::File))
            .unwrap()
            .unwrap();
        s.write_at(0, b"a").unwrap();
        c.commit(s, 1).unwrap();
        // Short content: no wait, `d/a` is still collected (no name yet).
        c.before_write(0, 1000).unwrap();
        assert!(!tmp.path().join("d/a").exists());
        // A first write that reaches past LONG (regression: only its offset was checked).
        c.before_write(0, LONG as usize + 1).unwrap();
        assert_eq!(std::fs::read(tmp.path().join("d/a")).unwrap(), b"a");
    }

    #[test]
    fn files_in_a_directory_that_existed_are_committed_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ex = Extractor::new(tmp.path(), ExtractOptions::default()).unwrap();
        let mut c = Committer::new().unwrap();
        let mut s = ex
            .begin_file(&meta(b"top", EntryKind::File))
            .unwrap()
            .unwrap();
        assert!(!s.in_fresh_dir());
        s.write_at(0, b"now").unwrap();
        c.commit(s, 3).unwrap();
        // No finish needed: it has its name already.
        assert_eq!(std::fs::read(tmp.path().join("top")).unwrap(), b"now");
    }
}
