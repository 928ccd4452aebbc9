//! Issue 17 on object storage (DeltaGlider's workload): a delta archive written to a bucket
//! against a base in the bucket, read back with the base from the bucket.

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common;
use crate::harness::*;

#[test]
fn a_delta_against_an_s3_base_round_trips_through_the_bucket() {
    let Some((w, d)) = setup("delta") else {
        return;
    };
    let v1 = d.path().join("v1");
    let v2 = d.path().join("v2");
    let big = common::bytes(3 << 20, 5, false);
    common::write(&v1.join("app.bin"), &big);
    let mut changed = big.clone();
    changed[1_000_000] ^= 1;
    common::write(&v2.join("app.bin"), &changed);
    common::write(&v2.join("notes.txt"), b"release notes\n");
    let run = |args: &[&str]| {
        let o = out(k(w, d.path()).current_dir(d.path()).args(args));
        assert_ok(&o);
        o
    };
    run(&["c", "-q", "s3://delta/v1.kry", "v1"]);
    run(&[
        "c",
        "-q",
        "--base",
        "s3://delta/v1.kry",
        "s3://delta/v2.kry",
        "v2",
    ]);
    let obj = w.client().get("delta", "v2.kry").expect("delta object");
    // The delta holds the changed block's differences and the new file: under 5 KiB for a
    // 3 MiB file (measured 1.9 KiB).
    assert!(obj.len() < 5 * 1024, "{}", obj.len());
    run(&[
        "x",
        "-q",
        "--base",
        "s3://delta/v1.kry",
        "s3://delta/v2.kry",
        "-C",
        "out",
    ]);
    common::assert_same_tree(&v2, &d.path().join("out/v2"));
    // The base from the bucket, the delta from stdout to a local file: the same bytes read.
    let o = out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "-q",
        "--base",
        "s3://delta/v1.kry",
        "-",
        "v2",
    ]));
    assert_ok(&o);
    std::fs::write(d.path().join("local.kry"), &o.stdout).unwrap();
    run(&["t", "--base", "s3://delta/v1.kry", "local.kry"]);
}

/// Regression: the base was compared with the output as strings only; on a store the same
/// bucket and key is the same object, refused even with -f, and the object is kept.
#[test]
fn the_base_object_cannot_be_the_output_even_with_f() {
    let Some((w, d)) = setup("delta-same") else {
        return;
    };
    common::write(&d.path().join("v1/a.txt"), b"one");
    let o =
        out(k(w, d.path())
            .current_dir(d.path())
            .args(["c", "-q", "s3://delta-same/v.kry", "v1"]));
    assert_ok(&o);
    let before = w.client().get("delta-same", "v.kry").unwrap();
    let o = out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "-q",
        "-f",
        "--base",
        "s3://delta-same/v.kry",
        "s3://delta-same/v.kry",
        "v1",
    ]));
    assert_eq!(common::code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        stderr(&o).trim(),
        "krypta: s3://delta-same/v.kry: the delta base cannot be the archive being written"
    );
    assert_eq!(w.client().get("delta-same", "v.kry").unwrap(), before);
}

