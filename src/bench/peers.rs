//! Table 7: the tools users would pick instead (zstd, xz, gzip, 7z, age over zstd), run on the
//! same inputs in the same run as krypta, each compared with krypta at a comparable setting.
//! Peers run as child processes (`sh -c`), one thread each (`-T1`, `-mmt=1`); krypta runs in
//! process through the archive writer and `krypta::test`, with one worker.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::codec::Level;
use crate::crypto::kdf::Kdf;
use crate::error::{Error, Result};

use super::Plan;
use super::archive_tables::{Protect, pq_box, time_archive};
use super::fixtures::Fixture;
use super::measure::{have, mb_per_sec, median, median_secs};
use super::report::{Cell, Table};

/// Password given to 7z (its KDF cost does not depend on it).
const PASSWORD_7Z: &str = "correct-horse-battery-staple";

/// A krypta setting a peer is compared with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Setting {
    L3,
    L9,
    L9Pbkdf2,
    L3PqBox,
}

impl Setting {
    const ALL: [Setting; 4] = [
        Setting::L3,
        Setting::L9,
        Setting::L9Pbkdf2,
        Setting::L3PqBox,
    ];
    fn name(self) -> &'static str {
        match self {
            Setting::L3 => "krypta -l 3",
            Setting::L9 => "krypta -l 9",
            Setting::L9Pbkdf2 => "krypta -l 9 + pbkdf2 password",
            Setting::L3PqBox => "krypta -l 3 + pq-box",
        }
    }
}

/// One peer: shell scripts with `$1` = input, `$2` = output, `$3` = key directory.
struct Peer {
    name: &'static str,
    tools: &'static [&'static str],
    compress: &'static str,
    extract: &'static str,
    versus: Setting,
    /// Used instead of `compress` on executables (`xz --x86`).
    compress_exec: Option<(&'static str, &'static str)>,
}

const PEERS: &[Peer] = &[
    Peer {
        name: "zstd -3",
        tools: &["zstd"],
        compress: r#"zstd -q -f -3 -T1 -o "$2" "$1""#,
        extract: r#"zstd -q -d -c "$2" >/dev/null"#,
        versus: Setting::L3,
        compress_exec: None,
    },
    Peer {
        name: "zstd -19",
        tools: &["zstd"],
        compress: r#"zstd -q -f -19 -T1 -o "$2" "$1""#,
        extract: r#"zstd -q -d -c "$2" >/dev/null"#,
        versus: Setting::L9,
        compress_exec: None,
    },
    Peer {
        name: "zstd -19 --long=27",
        tools: &["zstd"],
        compress: r#"zstd -q -f -19 --long=27 -T1 -o "$2" "$1""#,
        extract: r#"zstd -q -d --long=27 -c "$2" >/dev/null"#,
        versus: Setting::L9,
        compress_exec: None,
    },
    Peer {
        name: "xz -9",
        tools: &["xz"],
        compress: r#"xz -q -9 -T1 -c "$1" >"$2""#,
        extract: r#"xz -d -c "$2" >/dev/null"#,
        versus: Setting::L9,
        compress_exec: Some((
            "xz -9 --x86",
            r#"xz -q -T1 --x86 --lzma2=preset=9 -c "$1" >"$2""#,
        )),
    },
    Peer {
        name: "gzip -9",
        tools: &["gzip"],
        compress: r#"gzip -9 -c "$1" >"$2""#,
        extract: r#"gzip -d -c "$2" >/dev/null"#,
        versus: Setting::L3,
        compress_exec: None,
    },
    Peer {
        name: "7z -mx9 -p -mhe=on",
        tools: &["7z"],
        compress: r#"rm -f "$2" && 7z a -bd -bso0 -bsp0 -t7z -mx=9 -mmt=1 -mhe=on -p"$4" "$2" "$1""#,
        extract: r#"7z x -bd -bsp0 -so -p"$4" "$2" >/dev/null"#,
        versus: Setting::L9Pbkdf2,
        compress_exec: None,
    },
    Peer {
        name: "zstd -3 | age -r",
        tools: &["zstd", "age", "age-keygen"],
        compress: r#"zstd -q -3 -T1 -c "$1" | age -r "$(cat "$3/age.pub")" -o "$2""#,
        extract: r#"age -d -i "$3/age.key" "$2" | zstd -q -d -c >/dev/null"#,
        versus: Setting::L3PqBox,
        compress_exec: None,
    },
];

