use super::decode::{DiffBufs, decode};
use super::encode::DiffEncoder;
use super::*;
use crate::codec::CodecError;

/// A small deterministic generator (xorshift), so that failures reproduce.
pub(super) fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn random(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    (0..n).map(|_| rng(&mut s) as u8).collect()
}

/// Text-like bytes: words from a small vocabulary, so that edits keep long matches.
fn text(n: usize, seed: u64) -> Vec<u8> {
    let words = [
        "fn ",
        "let ",
        "aws_lc_0_46_0_",
        "sym",
        "(x: u32)",
        " -> ",
        "u32;\n",
        "{ ",
        "}\n",
    ];
    let mut s = seed;
    let mut out = Vec::with_capacity(n + 16);
    while out.len() < n {
        out.extend_from_slice(words[(rng(&mut s) % words.len() as u64) as usize].as_bytes());
        out.extend_from_slice(format!("{}", rng(&mut s) % 1000).as_bytes());
    }
    out.truncate(n);
    out
}

fn encode(raw: &[u8], region: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    DiffEncoder::default()
        .encode(raw, region, Effort::Normal, &mut out)
        .unwrap();
    out
}

fn roundtrip(name: &str, raw: &[u8], region: &[u8]) -> usize {
    let payload = encode(raw, region);
    let mut out = Vec::new();
    decode(
        &mut DiffBufs::default(),
        &payload,
        region,
        raw.len(),
        &mut out,
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(out == raw, "{name}: decoded bytes differ");
    payload.len()
}

#[test]
fn identical_block_is_a_few_bytes() {
    let region = text(200_000, 1);
    let n = roundtrip("identical", &region, &region);
    assert!(n < 40, "{n} bytes");
}

#[test]
fn one_changed_byte_is_one_value() {
    let region = text(100_000, 2);
    let mut raw = region.clone();
    raw[50_000] ^= 0x20;
    let n = roundtrip("one byte", &raw, &region);
    assert!(n < 60, "{n} bytes");
}

#[test]
fn substitutions_every_few_bytes_stay_one_copy() {
    let region = random(300_000, 3);
    let mut raw = region.clone();
    for i in (7..raw.len()).step_by(9) {
        raw[i] = raw[i].wrapping_add(1);
    }
    // 33,000 substitutions, each a +1 at a gap of 8: both streams compress to almost nothing.
    let n = roundtrip("substitutions", &raw, &region);
    assert!(n < 2_000, "{n} bytes");
}

#[test]
fn dense_substitutions_after_an_insertion_follow_the_new_alignment() {
    // Every 9th byte changed leaves exact matches of 8 bytes: after the insertion the new
    // alignment must still be taken (each match alone is no more than the margin).
    let region = random(300_000, 8);
    let mut raw = region.clone();
    for i in (5..raw.len()).step_by(9) {
        raw[i] = raw[i].wrapping_add(1);
    }
    raw.splice(100_000..100_000, *b"an insertion");
    raw.drain(200_000..200_050);
    let n = roundtrip("dense substitutions and edits", &raw, &region);
    assert!(n < 3_000, "{n} bytes");
}

#[test]
fn insertions_deletions_and_new_bytes_round_trip() {
    let region = text(400_000, 4);
    let mut raw = Vec::new();
    raw.extend_from_slice(&region[..100_000]);
    raw.extend_from_slice(&random(5_000, 5)); // new bytes
    raw.extend_from_slice(&region[100_010..250_000]); // a deletion of 10 bytes
    raw.extend_from_slice(b"inserted text");
    raw.extend_from_slice(&region[250_000..]);
    raw.extend_from_slice(&random(20_000, 6)); // a new file at the end of the block
    let n = roundtrip("edits", &raw, &region);
    assert!(n < 27_000, "{n} bytes");
}

#[test]
fn every_shape_round_trips() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut enc = DiffEncoder::default();
    let mut bufs = DiffBufs::default();
    let (mut payload, mut out) = (Vec::new(), Vec::new());
    for case in 0..300 {
        let region_len = [1, 7, 8, 100, 5000, 70_000][case % 6];
        let block_len = [1, 15, 16, 17, 64, 4096, 100_000][(case / 6) % 7];
        let region: Vec<u8> = (0..region_len)
            .map(|_| match case % 3 {
                0 => 0,
                1 => (rng(&mut seed) % 4) as u8,
                _ => rng(&mut seed) as u8,
            })
            .collect();
        let mut block = Vec::with_capacity(block_len);
        while block.len() < block_len {
            let k = rng(&mut seed) % 5;
            let len = (rng(&mut seed) % 700) as usize + 1;
            if k < 2 {
                let at = (rng(&mut seed) as usize) % region_len;
                let end = (at + len).min(region_len);
                block.extend_from_slice(&region[at..end]);
                if k == 1 {
                    let last = block.len() - 1;
                    block[last] ^= 0x5A;
                }
            } else if k == 2 {
                block.extend(std::iter::repeat_n(rng(&mut seed) as u8, len));
            } else if k == 3 && !block.is_empty() {
                // A repeat of the block itself (a self-copy).
                let at = (rng(&mut seed) as usize) % block.len();
                let piece: Vec<u8> = block[at..(at + len).min(block.len())].to_vec();
                block.extend_from_slice(&piece);
            } else {
                block.extend((0..len).map(|_| rng(&mut seed) as u8));
            }
        }
        block.truncate(block_len);
        enc.encode(&block, &region, Effort::ALL[case % 3], &mut payload)
            .unwrap();
        decode(&mut bufs, &payload, &region, block.len(), &mut out)
            .unwrap_or_else(|e| panic!("case {case}: {e}"));
        assert!(out == block, "case {case}");
    }
}

