//! An archive without recovery data with a run of bytes inserted or removed in one place (a
//! bad copy): the footer still ends the file and verifies, but everything after the edit is
//! out of place. The reader finds the index where it ends and reads the archive with the
//! edit undone (`archive::reader::moved`): the frames before the edit and after it are
//! restored, the entries of the frame holding it are lost and named (exit 5, 2 encrypted).
//! Regressions: bytes removed made the footer's index offset fall past the footer, which was
//! refused as a broken rule ("footer: index offset outside the archive", exit 3) with
//! nothing restored; inserted, the archive was read front to back without its index, and
//! the entries wholly inside the lost frames were not named.

mod cli_common;
mod common;

use cli_common::*;
use common::{bytes, code};

#[test]
fn bytes_removed_or_inserted_without_recovery_data_are_read_past() {
    let fx = Fx::new();
    for i in 0..40 {
        fx.file(&format!("t/f{i:02}"), &bytes(20 << 10, i as u64 + 1, false));
    }
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "-b", "64K", "--keyfile", "k", "e.kry", "t"]);
    fx.ok(&["c", "-q", "-b", "64K", "u.kry", "t"]);
    for (name, sealed) in [("u.kry", false), ("e.kry", true)] {
        let a = std::fs::read(fx.p(name)).unwrap();
        let keys: &[&str] = if sealed { &["--keyfile", "k"] } else { &[] };
        let at = a.len() / 2;
        for n in [1usize, 100, 5000, 30000] {
            for (how, c) in [
                ("removed", [&a[..at], &a[at + n..]].concat()),
                (
                    "inserted",
                    [&a[..at], &vec![b'X'; n][..], &a[at..]].concat(),
                ),
            ] {
                let what = format!("{name}: {n} bytes {how} at {at}");
                std::fs::write(fx.p("c.kry"), &c).unwrap();
                let x = fx.run(&[&["x", "-o", "o", "c.kry"], keys].concat());
                assert_eq!(code(&x), if sealed { 2 } else { 5 }, "{what}: {}", err(&x));
                // Every entry is accounted for: the index was found.
                assert!(err(&x).contains(" of 41 entries, "), "{what}: {}", err(&x));
                let said = if n == 1 {
                    format!("1 byte was {how} at or before byte ")
                } else {
                    format!("{n} bytes were {how} at or before byte ")
                };
                assert!(err(&x).contains(&said), "{what}: {}", err(&x));
                // Before the edit and after it (the last file is in the last frame).
                for f in ["t/f00", "t/f39"] {
                    assert_eq!(fx.read(&format!("o/{f}")), fx.read(f), "{what}: {f}");
                }
                let t = fx.run(&[&["t", "c.kry"], keys].concat());
                assert_eq!(code(&t), code(&x), "{what}: t: {}", err(&t));
                std::fs::remove_dir_all(fx.p("o")).unwrap();
            }
        }
        // Bytes inserted between two frames: every entry restored and verified, but `t`
        // fails: the archive is not as written, and nothing can repair it.
        let hlen = u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize;
        let second =
            hlen + 48 + u32::from_le_bytes(a[hlen + 4..hlen + 8].try_into().unwrap()) as usize;
        let c = [&a[..second], &[b'X'; 333][..], &a[second..]].concat();
        std::fs::write(fx.p("c.kry"), &c).unwrap();
        let x = fx.run(&[&["x", "-o", "o", "c.kry"], keys].concat());
        assert_eq!(code(&x), 0, "{name}: {}", err(&x));
        for i in 0..40 {
            let f = format!("t/f{i:02}");
            assert_eq!(fx.read(&format!("o/{f}")), fx.read(&f), "{name}: {f}");
        }
        let t = fx.run(&[&["t", "c.kry"], keys].concat());
        assert_eq!(code(&t), if sealed { 2 } else { 5 }, "{name}: {}", err(&t));
        let said = format!("333 bytes were inserted at or before byte {second}");
        assert!(err(&t).contains(&said), "{name}: {}", err(&t));
        std::fs::remove_dir_all(fx.p("o")).unwrap();
    }
}

