//! Extracting entries into an output directory, confined to it, never through a symbolic link,
//! never overwriting without force, never leaving a partial file under a final name.
//!
//! Choices (copied into the README and docs/SECURITY.md):
//! - **Confinement**: every entry path is re-checked (absolute paths, `..`, empty and `.`
//!   components and NUL bytes are refused with [`Error::UnsafePath`], although the format
//!   refuses them at parse time too). Parent directories are opened one component at a time
//!   from the output root's descriptor with `openat(O_NOFOLLOW | O_DIRECTORY)`; missing ones
//!   are created. The open directories are kept as a chain (`super::dirchain`) and the next
//!   entry reuses the prefix it shares with the previous one, so extraction costs about one
//!   `openat` per directory, not one per component of every entry (a deep tree was
//!   quadratic). No symbolic link is ever followed while extracting, so an archive holding
//!   `d -> /tmp/x` and then `d/file` gets `d/file` refused (unsafe path), and a symbolic link
//!   already present in the output as a parent directory is refused the same way. Symlink
//!   targets are stored as they are (absolute ones too): they are data, never followed here.
//! - **Existing names** follow the conflict policy ([`super::conflict`], chosen with
//!   [`ExtractOptions::existing`]): unless it is [`Existing::Replace`], an existing file, link
//!   or other non-directory at an entry's name is kept untouched and recorded (checked early,
//!   and again race-free: `linkat` of an unnamed file, or `renameat2(RENAME_NOREPLACE)` of a
//!   named one, never replaces a name), and extraction goes on; the caller reports
//!   [`Extractor::conflicts`]. With `Replace` it is replaced atomically: the new file gets a
//!   temporary name in the same directory and is renamed over it, so
//!   the old inode is never truncated or written through, and an existing symbolic link is
//!   replaced by the entry itself, never followed. An existing directory is reused for a
//!   directory entry and never replaced by a non-directory (recorded as a conflict). With
//!   `Replace`, a non-directory where a directory entry goes is removed first.
//! - **Atomicity**: data goes to an unnamed `O_TMPFILE` file in the target directory (or,
//!   where that cannot be used, to `.krypta-<16 hex>.tmp`: `super::unnamed`); only
//!   [`FileSink::commit`] links or renames it to the final name, after length, owner,
//!   attributes, mode and mtime are set. An error or a dropped sink removes the temporary
//!   file. Files are not `fsync`ed.
//! - **Metadata** is restored per entry in the order owner → extended attributes (ACLs,
//!   capabilities) → mode → times, with as few calls as the values allow (`super::restore`
//!   says why and which). Directories are created `0o700` and get all their metadata in
//!   [`Extractor::finish`], after everything below them: children before their parents
//!   (paths in descending byte order: a descendant `P/…` sorts after `P`), walked with the
//!   same chain, so a read-only directory can still be filled, writing children does not
//!   disturb its mtime, and its default ACL is not inherited by its restored children (each
//!   gets exactly its own stored attributes). The root entry `.` (an archive of `dir/.`) is
//!   applied to the output directory itself, last; `--strip-components` or a selection of
//!   paths leave the output directory alone. With `-k`/`--skip-existing`, a directory that
//!   existed before the run (the output directory too) keeps its metadata
//!   ([`Existing::keeps_dirs`]).
//! - **Read-only existing directories**: an existing directory the user owns but may not
//!   write, search or read is opened up when the kernel refuses an operation in it, and gets
//!   its final mode in [`Extractor::apply_dirs`] (`super::loosen`); an entry refused in a
//!   directory of another user is named and skipped ([`Extractor::skip_denied`]).
//! - **Permissions**: setuid, setgid and sticky bits are restored only with `same_permissions`
//!   or `as_root`, like tar; otherwise the mode is masked with `0o777` and the process umask.
//!   Owners are restored with `restore_owner` (default when running as root; by name when the
//!   system knows it, unless `numeric_owner`), before the attributes and the mode (chown
//!   clears capabilities and setuid). What an ordinary user may not set is a warning
//!   ([`Extractor::take_warnings`]), not a failure.
//! - **Hard links** are made with `linkat` to a file committed earlier in this run (never to a
//!   file that merely exists in the output), via a temporary name and the same rename rules;
//!   they carry no metadata of their own (the inode has its target's).
//! - **Mtimes** are restored to the nanosecond (also before 1970) unless `no_mtime`; access
//!   times are left alone. Symbolic links get their owner, attributes and mtime without being
//!   followed (`AT_SYMLINK_NOFOLLOW`, `lsetxattr`).

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, Mode, OFlags, mkdirat, openat, unlinkat};
use rustix::io::Errno;

