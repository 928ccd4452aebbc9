//! Reading an archive's header with no key: the prefix and version dispatch, the header
//! itself (with one flipped bit undone where its tag allows: `header_fix`), the recovery
//! section's repair of what is read, and the key-less facts `info` shows. Opening with a key
//! is `open`.

use super::*;

/// Reads and parses the header of `path` (`-` = stdin) without any key: for `info`, and the
/// first step of [`Archive::open`]. Returns the header, its bytes and the input.
///
/// A seekable archive with a recovery section is read through a
/// [`crate::store::healing::HealingSource`], which ends at the protected length and repairs
/// what it reads. The section is found by its trailer (one 80-byte read at the end); when the
/// trailer is damaged or cut off, by a backward scan, but only when the header announces a
/// section or is damaged past its magic (a file that is not an archive is not scanned).
pub(super) fn read_header(path: &Path) -> Result<HeaderRead> {
    read_header_opened(crate::store::open_source(path)?, path)
}

/// [`read_header`] of `input`, which [`crate::store::open_source`] opened from `path` (a
/// seekable one may be opened again, to search it for recovery data).
pub(super) fn read_header_opened(input: Input, path: &Path) -> Result<HeaderRead> {
    let remote = input.refetcher().is_some();
    let first_version = input.identity();
    // From object storage, the search for recovery data that a header which does not parse
    // starts (it reads the whole object: `l` of a 20 MiB archive whose header length field
    // changed on the way read 21 MiB) waits for the second look below.
    match read_header_once(input, path, !remote) {
        // From object storage, a header that fails may have been changed on the way: it is
        // parsed again from a new fetch (one request, before any search for recovery data),
        // and read again in full only if it parses now (`second_look`); else it is read
        // again as before, searching for recovery data where the header asks for it.
        Err(e) if remote && super::second_look::header_may_have_changed(&e) => {
            let parses = crate::store::open_source(path)
                .ok()
                .and_then(|src| read_header_from(src, path).ok())
                .is_some_and(|r| r.3.is_none());
            if !parses {
                return match &e {
                    Error::Corrupt { .. } | Error::UnsupportedVersion { .. } => {
                        read_header_once(crate::store::open_source(path)?, path, true)
                    }
                    _ => Err(e),
                };
            }
            let again = read_header_once(crate::store::open_source(path)?, path, true)?;
            // Another version of the object (replaced meanwhile) is read as it is, but the
            // first failure is not called a transfer error.
            if let Some(r) = again.2.refetcher()
                && again.2.identity() == first_version
            {
                r.healed();
            }
            Ok(again)
        }
        r => r,
    }
}

/// [`read_header_opened`] without the second look; `scan`: a header that does not parse
/// (Corrupt, UnsupportedVersion) has the whole file searched for recovery data.
fn read_header_once(input: Input, path: &Path, scan: bool) -> Result<HeaderRead> {
    use crate::store::healing::{Search, protect};
    let input = match protect(input, path, Search::Trailer)? {
        Ok(healing) => return read_header_healed(healing, path),
        Err(input) => input,
    };
    if !input.seekable() {
        return read_header_from(input, path);
    }
    match read_header_from(input, path) {
        Ok((h, b, input, fix)) if h.recovery_percent().is_none() => Ok((h, b, input, fix)),
        Ok((h, b, input, fix)) => match protect(input, path, Search::Scan)? {
            Ok(healing) => read_header_healed(healing, path),
            Err(mut input) => {
                // Announced but not found: read without it (the commands say so).
                input
                    .seek_to(b.len() as u64)
                    .map_err(|e| Error::io(path, "seek", e))?;
                Ok((h, b, input, fix))
            }
        },
        Err(e @ (Error::Corrupt { .. } | Error::UnsupportedVersion { .. })) if !scan => Err(e),
        Err(e @ (Error::Corrupt { .. } | Error::UnsupportedVersion { .. })) => {
            match protect(crate::store::open_source(path)?, path, Search::Scan)? {
                Ok(healing) => read_header_healed(healing, path),
                Err(_) => Err(e),
            }
        }
        Err(Error::NotAnArchive {
            path: p,
            reason: "no krypta magic at the start",
        }) => {
            // Bytes inserted or removed in the first bytes (a bad copy): the trailer still
            // ends the file, one read says so, and the file is read with the edit undone.
            let mut again = crate::store::open_source(path)?;
            if again.seekable()
                && crate::store::healing::ends_with_shifted_trailer(&mut *again)
                && let Ok(healing) = protect(again, path, Search::Scan)?
            {
                return read_header_healed(healing, path);
            }
            Err(Error::NotAnArchive {
                path: p,
                // The reader does not search a file without the magic and without such a
                // trailer for recovery data (a file that is not an archive would be read
                // whole); `repair` does.
                reason: "no krypta magic at the start (if it is a damaged archive with recovery data whose trailer is damaged too, `krypta repair --check` searches it)",
            })
        }
        Err(e) => Err(e),
    }
}

