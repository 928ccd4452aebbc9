//! A lost answer to the final request: the proxy passes the final PutObject or
//! CompleteMultipartUpload to the server, which carries it out and answers, and closes krypta's
//! connection before the answer arrives. krypta retries; the retry finds the key taken (412) or
//! the upload gone (NoSuchUpload), and HEAD must tell krypta's own object (its upload token
//! and size) from another writer's.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common;
use crate::harness::*;
use crate::proxy::Lose;

/// More than one part (8 MiB), so the archive goes up as a multipart upload.
const MULTIPART: usize = 12 << 20;

fn verifies(w: &Weed, home: &std::path::Path, url: &str) {
    let o = out(k(w, home).args(["t", url]));
    assert_ok(&o);
}

#[test]
fn a_lost_answer_to_the_put_is_confirmed_by_head() {
    let Some((w, d)) = setup("lost-put") else {
        return;
    };
    let s3 = w.client();
    common::write(&d.path().join("src/a.txt"), &common::bytes(50_000, 1, true));
    let proxy = Proxy::start(w.addr());
    proxy.lose(Lose::first("PUT", "/lost-put/a.kry?"));
    let o = out(krypta_s3(&proxy.endpoint(), d.path())
        .current_dir(d.path())
        .args(["c", "-v", "s3://lost-put/a.kry", "src"]));
    assert_ok(&o);
    assert_eq!(proxy.lost().len(), 1, "{:?}", proxy.seen());
    let e = stderr(&o);
    assert!(
        e.contains("krypta: s3://lost-put/a.kry: the answer to PutObject was lost and the retry found the key taken (HTTP 412); HEAD shows this run's object there (its upload token and size, "),
        "{e}"
    );
    // The retry and the HEAD are counted.
    let (requests, retries, _, _) = transfer(&o, "s3://lost-put/a.kry");
    assert_eq!((requests, retries), (4, 1), "{e}");
    assert_eq!(s3.keys("lost-put"), vec!["a.kry".to_string()]);
    verifies(w, d.path(), "s3://lost-put/a.kry");
}

#[test]
fn a_lost_answer_to_the_complete_is_confirmed_by_head() {
    let Some((w, d)) = setup("lost-mpu") else {
        return;
    };
    let s3 = w.client();
    common::write(
        &d.path().join("src/big.bin"),
        &common::bytes(MULTIPART, 2, false),
    );
    let proxy = Proxy::start(w.addr());
    proxy.lose(Lose::first("POST", "uploadId="));
    let o = out(krypta_s3(&proxy.endpoint(), d.path())
        .current_dir(d.path())
        .args(["c", "-v", "-s", "s3://lost-mpu/a.kry", "src"]));
    assert_ok(&o);
    assert_eq!(proxy.lost().len(), 1, "{:?}", proxy.seen());
    let e = stderr(&o);
    assert!(
        e.contains("krypta: s3://lost-mpu/a.kry: the answer to CompleteMultipartUpload was lost and the retry found "),
        "{e}"
    );
    assert!(e.contains("; HEAD shows this run's object there"), "{e}");
    assert_eq!(s3.keys("lost-mpu"), vec!["a.kry".to_string()]);
    assert_eq!(s3.uploads("lost-mpu"), vec![]);
    verifies(w, d.path(), "s3://lost-mpu/a.kry");
}

/// SeaweedFS answers the retried unconditional CompleteMultipartUpload with 200, so this
/// passed before the upload token too; AWS may answer NoSuchUpload, which HEAD then settles.
/// It keeps `-f` with a lost answer working, and the old object replaced.
#[test]
fn a_lost_answer_to_an_unconditional_complete_succeeds() {
    let Some((w, d)) = setup("lost-force") else {
        return;
    };
    let s3 = w.client();
    s3.put("lost-force", "a.kry", b"the old object -f replaces");
    common::write(
        &d.path().join("src/big.bin"),
        &common::bytes(MULTIPART, 3, false),
    );
    let proxy = Proxy::start(w.addr());
    proxy.lose(Lose::first("POST", "uploadId="));
    let o = out(krypta_s3(&proxy.endpoint(), d.path())
        .current_dir(d.path())
        .args(["c", "-v", "-f", "-s", "s3://lost-force/a.kry", "src"]));
    assert_ok(&o);
    assert_eq!(proxy.lost().len(), 1, "{:?}", proxy.seen());
    assert_eq!(s3.uploads("lost-force"), vec![]);
    assert_ne!(
        s3.get("lost-force", "a.kry").unwrap(),
        b"the old object -f replaces"
    );
    verifies(w, d.path(), "s3://lost-force/a.kry");
}

#[test]
fn another_writers_object_is_kept_when_the_answer_was_lost() {
    let Some((w, d)) = setup("lost-other") else {
        return;
    };
    let s3 = w.client();
    // Created before the run: refused up front, as always.
    s3.put("lost-other", "before.kry", b"another writer's object");
    let o = out(k(w, d.path()).args(["c", "s3://lost-other/before.kry", "-"]));
    assert_eq!(common::code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "krypta: s3://lost-other/before.kry: already exists (use -f/--force to overwrite)\n"
    );
    // Created during the run, and the store's 412 to krypta's PUT is lost: the retry gets 412
    // again, and HEAD shows an object krypta did not write.
    let proxy = Proxy::start(w.addr());
    proxy.lose(Lose::first("PUT", "/lost-other/during.kry?"));
    let mut child = krypta_s3(&proxy.endpoint(), d.path())
        .args(["c", "-v", "s3://lost-other/during.kry", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&common::bytes(100_000, 4, true)).unwrap();
    let t0 = Instant::now();
    while !proxy.seen().iter().any(|l| l.starts_with("GET ")) {
        assert!(t0.elapsed() < Duration::from_secs(30), "no probe");
        std::thread::sleep(Duration::from_millis(10));
    }
    s3.put("lost-other", "during.kry", b"another writer's object");
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let e = stderr(&o);
    assert_eq!(common::code(&o), 1, "{e}");
    assert_eq!(proxy.lost().len(), 1, "{:?}", proxy.seen());
    assert!(
        e.contains("krypta: s3://lost-other/during.kry: the answer to PutObject was lost and the retry found the key taken (HTTP 412); HEAD shows an object this run did not write\n"),
        "{e}"
    );
    assert!(
        e.contains(
            "krypta: s3://lost-other/during.kry: already exists (use -f/--force to overwrite)\n"
        ),
        "{e}"
    );
    for key in ["before.kry", "during.kry"] {
        assert_eq!(
            s3.get("lost-other", key).unwrap(),
            b"another writer's object"
        );
    }
}
