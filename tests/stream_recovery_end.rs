//! An archive with recovery data read from a pipe (`src/archive/reader/stream_end.rs`): the
//! recovery section after the footer is read through to its end, checked where it ends, and
//! what follows it is reported as reading the file reports it.
//!
//! Regressions: the reader stopped at the footer, so the program writing the pipe was cut
//! off (`cat a.kry | krypta t -` under `set -o pipefail` failed: cat died of SIGPIPE), and
//! bytes appended after the section, or a section cut short, passed `t` from a pipe (exit 0)
//! though `t` of the file exits 7.

mod cli_common;
mod common;

use std::io::Write;
use std::process::Output;

use cli_common::*;
use common::{bytes, code};

/// Runs krypta in `fx`'s directory with `input` on stdin; asserts every byte of it was
/// taken (the writer was not cut off by krypta exiting before the end of its input).
fn run_all_read(fx: &Fx, args: &[&str], input: &[u8]) -> Output {
    let mut c = fx.spawn_piped(args, &[]);
    let mut stdin = c.stdin.take().unwrap();
    let data = input.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&data));
    let o = c.wait_with_output().unwrap();
    let fed = feeder.join().unwrap();
    assert!(
        fed.is_ok(),
        "krypta {args:?} stopped reading its input early ({fed:?}): {}",
        err(&o)
    );
    o
}

/// A tree of 6 MiB (incompressible), archived with `--recovery 30` plain and with a key
/// file: a section of about 1.9 MB, more than the reader's read-ahead takes in with the
/// footer (with 10% of 3 MiB the old reader happened to swallow the whole section).
fn setup(fx: &Fx) -> [(Vec<u8>, Vec<&'static str>); 2] {
    for i in 0..3 {
        fx.file(&format!("t/f{i}"), &bytes(2 << 20, i as u64 + 7, false));
    }
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "--recovery", "30", "u.kry", "t"]);
    fx.ok(&[
        "c",
        "-q",
        "--recovery",
        "30",
        "--keyfile",
        "k",
        "e.kry",
        "t",
    ]);
    [
        (std::fs::read(fx.p("u.kry")).unwrap(), vec![]),
        (
            std::fs::read(fx.p("e.kry")).unwrap(),
            vec!["--keyfile", "k"],
        ),
    ]
}

