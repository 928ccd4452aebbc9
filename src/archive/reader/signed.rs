//! Signed archives on the reading side (docs/FORMAT.md §9.1, docs/SECURITY.md "Signatures").
//!
//! Two ways to check a signature, chosen by the input:
//!
//! - **Seekable** (a file, an object): *verify first*. Before any frame is used, and before
//!   any key is asked for, [`walk_and_verify`] walks the frame heads (ranged reads of 48 bytes
//!   per frame: a tag and the next head), gathers every frame tag, reads the signature frame
//!   and the footer, and verifies the signature. The reader then holds the signed tags
//!   ([`SigState::Verified`]): every frame it reads later must carry its signed tag, and the
//!   footer must be the signed one, so a file changed between the check and the read is
//!   refused too. With `--signer` (strict), [`Archive::verify_signed_frames`] also checks
//!   every frame's tag against its body once the key is known, so a flipped bit anywhere
//!   refuses the archive before the first byte is extracted (the price: the archive is read
//!   twice; `x` from a pipe with `--signer` is spooled to a temporary file first, `lib.rs`).
//! - **Front to back** (a pipe): the tags are gathered as frames are read
//!   ([`SigState::Pending`]), and the signature is verified when the signature frame and the
//!   footer are reached, at the end.
//!
//! The signer policy (`--signer`: unsigned or another signer refused) is applied from the
//! header alone, right after it parsed, so a forged or unsigned archive is refused before any
//! prompt or KDF. All refusals are [`Error::Signature`] (exit 8).

use super::*;
use crate::crypto::sign::{SignerPublic, Transcript, fingerprint_hex};
use crate::error::SignatureProblem;
use crate::format::frame::FRAME_KIND_SIGNATURE;
use crate::format::signature::{SIGNATURE_FRAME_LEN, SignatureFrame};

/// What the reader knows of a signed archive's signature.
pub(super) enum SigState {
    /// Verified before the first frame was used: the offset and tag of every data and index
    /// frame (seq 0..F), where the signature frame starts, and the signed footer bytes.
    Verified {
        frames: Vec<(u64, [u8; 32])>,
        sig_at: u64,
        footer: [u8; FOOTER_LEN],
        signer: SignerPublic,
    },
    /// Read front to back: the transcript of the frames read so far (`broken` when a frame
    /// came out of order, as in a resynchronising salvage: the signature cannot verify).
    Pending {
        transcript: Box<Transcript>,
        broken: bool,
    },
    /// Read front to back, verified at the end.
    VerifiedAtEnd { signer: SignerPublic },
}

/// A verified signature: the signer, and what the reader pins ([`SigState::Verified`]).
pub struct VerifiedSignature {
    /// The signer.
    pub signer: SignerPublic,
    frames: Vec<(u64, [u8; 32])>,
    sig_at: u64,
    footer: [u8; FOOTER_LEN],
}

fn refuse(path: &Path, problem: SignatureProblem) -> Error {
    Error::Signature {
        path: path.into(),
        problem,
    }
}

fn unverifiable(path: &Path, reason: String) -> Error {
    refuse(path, SignatureProblem::Unverifiable { reason })
}

/// Reads exactly `buf.len()` bytes at `offset` (ranged read); a short read is damage.
fn read_exact_at(
    input: &Input,
    path: &Path,
    offset: u64,
    buf: &mut [u8],
    what: &str,
) -> Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match input.read_at(offset + got as u64, &mut buf[got..]) {
            Ok(0) => {
                return Err(unverifiable(
                    path,
                    format!(
                        "the archive ends at byte {} inside the {what}",
                        offset + got as u64
                    ),
                ));
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, "read", e)),
        }
    }
    Ok(())
}

/// The `--signer` policy, from the header alone: with signers required, an unsigned archive
/// or one naming another signer is refused.
pub(super) fn check_policy(path: &Path, header: &Header, signers: &[SignerPublic]) -> Result<()> {
    if signers.is_empty() {
        return Ok(());
    }
    let Some(fp) = header.signer() else {
        return Err(refuse(path, SignatureProblem::Unsigned));
    };
    if signers.iter().any(|s| s.fingerprint() == fp) {
        Ok(())
    } else {
        Err(refuse(
            path,
            SignatureProblem::OtherSigner {
                found: fingerprint_hex(&fp),
            },
        ))
    }
}

