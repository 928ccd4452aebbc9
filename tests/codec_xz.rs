//! Cross-check of the BCJ filters against xz (XZ Utils): `xz --format=raw --x86=start=N
//! --lzma2` then `xz --format=raw --lzma2 -d` yields xz's filtered bytes, which must equal ours
//! for every block of a real binary. Skipped, with a note, when `xz` is not installed.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use krypta::codec::{Filter, bcj};

/// xz's filtered bytes for `data` under `filter_flag` (e.g. `--x86=start=4096`), or `None`
/// when xz is missing or refuses the option.
fn xz_filtered(data: &[u8], filter_flag: &str) -> Option<Vec<u8>> {
    let script = format!(
        "xz --format=raw {filter_flag} --lzma2=preset=0 -c | xz --format=raw --lzma2=preset=0 -d -c"
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    (out.status.success() && out.stdout.len() == data.len()).then_some(out.stdout)
}

fn xz_available(flag: &str) -> bool {
    let ok = xz_filtered(&[0u8; 64], flag).is_some();
    if !ok {
        eprintln!("note: skipping xz cross-check: `xz {flag}` is not available");
    }
    ok
}

/// A real x86-64 binary of at least `min` bytes: the Rust compiler's driver library, else
/// the biggest shared object found in the usual library directories.
fn real_binary(min: usize) -> Option<(PathBuf, Vec<u8>)> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        let toolchains = PathBuf::from(home).join(".rustup/toolchains");
        for tc in std::fs::read_dir(toolchains)
            .into_iter()
            .flatten()
            .flatten()
        {
            for f in std::fs::read_dir(tc.path().join("lib"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = f.file_name().to_string_lossy().into_owned();
                if name.starts_with("librustc_driver-") && name.ends_with(".so") {
                    candidates.push(f.path());
                }
            }
        }
    }
    for dir in ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/bin"] {
        for f in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if f.metadata()
                .map(|m| m.is_file() && m.len() >= min as u64)
                .unwrap_or(false)
            {
                candidates.push(f.path());
            }
        }
    }
    candidates.into_iter().find_map(|p| {
        let data = std::fs::read(&p).ok()?;
        (data.len() >= min && data.starts_with(b"\x7fELF")).then_some((p, data))
    })
}

/// Cuts `data` into `block`-byte blocks (the last one partial) and compares our encoder at
/// stream position `base + k*block` with xz at the same start, and checks our decoder inverts.
fn compare_blocks(data: &[u8], block: usize, base: u64, filter: Filter, flag: &str) {
    for (k, chunk) in data.chunks(block).enumerate() {
        let start = base + (k * block) as u64;
        let expected = xz_filtered(chunk, &format!("--{flag}=start={start}"))
            .unwrap_or_else(|| panic!("xz failed on block {k}"));
        let mut ours = chunk.to_vec();
        bcj::encode(filter, &mut ours, start);
        assert!(
            ours != chunk,
            "{flag}: block {k} unchanged, the test proves nothing"
        );
        let first_diff = ours.iter().zip(&expected).position(|(a, b)| a != b);
        assert_eq!(
            first_diff, None,
            "{flag} block {k} (start {start}) differs from xz"
        );
        bcj::decode(filter, &mut ours, start);
        assert!(ours == chunk, "{flag} block {k} does not decode back");
    }
}

#[test]
fn x86_filter_equals_xz_on_a_real_binary_at_start_zero_and_nonzero() {
    if !xz_available("--x86") {
        return;
    }
    let Some((path, data)) = real_binary(3 << 20) else {
        eprintln!("note: skipping xz cross-check: no x86-64 binary of >= 3 MiB found");
        return;
    };
    // 3 MiB from the middle of the file (code, not headers), as 5 blocks of 640 KiB + a tail.
    let mid = (data.len() / 2) & !0xFFF;
    let sample = &data[mid..(mid + (3 << 20) + 12_345).min(data.len())];
    eprintln!(
        "x86 cross-check on {} bytes of {}",
        sample.len(),
        path.display()
    );
    compare_blocks(sample, 640 << 10, 0, Filter::X86, "x86");
    compare_blocks(sample, 640 << 10, mid as u64 + 1, Filter::X86, "x86");
}

#[test]
fn x86_filter_equals_xz_on_the_head_of_usr_bin_ls() {
    if !xz_available("--x86") {
        return;
    }
    let Ok(data) = std::fs::read("/usr/bin/ls") else {
        eprintln!("note: skipping: /usr/bin/ls not readable");
        return;
    };
    compare_blocks(&data, 1 << 16, 0, Filter::X86, "x86");
}

#[test]
fn arm64_filter_equals_xz() {
    if !xz_available("--arm64") {
        return;
    }
    // No AArch64 binary is at hand on x86-64 hosts: use synthetic code dense with BL and
    // ADRP words, plus the bytes of a real binary (whose words hit the patterns by chance).
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let synthetic: Vec<u8> = (0..(1 << 20) + 13)
        .flat_map(|i: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let word = match i % 4 {
                0 => 0x9400_0000 | (x as u32 & 0x03FF_FFFF), // BL
                1 => 0x9000_0000 | (x as u32 & 0x60FF_FFFF), // ADRP
                2 => 0xF940_0000 | (x as u32 & 0x003F_FFFF), // LDR
                _ => 0xD503_201F,                            // NOP
            };
            word.to_le_bytes()
        })
        .take((1 << 20) + 13)
        .collect();
    compare_blocks(&synthetic, 256 << 10, 0, Filter::Arm64, "arm64");
    compare_blocks(&synthetic, 256 << 10, 4 << 20, Filter::Arm64, "arm64");
    if let Some((_, data)) = real_binary(2 << 20) {
        let mid = (data.len() / 2) & !0xFFF;
        compare_blocks(
            &data[mid..mid + (1 << 20)],
            256 << 10,
            1 << 30,
            Filter::Arm64,
            "arm64",
        );
    }
}