/// A payload from raw streams (each compressed as one zstd frame, empty ones left empty).
fn payload(ctrl: &[u8], gaps: &[u8], vals: &[u8], extra: &[u8]) -> Vec<u8> {
    let frames: Vec<Vec<u8>> = [ctrl, gaps, vals, extra]
        .iter()
        .map(|s| {
            if s.is_empty() {
                Vec::new()
            } else {
                zstd::bulk::compress(s, 3).unwrap()
            }
        })
        .collect();
    let mut p = vec![VERSION];
    for f in &frames {
        p.extend_from_slice(&(f.len() as u32).to_le_bytes());
    }
    for f in &frames {
        p.extend_from_slice(f);
    }
    p
}

fn leb(values: &[u64]) -> Vec<u8> {
    let mut v = Vec::new();
    for &x in values {
        put_leb(&mut v, x);
    }
    v
}

/// Commands as (seek, copy, add).
fn ctrl(cmds: &[(i64, u64, u64)]) -> Vec<u8> {
    let mut v = Vec::new();
    for &(d, l, a) in cmds {
        put_leb(&mut v, zigzag(d));
        put_leb(&mut v, l);
        put_leb(&mut v, a);
    }
    v
}

fn decode_err(p: &[u8], region: &[u8], raw_len: usize) -> String {
    let mut out = Vec::new();
    let e = decode(&mut DiffBufs::default(), p, region, raw_len, &mut out).unwrap_err();
    assert!(out.is_empty(), "output left after an error");
    match e {
        CodecError::Diff(d) => d.to_string(),
        e => format!("not a DiffError: {e}"),
    }
}

#[test]
fn hand_made_payload_decodes_by_the_format_text() {
    // Region "abcdef"; out = "abXdef" (copy 6 with +22 at byte 2) then "!!" then a
    // self-copy of out[0..4] = "abXd" (seek from 6 to 6 + 0 = region end → out[0]).
    let region = b"abcdef";
    let p = payload(
        &ctrl(&[(0, 6, 2), (0, 4, 0)]),
        &leb(&[2]),
        &[b'X'.wrapping_sub(b'c')],
        b"!!",
    );
    let mut out = Vec::new();
    decode(&mut DiffBufs::default(), &p, region, 12, &mut out).unwrap();
    assert_eq!(out, b"abXdef!!abXd");
}

