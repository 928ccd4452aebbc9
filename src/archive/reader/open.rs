//! Opening an archive with its key: the signature policy, the file key from the stanzas,
//! the header tag (with one flipped bit undone under the key: `header_fix`), and the reader
//! state. Reading the header itself is `header_read`.

use super::header_read::{
    HeaderRead, beyond_repair, prefix_error, read_header, read_header_from, read_header_opened,
};
use super::*;

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
        Self::open_read(path, opts, read_header(path))
    }

    /// [`Archive::open`] of `input`, which [`crate::store::open_source`] (or
    /// [`crate::store::open_seekable`]) opened from `path`: for callers that look at the
    /// source first (is it a stream?), since a pipe cannot be opened twice.
    pub(super) fn open_opened(input: Input, path: &Path, opts: OpenOptions) -> Result<Archive> {
        Self::open_read(path, opts, read_header_opened(input, path))
    }

    /// [`Archive::open`] on a source already open; `name` labels errors.
    pub fn open_source(input: Input, name: &Path, opts: OpenOptions) -> Result<Archive> {
        let read = read_header_from(input, name)?;
        Self::open_parsed(name, opts, read)
    }

    /// [`Archive::open`] on archive bytes from any reader, read front to back as from a pipe
    /// (no seeks); `name` labels errors. For archives held in memory (known-answer vectors).
    pub fn open_stream(
        input: Box<dyn Read + Send>,
        name: &Path,
        opts: OpenOptions,
    ) -> Result<Archive> {
        let read = read_header_from(Box::new(crate::store::local::ReadSource::new(input)), name)?;
        Self::open_parsed(name, opts, read)
    }

    pub(super) fn open_parsed(
        path: &Path,
        opts: OpenOptions,
        (mut header, mut bytes, mut input, fixed): HeaderRead,
    ) -> Result<Archive> {
        // A fix not verified yet (`Fixed`): the error the header gave as read, if its tag
        // fails with the fix.
        let (mut header_fix, unfixed, others) = match fixed {
            Some(f) => (Some(f.fix), f.unverified, f.others),
            None => (None, None, Vec::new()),
        };
        if let Some(e) = &unfixed
            && !header.encrypted()
        {
            return Err(prefix_error(path, e.clone()));
        }
        // A delta archive from a stream whose base is damaged (its binding cannot be checked)
        // is spooled and read as a file, with its index first: the digests its entries are
        // checked with are decoded against the base's bytes too (a reference's END_DIGEST is
        // compressed against the base's own, docs/FORMAT.md §16.3), so only the index, which
        // holds them as written, tells a base forged to fit them from the real one.
        // What is found here is what `set_base` uses: found again there, a base changed in
        // between (a file rewritten in place, an object replaced) could be damaged for the
        // read but not for this check, and the stream read without its index; and a base
        // whose binding differs had every frame read twice (`damaged_frames`).
        let mut bound = None;
        if !input.seekable()
            && let (Some(base), Some((id, want))) = (&opts.base, header.delta_base())
            && base.id() == id
        {
            let b = binding_state(base, want)?;
            if matches!(b, Bound::Damaged(_)) {
                input = super::spool::spool_stream(
                    input,
                    &bytes,
                    header.recovery_percent().is_some(),
                    path,
                )?;
            }
            bound = Some(b);
        }
        // Signatures first (`signed`): the signer policy from the header, then a seekable
        // signed archive's signature, before any key is tried or asked for. Without a signer
        // required, a signature that fails on an encrypted header is held until the key
        // tells whether one flipped bit of the header is why (`header_fix`): the signature
        // is then checked again on the header as written, and a failure that stands is
        // reported as before, whatever the key did.
        let mut signature = match signed::begin(&mut input, path, &header, &bytes, &opts.signers) {
            Ok(s) => Ok(s),
            Err(e @ Error::Signature { .. })
                if opts.signers.is_empty()
                    && header.encrypted()
                    && bytes.len() <= header_fix::SEARCH_MAX =>
            {
                Err(e)
            }
            Err(e) => {
                return Err(match unfixed {
                    Some(o) => prefix_error(path, o),
                    None => e,
                });
            }
        };
        // Everything up to the header tag's check: with a fix not verified yet, a failure
        // here is the header's as read (the fix was not the header written).
        let keyed = (|| -> Result<_> {
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
            let mut file_key = None;
            let protection = if header.encrypted() {
                let has_password_stanza = header
                    .stanzas
                    .iter()
                    .any(|s| crate::crypto::stanza::stanza_kdf(s).is_some());
                // Only a prompt was given: it can answer a password stanza, nothing else.
                let can_prompt =
                    has_password_stanza && opts.identities.iter().any(|i| i.is_prompt());
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
                // The header's id first, then its one-bit neighbours (`header_fix`: a flipped
                // bit in the id makes every stanza fail).
                let ids: Vec<[u8; 16]> = std::iter::once(header.archive_id)
                    .chain(header_fix::id_neighbours(&header.archive_id))
                    .collect();
                let (key, which) = unwrap_among(
                    &opts.identities,
                    &header.stanzas,
                    &ids,
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
                    crate::crypto::CryptoError::KdfTooWeak { param, value, min } => {
                        Error::KdfTooWeak {
                            path: path.into(),
                            param,
                            value,
                            min,
                        }
                    }
                    crate::crypto::CryptoError::StanzaSet(f) => corrupt(path, 0, f),
                    crate::crypto::CryptoError::Prompt(m) => Error::Usage(m),
                    // Not a wrong password: the password could not be checked at all.
                    crate::crypto::CryptoError::Argon2Memory { bytes, .. } => {
                        crate::memory::argon2_out_of_memory(path, bytes, true)
                    }
                    _ => match header
                        .stanzas
                        .iter()
                        .filter(|s| matches!(s, crate::format::Stanza::Unknown { .. }))
                        .count()
                    {
                        0 => Error::AuthFailed {
                            path: path.into(),
                            check: AuthCheck::NoStanzaOpened,
                            detail: None,
                        },
                        unknown => Error::StanzasUnknown {
                            path: path.into(),
                            unknown,
                        },
                    },
                })?;
                file_key = Some(key.clone());
                // A stanza opened: the key is right, so a header tag that fails is the
                // header's damage, not a wrong key.
                let header_mac = || Error::HeaderDamaged { path: path.into() };
                if which > 0 {
                    // The stanza opened under a neighbour of the header's id: that bit is flipped
                    // (a second flip, beside a fix not verified yet, is not undone).
                    if let Some(e) = &unfixed {
                        return Err(prefix_error(path, e.clone()));
                    }
                    let fix = header_fix::id_fix(which - 1);
                    bytes[fix.byte] ^= 1 << fix.bit;
                    header.archive_id = ids[which];
                    header_fix = Some(fix);
                }
                let p = Protection::Sealed(Box::new(Subkeys::derive(&key, &header.archive_id)));
                let (body, tag) = bytes.split_at(bytes.len() - 32);
                let tag: [u8; 32] = tag.try_into().expect("32 bytes");
                if p.verify_header(body, &tag).is_err() {
                    let (fix, h, b) = match &unfixed {
                        // The first candidate is not the header written: the others, under
                        // the same key, or the header's error as read.
                        Some(e) => others
                            .iter()
                            .find(|(_, _, b)| {
                                let (body, tag) = b.split_at(b.len() - 32);
                                p.verify_header(body, tag.try_into().expect("32 bytes"))
                                    .is_ok()
                            })
                            .cloned()
                            .ok_or_else(|| prefix_error(path, e.clone()))?,
                        // One flipped bit elsewhere (not a second one: `header_fix`).
                        None => {
                            let id = header.archive_id;
                            let sealed = |h: &Header, body: &[u8], tag: &[u8; 32]| {
                                h.encrypted()
                                    && h.archive_id == id
                                    && p.verify_header(body, tag).is_ok()
                            };
                            header_fix
                                .is_none()
                                .then(|| header_fix::fix(&bytes, sealed))
                                .flatten()
                                .ok_or_else(header_mac)?
                        }
                    };
                    (header, bytes, header_fix) = (h, b, Some(fix));
                }
                if header_fix.is_some() {
                    // The signature, checked (or held) on the header as read: again on the
                    // header as written.
                    signature = signed::begin(&mut input, path, &header, &bytes, &opts.signers);
                }
                p
            } else {
                let p = Protection::Plain;
                let (body, tag) = bytes.split_at(bytes.len() - 32);
                let tag: [u8; 32] = tag.try_into().expect("32 bytes");
                p.verify_header(body, &tag).map_err(|_| Error::Integrity {
                    path: path.into(),
                    what: "header checksum mismatch".into(),
                })?;
                p
            };
            Ok((missing_beyond_recovery, file_key, protection))
        })();
        let (signature, (missing_beyond_recovery, file_key, protection)) =
            match (signature, keyed, unfixed) {
                (Ok(s), Ok(k), _) => (s, k),
                (_, _, Some(e)) => {
                    return Err(beyond_repair(&input, path, &bytes, prefix_error(path, e)));
                }
                (Err(e), _, None) | (Ok(_), Err(e), None) => {
                    return Err(beyond_repair(&input, path, &bytes, e));
                }
            };
        if let Some(fix) = header_fix
            && !opts.signers.is_empty()
        {
            // With a signer required, the file must be what was signed, bit for bit (§11,
            // "Signatures"): nothing is read past a changed bit, not even one undone.
            return Err(Error::Signature {
                path: path.into(),
                problem: crate::error::SignatureProblem::HeaderChanged {
                    byte: fix.byte,
                    bit: fix.bit,
                },
            });
        }
        // Decode workers: at most the cores the reading thread leaves free. The reading
        // thread is a busy one of its own (it parses records, hashes every file with BLAKE3
        // and writes it): `x -j 1` of a 121 MB tar already used 1.7 of 2 cores, and a second
        // decode worker on 2 cores only made both wait (a /usr/include tree: 545 ms at -j 2
        // against 483 ms at -j 1, medians of 5). So on N cores, `-j` gives at most N − 1
        // workers (at least 1), and the default is N − 1: `-j 2` is never slower than `-j 1`.
        let jobs = crate::archive::pipeline::decode_workers(opts.jobs);
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
            strict_signer: !opts.signers.is_empty(),
            file_key,
            walk_from: header_len,
            lost_before_walk: None,
            data_end: None,
            base: None,
            missing_beyond_recovery,
            undone_edit: None,
            header_fix,
            base_damage: None,
            replay,
            replayed_from: None,
            spool_stopped: None,
            stream_trailing: None,
            stream_section: None,
        };
        if let Some(b) = opts.base {
            ar.attach_base(b, bound)?;
        }
        if !opts.signers.is_empty() {
            ar.verify_signed_frames()?;
        }
        Ok(ar)
    }

    /// Gives a delta archive its base: refused ([`BaseError::Wrong`], naming both ids) unless
    /// the base's id and binding are those of the header's delta base extension, and
    /// ([`Error::Usage`]) for an archive that is not a delta archive.
    pub fn set_base(&mut self, base: Arc<BaseArchive>) -> Result<()> {
        self.attach_base(base, None)
    }

    /// [`Archive::set_base`], with the base's [`binding_state`] when it was found already
    /// (`open_parsed`, for a stream: it decided whether the stream is spooled).
    fn attach_base(&mut self, base: Arc<BaseArchive>, bound: Option<Bound>) -> Result<()> {
        let Some((want_id, want_binding)) = self.header.delta_base() else {
            return Err(Error::Usage(format!(
                "{}: --base given, but this is not a delta archive",
                crate::fs::shown(&self.path)
            )));
        };
        let wrong = || {
            Error::Base(BaseError::Wrong {
                path: self.path.clone(),
                base: base.path().to_path_buf(),
                want_id: base::hex(&want_id),
                got_id: base::hex(&base.id()),
                same_id: base.id() == want_id,
            })
        };
        if base.id() != want_id {
            return Err(wrong());
        }
        let bound = match bound {
            Some(b) => b,
            None => binding_state(&base, want_binding)?,
        };
        let damage = match bound {
            Bound::Yes => None,
            Bound::Damaged(why) => Some(why),
            Bound::Other => return Err(wrong()),
        };
        if let Some(why) = &damage
            && base.reproducible()
        {
            return Err(Error::Base(BaseError::Uncheckable {
                path: self.path.clone(),
                base: base.path().to_path_buf(),
                why: why.clone(),
                because: "its id is a reproducible archive's (SOURCE_DATE_EPOCH), which another archive of the same epoch shares: without its binding it cannot be told from one",
            }));
        }
        self.base_damage = damage;
        self.base = Some(base);
        Ok(())
    }

    /// Of a delta archive given a damaged base ([`Archive::set_base`]): the warning that says
    /// so and why its binding could not be checked.
    pub fn base_damage(&self) -> Option<String> {
        let (d, base) = (self.base_damage.as_ref()?, self.base.as_ref()?);
        Some(format!(
            "{}: its base {} (id {}) is damaged ({d}): its binding to this archive cannot be checked, so its intact frames are used, every entry read with it is compared with this archive's index (which holds each digest as written) before it is used, and what needs its damaged parts is named and not restored",
            crate::fs::shown(&self.path),
            crate::fs::shown(base.path()),
            base::hex(&base.id())
        ))
    }

    /// Of a delta archive given a damaged base, whose own index cannot be read either: the
    /// refusal ([`BaseError::Uncheckable`]). Its entries are compared with the delta's index
    /// before they are used, and that comparison is what stands in for the binding: the
    /// digests they are checked with are decoded against the base's bytes too (a reference's
    /// END_DIGEST is compressed against the base's own, docs/FORMAT.md §16.3), so without the
    /// index a base forged to fit them could not be told from the real one.
    pub(crate) fn refuse_unbound_base(&self) -> Result<()> {
        match (&self.base, &self.base_damage) {
            (Some(base), Some(why)) => Err(Error::Base(BaseError::Uncheckable {
                path: self.path.clone(),
                base: base.path().to_path_buf(),
                why: why.clone(),
                because: "this archive's own index, which every entry read with it must then equal, cannot be read either: its binding to this archive cannot be checked",
            })),
            _ => Ok(()),
        }
    }

    /// Of a delta archive given a damaged base: what is damaged (the words in parentheses
    /// of [`Archive::base_damage`]'s warning).
    pub fn base_damage_reason(&self) -> Option<&str> {
        self.base_damage.as_deref()
    }

    /// The base a delta archive is read with, once given ([`Archive::set_base`]).
    pub(crate) fn base(&self) -> Option<&Arc<BaseArchive>> {
        self.base.as_ref()
    }

    /// For `x` and `t`: a delta archive without its base is refused ([`BaseError::Required`],
    /// naming the base id) before anything is read or written.
    pub fn require_base(&self) -> Result<()> {
        match self.header.delta_base() {
            Some((id, _)) if self.base.is_none() => Err(Error::Base(BaseError::Required {
                path: self.path.clone(),
                base_id: base::hex(&id),
            })),
            _ => Ok(()),
        }
    }

    /// The verified header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Read with `--signer` as a stream: every fault before the signature verified refuses
    /// it (exit 8) instead of being salvaged past (`crate::unverifiable_stream`).
    pub(crate) fn strict_stream(&self) -> bool {
        self.strict_signer && !self.seekable()
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

    /// One flipped bit of the header the reader undid (`header_fix`): its tag verified with
    /// it undone, so every byte read after it is as written, but the file is not.
    pub fn header_fix(&self) -> Option<HeaderFix> {
        self.header_fix
    }

    /// Bytes after the footer, left out (`store::clamped` for a file, read past for a
    /// stream): where the archive ends, how many follow, whether all are zero (padding).
    pub fn trailing(&self) -> Option<(u64, u64, bool)> {
        self.input.trailing().or(self.stream_trailing)
    }

    /// An insertion or removal the reader undid without recovery data (its index found
    /// moved, `moved`): where, and bytes inserted (negative: removed).
    pub fn undone_edit(&self) -> Option<(u64, i64, u64)> {
        self.undone_edit
    }
}