/// Regression: the store going away while base frames were read made `x --base s3://` exit 9
/// ("its base region is unusable") and `c --base s3://` exit 1 (a usage error); a store that
/// cannot be reached is I/O, exit 4, as for any s3:// archive, and the message names the
/// base frame. Also without the delta's index (its footer damaged: the resynchronising walk),
/// where it was counted as lost archive bytes (exit 5).
#[test]
fn the_store_going_away_while_base_frames_are_read_is_an_io_error() {
    if server_available().is_none() {
        return;
    }
    let mut w = Weed::start();
    w.client().create_bucket("dout");
    let d = tempfile::tempdir().unwrap();
    let big = common::bytes(24 << 20, 7, false);
    common::write(&d.path().join("v1/app.bin"), &big);
    let mut changed = big.clone();
    changed[20 << 20] ^= 1;
    common::write(&d.path().join("v2/app.bin"), &changed);
    let direct = |args: &[&str]| {
        let o = out(krypta_s3(&w.endpoint(), d.path())
            .current_dir(d.path())
            .args(args));
        assert_ok(&o);
    };
    direct(&["c", "-q", "s3://dout/v1.kry", "v1"]);
    direct(&["c", "-q", "--base", "s3://dout/v1.kry", "delta.kry", "v2"]);
    let mut nofoot = std::fs::read(d.path().join("delta.kry")).unwrap();
    *nofoot.last_mut().unwrap() ^= 1;
    std::fs::write(d.path().join("nofoot.kry"), &nofoot).unwrap();
    let runs: [(&[&str], &str); 3] = [
        (
            &[
                "x",
                "-q",
                "--base",
                "s3://dout/v1.kry",
                "delta.kry",
                "-C",
                "out",
            ],
            "krypta: delta.kry: read its base: frame ",
        ),
        (
            &[
                "x",
                "-q",
                "--base",
                "s3://dout/v1.kry",
                "nofoot.kry",
                "-C",
                "out2",
            ],
            "krypta: nofoot.kry: read its base: frame ",
        ),
        (
            &["c", "-q", "--base", "s3://dout/v1.kry", "d2.kry", "v2"],
            "krypta: s3://dout/v1.kry: read the delta base: base frame ",
        ),
    ];
    for (args, msg) in runs {
        // After a restart the store may answer S3 before it serves the objects it held again
        // (its volumes reload): wait until the base reads back, or the run below fails at
        // once and never reads a base frame (seen under the load of the whole suite).
        let t0 = Instant::now();
        while common::code(&out(krypta_s3(&w.endpoint(), d.path())
            .current_dir(d.path())
            .args(["t", "-q", "s3://dout/v1.kry"])))
            != 0
        {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the base never read back"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let proxy = Proxy::start(w.addr());
        proxy.state.rate.store(2 << 20, Ordering::SeqCst);
        let child = krypta_s3(&proxy.endpoint(), d.path())
            .env("AWS_MAX_ATTEMPTS", "2")
            .current_dir(d.path())
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Past the header, index and binding (a few KiB): base frames are being fetched.
        let t0 = Instant::now();
        while proxy.down() < 3 << 20 {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "{args:?}: no base read"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        w.kill();
        let o = child.wait_with_output().unwrap();
        assert_eq!(common::code(&o), 4, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with(msg), "{args:?}: {}", stderr(&o));
        assert!(!d.path().join("d2.kry").exists());
        w.restart();
    }
}

/// Regression: every base frame was one GET, in turn (`src/archive/reader/base_fetch.rs`).
/// A base of 48 frames of 64 KiB: the walk of `c --base` and the read of `x --base` now
/// fetch the frames in runs of up to 8 MiB; what remains per frame is its tag for the
/// binding (48 GETs, 8 at a time). `-v` counts the base's requests on a line of its own.
#[test]
fn base_frames_read_in_order_are_fetched_several_per_request() {
    let Some((w, d)) = setup("delta-runs") else {
        return;
    };
    let big = common::bytes(3 << 20, 11, false);
    common::write(&d.path().join("v1/app.bin"), &big);
    let mut changed = big.clone();
    changed[2_000_000] ^= 1;
    common::write(&d.path().join("v2/app.bin"), &changed);
    let run = |args: &[&str]| {
        let o = out(k(w, d.path()).current_dir(d.path()).args(args));
        assert_ok(&o);
        o
    };
    run(&["c", "-q", "-s", "-b", "64K", "s3://delta-runs/v1.kry", "v1"]);
    let base = "s3://delta-runs/v1.kry";
    let o = run(&["c", "-v", "--base", base, "v2.kry", "v2"]);
    let (requests, _, received, _) = transfer(&o, base);
    // 48 tags, the 3 MiB of frames in one request, the header, index and footer: ~55.
    // (One request per frame besides was 100.)
    assert!(requests < 70, "{requests} requests: {}", stderr(&o));
    assert!(received < (4 << 20), "{received} bytes");
    let o = run(&["x", "-v", "--base", base, "v2.kry", "-o", "out"]);
    let (requests, _, _, _) = transfer(&o, base);
    assert!(requests < 70, "{requests} requests: {}", stderr(&o));
    assert!(std::fs::read(d.path().join("out/v2/app.bin")).unwrap() == changed);
}

/// Regression (helper-40's leftover): an existing OUT object without -f was refused only when
/// the upload began, after the delta base was opened: with an encrypted base and no base key,
/// the run said "give --base-keyfile" instead of what was wrong. It is refused first now, as an
/// existing file is, and kept; `rekey` likewise before reading any new key.
#[test]
fn an_existing_output_object_is_refused_before_the_base_is_opened() {
    let Some((w, d)) = setup("dexist") else {
        return;
    };
    common::write(&d.path().join("v1/a.txt"), b"one");
    common::write(&d.path().join("v2/a.txt"), b"two");
    let run = |args: &[&str]| out(k(w, d.path()).current_dir(d.path()).args(args));
    assert_ok(&run(&["keygen", "-q", "-o", "k"]));
    assert_ok(&run(&["c", "-q", "--keyfile", "k", "ebase.kry", "v1"]));
    assert_ok(&run(&[
        "c",
        "-q",
        "--keyfile",
        "k",
        "s3://dexist/out.kry",
        "v1",
    ]));
    let before = w.client().etag("dexist", "out.kry").unwrap();
    let o = run(&[
        "c",
        "-q",
        "--base",
        "ebase.kry",
        "s3://dexist/out.kry",
        "v2",
    ]);
    assert_eq!(
        (common::code(&o), stderr(&o)),
        (
            1,
            "krypta: s3://dexist/out.kry: already exists (use -f/--force to overwrite)\n"
                .to_string()
        )
    );
    let o = run(&[
        "rekey",
        "-q",
        "--keyfile",
        "k",
        "ebase.kry",
        "-o",
        "s3://dexist/out.kry",
        "--new-keyfile",
        "missing-key",
    ]);
    assert_eq!(
        (common::code(&o), stderr(&o)),
        (
            1,
            "krypta: s3://dexist/out.kry: already exists (use -f/--force to overwrite)\n"
                .to_string()
        )
    );
    assert_eq!(w.client().etag("dexist", "out.kry").unwrap(), before);
}