use super::cleanup;
use super::confine::{self, Target};
pub use super::conflict::{Conflict, Existing, Reason};
use super::conflict::{ConflictLog, Outcome, decide, is_not_a_directory};
use super::dirchain::DirChain;
use super::loosen::{self, Loosened, SEARCH, WRITE};
use super::notes::Notes;
use super::owner::IdCache;
use super::restore::{DirInfo, Made, Plan, Policy};
pub use super::sink::FileSink;
use super::sink::{Extracted, extracted_key};
use super::unnamed::{self, Linker};

mod dirs;
mod fit;
mod link;
mod temp;
use crate::format::entry::EntryMeta;
use crate::{Error, Result};
pub(crate) use fit::{first_too_long, is_errno, name_max};

/// Mode of a directory entry's directory until [`Extractor::finish`] sets the stored one.
const DIR_MODE_WHILE_EXTRACTING: u32 = 0o700;

/// The path of the root entry (`super::walk::ROOT_PATH`): metadata for the output directory.
const ROOT_PATH: &[u8] = b".";

pub use super::extract_options::ExtractOptions;

/// A directory whose metadata is applied in [`Extractor::finish`]; `rel` is empty for the
/// output directory (the root entry).
#[derive(Debug)]
struct PendingDir {
    rel: Vec<u8>,
    meta: EntryMeta,
    plan: Plan,
}

/// The parent directory of the entry extracted last.
#[derive(Debug)]
struct Parent {
    /// Its components, `/`-joined (empty for the output directory).
    key: Vec<u8>,
    /// Its descriptor, shared with the sinks made in it (an `Arc` clone, not a `dup`).
    fd: Arc<OwnedFd>,
    /// What is known of it (`None`: a directory this run did not create).
    info: Option<DirInfo>,
}

/// Extracts entries below one output directory. Entries may come in any order that puts a
/// hard link after its target; [`FileSink`]s are independent and may be written on other
/// threads.
#[derive(Debug)]
pub struct Extractor {
    root: OwnedFd,
    root_path: PathBuf,
    policy: Policy,
    strip: usize,
    fail_after: Option<u64>,
    /// The open directories down to the parent of the entry extracted last.
    chain: DirChain,
    /// The same for the directory of the last hard link's target.
    link_chain: DirChain,
    /// Directory opens outside the chains (the directories themselves, in `finish`).
    opens: u64,
    dirs: Vec<PendingDir>,
    extracted: Extracted,
    last_parent: Option<Parent>,
    /// What is known of the output directory (one `fstat` and one `fgetxattr` at start).
    root_info: Option<DirInfo>,
    /// How unnamed files are linked in this process (`super::unnamed`), found once (in the
    /// output directory, or in the first directory a file goes to when the output directory
    /// may not be written).
    linker: Option<Linker>,
    /// Existing directories opened up to be written (`super::loosen`).
    loosened: Loosened,
    /// Test hook ([`ExtractOptions::fail_link_of`]).
    fail_link_of: Option<Vec<u8>>,
    /// What is known of the directories this run created, by stripped path key.
    made_dirs: HashMap<[u8; 16], DirInfo>,
    /// Owner names resolved on this system.
    ids: IdCache,
    /// Warnings about metadata that could not be set.
    notes: Notes,
    conflicts: ConflictLog,
    /// Entries `--strip-components` removed entirely (nothing left of their path).
    stripped: usize,
    /// The longest name component the output's file system holds (`fit`).
    name_max: usize,
    /// Entries skipped because a name was longer than that (`fit`).
    unmade: fit::Unmade,
    /// The output directory existed before this run (`-k` leaves its metadata alone).
    root_existed: bool,
    /// With `-k`/`--skip-existing`: the directories this run made for directory entries
    /// (stripped path keys), to tell them from directories that existed before it.
    run_dirs: std::collections::HashSet<[u8; 16]>,
    /// Directory entries whose existing directory kept its metadata (`-k`): not made.
    kept_dirs: usize,
    /// The interrupt-time note ([`cleanup::register_action`]) registered when the first
    /// directory was made and dropped when [`Extractor::apply_dirs`] runs: interrupted in
    /// between, the directories made so far keep their temporary mode and times (module doc),
    /// and a resume with `-k`/`--skip-existing` keeps them as they are, so the run says so.
    interrupt_note: Option<u64>,
}

