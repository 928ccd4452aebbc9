//! A byte changed between the store and krypta while reading (`FlipDown`: plain http through
//! a faulty proxy, NIC or memory): the bytes that fail their check are fetched once more
//! before anything is called damage (`src/archive/reader/second_look.rs`). Before, an intact
//! object was reported damaged (exit 5), `x` re-read the whole archive to salvage, `l` read
//! every frame when the index GET was changed, and a changed header of an encrypted archive
//! said "wrong key or password" (exit 2) with the right key.

use std::path::Path;
use std::process::Output;

use crate::common;
use crate::harness::*;
use crate::proxy::FlipDown;

/// The warning every read that was fetched again prints.
const WARNING: &str = "failed its check as received and passed it when fetched again";

fn krypta_via(proxy: &Proxy, home: &Path, args: &[&str]) -> Output {
    out(krypta_s3(&proxy.endpoint(), home)
        .current_dir(home)
        .args(args))
}

/// `args` through a proxy that changes object byte `at` in the answer to the `nth` GET that
/// reads it; checks the byte was changed on the way, the run succeeded, said so, and counted
/// one read fetched again. Returns the run.
fn changed_once(w: &Weed, home: &Path, at: u64, nth: u32, args: &[&str]) -> Output {
    let proxy = Proxy::start(w.addr());
    proxy.flip_down(FlipDown { at, nth });
    let o = krypta_via(&proxy, home, args);
    assert_eq!(proxy.flipped_down().len(), 1, "{:?}", proxy.seen());
    assert_ok(&o);
    let e = stderr(&o);
    assert!(e.contains(WARNING), "{e}");
    // `rekey` has no -v transfer line.
    if args[0] != "rekey" {
        assert!(e.contains("1 fetched again after a transfer error"), "{e}");
    }
    o
}

/// Writes `src/big.bin` (`size` bytes of seed `seed`) under `home` and archives `src` to
/// `url` with `args` added; returns the bytes written.
fn made(w: &Weed, home: &Path, url: &str, size: usize, seed: u64, args: &[&str]) -> Vec<u8> {
    let data = common::bytes(size, seed, false);
    common::write(&home.join("src/big.bin"), &data);
    let mut c = vec!["c", "-q"];
    c.extend(args);
    c.extend([url, "src"]);
    assert_ok(&out(k(w, home).current_dir(home).args(&c)));
    data
}

/// The footer's index offset of archive `obj`.
fn index_offset(obj: &[u8]) -> u64 {
    let f = &obj[obj.len() - 64..];
    u64::from_le_bytes(f[..8].try_into().unwrap())
}

#[test]
fn a_data_frame_changed_on_the_way_is_fetched_again_and_restored() {
    let Some((w, d)) = setup("transit-x") else {
        return;
    };
    let data = made(w, d.path(), "s3://transit-x/a.kry", 12 << 20, 3, &[]);
    // Byte 3,000,000 lies in the first data frame (4 MiB blocks), read by the first GET of
    // the frames read ahead.
    changed_once(
        w,
        d.path(),
        3_000_000,
        1,
        &["x", "-v", "-o", "out", "s3://transit-x/a.kry"],
    );
    assert!(std::fs::read(d.path().join("out/src/big.bin")).unwrap() == data);
    // Encrypted: the frame's MAC fails as received, not the key.
    assert_ok(&out(k(w, d.path())
        .current_dir(d.path())
        .args(["keygen", "-o", "k.key"])));
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "-q",
        "--keyfile",
        "k.key",
        "s3://transit-x/e.kry",
        "src",
    ])));
    changed_once(
        w,
        d.path(),
        9_000_000,
        1,
        &["t", "-v", "--keyfile", "k.key", "s3://transit-x/e.kry"],
    );
}

