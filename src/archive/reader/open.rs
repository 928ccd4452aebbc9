//! Opening an archive: the header prefix and version dispatch, the header itself, the file
//! key from the stanzas, the header tag; and the key-less facts `info` shows.

use super::*;

/// Reads and parses the header of `path` (`-` = stdin) without any key: for `info`, and the
/// first step of [`Archive::open`]. Returns the header, its bytes and the input.
///
/// A seekable archive with a recovery section is read through a
/// [`crate::store::healing::HealingSource`], which ends at the protected length and repairs
/// what it reads. The section is found by its trailer (one 80-byte read at the end); when the
/// trailer is damaged or cut off, by a backward scan, but only when the header announces a
/// section or is damaged past its magic (a file that is not an archive is not scanned).
pub(super) fn read_header(path: &Path) -> Result<(Header, Vec<u8>, Input)> {
    read_header_opened(crate::store::open_source(path)?, path)
}

/// [`read_header`] of `input`, which [`crate::store::open_source`] opened from `path` (a
/// seekable one may be opened again, to search it for recovery data).
fn read_header_opened(input: Input, path: &Path) -> Result<(Header, Vec<u8>, Input)> {
    use crate::store::healing::{Search, protect};
    let input = match protect(input, path, Search::Trailer)? {
        Ok(healing) => return read_header_from(Box::new(healing), path),
        Err(input) => input,
    };
    if !input.seekable() {
        return read_header_from(input, path);
    }
    match read_header_from(input, path) {
        Ok((h, b, input)) if h.recovery_percent().is_none() => Ok((h, b, input)),
        Ok((h, b, input)) => match protect(input, path, Search::Scan)? {
            Ok(healing) => read_header_from(Box::new(healing), path),
            Err(mut input) => {
                // Announced but not found: read without it (the commands say so).
                input
                    .seek_to(b.len() as u64)
                    .map_err(|e| Error::io(path, "seek", e))?;
                Ok((h, b, input))
            }
        },
        Err(e @ (Error::Corrupt { .. } | Error::UnsupportedVersion { .. })) => {
            match protect(crate::store::open_source(path)?, path, Search::Scan)? {
                Ok(healing) => read_header_from(Box::new(healing), path),
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
                return read_header_from(Box::new(healing), path);
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

/// [`read_header`] from an input already open; `path` names it in errors.
pub(super) fn read_header_from(mut input: Input, path: &Path) -> Result<(Header, Vec<u8>, Input)> {
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
    let p = Prefix::parse(&prefix).map_err(|e| prefix_error(path, e))?;
    let mut bytes = prefix.to_vec();
    bytes.resize(p.header_len as usize, 0);
    let got =
        read_full(&mut input, &mut bytes[PREFIX_LEN..]).map_err(|e| Error::io(path, "read", e))?;
    if got < bytes.len() - PREFIX_LEN {
        return Err(corrupt(
            path,
            0,
            FormatError::Truncated {
                what: "header",
                needed: p.header_len as u64,
                got: (PREFIX_LEN + got) as u64,
            },
        ));
    }
    let (h, _tag) = Header::parse(&bytes).map_err(|e| prefix_error(path, e))?;
    Ok((h, bytes, input))
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
}

/// Reads the header and (for a file) the footer without any key.
pub fn facts(path: &Path) -> Result<ArchiveFacts> {
    let (header, bytes, mut input) = read_header(path)?;
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
    if let Some(len) = input.length().map_err(|e| Error::io(path, "seek", e))? {
        size = Some(len);
        if header.recovery_percent().is_some() && input.heal_report().is_none() {
            // The footer ends the protected bytes, which a recovery section follows: it is
            // not at the end of the file, and the section was not found to say where it is.
        } else if len >= header_len + FOOTER_LEN as u64 {
            let mut fb = [0u8; FOOTER_LEN];
            input
                .seek_to(len - FOOTER_LEN as u64)
                .map_err(|e| Error::io(path, "seek", e))?;
            input
                .read_exact(&mut fb)
                .map_err(|e| Error::io(path, "read", e))?;
            let (ft, tag) = Footer::parse(&fb, header.version)
                .map_err(|e| corrupt(path, len - FOOTER_LEN as u64, e))?;
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
                        what: "footer checksum mismatch".into(),
                    })?;
            }
            footer = Some(ft);
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
        details.push(format!("{}: {}", path.display(), c.summary()));
    }
    let recovery = input.heal_report();
    if let Some(r) = &recovery {
        // `size` is the whole file; the protected bytes end where the section begins.
        size = Some(r.located.source_len);
    }
    Ok(ArchiveFacts {
        header,
        header_len,
        size,
        footer,
        details,
        recovery,
        signature,
    })
}

impl Archive {
    /// Opens `path` (`-` = stdin): parses the header, recovers the file key from the first
    /// stanza an identity opens (encrypted archives), and verifies the header tag.
    ///
    /// Errors: NotAnArchive, UnsupportedVersion, Corrupt (malformed header), KeyRequired (an
    /// encrypted archive and no identities), NotEncrypted (identities given, an unencrypted
    /// archive and not `allow_unencrypted`), KdfLimit and KdfTooWeak (the password stanza,
    /// when a password is tried on it), AuthFailed (no stanza opened or the
    /// header MAC failed), Integrity (unencrypted header checksum), Io.
    pub fn open(path: &Path, opts: OpenOptions) -> Result<Archive> {
        let (header, bytes, input) = read_header(path)?;
        Self::open_parsed(path, opts, header, bytes, input)
    }

    /// [`Archive::open`] of `input`, which [`crate::store::open_source`] (or
    /// [`crate::store::open_seekable`]) opened from `path`: for callers that look at the
    /// source first (is it a stream?), since a pipe cannot be opened twice.
    pub(super) fn open_opened(input: Input, path: &Path, opts: OpenOptions) -> Result<Archive> {
        let (header, bytes, input) = read_header_opened(input, path)?;
        Self::open_parsed(path, opts, header, bytes, input)
    }

    /// [`Archive::open`] on a source already open; `name` labels errors.
    pub fn open_source(input: Input, name: &Path, opts: OpenOptions) -> Result<Archive> {
        let (header, bytes, input) = read_header_from(input, name)?;
        Self::open_parsed(name, opts, header, bytes, input)
    }

    /// [`Archive::open`] on archive bytes from any reader, read front to back as from a pipe
    /// (no seeks); `name` labels errors. For archives held in memory (known-answer vectors).
    pub fn open_stream(
        input: Box<dyn Read + Send>,
        name: &Path,
        opts: OpenOptions,
    ) -> Result<Archive> {
        let (header, bytes, input) =
            read_header_from(Box::new(crate::store::local::ReadSource::new(input)), name)?;
        Self::open_parsed(name, opts, header, bytes, input)
    }

    pub(super) fn open_parsed(
        path: &Path,
        opts: OpenOptions,
        header: Header,
        bytes: Vec<u8>,
        mut input: Input,
    ) -> Result<Archive> {
        // Signatures first (`signed`): the signer policy from the header, then a seekable
        // signed archive's signature, before any key is tried or asked for.
        let signature = signed::begin(&mut input, path, &header, &bytes, &opts.signers)?;
        let missing_beyond_recovery = if header.recovery_percent().is_some()
            && input.seekable()
            && input.heal_report().is_none()
        {
            crate::store::healing::missing_beyond_recovery(&mut *input)
        } else {
            None
        };
        // A prompt (`Identity::Prompt`) is no key the caller gave: it asks only when needed.
        let keys_given = opts.identities.iter().any(|i| !i.is_prompt());
        if !header.encrypted() && keys_given && !opts.allow_unencrypted {
            return Err(Error::NotEncrypted { path: path.into() });
        }
        let (body, tag) = bytes.split_at(bytes.len() - 32);
        let tag: [u8; 32] = tag.try_into().expect("32 bytes");
        let mut file_key = None;
        let protection = if header.encrypted() {
            let has_password_stanza = header
                .stanzas
                .iter()
                .any(|s| crate::crypto::stanza::stanza_kdf(s).is_some());
            // Only a prompt was given: it can answer a password stanza, nothing else.
            let can_prompt = has_password_stanza && opts.identities.iter().any(|i| i.is_prompt());
            let needs = crate::error::KeyNeeds {
                password: has_password_stanza,
                keyfile: header
                    .stanzas
                    .iter()
                    .any(|s| matches!(s, crate::format::Stanza::KeyFile { .. })),
                pqbox: header
                    .stanzas
                    .iter()
                    .any(|s| matches!(s, crate::format::Stanza::PqBox { .. })),
            };
            // Keys were given, none of a kind any stanza opens with (the header's stanza kinds
            // are public, as `info` shows): the key the archive needs is missing, exit 1,
            // not a wrong key. Unknown kinds may open with anything: tried as before.
            let unknown = header
                .stanzas
                .iter()
                .any(|s| matches!(s, crate::format::Stanza::Unknown { .. }));
            let unfit = keys_given
                && !unknown
                && !opts.identities.iter().any(|i| match i {
                    Identity::Password(_) | Identity::Prompt(_) => needs.password,
                    Identity::KeyFile(_) => needs.keyfile,
                    Identity::PqBox(_) => needs.pqbox,
                });
            if (!keys_given && !can_prompt) || unfit {
                let mut kinds: Vec<&str> = header.stanzas.iter().map(|s| s.name()).collect();
                kinds.dedup();
                return Err(Error::KeyRequired {
                    path: path.into(),
                    kinds: kinds.join(", "),
                    needs,
                    unfit,
                });
            }
            let key = unwrap_versioned(
                &opts.identities,
                &header.stanzas,
                &header.archive_id,
                header.version as u16,
            )
            .map_err(|e| match e {
                crate::crypto::CryptoError::KdfLimit {
                    param,
                    value,
                    limit,
                } => Error::KdfLimit {
                    path: path.into(),
                    param,
                    value,
                    limit,
                },
                crate::crypto::CryptoError::KdfTooWeak { param, value, min } => Error::KdfTooWeak {
                    path: path.into(),
                    param,
                    value,
                    min,
                },
                crate::crypto::CryptoError::StanzaSet(f) => corrupt(path, 0, f),
                crate::crypto::CryptoError::Prompt(m) => Error::Usage(m),
                _ => match header
                    .stanzas
                    .iter()
                    .filter(|s| matches!(s, crate::format::Stanza::Unknown { .. }))
                    .count()
                {
                    0 => Error::AuthFailed {
                        path: path.into(),
                        check: AuthCheck::NoStanzaOpened,
                    },
                    unknown => Error::StanzasUnknown {
                        path: path.into(),
                        unknown,
                    },
                },
            })?;
            file_key = Some(key.clone());
            let p = Protection::Sealed(Box::new(Subkeys::derive(&key, &header.archive_id)));
            p.verify_header(body, &tag).map_err(|_| Error::AuthFailed {
                path: path.into(),
                check: AuthCheck::HeaderMac,
            })?;
            p
        } else {
            let p = Protection::Plain;
            p.verify_header(body, &tag).map_err(|_| Error::Integrity {
                path: path.into(),
                what: "header checksum mismatch".into(),
            })?;
            p
        };
        // Decode workers: at most the cores the reading thread leaves free. The reading
        // thread is a busy one of its own (it parses records, hashes every file with BLAKE3
        // and writes it): `x -j 1` of a 121 MB tar already used 1.7 of 2 cores, and a second
        // decode worker on 2 cores only made both wait (a /usr/include tree: 545 ms at -j 2
        // against 483 ms at -j 1, medians of 5). So on N cores, `-j` gives at most N − 1
        // workers (at least 1), and the default is N − 1: `-j 2` is never slower than `-j 1`.
        let free = crate::archive::pipeline::cores_beside_caller();
        let jobs = if opts.jobs == 0 {
            free
        } else {
            opts.jobs.min(free)
        };
        let header_len = bytes.len() as u64;
        // Spare buffers for the blocks in flight, within the recycling budget (see the writer).
        let in_flight = crate::archive::pipeline::max_in_flight(jobs, header.block_size as usize);
        let keep = crate::archive::pipeline::recycle_count(in_flight, header.block_size as usize);
        let buffers = ReadBuffers {
            bodies: Buffers::new(keep),
            blocks: Buffers::keeping_one(keep),
        };
        // A delta archive from a stream keeps the bytes of the frames read ahead (`replay`).
        let (input, replay) = if !input.seekable() && header.delta_base().is_some() {
            let (k, r) = replay::Keeping::new(input, header_len);
            (Box::new(k) as Input, Some(r))
        } else {
            (input, None)
        };
        let mut ar = Archive {
            input,
            path: path.into(),
            version: header.version,
            header,
            header_len,
            protection: Arc::new(protection),
            jobs,
            pos: header_len,
            last_head: None,
            last_fault: [
                std::sync::atomic::AtomicU64::new(u64::MAX),
                std::sync::atomic::AtomicU64::new(u64::MAX),
            ],
            pending_frame: None,
            buffers,
            in_flight_base: opts
                .in_flight_budget
                .unwrap_or(crate::archive::pipeline::IN_FLIGHT_BUDGET as u64),
            signature,
            file_key,
            walk_from: header_len,
            lost_before_walk: None,
            data_end: None,
            base: None,
            missing_beyond_recovery,
            undone_edit: None,
            base_damage: None,
            replay,
            replayed_from: None,
        };
        if let Some(b) = opts.base {
            ar.set_base(b)?;
        }
        if !opts.signers.is_empty() {
            ar.verify_signed_frames()?;
        }
        Ok(ar)
    }

    /// Gives a delta archive its base: refused ([`Error::WrongBase`], naming both ids) unless
    /// the base's id and binding are those of the header's delta base extension, and
    /// ([`Error::Usage`]) for an archive that is not a delta archive.
    pub fn set_base(&mut self, base: Arc<BaseArchive>) -> Result<()> {
        let Some((want_id, want_binding)) = self.header.delta_base() else {
            return Err(Error::Usage(format!(
                "{}: --base given, but this is not a delta archive",
                self.path.display()
            )));
        };
        let wrong = || Error::WrongBase {
            path: self.path.clone(),
            base: base.path().to_path_buf(),
            want_id: base::hex(&want_id),
            got_id: base::hex(&base.id()),
            same_id: base.id() == want_id,
        };
        if base.id() != want_id {
            return Err(wrong());
        }
        // The binding is checked when it can be. A base of the right id whose binding cannot
        // be computed or differs is read only when it is damaged (docs/FORMAT.md §16.4; why
        // that is safe: `base`, "A damaged base"); one whose frames all verify is another
        // archive of that id (modified or re-created) and refused.
        let damage = match base.unchecked() {
            Some(why) => Some(format!("its index cannot be read: {why}")),
            None if base.binding() == want_binding => None,
            None => {
                let bad = base.damaged_frames()?;
                if bad.is_empty() {
                    return Err(wrong());
                }
                let shown: Vec<String> = bad.iter().take(8).map(|s| s.to_string()).collect();
                Some(format!(
                    "data frame{} {}{} fail{} their checks",
                    if bad.len() == 1 { "" } else { "s" },
                    shown.join(", "),
                    if bad.len() > 8 { ", ..." } else { "" },
                    if bad.len() == 1 { "s" } else { "" },
                ))
            }
        };
        if let Some(why) = &damage
            && base.reproducible()
        {
            return Err(Error::UncheckableBase {
                path: self.path.clone(),
                base: base.path().to_path_buf(),
                why: why.clone(),
            });
        }
        self.base_damage = damage.map(|d| {
            format!(
                "{}: its base {} (id {}) is damaged ({d}): its binding to this archive cannot be checked, so its intact frames are used, every file read from it is checked by its digest, and what needs its damaged parts is named and not restored",
                self.path.display(),
                base.path().display(),
                base::hex(&want_id)
            )
        });
        self.base = Some(base);
        Ok(())
    }

    /// Of a delta archive given a damaged base ([`Archive::set_base`]): the warning that says
    /// so and why its binding could not be checked.
    pub fn base_damage(&self) -> Option<&str> {
        self.base_damage.as_deref()
    }

    /// The base a delta archive is read with, once given ([`Archive::set_base`]).
    pub(crate) fn base(&self) -> Option<&Arc<BaseArchive>> {
        self.base.as_ref()
    }

    /// For `x` and `t`: a delta archive without its base is refused ([`Error::BaseRequired`],
    /// naming the base id) before anything is read or written.
    pub fn require_base(&self) -> Result<()> {
        match self.header.delta_base() {
            Some((id, _)) if self.base.is_none() => Err(Error::BaseRequired {
                path: self.path.clone(),
                base_id: base::hex(&id),
            }),
            _ => Ok(()),
        }
    }

    /// The verified header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// True when the input can seek (a file or an object, not a pipe).
    pub fn seekable(&self) -> bool {
        self.input.seekable()
    }

    /// Checks the parts of the recovery section that reading the archive does not touch
    /// (recovery shards, both descriptor copies, the trailer); None without a section found.
    pub fn check_recovery_section(&mut self) -> Option<crate::store::healing::SectionCheck> {
        self.input.check_section()
    }

    /// Where the archive bytes come from (transfer counters, `-v` description).
    pub fn source(&self) -> &dyn crate::store::Source {
        self.input.as_ref()
    }

    /// When the header announces recovery data that was not used because more bytes are
    /// missing than it can rebuild: (missing, written, rebuildable).
    pub fn missing_beyond_recovery(&self) -> Option<(u64, u64, u64)> {
        self.missing_beyond_recovery
    }

    /// An insertion or removal the reader undid without recovery data (its index found
    /// moved, `moved`): where, and bytes inserted (negative: removed).
    pub fn undone_edit(&self) -> Option<(u64, i64, u64)> {
        self.undone_edit
    }
}
