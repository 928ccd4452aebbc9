//! Shared fixture of the issue-14 CLI tests (`cli_*.rs`): a temporary directory to run
//! `krypta` in, and the stored names of an archive read back with `list --json`.

#![allow(dead_code, missing_docs)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common::{code, krypta};

pub struct Fx {
    pub dir: tempfile::TempDir,
}

impl Fx {
    pub fn new() -> Fx {
        Fx {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    pub fn p(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    /// Writes `rel` (parents created).
    pub fn file(&self, rel: &str, data: &[u8]) -> PathBuf {
        let p = self.p(rel);
        crate::common::write(&p, data);
        p
    }
    pub fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.p(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }
    /// Runs krypta in the fixture directory, stdin empty.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_env(args, &[])
    }
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = krypta();
        c.current_dir(self.dir.path())
            .args(args)
            .stdin(Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("run krypta")
    }
    /// Runs krypta with `input` on stdin.
    pub fn run_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        let mut child = krypta()
            .current_dir(self.dir.path())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    }
    pub fn ok(&self, args: &[&str]) -> Output {
        let o = self.run(args);
        assert_eq!(code(&o), 0, "krypta {args:?}: {}", err(&o));
        o
    }
    /// The stored names of `archive`, in archive order (`list --json`, `path` or
    /// `path_b64`).
    pub fn names(&self, archive: &str) -> Vec<String> {
        let o = self.ok(&["l", "--json", archive]);
        out(&o)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["path"].as_str().unwrap().to_string()
            })
            .collect()
    }
    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.p(rel)).unwrap()
    }
    pub fn exists(&self, rel: &str) -> bool {
        self.p(rel).symlink_metadata().is_ok()
    }
}

pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Lines of stderr without the end summary of `c`/`x`.
pub fn warnings(o: &Output) -> Vec<String> {
    let (rest, _) = crate::common::split_summary(&err(o));
    rest.lines().map(str::to_string).collect()
}

pub fn is_dir(p: &Path) -> bool {
    p.symlink_metadata().map(|m| m.is_dir()).unwrap_or(false)
}
