//! Issue 5 end to end through the `krypta` binary: box keys (`keygen --box`, `--pub`),
//! archives to one and to several ML-KEM-768 + X25519 recipients mixed with a password and a
//! key file, wrong identities, keys of the wrong kind, damaged key files and key file modes.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::{code, krypta};

/// A temporary directory holding a small input `in/` and a password file `pw`.
struct Fx {
    dir: tempfile::TempDir,
}

impl Fx {
    fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        common::write(
            &dir.path().join("in/a.txt"),
            &common::bytes(20_000, 7, true),
        );
        common::write(
            &dir.path().join("in/b.bin"),
            &common::bytes(5_000, 8, false),
        );
        common::write(&dir.path().join("pw"), b"hunter2");
        Fx { dir }
    }
    fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.p(name)).unwrap()
    }
    fn run(&self, args: &[&str]) -> Output {
        krypta()
            .current_dir(self.dir.path())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run krypta")
    }
    fn ok(&self, args: &[&str]) -> Output {
        let o = self.run(args);
        assert_eq!(code(&o), 0, "krypta {args:?}: {}", err(&o));
        o
    }
    fn keygen_box(&self, name: &str) {
        self.ok(&["keygen", "--box", "-o", name]);
    }
    /// Extracts with `keys` into a fresh directory and compares with `in/`.
    fn assert_opens(&self, archive: &str, keys: &[&str]) {
        let out = format!("out{}", std::fs::read_dir(self.dir.path()).unwrap().count());
        let args = [&["x", "-q", "-o", &out][..], keys, &[archive]].concat();
        self.ok(&args);
        common::assert_same_tree(&self.p("in"), &self.p(&out).join("in"));
    }
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn auth_line(name: &str) -> String {
    format!(
        "krypta: {name}: authentication failed: no recipient stanza opened with the keys given: wrong key or password, or the archive's header is damaged or modified\n"
    )
}

/// The one non-comment line of a key file.
fn key_line(text: &str) -> &str {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    lines[0]
}

#[test]
fn keygen_box_writes_a_0600_secret_and_a_public_key_and_prints_it() {
    let fx = Fx::new();
    let o = fx.ok(&["keygen", "--box", "-o", "alice"]);
    assert_eq!(
        err(&o),
        "krypta: wrote secret key alice and public key alice.pub\n"
    );
    assert_eq!(mode(&fx.p("alice")), 0o600);
    let public = fx.read("alice.pub");
    assert_eq!(out(&o), public, "stdout is the .pub file");
    assert_eq!(public.lines().count(), 1);
    assert!(public.starts_with("KRYPTA-BOX-PUBLIC-1-"), "{public}");
    assert!(key_line(&fx.read("alice")).starts_with("KRYPTA-BOX-SECRET-1-"));
    // `--pub` prints exactly the line of the .pub file.
    let o = fx.ok(&["keygen", "--pub", "-k", "alice"]);
    assert_eq!(out(&o), public);
    assert_eq!(err(&o), "");
    // Two keygens give two different keys.
    fx.keygen_box("bob");
    assert_ne!(fx.read("bob.pub"), public);
}

#[test]
fn keygen_box_never_overwrites_the_secret_or_the_public_key() {
    let fx = Fx::new();
    fx.keygen_box("alice");
    let (secret, public) = (fx.read("alice"), fx.read("alice.pub"));
    let o = fx.run(&["keygen", "--box", "-o", "alice"]);
    assert_eq!(code(&o), 1);
    assert!(
        err(&o).starts_with("krypta: alice: already exists"),
        "{}",
        err(&o)
    );
    assert_eq!((fx.read("alice"), fx.read("alice.pub")), (secret, public));
    // Only NAME.pub exists: still refused, and it is left alone.
    common::write(&fx.p("carol.pub"), b"mine\n");
    let o = fx.run(&["keygen", "--box", "-o", "carol"]);
    assert_eq!(code(&o), 1);
    assert!(
        err(&o).starts_with("krypta: carol.pub: already exists"),
        "{}",
        err(&o)
    );
    assert_eq!(fx.read("carol.pub"), "mine\n");
    assert!(!fx.p("carol").exists(), "no secret key without its .pub");
}

