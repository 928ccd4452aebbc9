//! Where an archive's own bytes end, found without a key from its structure: for `krypta
//! repair` when the recovery section the header announces is not found (docs/FORMAT.md
//! §15.8 step 5), to tell an archive cut short or damaged before its section (the section,
//! which follows the archive, is lost with it: beyond the recovery data) from an intact-looking
//! archive whose section alone was cut off or overwritten (nothing rebuilds it, and nothing
//! says the archive is damaged).
//!
//! Only a header that says so verifiably is taken to announce recovery data: unencrypted,
//! its checksum verifies (or one flipped bit is undone by it, `header_fix`); encrypted, whose
//! MAC needs the key, it parses with flag bit 1 set *and* the recovery extension, which must
//! agree (FORMAT §2), so one flipped bit cannot make a header announce it (flag bit 1 alone
//! makes the header malformed). Anything else is not judged ([`archive_end`] gives None).

use super::header_read::{footer_back, is_footer_of, read_header_from};
use super::*;
use crate::format::frame::FRAME_KIND_SIGNATURE;
use crate::format::signature::{SIGNATURE_FRAME_LEN, SignatureFrame};

/// A part of an archive's structure, as [`ArchiveEnd`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A data or index frame, by its sequence number.
    Frame {
        /// Sequence number (0 for the first frame after the header).
        seq: u64,
    },
    /// The signature frame of a signed archive (FORMAT §9.1).
    Signature,
    /// The footer (FORMAT §9).
    Footer,
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Part::Frame { seq } => write!(f, "frame {seq}"),
            Part::Signature => f.write_str("the signature frame"),
            Part::Footer => f.write_str("the footer"),
        }
    }
}

/// Where the archive's structure ends, walked from its header ([`archive_end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveEnd {
    /// Its footer (tag verified when unencrypted; encrypted: it parses and its first index
    /// frame is where it says) ends at byte `end`, at most the file's length: the archive's
    /// bytes reach their end (not checked further: without the recovery data that needs the
    /// key, `krypta t`), and the recovery section after them is cut off or overwritten.
    Footer {
        /// End of the footer, bytes (the protected length L).
        end: u64,
    },
    /// Cut short: `part`, at byte `at`, runs to byte `needed`, past the file's end.
    Cut {
        /// The part the file ends in.
        part: Part,
        /// Where it starts, bytes.
        at: u64,
        /// Where it ends, bytes (> the file's length).
        needed: u64,
    },
    /// Damaged: the frames before it put `part` at byte `at`, where nothing of this archive
    /// is (a frame head that does not parse or is out of sequence; a signature frame that
    /// does not check out; a footer that does not verify).
    Damaged {
        /// The part that should be there.
        part: Part,
        /// Where, bytes.
        at: u64,
    },
}

/// What an archive whose header announces recovery data says of itself when no recovery
/// section was found: the file's length and where the archive's structure ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionLost {
    /// The file's length, bytes.
    pub len: u64,
    /// Where the archive ends, or where it is cut or damaged.
    pub end: ArchiveEnd,
}

impl SectionLost {
    /// Whether the archive is cut short or damaged: with its recovery data lost, beyond
    /// repair (exit 5). Otherwise only the section is missing.
    pub fn archive_damaged(&self) -> bool {
        !matches!(self.end, ArchiveEnd::Footer { .. })
    }
}

impl std::fmt::Display for SectionLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.len;
        match self.end {
            ArchiveEnd::Footer { end } => write!(
                f,
                "its recovery data is missing: none follows the archive's footer, which ends at byte {end} of the {len}-byte file (cut off or overwritten), {}",
                crate::repaired::SECTION_LOST
            ),
            ArchiveEnd::Cut { part, at, needed } => write!(
                f,
                "damaged beyond the recovery data: the archive is cut short: {part} at byte {at} runs to byte {needed}, but the file ends at byte {len}; its recovery data, which follows the archive, is lost with it (krypta x restores what precedes the cut)"
            ),
            ArchiveEnd::Damaged { part, at } => write!(
                f,
                "damaged beyond the recovery data: the archive is damaged at byte {at}, where {part} belongs but is not (overwritten, or bytes lost before it), and its recovery data, which follows the archive, is not found (krypta x restores what verifies)"
            ),
        }
    }
}

