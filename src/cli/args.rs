//! The command-line definitions (clap derive): every subcommand, its options and their
//! help text. The same definitions give `--help`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  usage or general error (bad option, output exists, key missing, path not in archive,
     no AWS credentials for an s3:// path)
  2  authentication failed: wrong password or key, or the archive was modified
     (or a key was given for an unencrypted archive: see --allow-unencrypted)
  3  not a krypta archive, unsupported format version, or corrupt/truncated structure
  4  I/O error (disk full, permission denied, missing input; s3://: missing bucket or key,
     refused credentials, store unreachable)
  5  data integrity: checksum mismatch in an unencrypted archive
  6  archive written, but some inputs changed or vanished while being read";

/// krypta: encrypted, authenticated, parallel archives for long-lived backups.
#[derive(Parser, Debug)]
#[command(name = "krypta", version, about, after_help = EXIT_CODES, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Create an archive: krypta c OUTPUT INPUT... (OUTPUT - = stdout, INPUT - = stdin)
    #[command(visible_alias = "c", after_help = EXIT_CODES)]
    Compress(CompressArgs),
    /// Extract an archive (ARCHIVE - = stdin), optionally only the given paths
    #[command(visible_alias = "x", after_help = EXIT_CODES)]
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
    /// Generate a key file (-o FILE) or a post-quantum box keypair (--box -o NAME)
    Keygen(KeygenArgs),
    /// Run the known-answer vectors of every primitive through krypta's own code paths
    Kat(KatArgs),
    /// Measure the benchmark tables on this machine (markdown on stdout; see BENCHMARKS.md)
    Bench(BenchArgs),
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
    /// Run only table N (1..7, 9..13; repeatable)
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

