//! The benchmark inputs: five deterministic fixtures (text, source, binary, redundant,
//! random), made from files every Rust toolchain install has, or from a seed.
//!
//! | fixture | bytes | made from |
//! |---|---|---|
//! | `text` | 10,000,000 | the Rust books and std docs shipped with the toolchain's `rust-docs` (HTML, tags stripped) |
//! | `source` | 10,000,000 | the `.rs` files of the crates pinned in krypta's `Cargo.lock`, from the cargo registry |
//! | `binary` | 10,000,000 | x86-64 code of the toolchain's `librustc_driver-*.so` |
//! | `redundant` | 10,000,000 | seeded, highly repetitive log lines |
//! | `random` | 5,000,000 | BLAKE3 XOF output of a fixed seed |
//!
//! See `fixtures/README.md` for the details and how to reproduce them.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::codec::{Filter, detect_filter};
use crate::error::{Error, Result};

pub use super::elf::{exec_segment, program_headers};
pub use super::synth::{RANDOM_SEED, random, redundant};

/// Size of the `text`, `source`, `binary` and `redundant` fixtures, bytes.
pub const FIXTURE_LEN: usize = 10_000_000;
/// Size of the `random` fixture, bytes.
pub const RANDOM_LEN: usize = 5_000_000;
/// Fixture names, in table order.
pub const NAMES: [&str; 5] = ["text", "source", "binary", "redundant", "random"];
/// The file `make_fixtures` writes next to the fixtures: name, bytes, BLAKE3, origin.
pub const MANIFEST: &str = "MANIFEST.txt";

/// The Cargo.lock krypta was built with: it pins the crates whose sources make `source`.
const CARGO_LOCK: &str = include_str!("../../Cargo.lock");
/// The books (under `share/doc/rust/html/`) whose text makes `text`, in order.
const BOOKS: [&str; 13] = [
    "book",
    "reference",
    "nomicon",
    "edition-guide",
    "embedded-book",
    "cargo",
    "rustc",
    "rustdoc",
    "style-guide",
    "unstable-book",
    "error_codes",
    "rust-by-example",
    "std",
];

/// One benchmark input, in memory.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// Name (`text`, …, or a user file's name).
    pub name: String,
    /// Content.
    pub data: Vec<u8>,
    /// Where it came from, one line.
    pub origin: String,
    /// The BCJ filter krypta's auto-detection picks for it.
    pub filter: Filter,
}

impl Fixture {
    fn new(name: &str, data: Vec<u8>, origin: String) -> Fixture {
        let filter = detect_filter(&data);
        Fixture {
            name: name.to_string(),
            data,
            origin,
            filter,
        }
    }

    /// The first `len` bytes (all when shorter), keeping name, origin and filter.
    pub fn truncated(&self, len: usize) -> Fixture {
        Fixture {
            name: self.name.clone(),
            data: self.data[..len.min(self.data.len())].to_vec(),
            origin: self.origin.clone(),
            filter: self.filter,
        }
    }
}

/// Writes the five fixtures and `MANIFEST.txt` into `dir` (created if missing).
/// Errors: Io naming the file; Usage naming each fixture whose toolchain input is missing
/// (the others are still written).
pub fn make_fixtures(dir: &Path, progress: &mut dyn FnMut(&str)) -> Result<()> {
    let skipped = write_fixtures(dir, progress)?;
    if skipped.is_empty() {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "some fixtures could not be made: {}",
            skipped.join("; ")
        )))
    }
}

/// Writes the fixtures that can be made, and the manifest; returns one line per fixture that
/// could not be made.
fn write_fixtures(dir: &Path, progress: &mut dyn FnMut(&str)) -> Result<Vec<String>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create", e))?;
    let (fixtures, skipped) = generate(progress);
    let mut manifest = String::from("# name  bytes  blake3  origin\n");
    for f in &fixtures {
        let path = dir.join(&f.name);
        std::fs::write(&path, &f.data).map_err(|e| Error::io(&path, "write", e))?;
        manifest.push_str(&format!(
            "{}  {}  {}  {}\n",
            f.name,
            f.data.len(),
            blake3::hash(&f.data).to_hex(),
            f.origin
        ));
    }
    for s in &skipped {
        manifest.push_str(&format!("# {s}\n"));
    }
    let path = dir.join(MANIFEST);
    std::fs::write(&path, manifest).map_err(|e| Error::io(&path, "write", e))?;
    progress(&format!("fixtures written to {}", dir.display()));
    Ok(skipped)
}

