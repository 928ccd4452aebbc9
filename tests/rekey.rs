//! Issue 16, rekey, through the binary: `krypta rekey [OPEN KEYS] IN -o OUT [NEW KEYS]` copies
//! the frames byte for byte under a new stanza set (the old password no longer opens OUT),
//! `--rotate` encrypts and MACs every frame again under a new file key (OUT's frames do not
//! verify under IN's key), signatures are dropped unless `--sign`, and a damaged IN leaves no
//! OUT.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

const FAST: [&str; 4] = ["--kdf-memory", "8", "--kdf-iterations", "1"];

fn header_len(b: &[u8]) -> usize {
    u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize
}

fn tree(fx: &Fx) {
    fx.file("t/a.txt", b"rekey me\n");
    // Incompressible (xorshift), so the archive holds several 64 KiB frames.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let big: Vec<u8> = (0..700_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    fx.file("t/big.bin", &big);
}

#[test]
fn rekey_changes_the_password_copying_every_frame_byte_for_byte() {
    let fx = Fx::new();
    tree(&fx);
    fx.file("old", b"old password\n");
    fx.file("new", b"new password\n");
    fx.ok(&[
        &["c", "-q", "-b", "64K", "--pass-file", "old"][..],
        &FAST,
        &["in.kry", "t"],
    ]
    .concat());
    let o = fx.ok(&[
        &[
            "rekey",
            "--pass-file",
            "old",
            "in.kry",
            "-o",
            "out.kry",
            "--new-pass-file",
            "new",
        ][..],
        &FAST,
    ]
    .concat());
    assert!(
        err(&o).contains("frames copied with new stanzas"),
        "{}",
        err(&o)
    );
    let a = fx.read("in.kry");
    let b = fx.read("out.kry");
    // Same archive id, the frames (from the header to the footer) identical.
    assert_eq!(a[16..32], b[16..32]);
    let (ha, hb) = (header_len(&a), header_len(&b));
    assert!(a.len() - ha > 100_000);
    assert_eq!(a[ha..a.len() - 64], b[hb..b.len() - 64]);
    // The new password opens OUT, the old one no longer does.
    fx.ok(&["x", "-q", "--pass-file", "new", "-o", "o", "out.kry"]);
    assert_eq!(fx.read("o/t/a.txt"), b"rekey me\n");
    let o = fx.run(&["t", "--pass-file", "old", "out.kry"]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    // IN is untouched.
    fx.ok(&["t", "-q", "--pass-file", "old", "in.kry"]);
}

#[test]
fn a_new_out_takes_ins_permission_bits_as_repairs_output_does() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "--box", "-o", "alice"]);
    fx.ok(&["keygen", "-q", "--box", "-o", "bob"]);
    fx.ok(&["c", "-q", "-r", "alice.pub", "in.kry", "t"]);
    let dir = fx.dir.path();
    for mode in [0o600, 0o640] {
        std::fs::set_permissions(dir.join("in.kry"), std::fs::Permissions::from_mode(mode))
            .unwrap();
        fx.ok(&[
            "rekey", "-q", "-i", "alice", "in.kry", "-o", "out.kry", "-r", "bob.pub",
        ]);
        let got = std::fs::metadata(dir.join("out.kry"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(got, mode, "{got:o}");
        std::fs::remove_file(dir.join("out.kry")).unwrap();
    }
}

#[test]
fn a_key_file_others_can_read_is_warned_about_when_it_keys_a_new_archive_too() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["keygen", "-q", "-o", "k2"]);
    let dir = fx.dir.path();
    std::fs::set_permissions(dir.join("k2"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let warning = "krypta: warning: k2: key file is accessible by group or others (mode 644); run `chmod 600 k2`";
    let o = fx.run(&["c", "-q", "--keyfile", "k2", "in.kry", "t"]);
    assert_eq!((code(&o), err(&o).trim()), (0, warning));
    let o = fx.run(&[
        "rekey",
        "-q",
        "--keyfile",
        "k2",
        "in.kry",
        "-o",
        "out.kry",
        "--new-keyfile",
        "k",
    ]);
    assert_eq!((code(&o), err(&o).trim()), (0, warning));
    let o = fx.run(&[
        "rekey",
        "-q",
        "--keyfile",
        "k",
        "out.kry",
        "-o",
        "out2.kry",
        "--new-keyfile",
        "k2",
    ]);
    assert_eq!((code(&o), err(&o).trim()), (0, warning));
}

#[test]
fn rekey_swaps_a_recipient() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "--box", "-o", "alice"]);
    fx.ok(&["keygen", "-q", "--box", "-o", "bob"]);
    fx.ok(&["c", "-q", "-r", "alice.pub", "in.kry", "t"]);
    fx.ok(&[
        "rekey", "-q", "-i", "alice", "in.kry", "-o", "out.kry", "-r", "bob.pub",
    ]);
    fx.ok(&["x", "-q", "-i", "bob", "-o", "o", "out.kry"]);
    assert_eq!(fx.read("o/t/big.bin"), fx.read("t/big.bin"));
    let o = fx.run(&["t", "-i", "alice", "out.kry"]);
    assert_eq!(code(&o), 2, "{}", err(&o));
}

