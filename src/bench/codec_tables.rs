//! Tables 1 (codec: ratio and speed per fixture and level) and 2 (BCJ: ratio with and
//! without the x86 filter), through krypta's block codec (`BlockEncoder`, `BlockDecoder`).

use crate::codec::{BlockDecoder, BlockEncoder, DEFAULT_BLOCK_SIZE, Filter, Level};
use crate::error::{Error, Result};

use super::Plan;
use super::fixtures::Fixture;
use super::measure::{mb_per_sec, median_secs};
use super::report::{Cell, Table};

/// The result of one fixture at one setting.
#[derive(Debug, Clone, Copy)]
pub struct CodecRun {
    /// Input bytes / encoded payload bytes.
    pub ratio: f64,
    /// Encode speed, MB/s of input.
    pub compress: f64,
    /// Decode speed, MB/s of output.
    pub extract: f64,
}

fn codec_err(e: crate::codec::CodecError) -> Error {
    Error::Usage(format!("bench codec: {e}"))
}

/// Encodes `data` in blocks of the level's default size (4 MiB for store) with `filter`,
/// then decodes it, one thread, `runs` times each; checks the round trip.
pub fn run_codec(
    data: &[u8],
    level: Option<Level>,
    filter: Filter,
    runs: usize,
) -> Result<CodecRun> {
    let block = level.map_or(DEFAULT_BLOCK_SIZE, Level::default_block_size);
    let mut enc = BlockEncoder::new(level).map_err(codec_err)?;
    let mut payloads: Vec<(crate::codec::Codec, Filter, u64, Vec<u8>, usize)> = Vec::new();
    let encode_secs = median_secs(runs, || {
        payloads.clear();
        for (i, chunk) in data.chunks(block).enumerate() {
            let start = (i * block) as u64;
            let mut out = Vec::new();
            let (codec, f) = enc
                .encode(chunk, filter, start, &mut out)
                .map_err(codec_err)?;
            payloads.push((codec, f, start, out, chunk.len()));
        }
        Ok(())
    })?;
    let stored: usize = payloads.iter().map(|p| p.3.len()).sum();
    let mut dec = BlockDecoder::new().map_err(codec_err)?;
    let mut out = Vec::new();
    let mut check = blake3::Hasher::new();
    let decode_secs = median_secs(runs, || {
        check = blake3::Hasher::new();
        for (codec, f, start, payload, len) in &payloads {
            dec.decode(*codec, *f, *start, payload, *len, &mut out)
                .map_err(codec_err)?;
            check.update(&out);
        }
        Ok(())
    })?;
    if check.finalize() != blake3::hash(data) {
        return Err(Error::Usage("bench codec: round trip mismatch".into()));
    }
    Ok(CodecRun {
        ratio: data.len() as f64 / stored.max(1) as f64,
        compress: mb_per_sec(data.len(), encode_secs),
        extract: mb_per_sec(data.len(), decode_secs),
    })
}

/// The settings of table 1: store, level 1, the default level, level 9.
fn settings() -> Vec<(String, Option<Level>)> {
    let mut v = vec![("store (-s)".to_string(), None)];
    for l in [Level::MIN, Level::DEFAULT, Level::MAX] {
        v.push((format!("-l {} (zstd {})", l.get(), l.zstd_level()), Some(l)));
    }
    v
}

/// Table 1: per fixture × setting, ratio, compress and extract MB/s, one thread.
pub fn table1(fixtures: &[Fixture], plan: &Plan, progress: &mut dyn FnMut(&str)) -> Result<Table> {
    let mut t = Table::new(
        1,
        "Codec: ratio and speed per input and level (one thread)",
        format!(
            "krypta's block codec (BCJ as auto-detected, zstd or store) over each whole input in \
             the level's blocks (4 MiB; 32 MiB at -l 9), then decoded and checked; one thread; \
             median of {} run(s). Ratio = input bytes / encoded payload bytes (frame and \
             index overhead not counted; see table 6 for whole archives).",
            plan.runs
        ),
        &[
            "input",
            "bytes",
            "BCJ",
            "setting",
            "ratio",
            "compress MB/s",
            "extract MB/s",
        ],
    );
    let mut best_extract: Option<(f64, String)> = None;
    for f in fixtures {
        for (name, level) in settings() {
            progress(&format!("table 1: {} {name}", f.name));
            let r = run_codec(&f.data, level, f.filter, plan.runs)?;
            t.rows.push(vec![
                Cell::text(&f.name),
                Cell::num(f.data.len() as f64, 0),
                Cell::text(f.filter.name()),
                Cell::text(&name),
                Cell::num(r.ratio, 3),
                Cell::auto(r.compress),
                Cell::auto(r.extract),
            ]);
            if level.is_some()
                && r.ratio > 1.05
                && best_extract.as_ref().is_none_or(|(v, _)| r.extract > *v)
            {
                best_extract = Some((r.extract, format!("{} at {name}", f.name)));
            }
        }
    }
    t.reading = read_table1(&t);
    if let Some((v, what)) = best_extract {
        t.reading
            .push(format!("Fastest compressed decode: {v:.0} MB/s ({what})."));
    }
    Ok(t)
}

