//! Issue 17, delta archives, through the binary: `c --base`, `x|t --base`, `l` and `info`
//! without it; round trips of version pairs (identical, small change, large change, files
//! added, removed and renamed), plain and encrypted, restored bit for bit; the sizes a delta
//! saves (exact bounds measured on these seeded trees, with margin).

mod cli_common;
mod common;
mod delta_common;

use cli_common::*;
use common::{assert_same_tree, code};
use delta_common::*;

#[test]
fn a_small_change_restores_bit_for_bit_and_is_a_fraction_of_the_plain_archive() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "plain.kry", "v2"]);
    fx.ok(&["c", "-q", "--base", "base.kry", "delta.kry", "v2"]);
    let plain = size(&fx, "plain.kry");
    let delta = size(&fx, "delta.kry");
    eprintln!("small change: plain {plain}, delta {delta}");
    // Measured: plain 6,367,282 bytes (random content does not compress), delta 28,072
    // (the new file, the renamed one and the changed small file in full, the rest a few
    // hundred bytes per block): 1/227 of the plain archive. Bound with margin: under 1/150.
    assert!(plain > 6_300_000, "plain {plain}");
    assert!(delta * 150 < plain, "delta {delta} vs plain {plain}");
    fx.ok(&["x", "-q", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert_same_tree(&fx.p("v2"), &fx.p("out/v2"));
    let t = fx.ok(&["t", "--base", "base.kry", "delta.kry"]);
    assert!(err(&t).contains("OK (9 entries, 6 files"), "{}", err(&t));
}

#[test]
fn an_identical_tree_costs_almost_nothing() {
    let fx = Fx::new();
    versions(&fx, Change::None);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "--base", "base.kry", "delta.kry", "v1"]);
    let delta = size(&fx, "delta.kry");
    eprintln!("identical: delta {delta}");
    // Measured 1,724 bytes for 6.3 MiB of content (the index dominates).
    assert!(delta < 4096, "delta {delta}");
    fx.ok(&["x", "-q", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert_same_tree(&fx.p("v1"), &fx.p("out/v1"));
}

#[test]
fn a_large_change_restores_and_costs_no_more_than_a_plain_archive() {
    let fx = Fx::new();
    versions(&fx, Change::Large);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "plain.kry", "v2"]);
    fx.ok(&["c", "-q", "--base", "base.kry", "delta.kry", "v2"]);
    let plain = size(&fx, "plain.kry");
    let delta = size(&fx, "delta.kry");
    eprintln!("large change: plain {plain}, delta {delta}");
    // The big file matches nothing: its blocks do not shrink against the base and are
    // stored as in the plain archive; the unchanged small files still match (measured:
    // delta 6,292,855 bytes, plain 6,348,248).
    assert!(delta <= plain + 1024, "delta {delta} vs plain {plain}");
    fx.ok(&["x", "-q", "--base", "base.kry", "delta.kry", "-C", "out"]);
    assert_same_tree(&fx.p("v2"), &fx.p("out/v2"));
}

#[test]
fn list_and_info_need_no_base_and_info_names_it() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "--base", "base.kry", "delta.kry", "v2"]);
    let base_id = archive_id(&fx, "base.kry");
    let l = fx.ok(&["l", "delta.kry"]);
    assert_eq!(out(&l).lines().count(), 9, "{}", out(&l));
    let i = fx.ok(&["info", "delta.kry"]);
    assert!(
        out(&i).contains(&format!("delta base:     archive {base_id} (binding ")),
        "{}",
        out(&i)
    );
    let j: serde_json::Value =
        serde_json::from_slice(&fx.ok(&["info", "--json", "delta.kry"]).stdout).unwrap();
    assert_eq!(j["delta_base"]["archive_id"], base_id.as_str());
    assert_eq!(j["delta_base"]["binding"].as_str().unwrap().len(), 64);
    // A plain archive has no delta_base key.
    let j: serde_json::Value =
        serde_json::from_slice(&fx.ok(&["info", "--json", "base.kry"]).stdout).unwrap();
    assert!(j.get("delta_base").is_none());
}

