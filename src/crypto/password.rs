//! Passwords: the zeroizing [`Secret`] type and reading a password from the terminal, a
//! file, an inherited file descriptor or the `KRYPTA_PASSWORD` environment variable.
//!
//! A password is read as the exact bytes given — UTF-8 as the terminal or file supplies it.
//! **What the KDF is given** ([`kdf_inputs`], [`for_new_archive`]): a password that is valid
//! UTF-8 is normalised to Unicode NFC (UAX #15) first, so "é" typed as U+00E9 (Linux,
//! Windows) and as "e" + U+0301 (macOS input that arrives decomposed) open the same archive,
//! the failure borg and 7-Zip users meet. Bytes that are not UTF-8 are used as they are.
//! Format-1 archives were written with the bytes as typed, so for them a reader also tries
//! the bytes as given and their NFD form when those differ from the NFC form (at most three
//! KDF runs, one for any ASCII password). Only the KDF input changes: the known-answer
//! vectors, which call the KDFs directly, are the same. From a file or descriptor the password is the first line: everything before the first
//! "\n", with one "\r" before that "\n" removed (so "pw\n", "pw\r\n", "pw\n\n" and "pw" all
//! give "pw"); a password therefore never contains a newline. The environment variable is
//! taken whole. At most [`MAX_PASSWORD_LEN`] bytes are read.

use crate::closed_stdio::Stream;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;
use unicode_normalization::UnicodeNormalization;
use zeroize::Zeroizing;

use crate::Error;

/// Environment variable read by [`PasswordSource::Env`].
pub const PASSWORD_ENV: &str = "KRYPTA_PASSWORD";
/// Longest password accepted, bytes; a longer first line is refused rather than cut.
pub const MAX_PASSWORD_LEN: usize = 4096;

/// A secret byte string (password or passphrase), zeroized on drop; `Debug` does not show it.
/// No `PartialEq`: compare secrets only in constant time (`subtle`), as [`read_password`] does.
#[derive(Clone, Default)]
pub struct Secret(Zeroizing<Vec<u8>>);

impl Secret {
    /// Takes ownership of the bytes (no copy is left behind).
    pub fn new(bytes: Vec<u8>) -> Secret {
        Secret(Zeroizing::new(bytes))
    }

    /// The secret bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// True for the empty password.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Secret {
        Secret::new(s.as_bytes().to_vec())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The NFC form of `pw` when it is UTF-8, else `pw` as it is: the KDF input of a password
/// stanza written now.
pub fn for_new_archive(pw: &Secret) -> Secret {
    match std::str::from_utf8(pw.as_bytes()) {
        Ok(text) => Secret::new(
            Zeroizing::new(text.nfc().collect::<String>())
                .as_bytes()
                .to_vec(),
        ),
        Err(_) => pw.clone(),
    }
}

/// The KDF inputs to try for `pw` on an archive of `format_version`, in order, without
/// repeats: the NFC form; for format 1 also the bytes as given and the NFD form (see the
/// module documentation).
pub fn kdf_inputs(pw: &Secret, format_version: u16) -> Vec<Secret> {
    let mut out = vec![for_new_archive(pw)];
    if format_version <= 1 {
        let mut add = |s: Secret| {
            if !out
                .iter()
                .any(|o| bool::from(o.as_bytes().ct_eq(s.as_bytes())))
            {
                out.push(s);
            }
        };
        add(pw.clone());
        if let Ok(text) = std::str::from_utf8(pw.as_bytes()) {
            add(Secret::new(
                Zeroizing::new(text.nfd().collect::<String>())
                    .as_bytes()
                    .to_vec(),
            ));
        }
    }
    out
}

/// The terminal settings saved while a prompt has echo off, for [`restore_terminal`].
static PROMPT_TTY: std::sync::Mutex<Option<rustix::termios::Termios>> = std::sync::Mutex::new(None);

/// Puts the terminal back as it was before a password prompt turned echo off, if one is
/// showing: called by the signal handler (`main.rs`) before it exits on Ctrl-C or SIGTERM, so
/// an interrupted prompt does not leave the shell without echo. Returns whether a prompt was
/// interrupted.
pub fn restore_terminal() -> bool {
    let saved = PROMPT_TTY.lock().ok().and_then(|mut g| g.take());
    let Some(t) = saved else {
        return false;
    };
    if let Ok(tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
        let _ = rustix::termios::tcsetattr(&tty, rustix::termios::OptionalActions::Now, &t);
        let _ = std::io::Write::write_all(&mut &tty, b"\n");
    }
    true
}

/// Runs `f` (a prompt) with the terminal's settings saved for [`restore_terminal`].
fn with_saved_terminal<T>(f: impl FnOnce() -> T) -> T {
    if let Ok(tty) = File::open("/dev/tty")
        && let Ok(t) = rustix::termios::tcgetattr(&tty)
        && let Ok(mut g) = PROMPT_TTY.lock()
    {
        *g = Some(t);
    }
    let r = f();
    if let Ok(mut g) = PROMPT_TTY.lock() {
        *g = None;
    }
    r
}

/// Which password a terminal prompt asks for: it decides the options a refusal without a
/// terminal names, so the way out offered is the one for the password that was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptFor {
    /// The archive's password (`-p/--password`, or no key option at a terminal).
    #[default]
    Archive,
    /// A delta base's password (`--base-password`, or no `--base-*` key at a terminal).
    Base,
    /// `rekey`'s new password (`--new-password`).
    NewPassword,
}