/// [`read_header_from`] through recovery data. A header that does not read as one (no
/// magic, malformed, an unknown version) where the recovery data found its segment beyond
/// repair (reading it verified the segment) is reported as that damage (exit 5, as `repair
/// --check` says it), not as "not a krypta archive": the section just found proves the file
/// is one. The report is looked at only then: no read of its own (on an object, a request).
fn read_header_healed(
    healing: crate::store::healing::HealingSource,
    path: &Path,
) -> Result<HeaderRead> {
    let report = healing.report_handle();
    read_header_from(Box::new(healing), path).map_err(|e| match e {
        Error::NotAnArchive { .. } | Error::Corrupt { .. } | Error::UnsupportedVersion { .. } => {
            let beyond: Vec<_> = report()
                .beyond
                .into_iter()
                .filter(|b| b.start == 0)
                .collect();
            if beyond.is_empty() {
                e
            } else {
                Error::Recovery {
                    path: path.into(),
                    source: crate::recovery::RecoveryError::BeyondRepair { segments: beyond },
                }
            }
        }
        e => e,
    })
}

/// A header that fails its checks (no stanza opened, its tag or checksum fails, it does not
/// parse) where the recovery data found the segment holding it damaged beyond repair (reading
/// it verified the segment) is reported as that damage, exit 5 as `repair --check` says it:
/// the recovery data's checksums need no key, so they tell a damaged header from a wrong key
/// (before, such a header said "wrong key or password", exit 2, and sent the user looking for
/// another key). `header` is the header's bytes as read; the report is looked at only then.
pub(super) fn beyond_repair(input: &Input, path: &Path, header: &[u8], e: Error) -> Error {
    if !matches!(
        e,
        Error::AuthFailed {
            check: AuthCheck::NoStanzaOpened,
            ..
        } | Error::HeaderDamaged { .. }
            | Error::StanzasUnknown { .. }
            | Error::Integrity { .. }
            | Error::Corrupt { .. }
    ) {
        return e;
    }
    let beyond: Vec<_> = input
        .heal_report()
        .map(|r| r.beyond)
        .unwrap_or_default()
        .into_iter()
        .filter(|b| b.start < header.len() as u64)
        .collect();
    if beyond.is_empty() {
        return e;
    }
    Error::Recovery {
        path: path.into(),
        source: crate::recovery::RecoveryError::BeyondRepair { segments: beyond },
    }
}

/// How far back from the end of an archive without recovery data the footer is looked for
/// when the last 64 bytes are not its footer ([`footer_back`], `Archive::footer_back_keyed`):
/// 16 MiB, more than a tape block or a `dd conv=sync` block pads; also how much of a stream
/// is read past its footer.
pub const TRAILING_SEARCH: u64 = 16 << 20;

