//! `krypta c`: validates the compression options, builds the selection (`--exclude`,
//! `--files-from`, ...), starts the size scan behind the progress bar, calls the library and
//! prints the summary.
//!
//! Decision on progress: a bar with a total and an ETA needs the total before the data is
//! read. krypta does not walk the tree twice in a row; when the bar is shown (stderr is a
//! terminal, no `-q`) a second thread walks the same inputs with the same selection at the
//! same time, summing file sizes, and the spinner becomes a bar with an ETA as soon as that
//! walk ends. It reads only metadata (one `readdir` per directory and one `lstat` and
//! `access` per entry, the same calls as the archiving walk, so the second pass over a tree is
//! mostly served from the kernel's caches), and ends long before the archiving walk, which
//! also reads and hashes every byte. Measured (release build, warm cache, load 3-4 on 2
//! cores) on /usr/lib, 72k entries and 3.6 GiB, with `-s` to /dev/null (the case where the
//! scan costs most): 6.73 and 6.92 s without the scan, 6.86, 6.97 and 7.00 s with it (system
//! time 2.35 s against 2.7-2.8 s), about 1-2 % of the run. Nightly jobs without a terminal
//! never start it. The total is what the walk saw; files that change
//! meanwhile make the ETA approximate, never the archive.
//!
//! Decision on `-C DIR` (README, "Creating archives"): one `-C` for the whole command, applying
//! to every input wherever it stands on the line, as bsdtar's common `tar -cf out -C dir .`
//! use; not GNU tar's positional `-C a x -C b y`, which clap's derive cannot express without
//! re-reading the raw argument order, and whose "inputs before it relative to here, after it
//! to DIR" rule is easy to misread in a backup script; a second `-C` is refused with the
//! alternative named ([`second_directory`]). Each input (and each name listed in
//! `--files-from`, as tar reads `-T` names) is read at `DIR/INPUT` and stored under the name
//! INPUT gives, so `c -C /srv out.kry www` stores `www/...`; an absolute input is read as
//! given (and stored without its leading `/`, as always). `-` is stdin whatever `-C` says.
//! OUTPUT, `--files-from`'s own list file, `--exclude-from`, key files and `--base` stay
//! relative to the current directory: they are options of the command, not inputs (tar's
//! archive file is opened before its `-C` too). Patterns and a delta's matching against its
//! base see the stored names, so `c -C /srv new.kry --base old.kry www` matches
//! `www/index.html` with the base's `www/index.html` however the base was made. The library
//! does the joining (`CompressRequest::directory`); the process never changes its directory,
//! so no other path of the command can be read relative to the wrong one.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use super::args::*;
use super::keys::*;
use super::size::*;
use crate::Term;
use krypta::archive::writer::{BcjMode, WriteOptions};
use krypta::closed_stdio::{self, Stream};
use krypta::codec::{DEFAULT_BLOCK_SIZE, Filter, Level, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE};
use krypta::crypto::password::{PasswordSource, PromptFor, read_password};
use krypta::crypto::stanza::Recipient;
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
        None => match level {
            Some(l) if a.delta.base.is_some() => l.default_delta_block_size(),
            Some(l) => l.default_block_size(),
            None => DEFAULT_BLOCK_SIZE,
        },
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
    if let Some(dir) = &a.directory {
        check_directory(dir)?;
    }
    if a.files_from
        .as_deref()
        .is_some_and(super::keys::names_stdin)
    {
        closed_stdio::require(Stream::Stdin, "--files-from has no list to read")?;
    }
    let inputs = collect_inputs(&a)?;
    let stdin_in_use = inputs.iter().any(|p| super::keys::names_stdin(p))
        || a.files_from
            .as_deref()
            .is_some_and(super::keys::names_stdin);
    let input_on_stdin = stdin_in_use.then_some("the input");
    check_pass_fd(PromptFor::Archive, a.pass_fd, input_on_stdin)?;
    let select = selector(&a)?;
    // A stream closed when krypta started (`>&-`, `<&-`) is refused before a password is
    // asked for or an input read: std put /dev/null in its place (krypta::closed_stdio).
    closed_stdio::require_archive_path(&a.output, true)?;
    if stdin_in_use {
        closed_stdio::require(Stream::Stdin, "it is an input: nothing was written")?;
    }
    if a.output.as_os_str() == "-" && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Err(Error::Usage(
            "refusing to write an archive to a terminal; redirect stdout or give an OUTPUT file"
                .into(),
        ));
    }
    // A directory as OUTPUT (arguments swapped) is refused before a password is asked for
    // or an input read (the library checks again).
    let local_output = match krypta::store::Location::parse(&a.output) {
        Ok(krypta::store::Location::Local(p)) => Some(p),
        _ => None,
    };
    if let Some(p) = &local_output {
        krypta::store::local::refuse_directory(p)?;
    }
    // The same archive however spelled (./a.kry, $PWD/a.kry, a link; one bucket and key):
    // the delta would replace its own base. Refused even with -f, and before an existing
    // OUTPUT is (that refusal says "use -f", which would only lead to this one).
    if let Some(base) = &a.delta.base
        && krypta::store::Location::parse(base)?
            .same_archive(&krypta::store::Location::parse(&a.output)?)
    {
        return Err(Error::Usage(format!(
            "{}: the delta base cannot be the archive being written",
            krypta::fs::shown(&a.output)
        )));
    }
    // So is a key file this command reads, even with -f: the archive would replace its key.
    let keys: KeyPaths<'_> = named("--pass-file", &a.pass_file)
        .chain(named("--keyfile", &a.keyfiles))
        .chain(named("-r", &a.recipients))
        .chain(named("-R", &a.recipients_files))
        .chain(named("--sign", &a.sign))
        .chain(named("--key-pass-file", &a.key_pass_file))
        .chain(base_key_paths(&a.delta))
        .collect();
    refuse_output_over_key(&a.output, &keys)?;
    // So is an existing file without -f (before, a delta base was opened, its key asked for
    // and its index read first: helper-38).
    // An object too (one HEAD request).
    krypta::store::refuse_existing(&a.output, a.force)?;
    // KRYPTA_PASSWORD is used for a new archive only when no key option was given, so a
    // variable left in the environment never adds a password to a key-file or box archive.
    let explicit_keys =
        !a.keyfiles.is_empty() || !a.recipients.is_empty() || !a.recipients_files.is_empty();
    let src = password_source(
        a.password,
        &a.pass_file,
        a.pass_fd,
        !explicit_keys,
        PromptFor::Archive,
    );
    if matches!(src, Some(PasswordSource::Env)) && !term.is_quiet() {
        krypta::to_stderr!("krypta: encrypting with the password in KRYPTA_PASSWORD");
    }
    // The signing key is read before any password prompt, so a wrong path fails at once.
    let pass = KeyPassFile::new("--key-pass-file", a.key_pass_file.as_deref());
    let signer = match &a.sign {
        Some(f) => Some(secret_key_warned(
            f,
            krypta::crypto::signkey::load_signing_secret_with(f, &mut pass.source()),
        )?),
        None => None,
    };
    pass.warn_if_unused("the signing key given with --sign is not password-protected");
    if let Some(src) = src {
        let kdf = super::kdf_args::kdf_from_args(a.kdf, a.kdf_memory.as_deref(), a.kdf_iterations)?;
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
        recipients.push(Recipient::KeyFile(super::keys::load_keyfile(f)?));
    }
    for r in &a.recipients {
        recipients.push(Recipient::PqBox(krypta::crypto::boxkey::load_public(r)?));
    }
    for f in &a.recipients_files {
        for pk in krypta::crypto::boxkey::load_recipients_file(f)? {
            recipients.push(Recipient::PqBox(pk));
        }
    }
    one_stanza_per_key(&mut recipients);
    let epoch = krypta::source_date_epoch()?;
    let created = krypta::now_or_epoch().secs;
    let reproducible = epoch.is_some() && recipients.is_empty();
    // The base first: a delta's default -j counts its cache and its workers' regions.
    let base = super::keys::open_base(
        &a.delta,
        a.jobs,
        false,
        super::keys::stdin_taken(input_on_stdin, a.pass_fd),
    )?;
    let jobs = match a.jobs {
        Some(j) => j.max(1),
        None => default_jobs(
            level,
            block_size,
            base.as_ref()
                .map(krypta::archive::reader::BaseArchive::cache_bytes_at_most),
            a.recovery,
            term.is_quiet(),
        ),
    };
    let base = base.map(|b| b.shared(jobs));
    let options = WriteOptions {
        base,
        walk_base_first: a.output.as_os_str() == "-"
            || krypta::store::local::special_output(&a.output).is_some(),
        level,
        block_size,
        jobs,
        bcj,
        created,
        comment: a.comment.unwrap_or_default(),
        recipients,
        signer,
        archive_id: reproducible.then(|| krypta::reproducible_archive_id(created)),
        file_key: None,
        recovery: a
            .recovery
            .map(|p| krypta::archive::write_opts::recovery_options_for(p, &a.output)),
        ..WriteOptions::new()
    };
    let started = Instant::now();
    let scan = if term.shows_progress() && !inputs.iter().any(|p| p.as_os_str() == "-") {
        let scan = Arc::new(TotalScan::default());
        let dir = a.directory.clone();
        spawn_total_scan(&scan, dir, inputs.clone(), a.dereference, select.clone());
        term.set_total_scan(Arc::clone(&scan));
        Some(scan)
    } else {
        None
    };
    if verbose {
        term.list_entries(a.output.as_os_str() == "-");
    }
    let req = krypta::CompressRequest {
        output: a.output.clone(),
        inputs,
        directory: a.directory.clone(),
        force: a.force,
        sync: !a.no_fsync,
        dereference: a.dereference,
        xattrs: a.meta.xattrs(),
        numeric_owner: a.meta.numeric_owner,
        select,
        strict: a.strict,
        options,
    };
    let result = krypta::compress(req, term);
    if let Some(scan) = scan {
        scan.cancel.store(true, Ordering::Relaxed);
    }
    let summary = match &result {
        Ok(s) => Some(*s),
        Err(Error::Incomplete { summary, .. }) => Some(**summary),
        Err(_) => None,
    };
    if let Some(s) = summary
        && !term.is_quiet()
    {
        let recovery = if s.recovery_bytes > 0 {
            format!(", {} of it recovery data", human_bytes(s.recovery_bytes))
        } else {
            String::new()
        };
        let refs = match s.base_references {
            0 => String::new(),
            1 => ", 1 file as a reference to the base".to_string(),
            n => format!(", {n} files as references to the base"),
        };
        krypta::to_stderr!(
            "krypta: {}: {}, {} in, {} out ({}{recovery}{refs}), {}",
            krypta::fs::shown(&a.output),
            krypta::counted(s.entries, "entry", "entries"),
            human_bytes(s.content_bytes),
            human_bytes(s.archive_bytes),
            super::show::ratio(s.archive_bytes, s.content_bytes),
            super::clock::duration(started.elapsed())
        );
    }
    result.map(|_| 0)
}