/// Keys for reading an archive.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct KeyArgs {
    /// Prompt for the password on the terminal
    #[arg(short = 'p', long = "password")]
    pub(crate) password: bool,
    /// Read the password from the first line of FILE
    #[arg(long, value_name = "FILE")]
    pub(crate) pass_file: Option<PathBuf>,
    /// Read the password from file descriptor N
    #[arg(long, value_name = "N")]
    pub(crate) pass_fd: Option<i32>,
    /// A key file made by `krypta keygen -o FILE` (repeatable)
    #[arg(long = "keyfile", value_name = "FILE")]
    pub(crate) keyfiles: Vec<PathBuf>,
    /// A box secret key made by `krypta keygen --box` (repeatable)
    #[arg(
        short = 'i',
        long = "identity",
        visible_alias = "pq-box",
        value_name = "SECRET"
    )]
    pub(crate) identities: Vec<String>,
    /// Read the archive even if it is not encrypted although a key option was given (by
    /// default that is refused: anyone can write an unencrypted archive)
    #[arg(long)]
    pub(crate) allow_unencrypted: bool,
    /// Worker threads (default: all cores)
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
    /// Files and directories to archive (- = one stream from stdin)
    #[arg(required = true)]
    pub(crate) inputs: Vec<PathBuf>,
    /// Compression level 1 (fast) ..= 9 (smallest); see README for the zstd mapping
    #[arg(short, long, value_name = "1..9", value_parser = clap::value_parser!(u8).range(1..=9))]
    pub(crate) level: Option<u8>,
    /// Store blocks without compression
    #[arg(short, long, conflicts_with = "level")]
    pub(crate) store: bool,
    /// Worker threads (default: all cores)
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// Block size, e.g. 4M, 512K, 64M (default: 4M; level 9: see README)
    #[arg(short = 'b', long, value_name = "SIZE")]
    pub(crate) block_size: Option<String>,
    /// BCJ filter: auto (detect executables), off, x86, arm64, arm, armthumb, powerpc, sparc, ia64, riscv
    #[arg(long, default_value = "auto", value_name = "FILTER")]
    pub(crate) bcj: String,
    /// Overwrite OUTPUT if it exists
    #[arg(short, long)]
    pub(crate) force: bool,
    /// Follow symbolic links instead of storing them
    #[arg(short = 'L', long)]
    pub(crate) dereference: bool,
    /// Encrypt with a password typed at a prompt (asked twice)
    #[arg(short = 'p', long = "password")]
    pub(crate) password: bool,
    /// Encrypt with the password in the first line of FILE
    #[arg(long, value_name = "FILE")]
    pub(crate) pass_file: Option<PathBuf>,
    /// Encrypt with the password read from file descriptor N
    #[arg(long, value_name = "N")]
    pub(crate) pass_fd: Option<i32>,
    /// Password KDF (default argon2id)
    #[arg(long, value_enum)]
    pub(crate) kdf: Option<KdfName>,
    /// Argon2id memory in MiB
    #[arg(long, value_name = "MiB")]
    pub(crate) kdf_memory: Option<u32>,
    /// Argon2id passes or PBKDF2 iterations
    #[arg(long, value_name = "N")]
    pub(crate) kdf_iterations: Option<u32>,
    /// Encrypt to a key file made by `krypta keygen -o FILE` (repeatable)
    #[arg(long = "keyfile", value_name = "FILE")]
    pub(crate) keyfiles: Vec<PathBuf>,
    /// Encrypt to a box public key: a NAME.pub file or the key text (repeatable)
    #[arg(
        short = 'r',
        long = "recipient",
        visible_alias = "pq-box",
        value_name = "PUB"
    )]
    pub(crate) recipients: Vec<String>,
    /// A comment stored (authenticated, not encrypted) in the header, at most 4096 bytes
    #[arg(long)]
    pub(crate) comment: Option<String>,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct ExtractArgs {
    /// Archive to read (- = stdin, s3://BUCKET/KEY = an object)
    pub(crate) archive: PathBuf,
    /// Only these paths (and what is below them)
    pub(crate) paths: Vec<OsString>,
    /// Output directory
    #[arg(short, long, default_value = ".", value_name = "DIR")]
    pub(crate) output: PathBuf,
    /// Write file contents to stdout instead of creating files
    #[arg(long)]
    pub(crate) stdout: bool,
    /// Replace existing files (atomically)
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
    pub(crate) keys: KeyArgs,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct ListArgs {
    /// Archive to read (- = stdin, s3://BUCKET/KEY = an object)
    pub(crate) archive: PathBuf,
    /// Print `BLAKE3  path` lines that `b3sum --check` accepts
    #[arg(long)]
    pub(crate) b3: bool,
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct TestArgs {
    /// Archive to read (- = stdin, s3://BUCKET/KEY = an object)
    pub(crate) archive: PathBuf,
    /// Stop at the first damaged frame or entry instead of verifying everything else
    #[arg(long)]
    pub(crate) fail_fast: bool,
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct InfoArgs {
    /// Archive to read (- = stdin, s3://BUCKET/KEY = an object)
    pub(crate) archive: PathBuf,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct KeygenArgs {
    /// Output file (never overwritten); with --box also writes OUTPUT.pub
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Generate an ML-KEM-768 + X25519 box keypair instead of a symmetric key file
    #[arg(long = "box")]
    pub(crate) box_key: bool,
    /// Print the public key of the box secret key given with -k
    #[arg(long = "pub", requires = "key")]
    pub(crate) public: bool,
    /// Box secret key file (with --pub)
    #[arg(short = 'k', long = "key", value_name = "SECRET")]
    pub(crate) key: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) common: Common,
}

impl Cli {
    pub(crate) fn common(&self) -> &Common {
        match &self.cmd {
            Command::Compress(a) => &a.common,
            Command::Extract(a) => &a.common,
            Command::List(a) => &a.common,
            Command::Test(a) => &a.common,
            Command::Info(a) => &a.common,
            Command::Keygen(a) => &a.common,
            Command::Kat(a) => &a.common,
            Command::Bench(a) => &a.common,
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
