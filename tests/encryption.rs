//! Issue 4 end to end through the `krypta` binary: password (Argon2id, PBKDF2) and key-file
//! round trips, wrong keys and tampering (exit 2, one message), a missing key (exit 1),
//! encrypted streaming both ways, and what an interrupted or failed extraction leaves.
//! Password sources are in `passwords.rs`.
//!
//! KDF costs are the cheapest a writer accepts (Argon2id 8 MiB × 1 pass, PBKDF2 100,000
//! iterations) so the whole file runs in seconds.

mod common;
mod enc_common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{code, krypta};
use enc_common::{ARGON, Fx, auth_line, stderr, with};

/// Flips one byte of the file in place.
fn flip(p: &Path, at: usize) {
    let mut b = std::fs::read(p).unwrap();
    b[at] ^= 0x40;
    std::fs::write(p, b).unwrap();
}

/// The offset of a byte inside the first data frame's ciphertext (after the header).
fn payload_offset(p: &Path) -> usize {
    let b = std::fs::read(p).unwrap();
    let h = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    h + 16 + 20
}

#[test]
fn argon2id_password_round_trip_lists_tests_and_restores_the_tree() {
    let fx = Fx::new();
    fx.ok(&with(
        &["c", "--pass-file", "pw"],
        &with(&ARGON, &["a.kry", "src"]),
    ));
    fx.assert_restores("a.kry", &["--pass-file", "pw"]);
    let t = fx.ok(&["t", "--pass-file", "pw", "a.kry"]);
    assert_eq!(
        stderr(&t),
        "krypta: a.kry: OK (6 entries, 3 files, 120000 bytes, 1 block verified)\n"
    );
    let l = fx.ok(&["l", "--pass-file", "pw", "a.kry"]);
    let names: Vec<&str> = std::str::from_utf8(&l.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().nth(5).unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "src",
            "src/link",
            "src/notes.txt",
            "src/sub",
            "src/sub/blob.bin",
            "src/sub/empty"
        ]
    );
    let info = fx.ok(&["info", "a.kry"]);
    let info = String::from_utf8(info.stdout).unwrap();
    assert!(
        info.contains(
            "encryption:     AES-256-CTR + HMAC-SHA256, 1 stanza(s)\n  argon2id      memory 8192 KiB (8 MiB), iterations 1, lanes 1\n"
        ),
        "{info}"
    );
}

#[test]
fn pbkdf2_password_round_trip_records_its_iterations() {
    let fx = Fx::new();
    fx.ok(&[
        "c",
        "--pass-file",
        "pw",
        "--kdf",
        "pbkdf2",
        "--kdf-iterations",
        "100000",
        "p.kry",
        "src",
    ]);
    fx.assert_restores("p.kry", &["--pass-file", "pw"]);
    let info = String::from_utf8(fx.ok(&["info", "p.kry"]).stdout).unwrap();
    assert!(
        info.contains("1 stanza(s)\n  pbkdf2        HMAC-SHA256, 100000 iterations\n"),
        "{info}"
    );
}

#[test]
fn key_file_round_trip_and_info_names_the_kind() {
    let fx = Fx::new();
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["c", "--keyfile", "k", "k.kry", "src"]);
    fx.assert_restores("k.kry", &["--keyfile", "k"]);
    let info = String::from_utf8(fx.ok(&["info", "k.kry"]).stdout).unwrap();
    assert!(info.contains("1 stanza(s)\n  keyfile\n"), "{info}");
}

#[test]
fn password_and_key_file_stanzas_each_open_the_archive_alone() {
    let fx = Fx::new();
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&with(
        &["c", "--pass-file", "pw", "--keyfile", "k"],
        &with(&ARGON, &["both.kry", "src"]),
    ));
    fx.assert_restores("both.kry", &["--pass-file", "pw"]);
    fx.assert_restores("both.kry", &["--keyfile", "k"]);
    // A wrong password next to the right key file still opens it (each key is tried).
    fx.assert_restores("both.kry", &["--pass-file", "wrong", "--keyfile", "k"]);
    let none = fx.run(&["t", "both.kry"]);
    assert_eq!(code(&none), 1);
    assert_eq!(
        stderr(&none),
        "krypta: both.kry: archive is encrypted (argon2id, keyfile): give --pass-file, --pass-fd, -p or --keyfile\n"
    );
}