#[test]
fn rotate_shares_no_key_with_in() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "-o", "k1"]);
    fx.ok(&["keygen", "-q", "-o", "k2"]);
    fx.ok(&["c", "-q", "-b", "64K", "--keyfile", "k1", "in.kry", "t"]);
    // Rotate to the same key file: only the file key and archive id change.
    let o = fx.ok(&[
        "rekey",
        "--keyfile",
        "k1",
        "in.kry",
        "-o",
        "out.kry",
        "--new-keyfile",
        "k1",
        "--rotate",
    ]);
    assert!(
        err(&o).contains("encrypted again under a new file key"),
        "{}",
        err(&o)
    );
    let a = fx.read("in.kry");
    let b = fx.read("out.kry");
    assert_ne!(a[16..32], b[16..32], "a new archive id");
    assert_eq!(a.len(), b.len(), "same stanza kinds, same frame lengths");
    let (ha, hb) = (header_len(&a), header_len(&b));
    // No frame tag and no 32-byte window of the frames is shared.
    let fa: std::collections::HashSet<&[u8]> = a[ha..a.len() - 64].chunks(32).collect();
    assert!(b[hb..b.len() - 64].chunks(32).all(|c| !fa.contains(c)));
    fx.ok(&["x", "-q", "--keyfile", "k1", "-o", "o", "out.kry"]);
    assert_eq!(fx.read("o/t/big.bin"), fx.read("t/big.bin"));
    // IN's header (its file key, its id) in front of OUT's frames: the header opens, the
    // first frame does not verify under IN's keys.
    let mut spliced = a[..ha].to_vec();
    spliced.extend_from_slice(&b[hb..]);
    fx.file("spliced.kry", &spliced);
    let o = fx.run(&["t", "--fail-fast", "--keyfile", "k1", "spliced.kry"]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    // Without --rotate the same splice reads (the frames are IN's own).
    fx.ok(&[
        "rekey",
        "-q",
        "--keyfile",
        "k1",
        "in.kry",
        "-o",
        "same.kry",
        "--new-keyfile",
        "k2",
    ]);
    let c = fx.read("same.kry");
    let mut spliced = a[..ha].to_vec();
    spliced.extend_from_slice(&c[header_len(&c)..]);
    fx.file("spliced2.kry", &spliced);
    fx.ok(&["t", "-q", "--keyfile", "k1", "spliced2.kry"]);
}

