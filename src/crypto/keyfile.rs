//! Symmetric key files: the 32-byte [`SymmetricKey`], writing a new key file (`krypta keygen
//! -o FILE`) and loading one (`--keyfile FILE`).
//!
//! A key file is text: comment lines, then one `KRYPTA-KEY-1-…` line (see [`super::keytext`]).
//! It is created with mode 0600 and never overwrites anything (`O_CREAT | O_EXCL`, which also
//! refuses a dangling symlink at the path).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use super::CryptoError;
use super::keytext::{self, KeyKind};
use super::primitives::random_bytes;
use crate::Error;

/// Largest key file read, bytes (a key line is 61 bytes; comments get the rest).
pub const MAX_KEYFILE_LEN: u64 = 64 * 1024;

/// A 32-byte symmetric key from a key file: used directly as the key-encryption key of
/// `keyfile` stanzas. Zeroized on drop; `Debug` does not print it.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct SymmetricKey([u8; 32]);

impl SymmetricKey {
    /// A fresh random key from the OS CSPRNG.
    pub fn generate() -> Result<SymmetricKey, CryptoError> {
        let mut k = SymmetricKey([0; 32]);
        random_bytes(&mut k.0)?;
        Ok(k)
    }

    /// Wraps known bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> SymmetricKey {
        SymmetricKey(bytes)
    }

    /// The 32 key bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key as one line of key text (`KRYPTA-KEY-1-…`, no newline).
    pub fn to_text(&self) -> Zeroizing<String> {
        Zeroizing::new(keytext::encode(KeyKind::Symmetric, &self.0))
    }

    /// Parses key text (comments allowed) into a key.
    pub fn from_text(text: &str) -> Result<SymmetricKey, CryptoError> {
        let payload = Zeroizing::new(keytext::decode(text, KeyKind::Symmetric)?);
        let mut k = SymmetricKey([0; 32]);
        // decode returned exactly KeyKind::Symmetric.payload_len() = 32 bytes.
        k.0.copy_from_slice(&payload[..32]);
        Ok(k)
    }
}

impl std::fmt::Debug for SymmetricKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SymmetricKey(<redacted>)")
    }
}

/// The contents of a new random key file (what [`generate_keyfile`] writes, and
/// `krypta keygen -o -` prints): two comment lines and the key line.
pub fn new_keyfile_text() -> Result<Zeroizing<String>, Error> {
    let key = SymmetricKey::generate().map_err(|e| Error::Crypto(e.to_string()))?;
    Ok(Zeroizing::new(format!(
        "# krypta key file, created {}\n# Keep it secret: it opens every archive made with it.\n{}\n",
        crate::timefmt::rfc3339(std::time::SystemTime::now()),
        key.to_text().as_str()
    )))
}

/// Writes a new random key file at `path`: mode 0600, never overwriting
/// ([`Error::Exists`] if anything is there), contents
/// `# krypta key file, created YYYY-MM-DDTHH:MM:SSZ\n` + a warning comment + the key line.
/// On a write error the partial file is removed.
pub fn generate_keyfile(path: &Path) -> Result<(), Error> {
    let text = new_keyfile_text()?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                Error::io(path, "create key file", e)
            }
        })?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        drop(file);
        // Best effort: the write error is what the user needs to see.
        let _ = std::fs::remove_file(path);
        return Err(Error::io(path, "write key file", e));
    }
    Ok(())
}

