//! The index and the footer: located from the end of a seekable archive, or reached past the
//! data frames of a stream; checked against each other (frame table, offsets) and against
//! the entry-set rules (FORMAT.md §7.3).

use super::*;

impl Archive {
    /// Seeks back to the first data frame (after [`Archive::read_index`]).
    pub fn rewind_to_data(&mut self) -> Result<()> {
        self.pending_frame = None;
        self.seek_to(self.header_len)
    }

    /// Where a seekable archive's verified footer says the index starts (within the file):
    /// bytes from there on are the index's, not data frames'. None when the input is not
    /// seekable or the footer does not verify.
    pub(crate) fn verified_index_offset(&mut self) -> Option<u64> {
        let len = match self.input.length() {
            Ok(Some(len)) if self.input.seekable() => len,
            _ => return None,
        };
        let foot_at = len.checked_sub(FOOTER_LEN as u64)?;
        let mut fb = [0u8; FOOTER_LEN];
        self.seek_to(foot_at).ok()?;
        self.read_exact_at_pos(&mut fb, "footer").ok()?;
        let footer = self.check_footer_fetched_again(foot_at, &mut fb).ok()?;
        (footer.index_offset >= self.header_len && footer.index_offset < foot_at)
            .then_some(footer.index_offset)
    }

    /// Reads the index of a stream: data frames are read past (their sequence checked, not
    /// decoded), then the index frames and the footer are verified.
    pub fn read_index_streaming(&mut self) -> Result<Index> {
        let (seq, index_offset) = self.read_past_data_frames(true)?;
        let index = self.read_index_and_footer(seq, index_offset)?;
        self.check_entry_set(&index)?;
        Ok(index)
    }

    /// Reads the data frames from the current position without decoding them, checking
    /// their sequence (and, with `check_last`, their LAST flag), up to the first index frame,
    /// which is kept for [`Archive::read_index_and_footer`]. Returns the data frame count and
    /// the index frame's offset.
    fn read_past_data_frames(&mut self, check_last: bool) -> Result<(u64, u64)> {
        let mut seq = 0u64;
        loop {
            let job = self.read_frame()?;
            if job.header.kind == FrameKind::Index {
                let at = job.offset;
                self.pending_frame = Some(job);
                return Ok((seq, at));
            }
            if job.header.seq != seq {
                let structure = self.sequence_error(
                    job.offset,
                    format!("expected data frame seq {seq}, found {}", job.header.seq),
                );
                return Err(self.head_error(&job, seq, structure));
            }
            if check_last {
                self.check_last_flag(&job)?;
            }
            self.check_signed_body(job)?;
            seq += 1;
        }
    }

    /// After the data frames of a stream: reads the index frames and the footer, requires the
    /// end of the input after it, and checks the footer and frame table against what was
    /// read (`data_frames` frames, the first index frame at `index_offset`).
    pub(super) fn read_index_and_footer(
        &mut self,
        data_frames: u64,
        index_offset: u64,
    ) -> Result<Index> {
        Ok(self
            .read_index_and_footer_of_stream(data_frames, index_offset)?
            .1)
    }

    /// [`Archive::read_index_and_footer`], returning the footer too. What follows the footer
    /// is read through to the input's end (`stream_end`).
    pub(super) fn read_index_and_footer_of_stream(
        &mut self,
        data_frames: u64,
        index_offset: u64,
    ) -> Result<(Footer, Index)> {
        let index = self.read_index_frames(data_frames, None, u64::MAX)?;
        let signature = self.read_signature_frame()?;
        let foot_at = self.pos;
        let mut fb = [0u8; FOOTER_LEN];
        self.read_exact_at_pos(&mut fb, "footer")?;
        let footer = self.check_footer(foot_at, &fb)?;
        self.finish_stream_signature(signature, &fb)?;
        // What follows the footer: a recovery section, then trailing bytes (`stream_end`).
        let at = self.pos;
        self.read_stream_end(at)?;
        if footer.data_frames != data_frames || footer.index_offset != index_offset {
            return Err(
                self.sequence_error(foot_at, "footer disagrees with the frames read".into())
            );
        }
        self.check_frame_table(&footer, &index)?;
        Ok((footer, index))
    }