/// Runs `script` with the bench arguments; Err carries the script's stderr.
fn sh(script: &str, input: &Path, output: &Path, keys: &Path) -> Result<()> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg(input)
        .arg(output)
        .arg(keys)
        .arg(PASSWORD_7Z)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Error::io("sh", "run", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "`{script}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// (ratio, compress MB/s, extract MB/s) of one measured tool or setting.
type Measured = (f64, f64, f64);

/// Table 7: peers vs krypta on each input.
pub fn table7(fixtures: &[Fixture], plan: &Plan, progress: &mut dyn FnMut(&str)) -> Result<Table> {
    let dir = tempfile::Builder::new()
        .prefix("krypta-bench-peers-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), "create a directory in", e))?;
    let keys = dir.path();
    let age_ok = have("age") && have("age-keygen") && {
        sh(
            r#"age-keygen -o "$3/age.key" 2>/dev/null && age-keygen -y "$3/age.key" >"$3/age.pub""#,
            keys,
            keys,
            keys,
        )
        .is_ok()
    };
    let available: Vec<&Peer> = PEERS
        .iter()
        .filter(|p| {
            p.tools.iter().all(|t| *t != "age" || age_ok) && p.tools.iter().all(|t| have(t))
        })
        .collect();
    let missing: Vec<&str> = PEERS
        .iter()
        .filter(|p| !available.iter().any(|a| a.name == p.name))
        .map(|p| p.name)
        .collect();
    let mut t = Table::new(
        7,
        "Peers: the same inputs through the tools users would pick instead",
        format!(
            "each input as a file on {}; peers run as processes, one thread (`-T1`, \
             `-mmt=1`), compressing file to file and extracting to /dev/null; krypta runs in \
             process with one worker, writing an archive file and reading it back with \
             `krypta test`. Ratios include each format's headers. Relative columns: peer ÷ the \
             krypta setting named (size < 1 = peer smaller; speed > 1 = peer faster). Median of \
             {} run(s).{}",
            std::env::temp_dir().display(),
            plan.runs,
            if missing.is_empty() {
                String::new()
            } else {
                format!(" Not installed, not run: {}.", missing.join(", "))
            }
        ),
        &[
            "input",
            "tool",
            "ratio",
            "compress MB/s",
            "extract MB/s",
            "compared with",
            "size vs krypta",
            "compress speed vs krypta",
            "extract speed vs krypta",
        ],
    );
    let pq = pq_box()?;
    let mut rel: Vec<(&str, &str, [f64; 3])> = Vec::new();
    for f in fixtures {
        let input = dir.path().join(&f.name);
        std::fs::write(&input, &f.data).map_err(|e| Error::io(&input, "write", e))?;
        let mut ours: Vec<(Setting, Measured)> = Vec::new();
        for s in Setting::ALL {
            progress(&format!("table 7: {} {}", f.name, s.name()));
            let (level, protect) = match s {
                Setting::L3 => (Level::DEFAULT, Protect::Plain),
                Setting::L9 => (Level::MAX, Protect::Plain),
                Setting::L9Pbkdf2 => (Level::MAX, Protect::Password(Kdf::default_pbkdf2())),
                Setting::L3PqBox => (Level::DEFAULT, pq.clone()),
            };
            let files = [(f.name.as_str(), f.data.as_slice())];
            let (w, r, size) = time_archive(
                dir.path(),
                &files,
                Some(level),
                &protect,
                1,
                (plan.runs, false),
            )?;
            let m = (
                f.data.len() as f64 / size.max(1) as f64,
                mb_per_sec(f.data.len(), w),
                mb_per_sec(f.data.len(), r),
            );
            ours.push((s, m));
            t.rows.push(vec![
                Cell::text(&f.name),
                Cell::text(s.name()),
                Cell::num(m.0, 3),
                Cell::auto(m.1),
                Cell::auto(m.2),
                Cell::Missing,
                Cell::Missing,
                Cell::Missing,
                Cell::Missing,
            ]);
        }
        for p in &available {
            let (name, script) = match (p.compress_exec, f.filter != crate::codec::Filter::None) {
                (Some(exec), true) => exec,
                _ => (p.name, p.compress),
            };
            progress(&format!("table 7: {} {name}", f.name));
            let out = dir.path().join("peer.out");
            let measured =
                median_secs(plan.runs, || sh(script, &input, &out, keys)).and_then(|w| {
                    let size = std::fs::metadata(&out)
                        .map_err(|e| Error::io(&out, "stat", e))?
                        .len();
                    let r = median_secs(plan.runs, || sh(p.extract, &input, &out, keys))?;
                    Ok((
                        f.data.len() as f64 / size.max(1) as f64,
                        mb_per_sec(f.data.len(), w),
                        mb_per_sec(f.data.len(), r),
                    ))
                });
            let m = match measured {
                Ok(m) => m,
                Err(e) => {
                    t.reading.push(format!("{name} on {}: {e}", f.name));
                    continue;
                }
            };
            let Some((_, k)) = ours.iter().find(|(s, _)| *s == p.versus) else {
                continue;
            };
            let r = [k.0 / m.0, m.1 / k.1.max(1e-9), m.2 / k.2.max(1e-9)];
            rel.push((p.name, p.versus.name(), r));
            t.rows.push(vec![
                Cell::text(&f.name),
                Cell::text(name),
                Cell::num(m.0, 3),
                Cell::auto(m.1),
                Cell::auto(m.2),
                Cell::text(p.versus.name()),
                Cell::num(r[0], 3),
                Cell::num(r[1], 2),
                Cell::num(r[2], 2),
            ]);
        }
    }
    t.reading.extend(read_table7(&rel, fixtures.len()));
    Ok(t)
}

/// One sentence per peer from its relative numbers across inputs.
fn read_table7(rel: &[(&str, &str, [f64; 3])], inputs: usize) -> Vec<String> {
    let names = rel.iter().fold(Vec::<&str>::new(), |mut v, r| {
        if !v.contains(&r.0) {
            v.push(r.0);
        }
        v
    });
    names
        .into_iter()
        .map(|name| {
            let rows: Vec<&(&str, &str, [f64; 3])> = rel.iter().filter(|r| r.0 == name).collect();
            let versus = rows.first().map_or("", |r| r.1);
            let smaller = rows.iter().filter(|r| r.2[0] < 0.995).count();
            let best = rows.iter().map(|r| r.2[0]).fold(f64::INFINITY, f64::min);
            let col = |i: usize| median(&mut rows.iter().map(|r| r.2[i]).collect::<Vec<_>>());
            let (size, comp, ext) = (col(0), col(1), col(2));
            let verdict = |x: f64, what: &str| {
                if x >= 1.05 {
                    format!("{what} {x:.2}x faster (peer wins)")
                } else if x <= 0.95 {
                    format!("{what} {:.2}x slower", 1.0 / x.max(1e-9))
                } else {
                    format!("{what} at about the same speed")
                }
            };
            format!(
                "{name} vs {versus}: smaller output on {smaller} of {} inputs{} (median size \
                 {size:.3}x krypta's); {}, {} (medians over {inputs} inputs).",
                rows.len(),
                if smaller > 0 {
                    format!(" (peer wins there, by up to {:.1}%)", (1.0 - best) * 100.0)
                } else {
                    String::new()
                },
                verdict(comp, "compresses"),
                verdict(ext, "extracts"),
            )
        })
        .collect()
}
