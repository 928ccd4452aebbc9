//! `krypta repair --check` gives every state of an archive its documented exit code (README,
//! "Exit codes"): 0 intact, 7 damaged but repairable — or its recovery data missing after an
//! archive that still ends with its footer, as `t` says it —, 5 beyond the recovery data,
//! which includes an archive cut short before its recovery data (the data goes with the cut:
//! it said "no recovery data found", exit 3, and a nightly check reported a format error),
//! and 3 for an archive without recovery data, also when a flipped header bit says it has
//! some. `repair` (writing) refuses the same archives with the same words.

mod common;
mod recovery_cli_common;

use common::code;
use krypta::format::signature::SIGNATURE_FRAME_LEN;
use recovery_cli_common::*;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `repair --check NAME` in the fixture's directory: its exit code and stderr.
fn check(f: &Fixture, name: &str) -> (i32, String) {
    let o = f.run(&["repair", "--check", name]);
    (code(&o), stderr(&o))
}

/// Asserts that `repair NAME -o OUT` exits `want` with `says` in its message, writing nothing.
fn assert_repair_refuses(f: &Fixture, name: &str, want: i32, says: &str, what: &str) {
    let out = format!("fixed-{name}");
    let r = f.run(&["repair", name, "-o", &out]);
    assert_eq!(code(&r), want, "{what}: repair: {}", stderr(&r));
    assert!(stderr(&r).contains(says), "{what}: repair: {}", stderr(&r));
    assert!(!f.dir.path().join(&out).exists(), "{what}: {out} written");
}

#[test]
fn an_intact_archive_checks_intact() {
    for encrypted in [false, true] {
        let f = Fixture::new(5, encrypted, 0);
        let (c, e) = check(&f, "a.kry");
        assert_eq!(c, 0, "encrypted {encrypted}: {e}");
        assert!(
            e.contains("a.kry: intact (") && e.contains(" archive bytes, recovery data 5%)"),
            "{e}"
        );
    }
}

#[test]
fn a_few_flipped_bytes_in_the_archive_check_repairable() {
    for encrypted in [false, true] {
        let f = Fixture::new(5, encrypted, 0);
        let mut b = f.bytes.clone();
        for (i, frame) in f.frames.iter().take(3).enumerate() {
            b[frame.0 as usize + 500 + i] ^= 0x20;
        }
        f.write("flip.kry", &b);
        let (c, e) = check(&f, "flip.kry");
        assert_eq!(c, 7, "encrypted {encrypted}: {e}");
        assert!(
            e.contains("flip.kry: damaged but repairable: 3 damaged archive shard(s)"),
            "{e}"
        );
    }
}

#[test]
fn an_archive_cut_before_its_recovery_data_is_beyond_it() {
    for encrypted in [false, true] {
        let f = Fixture::new(5, encrypted, 0);
        let len = f.bytes.len() as u64;
        let mid = f.frames[f.frames.len() / 2];
        // `frames` are the data frames; the one index frame follows them, the footer it.
        let index = (f.frames.last().unwrap().1, f.protected - 64);
        for (cut, part, at, needed) in [
            // `truncate -s 60%`, whatever it hits.
            (len * 6 / 10, None, 0, 0),
            // Inside a data frame, on a frame boundary (the next head missing), inside the
            // index frame, inside the footer.
            (mid.0 + 1000, Some("frame"), mid.0, mid.1),
            (mid.0, Some("frame"), mid.0, mid.0 + 16),
            (index.0 + 20, Some("frame"), index.0, index.1),
            (f.protected - 10, Some("the footer"), index.1, f.protected),
        ] {
            let what = format!("encrypted {encrypted}, cut at {cut}");
            f.write("cut.kry", &f.bytes[..cut as usize]);
            let (c, e) = check(&f, "cut.kry");
            assert_eq!(c, 5, "{what}: {e}");
            assert!(
                e.contains("cut.kry: damaged beyond the recovery data: the archive is cut short: "),
                "{what}: {e}"
            );
            assert!(
                e.contains(&format!("but the file ends at byte {cut}; its recovery data, which follows the archive, is lost with it")),
                "{what}: {e}"
            );
            if let Some(part) = part {
                assert!(
                    e.contains(&format!(" at byte {at} runs to byte {needed}, ")),
                    "{what}: {e}"
                );
                assert!(e.contains(&format!("cut short: {part}")), "{what}: {e}");
            }
            assert_repair_refuses(&f, "cut.kry", 5, "the archive is cut short", &what);
        }
    }
}

#[test]
fn an_archive_damaged_where_its_recovery_data_was_cut_is_beyond_it() {
    let f = Fixture::new(5, false, 0);
    let l = f.protected as usize;
    let mid = f.frames[f.frames.len() / 2];
    // A copy that stopped and left zeros (a sparse file): every frame head from the one
    // after `mid` on is zero.
    let mut zeroed = f.bytes[..l].to_vec();
    zeroed[mid.0 as usize + 100..].fill(0);
    // The footer overwritten, the section cut off.
    let mut footer = f.bytes[..l].to_vec();
    footer[l - 64..].fill(0xAA);
    for (name, bytes, part, at) in [
        ("zeroed.kry", zeroed, "frame", mid.1),
        ("footer.kry", footer, "the footer", f.protected - 64),
    ] {
        f.write(name, &bytes);
        let (c, e) = check(&f, name);
        assert_eq!(c, 5, "{name}: {e}");
        assert!(
            e.contains(&format!(
                "{name}: damaged beyond the recovery data: the archive is damaged at byte {at}, where {part}"
            )),
            "{e}"
        );
        assert_repair_refuses(&f, name, 5, "the archive is damaged at byte", name);
    }
}

