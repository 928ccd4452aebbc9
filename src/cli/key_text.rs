//! Key text given where a path belongs (`x --base KRYPTA-KEY-1-…`, `--pass-file`, ARCHIVE, an
//! input of `c`, ...): refused, naming the option but never the text, which may be the secret
//! itself. A path that names no file is echoed by the error that follows ("No such file"), so
//! the key reached stderr and the logs of the script that made the mistake (helper-52 fixed it
//! for the key options, whose loaders refuse key text: `crypto::boxkey::INLINE_KEY_PATH`).
//!
//! Decision: one check over every argument whose value is a path (a `PathBuf` option or
//! operand, told by its clap value parser), run on the parsed arguments before the command
//! starts, so a path option added later is covered without being listed here. Only the key
//! options, whose loaders give their own message, are left to them. A file that really has
//! such a name is opened as usual (the check is only for text that names no file).

use std::path::PathBuf;

use krypta::{Error, Result};

/// Path options whose loaders refuse key text themselves, with a message of their own.
const OWN_CHECK: &[&str] = &["keyfiles", "base_keyfiles", "new_keyfiles", "sign", "key"];

/// Refuses key text given as the value of a path argument of `cmd`'s subcommand chain in
/// `m` (see the module documentation).
pub(crate) fn refuse_key_text_paths(cmd: &clap::Command, m: &clap::ArgMatches) -> Result<()> {
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if arg.get_value_parser().type_id() != std::any::TypeId::of::<PathBuf>()
            || OWN_CHECK.contains(&id)
        {
            continue;
        }
        let Ok(Some(values)) = m.try_get_raw(id) else {
            continue;
        };
        for v in values {
            if krypta::crypto::boxkey::is_key_text_not_a_file(v) {
                let name = match arg.get_long() {
                    Some(long) => format!("--{long}"),
                    None => arg
                        .get_value_names()
                        .and_then(|n| n.first())
                        .map_or_else(|| id.to_uppercase(), |n| n.to_string()),
                };
                return Err(Error::BadKeyFile {
                    path: krypta::crypto::boxkey::INLINE_KEY_PATH.into(),
                    problem: format!(
                        "key text given as an argument where {name} takes a path (the \
                         text is not shown: it may be a secret key)"
                    ),
                });
            }
        }
    }
    if let Some((name, sub)) = m.subcommand()
        && let Some(sub_cmd) = cmd.find_subcommand(name)
    {
        return refuse_key_text_paths(sub_cmd, sub);
    }
    Ok(())
}

/// The options whose value is a file krypta reads whole before it starts (passwords, keys,
/// recipients, pattern and name lists), by clap id.
const READ_FILES: &[&str] = &[
    "pass_file",
    "key_pass_file",
    "base_pass_file",
    "base_key_pass_file",
    "new_pass_file",
    "sign_key_pass_file",
    "keyfiles",
    "base_keyfiles",
    "new_keyfiles",
    "recipients_files",
    "exclude_from",
    "identities",
    "base_identities",
    "signers",
    "sign",
    "key",
];

/// Refuses a file option of [`READ_FILES`] whose path names a standard stream closed when
/// krypta started (`--pass-file /dev/stdin <&-`, `/dev/fd/0`, `/proc/self/fd/0`), naming the
/// option: opened, it would read the `/dev/null` that stands in for the stream
/// (`krypta::closed_stdio`). The loaders check the path too, without knowing the option.
pub(crate) fn refuse_closed_stream_files(cmd: &clap::Command, m: &clap::ArgMatches) -> Result<()> {
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if !READ_FILES.contains(&id) {
            continue;
        }
        let Ok(Some(values)) = m.try_get_raw(id) else {
            continue;
        };
        for v in values {
            let path = std::path::Path::new(v);
            if let Some(stream) = krypta::closed_stdio::names_closed(path) {
                let option = match (arg.get_long(), arg.get_short()) {
                    (Some(long), _) => format!("--{long}"),
                    (None, Some(short)) => format!("-{short}"),
                    (None, None) => id.to_string(),
                };
                return Err(Error::OptionStreamClosed {
                    option,
                    path: path.to_path_buf(),
                    stream,
                });
            }
        }
    }
    if let Some((name, sub)) = m.subcommand()
        && let Some(sub_cmd) = cmd.find_subcommand(name)
    {
        return refuse_closed_stream_files(sub_cmd, sub);
    }
    Ok(())
}
