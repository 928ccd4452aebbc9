//! What the recovery data did while an archive was read, in the words the commands use:
//! the warnings of transparent repair ([`heal_warnings`]) and `test`'s "damaged but
//! repairable" verdict ([`repairable`], exit 7). The repair itself is `store::healing`.

use std::path::Path;

use crate::archive::reader::{Archive, ScanSummary};
use crate::error::{Error, Result};
use crate::fs;
use crate::recovery::RecoveryError;

/// What transparent repair did while `ar` was read (`store::healing`), as warnings: the
/// bytes rebuilt from the recovery data, the segments beyond it, and a recovery section the
/// header announces but that was not found.
pub(crate) fn heal_warnings(ar: &Archive, archive: &Path) -> Vec<String> {
    let name = fs::escape_path(archive.as_os_str().as_encoded_bytes());
    let mut out = Vec::new();
    let Some(r) = ar.source().heal_report() else {
        if ar.header().recovery_percent().is_some() && ar.seekable() {
            out.push(format!(
                "{name}: the header announces recovery data, but none was found (the end of the archive is cut off or damaged): read without it"
            ));
        }
        return out;
    };
    if !r.repaired_segments.is_empty() {
        let segs: Vec<String> = r.repaired_segments.iter().map(u64::to_string).collect();
        out.push(format!(
            "{name}: damaged: rebuilt {} bytes ({} shards) in segment {} from the recovery data; what was read is the archive as written (krypta repair writes a repaired copy)",
            r.rebuilt_bytes(),
            r.rebuilt_shards,
            segs.join(", ")
        ));
    }
    for b in &r.beyond {
        out.push(format!(
            "{name}: {}: read as it is, salvaging what verifies",
            RecoveryError::BeyondRepair {
                segments: vec![b.clone()]
            }
        ));
    }
    for (g, e) in &r.failed {
        out.push(format!(
            "{name}: repairing segment {g} failed: {e}; read as it is"
        ));
    }
    out
}

/// `test`'s verdict after a scan that verified (`s`): [`Error::Repairable`] when anything was
/// rebuilt from the recovery data while reading, or the parts of the section that reading
/// the archive does not touch are damaged; `s` otherwise.
pub(crate) fn repairable(ar: &mut Archive, archive: &Path, s: ScanSummary) -> Result<ScanSummary> {
    // The archive verified; say whether it did only thanks to the recovery data, and check
    // the parts of the recovery data that reading the archive did not touch.
    let (Some(heal), Some(section)) = (ar.source().heal_report(), ar.check_recovery_section())
    else {
        return Ok(s);
    };
    let mut what = Vec::new();
    if heal.rebuilt_shards > 0 {
        what.push(format!(
            "{} bytes of the archive were rebuilt from the recovery data",
            heal.rebuilt_bytes()
        ));
    }
    if section.damaged_recovery_shards > 0 {
        what.push(format!(
            "{} recovery shards are damaged",
            section.damaged_recovery_shards
        ));
    }
    if section.damaged_packets > 0 {
        what.push(format!(
            "{} descriptor packets are damaged",
            section.damaged_packets
        ));
    }
    if section.trailer_damaged {
        what.push("the recovery trailer is damaged".into());
    }
    if section.length_differs {
        what.push("the file's length differs from what the recovery data says".into());
    }
    if what.is_empty() {
        return Ok(s);
    }
    Err(Error::Repairable {
        path: archive.into(),
        what: what.join(", "),
        summary: Box::new(s),
    })
}
