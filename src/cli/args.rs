//! The command-line definitions (clap derive): every subcommand, its options and their
//! help text. The same definitions give `--help`, the man pages (`krypta manpage`, with
//! `clap_mangen`) and the shell completions (`krypta completions`, with `clap_complete`).
//! Help text is kept to one line per option where it can be, and checked to fit 80 columns
//! (a test in `cli::mod`).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub(crate) use super::args_keys::{BaseArgs, KeygenArgs, RekeyArgs};
pub(crate) use super::args_read::{InfoArgs, ListArgs, TestArgs};

pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  usage or general error (bad option, output exists or is a directory, key missing,
     path not in archive, a directory or a pipe where a seekable archive is needed, no AWS
     credentials for an s3:// path, c -C DIR missing or not a directory)
  2  authentication failed: wrong password or key, or the archive (its header) was
     damaged or modified (\"the key is right\" when a stanza opened and the header's MAC
     failed); or a key was given for an unencrypted archive: see --allow-unencrypted
  3  not a krypta archive, unsupported format version, or corrupt/truncated structure
  4  I/O error (disk full, permission denied, missing input, out of memory; also x's
     salvage when a file or directory could not be written; c: no input could be
     archived, nothing written; s3://: missing bucket or key, refused credentials, store
     unreachable; stdout or stdin closed (>&-, <&-) where data was to go or come from)
  5  data integrity: checksum mismatch in an unencrypted archive; damage beyond the
     recovery data (repair; the salvage of x and t exits 5, or 2 when encrypted)
  6  finished, but some items were skipped, each named in a warning:
     c: inputs that could not be read (--strict: abort), changed or vanished, or left
     out (a FIFO, socket or device; a different file under a name stored already)
     x -k: existing files kept; x: entries that could not be made (a hard link
     selected without its target or whose target --strip-components removed, entries
     below an existing file with --skip-existing, a name or link target longer than
     the file system holds, a hard link past its limit of links to a file, a file
     larger than it holds)
  7  t: every entry verified, but the archive (or with --base its base) is damaged and
     its recovery data can repair it, or its recovery data is damaged or missing
     (krypta repair); x and l repair what they read and exit 0
  8  signature refused: --signer given and the archive is unsigned or signed by another
     key, or a signed archive's signature does not verify or its bytes were changed
  9  delta base: x or t of a delta archive without --base, a --base that is not
     the archive it was made against, or base frames it needs are damaged (salvage
     goes on with the entries that do not need them); when the delta archive is
     damaged on its own account too, its own code (5, 3 or 2) instead
  130  interrupted (Ctrl-C, also at a password prompt); 143 SIGTERM; 129 SIGHUP";

/// krypta: encrypted, authenticated, parallel archives for long-lived backups.
#[derive(Parser, Debug)]
#[command(
    name = "krypta",
    version,
    about,
    after_help = EXIT_CODES,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Create an archive: krypta c OUTPUT INPUT... (OUTPUT - = stdout, INPUT - = stdin)
    #[command(visible_alias = "c", after_help = COMPRESS_NOTES)]
    Compress(CompressArgs),
    /// Extract an archive (ARCHIVE - = stdin), optionally only the given paths
    #[command(visible_alias = "x", after_help = EXTRACT_NOTES)]
    Extract(ExtractArgs),
    /// List the entries of an archive
    #[command(visible_alias = "l", after_help = EXIT_CODES)]
    List(ListArgs),
    /// Read and verify everything in an archive, writing nothing
    #[command(visible_alias = "t", after_help = EXIT_CODES)]
    Test(TestArgs),
    /// Show header facts (version, time, id, encryption, counts) without any key
    #[command(after_help = EXIT_CODES)]
    Info(InfoArgs),
    /// Rebuild a damaged archive from its recovery data, byte for byte (no key needed)
    #[command(after_help = EXIT_CODES)]
    Repair(RepairArgs),
    /// Generate a key file (-o FILE), a box keypair (--box -o NAME) or a signing keypair (--sign)
    Keygen(KeygenArgs),
    /// Write an encrypted archive again with new keys, without recompressing: krypta rekey IN -o OUT
    #[command(after_help = EXIT_CODES)]
    Rekey(RekeyArgs),
    /// Run the known-answer vectors of every primitive through krypta's own code paths
    Kat(KatArgs),
    /// Measure the benchmark tables on this machine (markdown on stdout; see BENCHMARKS.md)
    Bench(BenchArgs),
    /// Print a shell completion script: krypta completions bash|zsh|fish|elvish|powershell
    Completions(CompletionsArgs),
    /// Write the man pages (krypta.1 and one per command) into DIR
    Manpage(ManpageArgs),
}