#[test]
fn hostile_payloads_are_named_errors() {
    let region = b"abcdef";
    let good = payload(&ctrl(&[(0, 6, 0)]), &[], &[], &[]);
    let body = good.len() - HEAD_LEN;
    let cut = format!(
        "diff stream lengths add up to {body} bytes, but {} follow the head",
        body - 1
    );
    let longer = format!(
        "diff stream lengths add up to {body} bytes, but {} follow the head",
        body + 1
    );
    let cases: Vec<(&str, Vec<u8>, usize, &str)> = vec![
        (
            "short head",
            good[..10].to_vec(),
            6,
            "diff payload of 10 bytes is shorter than its 17-byte head",
        ),
        (
            "version",
            {
                let mut p = good.clone();
                p[0] = 1;
                p
            },
            6,
            "diff payload version 1 (only 0 is defined)",
        ),
        ("truncated stream", good[..good.len() - 1].to_vec(), 6, &cut),
        (
            "trailing byte",
            {
                let mut p = good.clone();
                p.push(0);
                p
            },
            6,
            &longer,
        ),
        (
            "seek before 0",
            payload(&ctrl(&[(-1, 6, 0)]), &[], &[], &[]),
            6,
            "diff seek at output byte 0 moves the source cursor to -1, outside 0..=6",
        ),
        (
            "seek past data",
            payload(&ctrl(&[(7, 1, 0)]), &[], &[], &[]),
            1,
            "diff seek at output byte 0 moves the source cursor to 7, outside 0..=6",
        ),
        (
            "copy before the data exists",
            payload(&ctrl(&[(6, 2, 0)]), &[], &[], &[]),
            2,
            "diff copy at output byte 0 reads source byte 6, but only 6 exist (region and output so far)",
        ),
        (
            "empty command",
            payload(&ctrl(&[(0, 0, 0)]), &[], &[], &[]),
            6,
            "diff command at output byte 0 copies and adds nothing",
        ),
        (
            "past the block",
            payload(&ctrl(&[(0, 6, 0)]), &[], &[], &[]),
            5,
            "diff command at output byte 0 makes 6 more bytes, past the 5-byte block",
        ),
        (
            "short",
            payload(&ctrl(&[(0, 6, 0)]), &[], &[], &[]),
            7,
            "diff commands make 6 bytes, the block has 7",
        ),
        (
            "extra runs out",
            payload(&ctrl(&[(0, 0, 3)]), &[], &[], b"ab"),
            3,
            "diff stream extra ends too early (at output byte 0)",
        ),
        (
            "extra left over",
            payload(&ctrl(&[(0, 1, 2)]), &[], &[], b"abc"),
            3,
            "diff stream extra has data left after the last command",
        ),
        (
            "vals run out",
            payload(&ctrl(&[(0, 6, 0)]), &leb(&[1]), &[], &[]),
            6,
            "diff stream vals ends too early (at output byte 1)",
        ),
        (
            "vals left over",
            payload(&ctrl(&[(0, 6, 0)]), &leb(&[1]), &[1, 2], &[]),
            6,
            "diff stream vals has data left after the last command",
        ),
        (
            "gaps left over",
            payload(&ctrl(&[(0, 2, 0)]), &leb(&[4]), &[1], &[]),
            2,
            "diff stream gaps has data left after the last command",
        ),
        (
            "zero value",
            payload(&ctrl(&[(0, 6, 0)]), &leb(&[0]), &[0], &[]),
            6,
            "diff stream vals holds a zero value (at output byte 0)",
        ),
        (
            "number cut off",
            payload(&[0x80], &[], &[], &[]),
            6,
            "diff stream ctrl: a number is cut off",
        ),
        (
            "number over 32 bits",
            payload(&[0xFF, 0xFF, 0xFF, 0xFF, 0x7F], &[], &[], &[]),
            6,
            "diff stream ctrl: a number is over 32 bits",
        ),
        (
            "gap cut off",
            payload(&ctrl(&[(0, 6, 0)]), &[0x80], &[1], &[]),
            6,
            "diff stream gaps: a number is cut off",
        ),
        (
            "no commands",
            payload(&[], &[], &[], &[]),
            6,
            "diff commands make 0 bytes, the block has 6",
        ),
        (
            "huge declared vals",
            payload(&ctrl(&[(0, 6, 0)]), &[], &[1; 7], &[]),
            6,
            "diff stream vals declares 7 bytes, more than the 6 a 6-byte block can use",
        ),
        (
            "huge declared extra",
            payload(&ctrl(&[(0, 0, 6)]), &[], &[], &[7; 100]),
            6,
            "diff stream extra declares 100 bytes, more than the 6 a 6-byte block can use",
        ),
        (
            "not a frame",
            {
                let mut p = good.clone();
                p[HEAD_LEN] ^= 0xFF;
                p
            },
            6,
            "diff stream ctrl: payload is not a zstd frame",
        ),
    ];
    for (name, p, raw_len, want) in cases {
        assert_eq!(decode_err(&p, region, raw_len), want, "{name}");
    }
}

