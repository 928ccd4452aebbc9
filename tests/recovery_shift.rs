//! An archive with recovery data and a run of bytes inserted or removed in one place (a bad
//! copy): the trailer still ends the file, but everything after the edit is out of place.
//! `repair` undoes the edit and rebuilds the archive byte for byte (`recovery::realign`);
//! `repair --check` says what it found (exit 7); `t` and `x` read the archive as written
//! with the edit undone (`store::shifted`): `t` exits 7 naming the edit, `x` restores every
//! file. Regression: all said "no recovery data found"; nothing could be repaired, and a
//! read salvaged what it could (exit 2 or 5).

mod common;
mod recovery_cli_common;

use common::code;
use krypta::recovery::TRAILER_LEN;
use recovery_cli_common::*;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bytes_inserted_or_removed_in_one_place_are_undone_and_repaired() {
    for encrypted in [false, true] {
        let f = Fixture::new(10, encrypted, 0);
        // In the middle of the data frames: every byte after it is out of place.
        let at = (f.frames[f.frames.len() / 2].0 + 1000) as usize;
        let mut inserted = f.bytes[..at].to_vec();
        inserted.extend_from_slice(&[b'X'; 700]);
        inserted.extend_from_slice(&f.bytes[at..]);
        let mut removed = f.bytes[..at].to_vec();
        removed.extend_from_slice(&f.bytes[at + 3000..]);
        for (name, bytes, said) in [
            ("ins.kry", &inserted, "700 byte(s) inserted near byte "),
            ("del.kry", &removed, "3000 byte(s) missing near byte "),
        ] {
            let what = format!("{name} (encrypted: {encrypted})");
            f.write(name, bytes);
            let c = f.run(&["repair", "--check", name]);
            assert_eq!(code(&c), 7, "{what}: {}", stderr(&c));
            assert!(stderr(&c).contains(said), "{what}: {}", stderr(&c));
            // The shard holding the edit is damaged, the others verify where they belong.
            assert!(
                stderr(&c).contains("damaged but repairable"),
                "{what}: {}",
                stderr(&c)
            );
            let t = f.keyed(&["t", name]);
            assert_eq!(code(&t), 7, "{what}: {}", stderr(&t));
            let (n, how) = if name == "ins.kry" {
                (700, "inserted")
            } else {
                (3000, "removed")
            };
            for want in [
                format!("{n} bytes were {how} near byte "),
                "damaged but repairable".into(),
                "every entry verified".into(),
            ] {
                assert!(stderr(&t).contains(&want), "{what}: {}", stderr(&t));
            }
            let out = f.dir.path().join(format!("x-{name}"));
            let x = f.keyed(&["x", "-o", common::s(&out), name]);
            assert_eq!(code(&x), 0, "{what}: x: {}", stderr(&x));
            common::assert_same_tree(&f.dir.path().join("t"), &out.join("t"));
            let fixed = format!("fixed-{name}");
            let r = f.run(&["repair", name, "-o", &fixed]);
            assert_eq!(code(&r), 0, "{what}: {}", stderr(&r));
            assert!(stderr(&r).contains(said), "{what}: {}", stderr(&r));
            assert!(
                std::fs::read(f.dir.path().join(&fixed)).unwrap() == f.bytes,
                "{what}: the repaired archive is not the original"
            );
            // In place too.
            let r = f.run(&["repair", "-f", name]);
            assert_eq!(code(&r), 0, "{what}: {}", stderr(&r));
            assert!(
                std::fs::read(f.dir.path().join(name)).unwrap() == f.bytes,
                "{what}: repaired in place, not the original"
            );
            let t = f.keyed(&["t", name]);
            assert_eq!(code(&t), 0, "{what}: t after repair: {}", stderr(&t));
        }
    }
}

/// Runs krypta with `args` in `f`'s directory and waits at most `secs` seconds: None when it
/// was still running then (it is killed).
fn run_within(f: &Fixture, args: &[&str], secs: u64) -> Option<std::process::Output> {
    let mut child = common::krypta()
        .current_dir(f.dir.path())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Some(child.wait_with_output().unwrap())
}