/// How a base of the right id stands against the binding a delta archive names (see
/// [`binding_state`]).
enum Bound {
    /// Its binding is the one named.
    Yes,
    /// Damaged so that its binding cannot be checked: why.
    Damaged(String),
    /// Every frame verifies but the binding differs: another archive of that id.
    Other,
}

/// The binding is checked when it can be. A base of the right id whose binding cannot be
/// computed or differs is read only when it is damaged (docs/FORMAT.md §16.4; why that is
/// safe: `base`, "A damaged base"); one whose frames all verify is another archive of that
/// id (modified or re-created) and refused.
fn binding_state(base: &BaseArchive, want_binding: [u8; 32]) -> Result<Bound> {
    Ok(match base.unchecked() {
        Some(why) => Bound::Damaged(format!("its index cannot be read: {why}")),
        None if base.binding() == want_binding => Bound::Yes,
        None if base.binding_fetched_again_is(want_binding) => Bound::Yes,
        None => {
            let bad = base.damaged_frames()?;
            if bad.is_empty() {
                return Ok(Bound::Other);
            }
            let shown: Vec<String> = bad.iter().take(8).map(|s| s.to_string()).collect();
            Bound::Damaged(format!(
                "data frame{} {}{} {}",
                if bad.len() == 1 { "" } else { "s" },
                shown.join(", "),
                if bad.len() > 8 { ", ..." } else { "" },
                if bad.len() == 1 {
                    "fails its checks"
                } else {
                    "fail their checks"
                },
            ))
        }
    })
}
