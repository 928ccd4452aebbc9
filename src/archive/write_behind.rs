//! Writing the archive's frames on a thread of their own (`ArchiveWriter::write_behind`).
//!
//! The thread that fills blocks also read every input byte, hashed it (BLAKE3) and wrote
//! every sealed frame. Measured with `perf` on `c -s --keyfile` of 200 MiB to tmpfs
//! (issue 13, table 15): the writes (the kernel copying each frame into the page cache and
//! allocating its pages) were 40% of that thread's CPU, and that thread was the run's
//! critical path — the sealing worker waited on it. From a pipe the thread also copies every
//! byte out of the pipe, so there the writes cost the most. Here the filling thread hands
//! each sealed frame, as the owned buffer it already is (no copy), to a writer thread, which
//! writes it (through the recovery encoder when the archive carries recovery data) and gives
//! the buffer back to its free list.
//!
//! **Order and errors.** Frames go through one FIFO channel to one thread, so they are
//! written in the order sent, which is the order `emit` produced before. The first write
//! error ends the thread, which raises a flag and drops the output (a `store::Sink` dropped
//! unfinished removes its temporary file). The filling thread looks at the flag after every
//! read of input (at most 1 MiB) and every block it submits ([`Out::check`]), and at every
//! send: then it joins the writer and returns that error, named as before
//! (`Error::io(out_name, "write", …)`). So a dead output stops the run within one read, as
//! it did when the filling thread wrote (without the flag, a slow input kept being read into
//! a dead output until a whole block more had arrived). `finish` joins the thread to take
//! the output back before the recovery section and the sink's own finish (fsync, rename).
//! Dropping the writer unfinished (the run failed) tells the thread to write nothing more,
//! and joins it, so the output is dropped (a temporary file removed, an upload aborted)
//! before the drop returns. A thread the OS refuses leaves the writes inline: the thread is
//! a speed-up, never a reason to fail.
//!
//! **Memory.** At most [`QUEUED`] frames wait in the channel and one is being written:
//! `(QUEUED + 1) × block` bytes on top of the pipeline's bound (12 MiB at the default
//! 4 MiB blocks). Blocks over [`MAX_BEHIND_BLOCK`] (level 9's 128 MiB) are written inline:
//! there compression, not writing, sets the pace, and three more such frames would add
//! hundreds of MiB to the peak.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::output::Output;
use super::pipeline::Buffers;

/// Frames that may wait for the writer thread.
pub(crate) const QUEUED: usize = 2;

/// Largest block size whose frames are written behind, bytes (16 MiB).
pub(crate) const MAX_BEHIND_BLOCK: usize = 16 << 20;

/// Bytes to write, and the free list their buffer goes back to once written.
type Piece = (Vec<u8>, Option<Buffers>);

/// Where the writer's bytes go: written here, or sent to the writer thread.
pub(crate) enum Out<W: Write> {
    Inline(Output<W>),
    Behind(Behind<W>),
    /// Only while the output moves to the writer thread (`ArchiveWriter::write_behind`).
    Moving,
}

/// The writer thread and the channel to it.
pub(crate) struct Behind<W: Write> {
    tx: Option<SyncSender<Piece>>,
    thread: Option<JoinHandle<io::Result<Output<W>>>>,
    /// Raised by the thread when a write failed (it has ended).
    failed: Arc<AtomicBool>,
    /// Raised by the drop of an unfinished writer: write nothing more.
    discard: Arc<AtomicBool>,
}

impl<W: Write + Send + 'static> Behind<W> {
    /// Starts the writer thread, which owns `out` until joined. When the OS refuses the
    /// thread, `out` comes back with the error.
    pub(crate) fn start(out: Output<W>) -> Result<Behind<W>, (Output<W>, io::Error)> {
        // The output goes to the thread only once it runs, so a refused thread loses nothing.
        let (give, take) = sync_channel::<Output<W>>(1);
        let (tx, rx) = sync_channel::<Piece>(QUEUED);
        let failed = Arc::new(AtomicBool::new(false));
        let discard = Arc::new(AtomicBool::new(false));
        let (f, d) = (Arc::clone(&failed), Arc::clone(&discard));
        let spawned = std::thread::Builder::new()
            .name("krypta-write".into())
            .spawn(move || {
                let mut out = take.recv().map_err(io::Error::other)?;
                for (bytes, back) in rx {
                    if d.load(Ordering::Acquire) {
                        break;
                    }
                    if let Err(e) = out.write_all(&bytes) {
                        f.store(true, Ordering::Release);
                        return Err(e);
                    }
                    if let Some(list) = back {
                        list.give(bytes);
                    }
                }
                Ok(out)
            });
        match spawned {
            Ok(thread) => {
                give.send(out)
                    .expect("the thread waits for its output before anything else");
                Ok(Behind {
                    tx: Some(tx),
                    thread: Some(thread),
                    failed,
                    discard,
                })
            }
            Err(e) => Err((out, e)),
        }
    }
}

impl<W: Write> Behind<W> {
    /// Closes the channel and waits for the thread: the output back, or the thread's error.
    fn join(&mut self) -> io::Result<Output<W>> {
        drop(self.tx.take());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other(
                "internal error: the archive's writing thread panicked",
            )),
            None => Err(io::Error::other(
                "internal error: the archive's writing thread was already stopped",
            )),
        }
    }

    fn send(&mut self, piece: Piece) -> io::Result<()> {
        let sent = match &self.tx {
            Some(tx) => tx.send(piece).is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        // The thread ended: its error says why.
        match self.join() {
            Err(e) => Err(e),
            Ok(_) => Err(io::Error::other(
                "internal error: the archive's writing thread stopped early",
            )),
        }
    }
}