fn num(c: &Cell) -> f64 {
    match c {
        Cell::Num { value, .. } => *value,
        _ => 0.0,
    }
}

fn read_table1(t: &Table) -> Vec<String> {
    let mut out = Vec::new();
    let mut decode_range: Option<(f64, f64)> = None;
    let names: Vec<String> = t
        .rows
        .iter()
        .filter_map(|r| match &r[0] {
            Cell::Text(s) => Some(s.clone()),
            _ => None,
        })
        .fold(Vec::new(), |mut v, n| {
            if !v.contains(&n) {
                v.push(n);
            }
            v
        });
    for name in names {
        let rows: Vec<&Vec<Cell>> = t
            .rows
            .iter()
            .filter(|r| matches!(&r[0], Cell::Text(s) if *s == name))
            .collect();
        let (Some(l1), Some(l9)) = (rows.get(1), rows.get(3)) else {
            continue;
        };
        let gain = (num(&l9[4]) / num(&l1[4]).max(1e-9) - 1.0) * 100.0;
        let slower = num(&l1[5]) / num(&l9[5]).max(1e-9);
        out.push(format!(
            "{name}: -l 9 gives {gain:.0}% more ratio than -l 1 ({:.2} vs {:.2}) and compresses \
             {slower:.0}x slower.",
            num(&l9[4]),
            num(&l1[4])
        ));
        for r in rows.iter().skip(1) {
            let e = num(&r[6]);
            if num(&r[4]) > 1.05 {
                decode_range = Some(match decode_range {
                    None => (e, e),
                    Some((lo, hi)) => (lo.min(e), hi.max(e)),
                });
            }
        }
    }
    if let Some((lo, hi)) = decode_range {
        out.push(format!(
            "Decode speed of compressible inputs, all levels, one thread: {lo:.0}–{hi:.0} MB/s."
        ));
    }
    out
}

/// Table 2: the binary fixture at each level, ratio without and with the x86 BCJ filter.
pub fn table2(binary: &Fixture, plan: &Plan, progress: &mut dyn FnMut(&str)) -> Result<Table> {
    let mut t = Table::new(
        2,
        "BCJ: x86 filter on machine code, ratio per level",
        format!(
            "the binary input ({} bytes of x86-64 code) through krypta's block codec at each \
             level, with BCJ off and with the x86 filter (the one auto-detection picks); one \
             encode each (ratio does not vary between runs).",
            binary.data.len()
        ),
        &[
            "level",
            "zstd level",
            "ratio, no BCJ",
            "ratio, x86 BCJ",
            "BCJ gain %",
        ],
    );
    let mut gains = Vec::new();
    for l in &plan.bcj_levels {
        let level = Level::new(*l).map_err(codec_err)?;
        progress(&format!("table 2: level {l}"));
        let off = run_codec(&binary.data, Some(level), Filter::None, 1)?;
        let on = run_codec(&binary.data, Some(level), Filter::X86, 1)?;
        let gain = (on.ratio / off.ratio - 1.0) * 100.0;
        gains.push((*l, gain));
        t.rows.push(vec![
            Cell::text(format!("-l {l}")),
            Cell::num(f64::from(level.zstd_level()), 0),
            Cell::num(off.ratio, 3),
            Cell::num(on.ratio, 3),
            Cell::num(gain, 1),
        ]);
    }
    if let (Some(lo), Some(hi)) = (
        gains.iter().min_by(|a, b| a.1.total_cmp(&b.1)),
        gains.iter().max_by(|a, b| a.1.total_cmp(&b.1)),
    ) {
        t.reading.push(format!(
            "The x86 filter changes the ratio by {:+.1}% (at -l {}) to {:+.1}% (at -l {}) on \
             this code.",
            lo.1, lo.0, hi.1, hi.0
        ));
        if lo.1 < 0.0 {
            t.reading
                .push("Where the gain is negative, the filter costs ratio at that level.".into());
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_run_on_repetitive_input_reports_ratio_above_one() {
        let data = b"abcdefgh".repeat(20_000);
        let r = run_codec(&data, Some(Level::MIN), Filter::None, 1).unwrap();
        assert!(r.ratio > 50.0, "ratio {}", r.ratio);
        let s = run_codec(&data, None, Filter::None, 1).unwrap();
        assert_eq!(s.ratio, 1.0);
    }
}