#[test]
fn keygen_refusal_does_not_suggest_a_force_flag_keygen_lacks() {
    // `krypta keygen` has no -f/--force (by design: a key is never overwritten), so the
    // "already exists" message must not tell the user to use one.
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.ok(&["keygen", "-o", "k"]);
    for args in [
        &["keygen", "--box", "-o", "alice"][..],
        &["keygen", "-o", "k"],
    ] {
        let o = fx.run(args);
        assert_eq!(code(&o), 1);
        assert!(!err(&o).contains("--force"), "{args:?}: {}", err(&o));
        let f = fx.run(&[args, &["-f"]].concat());
        // A usage error (-f does not exist) exits 1 as the README says; this test used to
        // expect clap's default 2, which krypta reserves for authentication failures.
        assert_eq!(code(&f), 1, "usage error: -f does not exist");
    }
}

#[test]
fn one_recipient_round_trip_and_info_without_a_key() {
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.ok(&["c", "-r", "alice.pub", "one.kry", "in"]);
    fx.assert_opens("one.kry", &["-i", "alice"]);
    fx.assert_opens("one.kry", &["--pq-box", "alice"]);
    let info = out(&fx.ok(&["info", "one.kry"]));
    assert!(
        info.contains(
            "encryption:     AES-256-CTR + HMAC-SHA256, 1 stanza(s)\n  pq-box (ML-KEM-768 + X25519): 1 recipient(s)\n"
        ),
        "{info}"
    );
    let o = fx.run(&["t", "one.kry"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: one.kry: archive is encrypted (pq-box (ML-KEM-768 + X25519)): give -i\n"
                .to_string()
        )
    );
}

#[test]
fn three_recipients_each_open_alone_and_a_fourth_does_not() {
    let fx = Fx::new();
    for n in ["a", "b", "c", "d"] {
        fx.keygen_box(n);
    }
    // The recipient as a path, as key text, and with the --pq-box alias.
    let b_text = fx.read("b.pub").trim_end().to_string();
    fx.ok(&[
        "c",
        "-r",
        "a.pub",
        "-r",
        &b_text,
        "--pq-box",
        "c.pub",
        "three.kry",
        "in",
    ]);
    for id in ["a", "b", "c"] {
        fx.assert_opens("three.kry", &["-i", id]);
    }
    let o = fx.run(&["t", "-i", "d", "three.kry"]);
    assert_eq!((code(&o), err(&o)), (2, auth_line("three.kry")));
    // The wrong identity next to a right one: each is tried.
    fx.assert_opens("three.kry", &["-i", "d", "-i", "c"]);
    let info = out(&fx.ok(&["info", "three.kry"]));
    assert!(
        info.contains("3 stanza(s)\n  pq-box (ML-KEM-768 + X25519): 3 recipient(s)\n"),
        "{info}"
    );
    // 1184-byte stanza bodies (FORMAT.md §3.2) in the format-2 header the writer writes
    // (§2: 86 bytes without stanzas, the extension count included): 86 + 3 × (8 + 1184).
    let a = std::fs::read(fx.p("three.kry")).unwrap();
    assert_eq!(
        u32::from_le_bytes(a[12..16].try_into().unwrap()),
        86 + 3 * 1192
    );
}

