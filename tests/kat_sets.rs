//! `krypta kat` end to end through the library: every embedded set passes, the same files
//! read from a directory pass, and a copy with one digit flipped in each file fails every set.

use std::path::Path;

use krypta::kat::{self, SETS};

/// Flips the last hex digit of the last hex-valued line of the first vector block.
fn flip_one_digit(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let header_end = lines
        .iter()
        .position(|l| l.trim().is_empty())
        .expect("header block ends with a blank line");
    let first = lines[header_end..]
        .iter()
        .position(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|i| i + header_end)
        .expect("a vector block");
    let end = lines[first..]
        .iter()
        .position(|l| l.trim().is_empty())
        .map_or(lines.len(), |i| i + first);
    let target = (first..end)
        .rev()
        .find(|&i| {
            lines[i].split_once('=').is_some_and(|(_, v)| {
                let v = v.trim();
                !v.is_empty() && v.len() % 2 == 0 && v.bytes().all(|b| b.is_ascii_hexdigit())
            })
        })
        .expect("a hex value in the first vector");
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let line = &mut out[target];
    let last = line.pop().expect("non-empty line");
    line.push(if last == '0' { '1' } else { '0' });
    out.join("\n") + "\n"
}

fn write_sets(dir: &Path, edit: impl Fn(&str) -> String) {
    for (file, text) in SETS {
        std::fs::write(dir.join(file), edit(text)).expect("write vector file");
    }
}

#[test]
fn every_embedded_set_passes_and_the_table_names_each_algorithm() {
    let report = kat::run_embedded();
    assert!(report.all_passed(), "{}", report.to_table());
    assert_eq!(report.sets.len(), SETS.len());
    assert!(report.sets.len() >= 16, "{} sets", report.sets.len());
    let table = report.to_table();
    for name in [
        "SHA-256",
        "HMAC-SHA256",
        "AES-256",
        "HKDF",
        "PBKDF2",
        "Argon2id",
        "X25519",
        "ML-KEM-768",
        "BLAKE3",
    ] {
        assert!(table.contains(name), "table lacks {name}:\n{table}");
    }
    let mlkem = report
        .sets
        .iter()
        .find(|s| s.name == "ML-KEM-768")
        .expect("ML-KEM set");
    assert_eq!((mlkem.passed, mlkem.total), (25, 25));
    // The LAMPS example key and NIST's ACVP ML-DSA-65 answers: 3 keyGen, 2 deterministic
    // sigGen (external with context, internal), 6 sigVer (2 valid, 4 invalid).
    let mldsa = report
        .sets
        .iter()
        .find(|s| s.name == "ML-DSA-65")
        .expect("ML-DSA-65 set");
    assert_eq!((mldsa.passed, mldsa.total), (12, 12));
}

/// Every NIST ACVP sigVer answer marked invalid must be refused and every valid one accepted:
/// turning one `valid = 0` into `valid = 1` (or back) fails exactly that vector.
#[test]
fn mldsa_acvp_invalid_signatures_are_refused_and_valid_ones_accepted() {
    let text = std::fs::read_to_string("test-vectors/mldsa65.txt").unwrap();
    let ids: Vec<(String, bool)> = text
        .split("\n\n")
        .filter_map(|b| {
            let id = b.lines().find_map(|l| l.strip_prefix("id = "))?;
            let valid = b.lines().find_map(|l| l.strip_prefix("valid = "))?;
            Some((id.to_string(), valid == "1"))
        })
        .collect();
    assert_eq!(ids.iter().filter(|(_, v)| !v).count(), 4, "{ids:?}");
    assert_eq!(ids.iter().filter(|(_, v)| *v).count(), 2, "{ids:?}");
    for (id, valid) in &ids {
        let dir = tempfile::tempdir().unwrap();
        for (file, body) in SETS {
            let body = if *file == "mldsa65.txt" {
                let at = body.find(&format!("id = {id}\n")).unwrap();
                let v = at + body[at..].find("valid = ").unwrap() + "valid = ".len();
                let flipped = if *valid { "0" } else { "1" };
                format!("{}{flipped}{}", &body[..v], &body[v + 1..])
            } else {
                body.to_string()
            };
            std::fs::write(dir.path().join(file), body).unwrap();
        }
        let report = kat::run_dir(dir.path()).unwrap();
        let set = report
            .sets
            .iter()
            .find(|s| s.file == "mldsa65.txt")
            .unwrap();
        assert_eq!(set.failures.len(), 1, "{id}: {:?}", set.failures);
        assert_eq!(set.failures[0].0, *id, "{:?}", set.failures);
    }
}

#[test]
fn run_dir_passes_on_a_faithful_copy_and_fails_every_set_with_one_flipped_digit() {
    let good = tempfile::tempdir().expect("tempdir");
    write_sets(good.path(), str::to_string);
    let report = kat::run_dir(good.path()).expect("run_dir");
    assert!(report.all_passed(), "{}", report.to_table());

    let bad = tempfile::tempdir().expect("tempdir");
    write_sets(bad.path(), flip_one_digit);
    let report = kat::run_dir(bad.path()).expect("run_dir");
    assert!(!report.all_passed());
    for set in &report.sets {
        assert!(
            !set.passed_all(),
            "{} still passes with a flipped digit",
            set.file
        );
        assert_eq!(set.failures.len(), 1, "{}: {:?}", set.file, set.failures);
        assert_eq!(set.passed + 1, set.total, "{}", set.file);
    }
}

#[test]
fn run_dir_fails_the_set_of_a_missing_file_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_sets(dir.path(), str::to_string);
    std::fs::remove_file(dir.path().join("hmac_sha256.txt")).expect("remove");
    let report = kat::run_dir(dir.path()).expect("run_dir");
    let failed: Vec<&str> = report
        .sets
        .iter()
        .filter(|s| !s.passed_all())
        .map(|s| s.file.as_str())
        .collect();
    assert_eq!(failed, ["hmac_sha256.txt"]);
    assert!(report.to_table().contains("FAIL hmac_sha256.txt"));
}

#[test]
fn run_dir_on_a_missing_directory_is_an_io_error() {
    let err = kat::run_dir(Path::new("/nonexistent/krypta-kat")).expect_err("no dir");
    assert!(matches!(err, krypta::Error::Io { .. }), "{err:?}");
}
