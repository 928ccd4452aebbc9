//! The command-line definitions of the key commands, `keygen` and `rekey`, and of the delta
//! base's key options (split from `args.rs`, which holds the rest and the shared option
//! groups).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use super::args::{Common, KdfName, KeyArgs, StoreArgs};

#[derive(Args, Debug)]
pub(crate) struct RekeyArgs {
    /// Archive to read (- = stdin, s3://BUCKET/KEY = an object)
    pub(crate) input: PathBuf,
    /// Archive to write (- = stdout, s3://BUCKET/KEY = an object)
    #[arg(short, long, value_name = "OUT")]
    pub(crate) output: PathBuf,
    /// Overwrite OUT if it exists, keeping its mode and owner (never IN itself)
    #[arg(short, long)]
    pub(crate) force: bool,
    /// Also replace the file key and archive id: every frame encrypted and MAC'd again
    #[arg(long)]
    pub(crate) rotate: bool,
    /// Sign OUT with the signing key NAME (IN's signature is dropped otherwise)
    #[arg(long, value_name = "NAME", help_heading = "New keys")]
    pub(crate) sign: Option<PathBuf>,
    /// Password of a protected --sign key from the first line of FILE
    #[arg(
        long,
        value_name = "FILE",
        requires = "sign",
        help_heading = "New keys"
    )]
    pub(crate) sign_key_pass_file: Option<PathBuf>,
    /// OUT's password, typed at a prompt (asked twice)
    #[arg(long, conflicts_with = "new_pass_file", help_heading = "New keys")]
    pub(crate) new_password: bool,
    /// OUT's password from the first line of FILE
    #[arg(long, value_name = "FILE", help_heading = "New keys")]
    pub(crate) new_pass_file: Option<PathBuf>,
    /// Password KDF of OUT (default argon2id)
    #[arg(long, value_enum, help_heading = "New keys")]
    pub(crate) kdf: Option<KdfName>,
    /// Argon2id memory: MiB, or a size such as 512M, 1GiB (default 256)
    #[arg(long, value_name = "SIZE", help_heading = "New keys")]
    pub(crate) kdf_memory: Option<String>,
    /// Argon2id passes or PBKDF2 iterations
    #[arg(long, value_name = "N", help_heading = "New keys")]
    pub(crate) kdf_iterations: Option<u32>,
    /// Encrypt OUT to a key file made by `krypta keygen -o FILE` (repeatable)
    #[arg(long = "new-keyfile", value_name = "FILE", help_heading = "New keys")]
    pub(crate) new_keyfiles: Vec<PathBuf>,
    /// Encrypt OUT to a box public key: a NAME.pub file or the key text (repeatable)
    #[arg(
        short = 'r',
        long = "recipient",
        value_name = "PUB",
        help_heading = "New keys"
    )]
    pub(crate) recipients: Vec<OsString>,
    /// Encrypt OUT to every public key in FILE: one per line, # comments (repeatable)
    #[arg(
        short = 'R',
        long = "recipients-file",
        value_name = "FILE",
        help_heading = "New keys"
    )]
    pub(crate) recipients_files: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct KeygenArgs {
    /// Output file (never overwritten); with --box/--sign also OUTPUT.pub, whose line is
    /// printed on stdout. - = stdout (the public key then goes to stderr, as age-keygen -o -)
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Generate an ML-KEM-768 + X25519 box keypair instead of a symmetric key file
    #[arg(long = "box")]
    pub(crate) box_key: bool,
    /// Generate an ML-DSA-65 + Ed25519 signing keypair (for c --sign, x/t/l --signer)
    #[arg(long = "sign", conflicts_with = "box_key")]
    pub(crate) sign_key: bool,
    /// Print the public key of the box or signing secret key given with -k
    #[arg(long = "pub", requires = "key")]
    pub(crate) public: bool,
    /// Box or signing secret key file (with --pub)
    #[arg(short = 'k', long = "key", value_name = "SECRET")]
    pub(crate) key: Option<PathBuf>,
    /// Encrypt the new secret key with a password (Argon2id), asked twice
    #[arg(long)]
    pub(crate) protect: bool,
    /// The key password (--protect, or a protected -k) from the first line of FILE
    #[arg(long, value_name = "FILE")]
    pub(crate) key_pass_file: Option<PathBuf>,
    /// Argon2id memory of --protect: MiB, or a size such as 512M (default 256)
    #[arg(long, value_name = "SIZE", requires = "protect")]
    pub(crate) kdf_memory: Option<String>,
    /// Argon2id passes of --protect (default 2)
    #[arg(long, value_name = "N", requires = "protect")]
    pub(crate) kdf_iterations: Option<u32>,
    #[command(flatten)]
    pub(crate) common: Common,
}

/// The base of a delta archive and its keys (`c`, `x`, `t`): named `--base-*` so they never
/// clash with OUT's or ARCHIVE's own key options (README, "Delta archives").
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct BaseArgs {
    /// Delta archive: c writes OUT as a delta against BASE; x and t read ARCHIVE with the
    /// BASE it was made against (a file or s3:// object); l needs it only when ARCHIVE's
    /// index is damaged (or with --b3)
    #[arg(long, value_name = "BASE", help_heading = "Delta base")]
    pub(crate) base: Option<PathBuf>,
    /// Prompt for the base's password on the terminal
    #[arg(
        long,
        requires = "base",
        conflicts_with_all = ["base_pass_file", "base_pass_fd"],
        help_heading = "Delta base"
    )]
    pub(crate) base_password: bool,
    /// Read the base's password from the first line of FILE
    #[arg(
        long,
        value_name = "FILE",
        requires = "base",
        conflicts_with = "base_pass_fd",
        help_heading = "Delta base"
    )]
    pub(crate) base_pass_file: Option<PathBuf>,
    /// Read the base's password from file descriptor N
    #[arg(long, value_name = "N", requires = "base", help_heading = "Delta base")]
    pub(crate) base_pass_fd: Option<i32>,
    /// A key file of the base (repeatable)
    #[arg(
        long = "base-keyfile",
        value_name = "FILE",
        requires = "base",
        help_heading = "Delta base"
    )]
    pub(crate) base_keyfiles: Vec<PathBuf>,
    /// A box secret key of the base (repeatable)
    #[arg(
        long = "base-identity",
        visible_alias = "base-i",
        value_name = "SECRET",
        requires = "base",
        help_heading = "Delta base"
    )]
    pub(crate) base_identities: Vec<OsString>,
    /// Password of a protected --base-identity key from the first line of FILE (default:
    /// prompt)
    #[arg(
        long,
        value_name = "FILE",
        requires = "base",
        help_heading = "Delta base"
    )]
    pub(crate) base_key_pass_file: Option<PathBuf>,
}
