//! Walking ahead: [`walk_ahead`] runs the walk ([`super::walk::walk_selected`]: directory
//! listing, `lstat`, attribute lists) on a thread of its own and hands its events, in order,
//! to the caller's thread, which opens, reads and archives the files meanwhile.
//!
//! Why (issue 13 item 2; keep it): on a tree of small files `krypta c` is a chain of system
//! calls per file, and on one thread the walk's part (`getdents64`, `newfstatat`, the
//! attribute list: a third of the profile on 100,000 files) waited for the reading part
//! (`fstat`, `pread`, `close`) and the other way round. The walk also opens each file
//! (`super::walk`'s `list` module), so the open files it hands over are bounded by the
//! queue below. Events travel in batches
//! of [`BATCH`] (one wake-up per batch, not per entry), at most [`QUEUE`] batches ahead, so
//! the walk runs at most a few hundred entries ahead of what is archived (the order of
//! entries and warnings is the walk's, unchanged). An error of the caller's handler stops
//! the walk (its next hand-over fails); an error of the walk comes back after the events
//! before it.

use std::sync::mpsc::sync_channel;

use super::select::Selector;
use super::walk::{WalkEvent, WalkOptions, walk_selected_in};
use crate::{Error, Result};

/// Events handed over together.
pub(crate) const BATCH: usize = 64;

/// Batches the walk may be ahead, at most.
pub(crate) const QUEUE: usize = 4;

/// [`walk_selected`] on a thread of its own, `on_event` called on this one, in the walk's
/// order. Returns the first error of `on_event` or, failing that, of the walk.
pub fn walk_ahead(
    inputs: &[std::path::PathBuf],
    opts: &WalkOptions,
    select: &Selector,
    on_event: &mut dyn FnMut(WalkEvent) -> Result<()>,
) -> Result<()> {
    walk_ahead_in(None, inputs, opts, select, on_event)
}

/// [`walk_ahead`] of inputs relative to `dir` ([`super::walk::walk_selected_in`]).
pub fn walk_ahead_in(
    dir: Option<&std::path::Path>,
    inputs: &[std::path::PathBuf],
    opts: &WalkOptions,
    select: &Selector,
    on_event: &mut dyn FnMut(WalkEvent) -> Result<()>,
) -> Result<()> {
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Vec<WalkEvent>>(QUEUE);
        let walker = std::thread::Builder::new()
            .name("krypta-walk".into())
            .spawn_scoped(s, move || {
                let mut batch = Vec::with_capacity(BATCH);
                let mut hand = |ev: WalkEvent| -> Result<()> {
                    batch.push(ev);
                    if batch.len() >= BATCH {
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                        tx.send(full).map_err(|_| stopped())?;
                    }
                    Ok(())
                };
                let res = walk_selected_in(dir, inputs, opts, select, &mut hand);
                // The events before an error (or the end) go first.
                if !batch.is_empty() && tx.send(batch).is_err() {
                    return Err(stopped());
                }
                res
            })
            .map_err(|e| Error::io("<thread>", "start the walking thread", e))?;
        let mut handled = Ok(());
        'events: for batch in &rx {
            for ev in batch {
                if let Err(e) = on_event(ev) {
                    handled = Err(e);
                    break 'events;
                }
            }
        }
        // Stops the walk at its next hand-over (if it is still going).
        drop(rx);
        let walked = match walker.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        handled?;
        walked
    })
}

/// What the walk gets when the caller stopped taking events (never reported: the caller's
/// own error is).
fn stopped() -> Error {
    Error::Usage("the walk was stopped".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::walk::walk_selected;
    use std::path::PathBuf;

    /// A tree of `n` files in 7 directories, with one FIFO in the middle.
    fn tree(n: usize) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("t");
        for i in 0..n {
            let d = root.join(format!("d{}", i % 7));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(format!("f{i:04}")), i.to_string()).unwrap();
        }
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("d3/fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        (tmp, root)
    }

    fn describe(ev: &WalkEvent) -> String {
        match ev {
            WalkEvent::Entry(e) => String::from_utf8_lossy(&e.meta.path).into_owned(),
            WalkEvent::Warning(w) => format!("warning: {w}"),
            WalkEvent::Omitted(w) => format!("omitted: {w}"),
            WalkEvent::Skipped(s) => format!("skipped: {s}"),
        }
    }

    /// A walk: [`walk_selected`] or [`walk_ahead`].
    type Walk = fn(
        &[PathBuf],
        &WalkOptions,
        &Selector,
        &mut dyn FnMut(WalkEvent) -> Result<()>,
    ) -> Result<()>;

    /// The way `walk` (the direct walk or [`walk_ahead`]) describes `inputs` with the default
    /// options, event by event, and its result.
    fn collected(walk: Walk, inputs: &[PathBuf]) -> (Vec<String>, Result<()>) {
        let mut events = Vec::new();
        let res = walk(
            inputs,
            &WalkOptions::default(),
            &Selector::default(),
            &mut |ev| {
                events.push(describe(&ev));
                Ok(())
            },
        );
        (events, res)
    }

    #[test]
    fn events_arrive_in_the_walks_order_across_many_batches() {
        let (_tmp, root) = tree(BATCH * QUEUE * 3 + 5);
        let inputs = vec![root];
        let (direct, walked) = collected(walk_selected, &inputs);
        let (ahead, walked_ahead) = collected(walk_ahead, &inputs);
        walked.unwrap();
        walked_ahead.unwrap();
        // The files, 8 directories, the note on the leading '/' (an absolute input) and the
        // report that the FIFO is left out (an omission since FIFOs count for exit 6).
        assert_eq!(direct.len(), BATCH * QUEUE * 3 + 5 + 8 + 2);
        assert_eq!(direct[0], "warning: removing leading '/' from member names");
        let fifo: Vec<&String> = direct.iter().filter(|d| d.contains("d3/fifo")).collect();
        let fifo_path =
            crate::fs::escape_path(inputs[0].join("d3/fifo").as_os_str().as_encoded_bytes());
        assert!(
            fifo.len() == 1 && fifo[0] == &format!("omitted: {}: skipping FIFO", fifo_path),
            "{fifo:?}"
        );
        assert_eq!(ahead, direct);
    }

    #[test]
    fn the_handlers_error_is_returned_and_stops_the_walk() {
        let (_tmp, root) = tree(BATCH * QUEUE * 4);
        let inputs = vec![root];
        let mut seen = 0;
        let err = walk_ahead(
            &inputs,
            &WalkOptions::default(),
            &Selector::default(),
            &mut |_| {
                seen += 1;
                if seen == 10 {
                    Err(Error::Usage("enough".into()))
                } else {
                    Ok(())
                }
            },
        )
        .unwrap_err();
        assert_eq!(err.to_string(), Error::Usage("enough".into()).to_string());
        assert_eq!(seen, 10, "no event after the error");
    }

    #[test]
    fn the_walks_own_error_comes_after_the_events_before_it() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        std::fs::write(&a, b"x").unwrap();
        let inputs = vec![a, tmp.path().join("missing")];
        let (events, res) = collected(walk_ahead, &inputs);
        let (direct, want) = collected(walk_selected, &inputs);
        assert_eq!(events, direct);
        assert_eq!(
            res.map_err(|e| e.to_string()),
            want.map_err(|e| e.to_string())
        );
    }
}
