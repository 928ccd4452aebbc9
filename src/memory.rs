//! krypta's big buffers: allocating them without aborting, what a run needs of them, and the
//! memory limit the process runs under (`ulimit -v`, a cgroup's `memory.max`).
//!
//! Why: a refused allocation in Rust's global allocator aborts the process (SIGABRT, exit
//! 134, a backtrace and no message a user can act on): `prlimit --as=400M krypta c -l 9`
//! of 50 MB died allocating its 64 MiB block buffer. The buffers that grow with `-b`, the
//! level or the archive read (blocks, frames, compressed output, zstd's working memory) go
//! through [`reserve`] / [`reserve_exact`] instead, or are checked for zstd's own
//! allocation error ([`zstd_out_of_memory`]), and a refusal becomes an [`OutOfMemory`]
//! that the caller turns into `crate::Error::OutOfMemory` (exit 4) naming the archive, the
//! amount, and what to do. Small allocations (paths, index entries, a few KiB of state) may
//! still abort: handling every one is not worth it, and they fail only after a big one.
//!
//! The model (measured on the development machine, `/usr/bin/time` max RSS of `c -j 1` of
//! 8 MB of random bytes, minus `c -s`'s 17 MB): a compressing worker holds its zstd context
//! ([`zstd_context_bytes`]) and its block, the block's filtered copy and the compressed
//! output (3 × `-b`); the writer keeps blocks in flight beside them
//! (`archive::pipeline::max_in_flight`). See [`compress_bytes`].
//!
//! A delta archive (`c --base`) is modelled on its own: [`delta`].

use crate::codec::Level;

pub mod delta;
pub use delta::{delta_worker_bytes, delta_zstd_context_bytes, diff_stream_context_bytes};

/// A big allocation the allocator refused (out of memory, or past `ulimit -v`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{} for {what} could not be allocated", mib(*bytes))]
pub struct OutOfMemory {
    /// Bytes asked for (the buffer's whole new capacity).
    pub bytes: u64,
    /// What the buffer is for ("a 64 MiB block", "zstd's compression context").
    pub what: &'static str,
}

/// `v.try_reserve_exact(additional)`, a refusal as [`OutOfMemory`] for `what`.
pub fn reserve_exact<T>(
    v: &mut Vec<T>,
    additional: usize,
    what: &'static str,
) -> Result<(), OutOfMemory> {
    v.try_reserve_exact(additional)
        .map_err(|_| refused(v, additional, what))
}

/// `v.try_reserve(additional)`, a refusal as [`OutOfMemory`] for `what`.
pub fn reserve<T>(
    v: &mut Vec<T>,
    additional: usize,
    what: &'static str,
) -> Result<(), OutOfMemory> {
    v.try_reserve(additional)
        .map_err(|_| refused(v, additional, what))
}

fn refused<T>(v: &[T], additional: usize, what: &'static str) -> OutOfMemory {
    let bytes = (v.len() as u64).saturating_add(additional as u64) * size_of::<T>() as u64;
    OutOfMemory { bytes, what }
}

/// Whether a libzstd error code is its allocation failure (`ZSTD_error_memory_allocation`):
/// zstd allocates its working memory inside `ZSTD_compress2` and reports a refused `malloc`
/// this way, never by aborting.
pub fn zstd_out_of_memory(code: usize) -> bool {
    code == (zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode::ZSTD_error_memory_allocation as usize)
        .wrapping_neg()
}

/// Whether `e`, an error the zstd crate returned (it words libzstd's error codes by their
/// names), is libzstd's refused allocation: a decoder's context or window under a memory
/// limit, which must be said as out of memory, not as a damaged frame.
pub fn zstd_io_out_of_memory(e: &std::io::Error) -> bool {
    let code = (zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode::ZSTD_error_memory_allocation as usize)
        .wrapping_neg();
    e.to_string() == zstd::zstd_safe::get_error_name(code)
}

