//! Where the archive writer's bytes go: straight to the caller's writer, or through a
//! [`RecoveryWriter`] that appends Reed–Solomon recovery data after the footer
//! (`WriteOptions::recovery`, `krypta c --recovery PCT`; docs/FORMAT.md §15).
//!
//! The writer owns the recovery layer (rather than each caller wrapping its sink) so that a
//! header announcing a recovery section (flag bit 1, extension 0x0001) is never written
//! without the section: both come from the same option.

use std::io::{self, Write};

use crate::recovery::{RecoveryError, RecoveryWriter, SectionSummary};

/// The writer's output (module doc).
pub(crate) enum Output<W: Write> {
    /// No recovery data.
    Plain(W),
    /// Through the recovery encoder.
    Recovery(Box<RecoveryWriter<W>>),
}

impl<W: Write> Output<W> {
    /// Appends the recovery section, if any, and gives back the caller's writer.
    pub(crate) fn finish(self) -> Result<(W, Option<SectionSummary>), RecoveryError> {
        match self {
            Output::Plain(w) => Ok((w, None)),
            Output::Recovery(r) => {
                let (w, s) = r.finish()?;
                Ok((w, Some(s)))
            }
        }
    }
}

impl<W: Write> Write for Output<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Plain(w) => w.write(buf),
            Output::Recovery(r) => r.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.write_all(buf),
            Output::Recovery(r) => r.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.flush(),
            Output::Recovery(r) => r.flush(),
        }
    }
}
