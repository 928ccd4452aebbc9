//! One zstd frame from sequences krypta's delta parser chose (`ZSTD_compressSequences`,
//! libzstd's experimental API, which the safe `zstd` crate does not wrap): the entropy
//! coding stays zstd's, the frame is an ordinary zstd frame any decoder reads with the same
//! prefix. The second module of krypta with `unsafe` code (after `crypto::argon2_memory`):
//! five FFI calls on a context this module creates and frees, no pointer kept past a call.
//! Why it exists (measured): docs/FORMAT.md §16.3 and [`super::delta_parse`].
#![allow(unsafe_code)]

use zstd::zstd_safe::zstd_sys as sys;

use super::delta_parse::Seq;

/// A zstd context, freed on drop.
struct Ctx(*mut sys::ZSTD_CCtx);

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ZSTD_createCCtx, is non-null and freed once.
        unsafe {
            sys::ZSTD_freeCCtx(self.0);
        }
    }
}

fn check(code: usize) -> Result<usize, &'static str> {
    // SAFETY: pure functions on an integer.
    unsafe {
        if sys::ZSTD_isError(code) != 0 {
            let name = sys::ZSTD_getErrorName(code);
            let s = std::ffi::CStr::from_ptr(name)
                .to_str()
                .unwrap_or("zstd error");
            Err(s)
        } else {
            Ok(code)
        }
    }
}

/// Writes into `out` (cleared) one zstd frame of `src` made of `seqs` (offsets into
/// `region ‖ src`, where the region is the prefix a decoder is given), the frame's window
/// 2^`window_log`, its content size recorded, no checksum and no dictionary id (what
/// [`super::BlockEncoder::encode_against`] writes too). Nothing here checks the sequences
/// (see the parameter below): the caller must decode the frame before using it.
///
/// The region itself is not given to libzstd: with the sequences chosen, its only use
/// would be to index it for a match finder that does not run (~45 ms per 4 MiB block,
/// measured), and the frame is byte for byte the same without it.
pub fn compress(
    seqs: &[Seq],
    src: &[u8],
    window_log: u32,
    out: &mut Vec<u8>,
) -> Result<usize, &'static str> {
    let raw: Vec<sys::ZSTD_Sequence> = seqs
        .iter()
        .map(|s| sys::ZSTD_Sequence {
            offset: s.offset,
            litLength: s.lit_len,
            matchLength: s.match_len,
            rep: 0,
        })
        .collect();
    out.clear();
    // SAFETY: ZSTD_compressBound is a pure function.
    let cap = unsafe { sys::ZSTD_compressBound(src.len()) } + 1024;
    out.reserve(cap);
    // SAFETY: a fresh context, freed by Ctx's drop.
    let ctx = Ctx(unsafe { sys::ZSTD_createCCtx() });
    if ctx.0.is_null() {
        return Err("out of memory for a zstd context");
    }
    use sys::ZSTD_cParameter as P;
    let params: [(P, i32); 11] = [
        (P::ZSTD_c_compressionLevel, 1),
        (P::ZSTD_c_strategy, 1),
        (P::ZSTD_c_hashLog, 6),
        (P::ZSTD_c_chainLog, 6),
        (P::ZSTD_c_minMatch, 4),
        (P::ZSTD_c_windowLog, window_log as i32),
        (P::ZSTD_c_contentSizeFlag, 1),
        (P::ZSTD_c_checksumFlag, 0),
        (P::ZSTD_c_dictIDFlag, 0),
        // ZSTD_c_validateSequences off: libzstd 1.5.7 forgets a referenced prefix's size
        // before it validates (ZSTD_CCtx_init_compressStream2 clears cctx->prefixDict, and
        // ZSTD_transferSequences_noDelim then takes the dictionary size as 0), so it would
        // refuse every offset into the region. The caller decodes the frame instead.
        (P::ZSTD_c_experimentalParam12, 0),
        // ZSTD_c_blockDelimiters = ZSTD_sf_noBlockDelimiters
        (P::ZSTD_c_experimentalParam11, 0),
    ];
    for (p, v) in params {
        // SAFETY: a live context; parameters are plain integers.
        check(unsafe { sys::ZSTD_CCtx_setParameter(ctx.0, p, v) })?;
    }
    // SAFETY: out has `cap` bytes reserved; src and raw are live slices of the given lengths.
    let n = check(unsafe {
        sys::ZSTD_compressSequences(
            ctx.0,
            out.as_mut_ptr().cast(),
            cap,
            raw.as_ptr(),
            raw.len(),
            src.as_ptr().cast(),
            src.len(),
        )
    })?;
    // SAFETY: libzstd wrote n <= cap initialised bytes.
    unsafe { out.set_len(n) };
    Ok(n)
}