impl<W: Write> Drop for Behind<W> {
    fn drop(&mut self) {
        self.discard.store(true, Ordering::Release);
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl<W: Write> Out<W> {
    /// The writer thread's error, once a write failed (then the thread has ended); `Ok`
    /// while it writes, and always when writing inline.
    pub(crate) fn check(&mut self) -> io::Result<()> {
        match self {
            Out::Behind(b) if b.failed.load(Ordering::Acquire) => match b.join() {
                Err(e) => Err(e),
                Ok(_) => Err(io::Error::other(
                    "internal error: the archive's writing thread stopped early",
                )),
            },
            _ => Ok(()),
        }
    }

    /// Writes `bytes` (or queues them); the buffer goes back to `back` once written.
    pub(crate) fn write_owned(&mut self, bytes: Vec<u8>, back: &Buffers) -> io::Result<()> {
        match self {
            Out::Inline(o) => {
                o.write_all(&bytes)?;
                back.give(bytes);
                Ok(())
            }
            Out::Behind(b) => b.send((bytes, Some(back.clone()))),
            Out::Moving => Err(moving()),
        }
    }

    /// Writes a copy of `bytes` (or queues it).
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Out::Inline(o) => o.write_all(bytes),
            Out::Behind(b) => b.send((bytes.to_vec(), None)),
            Out::Moving => Err(moving()),
        }
    }

    /// The output, once everything sent is written (joins the thread).
    pub(crate) fn into_inline(self) -> io::Result<Output<W>> {
        match self {
            Out::Inline(o) => Ok(o),
            Out::Behind(mut b) => b.join(),
            Out::Moving => Err(moving()),
        }
    }
}

fn moving() -> io::Error {
    io::Error::other("internal error: the archive's output is being moved")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that fails once it has taken `room` bytes.
    struct Full {
        got: Vec<u8>,
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.got.len() + b.len() > self.room {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            self.got.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn frames_are_written_in_order_and_buffers_come_back() {
        let list = Buffers::new(8);
        let mut out = Out::Behind(
            Behind::start(Output::Plain(Full {
                got: Vec::new(),
                room: usize::MAX,
            }))
            .map_err(|(_, e)| e)
            .unwrap(),
        );
        let mut want = Vec::new();
        for i in 0..100u32 {
            let frame: Vec<u8> = (0..1000 + i).map(|j| (i * 7 + j) as u8).collect();
            want.extend_from_slice(&frame);
            if i % 3 == 0 {
                out.write_all(&frame).unwrap();
            } else {
                out.write_owned(frame, &list).unwrap();
            }
        }
        let Output::Plain(w) = out.into_inline().unwrap() else {
            panic!("plain output expected")
        };
        assert_eq!(w.got, want);
        // Written frames were handed back (up to the list's 8).
        let mut back = 0;
        while list.take().capacity() > 0 {
            back += 1;
        }
        assert_eq!(back, 8);
    }

    #[test]
    fn a_failed_write_shows_in_check_without_another_send() {
        // Regression (review of the writer thread): the failure showed only at the next
        // send, a whole block of input later, so a slow input kept being read into a dead
        // output. `check`, called after every read, sees it.
        let list = Buffers::new(2);
        let mut out = Out::Behind(
            Behind::start(Output::Plain(Full {
                got: Vec::new(),
                room: 10,
            }))
            .map_err(|(_, e)| e)
            .unwrap(),
        );
        assert!(out.check().is_ok());
        out.write_owned(vec![1u8; 100], &list).unwrap();
        let mut seen = None;
        for _ in 0..10_000 {
            if let Err(e) = out.check() {
                seen = Some(e);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let e = seen.expect("the failed write shows in check");
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        // Nothing of the failed frame was taken.
        assert!(matches!(out, Out::Behind(_)));
    }

    #[test]
    fn dropping_an_unfinished_writer_writes_nothing_more() {
        // A writer dropped unfinished (the run failed) must not go on writing the queued
        // frames into an output about to be discarded (an upload would send them).
        use std::sync::Mutex;
        struct Slow(Arc<Mutex<usize>>);
        impl Write for Slow {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                std::thread::sleep(std::time::Duration::from_millis(50));
                *self.0.lock().unwrap() += b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let written = Arc::new(Mutex::new(0));
        let list = Buffers::new(2);
        let mut out = Out::Behind(
            Behind::start(Output::Plain(Slow(Arc::clone(&written))))
                .map_err(|(_, e)| e)
                .unwrap(),
        );
        // One frame being written, two queued.
        for _ in 0..3 {
            out.write_owned(vec![0u8; 1000], &list).unwrap();
        }
        drop(out);
        let n = *written.lock().unwrap();
        assert!(n <= 1000, "{n} bytes written after the drop began");
    }

    #[test]
    fn the_first_write_error_comes_back_to_the_sender() {
        let list = Buffers::new(2);
        let mut out = Out::Behind(
            Behind::start(Output::Plain(Full {
                got: Vec::new(),
                room: 10_000,
            }))
            .map_err(|(_, e)| e)
            .unwrap(),
        );
        let mut err = None;
        for _ in 0..100 {
            if let Err(e) = out.write_owned(vec![1u8; 1000], &list) {
                err = Some(e);
                break;
            }
        }
        // Or at the join, when every send fitted in the queue before the thread failed.
        let e = match err {
            Some(e) => e,
            None => out.into_inline().err().expect("the write failed"),
        };
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(e.to_string(), "disk full");
    }
}
