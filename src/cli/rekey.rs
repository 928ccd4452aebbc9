//! `krypta rekey IN -o OUT`: IN opened with the key options of `x`, OUT written with a new,
//! complete set of stanzas (`--new-password`, `--new-pass-file`, `--new-keyfile`, `-r`, `-R`,
//! the `--kdf*` options of `c`), the frames copied as they are (`--rotate`: encrypted again
//! under a new file key). See `archive::reader::rekey`.

use std::time::Instant;

use super::args::*;
use super::keys::{KeyPaths, named, open_options};
use super::size::human_bytes;
use krypta::archive::reader::RekeyOptions;
use krypta::crypto::password::{PasswordSource, PromptFor, read_password};
use krypta::crypto::stanza::Recipient;
use krypta::{Error, Result};

pub(crate) fn rekey(a: RekeyArgs, quiet: bool) -> Result<u8> {
    // OUT first: an existing OUT without -f was refused after the signing key, OUT's new
    // keys and password (asked for at the terminal) were read.
    // A key file this command reads as OUT, even with -f: OUT would replace that key.
    let k = &a.keys;
    let keys: KeyPaths<'_> = named("--pass-file", &k.pass_file)
        .chain(named("--keyfile", &k.keyfiles))
        .chain(named("-i", &k.identities))
        .chain(named("--signer", &k.signers))
        .chain(named("--key-pass-file", &k.key_pass_file))
        .chain(named("--sign", &a.sign))
        .chain(named("--sign-key-pass-file", &a.sign_key_pass_file))
        .chain(named("--new-pass-file", &a.new_pass_file))
        .chain(named("--new-keyfile", &a.new_keyfiles))
        .chain(named("-r", &a.recipients))
        .chain(named("-R", &a.recipients_files))
        .collect();
    super::keys::refuse_output_over_key(&a.output, &keys)?;
    krypta::check_rekey_output(&a.input, &a.output, a.force)?;
    let open = open_options(&a.keys, &a.input)?;
    let pass =
        super::keys::KeyPassFile::new("--sign-key-pass-file", a.sign_key_pass_file.as_deref());
    let signer = match &a.sign {
        Some(f) => Some(super::keys::secret_key_warned(
            f,
            krypta::crypto::signkey::load_signing_secret_with(f, &mut pass.source()),
        )?),
        None => None,
    };
    pass.warn_if_unused("the signing key given with --sign is not password-protected");
    let recipients = new_recipients(&a)?;
    let started = Instant::now();
    let s = krypta::rekey(
        &a.input,
        open,
        &a.output,
        a.force,
        RekeyOptions {
            recipients,
            rotate: a.rotate,
            signer,
        },
    )?;
    for w in &s.warnings {
        krypta::to_stderr!("krypta: warning: {w}");
    }
    if !quiet {
        if s.signature_dropped {
            krypta::to_stderr!(
                "krypta: {}: the signature of {} is dropped (it covers the old stanzas); give --sign NAME to sign OUT",
                krypta::fs::shown(&a.output),
                krypta::fs::shown(&a.input)
            );
        }
        if let Some((percent, bytes)) = s.recovery {
            krypta::to_stderr!(
                "krypta: {}: recovery data encoded again over the new bytes ({percent}%, {})",
                krypta::fs::shown(&a.output),
                human_bytes(bytes)
            );
        }
        krypta::to_stderr!(
            "krypta: {}: {} frames {} ({}), {}",
            krypta::fs::shown(&a.output),
            s.frames,
            if a.rotate {
                "encrypted again under a new file key"
            } else {
                "copied with new stanzas"
            },
            human_bytes(s.bytes),
            super::clock::duration(started.elapsed())
        );
    }
    Ok(0)
}

/// The recipients of OUT, as `c` builds them.
fn new_recipients(a: &RekeyArgs) -> Result<Vec<Recipient>> {
    let mut out = Vec::new();
    let src = if let Some(f) = &a.new_pass_file {
        Some(PasswordSource::File(f.clone()))
    } else if a.new_password {
        Some(PasswordSource::Prompt(PromptFor::NewPassword))
    } else {
        None
    };
    match src {
        Some(src) => {
            let kdf =
                super::kdf_args::kdf_from_args(a.kdf, a.kdf_memory.as_deref(), a.kdf_iterations)?;
            out.push(Recipient::Password {
                password: read_password(&src, true)?,
                kdf,
            });
        }
        None if a.kdf.is_some() || a.kdf_memory.is_some() || a.kdf_iterations.is_some() => {
            return Err(Error::Usage(
                "--kdf, --kdf-memory and --kdf-iterations need --new-password or --new-pass-file"
                    .into(),
            ));
        }
        None => {}
    }
    for f in &a.new_keyfiles {
        out.push(Recipient::KeyFile(super::keys::load_keyfile(f)?));
    }
    for r in &a.recipients {
        out.push(Recipient::PqBox(krypta::crypto::boxkey::load_public(r)?));
    }
    for f in &a.recipients_files {
        for pk in krypta::crypto::boxkey::load_recipients_file(f)? {
            out.push(Recipient::PqBox(pk));
        }
    }
    super::keys::one_stanza_per_key(&mut out);
    Ok(out)
}