/// Where the archive ends: the end of the last 64 bytes of `input` (of length `len`, the
/// archive's header `header_len` bytes) followed by at most [`TRAILING_SEARCH`] bytes that
/// `is_footer` accepts, the last 64 bytes themselves first. None when none does, or the
/// bytes cannot be read.
pub(super) fn footer_back(
    input: &dyn crate::store::Source,
    header_len: u64,
    len: u64,
    is_footer: impl Fn(&[u8; FOOTER_LEN]) -> bool,
) -> Option<u64> {
    use crate::format::footer::FOOTER_MAGIC;
    let room = len.checked_sub(header_len + FOOTER_LEN as u64)?;
    let mut last = [0u8; FOOTER_LEN];
    crate::store::read_exact_at(input, len - FOOTER_LEN as u64, &mut last).ok()?;
    if is_footer(&last) {
        return Some(len);
    }
    // The footer and up to TRAILING_SEARCH bytes after it, as much as a stream reads past
    // its footer (helper-26: 16 MiB − 63 of zero padding was refused from a file, silent
    // from a pipe).
    let window = (room + FOOTER_LEN as u64).min(TRAILING_SEARCH + FOOTER_LEN as u64);
    let start = len - window;
    let mut buf = vec![0u8; window as usize];
    crate::store::read_exact_at(input, start, &mut buf).ok()?;
    (0..buf.len() - FOOTER_LEN)
        .rev()
        .find(|&p| {
            buf[p + 24..p + 32] == FOOTER_MAGIC
                && is_footer(buf[p..p + FOOTER_LEN].try_into().expect("64 bytes"))
        })
        .map(|p| start + (p + FOOTER_LEN) as u64)
}

/// Whether `fb` is a footer of the archive with header `header` (`header_len` bytes) read
/// from `input`: it parses, its tag verifies under `tag_key` (None: not checked, an encrypted
/// archive read without its key), and, with `index_too`, an index frame head with sequence
/// number D lies at its index offset (the footer of another archive with the same id stored
/// inside this one says an offset relative to that archive, where none starts).
pub(super) fn is_footer_of(
    input: &dyn crate::store::Source,
    header: &Header,
    header_len: u64,
    tag_key: Option<&Protection>,
    fb: &[u8; FOOTER_LEN],
    index_too: bool,
) -> bool {
    let Ok((ft, tag)) = Footer::parse(fb, header.version) else {
        return false;
    };
    let mut head = [0u8; FRAME_HEADER_LEN];
    tag_key.is_none_or(|p| p.verify_footer(&header.archive_id, &fb[..32], &tag).is_ok())
        && (!index_too
            || ft.index_offset >= header_len
                && crate::store::read_exact_at(input, ft.index_offset, &mut head).is_ok()
                && FrameHeader::parse(&head, header.version)
                    .is_ok_and(|h| h.kind == FrameKind::Index && h.seq == ft.data_frames))
}

/// `input` cut at `end`, its position moved to `pos`, with what follows counted.
pub(super) fn clamp_at(input: Input, pos: u64, end: u64) -> std::io::Result<Input> {
    let mut input = input;
    let len = input.length().ok().flatten().unwrap_or(end);
    let mut zeros = true;
    let mut at = end;
    let mut buf = vec![0u8; 64 << 10];
    while at < len && zeros {
        let n = buf.len().min((len - at) as usize);
        if crate::store::read_exact_at(&*input, at, &mut buf[..n]).is_err() {
            zeros = false;
            break;
        }
        zeros = buf[..n].iter().all(|&b| b == 0);
        at += n as u64;
    }
    Ok(Box::new(crate::store::clamped::Clamped::new(
        input,
        pos,
        end,
        len.saturating_sub(end),
        zeros,
    )?))
}

/// A header read: parsed, its bytes (one flipped bit undone when `fix` says so: its tag then
/// verified; else not checked yet), the input after it.
pub(super) type HeaderRead = (Header, Vec<u8>, Input, Option<Fixed>);

/// A flipped bit undone in a header read ([`HeaderRead`]): verified by the tag, or (an
/// encrypted header that did not parse, whose tag needs the key) still to be verified, with
/// the error the header gave as read, which stands if the tag fails.
#[derive(Debug, Clone)]
pub(super) struct Fixed {
    pub(super) fix: HeaderFix,
    pub(super) unverified: Option<PrefixError>,
    /// Further candidates not verified yet, with the same stanzas and id, to try in turn
    /// when `fix`'s tag fails (`header_fix::sealed_candidates`).
    pub(super) others: Vec<(HeaderFix, Header, Vec<u8>)>,
}

