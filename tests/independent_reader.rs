//! docs/FORMAT.md alone must be enough to write a reader (the format's promise). This runs
//! `scripts/check_independent_reader.sh`: archives this krypta writes (plain, stored, level 9,
//! every BCJ filter, recovery, stdin, key file, Argon2id and PBKDF2 passwords, several
//! stanzas, signed, delta plain/level 9/encrypted) and the golden format-1/format-2/delta
//! archives must restore bit for bit through `scripts/independent_reader.py`, a Python reader
//! written from FORMAT.md without krypta's source, and the refusals (wrong key, no key, wrong
//! base) must be refused by it too. A change to what krypta writes that FORMAT.md does not
//! describe fails here.
//!
//! Needs python3 with `zstandard cryptography blake3 argon2-cffi` (`.ci/run` installs them);
//! says SKIPPED without them.

use std::process::Command;

#[test]
fn the_reader_written_from_format_md_alone_restores_what_krypta_writes() {
    let have = Command::new("python3")
        .args([
            "-c",
            "import zstandard, cryptography, blake3, argon2.low_level",
        ])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have {
        eprintln!(
            "SKIPPED: python3 with zstandard, cryptography, blake3 and argon2-cffi is needed \
             (pip install zstandard cryptography blake3 argon2-cffi)"
        );
        return;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{root}/scripts/check_independent_reader.sh"))
        .arg(env!("CARGO_BIN_EXE_krypta"))
        .output()
        .expect("run the check script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the independent reader disagrees with krypta:\n{stdout}\n{stderr}"
    );
    // The script prints one "ok" line per case; a run that checked nothing is no pass.
    let oks = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    assert!(oks >= 31, "only {oks} cases passed:\n{stdout}");
}
