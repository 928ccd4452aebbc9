//! krypta's own golden vectors: regenerating them with the seeded generator reproduces the
//! committed files byte for byte. With `KRYPTA_REGENERATE_VECTORS=1` the files are rewritten
//! instead (review the diff before committing it).

use std::path::PathBuf;

use krypta::kat::golden;

fn vector_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("test-vectors")
}

#[test]
fn regenerating_golden_vectors_reproduces_the_committed_files() {
    let regenerate = std::env::var_os("KRYPTA_REGENERATE_VECTORS").is_some();
    for (file, generate) in golden::FILES {
        let generated = generate().unwrap_or_else(|e| panic!("{file}: generator failed: {e}"));
        let path = vector_dir().join(file);
        if regenerate {
            std::fs::write(&path, &generated).expect("write vector file");
            continue;
        }
        let committed = std::fs::read_to_string(&path).expect("read committed vector file");
        assert!(
            committed == generated,
            "{file} differs from what the generator produces now; if the change is intended, \
             run KRYPTA_REGENERATE_VECTORS=1 cargo test --test kat_golden and commit the diff"
        );
    }
}

#[test]
fn every_golden_file_is_embedded_in_the_binary() {
    for (file, _) in golden::FILES {
        let embedded = krypta::kat::SETS.iter().find(|(name, _)| name == file);
        let committed = std::fs::read_to_string(vector_dir().join(file)).expect("read");
        assert_eq!(
            embedded.map(|(_, text)| *text),
            Some(committed.as_str()),
            "{file}"
        );
    }
}

/// Collects what a scan reports: (path, content) per entry, in stream order.
#[derive(Default)]
struct Collect {
    entries: Vec<(String, Vec<u8>)>,
}

impl krypta::archive::Visitor for Collect {
    fn entry(&mut self, meta: &krypta::format::EntryMeta) -> krypta::Result<()> {
        let path = String::from_utf8_lossy(&meta.path).into_owned();
        self.entries.push((path, Vec::new()));
        Ok(())
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> krypta::Result<()> {
        let (_, content) = self.entries.last_mut().expect("data follows an entry");
        assert_eq!(offset as usize, content.len());
        content.extend_from_slice(bytes);
        Ok(())
    }
    fn end(&mut self, _meta: &krypta::format::EntryMeta, _size: u64) -> krypta::Result<()> {
        Ok(())
    }
    fn abort(&mut self) {
        panic!("a golden archive failed verification");
    }
}

fn field(block: &str, key: &str) -> Option<Vec<u8>> {
    let prefix = format!("{key} = ");
    let line = block.lines().find(|l| l.starts_with(&prefix))?;
    let hex = &line[prefix.len()..];
    Some(
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect(),
    )
}

#[test]
fn golden_archives_read_back_to_their_tree_through_the_reader() {
    let text = std::fs::read_to_string(vector_dir().join("krypta_archive.txt")).expect("read");
    let blocks: Vec<&str> = text
        .split("\n\n")
        .filter(|b| b.contains("archive = "))
        .collect();
    assert_eq!(blocks.len(), 3);
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, block) in blocks.iter().enumerate() {
        let path = dir.path().join(format!("golden-{i}.kry"));
        std::fs::write(&path, field(block, "archive").expect("archive")).expect("write");
        let mut opts = krypta::archive::OpenOptions::default();
        if let Some(key) = field(block, "keyfile_recipient") {
            let key: [u8; 32] = key.try_into().expect("32 bytes");
            opts.identities
                .push(krypta::crypto::stanza::Identity::KeyFile(
                    krypta::crypto::keyfile::SymmetricKey::from_bytes(key),
                ));
        }
        let mut archive = krypta::archive::Archive::open(&path, opts).expect("open");
        let mut seen = Collect::default();
        archive.scan(&mut seen).expect("scan");
        let readme = field(block, "readme").expect("readme");
        let tool = field(block, "tool").expect("tool");
        let expected: Vec<(String, Vec<u8>)> = vec![
            ("bin".into(), vec![]),
            ("bin/tool".into(), tool),
            ("docs".into(), vec![]),
            ("docs/readme.txt".into(), readme),
            ("docs/readme-link.txt".into(), vec![]),
            ("latest".into(), vec![]),
        ];
        assert_eq!(seen.entries, expected, "archive {i}");
    }
}