/// The inputs: the arguments, then the names read from `--files-from` (raw bytes; split at
/// newlines, or at NUL with `--null`; empty names skipped).
fn collect_inputs(a: &CompressArgs) -> Result<Vec<PathBuf>> {
    use std::os::unix::ffi::OsStringExt;
    let mut inputs = a.inputs.clone();
    let Some(list) = &a.files_from else {
        return Ok(inputs);
    };
    let bytes = if list.as_os_str() == "-" {
        if inputs.iter().any(|p| p.as_os_str() == "-") {
            return Err(Error::Usage(
                "--files-from - and the input - both want stdin; give the list as a file".into(),
            ));
        }
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut v)
            .map_err(|e| Error::io("<stdin>", "read --files-from", e))?;
        v
    } else {
        std::fs::read(list).map_err(|e| Error::io(list, "read --files-from", e))?
    };
    let sep = if a.null { 0 } else { b'\n' };
    inputs.extend(
        bytes
            .split(|&b| b == sep)
            .filter(|n| !n.is_empty())
            .map(|n| PathBuf::from(std::ffi::OsString::from_vec(n.to_vec()))),
    );
    if inputs.is_empty() {
        return Err(Error::Usage(format!(
            "{}: names no input (one name per line{})",
            krypta::fs::shown(list),
            if a.null { ", NUL-separated" } else { "" }
        )));
    }
    Ok(inputs)
}

