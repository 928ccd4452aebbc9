//! A delta base forged by someone who holds the base file but no key: an unencrypted base
//! rewritten with other content for a file the delta archive references (BASE_REF), its
//! checksums recomputed (anyone can), and then damaged on purpose, so that its binding
//! cannot be checked (FORMAT.md §16.4, "A damaged base"). The delta archive itself is
//! encrypted and intact.
//!
//! Why it mattered: the `END_DIGEST` of a file stored as a reference is compressed against
//! the base's own `END_DIGEST` record (its region, §16.3), so the digest a reader checks the
//! file with comes out of the base too. Only the delta archive's index, which holds the
//! digest as written, tells a forged base from the real one; read from a pipe (no index
//! first) or with the delta's index damaged, the forged content was restored under the
//! file's name as verified (regression, found 2026-12 in a security review).

mod cli_common;
mod common;

use cli_common::*;
use common::{bytes, code};

const SIZES: [usize; 4] = [170_445, 226_925, 190_342, 278_284];
/// The file the forger targets (odd: unchanged in v2, so a BASE_REF) and what it becomes.
const TARGET: usize = 1;
const FORGED: &[u8] = b"FORGED BY SOMEONE WITHOUT ANY KEY -- FORGED BY SOMEONE WITHOUT ANY KEY";

/// base.kry (unencrypted, v1) and new.kry (encrypted with k.key, v2 against base.kry).
fn archives(fx: &Fx) {
    for (i, &n) in SIZES.iter().enumerate() {
        let mut b = bytes(n, 300 + i as u64, false);
        fx.file(&format!("v1/d/f{i:02}.bin"), &b);
        if i % 2 == 0 {
            for k in (0..n).step_by(40_000) {
                b[k] ^= 0xff;
            }
        }
        fx.file(&format!("v2/d/f{i:02}.bin"), &b);
    }
    fx.ok(&["keygen", "-o", "k.key"]);
    fx.ok(&["c", "-q", "-b", "64K", "base.kry", "v1"]);
    fx.ok(&[
        "c",
        "-q",
        "-b",
        "64K",
        "--keyfile",
        "k.key",
        "--base",
        "base.kry",
        "new.kry",
        "v2",
    ]);
}