impl PromptFor {
    /// The option that prompts.
    pub fn option(self) -> &'static str {
        match self {
            PromptFor::Archive => "-p/--password",
            PromptFor::Base => "--base-password",
            PromptFor::NewPassword => "--new-password",
        }
    }

    /// The prompt's first line, and its second when the password is asked twice: each says
    /// which password it asks for when it is not the archive's.
    fn labels(self) -> (&'static str, &'static str) {
        match self {
            PromptFor::Archive => ("Password: ", "Repeat password: "),
            PromptFor::Base => ("Password of the base archive: ", "Repeat password: "),
            PromptFor::NewPassword => ("New password: ", "Repeat new password: "),
        }
    }

    /// The options that give the same password without a terminal.
    pub fn alternatives(self) -> &'static str {
        match self {
            PromptFor::Archive => "--pass-file FILE, --pass-fd N or KRYPTA_PASSWORD",
            PromptFor::Base => "--base-pass-file FILE, --base-pass-fd N or KRYPTA_PASSWORD",
            PromptFor::NewPassword => "--new-pass-file FILE",
        }
    }
}

/// Where a password comes from. There is deliberately no variant for a password given as a
/// command-line argument (visible in `ps` and shell history).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordSource {
    /// Ask on the terminal without echo (twice when creating), for the password `PromptFor`
    /// names.
    Prompt(PromptFor),
    /// The first line of this file (`--pass-file`).
    File(PathBuf),
    /// The first line read from this inherited file descriptor (`--pass-fd`).
    Fd(i32),
    /// The `KRYPTA_PASSWORD` environment variable, whole.
    Env,
}

