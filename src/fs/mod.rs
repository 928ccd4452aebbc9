//! The filesystem side of krypta: walking inputs into entries ([`walk`]) and choosing what
//! goes in ([`select`], with the glob grammar of [`pattern`]), reading file data hole-aware
//! ([`source`]), confined and atomic extraction ([`extract`]) and what it does with existing
//! names ([`conflict`]), and showing raw path bytes as text ([`names`]). Each module's documentation states its choices.

pub mod cleanup;
mod confine;
pub mod conflict;
mod dirchain;
pub mod extract;
mod longpath;
mod meta;
pub mod names;
pub mod pattern;
pub mod select;
mod sink;
pub mod source;
pub mod walk;

pub use names::{escape_path, unescape_path};
