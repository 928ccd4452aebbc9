//! End-to-end fidelity of large and awkward inputs through the binary (issue 3): sparse 4 GiB
//! and 5 GiB files round-trip sparse with their digest, a path longer than `PATH_MAX`
//! round-trips, and a file growing or shrinking while it is read gives exit code 6, a warning
//! naming it, and an archive that still verifies and holds exactly the bytes read.

mod common;

use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{bytes, code, krypta, write};

/// BLAKE3 of a file's content, read in 1 MiB pieces (large updates use BLAKE3's SIMD).
fn b3_file(p: &Path) -> [u8; 32] {
    use std::io::Read;
    let mut h = blake3::Hasher::new();
    let mut f = std::fs::File::open(p).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    *h.finalize().as_bytes()
}

/// BLAKE3 of a file's content, reading only its data extents (`SEEK_DATA`/`SEEK_HOLE`) and
/// hashing holes as zeros from memory: what `b3_file` gives, without reading gigabytes of holes.
fn b3_file_sparse(p: &Path) -> [u8; 32] {
    use rustix::fs::{SeekFrom, seek};
    let f = std::fs::File::open(p).unwrap();
    let len = f.metadata().unwrap().len();
    let zeros = vec![0u8; 1 << 20];
    let mut buf = vec![0u8; 1 << 20];
    let mut h = blake3::Hasher::new();
    let mut pos = 0u64;
    let hash_zeros_to = |h: &mut blake3::Hasher, from: u64, to: u64| {
        let mut at = from;
        while at < to {
            let k = (to - at).min(zeros.len() as u64) as usize;
            h.update(&zeros[..k]);
            at += k as u64;
        }
    };
    while pos < len {
        let Ok(data) = seek(&f, SeekFrom::Data(pos)) else {
            break;
        };
        let hole = seek(&f, SeekFrom::Hole(data)).unwrap().min(len);
        hash_zeros_to(&mut h, pos, data);
        let mut at = data;
        while at < hole {
            let k = (hole - at).min(buf.len() as u64) as usize;
            f.read_exact_at(&mut buf[..k], at).unwrap();
            h.update(&buf[..k]);
            at += k as u64;
        }
        pos = hole;
    }
    hash_zeros_to(&mut h, pos, len);
    *h.finalize().as_bytes()
}

