//! Issue 17: the validity rules of the BASE_REF record (docs/FORMAT.md §16.5), on crafted
//! copies of the golden delta archive (`tests/golden/delta_ref_v2.hex`: stored blocks, so a
//! record can be edited in place and its frame's checksum recomputed, §4). Each edit is
//! refused with the exit code §16.5 gives, and the file it concerns is not restored.

use std::path::Path;
use std::process::Output;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/delta_ref_v2.hex");

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// (base, delta) of the golden file.
fn golden() -> (Vec<u8>, Vec<u8>) {
    let text = std::fs::read_to_string(GOLDEN).unwrap();
    let l: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    (unhex(l[0]), unhex(l[1]))
}

/// Where base entry `entry`'s BASE_REF record lies in `delta`.
fn base_ref_at(delta: &[u8], entry: u64) -> usize {
    let mut rec = vec![5];
    rec.extend_from_slice(&entry.to_le_bytes());
    rec.push(4);
    delta
        .windows(rec.len())
        .position(|w| w == rec.as_slice())
        .expect("the golden delta has the record")
}

/// Recomputes the checksum of the data frame holding byte `at` of an unencrypted archive
/// (FORMAT.md §4: BLAKE3-DK("krypta v1 frame checksum", id ‖ head ‖ body)).
fn reseal(a: &mut [u8], at: usize) {
    let id: [u8; 16] = a[16..32].try_into().unwrap();
    let mut f = u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize;
    loop {
        let body = u32::from_le_bytes(a[f + 4..f + 8].try_into().unwrap()) as usize;
        let end = f + 16 + body;
        if at < end {
            let mut m = id.to_vec();
            m.extend_from_slice(&a[f..end]);
            let tag = blake3::derive_key("krypta v1 frame checksum", &m);
            a[end..end + 32].copy_from_slice(&tag);
            return;
        }
        f = end + 32;
    }
}

fn extract(dir: &Path, delta: &[u8]) -> Output {
    let (base, _) = golden();
    std::fs::write(dir.join("base.kry"), base).unwrap();
    std::fs::write(dir.join("delta.kry"), delta).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("out"));
    std::process::Command::new(env!("CARGO_BIN_EXE_krypta"))
        .current_dir(dir)
        .args([
            "x",
            "-q",
            "--fail-fast",
            "--base",
            "base.kry",
            "delta.kry",
            "-C",
            "out",
        ])
        .output()
        .unwrap()
}

fn edited(edit: impl Fn(&mut Vec<u8>, usize)) -> Vec<u8> {
    let (_, mut d) = golden();
    let at = base_ref_at(&d, 1);
    edit(&mut d, at);
    reseal(&mut d, at);
    d
}

fn check(delta: &[u8], code: i32, message: &str) {
    let dir = tempfile::tempdir().unwrap();
    let o = extract(dir.path(), delta);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert_eq!(err.trim(), message);
    assert!(!dir.path().join("out/d/a.bin").exists());
    let left: Vec<_> = std::fs::read_dir(dir.path().join("out/d"))
        .map(|r| r.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.iter()
            .all(|n| !n.to_string_lossy().contains(".krypta")),
        "{left:?}"
    );
}

#[test]
fn the_untouched_golden_delta_extracts() {
    let (_, d) = golden();
    let dir = tempfile::tempdir().unwrap();
    let o = extract(dir.path(), &d);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_reference_past_the_base_index_or_to_a_directory_is_a_corrupt_structure() {
    let past = edited(|d, at| d[at + 1] = 99);
    check(
        &past,
        3,
        "krypta: delta.kry: corrupt archive at byte 3596: record stream: a BASE_REF to base entry 99, which is not a file of the base's 5 entries (while reading d/a.bin)",
    );
    let dir_entry = edited(|d, at| d[at + 1] = 0);
    check(
        &dir_entry,
        3,
        "krypta: delta.kry: corrupt archive at byte 3596: record stream: a BASE_REF to base entry 0, which is not a file of the base's 5 entries (while reading d/a.bin)",
    );
}

#[test]
fn a_reference_to_a_base_file_of_another_size_is_a_corrupt_structure() {
    // a.bin (70,000 bytes) pointed at base entry 3, s.txt (100 bytes).
    let other = edited(|d, at| d[at + 1] = 3);
    check(
        &other,
        3,
        "krypta: delta.kry: corrupt archive at byte 3596: record stream: its END_DIGEST says 70000 bytes, its base entry 3 has 100 (while reading d/a.bin)",
    );
}

#[test]
fn a_digest_the_base_content_does_not_match_is_exit_9() {
    // One bit of a.bin's END_DIGEST digest (after 05 ‖ u64 ‖ 04 ‖ u64 size).
    let wrong = edited(|d, at| d[at + 9 + 9] ^= 1);
    check(
        &wrong,
        9,
        "krypta: delta.kry: d/a.bin: its content is base entry 1 (d/a.bin), which is unusable: its content in base.kry does not match the file's digest (END_DIGEST)",
    );
}
