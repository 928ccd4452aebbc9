//! `krypta keygen`: key files, box keypairs and signing keypairs, optionally with the secret
//! key protected by a password (`--protect`, `crypto::protect`).
//!
//! Decision on what goes to stdout (README, "Passwords and keys"): stdout carries exactly one
//! key line, what a script would capture. With `-o -` that is the secret key (the public key of
//! `--box`/`--sign` goes to stderr as `Public key: ...`, as `age-keygen -o -` does); with
//! `-o NAME` it is the public key of `--box` and of `--sign`, the line of `NAME.pub` (a key
//! file made by plain `-o FILE` has no public part: nothing); `--pub -k` prints it too. The
//! messages for people go to stderr. `age-keygen -o FILE` prints its public key to stderr
//! instead; krypta has printed the box public key on stdout since `keygen --box` existed, and
//! `PUB=$(krypta keygen --box -o k)` scripts rely on it, so the signing keypair was made to
//! follow that rule (it printed nothing on stdout) rather than the box keypair changed.

use super::args::*;
use krypta::crypto::kdf::Kdf;
use krypta::crypto::password::{Secret, read_key_password};
use krypta::{Error, Result};

/// Why `keygen --pub -k` did not use `--key-pass-file`.
const NOT_PROTECTED: &str = "the secret key given with -k is not password-protected";

pub(crate) fn keygen(a: KeygenArgs, quiet: bool) -> Result<u8> {
    // A key line for stdout (module doc) and stdout closed when krypta started: refused
    // before a key is made, so no key file exists whose printed half went nowhere.
    let secret_to_stdout = a.output.as_deref().is_some_and(|o| o.as_os_str() == "-");
    if a.public || secret_to_stdout || (!quiet && (a.box_key || a.sign_key)) {
        krypta::closed_stdio::require(
            krypta::closed_stdio::Stream::Stdout,
            if a.public { "" } else { "no key was made" },
        )?;
    }
    if a.public {
        let key = a
            .key
            .as_ref()
            .ok_or_else(|| Error::Usage("--pub needs -k SECRET".into()))?;
        let pass = super::keys::KeyPassFile::new("--key-pass-file", a.key_pass_file.as_deref());
        let mut pw = pass.source();
        // A signing secret key, told from a box key by its key line's prefix.
        let is_sign = std::fs::read(key)
            .map(|b| b.windows(19).any(|w| w == b"KRYPTA-SIGN-SECRET-"))
            .unwrap_or(false);
        if is_sign {
            let sk = super::keys::secret_key_warned(
                key,
                krypta::crypto::signkey::load_signing_secret_with(key, &mut pw),
            )?;
            drop(pw);
            pass.warn_if_unused(NOT_PROTECTED);
            super::write_stdout(&format!(
                "{}\n",
                krypta::crypto::signkey::public_key_text(&sk.public())
            ))?;
            return Ok(0);
        }
        let sk = super::keys::secret_key_warned(
            key,
            krypta::crypto::boxkey::load_secret_with(key, &mut pw),
        )?;
        drop(pw);
        pass.warn_if_unused(NOT_PROTECTED);
        super::write_stdout(&format!(
            "{}\n",
            krypta::crypto::boxkey::public_key_text(&sk.public_key())
        ))?;
        return Ok(0);
    }
    let out = a
        .output
        .clone()
        .ok_or_else(|| Error::Usage("keygen needs -o FILE (or -o - for stdout)".into()))?;
    if a.protect && !a.box_key && !a.sign_key {
        return Err(Error::Usage(
            "--protect applies to the secret key of --box or --sign (a key file is the key itself)"
                .into(),
        ));
    }
    if !a.protect {
        super::keys::KeyPassFile::new("--key-pass-file", a.key_pass_file.as_deref())
            .warn_if_unused("it is the password of --protect or of a protected --pub -k key");
    }
    let kdf = protect_kdf(&a)?;
    let password = match kdf {
        Some(_) if a.key_pass_file.is_none() && !super::keys::at_terminal() => {
            return Err(Error::Usage(format!(
                "{}: the key password is asked on the terminal, and there is none; give \
                 --key-pass-file FILE",
                krypta::fs::shown(&out)
            )));
        }
        Some(_) => Some(read_key_password(&out, a.key_pass_file.as_deref(), true)?),
        None => None,
    };
    let protect = password.as_ref().zip(kdf);
    if a.sign_key {
        return sign_keypair(&out, protect, quiet);
    }
    if out.as_os_str() == "-" {
        return to_stdout(a.box_key, protect, quiet);
    }
    if a.box_key {
        let pk = krypta::crypto::boxkey::generate_box_keypair_protected(&out, protect)
            .map_err(no_force_hint)?;
        if !quiet {
            krypta::to_stderr!(
                "krypta: wrote secret key {}{} and public key {}.pub",
                krypta::fs::shown(&out),
                if protect.is_some() {
                    " (password-protected)"
                } else {
                    ""
                },
                krypta::fs::shown(&out)
            );
            super::write_stdout(&format!(
                "{}\n",
                krypta::crypto::boxkey::public_key_text(&pk)
            ))?;
        }
    } else {
        krypta::crypto::keyfile::generate_keyfile(&out).map_err(no_force_hint)?;
        if !quiet {
            krypta::to_stderr!(
                "krypta: wrote key file {} (mode 0600); keep a copy: without it the archives cannot be opened",
                krypta::fs::shown(&out)
            );
        }
    }
    Ok(0)
}

