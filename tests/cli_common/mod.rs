//! Shared fixture of the issue-14 CLI tests (`cli_*.rs`): a temporary directory to run
//! `krypta` in, the stored names of an archive read back with `list --json`, and krypta run on
//! a pseudo-terminal ([`OnTty`]: in its own session with the terminal as its controlling one,
//! via `setsid -c`).

#![allow(dead_code, missing_docs)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// krypta with `args` and `env` in the fixture's directory, stdin, stdout and stderr all
    /// pipes, not waited for.
    pub fn spawn_piped(&self, args: &[&str], env: &[(&str, &str)]) -> Child {
        krypta()
            .current_dir(self.p(""))
            .envs(env.iter().copied())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Runs krypta with `input` on stdin.
    pub fn run_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        crate::common::run_stdin_in(self.dir.path(), args, input)
    }
    pub fn ok(&self, args: &[&str]) -> Output {
        let o = self.run(args);
        assert_eq!(code(&o), 0, "krypta {args:?}: {}", err(&o));
        o
    }
    /// The stored names of `archive`, in archive order (`list --json`): `path`, or for a
    /// name that is not UTF-8 `b64:` and its `path_b64` (a tree the test does not own, such
    /// as /dev, may hold such names).
    pub fn names(&self, archive: &str) -> Vec<String> {
        let o = self.ok(&["l", "--json", archive]);
        out(&o)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                match (v["path"].as_str(), v["path_b64"].as_str()) {
                    (Some(p), _) => p.to_string(),
                    (None, Some(b)) => format!("b64:{b}"),
                    (None, None) => panic!("an entry without path or path_b64: {l}"),
                }
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

/// A pseudo-terminal with krypta running on it (stdin and stderr; stdout piped).
pub struct OnTty {
    master: File,
    slave: File,
    seen: Arc<Mutex<Vec<u8>>>,
    pub child: Child,
}

impl OnTty {
    pub fn spawn(fx: &Fx, args: &[&str]) -> Option<OnTty> {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        if Command::new("setsid").arg("--help").output().is_err() {
            eprintln!("note: no setsid(1); terminal test skipped");
            return None;
        }
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).ok()?;
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .unwrap();
        let child = Command::new("setsid")
            .arg("-c")
            .arg(env!("CARGO_BIN_EXE_krypta"))
            .args(args)
            .current_dir(fx.dir.path())
            .env_remove("KRYPTA_PASSWORD")
            .stdin(slave.try_clone().unwrap())
            .stderr(slave.try_clone().unwrap())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let master = File::from(master);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (mut r, s) = (master.try_clone().unwrap(), Arc::clone(&seen));
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                s.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Some(OnTty {
            master,
            slave,
            seen,
            child,
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned()
    }

    /// Waits until the terminal has shown `what` `times` times in all.
    pub fn wait_for(&self, what: &str, times: usize) {
        let start = Instant::now();
        while self.text().matches(what).count() < times {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no {what:?} on the terminal: {:?}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn type_in(&mut self, s: &[u8]) {
        self.master.write_all(s).unwrap();
    }

    pub fn exit_code(&mut self) -> i32 {
        let start = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                self.settle();
                return st.code().expect("an exit code, not death by a signal");
            }
            if start.elapsed() > Duration::from_secs(60) {
                self.child.kill().unwrap();
                panic!("krypta did not exit; terminal: {:?}", self.text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// After krypta exited: waits until what it wrote last has reached the reader thread.
    /// The kernel moves a pty's output to the master side asynchronously, so the last line
    /// (the error after a wrong password) may arrive after the exit is seen: nothing new for
    /// 300 ms, or 10 s in all, ends the wait.
    fn settle(&self) {
        let start = Instant::now();
        let mut last = (self.seen.lock().unwrap().len(), Instant::now());
        while last.1.elapsed() < Duration::from_millis(300)
            && start.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(20));
            let n = self.seen.lock().unwrap().len();
            if n != last.0 {
                last = (n, Instant::now());
            }
        }
    }

    pub fn echo_on(&self) -> bool {
        let t = rustix::termios::tcgetattr(self.slave.as_fd()).unwrap();
        t.local_modes.contains(rustix::termios::LocalModes::ECHO)
    }
}