/// `n` bytes in MiB with one decimal, as messages show them ("64.0 MiB").
pub fn mib(n: u64) -> String {
    format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
}

/// zstd's compression context at `level` for blocks of `block_size` bytes, bytes (measured
/// RSS of one worker, rounded up; zstd sizes its tables down for smaller blocks). Levels 1–8
/// use a 4 MiB window whatever the block; level 9 a window of two blocks up to 128 MiB, with
/// the long-distance matcher (145 MiB measured at its default 64 MiB blocks), and match
/// tables of up to 80 MiB that smaller blocks shrink only so far.
pub fn zstd_context_bytes(level: Level, block_size: usize) -> u64 {
    const MIB: u64 = 1 << 20;
    let at_4m = [6, 6, 7, 9, 11, 16, 48, 56, 0][usize::from(level.get()) - 1] * MIB;
    if level != Level::MAX {
        return at_4m;
    }
    // Level 9: about 1.1 × the window (two blocks, at most 128 MiB) plus 4 MiB, but never
    // less than its match tables: zstd 19's chain table (2^24 entries of 4 bytes) and hash
    // table (2^22), which it shrinks only to fit a smaller window (chain log at most the
    // window's log + 1). Measured (h65): 1 MiB blocks 26 MiB, 4 MiB blocks about 75 MiB,
    // where the window alone said 6 and 13 (`ulimit -v` runs at -l 9 -b 4M failed on
    // the default -j the model had let through).
    let window = (2 * block_size as u64).min(128 * MIB);
    let window_log = u64::from(window.max(1).next_power_of_two().trailing_zeros());
    let tables = 4 * ((1 << (window_log + 1).min(24)) + (1 << window_log.min(22)));
    (window + window / 8).max(tables) + 4 * MIB
}

/// What one compressing worker holds at `level` (`None`: stored) with blocks of
/// `block_size` bytes, bytes: its context, the block, its filtered copy and the output.
pub fn worker_bytes(level: Option<Level>, block_size: usize) -> u64 {
    let b = block_size as u64;
    match level {
        None => b,
        Some(l) => zstd_context_bytes(l, block_size) + 3 * b,
    }
}

/// About what `c` needs with `jobs` sealing workers, `in_flight` blocks in flight and blocks
/// of `block_size` bytes, bytes: each worker's [`worker_bytes`], the blocks waiting beside
/// them (raw and encoded), the block being filled, at level 9 the block before it (the next
/// block's reference), and 32 MiB for the rest of the process. For a delta archive
/// (`base_cache`: the base's `BaseArchive::cache_bytes_at_most`) each worker's
/// [`delta_worker_bytes`] instead, no reference block (a delta block's prefix is its region),
/// and the base's cache.
pub fn compress_bytes(
    level: Option<Level>,
    block_size: usize,
    jobs: usize,
    in_flight: usize,
    base_cache: Option<u64>,
) -> u64 {
    let jobs = jobs.max(1) as u64;
    let b = block_size as u64;
    let waiting = (in_flight as u64).saturating_sub(jobs) * 2 * b;
    let reference = if level.is_some_and(|l| l.references()) && base_cache.is_none() {
        b
    } else {
        0
    };
    let worker = match base_cache {
        Some(_) => delta_worker_bytes(level, block_size),
        None => worker_bytes(level, block_size),
    };
    jobs * worker + waiting + b + reference + base_cache.unwrap_or(0) + (32 << 20)
}

/// Blocks a writer keeps in flight with `jobs` workers (as `archive::writer` chooses):
/// one per worker at level 9 (referencing blocks), else `archive::pipeline::max_in_flight`.
pub fn writer_in_flight(level: Option<Level>, block_size: usize, jobs: usize) -> usize {
    if level.is_some_and(|l| l.references()) {
        jobs.max(1)
    } else {
        crate::archive::pipeline::max_in_flight(jobs, block_size)
    }
}

