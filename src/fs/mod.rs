//! The filesystem side of krypta: walking inputs into entries ([`walk`]) with their owner
//! names and extended attributes ([`xattr`]), choosing what goes in ([`select`], with the glob
//! grammar of [`pattern`]), reading file data hole-aware ([`source`]), confined and atomic
//! extraction ([`extract`]) that restores that metadata in a fixed order and what it does with
//! existing names ([`conflict`]), and showing raw path bytes as text ([`names`]). Each module's
//! documentation states its choices.

mod ahead;
mod archive_path;
mod attrs;
pub mod chunked;
pub mod cleanup;
pub mod committer;
pub(crate) mod confine;
pub mod conflict;
mod dirchain;
pub mod extract;
mod extract_options;
mod longpath;
mod loosen;
mod meta;
pub mod names;
mod notes;
mod overlap;
mod owner;
pub mod pattern;
mod restore;
pub mod select;
mod sink;
pub mod source;
pub(crate) mod unnamed;
pub mod walk;
pub mod xattr;

pub use ahead::{walk_ahead, walk_ahead_in};
pub use names::{escape_path, member_name, shown, unescape_path};
