//! Issue 11 §2, the places damage hurts most and the commands around it: a damaged header
//! (which without recovery data reads as "wrong key"), a damaged footer, damage to the
//! recovery data itself (recovery shards, a descriptor copy, the trailer), a tail cut in the
//! section (repairable) or in the archive (salvage only), archives streamed to stdout and
//! read from a pipe, `repair`'s refusals and in-place mode, and `info`.

mod common;
mod recovery_cli_common;

use common::{code, s};
use recovery_cli_common::*;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_damaged_header_is_repaired_not_reported_as_a_wrong_key() {
    for encrypted in [false, true] {
        let f = Fixture::new(1, encrypted, 0);
        let mut b = f.bytes.clone();
        // The magic, the version and the archive id.
        for i in [0usize, 9, 20, 30] {
            b[i] ^= 0x55;
        }
        f.write("h.kry", &b);
        f.assert_repaired("h.kry", &format!("header, encrypted {encrypted}"));
    }
}

#[test]
fn a_damaged_footer_and_index_are_repaired() {
    for encrypted in [false, true] {
        let f = Fixture::new(1, encrypted, 0);
        let mut b = f.bytes.clone();
        let l = f.protected as usize;
        b[l - 64..l].fill(0);
        let index = f.frames.last().unwrap().1 as usize;
        b[index + 10] ^= 1;
        f.write("f.kry", &b);
        f.assert_repaired("f.kry", &format!("footer, encrypted {encrypted}"));
    }
}

#[test]
fn damaged_recovery_data_is_reported_and_regenerated() {
    let f = Fixture::new(5, true, 0);
    let (copy_a, packets, _) = section_parts(&f);
    let mut b = f.bytes.clone();
    // Copy A's first packet, and three recovery shards after copy A.
    let rec = copy_a + 4096 * packets;
    b[copy_a as usize + 100] ^= 1;
    for j in 0..3u64 {
        b[(rec + 4096 * j + 7) as usize] ^= 0x80;
    }
    f.write("r.kry", &b);
    let t = f.keyed(&["t", "r.kry"]);
    assert_eq!(code(&t), 7, "{}", stderr(&t));
    assert!(
        stderr(&t).contains(
            "3 recovery shards damaged or unverifiable (checksum lost), 1 descriptor packet damaged"
        ),
        "{}",
        stderr(&t)
    );
    f.assert_repaired("r.kry", "recovery data");
}

#[test]
fn a_damaged_trailer_is_found_by_the_scan() {
    let f = Fixture::new(5, false, 0);
    let mut b = f.bytes.clone();
    let n = b.len();
    b[n - 80..].fill(0xff);
    f.write("z.kry", &b);
    let t = f.keyed(&["t", "z.kry"]);
    assert!(
        stderr(&t).contains("the recovery trailer is damaged"),
        "{}",
        stderr(&t)
    );
    f.assert_repaired("z.kry", "trailer");
}

#[test]
fn a_tail_cut_in_the_recovery_data_is_repaired() {
    let f = Fixture::new(10, true, 0);
    // Cut after copy A and half the recovery shards: P and one descriptor copy survive.
    let copy_a = f.protected.div_ceil(4096) * 4096;
    let cut = copy_a + (f.bytes.len() as u64 - copy_a) / 2;
    f.write("c.kry", &f.bytes[..cut as usize]);
    let t = f.keyed(&["t", "c.kry"]);
    assert!(
        stderr(&t).contains("the file's length differs from what the recovery data says"),
        "{}",
        stderr(&t)
    );
    // The padding after the recovery shards is cut off, not "holding other bytes".
    assert!(
        stderr(&t).contains("zero padding holds other bytes or is cut off"),
        "{}",
        stderr(&t)
    );
    let c = f.run(&["repair", "--check", "c.kry"]);
    assert!(
        stderr(&c).contains("non-zero or missing bytes in the zero padding"),
        "{}",
        stderr(&c)
    );
    f.assert_repaired("c.kry", "tail cut in the section");
}