    /// Reads and verifies the footer and the index of a seekable archive.
    ///
    /// A format-2 archive with a recovery section has its footer before that section, not at
    /// the end of the file. Read through the recovery layer (`store::healing`), the input
    /// ends at the footer as usual; when the section was not found, this reaches the footer
    /// the way a pipe does (data frames read past, not decoded), then rewinds.
    pub fn read_index(&mut self) -> Result<(Footer, Index)> {
        let (footer, index) = self.read_index_unchecked()?;
        self.check_entry_set(&index)?;
        Ok((footer, index))
    }

    pub(super) fn read_index_unchecked(&mut self) -> Result<(Footer, Index)> {
        if self.header.recovery_percent().is_some()
            && self.seekable()
            && self.input.heal_report().is_none()
        {
            self.seek_to(self.header_len)?;
            let (seq, index_offset) = self.read_past_data_frames(false)?;
            return self.read_index_and_footer_of_stream(seq, index_offset);
        }
        let first = match self.read_index_at_end() {
            Ok(found) => return Ok(found),
            Err(e) => e,
        };
        // The last 64 bytes are no footer of this archive under its key (another archive
        // appended: `cat a.kry b.kry`; junk ending in a footer's magic): its own may be
        // further back, with bytes after it that are not the archive's (`store::clamped`).
        if self.input.trailing().is_none()
            && let Some(end) = self.footer_back_keyed()
        {
            let pos = self.pos;
            let input = std::mem::replace(
                &mut self.input,
                Box::new(crate::store::local::ReadSource::new(Box::new(
                    std::io::empty(),
                ))),
            );
            self.input = super::header_read::clamp_at(input, pos, end)
                .map_err(|e| Error::io(&self.path, "seek", e))?;
            return self.read_index_unchecked();
        }
        // Not where the verified footer says: maybe moved by one insertion or removal (also
        // when a verified frame is there, out of sequence: the last data frame duplicated).
        if self.undone_edit.is_none()
            && self.input.trailing().is_none()
            && (crate::damage::is_index_damage(&first) || crate::damage::is_out_of_sequence(&first))
            && let Some(edit) = self.undo_moved_index()?
        {
            self.undone_edit = Some(edit);
            return self.read_index_at_end();
        }
        Err(first)
    }

    /// The footer at the end of a seekable archive and the index where it says.
    fn read_index_at_end(&mut self) -> Result<(Footer, Index)> {
        let len = match self.input.length() {
            Ok(Some(len)) if self.input.seekable() => len,
            Ok(_) => {
                return Err(Error::Usage(
                    "reading the index needs a seekable archive".into(),
                ));
            }
            Err(e) => return Err(Error::io(&self.path, "seek", e)),
        };
        if len < self.header_len + FOOTER_LEN as u64 {
            return Err(corrupt(
                &self.path,
                len,
                FormatError::Truncated {
                    what: "archive (no footer)",
                    needed: self.header_len + FOOTER_LEN as u64,
                    got: len,
                },
            ));
        }
        let foot_at = len - FOOTER_LEN as u64;
        self.seek_to(foot_at)?;
        let mut fb = [0u8; FOOTER_LEN];
        self.read_exact_at_pos(&mut fb, "footer")?;
        let footer = self.check_footer_fetched_again(foot_at, &mut fb)?;
        // A signed archive's index ends where its signature frame starts.
        let index_end = foot_at.saturating_sub(self.signature_frame_len());
        self.check_signature_at(index_end)?;
        if footer.index_offset < self.header_len {
            return Err(
                self.sequence_error(foot_at, "footer: index offset outside the archive".into())
            );
        }
        if footer.index_offset >= index_end {
            // The footer verified, so it is as written: the file lost bytes before it (a
            // bad copy). Damage, read past front to back like any other (crate::damage).
            return Err(corrupt(
                &self.path,
                foot_at,
                FormatError::invalid(
                    "footer index offset",
                    format!(
                        "the index starts at byte {} but the footer is at byte {foot_at}: bytes are missing before it",
                        footer.index_offset
                    ),
                ),
            ));
        }
        self.seek_to(footer.index_offset)?;
        self.input.read_ahead_to(Some(index_end));
        let index =
            self.read_index_frames(footer.data_frames, Some(footer.index_frames), index_end)?;
        self.check_frame_table(&footer, &index)?;
        if self.pos != index_end {
            // The index verified where the verified footer says, and ends before it: bytes
            // were inserted after it (a bad copy, another archive appended to this one).
            // Nothing the data frames or the index need was touched: read as written, with
            // the edit reported as one undone (`repaired`: a warning; `test` fails).
            let gap = i64::try_from(index_end - self.pos).unwrap_or(i64::MAX);
            self.undone_edit.get_or_insert((self.pos, gap, AFTER_INDEX));
        }
        Ok((footer, index))
    }

