//! Box key files: writing a new pq-box key pair (`NAME`, secret, mode 0600; `NAME.pub`,
//! public) and reading secret and public box keys back from files or key text.
//!
//! Both files are text in the typed, checksummed key-text format of `crypto::keytext`; lines
//! starting with `#` are comments. A secret key file holds three lines:
//!
//! ```text
//! # created: 2026-11-30T08:50:00Z
//! # public key: KRYPTA-BOX-PUBLIC-1-...
//! KRYPTA-BOX-SECRET-1-...
//! ```
//!
//! and `NAME.pub` holds the public key line alone. A key of another kind, one changed
//! character or a truncated line gives a [`Error::BadKeyFile`] naming the file and the
//! problem; nothing here panics on any file content.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use zeroize::Zeroizing;

use super::pqbox::{PublicKey, SECRET_KEY_LEN, SecretKey};
use crate::Error;

use super::keytext::{KeyKind, decode, encode};

/// Suffix appended to a secret key's path to name its public key file.
pub const PUBLIC_KEY_SUFFIX: &str = ".pub";
/// Largest key file read, bytes (a public key line is about 1.7 KB; anything far larger is
/// not a key file, and reading stops there).
pub const MAX_KEY_FILE_LEN: u64 = 64 * 1024;
/// The prefix every krypta key text starts with; an argument starting with it is key text,
/// not a path.
pub const KEY_TEXT_PREFIX: &str = "KRYPTA-";
/// Path shown in errors about key text given inline as an argument.
pub const INLINE_KEY_PATH: &str = "<argument>";

/// A fresh box key pair: the contents of its secret key file (`# created:` and
/// `# public key:` comment lines, then the secret key line) and the public key. What
/// [`generate_box_keypair`] writes and `krypta keygen --box -o -` prints.
pub fn new_box_keypair_text() -> Result<(Zeroizing<String>, PublicKey), Error> {
    new_box_keypair_text_protected(None)
}

/// [`new_box_keypair_text`], the secret key protected by a password when `protect` is given
/// (`keygen --box --protect`; `crypto::protect`).
pub fn new_box_keypair_text_protected(
    protect: Option<(&super::password::Secret, super::kdf::Kdf)>,
) -> Result<(Zeroizing<String>, PublicKey), Error> {
    let sk = SecretKey::generate().map_err(|e| Error::Crypto(e.to_string()))?;
    let pk = sk.public_key();
    let pub_text = public_key_text(&pk);
    let secret_text = secret_file_text(
        KeyKind::BoxSecret,
        &sk.to_bytes()[..],
        &format!("# public key: {pub_text}\n"),
        protect,
    )?;
    Ok((secret_text, pk))
}

/// Reads a recipients file (`krypta c -R FILE`, as age's): one box public key text per line;
/// blank lines and lines starting with `#` are skipped, surrounding spaces ignored. Errors
/// name the file and the line (`FILE:3`): a line that is not a public key (a secret key, a
/// key of another kind, a damaged key) is refused, as is a file with no key at all.
pub fn load_recipients_file(path: &Path) -> Result<Vec<PublicKey>, Error> {
    crate::closed_stdio::require_input_path(path)?;
    let text = fs::read(path).map_err(|e| Error::io(path, "read recipients file", e))?;
    let text = String::from_utf8(text).map_err(|_| Error::BadKeyFile {
        path: path.to_path_buf(),
        problem: "not a recipients file (not UTF-8 text)".into(),
    })?;
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // The file's own bytes and the line number: the message escapes them once (`shown`);
        // `display` would have turned a name that is not UTF-8 into U+FFFD first.
        let mut at = path.as_os_str().to_owned();
        at.push(format!(":{}", i + 1));
        let at = PathBuf::from(at);
        let bytes = decode(line, KeyKind::BoxPublic).map_err(|e| bad_key(&at, e))?;
        keys.push(PublicKey::from_bytes(&bytes).map_err(|e| bad_key(&at, e))?);
    }
    if keys.is_empty() {
        return Err(Error::BadKeyFile {
            path: path.to_path_buf(),
            problem: "holds no public key (one KRYPTA-BOX-PUBLIC-1-... line per recipient)".into(),
        });
    }
    Ok(keys)
}

