//! Times as `list`, `info` and the JSON output show them, and durations for summaries.
//!
//! Decision: listings show local time with its numeric UTC offset, `2023-11-14 23:13:20
//! +0100`, so a time read off a listing is unambiguous across machines and daylight-saving
//! changes; `--utc` shows `+0000`. The zone is the system's as `jiff` finds it, honouring
//! `TZ` (an IANA name such as `Europe/Berlin`, a POSIX rule such as `CET-1CEST,M3.5.0,
//! M10.5.0/3`, or `:path`), else `/etc/localtime`, else UTC. JSON always carries UTC
//! (RFC 3339 with a `Z`), so scripts never depend on the zone of the machine that listed.

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// Which zone listings use.
#[derive(Debug, Clone)]
pub struct Clock {
    tz: TimeZone,
}

impl Clock {
    /// The local zone (`TZ` honoured), or UTC when `utc`.
    pub fn new(utc: bool) -> Clock {
        let tz = if utc {
            TimeZone::UTC
        } else {
            TimeZone::try_system().unwrap_or(TimeZone::UTC)
        };
        Clock { tz }
    }

    /// `YYYY-MM-DD HH:MM:SS ±hhmm` for `secs` since the epoch (also before 1970); a time
    /// outside what the calendar library holds (years beyond ±9999) prints in UTC with the
    /// plain formatter.
    pub fn show(&self, secs: i64) -> String {
        match Timestamp::from_second(secs) {
            Ok(t) => t
                .to_zoned(self.tz.clone())
                .strftime("%Y-%m-%d %H:%M:%S %z")
                .to_string(),
            Err(_) => format!("{} +0000", krypta::timefmt::datetime(secs)),
        }
    }
}

/// RFC 3339 in UTC with the nanoseconds when there are any: `2023-11-14T22:13:20Z`,
/// `2023-11-14T22:13:20.000000500Z` (for JSON).
pub fn rfc3339_utc(secs: i64, nanos: u32) -> String {
    let base = krypta::timefmt::datetime(secs).replacen(' ', "T", 1);
    if nanos == 0 {
        format!("{base}Z")
    } else {
        format!("{base}.{nanos:09}Z")
    }
}

/// A duration for summaries: `0.12 s`, `12.3 s`, `4m 05s`, `2h 03m`.
pub fn duration(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.2} s")
    } else if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        let t = d.as_secs();
        format!("{}m {:02}s", t / 60, t % 60)
    } else {
        let t = d.as_secs();
        format!("{}h {:02}m", t / 3600, t % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_listing_times_and_rfc3339() {
        let c = Clock::new(true);
        assert_eq!(c.show(0), "1970-01-01 00:00:00 +0000");
        assert_eq!(c.show(-1), "1969-12-31 23:59:59 +0000");
        assert_eq!(c.show(1_700_000_000), "2023-11-14 22:13:20 +0000");
        assert_eq!(
            c.show(i64::MAX),
            format!("{} +0000", krypta::timefmt::datetime(i64::MAX))
        );
        assert_eq!(rfc3339_utc(1_700_000_000, 0), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339_utc(-1, 5), "1969-12-31T23:59:59.000000005Z");
    }

    #[test]
    fn posix_and_iana_zones_show_their_offsets() {
        let posix = Clock {
            tz: TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap(),
        };
        assert_eq!(posix.show(1_700_000_000), "2023-11-14 23:13:20 +0100");
        assert_eq!(posix.show(1_690_000_000), "2023-07-22 06:26:40 +0200");
        if let Ok(ny) = TimeZone::get("America/New_York") {
            let ny = Clock { tz: ny };
            assert_eq!(ny.show(1_700_000_000), "2023-11-14 17:13:20 -0500");
        }
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(Duration::from_millis(120)), "0.12 s");
        assert_eq!(duration(Duration::from_millis(12_340)), "12.3 s");
        assert_eq!(duration(Duration::from_secs(245)), "4m 05s");
        assert_eq!(duration(Duration::from_secs(7380)), "2h 03m");
    }
}
