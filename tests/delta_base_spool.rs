//! A delta archive read from a pipe with a damaged base is copied to a temporary file and read
//! as a file, index first (FORMAT.md §16.4, "A damaged base"). Read so, it must be read as a
//! file is in every other way too: with its recovery layer. It was not (helper-45): a delta
//! with recovery data piped in warned "the header announces recovery data, but none was found
//! (the end of the archive is cut off or damaged)" of an intact stream, where the same archive
//! from its file did not, and damage in the stream that its recovery data repairs from the
//! file was salvaged past instead.

mod cli_common;
mod common;

use cli_common::*;
use common::{bytes, code};

/// base.kry (v1, unencrypted, its last 30 bytes cut: its index cannot be read, so its
/// binding cannot be checked) and new.kry (v2 against it, with 5% recovery data).
fn archives(fx: &Fx) {
    for i in 0..4u64 {
        let mut b = bytes(150_000 + 20_000 * i as usize, 700 + i, false);
        fx.file(&format!("v1/d/f{i}.bin"), &b);
        if i % 2 == 0 {
            b[1000] ^= 0xff;
        }
        fx.file(&format!("v2/d/f{i}.bin"), &b);
    }
    fx.ok(&["c", "-q", "-b", "64K", "base.kry", "v1"]);
    fx.ok(&[
        "c",
        "-q",
        "-b",
        "64K",
        "--recovery",
        "5",
        "--base",
        "base.kry",
        "new.kry",
        "v2",
    ]);
    let mut d = fx.read("base.kry");
    d.truncate(d.len() - 30);
    std::fs::write(fx.p("base.kry"), &d).unwrap();
}

#[test]
fn a_piped_delta_with_recovery_data_and_a_damaged_base_reads_as_its_file_does() {
    let fx = Fx::new();
    archives(&fx);
    let delta = fx.read("new.kry");
    for verb in ["x", "t"] {
        let mut args = vec![verb, "--base", "base.kry"];
        if verb == "x" {
            args.extend(["-C", "out-file"]);
        }
        args.push("new.kry");
        let file = fx.run(&args);
        *args.last_mut().unwrap() = "-";
        if verb == "x" {
            args[4] = "out-pipe";
        }
        let pipe = fx.run_stdin(&args, &delta);
        assert!(
            !err(&file).contains("recovery data"),
            "{verb} file: {}",
            err(&file)
        );
        assert!(
            !err(&pipe).contains("recovery data"),
            "{verb} pipe: {}",
            err(&pipe)
        );
        assert_eq!(
            code(&pipe),
            code(&file),
            "{verb}:\nfile: {}\npipe: {}",
            err(&file),
            err(&pipe)
        );
    }
    for i in 0..4 {
        let n = format!("v2/d/f{i}.bin");
        assert!(fx.read(&format!("out-pipe/{n}")) == fx.read(&n), "{n}");
    }
}

/// Damage in the piped delta's first data frame: its recovery data rebuilds it, as from the
/// file (before: "restored 0 of 6 entries", exit 5, where the file restored every one, exit 0).
#[test]
fn a_piped_delta_damaged_where_its_recovery_data_repairs_it_is_repaired_as_from_its_file() {
    let fx = Fx::new();
    archives(&fx);
    let mut d = fx.read("new.kry");
    let header_len = u32::from_le_bytes(d[12..16].try_into().unwrap()) as usize;
    d[header_len + 40] ^= 0xff;
    std::fs::write(fx.p("damaged.kry"), &d).unwrap();
    let file = fx.run(&["x", "--base", "base.kry", "-C", "out-file", "damaged.kry"]);
    let pipe = fx.run_stdin(&["x", "--base", "base.kry", "-C", "out-pipe", "-"], &d);
    assert_eq!(code(&file), 0, "{}", err(&file));
    assert_eq!(code(&pipe), 0, "{}", err(&pipe));
    assert!(err(&pipe).contains("rebuilt"), "{}", err(&pipe));
    for i in 0..4 {
        let n = format!("v2/d/f{i}.bin");
        assert!(fx.read(&format!("out-pipe/{n}")) == fx.read(&n), "{n}");
    }
}
