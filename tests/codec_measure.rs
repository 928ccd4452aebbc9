//! Throwaway measurements behind the level map in `src/codec/mod.rs` (ignored by default; no
//! timed assertions). Run in release, one test at a time:
//!
//! ```text
//! tar cf /tmp/inc.tar -C /usr include
//! cargo test --release --test codec_measure -- --ignored --nocapture --test-threads=1
//! ```
//!
//! Inputs: `/tmp/inc.tar` and the Rust toolchain's `librustc_driver-*.so` (override with
//! `KRYPTA_MEASURE_TAR` / `KRYPTA_MEASURE_SO`). Speeds are MB/s (10^6 bytes) of raw data per
//! second of CPU time of the measuring thread (ours, from `/proc/thread-self/schedstat`) or of
//! the child process (`zstd` CLI, from `/proc/self/stat` cutime+cstime), so that other load on
//! the machine does not skew them much; wall-clock seconds are printed too.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use krypta::codec::{BlockDecoder, BlockEncoder, Codec, Filter, Level};

const MIB: usize = 1 << 20;

/// CPU time of the calling thread, seconds.
fn thread_cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// CPU time (user + system) of waited-for children, seconds (clock ticks of 10 ms).
fn children_cpu() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the ")" of the command name: state is field 3; cutime/cstime are 16/17.
    let rest = stat.rsplit(')').next().unwrap_or("");
    // Every field must keep its index: some are negative (tpgid -1), so parse as i64.
    let f: Vec<i64> = rest
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    f.get(12..14).map_or(0.0, |c| (c[0] + c[1]) as f64 / 100.0)
}

fn so_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KRYPTA_MEASURE_SO") {
        return Some(p.into());
    }
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let lib = home.join(".rustup/toolchains/1.95.0-x86_64-unknown-linux-gnu/lib");
    std::fs::read_dir(lib)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("librustc_driver-"))
        })
}

fn tar_path() -> PathBuf {
    std::env::var_os("KRYPTA_MEASURE_TAR").map_or_else(|| "/tmp/inc.tar".into(), Into::into)
}

struct Run {
    size: usize,
    comp_cpu: f64,
    comp_wall: f64,
    dec_cpu: f64,
}

/// Encodes `data` in independent `block`-byte blocks on this thread, then decodes them all.
fn ours(data: &[u8], level: Level, block: usize, filter: Filter) -> Run {
    let mut enc = BlockEncoder::new(Some(level)).expect("encoder");
    let mut blocks: Vec<(Codec, Filter, Vec<u8>)> = Vec::new();
    let (c0, w0) = (thread_cpu(), Instant::now());
    for (k, chunk) in data.chunks(block).enumerate() {
        let mut payload = Vec::new();
        let (codec, used) = enc
            .encode(chunk, filter, (k * block) as u64, &mut payload)
            .expect("encode");
        blocks.push((codec, used, payload));
    }
    let (comp_cpu, comp_wall) = (thread_cpu() - c0, w0.elapsed().as_secs_f64());
    println!("# encoder memory {} MiB", enc.memory_bytes() >> 20);
    drop(enc);
    let mut dec = BlockDecoder::new().expect("decoder");
    let mut out = Vec::new();
    let mut dec_cpu = 0.0;
    for (k, (chunk, (codec, used, payload))) in data.chunks(block).zip(&blocks).enumerate() {
        let c = thread_cpu();
        dec.decode(
            *codec,
            *used,
            (k * block) as u64,
            payload,
            chunk.len(),
            &mut out,
        )
        .expect("decode");
        dec_cpu += thread_cpu() - c;
        assert!(out == chunk, "block {k} did not round-trip");
    }
    let size = blocks.iter().map(|b| b.2.len()).sum();
    Run {
        size,
        comp_cpu,
        comp_wall,
        dec_cpu,
    }
}

