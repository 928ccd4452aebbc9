//! The filesystem side of krypta: walking inputs into entries ([`walk`]) with their owner
//! names and extended attributes ([`xattr`]), reading file data hole-aware ([`source`]),
//! confined and atomic extraction ([`extract`]) that restores that metadata in a fixed order,
//! and showing raw path bytes as text ([`names`]). Each module's documentation states its
//! choices.

mod attrs;
pub mod cleanup;
mod confine;
mod dirchain;
pub mod extract;
mod longpath;
mod meta;
pub mod names;
mod notes;
mod overlap;
mod owner;
mod restore;
mod sink;
pub mod source;
pub mod walk;
pub mod xattr;

pub use names::{escape_path, unescape_path};
