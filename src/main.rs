//! The `krypta` command-line tool (the CLI is wired in the archive-core work).
fn main() {}
