//! krypta's own golden vectors: the seeded generator that writes the `krypta-*` vector files,
//! and the runners that check them. Both go through [`compute`], so the files record exactly
//! what the archive code produces from fixed inputs; a change in any byte layout or key
//! schedule shows up as a failing `krypta kat` (and `tests/kat_golden.rs`) until the files are
//! regenerated on purpose (`KRYPTA_REGENERATE_VECTORS=1 cargo test --test kat_golden`).
//!
//! Inputs come from a seeded generator: `seeded(label, n)` is the first `n` bytes of
//! BLAKE3 derive-key with context [`SEED_CONTEXT`] and the label as key material, so every
//! input is reproducible from its label, which the files name in comments.

use super::parse::{Block, encode_hex, parse_file};
use super::{KatError, expect, expect_true};
use super::{golden_archive, golden_stanza};
use crate::codec::{Codec, Filter};
use crate::crypto::frame::Protection;
use crate::crypto::keys::{ArchiveId, FileKey, Subkeys};
use crate::crypto::pqbox;
use crate::crypto::primitives::blake3_derive_key;
use crate::format::frame::{BlockHeader, FrameHeader, FrameKind};

/// BLAKE3 derive-key context of the seeded input generator.
pub const SEED_CONTEXT: &str = "krypta 2026-11-30 known-answer vector generator";

/// A generator: returns the whole text of one golden vector file.
pub type Generator = fn() -> Result<String, KatError>;

/// The golden vector files that krypta generates: (file name, generator). Format 1's
/// `krypta_archive.txt` is not among them: the writer of format 1 is gone, its archives are
/// read-only known answers (see [`super::SETS`]).
pub const FILES: &[(&str, Generator)] = &[
    ("krypta_frame_seal.txt", frame_seal_file),
    ("krypta_pqbox_stanza.txt", pqbox_stanza_file),
    ("krypta_password_stanza.txt", golden_stanza::password_file),
    ("krypta_keyfile_stanza.txt", golden_stanza::keyfile_file),
    ("krypta_archive_v2.txt", golden_archive::archive_v2_file),
    (
        "krypta_archive_signed.txt",
        super::golden_signed::archive_signed_file,
    ),
];

/// `n` bytes of the seeded generator for `label`.
pub fn seeded(label: &str, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    blake3_derive_key(SEED_CONTEXT, label.as_bytes(), &mut out);
    out
}

/// `N` bytes of the seeded generator for `label`.
pub fn seeded_array<const N: usize>(label: &str) -> [u8; N] {
    let mut out = [0u8; N];
    blake3_derive_key(SEED_CONTEXT, label.as_bytes(), &mut out);
    out
}

/// Runs one vector of a golden kind: recomputes its outputs from its inputs and compares.
pub fn run_vector(kind: &str, _header: &Block, v: &Block) -> Result<(), KatError> {
    let outputs = compute(kind, v)?;
    for (field, got) in &outputs {
        expect(field, &v.hex(field)?, got)?;
    }
    check_properties(kind, v)
}

/// The outputs of one vector of `kind`, computed from its input fields: (field, bytes), in
/// file order.
pub fn compute(kind: &str, v: &Block) -> Result<Vec<(&'static str, Vec<u8>)>, KatError> {
    match kind {
        "krypta_frame_seal" => frame_seal(v),
        "krypta_pqbox_stanza" => pqbox_stanza(v),
        "krypta_password_stanza" => golden_stanza::password_stanza(v),
        "krypta_keyfile_stanza" => golden_stanza::keyfile_stanza(v),
        // Format 1's archives are read-only known answers: nothing is recomputed, the
        // property check reads them.
        "krypta_archive" => Ok(Vec::new()),
        "krypta_archive_v2" => golden_archive::archive_v2(v),
        other => Err(KatError::UnknownKind {
            kind: other.to_string(),
        }),
    }
}

// --- frame seal ------------------------------------------------------------------------------