/// Loads the key file at `path`. Errors name the file: [`Error::Io`] when it cannot be read,
/// [`Error::BadKeyFile`] when it is not a krypta key file, is of another key kind, damaged,
/// truncated or larger than [`MAX_KEYFILE_LEN`]. See [`mode_warning`] for permissions.
///
/// Key text given in place of the path (`--keyfile KRYPTA-KEY-1-…`, naming no file) is refused
/// as [`super::boxkey::INLINE_KEY_PATH`], as `-i` and `--sign` refuse it: the path is not
/// echoed, since it is the secret itself (the "No such file" error printed it to stderr, and
/// so into logs), and a key on the command line shows in the process list.
pub fn load_keyfile(path: &Path) -> Result<SymmetricKey, Error> {
    if super::boxkey::looks_like_key_text(path.as_os_str()).is_some()
        && std::fs::symlink_metadata(path).is_err()
    {
        return Err(Error::BadKeyFile {
            path: super::boxkey::INLINE_KEY_PATH.into(),
            problem: "key text given as an argument; a key must be read from a file \
                      (give the path of the key file written by `krypta keygen`)"
                .to_string(),
        });
    }
    let bad = |problem: String| Error::BadKeyFile {
        path: path.to_path_buf(),
        problem,
    };
    crate::closed_stdio::require_input_path(path)?;
    let file = File::open(path).map_err(|e| Error::io(path, "open key file", e))?;
    let mut bytes = Zeroizing::new(Vec::new());
    file.take(MAX_KEYFILE_LEN + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, "read key file", e))?;
    if bytes.len() as u64 > MAX_KEYFILE_LEN {
        return Err(bad(format!(
            "larger than {MAX_KEYFILE_LEN} bytes: not a krypta key file"
        )));
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| bad("not a krypta key file (not UTF-8 text)".into()))?;
    SymmetricKey::from_text(text).map_err(|e| bad(e.to_string()))
}

/// A warning when the key file at `path` can be read or written by group or others
/// (any of mode bits 0o077), e.g. "k.key: key file is accessible by group or others (mode
/// 644); run `chmod 600 k.key`". None when private or when its metadata cannot be read.
pub fn mode_warning(path: &Path) -> Option<String> {
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then(|| {
        format!(
            "{}: key file is accessible by group or others (mode {mode:o}); run `chmod 600 {}`",
            crate::fs::shown(path),
            crate::fs::shown(path)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    use crate::timefmt::rfc3339 as utc_timestamp;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            utc_timestamp(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            utc_timestamp(UNIX_EPOCH + Duration::from_secs(1_796_035_202)),
            "2026-11-30T10:40:02Z"
        );
    }

    #[test]
    fn generated_key_file_is_private_commented_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.key");
        generate_keyfile(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(mode_warning(&path), None);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("# krypta key file, created 20"));
        assert!(lines[2].starts_with("KRYPTA-KEY-1-"));
        assert_eq!(lines[2].len(), 61);
        let key = load_keyfile(&path).unwrap();
        assert_eq!(key.to_text().as_str(), lines[2]);
    }

    #[test]
    fn keygen_refuses_to_overwrite_anything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.key");
        std::fs::write(&path, b"precious").unwrap();
        assert!(matches!(generate_keyfile(&path), Err(Error::Exists { .. })));
        assert_eq!(std::fs::read(&path).unwrap(), b"precious");
        let link = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        assert!(matches!(generate_keyfile(&link), Err(Error::Exists { .. })));
        assert!(!dir.path().join("nowhere").exists());
    }

    #[test]
    fn readable_key_file_gets_a_mode_warning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.key");
        generate_keyfile(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let p = path.display();
        assert_eq!(
            mode_warning(&path).unwrap(),
            format!(
                "{p}: key file is accessible by group or others (mode 644); run `chmod 600 {p}`"
            )
        );
    }

    #[test]
    fn bad_key_files_name_the_file_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pub");
        std::fs::write(&path, keytext::encode(KeyKind::BoxPublic, &[0; 1216])).unwrap();
        let e = load_keyfile(&path).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: this is a krypta box public key, but a krypta symmetric key (key file) is needed here",
                path.display()
            )
        );
        std::fs::write(&path, [0xffu8, 0xfe, 0]).unwrap();
        assert!(matches!(load_keyfile(&path), Err(Error::BadKeyFile { .. })));
        std::fs::write(&path, vec![b'#'; 70_000]).unwrap();
        let e = load_keyfile(&path).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("larger than 65536 bytes: not a krypta key file")
        );
        let missing = load_keyfile(&dir.path().join("missing")).unwrap_err();
        assert!(matches!(
            missing,
            Error::Io {
                op: "open key file",
                ..
            }
        ));
    }
}
