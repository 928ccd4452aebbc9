//! Temporary files that must not outlive an interrupted run: the extractor's files being
//! written and the archive being created register here, and the CLI's SIGINT/SIGTERM handler
//! removes whatever is still registered before exiting.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

static PENDING: Mutex<Vec<(u64, PathBuf)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(1);

/// Registers a temporary file; returns the id to [`unregister`] it with once it was renamed
/// into place or removed.
pub fn register(path: PathBuf) -> u64 {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut p) = PENDING.lock() {
        p.push((id, path));
    }
    id
}

/// Forgets a temporary file (it was renamed into place or removed).
pub fn unregister(id: u64) {
    if let Ok(mut p) = PENDING.lock() {
        p.retain(|(i, _)| *i != id);
    }
}

/// Removes every registered temporary file (best effort) and forgets them; returns how many
/// were removed. Called from the interrupt handler.
pub fn remove_all() -> usize {
    let Ok(mut p) = PENDING.lock() else { return 0 };
    let n = p
        .iter()
        .filter(|(_, path)| std::fs::remove_file(path).is_ok())
        .count();
    p.clear();
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_files_are_removed_and_unregistered_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.tmp");
        let b = d.path().join("b.tmp");
        std::fs::write(&a, b"x").unwrap();
        std::fs::write(&b, b"y").unwrap();
        let _ia = register(a.clone());
        let ib = register(b.clone());
        unregister(ib);
        assert!(remove_all() >= 1);
        assert!(!a.exists());
        assert!(b.exists());
    }
}