impl Fixed {
    fn verified(fix: HeaderFix) -> Fixed {
        Fixed {
            fix,
            unverified: None,
            others: Vec::new(),
        }
    }
}

/// [`read_header`] from an input already open; `path` names it in errors.
pub(super) fn read_header_from(mut input: Input, path: &Path) -> Result<HeaderRead> {
    let mut prefix = [0u8; PREFIX_LEN];
    let got = read_full(&mut input, &mut prefix).map_err(|e| Error::io(path, "read", e))?;
    if got == 0 {
        return Err(Error::NotAnArchive {
            path: path.into(),
            reason: "the file is empty",
        });
    }
    if got < PREFIX_LEN {
        if prefix[..got] == header::MAGIC[..got.min(8)] {
            return Err(corrupt(
                path,
                0,
                FormatError::Truncated {
                    what: "header",
                    needed: PREFIX_LEN as u64,
                    got: got as u64,
                },
            ));
        }
        return Err(Error::NotAnArchive {
            path: path.into(),
            reason: "too short to be a krypta archive",
        });
    }
    let prefix_ok = Prefix::parse(&prefix);
    // A prefix that does not parse may hold one flipped bit (`header_fix`): its header is
    // read to be searched when its length field is in the searched range.
    let header_len = match &prefix_ok {
        Ok(p) => p.header_len as usize,
        Err(_) => u32::from_le_bytes(prefix[12..16].try_into().expect("4 bytes")) as usize,
    };
    if let Err(e) = &prefix_ok
        && !(header::MIN_HEADER_LEN..=header_fix::SEARCH_MAX).contains(&header_len)
    {
        return Err(prefix_error(path, e.clone()));
    }
    let mut bytes = prefix.to_vec();
    bytes.resize(header_len, 0);
    let got =
        read_full(&mut input, &mut bytes[PREFIX_LEN..]).map_err(|e| Error::io(path, "read", e))?;
    if got < bytes.len() - PREFIX_LEN {
        return Err(match prefix_ok {
            Err(e) => prefix_error(path, e),
            Ok(_) => corrupt(
                path,
                0,
                FormatError::Truncated {
                    what: "header",
                    needed: header_len as u64,
                    got: (PREFIX_LEN + got) as u64,
                },
            ),
        });
    }
    // An unencrypted header's tag needs no key: one flipped bit is undone here, before
    // anything else reads the header (an encrypted one's once a stanza opened).
    let plain = |h: &Header, body: &[u8], tag: &[u8; 32]| {
        !h.encrypted() && Protection::Plain.verify_header(body, tag).is_ok()
    };
    match prefix_ok.and_then(|_| Header::parse(&bytes)) {
        Ok((h, tag)) if h.encrypted() || plain(&h, &bytes[..bytes.len() - 32], &tag) => {
            Ok((h, bytes, input, None))
        }
        Ok((h, _)) => match header_fix::fix(&bytes, plain) {
            Some((fix, h, bytes)) => Ok((h, bytes, input, Some(Fixed::verified(fix)))),
            // The tag's failure is reported where it is checked, as before.
            None => Ok((h, bytes, input, None)),
        },
        Err(e) => match header_fix::fix(&bytes, plain) {
            Some((fix, h, bytes)) => Ok((h, bytes, input, Some(Fixed::verified(fix)))),
            None => {
                // Checked by their tags once a stanza opened (`Archive::open_parsed`): the
                // first is read, the others kept.
                let mut candidates = header_fix::sealed_candidates(&bytes).into_iter();
                match candidates.next() {
                    Some((fix, h, bytes)) => Ok((
                        h,
                        bytes,
                        input,
                        Some(Fixed {
                            fix,
                            unverified: Some(e),
                            others: candidates.collect(),
                        }),
                    )),
                    None => Err(prefix_error(path, e)),
                }
            }
        },
    }
}

