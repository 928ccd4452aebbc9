//! What the fuzz targets that extract what they read share (`delta`, `index_refs`,
//! `salvage`): a scratch directory and a salvaging extraction into it. A module of each of
//! those targets (`mod common;`), not a fuzz target of its own (fuzz/Cargo.toml lists the
//! targets).

use std::path::Path;

use krypta::archive::OpenOptions;

/// Where a run writes its files: `/dev/shm` when there is one (no disk writes), else `/tmp`.
pub fn scratch() -> &'static Path {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() { shm } else { Path::new("/tmp") }
}

/// Extracts all of `file` with salvage on into a fresh directory under [`scratch`], removed
/// when done; the result does not matter, only that it neither panics nor hangs.
pub fn extract_salvaging(file: &Path, open: OpenOptions) {
    let Ok(out) = tempfile::tempdir_in(scratch()) else {
        return;
    };
    let req = krypta::ExtractRequest {
        output: out.path().to_path_buf(),
        paths: vec![],
        wildcards: false,
        stdout: false,
        fs: Default::default(),
        salvage: true,
    };
    let _ = krypta::extract(file, open, req, &mut krypta::Collect::default());
}
