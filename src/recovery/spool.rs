//! Where the encoder keeps what it must write at the end (recovery shards and the checksum
//! table): in memory up to a shared budget, then in an anonymous temporary file (`tempfile`,
//! removed by the OS when closed), so a writer of any length has bounded memory.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::error::RecoveryError;

/// Bytes of memory the spools of one encoder may still use, and where to spill beyond.
#[derive(Debug)]
pub struct Budget {
    /// Bytes left.
    pub left: usize,
    /// Directory of the spill file (None = the system temporary directory).
    pub dir: Option<PathBuf>,
}

/// An append-only byte store: a memory prefix, then (once the budget ran out) a file.
#[derive(Debug, Default)]
pub struct Spool {
    mem: Vec<u8>,
    file: Option<File>,
    file_len: u64,
}

impl Spool {
    /// Appends `bytes`, spilling to a file when the budget does not cover them.
    pub fn push(&mut self, bytes: &[u8], budget: &mut Budget) -> Result<(), RecoveryError> {
        // Memory the allocator refuses (`ulimit -v`, a cgroup's `memory.max`) ends the
        // budget: the bytes go to the file instead, as beyond it.
        if self.file.is_none() && bytes.len() <= budget.left {
            if self.mem.try_reserve(bytes.len()).is_ok() {
                budget.left -= bytes.len();
                self.mem.extend_from_slice(bytes);
                return Ok(());
            }
            budget.left = 0;
        }
        let dir = || Some(budget.dir.clone().unwrap_or_else(std::env::temp_dir));
        if self.file.is_none() {
            let f = match &budget.dir {
                Some(d) => tempfile::tempfile_in(d),
                None => tempfile::tempfile(),
            }
            .map_err(|source| RecoveryError::Spill {
                op: "create",
                dir: dir(),
                source,
            })?;
            self.file = Some(f);
        }
        let f = self.file.as_mut().expect("just set");
        crate::fs::chunked::Chunked(f)
            .write_all(bytes)
            .map_err(|source| RecoveryError::Spill {
                op: "write",
                dir: dir(),
                source,
            })?;
        self.file_len += bytes.len() as u64;
        Ok(())
    }

    /// Total bytes stored.
    pub fn len(&self) -> u64 {
        self.mem.len() as u64 + self.file_len
    }

    /// Whether part of it lives in a file.
    pub fn spilled(&self) -> bool {
        self.file.is_some()
    }

    /// A spool whose `len` bytes are all in `file` (a test's spill file that cannot be read).
    #[cfg(test)]
    pub(super) fn in_file(file: File, len: u64) -> Spool {
        Spool {
            mem: Vec::new(),
            file: Some(file),
            file_len: len,
        }
    }

    /// Reads everything from the start (may be called more than once).
    pub fn reader(&self) -> SpoolReader<'_> {
        SpoolReader {
            spool: self,
            pos: 0,
        }
    }
}

/// Sequential reader over a [`Spool`].
pub struct SpoolReader<'a> {
    spool: &'a Spool,
    pos: u64,
}

impl Read for SpoolReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mem = self.spool.mem.len() as u64;
        if self.pos < mem {
            let from = &self.spool.mem[self.pos as usize..];
            let n = from.len().min(buf.len());
            buf[..n].copy_from_slice(&from[..n]);
            self.pos += n as u64;
            return Ok(n);
        }
        let Some(f) = &self.spool.file else {
            return Ok(0);
        };
        let at = self.pos - mem;
        let left = self.spool.file_len - at;
        let want = (buf.len() as u64).min(left) as usize;
        if want == 0 {
            return Ok(0);
        }
        let n = f.read_at(&mut buf[..want], at)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_beyond_the_budget_go_to_a_file_and_read_back_in_order() {
        let mut budget = Budget {
            left: 10,
            dir: None,
        };
        let (mut a, mut b) = (Spool::default(), Spool::default());
        a.push(b"0123456", &mut budget).unwrap();
        b.push(b"abc", &mut budget).unwrap();
        assert_eq!(budget.left, 0);
        a.push(b"789", &mut budget).unwrap();
        b.push(b"", &mut budget).unwrap();
        assert!(a.spilled() && !b.spilled());
        let mut out = Vec::new();
        a.reader().read_to_end(&mut out).unwrap();
        assert_eq!(out, b"0123456789");
        out.clear();
        a.reader().read_to_end(&mut out).unwrap();
        assert_eq!(out, b"0123456789", "a second read sees the same bytes");
        assert_eq!((a.len(), b.len()), (10, 3));
    }
}
