//! What follows the footer of an archive read from a pipe (docs/FORMAT.md §11 step 8 and
//! §15.8): read through to the end of the input, so the program writing the pipe is never
//! cut off (`cat a.kry | krypta t -` under `set -o pipefail`, `curl … | krypta x -`), and
//! told apart from the archive.
//!
//! Design (why it is so):
//! - **No recovery data**: the bytes after the footer are not the archive's (tape padding, a
//!   bad copy, another archive appended). They are read (at most [`TRAILING_SEARCH`], so a
//!   stream that never ends cannot hang the run) and reported as for a file
//!   ([`Archive::trailing`]): zero padding silently, anything else warned about, and `test`
//!   fails.
//! - **A recovery section** (the header announces one) follows the footer. From a pipe it
//!   cannot repair anything (it comes after what it protects), but it is read through to
//!   its end, which its first descriptor packet gives (copy A, packet 0, at the footer's end
//!   rounded up to 4096, naming this archive's length), and checked on the way as `test` of
//!   the file checks it: recovery shards against their checksums, both copies of every
//!   packet, the zero padding, the trailer ([`crate::recovery::check_stream`]; before, only
//!   the first packet and the trailer were, and a rotten shard passed `t -`). Bytes after
//!   the section's end, and a section that is cut short, damaged, or not
//!   found, are reported ([`Archive::stream_section_problem`]) as reading the file reports
//!   them: `test` exits 7 (damaged but repairable: `krypta repair` writes the archive as
//!   written, without bytes appended), `x` warns (not of zero padding after the section).
//!   Before this, the reader stopped at the footer: the writer of the pipe died of SIGPIPE,
//!   and bytes appended after the section passed `test` from a pipe though they failed it
//!   from the file.
//! - A section whose first packet does not check out has no known end: the input is read to
//!   its end, at most the archive's own length plus [`TRAILING_SEARCH`] (a section is at
//!   most half the archive, plus its packets), and is accepted as damaged-but-there only
//!   when its last 80 bytes are a trailer whose layout ends exactly there.

use super::header_read::TRAILING_SEARCH;
use super::*;
use crate::recovery::{Layout, PACKET_LEN, TRAILER_LEN};

/// Read size while draining.
const CHUNK: usize = 64 << 10;

/// What is wrong with what follows the footer of an archive with recovery data read from a
/// pipe ([`Archive::stream_section_problem`]).
#[derive(Debug, Clone)]
pub struct SectionProblem {
    /// What to say, with what to do about it.
    pub what: String,
    /// Worth a warning when the archive is only read (not zero padding after the section).
    pub warn: bool,
    /// The section is missing altogether (the input ends at the footer): nothing can
    /// rebuild it, so it is not "repairable".
    pub lost: bool,
}

/// Of the bytes drained after some point: how many, the last [`TRAILER_LEN`], all zero.
struct Drained {
    n: u64,
    tail: Vec<u8>,
    zeros: bool,
    /// Stopped at the limit, the input not at its end.
    capped: bool,
    /// A descriptor packet of the section protecting the bytes before the footer was among
    /// them (looked for only when asked: [`Archive::drain`]'s `packets_of`).
    packet_found: bool,
}

