//! What a run costs the store: the connections of an upload (reused across parts and
//! requests, `store::s3::agents`).

use crate::common;
use crate::harness::*;

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
