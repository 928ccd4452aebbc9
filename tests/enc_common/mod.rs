//! Shared fixture of the encryption CLI tests (`encryption.rs`, `passwords.rs`): a small
//! tree, password files, and the exact authentication-failure line.

#![allow(dead_code, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common::{self, code, krypta};

/// Cheap Argon2id costs for tests: 8 MiB (the writer minimum), 1 pass.
pub const ARGON: [&str; 4] = ["--kdf-memory", "8", "--kdf-iterations", "1"];
/// The one stderr line of an authentication failure where no stanza opened (a wrong key or
/// password, or a changed stanza: they cannot be told apart), for an archive at `p`.
pub fn auth_line(p: &Path) -> String {
    format!(
        "krypta: {}: authentication failed: no recipient stanza opened with the keys given: wrong key or password, or the archive's header is damaged or modified\n",
        p.display()
    )
}

/// A temporary directory with a small tree `src/` (two files, a subdirectory, a symlink) and
/// password files.
pub struct Fx {
    pub dir: tempfile::TempDir,
}

impl Fx {
    pub fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        common::write(&src.join("notes.txt"), &common::bytes(50_000, 3, true));
        common::write(&src.join("sub/blob.bin"), &common::bytes(70_000, 4, false));
        common::write(&src.join("sub/empty"), b"");
        std::os::unix::fs::symlink("notes.txt", src.join("link")).unwrap();
        let fx = Fx { dir };
        fx.file("pw", b"correct horse");
        fx.file("wrong", b"correct horsE");
        fx
    }
    pub fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    pub fn file(&self, name: &str, data: &[u8]) -> PathBuf {
        let p = self.p(name);
        common::write(&p, data);
        p
    }
    /// Runs krypta in the fixture directory (relative paths: `src` is stored as `src/...`).
    pub fn run(&self, args: &[&str]) -> Output {
        krypta()
            .current_dir(self.dir.path())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run krypta")
    }
    pub fn ok(&self, args: &[&str]) -> Output {
        let o = self.run(args);
        assert_eq!(code(&o), 0, "krypta {args:?}: {}", stderr(&o));
        o
    }
    /// Extracts `archive` with `keys` into a fresh directory and checks it equals `src/`.
    pub fn assert_restores(&self, archive: &str, keys: &[&str]) {
        let out = format!("out-{}", self.dir.path().read_dir().unwrap().count());
        let mut args = vec!["x", "-o", &out];
        args.extend_from_slice(keys);
        args.push(archive);
        self.ok(&args);
        common::assert_same_tree(&self.p("src"), &self.p(&out).join("src"));
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}
