//! Which of the standard streams (descriptors 0, 1 and 2) were closed when krypta started,
//! and what stands in their place, so that an archive written to a closed stdout is an
//! error, never bytes that vanished.
//!
//! Why: Rust's runtime, before `main`, reopens a closed descriptor 0, 1 or 2 on `/dev/null`
//! (std's `sanitize_standard_fds`), so that no file krypta opens lands on it. Written there,
//! stdout swallowed the archive: `krypta c - dir >&-` exited 0 and a nightly job lost its
//! backup without a word (`c OUT - <&-` archived an empty "stdin", `keygen` printed its key
//! into nothing). GNU tar, zstd and age fail with EBADF in the same place.
//!
//! How: [`record`] runs from the binary's `.init_array` (`main.rs`), before std's own check,
//! notes which descriptors are closed, and opens `/dev/null` in their place (the lowest free
//! descriptor, so the very one), *the wrong way round* for stdin and stdout: stdin write-only,
//! stdout read-only. The commands refuse a closed stream they would carry their data or
//! result on before they start ([`require`]: "standard output is closed", exit 4). The checks
//! must be explicit: std's own `Stdin`, `Stdout` and `Stderr` take EBADF as end of input and
//! as a successful write, so no failed write would tell. A use of the raw descriptor (a
//! duplicate of descriptor 0 read as a stream input) fails with EBADF, which
//! [`crate::Error::io`] words the same way. A closed stderr gets `/dev/null` for writing, as
//! std would give it: warnings and the summary vanish, and the exit code is what it would
//! have been. A program using the library without `record` sees every stream as open.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::{Error, Result};

/// One of the three standard streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Descriptor 0.
    Stdin,
    /// Descriptor 1.
    Stdout,
    /// Descriptor 2.
    Stderr,
}

impl Stream {
    const ALL: [Stream; 3] = [Stream::Stdin, Stream::Stdout, Stream::Stderr];

    /// The descriptor number (0, 1, 2).
    pub fn fd(self) -> i32 {
        match self {
            Stream::Stdin => 0,
            Stream::Stdout => 1,
            Stream::Stderr => 2,
        }
    }

    /// Its name in messages: "standard input", "standard output", "standard error".
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdin => "standard input",
            Stream::Stdout => "standard output",
            Stream::Stderr => "standard error",
        }
    }

    /// The stream a message path names: `<stdin>` or `<stdout>` (as krypta's messages name
    /// them), else `None`.
    pub fn named_by(path: &std::path::Path) -> Option<Stream> {
        match path.as_os_str().as_encoded_bytes() {
            b"<stdin>" => Some(Stream::Stdin),
            b"<stdout>" => Some(Stream::Stdout),
            _ => None,
        }
    }
}

/// Bit `1 << fd` set for each stream that was closed at start.
static CLOSED: AtomicU8 = AtomicU8::new(0);

/// Bit `1 << fd` set for each stream open at start the wrong way round for krypta's use of
/// it: stdin open only for writing, stdout or stderr only for reading (`1</dev/null`, a
/// supervisor's read-only `/dev/null` on every descriptor). std takes the EBADF every use
/// then fails with as it does for a closed stream (the end of input, a successful write), so
/// `c - dir 1<&0` exited 0 with the archive written nowhere: such a stream is refused as a
/// closed one is.
static WRONG_WAY: AtomicU8 = AtomicU8::new(0);

/// Notes which of descriptors 0, 1, 2 are closed and opens `/dev/null` in their place (see
/// the module documentation). For the binary's `.init_array` only: it must run before std's
/// runtime starts (which would fill the gaps itself) and before any other thread exists.
pub extern "C" fn record() {
    let mut closed = 0u8;
    let mut wrong_way = 0u8;
    for s in Stream::ALL {
        if let Some(flags) = open_flags(s.fd()) {
            let unusable = match s {
                Stream::Stdin => libc::O_WRONLY,
                Stream::Stdout | Stream::Stderr => libc::O_RDONLY,
            };
            if flags & libc::O_ACCMODE == unusable {
                wrong_way |= 1 << s.fd();
            }
            continue;
        }
        closed |= 1 << s.fd();
        let access = match s {
            Stream::Stdout => rustix::fs::OFlags::RDONLY,
            Stream::Stdin | Stream::Stderr => rustix::fs::OFlags::WRONLY,
        };
        // The lowest free descriptor: the closed one, as 0..2 are visited in order. Kept
        // open for the life of the process (it is that stream now).
        if let Ok(null) = rustix::fs::open("/dev/null", access, rustix::fs::Mode::empty()) {
            use std::os::fd::{AsRawFd, IntoRawFd};
            if null.as_raw_fd() == s.fd() {
                let _ = null.into_raw_fd();
            }
        }
    }
    CLOSED.store(closed, Ordering::Relaxed);
    WRONG_WAY.store(wrong_way, Ordering::Relaxed);
}