/// Frame seal (`crypto::frame::Protection::seal_frame`): `file_key`, `archive_id`, `seq`,
/// `last` (0/1), `frame_kind` (1 data, 2 index) and a stored `payload` →
/// subkeys (`block_enc`, `block_mac`, `header_mac`, `footer_mac`), the clear `frame_header`,
/// the plaintext `body` (block header ‖ payload), the `sealed_body` (AES-256-CTR) and its
/// `tag` (HMAC-SHA256), and the unencrypted archive's `plain_tag` (BLAKE3).
fn frame_seal(v: &Block) -> Result<Vec<(&'static str, Vec<u8>)>, KatError> {
    let file_key = FileKey::from_bytes(v.array::<32>("file_key")?);
    let archive_id: ArchiveId = v.array::<16>("archive_id")?;
    let seq = v.number("seq", u64::MAX)?;
    let last = v.number("last", 1)? == 1;
    let kind = match v.number("frame_kind", 2)? {
        1 => FrameKind::Data,
        2 => FrameKind::Index,
        _ => {
            return Err(KatError::BadValue {
                key: "frame_kind".to_string(),
                line: v.line,
                expected: "1 (data) or 2 (index)",
            });
        }
    };
    let payload = v.hex("payload")?;
    let raw_len = u32::try_from(payload.len()).map_err(|_| KatError::TooLarge {
        what: "payload",
        len: payload.len(),
        limit: u32::MAX as usize,
    })?;
    let block_header = BlockHeader {
        codec: Codec::Store,
        filter: Filter::None,
        raw_len,
        filter_start: 0,
    };
    let mut body = block_header.to_bytes().to_vec();
    body.extend_from_slice(&payload);
    let frame_header = FrameHeader {
        kind,
        last,
        body_len: raw_len.saturating_add(16),
        seq,
    }
    .to_bytes();
    let subkeys = Subkeys::derive(&file_key, &archive_id);
    let mut out = vec![
        ("block_enc", subkeys.block_enc().to_vec()),
        ("block_mac", subkeys.block_mac().to_vec()),
        ("header_mac", subkeys.header_mac().to_vec()),
        ("footer_mac", subkeys.footer_mac().to_vec()),
        ("frame_header", frame_header.to_vec()),
        ("body", body.clone()),
    ];
    let mut sealed = body.clone();
    let sealed_protection = Protection::Sealed(Box::new(subkeys));
    let tag = sealed_protection.seal_frame(&archive_id, &frame_header, seq, &mut sealed);
    out.push(("sealed_body", sealed));
    out.push(("tag", tag.to_vec()));
    let mut plain = body;
    let plain_tag = Protection::Plain.seal_frame(&archive_id, &frame_header, seq, &mut plain);
    out.push(("plain_tag", plain_tag.to_vec()));
    Ok(out)
}

/// Extra checks beyond exact bytes: sealed frames open to their plaintext, and refuse to
/// open with one bit flipped or under another sequence number; pq-box stanzas open with the
/// recipient's key to the file key.
fn check_properties(kind: &str, v: &Block) -> Result<(), KatError> {
    match kind {
        "krypta_frame_seal" => {
            let file_key = FileKey::from_bytes(v.array::<32>("file_key")?);
            let archive_id: ArchiveId = v.array::<16>("archive_id")?;
            let seq = v.number("seq", u64::MAX)?;
            let frame_header = v.array::<16>("frame_header")?;
            let tag = v.array::<32>("tag")?;
            let sealed = v.hex("sealed_body")?;
            let protection = Protection::Sealed(Box::new(Subkeys::derive(&file_key, &archive_id)));
            let mut opened = sealed.clone();
            let ok = protection
                .open_frame(&archive_id, &frame_header, seq, &mut opened, &tag)
                .is_ok();
            expect_true("the sealed frame opens", ok)?;
            expect("body (opened)", &v.hex("body")?, &opened)?;
            let mut flipped = sealed.clone();
            if let Some(b) = flipped.last_mut() {
                *b ^= 0x80;
            }
            let refused = protection
                .open_frame(&archive_id, &frame_header, seq, &mut flipped, &tag)
                .is_err();
            expect_true("a frame with one bit flipped is refused", refused)?;
            let mut moved = sealed;
            let refused = protection
                .open_frame(
                    &archive_id,
                    &frame_header,
                    seq.wrapping_add(1),
                    &mut moved,
                    &tag,
                )
                .is_err();
            expect_true("a frame under another sequence number is refused", refused)
        }
        "krypta_pqbox_stanza" => {
            let sk = pqbox::SecretKey::from_bytes(&v.array::<96>("box_secret")?);
            let archive_id: ArchiveId = v.array::<16>("archive_id")?;
            let stanza = seal_pqbox(v)?;
            let opened = pqbox::open(&sk, &stanza, &archive_id);
            let file_key = v.array::<32>("file_key")?;
            expect_true(
                "the stanza opens to the file key",
                opened.is_some_and(|k| *k.as_bytes() == file_key),
            )
        }
        "krypta_password_stanza" => golden_stanza::check_password(v),
        "krypta_keyfile_stanza" => golden_stanza::check_keyfile(v),
        "krypta_archive" => golden_archive::check_archive_v1(v),
        "krypta_archive_v2" => golden_archive::check_archive_v2(v),
        _ => Ok(()),
    }
}