/// Most sealing workers (at most `jobs`, at least 1) whose [`compress_bytes`] fits in
/// `limit` bytes (`base_cache` as there). 1 when not even one fits: a run then tries, and
/// fails with `Error::OutOfMemory` if it must.
pub fn workers_within(
    limit: u64,
    level: Option<Level>,
    block_size: usize,
    jobs: usize,
    base_cache: Option<u64>,
) -> usize {
    (1..=jobs.max(1))
        .rev()
        .find(|&j| {
            let in_flight = writer_in_flight(level, block_size, j);
            compress_bytes(level, block_size, j, in_flight, base_cache) <= limit
        })
        .unwrap_or(1)
}

/// The memory limit this process runs under, bytes, and where it comes from: the lower of
/// `RLIMIT_AS` (`ulimit -v`, `prlimit --as`) and the cgroup's memory limit (v2
/// `memory.max`, v1 `memory.limit_in_bytes`). `None` when neither is set.
pub fn limit() -> Option<(u64, &'static str)> {
    let rlimit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_AS)
        .ok()
        .map(|(soft, _)| soft)
        .filter(|&s| s != nix::sys::resource::RLIM_INFINITY)
        .map(|s| (s, "the address-space limit (ulimit -v)"));
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|text| cgroup_limit(&text, |p| std::fs::read_to_string(p).ok()))
        .map(|b| (b, "the cgroup's memory limit"));
    match (rlimit, cgroup) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// Under an address-space limit (`ulimit -v`), makes glibc's allocator keep one arena rather
