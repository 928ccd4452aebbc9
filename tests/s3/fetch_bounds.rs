//! What a run costs the store: the bytes of a delta base fetched for a read (bounded by the
//! frames the regions span, `base_cache::lookahead`), the connections of an upload (reused
//! across parts and requests, `store::s3::agents`), and object URLs with invisible
//! characters (named escaped, a bucket with them refused).

use std::path::Path;

use crate::common;
use crate::harness::*;

/// The `-v` transfer line's bytes received for `location`.
fn received(o: &std::process::Output, location: &str) -> u64 {
    transfer(o, location).2
}

/// v1: three files of 12 MiB of random bytes (36 MiB); v2: the same with one byte changed in
/// each, so that every block of v2 is a `zstd+base` region of the base.
fn versions(home: &Path) {
    for i in 0..3u64 {
        let mut b = common::bytes(12 << 20, 40 + i, false);
        common::write(&home.join(format!("v1/f{i}.bin")), &b);
        b[6 << 20] ^= 1;
        common::write(&home.join(format!("v2/f{i}.bin")), &b);
    }
}

/// Regression: reading a delta against a base in the bucket whose blocks are larger than
/// the regions (here 16 MiB; `-b 256M` in the report) fetched a whole base frame more than
/// the regions span, after each read's last region: `x` of one file of the first frame
/// fetched the second frame too (16 MiB here; 268 MB of a 503 MB base with `-b 256M`). Now
/// a read fetches the frames its regions span (each once while cached), the tags, the index
/// and the footer: `x` of f0 (in frame 0) less than frame 0 and 1 MiB, `t` less than the
/// object and 1 MiB.
#[test]
fn a_delta_read_fetches_only_the_base_frames_its_regions_span() {
    let Some((w, d)) = setup("fetch-bound") else {
        return;
    };
    let home = d.path();
    versions(home);
    let base = "s3://fetch-bound/base.kry";
    assert_ok(&out(k(w, home)
        .current_dir(home)
        .args(["c", "-q", "-s", "-b", "16M", base, "v1"])));
    assert_ok(&out(k(w, home)
        .current_dir(home)
        .args(["c", "-q", "-b", "1M", "--base", base, "d.kry", "v2"])));
    let obj = w.client().get("fetch-bound", "base.kry").unwrap();
    let frame0_end = {
        let at = u32::from_le_bytes(obj[12..16].try_into().unwrap()) as u64;
        let body = u32::from_le_bytes(obj[at as usize + 4..at as usize + 8].try_into().unwrap());
        at + 16 + u64::from(body) + 32
    };
    assert!(frame0_end > 16 << 20 && (obj.len() as u64) > 36 << 20);
    let o = out(k(w, home).current_dir(home).args([
        "x",
        "-v",
        "--base",
        base,
        "d.kry",
        "-C",
        "o",
        "v2/f0.bin",
    ]));
    assert_ok(&o);
    assert!(
        std::fs::read(home.join("o/v2/f0.bin")).unwrap()
            == std::fs::read(home.join("v2/f0.bin")).unwrap()
    );
    let got = received(&o, base);
    assert!(
        got > 16 << 20 && got < frame0_end + (1 << 20),
        "x of f0 fetched {got} bytes of the base; its frame 0 ends at {frame0_end}"
    );
    let o = out(k(w, home)
        .current_dir(home)
        .args(["t", "-v", "--base", base, "d.kry"]));
    assert_ok(&o);
    let got = received(&o, base);
    assert!(
        got < obj.len() as u64 + (1 << 20),
        "t fetched {got} bytes of the {}-byte base",
        obj.len()
    );
}

/// Regression: every part of a multipart upload was sent on an HTTP agent of its own, so on
/// a connection of its own (a TCP and TLS handshake per 8 MiB part), and every client (the
/// probe, the sink) had its own agent: `c` of 80 MiB (10 parts) opened 14 connections for its
/// 14 requests. The agents of an endpoint are now shared by the run, and a part's agent is
/// leased again with its open connection: one per part in flight (at most 4) and one for the
/// requests without a body. The archive reads back whole.
#[test]
fn an_upload_reuses_its_connections_across_parts() {
    let Some((w, d)) = setup("conn-reuse") else {
        return;
    };
    let home = d.path();
    common::write(&home.join("v/big.bin"), &common::bytes(80 << 20, 9, false));
    let proxy = Proxy::start(w.addr());
    let o = out(krypta_s3(&proxy.endpoint(), home).current_dir(home).args([
        "c",
        "-v",
        "-s",
        "s3://conn-reuse/a.kry",
        "v",
    ]));
    assert_ok(&o);
    let (requests, retries, _, sent) = transfer(&o, "s3://conn-reuse/a.kry");
    assert_eq!(retries, 0);
    assert!(sent > 80 << 20);
    // The probe, CreateMultipartUpload, 11 parts, CompleteMultipartUpload.
    assert!(requests >= 13, "{requests} requests");
    let connections = proxy.connections();
    assert!(
        connections <= 5,
        "{connections} connections for {requests} requests"
    );
    let o = out(k(w, home)
        .current_dir(home)
        .args(["x", "s3://conn-reuse/a.kry", "-C", "o"]));
    assert_ok(&o);
    assert!(
        std::fs::read(home.join("o/v/big.bin")).unwrap()
            == std::fs::read(home.join("v/big.bin")).unwrap()
    );
}

/// Regression: a key with invisible formatting characters (a right-to-left override, a
/// zero-width space, a left-to-right mark) was printed raw in `-v`'s lines and in messages,
/// so the object named read as another. Such a key is allowed (S3 keys are any UTF-8) and
/// addressed exactly; every line shows it escaped, as a file name is.
#[test]
fn a_key_with_invisible_characters_is_shown_escaped() {
    let Some((w, d)) = setup("invisible-key") else {
        return;
    };
    let home = d.path();
    common::write(&home.join("v/a.txt"), b"hello\n");
    let key = "a\u{202e}yrk\u{200b}.\u{200e}kry";
    let url = format!("s3://invisible-key/{key}");
    let shown = "s3://invisible-key/a\\xe2\\x80\\xaeyrk\\xe2\\x80\\x8b.\\xe2\\x80\\x8ekry";
    let made = out(k(w, home).current_dir(home).args(["c", "-v", &url, "v"]));
    assert_ok(&made);
    assert_eq!(w.client().keys("invisible-key"), [key]);
    let e = stderr(&made);
    assert!(e.contains(&format!("krypta: {shown}: endpoint ")), "{e}");
    assert!(
        e.contains(&format!("krypta: {shown}: ")) && e.contains(" requests ("),
        "{e}"
    );
    // An object that is not there: the error names the key escaped.
    let missing = "s3://invisible-key/b\u{200f}.kry";
    let o = out(k(w, home).current_dir(home).args(["t", missing]));
    assert_eq!(common::code(&o), 4, "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("krypta: s3://invisible-key/b\\xe2\\x80\\x8f.kry: "),
        "{}",
        stderr(&o)
    );
    for o in [&made, &o] {
        let e = stderr(o);
        assert!(
            !e.contains(['\u{202e}', '\u{200b}', '\u{200e}', '\u{200f}']),
            "{e}"
        );
    }
}