/// clap's refusal of a second `-C` for `c` ("cannot be used multiple times") with the module
/// doc's decision in it and what to write instead: a script written for GNU tar's positional
/// `-C a x -C b y` learned only that the option repeats. Other errors are left as they are.
pub(crate) fn second_directory(e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let directory = matches!(
        e.get(ContextKind::InvalidArg),
        Some(ContextValue::String(a)) if a.starts_with("--directory")
    );
    let compress = std::env::args_os()
        .skip(1)
        .find(|a| !a.to_string_lossy().starts_with('-'))
        .is_some_and(|a| a == "c" || a == "compress");
    if e.kind() != ErrorKind::ArgumentConflict || !directory || !compress {
        return e;
    }
    clap::Error::raw(
        ErrorKind::ArgumentConflict,
        "the argument '--directory <DIR>' cannot be used multiple times: -C DIR is given once for all the inputs of `krypta c` (GNU tar's positional `-C a x -C b y` is not supported): give the inputs relative to one directory (`krypta c out.kry -C PARENT a/x b/y` stores a/x and b/y), or make one archive per directory\n",
    )
}

/// Refuses a `-C DIR` that is not a directory, naming it, before a password is asked for.
/// Missing (or through a dangling link, or below a file) and not a directory are both the
/// argument naming the wrong thing: a usage error (exit 1) alike, as GNU tar treats both
/// alike (it exits 2 for each). A directory that cannot be reached for another reason (no
/// permission on a parent, an I/O error) stays an I/O error (exit 4).
fn check_directory(dir: &std::path::Path) -> Result<()> {
    let problem = match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => "not a directory",
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "no such directory",
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) => {
            "no such directory (a part of the path is not a directory)"
        }
        Err(e) => return Err(Error::io(dir, "use as -C directory", e)),
    };
    Err(Error::Usage(format!(
        "-C {}: {problem}",
        krypta::fs::shown(dir)
    )))
}

