//! The `--json` output of `list`, `info` and `test`: one stable schema, documented field by
//! field in docs/JSON.md (which this module must agree with; the tests in
//! `tests/cli_json.rs` parse every field).
//!
//! Decisions:
//! - `list --json` writes one object per entry and line (JSON Lines), flushed as it goes, so
//!   `krypta l --json a.kry | jq` streams and a consumer can stop early; `info` and `test`
//!   write one object.
//! - Names are raw bytes. A name that is valid UTF-8 is a `"path"` string (JSON escapes
//!   control characters, so a newline in a name cannot break the line); any other name is a
//!   `"path_b64"` string instead: standard base64 (RFC 4648 §4, padded) of the exact bytes.
//!   Exactly one of the two is present, and both decode back to the stored bytes. Link
//!   targets and the header comment follow the same rule (`link`/`link_b64`,
//!   `comment`/`comment_b64`).
//! - Times are UTC RFC 3339 strings with nanoseconds when non-zero (`mtime`), plus the whole
//!   seconds as an integer (`mtime_unix`), so no consumer depends on the lister's zone.
//! - A digest the archive does not store (non-files; in format 2 small files) is `null`, not
//!   omitted: every object of a kind has the same keys.
//! - Every object carries `"schema": 1`; a change that removes or retypes a field raises it,
//!   new fields may be added without.

use std::io::Write;

use base64::Engine;
use serde_json::{Map, Value, json};

use super::clock::rfc3339_utc;
use super::entries::EntryView;
use super::show::hex;
use krypta::format::EntryKind;
use krypta::{Error, Result};

/// The schema version every object carries.
pub const SCHEMA: u64 = 1;

/// Adds `key` (UTF-8) or `key_b64` (anything else) for `bytes`.
pub fn put_bytes(obj: &mut Map<String, Value>, key: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => obj.insert(key.to_string(), Value::String(s.to_string())),
        Err(_) => obj.insert(
            format!("{key}_b64"),
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
        ),
    };
}

/// The kind as JSON names it.
pub fn kind_name(k: EntryKind) -> &'static str {
    match k {
        EntryKind::File => "file",
        EntryKind::Dir => "dir",
        EntryKind::Symlink => "symlink",
        EntryKind::Hardlink => "hardlink",
    }
}

/// One `list --json` object.
pub fn entry_object(e: &EntryView<'_>, stored: u64) -> Value {
    let mut o = Map::new();
    o.insert("schema".into(), json!(SCHEMA));
    put_bytes(&mut o, "path", &e.meta.path);
    o.insert("type".into(), json!(kind_name(e.meta.kind)));
    o.insert("size".into(), json!(e.size));
    o.insert("stored".into(), json!(stored));
    o.insert("mode".into(), json!(e.meta.mode & 0o7777));
    o.insert("uid".into(), json!(e.meta.uid));
    o.insert("gid".into(), json!(e.meta.gid));
    for (key, name) in [("user", &e.meta.user), ("group", &e.meta.group)] {
        if let Some(n) = name {
            put_bytes(&mut o, key, n);
        }
    }
    o.insert(
        "mtime".into(),
        json!(rfc3339_utc(e.meta.mtime.secs, e.meta.mtime.nanos)),
    );
    o.insert("mtime_unix".into(), json!(e.meta.mtime.secs));
    o.insert(
        "digest".into(),
        e.digest.map_or(Value::Null, |d| json!(hex(&d))),
    );
    if matches!(e.meta.kind, EntryKind::Symlink | EntryKind::Hardlink) {
        put_bytes(&mut o, "link", &e.meta.link);
    }
    Value::Object(o)
}