/// Regression: a trailer is checked by an unkeyed checksum, so anyone can write one. One
/// claiming 2^56 protected bytes (in 64 KiB segments) at the end of a 3.8 MiB archive whose
/// section is gone was taken for 2^56 bytes removed: realign verified 2^40 segments of a
/// file that has none of them, and `t` and `repair --check` never ended (and grew a report
/// per segment). More bytes removed than the section and one shard hold could never be
/// repaired; such a trailer is no edit, and the archive is read without recovery data.
#[test]
fn a_trailer_claiming_far_more_bytes_than_the_file_is_not_taken_for_an_edit() {
    let f = Fixture::new(5, false, 0);
    let mut d = f.bytes.clone();
    let n = d.len();
    d[f.protected as usize..n - TRAILER_LEN].fill(0);
    let tr = &mut d[n - TRAILER_LEN..];
    tr[12..16].copy_from_slice(&64u32.to_le_bytes());
    tr[16..20].copy_from_slice(&1024u32.to_le_bytes());
    tr[24..32].copy_from_slice(&(1u64 << 56).to_le_bytes());
    let sum = krypta::recovery::xxh3(&tr[..TRAILER_LEN - 8]);
    tr[TRAILER_LEN - 8..].copy_from_slice(&sum.to_le_bytes());
    f.write("forged.kry", &d);
    // Its section is lost, the archive ending with its footer: exit 7, as `t` says it.
    let c = run_within(&f, &["repair", "--check", "forged.kry"], 60).expect("repair --check ends");
    assert_eq!(code(&c), 7, "{}", stderr(&c));
    assert!(
        stderr(&c).contains("its recovery data is missing: none follows the archive's footer"),
        "{}",
        stderr(&c)
    );
    // Read as an archive whose section is lost: every entry is there.
    let t = run_within(&f, &["t", "forged.kry"], 60).expect("t ends");
    assert_eq!(code(&t), 7, "{}", stderr(&t));
    for want in [
        "the header announces recovery data, but none was found",
        "every entry verified",
    ] {
        assert!(stderr(&t).contains(want), "{}", stderr(&t));
    }
}

/// Regression: bytes inserted or removed in the first 8 bytes leave no krypta magic at the
/// start, and the reader, which does not search a file without it, said "not a krypta
/// archive" (exit 3) while `repair --check` found the edit and `repair` undid it. An intact
/// trailer at the end whose length disagrees with the file's is enough to search: `t` and
/// `x` read the archive with the edit undone, as for an edit anywhere else.
#[test]
fn bytes_inserted_or_removed_at_the_very_start_are_undone_on_read() {
    for encrypted in [false, true] {
        let f = Fixture::new(10, encrypted, 0);
        let mut inserted = vec![b'\n'; 7];
        inserted.extend_from_slice(&f.bytes);
        let mut removed = f.bytes[..2].to_vec();
        removed.extend_from_slice(&f.bytes[5..]);
        for (name, bytes, said) in [
            ("ins0.kry", &inserted, "7 bytes were inserted near byte 0"),
            ("del2.kry", &removed, "3 bytes were removed near byte 0"),
        ] {
            let what = format!("{name} (encrypted: {encrypted})");
            f.write(name, bytes);
            let t = f.keyed(&["t", name]);
            assert_eq!(code(&t), 7, "{what}: {}", stderr(&t));
            for want in [said, "damaged but repairable", "every entry verified"] {
                assert!(stderr(&t).contains(want), "{what}: {}", stderr(&t));
            }
            let out = f.dir.path().join(format!("x-{name}"));
            let x = f.keyed(&["x", "-o", common::s(&out), name]);
            assert_eq!(code(&x), 0, "{what}: x: {}", stderr(&x));
            common::assert_same_tree(&f.dir.path().join("t"), &out.join("t"));
        }
    }
    // Without the magic and without an intact trailer at the end, a file is not searched.
    let f = Fixture::new(5, false, 0);
    f.write("plain.txt", &f.bytes[100..f.bytes.len() - 1]);
    let t = f.run(&["t", "plain.txt"]);
    assert_eq!(code(&t), 3, "{}", stderr(&t));
    assert!(
        stderr(&t).contains("not a krypta archive"),
        "{}",
        stderr(&t)
    );
}