/// What an interrupted extraction says of the directories it made ([`Extractor`]'s
/// `interrupt_note`).
const INTERRUPTED_DIRS: &str = "krypta: warning: interrupted: the directories made so far have not got their stored permissions and times yet (they are rwx for their owner only); a run with -k or --skip-existing keeps them so: run the extraction again with -f to restore them";

impl Drop for Extractor {
    fn drop(&mut self) {
        if let Some(id) = self.interrupt_note.take() {
            cleanup::unregister(id);
        }
        // Dropped before its end (`apply_dirs`): no directory stays opened up.
        self.loosened.put_back_all();
        self.loosened.done();
    }
}

impl Extractor {
    /// Creates `root` (like `mkdir -p`) if it is missing and opens it. The root itself may be
    /// a symbolic link (the user named it); nothing below it is followed.
    pub fn new(root: &Path, opts: ExtractOptions) -> Result<Extractor> {
        let fail_link_of = opts.fail_link_of.clone();
        let root_existed = std::fs::symlink_metadata(root).is_ok();
        std::fs::create_dir_all(root).map_err(|e| match root.metadata() {
            // `-o FILE`: say what is in the way, not "create directory: File exists".
            Ok(m) if !m.is_dir() => Error::Usage(format!(
                "{}: the output directory is an existing file, not a directory",
                crate::fs::escape_path(root.as_os_str().as_encoded_bytes())
            )),
            _ => Error::io(root, "create the output directory", e),
        })?;
        let fd = openat(
            rustix::fs::CWD,
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io(root, "open", e.into()))?;
        let keep_special = opts.same_permissions || opts.as_root;
        let umask = process_umask();
        let egid = rustix::process::getegid().as_raw();
        let root_info = DirInfo::probe(fd.as_fd(), egid).ok();
        let name_max = fit::name_max(&fd);
        let loosened = Loosened::new(root);
        let mut chain = DirChain::new();
        chain.loosen_with(loosened.clone());
        let mut link_chain = DirChain::new();
        link_chain.loosen_with(loosened.clone());
        if opts.existing.keeps_dirs() {
            chain.record_made();
        }
        let linker = if opts.named_temporaries {
            Some(Linker::Unavailable)
        } else {
            // Found later, where the first file goes, if the output directory is read-only.
            unnamed::probe(fd.as_fd(), root).ok()
        };
        Ok(Extractor {
            root: fd,
            root_path: root.to_path_buf(),
            policy: Policy {
                existing: opts.existing,
                no_mtime: opts.no_mtime,
                keep_special,
                umask: if keep_special { 0 } else { umask },
                process_umask: umask,
                restore_owner: opts.restore_owner,
                numeric_owner: opts.numeric_owner,
                xattrs: opts.xattrs,
                euid: rustix::process::geteuid().as_raw(),
            },
            strip: opts.strip_components,
            fail_after: opts.fail_write_after,
            chain,
            link_chain,
            opens: 0,
            dirs: Vec::new(),
            extracted: Arc::new(Mutex::new(HashMap::new())),
            last_parent: None,
            root_info,
            linker,
            loosened,
            fail_link_of,
            made_dirs: HashMap::new(),
            ids: IdCache::default(),
            notes: Notes::default(),
            conflicts: ConflictLog::default(),
            stripped: 0,
            name_max,
            unmade: Default::default(),
            root_existed,
            run_dirs: Default::default(),
            kept_dirs: 0,
            interrupt_note: None,
        })
    }