/// For one kind of key: a wrong key (for t, l, x) and a tampered archive (t, x) give exit 2
/// and the same stderr line for the same path; `-v` adds which check failed.
fn wrong_key_and_tamper_agree(fx: &Fx, create: &[&str], right: &[&str], wrong: &[&str]) {
    let name = "w.kry";
    let _ = std::fs::remove_file(fx.p(name));
    fx.ok(&with(create, &[name, "src"]));
    let expect = auth_line(Path::new(name));
    for cmd in [&["t"][..], &["l"], &["x", "-o", "wrong-out"]] {
        let o = fx.run(&[cmd, wrong, &[name]].concat());
        assert_eq!(
            (code(&o), stderr(&o)),
            (2, expect.clone()),
            "{cmd:?} {wrong:?}"
        );
        assert!(o.stdout.is_empty(), "{cmd:?} printed {:?}", o.stdout);
    }
    let v = fx.run(&[&["t", "-v"], wrong, &[name]].concat());
    assert_eq!(
        (code(&v), stderr(&v)),
        (
            2,
            format!(
                "{expect}krypta: (verbose) failed check: no recipient stanza opened with the keys given\n"
            )
        )
    );
    // Tampering after the header verified: the key is known to be right, so the message
    // names the damage, not a wrong key (issue 11); exit 2 either way. `x` and `t` go on
    // past it (salvage) and end with their summary; `--fail-fast` stops at the frame.
    let at = payload_offset(&fx.p(name));
    flip(&fx.p(name), at);
    let frame_at = at - 16 - 20;
    let damaged =
        format!("krypta: {name}: archive damaged or modified at byte {frame_at} (frame 0)\n");
    for cmd in [
        &["t", "--fail-fast"][..],
        &["x", "--fail-fast", "-o", "tamper-out"],
    ] {
        let o = fx.run(&[cmd, right, &[name]].concat());
        assert_eq!(
            (code(&o), stderr(&o)),
            (2, damaged.clone()),
            "tampered, {cmd:?}"
        );
    }
    for (cmd, verb) in [
        (&["t"][..], "verified"),
        (&["x", "-f", "-o", "tamper-out"], "restored"),
    ] {
        let o = fx.run(&[cmd, right, &[name]].concat());
        let e = stderr(&o);
        assert_eq!(code(&o), 2, "tampered, {cmd:?}: {e}");
        assert!(
            e.starts_with(&format!(
                "krypta: warning: {name}: archive damaged or modified at byte {frame_at} (frame 0): tag mismatch\n"
            )),
            "{e}"
        );
        let last = e.lines().last().unwrap();
        assert!(
            last.starts_with(&format!("krypta: {name}: {verb} 0 of "))
                && last.ends_with(" damaged"),
            "{e}"
        );
        assert!(!e.contains("wrong key"), "{e}");
    }
    let v = fx.run(&[&["t", "-v", "--fail-fast"], right, &[name]].concat());
    assert_eq!((code(&v), stderr(&v)), (2, damaged.clone()));
    // The only data frame failed: no file of the tampered archive was written.
    let files: Vec<_> = walkdir::WalkDir::new(fx.p("tamper-out"))
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_type().is_dir())
        .map(|e| e.path().to_path_buf())
        .collect();
    assert_eq!(files, Vec::<PathBuf>::new());
}

#[test]
fn wrong_argon2id_password_and_tampering_give_exit_2_and_one_message() {
    let fx = Fx::new();
    let create = with(&["c", "--pass-file", "pw"], &ARGON);
    wrong_key_and_tamper_agree(
        &fx,
        &create,
        &["--pass-file", "pw"],
        &["--pass-file", "wrong"],
    );
}

#[test]
fn wrong_pbkdf2_password_and_tampering_give_exit_2_and_one_message() {
    let fx = Fx::new();
    let create = [
        "c",
        "--pass-file",
        "pw",
        "--kdf",
        "pbkdf2",
        "--kdf-iterations",
        "100000",
    ];
    wrong_key_and_tamper_agree(
        &fx,
        &create,
        &["--pass-file", "pw"],
        &["--pass-file", "wrong"],
    );
}