#[test]
fn password_key_file_and_two_box_recipients_each_open_alone() {
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.keygen_box("bob");
    fx.keygen_box("eve");
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["keygen", "-o", "k2"]);
    fx.ok(&[
        "c",
        "--pass-file",
        "pw",
        "--kdf-memory",
        "8",
        "--kdf-iterations",
        "1",
        "--keyfile",
        "k",
        "-r",
        "alice.pub",
        "-r",
        "bob.pub",
        "all.kry",
        "in",
    ]);
    for keys in [
        &["--pass-file", "pw"][..],
        &["--keyfile", "k"],
        &["-i", "alice"],
        &["-i", "bob"],
    ] {
        fx.assert_opens("all.kry", keys);
    }
    common::write(&fx.p("bad"), b"hunter3");
    for keys in [
        &["--pass-file", "bad"][..],
        &["--keyfile", "k2"],
        &["-i", "eve"],
        &["--pass-file", "bad", "--keyfile", "k2", "-i", "eve"],
    ] {
        let o = fx.run(&[&["t"], keys, &["all.kry"]].concat());
        assert_eq!((code(&o), err(&o)), (2, auth_line("all.kry")), "{keys:?}");
    }
    let info = out(&fx.ok(&["info", "all.kry"]));
    assert!(
        info.contains(
            "encryption:     AES-256-CTR + HMAC-SHA256, 4 stanza(s)\n  argon2id      memory 8192 KiB (8 MiB), iterations 1, lanes 1\n  keyfile\n  pq-box (ML-KEM-768 + X25519): 2 recipient(s)\n"
        ),
        "{info}"
    );
}

#[test]
fn wrong_identity_and_a_tampered_stanza_give_the_same_exit_2_message() {
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.keygen_box("mallory");
    fx.ok(&["c", "-r", "alice.pub", "a.kry", "in"]);
    let wrong = fx.run(&["t", "-i", "mallory", "a.kry"]);
    assert_eq!((code(&wrong), err(&wrong)), (2, auth_line("a.kry")));
    let v = fx.run(&["t", "-v", "-i", "mallory", "a.kry"]);
    assert_eq!(
        err(&v),
        format!(
            "{}krypta: (verbose) failed check: no recipient stanza opened with the keys given\n",
            auth_line("a.kry")
        )
    );
    // One byte of the ML-KEM ciphertext, of the ephemeral X25519 key, of the wrapped key.
    let orig = std::fs::read(fx.p("a.kry")).unwrap();
    for at in [56 + 100, 56 + 1088 + 3, 56 + 1120 + 31, 56 + 1183] {
        let mut b = orig.clone();
        b[at] ^= 0x10;
        std::fs::write(fx.p("a.kry"), &b).unwrap();
        let o = fx.run(&["x", "-o", "o", "-i", "alice", "a.kry"]);
        assert_eq!((code(&o), err(&o)), (2, auth_line("a.kry")), "byte {at}");
    }
    assert!(!fx.p("o/in/a.txt").exists());
}

#[test]
fn a_pq_box_stanza_copied_from_another_archive_does_not_open_this_one() {
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.ok(&["c", "-r", "alice.pub", "a.kry", "in"]);
    fx.ok(&["c", "-r", "alice.pub", "b.kry", "in"]);
    let a = std::fs::read(fx.p("a.kry")).unwrap();
    let b = std::fs::read(fx.p("b.kry")).unwrap();
    assert_eq!(a.len(), b.len());
    let mut x = a.clone();
    x[48..48 + 8 + 1184].copy_from_slice(&b[48..48 + 8 + 1184]);
    std::fs::write(fx.p("a.kry"), &x).unwrap();
    let o = fx.run(&["t", "-v", "-i", "alice", "a.kry"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            2,
            format!(
                "{}krypta: (verbose) failed check: no recipient stanza opened with the keys given\n",
                auth_line("a.kry")
            )
        )
    );
}