/// The scanner keeps the current alignment while it agrees: a block that is its region's
/// text (a small vocabulary, so that every 6-byte key occurs all over the region, as in
/// compiled JavaScript) after 725 new bytes, with a byte changed every 5,000, is one switch
/// (found after the new bytes) and 40 diff values, not a copy from wherever a short key
/// leads (session 28's matcher made ~1,000 commands of such a block of typescript's pair).
#[test]
fn repeated_text_shifted_by_an_insertion_keeps_one_alignment() {
    let region = text(400_000, 7);
    let mut raw = random(725, 8);
    raw.extend_from_slice(&region[..200_000]);
    for i in (1000..raw.len()).step_by(5000) {
        raw[i] ^= 0x01;
    }
    let mut scanner = super::scan::Scanner::default();
    let mut switches = Vec::new();
    scanner
        .scan(&region, &raw, Effort::Normal, &mut switches)
        .unwrap();
    assert_eq!(switches.len(), 1, "{switches:?}");
    // Region byte x is block byte x + 725, found within the first key's reach.
    assert_eq!(switches[0].start, switches[0].src + 725, "{switches:?}");
    assert!(switches[0].start < 725 + 64, "{switches:?}");
    let n = roundtrip("shifted text", &raw, &region);
    // The 725 random bytes are most of it.
    assert!(n < 725 + 200, "{n} bytes");
}

/// The scanner's tables grow with `S` (one entry per region position, rounded up), from
/// 2^12 entries to 2^22 (2^20 at the fast effort): a small block does not clear 16 MiB, a
/// 32 MiB block's is not overwritten four times over. The fast effort makes the long table
/// alone.
#[test]
fn table_size_follows_the_joined_length() {
    use super::scan::{table_bytes, table_log};
    for effort in Effort::ALL {
        assert_eq!(table_log(0, effort), 12);
        assert_eq!(table_log(100, effort), 12);
        assert_eq!(table_log(8 << 12, effort), 13);
        assert_eq!(table_log((8 << 12) - 8, effort), 12);
    }
    // A 4 MiB block and its 6 MiB region: 1.25M positions.
    assert_eq!(table_log(10 << 20, Effort::Normal), 21);
    assert_eq!(table_log(10 << 20, Effort::Fast), 20);
    // 8 MiB and 10 MiB; 32 MiB and 34 MiB: at the cap.
    assert_eq!(table_log(18 << 20, Effort::Normal), 22);
    assert_eq!(table_log(66 << 20, Effort::Max), 22);
    assert_eq!(table_log(66 << 20, Effort::Fast), 20);
    assert_eq!(table_bytes(10 << 20, Effort::Normal), 32 << 20);
    assert_eq!(table_bytes(10 << 20, Effort::Fast), 8 << 20);
}

