//! How the record feed's faults become errors: whose fault a record that does not parse is
//! (the archive's own, or an unbound base's: docs/FORMAT.md §16.4), and how a content digest
//! that does not match is reported. Split from `feed.rs`, which reads the blocks.

use super::feed::Feed;
use super::*;

impl Feed<'_> {
    pub(super) fn corrupt(&self, problem: &str) -> Error {
        self.corrupt_with(FormatError::invalid("record stream", problem.to_string()))
    }

    /// A record that does not parse or breaks a rule, or record starts that disagree with
    /// their block's header: the archive's own fault ([`Feed::own_corrupt`]), unless the
    /// records came out of a base whose binding could not be checked (a block decoded against
    /// a damaged base's region, or a later block of its group: [`Feed::read_base`]). Then
    /// the base is to blame, as for records that parse but differ from the index
    /// (`records::base_fault`): the delta archive's frames verified, and bytes decoded
    /// against a forged base come out as anything (exit 9, [`BaseError::Records`], not
    /// "authentication failed ... the archive was modified"). A record of a newer format
    /// (`NeedsNewer`) is not a parse failure and stays the archive's own.
    pub(super) fn corrupt_with(&self, e: FormatError) -> Error {
        if !matches!(e, FormatError::NeedsNewer { .. })
            && let Some(base) = self.unbound_base_read()
        {
            return Error::Base(BaseError::Records {
                path: self.ar.path.clone(),
                base: base.path().to_path_buf(),
                problem: e,
                sealed: self.ar.protection.is_sealed(),
            });
        }
        self.own_corrupt(e)
    }

    /// The base the bytes being parsed came out of, when its binding to this archive could
    /// not be checked (a damaged base, docs/FORMAT.md §16.4): None for a bound base (which is
    /// the one the delta was made against), no base, or bytes not decoded against it.
    pub(super) fn unbound_base_read(&self) -> Option<&BaseArchive> {
        self.ar.base_damage.as_ref()?;
        let base = self.ar.base.as_deref()?;
        (self.read_base || self.block_on_base).then_some(base)
    }

    /// [`Feed::corrupt_with`] of the archive's own: a structure that does not parse or
    /// breaks a rule (tampering when the archive is encrypted, its frames having verified).
    pub(super) fn own_corrupt(&self, e: FormatError) -> Error {
        if self.ar.protection.is_sealed() && !matches!(e, FormatError::NeedsNewer { .. }) {
            Error::AuthFailed {
                path: self.ar.path.clone(),
                check: AuthCheck::Structure,
                detail: Some(Box::new(crate::error::Inconsistency {
                    offset: Some(self.ar.pos),
                    problem: e.to_string(),
                })),
            }
        } else {
            corrupt(&self.ar.path, self.ar.pos, e)
        }
    }

    pub(super) fn digest_error(&self, path: &[u8]) -> Error {
        // Escaped as listings name it: the archive's bytes, possibly hostile (a newline forged a
        // line, an escape sequence reached the terminal, invalid UTF-8 read as U+FFFD).
        let p = crate::fs::escape_path(path);
        if self.ar.protection.is_sealed() {
            Error::AuthFailed {
                path: self.ar.path.clone(),
                check: AuthCheck::Structure,
                detail: Some(Box::new(crate::error::Inconsistency {
                    offset: Some(self.ar.pos),
                    problem: format!("the content of {p} does not match its digest (END_DIGEST)"),
                })),
            }
        } else {
            Error::Integrity {
                path: self.ar.path.clone(),
                what: format!("content digest of {p} does not match"),
            }
        }
    }
}
