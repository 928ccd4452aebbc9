//! Issue 14, `--json` on `list`, `info` and `test` (schema in docs/JSON.md): every field of
//! every object parsed and checked, names that are not UTF-8 escaped reversibly.

mod cli_common;
mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use base64::Engine;
use cli_common::*;
use common::code;
use serde_json::{Value, json};

const T: i64 = 1_700_000_000;

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn lines(o: &std::process::Output) -> Vec<Value> {
    out(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn list_json_is_one_object_per_entry_with_every_field() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    fx.file("t/a", b"hello");
    std::fs::hard_link(fx.p("t/a"), fx.p("t/h")).unwrap();
    std::os::unix::fs::symlink("a", fx.p("t/s")).unwrap();
    let raw = fx.p("t").join(OsStr::from_bytes(b"caf\xff"));
    std::fs::write(&raw, b"x").unwrap();
    fx.file("t/new\nline", b"");
    std::fs::set_permissions(fx.p("t/a"), std::fs::Permissions::from_mode(0o4750)).unwrap();
    let ft = filetime::FileTime::from_unix_time(T, 5);
    for p in [
        fx.p("t/a"),
        fx.p("t/s"),
        raw.clone(),
        fx.p("t/new\nline"),
        fx.p("t"),
    ] {
        filetime::set_symlink_file_times(&p, ft, ft).unwrap();
    }
    fx.ok(&["c", "-q", "a.kry", "t"]);
    let o = fx.ok(&["l", "--json", "a.kry"]);
    let objs = lines(&o);
    assert_eq!(objs.len(), 6, "{}", out(&o));
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let mtime = "2023-11-14T22:13:20.000000005Z";
    let digest = |d: &[u8]| blake3::hash(d).to_hex().to_string();
    let stored: Vec<u64> = objs.iter().map(|v| v["stored"].as_u64().unwrap()).collect();
    let want = [
        json!({"schema": 1, "path": "t", "type": "dir", "size": 0, "stored": stored[0],
               "mode": 0o755, "uid": uid, "gid": gid, "mtime": mtime, "mtime_unix": T,
               "digest": null}),
        json!({"schema": 1, "path": "t/a", "type": "file", "size": 5, "stored": stored[1],
               "mode": 0o4750, "uid": uid, "gid": gid, "mtime": mtime, "mtime_unix": T,
               "digest": null}),
        json!({"schema": 1, "path_b64": "dC9jYWb/", "type": "file", "size": 1,
               "stored": stored[2], "mode": 0o644, "uid": uid, "gid": gid, "mtime": mtime,
               "mtime_unix": T, "digest": null}),
        json!({"schema": 1, "path": "t/h", "type": "hardlink", "size": 0, "stored": stored[3],
               "mode": 0o4750, "uid": uid, "gid": gid, "mtime": mtime, "mtime_unix": T,
               "digest": null, "link": "t/a"}),
        json!({"schema": 1, "path": "t/new\nline", "type": "file", "size": 0,
               "stored": stored[4], "mode": 0o644, "uid": uid, "gid": gid, "mtime": mtime,
               "mtime_unix": T, "digest": null}),
        json!({"schema": 1, "path": "t/s", "type": "symlink", "size": 0, "stored": stored[5],
               "mode": 0o777, "uid": uid, "gid": gid, "mtime": mtime, "mtime_unix": T,
               "digest": null, "link": "a"}),
    ];
    // The owner's names, stored for every entry but hard links (which carry no metadata).
    let (user, group) = common::own_names();
    let want = want.map(|mut w| {
        if w["type"] != "hardlink" {
            w["user"] = json!(user);
            w["group"] = json!(group);
        }
        w
    });
    for (got, want) in objs.iter().zip(&want) {
        assert_eq!(got, want);
        // The documented key order (docs/JSON.md).
        let mut order = vec![
            "schema",
            if got.get("path").is_some() {
                "path"
            } else {
                "path_b64"
            },
        ];
        order.extend(["type", "size", "stored", "mode", "uid", "gid"]);
        if got.get("user").is_some() {
            order.extend(["user", "group"]);
        }
        order.extend(["mtime", "mtime_unix", "digest"]);
        if got.get("link").is_some() {
            order.push("link");
        }
        assert_eq!(keys(got), order);
    }
    // path_b64 decodes to the exact bytes; every stored byte is handed out.
    let b = base64::engine::general_purpose::STANDARD
        .decode(objs[2]["path_b64"].as_str().unwrap())
        .unwrap();
    assert_eq!(b, b"t/caf\xff");
    assert!(stored.iter().all(|&s| s > 0));
    // A newline in a name cannot break the one-object-per-line framing.
    assert_eq!(out(&o).lines().count(), 6);
    // The PATH filter applies to JSON too.
    let o = fx.ok(&["l", "--json", "a.kry", "t/s"]);
    assert_eq!(lines(&o), [want[5].clone()]);
    // Format 2 stores a digest for files of 4096 bytes and more only: the others are null
    // (above), this one is the BLAKE3 of its content.
    let big = common::bytes(5000, 3, true);
    fx.file("u/big", &big);
    fx.ok(&["c", "-q", "b.kry", "u/big"]);
    let o = fx.ok(&["l", "--json", "b.kry"]);
    assert_eq!(lines(&o)[0]["digest"], json!(digest(&big)));
}

#[test]
fn info_json_gives_the_header_facts() {
    let fx = Fx::new();
    fx.file("t/a", b"hello");
    fx.file("pw", b"pw");
    let o = fx.run_env(
        &[
            "c",
            "-q",
            "--pass-file",
            "pw",
            "--kdf-memory",
            "8",
            "--kdf-iterations",
            "1",
            "--comment",
            "nightly",
            "-l",
            "5",
            "-b",
            "1M",
            "e.kry",
            "t",
        ],
        &[("SOURCE_DATE_EPOCH", &T.to_string())],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    let o = fx.ok(&["info", "--json", "e.kry"]);
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    let size = std::fs::metadata(fx.p("e.kry")).unwrap().len();
    let id = v["archive_id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        v,
        json!({"schema": 1, "archive": "e.kry", "format_version": 2,
               "created": "2023-11-14T22:13:20Z", "created_unix": T, "archive_id": id,
               "level": 5, "block_size": 1 << 20, "encrypted": true,
               "stanzas": [{"type": "argon2id", "memory_kib": 8192, "iterations": 1,
                            "lanes": 1}],
               "comment": "nightly", "comment_authenticated": false, "size": size,
               "data_blocks": 1, "index_blocks": 1, "recovery": null, "header_fix": null,
               "trailing": null})
    );
    fx.ok(&["c", "-q", "-s", "p.kry", "t"]);
    let v: Value = serde_json::from_str(&out(&fx.ok(&["info", "--json", "p.kry"]))).unwrap();
    assert_eq!(
        (&v["level"], &v["encrypted"], &v["stanzas"], &v["comment"]),
        (&Value::Null, &json!(false), &json!([]), &Value::Null)
    );
    // One flipped bit of an unencrypted header: undone, and said (stderr, and the JSON).
    let mut a = std::fs::read(fx.p("p.kry")).unwrap();
    a[36] ^= 0x10;
    std::fs::write(fx.p("f.kry"), &a).unwrap();
    let o = fx.ok(&["info", "--json", "f.kry"]);
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["header_fix"], json!({"byte": 36, "bit": 4}));
    assert!(err(&o).contains("one bit of the header is flipped (byte 36, bit 4;"));
}

#[test]
fn test_json_reports_success_and_failure_with_the_exit_code() {
    let fx = Fx::new();
    fx.file("t/a", b"hello");
    fx.file("t/b", b"world!");
    fx.file("pw", b"pw");
    fx.file("wrong", b"nope");
    fx.ok(&[
        "c",
        "-q",
        "--pass-file",
        "pw",
        "--kdf-memory",
        "8",
        "--kdf-iterations",
        "1",
        "e.kry",
        "t",
    ]);
    let o = fx.ok(&["t", "--json", "--pass-file", "pw", "e.kry"]);
    assert_eq!(err(&o), "");
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(
        v,
        json!({"schema": 1, "archive": "e.kry", "ok": true, "exit_code": 0, "error": null,
               "entries": 3, "files": 2, "bytes": 11, "blocks": 1, "unverified": []})
    );
    let o = fx.run(&["t", "--json", "--pass-file", "wrong", "e.kry"]);
    assert_eq!(code(&o), 2);
    let msg = "e.kry: authentication failed: no recipient stanza opened with the keys given: wrong key or password, or the archive's header is damaged or modified";
    assert_eq!(err(&o), format!("krypta: {msg}\n"));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(
        v,
        json!({"schema": 1, "archive": "e.kry", "ok": false, "exit_code": 2, "error": msg,
               "entries": null, "files": null, "bytes": null, "blocks": null,
               "unverified": null, "salvage": null})
    );
    // A run that went on past damage says how far it got (it said `null` for everything).
    fx.ok(&["c", "-q", "u.kry", "t"]);
    let mut a = std::fs::read(fx.p("u.kry")).unwrap();
    a[100] ^= 0x40; // inside the only data frame
    std::fs::write(fx.p("d.kry"), &a).unwrap();
    let o = fx.run(&["t", "--json", "d.kry"]);
    assert_eq!(code(&o), 5, "{}", err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(
        (&v["entries"], &v["salvage"]),
        (
            &Value::Null,
            &json!({"verified": 0, "damaged": 3, "total": 3})
        ),
        "{v}"
    );
    // Not an archive: exit 3, and still one object.
    fx.file("junk", b"not an archive at all, just some bytes to read");
    let o = fx.run(&["t", "--json", "junk"]);
    assert_eq!(code(&o), 3);
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!((&v["ok"], &v["exit_code"]), (&json!(false), &json!(3)));
}

/// The key names of the table under the heading that starts with `heading` in docs/JSON.md,
/// in the order shown: each row's first cell, its backquoted names (`path` / `path_b64`
/// and `uid`, `gid` both count; a `_b64` twin takes its plain name's place).
fn documented_keys(heading: &str) -> Vec<String> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/JSON.md")).unwrap();
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("no section {heading} in docs/JSON.md"));
    let mut keys = Vec::new();
    for row in section.lines().filter(|l| l.starts_with("| `")) {
        let cell = row.split('|').nth(1).unwrap();
        for name in cell.split('`').skip(1).step_by(2) {
            let name = name.strip_suffix("_b64").unwrap_or(name);
            if !keys.iter().any(|k| k == name) {
                keys.push(name.to_string());
            }
        }
    }
    keys
}

