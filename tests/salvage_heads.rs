//! A bit flipped in a data frame's head (its sequence number or LAST flag) is damage, caught
//! by the frame's tag, not a structure error: the encrypted archive must never say "wrong key
//! or password" with the right key, and a salvage reads past it from a file and from a pipe.
//! Regression: the head's sequence rules were checked before its tag, so such a flip said
//! "authentication failed: wrong key or password" (encrypted) or "corrupt: frame sequence"
//! (unencrypted), and a pipe was not salvaged at all.

mod cli_common;
mod common;

use cli_common::*;
use common::{bytes, code};

/// 40 files of 20 KiB of random bytes (blocks of 64 KiB: about 13 data frames), a key file.
fn tree(fx: &Fx) {
    for i in 0..40 {
        fx.file(&format!("t/f{i:02}"), &bytes(20 << 10, i as u64 + 1, false));
    }
    fx.ok(&["keygen", "-o", "k"]);
}

/// The archive with one bit flipped in data frame `n`'s head at byte `at` of the head (8:
/// the sequence number, 1: the flags).
fn flipped(fx: &Fx, name: &str, n: usize, at: usize, bit: u8) -> Vec<u8> {
    let mut a = std::fs::read(fx.p(name)).unwrap();
    let mut o = u32::from_le_bytes(a[12..16].try_into().unwrap()) as usize;
    for _ in 0..n {
        o += 48 + u32::from_le_bytes(a[o + 4..o + 8].try_into().unwrap()) as usize;
    }
    a[o + at] ^= bit;
    a
}

#[test]
fn a_flipped_sequence_number_is_damage_from_a_file_and_from_a_pipe() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "-b", "64K", "--keyfile", "k", "e.kry", "t"]);
    fx.ok(&["c", "-q", "-b", "64K", "u.kry", "t"]);
    for (name, sealed) in [("e.kry", true), ("u.kry", false)] {
        let a = flipped(&fx, name, 5, 8, 1);
        std::fs::write(fx.p("d.kry"), &a).unwrap();
        let want = if sealed { 2 } else { 5 };
        let keys: &[&str] = if sealed { &["--keyfile", "k"] } else { &[] };
        // From the file (the index names the damaged frame's entries).
        let o = fx.run(&[&["x", "-o", "of", "d.kry"], keys].concat());
        let e = err(&o);
        assert_eq!(code(&o), want, "{name}: {e}");
        assert!(!e.contains("wrong key"), "{name}: {e}");
        assert!(e.contains("restored "), "{name}: {e}");
        // From a pipe: spooled and salvaged past the damage, not refused.
        let o = fx.run_stdin(&[&["x", "-o", "op", "-"], keys].concat(), &a);
        let e = err(&o);
        assert_eq!(code(&o), want, "{name}: {e}");
        assert!(!e.contains("wrong key"), "{name}: {e}");
        assert!(!e.contains("frame sequence"), "{name}: {e}");
        assert!(e.contains("restored "), "{name}: {e}");
        assert!(
            fx.exists("op/t/f39"),
            "{name}: the files after the damage: {e}"
        );
        assert_eq!(fx.read("op/t/f39"), fx.read("t/f39"));
        std::fs::remove_dir_all(fx.p("of")).unwrap();
        std::fs::remove_dir_all(fx.p("op")).unwrap();
    }
}

#[test]
fn a_flipped_last_flag_is_damage_too() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["c", "-q", "-b", "64K", "--keyfile", "k", "e.kry", "t"]);
    // Byte 1 of a frame head holds its flags; LAST set on a data frame in the middle.
    let a = flipped(&fx, "e.kry", 5, 1, 1);
    let o = fx.run_stdin(&["t", "--keyfile", "k", "-"], &a);
    let e = err(&o);
    assert_eq!(code(&o), 2, "{e}");
    assert!(!e.contains("wrong key"), "{e}");
    assert!(e.contains("verified "), "{e}");
}