/// than one per thread: each thread's arena reserves 64 MiB of address space that it does
/// not use, which `RLIMIT_AS` counts, so two workers at `-l 9 -b 4M` ran out at 400 MB
/// though they use about 200 (measured, h65), and whether a run fits depended on which
/// threads made arenas first. The big buffers are mapped on their own either way. To be
/// called at the start of `main`, before any thread exists; nothing without a limit.
#[allow(unsafe_code)]
pub fn fit_allocator_to_limit() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_AS)
        .is_ok_and(|(soft, _)| soft != nix::sys::resource::RLIM_INFINITY)
    {
        // SAFETY: mallopt only sets a tunable of glibc's allocator; M_ARENA_MAX takes any
        // positive count, and only one thread runs.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// The memory limit of the cgroup named in `proc_self_cgroup` (the text of
/// `/proc/self/cgroup`), reading files through `read`: v2 (`0::/path`, `memory.max` under
/// `/sys/fs/cgroup`), else v1 (the `memory` controller's `memory.limit_in_bytes`); the lowest
/// of the cgroup's and every ancestor's, as the kernel enforces each of them (a limit set on a
/// parent, a systemd slice, holds its children as well). `None` for "max", a missing file,
/// v1's "no limit" (a value past 2^62), or a path that is not plainly below the mount (a
/// cgroup outside this cgroup namespace shows as `/../..`: its files are not there to read).
pub fn cgroup_limit(proc_self_cgroup: &str, read: impl Fn(&str) -> Option<String>) -> Option<u64> {
    let parse = |s: String| s.trim().parse::<u64>().ok().filter(|&v| v < 1 << 62);
    // The lowest limit of `dir` (below `mount`) and its ancestors, the mount itself excluded
    // (a root cgroup has no limit file in v2, and v1's is "no limit").
    let lowest = |mount: &str, dir: &str, file: &str| {
        let parts: Vec<&str> = dir.split('/').filter(|c| !c.is_empty()).collect();
        if !dir.starts_with('/') || parts.iter().any(|c| *c == "." || *c == "..") {
            return None;
        }
        (1..=parts.len())
            .filter_map(|n| read(&format!("{mount}/{}/{file}", parts[..n].join("/"))))
            .filter_map(parse)
            .min()
    };
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let found = if controllers.is_empty() {
            lowest("/sys/fs/cgroup", path, "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            lowest("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes")
        } else {
            None
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// What to tell a user whose run ran out of memory compressing: what the run needed about,
/// and what to change (`base_cache` as for [`compress_bytes`]).
pub fn compress_advice(
    level: Option<Level>,
    block_size: usize,
    jobs: usize,
    base_cache: Option<u64>,
) -> String {
    let mut tries = Vec::new();
    if jobs > 1 {
        tries.push("-j 1".to_string());
    }
    if level.is_some_and(|l| l.get() > 3) {
        tries.push(match base_cache {
            None => "a lower level (-l 3 needs about 20 MiB per worker)".into(),
            Some(_) => format!(
                "a lower level (a delta at -l 3 needs about {} per worker)",
                mib(delta_worker_bytes(Some(Level::DEFAULT), 4 << 20))
            ),
        });
    }
    if block_size > 4 << 20 {
        tries.push("a smaller -b (4M)".into());
    }
    let tries = if tries.is_empty() {
        "more memory for krypta (a higher ulimit -v or memory.max)".to_string()
    } else {
        tries.join(", ")
    };
    format!(
        "{} ({jobs} worker{}); try {tries}",
        compress_needs(level, block_size, base_cache),
        if jobs == 1 { "" } else { "s" }
    )
}

/// "level 9 with 64.0 MiB blocks needs about 340.0 MiB per worker" ([`worker_bytes`]); for a
/// delta archive "a delta at level 9 with 32.0 MiB blocks needs about … per worker and … for
/// the base's cache" ([`delta_worker_bytes`], `base_cache` as for [`compress_bytes`]).
pub fn compress_needs(level: Option<Level>, block_size: usize, base_cache: Option<u64>) -> String {
    let what = match level {
        Some(l) => format!("level {} with {} blocks", l.get(), mib(block_size as u64)),
        None => format!("storing {} blocks", mib(block_size as u64)),
    };
    match base_cache {
        None => {
            let per = mib(worker_bytes(level, block_size));
            format!("{what} needs about {per} per worker")
        }
        Some(cache) => format!(
            "a delta at {what} needs about {} per worker and {} for the base's cache",
            mib(delta_worker_bytes(level, block_size)),
            mib(cache)
        ),
    }
}

/// What to tell a user whose read (`x`, `t`, `l`) ran out of memory with `jobs` decoding
/// workers: each holds a decoded block, and the reader one more.
pub fn read_advice(jobs: usize) -> String {
    let tries = if jobs > 1 {
        "try -j 1, or give krypta more memory (a higher ulimit -v or memory.max)"
    } else {
        "give krypta more memory (a higher ulimit -v or memory.max)"
    };
    format!(
        "reading holds one decoded block per worker ({jobs} worker{}) and one more for the \
         files being written; {tries}",
        if jobs == 1 { "" } else { "s" }
    )
}

/// The Argon2id matrix of the password stanza (`bytes` = its m KiB × 1024) could not be
/// mapped, for the archive at `path`: written (`reading` false: `--kdf-memory` sets it) or
/// read (its m was chosen when it was written).
pub fn argon2_out_of_memory(path: &std::path::Path, bytes: usize, reading: bool) -> crate::Error {
    let advice = if reading {
        format!(
            "the archive's password stanza asks for Argon2id with m = {} (chosen with \
             --kdf-memory when it was written), and the password cannot be checked with less: \
             give krypta more memory (a higher ulimit -v or memory.max)",
            mib(bytes as u64)
        )
    } else {
        format!(
            "the password's Argon2id parameters (--kdf-memory, m = {}) need it: give a lower \
             --kdf-memory (at least 8 MiB; every later read needs as much) or more memory",
            mib(bytes as u64)
        )
    };
    crate::Error::OutOfMemory {
        path: path.to_path_buf(),
        source: OutOfMemory {
            bytes: bytes as u64,
            what: "the password's Argon2id matrix",
        },
        advice,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a diff stream's zstd decoder refused memory under a limit was taken for a
    /// damaged frame (by the writer's check of its own payload: the larger zstd frame kept
    /// silently, a panic in debug builds). libzstd's allocation failure, as the zstd crate
    /// words it, is told apart from a real decoding error.
    #[test]
    fn zstd_s_allocation_failure_is_told_from_a_damaged_frame() {
        let code = (zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode::ZSTD_error_memory_allocation
            as usize)
            .wrapping_neg();
        let alloc = std::io::Error::other(zstd::zstd_safe::get_error_name(code));
        assert!(zstd_io_out_of_memory(&alloc));
        let mut frame = zstd::bulk::compress(&[7u8; 1000], 3).unwrap();
        let last = frame.len() - 1;
        frame[last] ^= 0xFF;
        let damaged = zstd::bulk::decompress(&frame, 1000).unwrap_err();
        assert!(!damaged.to_string().is_empty());
        assert!(!zstd_io_out_of_memory(&damaged), "{damaged}");
    }

    #[test]
    fn a_refused_reservation_names_its_size_and_purpose() {
        let mut v: Vec<u8> = vec![1, 2, 3];
        let e = reserve_exact(&mut v, usize::MAX - 8, "a block").unwrap_err();
        assert_eq!(e.what, "a block");
        assert_eq!(
            e.to_string(),
            format!("{} for a block could not be allocated", mib(e.bytes))
        );
        assert_eq!(v, [1, 2, 3], "the vector is untouched");
        reserve(&mut v, 100, "a block").unwrap();
        assert!(v.capacity() >= 103);
    }

    #[test]
    fn zstd_allocation_error_is_recognised_and_others_are_not() {
        let oom = (zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode::ZSTD_error_memory_allocation
            as usize)
            .wrapping_neg();
        assert!(zstd_out_of_memory(oom));
        assert_eq!(
            zstd::zstd_safe::get_error_name(oom),
            "Allocation error : not enough memory"
        );
        assert!(!zstd_out_of_memory(1usize.wrapping_neg()));
        assert!(!zstd_out_of_memory(0));
    }

    #[test]
    fn cgroup_v2_and_v1_limits_are_read_and_max_is_none() {
        let files = |p: &str| match p {
            "/sys/fs/cgroup/user.slice/a/memory.max" => Some("536870912\n".to_string()),
            "/sys/fs/cgroup/b/memory.max" => Some("max\n".to_string()),
            "/sys/fs/cgroup/memory/docker/c/memory.limit_in_bytes" => Some("268435456\n".into()),
            "/sys/fs/cgroup/memory/d/memory.limit_in_bytes" => Some("9223372036854771712\n".into()),
            _ => None,
        };
        assert_eq!(cgroup_limit("0::/user.slice/a\n", files), Some(512 << 20));
        assert_eq!(cgroup_limit("0::/b\n", files), None);
        assert_eq!(
            cgroup_limit("5:cpu:/\n4:memory:/docker/c\n0::/\n", files),
            Some(256 << 20)
        );
        assert_eq!(cgroup_limit("4:memory:/d\n", files), None, "v1's no limit");
        assert_eq!(cgroup_limit("", files), None);
    }

    #[test]
    fn cgroup_limits_of_ancestors_count_and_hostile_paths_read_nothing_outside() {
        let asked = std::cell::RefCell::new(Vec::new());
        let files = |p: &str| {
            asked.borrow_mut().push(p.to_string());
            match p {
                // A slice's limit holds the scope below it, which sets none.
                "/sys/fs/cgroup/user.slice/memory.max" => Some("1073741824\n".to_string()),
                "/sys/fs/cgroup/user.slice/run.scope/memory.max" => Some("max\n".to_string()),
                // The lower of a parent's and a child's.
                "/sys/fs/cgroup/p/memory.max" => Some("268435456\n".to_string()),
                "/sys/fs/cgroup/p/c/memory.max" => Some("536870912\n".to_string()),
                "/sys/fs/cgroup/memory/k/memory.limit_in_bytes" => Some("134217728\n".into()),
                "/sys/fs/cgroup/memory/k/pod/memory.limit_in_bytes" => {
                    Some("9223372036854771712\n".into())
                }
                _ => Some("1024\n".to_string()),
            }
        };
        assert_eq!(
            cgroup_limit("0::/user.slice/run.scope\n", files),
            Some(1 << 30)
        );
        assert_eq!(cgroup_limit("0::/p/c\n", files), Some(256 << 20));
        assert_eq!(cgroup_limit("4:memory:/k/pod/\n", files), Some(128 << 20));
        asked.borrow_mut().clear();
        // A cgroup outside the namespace, a path made of dots, garbage: nothing is read.
        for text in [
            "0::/../../etc\n",
            "0::/a/../../../proc\n",
            "4:memory:/./x\n",
            "0::\n",
            "0::/\n",
            "garbage\n::\n:::\n",
        ] {
            assert_eq!(cgroup_limit(text, files), None, "{text:?}");
        }
        assert_eq!(asked.borrow().as_slice(), &[] as &[String]);
    }

    #[test]
    fn workers_are_cut_to_what_the_limit_holds() {
        let l9 = Some(Level::MAX);
        let one = compress_bytes(l9, 64 << 20, 1, 1, None);
        let two = compress_bytes(l9, 64 << 20, 2, 2, None);
        assert_eq!(workers_within(two, l9, 64 << 20, 4, None), 2);
        assert_eq!(workers_within(two - 1, l9, 64 << 20, 4, None), 1);
        assert_eq!(
            workers_within(one - 1, l9, 64 << 20, 4, None),
            1,
            "never below one"
        );
        assert_eq!(workers_within(u64::MAX, l9, 64 << 20, 4, None), 4);
        assert_eq!(
            workers_within(1 << 30, Some(Level::DEFAULT), 4 << 20, 2, None),
            2
        );
    }

    #[test]
    fn level_9_counts_its_match_tables_at_small_blocks() {
        // Regression (h65): 4 MiB blocks at level 9 were 13 MiB of context (measured: about
        // 75), so `ulimit -v 200000` let the default -j through and the run ran out.
        let l9 = Level::MAX;
        assert_eq!(zstd_context_bytes(l9, 4 << 20), (64 + 16 + 4) << 20);
        assert_eq!(zstd_context_bytes(l9, 1 << 20), (16 + 8 + 4) << 20);
        assert_eq!(
            zstd_context_bytes(l9, 64 << 20),
            148 << 20,
            "the window's, unchanged"
        );
        assert_eq!(worker_bytes(Some(l9), 4 << 20), (84 + 12) << 20);
    }

    #[test]
    fn the_model_grows_with_level_block_and_workers() {
        let l9 = Some(Level::MAX);
        // Level 9 at its 64 MiB blocks: a 148 MiB context and three blocks.
        assert_eq!(worker_bytes(l9, 64 << 20), (148 + 192) << 20);
        assert_eq!(worker_bytes(Some(Level::DEFAULT), 4 << 20), (7 + 12) << 20);
        assert_eq!(worker_bytes(None, 4 << 20), 4 << 20);
        // Two workers, the block being filled and the one before it: about 1 GiB.
        assert_eq!(
            compress_bytes(l9, 64 << 20, 2, 2, None),
            (2 * (148 + 192) + 2 * 64 + 32) << 20
        );
        // Level 3, 4 MiB blocks, 2 workers, 6 in flight: four waiting blocks of 8 MiB.
        assert_eq!(
            compress_bytes(Some(Level::DEFAULT), 4 << 20, 2, 6, None),
            (2 * 19 + 4 * 8 + 4 + 32) << 20
        );
        let a = compress_advice(l9, 64 << 20, 2, None);
        assert_eq!(
            a,
            "level 9 with 64.0 MiB blocks needs about 340.0 MiB per worker (2 workers); try -j 1, \
             a lower level (-l 3 needs about 20 MiB per worker), a smaller -b (4M)"
        );
    }
}
