//! Turning key options into the identities and open options the library takes: password
//! sources, key files, box secret keys, recipients files.
//!
//! Decisions (README "Passwords and keys"):
//! - At most one of `-p`, `--pass-file`, `--pass-fd` (clap refuses two, exit 1: a conflict is
//!   never resolved silently). `KRYPTA_PASSWORD` is used only when none of them is given: an
//!   explicit option says which password is meant.
//! - Reading (`x`, `t`, `l`) with no key option at all: when stdin or stderr is a terminal, a
//!   person is there, so an archive that turns out to need a password asks for it on the
//!   terminal (as age and 7-Zip do) instead of failing; the prompt appears only after the
//!   header was read and only if the archive has a password stanza. Without a terminal (cron,
//!   CI) the error names the options to use.

use std::io::IsTerminal;
use std::path::PathBuf;

use super::args::*;
use krypta::archive::reader::OpenOptions;
use krypta::crypto::password::{PasswordSource, PromptFor, read_password};
use krypta::crypto::stanza::Identity;
use krypta::{Error, Result};

/// The password source the flags ask for; `KRYPTA_PASSWORD` counts only when `use_env` and no
/// flag was given. Two flags never reach here (clap refuses them).
/// `what` names the password a prompt asks for (its refusal without a terminal names the
/// options given for it).
pub(crate) fn password_source(
    flag: bool,
    file: &Option<PathBuf>,
    fd: Option<i32>,
    use_env: bool,
    what: PromptFor,
) -> Option<PasswordSource> {
    if let Some(f) = file {
        Some(PasswordSource::File(f.clone()))
    } else if let Some(fd) = fd {
        Some(PasswordSource::Fd(fd))
    } else if flag {
        Some(PasswordSource::Prompt(what))
    } else if use_env && std::env::var_os("KRYPTA_PASSWORD").is_some() {
        Some(PasswordSource::Env)
    } else {
        None
    }
}

/// `--pass-fd 0` (`--base-pass-fd 0` for `what` a base) reads the password from stdin; when
/// stdin also carries something else (`taken`: the archive, the input, the other password),
/// the password reader could consume its bytes, so that combination is refused.
pub(crate) fn check_pass_fd(what: PromptFor, fd: Option<i32>, taken: Option<&str>) -> Result<()> {
    let (fd_option, file_option) = match what {
        PromptFor::Base => ("--base-pass-fd", "--base-pass-file"),
        PromptFor::Archive | PromptFor::NewPassword => ("--pass-fd", "--pass-file"),
    };
    match taken {
        Some(taken) if fd == Some(0) => Err(Error::Usage(format!(
            "{fd_option} 0 reads the password from stdin, which also carries {taken} here; use \
             another descriptor or {file_option}"
        ))),
        _ => Ok(()),
    }
}

/// Whether `path` names this process's standard input: `-`, or the same file as descriptor 0
/// (`/dev/stdin`, `/proc/self/fd/0`, or the file redirected in with `<`).
pub(crate) fn names_stdin(path: &std::path::Path) -> bool {
    krypta::fs::source::names_stdin(path)
}

/// What besides a base's password reads stdin in a command: `data` (the archive, the input)
/// when it does, else the archive's own `--pass-fd 0`.
pub(crate) fn stdin_taken(
    data: Option<&'static str>,
    pass_fd: Option<i32>,
) -> Option<&'static str> {
    data.or((pass_fd == Some(0)).then_some("the password of --pass-fd 0"))
}

/// A key file, to open an archive or for a new one (`c --keyfile`, `rekey --new-keyfile`),
/// with a warning when group or others may read or write it. The warning comes after the key
/// loaded, so a file of the wrong kind gets only its error. Errors: as
/// [`krypta::crypto::keyfile::load_keyfile`].
pub(crate) fn load_keyfile(f: &std::path::Path) -> Result<krypta::crypto::keyfile::SymmetricKey> {
    let key = krypta::crypto::keyfile::load_keyfile(f)?;
    if let Some(w) = krypta::crypto::keyfile::mode_warning(f) {
        krypta::to_stderr!("krypta: warning: {w}");
    }
    Ok(key)
}