#[test]
fn damage_in_the_stored_object_is_still_damage() {
    let Some((w, d)) = setup("transit-stored") else {
        return;
    };
    made(w, d.path(), "s3://transit-stored/a.kry", 6 << 20, 4, &[]);
    let mut obj = w.client().get("transit-stored", "a.kry").unwrap();
    obj[3_000_000] ^= 0xff;
    w.client().put("transit-stored", "a.kry", &obj);
    let proxy = Proxy::start(w.addr());
    // A probe: the second GET that reads the damaged frame (its second look) gets another
    // byte of it changed on the way; it is met only if the frame is fetched again.
    proxy.flip_down(FlipDown {
        at: 3_000_001,
        nth: 2,
    });
    let o = krypta_via(&proxy, d.path(), &["t", "-v", "s3://transit-stored/a.kry"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(5), "{e}");
    assert!(e.contains("damaged"), "{e}");
    assert!(!e.contains(WARNING), "{e}");
    assert!(!e.contains("fetched again"), "{e}");
    assert_eq!(proxy.flipped_down().len(), 1, "{:?}", proxy.seen());
}

#[test]
fn an_index_changed_on_the_way_is_fetched_again_without_reading_the_frames() {
    let Some((w, d)) = setup("transit-l") else {
        return;
    };
    let src = d.path().join("src");
    for i in 0..200 {
        common::write(
            &src.join(format!("f{i:03}.txt")),
            format!("file {i}\n").as_bytes(),
        );
    }
    common::write(&src.join("big.bin"), &common::bytes(8 << 20, 6, false));
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "-q",
        "s3://transit-l/a.kry",
        "src",
    ])));
    let obj = w.client().get("transit-l", "a.kry").unwrap();
    let at = index_offset(&obj) + 40;
    let proxy = Proxy::start(w.addr());
    proxy.flip_down(FlipDown { at, nth: 1 });
    let o = krypta_via(&proxy, d.path(), &["l", "s3://transit-l/a.kry"]);
    assert_eq!(proxy.flipped_down().len(), 1, "{:?}", proxy.seen());
    assert_ok(&o);
    let listing = String::from_utf8_lossy(&o.stdout);
    assert!(listing.contains("src/f199.txt"), "{listing}");
    assert!(stderr(&o).contains(WARNING), "{}", stderr(&o));
    // The listing read the index twice, not the 8 MiB of frames.
    assert!(proxy.down() < (1 << 20), "{} bytes read", proxy.down());
}

#[test]
fn a_header_changed_on_the_way_is_not_a_wrong_key() {
    let Some((w, d)) = setup("transit-head") else {
        return;
    };
    common::write(
        &d.path().join("src/a.txt"),
        b"the header's stanza is byte 60\n",
    );
    assert_ok(&out(k(w, d.path())
        .current_dir(d.path())
        .args(["keygen", "-o", "k.key"])));
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "-q",
        "--keyfile",
        "k.key",
        "s3://transit-head/e.kry",
        "src",
    ])));
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "-q",
        "s3://transit-head/p.kry",
        "src",
    ])));
    // Byte 60 (a stanza of the encrypted header; the unencrypted header's fields) and byte
    // 5 (the magic) in the first GET of the object.
    for (at, key) in [(60, "e.kry"), (5, "e.kry"), (60, "p.kry"), (5, "p.kry")] {
        let url = format!("s3://transit-head/{key}");
        let mut args = vec!["t", "-v"];
        if key == "e.kry" {
            args.extend(["--keyfile", "k.key"]);
        }
        args.push(&url);
        changed_once(w, d.path(), at, 1, &args);
    }
    // A wrong key is still a wrong key, and costs one small request more, not a second
    // opening.
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "keygen",
        "-o",
        "other.key",
    ])));
    let proxy = Proxy::start(w.addr());
    let o = krypta_via(
        &proxy,
        d.path(),
        &["t", "--keyfile", "other.key", "s3://transit-head/e.kry"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!stderr(&o).contains(WARNING), "{}", stderr(&o));
}

#[test]
fn a_base_frame_or_tag_changed_on_the_way_is_fetched_again() {
    let Some((w, d)) = setup("transit-base") else {
        return;
    };
    let big = common::bytes(3 << 20, 5, false);
    common::write(&d.path().join("v1/app.bin"), &big);
    let mut changed = big.clone();
    changed[1_000_000] ^= 1;
    common::write(&d.path().join("v2/app.bin"), &changed);
    let run = |args: &[&str]| assert_ok(&out(k(w, d.path()).current_dir(d.path()).args(args)));
    run(&["c", "-q", "s3://transit-base/v1.kry", "v1"]);
    run(&[
        "c",
        "-q",
        "--base",
        "s3://transit-base/v1.kry",
        "v2.kry",
        "v2",
    ]);
    let base = w.client().get("transit-base", "v1.kry").unwrap();
    // The one data frame's tag ends where the index begins: read first for the binding.
    let tag_byte = index_offset(&base) - 7;
    let x = |dir: &str| {
        vec![
            "x".to_string(),
            "-v".into(),
            "--base".into(),
            "s3://transit-base/v1.kry".into(),
            "v2.kry".into(),
            "-o".into(),
            dir.into(),
        ]
    };
    let args = x("out1");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = changed_once(w, d.path(), tag_byte, 1, &args);
    // Counted for the base, whose -v line says so.
    let e = stderr(&o);
    assert!(
        e.lines()
            .any(|l| l.starts_with("krypta: s3://transit-base/v1.kry: ")
                && l.ends_with(", 1 fetched again after a transfer error")),
        "{e}"
    );
    assert!(std::fs::read(d.path().join("out1/v2/app.bin")).unwrap() == changed);
    // A byte of the frame's body, in the read of the region the changed block needs.
    let args = x("out2");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    changed_once(w, d.path(), 1_500_000, 1, &args);
    assert!(std::fs::read(d.path().join("out2/v2/app.bin")).unwrap() == changed);
}

