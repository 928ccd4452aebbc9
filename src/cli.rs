//! Command-line definitions (clap derive) and the mapping of validated options onto library
//! calls. The same definitions give `--help`.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use krypta::archive::reader::OpenOptions;
use krypta::archive::writer::{BcjMode, WriteOptions};
use krypta::codec::{DEFAULT_BLOCK_SIZE, Filter, Level, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE};
use krypta::crypto::kdf;
use krypta::crypto::password::{PasswordSource, read_password};
use krypta::crypto::stanza::{Identity, Kdf, Recipient};
use krypta::{Error, Result};

use crate::Term;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  usage or general error (bad option, output exists, key missing, path not in archive)
  2  authentication failed: wrong password or key, or the archive was modified
     (or a key was given for an unencrypted archive: see --allow-unencrypted)
  3  not a krypta archive, unsupported format version, or corrupt/truncated structure
  4  I/O error (disk full, permission denied, missing input)
  5  data integrity: checksum mismatch in an unencrypted archive
  6  archive written, but some inputs changed or vanished while being read";

/// krypta: encrypted, authenticated, parallel archives for long-lived backups.
#[derive(Parser, Debug)]
#[command(name = "krypta", version, about, after_help = EXIT_CODES, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
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
struct KatArgs {
    /// Run the vector files in DIR instead of the copies built into the binary
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Your own files: run table 1 (codec ratio and speed) on them instead
    files: Vec<PathBuf>,
    /// Small inputs, one run each: under a minute on 2 cores (indicative numbers)
    #[arg(long)]
    quick: bool,
    /// Run only table N (1..7; repeatable)
    #[arg(long = "table", value_name = "N")]
    tables: Vec<u8>,
    /// Print JSON instead of markdown
    #[arg(long)]
    json: bool,
    /// Write the fixtures into DIR and stop
    #[arg(long, value_name = "DIR")]
    make_fixtures: Option<PathBuf>,
    /// Read the fixtures from DIR (made there first if missing)
    #[arg(long, value_name = "DIR")]
    fixtures: Option<PathBuf>,
    /// Threads of the all-cores columns (default: all cores)
    #[arg(short = 'j', long, value_name = "N")]
    jobs: Option<usize>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug, Clone, Default)]
struct Common {
    /// Say more (which authentication check failed, per-entry details)
    #[arg(short, long, global = true)]
    verbose: bool,
    /// Print nothing but errors
    #[arg(short, long, global = true)]
    quiet: bool,
}

/// Keys for reading an archive.
#[derive(Args, Debug, Clone, Default)]
struct KeyArgs {
    /// Prompt for the password on the terminal
    #[arg(short = 'p', long = "password")]
    password: bool,
    /// Read the password from the first line of FILE
    #[arg(long, value_name = "FILE")]
    pass_file: Option<PathBuf>,
    /// Read the password from file descriptor N
    #[arg(long, value_name = "N")]
    pass_fd: Option<i32>,
    /// A key file made by `krypta keygen -o FILE` (repeatable)
    #[arg(long = "keyfile", value_name = "FILE")]
    keyfiles: Vec<PathBuf>,
    /// A box secret key made by `krypta keygen --box` (repeatable)
    #[arg(
        short = 'i',
        long = "identity",
        visible_alias = "pq-box",
        value_name = "SECRET"
    )]
    identities: Vec<String>,
    /// Read the archive even if it is not encrypted although a key option was given (by
    /// default that is refused: anyone can write an unencrypted archive)
    #[arg(long)]
    allow_unencrypted: bool,
    /// Worker threads (default: all cores)
    #[arg(short = 'j', long, value_name = "N")]
    jobs: Option<usize>,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum KdfName {
    Argon2id,
    Pbkdf2,
}