/// Verifies the signature of the seekable signed archive whose parsed header is `header`
/// (its bytes `header_bytes`): walks the frames, reads the signature frame and the footer,
/// checks that the frame's key is the header's signer and that both signatures verify. No
/// key is needed. Errors: [`Error::Signature`], [`Error::Io`].
pub fn walk_and_verify(
    input: &mut Input,
    path: &Path,
    header: &Header,
    header_bytes: &[u8],
) -> Result<VerifiedSignature> {
    let Some(named) = header.signer() else {
        return Err(refuse(path, SignatureProblem::Unsigned));
    };
    let mut transcript = Transcript::new(header_bytes);
    let mut frames = Vec::new();
    let mut off = header_bytes.len() as u64;
    let mut head = [0u8; FRAME_HEADER_LEN];
    read_exact_at(input, path, off, &mut head, "frame header")?;
    while head[0] != FRAME_KIND_SIGNATURE {
        let h = FrameHeader::parse(&head, header.version)
            .map_err(|e| unverifiable(path, format!("frame at byte {off}: {e}")))?;
        if h.seq != frames.len() as u64 {
            return Err(unverifiable(
                path,
                format!(
                    "frame at byte {off}: sequence number {} where {} belongs",
                    h.seq,
                    frames.len()
                ),
            ));
        }
        let tag_at = off + (FRAME_HEADER_LEN as u64) + u64::from(h.body_len);
        // The tag of this frame and the head of the next (the signature frame follows the
        // last index frame, so there is always a next head).
        let mut buf = [0u8; TAG_LEN + FRAME_HEADER_LEN];
        read_exact_at(input, path, tag_at, &mut buf, "frame tag")?;
        let tag: [u8; 32] = buf[..TAG_LEN].try_into().expect("32");
        transcript.frame_tag(&tag);
        frames.push((off, tag));
        off = tag_at + TAG_LEN as u64;
        head.copy_from_slice(&buf[TAG_LEN..]);
    }
    let sig_at = off;
    let mut sf = vec![0u8; SIGNATURE_FRAME_LEN + FOOTER_LEN];
    read_exact_at(input, path, sig_at, &mut sf, "signature frame and footer")?;
    let frame = SignatureFrame::parse(
        sf[..SIGNATURE_FRAME_LEN].try_into().expect("len"),
        &header.archive_id,
        frames.len() as u64,
    )
    .map_err(|e| unverifiable(path, format!("at byte {sig_at}: {e}")))?;
    let footer: [u8; FOOTER_LEN] = sf[SIGNATURE_FRAME_LEN..].try_into().expect("64");
    let foot_at = sig_at + SIGNATURE_FRAME_LEN as u64;
    Footer::parse(&footer, header.version)
        .map_err(|e| unverifiable(path, format!("at byte {foot_at}: {e}")))?;
    // Bytes after the footer are not the archive's (FORMAT §11 step 8): the signature covers
    // the archive, and the reader reports what follows it.
    if !Footer::signed(&footer, header.version) {
        return Err(unverifiable(
            path,
            format!("the footer at byte {foot_at} does not announce the signature frame"),
        ));
    }
    let signer = SignerPublic::from_bytes(&frame.signer[..])
        .map_err(|_| refuse(path, SignatureProblem::KeyMismatch))?;
    if signer.fingerprint() != named {
        return Err(refuse(path, SignatureProblem::KeyMismatch));
    }
    signer
        .verify(&transcript.message(&signer, &footer), &frame.signature)
        .map_err(|f| {
            refuse(
                path,
                SignatureProblem::Invalid {
                    reason: f.to_string(),
                },
            )
        })?;
    Ok(VerifiedSignature {
        signer,
        frames,
        sig_at,
        footer,
    })
}