#[test]
fn a_signature_is_dropped_unless_re_signed() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "--sign", "-o", "me"]);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["c", "-q", "--sign", "me", "--keyfile", "k", "in.kry", "t"]);
    let o = fx.ok(&[
        "rekey",
        "--keyfile",
        "k",
        "in.kry",
        "-o",
        "unsigned.kry",
        "--new-keyfile",
        "k",
    ]);
    assert!(err(&o).contains("unsigned.kry: the signature of in.kry is dropped (it covers the old stanzas); give --sign NAME to sign OUT"), "{}", err(&o));
    let o = fx.run(&["t", "--keyfile", "k", "--signer", "me.pub", "unsigned.kry"]);
    assert_eq!(code(&o), 8, "{}", err(&o));
    fx.ok(&["t", "-q", "--keyfile", "k", "unsigned.kry"]);
    fx.ok(&[
        "rekey",
        "-q",
        "--keyfile",
        "k",
        "in.kry",
        "-o",
        "signed.kry",
        "--new-keyfile",
        "k",
        "--sign",
        "me",
    ]);
    fx.ok(&[
        "x",
        "-q",
        "--keyfile",
        "k",
        "--signer",
        "me.pub",
        "-o",
        "o",
        "signed.kry",
    ]);
    assert_eq!(fx.read("o/t/a.txt"), b"rekey me\n");
}

