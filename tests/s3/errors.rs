//! Errors of `s3://` archives against a real SeaweedFS (see `harness`): missing buckets and
//! keys, refused credentials, where configuration comes from, and that no secret is ever shown.

use crate::common;
use crate::harness::*;

#[test]
fn missing_buckets_and_keys_are_named() {
    let Some((w, d)) = setup("present") else {
        return;
    };
    let cases: [(&[&str], &str); 4] = [
        (
            &["l", "s3://absent-bucket/a.kry"],
            "krypta: s3://absent-bucket/a.kry: open: the bucket does not exist (NoSuchBucket at ",
        ),
        (
            &["x", "-o", "o", "s3://present/none.kry"],
            "krypta: s3://present/none.kry: open: no such object in the bucket (NoSuchKey)\n",
        ),
        (
            &["info", "s3://present/none.kry"],
            "krypta: s3://present/none.kry: open: no such object in the bucket (NoSuchKey)\n",
        ),
        (
            &["c", "s3://absent-bucket/new.kry", "."],
            "krypta: s3://absent-bucket/new.kry: create: the bucket does not exist (NoSuchBucket at ",
        ),
    ];
    for (args, msg) in cases {
        let o = out(k(w, d.path()).current_dir(d.path()).args(args));
        assert_eq!(common::code(&o), 4, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with(msg), "{args:?}: {}", stderr(&o));
    }
    assert!(!d.path().join("o").exists());
}

#[test]
fn wrong_credentials_are_named_and_no_secret_is_ever_shown() {
    let Some((w, d)) = setup("creds") else { return };
    common::write(&d.path().join("t/a.txt"), b"abc");
    assert_ok(&out(k(w, d.path()).current_dir(d.path()).args([
        "c",
        "s3://creds/a.kry",
        "t",
    ])));
    let bad_secret = "WrongSecret/Zx81Qp0Lm3Nv5Bc7Xe9";
    let token = "SessionToken-Hq6Wt2Yu8Io4Pa0Sd";
    let bad_id = "AKIAWRONGKEY7777ABCD";
    // (environment, arguments, the line the error must start with)
    type Run<'a> = (Vec<(&'a str, &'a str)>, Vec<&'a str>, &'a str);
    let runs: Vec<Run> = vec![
        (
            vec![("AWS_SECRET_ACCESS_KEY", bad_secret)],
            vec!["l", "-v", "s3://creds/a.kry"],
            "krypta: s3://creds/a.kry: open: access denied: the request signature does not match: is the secret access key right? (SignatureDoesNotMatch; credentials from the environment; endpoint ",
        ),
        (
            vec![("AWS_ACCESS_KEY_ID", bad_id), ("AWS_SESSION_TOKEN", token)],
            vec!["x", "-v", "-o", "o", "s3://creds/a.kry"],
            "krypta: s3://creds/a.kry: open: access denied: the server does not know this access key id (InvalidAccessKeyId; credentials from the environment; endpoint ",
        ),
        (
            vec![("AWS_SECRET_ACCESS_KEY", bad_secret)],
            vec!["c", "-v", "s3://creds/new.kry", "t"],
            "krypta: s3://creds/new.kry: create: access denied: the request signature does not match",
        ),
        (
            vec![
                ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
                ("AWS_SESSION_TOKEN", token),
                ("AWS_MAX_ATTEMPTS", "2"),
            ],
            vec!["info", "-v", "s3://creds/a.kry"],
            "krypta: s3://creds/a.kry: open: cannot connect to http://127.0.0.1:1: ",
        ),
    ];
    for (env, args, msg) in runs {
        let mut c = k(w, d.path());
        c.current_dir(d.path()).args(&args);
        for (key, v) in &env {
            c.env(key, v);
        }
        let o = out(&mut c);
        assert_eq!(common::code(&o), 4, "{args:?}: {}", stderr(&o));
        let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert!(all.lines().any(|l| l.starts_with(msg)), "{args:?}: {all}");
        for secret in [SECRET, bad_secret, token, KEY_ID, bad_id] {
            assert!(!all.contains(secret), "{args:?} printed a secret: {all}");
        }
        assert!(
            !all.contains("X-Amz-"),
            "{args:?} printed a signed URL: {all}"
        );
    }
    assert!(!d.path().join("o").exists());
}

#[test]
fn profiles_in_the_aws_files_are_used_like_the_aws_cli_does() {
    let Some((w, d)) = setup("profile") else {
        return;
    };
    let home = d.path().join("home");
    common::write(
        &home.join(".aws/credentials"),
        format!("[default]\naws_access_key_id = AKIAUNUSED000\naws_secret_access_key = unused\n\n[backup]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n").as_bytes(),
    );
    common::write(
        &home.join(".aws/config"),
        format!(
            "[profile backup]\nregion = eu-central-1\nendpoint_url = {}\n",
            w.endpoint()
        )
        .as_bytes(),
    );
    common::write(&d.path().join("t/a.txt"), b"abc");
    let mut c = k(w, &home);
    c.env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_ENDPOINT_URL")
        .env("AWS_PROFILE", "backup")
        .current_dir(d.path())
        .args(["c", "-v", "s3://profile/p.kry", "t"]);
    let o = out(&mut c);
    assert_ok(&o);
    assert!(
        stderr(&o).contains(&format!(
            "krypta: s3://profile/p.kry: endpoint {} (path-style), region eu-central-1, credentials from profile 'backup' in {}/.aws/credentials (key id …0001)",
            w.endpoint(),
            home.display()
        )),
        "{}",
        stderr(&o)
    );
    // --endpoint-url wins over a wrong AWS_ENDPOINT_URL.
    let o = out(k(w, d.path())
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
        .args(["l", "--endpoint-url", &w.endpoint(), "s3://profile/p.kry"]));
    assert_ok(&o);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 2);
    // No credentials anywhere: a usage-class error that says where it looked.
    let empty = d.path().join("empty-home");
    std::fs::create_dir(&empty).unwrap();
    let o = out(k(w, &empty)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .args(["l", "s3://profile/p.kry"]));
    assert_eq!(common::code(&o), 1);
    assert_eq!(
        stderr(&o),
        format!(
            "krypta: s3://profile/p.kry: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with keys in {0}/.aws/credentials or {0}/.aws/config\n",
            empty.display()
        )
    );
}