/// Runs `krypta ARGS` in `cwd`; it must succeed.
fn kr_ok(cwd: &Path, args: &[&str]) -> Output {
    let o = krypta()
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        code(&o),
        0,
        "krypta {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// A sparse file of `len` bytes holding `data` at the given offsets.
fn sparse_file(path: &Path, len: u64, data: &[(u64, &[u8])]) {
    let f = std::fs::File::create(path).unwrap();
    f.set_len(len).unwrap();
    for (off, bytes) in data {
        f.write_all_at(bytes, *off).unwrap();
    }
}

fn read_at(path: &Path, off: u64, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    std::fs::File::open(path)
        .unwrap()
        .read_exact_at(&mut v, off)
        .unwrap();
    v
}

/// The `krypta l` size column of every entry, in order.
fn listed_sizes(cwd: &Path, kry: &str) -> Vec<u64> {
    let o = kr_ok(cwd, &["l", kry]);
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn sparse_4gib_image_is_archived_small_and_restored_sparse_with_its_digest() {
    let tmp = tempfile::tempdir().unwrap();
    let len = 4u64 << 30;
    let img = tmp.path().join("disk.img");
    let data: [(u64, &[u8]); 3] = [(0, b"MBR!"), ((1 << 30) + 5, b"middle"), (len - 4, b"tail")];
    sparse_file(&img, len, &data);
    let started = Instant::now();
    kr_ok(tmp.path(), &["c", "img.kry", "disk.img"]);
    let took = started.elapsed();
    let size = tmp.path().join("img.kry").metadata().unwrap().len();
    println!(
        "MEASURE sparse 4 GiB image (12+6 bytes of data): compress {took:?}, archive {size} bytes"
    );
    assert!(
        size < 64 * 1024,
        "archive of a mostly-empty image is {size} bytes"
    );
    assert_eq!(listed_sizes(tmp.path(), "img.kry"), [len]);
    let started = Instant::now();
    kr_ok(tmp.path(), &["x", "img.kry", "-o", "out"]);
    println!(
        "MEASURE sparse 4 GiB image: extract {:?}",
        started.elapsed()
    );
    let got = tmp.path().join("out/disk.img");
    let md = got.metadata().unwrap();
    assert_eq!(md.len(), len);
    assert!(
        md.blocks() <= 256,
        "restored with {} 512-byte blocks",
        md.blocks()
    );
    for (off, bytes) in data {
        assert_eq!(read_at(&got, off, bytes.len()), bytes);
    }
    let o = kr_ok(tmp.path(), &["l", "--b3", "img.kry"]);
    let b3 = String::from_utf8(o.stdout).unwrap();
    let src_digest = b3_file(&img);
    let digest = blake3::Hash::from(src_digest).to_hex();
    assert_eq!(b3, format!("{digest}  disk.img\n"));
    // The source was read in full above; the restored file's holes are not read again.
    assert_eq!(b3_file_sparse(&img), src_digest);
    assert_eq!(b3_file_sparse(&got), src_digest);
}

#[test]
fn sparse_5gib_file_round_trips_with_data_past_4gib() {
    let tmp = tempfile::tempdir().unwrap();
    let len = 5u64 << 30;
    let data: [(u64, &[u8]); 3] = [
        (0, b"start"),
        ((4 << 30) - 3, b"across 4 GiB"),
        (len - 3, b"end"),
    ];
    sparse_file(&tmp.path().join("five"), len, &data);
    kr_ok(tmp.path(), &["c", "five.kry", "five"]);
    assert_eq!(listed_sizes(tmp.path(), "five.kry"), [len]);
    kr_ok(tmp.path(), &["x", "five.kry", "-o", "out"]);
    let got = tmp.path().join("out/five");
    let md = got.metadata().unwrap();
    assert_eq!(md.len(), len);
    assert!(
        md.blocks() <= 256,
        "restored with {} 512-byte blocks",
        md.blocks()
    );
    for (off, bytes) in data {
        assert_eq!(read_at(&got, off, bytes.len()), bytes);
    }
    assert_eq!(read_at(&got, (4 << 30) + 9, 8), [0u8; 8]);
}

/// Waits until process `pid` has `file` open (via `/proc/PID/fd`); false if it exited first.
fn wait_until_open(child: &mut std::process::Child, file: &Path) -> bool {
    let fds = PathBuf::from(format!("/proc/{}/fd", child.id()));
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if let Ok(rd) = std::fs::read_dir(&fds)
            && rd
                .flatten()
                .any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l == file))
        {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    panic!("krypta never opened {}", file.display());
}

/// Archives `t` while `change` alters `t/f` as soon as krypta has it open; retries when
/// krypta finished reading first. Returns (exit code, stderr).
fn compress_while_changing(dir: &Path, content: &[u8], change: impl Fn(&Path)) -> (i32, String) {
    let f = dir.join("t/f");
    for _ in 0..5 {
        write(&f, content);
        let _ = std::fs::remove_file(dir.join("a.kry"));
        let mut child = krypta()
            .args(["c", "-b", "64K", "-j", "1", "a.kry", "t"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let opened = wait_until_open(&mut child, &f);
        if opened {
            change(&f);
        }
        let o = child.wait_with_output().unwrap();
        let c = code(&o);
        let err = String::from_utf8(o.stderr).unwrap();
        // A change that landed after the whole file was read is caught by the check after
        // the read ("was modified while being read", exit 6: right, but not the case these
        // tests are about): try again, like a change that came too late to be seen.
        let after_the_read = err.contains(": was modified while being read\n");
        if (c != 0 || !opened) && !after_the_read {
            // The end summary (issue 14) is checked and left out: its time varies.
            return (c, common::drop_summary(&err));
        }
    }
    panic!("the file never changed while krypta was reading it");
}

#[test]
fn file_growing_while_read_is_stored_at_its_open_size_with_exit_6() {
    let tmp = tempfile::tempdir().unwrap();
    let content = bytes(64 << 20, 9, false);
    let (c, err) = compress_while_changing(tmp.path(), &content, |f| {
        use std::io::Write;
        let mut a = std::fs::OpenOptions::new().append(true).open(f).unwrap();
        a.write_all(&[7u8; 1024]).unwrap();
    });
    assert_eq!(c, 6, "{err}");
    assert_eq!(
        err,
        "krypta: warning: t/f: grew from 67108864 to 67109888 bytes while being read; \
         stored the first 67108864\n\
         krypta: archive written, but 1 input(s) changed or vanished while being read \
         (see warnings)\n"
    );
    kr_ok(tmp.path(), &["t", "a.kry"]);
    assert_eq!(listed_sizes(tmp.path(), "a.kry"), [0, 64 << 20]);
    kr_ok(tmp.path(), &["x", "a.kry", "-o", "out"]);
    assert!(std::fs::read(tmp.path().join("out/t/f")).unwrap() == content);
}

#[test]
fn file_shrinking_while_read_records_exactly_the_bytes_read_with_exit_6() {
    let tmp = tempfile::tempdir().unwrap();
    let content = bytes(64 << 20, 10, false);
    let (c, err) = compress_while_changing(tmp.path(), &content, |f| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(f)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
    });
    assert_eq!(c, 6, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    let stored: u64 = lines[0]
        .strip_prefix("krypta: warning: t/f: shrank from 67108864 to ")
        .and_then(|r| r.strip_suffix(" bytes while being read"))
        .unwrap_or_else(|| panic!("{err}"))
        .parse()
        .unwrap();
    assert_eq!(
        lines[1],
        "krypta: archive written, but 1 input(s) changed or vanished while being read \
         (see warnings)"
    );
    assert!((1 << 20..64 << 20).contains(&stored), "{stored}");
    kr_ok(tmp.path(), &["t", "a.kry"]);
    assert_eq!(listed_sizes(tmp.path(), "a.kry"), [0, stored]);
    kr_ok(tmp.path(), &["x", "a.kry", "-o", "out"]);
    let got = std::fs::read(tmp.path().join("out/t/f")).unwrap();
    assert!(
        got == content[..stored as usize],
        "restored {} bytes",
        got.len()
    );
}

/// Opens `root/comps[0]/…/comps[n-1]` one component at a time (paths over `PATH_MAX`).
fn open_deep(root: &Path, comps: &[Vec<u8>], create: bool) -> std::os::fd::OwnedFd {
    use rustix::fs::{CWD, Mode, OFlags, mkdirat, openat};
    let dir = OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut fd = openat(CWD, root, dir, Mode::empty()).unwrap();
    for c in comps {
        if create {
            mkdirat(&fd, c.as_slice(), Mode::from_raw_mode(0o755)).unwrap();
        }
        fd = openat(&fd, c.as_slice(), dir, Mode::empty()).unwrap();
    }
    fd
}

#[test]
fn path_longer_than_path_max_round_trips_byte_for_byte() {
    use rustix::fs::{Mode, OFlags, openat};
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("t")).unwrap();
    // 30 components of 200 bytes, one with 0xff and one with a newline: 6036 bytes from `t`.
    let mut comps: Vec<Vec<u8>> = (0..30)
        .map(|i| format!("{i:02}{}", "d".repeat(198)).into_bytes())
        .collect();
    comps[7][20] = 0xff;
    comps[20][5] = b'\n';
    let deepest = open_deep(&tmp.path().join("t"), &comps, true);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC;
    let leaf = openat(&deepest, "leaf", flags, Mode::from_raw_mode(0o640)).unwrap();
    rustix::io::write(&leaf, b"deeper than PATH_MAX").unwrap();
    drop(leaf);
    let mut rel = b"t/".to_vec();
    rel.extend(comps.join(&b'/'));
    rel.extend_from_slice(b"/leaf");
    assert_eq!(rel.len(), 6036);

    kr_ok(tmp.path(), &["c", "a.kry", "t"]);
    let o = kr_ok(tmp.path(), &["l", "--b3", "a.kry"]);
    let mut want = blake3::hash(b"deeper than PATH_MAX")
        .to_hex()
        .as_bytes()
        .to_vec();
    want.splice(0..0, *b"\\");
    want.extend_from_slice(b"  ");
    let escaped: Vec<u8> = rel
        .iter()
        .flat_map(|&c| if c == b'\n' { b"\\n".to_vec() } else { vec![c] })
        .collect();
    want.extend_from_slice(&escaped);
    want.push(b'\n');
    assert!(o.stdout == want, "{}", String::from_utf8_lossy(&o.stdout));
    kr_ok(tmp.path(), &["x", "a.kry", "-o", "out"]);
    let deepest = open_deep(&tmp.path().join("out/t"), &comps, false);
    let leaf = openat(&deepest, "leaf", OFlags::RDONLY, Mode::empty()).unwrap();
    let st = rustix::fs::fstat(&leaf).unwrap();
    assert_eq!(st.st_mode & 0o7777, 0o640);
    let mut buf = [0u8; 64];
    let n = rustix::io::read(&leaf, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"deeper than PATH_MAX");
}