/// Bytes read at once while walking frame heads: a crafted chain of the smallest frames (72
/// bytes) costs one read per 910 of them, a real one (blocks of up to 4 MiB) one per frame.
const WINDOW: usize = 64 << 10;

/// For a seekable archive at `path` (a file or an object) in which no recovery section was
/// found: where its structure ends ([`SectionLost`]), when its header verifiably announces
/// recovery data (module doc); None when it does not, or the header cannot be read (then
/// nothing can be said beyond "no recovery data found").
///
/// Reads the header, then the footer back from the end (`header_read::footer_back`: at most
/// 16 MiB + 64 bytes); only when no footer of this archive is there, the frame heads from
/// the header on (one `WINDOW` read per frame at most) up to where the file ends or the
/// chain breaks. Errors: [`Error::Io`] (reading).
pub fn archive_end(path: &Path) -> Result<Option<SectionLost>> {
    let input = crate::store::open_source(path)?;
    let (header, bytes, mut input, fixed) = match read_header_from(input, path) {
        Ok(read) => read,
        Err(e) if e.is_io() => return Err(e),
        Err(_) => return Ok(None),
    };
    let (body, tag) = bytes.split_at(bytes.len() - TAG_LEN);
    let verified = match &fixed {
        // Unencrypted, one flipped bit undone by the checksum; an encrypted candidate waits
        // for a key that is not here.
        Some(f) => f.unverified.is_none(),
        None if header.encrypted() => true,
        None => Protection::Plain
            .verify_header(body, tag.try_into().expect("32 bytes"))
            .is_ok(),
    };
    if !verified || header.recovery_percent().is_none() || !input.seekable() {
        return Ok(None);
    }
    let len = match input.length() {
        Ok(Some(len)) => len,
        Ok(None) => return Ok(None),
        Err(e) => return Err(Error::io(path, "seek", e)),
    };
    let header_len = bytes.len() as u64;
    let plain = Protection::Plain;
    let tag_key = (!header.encrypted()).then_some(&plain);
    let ours = |input: &dyn crate::store::Source, fb: &[u8; FOOTER_LEN]| {
        is_footer_of(input, &header, header_len, tag_key, fb, true)
    };
    if let Some(end) = footer_back(&*input, header_len, len, |fb| ours(&*input, fb)) {
        return Ok(Some(SectionLost {
            len,
            end: ArchiveEnd::Footer { end },
        }));
    }
    let end = walk(&*input, path, &header, header_len, len, &ours)?;
    Ok(Some(SectionLost { len, end }))
}