    /// The entries not written because of what was in the output, in the order met (see
    /// [`super::conflict`]).
    pub fn conflicts(&self) -> Vec<Conflict> {
        self.conflicts.list()
    }

    /// How many entries given to this extractor so far were not made: kept out by what was
    /// in the output (also those below a kept directory, which are not listed) or removed
    /// by `--strip-components`, skipped for a name the file system cannot hold, or
    /// directories that existed and kept their metadata (`-k`, `--skip-existing`). The
    /// summary counts entries made, not entries visited.
    pub fn not_made_count(&self) -> usize {
        self.conflicts.entries()
            + self.stripped
            + self.kept_dirs
            + self.unmade.count()
            + self.denied_count()
    }

    /// Records that the entry `t` (on disk `path`) was kept for `reason`.
    fn keep(&self, path: PathBuf, reason: Reason, t: &Target<'_>) {
        self.conflicts
            .record(Conflict { path, reason }, Some(extracted_key(&t.rel)));
    }

    /// The parent directory of `t`, or `None` (recorded) when an existing non-directory is in
    /// the way: the entry is kept out, the extraction goes on.
    /// Below a directory entry that was kept (a link or file at its name), nothing is made
    /// and nothing more is listed: the kept name says it.
    fn parent_or_keep(
        &mut self,
        t: &Target<'_>,
    ) -> Result<Option<(Arc<OwnedFd>, Option<DirInfo>)>> {
        if self.conflicts.below_kept(&t.parents) {
            self.conflicts.note_kept(extracted_key(&t.rel));
            return Ok(None);
        }
        match self.parent(t) {
            Ok(d) => Ok(Some(d)),
            Err(e) => match is_not_a_directory(&e) {
                Some(p) => {
                    self.conflicts.record(
                        Conflict {
                            path: p,
                            reason: Reason::NotADirectory,
                        },
                        Some(extracted_key(&t.rel)),
                    );
                    Ok(None)
                }
                None => Err(e),
            },
        }
    }

    /// Whether a non-directory entry `t` may be written at its name (else it is recorded).
    fn free_for_file(&self, dir: &OwnedFd, t: &Target<'_>, path: &Path) -> Result<bool> {
        let there = self
            .loosened
            .retry(
                dir.as_fd(),
                &t.parents.join(&b'/'),
                SEARCH,
                loosen::denied_io,
                || confine::lstat_type(dir.as_fd(), t.name),
            )
            .map_err(|e| Error::io(path, "stat", e))?;
        match decide(there, false, self.policy.existing) {
            Outcome::Keep(reason) => {
                self.keep(path.to_path_buf(), reason, t);
                Ok(false)
            }
            _ => Ok(true),
        }
    }

