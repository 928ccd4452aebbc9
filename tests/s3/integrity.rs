//! A byte changed between krypta and the store: every body krypta writes carries its SHA-256
//! (`x-amz-checksum-sha256`, `src/store/s3/requests.rs`), the store refuses the changed
//! body (400 BadDigest), and krypta sends it again. Before, the changed byte became part of the
//! object, `c` exited 0 and only `t` found the damage (exit 5).

use crate::common;
use crate::harness::*;
use crate::proxy::Flip;

/// Writes `src` to `url` through a proxy that changes byte `at` of the first body of a
/// `method` request whose target contains `target`; checks that the run succeeded after one
/// retry, that the object verifies, and that it restores the bytes given.
fn changed_on_the_way(bucket: &str, size: usize, target: &'static str, nth: u32, at: u64) {
    let Some((w, d)) = setup(bucket) else {
        return;
    };
    let data = common::bytes(size, 7, false);
    common::write(&d.path().join("src/big.bin"), &data);
    let proxy = Proxy::start(w.addr());
    proxy.flip(Flip {
        method: "PUT",
        target,
        nth,
        at,
    });
    let url = format!("s3://{bucket}/a.kry");
    let o = out(krypta_s3(&proxy.endpoint(), d.path())
        .current_dir(d.path())
        .args(["c", "-v", "-s", &url, "src"]));
    assert_ok(&o);
    assert_eq!(proxy.flipped().len(), 1, "{:?}", proxy.seen());
    let e = stderr(&o);
    let (_, retries, _, _) = transfer(&o, &url);
    assert_eq!(retries, 1, "the changed body is sent again: {e}");
    // The object is what krypta meant to write: it verifies, and restores the input.
    assert_ok(&out(k(w, d.path()).args(["t", &url])));
    let restored = d.path().join("restored");
    assert_ok(&out(k(w, d.path()).args([
        "x",
        "-o",
        restored.to_str().unwrap(),
        &url,
    ])));
    assert!(std::fs::read(restored.join("src/big.bin")).unwrap() == data);
    assert_eq!(w.client().uploads(bucket), vec![]);
}

#[test]
fn a_part_changed_on_the_way_is_refused_by_the_store_and_sent_again() {
    // 20 MiB: three parts; a byte in the middle of the second.
    changed_on_the_way("flip-part", 20 << 20, "partNumber=", 2, 3_000_000);
}

#[test]
fn a_single_put_changed_on_the_way_is_refused_by_the_store_and_sent_again() {
    // One PUT (under a part's 8 MiB); a byte of the archive's first frame.
    changed_on_the_way("flip-put", 1 << 20, "/flip-put/a.kry?", 1, 500);
}
