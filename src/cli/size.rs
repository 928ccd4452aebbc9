//! Sizes as users type them on the command line (`-b 4M`).

use krypta::{Error, Result};

/// Parses a size like `4M`, `512K`, `1G` or a plain byte count (binary units).
pub fn parse_size(s: &str) -> Result<usize> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: usize = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => {
                    return Err(Error::Usage(format!(
                        "bad size '{s}': use a number with K, M or G"
                    )));
                }
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let n: usize = num
        .trim_end_matches(['i', 'I'])
        .parse()
        .map_err(|_| Error::Usage(format!("bad size '{s}'")))?;
    n.checked_mul(mul)
        .ok_or_else(|| Error::Usage(format!("size '{s}' is too large")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("4M").unwrap(), 4 << 20);
        assert_eq!(parse_size("512k").unwrap(), 512 << 10);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("65536").unwrap(), 65536);
        assert!(parse_size("4X").is_err());
        assert!(parse_size("M").is_err());
    }
}