#[test]
fn wrong_key_file_and_tampering_give_exit_2_and_one_message() {
    let fx = Fx::new();
    fx.ok(&["keygen", "-o", "k"]);
    fx.ok(&["keygen", "-o", "other"]);
    let create = ["c", "--keyfile", "k"];
    wrong_key_and_tamper_agree(&fx, &create, &["--keyfile", "k"], &["--keyfile", "other"]);
    // A key of a kind no stanza opens with (a password for a key-file archive) could not
    // even be tried: the key the archive needs is missing (exit 1, SECURITY.md), and the
    // message names the kind that opens it (the header's stanza kinds are public, as `info`
    // shows). It said "wrong key or password, or the archive was modified" (exit 2).
    std::fs::remove_file(fx.p("w.kry")).unwrap();
    fx.ok(&["c", "--keyfile", "k", "w.kry", "src"]);
    let o = fx.run(&["t", "--pass-file", "pw", "w.kry"]);
    assert_eq!(
        (code(&o), stderr(&o)),
        (
            1,
            "krypta: w.kry: archive is encrypted (keyfile) and no key given is of a kind that \
             opens it: give --keyfile\n"
                .to_string()
        )
    );
}

#[test]
fn missing_key_says_the_archive_is_encrypted_with_exit_1() {
    let fx = Fx::new();
    fx.ok(&with(
        &["c", "--pass-file", "pw"],
        &with(&ARGON, &["a.kry", "src"]),
    ));
    for cmd in [&["t"][..], &["l"], &["x", "-o", "out"], &["x", "--stdout"]] {
        let o = fx.run(&[cmd, &["a.kry"]].concat());
        assert_eq!(code(&o), 1, "{cmd:?}");
        let e = stderr(&o);
        assert_eq!(
            e,
            "krypta: a.kry: archive is encrypted (argon2id): give --pass-file, --pass-fd or -p\n"
        );
        assert!(!e.contains("authentication"), "{e}");
        assert!(o.stdout.is_empty());
    }
    // `info` needs no key.
    fx.ok(&["info", "a.kry"]);
}

/// `krypta c ARGS - -` with `input` on stdin; returns the archive bytes.
fn compress_stream(args: &[&str], input: &[u8], dir: &Path) -> Vec<u8> {
    let args = [&["c"][..], args, &["-", "-"]].concat();
    let o = common::run_stdin_in(dir, &args, input);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    o.stdout
}

/// `krypta x ARGS --stdout -` with `archive` on stdin.
fn extract_stream(args: &[&str], archive: &[u8], dir: &Path) -> Output {
    let mut x = krypta()
        .current_dir(dir)
        .args(["x", "--stdout"])
        .args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = x.stdin.take().unwrap();
    let data = archive.to_vec();
    // The reader may stop early (on a bad frame): a broken pipe here is expected then.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let o = x.wait_with_output().unwrap();
    feeder.join().unwrap();
    o
}

#[test]
fn encrypted_stream_pipes_through_compress_and_extract() {
    let fx = Fx::new();
    let input = common::bytes(300_000, 9, false);
    let dir = fx.dir.path();
    // The shell pipeline of the README, literally.
    std::fs::write(fx.p("in"), &input).unwrap();
    let k = env!("CARGO_BIN_EXE_krypta");
    let o = Command::new("sh")
        .current_dir(dir)
        .env_remove("KRYPTA_PASSWORD")
        .args([
            "-c",
            &format!(
                "'{k}' c --pass-file pw --kdf-memory 8 --kdf-iterations 1 -b 64K - - < in | '{k}' x --pass-file pw --stdout -"
            ),
        ])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(o.stdout == input, "{} bytes out", o.stdout.len());
    let a = compress_stream(
        &with(&["--pass-file", "pw", "-b", "64K"], &ARGON),
        &input,
        dir,
    );
    let x = extract_stream(&["--pass-file", "pw"], &a, dir);
    assert_eq!(code(&x), 0, "{}", stderr(&x));
    assert!(x.stdout == input);
}