/// Regression (the whole-copy path of `decode`): a copy that reads bytes it makes itself
/// (seek to the region's end, copy longer than the output so far) takes each source byte
/// after its diff byte was added, as the format text says, not the bytes before it.
#[test]
fn a_copy_reading_its_own_output_sees_its_diff_bytes() {
    // Region "ab". Command 1 copies it; command 2 seeks to the output's start (position 2)
    // and copies 6 bytes from there, the diff byte +1 on its second byte: "ab" + "acacac".
    let region = b"ab";
    let p = payload(&ctrl(&[(0, 2, 0), (0, 6, 0)]), &leb(&[3]), &[1], &[]);
    let mut out = Vec::new();
    decode(&mut DiffBufs::default(), &p, region, 8, &mut out).unwrap();
    assert_eq!(out, b"abacacac");
    // The same diff byte in a copy that reads only earlier output (command 3: from the
    // cursor at 2, seek 2 to output byte 2, copy 2) lands on the copied byte alone:
    // "ab" + "ab" (the region again) + "ac".
    let p = payload(
        &ctrl(&[(0, 2, 0), (-2, 2, 0), (2, 2, 0)]),
        &leb(&[5]),
        &[1],
        &[],
    );
    decode(&mut DiffBufs::default(), &p, region, 6, &mut out).unwrap();
    assert_eq!(out, b"ababac");
}

/// Regression (h78, session 33): bsdiff's loop let a backward extension reach back over the
/// whole gap switch after switch, so in a run of one repeated byte the gaps — and the
/// extensions and overlap split over them — grew with every switch: a 147 MB file with
/// 123,457 `Q` bytes inserted took 26 s at `-l 6` (1.7 s at `-l 7`; the block that took it
/// had a long run of zeros, which the scan copied 31 bytes at a time from a short run in the
/// region: 20,686 switches, 11 × 10^9 bytes handed to the extensions). The bytes the
/// extensions are given must stay within a few times the block, at every effort, for runs
/// of a repeated byte inserted, appended and alone, and the payload must decode.
#[test]
fn a_run_of_one_repeated_byte_costs_linear_work() {
    let mut region = random(1 << 20, 41);
    let mut shapes: Vec<(&str, Vec<u8>)> = Vec::new();
    // What h78's file had: a long run of zeros in the block, and in the region only a short
    // one (31 bytes), which the table finds again and again: a switch every 31 bytes, each
    // extending back over everything before it (the region before the run mostly zeros).
    let mut run = region[..200_000].to_vec();
    run.extend(std::iter::repeat_n(0u8, 300_000));
    run.extend_from_slice(&region[200_000..500_000]);
    // Before the short run, bytes mostly zero (a nonzero one in three, so no 24 zeros in a
    // row): every backward extension from it reaches back over the whole gap.
    for (k, b) in region[500_000..600_000].iter_mut().enumerate() {
        *b = u8::from(k % 3 == 0);
    }
    region[600_000..600_031].fill(0);
    region[600_031] = 0xff;
    shapes.push(("zeros against a short run", run));
    let mut inserted = region[..500_000].to_vec();
    inserted.extend(std::iter::repeat_n(b'Q', 200_000));
    inserted.extend_from_slice(&region[500_000..800_000]);
    shapes.push(("inserted", inserted));
    let mut appended = region[..300_000].to_vec();
    appended.extend(std::iter::repeat_n(0u8, 300_000));
    shapes.push(("appended", appended));
    shapes.push(("alone", vec![7u8; 400_000]));
    for (name, raw) in &shapes {
        for effort in [Effort::Fast, Effort::Normal, Effort::Max] {
            let mut enc = DiffEncoder::default();
            let mut payload = Vec::new();
            enc.encode(raw, &region, effort, &mut payload).unwrap();
            assert!(
                enc.gap_bytes <= 3 * raw.len(),
                "{name} {effort:?}: extensions looked over {} bytes for a {}-byte block",
                enc.gap_bytes,
                raw.len()
            );
            let mut out = Vec::new();
            decode(
                &mut DiffBufs::default(),
                &payload,
                &region,
                raw.len(),
                &mut out,
            )
            .unwrap_or_else(|e| panic!("{name} {effort:?}: {e}"));
            assert!(out == *raw, "{name} {effort:?}: decoded bytes differ");
        }
    }
}
