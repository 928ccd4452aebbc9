//! The parser of known-answer vector files (grammar in the `kat` module doc) and typed access
//! to their fields.

use super::KatError;

/// One block of `key = value` lines: the `[set]` header or one vector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// 1-based line number of the block's first line, for messages.
    pub line: usize,
    /// The fields in file order; keys are unique within a block.
    pub fields: Vec<(String, String)>,
}

/// A parsed vector file: its `[set]` header block and its vector blocks, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorFile {
    /// The header (`name`, `kind`, `source`, `section`, `licence`, `cite`, and per-kind
    /// parameters).
    pub header: Block,
    /// The vectors.
    pub vectors: Vec<Block>,
}

/// Largest value accepted in a vector file, characters (a hex value of 512 KiB). Files are read
/// whole (at most [`MAX_FILE_LEN`]), so this only keeps single values sane.
const MAX_VALUE_LEN: usize = 1 << 20;
/// Largest vector file accepted, bytes (the committed files are all under 1 MiB).
pub const MAX_FILE_LEN: usize = 4 << 20;

/// Parses a whole vector file. The first block must open with the line `[set]`; comment lines
/// start with `#`; blocks are separated by one or more blank lines; every other line is
/// `key = value` (value may be empty), with unique keys per block.
pub fn parse_file(text: &str) -> Result<VectorFile, KatError> {
    if text.len() > MAX_FILE_LEN {
        return Err(KatError::TooLarge {
            what: "file",
            len: text.len(),
            limit: MAX_FILE_LEN,
        });
    }
    let mut blocks: Vec<Block> = Vec::new();
    let mut current: Option<Block> = None;
    let mut header_seen = false;
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            if let Some(block) = current.take() {
                blocks.push(block);
            }
            continue;
        }
        if line == "[set]" {
            if header_seen || !blocks.is_empty() || current.is_some() {
                return Err(KatError::Syntax {
                    line: line_no,
                    problem: "[set] must open the first block, once",
                });
            }
            header_seen = true;
            current = Some(Block {
                line: line_no,
                fields: Vec::new(),
            });
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(KatError::Syntax {
                line: line_no,
                problem: "expected `key = value`",
            });
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() {
            return Err(KatError::Syntax {
                line: line_no,
                problem: "empty key",
            });
        }
        if value.len() > MAX_VALUE_LEN {
            return Err(KatError::TooLarge {
                what: "value",
                len: value.len(),
                limit: MAX_VALUE_LEN,
            });
        }
        let block = current.get_or_insert_with(|| Block {
            line: line_no,
            fields: Vec::new(),
        });
        if block.fields.iter().any(|(k, _)| k == key) {
            return Err(KatError::Syntax {
                line: line_no,
                problem: "duplicate key in block",
            });
        }
        block.fields.push((key.to_string(), value.to_string()));
    }
    if let Some(block) = current.take() {
        blocks.push(block);
    }
    if !header_seen {
        return Err(KatError::Syntax {
            line: 1,
            problem: "the file must start with a [set] block",
        });
    }
    let mut iter = blocks.into_iter();
    let header = iter.next().ok_or(KatError::Syntax {
        line: 1,
        problem: "the file must start with a [set] block",
    })?;
    Ok(VectorFile {
        header,
        vectors: iter.collect(),
    })
}

