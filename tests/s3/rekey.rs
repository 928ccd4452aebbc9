//! `krypta rekey` with `s3://` archives (issue 16: "also for s3:// archives"): an object
//! rekeyed into another object and to a local file, the old password no longer opening OUT,
//! the frames copied byte for byte, and a refused rekey leaving no object and no upload.

use crate::harness::*;

fn hl(b: &[u8]) -> usize {
    u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize
}

#[test]
fn rekey_from_an_object_to_an_object_and_to_a_file() {
    let Some((w, d)) = setup("rekey") else {
        return;
    };
    let tree = make_tree(d.path(), 3_000_000);
    std::fs::write(d.path().join("old"), "old password\n").unwrap();
    std::fs::write(d.path().join("new"), "new password\n").unwrap();
    let fast = ["--kdf-memory", "8", "--kdf-iterations", "1"];
    let run = |args: &[&str]| out(k(w, d.path()).current_dir(d.path()).args(args));
    assert_ok(&run(&[
        &["c", "-q", "--pass-file", "old"][..],
        &fast,
        &["s3://rekey/in.kry", "tree"],
    ]
    .concat()));
    assert_ok(&run(&[
        &["rekey", "-q", "--pass-file", "old", "s3://rekey/in.kry"][..],
        &["-o", "s3://rekey/out.kry", "--new-pass-file", "new"],
        &fast,
    ]
    .concat()));
    let s3 = w.client();
    let (a, b) = (
        s3.get("rekey", "in.kry").unwrap(),
        s3.get("rekey", "out.kry").unwrap(),
    );
    assert_eq!(a[hl(&a)..a.len() - 64], b[hl(&b)..b.len() - 64]);
    assert_ok(&run(&[
        "x",
        "-q",
        "--pass-file",
        "new",
        "-o",
        "o",
        "s3://rekey/out.kry",
    ]));
    crate::common::assert_same_tree(&tree, &d.path().join("o/tree"));
    let o = run(&["t", "--pass-file", "old", "s3://rekey/out.kry"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    // To a local file, and an existing object is not replaced without -f.
    assert_ok(&run(&[
        &["rekey", "-q", "--pass-file", "new", "s3://rekey/out.kry"][..],
        &["-o", "local.kry", "--new-pass-file", "old"],
        &fast,
    ]
    .concat()));
    assert_ok(&run(&["t", "-q", "--pass-file", "old", "local.kry"]));
    let o = run(&[
        &["rekey", "--pass-file", "old", "local.kry"][..],
        &["-o", "s3://rekey/in.kry", "--new-pass-file", "new"],
        &fast,
    ]
    .concat());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("s3://rekey/in.kry"), "{}", stderr(&o));
    assert_eq!(s3.get("rekey", "in.kry").unwrap(), a);

    // A wrong old password: no object, no unfinished upload.
    let o = run(&[
        &["rekey", "--pass-file", "new", "s3://rekey/in.kry"][..],
        &["-o", "s3://rekey/never.kry", "--new-pass-file", "old"],
        &fast,
    ]
    .concat());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(s3.get("rekey", "never.kry"), None);
    assert_eq!(s3.uploads("rekey"), vec![]);
}
