//! kat