impl Archive {
    /// Reads what follows the footer, which ends at `at` (module doc).
    pub(super) fn read_stream_end(&mut self, at: u64) -> Result<()> {
        if self.header.recovery_percent().is_none() {
            return self.read_trailing(at);
        }
        if self.seekable() {
            // A file whose recovery section the recovery layer did not find, read the way a
            // pipe is: the section is the recovery layer's to judge (`repaired`).
            return Ok(());
        }
        let copy_a = crate::recovery::align_up(at).unwrap_or(u64::MAX);
        let head_len = (copy_a - at) as usize + PACKET_LEN;
        let mut head = vec![0u8; head_len];
        let got = self.read_more(&mut head)?;
        if got == 0 {
            // Nothing to rebuild it from: said as `t` of the file says it (helper-26: the
            // hint pointed to `krypta repair --check`).
            self.section_lost(
                "its recovery data is missing (the input ends at the footer: cut off?)".into(),
            );
            return Ok(());
        }
        let packet: &[u8; PACKET_LEN] = head[head_len - PACKET_LEN..].try_into().expect("len");
        if got < head_len {
            // The input ended before the section's first packet did: cut, not replaced, and
            // nothing of it is left to rebuild from (`t` of the file finds no section: helper-27).
            self.section_lost(format!(
                "its recovery data is cut short: the input ends {} after the footer, before the section's first descriptor packet ends (cut off?)",
                crate::counted(got as u64, "byte", "bytes")
            ));
            return Ok(());
        }
        let Some(layout) = crate::recovery::stream_packet_a0(packet, at) else {
            return self.section_without_packet(at, &head[..got]);
        };
        let padding_ok = head[..head_len - PACKET_LEN].iter().all(|&b| b == 0);
        let path = self.path.clone();
        let input = &mut self.input;
        let c =
            crate::recovery::check_stream(&layout, packet, &mut |b: &mut [u8]| read_full(input, b))
                .map_err(|e| Error::io(&path, "read", e))?;
        if let Some(end) = c.cut_at {
            // What was found before the cut is said too (helper-27: it was dropped).
            let before = c.problems();
            self.section_problem(format!(
                "its recovery data is cut short: the input ends {} bytes into the {}-byte section (cut off?){}",
                end - at,
                layout.section_len(),
                if before.is_empty() {
                    String::new()
                } else {
                    format!(", and before that: {}", before.join(", "))
                }
            ));
            return Ok(());
        }
        let mut problems = c.problems();
        if !padding_ok {
            problems.insert(
                0,
                "the zero padding after the footer does not check out".into(),
            );
        }
        if !problems.is_empty() {
            self.section_problem(format!(
                "its recovery data is damaged ({})",
                problems.join(", ")
            ));
        }
        // Bytes after the section: the file is not the one written, as `t` of the file says
        // (the recovery layer finds its trailer not at the end: exit 7, and `krypta repair`
        // writes the archive without them); zero padding is not worth a warning to `x`.
        if let Some((n, padding)) = self.bytes_after()? {
            let what = format!(
                "{} its recovery data at byte {} ({}): read without {} (krypta repair on the file writes the archive as it was written)",
                crate::bytes_follow(n),
                layout.file_len,
                if padding {
                    "zero padding"
                } else {
                    "a bad copy, or something appended?"
                },
                crate::them(n),
            );
            // After a problem in the section itself (its trailer damaged too), both are said.
            self.stream_section = Some(match self.stream_section.take() {
                Some(before) => SectionProblem {
                    what: format!("{}; {what}", before.what),
                    ..before
                },
                None => SectionProblem {
                    what,
                    warn: !padding,
                    lost: false,
                },
            });
        }
        Ok(())
    }

    /// Notes what is wrong with the section (module doc), with what to do about it.
    fn section_problem(&mut self, problem: String) {
        self.stream_section = Some(SectionProblem {
            what: format!(
                "{problem}: the archive does not need it to be read, but it is no longer protected as written (krypta repair --check on the file tells what its recovery data can still do)"
            ),
            warn: true,
            lost: false,
        });
    }

    /// Notes a section nothing can rebuild (nothing of it found): said as `t` of the file
    /// says it, not "repairable".
    fn section_lost(&mut self, problem: String) {
        self.stream_section = Some(SectionProblem {
            what: format!("{problem}, {}", crate::repaired::SECTION_LOST),
            warn: true,
            lost: true,
        });
    }

