//! `krypta repair`: what it prints (the work is `krypta::repair`).

use super::args::RepairArgs;
use super::show::hex;
use krypta::Result;

pub(crate) fn repair(a: RepairArgs, quiet: bool) -> Result<u8> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // Each segment repaired at once holds up to 200 MiB (`krypta::recovery`, "Memory"):
    // under a memory limit, as many as fit beside the encoder (at most 256 MiB at 50%).
    let jobs = krypta::memory::limit().map_or(cores, |(limit, _)| {
        let per = 200u64 << 20;
        (limit.saturating_sub(256 << 20) / per).clamp(1, cores as u64) as usize
    });
    if a.check {
        return check(&a, quiet);
    }
    let out = krypta::repair(&a.archive, a.output.as_deref(), a.force, jobs)?;
    if quiet {
        return Ok(0);
    }
    let r = &out.report;
    let params = r.located.layout.params;
    let name = krypta::fs::shown(&a.archive);
    let found = findings(r, out.edit);
    match (&out.written, &out.summary) {
        (None, _) => krypta::to_stderr!(
            "krypta: {name}: intact ({} bytes and their recovery data verified): nothing to repair",
            params.protected_len
        ),
        (Some(w), Some(s)) => {
            let what = if found.is_empty() {
                "intact".to_string()
            } else {
                format!(
                    "found {}; rebuilt {} shard(s) ({} bytes) in {} segment(s) and regenerated the recovery data",
                    found.join(", "),
                    s.rebuilt_shards,
                    s.rebuilt_shards * u64::from(params.shard_size),
                    s.repaired_segments
                )
            };
            krypta::to_stderr!(
                "krypta: {name}: {what}; {} is byte-identical to the archive as first written (BLAKE3 of its {} archive bytes: {})",
                krypta::fs::shown(w),
                params.protected_len,
                hex(&params.blake3)
            );
        }
        (Some(_), None) => {}
    }
    Ok(0)
}

/// `repair --check`: the verdict and its exit code (0 intact, 7 repairable, or its recovery
/// data missing after an archive that ends with its footer, as `t` says it; 5 beyond).
fn check(a: &RepairArgs, quiet: bool) -> Result<u8> {
    let name = krypta::fs::shown(&a.archive);
    let c = match krypta::check_recovery(&a.archive)? {
        krypta::Check::Verified(c) => c,
        krypta::Check::SectionMissing(lost) => {
            if !quiet {
                krypta::to_stderr!(
                    "krypta: {name}: {lost}; its archive bytes are not checked without it (krypta t checks them, with the key when encrypted)"
                );
            }
            return Ok(7);
        }
    };
    let r = &c.report;
    let found = findings(r, c.edit);
    let (code, verdict) = if r.all_intact() && c.edit.is_none() {
        (0, "intact".to_string())
    } else if c.repairable {
        (7, format!("damaged but repairable: {}", found.join(", ")))
    } else if r.repairable() {
        (
            5,
            format!(
                "damaged beyond the recovery data: {}; the checksums that would locate the damage are lost with both descriptor copies, and a repair does not give the archive's stored BLAKE3",
                found.join(", ")
            ),
        )
    } else {
        let beyond: Vec<String> = r
            .beyond_repair()
            .iter()
            .map(|b| {
                format!(
                    "segment {} (bytes {}..{}): {} shards lost, {} recovery shards",
                    b.segment, b.start, b.end, b.erased, b.recovery
                )
            })
            .collect();
        (
            5,
            format!(
                "damaged beyond the recovery data: {} ({})",
                beyond.join("; "),
                found.join(", ")
            ),
        )
    };
    if !quiet {
        krypta::to_stderr!(
            "krypta: {name}: {verdict} ({} archive bytes, recovery data {}%)",
            r.located.layout.params.protected_len,
            r.located.layout.params.percent
        );
    }
    Ok(code)
}

/// What verification found damaged, in words.
fn findings(r: &krypta::recovery::VerifyReport, edit: Option<(u64, i64)>) -> Vec<String> {
    let damaged_data: u64 = r.segments.iter().map(|s| s.damaged_data).sum();
    let damaged_rec: u64 = r.segments.iter().map(|s| s.damaged_recovery).sum();
    let packets = r.damaged_packets[0] + r.damaged_packets[1];
    let mut found = Vec::new();
    // One run of bytes inserted or removed (krypta::recovery::realign), undone first.
    match edit {
        Some((at, n)) if n > 0 => found.push(format!(
            "{n} byte(s) inserted near byte {at} (taken out: what follows is read {n} bytes earlier)"
        )),
        Some((at, n)) => found.push(format!(
            "{} byte(s) missing near byte {at} (what follows is read {} bytes later)",
            -n, -n
        )),
        None => {}
    }
    if damaged_data > 0 {
        found.push(format!("{damaged_data} damaged archive shard(s)"));
    }
    if damaged_rec > 0 {
        found.push(format!(
            "{damaged_rec} damaged or unverifiable recovery shard(s)"
        ));
    }
    if packets > 0 {
        found.push(format!("{packets} damaged descriptor packet(s)"));
    }
    if !r.padding_ok {
        // A file cut short lost its padding; only a whole one can hold other bytes.
        found.push(if r.located.source_len != r.located.layout.file_len {
            "non-zero or missing bytes in the zero padding".into()
        } else {
            "non-zero bytes in the zero padding".into()
        });
    }
    if !r.trailer_ok {
        found.push("a damaged or missing trailer".into());
    }
    if r.located.source_len != r.located.layout.file_len {
        found.push(format!(
            "a length of {} bytes instead of {}",
            r.located.source_len, r.located.layout.file_len
        ));
    }
    found
}
