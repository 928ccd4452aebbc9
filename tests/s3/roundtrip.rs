//! `s3://BUCKET/KEY` archives against a real SeaweedFS on loopback (see `harness`): round
//! trips, what each command fetches, overwrite refusal, aborts, errors and secrets.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use crate::common;
use crate::harness::*;
use krypta::format::footer::FOOTER_LEN;
use krypta::format::frame::{FRAME_HEADER_LEN, TAG_LEN};
use krypta::store::s3::{CHUNK, OPEN_WINDOW};

/// Bytes at the end of an object every open reads: the recovery trailer's length.
const TRAILER: u64 = krypta::recovery::TRAILER_LEN as u64;

#[test]
fn round_trip_of_a_real_tree_through_a_multipart_upload() {
    let Some((w, d)) = setup("rt-plain") else {
        return;
    };
    let tree = make_tree(d.path(), 12_000_000);
    let o = out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "-v",
        "s3://rt-plain/tree.kry",
        "tree",
    ]));
    assert_ok(&o);
    let s3 = w.client();
    let obj = s3.get("rt-plain", "tree.kry").expect("object written");
    // Probe, CreateMultipartUpload, two parts (8 MiB + the rest), CompleteMultipartUpload.
    let (requests, retries, _, sent) = transfer(&o, "s3://rt-plain/tree.kry");
    assert_eq!((requests, retries), (5, 0));
    // The archive bytes, plus the CompleteMultipartUpload XML listing the two parts.
    assert!(
        sent > obj.len() as u64 && sent < obj.len() as u64 + 512,
        "{sent}"
    );
    assert!(obj.len() > 12_000_000);
    assert_eq!(s3.uploads("rt-plain"), vec![]);
    assert_eq!(s3.keys("rt-plain"), vec!["tree.kry".to_string()]);

    let o = out(k(w, d.path())
        .args(["x", "-o"])
        .arg(d.path().join("out"))
        .arg("s3://rt-plain/tree.kry"));
    assert_ok(&o);
    common::assert_same_tree(&tree, &d.path().join("out/tree"));
    assert_ok(&out(k(w, d.path()).args(["t", "s3://rt-plain/tree.kry"])));

    // `l` of the object prints exactly what `l` of a downloaded copy prints.
    let local = d.path().join("copy.kry");
    std::fs::write(&local, &obj).unwrap();
    let remote_l = out(k(w, d.path()).args(["l", "s3://rt-plain/tree.kry"]));
    assert_ok(&remote_l);
    assert_eq!(
        remote_l.stdout,
        common::ok(&["l", common::s(&local)]).stdout
    );

    // One file to stdout.
    let o = out(k(w, d.path()).args([
        "x",
        "--stdout",
        "s3://rt-plain/tree.kry",
        "tree/docs/readme.txt",
    ]));
    assert_ok(&o);
    assert_eq!(
        o.stdout,
        std::fs::read(tree.join("docs/readme.txt")).unwrap()
    );
}

#[test]
fn encrypted_round_trip_and_a_wrong_password() {
    let Some((w, d)) = setup("rt-enc") else {
        return;
    };
    let tree = make_tree(d.path(), 9_000_000);
    let pw = d.path().join("pw");
    std::fs::write(&pw, "correct horse\n").unwrap();
    let bad = d.path().join("bad");
    std::fs::write(&bad, "wrong horse\n").unwrap();
    let o = out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "--pass-file",
        "pw",
        "--kdf-memory",
        "8",
        "--kdf-iterations",
        "1",
        "s3://rt-enc/secret.kry",
        "tree",
    ]));
    assert_ok(&o);
    let o = out(k(w, d.path()).current_dir(d.path()).args([
        "x",
        "--pass-file",
        "bad",
        "-o",
        "wrong",
        "s3://rt-enc/secret.kry",
    ]));
    assert_eq!(common::code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("s3://rt-enc/secret.kry: authentication failed"),
        "{}",
        stderr(&o)
    );
    let o = out(k(w, d.path()).current_dir(d.path()).args([
        "x",
        "--pass-file",
        "pw",
        "-o",
        "out",
        "s3://rt-enc/secret.kry",
    ]));
    assert_ok(&o);
    common::assert_same_tree(&tree, &d.path().join("out/tree"));
    let o = out(k(w, d.path()).current_dir(d.path()).args([
        "t",
        "--pass-file",
        "pw",
        "s3://rt-enc/secret.kry",
    ]));
    assert_ok(&o);
    // Without a key `info` still reads the header.
    let o = out(k(w, d.path()).args(["info", "s3://rt-enc/secret.kry"]));
    assert_ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("argon2id"));
}