/// Reads a password. `confirm` is true when creating an archive: the prompt then asks twice
/// and both must match, and an empty password is refused from every source. Errors name
/// the file (or `/dev/fd/N`, or the variable) and say what went wrong.
pub fn read_password(src: &PasswordSource, confirm: bool) -> Result<Secret, Error> {
    let secret = match src {
        PasswordSource::Prompt(what) => prompt(*what, confirm)?,
        PasswordSource::File(path) => read_first_line(path)?,
        PasswordSource::Fd(fd) => {
            if *fd < 0 {
                return Err(Error::Usage(format!(
                    "--pass-fd {fd}: not a file descriptor"
                )));
            }
            // A standard stream closed at start is /dev/null now (crate::closed_stdio): no
            // password is there, and an empty one must not be read from it.
            if let Some(s) = [Stream::Stdin, Stream::Stdout, Stream::Stderr]
                .into_iter()
                .find(|s| s.fd() == *fd && crate::closed_stdio::was_closed(*s))
            {
                return Err(Error::StreamClosed {
                    stream: s,
                    what: "there is no password to read from it",
                });
            }
            // Reopening through /dev/fd avoids unsafe code (taking ownership of a raw fd);
            // it works for pipes, sockets' fd entries on Linux and inherited files alike.
            read_first_line(Path::new(&format!("/dev/fd/{fd}")))?
        }
        PasswordSource::Env => match std::env::var_os(PASSWORD_ENV) {
            None => return Err(Error::Usage(format!("{PASSWORD_ENV} is not set"))),
            Some(v) => {
                let bytes = Secret::new(std::os::unix::ffi::OsStringExt::into_vec(v));
                if bytes.as_bytes().len() > MAX_PASSWORD_LEN {
                    return Err(Error::Usage(format!(
                        "{PASSWORD_ENV} is longer than {MAX_PASSWORD_LEN} bytes"
                    )));
                }
                bytes
            }
        },
    };
    if confirm && secret.is_empty() {
        return Err(Error::Usage(format!(
            "{}: empty password refused",
            describe(src)
        )));
    }
    Ok(secret)
}

/// The source as a user would name it, for messages.
fn describe(src: &PasswordSource) -> String {
    match src {
        PasswordSource::Prompt(_) => "password prompt".to_string(),
        PasswordSource::File(p) => crate::fs::shown(p),
        PasswordSource::Fd(fd) => format!("/dev/fd/{fd}"),
        PasswordSource::Env => PASSWORD_ENV.to_string(),
    }
}

/// Prompts on the controlling terminal without echo (rpassword reads `/dev/tty`); without
/// one, the error names the option of `what` and its alternatives.
fn prompt(what: PromptFor, confirm: bool) -> Result<Secret, Error> {
    prompt_as(what.labels(), confirm).map_err(|e| match e {
        PromptError::NoTty(e) => Error::Usage(format!(
            "{} prompts on the terminal, and there is none (/dev/tty: {e}); without a \
             terminal use {}",
            what.option(),
            what.alternatives()
        )),
        PromptError::Other(e) => e,
    })
}

/// The password of the protected secret key file `key` (`crypto::protect`): the first line
/// of `file` (`--key-pass-file`) when given, else asked on the terminal as "Password for
/// secret key KEY: " (twice when `confirm`, for a new key). An empty password is refused
/// for a new key.
pub fn read_key_password(key: &Path, file: Option<&Path>, confirm: bool) -> Result<Secret, Error> {
    let secret = match file {
        Some(f) => read_first_line(f)?,
        None => prompt_as(
            (
                &format!("Password for secret key {}: ", crate::fs::shown(key)),
                "Repeat password: ",
            ),
            confirm,
        )
        .map_err(|e| match e {
            // No terminal: name the option that gives a key password instead.
            PromptError::NoTty(_) => Error::Usage(format!(
                "{}: the key password is asked on the terminal, and there is none; give \
                 --key-pass-file FILE",
                crate::fs::shown(key)
            )),
            PromptError::Other(e) => e,
        })?,
    };
    if confirm && secret.is_empty() {
        return Err(Error::Usage(format!(
            "{}: empty key password refused",
            crate::fs::shown(key)
        )));
    }
    Ok(secret)
}

/// Why a prompt got no password: no terminal to ask on (the caller names the options that
/// give this password without one), or an answer refused.
enum PromptError {
    NoTty(io::Error),
    Other(Error),
}