/// A box or signing secret key loaded from `path` (`loaded`), with a warning when group or
/// others may read or write the file (`crypto::boxkey::secret_key_mode_warning`), for every
/// command that reads one: `-i`, `c`/`rekey --sign`, `keygen --pub -k`. The warning comes
/// after the key loaded, so a file of the wrong kind gets only its error.
pub(crate) fn secret_key_warned<T>(path: &std::path::Path, loaded: Result<T>) -> Result<T> {
    let key = loaded?;
    if let Some(w) = krypta::crypto::boxkey::secret_key_mode_warning(path) {
        krypta::to_stderr!("krypta: warning: {w}");
    }
    Ok(key)
}

/// The identities `k` gives; `what` is the password they open (the archive's, a base's).
pub(crate) fn identities(k: &KeyArgs, what: PromptFor) -> Result<Vec<Identity>> {
    let mut ids = Vec::new();
    if let Some(src) = password_source(k.password, &k.pass_file, k.pass_fd, true, what) {
        ids.push(Identity::Password(read_password(&src, false)?));
    }
    for f in &k.keyfiles {
        ids.push(Identity::KeyFile(load_keyfile(f)?));
    }
    // The base's keys have options of their own (`--base-*`), named in the messages.
    let (pass_option, id_option) = match what {
        PromptFor::Base => ("--base-key-pass-file", "--base-identity"),
        PromptFor::Archive | PromptFor::NewPassword => ("--key-pass-file", "-i"),
    };
    let pass = KeyPassFile::new(pass_option, k.key_pass_file.as_deref());
    for s in &k.identities {
        let key = secret_key_warned(
            std::path::Path::new(s),
            krypta::crypto::boxkey::load_secret_with(s, &mut pass.source()),
        )?;
        ids.push(Identity::PqBox(key));
    }
    pass.warn_if_unused(&if k.identities.is_empty() {
        format!("no secret key was given with {id_option}")
    } else {
        format!("no secret key given with {id_option} is password-protected")
    });
    Ok(ids)
}

/// The password source of protected secret key files: the FILE of `option`
/// (`--key-pass-file`, `--base-key-pass-file`, `--sign-key-pass-file`), else a prompt naming
/// the key when a person is at a terminal, else an error naming `option`.
pub(crate) fn key_password<'a>(
    file: Option<&'a std::path::Path>,
    option: &'static str,
) -> impl FnMut(&std::path::Path) -> Result<krypta::crypto::password::Secret> + 'a {
    move |key| {
        if file.is_none() && !at_terminal() {
            return Err(Error::Usage(format!(
                "{}: the secret key is password-protected: give {option} FILE or run at a terminal",
                krypta::fs::shown(key)
            )));
        }
        krypta::crypto::password::read_key_password(key, file, false)
    }
}

/// The password file of protected secret keys given with one option (`--key-pass-file`,
/// `rekey --sign-key-pass-file`), noting whether a key asked for it, so that a file given
/// for keys that are not protected (or for no key) is named as not used, as an archive's key
/// given for an unencrypted archive is, instead of being ignored in silence.
pub(crate) struct KeyPassFile<'a> {
    option: &'static str,
    file: Option<&'a std::path::Path>,
    used: std::cell::Cell<bool>,
}

impl<'a> KeyPassFile<'a> {
    pub(crate) fn new(option: &'static str, file: Option<&'a std::path::Path>) -> Self {
        KeyPassFile {
            option,
            file,
            used: std::cell::Cell::new(false),
        }
    }

