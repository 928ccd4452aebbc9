//! Finding a recovery section in a random-access byte source, and reading its checksum
//! table one packet at a time.
//!
//! Order of attempts (each one only accepts bytes that pass their checksum AND sit exactly
//! where their own parameters place them, so packets of an archive stored inside the
//! archive, or stale bytes, are never taken for this file's):
//! 1. the trailer in the last 80 bytes, when its layout ends exactly at the source's end;
//! 2. with a protected length from the caller (`Locate::protected_len`), copy A's packets at
//!    L rounded up to 4096;
//! 3. a backward scan over 4096-aligned offsets for a packet (the section's parts are all
//!    4096-aligned, so the scan tests one offset per 4 KiB): it meets copy B first, then
//!    copy A after at most the recovery area, so a damaged trailer or a tail cut anywhere
//!    after copy A's first surviving packet is handled.

use std::collections::HashMap;
use std::io;

use super::error::RecoveryError;
use super::layout::{self, ALIGN, Layout, PACKET_HEAD, PACKET_LEN, TRAILER_LEN};

/// A random-access source of bytes: a local file, a buffer, or (adapted by the caller) an
/// object store's ranged reads. `Sync` so verification and repair may read in parallel.
pub trait ByteSource: Sync {
    /// Length, bytes.
    fn len(&self) -> u64;
    /// Whether the source is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Fills `buf` from `offset` (the caller keeps `offset + buf.len() ≤ len()`).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
}

impl ByteSource for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let end = start
            .checked_add(buf.len())
            .filter(|&e| e <= <[u8]>::len(self))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(&self[start..end]);
        Ok(())
    }
}

impl ByteSource for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.as_slice().read_at(offset, buf)
    }
}

/// A local file as a [`ByteSource`] (positioned reads; the length is taken once).
#[derive(Debug)]
pub struct FileSource {
    file: std::fs::File,
    len: u64,
}

impl FileSource {
    /// Wraps an open file.
    pub fn new(file: std::fs::File) -> io::Result<FileSource> {
        let len = file.metadata()?.len();
        Ok(FileSource { file, len })
    }
}

impl ByteSource for FileSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
    }
}

/// Reads `buf.len()` bytes at `offset`, as a [`RecoveryError::Read`] on failure.
pub fn read<S: ByteSource + ?Sized>(
    src: &S,
    offset: u64,
    buf: &mut [u8],
) -> Result<(), RecoveryError> {
    let len = buf.len() as u64;
    if offset.checked_add(len).is_none_or(|e| e > src.len()) {
        return Err(RecoveryError::read(
            offset,
            len,
            io::Error::from(io::ErrorKind::UnexpectedEof),
        ));
    }
    src.read_at(offset, buf)
        .map_err(|e| RecoveryError::read(offset, len, e))
}

/// What the caller knows before looking.
#[derive(Debug, Clone, Copy, Default)]
pub struct Locate {
    /// The protected length L, when known (e.g. from the archive's own structure); only a
    /// section for exactly this L is accepted.
    pub protected_len: Option<u64>,
    /// Scan backwards for packets when the trailer (and the hint) did not lead to one. The
    /// scan reads at most the whole source once, in 1 MiB windows.
    pub scan: bool,
}

/// How the section was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundBy {
    /// The trailer at the end of the source.
    Trailer,
    /// A packet of copy A at the caller's protected length.
    ProtectedLen,
    /// A packet found by the backward scan, at this offset.
    Scan {
        /// Offset of the packet.
        offset: u64,
    },
}

/// A located section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    /// Its layout (parameters, L, every offset).
    pub layout: Layout,
    /// How it was found.
    pub found_by: FoundBy,
    /// Length of the source, bytes (the layout's `file_len` when nothing was cut or added).
    pub source_len: u64,
}

/// Finds the section. Errors: [`RecoveryError::NotFound`] when no trailer or packet is
/// intact and in its place; [`RecoveryError::Read`] when the source fails.
pub fn locate<S: ByteSource + ?Sized>(src: &S, opts: &Locate) -> Result<Located, RecoveryError> {
    let len = src.len();
    let wanted = |lay: &Layout| {
        opts.protected_len
            .is_none_or(|l| l == lay.params.protected_len)
    };
    let found = |layout, found_by| Located {
        layout,
        found_by,
        source_len: len,
    };
    if len >= TRAILER_LEN as u64 {
        let mut t = [0u8; TRAILER_LEN];
        read(src, len - TRAILER_LEN as u64, &mut t)?;
        if let Ok(lay) = layout::parse_trailer(&t)
            && lay.file_len == len
            && wanted(&lay)
        {
            return Ok(found(lay, FoundBy::Trailer));
        }
    }
    if let Some(l) = opts.protected_len
        && let Some(a) = layout::align_up(l)
    {
        // Copy A's first packets; a damaged first one is passed over.
        for i in 0..64u64 {
            let Some(off) = a.checked_add(i * PACKET_LEN as u64) else {
                break;
            };
            if off.checked_add(PACKET_LEN as u64).is_none_or(|e| e > len) {
                break;
            }
            if let Some(lay) = packet_here(src, off)?
                && wanted(&lay)
            {
                return Ok(found(lay, FoundBy::ProtectedLen));
            }
        }
    }
    if opts.scan {
        let floor = opts.protected_len.and_then(layout::align_up).unwrap_or(0);
        if let Some((lay, offset)) = scan_back(src, floor, &wanted)? {
            return Ok(found(lay, FoundBy::Scan { offset }));
        }
    }
    Err(RecoveryError::NotFound { len })
}