/// Writes a fresh box key pair: the secret key to `path` (created new with mode 0600, never
/// overwriting: [`Error::Exists`]) with `# created:` and `# public key:` comment lines, and
/// the public key to `path` + ".pub" (created new, never overwriting). Both are flushed to
/// disk. If the public file cannot be written, the new secret file is removed again.
/// Returns the public key.
pub fn generate_box_keypair(path: &Path) -> Result<PublicKey, Error> {
    generate_box_keypair_protected(path, None)
}

/// [`generate_box_keypair`], the secret key protected by a password when `protect` is given.
pub fn generate_box_keypair_protected(
    path: &Path,
    protect: Option<(&super::password::Secret, super::kdf::Kdf)>,
) -> Result<PublicKey, Error> {
    let pub_path = public_key_path(path);
    for p in [path, pub_path.as_path()] {
        if fs::symlink_metadata(p).is_ok() {
            return Err(Error::Exists {
                path: p.to_path_buf(),
            });
        }
    }
    let (secret_text, pk) = new_box_keypair_text_protected(protect)?;
    let pub_text = public_key_text(&pk);
    write_new(path, 0o600, secret_text.as_bytes())?;
    if let Err(e) = write_new(&pub_path, 0o644, format!("{pub_text}\n").as_bytes()) {
        let _ = fs::remove_file(path);
        return Err(e);
    }
    Ok(pk)
}

/// The public key file that belongs to the secret key file `path`: `path` + ".pub".
pub fn public_key_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_os_string();
    p.push(PUBLIC_KEY_SUFFIX);
    PathBuf::from(p)
}

/// Reads a box secret key from the key file `path_or_text`. Secret key text given inline is
/// refused (an argument is visible to other local users in the process list): the error asks
/// for a file. Errors name the file: not found / unreadable ([`Error::Io`]), a public key or a
/// key of another kind, a bad checksum, truncation ([`Error::BadKeyFile`]). Whether the file is
/// readable by others is a separate check: [`secret_key_mode_warning`]. A path is used as its
/// bytes (a name that is not UTF-8 opens that file, not a lossy spelling of it).
pub fn load_secret(path_or_text: impl AsRef<OsStr>) -> Result<SecretKey, Error> {
    load_secret_with(path_or_text, &mut no_key_password)
}

/// Asks for the password of a protected secret key file: given the file, returns the
/// password (a prompt, `--key-pass-file`).
pub type KeyPassword<'a> = dyn FnMut(&Path) -> Result<super::password::Secret, Error> + 'a;

/// The [`KeyPassword`] of callers that have no way to ask: a protected key is an error
/// saying how to give its password.
pub fn no_key_password(path: &Path) -> Result<super::password::Secret, Error> {
    Err(Error::Usage(format!(
        "{}: the secret key is password-protected: give --key-pass-file FILE or run at a terminal",
        crate::fs::shown(path)
    )))
}

/// [`load_secret`]; a password-protected key file (`keygen --box --protect`) is opened with
/// the password `key_password` gives ([`Error::KeyPassword`] when it is wrong).
pub fn load_secret_with(
    path_or_text: impl AsRef<OsStr>,
    key_password: &mut KeyPassword<'_>,
) -> Result<SecretKey, Error> {
    let path = Path::new(path_or_text.as_ref());
    if looks_like_key_text(path.as_os_str()).is_some() && fs::symlink_metadata(path).is_err() {
        return Err(Error::BadKeyFile {
            path: PathBuf::from(INLINE_KEY_PATH),
            problem: "key text given as an argument; a secret key must be read from a file \
                      (give the path of the key file written by `krypta keygen --box`)"
                .to_string(),
        });
    }
    let text = read_key_file(path)?;
    let bytes = secret_payload(&text, path, KeyKind::BoxSecret, key_password)?;
    let arr: &[u8; SECRET_KEY_LEN] =
        bytes.as_slice().try_into().map_err(|_| Error::BadKeyFile {
            path: path.to_path_buf(),
            problem: format!(
                "a box secret key is {SECRET_KEY_LEN} bytes, this one {}",
                bytes.len()
            ),
        })?;
    Ok(SecretKey::from_bytes(arr))
}

