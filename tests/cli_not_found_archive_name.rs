//! "not found in ARCHIVE: PATH" names the PATH escaped (b83b964), and the ARCHIVE too: a
//! newline or a terminal escape in the archive's name given on the command line forged a line
//! of the message, or coloured the terminal, as a PATH's did (helper-45).

mod cli_common;
mod common;

use cli_common::*;
use common::code;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

#[test]
fn not_found_names_the_archive_escaped_too() {
    let fx = Fx::new();
    fx.file("t/f", b"file");
    let name = OsStr::from_bytes(b"a\nkrypta: all fine\x1b[0m.kry");
    let o = common::krypta()
        .current_dir(fx.p(""))
        .args(["c", "-q"])
        .arg(name)
        .arg("t")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", err(&o));
    for cmd in [
        &["x", "-q", "-o", "o"][..],
        &["x", "-q", "--stdout"],
        &["l"],
    ] {
        let o = common::krypta()
            .current_dir(fx.p(""))
            .args(cmd)
            .arg(name)
            .arg("t/nope")
            .output()
            .unwrap();
        assert_eq!(
            (code(&o), err(&o)),
            (
                1,
                "krypta: not found in a\\nkrypta: all fine\\x1b[0m.kry: t/nope\n".to_string()
            ),
            "{cmd:?}"
        );
    }
}
