//! Sizes as users type them on the command line (`-b 4M`, `--kdf-memory 1GiB`): the one
//! parser every size option goes through.
//!
//! Decision (README, `--help`): a number, optionally with a fraction (`1.5G`), then a unit.
//! - `K`, `M`, `G`, `T` alone, in either case (`512k`, `4M`), and the IEC forms `Ki`, `Mi`,
//!   `Gi`, `Ti` and `KiB`, `MiB`, `GiB`, `TiB` are binary: powers of 1024. A bare letter is
//!   binary because that is what `tar`, `zstd`, `dd` and every krypta release so far meant by
//!   `-b 4M`.
//! - `kB`/`KB`, `MB`, `GB`, `TB` are decimal (SI): powers of 1000, as disk vendors and `df -H`
//!   count. `4MB` is 4,000,000 bytes.
//! - `B` alone is bytes. A plain number is in the option's own unit: bytes for `-b`, MiB for
//!   `--kdf-memory` (so scripts written for earlier releases keep working).
//! - The value must come out as a whole number of bytes (`1.5K` is 1536; `1.3K` is refused,
//!   it is 1331.2 bytes), and must fit in 64 bits. Spaces between number and unit are allowed.

use krypta::{Error, Result};

/// Parses `s` as a byte count; a number without a unit is multiplied by `plain_unit`.
pub fn parse_size_in(s: &str, plain_unit: u64) -> Result<u64> {
    let bad = |why: &str| Error::Usage(format!("bad size '{s}': {why}"));
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim_start());
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') || num.matches('.').count() > 1
    {
        return Err(bad("expected a number such as 4M, 512k, 1.5GiB or 4000000"));
    }
    let mul: u64 = match unit {
        "" => plain_unit,
        "B" | "b" => 1,
        "K" | "k" | "Ki" | "KiB" | "ki" | "kiB" => 1 << 10,
        "M" | "m" | "Mi" | "MiB" => 1 << 20,
        "G" | "g" | "Gi" | "GiB" => 1 << 30,
        "T" | "t" | "Ti" | "TiB" => 1 << 40,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => {
            return Err(bad(
                "unknown unit (K, M, G, T and KiB, MiB, GiB, TiB are powers of 1024; kB, MB, GB, TB powers of 1000)",
            ));
        }
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let too_large = || Error::Usage(format!("size '{s}' is too large"));
    let int: u128 = int.parse().map_err(|_| too_large())?;
    // The fraction as numerator / 10^digits, computed exactly in 128 bits.
    if frac.len() > 18 {
        return Err(bad("too many decimal places"));
    }
    let frac_num: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| bad("bad fraction"))?
    };
    let frac_den: u128 = 10u128.pow(frac.len() as u32);
    let whole = int.checked_mul(u128::from(mul)).ok_or_else(too_large)?;
    let part = frac_num * u128::from(mul);
    if !part.is_multiple_of(frac_den) {
        return Err(bad("not a whole number of bytes"));
    }
    let total = whole + part / frac_den;
    u64::try_from(total).map_err(|_| too_large())
}

/// Parses a size in bytes (plain numbers are bytes) into a `usize`.
pub fn parse_size(s: &str) -> Result<usize> {
    let n = parse_size_in(s, 1)?;
    usize::try_from(n).map_err(|_| Error::Usage(format!("size '{s}' is too large")))
}

/// Human-readable bytes for summaries: `512 B`, `4.0 KiB`, `117.2 MiB` (powers of 1024, one
/// decimal).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_letters_and_iec_units_are_binary() {
        assert_eq!(parse_size("4M").unwrap(), 4 << 20);
        assert_eq!(parse_size("4m").unwrap(), 4 << 20);
        assert_eq!(parse_size("4Mi").unwrap(), 4 << 20);
        assert_eq!(parse_size("4MiB").unwrap(), 4 << 20);
        assert_eq!(parse_size("512k").unwrap(), 512 << 10);
        assert_eq!(parse_size("512K").unwrap(), 512 << 10);
        assert_eq!(parse_size("512KiB").unwrap(), 512 << 10);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("1T").unwrap(), 1 << 40);
    }

    #[test]
    fn si_units_are_decimal() {
        assert_eq!(parse_size("4MB").unwrap(), 4_000_000);
        assert_eq!(parse_size("512kB").unwrap(), 512_000);
        assert_eq!(parse_size("512KB").unwrap(), 512_000);
        assert_eq!(parse_size("3GB").unwrap(), 3_000_000_000);
        assert_eq!(parse_size("1TB").unwrap(), 1_000_000_000_000);
    }

    #[test]
    fn plain_numbers_bytes_spaces_and_fractions() {
        assert_eq!(parse_size("65536").unwrap(), 65536);
        assert_eq!(parse_size("65536B").unwrap(), 65536);
        assert_eq!(parse_size(" 4 M ").unwrap(), 4 << 20);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert_eq!(parse_size("1.5MB").unwrap(), 1_500_000);
        assert_eq!(parse_size("0.5M").unwrap(), 512 << 10);
        assert_eq!(parse_size_in("256", 1 << 20).unwrap(), 256 << 20);
        assert_eq!(parse_size_in("1G", 1 << 20).unwrap(), 1 << 30);
    }

    #[test]
    fn bad_sizes_are_refused_with_the_reason() {
        let msg = |s: &str| parse_size(s).unwrap_err().to_string();
        assert_eq!(msg("1.3K"), "bad size '1.3K': not a whole number of bytes");
        assert!(
            msg("4X").starts_with("bad size '4X': unknown unit"),
            "{}",
            msg("4X")
        );
        assert!(msg("4Mb").starts_with("bad size '4Mb': unknown unit"));
        assert_eq!(
            msg("M"),
            "bad size 'M': expected a number such as 4M, 512k, 1.5GiB or 4000000"
        );
        assert!(msg("").starts_with("bad size '': expected a number"));
        assert!(msg("1..5M").starts_with("bad size '1..5M': expected a number"));
        assert!(msg("-4M").starts_with("bad size '-4M': expected a number"));
        assert_eq!(msg("20000000T"), "size '20000000T' is too large");
        assert_eq!(
            msg("99999999999999999999999999999999999999999"),
            "size '99999999999999999999999999999999999999999' is too large"
        );
    }

    #[test]
    fn human_bytes_uses_binary_units_with_one_decimal() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(120_000), "117.2 KiB");
        assert_eq!(human_bytes(5 << 30), "5.0 GiB");
    }
}
