//! A file's temporary (unnamed or named) file in its target directory, created in an existing
//! directory the user owns but may not write by opening it up (`super::super::loosen`).

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use super::super::confine::Target;
use super::super::loosen::{self, WRITE};
use super::super::sink::Temp;
use super::super::unnamed;
use super::Extractor;
use crate::{Error, Result};

impl Extractor {
    /// Creates the temporary file of the file `t` (on disk `path`) in its directory `dir`,
    /// with `mode`; finds how unnamed files are linked first if that is not known yet (the
    /// output directory could not be written when the extractor was made).
    pub(super) fn create_temp(
        &mut self,
        dir: &OwnedFd,
        t: &Target<'_>,
        path: &Path,
        mode: u32,
    ) -> Result<(std::fs::File, Temp)> {
        let key = t.parents.join(&b'/');
        let mut linker = self.linker;
        let made = self
            .loosened
            .retry(dir.as_fd(), &key, WRITE, loosen::denied, || {
                let how = match linker {
                    Some(how) => how,
                    None => unnamed::probe(dir.as_fd(), path.parent().unwrap_or(path))
                        .map_err(|e| Error::io(path, "create temporary file", e.into()))?,
                };
                linker = Some(how);
                Temp::create(dir.as_fd(), path, mode, how)
            });
        if made.is_ok() {
            self.linker = linker;
        }
        made
    }
}
