//! crypto

pub mod boxkey;
pub mod pqbox;