/// `zstd -q -T1 <args> -c path`, then `zstd -d` of its output; sizes and child CPU times.
fn cli(path: &PathBuf, args: &[&str]) -> Run {
    let tmp = std::env::temp_dir().join(format!("krypta-measure-{}.zst", std::process::id()));
    let c0 = children_cpu();
    let w0 = Instant::now();
    let status = Command::new("zstd")
        .args(["-q", "-f", "-T1"])
        .args(args)
        .arg("-o")
        .arg(&tmp)
        .arg(path)
        .status()
        .expect("zstd CLI");
    assert!(status.success());
    let (comp_cpu, comp_wall) = (children_cpu() - c0, w0.elapsed().as_secs_f64());
    let size = std::fs::metadata(&tmp)
        .map(|m| m.len() as usize)
        .expect("zstd output");
    let c1 = children_cpu();
    let status = Command::new("zstd")
        .args(["-q", "-d", "-c", "--long=31"])
        .arg(&tmp)
        .stdout(Stdio::null())
        .status()
        .expect("zstd -d");
    assert!(status.success());
    let dec_cpu = children_cpu() - c1;
    let _ = std::fs::remove_file(&tmp);
    Run {
        size,
        comp_cpu,
        comp_wall,
        dec_cpu,
    }
}

fn mbps(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / 1e6 / secs.max(1e-9)
}

fn header(what: &str) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let zstd = Command::new("zstd")
        .arg("-V")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    println!("\n## {what}");
    println!(
        "# load: {}# {}",
        load,
        String::from_utf8_lossy(&zstd).trim()
    );
    println!(
        "{:<34} {:>12} {:>7} {:>9} {:>9} {:>8}",
        "config", "bytes", "ratio", "comp MB/s", "dec MB/s", "wall s"
    );
}

fn row(name: &str, raw: usize, r: &Run) {
    println!(
        "{:<34} {:>12} {:>7.3} {:>9.1} {:>9.1} {:>8.1}",
        name,
        r.size,
        raw as f64 / r.size as f64,
        mbps(raw, r.comp_cpu),
        if r.dec_cpu > 0.0 {
            mbps(raw, r.dec_cpu)
        } else {
            f64::NAN
        },
        r.comp_wall
    );
}

fn levels_on(path: &PathBuf) {
    let data = std::fs::read(path).expect("input");
    header(&format!(
        "levels 1..=9, 4 MiB blocks, one thread: {} ({} bytes)",
        path.display(),
        data.len()
    ));
    for l in 1..=9 {
        let level = Level::new(l).expect("level");
        let z = level.zstd_level();
        row(
            &format!("krypta -l {l} (zstd {z}, 4 MiB)"),
            data.len(),
            &ours(&data, level, 4 * MIB, Filter::None),
        );
        let arg = format!("-{z}");
        row(&format!("zstd CLI -{z}"), data.len(), &cli(path, &[&arg]));
    }
}

#[test]
#[ignore = "measurement; run in release with --nocapture"]
fn measure_levels_on_text_tree() {
    levels_on(&tar_path());
}

#[test]
#[ignore = "measurement; run in release with --nocapture"]
fn measure_levels_on_binary() {
    levels_on(&so_path().expect("librustc_driver .so"));
}

#[test]
#[ignore = "measurement; run in release with --nocapture"]
fn measure_level9_block_sizes() {
    let path = tar_path();
    let data = std::fs::read(&path).expect("input");
    header(&format!(
        "level 9 block size: {} ({} bytes)",
        path.display(),
        data.len()
    ));
    let nine = Level::new(9).expect("level");
    let sizes: Vec<usize> = std::env::var("KRYPTA_MEASURE_MIB")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![4, 16, 32, 64, 128]);
    if std::env::var_os("KRYPTA_MEASURE_NO_CLI").is_none() {
        row(
            "zstd CLI -19 --long=27 (whole)",
            data.len(),
            &cli(&path, &["-19", "--long=27"]),
        );
    }
    for mib in sizes {
        row(
            &format!("krypta -l 9, {mib} MiB blocks"),
            data.len(),
            &ours(&data, nine, mib * MIB, Filter::None),
        );
    }
}

#[test]
#[ignore = "measurement; run in release with --nocapture"]
fn measure_bcj_on_binary() {
    let path = so_path().expect("librustc_driver .so");
    let data = std::fs::read(&path).expect("input");
    header(&format!(
        "x86 BCJ: {} ({} bytes)",
        path.display(),
        data.len()
    ));
    for l in [1, 3, 9] {
        let level = Level::new(l).expect("level");
        let block = level.default_block_size();
        for f in [Filter::None, Filter::X86] {
            let name = format!("-l {l}, {} MiB, bcj {}", block / MIB, f.name());
            row(&name, data.len(), &ours(&data, level, block, f));
        }
    }
}