#[test]
fn a_flipped_byte_in_an_encrypted_stream_never_reaches_stdout() {
    let fx = Fx::new();
    let dir = fx.dir.path();
    let input = common::bytes(300_000, 10, false);
    let a = compress_stream(
        &with(&["--pass-file", "pw", "-b", "64K"], &ARGON),
        &input,
        dir,
    );
    let h = u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize;
    // Frame starts, from the frame headers (FORMAT.md §2).
    let mut starts = vec![];
    let mut at = h;
    while at + 64 < a.len() {
        starts.push(at);
        at += 48 + u32::from_le_bytes(a[at + 4..at + 8].try_into().unwrap()) as usize;
    }
    assert_eq!(
        starts.len(),
        6,
        "5 data frames of 64 KiB and an index frame"
    );
    // A frame whose tag fails after the header verified is named as damage (issue 11); a
    // sequence number or footer that breaks the rules under valid tags stays the uniform
    // authentication failure.
    let whole = "krypta: warning: -: the index or footer is damaged; every data frame verified, and the 1 entry read front to back was restored\n";
    // Damage inside the stdin entry, from a pipe, is salvaged as the same bytes in a file
    // are (tests/salvage_truncated): the rest of the stream is spooled (here the footer
    // and index, or the footer alone: how far the read-ahead went depends on the number of
    // cores; END is checked below to be a frame's start after the damage), the entry is
    // named, exit 2. With the index in the spooled rest, every data frame read ahead and
    // lost with the pipe is named, and the entry counted (it said "nothing restored: the
    // damage is before the first entry could be read" of damage in frame 0); without it
    // (the index frame was read ahead too), the rest is read front to back.
    let lost = |k: usize, from: usize| -> String {
        (k..5)
            .filter(|&j| starts[j] < from)
            .map(|j| {
                format!(
                    "krypta: warning: -: archive damaged or modified at byte {} (frame {j}): bytes {}..{from} lost (read from the pipe before the damage was found)\n",
                    starts[j], starts[k]
                )
            })
            .collect()
    };
    let with_index = "krypta: warning: -: damaged while reading from a pipe: the rest of the stream (from byte END) was copied to a temporary file and read past the damage with its index; the frames read ahead of it were lost with the pipe, and the index names each entry they held\n";
    let without_index = "krypta: warning: -: damaged while reading from a pipe: the rest of the stream (from byte END) was copied to a temporary file to read past the damage; the frames read ahead of it were lost with the pipe\n";
    let no_index_note = "krypta: warning: -: without the index, entries wholly inside lost bytes cannot be named (their number is unknown), the entries read could not be compared with the index, and files without a stored digest (format 2: under 4 KiB) were checked by their frame tags only\n";
    // What a damaged data frame k gives when the spooled rest starts at `from`.
    let salvaged = |k: usize, from: usize| -> String {
        let s = starts[k];
        let cut = format!(
            "krypta: warning: stdin: not restored: -: archive damaged or modified at byte {s} (frame {k})\n"
        );
        let region = |from: usize| {
            format!(
                "krypta: warning: -: archive damaged or modified at byte {s} (frame {k}): bytes {s}..{from} lost (read from the pipe before the damage was found)\n"
            )
        };
        match (k, from <= starts[5]) {
            (0, true) => format!(
                "{with_index}{}krypta: warning: stdin: not restored: frame 0 at byte {s}: bytes {s}..{from} lost (read from the pipe before the damage was found)\nkrypta: -: restored 0 of 1 entry, 1 damaged\n",
                lost(0, from)
            ),
            (0, false) => format!(
                "{without_index}krypta: warning: -: reading the rest front to back without the index\n{}{no_index_note}krypta: -: nothing restored: the damage is before the first entry could be read\n",
                region(from)
            ),
            (_, true) => format!(
                "{with_index}{cut}{}krypta: -: restored 0 of 1 entry, 1 damaged\n",
                lost(k, from)
            ),
            (_, false) => format!(
                "{without_index}{cut}krypta: warning: -: reading the rest front to back without the index\n{}{no_index_note}krypta: -: restored 0 of 1 entry, 1 damaged\n",
                region(from)
            ),
        }
    };
    for (at, what, want) in [
        // Before the stdin entry's record was read: nothing to restore, but damage all the
        // same, read past as from a file (this said "salvage past the damage needs a
        // seekable archive", exit 2 with the bare error).
        (starts[0] + 16 + 5, "first frame's body", Ok(0)),
        (starts[2] + 16 + 40_000, "third frame's body", Ok(2)),
        (starts[3] - 1, "third frame's tag", Ok(2)),
        // A flipped bit in a head breaks the tag, which covers the head: damage too (this
        // test said "wrong key or password" here; a sequence number that breaks the rules
        // under a valid tag, frames moved, is encryption_tamper's).
        (starts[4] + 8, "fifth frame's sequence number", Ok(4)),
        // Damage in the index or footer alone, all data read and verified: said as from a
        // file, nothing lost with the pipe.
        (
            starts[5] + 20,
            "index frame",
            Err(format!(
                "{whole}krypta: -: archive damaged or modified at byte {} (frame 5)\n",
                starts[5]
            )),
        ),
        // The header verified with this key: a footer whose MAC fails is damage, never
        // "wrong key or password" (issue 11 §1).
        (
            a.len() - 1,
            "footer tag",
            Err(format!(
                "{whole}krypta: -: archive damaged or modified at byte {} (the footer: its MAC does not verify)\n",
                a.len() - 64
            )),
        ),
    ] {
        let mut b = a.clone();
        b[at] ^= 0x04;
        let o = extract_stream(&["--pass-file", "pw"], &b, dir);
        let err = stderr(&o);
        let want = match (want, err.split_once("(from byte ")) {
            (Ok(k), Some((_, rest))) => {
                let from: usize = rest.split(')').next().unwrap().parse().unwrap();
                assert!(
                    starts.contains(&from) && from > at || from == a.len() - 64,
                    "{what}: the spooled rest starts at {from}, not at a frame after {at}"
                );
                salvaged(k, from).replace("END", &from.to_string())
            }
            (Ok(k), None) => format!("a salvage of frame {k}'s damage"),
            (Err(fixed), _) => fixed,
        };
        assert_eq!((code(&o), err), (2, want), "{what} (byte {at})");
        assert!(
            input.starts_with(&o.stdout),
            "{what}: {} bytes on stdout are not a prefix of the input",
            o.stdout.len()
        );
        if at < starts[5] {
            assert!(o.stdout.len() < input.len(), "{what}: all bytes written");
        }
    }
}

