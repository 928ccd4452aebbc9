//! Every byte layout of a krypta archive: header, stanzas, frames, records, index, footer,
//! for both format versions.
//!
//! Nothing outside this module reads or writes archive bytes. Each structure keeps its
//! parser and its writer side by side, and `parse(write(x)) == x` is tested. krypta writes
//! format 2 ([`Version::V2`]) and reads both; format 1 is parsed exactly as it always was
//! (its golden archives in `test-vectors/krypta_archive.txt` stay readable forever). Where
//! the two versions differ, a function takes the [`Version`] (the version is in the
//! header; the structures after it do not repeat it).

pub mod block;
pub mod entry;
pub mod entry_set;
pub mod entry_v2;
pub mod extension;
pub mod footer;
pub mod frame;
pub mod header;
pub mod index;
pub mod index_v2;
pub mod limits;
pub mod record;
pub mod signature;
pub mod stanza;

pub use entry::{EntryKind, EntryMeta, OtherField, Timestamp, Xattr};
pub use stanza::Stanza;

/// A format version: the `u16` at byte 8 of every archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// Format 1 (krypta 0.1): read-only since format 2.
    V1 = 1,
    /// Format 2: typed entry fields, header extensions, block headers with stream offsets,
    /// first-record offsets and reference lengths, a front-coded index. What krypta writes.
    V2 = 2,
}

impl Version {
    /// The version krypta writes.
    pub const CURRENT: Version = Version::V2;

    /// The version of code `v`, or `None` for a version this build does not read.
    pub fn from_u16(v: u16) -> Option<Version> {
        match v {
            1 => Some(Version::V1),
            2 => Some(Version::V2),
            _ => None,
        }
    }

    /// The stored code.
    pub fn code(self) -> u16 {
        self as u16
    }
}

/// Why a structure could not be parsed. Carries the structure's name and what was wrong,
/// so the caller can report "archive.kry: corrupt index: entry path is empty".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The bytes end before the structure does.
    #[error("{what} is truncated: needed {needed} bytes, {got} available")]
    Truncated {
        /// Which structure.
        what: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        got: u64,
    },
    /// A field holds a value the format does not allow.
    #[error("{what}: {problem}")]
    Invalid {
        /// Which structure or field.
        what: &'static str,
        /// What is wrong with it, in plain words.
        problem: String,
    },
    /// A critical extension or entry field type this build does not know (format 2: bit 15
    /// of the type is set): the archive needs a newer krypta.
    #[error(
        "{what} type {code:#06x} is marked critical and is unknown to this krypta: the archive needs a newer krypta"
    )]
    NeedsNewer {
        /// Which kind of type ("header extension", "entry field").
        what: &'static str,
        /// The type code.
        code: u16,
    },
}

impl FormatError {
    /// Shorthand for [`FormatError::Invalid`].
    pub fn invalid(what: &'static str, problem: impl Into<String>) -> Self {
        FormatError::Invalid {
            what,
            problem: problem.into(),
        }
    }
}

/// A cursor over a byte slice that never reads past the end: every read returns
/// [`FormatError::Truncated`] instead of panicking. All parsers use it.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader over `buf`; `what` names the structure in errors.
    pub fn new(buf: &'a [u8], what: &'static str) -> Self {
        Reader { buf, pos: 0, what }
    }
    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// Takes the next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        if n > self.remaining() {
            return Err(FormatError::Truncated {
                what: self.what,
                needed: n as u64,
                got: self.remaining() as u64,
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// Takes a fixed-size array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    /// One byte.
    pub fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }
    /// Little-endian u16.
    pub fn u16(&mut self) -> Result<u16, FormatError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    /// Little-endian u32.
    pub fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    /// Little-endian u64.
    pub fn u64(&mut self) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// Little-endian i64.
    pub fn i64(&mut self) -> Result<i64, FormatError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    /// A u32 length prefix followed by that many bytes; the length is checked against
    /// the bytes left before anything is allocated.
    pub fn bytes_u32(&mut self) -> Result<&'a [u8], FormatError> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// Requires a zero value (reserved fields must be zero: the encoding is canonical).
    pub fn reserved_zero(&mut self, n: usize) -> Result<(), FormatError> {
        if self.take(n)?.iter().any(|&b| b != 0) {
            return Err(FormatError::invalid(
                self.what,
                "reserved bytes are not zero",
            ));
        }
        Ok(())
    }
    /// Requires that every byte was consumed.
    pub fn finish(&self) -> Result<(), FormatError> {
        if self.remaining() != 0 {
            return Err(FormatError::invalid(
                self.what,
                format!("{} trailing bytes", self.remaining()),
            ));
        }
        Ok(())
    }
}

/// Appends a u32 length prefix and the bytes.
pub fn put_bytes_u32(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// Appends a u16 (little-endian).
pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a u32 (little-endian).
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a u64 (little-endian).
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