/// The archive's length without its section (`info`'s "recovery: …, N bytes").
fn protected_len(fx: &Fx, name: &str, file_len: usize) -> usize {
    let i = fx.ok(&["info", name]);
    let line = out(&i)
        .lines()
        .find(|l| l.starts_with("recovery:"))
        .unwrap()
        .to_string();
    let n: usize = line
        .split(", ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    file_len - n
}

/// `x` and `t` of `bad` from a pipe (every byte read): `x` restores the tree (exit 0) and
/// warns with `warned` when Some, else says nothing; `t` exits `t_code`, and its error has
/// `t_said`.
fn check(fx: &Fx, bad: &[u8], keys: &[&str], warned: Option<&str>, t_code: i32, t_said: &str) {
    let x = run_all_read(fx, &[&["x", "-o", "o", "-"], keys].concat(), bad);
    assert_eq!(code(&x), 0, "{}", err(&x));
    for i in 0..3 {
        let f = format!("t/f{i}");
        assert_eq!(fx.read(&format!("o/{f}")), fx.read(&f), "{f}");
    }
    match warned {
        Some(w) => assert!(err(&x).contains(w), "x: {}", err(&x)),
        None => assert!(!err(&x).contains("warning"), "x: {}", err(&x)),
    }
    std::fs::remove_dir_all(fx.p("o")).unwrap();
    let t = run_all_read(fx, &[&["t", "-"], keys].concat(), bad);
    assert_eq!(code(&t), t_code, "t: {}", err(&t));
    assert!(err(&t).contains(t_said), "t: {}", err(&t));
    // Said once: as the error, not also as a warning before it (it was said twice).
    if let Some(w) = warned {
        assert_eq!(err(&t).matches(w).count(), 1, "t: {}", err(&t));
    }
}

#[test]
fn an_archive_with_recovery_data_is_read_from_a_pipe_to_its_end() {
    let fx = Fx::new();
    for (a, keys) in setup(&fx) {
        assert!(a.len() > 7 << 20, "{}", a.len());
        check(&fx, &a, &keys, None, 0, "OK (4 entries, 3 files");
        let l = run_all_read(&fx, &[&["l", "-"], &keys[..]].concat(), &a);
        assert_eq!(code(&l), 0, "{}", err(&l));
        assert_eq!(out(&l).lines().count(), 4, "{}", out(&l));
        assert!(!err(&l).contains("warning"), "{}", err(&l));
    }
    // The whole kind: an archive without recovery data is read to its end too.
    fx.ok(&["c", "-q", "plain.kry", "t"]);
    let p = std::fs::read(fx.p("plain.kry")).unwrap();
    let padded = [&p[..], &vec![0u8; 300 << 10][..]].concat();
    let t = run_all_read(&fx, &["t", "-"], &padded);
    assert_eq!(code(&t), 0, "{}", err(&t));
}

#[test]
fn bytes_after_the_recovery_data_fail_t_from_a_pipe_as_from_the_file() {
    let fx = Fx::new();
    for (a, keys) in setup(&fx) {
        for (junk, zeros) in [(bytes(5000, 3, false), false), (vec![0u8; 10240], true)] {
            let bad = [&a[..], &junk[..]].concat();
            let said = format!(
                "{} bytes follow its recovery data at byte {} ({})",
                junk.len(),
                a.len(),
                if zeros {
                    "zero padding"
                } else {
                    "a bad copy, or something appended?"
                }
            );
            // Zero padding is not worth a warning to `x`; `t` fails either way, as `t` of
            // the file does (its trailer is not at the end: exit 7).
            check(
                &fx,
                &bad,
                &keys,
                (!zeros).then_some(said.as_str()),
                7,
                &format!("damaged but repairable: {said}"),
            );
            std::fs::write(fx.p("bad.kry"), &bad).unwrap();
            let t = fx.run(&[&["t", "bad.kry"], &keys[..]].concat());
            assert_eq!(code(&t), 7, "file: {}", err(&t));
        }
    }
}

#[test]
fn a_recovery_section_cut_damaged_or_missing_is_said_from_a_pipe() {
    let fx = Fx::new();
    let [(a, keys), _] = setup(&fx);
    let l = protected_len(&fx, "u.kry", a.len());
    let copy_a = l.div_ceil(4096) * 4096;
    let section = a.len() - l;
    let flipped = |at: usize| {
        let mut b = a.clone();
        b[at] ^= 0x20;
        b
    };
    // (input, what is said, nothing left to rebuild from: said without "repairable").
    let cases: Vec<(Vec<u8>, String, bool)> = vec![
        (
            a[..l].to_vec(),
            // Nothing can rebuild it: said as `t` of the file says it, not "repairable".
            "its recovery data is missing (the input ends at the footer: cut off?), so the archive is no longer protected; krypta repair cannot restore it".into(),
            true,
        ),
        // Cut before the section's first packet ends (helper-26: it said "the 1 bytes after
        // the footer are not the recovery data … (damaged, or replaced)"; helper-27: it said
        // "damaged but repairable", where `t` of the file finds no section at all).
        (
            a[..l + 1].to_vec(),
            "its recovery data is cut short: the input ends 1 byte after the footer, before the section's first descriptor packet ends (cut off?), so the archive is no longer protected; krypta repair cannot restore it".into(),
            true,
        ),
        (
            a[..copy_a + 100].to_vec(),
            format!("its recovery data is cut short: the input ends {} bytes after the footer, before the section's first descriptor packet ends", copy_a + 100 - l),
            true,
        ),
        (
            a[..l + 100_000].to_vec(),
            format!(
                "its recovery data is cut short: the input ends 100000 bytes into the {section}-byte section (cut off?): the archive does not need it"
            ),
            false,
        ),
        // Damage before a cut is said with it (helper-27: only the cut was said).
        (
            flipped(copy_a + 4096 + 9)[..a.len() - 5000].to_vec(),
            format!(
                "its recovery data is cut short: the input ends {} bytes into the {section}-byte section (cut off?), and before that: 1 descriptor packet damaged",
                a.len() - 5000 - l
            ),
            false,
        ),
        (
            flipped(a.len() - 40),
            "its recovery data is damaged (the trailer at its end does not check out)".into(),
            false,
        ),
        (
            flipped(l + 10),
            "its recovery data is damaged (the zero padding after the footer does not check out)"
                .into(),
            false,
        ),
        (
            flipped(copy_a + 100),
            "its recovery data is damaged (its first descriptor packet does not check out)".into(),
            false,
        ),
        // The first packet and the trailer gone, the other packets there: damaged, not lost
        // (`t` of the file finds the section by a packet).
        (
            [&flipped(copy_a + 100)[..], b"junk"].concat(),
            "its recovery data is damaged (its first descriptor packet and its trailer do not check out)".into(),
            false,
        ),
        // Replaced: no packet, no trailer.
        (
            [&a[..l], &vec![0u8; section][..]].concat(),
            format!(
                "the {section} bytes after the footer are not the recovery data its header announces (damaged, or replaced), so the archive is no longer protected; krypta repair cannot restore it"
            ),
            true,
        ),
    ];
    for (bad, said, lost) in cases {
        let t_said = if lost {
            said.clone()
        } else {
            format!("damaged but repairable: {said}")
        };
        check(&fx, &bad, &keys, Some(&said), 7, &t_said);
        if lost {
            let t = run_all_read(&fx, &["t", "-"], &bad);
            assert!(!err(&t).contains("repairable"), "{}", err(&t));
        }
        // `t` of the same bytes as a file: 7 too.
        std::fs::write(fx.p("bad.kry"), &bad).unwrap();
        let t = fx.run(&["t", "bad.kry"]);
        assert_eq!(code(&t), 7, "file: {}", err(&t));
        if lost {
            assert!(
                err(&t).contains("krypta repair cannot restore it"),
                "file: {}",
                err(&t)
            );
        }
    }
    // As `t` of the file says it.
    std::fs::write(fx.p("cut.kry"), &a[..l]).unwrap();
    let t = fx.run(&["t", "cut.kry"]);
    assert_eq!(code(&t), 7, "{}", err(&t));
    assert!(
        err(&t).contains("krypta repair cannot restore it"),
        "{}",
        err(&t)
    );
}

#[test]
fn endless_bytes_after_the_recovery_data_are_read_at_most_16_mib() {
    let fx = Fx::new();
    let [(a, _), _] = setup(&fx);
    let mut c = fx.spawn_piped(&["t", "-"], &[]);
    let mut stdin = c.stdin.take().unwrap();
    // An input that never ends: the run must end anyway, having read at most 16 MiB of it.
    let feeder = std::thread::spawn(move || {
        stdin.write_all(&a)?;
        let junk = vec![b'x'; 1 << 20];
        let mut sent = 0u64;
        loop {
            stdin.write_all(&junk)?;
            sent += junk.len() as u64;
            assert!(sent < 64 << 20, "krypta read 64 MiB past the archive");
        }
    });
    let o = c.wait_with_output().unwrap();
    let fed: std::io::Result<()> = feeder.join().unwrap();
    assert_eq!(fed.unwrap_err().kind(), std::io::ErrorKind::BrokenPipe);
    assert_eq!(code(&o), 7, "{}", err(&o));
    assert!(
        err(&o).contains("more than 16777216 bytes follow its recovery data"),
        "{}",
        err(&o)
    );
}

#[test]
fn a_signed_archive_with_recovery_data_spooled_from_a_pipe_is_read_with_it() {
    // Regression (helper-26): `x --signer` copies a stream whole to a temporary file first;
    // that file was read without its recovery layer, so a good archive warned "the header
    // announces recovery data, but none was found".
    let fx = Fx::new();
    for i in 0..3 {
        fx.file(&format!("t/f{i}"), &bytes(2 << 20, i as u64 + 7, false));
    }
    fx.ok(&["keygen", "-q", "--sign", "-o", "me"]);
    fx.ok(&["c", "-q", "--recovery", "10", "--sign", "me", "s.kry", "t"]);
    let a = std::fs::read(fx.p("s.kry")).unwrap();
    let x = run_all_read(&fx, &["x", "--signer", "me.pub", "-o", "o", "-"], &a);
    assert_eq!(code(&x), 0, "{}", err(&x));
    assert!(!err(&x).contains("warning"), "{}", err(&x));
    assert_eq!(fx.read("o/t/f2"), fx.read("t/f2"));
    // And it is used: a damaged shard is rebuilt from it, as from the file.
    let mut bad = a.clone();
    bad[100_000] ^= 1;
    std::fs::remove_dir_all(fx.p("o")).unwrap();
    let x = run_all_read(&fx, &["x", "--signer", "me.pub", "-o", "o", "-"], &bad);
    assert_eq!(code(&x), 0, "{}", err(&x));
    assert!(err(&x).contains("rebuilt 4096 bytes"), "{}", err(&x));
    assert_eq!(fx.read("o/t/f0"), fx.read("t/f0"));
}

#[test]
fn damaged_recovery_shards_and_packets_fail_t_from_a_pipe_as_from_the_file() {
    // Regression: from a pipe only the section's first packet, its padding after the footer
    // and its trailer were checked; a damaged recovery shard or a damaged packet of either
    // copy passed `cat a.kry | krypta t -` (exit 0) while `t a.kry` exits 7, so a nightly
    // check reading from object storage through a pipe never learned that the protection
    // had rotted.
    let fx = Fx::new();
    for (a, keys) in setup(&fx) {
        let name = if keys.is_empty() { "u.kry" } else { "e.kry" };
        // The section's layout (docs/FORMAT.md §15.1) at `--recovery 30`, default 4 KiB
        // shards, one segment.
        let l = protected_len(&fx, name, a.len());
        let n = l.div_ceil(4096);
        let m = (n * 30).div_ceil(100);
        let packets = ((n + m) * 8).div_ceil(4008);
        let copy_a = l.div_ceil(4096) * 4096;
        let recovery = copy_a + packets * 4096;
        let copy_b = recovery + m * 4096;
        assert_eq!(
            copy_b + packets * 4096 + 80,
            a.len(),
            "layout as FORMAT.md says"
        );
        assert!(packets >= 3, "{packets}");
        let flipped = |at: &[usize]| {
            let mut b = a.clone();
            for &i in at {
                b[i] ^= 0x10;
            }
            b
        };
        // Recovery entries the last packet carries: lost when both its copies are damaged.
        let lost = n + m - ((packets - 1) * 501).max(n);
        let cases = [
            (flipped(&[recovery + 5000]), "1 recovery shard damaged or unverifiable (checksum lost)".to_string()),
            (
                flipped(&[recovery + 1, copy_b - 1]),
                "2 recovery shards damaged or unverifiable (checksum lost)".into(),
            ),
            (flipped(&[copy_a + 4096 + 300]), "1 descriptor packet damaged".into()),
            (flipped(&[copy_b + 2 * 4096 + 7]), "1 descriptor packet damaged".into()),
            // Copy A's packet damaged: the shards it covers are checked against copy B's.
            (
                flipped(&[copy_a + (packets - 1) * 4096 + 9, copy_b - 4096 + 3]),
                "1 recovery shard damaged or unverifiable (checksum lost), 1 descriptor packet damaged".into(),
            ),
            // Both copies: the checksums it carried are lost.
            (
                flipped(&[copy_a + (packets - 1) * 4096 + 9, copy_b + (packets - 1) * 4096 + 9]),
                format!("{lost} recovery shards damaged or unverifiable (checksum lost), 2 descriptor packets damaged"),
            ),
            (
                flipped(&[l + 10, recovery + 5000, a.len() - 40]),
                "the zero padding after the footer does not check out, 1 recovery shard damaged or unverifiable (checksum lost), the trailer at its end does not check out".into(),
            ),
        ];
        for (bad, what) in cases {
            let said = format!("its recovery data is damaged ({what})");
            check(
                &fx,
                &bad,
                &keys,
                Some(&said),
                7,
                &format!("damaged but repairable: {said}"),
            );
            // `t` of the same bytes as a file fails the same way.
            std::fs::write(fx.p("bad.kry"), &bad).unwrap();
            let t = fx.run(&[&["t", "bad.kry"], &keys[..]].concat());
            assert_eq!(code(&t), 7, "file: {}", err(&t));
        }
    }
}
