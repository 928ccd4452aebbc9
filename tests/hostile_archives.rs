//! Hostile archives built with the writer API are refused or confined by `krypta x`.

mod common;