#[test]
fn a_small_archive_is_one_put_and_streams_work_both_ways() {
    let Some((w, d)) = setup("rt-small") else {
        return;
    };
    let data = common::bytes(50_000, 7, true);
    let mut c = k(w, d.path());
    let mut child = c
        .args(["c", "-v", "s3://rt-small/stdin.kry", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&data).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_ok(&o);
    // The probe, then one PutObject.
    assert_eq!(transfer(&o, "s3://rt-small/stdin.kry").0, 2);
    assert_eq!(w.client().uploads("rt-small"), vec![]);
    let o = out(k(w, d.path()).args(["x", "--stdout", "s3://rt-small/stdin.kry"]));
    assert_ok(&o);
    assert_eq!(o.stdout, data);
}

/// Offsets of a local copy's frames, its index range and footer.
struct Layout {
    len: u64,
    index_offset: u64,
    frame_offsets: Vec<u64>,
    entries: Vec<krypta::format::index::IndexEntry>,
}

fn layout(bytes: &[u8], dir: &Path) -> Layout {
    let p = dir.join("layout.kry");
    std::fs::write(&p, bytes).unwrap();
    let mut ar = krypta::archive::Archive::open(&p, Default::default()).unwrap();
    let (footer, index) = ar.read_index().unwrap();
    let mut off = ar.header().write_untagged().len() as u64 + 32;
    let mut frame_offsets = Vec::new();
    for &l in &index.frame_body_lens {
        frame_offsets.push(off);
        off += l as u64 + (FRAME_HEADER_LEN + TAG_LEN) as u64;
    }
    frame_offsets.push(off);
    assert_eq!(off, footer.index_offset);
    Layout {
        len: bytes.len() as u64,
        index_offset: footer.index_offset,
        frame_offsets,
        entries: index.entries,
    }
}

/// An archive of 30 incompressible 100 kB files in 64 KiB blocks, uploaded; its layout.
fn frames_archive(w: &Weed, d: &Path, bucket: &str) -> (std::path::PathBuf, Layout) {
    let src = d.join("sel");
    for i in 0..30 {
        common::write(
            &src.join(format!("f{i:02}.bin")),
            &common::bytes(100_000, 100 + i, false),
        );
    }
    let key = format!("s3://{bucket}/sel.kry");
    assert_ok(&out(k(w, d)
        .current_dir(d)
        .args(["c", "-b", "64K", &key, "sel"])));
    let obj = w.client().get(bucket, "sel.kry").unwrap();
    (src, layout(&obj, d))
}

#[test]
fn extracting_one_path_fetches_only_its_frames() {
    let Some((w, d)) = setup("sel-one") else {
        return;
    };
    let (src, lay) = frames_archive(w, d.path(), "sel-one");
    let e = lay
        .entries
        .iter()
        .find(|e| e.meta.path == b"sel/f17.bin")
        .unwrap();
    let run = lay.frame_offsets[e.last_seq as usize + 1] - lay.frame_offsets[e.first_seq as usize];
    let index = lay.len - FOOTER_LEN as u64 - lay.index_offset;
    // The open window, the last 80 bytes (the recovery trailer every open probes for; they
    // hold the footer, which is then read from them), the index, the frames holding the
    // file: nothing else.
    let expected = OPEN_WINDOW + TRAILER + index + run;
    assert!(
        run < CHUNK && expected * 10 < lay.len,
        "{expected} of {}",
        lay.len
    );
    let proxy = Proxy::start(w.addr());
    let o = out(krypta_s3(&proxy.endpoint(), d.path())
        .args(["x", "-v", "-o"])
        .arg(d.path().join("out"))
        .args(["s3://sel-one/sel.kry", "sel/f17.bin"]));
    assert_ok(&o);
    assert_eq!(
        std::fs::read(d.path().join("out/sel/f17.bin")).unwrap(),
        std::fs::read(src.join("f17.bin")).unwrap()
    );
    let (requests, retries, received, _) = transfer(&o, "s3://sel-one/sel.kry");
    assert_eq!((requests, retries, received), (4, 0, expected));
    // Independently, on the wire: the same four requests, and the bytes plus HTTP headers.
    assert_eq!(proxy.requests(), 4);
    assert!(
        proxy.down() >= expected && proxy.down() < expected + 4 * 1024,
        "{} bytes on the wire for {expected}",
        proxy.down()
    );
}

#[test]
fn info_reads_the_header_and_footer_and_list_adds_the_index() {
    let Some((w, d)) = setup("sel-meta") else {
        return;
    };
    let (_, lay) = frames_archive(w, d.path(), "sel-meta");
    let proxy = Proxy::start(w.addr());
    let o =
        out(krypta_s3(&proxy.endpoint(), d.path()).args(["info", "-v", "s3://sel-meta/sel.kry"]));
    assert_ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("size:           {} bytes", lay.len))
    );
    // The open window and the last 80 bytes: the recovery trailer probe, which holds the
    // footer.
    let head_and_footer = OPEN_WINDOW + TRAILER;
    assert_eq!(
        transfer(&o, "s3://sel-meta/sel.kry"),
        (2, 0, head_and_footer, 0)
    );
    assert_eq!(proxy.requests(), 2);
    assert!(
        proxy.down() < head_and_footer + 2 * 1024,
        "{}",
        proxy.down()
    );

    proxy.reset();
    let o = out(krypta_s3(&proxy.endpoint(), d.path()).args(["l", "-v", "s3://sel-meta/sel.kry"]));
    assert_ok(&o);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 31);
    let index = lay.len - FOOTER_LEN as u64 - lay.index_offset;
    assert_eq!(
        transfer(&o, "s3://sel-meta/sel.kry"),
        (3, 0, head_and_footer + index, 0)
    );
    assert_eq!(proxy.requests(), 3);
    assert!(proxy.down() < head_and_footer + index + 3 * 1024);
}