#[test]
fn encrypted_bases_and_outputs_use_their_own_keys() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    fx.ok(&["keygen", "-q", "-o", "kb"]);
    fx.ok(&["keygen", "-q", "-o", "ko"]);
    fx.ok(&["keygen", "-q", "--box", "-o", "bob"]);
    // Base encrypted (password), OUT plain.
    password_base_plain_delta(&fx, "d1.kry");
    // Base plain, OUT encrypted (key file).
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&[
        "c",
        "-q",
        "--keyfile",
        "ko",
        "--base",
        "base.kry",
        "d2.kry",
        "v2",
    ]);
    // Both encrypted with different keys: base to a key file, OUT to a box key.
    fx.ok(&["c", "-q", "--keyfile", "kb", "base-kf.kry", "v1"]);
    fx.ok(&[
        "c",
        "-q",
        "-r",
        "bob.pub",
        "--base",
        "base-kf.kry",
        "--base-keyfile",
        "kb",
        "d3.kry",
        "v2",
    ]);
    for (i, args) in [
        vec!["--base", "base-pw.kry", "--base-pass-file", "pw", "d1.kry"],
        vec!["--keyfile", "ko", "--base", "base.kry", "d2.kry"],
        vec![
            "-i",
            "bob",
            "--base",
            "base-kf.kry",
            "--base-keyfile",
            "kb",
            "d3.kry",
        ],
    ]
    .into_iter()
    .enumerate()
    {
        let dir = format!("out{i}");
        fx.ok(&[&["x", "-q"][..], &args, &["-C", &dir]].concat());
        assert_same_tree(&fx.p("v2"), &fx.p(&format!("{dir}/v2")));
    }
    // Every delta is small whatever the keys (encryption does not hide similarity from the
    // writer, who holds both keys).
    for d in ["d1.kry", "d2.kry", "d3.kry"] {
        assert!(size(&fx, d) < 60_000, "{d}: {}", size(&fx, d));
    }
    // The base's key is needed and is not OUT's: OUT's key does not open the base.
    let o = fx.run(&[
        "x",
        "-q",
        "-i",
        "bob",
        "--base",
        "base-kf.kry",
        "d3.kry",
        "-C",
        "o9",
    ]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    // The base's own key options are named, not the archive's (-p, --pass-file, ...).
    assert!(
        err(&o).contains(
            "base-kf.kry: the base archive is encrypted (keyfile): give --base-keyfile\n"
        ),
        "{}",
        err(&o)
    );
    let o = fx.run(&[
        "x",
        "-q",
        "-i",
        "bob",
        "--base",
        "base-kf.kry",
        "--base-keyfile",
        "ko",
        "d3.kry",
        "-C",
        "o9",
    ]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert!(!fx.exists("o9/v2"));
}

/// Regression (h61): `KRYPTA_PASSWORD` that opened an encrypted base while the delta archive
/// itself is not encrypted was reported as "the key given was not used" by `x` and `t`,
/// though the base could not have been read without it. The warning now says which is
/// encrypted; with a plain base it is as before.
#[test]
fn a_password_that_opened_only_the_base_is_not_called_unused() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    password_base_plain_delta(&fx, "d.kry");
    let env = [("KRYPTA_PASSWORD", "base password")];
    for cmd in [&["t"][..], &["x", "-o", "out"]] {
        let o = fx.run_env(&[cmd, &["--base", "base-pw.kry", "d.kry"]].concat(), &env);
        assert_eq!(code(&o), 0, "{cmd:?}: {}", err(&o));
        assert_eq!(
            err(&o).lines().next().unwrap(),
            "krypta: warning: d.kry: the archive is not encrypted: only its base base-pw.kry \
             is, and its checksums do not show who wrote it",
            "{cmd:?}"
        );
    }
    // A plain base: the password was used for nothing.
    fx.ok(&["c", "-q", "base.kry", "v1"]);
    fx.ok(&["c", "-q", "--base", "base.kry", "d2.kry", "v2"]);
    let o = fx.run_env(&["t", "--base", "base.kry", "d2.kry"], &env);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(
        err(&o).lines().next().unwrap(),
        "krypta: warning: d2.kry: the archive is not encrypted: the key given was not used, \
         and its checksums do not show who wrote it"
    );
}

/// Regression: `KRYPTA_PASSWORD` that opened nothing — the base opened with its own
/// `--base-pass-file`, the delta archive not encrypted — was reported as "only its base is"
/// (as if it had opened the base); it was not used, and that is said.
#[test]
fn a_password_that_opened_nothing_is_called_unused_beside_an_encrypted_base() {
    let fx = Fx::new();
    versions(&fx, Change::Small);
    password_base_plain_delta(&fx, "d.kry");
    let env = [("KRYPTA_PASSWORD", "another password")];
    for cmd in [&["t"][..], &["x", "-o", "out"], &["l"]] {
        let o = fx.run_env(
            &[
                cmd,
                &["--base", "base-pw.kry", "--base-pass-file", "pw", "d.kry"],
            ]
            .concat(),
            &env,
        );
        assert_eq!(code(&o), 0, "{cmd:?}: {}", err(&o));
        assert_eq!(
            err(&o).lines().next().unwrap(),
            "krypta: warning: d.kry: the archive is not encrypted: the key given was not used, \
             and its checksums do not show who wrote it",
            "{cmd:?}"
        );
    }
}

/// `base-pw.kry`: v1 under the password in `pw` ("base password", PBKDF2 at a low count for
/// speed), and `delta`: v2 unencrypted against it.
fn password_base_plain_delta(fx: &Fx, delta: &str) {
    fx.file("pw", b"base password\n");
    let fast = ["--kdf", "pbkdf2", "--kdf-iterations", "100000"];
    fx.ok(&[
        &["c", "-q", "--pass-file", "pw"][..],
        &fast,
        &["base-pw.kry", "v1"],
    ]
    .concat());
    fx.ok(&[
        "c",
        "-q",
        "--base",
        "base-pw.kry",
        "--base-pass-file",
        "pw",
        delta,
        "v2",
    ]);
}