#[test]
fn a_public_key_as_identity_and_a_secret_key_as_recipient_are_named() {
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "-r", "alice.pub", "a.kry", "in"]);
    let o = fx.run(&["c", "-r", "alice", "x.kry", "in"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: alice: this is a krypta box secret key, but a krypta box public key is needed here\n"
                .to_string()
        )
    );
    assert!(!fx.p("x.kry").exists());
    let o = fx.run(&["c", "-r", "k", "x.kry", "in"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: k: this is a krypta symmetric key (key file), but a krypta box public key is needed here\n"
                .to_string()
        )
    );
    let o = fx.run(&["t", "-i", "k", "a.kry"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: k: this is a krypta symmetric key (key file), but a krypta box secret key is needed here\n"
                .to_string()
        )
    );
    let o = fx.run(&["c", "--keyfile", "alice.pub", "x.kry", "in"]);
    assert_eq!(code(&o), 1);
    assert!(
        err(&o).ends_with(
            "krypta: alice.pub: this is a krypta box public key, but a krypta symmetric key (key file) is needed here\n"
        ),
        "{}",
        err(&o)
    );
}

#[test]
fn a_public_key_as_identity_is_named_without_a_chmod_warning() {
    // alice.pub is world-readable on purpose; advising `chmod 600 alice.pub` before saying
    // it is the wrong kind of key sends the user the wrong way.
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.ok(&["c", "-r", "alice.pub", "a.kry", "in"]);
    let o = fx.run(&["t", "-i", "alice.pub", "a.kry"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: alice.pub: this is a krypta box public key, but a krypta box secret key is needed here\n"
                .to_string()
        )
    );
}

