//! Decoding a `diff+base` payload (docs/FORMAT.md §16.6) with its region into exactly R
//! bytes. Memory: the output (R bytes, reserved once), the gaps, vals and extra streams
//! (each at most R bytes, refused before anything is allocated when a frame declares more)
//! and the ctrl stream's decoder (window at most 2^[`CTRL_WINDOW_LOG_MAX`] bytes, read in
//! 64 KiB steps: ctrl may be longer than the block, so it is never held whole). Every
//! command is checked before it writes: a damaged payload is a [`DiffError`], never a panic,
//! a read outside the region and output so far, or a buffer larger than the block.
//!
//! **Copies.** A copy whose source lies wholly before it (in the region, or in output made
//! by earlier commands: nearly every copy a writer makes) is appended in one piece and its
//! nonzero diff bytes are then added in place; only a copy that reads bytes it makes itself
//! (an LZ-style overlap) goes byte by byte between its diff bytes. Measured 2026-12-07 on the
//! ruff pair at `-l 7` (a rebuilt executable: about 520,000 nonzero diff bytes per 8 MiB
//! block, so zero runs of ~16 bytes): appending run by run cost one small `memcpy` per diff
//! byte; `archive::reader::base_region`'s module doc has the numbers.

use std::io::Read;

use super::source::Pieces;
use super::{CTRL_WINDOW_LOG_MAX, DiffError, HEAD_LEN, STREAMS, VERSION, unzigzag};
use crate::codec::{CodecError, zframe};

/// Buffers a decoder keeps between blocks.
#[derive(Default)]
pub struct DiffBufs {
    gaps: Vec<u8>,
    vals: Vec<u8>,
    extra: Vec<u8>,
    ctrl: Vec<u8>,
    dctx: Option<zstd::bulk::Decompressor<'static>>,
}

/// The four frames of `payload` (after the region descriptor), checked against the head.
fn split(payload: &[u8]) -> Result<[&[u8]; 4], DiffError> {
    if payload.len() < HEAD_LEN {
        return Err(DiffError::ShortHead { len: payload.len() });
    }
    if payload[0] != VERSION {
        return Err(DiffError::Version { got: payload[0] });
    }
    let lens: Vec<u64> = (0..4)
        .map(|k| u32::from_le_bytes(payload[1 + 4 * k..5 + 4 * k].try_into().expect("4")) as u64)
        .collect();
    let declared: u64 = lens.iter().sum();
    let rest = &payload[HEAD_LEN..];
    if declared != rest.len() as u64 {
        return Err(DiffError::Lengths {
            declared,
            got: rest.len() as u64,
        });
    }
    let mut at = 0usize;
    let mut out = [&rest[..0]; 4];
    for (k, &l) in lens.iter().enumerate() {
        out[k] = &rest[at..at + l as usize];
        at += l as usize;
    }
    Ok(out)
}

fn frame_err(k: usize, e: impl std::fmt::Display) -> DiffError {
    DiffError::Frame {
        stream: STREAMS[k],
        problem: e.to_string(),
    }
}

/// A zstd failure decoding stream `k`: libzstd's refused allocation (its context, or the
/// ctrl stream's window of up to 2^[`CTRL_WINDOW_LOG_MAX`] bytes, under a memory limit) is
/// [`CodecError::OutOfMemory`], so that neither a reader nor the writer's check of its own
/// payload takes a memory limit for a damaged or wrong payload; anything else is the frame's.
fn zstd_err(k: usize, e: std::io::Error) -> CodecError {
    if crate::memory::zstd_io_out_of_memory(&e) {
        return CodecError::OutOfMemory(crate::memory::OutOfMemory {
            bytes: if k == 0 { 1 << CTRL_WINDOW_LOG_MAX } else { 0 },
            what: "zstd's decompression context for a diff stream",
        });
    }
    frame_err(k, e).into()
}