#[derive(Args, Debug)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct ManpageArgs {
    /// Directory to write the pages into (created if missing)
    pub(crate) dir: PathBuf,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct KatArgs {
    /// Run the vector files in DIR instead of the copies built into the binary
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    /// Your own files: run table 1 (codec ratio and speed) on them instead
    pub(crate) files: Vec<PathBuf>,
    /// Small inputs, one run each: under a minute on 2 cores (indicative numbers)
    #[arg(long)]
    pub(crate) quick: bool,
    /// Run only table N (1..7, 9..15; repeatable)
    #[arg(long = "table", value_name = "N")]
    pub(crate) tables: Vec<u8>,
    /// Print JSON instead of markdown
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the fixtures into DIR and stop
    #[arg(long, value_name = "DIR")]
    pub(crate) make_fixtures: Option<PathBuf>,
    /// Read the fixtures from DIR (made there first if missing)
    #[arg(long, value_name = "DIR")]
    pub(crate) fixtures: Option<PathBuf>,
    /// Threads of the all-cores columns (default: all cores)
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Common {
    /// Say more (which authentication check failed, per-entry details)
    #[arg(short, long, global = true)]
    pub(crate) verbose: bool,
    /// Print nothing but errors
    #[arg(short, long, global = true)]
    pub(crate) quiet: bool,
}

/// Object storage options (archives given as `s3://BUCKET/KEY`).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct StoreArgs {
    /// S3-compatible endpoint for s3:// archives, e.g. http://127.0.0.1:8333 (default:
    /// AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS)
    #[arg(long, value_name = "URL")]
    pub(crate) endpoint_url: Option<String>,
}

/// Keys for reading an archive. Without one, an archive that needs a password asks for it on
/// the terminal when stdin or stderr is one.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct KeyArgs {
    /// Prompt for the password on the terminal
    #[arg(
        short = 'p',
        long = "password",
        conflicts_with_all = ["pass_file", "pass_fd"],
        help_heading = "Keys"
    )]
    pub(crate) password: bool,
    /// Read the password from the first line of FILE
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "pass_fd",
        help_heading = "Keys"
    )]
    pub(crate) pass_file: Option<PathBuf>,
    /// Read the password from file descriptor N
    #[arg(long, value_name = "N", help_heading = "Keys")]
    pub(crate) pass_fd: Option<i32>,
    /// A key file made by `krypta keygen -o FILE` (repeatable)
    #[arg(long = "keyfile", value_name = "FILE", help_heading = "Keys")]
    pub(crate) keyfiles: Vec<PathBuf>,
    /// A box secret key made by `krypta keygen --box` (repeatable)
    #[arg(
        short = 'i',
        long = "identity",
        visible_alias = "pq-box",
        value_name = "SECRET",
        help_heading = "Keys"
    )]
    pub(crate) identities: Vec<OsString>,
    /// Read an unencrypted archive although a key was given (refused by default: anyone
    /// can write an unencrypted archive)
    #[arg(long, help_heading = "Keys")]
    pub(crate) allow_unencrypted: bool,
    /// Require a signature by this signer (NAME.pub or key text; repeatable: any of them)
    #[arg(long = "signer", value_name = "PUB", help_heading = "Signatures")]
    pub(crate) signers: Vec<OsString>,
    /// Password of a protected secret key (-i) from the first line of FILE (default: prompt)
    #[arg(long, value_name = "FILE", help_heading = "Keys")]
    pub(crate) key_pass_file: Option<PathBuf>,
    /// Decode worker threads (default and most: the cores but one, the reading thread has one)
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub(crate) enum KdfName {
    Argon2id,
    Pbkdf2,
}