/// Writes the `list --json` lines.
pub fn print_entries(views: &[EntryView<'_>], stored: &[u64]) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let w = |e: std::io::Error| Error::io("<stdout>", "write", e);
    for (v, &s) in views.iter().zip(stored) {
        serde_json::to_writer(&mut out, &entry_object(v, s))
            .map_err(|e| Error::io("<stdout>", "write", e.into()))?;
        out.write_all(b"\n").map_err(w)?;
    }
    out.flush().map_err(w)
}

/// The `info --json` object.
pub fn info_object(path: &std::path::Path, f: &krypta::archive::reader::ArchiveFacts) -> Value {
    use krypta::format::Stanza;
    let h = &f.header;
    let mut o = Map::new();
    o.insert("schema".into(), json!(SCHEMA));
    put_bytes(
        &mut o,
        "archive",
        std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()),
    );
    o.insert("format_version".into(), json!(h.version as u16));
    o.insert("created".into(), json!(rfc3339_utc(h.created, 0)));
    o.insert("created_unix".into(), json!(h.created));
    o.insert("archive_id".into(), json!(hex(&h.archive_id)));
    o.insert(
        "level".into(),
        if h.level == 0 {
            Value::Null
        } else {
            json!(h.level)
        },
    );
    o.insert("block_size".into(), json!(h.block_size));
    o.insert("encrypted".into(), json!(!h.stanzas.is_empty()));
    let stanzas: Vec<Value> = h
        .stanzas
        .iter()
        .map(|s| match s {
            Stanza::Argon2id { m_kib, t, p, .. } => {
                json!({"type": "argon2id", "memory_kib": m_kib, "iterations": t, "lanes": p})
            }
            Stanza::Pbkdf2 { iterations, .. } => {
                json!({"type": "pbkdf2", "iterations": iterations})
            }
            Stanza::KeyFile { .. } => json!({"type": "keyfile"}),
            Stanza::PqBox { .. } => json!({"type": "pq-box"}),
            Stanza::Unknown { kind, body } => {
                json!({"type": "unknown", "kind": kind, "bytes": body.len()})
            }
        })
        .collect();
    o.insert("stanzas".into(), Value::Array(stanzas));
    if h.comment.is_empty() {
        o.insert("comment".into(), Value::Null);
    } else {
        put_bytes(&mut o, "comment", h.comment.as_bytes());
    }
    o.insert("comment_authenticated".into(), json!(false));
    o.insert("size".into(), f.size.map_or(Value::Null, |s| json!(s)));
    let (data, index) = f.footer.as_ref().map_or((Value::Null, Value::Null), |ft| {
        (json!(ft.data_frames), json!(ft.index_frames))
    });
    o.insert("data_blocks".into(), data);
    o.insert("index_blocks".into(), index);
    o.insert(
        "recovery".into(),
        match (h.recovery_percent(), &f.recovery) {
            (_, Some(r)) => {
                let p = r.located.layout.params;
                json!({
                    "percent": p.percent,
                    "found": true,
                    "protected_bytes": p.protected_len,
                    "section_bytes": r.located.layout.file_len - p.protected_len,
                    "shard_size": p.shard_size,
                    "segment_bytes": u64::from(p.shard_size) * u64::from(p.shards_per_segment),
                    "protected_blake3": hex(&p.blake3),
                })
            }
            (Some(percent), None) => json!({"percent": percent, "found": false}),
            (None, None) => Value::Null,
        },
    );
    o.insert(
        "header_fix".into(),
        f.header_fix
            .map_or(Value::Null, |x| json!({"byte": x.byte, "bit": x.bit})),
    );
    o.insert(
        "trailing".into(),
        f.trailing.map_or(
            Value::Null,
            |(at, bytes, zeros)| json!({"at": at, "bytes": bytes, "zeros": zeros}),
        ),
    );
    if let Some((id, binding)) = h.delta_base() {
        o.insert(
            "delta_base".into(),
            json!({
                "archive_id": krypta::archive::reader::base_hex(&id),
                "binding": krypta::archive::reader::base_hex(&binding),
            }),
        );
    }
    if let Some(fp) = h.signer() {
        o.insert(
            "signer".into(),
            json!(krypta::crypto::sign::fingerprint_hex(&fp)),
        );
        o.insert(
            "signature".into(),
            match &f.signature {
                Some(Ok(())) => json!("verified"),
                Some(Err(why)) => json!(format!("refused: {why}")),
                None => json!("not checked"),
            },
        );
    }
    Value::Object(o)
}

/// The `test --json` object of a run that verified.
pub fn test_ok(path: &std::path::Path, s: &krypta::archive::reader::ScanSummary) -> Value {
    let mut o = Map::new();
    o.insert("schema".into(), json!(SCHEMA));
    put_bytes(
        &mut o,
        "archive",
        std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()),
    );
    o.insert("ok".into(), json!(true));
    o.insert("exit_code".into(), json!(0));
    o.insert("error".into(), Value::Null);
    o.insert("entries".into(), json!(s.entries));
    o.insert("files".into(), json!(s.files));
    o.insert("bytes".into(), json!(s.bytes));
    o.insert("blocks".into(), json!(s.frames));
    o.insert(
        "unverified".into(),
        Value::Array(s.unverified.iter().map(|p| json!(p)).collect()),
    );
    // Keys present only sometimes come last, in docs/JSON.md's order.
    if let Some(fp) = &s.signer {
        o.insert(
            "signer".into(),
            json!(krypta::crypto::sign::fingerprint_hex(fp)),
        );
    }
    Value::Object(o)
}

/// The `test --json` object of a run that failed (`e`): `error` is the message printed on
/// stderr, `exit_code` the process's; the counts are those verified when every entry was
/// (exit 7, "damaged but repairable"), else `null`; `salvage` counts the entries of a run
/// that went on past damage.
pub fn test_failed(
    path: &std::path::Path,
    e: &krypta::Error,
    error: &str,
    exit_code: i32,
) -> Value {
    let mut o = Map::new();
    o.insert("schema".into(), json!(SCHEMA));
    put_bytes(
        &mut o,
        "archive",
        std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()),
    );
    o.insert("ok".into(), json!(false));
    o.insert("exit_code".into(), json!(exit_code));
    o.insert("error".into(), json!(error));
    match e.root() {
        krypta::Error::Repairable { summary, .. } => {
            o.insert("entries".into(), json!(summary.entries));
            o.insert("files".into(), json!(summary.files));
            o.insert("bytes".into(), json!(summary.bytes));
            o.insert("blocks".into(), json!(summary.frames));
            o.insert(
                "unverified".into(),
                Value::Array(summary.unverified.iter().map(|p| json!(p)).collect()),
            );
        }
        _ => {
            for k in ["entries", "files", "bytes", "blocks", "unverified"] {
                o.insert(k.into(), Value::Null);
            }
        }
    }
    let salvage = match e.root() {
        krypta::Error::Salvaged {
            restored,
            total,
            damaged,
            ..
        } => json!({"verified": restored, "damaged": damaged, "total": total}),
        _ => Value::Null,
    };
    o.insert("salvage".into(), salvage);
    Value::Object(o)
}

/// Prints one object and a newline.
pub fn print_object(v: &Value) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    serde_json::to_writer(&mut out, v).map_err(|e| Error::io("<stdout>", "write", e.into()))?;
    out.write_all(b"\n")
        .map_err(|e| Error::io("<stdout>", "write", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_names_are_strings_and_other_bytes_base64() {
        let mut o = Map::new();
        put_bytes(&mut o, "path", "a\nb é".as_bytes());
        put_bytes(&mut o, "link", b"caf\xff");
        assert_eq!(
            Value::Object(o).to_string(),
            r#"{"path":"a\nb é","link_b64":"Y2Fm/w=="}"#
        );
    }
}