/// Every path below `dir` whose file name starts with `.krypta-` (temporary files).
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".krypta-"))
        .map(|e| e.path().to_path_buf())
        .collect()
}

#[test]
fn a_tampered_frame_keeps_earlier_files_and_writes_nothing_of_the_affected_one() {
    let fx = Fx::new();
    fx.ok(&["keygen", "-o", "k"]);
    let first = common::bytes(100_000, 11, false);
    let second = common::bytes(200_000, 12, false);
    fx.file("two/1-first", &first);
    fx.file("two/2-second", &second);
    fx.ok(&["c", "--keyfile", "k", "-b", "64K", "t.kry", "two"]);
    let mut a = std::fs::read(fx.p("t.kry")).unwrap();
    // Data frame 3 holds only bytes of 2-second (stream offset 192 KiB..256 KiB).
    let h = u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize;
    let mut at = h;
    for _ in 0..3 {
        at += 48 + u32::from_le_bytes(a[at + 4..at + 8].try_into().unwrap()) as usize;
    }
    a[at + 16 + 1000] ^= 1;
    std::fs::write(fx.p("t.kry"), &a).unwrap();
    let o = fx.run(&["x", "--fail-fast", "--keyfile", "k", "-o", "out", "t.kry"]);
    assert_eq!(
        (code(&o), stderr(&o)),
        (
            2,
            format!(
                "krypta: t.kry: archive damaged or modified at byte {at} (frame 3) (while reading two/2-second)\n"
            )
        )
    );
    assert!(std::fs::read(fx.p("out/two/1-first")).unwrap() == first);
    assert!(!fx.p("out/two/2-second").exists());
    assert_eq!(temp_files(&fx.p("out")), Vec::<PathBuf>::new());
    // Without --fail-fast the same: 1-first restored, 2-second named, nothing of it written.
    std::fs::remove_dir_all(fx.p("out")).unwrap();
    let o = fx.run(&["x", "--keyfile", "k", "-o", "out", "t.kry"]);
    assert_eq!(
        (code(&o), stderr(&o)),
        (
            2,
            format!(
                "krypta: warning: t.kry: archive damaged or modified at byte {at} (frame 3): tag mismatch\n\
                 krypta: warning: two/2-second: not restored: frame 3 at byte {at}: tag mismatch\n\
                 krypta: t.kry: restored 2 of 3 entries, 1 damaged\n"
            )
        )
    );
    assert!(std::fs::read(fx.p("out/two/1-first")).unwrap() == first);
    assert!(!fx.p("out/two/2-second").exists());
    assert_eq!(temp_files(&fx.p("out")), Vec::<PathBuf>::new());
}

