//! The archive path of a command-line input, as the walk stores it: `dir/.` and `.` name a
//! directory's contents at the root; empty and `.` components are dropped; everything up to
//! the last `..` and a leading `/` are removed, with a note shown once (like tar). Split from
//! `walk.rs`, which calls it for every input.

use super::escape_path;

/// The archive path for a command-line input (see the module docs), and the warning to print
/// once for it if anything was removed.
pub fn archive_path_of(input: &[u8]) -> (Vec<u8>, Option<String>) {
    // `dir/.` (also `dir/./`) names dir's contents: stored at the root, like `.`.
    let last = input.split(|&b| b == b'/').rev().find(|c| !c.is_empty());
    if last == Some(b".") {
        return (Vec::new(), None);
    }
    let comps: Vec<&[u8]> = input
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .collect();
    let mut note = None;
    let start = match comps.iter().rposition(|c| *c == b"..") {
        Some(last) => {
            let mut removed = comps[..=last].join(&b'/');
            removed.push(b'/');
            if input.starts_with(b"/") {
                removed.insert(0, b'/');
            }
            note = Some(format!(
                "removing leading '{}' from member names",
                escape_path(&removed)
            ));
            last + 1
        }
        None => {
            if input.starts_with(b"/") {
                note = Some("removing leading '/' from member names".to_string());
            }
            0
        }
    };
    (comps[start..].join(&b'/'), note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_path_drops_root_dots_and_dotdot_prefixes() {
        assert_eq!(archive_path_of(b"a/b"), (b"a/b".to_vec(), None));
        assert_eq!(archive_path_of(b"./a//./b/"), (b"a/b".to_vec(), None));
        assert_eq!(
            archive_path_of(b"/etc/passwd"),
            (
                b"etc/passwd".to_vec(),
                Some("removing leading '/' from member names".to_string())
            )
        );
        assert_eq!(
            archive_path_of(b"../x/y"),
            (
                b"x/y".to_vec(),
                Some("removing leading '../' from member names".to_string())
            )
        );
        assert_eq!(
            archive_path_of(b"a/../b"),
            (
                b"b".to_vec(),
                Some("removing leading 'a/../' from member names".to_string())
            )
        );
        assert_eq!(archive_path_of(b"."), (Vec::new(), None));
        assert_eq!(archive_path_of(b"/").0, Vec::<u8>::new());
    }

    #[test]
    fn dir_dot_names_the_contents_of_dir_at_the_root() {
        for root in [&b"dir/."[..], b"dir/./", b"/abs/dir/.", b"./.", b"../x/."] {
            assert_eq!(archive_path_of(root), (Vec::new(), None), "{root:?}");
        }
        assert_eq!(archive_path_of(b"./dir").0, b"dir".to_vec());
        assert_eq!(archive_path_of(b"a/./b").0, b"a/b".to_vec());
        assert_eq!(archive_path_of(b".hidden").0, b".hidden".to_vec());
    }
}