/// Asserts that every key of `v` is documented under `heading` and that they come in the
/// documented order.
fn assert_in_documented_order(heading: &str, v: &Value) {
    let doc = documented_keys(heading);
    let at: Vec<(usize, &str)> = keys(v)
        .into_iter()
        .map(|k| {
            let plain = k.strip_suffix("_b64").unwrap_or(k);
            let i = doc.iter().position(|d| d == plain);
            (
                i.unwrap_or_else(|| panic!("{k} is not in {heading}: {doc:?}")),
                k,
            )
        })
        .collect();
    assert!(
        at.windows(2).all(|w| w[0].0 < w[1].0),
        "{heading}: output order {:?}, documented {doc:?}",
        keys(v)
    );
}

#[test]
fn json_keys_come_in_the_order_docs_json_md_shows() {
    // docs/JSON.md promises "keys always come in the order shown"; `info` put `header_fix`
    // and `trailing` before `delta_base` and `signer` while the page listed them after, and
    // `test` put `signer` before `unverified` and `unverified` before `salvage`.
    let fx = Fx::new();
    fx.file("t/a", b"hello");
    std::os::unix::fs::symlink("a", fx.p("t/l")).unwrap();
    fx.ok(&["keygen", "-q", "--sign", "-o", "me"]);
    fx.ok(&["c", "-q", "b.kry", "t"]);
    fx.ok(&["c", "-q", "--sign", "me", "--base", "b.kry", "s.kry", "t"]);
    fx.ok(&["c", "-q", "--sign", "me", "g.kry", "t"]);
    for v in lines(&fx.ok(&["l", "--json", "s.kry"])) {
        assert_in_documented_order("`krypta list --json", &v);
    }
    for a in ["b.kry", "s.kry"] {
        let v: Value = serde_json::from_str(&out(&fx.ok(&["info", "--json", a]))).unwrap();
        assert_in_documented_order("`krypta info --json", &v);
    }
    let v: Value = serde_json::from_str(&out(&fx.ok(&["t", "--json", "g.kry"]))).unwrap();
    assert!(v.get("signer").is_some(), "{v}");
    assert_in_documented_order("`krypta test --json", &v);
    let mut a = std::fs::read(fx.p("b.kry")).unwrap();
    a[100] ^= 0x40; // inside the only data frame
    std::fs::write(fx.p("d.kry"), &a).unwrap();
    let o = fx.run(&["t", "--json", "d.kry"]);
    assert_eq!(code(&o), 5, "{}", err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_in_documented_order("`krypta test --json", &v);
}
