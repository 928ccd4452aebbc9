//! A salvage (`x` of a damaged archive, restoring what it can) whose own writes fail: the
//! failed write is the disk's, not the archive's damage, and the run's exit code follows it
//! (4, README's exit-code table), from a file with its index, without it, and from a pipe,
//! encrypted or not. The output is a real full disk: a 700 KiB tmpfs (skipped, with a note,
//! where mounting is not allowed).

mod common;
mod salvage_common;

use salvage_common::*;

/// Mounts a tmpfs of `size` at `dir/mnt`; None where mounting is not allowed.
fn small_disk(dir: &std::path::Path, size: &str) -> Option<std::path::PathBuf> {
    let mnt = dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&mnt)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    ok.then_some(mnt)
}

#[test]
fn a_salvage_that_cannot_write_a_file_exits_4_not_the_archives_code() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mnt) = small_disk(dir.path(), "700k") else {
        eprintln!("note: cannot mount a tmpfs here; test skipped");
        return;
    };
    let result = std::panic::catch_unwind(|| {
        for sealed in [false, true] {
            let good = build(sealed);
            let p = dir.path().join("a.kry");
            std::fs::write(&p, &good).unwrap();
            let (_, frames) = geometry(&p, sealed);
            let key = key_file(dir.path());
            // A damaged data frame early on (salvage with the index), and the same with the
            // index frame damaged too (salvage front to back, without it).
            let mut d = good.clone();
            d[frames[1].0 as usize + 100] ^= 0xFF;
            let mut di = d.clone();
            di[frames.last().unwrap().0 as usize + 40] ^= 0xFF;
            for (name, bytes) in [("d", &d), ("di", &di)] {
                let a = dir.path().join(format!("{name}.kry"));
                std::fs::write(&a, bytes).unwrap();
                for piped in [false, true] {
                    let out = mnt.join("o");
                    let mut cmd = common::krypta();
                    cmd.args(["x", "-o", common::s(&out)]);
                    if sealed {
                        cmd.args(["--keyfile", common::s(&key)]);
                    }
                    if piped {
                        cmd.arg("-").stdin(std::fs::File::open(&a).unwrap());
                    } else {
                        cmd.arg(&a);
                    }
                    let o = cmd.output().unwrap();
                    let e = String::from_utf8_lossy(&o.stderr);
                    let what = format!("{name}, sealed {sealed}, piped {piped}");
                    assert_eq!(common::code(&o), 4, "{what}: {e}");
                    assert!(
                        e.contains(": write: No space left on device (os error 28)"),
                        "{what}: {e}"
                    );
                    let _ = std::fs::remove_dir_all(&out);
                }
            }
        }
    });
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}
