//! Tables 3 (hashing: SHA-256 scalar vs SHA-NI, HMAC-SHA256, BLAKE3) and 5 (stage cost: ms/MB
//! on one core and MB/s on all cores for every pipeline stage and the AEAD alternatives).

use rayon::prelude::*;
use ring::aead::{AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};

use crate::codec::{BlockDecoder, BlockEncoder, Codec, DEFAULT_BLOCK_SIZE, Filter, Level, bcj};
use crate::crypto::{FileKey, Protection, Subkeys, primitives};
use crate::error::{Error, Result};

use super::Plan;
use super::measure::{MB, blocks, mb_per_sec, median_secs, pool};
use super::report::{Cell, Table};
use super::sha256_scalar;

/// Table 3: hashing speed on one buffer.
pub fn table3(
    data: &[u8],
    plan: &Plan,
    jobs: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Table> {
    let mut t = Table::new(
        3,
        "Hashing: SHA-256 scalar vs SHA-NI, HMAC-SHA256, BLAKE3",
        format!(
            "one {:.0} MB buffer hashed whole; median of {} run(s). \"portable scalar\" is \
             plain-Rust FIPS 180-4 code in `src/bench/sha256_scalar.rs` (what a CPU without \
             SHA extensions runs; not the `sha2` crate's unrolled soft backend, which is only \
             selectable at compile time); \"sha2\" is the crate krypta uses, which picks SHA-NI \
             at run time when the CPU has it.",
            data.len() as f64 / MB,
            plan.runs
        ),
        &[
            "hash",
            "implementation",
            "threads",
            "MB/s",
            "vs scalar SHA-256",
        ],
    );
    let workers = pool(jobs)?;
    type Run<'a> = Box<dyn Fn() + Sync + 'a>;
    let cases: Vec<(&str, &str, usize, Run)> = vec![
        (
            "SHA-256",
            "portable scalar",
            1,
            Box::new(|| {
                std::hint::black_box(sha256_scalar::sha256(data));
            }),
        ),
        (
            "SHA-256",
            "sha2 (SHA-NI when present)",
            1,
            Box::new(|| {
                std::hint::black_box(primitives::sha256(data));
            }),
        ),
        (
            "SHA-256",
            "ring",
            1,
            Box::new(|| {
                std::hint::black_box(ring::digest::digest(&ring::digest::SHA256, data));
            }),
        ),
        (
            "HMAC-SHA256",
            "hmac + sha2 (krypta's MAC)",
            1,
            Box::new(|| {
                std::hint::black_box(primitives::hmac_sha256(&[1; 32], &[data]));
            }),
        ),
        (
            "BLAKE3",
            "blake3 (SIMD)",
            1,
            Box::new(|| {
                std::hint::black_box(primitives::blake3_hash(data));
            }),
        ),
        (
            "BLAKE3",
            "blake3 + rayon",
            jobs,
            Box::new(|| {
                workers.install(|| {
                    std::hint::black_box(blake3::Hasher::new().update_rayon(data).finalize());
                })
            }),
        ),
    ];
    let mut scalar = None;
    let mut shani = None;
    for (hash, imp, threads, f) in &cases {
        progress(&format!("table 3: {hash} {imp}"));
        let s = median_secs(plan.runs, || {
            f();
            Ok(())
        })?;
        let speed = mb_per_sec(data.len(), s);
        let base = *scalar.get_or_insert(speed);
        if *imp == "sha2 (SHA-NI when present)" {
            shani = Some(speed);
        }
        t.rows.push(vec![
            Cell::text(*hash),
            Cell::text(*imp),
            Cell::num(*threads as f64, 0),
            Cell::auto(speed),
            Cell::text(format!("{:.1}x", speed / base.max(1e-9))),
        ]);
    }
    if let (Some(s), Some(n)) = (scalar, shani) {
        t.reading.push(format!(
            "The sha2 crate (SHA-NI {}) hashes {:.1}x faster than the portable scalar code.",
            if cfg!(target_arch = "x86_64") && std::arch::is_x86_feature_detected!("sha") {
                "found on this CPU"
            } else {
                "not found on this CPU"
            },
            n / s.max(1e-9)
        ));
    }
    Ok(t)
}

/// Per-thread scratch state of the stage benchmarks; the zstd contexts are made on first
/// use, so stages that do not need them pay nothing per task.
#[derive(Default)]
struct Scratch {
    enc: Option<BlockEncoder>,
    dec: Option<BlockDecoder>,
    out: Vec<u8>,
}

fn codec_err(e: crate::codec::CodecError) -> Error {
    Error::Usage(format!("bench codec: {e}"))
}

impl Scratch {
    fn encoder(&mut self) -> Result<(&mut BlockEncoder, &mut Vec<u8>)> {
        if self.enc.is_none() {
            self.enc = Some(BlockEncoder::new(Some(Level::DEFAULT)).map_err(codec_err)?);
        }
        match &mut self.enc {
            Some(e) => Ok((e, &mut self.out)),
            None => Err(Error::Usage("bench codec: no encoder".into())),
        }
    }
    fn decoder(&mut self) -> Result<(&mut BlockDecoder, &mut Vec<u8>)> {
        if self.dec.is_none() {
            self.dec = Some(BlockDecoder::new().map_err(codec_err)?);
        }
        match &mut self.dec {
            Some(d) => Ok((d, &mut self.out)),
            None => Err(Error::Usage("bench codec: no decoder".into())),
        }
    }
}

/// One stage applied to block `i` (contents `buf`, mutable for in-place stages).
type StageFn<'a> = Box<dyn Fn(usize, &mut [u8], &mut Scratch) -> Result<()> + Sync + 'a>;

/// Table 5: the cost of each stage on the same 4 MiB blocks.
pub fn table5(
    data: &[u8],
    plan: &Plan,
    jobs: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Table> {
    let mut t = Table::new(
        5,
        "Stage cost: which step weighs most",
        format!(
            "the fixtures concatenated ({:.1} MB) in 4 MiB blocks; each stage alone over every \
             block, on one core (ms per MB) and on {jobs} threads (rayon, one block per task); \
             median of {} run(s). zstd runs at krypta's default level (-l 3 = zstd 3); AEADs \
             are `ring`'s (one fixed nonce: a speed test only).",
            data.len() as f64 / MB,
            plan.runs
        ),
        &[
            "stage",
            "in krypta",
            "ms/MB, 1 core",
            "MB/s, 1 core",
            &format!("MB/s, {jobs} threads"),
        ],
    );
    let mut bufs = blocks(data, DEFAULT_BLOCK_SIZE);
    // zstd payloads for the decode stage, made once.
    let mut compressed = Vec::new();
    {
        let mut s = Scratch::default();
        let (enc, _) = s.encoder()?;
        for (i, b) in bufs.iter().enumerate() {
            let mut out = Vec::new();
            let r = enc
                .encode(b, Filter::None, (i * DEFAULT_BLOCK_SIZE) as u64, &mut out)
                .map_err(codec_err)?;
            compressed.push((r.0, out, b.len()));
        }
    }
    let sealed = Protection::Sealed(Box::new(Subkeys::derive(
        &FileKey::from_bytes([1; 32]),
        &[2; 16],
    )));
    let gcm = LessSafeKey::new(
        UnboundKey::new(&AES_256_GCM, &[3; 32]).map_err(|_| Error::Crypto("ring key".into()))?,
    );
    let chacha = LessSafeKey::new(
        UnboundKey::new(&CHACHA20_POLY1305, &[4; 32])
            .map_err(|_| Error::Crypto("ring key".into()))?,
    );
    let ring_err = |_| Error::Crypto("ring seal failed".into());
    let stages: Vec<(&str, &str, StageFn)> = vec![
        (
            "BCJ x86 encode",
            "yes (executables)",
            Box::new(|i, b, _| {
                bcj::encode(Filter::X86, b, (i * DEFAULT_BLOCK_SIZE) as u64);
                Ok(())
            }),
        ),
        (
            "BCJ x86 decode",
            "yes (executables)",
            Box::new(|i, b, _| {
                bcj::decode(Filter::X86, b, (i * DEFAULT_BLOCK_SIZE) as u64);
                Ok(())
            }),
        ),
        (
            "zstd -3 compress",
            "yes",
            Box::new(|i, b, s| {
                let (enc, out) = s.encoder()?;
                enc.encode(b, Filter::None, (i * DEFAULT_BLOCK_SIZE) as u64, out)
                    .map(|_| ())
                    .map_err(codec_err)
            }),
        ),
        (
            "zstd -3 decompress",
            "yes",
            Box::new(|i, _, s| {
                let (codec, payload, len): &(Codec, Vec<u8>, usize) = &compressed[i];
                let (dec, out) = s.decoder()?;
                dec.decode(*codec, Filter::None, 0, payload, *len, out)
                    .map_err(codec_err)
            }),
        ),
        (
            "AES-256-CTR",
            "yes (encrypted)",
            Box::new(|_, b, _| {
                primitives::aes256_ctr_apply(&[5; 32], &[0; 16], b);
                Ok(())
            }),
        ),
        (
            "HMAC-SHA256",
            "yes (encrypted)",
            Box::new(|_, b, _| {
                std::hint::black_box(primitives::hmac_sha256(&[6; 32], &[b]));
                Ok(())
            }),
        ),
        (
            "frame seal (AES-CTR + HMAC)",
            "yes (encrypted)",
            Box::new(|i, b, _| {
                std::hint::black_box(sealed.seal_frame(&[2; 16], &[0; 16], i as u64, b));
                Ok(())
            }),
        ),
        (
            "BLAKE3",
            "yes (checksums, digests)",
            Box::new(|_, b, _| {
                std::hint::black_box(primitives::blake3_hash(b));
                Ok(())
            }),
        ),
        (
            "SHA-256 (sha2)",
            "no (alternative to BLAKE3)",
            Box::new(|_, b, _| {
                std::hint::black_box(primitives::sha256(b));
                Ok(())
            }),
        ),
        (
            "AES-256-GCM (ring)",
            "no (alternative AEAD)",
            Box::new(|_, b, _| {
                let n = Nonce::assume_unique_for_key([0; 12]);
                gcm.seal_in_place_separate_tag(n, Aad::empty(), b)
                    .map(|_| ())
                    .map_err(ring_err)
            }),
        ),
        (
            "ChaCha20-Poly1305 (ring)",
            "no (alternative AEAD)",
            Box::new(|_, b, _| {
                let n = Nonce::assume_unique_for_key([0; 12]);
                chacha
                    .seal_in_place_separate_tag(n, Aad::empty(), b)
                    .map(|_| ())
                    .map_err(ring_err)
            }),
        ),
    ];
    let workers = pool(jobs)?;
    let mut results = Vec::new();
    for (name, used, f) in &stages {
        progress(&format!("table 5: {name}"));
        let mut one = Scratch::default();
        one.encoder()?;
        one.decoder()?;
        let s1 = median_secs(plan.runs, || {
            for (i, b) in bufs.iter_mut().enumerate() {
                f(i, b, &mut one)?;
            }
            Ok(())
        })?;
        let sn = median_secs(plan.runs, || {
            workers.install(|| {
                bufs.par_iter_mut()
                    .enumerate()
                    .try_for_each_init(Scratch::default, |s, (i, b)| f(i, b, s))
            })
        })?;
        let one_core = mb_per_sec(data.len(), s1);
        results.push((*name, one_core));
        t.rows.push(vec![
            Cell::text(*name),
            Cell::text(*used),
            Cell::num(1000.0 / one_core.max(1e-9), 3),
            Cell::auto(one_core),
            Cell::auto(mb_per_sec(data.len(), sn)),
        ]);
    }
    let get = |n: &str| results.iter().find(|r| r.0 == n).map_or(0.0, |r| r.1);
    let (zstd, seal) = (get("zstd -3 compress"), get("frame seal (AES-CTR + HMAC)"));
    t.reading.push(format!(
        "Per MB on one core, zstd -3 compression costs {:.2} ms and sealing (AES-CTR + HMAC) \
         {:.2} ms: compression weighs {:.1}x as much as encryption.",
        1000.0 / zstd.max(1e-9),
        1000.0 / seal.max(1e-9),
        seal / zstd.max(1e-9)
    ));
    let (gcm_s, chacha_s) = (get("AES-256-GCM (ring)"), get("ChaCha20-Poly1305 (ring)"));
    t.reading.push(format!(
        "ring's AES-256-GCM runs at {:.1}x and ChaCha20-Poly1305 at {:.1}x the speed of \
         krypta's AES-CTR + HMAC-SHA256 seal on this CPU.",
        gcm_s / seal.max(1e-9),
        chacha_s / seal.max(1e-9)
    ));
    t.reading.push(format!(
        "BLAKE3 hashes {:.1}x as fast as SHA-256 (sha2) here.",
        get("BLAKE3") / get("SHA-256 (sha2)").max(1e-9)
    ));
    Ok(t)
}
