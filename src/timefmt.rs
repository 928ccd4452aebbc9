//! Calendar formatting of Unix times in UTC, for listings and key-file comments.

/// Days since 1970-01-01 → (year, month 1..=12, day 1..=31) in the proleptic Gregorian
/// calendar, also before 1970 (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms",
/// `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) for `secs` seconds since the epoch (negative before 1970).
pub fn datetime(secs: i64) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC) for a system time; times before 1970 print as the
/// epoch.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    datetime(secs.min(i64::MAX as u64) as i64).replacen(' ', "T", 1) + "Z"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_before_and_after_1970_and_leap_days() {
        assert_eq!(datetime(0), "1970-01-01 00:00:00");
        assert_eq!(datetime(-1), "1969-12-31 23:59:59");
        assert_eq!(datetime(1_700_000_000), "2023-11-14 22:13:20");
        assert_eq!(datetime(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(
            rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000)),
            "2023-11-14T22:13:20Z"
        );
    }
}