/// Reads a box public key from `path_or_text`: the key text itself (an argument starting with
/// "KRYPTA-" that is not an existing file; errors then name `<argument>`), or the path of a
/// file holding it (such as `NAME.pub`). Errors: [`Error::Io`] for an unreadable file,
/// [`Error::BadKeyFile`] for a secret key or a key of another kind, a bad checksum, truncation
/// or an ML-KEM key failing the FIPS 203 §7.2 modulus check. A path is used as its bytes.
pub fn load_public(path_or_text: impl AsRef<OsStr>) -> Result<PublicKey, Error> {
    let (shown, text) = read_public_key_text(Path::new(path_or_text.as_ref()))?;
    let bytes = decode(&text, KeyKind::BoxPublic).map_err(|e| bad_key(shown, e))?;
    PublicKey::from_bytes(&bytes).map_err(|e| bad_key(shown, e))
}

/// `Some(warning)` when group or others may read or write the secret key file `path` (any of
/// mode bits 0o077, as [`super::keyfile::mode_warning`] checks key files), e.g. "id.key is
/// readable by group/others (mode 0644); chmod 600 id.key", or "… is writable by
/// group/others (mode 0620): they could replace the key; …" (a replaced box key's `--pub`
/// names their public key, a replaced signing key signs with theirs); `None` when it is
/// private or its metadata cannot be read (reading it will report that).
pub fn secret_key_mode_warning(path: &Path) -> Option<String> {
    let mode = fs::metadata(path).ok()?.permissions().mode() & 0o7777;
    let name = crate::fs::shown(path);
    if mode & 0o044 != 0 {
        Some(format!(
            "{name} is readable by group/others (mode {mode:04o}); chmod 600 {name}"
        ))
    } else if mode & 0o022 != 0 {
        Some(format!(
            "{name} is writable by group/others (mode {mode:04o}): they could replace the key; chmod 600 {name}"
        ))
    } else if mode & 0o077 != 0 {
        Some(format!(
            "{name} is accessible by group/others (mode {mode:04o}); chmod 600 {name}"
        ))
    } else {
        None
    }
}

/// The one-line key text of a box public key ("KRYPTA-BOX-PUBLIC-1-...", no newline), as
/// written to `NAME.pub` and printed by `krypta keygen --pub`.
pub fn public_key_text(pk: &PublicKey) -> String {
    encode(KeyKind::BoxPublic, &pk.to_bytes())
}

/// The one-line key text of a box secret key ("KRYPTA-BOX-SECRET-1-...", no newline).
pub fn secret_key_text(sk: &SecretKey) -> Zeroizing<String> {
    Zeroizing::new(encode(KeyKind::BoxSecret, &sk.to_bytes()[..]))
}

/// The text of a public key given as `path` (box or signer): the argument itself when it
/// looks like key text and names no file (shown as [`INLINE_KEY_PATH`] in errors), else the
/// file's text. Returns the name errors should show and the text.
pub(crate) fn read_public_key_text(path: &Path) -> Result<(&Path, Zeroizing<String>), Error> {
    Ok(match looks_like_key_text(path.as_os_str()) {
        Some(t) if fs::symlink_metadata(path).is_err() => {
            (Path::new(INLINE_KEY_PATH), Zeroizing::new(t.to_string()))
        }
        _ => (path, read_key_file(path)?),
    })
}

/// Whether `arg`, given where a path belongs, is key text naming no file: an argument to
/// refuse without showing it (as [`INLINE_KEY_PATH`]), since it may be the secret itself.
pub fn is_key_text_not_a_file(arg: &OsStr) -> bool {
    looks_like_key_text(arg).is_some() && fs::symlink_metadata(arg).is_err()
}

/// `arg` as key text when it is UTF-8 starting with [`KEY_TEXT_PREFIX`] (after blanks); `None`
/// for anything else, which is a path (key text is ASCII, so an argument that is not UTF-8
/// cannot be key text: it is never converted lossily, always opened as given).
pub(crate) fn looks_like_key_text(arg: &OsStr) -> Option<&str> {
    arg.to_str()
        .filter(|t| t.trim_start().starts_with(KEY_TEXT_PREFIX))
}