/// The declared content size of stream `k`'s frame after the frame rules of §5.1 (one frame,
/// content size present, no dictionary id); 0 for an empty stream.
fn declared(k: usize, frame: &[u8], max: u64, raw_len: usize) -> Result<u64, DiffError> {
    if frame.is_empty() {
        return Ok(0);
    }
    let info = zframe::frame_info(frame).map_err(|e| frame_err(k, e))?;
    let Some(n) = info.content_size else {
        return Err(frame_err(k, CodecError::NoContentSize));
    };
    if n > max {
        return Err(DiffError::TooLong {
            stream: STREAMS[k],
            declared: n,
            max,
            raw_len,
        });
    }
    zframe::check_v2(frame, n as usize).map_err(|e| frame_err(k, e))?;
    if k == 0 && info.window_size > 1 << CTRL_WINDOW_LOG_MAX {
        return Err(frame_err(
            k,
            format_args!(
                "a {}-byte window (a ctrl frame may declare at most {} bytes)",
                info.window_size,
                1u64 << CTRL_WINDOW_LOG_MAX
            ),
        ));
    }
    Ok(n)
}

/// Decodes stream `k` (gaps, vals or extra: at most `raw_len` bytes) into `buf` in one shot.
fn whole(
    dctx: &mut Option<zstd::bulk::Decompressor<'static>>,
    k: usize,
    frame: &[u8],
    raw_len: usize,
    buf: &mut Vec<u8>,
) -> Result<(), CodecError> {
    buf.clear();
    let n = declared(k, frame, raw_len as u64, raw_len)? as usize;
    if n == 0 && frame.is_empty() {
        return Ok(());
    }
    crate::memory::reserve_exact(buf, n, "a diff stream")?;
    let d = match dctx {
        Some(d) => d,
        None => dctx.insert(zstd::bulk::Decompressor::new().map_err(|e| zstd_err(k, e))?),
    };
    let got = d
        .decompress_to_buffer(frame, buf)
        .map_err(|e| zstd_err(k, e))?;
    if got != n {
        return Err(frame_err(
            k,
            format_args!("decodes to {got} bytes, its header says {n}"),
        )
        .into());
    }
    Ok(())
}

/// The ctrl stream, decoded 64 KiB at a time.
struct Ctrl<'a> {
    dec: Option<zstd::stream::read::Decoder<'static, &'a [u8]>>,
    buf: &'a mut Vec<u8>,
    pos: usize,
    total: u64,
    declared: u64,
}

impl Ctrl<'_> {
    fn byte(&mut self) -> Result<Option<u8>, CodecError> {
        if self.pos == self.buf.len() {
            let Some(dec) = self.dec.as_mut() else {
                return Ok(None);
            };
            self.buf.resize(64 << 10, 0);
            let n = dec.read(&mut self.buf[..]).map_err(|e| zstd_err(0, e))?;
            self.buf.truncate(n);
            self.pos = 0;
            self.total += n as u64;
            if self.total > self.declared {
                return Err(frame_err(0, "decodes to more bytes than its header says").into());
            }
            if n == 0 {
                if self.total != self.declared {
                    return Err(frame_err(
                        0,
                        format_args!(
                            "decodes to {} bytes, its header says {}",
                            self.total, self.declared
                        ),
                    )
                    .into());
                }
                self.dec = None;
                return Ok(None);
            }
        }
        self.pos += 1;
        Ok(Some(self.buf[self.pos - 1]))
    }

    /// The next number, `None` at the stream's end (only before a number's first byte).
    fn number(&mut self, first: bool) -> Result<Option<u64>, CodecError> {
        let mut v = 0u64;
        for i in 0..5 {
            let Some(b) = self.byte()? else {
                if first && i == 0 {
                    return Ok(None);
                }
                return Err(DiffError::BadNumber {
                    stream: "ctrl",
                    problem: "cut off",
                }
                .into());
            };
            v |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(Some(fits(v, "ctrl")?));
            }
        }
        Err(DiffError::BadNumber {
            stream: "ctrl",
            problem: "over 32 bits",
        }
        .into())
    }
}