fn frame_seal_file() -> Result<String, KatError> {
    let mut text = String::from(
        "# krypta frame seal: fixed file key and archive id -> subkeys; sequence number and a
# stored block -> exact clear frame header, sealed body, tag, and the unencrypted BLAKE3 tag.
# File format: see the top of src/kat/mod.rs. GENERATED by src/kat/golden.rs; do not edit:
# regenerate with `KRYPTA_REGENERATE_VECTORS=1 cargo test --test kat_golden`.
[set]
name = krypta frame seal
kind = krypta_frame_seal
source = krypta docs/FORMAT.md (frames) and src/crypto/frame.rs: IV = seq (u64 BE) || 0, AES-256-CTR then HMAC-SHA256(block_mac, \"krypta/v1/frame\" || archive id || frame header || IV || body); subkeys HKDF-SHA256(file key, archive id, label)
section = frame layout version 1
licence = MIT OR Apache-2.0 (krypta)
cite = krypta format v1 (generated)
",
    );
    let cases: [(&str, u64, u64, u64, usize); 3] = [
        ("first-data-frame", 0, 0, 1, 100),
        ("last-data-frame", 7, 1, 1, 1),
        ("index-frame-partial-ctr-block", (1 << 40) + 3, 1, 2, 4101),
    ];
    for (id, seq, last, kind, len) in cases {
        let inputs = vec![
            ("id", id.to_string()),
            (
                "file_key",
                encode_hex(&seeded_array::<32>("frame-seal/file-key")),
            ),
            (
                "archive_id",
                encode_hex(&seeded_array::<16>("frame-seal/archive-id")),
            ),
            ("seq", seq.to_string()),
            ("last", last.to_string()),
            ("frame_kind", kind.to_string()),
            (
                "payload",
                encode_hex(&seeded(&format!("frame-seal/payload/{id}"), len)),
            ),
        ];
        let comment = format!(
            "inputs: seeded(\"frame-seal/file-key\", 32), seeded(\"frame-seal/archive-id\", 16), \
             seeded(\"frame-seal/payload/{id}\", {len})"
        );
        append_vector(&mut text, &comment, "krypta_frame_seal", inputs)?;
    }
    Ok(text)
}

// --- pq-box stanza ---------------------------------------------------------------------------

/// The stanza `pqbox::seal_deterministic` makes from a vector's inputs.
fn seal_pqbox(v: &Block) -> Result<crate::format::stanza::Stanza, KatError> {
    let sk = pqbox::SecretKey::from_bytes(&v.array::<96>("box_secret")?);
    let file_key = FileKey::from_bytes(v.array::<32>("file_key")?);
    let archive_id: ArchiveId = v.array::<16>("archive_id")?;
    pqbox::seal_deterministic(
        &sk.public_key(),
        &file_key,
        &archive_id,
        &v.array::<32>("m")?,
        &v.array::<32>("ephemeral_secret")?,
    )
    .map_err(|source| KatError::Crypto {
        call: "pqbox::seal_deterministic",
        source,
    })
}

/// pq-box stanza (`crypto::pqbox::seal_deterministic`): `box_secret` (ML-KEM seed d ‖ z and
/// X25519 scalar, 96 bytes), `file_key`, `archive_id`, ML-KEM `m` and `ephemeral_secret` →
/// `box_public` (1216 bytes) and the framed `stanza` bytes.
fn pqbox_stanza(v: &Block) -> Result<Vec<(&'static str, Vec<u8>)>, KatError> {
    let sk = pqbox::SecretKey::from_bytes(&v.array::<96>("box_secret")?);
    let mut stanza_bytes = Vec::new();
    seal_pqbox(v)?.write(&mut stanza_bytes);
    Ok(vec![
        ("box_public", sk.public_key().to_bytes()),
        ("stanza", stanza_bytes),
    ])
}

fn pqbox_stanza_file() -> Result<String, KatError> {
    let mut text = String::from(
        "# krypta pq-box recipient stanza: fixed box secret key, file key, archive id, ML-KEM message
# m and ephemeral X25519 secret -> exact public key and framed stanza bytes.
# File format: see the top of src/kat/mod.rs. GENERATED by src/kat/golden.rs; do not edit:
# regenerate with `KRYPTA_REGENERATE_VECTORS=1 cargo test --test kat_golden`.
[set]
name = krypta pq-box stanza
kind = krypta_pqbox_stanza
source = krypta docs/FORMAT.md (stanzas) and src/crypto/pqbox.rs: ML-KEM-768 (FIPS 203) + X25519 (RFC 7748), KEK = HKDF-SHA256 over both shared secrets with the transcript in info
section = stanza kind 4 (pq-box), format version 1
licence = MIT OR Apache-2.0 (krypta)
cite = krypta format v1 (generated)
",
    );
    for id in ["recipient-a", "recipient-b"] {
        let inputs = vec![
            ("id", id.to_string()),
            (
                "box_secret",
                encode_hex(&seeded(&format!("pq-box/{id}/secret"), 96)),
            ),
            (
                "file_key",
                encode_hex(&seeded_array::<32>("pq-box/file-key")),
            ),
            (
                "archive_id",
                encode_hex(&seeded_array::<16>("pq-box/archive-id")),
            ),
            (
                "m",
                encode_hex(&seeded_array::<32>(&format!("pq-box/{id}/m"))),
            ),
            (
                "ephemeral_secret",
                encode_hex(&seeded_array::<32>(&format!("pq-box/{id}/ephemeral"))),
            ),
        ];
        let comment = format!(
            "inputs: seeded(\"pq-box/{id}/secret\", 96), seeded(\"pq-box/file-key\", 32), \
             seeded(\"pq-box/archive-id\", 16), seeded(\"pq-box/{id}/m\", 32), \
             seeded(\"pq-box/{id}/ephemeral\", 32)"
        );
        append_vector(&mut text, &comment, "krypta_pqbox_stanza", inputs)?;
    }
    Ok(text)
}

// --- shared ----------------------------------------------------------------------------------

/// Appends one vector (a comment, its inputs, then the outputs [`compute`] gives) to `text`.
pub(super) fn append_vector(
    text: &mut String,
    comment: &str,
    kind: &str,
    inputs: Vec<(&str, String)>,
) -> Result<(), KatError> {
    let mut block = String::new();
    for (k, v) in &inputs {
        block.push_str(&format!("{k} = {v}\n"));
    }
    // Parse the inputs back through the vector grammar so compute() sees exactly what a
    // reader of the file will see.
    let parsed = parse_file(&format!("[set]\nkind = {kind}\n\n{block}"))?;
    let v = parsed.vectors.first().ok_or(KatError::Syntax {
        line: 1,
        problem: "generator produced an empty vector",
    })?;
    text.push_str(&format!("\n# {comment}\n"));
    text.push_str(&block);
    for (field, bytes) in compute(kind, v)? {
        text.push_str(&format!("{field} = {}\n", encode_hex(&bytes)));
    }
    Ok(())
}