/// The fixtures, and one line per fixture that could not be made: read from `dir` when it
/// holds all five (origins from its manifest), made there first when it does not, or made
/// in memory when `dir` is None. A fixture whose toolchain input is missing (no `rust-docs`,
/// no cargo registry) is left out and named, so the other tables still run.
pub fn load_fixtures(
    dir: Option<&Path>,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<Fixture>, Vec<String>)> {
    let Some(dir) = dir else {
        return Ok(generate(progress));
    };
    let skipped = if NAMES.iter().all(|n| dir.join(n).is_file()) {
        Vec::new()
    } else {
        write_fixtures(dir, progress)?
    };
    let manifest = std::fs::read_to_string(dir.join(MANIFEST)).unwrap_or_default();
    let fixtures = NAMES
        .iter()
        .filter(|name| dir.join(name).is_file())
        .map(|name| {
            let path = dir.join(name);
            let data = std::fs::read(&path).map_err(|e| Error::io(&path, "read", e))?;
            let origin = manifest
                .lines()
                .find_map(|l| {
                    let mut parts = l.splitn(4, "  ");
                    (parts.next() == Some(name)).then(|| parts.nth(2).unwrap_or("").to_string())
                })
                .unwrap_or_else(|| format!("read from {}", path.display()));
            Ok(Fixture::new(name, data, origin))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((fixtures, skipped))
}

/// A user's file as a fixture (table 1 on `krypta bench FILE...`).
pub fn user_file(path: &Path) -> Result<Fixture> {
    let data = std::fs::read(path).map_err(|e| Error::io(path, "read", e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    Ok(Fixture::new(
        &name,
        data,
        format!("{} (user file)", path.display()),
    ))
}

/// Makes the five fixtures in memory; returns those made and one line per fixture that
/// could not be made (its toolchain input is missing).
pub fn generate(progress: &mut dyn FnMut(&str)) -> (Vec<Fixture>, Vec<String>) {
    let mut made = Vec::new();
    let mut skipped = Vec::new();
    progress("fixtures: locating the Rust toolchain");
    match sysroot() {
        Ok(sysroot) => {
            progress("fixtures: text");
            keep(text(&sysroot), "text", &mut made, &mut skipped);
            progress("fixtures: source");
            keep(source(), "source", &mut made, &mut skipped);
            progress("fixtures: binary");
            keep(binary(&sysroot), "binary", &mut made, &mut skipped);
        }
        Err(e) => skipped.push(format!("text, source, binary: not made: {e}")),
    }
    made.push(Fixture::new(
        "redundant",
        redundant(FIXTURE_LEN),
        format!("{FIXTURE_LEN} bytes of seeded log lines (8 templates, counters), generated"),
    ));
    made.push(Fixture::new(
        "random",
        random(RANDOM_LEN),
        format!("{RANDOM_LEN} bytes of BLAKE3 XOF output of the seed {RANDOM_SEED:?}"),
    ));
    (made, skipped)
}

fn keep(r: Result<Fixture>, name: &str, made: &mut Vec<Fixture>, skipped: &mut Vec<String>) {
    match r {
        Ok(f) => made.push(f),
        Err(e) => skipped.push(format!("{name}: not made: {e}")),
    }
}

/// The active toolchain's sysroot (`rustc --print sysroot`, else the first rustup toolchain).
fn sysroot() -> Result<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    if let Ok(out) = std::process::Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        && out.status.success()
    {
        let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !s.is_empty() {
            return Ok(PathBuf::from(s));
        }
    }
    let home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")));
    let mut found: Vec<PathBuf> = home
        .and_then(|h| std::fs::read_dir(h.join("toolchains")).ok())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    found.sort();
    found.into_iter().next().ok_or_else(|| {
        Error::Usage("fixtures need a Rust toolchain (rustc --print sysroot failed)".into())
    })
}

/// All files under `dir` with extension `ext`, sorted by path.
fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

fn text(sysroot: &Path) -> Result<Fixture> {
    let html = sysroot.join("share/doc/rust/html");
    let mut out = Vec::with_capacity(FIXTURE_LEN);
    let mut pages = 0usize;
    'books: for book in BOOKS {
        let root = html.join(book);
        for page in files_with_ext(&root, "html") {
            let name = page.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if matches!(name, "print.html" | "toc.html" | "404.html")
                || page
                    .strip_prefix(&root)
                    .ok()
                    .and_then(|r| r.components().next())
                    .and_then(|c| c.as_os_str().to_str())
                    .is_some_and(is_skipped_dir)
            {
                continue;
            }
            let Ok(bytes) = std::fs::read(&page) else {
                continue;
            };
            let body = strip_html(&String::from_utf8_lossy(&bytes));
            if body.len() < 200 {
                continue; // redirect stubs
            }
            out.extend_from_slice(body.as_bytes());
            out.push(b'\n');
            pages += 1;
            if out.len() >= FIXTURE_LEN {
                break 'books;
            }
        }
    }
    if out.len() < FIXTURE_LEN {
        return Err(Error::Usage(format!(
            "the text fixture needs the rust-docs component ({} holds only {} bytes of text; \
             run `rustup component add rust-docs`)",
            html.display(),
            out.len()
        )));
    }
    out.truncate(FIXTURE_LEN);
    Ok(Fixture::new(
        "text",
        out,
        format!(
            "{FIXTURE_LEN} bytes: text of {pages} pages of the Rust books in {} ({}), HTML tags \
             stripped, in path order",
            html.display(),
            BOOKS.join(", ")
        ),
    ))
}

/// Book subdirectories left out of `text`: old-edition redirect stubs and translations
/// (`es`, `ja`, `zh-CN`, …), so the fixture is one language's prose.
fn is_skipped_dir(first: &str) -> bool {
    const SKIPPED: [&str; 21] = [
        "2018-edition",
        "first-edition",
        "second-edition",
        "de",
        "es",
        "fa",
        "fr",
        "id",
        "it",
        "ja",
        "ko",
        "pl",
        "pt-BR",
        "ru",
        "tr",
        "uk",
        "vi",
        "zh",
        "zh-CN",
        "zh-TW",
        "zh-Hans",
    ];
    SKIPPED.contains(&first)
}

/// The text inside `<main>` (the whole page when absent), without tags, scripts or styles,
/// with the common entities decoded and blank lines collapsed.
pub fn strip_html(page: &str) -> String {
    let body = match (page.find("<main"), page.rfind("</main>")) {
        (Some(a), Some(b)) if a < b => &page[a..b],
        _ => page,
    };
    let mut text = String::with_capacity(body.len() / 2);
    let mut rest = body;
    while let Some(lt) = rest.find('<') {
        text.push_str(&rest[..lt]);
        rest = &rest[lt..];
        let skip_to = if rest.starts_with("<script") {
            rest.find("</script>").map(|i| i + 9)
        } else if rest.starts_with("<style") {
            rest.find("</style>").map(|i| i + 8)
        } else {
            rest.find('>').map(|i| i + 1)
        };
        rest = &rest[skip_to.unwrap_or(rest.len())..];
    }
    text.push_str(rest);
    let decoded = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    let mut out = String::with_capacity(decoded.len());
    let mut blank = 0;
    for line in decoded.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

/// (name, version) of the registry packages in `lock`, sorted, without generated Windows
/// bindings (`windows*`, `winapi*`).
pub fn locked_crates(lock: &str) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for pkg in lock.split("[[package]]").skip(1) {
        let field = |k: &str| {
            pkg.lines()
                .find_map(|l| l.strip_prefix(k)?.trim().strip_prefix("= \""))
                .map(|s| s.trim_end_matches('"').to_string())
        };
        let (Some(name), Some(version), Some(source)) =
            (field("name "), field("version "), field("source "))
        else {
            continue;
        };
        if source.starts_with("registry+") && !name.starts_with("win") {
            v.push((name, version));
        }
    }
    v.sort();
    v
}

fn source() -> Result<Fixture> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or_else(|| Error::Usage("the source fixture needs CARGO_HOME or HOME".into()))?;
    let mut indexes: Vec<PathBuf> = std::fs::read_dir(cargo_home.join("registry/src"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    indexes.sort();
    let mut out = Vec::with_capacity(FIXTURE_LEN + 4096);
    let mut used = 0usize;
    let mut missing = 0usize;
    'crates: for (name, version) in locked_crates(CARGO_LOCK) {
        let dir_name = format!("{name}-{version}");
        let Some(dir) = indexes
            .iter()
            .map(|i| i.join(&dir_name))
            .find(|d| d.is_dir())
        else {
            missing += 1;
            continue;
        };
        used += 1;
        for file in files_with_ext(&dir, "rs") {
            let Ok(bytes) = std::fs::read(&file) else {
                continue;
            };
            let rel = file.strip_prefix(&dir).unwrap_or(&file);
            out.extend_from_slice(format!("// {dir_name}/{}\n", rel.display()).as_bytes());
            out.extend_from_slice(&bytes);
            if out.len() >= FIXTURE_LEN {
                break 'crates;
            }
        }
    }
    if out.len() < FIXTURE_LEN {
        return Err(Error::Usage(format!(
            "the source fixture needs the crates of Cargo.lock in {} (run `cargo fetch`): \
             found {used}, missing {missing}, {} bytes",
            cargo_home.join("registry/src").display(),
            out.len()
        )));
    }
    out.truncate(FIXTURE_LEN);
    Ok(Fixture::new(
        "source",
        out,
        format!(
            "{FIXTURE_LEN} bytes: the .rs files of the first {used} registry crates of krypta's \
             Cargo.lock (sorted by name; windows*/winapi* bindings skipped), each after a \
             `// crate/path` line, from {}",
            cargo_home.join("registry/src").display()
        ),
    ))
}

fn binary(sysroot: &Path) -> Result<Fixture> {
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(sysroot.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("librustc_driver") && n.ends_with(".so"))
        })
        .collect();
    candidates.sort();
    let path = candidates.into_iter().next().ok_or_else(|| {
        Error::Usage(format!(
            "the binary fixture needs {}/lib/librustc_driver-*.so",
            sysroot.display()
        ))
    })?;
    let mut f = std::fs::File::open(&path).map_err(|e| Error::io(&path, "open", e))?;
    const EHDR: usize = 64;
    let mut head = [0u8; EHDR];
    f.read_exact(&mut head)
        .map_err(|e| Error::io(&path, "read", e))?;
    let segment = program_headers(&head).and_then(|(phoff, len, entsize)| {
        let mut phdrs = vec![0u8; len];
        f.seek(SeekFrom::Start(phoff)).ok()?;
        f.read_exact(&mut phdrs).ok()?;
        exec_segment(&phdrs, entsize)
    });
    let (offset, size) = segment
        .filter(|&(_, size)| size >= FIXTURE_LEN as u64)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{} has no executable segment of {FIXTURE_LEN} bytes",
                path.display()
            ))
        })?;
    let mut out = head.to_vec();
    let start = out.len();
    out.resize(FIXTURE_LEN, 0);
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::io(&path, "seek", e))?;
    f.read_exact(&mut out[start..])
        .map_err(|e| Error::io(&path, "read", e))?;
    Ok(Fixture::new(
        "binary",
        out,
        format!(
            "{FIXTURE_LEN} bytes: the 64-byte ELF header of {} (x86-64, so BCJ auto-detection \
             sees an executable) then the first bytes of its executable segment (offset {offset}, \
             {size} bytes of machine code)",
            path.display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_html_keeps_main_text_and_decodes_entities() {
        let page = "<html><nav>menu</nav><main><h1>Title</h1>\n<script>x()</script>\
                    <p>a &lt;b&gt; &amp; c</p>\n\n\n<p>d</p></main><footer>f</footer></html>";
        assert_eq!(strip_html(page), "Title\na <b> & c\n\nd");
    }

    #[test]
    fn translations_and_old_editions_are_left_out_of_text() {
        for d in ["ja", "zh-CN", "2018-edition", "second-edition"] {
            assert!(is_skipped_dir(d), "{d}");
        }
        for d in ["ch01-00-getting-started.html", "std", "attributes", "fn"] {
            assert!(!is_skipped_dir(d), "{d}");
        }
    }

    #[test]
    fn locked_crates_lists_registry_packages_without_windows_bindings() {
        let lock = "[[package]]\nname = \"zstd\"\nversion = \"0.13.3\"\nsource = \"registry+https://x\"\n\
                    [[package]]\nname = \"krypta\"\nversion = \"0.1.0\"\n\
                    [[package]]\nname = \"windows-sys\"\nversion = \"0.61.2\"\nsource = \"registry+https://x\"\n\
                    [[package]]\nname = \"aes\"\nversion = \"0.9.0\"\nsource = \"registry+https://x\"\n";
        assert_eq!(
            locked_crates(lock),
            vec![
                ("aes".to_string(), "0.9.0".to_string()),
                ("zstd".to_string(), "0.13.3".to_string())
            ]
        );
    }
}
