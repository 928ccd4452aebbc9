//! `krypta rekey`: an opened encrypted archive written again with a new, complete set of
//! stanzas (a new password, other recipients), without decompressing anything.
//!
//! Only the stanzas and the header tag depend on the recipients (docs/FORMAT.md §3): the
//! frames are copied as they are — each one's tag verified first, the ciphertext never
//! decrypted — so a rekey runs at the speed of reading, HMAC-ing and writing the archive.
//! The footer is tagged again (its index offset moves with the header's length, and flag
//! bit 0 changes when a signature is dropped or added). The archive id and the file key stay:
//! anyone who ever held the file key (opened the archive once, or kept an old stanza's
//! secret) can still open OUT. `--rotate` replaces them: a fresh file key and archive id, every
//! frame decrypted, encrypted and MAC'd again (no recompression), so OUT shares no key with IN.
//!
//! **Overlap.** OUT is written by a second thread fed through a short queue of whole frames:
//! verifying (HMAC-SHA256) and reading the next frames overlap writing the previous ones and
//! the kernel's writeback, so a rekey runs at the speed of the slower of the two, the disk in
//! practice, not their sum. No byte of OUT is under its final name before the sink finishes.
//!
//! A signature covers the stanzas, so it cannot survive a rekey: it is dropped, or made anew
//! with `RekeyOptions::signer`. A recovery section (Reed–Solomon over the old bytes) does not
//! match the new bytes either, so it is encoded again over OUT at IN's percent (default shard
//! size and segments, as `c --recovery` writes; through the same [`Output`] layer as the
//! writer, so OUT's header announces a section exactly when OUT has one). An archive that must
//! survive damage keeps surviving it after a rekey; IN's own section keeps repairing IN while
//! it is read (the reader's healing source), so a damaged but repairable IN can be rekeyed.

use std::io::Write;

use super::*;
use crate::archive::output::Output;
use crate::archive::write_opts::recovery_options_for;
use crate::crypto::keys::FileKey;
use crate::crypto::sign::{SignerSecret, Transcript};
use crate::crypto::stanza::{Recipient, wrap};
use crate::format::extension::Extension;
use crate::format::footer::FOOTER_FLAG_SIGNATURE;
use crate::format::signature::SignatureFrame;

/// What `rekey` writes.
pub struct RekeyOptions {
    /// The new, complete set of recipients (at least one; at most one password).
    pub recipients: Vec<Recipient>,
    /// Also replace the file key and the archive id (re-encrypt and re-MAC every frame).
    pub rotate: bool,
    /// Sign OUT with this key (IN's signature never survives).
    pub signer: Option<SignerSecret>,
}

/// What `rekey` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RekeySummary {
    /// Frames copied (data and index).
    pub frames: u64,
    /// Bytes of OUT.
    pub bytes: u64,
    /// IN was signed and OUT is not (no `signer` given).
    pub signature_dropped: bool,
    /// OUT's recovery section (encoded anew over OUT's bytes at IN's percent): the percent and
    /// its bytes, when IN had one.
    pub recovery: Option<(u8, u64)>,
    /// What IN was read without, with undone or rebuilt, each a warning that starts with
    /// IN's name, as `x` and `t` say it (`repaired::heal_warnings`): bytes after its footer
    /// or its recovery section (not copied), a flipped header bit (OUT's header is new),
    /// bytes rebuilt from its recovery data, a recovery section damaged or missing.
    pub warnings: Vec<String>,
}