impl Block {
    /// The raw value of `key`, if present.
    pub fn opt(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The raw value of `key`; [`KatError::Missing`] when absent.
    pub fn text(&self, key: &str) -> Result<&str, KatError> {
        self.opt(key).ok_or_else(|| KatError::Missing {
            key: key.to_string(),
            line: self.line,
        })
    }

    /// The value of `key` decoded from hex (an empty value is zero bytes).
    pub fn hex(&self, key: &str) -> Result<Vec<u8>, KatError> {
        decode_hex(self.text(key)?).ok_or_else(|| KatError::BadValue {
            key: key.to_string(),
            line: self.line,
            expected: "an even number of hex digits",
        })
    }

    /// The value of `key` decoded from hex, when present.
    pub fn opt_hex(&self, key: &str) -> Result<Option<Vec<u8>>, KatError> {
        match self.opt(key) {
            None => Ok(None),
            Some(_) => self.hex(key).map(Some),
        }
    }

    /// The value of `key` as exactly `N` bytes of hex.
    pub fn array<const N: usize>(&self, key: &str) -> Result<[u8; N], KatError> {
        let bytes = self.hex(key)?;
        <[u8; N]>::try_from(bytes.as_slice()).map_err(|_| KatError::BadLength {
            key: key.to_string(),
            line: self.line,
            expected: N,
            got: bytes.len(),
        })
    }

    /// The value of `key` as a decimal integer no larger than `max`.
    pub fn number(&self, key: &str, max: u64) -> Result<u64, KatError> {
        let v: u64 = self.text(key)?.parse().map_err(|_| KatError::BadValue {
            key: key.to_string(),
            line: self.line,
            expected: "a decimal integer",
        })?;
        if v > max {
            return Err(KatError::TooLarge {
                what: "number",
                len: usize::try_from(v).unwrap_or(usize::MAX),
                limit: usize::try_from(max).unwrap_or(usize::MAX),
            });
        }
        Ok(v)
    }

    /// Like [`Block::number`], with `default` when the key is absent.
    pub fn number_or(&self, key: &str, default: u64, max: u64) -> Result<u64, KatError> {
        match self.opt(key) {
            None => Ok(default),
            Some(_) => self.number(key, max),
        }
    }

    /// The vector's `id` (or its line number when it has none), for reports.
    pub fn id(&self) -> String {
        self.opt("id")
            .map(str::to_string)
            .unwrap_or_else(|| format!("line {}", self.line))
    }
}

/// Decodes lower- or upper-case hex; `None` on an odd length or a non-hex character.
pub fn decode_hex(s: &str) -> Option<Vec<u8>> {
    let digits = s.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks_exact(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

/// Encodes bytes as lower-case hex.
pub fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_vectors_are_split_on_blank_lines() {
        let text = "# c\n[set]\nname = X\nkind = sha256\n\nid = 1\nmsg =\n\n\nid = 2\nmsg = 00ff\n";
        let file = parse_file(text).expect("parses");
        assert_eq!(file.header.opt("name"), Some("X"));
        assert_eq!(file.vectors.len(), 2);
        assert_eq!(file.vectors[0].hex("msg").expect("hex"), Vec::<u8>::new());
        assert_eq!(file.vectors[1].hex("msg").expect("hex"), vec![0x00, 0xff]);
        assert_eq!(file.vectors[1].line, 10);
    }

    #[test]
    fn file_without_set_header_is_rejected() {
        let err = parse_file("id = 1\nmsg = 00\n").expect_err("no header");
        assert!(matches!(err, KatError::Syntax { line: 1, .. }));
    }

    #[test]
    fn duplicate_key_is_rejected_with_its_line() {
        let err = parse_file("[set]\nkind = a\nkind = b\n").expect_err("duplicate");
        assert!(matches!(err, KatError::Syntax { line: 3, .. }));
    }

    #[test]
    fn odd_or_non_hex_values_are_bad_values() {
        assert_eq!(decode_hex("abc"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex("0A1b"), Some(vec![0x0a, 0x1b]));
        assert_eq!(encode_hex(&[0x0a, 0x1b, 0xff]), "0a1bff");
    }

    #[test]
    fn numbers_above_their_cap_are_refused() {
        let file = parse_file("[set]\nkind = a\n\nn = 1001\n").expect("parses");
        assert_eq!(file.vectors[0].number("n", 1001).expect("ok"), 1001);
        assert!(matches!(
            file.vectors[0].number("n", 1000),
            Err(KatError::TooLarge { .. })
        ));
    }
}
