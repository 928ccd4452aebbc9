//! An archive with recovery data and a run of bytes inserted or removed in one place (a bad
//! copy): the trailer still ends the file, but everything after the edit is out of place.
//! `repair` undoes the edit and rebuilds the archive byte for byte (`recovery::realign`);
//! `repair --check` says what it found (exit 7); `t` and `x` read the archive as written
//! with the edit undone (`store::shifted`): `t` exits 7 naming the edit, `x` restores every
//! file. Regression: all said "no recovery data found"; nothing could be repaired, and a
//! read salvaged what it could (exit 2 or 5).

mod common;
mod recovery_cli_common;

use common::code;
use recovery_cli_common::*;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bytes_inserted_or_removed_in_one_place_are_undone_and_repaired() {
    for encrypted in [false, true] {
        let f = Fixture::new(10, encrypted, 0);
        // In the middle of the data frames: every byte after it is out of place.
        let at = (f.frames[f.frames.len() / 2].0 + 1000) as usize;
        let mut inserted = f.bytes[..at].to_vec();
        inserted.extend_from_slice(&[b'X'; 700]);
        inserted.extend_from_slice(&f.bytes[at..]);
        let mut removed = f.bytes[..at].to_vec();
        removed.extend_from_slice(&f.bytes[at + 3000..]);
        for (name, bytes, said) in [
            ("ins.kry", &inserted, "700 byte(s) inserted near byte "),
            ("del.kry", &removed, "3000 byte(s) missing near byte "),
        ] {
            let what = format!("{name} (encrypted: {encrypted})");
            f.write(name, bytes);
            let c = f.run(&["repair", "--check", name]);
            assert_eq!(code(&c), 7, "{what}: {}", stderr(&c));
            assert!(stderr(&c).contains(said), "{what}: {}", stderr(&c));
            // The shard holding the edit is damaged, the others verify where they belong.
            assert!(
                stderr(&c).contains("damaged but repairable"),
                "{what}: {}",
                stderr(&c)
            );
            let t = f.keyed(&["t", name]);
            assert_eq!(code(&t), 7, "{what}: {}", stderr(&t));
            let (n, how) = if name == "ins.kry" {
                (700, "inserted")
            } else {
                (3000, "removed")
            };
            for want in [
                format!("{n} bytes were {how} near byte "),
                "damaged but repairable".into(),
                "every entry verified".into(),
            ] {
                assert!(stderr(&t).contains(&want), "{what}: {}", stderr(&t));
            }
            let out = f.dir.path().join(format!("x-{name}"));
            let x = f.keyed(&["x", "-o", common::s(&out), name]);
            assert_eq!(code(&x), 0, "{what}: x: {}", stderr(&x));
            common::assert_same_tree(&f.dir.path().join("t"), &out.join("t"));
            let fixed = format!("fixed-{name}");
            let r = f.run(&["repair", name, "-o", &fixed]);
            assert_eq!(code(&r), 0, "{what}: {}", stderr(&r));
            assert!(stderr(&r).contains(said), "{what}: {}", stderr(&r));
            assert!(
                std::fs::read(f.dir.path().join(&fixed)).unwrap() == f.bytes,
                "{what}: the repaired archive is not the original"
            );
            // In place too.
            let r = f.run(&["repair", "-f", name]);
            assert_eq!(code(&r), 0, "{what}: {}", stderr(&r));
            assert!(
                std::fs::read(f.dir.path().join(name)).unwrap() == f.bytes,
                "{what}: repaired in place, not the original"
            );
            let t = f.keyed(&["t", name]);
            assert_eq!(code(&t), 0, "{what}: t after repair: {}", stderr(&t));
        }
    }
}
