//! `krypta keygen`: key files and box keypairs.

use super::args::*;
use krypta::{Error, Result};

pub(crate) fn keygen(a: KeygenArgs, quiet: bool) -> Result<u8> {
    if a.public {
        let key = a
            .key
            .as_ref()
            .ok_or_else(|| Error::Usage("--pub needs -k SECRET".into()))?;
        let sk = krypta::crypto::boxkey::load_secret(&key.to_string_lossy())?;
        println!(
            "{}",
            krypta::crypto::boxkey::public_key_text(&sk.public_key())
        );
        return Ok(0);
    }
    let out = a
        .output
        .ok_or_else(|| Error::Usage("keygen needs -o FILE (or -o - for stdout)".into()))?;
    if out.as_os_str() == "-" {
        return to_stdout(a.box_key, quiet);
    }
    if a.box_key {
        let pk = krypta::crypto::boxkey::generate_box_keypair(&out).map_err(no_force_hint)?;
        if !quiet {
            eprintln!(
                "krypta: wrote secret key {} and public key {}.pub",
                out.display(),
                out.display()
            );
            println!("{}", krypta::crypto::boxkey::public_key_text(&pk));
        }
    } else {
        krypta::crypto::keyfile::generate_keyfile(&out).map_err(no_force_hint)?;
        if !quiet {
            eprintln!(
                "krypta: wrote key file {} (mode 0600); keep a copy: without it the archives cannot be opened",
                out.display()
            );
        }
    }
    Ok(0)
}

/// `keygen -o -`, as `age-keygen -o -`: the secret key file's text on stdout (for a pipe, a
/// secrets manager or `> file` with a umask of the caller's choosing); for `--box` the
/// public key on stderr as `Public key: ...`, so the secret stream holds nothing else.
fn to_stdout(box_key: bool, quiet: bool) -> Result<u8> {
    use std::io::Write;
    let text = if box_key {
        let (secret, pk) = krypta::crypto::boxkey::new_box_keypair_text()?;
        if !quiet {
            eprintln!(
                "Public key: {}",
                krypta::crypto::boxkey::public_key_text(&pk)
            );
        }
        secret
    } else {
        krypta::crypto::keyfile::new_keyfile_text()?
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("<stdout>", "write", e))?;
    Ok(0)
}

/// keygen never overwrites and has no `--force`: say so instead of suggesting one.
fn no_force_hint(e: Error) -> Error {
    match e {
        Error::Exists { path } => Error::Usage(format!(
            "{}: already exists; keygen never overwrites a key (move it away first)",
            path.display()
        )),
        e => e,
    }
}