#[derive(Args, Debug)]
pub(crate) struct CompressArgs {
    /// Archive to write (- = stdout, s3://BUCKET/KEY = an object)
    pub(crate) output: PathBuf,
    /// Files and directories to archive (- = one stream from stdin; a symbolic link to a
    /// pipe, as <(cmd) gives, is read the same way)
    #[arg(required_unless_present = "files_from")]
    pub(crate) inputs: Vec<PathBuf>,
    /// Read the inputs (and --files-from names) relative to DIR and store them as named
    /// there, as tar -C DIR (OUTPUT and option files stay relative to here)
    #[arg(short = 'C', long, value_name = "DIR")]
    pub(crate) directory: Option<PathBuf>,
    /// Compression level 1 (fast) ..= 9 (smallest); see README for the zstd mapping
    #[arg(short, long, value_name = "1..9", value_parser = clap::value_parser!(u8).range(1..=9))]
    pub(crate) level: Option<u8>,
    /// Store blocks without compression
    #[arg(short, long, conflicts_with = "level")]
    pub(crate) store: bool,
    /// Worker threads (default and at most: all cores; with -s the cores minus one; the
    /// default is fewer when ulimit -v or the cgroup's memory.max would not hold them)
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// Block size: 4M, 512K, 64MiB, 4MB (= 10^6) (default 4M; level 9: 64M; with --base at levels 7, 8, 9: 8M, 16M, 32M)
    #[arg(short = 'b', long, value_name = "SIZE")]
    pub(crate) block_size: Option<String>,
    /// BCJ filter: auto, off, x86, arm64, arm, armthumb, powerpc, sparc, ia64, riscv
    #[arg(long, default_value = "auto", value_name = "FILTER")]
    pub(crate) bcj: String,
    /// Overwrite OUTPUT if it exists, keeping its mode and owner (never when OUTPUT is also
    /// an input)
    #[arg(short, long)]
    pub(crate) force: bool,
    /// Do not fsync the archive and its directory before exiting (faster on a slow disk; a
    /// crash soon after can lose the archive). Default: synced, as the only copy
    #[arg(long)]
    pub(crate) no_fsync: bool,
    /// Follow symbolic links instead of storing them
    #[arg(short = 'L', long)]
    pub(crate) dereference: bool,
    /// A comment stored (authenticated, not encrypted) in the header, at most 4096 bytes
    #[arg(long)]
    pub(crate) comment: Option<String>,
    /// Leave out names matching PATTERN (gitignore-style glob; repeatable)
    #[arg(long, value_name = "PATTERN", help_heading = "Choosing what goes in")]
    pub(crate) exclude: Vec<std::ffi::OsString>,
    /// Read exclude patterns from FILE, one per line, # comments (repeatable)
    #[arg(long, value_name = "FILE", help_heading = "Choosing what goes in")]
    pub(crate) exclude_from: Vec<PathBuf>,
    /// Archive the names listed in FILE (- = stdin), one per line, as inputs
    #[arg(long, value_name = "FILE", help_heading = "Choosing what goes in")]
    pub(crate) files_from: Option<PathBuf>,
    /// Names in --files-from end with NUL, not newline (find -print0)
    #[arg(long, requires = "files_from", help_heading = "Choosing what goes in")]
    pub(crate) null: bool,
    /// Do not descend into directories on other file systems (mount points are stored empty)
    #[arg(long, help_heading = "Choosing what goes in")]
    pub(crate) one_file_system: bool,
    /// Store only CACHEDIR.TAG of directories tagged as caches (cargo's target/, ...)
    #[arg(long, help_heading = "Choosing what goes in")]
    pub(crate) exclude_caches: bool,
    /// Abort, writing nothing, if an input cannot be read (default: skip it, exit 6)
    #[arg(long, help_heading = "Choosing what goes in")]
    pub(crate) strict: bool,
    /// Encrypt with a password typed at a prompt (asked twice)
    #[arg(
        short = 'p',
        long = "password",
        conflicts_with_all = ["pass_file", "pass_fd"],
        help_heading = "Encryption"
    )]
    pub(crate) password: bool,
    /// Encrypt with the password in the first line of FILE
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "pass_fd",
        help_heading = "Encryption"
    )]
    pub(crate) pass_file: Option<PathBuf>,
    /// Encrypt with the password read from file descriptor N
    #[arg(long, value_name = "N", help_heading = "Encryption")]
    pub(crate) pass_fd: Option<i32>,
    /// Password KDF (default argon2id)
    #[arg(long, value_enum, help_heading = "Encryption")]
    pub(crate) kdf: Option<KdfName>,
    /// Argon2id memory: MiB, or a size such as 512M, 1GiB (default 256)
    #[arg(long, value_name = "SIZE", help_heading = "Encryption")]
    pub(crate) kdf_memory: Option<String>,
    /// Argon2id passes or PBKDF2 iterations
    #[arg(long, value_name = "N", help_heading = "Encryption")]
    pub(crate) kdf_iterations: Option<u32>,
    /// Encrypt to a key file made by `krypta keygen -o FILE` (repeatable)
    #[arg(long = "keyfile", value_name = "FILE", help_heading = "Encryption")]
    pub(crate) keyfiles: Vec<PathBuf>,
    /// Encrypt to a box public key: a NAME.pub file or the key text (repeatable)
    #[arg(
        short = 'r',
        long = "recipient",
        visible_alias = "pq-box",
        value_name = "PUB",
        help_heading = "Encryption"
    )]
    pub(crate) recipients: Vec<OsString>,
    /// Encrypt to every public key in FILE: one per line, # comments (repeatable)
    #[arg(
        short = 'R',
        long = "recipients-file",
        value_name = "FILE",
        help_heading = "Encryption"
    )]
    pub(crate) recipients_files: Vec<PathBuf>,
    /// Add Reed-Solomon recovery data of PCT% (1..50): repairs damage up to about that
    /// much on read and with `krypta repair` (see README, "Surviving damage")
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(1..=50))]
    pub(crate) recovery: Option<u8>,
    /// Sign the archive with the signing key NAME (made by `krypta keygen --sign -o NAME`)
    #[arg(long, value_name = "NAME", help_heading = "Signatures")]
    pub(crate) sign: Option<PathBuf>,
    /// Password of a protected signing key from the first line of FILE (default: prompt)
    #[arg(
        long,
        value_name = "FILE",
        requires = "sign",
        help_heading = "Signatures"
    )]
    pub(crate) key_pass_file: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) delta: BaseArgs,
    #[command(flatten)]
    pub(crate) meta: MetaArgs,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct RepairArgs {
    /// Archive to repair (a file or s3://BUCKET/KEY)
    pub(crate) archive: PathBuf,
    /// Write the repaired archive to OUT (without -o: replace ARCHIVE, only with -f)
    #[arg(short, long, value_name = "OUT")]
    pub(crate) output: Option<PathBuf>,
    /// Replace OUT if it exists; without -o, replace ARCHIVE with its repaired bytes
    #[arg(short, long)]
    pub(crate) force: bool,
    /// Only verify (keyless) and say what repair would do, writing nothing: exit 0 intact,
    /// 7 damaged but repairable (or its recovery data missing), 5 beyond the recovery data
    /// (also an archive cut short before its recovery data)
    #[arg(long, conflicts_with_all = ["output", "force"])]
    pub(crate) check: bool,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

pub(crate) const COMPRESS_NOTES: &str = "\
Patterns (--exclude, --exclude-from) are gitignore-style globs matched against the
stored name (the input path as given, without a leading /): * and ? stay within one
path component, ** spans components, a trailing / matches directories only, !pat
re-includes. A pattern matches at any depth (*.o, build/tmp, as tar and restic), unless
it starts with / (anchored at the start of the stored name). An excluded directory is
not read. See README, \"Choosing what goes in\".

-v lists each entry as it is stored; a summary line ends every run unless -q.

Exit codes:
  0  success
  1  usage or general error (bad option, output exists, key missing)
  4  I/O error (an input missing with --strict, disk full, permission denied, out of
     memory)
  6  archive written, but some inputs were skipped (unreadable, vanished) or changed
     while read: each is named in a warning";

#[derive(Args, Debug)]
pub(crate) struct ExtractArgs {
    /// Archive to read (- = stdin, s3://BUCKET/KEY = an object)
    pub(crate) archive: PathBuf,
    /// Only these paths (and what is below them); globs with --wildcards
    pub(crate) paths: Vec<OsString>,
    /// PATHs are glob patterns (as --exclude: *.conf matches at any depth, /etc/* anchors)
    #[arg(long)]
    pub(crate) wildcards: bool,
    /// Take PATHs byte for byte (default: as `l` prints names, a\nb = a newline)
    #[arg(long, conflicts_with = "wildcards")]
    pub(crate) no_unquote: bool,
    /// Output directory (-C DIR as in tar works too)
    #[arg(
        short,
        long,
        visible_short_alias = 'C',
        default_value = ".",
        value_name = "DIR"
    )]
    pub(crate) output: PathBuf,
    /// Write file contents to stdout instead of creating files
    #[arg(long)]
    pub(crate) stdout: bool,
    /// Keep existing files, name each, extract the rest (exit 6); existing directories keep
    /// their owner, mode and times
    #[arg(short = 'k', long = "keep-old-files", conflicts_with_all = ["skip_existing", "force"])]
    pub(crate) keep_old_files: bool,
    /// Keep existing files silently, extract the rest (exit 0; 6 when entries below an
    /// existing file could not be made, each named); existing directories keep their owner,
    /// mode and times
    #[arg(long, conflicts_with = "force")]
    pub(crate) skip_existing: bool,
    /// Replace existing files and links (atomically; directories are never replaced)
    #[arg(short, long)]
    pub(crate) force: bool,
    /// Drop the first N path components
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) strip_components: usize,
    /// Do not restore modification times
    #[arg(long)]
    pub(crate) no_mtime: bool,
    /// Restore setuid/setgid/sticky bits too (always on as root)
    #[arg(long)]
    pub(crate) same_permissions: bool,
    /// Stop at the first damaged frame or entry instead of restoring everything else
    #[arg(long)]
    pub(crate) fail_fast: bool,
    #[command(flatten)]
    pub(crate) meta: MetaArgs,
    #[command(flatten)]
    pub(crate) owner: OwnerArgs,
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
    #[command(flatten)]
    pub(crate) delta: BaseArgs,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