pub(super) fn prefix_error(path: &Path, e: PrefixError) -> Error {
    match e {
        PrefixError::NotAnArchive => Error::NotAnArchive {
            path: path.into(),
            reason: "no krypta magic at the start",
        },
        PrefixError::Version(v) => Error::UnsupportedVersion {
            path: path.into(),
            version: v,
            supported: header::VERSION,
        },
        PrefixError::Format(f) => corrupt(path, 0, f),
    }
}

/// A structure that does not parse ([`Error::Corrupt`]), or one that needs a newer krypta
/// ([`Error::Unsupported`]).
pub(super) fn corrupt(path: &Path, offset: u64, source: FormatError) -> Error {
    match source {
        FormatError::NeedsNewer { .. } => Error::Unsupported {
            path: path.into(),
            offset,
            source,
        },
        source => Error::Corrupt {
            path: path.into(),
            offset,
            source,
        },
    }
}

/// Reads only the header (no key needed): what `info` shows.
pub fn read_header_only(path: &Path) -> Result<Header> {
    Ok(read_header(path)?.0)
}

/// Facts about an archive available without a key (for `info`).
#[derive(Debug, Clone)]
pub struct ArchiveFacts {
    /// The header.
    pub header: Header,
    /// Header length, bytes.
    pub header_len: u64,
    /// Total size, bytes (None for a stream).
    pub size: Option<u64>,
    /// The footer, when the input is a file (its tag verified only for unencrypted archives).
    pub footer: Option<Footer>,
    /// Lines for `-v` about a remote archive: where it was read from, what that cost.
    pub details: Vec<String>,
    /// The recovery section, when one was found (what reading the header and footer
    /// repaired with it, too).
    pub recovery: Option<crate::store::healing::HealReport>,
    /// A signed archive's signature, checked without a key when the input is seekable:
    /// `Ok(())` verified, `Err(why)` refused; `None` unsigned, or a stream (not checked).
    pub signature: Option<std::result::Result<(), String>>,
    /// One flipped bit of an unencrypted header, undone by its tag (`header_fix`).
    pub header_fix: Option<HeaderFix>,
    /// Bytes after the footer (FORMAT §11 step 8): where the archive ends, how many follow,
    /// whether all are zero; the footer shown is the archive's, found before them.
    pub trailing: Option<(u64, u64, bool)>,
    /// An encrypted file whose last 64 bytes parse as a footer whose index is not where it
    /// says, with no footer of it found before them (more than TRAILING_SEARCH bytes
    /// appended, or its index head damaged): `footer` is None (its counts unknown).
    pub footer_unknown: bool,
}

