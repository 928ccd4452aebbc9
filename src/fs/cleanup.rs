//! What must not outlive an interrupted run: the extractor's files being written, the archive
//! file being created, and the multipart upload of an archive going to object storage
//! register here, and the CLI's SIGINT/SIGTERM handler removes or aborts whatever is still
//! registered before exiting.
//!
//! Actions (an upload's abort) run outside the registry's lock, so an action that takes time
//! (a network request, bounded by its own attempts) never blocks a thread that registers or
//! unregisters meanwhile.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Something to undo at interrupt time.
enum Pending {
    /// A temporary file to remove.
    File(PathBuf),
    /// An action to run (e.g. abort a multipart upload).
    Action(Box<dyn FnOnce() + Send>),
}

/// A list of things to undo. The process has one ([`register`] and friends use it); tests
/// make their own, so they never remove another test's files.
#[derive(Default)]
pub struct Registry {
    pending: Mutex<Vec<(u64, Pending)>>,
    /// What each registered action leaves behind if it never finishes (an upload's id and
    /// the command that removes it), kept until the action ran or was unregistered: a second
    /// interrupt that does not wait for the actions prints these ([`unfinished`]).
    notes: Mutex<Vec<(u64, String)>>,
    /// Set by [`Registry::remove_all`]: the process is about to exit, and a thread that
    /// registers now is parked instead of going on to create what it registers.
    closed: std::sync::atomic::AtomicBool,
}

static GLOBAL: Registry = Registry::new();
static NEXT: AtomicU64 = AtomicU64::new(1);

impl Registry {
    /// An empty registry.
    pub const fn new() -> Self {
        Registry {
            pending: Mutex::new(Vec::new()),
            notes: Mutex::new(Vec::new()),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn push(&self, p: Pending) -> u64 {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut v) = self.pending.lock() {
            if self.closed.load(Ordering::SeqCst) {
                // The interrupt handler ran and the process exits: never create this.
                drop(v);
                loop {
                    std::thread::park();
                }
            }
            v.push((id, p));
        }
        id
    }

    /// See [`register`].
    pub fn register(&self, path: PathBuf) -> u64 {
        self.push(Pending::File(path))
    }

    /// See [`register_action`].
    pub fn register_action(&self, action: Box<dyn FnOnce() + Send>, note: String) -> u64 {
        let id = self.push(Pending::Action(action));
        if let Ok(mut n) = self.notes.lock() {
            n.push((id, note));
        }
        id
    }

    /// See [`unregister`].
    pub fn unregister(&self, id: u64) {
        if let Ok(mut p) = self.pending.lock() {
            p.retain(|(i, _)| *i != id);
        }
        self.forget_note(id);
    }

    fn forget_note(&self, id: u64) {
        if let Ok(mut n) = self.notes.lock() {
            n.retain(|(i, _)| *i != id);
        }
    }

    /// See [`unfinished`].
    pub fn unfinished(&self) -> Vec<String> {
        self.notes
            .lock()
            .map(|n| n.iter().map(|(_, s)| s.clone()).collect())
            .unwrap_or_default()
    }

    /// See [`remove_all`].
    pub fn remove_all(&self) -> usize {
        let taken = match self.pending.lock() {
            Ok(mut p) => {
                // Under the lock: whatever registers after this is parked (see `push`).
                self.closed.store(true, Ordering::SeqCst);
                std::mem::take(&mut *p)
            }
            Err(_) => return 0,
        };
        let mut n = 0;
        for (id, p) in taken {
            match p {
                Pending::File(path) => n += usize::from(std::fs::remove_file(path).is_ok()),
                Pending::Action(f) => {
                    f();
                    self.forget_note(id);
                    n += 1;
                }
            }
        }
        n
    }
}

/// Registers a temporary file; returns the id to [`unregister`] it with once it was renamed
/// into place or removed.
pub fn register(path: PathBuf) -> u64 {
    GLOBAL.register(path)
}

/// Registers an action to run at interrupt time (an unfinished upload's abort), with `note`,
/// what is left behind if it never runs to its end; returns the id to [`unregister`] it with
/// once the work it undoes is finished or undone.
pub fn register_action(action: Box<dyn FnOnce() + Send>, note: String) -> u64 {
    GLOBAL.register_action(action, note)
}

/// The notes of the registered actions that have not finished: what a process that exits
/// now, without waiting for them (a second interrupt), leaves behind.
pub fn unfinished() -> Vec<String> {
    GLOBAL.unfinished()
}

/// Forgets a registration (the file was renamed into place or removed; the upload finished
/// or was aborted).
pub fn unregister(id: u64) {
    GLOBAL.unregister(id)
}

/// Removes every registered temporary file and runs every registered action (best effort),
/// and forgets them; returns how many files were removed plus actions run. Called from the
/// interrupt handler.
pub fn remove_all() -> usize {
    GLOBAL.remove_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn registered_files_are_removed_and_unregistered_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.tmp");
        let b = d.path().join("b.tmp");
        std::fs::write(&a, b"x").unwrap();
        std::fs::write(&b, b"y").unwrap();
        let r = Registry::new();
        let _ia = r.register(a.clone());
        let ib = r.register(b.clone());
        r.unregister(ib);
        assert_eq!(r.remove_all(), 1);
        assert!(!a.exists());
        assert!(b.exists());
    }

    #[test]
    fn registered_actions_run_once_and_unregistered_ones_never() {
        let ran = Arc::new(AtomicUsize::new(0));
        let (r1, r2) = (Arc::clone(&ran), Arc::clone(&ran));
        let r = Registry::new();
        let _keep = r.register_action(
            Box::new(move || {
                r1.fetch_add(1, Ordering::SeqCst);
            }),
            "keep".into(),
        );
        let gone = r.register_action(
            Box::new(move || {
                r2.fetch_add(100, Ordering::SeqCst);
            }),
            "gone".into(),
        );
        // Unfinished: both, until one is unregistered and the other has run.
        assert_eq!(r.unfinished(), vec!["keep".to_string(), "gone".to_string()]);
        r.unregister(gone);
        assert_eq!(r.unfinished(), vec!["keep".to_string()]);
        assert_eq!(r.remove_all(), 1);
        assert_eq!(r.unfinished(), Vec::<String>::new());
        assert_eq!(r.remove_all(), 0);
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }

    /// Regression: `krypta x` killed at a random moment left `.krypta-*.tmp` files (5 of 12
    /// tries), because worker threads went on creating and registering temporary files after
    /// the handler had removed what was registered. Now a registration after `remove_all`
    /// never returns (the thread is parked until the process exits), so nothing it would
    /// create is made.
    #[test]
    fn a_registration_after_remove_all_never_returns() {
        let r = Arc::new(Registry::new());
        assert_eq!(r.remove_all(), 0);
        let returned = Arc::new(AtomicUsize::new(0));
        let (r2, ret2) = (Arc::clone(&r), Arc::clone(&returned));
        let _parked = std::thread::spawn(move || {
            r2.register(PathBuf::from("/nonexistent/late.tmp"));
            ret2.store(1, Ordering::SeqCst);
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(returned.load(Ordering::SeqCst), 0);
        assert!(r.pending.lock().unwrap().is_empty());
    }
}
