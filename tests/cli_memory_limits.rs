//! Runs under a memory limit (`ulimit -v`, as `prlimit --as` sets it; a real limit, no
//! mocks). A big buffer the allocator refuses must be a clear error (exit 4) naming the
//! archive, the amount, what it was for and what to do — never an abort (exit 134, SIGABRT,
//! "memory allocation of N bytes failed") — with nothing under the output's name and an old
//! archive kept. Each limit is far below what the run needs (a 256 MiB block buffer, a 4 GiB
//! Argon2id matrix) or far above it, so the tests do not depend on the machine.

mod cli_common;
mod common;

use std::process::Output;

use cli_common::*;
use common::{bytes, code};

/// Runs krypta in `fx`'s directory under `ulimit -v` of `mib` MiB.
fn under_memory_limit(fx: &Fx, mib: u64, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_krypta");
    let o = std::process::Command::new("sh")
        .current_dir(fx.p(""))
        .args([
            "-c",
            &format!("ulimit -v {} && exec \"$0\" \"$@\"", mib << 10),
            bin,
        ])
        .args(args)
        .env_remove("KRYPTA_PASSWORD")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    assert!(
        o.status.code().is_some(),
        "krypta {args:?} under {mib} MiB killed by signal {:?} (SIGABRT is 6): {}",
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        err(&o)
    );
    o
}

/// A run small enough for the limits below: the fixed cost of the process fits in them.
const ROOM_MIB: u64 = 240;

/// Regression: `prlimit --as=400M krypta c -l 9` aborted allocating its 64 MiB block buffer
/// ("memory allocation of 67108936 bytes failed", a backtrace, exit 134). A block buffer that
/// cannot be had is now an error that says so, with the run's needs and what to change.
#[test]
fn a_block_buffer_past_the_limit_is_an_error_not_an_abort() {
    let fx = Fx::new();
    fx.file("in/a", &bytes(5000, 1, true));
    fx.ok(&["c", "-q", "old.kry", "in"]);
    let old = fx.read("old.kry");

    // The fixed cost fits: the same run with small blocks works under the limit.
    let o = under_memory_limit(
        &fx,
        ROOM_MIB,
        &["c", "-q", "-j", "1", "-b", "64K", "small.kry", "in"],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));

    // 256 MiB blocks: the first block buffer alone is past the limit.
    for (args, out) in [
        (
            &[
                "c", "-q", "-j", "1", "-l", "1", "-b", "256M", "new.kry", "in",
            ][..],
            "new.kry",
        ),
        (
            &[
                "c", "-q", "-f", "-j", "1", "-s", "-b", "256M", "old.kry", "in",
            ],
            "old.kry",
        ),
    ] {
        let o = under_memory_limit(&fx, ROOM_MIB, args);
        assert_eq!(code(&o), 4, "{args:?}: {}", err(&o));
        let e = err(&o);
        assert!(
            e.contains(&format!(
                "krypta: {out}: out of memory: 256.0 MiB for a block buffer could not be allocated; "
            )),
            "{args:?}: {e}"
        );
        assert!(e.contains("try a smaller -b (4M)"), "{args:?}: {e}");
        assert!(!e.contains("memory allocation of"), "{args:?}: {e}");
    }
    let o = under_memory_limit(
        &fx,
        ROOM_MIB,
        &[
            "c", "-q", "-j", "1", "-l", "1", "-b", "256M", "new.kry", "in",
        ],
    );
    assert!(
        err(&o).contains(
            "level 1 with 256.0 MiB blocks needs about 774.0 MiB per worker (1 worker); try a \
             smaller -b (4M)"
        ),
        "{}",
        err(&o)
    );
    assert!(!fx.exists("new.kry"));
    assert_eq!(fx.read("old.kry"), old, "the old archive is kept");

    // Far above the need, the same run works and reads back.
    let o = under_memory_limit(
        &fx,
        16 << 10,
        &[
            "c", "-q", "-j", "1", "-l", "1", "-b", "256M", "new.kry", "in",
        ],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    fx.ok(&["x", "-q", "-C", "out", "new.kry"]);
    assert_eq!(fx.read("out/in/a"), bytes(5000, 1, true));
}