    /// Where a seekable archive whose last 64 bytes are not its footer (under its key) ends:
    /// the end of its footer, found back from the end (`header_read::footer_back`). None when
    /// the last 64 bytes are its footer, or none is found.
    fn footer_back_keyed(&mut self) -> Option<u64> {
        let len = match self.input.length() {
            Ok(Some(len)) if self.input.seekable() => len,
            _ => return None,
        };
        // A footer of this archive (its tag verifies under its id and key) whose first index
        // frame is where it says (`header_read::is_footer_of`).
        let ours = |fb: &[u8; FOOTER_LEN]| {
            super::header_read::is_footer_of(
                &*self.input,
                &self.header,
                self.header_len,
                Some(&self.protection),
                fb,
                true,
            )
        };
        super::header_read::footer_back(&*self.input, self.header_len, len, ours)
            .filter(|&end| end < len)
    }

    /// [`Archive::check_footer`] with a second look (`second_look`) when the archive is in
    /// object storage: a footer that fails is fetched once more, and the bytes fetched again,
    /// when they differ, are checked exactly as the first (then `fb` holds them). Without it
    /// a byte changed on the way in the footer's 64 bytes (served from the tail the open
    /// fetched) made `t`/`x`/`l` read the whole archive front to back, three times, and fail:
    /// exit 5, or 2 ("damaged or modified") for an encrypted archive with the right key.
    fn check_footer_fetched_again(&self, at: u64, fb: &mut [u8; FOOTER_LEN]) -> Result<Footer> {
        let e = match self.check_footer(at, fb) {
            Err(e) if !e.is_io() => e,
            r => return r,
        };
        let Some(r) = self.input.refetcher() else {
            return Err(e);
        };
        let mut again = [0u8; FOOTER_LEN];
        if r.refetch(at, &mut again).is_err() {
            return Err(e);
        }
        if again == *fb {
            r.failed();
            return Err(e);
        }
        match self.check_footer(at, &again) {
            Ok(footer) => {
                *fb = again;
                r.healed();
                Ok(footer)
            }
            Err(_) => {
                r.failed();
                Err(e)
            }
        }
    }

    pub(super) fn check_footer(&self, at: u64, fb: &[u8; FOOTER_LEN]) -> Result<Footer> {
        let (footer, tag) =
            Footer::parse(fb, self.version).map_err(|e| corrupt(&self.path, at, e))?;
        self.protection
            .verify_footer(&self.header.archive_id, &fb[..32], &tag)
            .map_err(|_| {
                if self.protection.is_sealed() {
                    // The header tag verified with this key: the key is right, the footer
                    // is damaged (issue 11 §1: never "wrong password or key" here).
                    Error::DamagedFooter {
                        path: self.path.clone(),
                        offset: at,
                    }
                } else {
                    Error::Integrity {
                        path: self.path.clone(),
                        what: format!("footer checksum mismatch at byte {at}"),
                    }
                }
            })?;
        self.check_footer_signature(at, fb)?;
        Ok(footer)
    }

    pub(super) fn check_frame_table(&self, footer: &Footer, index: &Index) -> Result<()> {
        if index.frame_body_lens.len() as u64 != footer.data_frames
            || index.frame_ref_lens.len() != index.frame_body_lens.len()
        {
            return Err(self.sequence_error(
                footer.index_offset,
                "index frame table disagrees with the footer".into(),
            ));
        }
        let total: u64 = index
            .frame_body_lens
            .iter()
            .map(|&l| l as u64 + (FRAME_HEADER_LEN + TAG_LEN) as u64)
            .sum::<u64>()
            + self.header_len;
        if total != footer.index_offset {
            return Err(self.sequence_error(
                footer.index_offset,
                "data frame lengths do not add up to the index offset".into(),
            ));
        }
        Ok(())
    }