#[test]
fn rekey_refuses_what_it_cannot_do_and_leaves_no_out() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["c", "-q", "plain.kry", "t"]);
    let o = fx.run(&["rekey", "plain.kry", "-o", "o.kry", "--new-keyfile", "k"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("not encrypted: rekey changes the stanzas"),
        "{}",
        err(&o)
    );
    assert!(!fx.exists("o.kry"));
    fx.ok(&["c", "-q", "-b", "64K", "--keyfile", "k", "in.kry", "t"]);
    let o = fx.run(&["rekey", "--keyfile", "k", "in.kry", "-o", "o.kry"]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("rekey needs the new keys of OUT"),
        "{}",
        err(&o)
    );
    let o = fx.run(&[
        "rekey",
        "--keyfile",
        "k",
        "in.kry",
        "-o",
        "in.kry",
        "-f",
        "--new-keyfile",
        "k",
    ]);
    // Regression: the refusal advised to "write the archive elsewhere or exclude it", the
    // words of `c`, with nothing to exclude in a rekey.
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: in.kry: rekey writes a new archive and reads this one meanwhile, so it \
             cannot write over it: give -o another name, then rename the new archive over the \
             old\n"
                .to_string()
        )
    );
    // The same object in the store is refused alike, before anything is read (no store
    // needed): it was accepted and replaced (helper-38).
    let o = fx.run(&[
        "rekey",
        "--keyfile",
        "k",
        "s3://bkt/in.kry",
        "-o",
        "s3://bkt/in.kry",
        "-f",
        "--new-keyfile",
        "k",
    ]);
    assert_eq!(
        (code(&o), err(&o)),
        (
            1,
            "krypta: s3://bkt/in.kry: rekey writes a new archive and reads this one meanwhile, \
             so it cannot write over it: give -o another name, then rename the new archive \
             over the old\n"
                .to_string()
        )
    );
    fx.file("exists.kry", b"x");
    let o = fx.run(&[
        "rekey",
        "--keyfile",
        "k",
        "in.kry",
        "-o",
        "exists.kry",
        "--new-keyfile",
        "k",
    ]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(fx.read("exists.kry"), b"x");
    // A damaged frame: refused, no OUT.
    let mut b = fx.read("in.kry");
    let at = header_len(&b) + 5000;
    b[at] ^= 1;
    fx.file("bad.kry", &b);
    let o = fx.run(&[
        "rekey",
        "--keyfile",
        "k",
        "bad.kry",
        "-o",
        "o.kry",
        "--new-keyfile",
        "k",
    ]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert!(!fx.exists("o.kry"));
    // From a pipe to a pipe.
    let o = fx.run_stdin(
        &[
            "rekey",
            "--keyfile",
            "k",
            "-",
            "-o",
            "-",
            "--new-keyfile",
            "k",
        ],
        &fx.read("in.kry"),
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    fx.file("piped.kry", &o.stdout);
    fx.ok(&["t", "-q", "--keyfile", "k", "piped.kry"]);
}

/// `info --json`'s recovery object of `name` (docs/JSON.md): (percent, found, protected bytes).
fn recovery_of(fx: &Fx, name: &str) -> (u64, bool, usize) {
    let o = fx.ok(&["info", "--json", name]);
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let r = &v["recovery"];
    (
        r["percent"].as_u64().unwrap(),
        r["found"].as_bool().unwrap(),
        r["protected_bytes"].as_u64().unwrap() as usize,
    )
}

/// Issue 16 × issue 11: a rekey must not leave an archive that was protected by recovery data
/// unprotected. OUT gets a section encoded anew over its own bytes at IN's percent, and an IN
/// damaged within its recovery capacity is repaired while it is read, so OUT's frames are
/// IN's frames as first written.
#[test]
fn rekey_encodes_the_recovery_data_again_and_repairs_a_damaged_in_on_the_way() {
    let fx = Fx::new();
    tree(&fx);
    fx.file("old", b"old password\n");
    fx.file("new", b"new password\n");
    fx.ok(&[
        &[
            "c",
            "-q",
            "-b",
            "64K",
            "--recovery",
            "5",
            "--pass-file",
            "old",
        ][..],
        &FAST,
        &["in.kry", "t"],
    ]
    .concat());
    let pristine = fx.read("in.kry");
    let (percent, found, p_in) = recovery_of(&fx, "in.kry");
    assert_eq!((percent, found), (5, true));
    // Two flipped bytes in two different 4 KiB shards of IN's frames: within 5%.
    let ha = header_len(&pristine);
    let mut damaged = pristine.clone();
    damaged[ha + 1_000] ^= 0xff;
    damaged[ha + 300_000] ^= 0x55;
    fx.file("in.kry", &damaged);
    let o = fx.run(&["t", "--pass-file", "old", "in.kry"]);
    assert_eq!(code(&o), 7, "{}", err(&o));

    let o = fx.ok(&[
        &[
            "rekey",
            "--pass-file",
            "old",
            "in.kry",
            "-o",
            "out.kry",
            "--new-pass-file",
            "new",
        ][..],
        &FAST,
    ]
    .concat());
    assert!(
        err(&o).contains("recovery data encoded again over the new bytes (5%"),
        "{}",
        err(&o)
    );
    let (percent, found, p_out) = recovery_of(&fx, "out.kry");
    assert_eq!((percent, found), (5, true));
    let out_bytes = fx.read("out.kry");
    // OUT's frames (header end to footer) are IN's undamaged frames, byte for byte.
    let hb = header_len(&out_bytes);
    assert_eq!(p_in - ha, p_out - hb);
    assert_eq!(pristine[ha..p_in - 64], out_bytes[hb..p_out - 64]);
    let o = fx.run(&["repair", "--check", "out.kry"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    fx.ok(&["t", "-q", "--pass-file", "new", "out.kry"]);

    // And OUT's own section repairs OUT.
    let mut hit = out_bytes.clone();
    hit[hb + 200_000] ^= 0x0f;
    fx.file("out.kry", &hit);
    let o = fx.run(&["t", "--pass-file", "new", "out.kry"]);
    assert_eq!(code(&o), 7, "{}", err(&o));
    fx.ok(&["x", "-q", "--pass-file", "new", "-o", "o", "out.kry"]);
    assert_eq!(fx.read("o/t/big.bin"), fx.read("t/big.bin"));
    fx.ok(&["repair", "-q", "-f", "out.kry"]);
    assert_eq!(fx.read("out.kry"), out_bytes);
}

/// OUT is written by its own thread: when writing fails (here stdout is /dev/full), the error
/// shown is the writer's (ENOSPC on `-`), not the reading side's "writer stopped".
#[test]
fn a_failing_out_reports_the_write_error() {
    let fx = Fx::new();
    tree(&fx);
    fx.file("pw", b"pw\n");
    fx.ok(&[
        &["c", "-q", "--pass-file", "pw"][..],
        &FAST,
        &["in.kry", "t"],
    ]
    .concat());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_krypta"))
        .args(["rekey", "--pass-file", "pw", "in.kry", "-o", "-"])
        .args(["--new-pass-file", "pw"])
        .args(FAST)
        .current_dir(fx.dir.path())
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert_eq!(
        err(&o),
        "krypta: -: write: No space left on device (os error 28)\n"
    );
}

/// `--new-password` asks for OUT's password at the terminal, twice; the typed password then
/// opens OUT and the old one does not.
#[test]
fn new_password_is_asked_at_the_terminal() {
    let fx = Fx::new();
    tree(&fx);
    fx.file("old", b"old password\n");
    fx.file("typed", b"typed at the prompt\n");
    fx.ok(&[
        &["c", "-q", "--pass-file", "old"][..],
        &FAST,
        &["in.kry", "t"],
    ]
    .concat());
    let args = [
        &[
            "rekey",
            "-q",
            "--pass-file",
            "old",
            "in.kry",
            "-o",
            "out.kry",
        ][..],
        &["--new-password"],
        &FAST,
    ]
    .concat();
    let Some(mut tty) = OnTty::spawn(&fx, &args) else {
        return;
    };
    // The prompt says which password it asks for (the old one came from --pass-file).
    tty.wait_for("New password: ", 1);
    tty.type_in(b"typed at the prompt\n");
    tty.wait_for("Repeat new password: ", 1);
    tty.type_in(b"typed at the prompt\n");
    assert_eq!(tty.exit_code(), 0, "{}", tty.text());
    assert!(tty.echo_on());
    fx.ok(&["x", "-q", "--pass-file", "typed", "-o", "o", "out.kry"]);
    assert_eq!(fx.read("o/t/big.bin"), fx.read("t/big.bin"));
    let o = fx.run(&["t", "--pass-file", "old", "out.kry"]);
    assert_eq!(code(&o), 2, "{}", err(&o));
}

/// Regression (review of helper-38's change): an existing OUT without -f was refused only
/// after the signing key and OUT's new keys were read and OUT's new password asked for at the
/// terminal (twice): a missing new key file was named instead, and `--new-password` prompted.
/// OUT is refused first now, and kept; OUT that is IN still says so, -f or not.
#[test]
fn an_existing_out_is_refused_before_any_key_is_read_or_password_asked() {
    let fx = Fx::new();
    tree(&fx);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    fx.ok(&["c", "-q", "--keyfile", "k", "in.kry", "t"]);
    fx.file("exists.kry", b"keep me");
    let exists = "krypta: exists.kry: already exists (use -f/--force to overwrite)";
    let open = ["rekey", "--keyfile", "k", "in.kry", "-o", "exists.kry"];
    for new in [
        &["--new-keyfile", "missing.key"][..],
        &["--new-keyfile", "k", "--sign", "missing.sign"],
    ] {
        let o = fx.run(&[&open[..], new].concat());
        assert_eq!(
            (code(&o), err(&o).trim()),
            (1, exists),
            "{new:?}: {}",
            err(&o)
        );
    }
    if let Some(mut tty) = OnTty::spawn(&fx, &[&open[..], &["--new-password"]].concat()) {
        assert_eq!(tty.exit_code(), 1, "{}", tty.text());
        let text = tty.text();
        assert!(text.contains(exists), "{text}");
        assert!(!text.contains("password"), "{text}");
    }
    assert_eq!(fx.read("exists.kry"), b"keep me");
    for f in [&[][..], &["-f"]] {
        let o = fx.run(
            &[
                &["rekey", "--keyfile", "k", "in.kry", "-o", "./in.kry"][..],
                f,
                &["--new-keyfile", "k"],
            ]
            .concat(),
        );
        assert_eq!(code(&o), 1, "{}", err(&o));
        assert!(err(&o).contains("cannot write over it"), "{}", err(&o));
    }
}