pub(crate) fn bad_key(path: &Path, e: super::CryptoError) -> Error {
    Error::BadKeyFile {
        path: path.to_path_buf(),
        problem: e.to_string(),
    }
}

/// The secret payload of the key text `text` (read from `path`) of the plain kind `plain`, or
/// of its protected kind (opened with the password `key_password` gives).
pub(crate) fn secret_payload(
    text: &str,
    path: &Path,
    plain: KeyKind,
    key_password: &mut KeyPassword<'_>,
) -> Result<Zeroizing<Vec<u8>>, Error> {
    let protected = super::protect::protected_kind(plain).expect("a secret key kind");
    if super::keytext::kind_of(text) != Some(protected) {
        return Ok(Zeroizing::new(
            decode(text, plain).map_err(|e| bad_key(path, e))?,
        ));
    }
    let payload = Zeroizing::new(decode(text, protected).map_err(|e| bad_key(path, e))?);
    let password = key_password(path)?;
    super::protect::unprotect(protected, &payload, &password).map_err(|e| match e {
        super::protect::Unprotect::WrongPassword => Error::KeyPassword {
            path: path.to_path_buf(),
        },
        super::protect::Unprotect::Crypto(c) => bad_key(path, c),
    })
}

/// The secret key file text for `secret` of plain kind `plain`, protected when `protect`
/// gives a password and Argon2id parameters: `# created:` and the `comment` lines, then the
/// key line.
pub(crate) fn secret_file_text(
    plain: KeyKind,
    secret: &[u8],
    comment: &str,
    protect: Option<(&super::password::Secret, super::kdf::Kdf)>,
) -> Result<Zeroizing<String>, Error> {
    let line = match protect {
        None => Zeroizing::new(encode(plain, secret)),
        Some((pw, kdf)) => {
            let kind = super::protect::protected_kind(plain).expect("a secret key kind");
            let payload = super::protect::protect(kind, secret, pw, kdf)
                .map_err(|e| Error::Crypto(e.to_string()))?;
            Zeroizing::new(encode(kind, &payload))
        }
    };
    let note = if protect.is_some() {
        "# password-protected (Argon2id): krypta asks for the password when the key is used\n"
    } else {
        ""
    };
    Ok(Zeroizing::new(format!(
        "# created: {}\n{comment}{note}{}\n",
        utc_timestamp(SystemTime::now()),
        *line
    )))
}

/// Reads at most [`MAX_KEY_FILE_LEN`] bytes of UTF-8 text; the buffer is zeroized on drop.
pub(crate) fn read_key_file(path: &Path) -> Result<Zeroizing<String>, Error> {
    crate::closed_stdio::require_input_path(path)?;
    let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    let mut buf = Zeroizing::new(Vec::new());
    file.take(MAX_KEY_FILE_LEN + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, "read", e))?;
    if buf.len() as u64 > MAX_KEY_FILE_LEN {
        return Err(Error::BadKeyFile {
            path: path.to_path_buf(),
            problem: format!("larger than {MAX_KEY_FILE_LEN} bytes: not a krypta key file"),
        });
    }
    match std::str::from_utf8(&buf) {
        Ok(s) => Ok(Zeroizing::new(s.to_string())),
        Err(_) => Err(Error::BadKeyFile {
            path: path.to_path_buf(),
            problem: "not a text file: not a krypta key file".to_string(),
        }),
    }
}

/// Creates `path` new (O_EXCL: an existing file or link is never followed or replaced) with
/// `mode`, writes `data` and syncs it.
pub(crate) fn write_new(path: &Path, mode: u32, data: &[u8]) -> Result<(), Error> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                Error::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                Error::io(path, "create", e)
            }
        })?;
    let written = f.write_all(data).and_then(|()| f.sync_all());
    if let Err(e) = written {
        drop(f);
        let _ = fs::remove_file(path);
        return Err(Error::io(path, "write", e));
    }
    Ok(())
}

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC) for `t`; see [`crate::timefmt::rfc3339`].
pub fn utc_timestamp(t: SystemTime) -> String {
    crate::timefmt::rfc3339(t)
}