/// Raw zstd on 4 MiB blocks (window 2^22) at every zstd level 1..=19, on 48 MiB of each input:
/// the menu the level map is picked from.
#[test]
#[ignore = "measurement; run in release with --nocapture"]
fn measure_zstd_level_menu() {
    use zstd::zstd_safe::CParameter;
    for path in [tar_path(), so_path().expect("librustc_driver .so")] {
        let data = std::fs::read(&path).expect("input");
        let data = &data[..data.len().min(48 * MIB)];
        header(&format!(
            "zstd level menu, 4 MiB blocks: first {} bytes of {}",
            data.len(),
            path.display()
        ));
        for z in 1..=19 {
            let mut c = zstd::bulk::Compressor::new(z).expect("cctx");
            c.set_parameter(CParameter::WindowLog(22)).expect("window");
            let (c0, w0) = (thread_cpu(), Instant::now());
            let size: usize = data
                .chunks(4 * MIB)
                .map(|b| c.compress(b).expect("compress").len())
                .sum();
            let run = Run {
                size,
                comp_cpu: thread_cpu() - c0,
                comp_wall: w0.elapsed().as_secs_f64(),
                dec_cpu: 0.0,
            };
            row(&format!("zstd {z}, window 2^22"), data.len(), &run);
        }
    }
}

/// Level 9 variants on 128 MiB blocks (`KRYPTA_MEASURE_MIB` to change): long-distance
/// matching on/off, window 2^25 vs 2^27.
#[test]
#[ignore = "measurement; run in release with --nocapture"]
fn measure_level9_variants() {
    use zstd::zstd_safe::CParameter;
    let path = tar_path();
    let data = std::fs::read(&path).expect("input");
    let mib: usize = std::env::var("KRYPTA_MEASURE_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    header(&format!(
        "level 9 variants, {mib} MiB blocks: {}",
        path.display()
    ));
    for (wlog, ldm) in [(27, false), (25, true), (27, true)] {
        let mut c = zstd::bulk::Compressor::new(19).expect("cctx");
        c.set_parameter(CParameter::WindowLog(wlog))
            .expect("window");
        c.set_parameter(CParameter::EnableLongDistanceMatching(ldm))
            .expect("ldm");
        let (c0, w0) = (thread_cpu(), Instant::now());
        let size: usize = data
            .chunks(mib * MIB)
            .map(|b| c.compress(b).expect("compress").len())
            .sum();
        let (comp_cpu, comp_wall) = (thread_cpu() - c0, w0.elapsed().as_secs_f64());
        let run = Run {
            size,
            comp_cpu,
            comp_wall,
            dec_cpu: 0.0,
        };
        row(
            &format!("zstd 19, window 2^{wlog}, ldm {ldm}"),
            data.len(),
            &run,
        );
    }
}

/// BCJ x86 throughput on 64 MiB of the binary: `bcj::encode`/`decode` (in place, chunked)
/// against one plain `lzma-rust2` `BcjWriter` pass into a `Vec` (CPU MB/s).
#[test]
#[ignore = "measurement; run in release with --nocapture"]
fn measure_bcj_speed() {
    use std::io::Write;
    let data = std::fs::read(so_path().expect("librustc_driver .so")).expect("input");
    let data = &data[..data.len().min(64 * MIB)];
    let mut buf = data.to_vec();
    let c = thread_cpu();
    krypta::codec::bcj::encode(Filter::X86, &mut buf, 0);
    println!(
        "bcj::encode x86: {:.0} MB/s",
        mbps(data.len(), thread_cpu() - c)
    );
    let c = thread_cpu();
    krypta::codec::bcj::decode(Filter::X86, &mut buf, 0);
    println!(
        "bcj::decode x86: {:.0} MB/s",
        mbps(data.len(), thread_cpu() - c)
    );
    assert!(buf == data);
    let c = thread_cpu();
    let mut w = lzma_rust2::filter::bcj::BcjWriter::new_x86(Vec::with_capacity(data.len()), 0);
    w.write_all(data).expect("write");
    let out = w.finish().expect("finish");
    println!(
        "BcjWriter x86, one write: {:.0} MB/s",
        mbps(data.len(), thread_cpu() - c)
    );
    assert_eq!(out.len(), data.len());
}