    /// Reads `count` index frames (seq data_frames..) at the current position and parses them.
    pub(super) fn read_index_frames(
        &mut self,
        data_frames: u64,
        count: Option<u64>,
        limit: u64,
    ) -> Result<Index> {
        let mut dec = BlockDecoder::new().map_err(|e| Error::Crypto(e.to_string()))?;
        let mut bytes = Vec::new();
        let mut i = 0u64;
        loop {
            if self.pos >= limit {
                // The footer (which gave the frame count) verified, and so did every frame.
                return Err(self.structure_error(
                    self.pos,
                    FormatError::invalid("index", "index frames run into the footer"),
                ));
            }
            let job = self.read_frame()?;
            let (offset, h) = (job.offset, job.header);
            if h.kind != FrameKind::Index || h.seq != data_frames + i {
                let problem = format!(
                    "expected index frame seq {}, found {:?} seq {}",
                    data_frames + i,
                    h.kind,
                    h.seq
                );
                // A head that is not what the frame count says: when the frame's tag (which
                // covers the head) fails too, its bytes are damaged and salvage may read the
                // data past it; when the tag verifies, whoever held the key wrote it so. The
                // exit codes stay those of FORMAT.md §11 (the sequence is checked first).
                let (_, _, r) = self.open_here(&mut dec, job);
                return Err(match r {
                    Err(FrameFault::Tag) if self.protection.is_sealed() => Error::Damaged {
                        path: self.path.clone(),
                        offset,
                        frame: data_frames + i,
                    },
                    Err(FrameFault::Tag) => corrupt(
                        &self.path,
                        offset,
                        FormatError::invalid("index frame head", problem),
                    ),
                    _ => self.sequence_error(offset, problem),
                });
            }
            let (_, _, r) = self.open_here(&mut dec, job);
            let decoded = r.map_err(|f| self.fault(offset, h.seq, f))?;
            // The frame verified: in a sealed archive a rule broken by verified bytes is
            // tampering, the uniform exit 2 (FORMAT.md §11), as for every other structure.
            if self.version == Version::V2 && decoded.info.stream_offset != bytes.len() as u64 {
                return Err(self.structure_error(
                    offset,
                    FormatError::invalid(
                        "index block header",
                        format!(
                            "stream offset {} where the index blocks before it end at {}",
                            decoded.info.stream_offset,
                            bytes.len()
                        ),
                    ),
                ));
            }
            let raw = decoded.raw();
            if bytes.len() as u64 + raw.len() as u64 > MAX_INDEX_LEN {
                return Err(self.structure_error(
                    offset,
                    FormatError::invalid("index", format!("larger than {MAX_INDEX_LEN} bytes")),
                ));
            }
            if bytes.is_empty() && decoded.start == 0 {
                // The usual single compressed index frame: keep its buffer, no copy.
                bytes = decoded.buf;
            } else {
                bytes.extend_from_slice(raw);
            }
            i += 1;
            if h.last {
                break;
            }
        }
        if let Some(count) = count
            && i != count
        {
            return Err(
                self.sequence_error(self.pos, format!("{i} index frames, footer says {count}"))
            );
        }
        Index::parse(&bytes, self.version).map_err(|e| self.structure_error(self.pos, e))
    }

    /// The entry-set rules on an index (FORMAT.md §7.3), so that `list`, `test` and `extract`
    /// all refuse an archive whose set of entries breaks them before reading its data. (A
    /// scan checks the stream instead, or compares it entry by entry with an index that was
    /// checked.)
    pub(super) fn check_entry_set(&self, index: &Index) -> Result<()> {
        let mut set = EntrySet::with_capacity(self.version, index.entries.len());
        for e in &index.entries {
            set.admit(&e.meta)
                .map_err(|e| self.structure_error(self.pos, e))?;
        }
        Ok(())
    }
}
