//! Table 14's reading (`delta_report`): the goals per pair, the compute tax against
//! DeltaGlider's, where the write and size goals hold together, and every failure, as
//! sentences from the same run's numbers.

use super::delta_report::{
    GOAL_READ_VS_WHOLE, GOAL_SIZE_VS_ZSTD19, GOAL_WRITE_MBS, Measured, Mode, ModeRow, Outcome,
    SIZE_REFERENCE, Timed,
};
use super::measure::MB;

/// The goals per pair, the compute tax, and every failure, as sentences.
pub(super) fn reading(m: &Measured) -> Vec<String> {
    let mut out: Vec<String> = m.skipped.clone();
    for r in &m.modes {
        if let Outcome::Failed(e) = &r.outcome {
            out.push(format!(
                "{} {} -j {}: {e}",
                r.pair,
                r.mode.name(),
                r.threads
            ));
        }
    }
    for p in &m.peers {
        if let Outcome::Failed(e) = &p.outcome {
            out.push(format!("{} {}: {e}", p.pair, p.tool));
        }
    }
    if !m.delta_built {
        out.push(
            "Goals not measured: the delta modes are not in this build (`krypta c --base`)."
                .to_string(),
        );
        return out;
    }
    let verdict = |ok: bool| if ok { "met" } else { "not met" };
    for (name, ..) in &m.pairs {
        let mode = |mode: Mode, threads: usize| {
            m.modes
                .iter()
                .find(|r| r.pair == *name && r.mode == mode && r.threads == threads)
        };
        let (Some(delta), Some(whole)) = (mode(Mode::Delta, 1), mode(Mode::Whole, 1)) else {
            continue;
        };
        let (Some(d), Some(w)) = (delta.outcome.timed(), whole.outcome.timed()) else {
            continue;
        };
        let write = write_mbs(delta, d);
        let read = d.read_secs / w.read_secs.max(1e-9);
        let size = reference(m, name).map(|z| d.size as f64 / z.size.max(1) as f64);
        let size_text = match size {
            Some(s) => format!(
                "size {s:.2}x {SIZE_REFERENCE} (goal ≤ {GOAL_SIZE_VS_ZSTD19}x: {})",
                verdict(s <= GOAL_SIZE_VS_ZSTD19)
            ),
            None => format!("size not compared ({SIZE_REFERENCE} not measured)"),
        };
        let tax = mode(Mode::Passthrough, 1)
            .and_then(|p| p.outcome.timed())
            .map(|p| {
                format!(
                    "; the delta write runs at {:.0}% of passthrough's speed (DeltaGlider: 8%)",
                    100.0 * p.write_secs / d.write_secs.max(1e-9)
                )
            })
            .unwrap_or_default();
        // A delta read decodes the base's frames as well as the delta's: on c cores no read
        // can take less than its CPU time / c, whatever the threads do. That floor, from
        // this run's own numbers, says whether a read above the goal lost time to CPU or to
        // waiting.
        let floor = if m.cores > 0 && d.read_cpu_secs > 0.0 && w.read_cpu_secs > 0.0 {
            let f = d.read_cpu_secs / m.cores as f64;
            format!(
                " Its read used {:.0} ms of CPU against the whole-file extract's {:.0} ms \
                 ({:.2}x): on {} cores no read can take less than {:.0} ms, {:.2}x the \
                 whole-file extract's time.",
                d.read_cpu_secs * 1e3,
                w.read_cpu_secs * 1e3,
                d.read_cpu_secs / w.read_cpu_secs,
                m.cores,
                f * 1e3,
                f / w.read_secs.max(1e-9)
            )
        } else {
            String::new()
        };
        out.push(format!(
            "{name}, one thread: delta writes {write:.0} MB/s (goal ≥ {GOAL_WRITE_MBS:.0}: {}); \
             {size_text}; restores in {read:.2}x a whole-file extract's time (goal ≤ \
             {GOAL_READ_VS_WHOLE}x: {}){tax}.{floor}",
            verdict(write >= GOAL_WRITE_MBS),
            verdict(read <= GOAL_READ_VS_WHOLE),
        ));
        out.push(both_goals(m, name));
    }
    out
}

/// The size reference's measurement on `pair` (`zstd --patch-from -19`), if it ran.
pub(super) fn reference<'a>(m: &'a Measured, pair: &str) -> Option<&'a Timed> {
    m.peers
        .iter()
        .find(|p| p.pair == pair && p.tool == SIZE_REFERENCE)
        .and_then(|p| p.outcome.timed())
}

/// The write speed of row `r` measured as `d`, MB/s.
fn write_mbs(r: &ModeRow, d: &Timed) -> f64 {
    r.new_len as f64 / MB / d.write_secs.max(1e-9)
}

/// Where on `pair` the write and size goals are met together (one row, one thread count):
/// the default, `-l 6` or `-l 7`, at each thread count measured, each with its read against
/// the whole-file extract at the same thread count and whether that meets the read goal too
/// (session 34: the line judged two of the three goals, and the reads had to be read off the
/// table).
fn both_goals(m: &Measured, pair: &str) -> String {
    let Some(z) = reference(m, pair) else {
        return format!(
            "{pair}: write and size goals together not judged ({SIZE_REFERENCE} not measured)."
        );
    };
    let mut met = Vec::new();
    for (mode, label) in [
        (Mode::Delta, "the default"),
        (Mode::DeltaFast, "-l 6"),
        (Mode::DeltaSmallest, "-l 7"),
    ] {
        for r in m.modes.iter().filter(|r| r.pair == pair && r.mode == mode) {
            let Some(d) = r.outcome.timed() else { continue };
            let write = write_mbs(r, d);
            let size = d.size as f64 / z.size.max(1) as f64;
            if write >= GOAL_WRITE_MBS && size <= GOAL_SIZE_VS_ZSTD19 {
                let threads = if r.threads == 1 { "thread" } else { "threads" };
                let whole = m
                    .modes
                    .iter()
                    .find(|w| w.pair == pair && w.mode == Mode::Whole && w.threads == r.threads)
                    .and_then(|w| w.outcome.timed());
                let read = match whole {
                    Some(w) => {
                        let read = d.read_secs / w.read_secs.max(1e-9);
                        let verdict = if read <= GOAL_READ_VS_WHOLE {
                            "read goal met too"
                        } else {
                            "read goal not met"
                        };
                        format!(", read {read:.2}x: {verdict}")
                    }
                    None => ", read not judged".to_string(),
                };
                met.push(format!(
                    "{label} at {} {threads} ({write:.0} MB/s, {size:.2}x{read})",
                    r.threads
                ));
            }
        }
    }
    if met.is_empty() {
        format!("{pair}: write and size goals together: at no level and thread count measured.")
    } else {
        format!(
            "{pair}: write and size goals together: met by {}.",
            met.join(", ")
        )
    }
}