fn fits(v: u64, stream: &'static str) -> Result<u64, DiffError> {
    if v > u64::from(u32::MAX) {
        return Err(DiffError::BadNumber {
            stream,
            problem: "over 32 bits",
        });
    }
    Ok(v)
}

/// A LEB128 number from an in-memory stream at `*pos`; `None` at its end.
fn leb(s: &[u8], pos: &mut usize, stream: &'static str) -> Result<Option<u64>, DiffError> {
    if *pos == s.len() {
        return Ok(None);
    }
    let mut v = 0u64;
    for i in 0..5 {
        let Some(&b) = s.get(*pos) else {
            return Err(DiffError::BadNumber {
                stream,
                problem: "cut off",
            });
        };
        *pos += 1;
        v |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return fits(v, stream).map(Some);
        }
    }
    Err(DiffError::BadNumber {
        stream,
        problem: "over 32 bits",
    })
}

/// Zeros before the next value: u64::MAX once the gaps are used up (zeros to the end).
const ALL_ZEROS: u64 = u64::MAX;

/// Appends `n` bytes of the source `region ‖ out` from position `s` (an LZ copy: a run
/// that overlaps its own output repeats it).
fn copy_run(region: &mut Pieces<'_>, out: &mut Vec<u8>, s: u64, n: u64) -> Result<(), DiffError> {
    let nr = region.len();
    let (mut s, mut n) = (s, n);
    if s < nr {
        let k = n.min(nr - s);
        region.copy_to(out, s, k);
        s += k;
        n -= k;
    }
    if n == 0 {
        return Ok(());
    }
    let j = (s - nr) as usize;
    if j >= out.len() {
        return Err(DiffError::CopyPastSource {
            at: out.len() as u64,
            source_at: s,
            available: nr + out.len() as u64,
        });
    }
    let n = n as usize;
    if j + n <= out.len() {
        out.extend_from_within(j..j + n);
    } else {
        for i in 0..n {
            let b = out[j + i];
            out.push(b);
        }
    }
    Ok(())
}

/// Decodes `payload` (the bytes after the region descriptor) against `region` into `out`
/// (cleared first), exactly `raw_len` bytes (docs/FORMAT.md §16.6). On error `out` is left
/// empty. (Readers and the writer's check go through [`decode_pieces`].)
#[cfg(test)]
pub fn decode(
    bufs: &mut DiffBufs,
    payload: &[u8],
    region: &[u8],
    raw_len: usize,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    decode_pieces(bufs, payload, &[region], raw_len, out)
}

/// [`decode`] against the region made of `parts` in order (the decoded base blocks it
/// spans, read where they lie: [`Pieces`]).
pub fn decode_pieces(
    bufs: &mut DiffBufs,
    payload: &[u8],
    parts: &[&[u8]],
    raw_len: usize,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    out.clear();
    let r = run(bufs, payload, &mut Pieces::new(parts), raw_len, out);
    if r.is_err() {
        out.clear();
    }
    r
}