#[test]
fn a_shard_changed_on_the_way_is_fetched_again_not_rebuilt() {
    let Some((w, d)) = setup("transit-rec") else {
        return;
    };
    let data = made(
        w,
        d.path(),
        "s3://transit-rec/a.kry",
        6 << 20,
        8,
        &["--recovery", "5"],
    );
    let o = changed_once(
        w,
        d.path(),
        2_000_000,
        1,
        &["x", "-v", "-o", "out", "s3://transit-rec/a.kry"],
    );
    // The recovery data was not needed: nothing is reported repaired.
    let e = stderr(&o);
    assert!(!e.contains("repaired"), "{e}");
    assert!(std::fs::read(d.path().join("out/src/big.bin")).unwrap() == data);
}

#[test]
fn rekey_and_signer_checks_fetch_a_changed_frame_again() {
    let Some((w, d)) = setup("transit-rekey") else {
        return;
    };
    let data = common::bytes(6 << 20, 9, false);
    common::write(&d.path().join("src/big.bin"), &data);
    let run = |args: &[&str]| assert_ok(&out(k(w, d.path()).current_dir(d.path()).args(args)));
    run(&["keygen", "-o", "k.key"]);
    run(&["keygen", "-o", "new.key"]);
    run(&["keygen", "--sign", "-o", "signer"]);
    run(&[
        "c",
        "-q",
        "--keyfile",
        "k.key",
        "--sign",
        "signer",
        "s3://transit-rekey/a.kry",
        "src",
    ]);
    changed_once(
        w,
        d.path(),
        5_000_000,
        1,
        &[
            "rekey",
            "-v",
            "--keyfile",
            "k.key",
            "--new-keyfile",
            "new.key",
            "s3://transit-rekey/a.kry",
            "-o",
            "b.kry",
        ],
    );
    changed_once(
        w,
        d.path(),
        1_000_000,
        1,
        &[
            "t",
            "-v",
            "--keyfile",
            "k.key",
            "--signer",
            "signer.pub",
            "s3://transit-rekey/a.kry",
        ],
    );
    run(&["t", "--keyfile", "new.key", "b.kry"]);
}

/// (offset, body length) of every frame of archive `obj` (data then index), and where the
/// footer starts.
fn frame_table(obj: &[u8]) -> (Vec<(u64, u32)>, u64) {
    let mut at = u32::from_le_bytes(obj[12..16].try_into().unwrap()) as usize;
    let mut v = Vec::new();
    while obj[at] == 1 || obj[at] == 2 {
        let bl = u32::from_le_bytes(obj[at + 4..at + 8].try_into().unwrap());
        v.push((at as u64, bl));
        at += 16 + bl as usize + 32;
    }
    (v, at as u64)
}

fn gets(p: &Proxy) -> usize {
    p.seen().iter().filter(|l| l.starts_with("GET ")).count()
}

#[test]
fn a_header_bit_flipped_in_the_store_is_not_called_a_transfer_error() {
    // Regression: the bytes fetched again were compared with the header as fixed
    // (`header_fix`), not as read, so the stored flip "differed", the archive was opened
    // twice and the run said "the stored archive is intact" beside "one bit of the header is
    // flipped".
    let Some((w, d)) = setup("transit-hfix") else {
        return;
    };
    common::write(&d.path().join("src/a.txt"), b"hello\n");
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "-q",
        "s3://transit-hfix/p.kry",
        "src",
    ])));
    let mut obj = w.client().get("transit-hfix", "p.kry").unwrap();
    obj[40] ^= 1;
    w.client().put("transit-hfix", "p.kry", &obj);
    let proxy = Proxy::start(w.addr());
    let o = krypta_via(&proxy, d.path(), &["t", "-v", "s3://transit-hfix/p.kry"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(5), "{e}");
    assert!(
        e.contains("one bit of the header is flipped (byte 40, bit 0"),
        "{e}"
    );
    assert!(!e.contains(WARNING), "{e}");
    assert!(!e.contains("fetched again"), "{e}");
}