/// Regression: a decoded block the reader cannot allocate aborted `x` the same way; it is
/// an out-of-memory error (exit 4) — not damage (3, 5) — and no file is left half-written.
#[test]
fn a_decoded_block_past_the_limit_is_an_error_not_damage() {
    let fx = Fx::new();
    // One 250 MiB block of repetitive text: compressed small, decoded past the limit. (160
    // MiB was past it while glibc gave every thread its own 64 MiB arena of address space;
    // under `ulimit -v` krypta keeps one now (h65), and 160 MiB fits in 240.)
    let data = bytes(1 << 20, 7, true).repeat(250);
    fx.file("in/big", &data);
    fx.ok(&["c", "-q", "-l", "1", "-b", "256M", "a.kry", "in"]);
    std::fs::remove_file(fx.p("in/big")).unwrap();
    let o = under_memory_limit(&fx, ROOM_MIB, &["x", "-q", "-j", "1", "-C", "out", "a.kry"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(
        err(&o).contains(
            "krypta: a.kry: out of memory: 250.0 MiB for a decoded block could not be allocated; \
             reading holds one decoded block per worker"
        ),
        "{}",
        err(&o)
    );
    assert!(!fx.exists("out/in/big"));
    let o = under_memory_limit(&fx, 16 << 10, &["x", "-q", "-j", "1", "-C", "out", "a.kry"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(fx.read("out/in/big") == data);
}

/// Regression: an Argon2id matrix that could not be mapped said "crypto: argon2id: cannot
/// map 4294967296 bytes of memory" (exit 1) writing, and "authentication failed: wrong key
/// or password" (exit 2) reading: the password was never checked. Both now name the
/// password's Argon2id parameters, the amount in MiB and what to do (exit 4).
#[test]
fn an_argon2_matrix_past_the_limit_names_the_kdf_memory() {
    let fx = Fx::new();
    fx.file("in/a", &bytes(100, 1, true));
    fx.file("pw", b"correct horse\n");
    let o = under_memory_limit(
        &fx,
        ROOM_MIB,
        &[
            "c",
            "-q",
            "--pass-file",
            "pw",
            "--kdf-memory",
            "4096",
            "new.kry",
            "in",
        ],
    );
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(
        err(&o).contains(
            "krypta: new.kry: out of memory: 4096.0 MiB for the password's Argon2id matrix could \
             not be allocated; the password's Argon2id parameters (--kdf-memory, m = 4096.0 MiB) \
             need it: give a lower --kdf-memory"
        ),
        "{}",
        err(&o)
    );
    assert!(!fx.exists("new.kry"));

    // Written with 512 MiB, read under a limit below that.
    fx.ok(&[
        "c",
        "-q",
        "--pass-file",
        "pw",
        "--kdf-memory",
        "512",
        "a.kry",
        "in",
    ]);
    let o = under_memory_limit(
        &fx,
        ROOM_MIB,
        &["x", "-q", "--pass-file", "pw", "-C", "out", "a.kry"],
    );
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(
        err(&o).contains(
            "krypta: a.kry: out of memory: 512.0 MiB for the password's Argon2id matrix could not \
             be allocated; the archive's password stanza asks for Argon2id with m = 512.0 MiB"
        ),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("authentication failed"), "{}", err(&o));
    assert!(!fx.exists("out/in/a"));
    let o = under_memory_limit(
        &fx,
        16 << 10,
        &["x", "-q", "--pass-file", "pw", "-C", "out", "a.kry"],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
}

/// Under a limit, `-j`'s default is cut to the workers that fit, said once on stderr (not
/// with `-q`); a `-j` given is taken as given.
#[test]
fn the_default_workers_fit_the_memory_limit() {
    let fx = Fx::new();
    fx.file("in/a", &bytes(5000, 1, true));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Level 9: about 340 MiB per worker, 500 MiB for one and 1 GiB for two: 600 MiB holds one.
    let o = under_memory_limit(&fx, 600, &["c", "-l", "9", "a.kry", "in"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let note = format!(
        "krypta: note: using -j 1 rather than {cores}: level 9 with 64.0 MiB blocks needs about \
         340.0 MiB per worker, and the address-space limit (ulimit -v) is 600.0 MiB\n"
    );
    assert_eq!(err(&o).contains(&note), cores > 1, "{}", err(&o));
    let o = under_memory_limit(&fx, 600, &["c", "-q", "-f", "-l", "9", "a.kry", "in"]);
    assert_eq!((code(&o), err(&o)), (0, String::new()));
    let o = under_memory_limit(&fx, 600, &["c", "-f", "-j", "1", "-l", "9", "a.kry", "in"]);
    assert!(!err(&o).contains("note: using"), "{}", err(&o));
    // No limit: no note.
    let o = fx.run(&["c", "-f", "-l", "9", "a.kry", "in"]);
    assert!(!err(&o).contains("note: using"), "{}", err(&o));
}

/// Regression (h65): `ulimit -v 200000; krypta c -l 9 -b 4M` ran out of memory on its default
/// -j: the model gave level 9 at 4 MiB blocks 13 MiB of zstd context (its match tables are
/// about 80), and glibc's per-thread arenas reserved 64 MiB of address space each, so the
/// run failed where one worker fits. Now the default is one worker (with a note) and it
/// works; under a limit that holds two, two are used.
#[test]
fn level_9_with_small_blocks_fits_its_default_workers_in_the_limit() {
    let fx = Fx::new();
    let data = bytes(9 << 20, 3, true);
    fx.file("in/a", &data);
    let o = under_memory_limit(&fx, 195, &["c", "-l", "9", "-b", "4M", "a.kry", "in"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores > 1 {
        assert!(
            err(&o).starts_with(&format!(
                "krypta: note: using -j 1 rather than {cores}: level 9 with 4.0 MiB blocks needs \
                 about 96.0 MiB per worker, and the address-space limit (ulimit -v) is 195.0 MiB"
            )),
            "{}",
            err(&o)
        );
    }
    fx.ok(&["x", "-q", "-C", "out", "a.kry"]);
    assert!(fx.read("out/in/a") == data);
}

/// Regression (h67): `c --recovery 50` under `ulimit -v` of 120 MiB aborted ("memory
/// allocation of 67108864 bytes failed", exit 134): the recovery encoder's accumulator and
/// chunk buffers (64 MiB each at 50%) came from the infallible allocator. They are an
/// out-of-memory error now (exit 4) naming the recovery data and what to lower, with nothing
/// under the output's name and an old archive kept; at 1% (2 MiB buffers) the run fits.
#[test]
fn recovery_buffers_past_the_limit_are_an_error_not_an_abort() {
    let fx = Fx::new();
    fx.file("in/a", &bytes(5000, 3, false));
    fx.ok(&["c", "-q", "old.kry", "in"]);
    let old = fx.read("old.kry");
    let small = ["-q", "-j", "1", "-s", "-b", "64K"];
    for (extra, out) in [(&[][..], "new.kry"), (&["-f"][..], "old.kry")] {
        let mut args = vec!["c"];
        args.extend(small);
        args.extend(extra);
        args.extend(["--recovery", "50", out, "in"]);
        let o = under_memory_limit(&fx, 120, &args);
        let e = err(&o);
        assert_eq!(code(&o), 4, "{args:?}: {e}");
        assert!(
            e.starts_with(&format!("krypta: {out}: out of memory: 64.0 MiB for ")),
            "{e}"
        );
        assert!(
            e.contains(
                "recovery data at 50% needs about 256.2 MiB while it is written (three chunk \
                 buffers, and recovery shards kept in memory up to 64 MiB before they go to a \
                 temporary file); try a lower --recovery"
            ),
            "{e}"
        );
        assert!(!e.contains("memory allocation of"), "{e}");
    }
    assert!(!fx.exists("new.kry"));
    assert_eq!(fx.read("old.kry"), old, "the old archive is kept");

    let mut args = vec!["c"];
    args.extend(small);
    args.extend(["--recovery", "1", "new.kry", "in"]);
    let o = under_memory_limit(&fx, 120, &args);
    assert_eq!(code(&o), 0, "{}", err(&o));
    fx.ok(&["repair", "--check", "new.kry"]);
}

/// Regression (h67): `repair` holds a whole segment of the archive (up to 128 MiB) and
/// aborted when it could not have it. Under a limit that `repair --check` (which reads in
/// 4 MiB blocks) fits in, a repair of a 57 MiB segment is now an out-of-memory error (exit 4)
/// that says nothing was repaired, and the damaged archive is left as it was (in place with
/// -f, and no -o file); with room, the same repair restores the archive as written.
#[test]
fn repair_past_the_limit_is_an_error_and_leaves_the_archive_untouched() {
    let fx = Fx::new();
    let data = bytes(60_000_000, 9, false);
    fx.file("in/big", &data);
    fx.ok(&["c", "-q", "-s", "--recovery", "5", "a.kry", "in"]);
    let intact = fx.read("a.kry");
    let mut damaged = intact.clone();
    damaged[30_000_000..30_000_004].copy_from_slice(b"ZZZZ");
    std::fs::write(fx.p("a.kry"), &damaged).unwrap();

    let o = under_memory_limit(&fx, 48, &["repair", "--check", "a.kry"]);
    assert_eq!(code(&o), 7, "{}", err(&o));
    for args in [
        &["repair", "-f", "a.kry"][..],
        &["repair", "-o", "b.kry", "a.kry"],
    ] {
        let o = under_memory_limit(&fx, 48, args);
        let e = err(&o);
        assert_eq!(code(&o), 4, "{args:?}: {e}");
        assert!(
            e.starts_with("krypta: a.kry: out of memory: ")
                || e.starts_with("krypta: b.kry: out of memory: "),
            "{args:?}: {e}"
        );
        assert!(
            e.contains("nothing was repaired") || e.contains("recovery data at 5% needs about"),
            "{args:?}: {e}"
        );
        assert!(!e.contains("memory allocation of"), "{e}");
        assert!(
            fx.read("a.kry") == damaged,
            "{args:?}: the archive is untouched"
        );
        assert!(!fx.exists("b.kry"));
    }
    let o = under_memory_limit(&fx, 48, &["repair", "-f", "a.kry"]);
    assert!(
        err(&o).contains("57.2 MiB for a segment of the archive being repaired could not be allocated; repairing with the recovery data holds a whole segment (57.2 MiB)"),
        "{}",
        err(&o)
    );
    fx.ok(&["repair", "-q", "-f", "a.kry"]);
    assert!(
        fx.read("a.kry") == intact,
        "repaired byte for byte with room"
    );
}

/// Regression (h67): `c --recovery P`'s default -j left the recovery encoder's buffers (200.8
/// MiB at 50%: three 64 MiB chunks and the Reed-Solomon tables) out of the model, so a limit
/// that held two workers' compression held the encoder only beside one. They are taken off
/// the limit first: at 300 MiB two level-3 workers fit without recovery data, one with it.
#[test]
fn the_default_workers_leave_room_for_the_recovery_data() {
    let fx = Fx::new();
    fx.file("in/a", &bytes(5000, 1, true));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let o = under_memory_limit(&fx, 300, &["c", "a.kry", "in"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(!err(&o).contains("note: using"), "{}", err(&o));
    let o = under_memory_limit(&fx, 300, &["c", "--recovery", "50", "b.kry", "in"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let note = format!(
        "krypta: note: using -j 1 rather than {cores}: level 3 with 4.0 MiB blocks needs about \
         19.0 MiB per worker, and the address-space limit (ulimit -v) is 300.0 MiB, of which \
         the recovery data needs about 200.8 MiB\n"
    );
    assert_eq!(err(&o).contains(&note), cores > 1, "{}", err(&o));
    fx.ok(&["repair", "--check", "b.kry"]);
}

/// Regression (h69): under a limit smaller than the recovery encoder's own buffers the note
/// said "the address-space limit (ulimit -v) is 150.0 MiB, of which the recovery data needs
/// about 200.8 MiB": a part larger than the whole. It says the limit is less than the
/// recovery data alone needs; the run then fails out of memory (exit 4), no archive written.
#[test]
fn the_default_workers_note_says_when_the_recovery_data_alone_exceeds_the_limit() {
    let fx = Fx::new();
    fx.file("in/a", &bytes(5000, 1, true));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let o = under_memory_limit(&fx, 150, &["c", "--recovery", "50", "b.kry", "in"]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(!fx.p("b.kry").exists());
    let note = format!(
        "krypta: note: using -j 1 rather than {cores}: level 3 with 4.0 MiB blocks needs about \
         19.0 MiB per worker, and the address-space limit (ulimit -v) is 150.0 MiB, less than \
         the recovery data alone needs (about 200.8 MiB)\n"
    );
    assert_eq!(err(&o).contains(&note), cores > 1, "{}", err(&o));
    assert!(!err(&o).contains("of which"), "{}", err(&o));
}

/// Regression (h72): a delta archive's workers were modelled as plain ones, so under a limit
/// `c --base -l 9` (32 MiB blocks, each worker holding its region, the diff's copy of region
/// and block, 64 MiB of match tables, its streams and zstd -19's 82 MiB context: about 594
/// MiB, where the plain model said 180) started as many workers as for a plain archive:
/// under 800 MiB two, whose peak on 68 MB of new bytes was 1,134 MiB of address space
/// (measured). The default now counts the delta's workers and the base's cache, says so, and
/// the run at the lowered -j works and restores.
#[test]
fn a_delta_under_a_memory_limit_counts_its_workers_and_the_base_cache() {
    let fx = Fx::new();
    let old = bytes(9 << 20, 5, true);
    let mut new = old.clone();
    for i in (0..new.len()).step_by(4099) {
        new[i] ^= 0x5a;
    }
    fx.file("old/f", &old);
    fx.file("new/f", &new);
    fx.ok(&["c", "-q", "base.kry", "old"]);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let o = under_memory_limit(
        &fx,
        800,
        &["c", "-l", "9", "--base", "base.kry", "d.kry", "new"],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    // The base's 9 MiB in three 4 MiB frames: 12 MiB of cache and one frame over, and the
    // base walk's block and frame beside the workers (since session 33 it runs beside them).
    let note = format!(
        "krypta: note: using -j 1 rather than {cores}: a delta at level 9 with 32.0 MiB blocks \
         needs about 594.0 MiB per worker and 24.0 MiB for the base's cache, and the \
         address-space limit (ulimit -v) is 800.0 MiB\n"
    );
    assert_eq!(err(&o).contains(&note), cores > 1, "{}", err(&o));
    fx.ok(&["x", "-q", "--base", "base.kry", "-C", "out", "d.kry"]);
    assert!(fx.read("out/new/f") == new);
    // A plain archive of the same bytes at -b 32M fits two workers under that limit.
    let o = under_memory_limit(&fx, 800, &["c", "-l", "9", "-b", "32M", "p.kry", "new"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(!err(&o).contains("note: using"), "{}", err(&o));
}

/// Regression (h72): a delta's `diff+base` encoder grew its buffers with the infallible
/// allocator: its copy of region and block (which also doubled: 132 MiB of address space for
/// a 66 MiB copy at `-l 9`), its match tables and its streams, so `c --base -l 7 -j 1` of new
/// bytes under `prlimit --as` aborted ("memory allocation of 8388601 bytes failed", exit 134)
/// at some limits, and a stream's zstd context that could not be had was exit 1 ("zstd:
/// Allocation error"). Across limits from far too small to enough, every run now either
/// works or stops with exit 4 and the run's needs, nothing under the output's name.
#[test]
fn a_delta_past_the_limit_is_an_error_not_an_abort() {
    let fx = Fx::new();
    fx.file("old/f", &bytes(9 << 20, 6, true));
    let new = bytes(9 << 20, 7, false);
    fx.file("new/f", &new);
    fx.ok(&["c", "-q", "base.kry", "old"]);
    let mut codes = Vec::new();
    for mib in (100..=400).step_by(12) {
        let o = under_memory_limit(
            &fx,
            mib,
            &[
                "c", "-q", "-f", "-j", "1", "-l", "7", "--base", "base.kry", "d.kry", "new",
            ],
        );
        let e = err(&o);
        match code(&o) {
            0 => assert!(fx.exists("d.kry"), "{mib} MiB"),
            4 => {
                assert!(!fx.exists("d.kry"), "{mib} MiB: {e}");
                assert!(
                    e.starts_with("krypta: d.kry: out of memory: "),
                    "{mib} MiB: {e}"
                );
                assert!(
                    e.contains(
                        "a delta at level 7 with 8.0 MiB blocks needs about 321.0 MiB per worker"
                    ),
                    "{mib} MiB: {e}"
                );
            }
            c => panic!("{mib} MiB: exit {c}: {e}"),
        }
        assert!(!e.contains("memory allocation of"), "{mib} MiB: {e}");
        codes.push(code(&o));
        std::fs::remove_file(fx.p("d.kry")).ok();
    }
    assert!(codes.contains(&4) && codes.contains(&0), "{codes:?}");
    fx.ok(&[
        "c", "-q", "-j", "1", "-l", "7", "--base", "base.kry", "d.kry", "new",
    ]);
    fx.ok(&["x", "-q", "--base", "base.kry", "-C", "out", "d.kry"]);
    assert!(fx.read("out/new/f") == new);
}

/// Regression: `c -l 9 --base` (32 MiB delta blocks, `diff+base`) under `ulimit -v 500000`
/// and `800000` aborted ("memory allocation of 70162598 bytes failed": the scan's copy of
/// region and block) or failed with exit 1 ("crypto: compressing block 15: zstd: Allocation
/// error", a diff stream's zstd context). At every limit from far too little to enough, the
/// run is now 0 or the out-of-memory error (4), with nothing under the output's name when
/// it fails.
#[test]
fn a_diff_base_block_past_the_limit_is_an_error_not_an_abort() {
    let fx = Fx::new();
    let old = bytes(40 << 20, 41, false);
    let mut new = old.clone();
    for i in (1000..new.len()).step_by(1 << 20) {
        new[i] ^= 1;
    }
    fx.file("v1/f", &old);
    fx.file("v2/f", &new);
    fx.ok(&["c", "-q", "-j", "1", "-b", "1M", "base.kry", "v1"]);
    let mut codes = Vec::new();
    for mib in (300..=900).step_by(100) {
        let o = under_memory_limit(
            &fx,
            mib,
            &[
                "c", "-q", "-j", "1", "-l", "9", "--base", "base.kry", "d.kry", "v2",
            ],
        );
        let c = code(&o);
        assert!(c == 0 || c == 4, "{mib} MiB: exit {c}: {}", err(&o));
        assert_eq!(fx.exists("d.kry"), c == 0, "{mib} MiB");
        if c == 4 {
            assert!(err(&o).contains("out of memory"), "{}", err(&o));
        }
        let _ = std::fs::remove_file(fx.p("d.kry"));
        codes.push(c);
    }
    // Far too little at 300 MiB, enough at 900 MiB.
    assert_eq!((codes[0], codes[codes.len() - 1]), (4, 0), "{codes:?}");
}