/// The selection of `--exclude`, `--exclude-from`, `--one-file-system`, `--exclude-caches`.
fn selector(a: &CompressArgs) -> Result<krypta::fs::select::Selector> {
    let mut b = krypta::fs::pattern::PatternsBuilder::new();
    for p in &a.exclude {
        // Taken as bytes so a name that is not UTF-8 gets this message, not clap's "invalid
        // UTF-8 was detected in one or more arguments", which names no option.
        let p = p.to_str().ok_or_else(|| {
            Error::Usage(format!(
                "--exclude {}: a pattern must be UTF-8 (names are matched as bytes; for others use a wildcard, e.g. ?)",
                krypta::fs::escape_path(p.as_encoded_bytes())
            ))
        })?;
        b.add(p, "--exclude")?;
    }
    for f in &a.exclude_from {
        krypta::closed_stdio::require_input_path(f)?;
        let text = std::fs::read(f).map_err(|e| Error::io(f, "read --exclude-from", e))?;
        b.add_lines(&text, &krypta::fs::shown(f))?;
    }
    Ok(krypta::fs::select::Selector {
        excludes: b.build()?,
        one_file_system: a.one_file_system,
        exclude_caches: a.exclude_caches,
    })
}

/// The total of the size scan behind the progress bar (module documentation).
#[derive(Debug, Default)]
pub(crate) struct TotalScan {
    /// Bytes of the files seen so far.
    pub(crate) bytes: AtomicU64,
    /// The scan walked everything.
    pub(crate) done: AtomicBool,
    /// Stop early (the archive is finished or failed).
    pub(crate) cancel: AtomicBool,
}