impl Archive {
    /// Writes this archive (opened, nothing read from it yet) to `out` with the stanzas of
    /// `opts.recipients` (see the module doc). Every frame's tag and the footer are verified
    /// as they pass, and a stream's signature when it is reached; `out_name` labels errors.
    ///
    /// Errors: Usage (an unencrypted archive, no recipient, two passwords), the reader's
    /// errors for a damaged or modified IN (nothing of OUT is then valid: the caller aborts
    /// its sink), Io.
    pub fn rekey_into<W: Write + Send>(
        &mut self,
        out: W,
        out_name: &Path,
        opts: RekeyOptions,
    ) -> Result<(RekeySummary, W)> {
        let Some(old_key) = self.file_key.clone() else {
            return Err(Error::Usage(format!(
                "{}: not encrypted: rekey changes the stanzas of an encrypted archive (to \
                 encrypt this one, extract it and create it again)",
                crate::fs::shown(&self.path)
            )));
        };
        if opts.recipients.is_empty() {
            return Err(Error::Usage(
                "rekey needs the new keys of OUT: --new-password, --new-pass-file, \
                 --new-keyfile, -r or -R"
                    .into(),
            ));
        }
        crate::archive::writer::check_recipients(&opts.recipients)?;
        let io = |e| Error::io(out_name, "write", e);
        let (file_key, archive_id) = if opts.rotate {
            let mut id = [0u8; 16];
            crate::crypto::primitives::random_bytes(&mut id)
                .map_err(|e| Error::Crypto(e.to_string()))?;
            (
                FileKey::generate().map_err(|e| Error::Crypto(e.to_string()))?,
                id,
            )
        } else {
            (old_key, self.header.archive_id)
        };
        let new = Protection::Sealed(Box::new(Subkeys::derive(&file_key, &archive_id)));
        let mut header = self.header.clone();
        header.archive_id = archive_id;
        header.stanzas = opts
            .recipients
            .iter()
            .map(|r| wrap(r, &file_key, &archive_id))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| match e {
                crate::crypto::CryptoError::Argon2Memory { bytes, .. } => {
                    crate::memory::argon2_out_of_memory(&self.path, bytes, false)
                }
                e => Error::Crypto(e.to_string()),
            })?;
        let mut summary = RekeySummary {
            signature_dropped: self.header.signer().is_some() && opts.signer.is_none(),
            ..RekeySummary::default()
        };
        header
            .extensions
            .retain(|e| !matches!(e, Extension::Signer { .. }));
        if let Some(sk) = &opts.signer {
            header.extensions.push(Extension::Signer {
                fingerprint: sk.public().fingerprint(),
            });
            header.extensions.sort_by_key(|e| e.ext_type());
        }
        header.check().map_err(|problem| Error::Unwritable {
            what: crate::fs::shown(out_name),
            problem,
        })?;
        let recovery_err = |source| Error::Recovery {
            path: out_name.to_path_buf(),
            source,
        };
        let out = match header.recovery_percent() {
            None => Output::Plain(out),
            Some(p) => Output::Recovery(Box::new(
                crate::recovery::RecoveryWriter::new(out, &recovery_options_for(p, out_name))
                    .map_err(recovery_err)?,
            )),
        };
        let mut hb = header.write_untagged();
        let tag = new.header_tag(&hb);
        hb.extend_from_slice(&tag);
        let plan = Plan {
            new: &new,
            archive_id,
            rotate: opts.rotate,
            signer: opts.signer.as_ref(),
        };
        // OUT is written by its own thread (module doc, "Overlap"): a bounded queue of whole
        // frames, each frame's body handed back to the reader's free list once written.
        let (tx, rx) = std::sync::mpsc::sync_channel::<[Vec<u8>; 3]>(QUEUE_FRAMES);
        let bodies = self.buffers.bodies.clone();
        let (copied, written) = std::thread::scope(|scope| {
            let writer = scope.spawn(move || -> std::io::Result<Output<W>> {
                let mut out = out;
                for [head, body, tail] in rx {
                    out.write_all(&head)?;
                    out.write_all(&body)?;
                    out.write_all(&tail)?;
                    bodies.give(body);
                }
                out.flush()?;
                Ok(out)
            });
            let copied = self.copy_frames(hb, &plan, &tx);
            drop(tx);
            // The writer's own error first: a reader stopped by a closed queue saw its effect.
            let out = writer
                .join()
                .expect("the rekey writer thread does not panic");
            (copied, out)
        });
        let out = written.map_err(io)?;
        let (data_frames, index_frames, written) = copied?;
        let (mut out, section) = out.finish().map_err(recovery_err)?;
        out.flush().map_err(io)?;
        summary.frames = data_frames + index_frames;
        summary.bytes = section.map_or(written, |s| s.layout.file_len);
        summary.recovery = section.map(|s| (s.layout.params.percent, s.layout.file_len - written));
        Ok((summary, out))
    }

    /// The reading half of [`Archive::rekey_into`]: sends OUT's header `hb`, then every frame
    /// (verified, or with `rotate` opened and sealed anew), the signature frame and the footer
    /// to the writer through `tx`. Gives (data frames, index frames, bytes of OUT before any
    /// recovery section). A closed queue means the writer failed; its error is the one shown.
    fn copy_frames(
        &mut self,
        hb: Vec<u8>,
        plan: &Plan<'_>,
        tx: &std::sync::mpsc::SyncSender<[Vec<u8>; 3]>,
    ) -> Result<(u64, u64, u64)> {
        let path = self.path.clone();
        let send = |parts: [Vec<u8>; 3]| {
            tx.send(parts).map_err(|_| {
                Error::io(
                    &path,
                    "rekey",
                    std::io::Error::other("the writer of OUT stopped"),
                )
            })
        };
        let (new, archive_id) = (plan.new, plan.archive_id);
        let mut transcript = plan.signer.map(|_| Transcript::new(&hb));
        let mut written = hb.len() as u64;
        send([hb, Vec::new(), Vec::new()])?;
        if self.input.seekable() {
            self.seek_to(self.header_len)?;
        }
        let (mut data_frames, mut index_frames, mut index_offset) = (0u64, 0u64, None);
        let refetch = self.input.refetcher();
        loop {
            let job = self.read_frame()?;
            let FrameJob {
                header: fh,
                header_bytes,
                mut body,
                mut tag,
                offset,
                ..
            } = job;
            let expected = data_frames + index_frames;
            if fh.seq != expected || (fh.kind == FrameKind::Data && (index_frames > 0 || fh.last)) {
                return Err(self.sequence_error(
                    offset,
                    format!(
                        "expected frame seq {expected}, found {:?} seq {}",
                        fh.kind, fh.seq
                    ),
                ));
            }
            // From object storage, a frame changed in transit is fetched again once
            // (`second_look`) before it is called damage.
            let (id, protection) = (&self.header.archive_id, &self.protection);
            let opened = super::second_look::passes(
                refetch.as_deref(),
                offset,
                &header_bytes,
                &mut body,
                &mut tag,
                |body, tag| {
                    if plan.rotate {
                        protection
                            .open_frame(id, &header_bytes, fh.seq, body, tag)
                            .is_ok()
                    } else {
                        protection
                            .verify_frame(id, &header_bytes, fh.seq, body, tag)
                            .is_ok()
                    }
                },
            );
            if !opened {
                return Err(self.fault(offset, fh.seq, super::FrameFault::Tag));
            }
            let out_tag = if plan.rotate {
                new.seal_frame(&archive_id, &header_bytes, fh.seq, &mut body)
            } else {
                tag
            };
            if fh.kind == FrameKind::Index && index_offset.is_none() {
                index_offset = Some(written);
            }
            written += (FRAME_HEADER_LEN + body.len() + TAG_LEN) as u64;
            if let Some(t) = &mut transcript {
                t.frame_tag(&out_tag);
            }
            send([header_bytes.to_vec(), body, out_tag.to_vec()])?;
            match fh.kind {
                FrameKind::Data => data_frames += 1,
                FrameKind::Index => index_frames += 1,
            }
            if fh.last {
                break;
            }
        }
        let old_signature = self.read_signature_frame()?;
        let foot_at = self.pos;
        let mut fb = [0u8; FOOTER_LEN];
        self.read_exact_at_pos(&mut fb, "footer")?;
        let footer = self.check_footer(foot_at, &fb)?;
        self.finish_stream_signature(old_signature, &fb)?;
        // What follows IN's footer is read as a reader of the stream reads it (`stream_end`):
        // through to its end, so the program writing a pipe is not cut off, and bytes that
        // are not IN's are told ([`Archive::trailing`]: the caller warns; OUT never has them).
        self.read_stream_end(foot_at + FOOTER_LEN as u64)?;
        if footer.data_frames != data_frames || footer.index_frames != index_frames {
            return Err(
                self.sequence_error(foot_at, "footer disagrees with the frames read".into())
            );
        }
        let new_footer = Footer {
            index_offset: index_offset.expect("the last frame is an index frame"),
            data_frames,
            index_frames,
        };
        let flags = if plan.signer.is_some() {
            FOOTER_FLAG_SIGNATURE
        } else {
            0
        };
        let untagged = new_footer.untagged_with_flags(self.version, flags);
        let mut nfb = [0u8; FOOTER_LEN];
        nfb[..32].copy_from_slice(&untagged);
        nfb[32..].copy_from_slice(&new.footer_tag(&archive_id, &untagged));
        if let (Some(sk), Some(t)) = (plan.signer, &transcript) {
            let pk = sk.public();
            let frame = SignatureFrame {
                seq: data_frames + index_frames,
                signer: Box::new(*pk.as_bytes()),
                signature: Box::new(sk.sign(&t.message(&pk, &nfb))),
            };
            let b = frame.to_bytes(&archive_id);
            written += b.len() as u64;
            send([b, Vec::new(), Vec::new()])?;
        }
        send([nfb.to_vec(), Vec::new(), Vec::new()])?;
        Ok((data_frames, index_frames, written + FOOTER_LEN as u64))
    }
}

/// Frames queued between the reading and the writing thread of a rekey: a few, so that
/// verifying overlaps writing while the memory stays a few frame bodies.
const QUEUE_FRAMES: usize = 4;

/// What OUT is written with (see [`Archive::rekey_into`]).
struct Plan<'a> {
    new: &'a Protection,
    archive_id: [u8; 16],
    rotate: bool,
    signer: Option<&'a SignerSecret>,
}