    /// [`key_password`] of this file, noting that a protected key asked for it.
    pub(crate) fn source(
        &self,
    ) -> impl FnMut(&std::path::Path) -> Result<krypta::crypto::password::Secret> + '_ {
        let mut inner = key_password(self.file, self.option);
        move |key| {
            self.used.set(true);
            inner(key)
        }
    }

    /// Warns, naming the option and the file, when a file was given and no key asked for it;
    /// `why` says which keys were not protected.
    pub(crate) fn warn_if_unused(&self, why: &str) {
        if let Some(f) = self.file
            && !self.used.get()
        {
            krypta::to_stderr!(
                "krypta: warning: {} {} was not used: {why}",
                self.option,
                krypta::fs::shown(f)
            );
        }
    }
}

/// Whether a person is at a terminal: stdin or stderr is one.
pub(crate) fn at_terminal() -> bool {
    std::io::stdin().is_terminal() || std::io::stderr().is_terminal()
}

/// The keys and options for reading. A key option (`-p`, `--pass-file`, `--pass-fd`,
/// `--keyfile`, `-i`) makes an unencrypted archive an error unless `--allow-unencrypted`; a
/// password that comes only from `KRYPTA_PASSWORD` does not (a variable left in the
/// environment must not make every unencrypted archive unreadable): `x` and `t` then warn.
/// With no key at all and a terminal, [`Identity::Prompt`] asks if a password is needed.
pub(crate) fn open_options(k: &KeyArgs, archive: &std::path::Path) -> Result<OpenOptions> {
    open_options_for(k, archive, PromptFor::Archive)
}

/// [`open_options`] of the keys of the password `what` (the base's: `--base-*`).
fn open_options_for(
    k: &KeyArgs,
    archive: &std::path::Path,
    what: PromptFor,
) -> Result<OpenOptions> {
    check_pass_fd(
        what,
        k.pass_fd,
        names_stdin(archive).then_some("the archive"),
    )?;
    let explicit = k.password
        || k.pass_file.is_some()
        || k.pass_fd.is_some()
        || !k.keyfiles.is_empty()
        || !k.identities.is_empty();
    let mut ids = identities(k, what)?;
    if ids.is_empty() && at_terminal() {
        ids.push(Identity::Prompt(what));
    }
    let signers = k
        .signers
        .iter()
        .map(krypta::crypto::signkey::load_signer_public)
        .collect::<Result<Vec<_>>>()?;
    Ok(OpenOptions {
        identities: ids,
        jobs: k.jobs.unwrap_or(0),
        allow_unencrypted: k.allow_unencrypted || !explicit,
        in_flight_budget: None,
        signers,
        base: None,
    })
}

/// [`open_base`] for `x` and `t` of `archive`, opened with the keys `k`.
pub(crate) fn open_base_to_read(
    b: &BaseArgs,
    k: &KeyArgs,
    archive: &std::path::Path,
) -> Result<Option<std::sync::Arc<krypta::archive::reader::BaseArchive>>> {
    let taken = names_stdin(archive).then_some("the archive");
    let opened = open_base_raw(b, k.jobs, true, stdin_taken(taken, k.pass_fd))
        .map(|o| o.map(|base| base.shared(workers_or_cores(k.jobs))));
    match opened {
        // The base's key is missing: if the base is not the archive's base at all, say that
        // first (both ids are in the headers, read without a key), instead of asking for a
        // key that would only lead to "made against base X, but B is archive Y" (helper-51).
        Err(e @ Error::KeyRequired { .. }) => match b.base.as_deref() {
            Some(base) if taken.is_none() => {
                Err(wrong_base_by_headers(archive, base).unwrap_or_else(|| base_key_required(e)))
            }
            _ => Err(base_key_required(e)),
        },
        r => r,
    }
}

/// [`BaseError::Wrong`](krypta::error::BaseError::Wrong) when `archive` is a delta archive whose
/// header names another base id than `base`'s header holds; `None` when they agree or either
/// header cannot be read (the usual open then says what is wrong).
fn wrong_base_by_headers(archive: &std::path::Path, base: &std::path::Path) -> Option<Error> {
    use krypta::archive::reader::read_header_only;
    let (want, _) = read_header_only(archive).ok()?.delta_base()?;
    let got = read_header_only(base).ok()?.archive_id;
    let hex = super::show::hex;
    (want != got).then(|| {
        Error::Base(krypta::error::BaseError::Wrong {
            path: archive.to_path_buf(),
            base: base.to_path_buf(),
            want_id: hex(&want),
            got_id: hex(&got),
            same_id: false,
        })
    })
}