/// Reads the header and (for a file) the footer without any key.
pub fn facts(path: &Path) -> Result<ArchiveFacts> {
    let (header, bytes, mut input, fixed) = read_header(path)?;
    // An encrypted header's fix needs the key to be checked: without one, the header is
    // refused as read.
    let header_fix = match fixed {
        Some(Fixed {
            unverified: Some(e),
            ..
        }) => return Err(prefix_error(path, e)),
        f => f.map(|f| f.fix),
    };
    let header_len = bytes.len() as u64;
    let signature = (header.signer().is_some() && input.seekable()).then(|| {
        super::signed::walk_and_verify(&mut input, path, &header, &bytes)
            .map(|_| ())
            .map_err(|e| match e {
                Error::Signature { problem, .. } => problem.to_string(),
                e => e.to_string(),
            })
    });
    let mut footer = None;
    let mut size = None;
    let mut trailing = None;
    let mut footer_unknown = false;
    if let Some(len) = input.length().map_err(|e| Error::io(path, "seek", e))? {
        size = Some(len);
        if header.recovery_percent().is_some() && input.heal_report().is_none() {
            // The footer ends the protected bytes, which a recovery section follows: it is
            // not at the end of the file, and the section was not found to say where it is.
        } else if len >= header_len + FOOTER_LEN as u64 {
            // Bytes after the footer (FORMAT §11 step 8): the footer is where the last 64
            // bytes that are one end (for an encrypted archive, whose MAC needs the key: that
            // parse and whose first index frame is where they say). The last 64 bytes are
            // checked as before (one read: `info` of an object costs two requests); only a
            // footer found further back needs its index head read.
            let plain = Protection::Plain;
            let tag_key = (!header.encrypted()).then_some(&plain);
            let ours = |fb: &[u8; FOOTER_LEN], index_too: bool| {
                is_footer_of(&*input, &header, header_len, tag_key, fb, index_too)
            };
            let mut last = [0u8; FOOTER_LEN];
            let last_read =
                crate::store::read_exact_at(&*input, len - FOOTER_LEN as u64, &mut last).is_ok();
            // Without its key an encrypted footer's tag cannot be checked: the last 64 bytes
            // of `cat e.kry e2.kry` parse as e2's footer, and `info` showed e2's counts. Its
            // index head must then be where it says, as for a footer found further back.
            let found = if last_read && ours(&last, header.encrypted()) {
                Some(len)
            } else {
                footer_back(&*input, header_len, len, |fb| ours(fb, true))
            };
            if found.is_none()
                && header.encrypted()
                && last_read
                && Footer::parse(&last, header.version).is_ok()
            {
                // Its last 64 bytes parse, but their index is not where they say and no footer
                // of it lies within TRAILING_SEARCH of the end (more than that appended, or
                // its index head damaged): without the key nothing tells which. Its counts
                // are not shown rather than maybe another archive's.
                footer_unknown = true;
            } else {
                let end = found.unwrap_or(len);
                let mut fb = last;
                if end != len || !last_read {
                    crate::store::read_exact_at(&*input, end - FOOTER_LEN as u64, &mut fb)
                        .map_err(|e| Error::io(path, "read", e))?;
                }
                if end != len {
                    // At most TRAILING_SEARCH bytes (`footer_back`), read to tell zero padding.
                    let mut rest = vec![0u8; (len - end) as usize];
                    crate::store::read_exact_at(&*input, end, &mut rest)
                        .map_err(|e| Error::io(path, "read", e))?;
                    trailing = Some((end, len - end, rest.iter().all(|&b| b == 0)));
                }
                let (ft, tag) = Footer::parse(&fb, header.version)
                    .map_err(|e| corrupt(path, end - FOOTER_LEN as u64, e))?;
                if !header.encrypted() {
                    let p = Protection::Plain;
                    p.verify_header(
                        &bytes[..bytes.len() - 32],
                        bytes[bytes.len() - 32..].try_into().expect("32"),
                    )
                    .map_err(|_| Error::Integrity {
                        path: path.into(),
                        what: "header checksum mismatch".into(),
                    })?;
                    p.verify_footer(&header.archive_id, &fb[..32], &tag)
                        .map_err(|_| Error::Integrity {
                            path: path.into(),
                            what: format!(
                                "footer checksum mismatch at byte {}",
                                end - FOOTER_LEN as u64
                            ),
                        })?;
                }
                footer = Some(ft);
            }
        } else {
            return Err(corrupt(
                path,
                len,
                FormatError::Truncated {
                    what: "archive",
                    needed: header_len + FOOTER_LEN as u64,
                    got: len,
                },
            ));
        }
    }
    let mut details: Vec<String> = input.describe().into_iter().collect();
    if let Some(c) = input.counters() {
        details.push(format!("{}: {}", crate::fs::shown(path), c.summary()));
    }
    let recovery = input.heal_report();
    if let Some(r) = &recovery {
        // `size` is the whole file; the protected bytes end where the section begins.
        size = Some(r.located.source_len);
    }
    let signature = match (signature, header_fix) {
        // Verified over the header as written, not as it is in the file: `--signer` refuses.
        (Some(Ok(())), Some(f)) => Some(Err(format!(
            "the header is not what was signed (bit {} of byte {} is flipped: damaged or modified); with it undone the signature verifies",
            f.bit, f.byte
        ))),
        (s, _) => s,
    };
    Ok(ArchiveFacts {
        header,
        header_len,
        size,
        footer,
        details,
        recovery,
        signature,
        header_fix,
        trailing,
        footer_unknown,
    })
}