#[test]
fn an_encrypted_archive_shows_no_name_or_content_and_never_repeats() {
    let fx = Fx::new();
    fx.ok(&["keygen", "-o", "k"]);
    let marker = b"PLAINTEXT-MARKER-".repeat(100);
    fx.file("secret-name-7q/inner-name-9z", &marker);
    for name in ["s1.kry", "s2.kry"] {
        // Stored (-s), so an unencrypted archive would hold the bytes as they are.
        fx.ok(&["c", "-s", "--keyfile", "k", name, "secret-name-7q"]);
    }
    let (a, b) = (
        std::fs::read(fx.p("s1.kry")).unwrap(),
        std::fs::read(fx.p("s2.kry")).unwrap(),
    );
    for needle in [
        &b"secret-name-7q"[..],
        b"inner-name-9z",
        b"PLAINTEXT-MARKER",
    ] {
        assert!(!a.windows(needle.len()).any(|w| w == needle));
    }
    // Same input, same key: a fresh archive id and file key, so no 16-byte run repeats
    // after the fixed header fields, except the footer's plaintext fields (offsets, counts,
    // magic: at most two aligned chunks).
    assert_eq!(a.len(), b.len());
    assert_ne!(a[16..32], b[16..32], "archive ids");
    let same = a[48..]
        .chunks(16)
        .zip(b[48..].chunks(16))
        .filter(|(x, y)| x == y)
        .count();
    assert!(same <= 2, "{same} identical 16-byte chunks");
}

#[test]
fn info_escapes_the_comment_and_says_it_is_not_yet_authenticated() {
    // Issue 12 #23: a comment printed raw could clear the screen or forge an "encryption:"
    // line. It is escaped as `list` escapes names, and `info` (which reads without a key)
    // says what the comment's authenticity rests on.
    let fx = Fx::new();
    fx.ok(&["keygen", "-o", "k"]);
    let comment = "nightly\nencryption:     none (BLAKE3 checksums)\x1b[2J\u{202e}evil\\";
    fx.ok(&["c", "--keyfile", "k", "--comment", comment, "k.kry", "src"]);
    fx.ok(&["c", "--comment", comment, "plain.kry", "src"]);
    let escaped =
        "nightly\\nencryption:     none (BLAKE3 checksums)\\x1b[2J\\xe2\\x80\\xaeevil\\\\";
    for (name, note, encryption) in [
        (
            "k.kry",
            "(not yet authenticated: info reads without a key; the header MAC covering the comment is checked once a key opens the archive, e.g. krypta t)",
            "encryption:     AES-256-CTR + HMAC-SHA256, 1 stanza(s)",
        ),
        (
            "plain.kry",
            "(checksummed, not authenticated: anyone can write an unencrypted archive)",
            "encryption:     none (BLAKE3 checksums)",
        ),
    ] {
        let info = String::from_utf8(fx.ok(&["info", name]).stdout).unwrap();
        assert!(
            !info.contains('\x1b') && !info.contains('\u{202e}'),
            "{info:?}"
        );
        let lines: Vec<&str> = info.lines().collect();
        let enc: Vec<&&str> = lines
            .iter()
            .filter(|l| l.starts_with("encryption:"))
            .collect();
        assert_eq!(enc, [&encryption], "{info}");
        let at = lines
            .iter()
            .position(|l| l.starts_with("comment:"))
            .expect("a comment line");
        assert_eq!(lines[at], format!("comment:        {escaped}"));
        assert_eq!(lines[at + 1], format!("                {note}"));
    }
    // The escape is the one `list` uses: it round-trips to the exact comment bytes.
    assert_eq!(
        krypta::fs::unescape_path(escaped).unwrap(),
        comment.as_bytes()
    );
}