fn prompt_as(
    (first_label, repeat_label): (&str, &str),
    confirm: bool,
) -> Result<Secret, PromptError> {
    // No terminal at all (cron, CI, a pipe into ssh) is a usage problem with a way out, not
    // an I/O failure to puzzle over.
    let tty = |e: std::io::Error| {
        if e.kind() == io::ErrorKind::Interrupted {
            // Only the signals `main.rs` catches (SIGINT, SIGTERM, SIGHUP) interrupt the read:
            // its signal thread is restoring the terminal and about to exit with 128 + the
            // signal. Give it that moment rather than racing it to a misleading exit 1.
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        PromptError::NoTty(e)
    };
    let ask = |label: &str| {
        with_saved_terminal(|| rpassword::prompt_password(label))
            .map(|s| Secret::new(Zeroizing::new(s).as_bytes().to_vec()))
            .map_err(tty)
    };
    let first = ask(first_label)?;
    if confirm {
        let refused = |m: &str| PromptError::Other(Error::Usage(m.to_string()));
        if first.is_empty() {
            return Err(refused("empty password refused"));
        }
        let again = ask(repeat_label)?;
        if !bool::from(first.as_bytes().ct_eq(again.as_bytes())) {
            return Err(refused("the two passwords do not match"));
        }
    }
    Ok(first)
}

/// Reads the first line of `path` (see the module doc), at most [`MAX_PASSWORD_LEN`] bytes
/// before the newline.
fn read_first_line(path: &Path) -> Result<Secret, Error> {
    crate::closed_stdio::require_input_path(path)?;
    let file = File::open(path).map_err(|e| Error::io(path, "open password file", e))?;
    first_line(file).map_err(|e| match e {
        LineError::Io(e) => Error::io(path, "read password file", e),
        LineError::TooLong => Error::Usage(format!(
            "{}: first line is longer than {MAX_PASSWORD_LEN} bytes",
            crate::fs::shown(path)
        )),
    })
}

/// Why a first line could not be read.
#[derive(Debug)]
enum LineError {
    Io(io::Error),
    TooLong,
}

/// The first line of `reader` with its line ending removed. Reads in pieces and stops at
/// the piece holding the first "\n" (or at EOF, or past the limit), so a pipe left open by
/// its writer does not block once the line has arrived.
fn first_line(mut reader: impl Read) -> Result<Secret, LineError> {
    // Room for the limit plus the "\r\n" that is removed, plus one byte to tell "exactly the
    // limit" from "too long".
    let cap = MAX_PASSWORD_LEN + 3;
    let mut buf = Zeroizing::new(Vec::with_capacity(256));
    let mut piece = Zeroizing::new([0u8; 256]);
    while buf.len() < cap {
        let n = match reader.read(&mut piece[..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(LineError::Io(e)),
        };
        buf.extend_from_slice(&piece[..n]);
        if piece[..n].contains(&b'\n') {
            break;
        }
    }
    let line_end = buf.iter().position(|&b| b == b'\n');
    let mut len = line_end.unwrap_or(buf.len());
    if line_end.is_some() && len > 0 && buf[len - 1] == b'\r' {
        len -= 1;
    }
    if len > MAX_PASSWORD_LEN {
        return Err(LineError::TooLong);
    }
    Ok(Secret::new(buf[..len].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn line(input: &[u8]) -> Vec<u8> {
        first_line(input).unwrap().as_bytes().to_vec()
    }

    #[test]
    fn first_line_removes_one_line_ending_and_ignores_later_lines() {
        assert_eq!(line(b"pw\n"), b"pw");
        assert_eq!(line(b"pw\r\n"), b"pw");
        assert_eq!(line(b"pw\n\n"), b"pw");
        assert_eq!(line(b"pw"), b"pw");
        assert_eq!(
            line(b"pw\r"),
            b"pw\r",
            "a lone CR without LF is part of the password"
        );
        assert_eq!(line(b"pw\r\r\n"), b"pw\r");
        assert_eq!(line(b" pw \nsecond"), b" pw ", "spaces are kept");
        assert_eq!(line(b"\n"), b"");
        assert_eq!(line(b""), b"");
    }

    #[test]
    fn first_line_limit_is_exact() {
        let mut ok = vec![b'a'; MAX_PASSWORD_LEN];
        ok.extend_from_slice(b"\r\n");
        assert_eq!(line(&ok).len(), MAX_PASSWORD_LEN);
        let long = vec![b'a'; MAX_PASSWORD_LEN + 1];
        assert!(matches!(first_line(&long[..]), Err(LineError::TooLong)));
        let huge = vec![b'a'; 1 << 20];
        assert!(matches!(first_line(&huge[..]), Err(LineError::TooLong)));
    }

    #[test]
    fn pass_file_keeps_non_ascii_bytes_unnormalised() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        std::fs::File::create(&path)
            .unwrap()
            .write_all("pässwörd-密码\r\n".as_bytes())
            .unwrap();
        let s = read_password(&PasswordSource::File(path), true).unwrap();
        assert_eq!(s.as_bytes(), "pässwörd-密码".as_bytes());
        let decomposed = "pa\u{308}sswo\u{308}rd-密码";
        assert_ne!(
            s.as_bytes(),
            decomposed.as_bytes(),
            "no NFC/NFD normalisation"
        );
    }

    #[test]
    fn empty_password_is_refused_only_when_creating() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        std::fs::write(&path, b"\n").unwrap();
        let e = read_password(&PasswordSource::File(path.clone()), true).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: empty password refused", path.display())
        );
        assert!(
            read_password(&PasswordSource::File(path), false)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn missing_pass_file_error_names_the_file() {
        let e = read_password(
            &PasswordSource::File("/nonexistent/krypta-pw".into()),
            false,
        )
        .unwrap_err();
        assert!(matches!(
            &e,
            Error::Io {
                op: "open password file",
                ..
            }
        ));
        assert!(
            e.to_string()
                .starts_with("/nonexistent/krypta-pw: open password file: ")
        );
    }

    #[test]
    fn pass_fd_reads_an_inherited_descriptor() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        std::fs::write(&path, b"from-fd\nrest").unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let s = read_password(&PasswordSource::Fd(f.as_raw_fd()), false).unwrap();
        assert_eq!(s.as_bytes(), b"from-fd");
        assert!(matches!(
            read_password(&PasswordSource::Fd(-1), false),
            Err(Error::Usage(_))
        ));
    }

    #[test]
    fn kdf_input_is_nfc_and_format_1_also_tries_the_bytes_given_and_nfd() {
        let nfc = "p\u{e4}ss";
        let nfd = "pa\u{308}ss";
        let bytes =
            |v: Vec<Secret>| -> Vec<Vec<u8>> { v.iter().map(|s| s.as_bytes().to_vec()).collect() };
        assert_eq!(
            for_new_archive(&Secret::from(nfd)).as_bytes(),
            nfc.as_bytes()
        );
        assert_eq!(
            for_new_archive(&Secret::from(nfc)).as_bytes(),
            nfc.as_bytes()
        );
        assert_eq!(
            bytes(kdf_inputs(&Secret::from(nfd), 1)),
            vec![nfc.as_bytes().to_vec(), nfd.as_bytes().to_vec()]
        );
        assert_eq!(
            bytes(kdf_inputs(&Secret::from(nfc), 1)),
            vec![nfc.as_bytes().to_vec(), nfd.as_bytes().to_vec()]
        );
        assert_eq!(
            bytes(kdf_inputs(&Secret::from(nfd), 2)),
            vec![nfc.as_bytes().to_vec()]
        );
        assert_eq!(
            bytes(kdf_inputs(&Secret::from("ascii"), 1)),
            vec![b"ascii".to_vec()]
        );
        let raw = Secret::new(b"caf\xff".to_vec());
        assert_eq!(bytes(kdf_inputs(&raw, 1)), vec![b"caf\xff".to_vec()]);
        assert_eq!(for_new_archive(&raw).as_bytes(), b"caf\xff");
    }

    #[test]
    fn secret_debug_is_redacted() {
        assert_eq!(
            format!("{:?}", Secret::from("hunter2")),
            "Secret(<redacted>)"
        );
    }
}
