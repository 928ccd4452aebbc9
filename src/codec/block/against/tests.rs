//! Unit tests of the delta block encoder's choice between zstd's frame and `diff+base`.

use super::*;
use crate::codec::Level;

/// Deterministic bytes (xorshift).
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

/// A "new version" of `base`: the same bytes with one byte changed every `every` bytes (a
/// rebuilt executable's changed displacements) and a new piece inserted near the middle.
fn edited(base: &[u8], every: usize) -> Vec<u8> {
    let mut out = base.to_vec();
    for i in (every / 2..out.len()).step_by(every) {
        out[i] = out[i].wrapping_add(1);
    }
    let mid = out.len() / 2;
    out.splice(mid..mid, noise(3000, 7));
    out
}

fn lines(n: usize, tag: &str) -> Vec<u8> {
    (0..n)
        .map(|k| format!("static int {tag}_fn{k}(struct ctx *c) {{ return c->v[{k}]; }}\n"))
        .collect::<String>()
        .into_bytes()
}

fn window(base: &[u8], raw: &[u8]) -> u32 {
    let need = (base.len() + raw.len()).max(1 << 10) as u64;
    (64 - (need - 1).leading_zeros()).clamp(10, 29)
}

fn decodes_to(frame: &[u8], base: &[u8], raw: &[u8]) {
    let mut back = Vec::new();
    BlockDecoder::new()
        .unwrap()
        .decode_v2(
            Codec::Zstd,
            Filter::None,
            0,
            frame,
            raw.len(),
            base,
            &mut back,
        )
        .unwrap();
    assert!(back == raw, "the frame does not decode to the block");
}

/// At level 7 the block's payload is the smaller of zstd's frame and the `diff+base`
/// payload, byte for byte, and it decodes with the region to the block: on scattered edits
/// (where the diff is the smaller, by far) and on text with renamed symbols.
#[test]
fn levels_7_and_up_keep_the_smaller_payload_and_it_decodes() {
    let level = Level::new(7).unwrap();
    let binary = noise(1 << 20, 1);
    let text = lines(20_000, "aws_lc_0_46_0");
    let renamed = String::from_utf8(text.clone())
        .unwrap()
        .replace("0_46_0", "0_47_0")
        .into_bytes();
    for (name, base, raw) in [
        ("binary", binary.clone(), edited(&binary, 97)),
        ("text", text, renamed),
    ] {
        let w = window(&base, &raw);
        let mut zstd = Vec::new();
        zstd_against(level, &raw, &base, w, &mut zstd).unwrap();
        let mut diff = Vec::new();
        super::super::diff::encode::DiffEncoder::default()
            .encode(&raw, &base, DiffEffort::Normal, &mut diff)
            .unwrap();
        let mut enc = BlockEncoder::new(Some(level)).unwrap();
        let mut out = Vec::new();
        let codec = enc.encode_delta(&raw, &base, &mut out).unwrap();
        let (smaller, want) = if diff.len() < zstd.len() {
            (&diff, Codec::DiffBase)
        } else {
            (&zstd, Codec::ZstdBase)
        };
        assert_eq!(codec, Some(want), "{name}");
        assert_eq!(&out, smaller, "{name}: not the smaller payload");
        let mut back = Vec::new();
        let dec = &mut BlockDecoder::new().unwrap();
        match want {
            Codec::DiffBase => dec.decode_diff(Filter::None, 0, &out, raw.len(), &base, &mut back),
            _ => dec.decode_v2(
                Codec::Zstd,
                Filter::None,
                0,
                &out,
                raw.len(),
                &base,
                &mut back,
            ),
        }
        .unwrap();
        assert!(
            back == raw,
            "{name}: the payload does not decode to the block"
        );
        if name == "binary" {
            // ~11,000 substitutions: zstd codes each as a literal and a repeat offset, the
            // diff as a gap and a value.
            assert!(
                diff.len() * 4 < zstd.len(),
                "diff {} against zstd {}",
                diff.len(),
                zstd.len()
            );
        }
        // S = region ‖ block is 2 MiB: 2^18 region positions (one in 8) → two tables of
        // 2^19 u64 entries (one per position, rounded up: `scan::table_log`), 8 MiB, plus S.
        assert!(
            enc.memory_bytes() >= (8 << 20) + (2 << 20),
            "{name}: the scanner's tables not counted ({} bytes)",
            enc.memory_bytes()
        );
    }
}

