//! The command-line definitions of the commands that read an archive and print what it
//! holds, `list`, `test` and `info` (split from `args.rs`, which holds the rest and the
//! shared option groups).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use super::args::{BaseArgs, Common, KeyArgs, StoreArgs};

#[derive(Args, Debug)]
pub(crate) struct ListArgs {
    /// Archive to read (- = stdin, s3://BUCKET/KEY = an object)
    pub(crate) archive: PathBuf,
    /// Only these paths (and what is below them); globs with --wildcards
    pub(crate) paths: Vec<OsString>,
    /// PATHs are glob patterns (as x --wildcards)
    #[arg(long)]
    pub(crate) wildcards: bool,
    /// Take PATHs byte for byte (default: as `l` prints names, a\nb = a newline)
    #[arg(long, conflicts_with = "wildcards")]
    pub(crate) no_unquote: bool,
    /// Long listing: owner, stored (compressed) size and ratio per entry (with -v: and the
    /// blocks each spans)
    #[arg(short = 'l', long, conflicts_with_all = ["b3", "json"])]
    pub(crate) long: bool,
    /// Owners as numeric ids (default: the user and group names the archive stores)
    #[arg(long)]
    pub(crate) numeric_owner: bool,
    /// One JSON object per entry and line (schema: docs/JSON.md)
    #[arg(long, conflicts_with = "b3")]
    pub(crate) json: bool,
    /// Times in UTC (default: local time, TZ honoured, with the zone offset)
    #[arg(long)]
    pub(crate) utc: bool,
    /// Print `BLAKE3  path` lines that `b3sum --check` accepts
    #[arg(long)]
    pub(crate) b3: bool,
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
    #[command(flatten)]
    pub(crate) delta: BaseArgs,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct TestArgs {
    /// Archive to read (- = stdin, s3://BUCKET/KEY = an object)
    pub(crate) archive: PathBuf,
    /// Print the result as one JSON object on stdout (schema: docs/JSON.md)
    #[arg(long)]
    pub(crate) json: bool,
    /// Stop at the first damaged frame or entry instead of verifying everything else
    #[arg(long)]
    pub(crate) fail_fast: bool,
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
    #[command(flatten)]
    pub(crate) delta: BaseArgs,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct InfoArgs {
    /// Archive to read (- = stdin, s3://BUCKET/KEY = an object)
    pub(crate) archive: PathBuf,
    /// Print the facts as one JSON object (schema: docs/JSON.md)
    #[arg(long)]
    pub(crate) json: bool,
    /// The creation time in UTC (default: local time with the zone offset)
    #[arg(long)]
    pub(crate) utc: bool,
    #[command(flatten)]
    pub(crate) storage: StoreArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}
