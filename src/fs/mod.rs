//! The filesystem side of krypta: walking inputs into entries ([`walk`]), reading file data
//! hole-aware ([`source`]), confined and atomic extraction ([`extract`]), and showing raw path
//! bytes as text ([`names`]). Each module's documentation states its choices.

pub mod cleanup;
mod confine;
mod dirchain;
pub mod extract;
mod longpath;
mod meta;
pub mod names;
mod sink;
pub mod source;
pub mod walk;

pub use names::{escape_path, unescape_path};