/// Writes `name` with the key line of `from` changed by `f`, mode 0600.
fn damaged(fx: &Fx, from: &str, name: &str, f: impl Fn(&str) -> String) {
    let text = fx.read(from);
    let line = key_line(&text);
    std::fs::write(fx.p(name), text.replace(line, &f(line))).unwrap();
    std::fs::set_permissions(fx.p(name), std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// `line` with the character at `i` replaced by another character of the alphabet.
fn change_char(line: &str, i: usize) -> String {
    let mut b = line.as_bytes().to_vec();
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

#[test]
fn damaged_box_keys_are_refused_with_a_clear_error() {
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.ok(&["c", "-r", "alice.pub", "a.kry", "in"]);
    let changed = "checksum mismatch: the key text is damaged (a character was changed)";
    for (from, name, how, args) in [
        ("alice", "s1", 40, &["t", "-i", "s1", "a.kry"][..]),
        ("alice", "s2", 100, &["t", "-i", "s2", "a.kry"]),
        ("alice.pub", "p1", 40, &["c", "-r", "p1", "x.kry", "in"]),
        ("alice.pub", "p2", 1500, &["c", "-r", "p2", "x.kry", "in"]),
    ] {
        damaged(&fx, from, name, |l| change_char(l, how.min(l.len() - 1)));
        let o = fx.run(args);
        assert_eq!(
            (code(&o), err(&o)),
            (1, format!("krypta: {name}: {changed}\n")),
            "{from} char {how}"
        );
    }
    // The key line cut short, or the file cut before its key line.
    damaged(&fx, "alice", "s3", |l| l[..l.len() - 10].to_string());
    let o = fx.run(&["t", "-i", "s3", "a.kry"]);
    assert_eq!(code(&o), 1);
    assert!(
        err(&o).starts_with("krypta: s3: the key text is truncated"),
        "{}",
        err(&o)
    );
    damaged(&fx, "alice.pub", "p3", |l| l[..100].to_string());
    let o = fx.run(&["c", "-r", "p3", "x.kry", "in"]);
    assert_eq!(code(&o), 1);
    assert!(
        err(&o).starts_with("krypta: p3: the key text is truncated"),
        "{}",
        err(&o)
    );
    std::fs::write(fx.p("s4"), "# created: 2026-11-30T09:06:25Z\n").unwrap();
    std::fs::set_permissions(fx.p("s4"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = fx.run(&["t", "-i", "s4", "a.kry"]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: s4: no key found: the text is empty or only comments\n".to_string()
        )
    );
    // An empty file and a missing file.
    std::fs::write(fx.p("s5"), "").unwrap();
    std::fs::set_permissions(fx.p("s5"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = fx.run(&["t", "-i", "s5", "a.kry"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    let o = fx.run(&["t", "-i", "nosuchkey", "a.kry"]);
    assert!(matches!(code(&o), 1 | 4), "{}", err(&o));
    assert!(err(&o).contains("nosuchkey"), "{}", err(&o));
    assert!(!fx.p("x.kry").exists());
}

#[test]
fn a_group_readable_secret_key_is_used_with_a_warning() {
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.ok(&["c", "-r", "alice.pub", "a.kry", "in"]);
    std::fs::set_permissions(fx.p("alice"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let o = fx.ok(&["t", "-i", "alice", "a.kry"]);
    let e = err(&o);
    assert!(
        e.starts_with("krypta: warning: alice is readable by group/others (mode 0640)"),
        "{e}"
    );
    assert!(
        e.ends_with("krypta: a.kry: OK (3 entries, 2 files, 25000 bytes, 1 block verified)\n"),
        "{e}"
    );
    // 0600 again: no warning.
    std::fs::set_permissions(fx.p("alice"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = fx.ok(&["t", "-i", "alice", "a.kry"]);
    assert!(!err(&o).contains("warning"), "{}", err(&o));
}

#[test]
fn a_secret_key_given_as_text_on_the_command_line_is_refused() {
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.ok(&["c", "-r", "alice.pub", "a.kry", "in"]);
    let text = key_line(&fx.read("alice")).to_string();
    let o = fx.run(&["t", "-i", &text, "a.kry"]);
    assert_eq!(code(&o), 1);
    assert!(err(&o).starts_with("krypta: <argument>: "), "{}", err(&o));
    assert!(!err(&o).contains(&text[20..]), "the secret is not echoed");
}

#[test]
fn the_same_key_given_twice_gets_one_stanza() {
    // Regression: `-r K -r K` (or one key file under two names) wrote two stanzas.
    let fx = Fx::new();
    fx.keygen_box("alice");
    fx.ok(&["keygen", "-o", "k"]);
    std::fs::copy(fx.p("k"), fx.p("k-copy")).unwrap();
    fx.keygen_box("bob");
    let o = fx.ok(&[
        "c",
        "-r",
        "alice.pub",
        "-r",
        "alice.pub",
        "-r",
        "bob.pub",
        "--keyfile",
        "k",
        "--keyfile",
        "k-copy",
        "d.kry",
        "in",
    ]);
    assert_eq!(
        err(&o).matches("the same key was given twice").count(),
        2,
        "{}",
        err(&o)
    );
    let info = String::from_utf8(fx.ok(&["info", "d.kry"]).stdout).unwrap();
    assert!(info.contains("3 stanza(s)"), "{info}");
    fx.assert_opens("d.kry", &["-i", "alice"]);
    fx.assert_opens("d.kry", &["-i", "bob"]);
    fx.assert_opens("d.kry", &["--keyfile", "k-copy"]);
    // rekey too (it wrote a stanza per key given, duplicates included).
    let o = fx.ok(&[
        "rekey",
        "-i",
        "bob",
        "d.kry",
        "-o",
        "r.kry",
        "-r",
        "bob.pub",
        "-r",
        "bob.pub",
        "--new-keyfile",
        "k",
        "--new-keyfile",
        "k-copy",
    ]);
    assert_eq!(
        err(&o).matches("the same key was given twice").count(),
        2,
        "{}",
        err(&o)
    );
    let info = String::from_utf8(fx.ok(&["info", "r.kry"]).stdout).unwrap();
    assert!(info.contains("2 stanza(s)"), "{info}");
    fx.assert_opens("r.kry", &["-i", "bob"]);
    fx.assert_opens("r.kry", &["--keyfile", "k"]);
}