    /// A recovery section whose first packet did not check out (`head`: the bytes read
    /// after the footer so far, ending with the 4096 where that packet belongs): read to the
    /// end, and judged by its trailer, else by whether any packet of it is there (as `t` of
    /// the file finds a section by its trailer or, scanning back, by a packet).
    fn section_without_packet(&mut self, at: u64, head: &[u8]) -> Result<()> {
        let limit = at.saturating_add(TRAILING_SEARCH);
        let mut d = self.drain(limit, Some(at))?;
        d.packet_found |= head.len() >= PACKET_LEN
            && crate::recovery::packet_of(
                head[head.len() - PACKET_LEN..].try_into().expect("len"),
                at,
            );
        let total = head.len() as u64 + d.n;
        let mut last = head.to_vec();
        last.extend_from_slice(&d.tail);
        let last = &last[last.len().saturating_sub(TRAILER_LEN)..];
        let trailer = (last.len() == TRAILER_LEN && !d.capped)
            .then(|| crate::recovery::parse_trailer(last.try_into().expect("80")).ok())
            .flatten()
            .filter(|l: &Layout| l.params.protected_len == at && l.file_len == at + total);
        match trailer {
            Some(_) => self.section_problem(
                "its recovery data is damaged (its first descriptor packet does not check out)".into(),
            ),
            None if d.packet_found => self.section_problem(
                "its recovery data is damaged (its first descriptor packet and its trailer do not check out)".into(),
            ),
            None if d.capped => self.section_lost("the bytes after the footer (more than a recovery section of this archive could hold) are not the recovery data its header announces (damaged, or replaced)".into()),
            None => self.section_lost(format!(
                "the {} after the footer are not the recovery data its header announces (damaged, or replaced)",
                crate::counted(total, "byte", "bytes")
            )),
        }
        Ok(())
    }

    /// Bytes after the archive (and its recovery section), which ends at `at`: read and
    /// kept as [`Archive::trailing`] (module doc).
    fn read_trailing(&mut self, at: u64) -> Result<()> {
        if let Some((n, padding)) = self.bytes_after()? {
            self.stream_trailing = Some((at, n, padding));
        }
        Ok(())
    }

    /// The bytes after the archive, read at most [`TRAILING_SEARCH`]: how many (past the
    /// limit counted as one more, said "more than": `crate::bytes_follow`) and whether they
    /// are zero padding; None when the input ends there.
    fn bytes_after(&mut self) -> Result<Option<(u64, bool)>> {
        let d = self.drain(TRAILING_SEARCH, None)?;
        Ok((d.n > 0).then(|| (d.n + u64::from(d.capped), d.zeros && !d.capped)))
    }

    /// [`read_full`] of the input, an error naming the archive.
    fn read_more(&mut self, buf: &mut [u8]) -> Result<usize> {
        read_full(&mut self.input, buf).map_err(|e| Error::io(&self.path, "read", e))
    }

    /// Reads at most `limit` bytes more, and one more when it stops at the limit, to tell
    /// the input's end from more input (`capped`). With `packets_of` (the footer's
    /// end, L), each 4096 bytes read (the input positioned on a multiple of 4096) is
    /// checked for a descriptor packet of the section protecting L bytes (`packet_found`).
    fn drain(&mut self, limit: u64, packets_of: Option<u64>) -> Result<Drained> {
        let mut d = Drained {
            n: 0,
            tail: Vec::with_capacity(TRAILER_LEN),
            zeros: true,
            capped: false,
            packet_found: false,
        };
        let mut buf = vec![0u8; CHUNK];
        while d.n < limit {
            let want = (limit - d.n).min(CHUNK as u64) as usize;
            let got = self.read_more(&mut buf[..want])?;
            if got == 0 {
                return Ok(d);
            }
            let b = &buf[..got];
            if let Some(l) = packets_of
                && !d.packet_found
            {
                d.packet_found = b
                    .chunks_exact(PACKET_LEN)
                    .any(|p| crate::recovery::packet_of(p.try_into().expect("len"), l));
            }
            d.zeros &= b.iter().all(|&x| x == 0);
            d.n += got as u64;
            if got >= TRAILER_LEN {
                d.tail.clear();
                d.tail.extend_from_slice(&b[got - TRAILER_LEN..]);
            } else {
                d.tail.extend_from_slice(b);
                let cut = d.tail.len().saturating_sub(TRAILER_LEN);
                d.tail.drain(..cut);
            }
        }
        let mut one = [0u8; 1];
        d.capped = self.read_more(&mut one)? == 1;
        Ok(d)
    }

    /// Of an archive read from a pipe: what is wrong with the recovery section that follows
    /// its footer (cut short, damaged where checked, not found, bytes after it), if anything
    /// (module doc).
    pub fn stream_section_problem(&self) -> Option<&SectionProblem> {
        self.stream_section.as_ref()
    }
}