/// After the header parsed: the signer policy, then (signed) the verify-first walk of a
/// seekable archive, or the start of a stream's transcript.
pub(super) fn begin(
    input: &mut Input,
    path: &Path,
    header: &Header,
    header_bytes: &[u8],
    signers: &[SignerPublic],
) -> Result<Option<SigState>> {
    check_policy(path, header, signers)?;
    if header.signer().is_none() {
        return Ok(None);
    }
    Ok(Some(if input.seekable() {
        let v = walk_and_verify(input, path, header, header_bytes)?;
        SigState::Verified {
            frames: v.frames,
            sig_at: v.sig_at,
            footer: v.footer,
            signer: v.signer,
        }
    } else {
        SigState::Pending {
            transcript: Box::new(Transcript::new(header_bytes)),
            broken: false,
        }
    }))
}

impl Archive {
    /// The signer whose signature verified: at open (seekable), or once the footer was read
    /// (a stream). `None` for an unsigned archive, or a stream not read to its end.
    pub fn verified_signer(&self) -> Option<&SignerPublic> {
        match &self.signature {
            Some(SigState::Verified { signer, .. } | SigState::VerifiedAtEnd { signer }) => {
                Some(signer)
            }
            _ => None,
        }
    }

    /// Strict mode (`--signer`), after the key opened the archive: every frame's tag is checked
    /// against its body, so nothing is used from an archive with any byte changed.
    pub(super) fn verify_signed_frames(&mut self) -> Result<()> {
        let Some(SigState::Verified { frames, .. }) = &self.signature else {
            return Ok(());
        };
        let mut body = Vec::new();
        let refetch = self.input.refetcher();
        for (seq, (off, tag)) in frames.iter().enumerate() {
            let changed = || {
                refuse(
                    &self.path,
                    SignatureProblem::Changed {
                        frame: seq as u64,
                        offset: *off,
                    },
                )
            };
            let mut head = [0u8; FRAME_HEADER_LEN];
            read_exact_at(&self.input, &self.path, *off, &mut head, "frame header")?;
            let h = FrameHeader::parse(&head, self.version).map_err(|_| changed())?;
            body.resize(h.body_len as usize, 0);
            read_exact_at(
                &self.input,
                &self.path,
                off + FRAME_HEADER_LEN as u64,
                &mut body,
                "frame body",
            )?;
            // From object storage, a body changed in transit is fetched again once
            // (`second_look`); it is always checked against the signed tag.
            let mut as_read = [0u8; TAG_LEN];
            let opened = super::second_look::passes(
                refetch.as_deref(),
                *off,
                &head,
                &mut body,
                &mut as_read,
                |body, _| {
                    self.protection
                        .open_frame(&self.header.archive_id, &head, seq as u64, body, tag)
                        .is_ok()
                },
            );
            if !opened {
                return Err(changed());
            }
        }
        Ok(())
    }

    /// A data frame passed over without decoding it (`l` of a stream): with `--signer` its
    /// tag must still verify its body, as every frame of a file is checked before use
    /// ([`Archive::verify_signed_frames`]), or a changed byte would be listed as signed.
    /// Without `--signer` the frame is only skipped (a listing reads the index).
    pub(super) fn check_signed_body(&mut self, job: FrameJob) -> Result<()> {
        let FrameJob {
            header,
            header_bytes,
            mut body,
            tag,
            offset,
            ..
        } = job;
        let changed = self.strict_signer
            && self.signature.is_some()
            && self
                .protection
                .open_frame(
                    &self.header.archive_id,
                    &header_bytes,
                    header.seq,
                    &mut body,
                    &tag,
                )
                .is_err();
        self.buffers.bodies.give(body);
        if changed {
            return Err(refuse(
                &self.path,
                SignatureProblem::Changed {
                    frame: header.seq,
                    offset,
                },
            ));
        }
        Ok(())
    }

