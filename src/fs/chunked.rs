//! Writes to files and standard output in pieces of at most [`WRITE_CHUNK`] bytes.
//!
//! **Why** (issue 13, table 15 on disk): one `write(2)` of a whole 4 MiB frame or block makes
//! the kernel put it in the page cache as large folios, and on the virtual machines this tool
//! is developed and benchmarked on (Firecracker, with a memory balloon that hands free memory
//! back to the host) fresh large folios are what the host must fault in again: `dd` of 800 MiB
//! to ext4 took 6.4–7.9 s with `bs=4M` and 0.33–0.38 s with `bs=128K` (three interleaved
//! rounds, an idle 2-core machine, each run after `rm`, `sync` and 3 s idle), and
//! `krypta c -s` of 800 MiB to disk was 1.9–3.4× `age -r` (which writes 64 KiB pieces) while
//! equal to it on tmpfs. 128 KiB is what `zstd` writes and about what `cp` does (coreutils:
//! 256 KiB): on a machine without the effect it costs one system call per 128 KiB (6,400 per
//! 800 MiB, microseconds each) and nothing else, since the bytes are copied once either way.
//! Do not raise it without measuring on such a VM (`krypta bench --table 15`, disk rows).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

/// The most bytes one `write`/`pwrite` system call is given (128 KiB).
pub const WRITE_CHUNK: usize = 128 << 10;

/// A writer whose every `write` passes on at most [`WRITE_CHUNK`] bytes (`write_all` loops):
/// put it under a `BufWriter`, which passes writes larger than its buffer straight through.
#[derive(Debug)]
pub struct Chunked<W>(pub W);

impl<W: Write> Write for Chunked<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(&buf[..buf.len().min(WRITE_CHUNK)])
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Bytes a [`buffered`] writer gathers before it writes (1 MiB).
pub const BUFFER: usize = 1 << 20;

/// `w` behind a [`BUFFER`]-byte buffer whose writes reach `w` in pieces of at most
/// [`WRITE_CHUNK`] bytes: every buffered write of krypta's to a file or stdout goes so.
pub fn buffered<W: Write>(w: W) -> io::BufWriter<Chunked<W>> {
    io::BufWriter::with_capacity(BUFFER, Chunked(w))
}

/// `pwrite`s all of `bytes` at `at` in pieces of at most [`WRITE_CHUNK`] bytes.
pub fn write_all_at(file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
    let mut at = at;
    for piece in bytes.chunks(WRITE_CHUNK) {
        file.write_all_at(piece, at)?;
        at += piece.len() as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the bytes of each `write` it is given.
    #[derive(Debug)]
    struct Calls(Vec<usize>);
    impl Write for Calls {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.push(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_large_write_reaches_the_writer_in_pieces_of_at_most_128_kib() {
        let data = vec![7u8; 4 * WRITE_CHUNK + 5];
        let mut w = buffered(Calls(Vec::new()));
        w.write_all(&data).unwrap();
        w.write_all(&data[..10]).unwrap();
        w.flush().unwrap();
        let calls = w.into_inner().unwrap().0.0;
        // The 5 bytes left over wait in the buffer with the next 10.
        assert_eq!(calls, vec![131072, 131072, 131072, 131072, 15]);
    }

    #[test]
    fn write_all_at_puts_every_piece_at_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let f = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(dir.path().join("f"))
            .unwrap();
        let data: Vec<u8> = (0..(3 * WRITE_CHUNK + 17))
            .map(|i| (i % 251) as u8)
            .collect();
        write_all_at(&f, &data, 1000).unwrap();
        let got = std::fs::read(dir.path().join("f")).unwrap();
        assert_eq!(got.len(), 1000 + data.len());
        assert!(got[..1000].iter().all(|&b| b == 0));
        assert_eq!(&got[1000..], &data[..]);
    }
}