/// Opens the base of a delta archive (`--base` and its `--base-*` keys, which follow the same
/// rules as the archive's own: README, "Delta archives"); `None` without `--base`.
/// Opens `--base`: for writing a delta (`reading` false) or reading one (`x`, `t`, `l`),
/// which words the refusal of a delta archive given as the base.
/// `stdin_taken` is what else reads stdin in this command ([`stdin_taken`]). Not yet shared
/// by workers (`BaseArchive::shared`): `c` chooses its default `-j` knowing the base's
/// cache (`krypta::memory::compress_bytes`) and then shares it by that many.
pub(crate) fn open_base(
    b: &BaseArgs,
    jobs: Option<usize>,
    reading: bool,
    stdin_taken: Option<&str>,
) -> Result<Option<krypta::archive::reader::BaseArchive>> {
    open_base_raw(b, jobs, reading, stdin_taken).map_err(|e| match e {
        e @ Error::KeyRequired { .. } => base_key_required(e),
        e => e,
    })
}

/// [`open_base`] with a missing base key left as [`Error::KeyRequired`].
fn open_base_raw(
    b: &BaseArgs,
    jobs: Option<usize>,
    reading: bool,
    stdin_taken: Option<&str>,
) -> Result<Option<krypta::archive::reader::BaseArchive>> {
    let Some(path) = &b.base else {
        return Ok(None);
    };
    check_pass_fd(PromptFor::Base, b.base_pass_fd, stdin_taken)?;
    let keys = KeyArgs {
        password: b.base_password,
        pass_file: b.base_pass_file.clone(),
        pass_fd: b.base_pass_fd,
        keyfiles: b.base_keyfiles.clone(),
        identities: b.base_identities.clone(),
        key_pass_file: b.base_key_pass_file.clone(),
        jobs,
        ..KeyArgs::default()
    };
    let opts = open_options_for(&keys, path, PromptFor::Base)?;
    // The base's password is `KRYPTA_PASSWORD`, which the archive's keys hold too (with a
    // `--base-keyfile` or `--base-identity` beside it, either may have opened the base: the
    // warning then says only that the base is encrypted, never that the password was unused).
    let env = matches!(
        password_source(
            keys.password,
            &keys.pass_file,
            keys.pass_fd,
            true,
            PromptFor::Base
        ),
        Some(PasswordSource::Env)
    );
    let mut opened = if reading {
        krypta::archive::reader::BaseArchive::open_to_read(path, opts)
    } else {
        krypta::archive::reader::BaseArchive::open(path, opts)
    }?;
    if env {
        opened.set_shared_password();
    }
    Ok(Some(opened))
}