#[test]
fn an_existing_object_is_kept_without_force_and_replaced_with_it() {
    let Some((w, d)) = setup("ovw") else { return };
    let s3 = w.client();
    common::write(&d.path().join("one/a.txt"), b"first");
    common::write(&d.path().join("two/b.txt"), b"second");
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "s3://ovw/a.kry",
        "one",
    ])));
    let first = s3.etag("ovw", "a.kry").unwrap();
    let o = out(k(w, d.path())
        .current_dir(d.path())
        .args(["c", "s3://ovw/a.kry", "two"]));
    assert_eq!(common::code(&o), 1);
    assert_eq!(
        stderr(&o),
        "krypta: s3://ovw/a.kry: already exists (use -f/--force to overwrite)\n"
    );
    assert_eq!(s3.etag("ovw", "a.kry").unwrap(), first);
    let o = out(k(w, d.path())
        .current_dir(d.path())
        .args(["c", "-f", "s3://ovw/a.kry", "two"]));
    assert_ok(&o);
    assert_ne!(s3.etag("ovw", "a.kry").unwrap(), first);
    let o = out(k(w, d.path()).args(["l", "s3://ovw/a.kry"]));
    assert!(String::from_utf8_lossy(&o.stdout).contains("two/b.txt"));
}

#[test]
fn an_object_created_during_the_upload_is_not_replaced() {
    let Some((w, d)) = setup("race") else { return };
    let s3 = w.client();
    let mut child = k(w, d.path())
        .args(["c", "-s", "-j", "1", "s3://race/r.kry", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Enough input that two frames (one 8 MiB part) must reach the upload before krypta
    // waits for more: with -j 1 at most 4 blocks are in flight, so the 6th 4 MiB block forces
    // out the 2nd frame. With less, a slow worker left the sealed frames in memory while
    // krypta waited on its still-open stdin, and no upload ever started (flaky under load).
    stdin.write_all(&common::bytes(26 << 20, 3, false)).unwrap();
    // The upload has begun (its first part is in flight or done): another writer takes the key.
    wait_for_upload(&s3, "race", &mut child);
    s3.put("race", "r.kry", b"the other writer's object");
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert_eq!(common::code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("s3://race/r.kry: already exists"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        s3.get("race", "r.kry").unwrap(),
        b"the other writer's object"
    );
    assert_eq!(s3.uploads("race"), vec![]);
}

#[test]
fn a_failed_run_aborts_its_upload() {
    let Some((w, d)) = setup("abort-err") else {
        return;
    };
    let s3 = w.client();
    // krypta's stdin is a TCP socket that is reset mid-stream: a read error after 20 MB.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut feeder = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (sock, _) = l.accept().unwrap();
    let mut child = k(w, d.path())
        .args(["c", "-s", "-j", "1", "s3://abort-err/a.kry", "-"])
        .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(sock)))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Enough input that two frames (one 8 MiB part) must reach the upload before krypta
    // waits for more: with -j 1 at most 4 blocks are in flight, so the 6th 4 MiB block forces
    // out the 2nd frame. With less, a slow worker left the sealed frames in memory while
    // krypta waited on its still-open stdin, and no upload ever started (flaky under load).
    feeder
        .write_all(&common::bytes(26 << 20, 4, false))
        .unwrap();
    wait_for_upload(&s3, "abort-err", &mut child);
    rustix::net::sockopt::set_socket_linger(&feeder, Some(std::time::Duration::ZERO)).unwrap();
    drop(feeder);
    let o = child.wait_with_output().unwrap();
    assert_eq!(common::code(&o), 4, "{}", stderr(&o));
    assert!(stderr(&o).contains("<stdin>: read:"), "{}", stderr(&o));
    assert_eq!(s3.keys("abort-err"), Vec::<String>::new());
    assert_eq!(s3.uploads("abort-err"), vec![]);
}

#[test]
fn sigterm_aborts_the_upload() {
    let Some((w, d)) = setup("abort-sig") else {
        return;
    };
    let s3 = w.client();
    let mut child = k(w, d.path())
        .args(["c", "-s", "-j", "1", "s3://abort-sig/a.kry", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Enough input that two frames (one 8 MiB part) must reach the upload before krypta
    // waits for more: with -j 1 at most 4 blocks are in flight, so the 6th 4 MiB block forces
    // out the 2nd frame. With less, a slow worker left the sealed frames in memory while
    // krypta waited on its still-open stdin, and no upload ever started (flaky under load).
    stdin.write_all(&common::bytes(26 << 20, 5, false)).unwrap();
    wait_for_upload(&s3, "abort-sig", &mut child);
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    drop(stdin);
    // 128 + SIGTERM, as a shell reports it (issue 14; 130 is for SIGINT).
    assert_eq!(common::code(&o), 143, "{}", stderr(&o));
    assert_eq!(s3.keys("abort-sig"), Vec::<String>::new());
    assert_eq!(s3.uploads("abort-sig"), vec![]);
}

#[test]
fn throttling_is_retried_with_backoff_then_reported() {
    let Some((w, d)) = setup("retry") else { return };
    common::write(&d.path().join("t/a.txt"), b"abc");
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "s3://retry/a.kry",
        "t",
    ])));
    let proxy = Proxy::start(w.addr());
    proxy
        .state
        .slow_down
        .store(2, std::sync::atomic::Ordering::SeqCst);
    let o = out(krypta_s3(&proxy.endpoint(), d.path()).args(["l", "-v", "s3://retry/a.kry"]));
    assert_ok(&o);
    // The open GET answered 503 SlowDown twice, then once more with the whole (small)
    // archive, footer and index included.
    let (requests, retries, _, _) = transfer(&o, "s3://retry/a.kry");
    assert_eq!((requests, retries), (3, 2));
    proxy
        .state
        .slow_down
        .store(5, std::sync::atomic::Ordering::SeqCst);
    let o = out(krypta_s3(&proxy.endpoint(), d.path())
        .env("AWS_MAX_ATTEMPTS", "2")
        .args(["l", "s3://retry/a.kry"]));
    assert_eq!(common::code(&o), 4);
    assert_eq!(
        stderr(&o),
        "krypta: s3://retry/a.kry: open: the server answered HTTP 503 SlowDown: Please reduce your request rate. (gave up after 2 attempt(s))\n"
    );
}

#[test]
fn an_object_replaced_while_it_is_read_is_an_error() {
    let Some((w, d)) = setup("changed") else {
        return;
    };
    let s3 = w.client();
    let data = common::bytes(64 << 20, 6, false);
    common::write(&d.path().join("big.bin"), &data);
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "-s",
        "-b",
        "1M",
        "s3://changed/c.kry",
        "big.bin",
    ])));
    // Reading to a pipe nobody drains stalls krypta after its bounded read-ahead.
    let child = k(w, d.path())
        .args(["x", "--stdout", "s3://changed/c.kry"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    s3.put(
        "changed",
        "c.kry",
        &std::fs::read(d.path().join("big.bin")).unwrap()[..1 << 20],
    );
    let o = child.wait_with_output().unwrap();
    assert_eq!(common::code(&o), 4, "{}", stderr(&o));
    assert!(o.stdout.len() < data.len());
    assert!(
        stderr(&o).contains("s3://changed/c.kry: read: the object was replaced while it was being read (its ETag is no longer \""),
        "{}",
        stderr(&o)
    );
}