/// The layout of a valid packet that sits at its own offset `off`, if there is one.
fn packet_here<S: ByteSource + ?Sized>(src: &S, off: u64) -> Result<Option<Layout>, RecoveryError> {
    let mut b = [0u8; PACKET_LEN];
    read(src, off, &mut b)?;
    Ok(check_packet(&b, off))
}

fn check_packet(b: &[u8; PACKET_LEN], off: u64) -> Option<Layout> {
    let (p, lay) = layout::parse_packet(b).ok()?;
    (lay.packet_offset(p.copy, p.index) == off).then_some(lay)
}

/// Scans 4096-aligned offsets from the end down to `floor` for a packet in its place.
fn scan_back<S: ByteSource + ?Sized>(
    src: &S,
    floor: u64,
    wanted: &dyn Fn(&Layout) -> bool,
) -> Result<Option<(Layout, u64)>, RecoveryError> {
    const WINDOW: u64 = 1 << 20;
    let len = src.len();
    if len < PACKET_LEN as u64 {
        return Ok(None);
    }
    // Last aligned offset where a whole packet fits.
    let mut top = (len - PACKET_LEN as u64) / ALIGN * ALIGN + PACKET_LEN as u64;
    let mut buf = vec![0u8; WINDOW as usize];
    while top > floor {
        let start = top.saturating_sub(WINDOW).max(floor);
        let w = &mut buf[..(top - start) as usize];
        read(src, start, w)?;
        let mut rel = w.len() - PACKET_LEN;
        loop {
            if w[rel..rel + 8] == layout::PACKET_MAGIC {
                let pk: &[u8; PACKET_LEN] = w[rel..rel + PACKET_LEN].try_into().expect("packet");
                let off = start + rel as u64;
                if let Some(lay) = check_packet(pk, off)
                    && wanted(&lay)
                {
                    return Ok(Some((lay, off)));
                }
            }
            if rel < ALIGN as usize {
                break;
            }
            rel -= ALIGN as usize;
        }
        // The next window ends where a packet starting just below `start` would end.
        top = start + PACKET_LEN as u64 - ALIGN;
        if start == floor {
            break;
        }
    }
    Ok(None)
}

/// Reads checksum-table entries through the packets of both copies: copy A first, copy B
/// when A's packet is damaged or missing. Packets read are kept for the reader's lifetime
/// (use one per segment).
pub struct TableReader<'a, S: ?Sized> {
    src: &'a S,
    layout: Layout,
    packets: HashMap<u64, Option<Box<[u8; PACKET_LEN]>>>,
}

impl<'a, S: ByteSource + ?Sized> TableReader<'a, S> {
    /// A reader for `layout`'s table in `src`.
    pub fn new(src: &'a S, layout: Layout) -> Self {
        TableReader {
            src,
            layout,
            packets: HashMap::new(),
        }
    }

    /// Packet `index` of copy `copy` if it is intact, in place and carries exactly this
    /// section's parameters. A read error counts as damage.
    pub fn packet_ok(&self, copy: u8, index: u64) -> Option<Box<[u8; PACKET_LEN]>> {
        let off = self.layout.packet_offset(copy, index);
        if off + PACKET_LEN as u64 > self.src.len() {
            return None;
        }
        let mut b = Box::new([0u8; PACKET_LEN]);
        read(self.src, off, &mut b[..]).ok()?;
        packet_valid(&self.layout, copy, index, &b).then_some(b)
    }

    fn packet(&mut self, index: u64) -> Option<&[u8; PACKET_LEN]> {
        if !self.packets.contains_key(&index) {
            let p = self
                .packet_ok(0, index)
                .or_else(|| self.packet_ok(1, index));
            self.packets.insert(index, p);
        }
        self.packets.get(&index).and_then(|p| p.as_deref())
    }

