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