fn spawn_total_scan(
    scan: &Arc<TotalScan>,
    dir: Option<PathBuf>,
    inputs: Vec<PathBuf>,
    dereference: bool,
    select: krypta::fs::select::Selector,
) {
    let scan = Arc::clone(scan);
    let _ = std::thread::Builder::new()
        .name("krypta-size-scan".into())
        .spawn(move || {
            // Sizes only: no attributes or owner names are read for the total.
            let opts = krypta::fs::walk::WalkOptions {
                dereference,
                xattrs: krypta::fs::xattr::XattrSelect {
                    xattrs: false,
                    acls: false,
                },
                numeric_owner: true,
                open_files: false,
            };
            let mut sum = 0u64;
            let walked = krypta::fs::walk::walk_selected_in(
                dir.as_deref(),
                &inputs,
                &opts,
                &select,
                &mut |ev| {
                    if scan.cancel.load(Ordering::Relaxed) {
                        return Err(Error::Usage("size scan stopped".into()));
                    }
                    if let krypta::fs::walk::WalkEvent::Entry(e) = ev {
                        if e.stream {
                            // `<(cmd)`: its size is not known before it is read, so no total is.
                            return Err(Error::Usage("size scan stopped at a stream".into()));
                        }
                        sum = sum.saturating_add(e.size);
                        scan.bytes.store(sum, Ordering::Relaxed);
                    }
                    Ok(())
                },
            );
            if walked.is_ok() {
                scan.done.store(true, Ordering::Release);
            }
        });
}

/// `-j`'s default: every core, fewer when that many workers would need more memory than
/// the process may have (`ulimit -v`, a cgroup's `memory.max`: [`krypta::memory::limit`]),
/// said once on stderr (not under `-q`). A `-j` the user gives is taken as given. With
/// `--recovery`, the encoder's buffers are taken off the limit first
/// (`RecoveryOptions::fixed_bytes`). A delta (`base_cache`: what the base's cache may hold)
/// is modelled as one (`krypta::memory::delta_worker_bytes`): before 2026-12-07 it was not,
/// and `c --base -l 9` under a limit started workers that did not fit.
fn default_jobs(
    level: Option<Level>,
    block_size: usize,
    base_cache: Option<u64>,
    recovery: Option<u8>,
    quiet: bool,
) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let Some((limit, from)) = krypta::memory::limit() else {
        return cores;
    };
    let encoder = recovery.map_or(0, |p| {
        krypta::recovery::RecoveryOptions::new(p).fixed_bytes()
    });
    let jobs = krypta::memory::workers_within(
        limit.saturating_sub(encoder),
        level,
        block_size,
        cores,
        base_cache,
    );
    if jobs < cores && !quiet {
        // A limit the recovery data alone does not fit in is said so ("of which" a part
        // larger than the whole read as nonsense): fewer workers will not make it fit.
        let recovery = if encoder >= limit {
            format!(
                ", less than the recovery data alone needs (about {})",
                krypta::memory::mib(encoder)
            )
        } else if encoder > 0 {
            format!(
                ", of which the recovery data needs about {}",
                krypta::memory::mib(encoder)
            )
        } else {
            String::new()
        };
        krypta::to_stderr!(
            "krypta: note: using -j {jobs} rather than {cores}: {}, and {from} is {}{recovery}",
            krypta::memory::compress_needs(level, block_size, base_cache),
            krypta::memory::mib(limit)
        );
    }
    jobs
}