#[test]
fn a_footer_changed_on_the_way_is_fetched_again() {
    // Regression: the footer had no second look; `t` read the 6 MiB archive front to back
    // three times and failed (exit 5; 2, "damaged or modified", encrypted).
    let Some((w, d)) = setup("transit-foot") else {
        return;
    };
    common::write(
        &d.path().join("src/big.bin"),
        &common::bytes(6 << 20, 11, false),
    );
    assert_ok(&out(k(w, d.path())
        .current_dir(d.path())
        .args(["keygen", "-o", "k.key"])));
    for (key, extra) in [("p.kry", vec![]), ("e.kry", vec!["--keyfile", "k.key"])] {
        let url = format!("s3://transit-foot/{key}");
        let mut c = vec!["c", "-q"];
        c.extend(&extra);
        c.extend([url.as_str(), "src"]);
        assert_ok(&out(k(w, d.path()).current_dir(d.path()).args(&c)));
        let obj = w.client().get("transit-foot", key).unwrap();
        for at in [obj.len() as u64 - 61, obj.len() as u64 - 5] {
            let mut t = vec!["t", "-v"];
            t.extend(&extra);
            t.push(&url);
            let proxy = Proxy::start(w.addr());
            proxy.flip_down(FlipDown { at, nth: 1 });
            let o = krypta_via(&proxy, d.path(), &t);
            assert_eq!(proxy.flipped_down().len(), 1, "{:?}", proxy.seen());
            assert_ok(&o);
            assert!(stderr(&o).contains(WARNING), "{}", stderr(&o));
            assert!(
                proxy.down() < obj.len() as u64 + (1 << 20),
                "{}",
                proxy.down()
            );
        }
    }
}

#[test]
fn a_header_that_does_not_parse_on_the_way_is_fetched_again_before_any_scan() {
    // Regression: a header length changed on the way made the reader search the whole object
    // for recovery data before its second look: `l` of a 6 MiB archive read all of it.
    let Some((w, d)) = setup("transit-hlen") else {
        return;
    };
    made(w, d.path(), "s3://transit-hlen/a.kry", 6 << 20, 12, &[]);
    let proxy = Proxy::start(w.addr());
    proxy.flip_down(FlipDown { at: 13, nth: 1 });
    let o = krypta_via(&proxy, d.path(), &["l", "s3://transit-hlen/a.kry"]);
    assert_eq!(proxy.flipped_down().len(), 1, "{:?}", proxy.seen());
    assert_ok(&o);
    assert!(stderr(&o).contains(WARNING), "{}", stderr(&o));
    assert!(proxy.down() < (1 << 20), "{} bytes read", proxy.down());
}

#[test]
fn second_looks_that_fail_again_are_bounded() {
    // Regression: salvage's walk tries every plausible frame head in a damaged region, and
    // each that failed cost a GET of its own: 256 KiB holding such a head every 16 bytes cost
    // 16,545 requests (71 s on loopback), where the walk reads the region in 8 MiB windows.
    let Some((w, d)) = setup("transit-walk") else {
        return;
    };
    made(
        w,
        d.path(),
        "s3://transit-walk/a.kry",
        3 << 20,
        3,
        &["-b", "1M"],
    );
    let obj = w.client().get("transit-walk", "a.kry").unwrap();
    let (frames, _) = frame_table(&obj);
    // Frame 1 overwritten by a data head of seq 1 and a 24-byte body every 16 bytes; the
    // object cut before the index, so that `x` walks it.
    let mut bad = obj[..frames[3].0 as usize].to_vec();
    let head: [u8; 16] = [1, 0, 0, 0, 24, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    for i in 0..(256 << 10) / 16 {
        let at = frames[1].0 as usize + i * 16;
        bad[at..at + 16].copy_from_slice(&head);
    }
    w.client().put("transit-walk", "c.kry", &bad);
    let proxy = Proxy::start(w.addr());
    let o = krypta_via(
        &proxy,
        d.path(),
        &["x", "-v", "-o", "out", "s3://transit-walk/c.kry"],
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(5), "{e}");
    assert!(
        e.contains("bytes 1048734..2097382 lost (frames 1..1)"),
        "{e}"
    );
    assert!(!e.contains(WARNING), "{e}");
    // The walk itself costs about 160 (its candidate reads fetch 4 KiB at a time), the
    // second looks at most MAX_FAILED_SECOND_LOOKS (32) more.
    let n = gets(&proxy);
    assert!(n < 250, "{n} GETs");
}