/// The file status flags of descriptor `fd` (`fcntl(F_GETFL)`), `None` when it is closed
/// (EBADF). Another failure counts as open with flags that refuse nothing (`O_RDWR`).
#[allow(unsafe_code)]
fn open_flags(fd: i32) -> Option<i32> {
    // SAFETY: F_GETFL only reads the descriptor's flags; a raw number is passed, so no
    // `BorrowedFd` claims that a descriptor which may be closed is open.
    let r = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if r != -1 {
        return Some(r);
    }
    (std::io::Error::last_os_error().raw_os_error() != Some(libc::EBADF)).then_some(libc::O_RDWR)
}

/// Whether `s` cannot carry krypta's data since it started ([`record`]): closed then, or
/// open the wrong way round (`WRONG_WAY`).
pub fn was_closed(s: Stream) -> bool {
    (CLOSED.load(Ordering::Relaxed) | WRONG_WAY.load(Ordering::Relaxed)) & (1 << s.fd()) != 0
}

/// What is wrong with `s` ([`was_closed`]), for [`Error::StreamClosed`]'s message:
/// "standard output is closed (descriptor 1 was closed when krypta started)", or "standard
/// output cannot be written (descriptor 1 is open for reading only)".
pub fn describe(s: Stream) -> String {
    if WRONG_WAY.load(Ordering::Relaxed) & (1 << s.fd()) != 0 {
        let (verb, only) = match s {
            Stream::Stdin => ("read", "writing"),
            Stream::Stdout | Stream::Stderr => ("written", "reading"),
        };
        return format!(
            "{} cannot be {verb} (descriptor {} is open for {only} only)",
            s.name(),
            s.fd()
        );
    }
    format!(
        "{} is closed (descriptor {} was closed when krypta started)",
        s.name(),
        s.fd()
    )
}

/// Refuses a file krypta is to read (a password, key or list file) whose path names a
/// stream closed at start ([`names_closed`]: `--pass-file /dev/stdin <&-`): opened, it would
/// be the empty `/dev/null` standing in for it, read as an empty password or list.
/// Errors: [`Error::StreamClosed`].
pub fn require_input_path(path: &std::path::Path) -> Result<()> {
    match names_closed(path) {
        Some(s) => require(s, "there is nothing to read from it"),
        None => Ok(()),
    }
}

/// The stream, closed at start, that `path` names by one of its names (`/dev/stdout`,
/// `/dev/fd/1`, `/proc/self/fd/1`; the same for 0 and 2): opened, such a path would open the
/// `/dev/null` that stands in for it. `None` for any other path or an open stream.
/// A symbolic link to one of them counts too (`ln -s /dev/stdout out.kry`, a directory link
/// `mydev -> /dev` in `mydev/stdin`): it opens the same `/dev/null` ([`stream_through_links`]).
pub fn names_closed(path: &std::path::Path) -> Option<Stream> {
    let any = CLOSED.load(Ordering::Relaxed) | WRONG_WAY.load(Ordering::Relaxed) != 0;
    let s = stream_named(path).or_else(|| any.then(|| stream_through_links(path)).flatten())?;
    was_closed(s).then_some(s)
}

/// The standard stream `path` reaches through symbolic links ([`stream_named`] of each path
/// met on the way), resolved one link at a time from the left, as the kernel does, and
/// stopped at the first name of a stream: resolving that one too would end at the
/// `/dev/null` standing in for a closed stream. `None` for a path that names no stream, one
/// that cannot be resolved (a missing component), or more than 40 links.
fn stream_through_links(path: &std::path::Path) -> Option<Stream> {
    use std::path::{Component, PathBuf};
    let mut p = std::env::current_dir().ok()?.join(path);
    for _ in 0..40 {
        if let Some(s) = stream_named(&p) {
            return Some(s);
        }
        // The first component that is a link is replaced by its target; the components
        // before it are not links, so a `..` among them is taken lexically.
        let parts: Vec<Component> = p.components().collect();
        let mut prefix = PathBuf::from("/");
        let mut next = None;
        for (i, c) in parts.iter().enumerate() {
            let Component::Normal(name) = c else {
                if *c == Component::ParentDir {
                    prefix.pop();
                }
                continue;
            };
            let here = prefix.join(name);
            if std::fs::symlink_metadata(&here)
                .ok()?
                .file_type()
                .is_symlink()
            {
                let mut target = prefix.join(std::fs::read_link(&here).ok()?);
                for rest in &parts[i + 1..] {
                    target.push(rest.as_os_str());
                }
                next = Some(target);
                break;
            }
            prefix = here;
        }
        p = next?;
    }
    None
}

