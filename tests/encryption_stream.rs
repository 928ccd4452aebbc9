//! Issue 4 end to end through the `krypta` binary, streaming: an encrypted archive piped
//! through `c - -` and `x --stdout -`, and damage met in an encrypted stream read from a
//! pipe, which never reaches stdout and is named as from a file (moved from
//! `encryption.rs`, which had grown past 600 lines).
//!
//! KDF costs are the cheapest a writer accepts (Argon2id 8 MiB × 1 pass) so the file runs
//! in seconds.

mod common;
mod enc_common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{code, krypta};
use enc_common::{ARGON, Fx, stderr, with};

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
                "{without_index}{cut}krypta: warning: -: reading the rest front to back without the index\n{}{no_index_note}krypta: -: restored 0 of at least 1 entry (the index is lost), 1 damaged\n",
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