fn find(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    hay.windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

/// Rewrites base.kry: the target file's bytes at 1000.. become [`FORGED`], its END_DIGEST
/// the digest of the forged content, every data frame's checksum recomputed; then its last
/// 30 bytes are cut (its footer: the index cannot be read, so the binding cannot be
/// checked). Returns the forged content.
fn forge_base(fx: &Fx) -> Vec<u8> {
    let forged = rewrite(fx, "base.kry", &fx.read(&format!("v1/d/f{TARGET:02}.bin")));
    let d = fx.read("base.kry");
    std::fs::write(fx.p("base.kry"), &d[..d.len() - 30]).unwrap();
    forged
}

/// Rewrites `archive` (unencrypted, the file `real` stored as it is): in its data frames,
/// the file's bytes at 1000.. become [`FORGED`] and its END_DIGEST the digest of the forged
/// content, every frame's checksum recomputed (its index is left as it is). Returns the
/// forged content.
fn rewrite(fx: &Fx, archive: &str, real: &[u8]) -> Vec<u8> {
    let mut d = fx.read(archive);
    let mut forged = real.to_vec();
    forged[1000..1000 + FORGED.len()].copy_from_slice(FORGED);
    let first = u32::from_le_bytes(d[12..16].try_into().unwrap()) as usize;
    let mut data_end = first;
    while d[data_end] == 1 {
        data_end +=
            48 + u32::from_le_bytes(d[data_end + 4..data_end + 8].try_into().unwrap()) as usize;
    }
    let at = find(&d[..data_end], &real[1000..1000 + FORGED.len()]);
    assert_eq!(at.len(), 1, "the target's content, stored as it is");
    d[at[0]..at[0] + FORGED.len()].copy_from_slice(FORGED);
    let old = blake3::hash(real);
    let new = blake3::hash(&forged);
    let digests = find(&d[..data_end], old.as_bytes());
    assert!(!digests.is_empty(), "the target's END_DIGEST");
    for a in digests {
        d[a..a + 32].copy_from_slice(new.as_bytes());
    }
    reseal(&mut d);
    std::fs::write(fx.p(archive), &d).unwrap();
    forged
}

/// Recomputes the checksum of every frame of an unencrypted archive (anyone can).
fn reseal(d: &mut [u8]) {
    let first = u32::from_le_bytes(d[12..16].try_into().unwrap()) as usize;
    let id: [u8; 16] = d[16..32].try_into().unwrap();
    let mut off = first;
    while d[off] == 1 || d[off] == 2 {
        let body = u32::from_le_bytes(d[off + 4..off + 8].try_into().unwrap()) as usize;
        let mut h = blake3::Hasher::new_derive_key("krypta v1 frame checksum");
        h.update(&id);
        h.update(&d[off..off + 16 + body]);
        let tag = *h.finalize().as_bytes();
        d[off + 16 + body..off + 48 + body].copy_from_slice(&tag);
        off += 48 + body;
    }
}

/// Zeros inside new.kry's (first) index frame: its index cannot be read.
fn damage_delta_index(fx: &Fx) {
    let mut d = fx.read("new.kry");
    let mut off = u32::from_le_bytes(d[12..16].try_into().unwrap()) as usize;
    while d[off] == 1 {
        off += 48 + u32::from_le_bytes(d[off + 4..off + 8].try_into().unwrap()) as usize;
    }
    d[off + 40..off + 60].fill(0);
    std::fs::write(fx.p("new.kry"), &d).unwrap();
}

/// `x` of new.kry with the forged base, from the file or a pipe: the forged content is never
/// under the target's name, every file restored is v2's bit for bit, and the run fails.
fn refuses_forged_content(fx: &Fx, pipe: bool, forged: &[u8]) -> (i32, String) {
    let _ = std::fs::remove_dir_all(fx.p("out"));
    let args = ["x", "--keyfile", "k.key", "--base", "base.kry", "-C", "out"];
    let o = if pipe {
        let mut a = args.to_vec();
        a.push("-");
        fx.run_stdin(&a, &fx.read("new.kry"))
    } else {
        let mut a = args.to_vec();
        a.push("new.kry");
        fx.run(&a)
    };
    let target = format!("out/v2/d/f{TARGET:02}.bin");
    if fx.exists(&target) {
        assert!(
            fx.read(&target) != forged,
            "pipe {pipe}: the forged content restored as {target}: {}",
            err(&o)
        );
    }
    for i in 0..SIZES.len() {
        let n = format!("v2/d/f{i:02}.bin");
        if fx.exists(&format!("out/{n}")) {
            assert!(
                fx.read(&format!("out/{n}")) == fx.read(&n),
                "pipe {pipe}: {n} restored, not as written: {}",
                err(&o)
            );
        }
    }
    assert_ne!(code(&o), 0, "pipe {pipe}: {}", err(&o));
    (code(&o), err(&o))
}

#[test]
fn a_forged_damaged_base_never_restores_its_content_from_a_file_or_a_pipe() {
    let fx = Fx::new();
    archives(&fx);
    let forged = forge_base(&fx);
    let (file_code, file_err) = refuses_forged_content(&fx, false, &forged);
    // From a pipe: as from the file (the stream is spooled and read with its index first).
    let (pipe_code, pipe_err) = refuses_forged_content(&fx, true, &forged);
    assert_eq!(pipe_code, file_code, "{pipe_err}\n{file_err}");
    // `t` from a pipe says the same.
    let o = fx.run_stdin(
        &["t", "--keyfile", "k.key", "--base", "base.kry", "-"],
        &fx.read("new.kry"),
    );
    assert_eq!(code(&o), file_code, "{}", err(&o));
}

#[test]
fn a_forged_damaged_base_is_refused_when_the_delta_index_is_damaged_too() {
    let fx = Fx::new();
    archives(&fx);
    let forged = forge_base(&fx);
    damage_delta_index(&fx);
    for pipe in [false, true] {
        let (c, e) = refuses_forged_content(&fx, pipe, &forged);
        assert_eq!(c, 9, "pipe {pipe}: {e}");
        assert!(
            e.contains("its binding to this archive cannot be checked") && e.contains("index"),
            "pipe {pipe}: {e}"
        );
    }
}

/// The forged base with the delta's index intact: the target's mismatch with the index is the
/// base's fault, not the delta archive's. Exit 9 naming the base and the file (not exit 2,
/// "authentication failed … the archive was modified", which blamed the intact encrypted
/// delta archive: regression), every other file restored bit for bit, nothing under the
/// target's name; from the file, from a pipe, and by `t`.
#[test]
fn a_forged_damaged_base_is_blamed_not_the_intact_delta() {
    let fx = Fx::new();
    archives(&fx);
    let forged = forge_base(&fx);
    let target = format!("v2/d/f{TARGET:02}.bin");
    let names = |e: &str| {
        assert!(!e.contains("authentication failed"), "{e}");
        assert!(
            e.lines()
                .any(|l| l.contains(&target) && l.contains("base.kry") && l.contains("index")),
            "a line names the file and the base: {e}"
        );
    };
    for pipe in [false, true] {
        let (c, e) = refuses_forged_content(&fx, pipe, &forged);
        assert_eq!(c, 9, "pipe {pipe}: {e}");
        names(&e);
        assert!(!fx.exists(&format!("out/{target}")), "pipe {pipe}: {e}");
        for i in (0..SIZES.len()).filter(|&i| i != TARGET) {
            let n = format!("v2/d/f{i:02}.bin");
            assert!(
                fx.read(&format!("out/{n}")) == fx.read(&n),
                "pipe {pipe}: {n}: {e}"
            );
        }
        assert!(
            e.contains("restored 5 of 6 entries, 1 damaged"),
            "pipe {pipe}: {e}"
        );
    }
    let t = ["t", "--keyfile", "k.key", "--base", "base.kry"];
    let o = fx.run(&[&t[..], &["new.kry"]].concat());
    assert_eq!(code(&o), 9, "{}", err(&o));
    names(&err(&o));
    let o = fx.run_stdin(&[&t[..], &["-"]].concat(), &fx.read("new.kry"));
    assert_eq!(code(&o), 9, "{}", err(&o));
    names(&err(&o));
}

/// The control: a file that does not match the delta's index on its own, not read with the
/// base (stored in an unencrypted delta archive, rewritten there), keeps the archive's own
/// exit code whether the base is intact (bound) or damaged (its binding unchecked, its
/// content real): only what comes out of an unbound base is blamed on it.
#[test]
fn a_delta_entry_that_mismatches_on_its_own_keeps_its_own_code() {
    let fx = Fx::new();
    archives(&fx);
    let own = "v2/d/f00.bin";
    fx.ok(&[
        "c",
        "-q",
        "-s",
        "-b",
        "64K",
        "--base",
        "base.kry",
        "plain.kry",
        "v2",
    ]);
    rewrite(&fx, "plain.kry", &fx.read(own));
    let run = |fx: &Fx| {
        let _ = std::fs::remove_dir_all(fx.p("out"));
        let o = fx.run(&["x", "--base", "base.kry", "-C", "out", "plain.kry"]);
        let e = err(&o);
        assert!(!e.contains("read with its base"), "{e}");
        (code(&o), e)
    };
    let (bound, e) = run(&fx);
    assert_eq!(bound, 3, "{e}");
    let d = fx.read("base.kry");
    std::fs::write(fx.p("base.kry"), &d[..d.len() - 30]).unwrap();
    let (unbound, e) = run(&fx);
    assert!(
        e.contains("its binding to this archive cannot be checked"),
        "{e}"
    );
    assert_eq!(unbound, 3, "{e}");
}

/// `x` of `archive` (its key options `keys`) with base.kry into out/, from the file or a
/// pipe: (exit code, stderr).
fn extract(fx: &Fx, keys: &[&str], archive: &str, pipe: bool) -> (i32, String) {
    let _ = std::fs::remove_dir_all(fx.p("out"));
    let mut a = vec!["x"];
    a.extend_from_slice(keys);
    a.extend_from_slice(&["--base", "base.kry", "-C", "out"]);
    let o = if pipe {
        a.push("-");
        fx.run_stdin(&a, &fx.read(archive))
    } else {
        a.push(archive);
        fx.run(&a)
    };
    (code(&o), err(&o))
}

/// Regression (helper-47): an unencrypted delta archive damaged on its own account (a file's
/// bytes rewritten in it, its checksums recomputed: not the base's doing) read with a forged
/// damaged base that costs another file (a reference whose base content is forged). Each file
/// is named with its own cause, and the run exits with the delta archive's own code, 3 (only
/// structures that verified failed), not 9: the base is not all that is wrong (before: 9,
/// since salvage counted only failed frames as the delta's own damage). From the file, from a
/// pipe, and by `t`.
#[test]
fn a_delta_damaged_on_its_own_too_keeps_its_own_code_with_a_forged_base() {
    let fx = Fx::new();
    archives(&fx);
    let c = ["c", "-q", "-s", "-b", "64K", "--base", "base.kry"];
    fx.ok(&[&c[..], &["plain.kry", "v2"]].concat());
    let own = "v2/d/f00.bin";
    rewrite(&fx, "plain.kry", &fx.read(own));
    forge_base(&fx);
    let target = format!("v2/d/f{TARGET:02}.bin");
    let names_both = |e: &str, name: &str, not: &str| {
        let own_line = format!("krypta: warning: {own}: {not}: {name}: corrupt archive at byte ");
        assert!(
            e.lines().any(|l| l.starts_with(&own_line)
                && l.ends_with("index disagrees with the record stream")),
            "{own} named with the archive's own damage: {e}"
        );
        let base_line = format!(
            "krypta: warning: {target}: {not}: {name}: {target}: its content is base entry 3 (v1/d/f{TARGET:02}.bin), which is unusable: its content in base.kry does not match the file's digest (END_DIGEST)"
        );
        assert!(e.lines().any(|l| l == base_line), "{e}");
    };
    for pipe in [false, true] {
        let (code, e) = extract(&fx, &[], "plain.kry", pipe);
        assert_eq!(code, 3, "pipe {pipe}: {e}");
        let name = if pipe { "-" } else { "plain.kry" };
        names_both(&e, name, "not restored");
        assert!(
            e.contains(&format!("{name}: restored 4 of 6 entries, 2 damaged")),
            "pipe {pipe}: {e}"
        );
        assert!(!fx.exists(&format!("out/{own}")), "pipe {pipe}: {e}");
        assert!(!fx.exists(&format!("out/{target}")), "pipe {pipe}: {e}");
        for n in ["v2/d/f02.bin", "v2/d/f03.bin"] {
            assert!(
                fx.read(&format!("out/{n}")) == fx.read(n),
                "pipe {pipe}: {n}"
            );
        }
    }
    let o = fx.run(&["t", "--base", "base.kry", "plain.kry"]);
    assert_eq!(code(&o), 3, "{}", err(&o));
    names_both(&err(&o), "plain.kry", "not verified");
    assert!(
        err(&o).contains("plain.kry: verified 4 of 6 entries, 2 damaged"),
        "{}",
        err(&o)
    );
}

/// Regression (helper-47): records that a forged damaged base makes unparseable. The base's
/// DATA record of a file that changed since (so the delta block holding it is decoded against
/// the base) gets an unknown record tag, its checksums recomputed, its footer cut (its binding
/// cannot be checked). The delta archive copies that record head from the base, so its
/// decoded records do not parse: the base's fault, exit 9 naming the delta archive, the file
/// and the base (before: exit 2, "authentication failed: wrong key or password, or the
/// archive was modified", for an encrypted delta archive whose frames all verified; 3
/// unencrypted), the other file restored bit for bit, nothing under the file's name. From the
/// file, from a pipe, by `t`, and for an unencrypted delta archive.
#[test]
fn records_a_forged_damaged_base_makes_unparseable_are_its_fault() {
    let fx = Fx::new();
    let kept = bytes(170_445, 400, false);
    let mut changed = bytes(226_925, 401, false);
    fx.file("v1/d/a.bin", &kept);
    fx.file("v1/d/b.bin", &changed);
    fx.file("v2/d/a.bin", &kept);
    for k in (0..changed.len()).step_by(40_000) {
        changed[k] ^= 0xff;
    }
    fx.file("v2/d/b.bin", &changed);
    fx.ok(&["keygen", "-o", "k.key"]);
    fx.ok(&["c", "-q", "-b", "64K", "base.kry", "v1"]);
    let c = ["c", "-q", "-b", "64K", "--base", "base.kry"];
    fx.ok(&[&c[..], &["--keyfile", "k.key", "new.kry", "v2"]].concat());
    fx.ok(&[&c[..], &["plain.kry", "v2"]].concat());
    // The forgery: the tag of the DATA record that starts b.bin's content (13 bytes before
    // it: tag, offset, length) becomes 7, which no record has.
    let mut d = fx.read("base.kry");
    let content = find(&d, &fx.read("v1/d/b.bin")[..32]);
    assert_eq!(content.len(), 1, "b.bin's content, stored as it is");
    assert_eq!(d[content[0] - 13], 2, "a DATA record's tag");
    d[content[0] - 13] = 7;
    reseal(&mut d);
    std::fs::write(fx.p("base.kry"), &d[..d.len() - 30]).unwrap();
    let line = |name: &str, not: &str, sealed: bool| {
        format!(
            "krypta: warning: v2/d/b.bin: {not}: {name}: read with its base base.kry, its records do not parse (record stream: unknown record tag 0x07): that base is damaged, so its binding to this archive could not be checked, and it is not the base this archive was made against (modified or forged){}: use an intact copy of the base",
            if sealed {
                ""
            } else {
                ", unless this unencrypted archive was modified itself"
            }
        )
    };
    let key = ["--keyfile", "k.key"];
    for (archive, keys, pipe) in [
        ("new.kry", &key[..], false),
        ("new.kry", &key[..], true),
        ("plain.kry", &[][..], false),
    ] {
        let (code, e) = extract(&fx, keys, archive, pipe);
        let name = if pipe { "-" } else { archive };
        assert_eq!(code, 9, "{archive} pipe {pipe}: {e}");
        assert!(!e.contains("authentication failed"), "{e}");
        assert!(
            e.lines()
                .any(|l| l == line(name, "not restored", !keys.is_empty())),
            "{archive} pipe {pipe}: {e}"
        );
        assert!(
            e.contains(&format!("{name}: restored 3 of 4 entries, 1 damaged")),
            "{archive} pipe {pipe}: {e}"
        );
        assert!(!fx.exists("out/v2/d/b.bin"), "{archive} pipe {pipe}: {e}");
        assert!(fx.read("out/v2/d/a.bin") == kept, "{archive} pipe {pipe}");
    }
    let o = fx.run(&["t", "--keyfile", "k.key", "--base", "base.kry", "new.kry"]);
    assert_eq!(code(&o), 9, "{}", err(&o));
    assert!(
        err(&o)
            .lines()
            .any(|l| l == line("new.kry", "not verified", true)),
        "{}",
        err(&o)
    );
}
