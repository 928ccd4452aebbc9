//! `-j` and worker threads: a `-j` larger than the machine is capped (c as x, t and l are), and
//! a worker thread the OS refuses is an I/O error (exit 4) naming the archive, never a panic,
//! with no temporary file left next to the output.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

/// A stack size no thread can get (beyond any address space): with it in the environment,
/// every thread krypta asks for is refused (`RUST_MIN_STACK` is the default stack size of
/// the threads std spawns), whatever the machine's overcommit policy.
const NO_THREADS: (&str, &str) = ("RUST_MIN_STACK", "4611686018427387904");

fn temporary_files(fx: &Fx) -> Vec<String> {
    std::fs::read_dir(fx.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".krypta"))
        .collect()
}

#[test]
fn c_with_jobs_100000_is_capped_and_writes_the_archive() {
    let fx = Fx::new();
    fx.file("d/a.txt", b"alpha");
    fx.file("d/b.txt", &common::bytes(300_000, 1, true));
    for level in ["-l3", "-s"] {
        let o = fx.run(&["c", "-q", level, "-j", "100000", "a.kry", "d"]);
        assert_eq!(code(&o), 0, "{level}: {}", err(&o));
        assert!(temporary_files(&fx).is_empty());
        fx.ok(&["x", "-q", "-j", "100000", "a.kry", "-o", "out"]);
        assert_eq!(fx.read("out/d/a.txt"), b"alpha");
        std::fs::remove_file(fx.p("a.kry")).unwrap();
        std::fs::remove_dir_all(fx.p("out")).unwrap();
    }
}

#[test]
fn a_refused_worker_thread_is_an_io_error_not_a_panic() {
    let fx = Fx::new();
    fx.file("d/a.txt", b"alpha");
    let o = fx.run_env(&["c", "-q", "-j", "2", "a.kry", "d"], &[NO_THREADS]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(
        err(&o).contains("a.kry: start a worker thread:"),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("panicked"), "{}", err(&o));
    assert!(!fx.exists("a.kry"));
    assert!(
        temporary_files(&fx).is_empty(),
        "{:?}",
        temporary_files(&fx)
    );
    // Reading: the decoder threads are refused the same way.
    fx.ok(&["c", "-q", "a.kry", "d"]);
    let o = fx.run_env(&["t", "a.kry"], &[NO_THREADS]);
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(
        err(&o).contains("a.kry: start a decoder thread:"),
        "{}",
        err(&o)
    );
}