#[test]
fn a_signed_archive_is_walked_past_its_signature_frame() {
    // The fixture's tree, signed: the signature frame lies between the index and the footer.
    let f = Fixture::new(5, false, 0);
    for args in [
        &["keygen", "--sign", "-q", "-o", "me"][..],
        &[
            "c",
            "-q",
            "-b",
            "64K",
            "--recovery=5",
            "--sign",
            "me",
            "s.kry",
            "t",
        ],
    ] {
        let o = f.run(args);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    }
    let info = f.run(&["info", "--json", "s.kry"]);
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let l = v["recovery"]["protected_bytes"].as_u64().unwrap() as usize;
    let bytes = std::fs::read(f.dir.path().join("s.kry")).unwrap();
    let foot = l - 64;
    let mut footer = bytes[..l].to_vec();
    footer[foot..].fill(0);
    for (name, b, code_, says) in [
        (
            "s-gone.kry",
            bytes[..l].to_vec(),
            7,
            format!(
                "its recovery data is missing: none follows the archive's footer, which ends at byte {l} "
            ),
        ),
        (
            "s-footer.kry",
            footer,
            5,
            format!("the archive is damaged at byte {foot}, where the footer belongs"),
        ),
        (
            "s-sig.kry",
            bytes[..foot - 100].to_vec(),
            5,
            format!(
                "the archive is cut short: the signature frame at byte {} runs to byte {foot}, ",
                foot - SIGNATURE_FRAME_LEN
            ),
        ),
    ] {
        f.write(name, &b);
        let (c, e) = check(&f, name);
        assert_eq!(c, code_, "{name}: {e}");
        assert!(
            e.contains(&format!("{name}: ")) && e.contains(&says),
            "{name}: {e}"
        );
    }
}

#[test]
fn recovery_data_cut_off_alone_checks_missing_as_test_says() {
    for encrypted in [false, true] {
        let f = Fixture::new(5, encrypted, 0);
        let l = f.protected;
        let copy_a = l.div_ceil(4096) * 4096;
        // At the footer's end, in the zero padding, inside copy A's first packet (no packet
        // is left: with one, the section is found and regenerated, recovery_cli_edges.rs).
        for cut in [l, (l + copy_a) / 2, copy_a + 1000] {
            let what = format!("encrypted {encrypted}, cut at {cut}");
            f.write("gone.kry", &f.bytes[..cut as usize]);
            let (c, e) = check(&f, "gone.kry");
            assert_eq!(c, 7, "{what}: {e}");
            assert!(
                e.contains(&format!("gone.kry: its recovery data is missing: none follows the archive's footer, which ends at byte {l} of the {cut}-byte file (cut off or overwritten), so the archive is no longer protected; krypta repair cannot restore it")),
                "{what}: {e}"
            );
            assert!(
                e.contains("its archive bytes are not checked without it"),
                "{what}: {e}"
            );
            // `t` says the same of it, with the same exit code.
            let t = f.keyed(&["t", "gone.kry"]);
            assert_eq!(code(&t), 7, "{what}: t: {}", stderr(&t));
            assert!(
                stderr(&t).contains("its recovery data is missing"),
                "{what}: t: {}",
                stderr(&t)
            );
            // Nothing to repair from: no recovery data (3), said as plainly.
            assert_repair_refuses(&f, "gone.kry", 3, "its recovery data is missing", &what);
        }
    }
}

#[test]
fn an_archive_without_recovery_data_is_not_taken_for_one_cut_short() {
    for encrypted in [false, true] {
        // The fixture's tree and key, archived without --recovery.
        let f = Fixture::new(5, encrypted, 0);
        let o = f.keyed(&["c", "-q", "-b", "64K", "plain.kry", "t"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let plain = std::fs::read(f.dir.path().join("plain.kry")).unwrap();
        assert_eq!(plain[10] & 2, 0, "no recovery flag");
        // Header flag bit 1 ("a recovery section follows") flipped, whole and cut short.
        let mut flipped = plain.clone();
        flipped[10] ^= 2;
        let cut = flipped[..flipped.len() * 6 / 10].to_vec();
        for (name, bytes) in [
            ("plain.kry", plain.clone()),
            ("flag.kry", flipped),
            ("flagcut.kry", cut),
        ] {
            let what = format!("encrypted {encrypted}, {name}");
            f.write(name, &bytes);
            let (c, e) = check(&f, name);
            assert_eq!(c, 3, "{what}: {e}");
            assert!(
                e.contains(&format!(
                    "{name}: no recovery data found in {} bytes",
                    bytes.len()
                )),
                "{what}: {e}"
            );
            assert_repair_refuses(&f, name, 3, "no recovery data found", &what);
        }
    }
}
