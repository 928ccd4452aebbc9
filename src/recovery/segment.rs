//! Reading one segment's shards and sorting them into intact, damaged and unverifiable, the
//! step that verification and repair share.
//!
//! Reads go in blocks of up to 4 MiB; a block whose read fails is read again shard by shard,
//! so an unreadable sector costs the shards it holds, not the block.

use super::layout::{Layout, Segment, xxh3};
use super::locate::{ByteSource, TableReader, read};

/// Bytes per read while scanning a segment (rounded down to whole shards).
const BLOCK: usize = 4 << 20;

/// What a shard turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardState {
    /// Read and matches its checksum.
    Intact,
    /// Read, but does not match its checksum.
    Damaged,
    /// Could not be read (I/O error or beyond the end of the source).
    Missing,
    /// Read, but its checksum is lost with both copies of its descriptor packet.
    Unverifiable,
}

impl ShardState {
    /// Whether the shard cannot be trusted (everything but intact).
    pub fn erased(self) -> bool {
        self != ShardState::Intact
    }
}

/// A segment's checksums: data shards then recovery shards (None = lost).
pub struct Sums {
    /// Data shard checksums.
    pub data: Vec<Option<u64>>,
    /// Recovery shard checksums.
    pub recovery: Vec<Option<u64>>,
}

/// Reads the checksums of `seg` from the table.
pub fn sums<S: ByteSource + ?Sized>(src: &S, layout: &Layout, seg: &Segment) -> Sums {
    let mut t = TableReader::new(src, *layout);
    let mut all = t.checksums(seg.table_offset, seg.data_shards + seg.recovery_shards);
    let recovery = all.split_off(seg.data_shards as usize);
    Sums {
        data: all,
        recovery,
    }
}

/// A read buffer of `want` bytes, or of `least` (one shard) when the allocator refuses
/// `want` (`ulimit -v`): reading shard by shard is slower, never wrong.
fn scratch(want: usize, least: usize) -> Vec<u8> {
    let mut v = Vec::new();
    let n = if v.try_reserve_exact(want).is_ok() {
        want
    } else {
        least
    };
    v.resize(n, 0);
    v
}

fn state(shard: &[u8], sum: Option<u64>) -> ShardState {
    match sum {
        None => ShardState::Unverifiable,
        Some(v) if xxh3(shard) == v => ShardState::Intact,
        Some(_) => ShardState::Damaged,
    }
}

/// Reads `count` shards of `s` bytes at `offset` (the last one may be `tail` bytes long and is
/// zero-padded), calling `each(i, shard_bytes_padded, readable)` in order and `block(bytes)`
/// with every block's bytes as read (unpadded; unreadable shards as zeros).
#[allow(clippy::too_many_arguments)]
fn scan<S: ByteSource + ?Sized>(
    src: &S,
    offset: u64,
    count: usize,
    s: usize,
    last_len: usize,
    buf: &mut [u8],
    each: &mut dyn FnMut(usize, &[u8], bool),
    block: &mut dyn FnMut(&[u8]),
) {
    let per = (buf.len() / s).max(1);
    let mut i = 0;
    while i < count {
        let n = per.min(count - i);
        let bytes = (n - 1) * s + if i + n == count { last_len } else { s };
        let b = &mut buf[..n * s];
        let at = offset + (i * s) as u64;
        let mut ok = vec![true; n];
        if read(src, at, &mut b[..bytes]).is_err() {
            for (j, okj) in ok.iter_mut().enumerate() {
                let len = if i + j + 1 == count { last_len } else { s };
                let sh = &mut b[j * s..j * s + len];
                if read(src, at + (j * s) as u64, sh).is_err() {
                    sh.fill(0);
                    *okj = false;
                }
            }
        }
        b[bytes..].fill(0);
        block(&b[..bytes]);
        for (j, shard) in b.chunks_exact(s).enumerate() {
            each(i + j, shard, ok[j]);
        }
        i += n;
    }
}

/// Sorts the data shards of `seg`, calling `block` with the protected bytes in order (for
/// hashing) and, when `keep` is given, copying them into it (k_s × S bytes, zero-padded).
pub fn data_states<S: ByteSource + ?Sized>(
    src: &S,
    layout: &Layout,
    seg: &Segment,
    sums: &[Option<u64>],
    keep: Option<&mut [u8]>,
    block: &mut dyn FnMut(&[u8]),
) -> Vec<ShardState> {
    let s = layout.shard_size();
    let k = seg.data_shards as usize;
    let last_len = (seg.end - seg.start - (k as u64 - 1) * s as u64) as usize;
    let mut states = Vec::with_capacity(k);
    let mut classify = |i: usize, shard: &[u8], readable: bool| {
        states.push(if readable {
            state(shard, sums[i])
        } else {
            ShardState::Missing
        });
    };
    match keep {
        Some(dst) => {
            // Read straight into the caller's buffer, one block at a time.
            let per = (BLOCK / s).max(1);
            let mut first = 0;
            for chunk in dst.chunks_mut(per * s) {
                let n = chunk.len() / s;
                let tail = if first + n == k { last_len } else { s };
                let at = seg.start + (first * s) as u64;
                scan(
                    src,
                    at,
                    n,
                    s,
                    tail,
                    chunk,
                    &mut |i, sh, r| classify(first + i, sh, r),
                    block,
                );
                first += n;
            }
        }
        None => {
            let mut buf = scratch((BLOCK / s).max(1).min(k) * s, s);
            scan(
                src,
                seg.start,
                k,
                s,
                last_len,
                &mut buf,
                &mut classify,
                block,
            );
        }
    }
    states
}

/// Sorts the recovery shards of `seg` (reading them all), keeping their bytes in `keep`
/// when given (m_s × S bytes).
pub fn recovery_states<S: ByteSource + ?Sized>(
    src: &S,
    layout: &Layout,
    seg: &Segment,
    sums: &[Option<u64>],
    keep: Option<&mut [u8]>,
) -> Vec<ShardState> {
    let s = layout.shard_size();
    let m = seg.recovery_shards as usize;
    let mut states = Vec::with_capacity(m);
    let in_source = |i: usize| seg.recovery_offset + ((i + 1) * s) as u64 <= src.len();
    // Shards past the end of a truncated source are missing without a read.
    let present = (0..m).take_while(|&i| in_source(i)).count();
    let mut classify = |i: usize, shard: &[u8], readable: bool| {
        states.push(if readable {
            state(shard, sums[i])
        } else {
            ShardState::Missing
        });
    };
    let mut own;
    let buf: &mut [u8] = match keep {
        Some(dst) => &mut dst[..present * s],
        None => {
            own = scratch((BLOCK / s).max(1).min(present.max(1)) * s, s);
            &mut own
        }
    };
    if present > 0 {
        scan(
            src,
            seg.recovery_offset,
            present,
            s,
            s,
            buf,
            &mut classify,
            &mut |_| {},
        );
    }
    states.resize(m, ShardState::Missing);
    states
}