/// The standard stream `path` names, however spelled: `/dev/stdin`, `/dev/fd/0`,
/// `/proc/self/fd/0`, `/proc/thread-self/fd/0`, `/proc/PID/fd/0` with this process's PID
/// (the same for 1 and 2), with repeated slashes and `.` components (`/dev//stdin`,
/// `/dev/./fd/0`) as the kernel reads them. `None` for anything else (a path with `..` too:
/// not resolved here).
pub fn stream_named(path: &std::path::Path) -> Option<Stream> {
    let b = path.as_os_str().as_encoded_bytes();
    if !b.starts_with(b"/") {
        return None;
    }
    let parts: Vec<&[u8]> = b
        .split(|&c| c == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .collect();
    let fd = |n: &[u8]| match n {
        b"0" => Some(Stream::Stdin),
        b"1" => Some(Stream::Stdout),
        b"2" => Some(Stream::Stderr),
        _ => None,
    };
    let own_pid = std::process::id().to_string();
    match parts.as_slice() {
        [b"dev", b"stdin"] => Some(Stream::Stdin),
        [b"dev", b"stdout"] => Some(Stream::Stdout),
        [b"dev", b"stderr"] => Some(Stream::Stderr),
        [b"dev", b"fd", n] => fd(n),
        [b"proc", who, b"fd", n]
            if *who == b"self" || *who == b"thread-self" || *who == own_pid.as_bytes() =>
        {
            fd(n)
        }
        _ => None,
    }
}

/// Refuses a stream that was closed at start, before anything is read or written: `what`
/// says what that means ("nothing was written"). Errors: [`Error::StreamClosed`].
pub fn require(s: Stream, what: &'static str) -> Result<()> {
    if was_closed(s) {
        return Err(Error::StreamClosed { stream: s, what });
    }
    Ok(())
}

/// Refuses an archive path that leads to a stream closed at start: `-` (stdout when
/// `writing`, else stdin), or one of its names ([`names_closed`]). Errors: StreamClosed.
pub fn require_archive_path(path: &std::path::Path, writing: bool) -> Result<()> {
    let (dash, what) = if writing {
        (Stream::Stdout, "the archive was not written")
    } else {
        (Stream::Stdin, "there is no archive to read")
    };
    match names_closed(path) {
        Some(s) => require(s, what),
        None if path.as_os_str() == "-" => require(dash, what),
        None => Ok(()),
    }
}

/// A read of stdin or write to stdout that failed because the stream was closed at start (it
/// is `/dev/null` opened the other way: EBADF), as [`Error::StreamClosed`]; other errors as
/// they are.
pub(crate) fn closed_stream_error(
    path: &std::path::Path,
    source: &std::io::Error,
) -> Option<Error> {
    let s = Stream::named_by(path)?;
    (source.raw_os_error() == Some(libc::EBADF) && was_closed(s)).then_some(Error::StreamClosed {
        stream: s,
        what: "",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn every_spelling_of_a_standard_stream_is_recognised_and_nothing_else() {
        let pid = std::process::id();
        for (p, s) in [
            ("/dev/stdin", Stream::Stdin),
            ("/dev//stdin", Stream::Stdin),
            ("//dev/./fd/0", Stream::Stdin),
            ("/proc/self/fd/0/", Stream::Stdin),
            ("/proc/thread-self/fd/1", Stream::Stdout),
            (&format!("/proc/{pid}/fd/2"), Stream::Stderr),
            ("/dev/fd/1", Stream::Stdout),
            ("/dev/stderr", Stream::Stderr),
        ] {
            assert_eq!(stream_named(Path::new(p)), Some(s), "{p}");
        }
        for p in [
            "dev/stdin",
            "./dev/stdin",
            "/dev/fd/3",
            "/dev/fd/00",
            "/dev/../dev/stdin",
            "/proc/1/fd/0",
            "/proc/self/fd",
            "/dev/stdin2",
            "/tmp/dev/stdin",
            "-",
        ] {
            assert_eq!(stream_named(Path::new(p)), None, "{p}");
        }
    }
}
