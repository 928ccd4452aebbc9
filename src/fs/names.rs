//! Showing archive paths (raw bytes) as text: an unambiguous escape for `list`, and its inverse.
//!
//! Paths are bytes on Unix and in the archive. [`escape_path`] prints printable UTF-8 as it is
//! and escapes everything else, so that two different paths never print the same and a name
//! holding a newline or a terminal control sequence cannot forge another line of output. It is
//! the one escape of names in krypta's output: entry paths in listings and messages, and (through
//! [`shown`]) file names, archive names included, in every message and warning.

use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Escapes a raw path for display: printable UTF-8 characters as they are, `\` as `\\`,
/// newline as `\n`, tab as `\t`, and every other byte of a control character (C0, DEL, C1),
/// an invisible formatting character ([`is_invisible_format`]: bidirectional controls and
/// marks, zero-width characters) or invalid UTF-8 as `\xHH` (two lowercase hex digits). The
/// mapping is injective: [`unescape_path`] inverts it.
pub fn escape_path(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() || is_invisible_format(c) => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        push_hex(&mut out, b);
                    }
                }
                c => out.push(c),
            }
        }
        for &b in chunk.invalid() {
            push_hex(&mut out, b);
        }
    }
    out
}

/// A file name (an archive, an output, a key file) as messages show it: its bytes through
/// [`escape_path`], never `Path::display` (which prints a newline or a terminal escape raw, and
/// invalid UTF-8 as U+FFFD, so two names could read the same).
pub fn shown(p: &Path) -> String {
    escape_path(p.as_os_str().as_bytes())
}

/// Inverts [`escape_path`]: `\\`, `\n`, `\t` and `\xHH` are decoded, other characters taken as
/// their UTF-8 bytes. Returns `None` for a malformed escape (a lone `\` or bad hex digits).
pub fn unescape_path(text: &str) -> Option<Vec<u8>> {
    unescape_bytes(text.as_bytes())
}

/// A member name given on the command line (`x`/`l` PATH), unquoted as tar does by default:
/// written the way `l` prints it ([`escape_path`]), so `a\nb` names the entry whose name
/// holds a newline, `\xff` the byte 0xff, `\\` one backslash. An argument that is not a
/// well-formed escape (`C:\dir`, a lone `\`) can not have come from `l` and is taken as it
/// is, byte for byte; so is every argument when `unquote` is false (`--no-unquote`).
pub fn member_name(arg: &[u8], unquote: bool) -> Vec<u8> {
    match unquote.then(|| unescape_bytes(arg)).flatten() {
        Some(name) => name,
        None => arg.to_vec(),
    }
}

/// [`unescape_path`] on raw bytes (an argument need not be UTF-8).
fn unescape_bytes(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut it = text.iter().copied();
    while let Some(b) = it.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match it.next()? {
            b'\\' => out.push(b'\\'),
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'x' => {
                let hi = hex_val(it.next()?)?;
                let lo = hex_val(it.next()?)?;
                out.push(hi << 4 | lo);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The invisible formatting characters [`escape_path`] escapes: a name holding one reads as
/// another name (or, with a bidirectional control, as its characters in another order) on a
/// terminal. The bidirectional embeddings, overrides and isolates (U+202A..U+202E,
/// U+2066..U+2069), the directional marks (U+200E, U+200F, U+061C), and the zero-width
/// characters (U+200B..U+200D, U+2060, U+FEFF). Zero-width joiners (U+200C, U+200D) have uses
/// in Persian and Indic names and in emoji sequences, and are escaped all the same: a listing
/// must tell `ab` from `a<ZWJ>b`.
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200b}'..='\u{200f}'
            | '\u{061c}'
            | '\u{2060}'
            | '\u{feff}'
    )
}

fn push_hex(out: &mut String, b: u8) {
    // Writing to a String cannot fail.
    let _ = write!(out, "\\x{b:02x}");
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escape_keeps_printable_utf8_and_escapes_the_rest() {
        assert_eq!(escape_path(b"dir/caf\xc3\xa9.txt"), "dir/café.txt");
        assert_eq!(escape_path(b"a\\b"), "a\\\\b");
        assert_eq!(escape_path(b"line1\nline2\tx"), "line1\\nline2\\tx");
        assert_eq!(escape_path(b"bad\xff\xfe"), "bad\\xff\\xfe");
        assert_eq!(escape_path(b"esc\x1b[31m\r\x7f"), "esc\\x1b[31m\\x0d\\x7f");
        assert_eq!(escape_path("c1\u{85}".as_bytes()), "c1\\xc2\\x85");
        assert_eq!(
            escape_path("rtl\u{202e}x".as_bytes()),
            "rtl\\xe2\\x80\\xaex"
        );
        assert_eq!(escape_path(b"\xc3"), "\\xc3");
    }

    #[test]
    fn literal_backslash_x_does_not_collide_with_an_escaped_byte() {
        assert_ne!(escape_path(b"\\xff"), escape_path(b"\xff"));
        assert_eq!(escape_path(b"\\xff"), "\\\\xff");
    }

    #[test]
    fn malformed_escapes_are_rejected() {
        for bad in ["\\", "\\q", "\\x4", "\\xzz"] {
            assert_eq!(unescape_path(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_member_name_is_unquoted_unless_malformed_or_asked_not_to() {
        assert_eq!(member_name(b"a\\nb", true), b"a\nb");
        assert_eq!(member_name(b"a\\tb\\\\c\\xff", true), b"a\tb\\c\xff");
        assert_eq!(member_name(b"C:\\dir\\q", true), b"C:\\dir\\q");
        assert_eq!(member_name(b"\xfe\\n", true), b"\xfe\n");
        assert_eq!(member_name(b"a\\nb", false), b"a\\nb");
    }

    proptest! {
        #[test]
        fn unescape_inverts_escape(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let text = escape_path(&bytes);
            prop_assert!(!text.contains('\n'));
            prop_assert_eq!(unescape_path(&text), Some(bytes));
        }
    }
}