/// At level 6 (the fast effort) a `diff+base` payload of at most half the block is kept
/// without zstd's frame being made; a larger one is compared with zstd's frame (level 6's
/// own tables, 2^20 entries like level 5's) and the smaller kept. Both branches are taken
/// here: scattered edits (the diff is ~1 % of the block) and a block half new bytes (the
/// diff is over half).
#[test]
fn level_6_makes_zstds_frame_only_where_the_diff_saves_under_half() {
    let level = Level::new(6).unwrap();
    let binary = noise(1 << 20, 3);
    let mut half_new = binary[..1 << 19].to_vec();
    half_new.extend(noise(1 << 19, 4));
    let text = lines(20_000, "aws_lc_0_46_0");
    let renamed = String::from_utf8(text.clone())
        .unwrap()
        .replace("0_46_0", "0_47_0")
        .into_bytes();
    let mut branches = [0; 2];
    for (name, base, raw) in [
        ("binary", binary.clone(), edited(&binary, 97)),
        ("half new", binary.clone(), half_new),
        ("text", text, renamed),
    ] {
        let mut diff = Vec::new();
        super::super::diff::encode::DiffEncoder::default()
            .encode(&raw, &base, DiffEffort::Fast, &mut diff)
            .unwrap();
        let mut zstd = Vec::new();
        zstd_against(level, &raw, &base, window(&base, &raw), &mut zstd).unwrap();
        let (want, payload) = if diff.len() <= raw.len() / 2 {
            branches[0] += 1;
            (Codec::DiffBase, &diff)
        } else {
            branches[1] += 1;
            if diff.len() < zstd.len() {
                (Codec::DiffBase, &diff)
            } else {
                (Codec::ZstdBase, &zstd)
            }
        };
        let mut enc = BlockEncoder::new(Some(level)).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            enc.encode_delta(&raw, &base, &mut out).unwrap(),
            Some(want),
            "{name}"
        );
        assert_eq!(&out, payload, "{name}: not the expected payload");
        if name == "binary" {
            assert!(diff.len() * 50 < raw.len(), "{name}: diff {}", diff.len());
        }
        if name == "half new" {
            assert!(diff.len() > raw.len() / 2, "{name}: diff {}", diff.len());
        }
    }
    assert_eq!(branches, [2, 1]);
}

/// The default level (and every level under 6) writes zstd's frame alone: the diff encoder
/// never runs, so its time and memory are not paid.
#[test]
fn levels_under_6_run_zstd_alone() {
    let binary = noise(1 << 20, 2);
    let raw = edited(&binary, 97);
    for l in [1, 3, 4, 5] {
        let level = Level::new(l).unwrap();
        let mut enc = BlockEncoder::new(Some(level)).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            enc.encode_delta(&raw, &binary, &mut out).unwrap(),
            Some(Codec::ZstdBase),
            "level {l}"
        );
        assert!(enc.diff.is_none(), "level {l} ran the diff encoder");
        let mut zstd = Vec::new();
        zstd_against(level, &raw, &binary, window(&binary, &raw), &mut zstd).unwrap();
        assert_eq!(out, zstd, "level {l}");
    }
}

/// A block over [`DIFF_MAX_BLOCK`] is zstd's alone at every level (level 9's 64 MiB
/// blocks).
#[test]
fn blocks_over_8_mib_run_zstd_alone() {
    let raw = vec![3u8; DIFF_MAX_BLOCK + 1];
    let base = vec![3u8; 4096];
    let mut enc = BlockEncoder::new(Some(Level::new(7).unwrap())).unwrap();
    let mut out = Vec::new();
    assert_eq!(
        enc.encode_delta(&raw, &base, &mut out).unwrap(),
        Some(Codec::ZstdBase)
    );
    assert!(enc.diff.is_none());
    decodes_to(&out, &base, &raw);
}
