//! Box key files.