/// Bytes inserted between the index and the footer (a bad copy), or the archive appended to
/// itself: the index verifies where the footer says and every frame is in place, so every
/// entry is restored; `t` fails, the file not being as written.
/// Regression: "frame sequence: bytes between the index and the footer" ended the run with
/// nothing restored (exit 3; encrypted, exit 2 "wrong key or password" with the right key).
#[test]
fn bytes_inserted_before_the_footer_lose_nothing() {
    let fx = Fx::new();
    for i in 0..6 {
        fx.file(
            &format!("t/f{i}"),
            &bytes(50 << 10, i as u64 + 7, i % 2 == 0),
        );
    }
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "e.kry", "t"]);
    fx.ok(&["c", "-q", "u.kry", "t"]);
    for (name, sealed) in [("u.kry", false), ("e.kry", true)] {
        let a = std::fs::read(fx.p(name)).unwrap();
        let keys: &[&str] = if sealed { &["--keyfile", "k"] } else { &[] };
        let index_end = a.len() - 64;
        for (how, c, n) in [
            (
                "10 bytes",
                [&a[..index_end], &[b'X'; 10][..], &a[index_end..]].concat(),
                10,
            ),
            ("itself appended", [&a[..], &a[..]].concat(), a.len()),
        ] {
            let what = format!("{name}: {how}");
            std::fs::write(fx.p("c.kry"), &c).unwrap();
            let x = fx.run(&[&["x", "-o", "o", "c.kry"], keys].concat());
            assert_eq!(code(&x), 0, "{what}: {}", err(&x));
            let said = format!(
                "{n} bytes were inserted at or before byte {index_end}, between the index and the footer (a bad copy, or the archive appended to itself?): read without them; no entry was touched"
            );
            assert!(err(&x).contains(&said), "{what}: {}", err(&x));
            assert!(!err(&x).contains("is lost"), "{what}: {}", err(&x));
            for i in 0..6 {
                let f = format!("t/f{i}");
                assert_eq!(fx.read(&format!("o/{f}")), fx.read(&f), "{what}: {f}");
            }
            let t = fx.run(&[&["t", "c.kry"], keys].concat());
            assert_eq!(code(&t), if sealed { 2 } else { 5 }, "{what}: {}", err(&t));
            assert!(!err(&t).contains("wrong key"), "{what}: {}", err(&t));
            assert!(err(&t).contains(&said), "{what}: {}", err(&t));
            std::fs::remove_dir_all(fx.p("o")).unwrap();
        }
    }
}

/// One byte inserted before the footer: said in the singular, and placed "after the index"
/// (regression: "1 bytes … (frame 131)", a frame the archive does not have).
#[test]
fn one_byte_inserted_before_the_footer_is_said_so() {
    let fx = Fx::new();
    fx.file("t/a", &bytes(10 << 10, 3, true));
    fx.ok(&["c", "-q", "u.kry", "t"]);
    let a = std::fs::read(fx.p("u.kry")).unwrap();
    let at = a.len() - 64;
    std::fs::write(fx.p("c.kry"), [&a[..at], b"X", &a[at..]].concat()).unwrap();
    let t = fx.run(&["t", "c.kry"]);
    assert_eq!(code(&t), 5, "{}", err(&t));
    assert!(
        err(&t).ends_with(&format!(
            "krypta: c.kry: 1 byte inserted at byte {at} (after the index): every entry verified with it undone, but the archive is not as written and has no recovery data to repair it\n"
        )),
        "{}",
        err(&t)
    );
    assert!(err(&t).contains(&format!(
        "1 byte was inserted at or before byte {at}, between the index and the footer"
    )));
}

/// A bad copy that duplicated one whole frame: the copy verifies (its tag does not cover
/// where it lies), and the index is found where it ends, as for any insertion. Regression:
/// the last data frame duplicated sits exactly where the verified footer says the index
/// starts, and that verified data frame was refused as a broken rule ("frame sequence:
/// expected index frame seq 10, found Data seq 9", exit 3, nothing restored), while a copy
/// of any other frame was read with the edit undone. Found by scripts/mutate_campaign.py.
#[test]
fn a_duplicated_frame_is_an_insertion_wherever_it_is() {
    let fx = Fx::new();
    fx.file("t/big.bin", &bytes(600_000, 3, false));
    fx.file("t/small.txt", &bytes(5000, 4, true));
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-q", "-b", "64K", "--keyfile", "k", "e.kry", "t"]);
    fx.ok(&["c", "-q", "-b", "64K", "u.kry", "t"]);
    for (name, sealed) in [("u.kry", false), ("e.kry", true)] {
        let a = std::fs::read(fx.p(name)).unwrap();
        let keys: &[&str] = if sealed { &["--keyfile", "k"] } else { &[] };
        // (start, end) of each data frame
        let mut at = u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize;
        let mut data = Vec::new();
        while a[at] == 1 {
            let end = at + 48 + u32::from_le_bytes(a[at + 4..at + 8].try_into().unwrap()) as usize;
            data.push((at, end));
            at = end;
        }
        assert!(data.len() >= 9, "{name}: {} data frames", data.len());
        for k in [0, data.len() / 2, data.len() - 1] {
            let (s, e) = data[k];
            let what = format!("{name}: data frame {k} of {} duplicated", data.len());
            let c = [&a[..e], &a[s..e], &a[e..]].concat();
            std::fs::write(fx.p("c.kry"), &c).unwrap();
            let x = fx.run(&[&["x", "-o", "o", "c.kry"], keys].concat());
            assert_eq!(code(&x), 0, "{what}: {}", err(&x));
            let said = format!("{} bytes were inserted at or before byte {e}", e - s);
            assert!(err(&x).contains(&said), "{what}: {}", err(&x));
            for f in ["t/big.bin", "t/small.txt"] {
                assert_eq!(fx.read(&format!("o/{f}")), fx.read(f), "{what}: {f}");
            }
            let t = fx.run(&[&["t", "c.kry"], keys].concat());
            assert_eq!(code(&t), if sealed { 2 } else { 5 }, "{what}: {}", err(&t));
            let said = format!("{} bytes inserted at byte {e} (frame {})", e - s, k + 1);
            assert!(err(&t).contains(&said), "{what}: {}", err(&t));
            std::fs::remove_dir_all(fx.p("o")).unwrap();
        }
    }
}