pub(crate) const EXTRACT_NOTES: &str = "\
Existing files: before anything is written, every entry's name is looked up in the
output (when ARCHIVE is a file). Without -k, --skip-existing or -f, any existing file
in the way stops the extraction with the list of names: nothing is written. Found
later (ARCHIVE is a pipe, or a file appeared meanwhile), existing files are kept, the
rest is extracted and they are all named at the end (exit 1). A directory is reused
for a directory entry and never replaced by a file. Extraction never goes through a
symbolic link in the output.

-v lists each entry as it is extracted; a summary line ends every run unless -q.

Exit codes:
  0  success      1  usage, path not in archive, existing files in the way
  2  authentication failed (wrong password or key, or modified)
  3  not an archive, corrupt, unsafe entry path      4  I/O error
  5  checksum mismatch (unencrypted archive)         6  kept or not made, each named
  8  signature refused (--signer: unsigned, other signer; or a bad signature)
  9  delta base missing (--base), not the one the archive names, or damaged";

impl Cli {
    pub(crate) fn common(&self) -> &Common {
        match &self.cmd {
            Command::Compress(a) => &a.common,
            Command::Extract(a) => &a.common,
            Command::List(a) => &a.common,
            Command::Test(a) => &a.common,
            Command::Info(a) => &a.common,
            Command::Repair(a) => &a.common,
            Command::Keygen(a) => &a.common,
            Command::Rekey(a) => &a.common,
            Command::Kat(a) => &a.common,
            Command::Bench(a) => &a.common,
            Command::Completions(a) => &a.common,
            Command::Manpage(a) => &a.common,
        }
    }
    /// The object-storage options of the commands that take an archive path.
    pub(crate) fn store(&self) -> Option<&StoreArgs> {
        match &self.cmd {
            Command::Compress(a) => Some(&a.storage),
            Command::Extract(a) => Some(&a.storage),
            Command::List(a) => Some(&a.storage),
            Command::Test(a) => Some(&a.storage),
            Command::Info(a) => Some(&a.storage),
            Command::Repair(a) => Some(&a.storage),
            Command::Rekey(a) => Some(&a.storage),
            _ => None,
        }
    }
    /// `-v` given.
    pub fn verbose(&self) -> bool {
        self.common().verbose
    }
    /// `-q` given.
    pub fn quiet(&self) -> bool {
        self.common().quiet
    }
}

/// Which metadata `c` stores and `x` restores (flattened into both).
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct MetaArgs {
    /// Skip extended attributes other than ACLs (user.*, security.* incl. capabilities, trusted.*)
    #[arg(long)]
    pub(crate) no_xattrs: bool,
    /// Skip POSIX ACLs (system.posix_acl_access, system.posix_acl_default)
    #[arg(long)]
    pub(crate) no_acls: bool,
    /// Owners as numeric ids only: c stores no user/group names, x ignores them
    #[arg(long)]
    pub(crate) numeric_owner: bool,
}

impl MetaArgs {
    /// The extended attributes selected.
    pub(crate) fn xattrs(&self) -> krypta::fs::xattr::XattrSelect {
        krypta::fs::xattr::XattrSelect {
            xattrs: !self.no_xattrs,
            acls: !self.no_acls,
        }
    }
}

/// Whether `x` restores owners (default: as root only, like tar).
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct OwnerArgs {
    /// Restore owners also as an ordinary user (an owner that may not be given is a warning)
    #[arg(long, conflicts_with = "no_same_owner")]
    pub(crate) same_owner: bool,
    /// Do not restore owners, also as root (files belong to the extracting user)
    #[arg(long)]
    pub(crate) no_same_owner: bool,
}