/// The Argon2id parameters of `--protect` (`--kdf-memory`, `--kdf-iterations`, else the
/// defaults of a password stanza), checked against the same bounds; `None` without it.
fn protect_kdf(a: &KeygenArgs) -> Result<Option<Kdf>> {
    if !a.protect {
        return Ok(None);
    }
    let k = super::kdf_args::kdf_from_args(None, a.kdf_memory.as_deref(), a.kdf_iterations)?;
    Ok(Some(k))
}

/// `keygen -o -`, as `age-keygen -o -`: the secret key file's text on stdout (for a pipe, a
/// secrets manager or `> file` with a umask of the caller's choosing); for `--box` the
/// public key on stderr as `Public key: ...`, so the secret stream holds nothing else.
fn to_stdout(box_key: bool, protect: Option<(&Secret, Kdf)>, quiet: bool) -> Result<u8> {
    let text = if box_key {
        let (secret, pk) = krypta::crypto::boxkey::new_box_keypair_text_protected(protect)?;
        if !quiet {
            krypta::to_stderr!(
                "Public key: {}",
                krypta::crypto::boxkey::public_key_text(&pk)
            );
        }
        secret
    } else {
        krypta::crypto::keyfile::new_keyfile_text()?
    };
    write_stdout(text.as_bytes())
}

fn write_stdout(b: &[u8]) -> Result<u8> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(b)
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("<stdout>", "write", e))?;
    Ok(0)
}

/// keygen never overwrites and has no `--force`: say so instead of suggesting one, and say
/// what is there when it is not a regular file (a dangling symbolic link "already exists"
/// only to `lstat`: the user sees nothing there).
fn no_force_hint(e: Error) -> Error {
    match e {
        Error::Exists { path } => Error::Usage(format!(
            "{}: {}",
            krypta::fs::shown(&path),
            existing_target(&path)
        )),
        e => e,
    }
}

/// Why keygen refuses the existing `path`, by what it is (never following a link).
fn existing_target(path: &std::path::Path) -> String {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return "already exists; keygen never overwrites a key (move it away first)".into();
    };
    let t = meta.file_type();
    let what = if t.is_symlink() {
        return match std::fs::metadata(path) {
            Err(_) => "is a symbolic link (dangling): a key is never written through a link; \
                       remove it or choose another name"
                .into(),
            Ok(m) => format!(
                "is a symbolic link (to {}): a key is never written through a link; remove \
                 it or choose another name",
                kind(&m.file_type())
            ),
        };
    } else if t.is_file() {
        return "already exists; keygen never overwrites a key (move it away first)".into();
    } else {
        kind(&t)
    };
    format!(
        "is {what}: keygen writes a key only to a new file; choose a file name that does not \
         exist"
    )
}

/// "a directory", "a named pipe (FIFO)", … for messages.
fn kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a regular file"
    }
}

/// `keygen --sign -o NAME`: a signing keypair (NAME 0600, NAME.pub); `-o -` prints the secret
/// key file's text on stdout and the public key on stderr, as for `--box`.
fn sign_keypair(out: &std::path::Path, protect: Option<(&Secret, Kdf)>, quiet: bool) -> Result<u8> {
    use krypta::crypto::sign::fingerprint_hex;
    use krypta::crypto::signkey;
    if out.as_os_str() == "-" {
        let (secret, pk) = signkey::new_signing_keypair_text(protect)?;
        if !quiet {
            krypta::to_stderr!("Public key: {}", signkey::public_key_text(&pk));
        }
        return write_stdout(secret.as_bytes());
    }
    let pk = signkey::generate_signing_keypair(out, protect).map_err(no_force_hint)?;
    if !quiet {
        krypta::to_stderr!(
            "krypta: wrote signing key {}{} and public key {}.pub (fingerprint {})",
            krypta::fs::shown(out),
            if protect.is_some() {
                " (password-protected)"
            } else {
                ""
            },
            krypta::fs::shown(out),
            fingerprint_hex(&pk.fingerprint())
        );
        super::write_stdout(&format!("{}\n", signkey::public_key_text(&pk)))?;
    }
    Ok(0)
}
