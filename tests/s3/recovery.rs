//! Recovery data on object storage (issue 11 §2 with issue 15): `c --recovery 5` straight to
//! an object, a damaged object read and repaired in place by ranged reads, `repair` from an
//! object to a local file and `repair --check` of an object, all without a key.

use crate::common;
use crate::harness::*;

#[test]
fn recovery_data_is_written_to_read_from_and_repaired_on_object_storage() {
    let Some((w, d)) = setup("rec") else {
        return;
    };
    let tree = make_tree(d.path(), 3_000_000);
    let o = out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "--recovery",
        "5",
        "s3://rec/a.kry",
        "tree",
    ]));
    assert_ok(&o);
    let s3 = w.client();
    let original = s3.get("rec", "a.kry").expect("object written");
    let info = out(k(w, d.path()).args(["info", "s3://rec/a.kry"]));
    assert_ok(&info);
    assert!(
        String::from_utf8_lossy(&info.stdout).contains("recovery:       5% Reed-Solomon"),
        "{}",
        String::from_utf8_lossy(&info.stdout)
    );
    // Two zeroed 4 KiB sectors in the middle of the archive: repaired on read.
    let mut damaged = original.clone();
    let mid = damaged.len() / 3 / 4096 * 4096;
    damaged[mid..mid + 8192].fill(0);
    s3.put("rec", "d.kry", &damaged);
    let t = out(k(w, d.path()).args(["t", "s3://rec/d.kry"]));
    assert_eq!(common::code(&t), 7, "{}", stderr(&t));
    assert!(
        stderr(&t).contains("damaged but repairable"),
        "{}",
        stderr(&t)
    );
    let x = out(k(w, d.path())
        .args(["x", "-o"])
        .arg(d.path().join("out"))
        .arg("s3://rec/d.kry"));
    assert_ok(&x);
    assert!(
        stderr(&x).contains("rebuilt 8192 bytes (2 shards)"),
        "{}",
        stderr(&x)
    );
    common::assert_same_tree(&tree, &d.path().join("out/tree"));
    let c = out(k(w, d.path()).args(["repair", "--check", "s3://rec/d.kry"]));
    assert_eq!(common::code(&c), 7, "{}", stderr(&c));
    let r = out(k(w, d.path())
        .args(["repair", "s3://rec/d.kry", "-o"])
        .arg(d.path().join("fixed.kry")));
    assert_ok(&r);
    assert!(std::fs::read(d.path().join("fixed.kry")).unwrap() == original);
    // In place on the store: the object is replaced by the original bytes.
    let r = out(k(w, d.path()).args(["repair", "-f", "s3://rec/d.kry"]));
    assert_ok(&r);
    assert!(s3.get("rec", "d.kry").unwrap() == original);
    assert_eq!(s3.uploads("rec"), vec![]);
}