#[test]
fn a_tail_cut_into_the_archive_is_beyond_repair_and_salvaged() {
    for encrypted in [false, true] {
        let f = Fixture::new(10, encrypted, 0);
        let cut = f.frames[f.frames.len() / 2].0 + 1000;
        f.write("p.kry", &f.bytes[..cut as usize]);
        // Beyond repair, not "no recovery data found" (exit 3): the archive's frames run
        // past the cut, which took the recovery data with it.
        let r = f.run(&["repair", "p.kry", "-o", "p2.kry"]);
        assert_eq!(code(&r), 5, "{}", stderr(&r));
        assert!(
            stderr(&r).contains("damaged beyond the recovery data: the archive is cut short"),
            "{}",
            stderr(&r)
        );
        let x = f.keyed(&["x", "-o", "out", "p.kry"]);
        let e = stderr(&x);
        assert_eq!(code(&x), if encrypted { 2 } else { 5 }, "{e}");
        assert!(
            e.contains("the header announces recovery data, but none was found"),
            "{e}"
        );
        // `l` lists exactly the entries whose frames all precede the frame the cut is in
        // (issue 11 §1: a truncated archive can be listed), and exits as salvage does.
        let k = f.frames.iter().position(|fr| fr.1 > cut).unwrap() as u64;
        let l = f.keyed(&["l", "--json", "p.kry"]);
        assert_eq!(code(&l), if encrypted { 2 } else { 5 }, "{}", stderr(&l));
        let listed: Vec<String> = String::from_utf8_lossy(&l.stdout)
            .lines()
            .map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                v["path"].as_str().unwrap().to_string()
            })
            .collect();
        let want: Vec<String> = f
            .entries
            .iter()
            .filter(|(_, _, last)| *last < k)
            .map(|(p, _, _)| p.clone())
            .collect();
        assert_eq!(listed, want);
        assert!(stderr(&l).contains(": not listed: "), "{}", stderr(&l));
        // Every file whose frames all precede the cut is restored exactly.
        for (path, _, last) in &f.entries {
            let Some(i) = path
                .strip_prefix("t/f")
                .map(|n| n.parse::<usize>().unwrap())
            else {
                continue;
            };
            if f.frames[*last as usize].1 <= cut {
                let got = std::fs::read(f.dir.path().join("out").join(path)).unwrap();
                assert!(got == content(i), "{path}");
            }
        }
    }
}

