//! Keys are addressed exactly as typed (`store::s3` module doc): a key with a `.`, `..` or
//! empty path segment is refused before any request, so no other key — or bucket — is ever
//! written or read in its place.

use crate::common;
use crate::harness::*;

#[test]
fn keys_a_url_would_rewrite_are_refused_and_nothing_else_is_touched() {
    let Some((w, d)) = setup("keys") else {
        return;
    };
    w.client().create_bucket("keys-other");
    common::write(&d.path().join("f"), b"payload");
    let s3 = w.client();
    // Readable objects under the names the rewritten URLs would reach.
    s3.put("keys", "v.kry", b"not this one");
    s3.put("keys-other", "esc.kry", b"nor this one");
    for url in [
        "s3://keys/../keys-other/esc.kry",
        "s3://keys/x/../v.kry",
        "s3://keys/./v.kry",
        "s3://keys//v.kry",
        "s3://keys/x//v.kry",
    ] {
        for args in [
            vec!["c", "-f", url, "f"],
            vec!["l", url],
            vec!["x", "-o", "out", url],
        ] {
            let o = out(k(w, d.path()).current_dir(d.path()).args(&args));
            assert_eq!(common::code(&o), 1, "{args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).starts_with(&format!("krypta: {url}: the key has ")),
                "{args:?}: {}",
                stderr(&o)
            );
            assert!(
                stderr(&o).contains("krypta addresses keys exactly as given"),
                "{}",
                stderr(&o)
            );
        }
    }
    assert_eq!(s3.get("keys", "v.kry").unwrap(), b"not this one");
    assert_eq!(s3.get("keys-other", "esc.kry").unwrap(), b"nor this one");
    let mut keys = s3.keys("keys");
    keys.sort();
    assert_eq!(keys, ["v.kry"]);
    assert_eq!(s3.keys("keys-other"), ["esc.kry"]);
    assert!(!d.path().join("out").exists());
    // Dots inside a segment are part of the name and kept.
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "-q",
        "s3://keys/a..b/.v.kry",
        "f",
    ])));
    assert!(s3.get("keys", "a..b/.v.kry").is_some());
}
