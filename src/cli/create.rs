//! `krypta c`: validates the compression options and calls the library.

use super::args::*;
use super::keys::*;
use super::size::*;
use crate::Term;
use krypta::archive::writer::{BcjMode, WriteOptions};
use krypta::codec::{DEFAULT_BLOCK_SIZE, Filter, Level, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE};
use krypta::crypto::kdf;
use krypta::crypto::password::{PasswordSource, read_password};
use krypta::crypto::stanza::{Kdf, Recipient};
use krypta::{Error, Result};

pub(crate) fn compress(a: CompressArgs, term: &mut Term, verbose: bool) -> Result<u8> {
    let level = if a.store {
        None
    } else {
        Some(
            Level::new(a.level.unwrap_or(Level::DEFAULT.get()))
                .map_err(|e| Error::Usage(e.to_string()))?,
        )
    };
    let block_size = match &a.block_size {
        Some(s) => parse_size(s)?,
        None => level
            .map(|l| l.default_block_size())
            .unwrap_or(DEFAULT_BLOCK_SIZE),
    };
    if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&block_size) {
        return Err(Error::Usage(format!(
            "block size {block_size} bytes is outside {}K..={}M",
            MIN_BLOCK_SIZE >> 10,
            MAX_BLOCK_SIZE >> 20
        )));
    }
    // The header's limits are the reader's (format::limits): refuse an over-long comment
    // before a password is asked for or anything is written.
    if let Some(c) = &a.comment
        && krypta::format::header::check_comment(c.as_bytes()).is_err()
    {
        return Err(Error::Usage(format!(
            "--comment is {} bytes; an archive's header holds at most {}",
            c.len(),
            krypta::format::limits::MAX_COMMENT_LEN
        )));
    }
    let bcj = match a.bcj.as_str() {
        "auto" => BcjMode::Auto,
        "off" | "none" => BcjMode::Off,
        other => BcjMode::Force(other.parse::<Filter>().map_err(Error::Usage)?),
    };
    let mut recipients = Vec::new();
    let stdin_in_use = a.inputs.iter().any(|p| p.as_os_str() == "-");
    check_pass_fd(a.pass_fd, stdin_in_use)?;
    if a.output.as_os_str() == "-" && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Err(Error::Usage(
            "refusing to write an archive to a terminal; redirect stdout or give an OUTPUT file"
                .into(),
        ));
    }
    // KRYPTA_PASSWORD is used for a new archive only when no key option was given, so a
    // variable left in the environment never adds a password to a key-file or box archive.
    let explicit_keys = !a.keyfiles.is_empty() || !a.recipients.is_empty();
    let src = password_source(a.password, &a.pass_file, a.pass_fd, !explicit_keys);
    if matches!(src, Some(PasswordSource::Env)) && !term.is_quiet() {
        eprintln!("krypta: encrypting with the password in KRYPTA_PASSWORD");
    }
    if let Some(src) = src {
        if let Some(mib) = a.kdf_memory
            && !(kdf::ARGON2ID_MIN_M_KIB / 1024..=kdf::ARGON2ID_MAX_M_KIB / 1024).contains(&mib)
        {
            return Err(Error::Usage(format!(
                "--kdf-memory {mib} MiB is outside {}..={} MiB",
                kdf::ARGON2ID_MIN_M_KIB / 1024,
                kdf::ARGON2ID_MAX_M_KIB / 1024
            )));
        }
        let kdf = match a.kdf.unwrap_or(KdfName::Argon2id) {
            KdfName::Argon2id => Kdf::Argon2id {
                m_kib: a
                    .kdf_memory
                    .map(|mib| mib.saturating_mul(1024))
                    .unwrap_or(kdf::ARGON2ID_DEFAULT_M_KIB),
                t: a.kdf_iterations.unwrap_or(kdf::ARGON2ID_DEFAULT_T),
                p: kdf::ARGON2ID_DEFAULT_P,
            },
            KdfName::Pbkdf2 => {
                if a.kdf_memory.is_some() {
                    return Err(Error::Usage("--kdf-memory applies to argon2id only".into()));
                }
                Kdf::Pbkdf2 {
                    iterations: a.kdf_iterations.unwrap_or(kdf::PBKDF2_DEFAULT_ITERATIONS),
                }
            }
        };
        kdf.check_bounds()
            .map_err(|e| Error::Usage(format!("{e} (see README: KDF bounds)")))?;
        recipients.push(Recipient::Password {
            password: read_password(&src, true)?,
            kdf,
        });
    } else if a.kdf.is_some() || a.kdf_memory.is_some() || a.kdf_iterations.is_some() {
        return Err(Error::Usage(
            "--kdf, --kdf-memory and --kdf-iterations need a password (-p, --pass-file or --pass-fd)"
                .into(),
        ));
    }
    for f in &a.keyfiles {
        recipients.push(Recipient::KeyFile(krypta::crypto::keyfile::load_keyfile(
            f,
        )?));
    }
    for r in &a.recipients {
        recipients.push(Recipient::PqBox(krypta::crypto::boxkey::load_public(r)?));
    }
    // The same key given twice (`-r K -r K`, or one key file under two names) would write a
    // second stanza that opens nothing the first does not: keep the first. Keys are compared
    // by a BLAKE3 hash, so no copy of a key file's bytes is kept.
    let mut seen = Vec::new();
    recipients.retain(|r| {
        let id = match r {
            Recipient::KeyFile(k) => blake3::keyed_hash(&[1; 32], k.as_bytes()),
            Recipient::PqBox(p) => blake3::keyed_hash(&[2; 32], &p.to_bytes()),
            Recipient::Password { .. } => return true,
        };
        if seen.contains(&id) {
            eprintln!("krypta: warning: the same key was given twice; it gets one stanza");
            return false;
        }
        seen.push(id);
        true
    });
    let created = krypta::now_or_epoch().secs;
    let reproducible = std::env::var_os("SOURCE_DATE_EPOCH").is_some() && recipients.is_empty();
    let jobs = a
        .jobs
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
        .max(1);
    let options = WriteOptions {
        level,
        block_size,
        jobs,
        bcj,
        created,
        comment: a.comment.unwrap_or_default(),
        recipients,
        archive_id: reproducible.then(|| krypta::reproducible_archive_id(created)),
        file_key: None,
        ..WriteOptions::new()
    };
    let req = krypta::CompressRequest {
        output: a.output.clone(),
        inputs: a.inputs,
        force: a.force,
        dereference: a.dereference,
        xattrs: a.meta.xattrs(),
        numeric_owner: a.meta.numeric_owner,
        options,
    };
    let s = krypta::compress(req, term)?;
    if verbose {
        eprintln!(
            "krypta: {}: {} entries, {} bytes in, {} bytes out ({:.2}x), {} blocks",
            a.output.display(),
            s.entries,
            s.content_bytes,
            s.archive_bytes,
            s.content_bytes as f64 / s.archive_bytes.max(1) as f64,
            s.data_frames
        );
    }
    Ok(0)
}