    /// Every frame read: its tag must be the signed one (verified first), or it joins the
    /// transcript (a stream).
    pub(super) fn signature_frame_read(
        &mut self,
        offset: u64,
        seq: u64,
        tag: &[u8; 32],
    ) -> Result<()> {
        match &mut self.signature {
            Some(SigState::Verified { frames, .. })
                if frames.get(seq as usize).map(|f| &f.1) != Some(tag) =>
            {
                return Err(refuse(
                    &self.path,
                    SignatureProblem::Changed { frame: seq, offset },
                ));
            }
            Some(SigState::Pending { transcript, broken }) => {
                if !*broken && transcript.frames() == seq {
                    transcript.frame_tag(tag);
                } else {
                    *broken = true;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Bytes of the signature frame before the footer: 5405 when signed, else 0.
    pub(super) fn signature_frame_len(&self) -> u64 {
        if self.header.signer().is_some() {
            SIGNATURE_FRAME_LEN as u64
        } else {
            0
        }
    }

    /// A seekable archive's index ends where the walk found the signature frame.
    pub(super) fn check_signature_at(&self, at: u64) -> Result<()> {
        match &self.signature {
            Some(SigState::Verified { sig_at, .. }) if *sig_at != at => Err(unverifiable(
                &self.path,
                format!("the signature frame is at byte {sig_at}, the footer says {at}"),
            )),
            _ => Ok(()),
        }
    }

    /// A stream after its last index frame: reads the signature frame when the header says
    /// the archive is signed.
    pub(super) fn read_signature_frame(&mut self) -> Result<Option<SignatureFrame>> {
        if self.header.signer().is_none() {
            return Ok(None);
        }
        let at = self.pos;
        let mut b = vec![0u8; SIGNATURE_FRAME_LEN];
        self.read_exact_at_pos(&mut b, "signature frame")?;
        let seq = match &self.signature {
            Some(SigState::Pending { transcript, .. }) => transcript.frames(),
            Some(SigState::Verified { frames, .. }) => frames.len() as u64,
            _ => 0,
        };
        SignatureFrame::parse(b[..].try_into().expect("len"), &self.header.archive_id, seq)
            .map(Some)
            .map_err(|e| unverifiable(&self.path, format!("at byte {at}: {e}")))
    }

    /// The footer `fb` (its tag verified): its signature flag must agree with the header, and
    /// a verified archive's footer must be the signed one.
    pub(super) fn check_footer_signature(&self, at: u64, fb: &[u8; FOOTER_LEN]) -> Result<()> {
        let signed = self.header.signer().is_some();
        if Footer::signed(fb, self.version) != signed {
            return Err(self.sequence_error(
                at,
                format!(
                    "footer flag bit 0 (a signature frame precedes the footer) is {}, but the header names {}",
                    u8::from(!signed),
                    if signed { "a signer" } else { "no signer" }
                ),
            ));
        }
        if let Some(SigState::Verified { footer, .. }) = &self.signature
            && footer != fb
        {
            return Err(unverifiable(
                &self.path,
                format!("the footer at byte {at} is not the one that was signed"),
            ));
        }
        Ok(())
    }

    /// A stream at its footer: verifies the signature over what was read.
    pub(super) fn finish_stream_signature(
        &mut self,
        frame: Option<SignatureFrame>,
        fb: &[u8; FOOTER_LEN],
    ) -> Result<()> {
        let (Some(frame), Some(SigState::Pending { transcript, broken })) =
            (frame, &self.signature)
        else {
            return Ok(());
        };
        if *broken {
            return Err(unverifiable(
                &self.path,
                "frames were skipped or read out of order".into(),
            ));
        }
        let named = self
            .header
            .signer()
            .expect("a pending signature has a signer");
        let signer = SignerPublic::from_bytes(&frame.signer[..])
            .map_err(|_| refuse(&self.path, SignatureProblem::KeyMismatch))?;
        if signer.fingerprint() != named {
            return Err(refuse(&self.path, SignatureProblem::KeyMismatch));
        }
        signer
            .verify(&transcript.message(&signer, fb), &frame.signature)
            .map_err(|f| {
                refuse(
                    &self.path,
                    SignatureProblem::Invalid {
                        reason: f.to_string(),
                    },
                )
            })?;
        self.signature = Some(SigState::VerifiedAtEnd { signer });
        Ok(())
    }
}