#[test]
fn streamed_to_stdout_and_read_from_a_pipe() {
    let f = Fixture::new(5, false, 0);
    let o = f.run(&["c", "-q", "--recovery", "5", "-b", "64K", "-", "t"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    f.write("s.kry", &o.stdout);
    assert_eq!(code(&f.run(&["t", "s.kry"])), 0);
    // Damage within capacity: the file repairs; a pipe cannot use the section (it follows
    // the archive) and salvages instead, saying why.
    let mut b = o.stdout.clone();
    b[f.frames[1].0 as usize + 30] ^= 4;
    f.write("sd.kry", &b);
    assert_eq!(code(&f.run(&["t", "sd.kry"])), 7);
    let mut child = common::krypta()
        .current_dir(f.dir.path())
        .args(["t", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(&b);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let e = stderr(&out);
    assert_eq!(code(&out), 5, "{e}");
    assert!(
        e.contains("the recovery data cannot be used from a pipe"),
        "{e}"
    );
}

#[test]
fn repair_refuses_what_it_should_and_replaces_in_place_only_with_f() {
    let f = Fixture::new(1, false, 0);
    let mut b = f.bytes.clone();
    b[5000] ^= 1;
    let p = f.write("d.kry", &b);
    // No -o and no -f: refused, the file untouched.
    let r = f.run(&["repair", "d.kry"]);
    assert_eq!(code(&r), 1, "{}", stderr(&r));
    assert!(stderr(&r).contains("give -o OUT, or -f"), "{}", stderr(&r));
    assert_eq!(std::fs::read(&p).unwrap(), b);
    // An existing OUT is kept without -f.
    f.write("taken.kry", b"keep me");
    let r = f.run(&["repair", "d.kry", "-o", "taken.kry"]);
    assert_eq!(code(&r), 1, "{}", stderr(&r));
    assert_eq!(
        std::fs::read(f.dir.path().join("taken.kry")).unwrap(),
        b"keep me"
    );
    // In place with -f: the original bytes and the archive's mode (0600 stays 0600), no
    // temporary file left.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    let r = f.run(&["repair", "-f", "d.kry"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(std::fs::read(&p).unwrap() == f.bytes);
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let names: Vec<String> = std::fs::read_dir(f.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".krypta-") || n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    // Intact now: nothing to repair, nothing rewritten.
    let r = f.run(&["repair", "-f", "d.kry"]);
    assert_eq!(code(&r), 0);
    assert!(stderr(&r).contains("intact"), "{}", stderr(&r));
    // An archive without recovery data, and stdin.
    let o = f.run(&["c", "-q", "plain.kry", "t"]);
    assert_eq!(code(&o), 0);
    let r = f.run(&["repair", "plain.kry", "-o", "x.kry"]);
    assert_eq!(code(&r), 3, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("no recovery data found"),
        "{}",
        stderr(&r)
    );
    let r = f.run(&["repair", "-", "-o", "x.kry"]);
    assert_eq!(code(&r), 1, "{}", stderr(&r));
}

#[test]
fn info_shows_the_recovery_data() {
    let f = Fixture::new(5, false, 0);
    let o = f.run(&["info", s(&f.archive)]);
    let text = String::from_utf8_lossy(&o.stdout);
    let section = f.bytes.len() as u64 - f.protected;
    assert!(
        text.contains(&format!(
            "recovery:       5% Reed-Solomon, {section} bytes (4096-byte shards, 128 MiB segments)"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("over the first {} bytes", f.protected)),
        "{text}"
    );
    let plain = f.run(&["c", "-q", "plain.kry", "t"]);
    assert_eq!(code(&plain), 0);
    let o = f.run(&["info", "plain.kry"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("recovery:       none"));
}

/// Offsets of the section's parts (one segment: every fixture is under 128 MiB), from
/// docs/FORMAT.md §15.3: (copy A, packets per copy, copy B).
fn section_parts(f: &Fixture) -> (u64, u64, u64) {
    let copy_a = f.protected.div_ceil(4096) * 4096;
    let packets = (8 * (f.shards() + f.capacity())).div_ceil(4008);
    let rec = copy_a + 4096 * packets;
    let copy_b = (rec + 4096 * f.capacity()).div_ceil(4096) * 4096;
    (copy_a, packets, copy_b)
}

#[test]
fn lost_checksums_count_as_erasures_on_read() {
    // Both copies of descriptor packet 0 destroyed (the checksums of the first 501 shards,
    // header included, are lost), and a damaged shard among them: at 10% (m = 94 here, fewer
    // than 501) reading cannot rebuild it...
    for (percent, repaired) in [(10u8, false), (50, true)] {
        // 400 KB more than the other fixtures: at 50% m is then above 501.
        let f = Fixture::new(percent, true, 400_000);
        let (a, _, b) = section_parts(&f);
        let mut d = f.bytes.clone();
        d[a as usize..a as usize + 4096].fill(0);
        d[b as usize..b as usize + 4096].fill(0);
        // ...and at 50% (m = 519) it can: the lost checksums are erasures.
        let hit = f.frames[2].0 as usize + 100;
        d[hit] ^= 0x10;
        f.write("lost.kry", &d);
        let what = format!("lost checksums at {percent}% (m = {})", f.capacity());
        if repaired {
            assert!(f.capacity() >= 502, "{what}");
            f.assert_repaired("lost.kry", &what);
        } else {
            assert!(f.capacity() < 501, "{what}");
            let c = f.run(&["repair", "--check", "lost.kry"]);
            assert_eq!(code(&c), 5, "{what}: {}", stderr(&c));
            let t = f.keyed(&["t", "lost.kry"]);
            assert_eq!(code(&t), 2, "{what}: {}", stderr(&t));
            assert!(
                stderr(&t).contains("checked by the archive's own tags only"),
                "{what}: {}",
                stderr(&t)
            );
        }
    }
}

#[test]
fn test_says_when_the_recovery_data_is_gone() {
    let f = Fixture::new(5, false, 0);
    f.write("gone.kry", &f.bytes[..f.protected as usize]);
    let t = f.run(&["t", "gone.kry"]);
    assert_eq!(code(&t), 7, "{}", stderr(&t));
    assert!(
        stderr(&t).contains("its recovery data is missing"),
        "{}",
        stderr(&t)
    );
    // x still restores everything (nothing was damaged), and says the data is missing.
    let x = f.run(&["x", "-o", "out", "gone.kry"]);
    assert_eq!(code(&x), 0, "{}", stderr(&x));
    assert!(stderr(&x).contains("none was found"), "{}", stderr(&x));
}

#[test]
fn repair_in_place_through_a_symlink_repairs_its_target() {
    let f = Fixture::new(1, false, 0);
    let mut b = f.bytes.clone();
    b[7000] ^= 1;
    let real = f.write("real.kry", &b);
    std::os::unix::fs::symlink("real.kry", f.dir.path().join("link.kry")).unwrap();
    let r = f.run(&["repair", "-f", "link.kry"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(std::fs::read(&real).unwrap() == f.bytes);
    assert!(
        std::fs::symlink_metadata(f.dir.path().join("link.kry"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // -o naming a directory is refused before any work.
    std::fs::create_dir(f.dir.path().join("dir")).unwrap();
    let r = f.run(&["repair", "-f", "real.kry", "-o", "dir"]);
    assert_eq!(code(&r), 1, "{}", stderr(&r));
    assert!(stderr(&r).contains("is a directory"), "{}", stderr(&r));
    // A missing archive is named as missing, before any advice about -o.
    let r = f.run(&["repair", "nonexistent.kry"]);
    assert_eq!(code(&r), 4, "{}", stderr(&r));
}

#[test]
fn bytes_in_the_padding_are_damage_too() {
    let f = Fixture::new(5, false, 0);
    let (copy_a, _, _) = section_parts(&f);
    assert!(copy_a > f.protected, "this fixture has padding after P");
    let mut b = f.bytes.clone();
    b[f.protected as usize + 1] = b'X';
    f.write("pad.kry", &b);
    let c = f.run(&["repair", "--check", "pad.kry"]);
    assert_eq!(code(&c), 7, "{}", stderr(&c));
    assert!(
        stderr(&c).contains("non-zero bytes in the zero padding"),
        "{}",
        stderr(&c)
    );
    let t = f.run(&["t", "pad.kry"]);
    assert_eq!(code(&t), 7, "{}", stderr(&t));
    f.assert_repaired("pad.kry", "padding");
}

/// helper-54: a header in a segment damaged beyond the recovery data was reported as "not a
/// krypta archive (no krypta magic at the start)", exit 3, though the intact trailer had just
/// proved it one: `t`, `x` and `l` now say what `repair --check` says (exit 5).
#[test]
fn a_header_beyond_the_recovery_data_is_named_as_such_not_as_no_archive() {
    for encrypted in [false, true] {
        let f = Fixture::new(1, encrypted, 0);
        let mut b = f.bytes.clone();
        // One shard more than the recovery data rebuilds, from byte 0 (the header's shards).
        let lost = ((f.capacity() + 1) * SHARD) as usize;
        for x in &mut b[..lost] {
            *x ^= 0x55;
        }
        f.write("h.kry", &b);
        assert_beyond_recovery(
            &f,
            &format!("encrypted {encrypted}"),
            "not a krypta archive",
        );
    }
}

/// `t`, `l` and `x` of `h.kry` (written by the caller) each exit 5 saying "damaged beyond the
/// recovery data: segment 0", never `not_said`; `x` writes nothing; `repair --check` exits 5.
fn assert_beyond_recovery(f: &Fixture, what: &str, not_said: &str) {
    let out = f.dir.path().join("out");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir(&out).unwrap();
    for args in [
        &["t", "h.kry"][..],
        &["l", "h.kry"],
        &["x", "h.kry", "-C", "out"],
    ] {
        let o = f.keyed(args);
        let e = stderr(&o);
        assert_eq!(code(&o), 5, "{args:?}, {what}: {e}");
        assert!(
            e.contains("h.kry: damaged beyond the recovery data: segment 0 (bytes 0..")
                && !e.contains(not_said),
            "{args:?}, {what}: {e}"
        );
    }
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "{what}");
    let c = f.run(&["repair", "--check", "h.kry"]);
    assert_eq!(code(&c), 5, "{what}: {}", stderr(&c));
}

/// helper-54's other half: a header that still parses, changed (a byte of the creation time,
/// of the key-file stanza, of the tag: more than the one bit its tag undoes) where the
/// recovery data cannot rebuild its segment, said "authentication failed: wrong key or
/// password, or the archive was modified" (exit 2) — sending the user looking for another
/// key — where `repair --check` says "damaged beyond the recovery data" (5). The recovery
/// data's checksums need no key: `t`, `l` and `x` now say what `repair --check` says.
/// Unencrypted, the header checksum failed (5) without naming the recovery data.
#[test]
fn a_changed_header_that_parses_beyond_the_recovery_data_is_not_called_a_wrong_key() {
    for encrypted in [false, true] {
        let f = Fixture::new(1, encrypted, 0);
        let h = u32::from_le_bytes(f.bytes[12..16].try_into().unwrap()) as usize;
        // The creation time, a byte of the stanza's wrapped key (encrypted), the header tag.
        let bytes: &[usize] = if encrypted { &[33, 60, 100] } else { &[33, 60] };
        for &at in bytes.iter().chain([h - 5].iter()) {
            let mut b = f.bytes.clone();
            b[at] ^= 0x03;
            // One shard more than the recovery data rebuilds, after the header's shard.
            let lost = ((f.capacity() + 1) * SHARD) as usize;
            for x in &mut b[SHARD as usize..SHARD as usize + lost] {
                *x ^= 0x55;
            }
            f.write("h.kry", &b);
            assert_beyond_recovery(
                &f,
                &format!("encrypted {encrypted}, byte {at}"),
                "wrong key",
            );
        }
    }
}
