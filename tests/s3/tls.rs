//! `https://` endpoints: a SeaweedFS of the test's own serving S3 over TLS with a certificate
//! from a CA made here (openssl). With that CA in `AWS_CA_BUNDLE` krypta talks to it (rustls,
//! ring); with the built-in webpki roots the certificate is refused, at once (a TLS failure is
//! not retried) and named as such.

use std::process::Command;

use crate::common;
use crate::harness::*;

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let o = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn https_endpoints_use_the_ca_bundle_and_refuse_unknown_issuers() {
    if server_available().is_none() {
        return;
    }
    if Command::new("openssl").arg("version").output().is_err() {
        eprintln!("SKIPPED: openssl is not installed (it makes the test's certificates)");
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    let c = certs.path();
    openssl(
        c,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=krypta test CA",
        ],
    );
    openssl(
        c,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "srv.key",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(
        c.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        c,
        &[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "srv.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    );
    let https = free_port();
    let w = Weed::start_with(vec![
        format!("-s3.port.https={https}"),
        format!("-s3.cert.file={}", c.join("srv.pem").display()),
        format!("-s3.key.file={}", c.join("srv.key").display()),
    ]);
    w.client().create_bucket("tls");
    let d = tempfile::tempdir().unwrap();
    common::write(&d.path().join("t/a.txt"), b"over TLS");
    let endpoint = format!("https://127.0.0.1:{https}");
    let ca = c.join("ca.pem");
    let o = out(krypta_s3(&endpoint, d.path())
        .env("AWS_CA_BUNDLE", &ca)
        .current_dir(d.path())
        .args(["c", "s3://tls/a.kry", "t"]));
    assert_ok(&o);
    let o = out(krypta_s3(&endpoint, d.path())
        .env("AWS_CA_BUNDLE", &ca)
        .args(["x", "--stdout", "s3://tls/a.kry", "t/a.txt"]));
    assert_ok(&o);
    assert_eq!(o.stdout, b"over TLS");
    // The webpki roots do not know this CA: refused on the first attempt.
    let o = out(krypta_s3(&endpoint, d.path()).args(["l", "-v", "s3://tls/a.kry"]));
    assert_eq!(common::code(&o), 4);
    assert_eq!(
        stderr(&o).lines().last().unwrap(),
        format!(
            "krypta: s3://tls/a.kry: open: TLS failed with {endpoint}: invalid peer certificate: UnknownIssuer (gave up after 1 attempt(s))"
        )
    );
}