/// Regression: a damaged shard before the edit (a flipped byte, the bit rot recovery data is
/// for) was taken for the edit, the first damaged shard: every shard between the two was
/// then read out of place, and an archive with one damaged shard and one edit was "damaged
/// beyond the recovery data" (t, x salvaged, exit 5; repair refused). The edit is where the
/// damage that reaches the end of the data begins; the flipped shard is rebuilt too.
#[test]
fn a_damaged_shard_before_the_edit_is_not_taken_for_it() {
    let f = Fixture::new(5, false, 0);
    let flip = (f.frames[2].0 + 100) as usize;
    let at = (f.frames[f.frames.len() - 3].0 + 1000) as usize;
    let mut d = f.bytes[..at].to_vec();
    d[flip] ^= 0x40;
    d.extend_from_slice(&[b'\r'; 20]);
    d.extend_from_slice(&f.bytes[at..]);
    f.write("z.kry", &d);
    let c = f.run(&["repair", "--check", "z.kry"]);
    assert_eq!(code(&c), 7, "{}", stderr(&c));
    let want = format!(
        "20 byte(s) inserted near byte {} (taken out: what follows is read 20 bytes earlier), 2 damaged archive shard(s)",
        at / 4096 * 4096
    );
    assert!(stderr(&c).contains(&want), "{}", stderr(&c));
    let t = f.keyed(&["t", "z.kry"]);
    assert_eq!(code(&t), 7, "{}", stderr(&t));
    assert!(
        stderr(&t).contains("every entry verified"),
        "{}",
        stderr(&t)
    );
    let out = f.dir.path().join("x-z");
    let x = f.keyed(&["x", "-o", common::s(&out), "z.kry"]);
    assert_eq!(code(&x), 0, "x: {}", stderr(&x));
    common::assert_same_tree(&f.dir.path().join("t"), &out.join("t"));
    let r = f.run(&["repair", "z.kry", "-o", "fixed.kry"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(
        std::fs::read(f.dir.path().join("fixed.kry")).unwrap() == f.bytes,
        "the repaired archive is not the original"
    );
}

/// Regression (helper-18): `cat a.kry b.kry > both.kry` read as one archive with the
/// other's bytes "inserted" in front of it or appended after it, and `repair -f` kept that
/// one alone, dropping the other. An in-place repair that would drop added bytes starting
/// with a krypta header (or more bytes than the archive) is refused, the file untouched;
/// `-o` still writes the archive as first written; and a real bad copy (added bytes that
/// are no archive) is still repaired in place.
#[test]
fn an_archive_joined_to_another_is_not_dropped_by_an_in_place_repair() {
    let f = Fixture::new(10, false, 0);
    for (name, other) in [("no-recovery", None), ("with-recovery", Some(5))] {
        // The other archive: of the same tree, with or without recovery data of its own.
        let other = match other {
            Some(p) => Fixture::new(p, false, 0).bytes,
            None => {
                let o = f.run(&["c", "-q", "-f", "plain.kry", "t"]);
                assert_eq!(code(&o), 0, "{}", stderr(&o));
                std::fs::read(f.dir.path().join("plain.kry")).unwrap()
            }
        };
        for (order, both) in [
            ("other first", [other.clone(), f.bytes.clone()].concat()),
            ("other after", [f.bytes.clone(), other.clone()].concat()),
        ] {
            let what = format!("{name}, {order}");
            let path = f.write("both.kry", &both);
            let r = f.run(&["repair", "-f", "both.kry"]);
            assert_eq!(code(&r), 1, "{what}: {}", stderr(&r));
            // Which one is "the archive" depends on whose section was found: the message
            // names the other one's bytes.
            let dropped = [other.len(), f.bytes.len()]
                .iter()
                .any(|n| stderr(&r).contains(&format!("the {n} bytes added at byte ")));
            assert!(
                dropped && stderr(&r).contains("start with a krypta header"),
                "{what}: {}",
                stderr(&r)
            );
            assert_eq!(
                std::fs::read(&path).unwrap(),
                both,
                "{what}: left as it was"
            );
            // Written elsewhere, one of the two comes out as first written.
            let r = f.run(&["repair", "-o", "b.kry", "both.kry"]);
            assert_eq!(code(&r), 0, "{what}: {}", stderr(&r));
            let b = std::fs::read(f.dir.path().join("b.kry")).unwrap();
            assert!(
                b == f.bytes || b == other,
                "{what}: -o wrote neither archive"
            );
            std::fs::remove_file(f.dir.path().join("b.kry")).unwrap();
        }
    }
    // Garbage in front, as a bad copy may leave: repaired in place.
    let junk = [vec![b'#'; 300], f.bytes.clone()].concat();
    let path = f.write("junk.kry", &junk);
    let r = f.run(&["repair", "-f", "junk.kry"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(std::fs::read(&path).unwrap(), f.bytes);
}

/// Regression: realign knows an edit to the shard, so an insertion inside the first shard
/// was taken for bytes added at byte 0, and those (the archive's own header) for another
/// archive joined in front: `repair -f` refused a plain bad copy (exit 1).
#[test]
fn an_edit_inside_the_first_shard_is_repaired_in_place() {
    let f = Fixture::new(10, true, 0);
    let inserted = [&f.bytes[..3000], &[b'X'; 700][..], &f.bytes[3000..]].concat();
    let removed = [&f.bytes[..3000], &f.bytes[3100..]].concat();
    for (name, bytes) in [("ins.kry", inserted), ("del.kry", removed)] {
        let path = f.write(name, &bytes);
        let r = f.run(&["repair", "-f", name]);
        assert_eq!(code(&r), 0, "{name}: {}", stderr(&r));
        assert!(
            std::fs::read(&path).unwrap() == f.bytes,
            "{name}: repaired in place, not the original"
        );
    }
}

/// Regression: more bytes removed than the recovery data rebuilds (the trailer intact) was
/// "no recovery data found" (exit 3) from `repair`, and a read warned that the end of the
/// archive was cut off. It is damage beyond the recovery data: said so, exit 5, and a read
/// still salvages what verifies.
#[test]
fn more_bytes_removed_than_the_recovery_data_rebuilds_is_beyond_repair() {
    let f = Fixture::new(10, false, 0);
    let at = (f.frames[f.frames.len() / 2].0 + 1000) as usize;
    let n = f.bytes.len() * 3 / 10;
    let removed = [&f.bytes[..at], &f.bytes[at + n..]].concat();
    f.write("del.kry", &removed);
    let said = format!(
        "{n} bytes of the {} it was written with are missing",
        f.bytes.len()
    );
    for args in [
        &["repair", "--check", "del.kry"][..],
        &["repair", "-o", "r.kry", "del.kry"],
    ] {
        let r = f.run(args);
        assert_eq!(code(&r), 5, "{args:?}: {}", stderr(&r));
        assert!(
            stderr(&r).contains("damaged beyond the recovery data") && stderr(&r).contains(&said),
            "{args:?}: {}",
            stderr(&r)
        );
    }
    assert!(!f.dir.path().join("r.kry").exists(), "nothing written");
    let t = f.keyed(&["t", "del.kry"]);
    assert_eq!(code(&t), 5, "{}", stderr(&t));
    let warned = format!(
        "{n} bytes of the {} the archive was written with are missing",
        f.bytes.len()
    );
    assert!(stderr(&t).contains(&warned), "{}", stderr(&t));
    assert!(!stderr(&t).contains("none was found"), "{}", stderr(&t));
}