#[derive(Args, Debug)]
struct CompressArgs {
    /// Archive to write (- = stdout)
    output: PathBuf,
    /// Files and directories to archive (- = one stream from stdin)
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Compression level 1 (fast) ..= 9 (smallest); see README for the zstd mapping
    #[arg(short, long, value_name = "1..9", value_parser = clap::value_parser!(u8).range(1..=9))]
    level: Option<u8>,
    /// Store blocks without compression
    #[arg(short, long, conflicts_with = "level")]
    store: bool,
    /// Worker threads (default: all cores)
    #[arg(short = 'j', long, value_name = "N")]
    jobs: Option<usize>,
    /// Block size, e.g. 4M, 512K, 64M (default: 4M; level 9: see README)
    #[arg(short = 'b', long, value_name = "SIZE")]
    block_size: Option<String>,
    /// BCJ filter: auto (detect executables), off, x86, arm64, arm, armthumb, powerpc, sparc, ia64, riscv
    #[arg(long, default_value = "auto", value_name = "FILTER")]
    bcj: String,
    /// Overwrite OUTPUT if it exists
    #[arg(short, long)]
    force: bool,
    /// Follow symbolic links instead of storing them
    #[arg(short = 'L', long)]
    dereference: bool,
    /// Encrypt with a password typed at a prompt (asked twice)
    #[arg(short = 'p', long = "password")]
    password: bool,
    /// Encrypt with the password in the first line of FILE
    #[arg(long, value_name = "FILE")]
    pass_file: Option<PathBuf>,
    /// Encrypt with the password read from file descriptor N
    #[arg(long, value_name = "N")]
    pass_fd: Option<i32>,
    /// Password KDF (default argon2id)
    #[arg(long, value_enum)]
    kdf: Option<KdfName>,
    /// Argon2id memory in MiB
    #[arg(long, value_name = "MiB")]
    kdf_memory: Option<u32>,
    /// Argon2id passes or PBKDF2 iterations
    #[arg(long, value_name = "N")]
    kdf_iterations: Option<u32>,
    /// Encrypt to a key file made by `krypta keygen -o FILE` (repeatable)
    #[arg(long = "keyfile", value_name = "FILE")]
    keyfiles: Vec<PathBuf>,
    /// Encrypt to a box public key: a NAME.pub file or the key text (repeatable)
    #[arg(
        short = 'r',
        long = "recipient",
        visible_alias = "pq-box",
        value_name = "PUB"
    )]
    recipients: Vec<String>,
    /// A comment stored (authenticated, not encrypted) in the header, at most 4096 bytes
    #[arg(long)]
    comment: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct ExtractArgs {
    /// Archive to read (- = stdin)
    archive: PathBuf,
    /// Only these paths (and what is below them)
    paths: Vec<OsString>,
    /// Output directory
    #[arg(short, long, default_value = ".", value_name = "DIR")]
    output: PathBuf,
    /// Write file contents to stdout instead of creating files
    #[arg(long)]
    stdout: bool,
    /// Replace existing files (atomically)
    #[arg(short, long)]
    force: bool,
    /// Drop the first N path components
    #[arg(long, value_name = "N", default_value_t = 0)]
    strip_components: usize,
    /// Do not restore modification times
    #[arg(long)]
    no_mtime: bool,
    /// Restore setuid/setgid/sticky bits too (always on as root)
    #[arg(long)]
    same_permissions: bool,
    #[command(flatten)]
    keys: KeyArgs,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Archive to read (- = stdin)
    archive: PathBuf,
    /// Print `BLAKE3  path` lines that `b3sum --check` accepts
    #[arg(long)]
    b3: bool,
    #[command(flatten)]
    keys: KeyArgs,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct TestArgs {
    /// Archive to read (- = stdin)
    archive: PathBuf,
    #[command(flatten)]
    keys: KeyArgs,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct InfoArgs {
    /// Archive to read (- = stdin)
    archive: PathBuf,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct KeygenArgs {
    /// Output file (never overwritten); with --box also writes OUTPUT.pub
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Generate an ML-KEM-768 + X25519 box keypair instead of a symmetric key file
    #[arg(long = "box")]
    box_key: bool,
    /// Print the public key of the box secret key given with -k
    #[arg(long = "pub", requires = "key")]
    public: bool,
    /// Box secret key file (with --pub)
    #[arg(short = 'k', long = "key", value_name = "SECRET")]
    key: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

impl Cli {
    fn common(&self) -> &Common {
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
    /// `-v` given.
    pub fn verbose(&self) -> bool {
        self.common().verbose
    }
    /// `-q` given.
    pub fn quiet(&self) -> bool {
        self.common().quiet
    }
}

/// Parses a size like `4M`, `512K`, `1G` or a plain byte count (binary units).
pub fn parse_size(s: &str) -> Result<usize> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: usize = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => {
                    return Err(Error::Usage(format!(
                        "bad size '{s}': use a number with K, M or G"
                    )));
                }
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let n: usize = num
        .trim_end_matches(['i', 'I'])
        .parse()
        .map_err(|_| Error::Usage(format!("bad size '{s}'")))?;
    n.checked_mul(mul)
        .ok_or_else(|| Error::Usage(format!("size '{s}' is too large")))
}

/// The password source the flags ask for; `KRYPTA_PASSWORD` counts only when `use_env`.
fn password_source(
    flag: bool,
    file: &Option<PathBuf>,
    fd: Option<i32>,
    use_env: bool,
) -> Option<PasswordSource> {
    if let Some(f) = file {
        Some(PasswordSource::File(f.clone()))
    } else if let Some(fd) = fd {
        Some(PasswordSource::Fd(fd))
    } else if flag {
        Some(PasswordSource::Prompt)
    } else if use_env && std::env::var_os("KRYPTA_PASSWORD").is_some() {
        Some(PasswordSource::Env)
    } else {
        None
    }
}

/// `--pass-fd 0` reads the password from stdin; with a `-` stream on stdin too, the password
/// reader could consume stream bytes, so that combination is refused.
fn check_pass_fd(fd: Option<i32>, stdin_in_use: bool) -> Result<()> {
    if fd == Some(0) && stdin_in_use {
        return Err(Error::Usage(
            "--pass-fd 0 reads the password from stdin, which also carries the data here; use another descriptor or --pass-file".into(),
        ));
    }
    Ok(())
}

fn identities(k: &KeyArgs) -> Result<Vec<Identity>> {
    let mut ids = Vec::new();
    if let Some(src) = password_source(k.password, &k.pass_file, k.pass_fd, true) {
        ids.push(Identity::Password(read_password(&src, false)?));
    }
    // Mode warnings come after a key loaded, so a key of the wrong kind gets only its error.
    for f in &k.keyfiles {
        let key = krypta::crypto::keyfile::load_keyfile(f)?;
        if let Some(w) = krypta::crypto::keyfile::mode_warning(f) {
            eprintln!("krypta: warning: {w}");
        }
        ids.push(Identity::KeyFile(key));
    }
    for s in &k.identities {
        let key = krypta::crypto::boxkey::load_secret(s)?;
        if let Some(w) = krypta::crypto::boxkey::secret_key_mode_warning(std::path::Path::new(s)) {
            eprintln!("krypta: warning: {w}");
        }
        ids.push(Identity::PqBox(key));
    }
    Ok(ids)
}

/// The keys and options for reading. A key option (`-p`, `--pass-file`, `--pass-fd`,
/// `--keyfile`, `-i`) makes an unencrypted archive an error unless `--allow-unencrypted`; a
/// password that comes only from `KRYPTA_PASSWORD` does not (a variable left in the
/// environment must not make every unencrypted archive unreadable): `x` and `t` then warn.
fn open_options(k: &KeyArgs, archive: &std::path::Path) -> Result<OpenOptions> {
    check_pass_fd(k.pass_fd, archive == std::path::Path::new("-"))?;
    let explicit = k.password
        || k.pass_file.is_some()
        || k.pass_fd.is_some()
        || !k.keyfiles.is_empty()
        || !k.identities.is_empty();
    Ok(OpenOptions {
        identities: identities(k)?,
        jobs: k.jobs.unwrap_or(0),
        allow_unencrypted: k.allow_unencrypted || !explicit,
    })
}

/// Runs the parsed command; returns the exit code for success paths.
pub fn run(cli: Cli) -> Result<u8> {
    let quiet = cli.quiet();
    let verbose = cli.verbose();
    let mut term = Term::new(quiet);
    match cli.cmd {
        Command::Compress(a) => compress(a, &mut term, verbose),
        Command::Extract(a) => {
            let open = open_options(&a.keys, &a.archive)?;
            let req = krypta::ExtractRequest {
                output: a.output,
                paths: a.paths.iter().map(|p| p.as_bytes().to_vec()).collect(),
                stdout: a.stdout,
                fs: krypta::fs::extract::ExtractOptions {
                    force: a.force,
                    strip_components: a.strip_components,
                    no_mtime: a.no_mtime,
                    same_permissions: a.same_permissions,
                    ..Default::default()
                },
            };
            let s = krypta::extract(&a.archive, open, req, &mut term)?;
            if verbose {
                eprintln!(
                    "krypta: extracted {} entries, {} files, {} bytes",
                    s.entries, s.files, s.bytes
                );
            }
            Ok(0)
        }
        Command::List(a) => {
            let open = open_options(&a.keys, &a.archive)?;
            let (entries, frames) = krypta::list(&a.archive, open)?;
            crate::cli::print_list(&entries, &frames, a.b3, verbose)?;
            Ok(0)
        }
        Command::Test(a) => {
            let open = open_options(&a.keys, &a.archive)?;
            let s = krypta::test(&a.archive, open, &mut term)?;
            if !quiet {
                eprintln!(
                    "krypta: {}: OK ({} entries, {} files, {} bytes, {} blocks verified)",
                    a.archive.display(),
                    s.entries,
                    s.files,
                    s.bytes,
                    s.frames
                );
            }
            Ok(0)
        }
        Command::Info(a) => {
            let f = krypta::archive::reader::facts(&a.archive)?;
            print_info(&a.archive, &f);
            Ok(0)
        }
        Command::Keygen(a) => keygen(a, quiet),
        Command::Kat(a) => {
            let report = match &a.dir {
                Some(d) => krypta::kat::run_dir(d)?,
                None => krypta::kat::run_embedded(),
            };
            print!("{}", report.to_table());
            Ok(if report.all_passed() { 0 } else { 1 })
        }
        Command::Bench(a) => bench(a, quiet),
    }
}

/// `krypta bench`: tables on stdout, one status line on stderr when it is a terminal.
fn bench(a: BenchArgs, quiet: bool) -> Result<u8> {
    use std::io::IsTerminal;
    let tty = !quiet && std::io::stderr().is_terminal();
    let mut progress = |m: &str| {
        if tty {
            eprint!("\r\x1b[2Kkrypta bench: {m}");
        }
    };
    if let Some(dir) = &a.make_fixtures {
        krypta::bench::make_fixtures(dir, &mut progress)?;
        if tty {
            eprintln!();
        }
        return Ok(0);
    }
    let opts = krypta::bench::BenchOptions {
        quick: a.quick,
        tables: a.tables,
        files: a.files,
        fixtures_dir: a.fixtures,
        jobs: a.jobs.unwrap_or(0),
    };
    let report = krypta::bench::run(&opts, &mut progress);
    if tty {
        eprint!("\r\x1b[2K");
    }
    let report = report?;
    let text = if a.json {
        format!("{:#}\n", report.to_json())
    } else {
        report.to_markdown()
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| Error::io("<stdout>", "write", e))?;
    Ok(0)
}

fn compress(a: CompressArgs, term: &mut Term, verbose: bool) -> Result<u8> {
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
    };
    let req = krypta::CompressRequest {
        output: a.output.clone(),
        inputs: a.inputs,
        force: a.force,
        dereference: a.dereference,
        xattrs: Default::default(),
        numeric_owner: false,
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

fn keygen(a: KeygenArgs, quiet: bool) -> Result<u8> {
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
        .ok_or_else(|| Error::Usage("keygen needs -o FILE".into()))?;
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

fn print_info(path: &std::path::Path, f: &krypta::archive::reader::ArchiveFacts) {
    let h = &f.header;
    println!("archive:        {}", path.display());
    println!("format version: {}", krypta::format::header::VERSION);
    println!(
        "created:        {} ({})",
        crate::cli::fmt_time(h.created, 0),
        h.created
    );
    println!("archive id:     {}", hex(&h.archive_id));
    let level = if h.level == 0 {
        "store".to_string()
    } else {
        h.level.to_string()
    };
    println!("level:          {level}");
    println!("block size:     {} bytes", h.block_size);
    if h.stanzas.is_empty() {
        println!("encryption:     none (BLAKE3 checksums)");
    } else {
        println!(
            "encryption:     AES-256-CTR + HMAC-SHA256, {} stanza(s)",
            h.stanzas.len()
        );
        let pq = h
            .stanzas
            .iter()
            .filter(|s| matches!(s, krypta::format::Stanza::PqBox { .. }))
            .count();
        for s in &h.stanzas {
            match s {
                krypta::format::Stanza::Argon2id { m_kib, t, p, .. } => {
                    println!(
                        "  argon2id      memory {} KiB ({} MiB), iterations {t}, lanes {p}",
                        m_kib,
                        m_kib / 1024
                    )
                }
                krypta::format::Stanza::Pbkdf2 { iterations, .. } => {
                    println!("  pbkdf2        HMAC-SHA256, {iterations} iterations")
                }
                krypta::format::Stanza::KeyFile { .. } => println!("  keyfile"),
                krypta::format::Stanza::PqBox { .. } => {}
            }
        }
        if pq > 0 {
            println!("  pq-box (ML-KEM-768 + X25519): {pq} recipient(s)");
        }
    }
    if !h.comment.is_empty() {
        println!("comment:        {}", h.comment);
    }
    if let Some(size) = f.size {
        println!("size:           {size} bytes");
    }
    if let Some(ft) = &f.footer {
        println!("data blocks:    {}", ft.data_frames);
        println!("index blocks:   {}", ft.index_frames);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `YYYY-MM-DD HH:MM:SS` in UTC for seconds since the epoch (also before 1970).
pub fn fmt_time(secs: i64, _nanos: u32) -> String {
    krypta::timefmt::datetime(secs)
}

fn mode_string(kind: krypta::format::EntryKind, mode: u32) -> String {
    let mut s = String::with_capacity(10);
    s.push(kind.letter());
    let bits = [
        (0o400, 'r'),
        (0o200, 'w'),
        (0o100, 'x'),
        (0o40, 'r'),
        (0o20, 'w'),
        (0o10, 'x'),
        (0o4, 'r'),
        (0o2, 'w'),
        (0o1, 'x'),
    ];
    for (i, (b, c)) in bits.iter().enumerate() {
        let special = match i {
            2 => mode & 0o4000 != 0,
            5 => mode & 0o2000 != 0,
            8 => mode & 0o1000 != 0,
            _ => false,
        };
        let set = mode & b != 0;
        s.push(match (special, set, i) {
            (true, true, 8) => 't',
            (true, false, 8) => 'T',
            (true, true, _) => 's',
            (true, false, _) => 'S',
            (false, true, _) => *c,
            (false, false, _) => '-',
        });
    }
    s
}

/// Prints `list` output. Names are raw bytes; undecodable bytes and control characters are
/// shown escaped (`\xHH`, `\n`, `\\`). With `b3`, prints `b3sum --check` lines instead.
pub fn print_list(
    entries: &[krypta::format::index::IndexEntry],
    frames: &[u32],
    b3: bool,
    verbose: bool,
) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let w = |e: std::io::Error| Error::io("<stdout>", "write", e);
    for e in entries {
        if b3 {
            if e.meta.kind != krypta::format::EntryKind::File {
                continue;
            }
            // b3sum's format: a leading backslash marks a name with escaped '\' or '\n'.
            let needs = e.meta.path.iter().any(|&c| c == b'\\' || c == b'\n');
            if needs {
                out.write_all(b"\\").map_err(w)?;
            }
            write!(out, "{}  ", hex(&e.digest)).map_err(w)?;
            if needs {
                let esc: Vec<u8> = e
                    .meta
                    .path
                    .iter()
                    .flat_map(|&c| match c {
                        b'\\' => b"\\\\".to_vec(),
                        b'\n' => b"\\n".to_vec(),
                        c => vec![c],
                    })
                    .collect();
                out.write_all(&esc).map_err(w)?;
            } else {
                out.write_all(&e.meta.path).map_err(w)?;
            }
            out.write_all(b"\n").map_err(w)?;
            continue;
        }
        let name = krypta::fs::escape_path(&e.meta.path);
        let link = match e.meta.kind {
            krypta::format::EntryKind::Symlink => {
                format!(" -> {}", krypta::fs::escape_path(&e.meta.link))
            }
            krypta::format::EntryKind::Hardlink => {
                format!(" link to {}", krypta::fs::escape_path(&e.meta.link))
            }
            _ => String::new(),
        };
        let mode = mode_string(e.meta.kind, e.meta.mode);
        let time = fmt_time(e.meta.mtime.secs, e.meta.mtime.nanos);
        if verbose {
            let stored: u64 = frames
                .get(
                    e.first_seq as usize
                        ..=(e.last_seq as usize).min(frames.len().saturating_sub(1)),
                )
                .map(|s| s.iter().map(|&l| l as u64).sum())
                .unwrap_or(0);
            writeln!(
                out,
                "{mode} {:>5}/{:<5} {:>12} {time} {name}{link}  [blocks {}-{}, {} bytes stored in them]",
                e.meta.uid, e.meta.gid, e.size, e.first_seq, e.last_seq, stored
            )
            .map_err(w)?;
        } else {
            writeln!(out, "{mode} {:>12} {time} {name}{link}", e.size).map_err(w)?;
        }
    }
    out.flush().map_err(w)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("4M").unwrap(), 4 << 20);
        assert_eq!(parse_size("512k").unwrap(), 512 << 10);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("65536").unwrap(), 65536);
        assert!(parse_size("4X").is_err());
        assert!(parse_size("M").is_err());
    }

    #[test]
    fn times_format_before_and_after_1970() {
        assert_eq!(fmt_time(0, 0), "1970-01-01 00:00:00");
        assert_eq!(fmt_time(-1, 0), "1969-12-31 23:59:59");
        assert_eq!(fmt_time(1_700_000_000, 0), "2023-11-14 22:13:20");
        assert_eq!(fmt_time(951_782_400, 0), "2000-02-29 00:00:00");
    }

    #[test]
    fn modes_show_special_bits_like_ls() {
        use krypta::format::EntryKind;
        assert_eq!(mode_string(EntryKind::File, 0o4755), "-rwsr-xr-x");
        assert_eq!(mode_string(EntryKind::Dir, 0o1777), "drwxrwxrwt");
        assert_eq!(mode_string(EntryKind::File, 0o2640), "-rw-r-S---");
    }
}