/// Walks the frame heads of the `len`-byte `input` from `header_len` on (FORMAT §4: data
/// frames, then index frames up to the one with LAST, the signature frame when the header
/// names a signer, the footer), to where the file ends or the chain breaks.
fn walk(
    input: &dyn crate::store::Source,
    path: &Path,
    header: &Header,
    header_len: u64,
    len: u64,
    ours: &dyn Fn(&dyn crate::store::Source, &[u8; FOOTER_LEN]) -> bool,
) -> Result<ArchiveEnd> {
    let mut window = Window::default();
    let (mut at, mut seq, mut index) = (header_len, 0u64, false);
    loop {
        let part = Part::Frame { seq };
        let Some(head) = window.get(input, path, at, len, FRAME_HEADER_LEN)? else {
            return Ok(cut(part, at, FRAME_HEADER_LEN));
        };
        let head: &[u8; FRAME_HEADER_LEN] = head.try_into().expect("16 bytes");
        let Ok(h) = FrameHeader::parse(head, header.version) else {
            return Ok(ArchiveEnd::Damaged { part, at });
        };
        let data = h.kind == FrameKind::Data;
        if h.seq != seq || (index && data) || h.check_last_flag().is_err() {
            return Ok(ArchiveEnd::Damaged { part, at });
        }
        let next = at + (FRAME_HEADER_LEN + TAG_LEN) as u64 + u64::from(h.body_len);
        if next > len {
            return Ok(ArchiveEnd::Cut {
                part,
                at,
                needed: next,
            });
        }
        (at, seq, index) = (next, seq + 1, !data);
        if h.last {
            break;
        }
    }
    if header.signer().is_some() {
        let part = Part::Signature;
        let Some(b) = window.get(input, path, at, len, SIGNATURE_FRAME_LEN)? else {
            return Ok(cut(part, at, SIGNATURE_FRAME_LEN));
        };
        let b: &[u8; SIGNATURE_FRAME_LEN] = b.try_into().expect("signature frame");
        if b[0] != FRAME_KIND_SIGNATURE
            || SignatureFrame::parse(b, &header.archive_id, seq).is_err()
        {
            return Ok(ArchiveEnd::Damaged { part, at });
        }
        at += SIGNATURE_FRAME_LEN as u64;
    }
    let Some(fb) = window.get(input, path, at, len, FOOTER_LEN)? else {
        return Ok(cut(Part::Footer, at, FOOTER_LEN));
    };
    let fb: [u8; FOOTER_LEN] = fb.try_into().expect("64 bytes");
    Ok(if ours(input, &fb) {
        ArchiveEnd::Footer {
            end: at + FOOTER_LEN as u64,
        }
    } else {
        ArchiveEnd::Damaged {
            part: Part::Footer,
            at,
        }
    })
}

/// `part` at `at`, `n` bytes long, past the file's end.
fn cut(part: Part, at: u64, n: usize) -> ArchiveEnd {
    ArchiveEnd::Cut {
        part,
        at,
        needed: at + n as u64,
    }
}

/// The last [`WINDOW`] (or fewer, at the end) bytes read, from `start`.
#[derive(Default)]
struct Window {
    start: u64,
    buf: Vec<u8>,
}

impl Window {
    /// The `n` bytes at `at` of the `len`-byte `input`; None when they go past its end.
    fn get(
        &mut self,
        input: &dyn crate::store::Source,
        path: &Path,
        at: u64,
        len: u64,
        n: usize,
    ) -> Result<Option<&[u8]>> {
        let Some(end) = at.checked_add(n as u64).filter(|&e| e <= len) else {
            return Ok(None);
        };
        if at < self.start || end > self.start + self.buf.len() as u64 {
            let take = (len - at).min(WINDOW.max(n) as u64) as usize;
            self.buf.resize(take, 0);
            crate::store::read_exact_at(input, at, &mut self.buf)
                .map_err(|e| Error::io(path, "read", e))?;
            self.start = at;
        }
        let rel = (at - self.start) as usize;
        Ok(Some(&self.buf[rel..rel + n]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_lost_is_said_in_plain_words() {
        let cut = SectionLost {
            len: 550_550,
            end: ArchiveEnd::Cut {
                part: Part::Frame { seq: 1 },
                at: 95,
                needed: 860_543,
            },
        };
        assert!(cut.archive_damaged());
        assert_eq!(
            cut.to_string(),
            "damaged beyond the recovery data: the archive is cut short: frame 1 at byte 95 runs to byte 860543, but the file ends at byte 550550; its recovery data, which follows the archive, is lost with it (krypta x restores what precedes the cut)"
        );
        let gone = SectionLost {
            len: 862_700,
            end: ArchiveEnd::Footer { end: 862_668 },
        };
        assert!(!gone.archive_damaged());
        assert!(gone.to_string().starts_with(
            "its recovery data is missing: none follows the archive's footer, which ends at byte 862668 of the 862700-byte file"
        ));
    }
}