    /// The result of a final rename: a name taken meanwhile (without `Replace`) is recorded
    /// as kept, not an error.
    fn placed(&self, res: Result<()>, t: &Target<'_>) -> Result<bool> {
        match res {
            Ok(()) => Ok(true),
            Err(Error::Exists { path }) => {
                self.keep(path, Reason::Exists, t);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Starts a regular file: returns a sink writing a temporary file in the target directory,
    /// or `None` when `--strip-components` removes the entry or the conflict policy keeps
    /// what is at its name (recorded in [`Extractor::conflicts`]).
    pub fn begin_file(&mut self, meta: &EntryMeta) -> Result<Option<FileSink>> {
        let Some(t) = self.target(meta)? else {
            return Ok(None);
        };
        let path = confine::on_disk(&self.root_path, &t.rel);
        let Some((dir, info)) = self.parent_or_keep(&t)? else {
            return Ok(None);
        };
        // Nothing was at any name in a directory this run created: no check needed.
        if !info.is_some_and(|i| i.fresh) && !self.free_for_file(&dir, &t, &path)? {
            return Ok(None);
        }
        let plan = self
            .policy
            .plan(meta, info.as_ref(), &mut self.ids, Made::File);
        let (file, temp) = self.create_temp(&dir, &t, &path, plan.create_mode)?;
        Ok(Some(FileSink {
            file,
            dir,
            temp,
            name: t.name.to_vec(),
            path,
            rel_key: extracted_key(&t.rel),
            meta: meta.clone(),
            plan,
            policy: self.policy,
            notes: self.notes.clone(),
            extracted: Arc::clone(&self.extracted),
            conflicts: self.conflicts.clone(),
            pos: 0,
            written_end: 0,
            accepted: 0,
            fail_after: self.fail_after,
            done: false,
            // Deferred commits (`super::committer`) rely on no later entry taking the name:
            // true in a fresh directory unless `--strip-components` maps two archive paths to
            // one (`p/a/k/x` and `p/b/k/x` with 2).
            fresh: self.strip == 0 && info.is_some_and(|i| i.fresh),
            fail_link: self.fail_link_of.as_deref() == Some(&t.rel[..]),
        }))
    }

    /// Creates a directory entry's directory (mode 0o700 for now) or reuses an existing
    /// directory; its stored metadata is applied by [`Extractor::finish`]. A symbolic link or
    /// file in its place is kept (recorded) unless the policy is [`Existing::Replace`], which
    /// removes it. The root entry `.` names the output directory itself (skipped with
    /// `--strip-components`).
    pub fn make_dir(&mut self, meta: &EntryMeta) -> Result<()> {
        if meta.path == ROOT_PATH {
            if self.strip == 0 && self.root_existed && self.policy.existing.keeps_dirs() {
                // -k: the output directory was there before; it keeps what it has.
                self.kept_dirs += 1;
            } else if self.strip == 0 {
                let plan = self.policy.plan(meta, None, &mut self.ids, Made::Existing);
                self.dirs.push(PendingDir {
                    rel: Vec::new(),
                    meta: meta.clone(),
                    plan,
                });
            } else {
                self.stripped += 1;
            }
            return Ok(());
        }
        let Some(t) = self.target(meta)? else {
            return Ok(());
        };
        let path = confine::on_disk(&self.root_path, &t.rel);
        let Some((dir, info)) = self.parent_or_keep(&t)? else {
            return Ok(());
        };
        let mode = Mode::from_raw_mode(DIR_MODE_WHILE_EXTRACTING);
        let mut made = info.map(|i| i.child());
        let dir_key = t.parents.join(&b'/');
        let in_dir = |op: &mut dyn FnMut() -> std::result::Result<(), Errno>| {
            self.loosened
                .retry(dir.as_fd(), &dir_key, WRITE, loosen::denied_errno, op)
        };
        match in_dir(&mut || mkdirat(&*dir, t.name, mode)) {
            Ok(()) => {
                if self.interrupt_note.is_none() {
                    self.interrupt_note = Some(cleanup::register_action(
                        Box::new(|| {
                            crate::to_stderr!("{INTERRUPTED_DIRS}");
                        }),
                        INTERRUPTED_DIRS.to_string(),
                    ));
                }
            }
            Err(Errno::EXIST) => {
                let there = confine::lstat_type(dir.as_fd(), t.name)
                    .map_err(|e| Error::io(&path, "stat", e))?;
                match decide(there, true, self.policy.existing) {
                    Outcome::Reuse
                        if self.policy.existing.keeps_dirs()
                            && !self.run_dirs.contains(&extracted_key(&t.rel))
                            && !self.chain.made(&t.rel) =>
                    {
                        // -k, --skip-existing: a directory that existed before this run
                        // keeps its owner, mode, times and attributes (GNU tar -k).
                        self.kept_dirs += 1;
                        return Ok(());
                    }
                    Outcome::Reuse => made = None,
                    Outcome::RemoveFirst | Outcome::Write => {
                        in_dir(&mut || unlinkat(&*dir, t.name, AtFlags::empty()))
                            .map_err(|e| Error::io(&path, "remove", e.into()))?;
                        mkdirat(&*dir, t.name, mode)
                            .map_err(|e| Error::io(&path, "create directory", e.into()))?;
                    }
                    Outcome::Keep(reason) => {
                        self.keep(path, reason, &t);
                        return Ok(());
                    }
                }
            }
            Err(e) => return Err(Error::io(&path, "create directory", e.into())),
        }
        let how = if made.is_some() {
            Made::Dir(DIR_MODE_WHILE_EXTRACTING)
        } else {
            Made::Existing
        };
        let plan = self.policy.plan(meta, info.as_ref(), &mut self.ids, how);
        if let Some(m) = made {
            self.made_dirs.insert(extracted_key(&t.rel), m);
        }
        if self.policy.existing.keeps_dirs() {
            self.run_dirs.insert(extracted_key(&t.rel));
        }
        self.dirs.push(PendingDir {
            rel: t.rel,
            meta: meta.clone(),
            plan,
        });
        Ok(())
    }

    /// The warnings so far about metadata that could not be set (each names the file and the
    /// owner or attribute; repeats of one kind are counted, see `super::notes`), from this
    /// extractor and every sink it made; the list is emptied.
    pub fn take_warnings(&mut self) -> Vec<String> {
        self.notes.take()
    }

    /// Directory `openat` calls made so far (parents of entries, hard-link targets and the
    /// directories finished): a deterministic measure of extraction cost, for tests.
    pub fn dir_opens(&self) -> u64 {
        self.chain.opens() + self.link_chain.opens() + self.opens
    }

    /// Whether name `rel` (stripped) holds a file this run committed (from any entry).
    fn taken(&self, rel: &[u8]) -> bool {
        self.extracted
            .lock()
            .map(|m| m.contains_key(&extracted_key(rel)))
            .unwrap_or(false)
    }

    /// Whether name `rel` (stripped) holds the file this run committed from the archive entry
    /// at `archive_path` ([`Extracted`]).
    fn holds(&self, rel: &[u8], archive_path: &[u8]) -> bool {
        self.extracted
            .lock()
            .map(|m| m.get(&extracted_key(rel)) == Some(&extracted_key(archive_path)))
            .unwrap_or(false)
    }

    /// The parent directory of `t` (created if missing), through the chain, and what is known
    /// of it. Consecutive entries in one directory share its descriptor.
    fn parent(&mut self, t: &Target<'_>) -> Result<(Arc<OwnedFd>, Option<DirInfo>)> {
        let key = t.parents.join(&b'/');
        if let Some(p) = &self.last_parent
            && p.key == key
        {
            return Ok((Arc::clone(&p.fd), p.info));
        }
        let fd = self
            .chain
            .open(self.root.as_fd(), &self.root_path, &t.parents, true)?
            .try_clone_to_owned()
            .map_err(|e| Error::io(&self.root_path, "duplicate descriptor", e))?;
        let info = if key.is_empty() {
            self.root_info
        } else {
            self.made_dirs.get(&extracted_key(&key)).copied()
        };
        let fd = Arc::new(fd);
        self.last_parent = Some(Parent {
            key,
            fd: Arc::clone(&fd),
            info,
        });
        Ok((fd, info))
    }
}

/// The process umask, read from `/proc/self/status` (`Umask:` line) without changing it;
/// 0o022 when that is unavailable.
fn process_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}