    /// `count` checksums from table byte `offset` (a multiple of 8): None where both copies
    /// of the packet holding it are damaged.
    pub fn checksums(&mut self, offset: u64, count: u64) -> Vec<Option<u64>> {
        let q = layout::PACKET_PAYLOAD as u64;
        (0..count)
            .map(|i| {
                let at = offset + 8 * i;
                let (pi, rel) = (at / q, (at % q) as usize);
                // 4008 is a multiple of 8, so an entry never straddles two packets.
                self.packet(pi).map(|p| {
                    u64::from_le_bytes(
                        p[PACKET_HEAD + rel..PACKET_HEAD + rel + 8]
                            .try_into()
                            .expect("8 bytes"),
                    )
                })
            })
            .collect()
    }
}

/// Whether `b` is packet `index` of copy `copy` of exactly `layout`'s section: intact (magic,
/// checksum, fields) and carrying the same parameters.
pub fn packet_valid(layout: &Layout, copy: u8, index: u64, b: &[u8; PACKET_LEN]) -> bool {
    layout::parse_packet(b)
        .is_ok_and(|(p, _)| p.params == layout.params && p.copy == copy && p.index == index)
}

/// Packets fetched per read by [`TableCache`] (256 KiB of copy A: the checksums of about
/// 128 MiB of protected bytes, one segment, in one read; one request on object storage).
pub const TABLE_PREFETCH: u64 = 64;

/// Packets a [`TableCache`] keeps (4 MiB) before it forgets what it holds.
const TABLE_CACHE_MAX: usize = 1024;

/// Checksum-table entries for a reader that verifies protected bytes as it reads them and
/// keeps no borrow of its source between reads: packets are fetched [`TABLE_PREFETCH`] at a
/// time from copy A in one read, and from copy B one by one where copy A's is not intact.
/// Memory: at most 1024 packets (4 MiB).
#[derive(Debug)]
pub struct TableCache {
    layout: Layout,
    packets: HashMap<u64, Option<Box<[u8; PACKET_LEN]>>>,
}

impl TableCache {
    /// A cache for `layout`'s table.
    pub fn new(layout: Layout) -> Self {
        TableCache {
            layout,
            packets: HashMap::new(),
        }
    }

    /// The checksum of data shard `shard` (global shard number, < the layout's data shards):
    /// None when both copies of its packet are damaged or unreadable.
    pub fn data_checksum<S: ByteSource + ?Sized>(&mut self, src: &S, shard: u64) -> Option<u64> {
        let k = u64::from(self.layout.params.shards_per_segment);
        let seg = self.layout.segment(shard / k);
        self.entry(src, seg.table_offset + 8 * (shard % k))
    }

    /// The checksum of recovery shard `j` of segment `segment`.
    pub fn recovery_checksum<S: ByteSource + ?Sized>(
        &mut self,
        src: &S,
        segment: u64,
        j: u64,
    ) -> Option<u64> {
        let seg = self.layout.segment(segment);
        self.entry(src, seg.table_offset + 8 * (seg.data_shards + j))
    }

    fn entry<S: ByteSource + ?Sized>(&mut self, src: &S, at: u64) -> Option<u64> {
        let q = layout::PACKET_PAYLOAD as u64;
        let (pi, rel) = (at / q, (at % q) as usize);
        if !self.packets.contains_key(&pi) {
            self.fetch(src, pi);
        }
        let p = self.packets.get(&pi)?.as_deref()?;
        Some(u64::from_le_bytes(
            p[PACKET_HEAD + rel..PACKET_HEAD + rel + 8]
                .try_into()
                .expect("8 bytes"),
        ))
    }

    /// Reads packets `first..first + TABLE_PREFETCH` (within the copy) of copy A at once.
    fn fetch<S: ByteSource + ?Sized>(&mut self, src: &S, first: u64) {
        if self.packets.len() >= TABLE_CACHE_MAX {
            self.packets.clear();
        }
        let count = TABLE_PREFETCH.min(self.layout.packets - first);
        let off = self.layout.packet_offset(0, first);
        let mut buf = vec![0u8; (count as usize) * PACKET_LEN];
        let whole = read(src, off, &mut buf).is_ok();
        for i in 0..count {
            let index = first + i;
            let a = if whole {
                let b: &[u8; PACKET_LEN] = buf[i as usize * PACKET_LEN..][..PACKET_LEN]
                    .try_into()
                    .expect("packet");
                packet_valid(&self.layout, 0, index, b).then(|| Box::new(*b))
            } else {
                None
            };
            let p = a.or_else(|| {
                let t = TableReader::new(src, self.layout);
                t.packet_ok(0, index).or_else(|| t.packet_ok(1, index))
            });
            self.packets.insert(index, p);
        }
    }
}