fn run(
    bufs: &mut DiffBufs,
    payload: &[u8],
    region: &mut Pieces<'_>,
    raw_len: usize,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    let [ctrl, gaps, vals, extra] = split(payload)?;
    let ctrl_len = declared(0, ctrl, u64::MAX, raw_len)?;
    whole(&mut bufs.dctx, 1, gaps, raw_len, &mut bufs.gaps)?;
    whole(&mut bufs.dctx, 2, vals, raw_len, &mut bufs.vals)?;
    whole(&mut bufs.dctx, 3, extra, raw_len, &mut bufs.extra)?;
    let dec = if ctrl.is_empty() {
        None
    } else {
        let mut d = zstd::stream::read::Decoder::with_buffer(ctrl).map_err(|e| zstd_err(0, e))?;
        d.window_log_max(CTRL_WINDOW_LOG_MAX)
            .map_err(|e| zstd_err(0, e))?;
        Some(d.single_frame())
    };
    bufs.ctrl.clear();
    let mut cmds = Ctrl {
        dec,
        buf: &mut bufs.ctrl,
        pos: 0,
        total: 0,
        declared: ctrl_len,
    };
    crate::memory::reserve_exact(out, raw_len, "a decoded block")?;
    let (gaps, vals, extra) = (&bufs.gaps[..], &bufs.vals[..], &bufs.extra[..]);
    let (mut gp, mut vp, mut ep) = (0usize, 0usize, 0usize);
    let mut zeros = leb(gaps, &mut gp, "gaps")?.unwrap_or(ALL_ZEROS);
    let nr = region.len();
    let mut s = 0u64;
    while let Some(seek) = cmds.number(true)? {
        let seek = unzigzag(seek);
        let copy = cmds.number(false)?.expect("number(false) never ends");
        let add = cmds.number(false)?.expect("number(false) never ends");
        let at = out.len() as u64;
        let available = nr + at;
        let to = s as i64 + seek;
        if to < 0 || to as u64 > available {
            return Err(DiffError::SeekOutOfRange { at, to, available }.into());
        }
        s = to as u64;
        if copy + add == 0 {
            return Err(DiffError::EmptyCommand { at }.into());
        }
        if copy + add > (raw_len - out.len()) as u64 {
            return Err(DiffError::PastBlock {
                at,
                want: copy + add,
                raw_len,
            }
            .into());
        }
        let whole_copy = s + copy <= available;
        if whole_copy {
            // The copy reads nothing it makes itself: copy it whole, then add its diff
            // bytes in place (module doc, "Copies").
            let start = out.len();
            copy_run(region, out, s, copy)?;
            s += copy;
            let mut i = 0u64;
            while zeros != ALL_ZEROS {
                if zeros >= copy - i {
                    zeros -= copy - i;
                    break;
                }
                i += zeros;
                let at = start as u64 + i;
                let Some(&v) = vals.get(vp) else {
                    return Err(DiffError::RunsOut { stream: "vals", at }.into());
                };
                if v == 0 {
                    return Err(DiffError::ZeroValue { at }.into());
                }
                vp += 1;
                let p = start + i as usize;
                out[p] = out[p].wrapping_add(v);
                i += 1;
                zeros = leb(gaps, &mut gp, "gaps")?.unwrap_or(ALL_ZEROS);
            }
        }
        let mut left = if whole_copy { 0 } else { copy };
        while left > 0 {
            if zeros == 0 {
                let at = out.len() as u64;
                let Some(&v) = vals.get(vp) else {
                    return Err(DiffError::RunsOut { stream: "vals", at }.into());
                };
                if v == 0 {
                    return Err(DiffError::ZeroValue { at }.into());
                }
                vp += 1;
                let b = if s < nr {
                    region.byte(s)
                } else if ((s - nr) as usize) < out.len() {
                    out[(s - nr) as usize]
                } else {
                    return Err(DiffError::CopyPastSource {
                        at,
                        source_at: s,
                        available: nr + at,
                    }
                    .into());
                };
                out.push(b.wrapping_add(v));
                s += 1;
                left -= 1;
                zeros = leb(gaps, &mut gp, "gaps")?.unwrap_or(ALL_ZEROS);
                continue;
            }
            let n = left.min(zeros);
            copy_run(region, out, s, n)?;
            s += n;
            left -= n;
            if zeros != ALL_ZEROS {
                zeros -= n;
            }
        }
        let a = add as usize;
        if extra.len() - ep < a {
            return Err(DiffError::RunsOut {
                stream: "extra",
                at: out.len() as u64,
            }
            .into());
        }
        out.extend_from_slice(&extra[ep..ep + a]);
        ep += a;
    }
    if out.len() != raw_len {
        return Err(DiffError::Short {
            got: out.len() as u64,
            raw_len,
        }
        .into());
    }
    if zeros != ALL_ZEROS || gp != gaps.len() {
        return Err(DiffError::Leftover { stream: "gaps" }.into());
    }
    if vp != vals.len() {
        return Err(DiffError::Leftover { stream: "vals" }.into());
    }
    if ep != extra.len() {
        return Err(DiffError::Leftover { stream: "extra" }.into());
    }
    Ok(())
}