/// The workers a base is shared by ([`BaseArchive::shared`]): `-j`, else every core.
///
/// Not the reader's decode workers (`pipeline::decode_workers`, cores − 1), although those
/// are what read the regions: tried in session 34, it cut `x --base`'s peak RSS on 2 cores
/// (aws-lc-sys's `-l 7` delta 82 → 72–76 MB, no faster), but a delta of BASE_REFs read
/// 1.10–1.31× slower (three identical 30 MB files and an executable: 164 → 179–216 ms, 15–21
/// interleaved rounds): the cache's working set, sized by this count, then left the
/// prefetch thread no room for the frames the BASE_REF reader asks for ahead, even with that
/// working set raised to `workers + 3` blocks. Sizing it anew needs the prefetch's room
/// understood first.
///
/// [`BaseArchive::shared`]: krypta::archive::reader::BaseArchive::shared
fn workers_or_cores(jobs: Option<usize>) -> usize {
    jobs.filter(|&j| j > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A base's missing key, worded with the base's own key options (not the archive's).
fn base_key_required(e: Error) -> Error {
    match e {
        Error::KeyRequired {
            path,
            kinds,
            needs,
            unfit,
        } => Error::Usage(format!(
            "{}: the base archive is encrypted ({kinds}){}: give {}",
            krypta::fs::shown(&path),
            if unfit {
                " and no base key given is of a kind that opens it"
            } else {
                ""
            },
            needs.options(true)
        )),
        e => e,
    }
}

/// The same key given twice (`-r K -r K`, or one key file under two names) would write a
/// second stanza that opens nothing the first does not, and count towards the 64-stanza
/// limit: the first is kept, with a warning. Keys are compared by a BLAKE3 hash, so no copy
/// of a key file's bytes is kept. For `c` and `rekey` alike (rekey kept both).
pub(crate) fn one_stanza_per_key(recipients: &mut Vec<krypta::crypto::stanza::Recipient>) {
    use krypta::crypto::stanza::Recipient;
    let mut seen = Vec::new();
    recipients.retain(|r| {
        let id = match r {
            Recipient::KeyFile(k) => blake3::keyed_hash(&[1; 32], k.as_bytes()),
            Recipient::PqBox(p) => blake3::keyed_hash(&[2; 32], &p.to_bytes()),
            Recipient::Password { .. } => return true,
        };
        if seen.contains(&id) {
            krypta::to_stderr!("krypta: warning: the same key was given twice; it gets one stanza");
            return false;
        }
        seen.push(id);
        true
    });
}

/// The key files a command that writes `output` reads, each with the option that named it:
/// password files, key files, secret and public keys, recipients files, a delta base's keys.
pub(crate) type KeyPaths<'a> = Vec<(&'static str, &'a std::ffi::OsStr)>;

/// Refuses an `output` that is one of the files in `keys` (the same file however spelled: a
/// link, `./k`, a hard link), even with `-f`. `c -f --keyfile k k dir` wrote the archive over
/// its only key (and `--pass-file pw pw`, `--sign me me`, `rekey -o k --new-keyfile k` the
/// same): an archive nothing can ever open, with no copy of the key left. A missing output,
/// `-` and an object are never a key file.
pub(crate) fn refuse_output_over_key(output: &std::path::Path, keys: &KeyPaths<'_>) -> Result<()> {
    use krypta::store::Location;
    let Ok(out @ Location::Local(_)) = Location::parse(output) else {
        return Ok(());
    };
    if output.as_os_str() == "-" || std::fs::symlink_metadata(output).is_err() {
        return Ok(());
    }
    for (option, key) in keys {
        let key = std::path::Path::new(key);
        if std::fs::metadata(key).is_ok()
            && let Ok(k @ Location::Local(_)) = Location::parse(key)
            && out.same_archive(&k)
        {
            return Err(Error::Usage(format!(
                "{}: is the file given with {option}: writing the archive over it would destroy \
                 that key (refused even with -f); give another output name",
                krypta::fs::shown(output)
            )));
        }
    }
    Ok(())
}

/// The files a delta base's key options name, for [`refuse_output_over_key`].
pub(crate) fn base_key_paths(
    b: &BaseArgs,
) -> impl Iterator<Item = (&'static str, &std::ffi::OsStr)> {
    named("--base-pass-file", &b.base_pass_file)
        .chain(named("--base-keyfile", &b.base_keyfiles))
        .chain(named("--base-identity", &b.base_identities))
        .chain(named("--base-key-pass-file", &b.base_key_pass_file))
}

/// `(option, path)` for each path `option` named (an `Option` or a `Vec` of them): the rows
/// of a [`KeyPaths`].
pub(crate) fn named<'a, P: AsRef<std::ffi::OsStr> + 'a>(
    option: &'static str,
    paths: impl IntoIterator<Item = &'a P>,
) -> impl Iterator<Item = (&'static str, &'a std::ffi::OsStr)> {
    paths.into_iter().map(move |p| (option, p.as_ref()))
}
