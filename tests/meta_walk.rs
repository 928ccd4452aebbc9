//! The walk fills each entry's owner names and extended attributes (ACLs and capabilities
//! included) exactly as the kernel and the passwd/group databases give them; stores the
//! directory named by `dir/.` as the root entry `.`; stores overlapping inputs once.
//! Real attributes on a real filesystem, set with the real tools; tests that need root or a
//! tool that is missing say so and return.

mod fs_common;
mod meta_common;

use std::path::{Path, PathBuf};

use fs_common::{arch, collect};
use krypta::format::entry::{EntryKind, Xattr};
use krypta::fs::walk::{InputEntry, ROOT_PATH, WalkOptions};
use krypta::fs::xattr::{ACL_ACCESS, ACL_DEFAULT, CAPABILITY, XattrSelect};
use meta_common::*;

fn x(name: &str, value: &[u8]) -> Xattr {
    Xattr {
        name: name.as_bytes().to_vec(),
        value: value.to_vec(),
    }
}

fn find<'a>(entries: &'a [InputEntry], path: &[u8]) -> &'a InputEntry {
    entries
        .iter()
        .find(|e| e.meta.path == path)
        .unwrap_or_else(|| panic!("no entry {}", String::from_utf8_lossy(path)))
}

fn paths(entries: &[InputEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.meta.path).into_owned())
        .collect()
}

#[test]
fn user_xattrs_are_stored_sorted_with_binary_values_long_names_and_empty_values() {
    let tmp = xattr_tempdir();
    let base = tmp.path().join("t");
    std::fs::create_dir(&base).unwrap();
    let f = base.join("f");
    std::fs::write(&f, b"data").unwrap();
    let long = format!("user.{}", "n".repeat(250));
    let binary: Vec<u8> = (0..=255u8).chain([0, 0, 255]).collect();
    set_xattr(&f, "user.zeta", &binary);
    set_xattr(&f, &long, b"");
    // ext4 keeps all of an inode's attributes in one 4 KiB block.
    set_xattr(&f, "user.alpha", &vec![0xa5; 1500]);
    set_xattr(&base, "user.dir", b"on a directory");
    let (entries, warnings) = collect(std::slice::from_ref(&base), WalkOptions::default()).unwrap();
    assert!(
        warnings.iter().all(|w| w.contains("removing leading")),
        "{warnings:?}"
    );
    assert_eq!(
        find(&entries, &arch(&base, "f")).meta.xattrs,
        vec![
            x("user.alpha", &vec![0xa5; 1500]),
            x(&long, b""),
            x("user.zeta", &binary),
        ]
    );
    assert_eq!(
        find(&entries, &arch(&base, "")).meta.xattrs,
        vec![x("user.dir", b"on a directory")]
    );
}

#[test]
fn acls_are_stored_as_the_kernel_binary_values() {
    if !tools("acls_are_stored_as_the_kernel_binary_values", &["setfacl"]) {
        return;
    }
    let tmp = xattr_tempdir();
    let base = tmp.path().join("t");
    std::fs::create_dir(&base).unwrap();
    let f = base.join("f");
    std::fs::write(&f, b"x").unwrap();
    fs_common::chmod(&f, 0o644);
    let d = base.join("d");
    std::fs::create_dir(&d).unwrap();
    fs_common::chmod(&d, 0o755);
    sh("setfacl", &["-m", "u:nobody:r", f.to_str().unwrap()]);
    sh("setfacl", &["-d", "-m", "u:nobody:rx", d.to_str().unwrap()]);
    let (entries, _) = collect(std::slice::from_ref(&base), WalkOptions::default()).unwrap();
    // POSIX ACL xattr format (linux/posix_acl_xattr.h): u32 version 2, then entries of
    // u16 tag, u16 perm, u32 id: USER_OBJ rw-, USER nobody(65534) r--, GROUP_OBJ r--,
    // MASK r--, OTHER r--.
    let entry = |tag: u16, perm: u16, id: u32| {
        let mut v = tag.to_le_bytes().to_vec();
        v.extend_from_slice(&perm.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
        v
    };
    let undefined = u32::MAX;
    let mut access = 2u32.to_le_bytes().to_vec();
    for e in [
        entry(0x01, 6, undefined),
        entry(0x02, 4, 65534),
        entry(0x04, 4, undefined),
        entry(0x10, 4, undefined),
        entry(0x20, 4, undefined),
    ] {
        access.extend_from_slice(&e);
    }
    let fm = &find(&entries, &arch(&base, "f")).meta;
    assert_eq!(
        fm.xattrs,
        vec![Xattr {
            name: ACL_ACCESS.to_vec(),
            value: access
        }]
    );
    assert_eq!(
        Some(fm.xattrs[0].value.clone()),
        get_xattr(&f, "system.posix_acl_access")
    );
    let dm = &find(&entries, &arch(&base, "d")).meta;
    assert_eq!(dm.xattrs.len(), 1);
    assert_eq!(dm.xattrs[0].name, ACL_DEFAULT.to_vec());
    assert_eq!(
        Some(dm.xattrs[0].value.clone()),
        get_xattr(&d, "system.posix_acl_default")
    );
    // --no-acls leaves both out.
    let (entries, _) = collect(
        std::slice::from_ref(&base),
        WalkOptions {
            xattrs: XattrSelect {
                xattrs: true,
                acls: false,
            },
            ..WalkOptions::default()
        },
    )
    .unwrap();
    assert!(entries.iter().all(|e| e.meta.xattrs.is_empty()));
}

#[test]
fn a_file_capability_is_stored_and_no_xattrs_leaves_it_out_but_keeps_acls() {
    if !tools("a_file_capability_is_stored", &["setcap", "setfacl"]) || !is_root() {
        eprintln!("SKIP a_file_capability_is_stored: needs root, setcap and setfacl");
        return;
    }
    let tmp = xattr_tempdir();
    let bin = tmp.path().join("ping-copy");
    copy_binary(&bin);
    sh("setcap", &["cap_net_raw+ep", bin.to_str().unwrap()]);
    sh("setfacl", &["-m", "u:nobody:r", bin.to_str().unwrap()]);
    let (entries, _) = collect(std::slice::from_ref(&bin), WalkOptions::default()).unwrap();
    // VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE, permitted = 1 << CAP_NET_RAW (13),
    // inheritable 0, both high words 0 (linux/capability.h, struct vfs_cap_data).
    let mut cap = 0x0200_0001u32.to_le_bytes().to_vec();
    cap.extend_from_slice(&(1u32 << 13).to_le_bytes());
    cap.extend_from_slice(&[0; 12]);
    let names: Vec<Vec<u8>> = entries[0]
        .meta
        .xattrs
        .iter()
        .map(|x| x.name.clone())
        .collect();
    assert_eq!(names, vec![CAPABILITY.to_vec(), ACL_ACCESS.to_vec()]);
    assert_eq!(entries[0].meta.xattrs[0].value, cap);
    let (entries, _) = collect(
        std::slice::from_ref(&bin),
        WalkOptions {
            xattrs: XattrSelect {
                xattrs: false,
                acls: true,
            },
            ..WalkOptions::default()
        },
    )
    .unwrap();
    let names: Vec<Vec<u8>> = entries[0]
        .meta
        .xattrs
        .iter()
        .map(|x| x.name.clone())
        .collect();
    assert_eq!(names, vec![ACL_ACCESS.to_vec()]);
}

#[test]
fn trusted_and_security_attributes_are_stored_as_root_also_on_symlinks_never_followed() {
    if !is_root() {
        eprintln!("SKIP trusted_and_security_attributes: needs root");
        return;
    }
    let tmp = xattr_tempdir();
    let base = tmp.path().join("t");
    std::fs::create_dir(&base).unwrap();
    let target = base.join("target");
    std::fs::write(&target, b"t").unwrap();
    set_xattr(&target, "user.of-target", b"1");
    set_xattr(&target, "trusted.of-target", b"2");
    let link = base.join("link");
    std::os::unix::fs::symlink("target", &link).unwrap();
    set_xattr(&link, "trusted.of-link", b"3");
    set_xattr(&link, "security.of-link", b"4");
    let (entries, _) = collect(std::slice::from_ref(&base), WalkOptions::default()).unwrap();
    let l = &find(&entries, &arch(&base, "link")).meta;
    assert_eq!(l.kind, EntryKind::Symlink);
    assert_eq!(
        l.xattrs,
        vec![x("security.of-link", b"4"), x("trusted.of-link", b"3")]
    );
    assert_eq!(
        find(&entries, &arch(&base, "target")).meta.xattrs,
        vec![x("trusted.of-target", b"2"), x("user.of-target", b"1")]
    );
    // With -L the link is stored as what it points to, with the target's attributes; the
    // input itself given as a link is followed the same way.
    let (entries, _) = collect(
        std::slice::from_ref(&link),
        WalkOptions {
            dereference: true,
            ..WalkOptions::default()
        },
    )
    .unwrap();
    assert_eq!(entries[0].meta.kind, EntryKind::File);
    assert_eq!(
        entries[0].meta.xattrs,
        vec![x("trusted.of-target", b"2"), x("user.of-target", b"1")]
    );
}

#[test]
fn owner_names_are_stored_next_to_the_ids_and_numeric_owner_stores_ids_only() {
    if !is_root() {
        eprintln!("SKIP owner_names_are_stored: needs root (chown)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("t");
    std::fs::create_dir(&base).unwrap();
    let own = |name: &str, uid: u32, gid: u32| {
        let p = base.join(name);
        std::fs::write(&p, name).unwrap();
        std::os::unix::fs::chown(&p, Some(uid), Some(gid)).unwrap();
    };
    own("nobody", 65534, 65534);
    own("root", 0, 0);
    own("unnamed", 3_999_999_001, 3_999_999_002);
    let (entries, _) = collect(std::slice::from_ref(&base), WalkOptions::default()).unwrap();
    let names = |rel: &str| {
        let m = &find(&entries, &arch(&base, rel)).meta;
        (m.uid, m.gid, m.user.clone(), m.group.clone())
    };
    assert_eq!(
        names("nobody"),
        (
            65534,
            65534,
            Some(b"nobody".to_vec()),
            Some(b"nogroup".to_vec())
        )
    );
    assert_eq!(
        names("root"),
        (0, 0, Some(b"root".to_vec()), Some(b"root".to_vec()))
    );
    assert_eq!(names("unnamed"), (3_999_999_001, 3_999_999_002, None, None));
    let (entries, _) = collect(
        std::slice::from_ref(&base),
        WalkOptions {
            numeric_owner: true,
            ..WalkOptions::default()
        },
    )
    .unwrap();
    assert!(
        entries
            .iter()
            .all(|e| e.meta.user.is_none() && e.meta.group.is_none())
    );
    assert_eq!(find(&entries, &arch(&base, "nobody")).meta.uid, 65534);
}

#[test]
fn hard_links_carry_no_names_or_attributes_of_their_own() {
    let tmp = xattr_tempdir();
    let base = tmp.path().join("t");
    std::fs::create_dir(&base).unwrap();
    std::fs::write(base.join("a"), b"x").unwrap();
    set_xattr(&base.join("a"), "user.inode", b"shared");
    std::fs::hard_link(base.join("a"), base.join("b")).unwrap();
    let (entries, _) = collect(std::slice::from_ref(&base), WalkOptions::default()).unwrap();
    let a = &find(&entries, &arch(&base, "a")).meta;
    let b = &find(&entries, &arch(&base, "b")).meta;
    assert_eq!(a.xattrs, vec![x("user.inode", b"shared")]);
    assert!(a.user.is_some());
    assert_eq!(b.kind, EntryKind::Hardlink);
    assert_eq!((&b.user, &b.group, b.xattrs.len()), (&None, &None, 0));
}

#[test]
fn dir_dot_stores_the_directory_as_the_root_entry_first_and_its_children_at_the_top() {
    let tmp = xattr_tempdir();
    let d = tmp.path().join("d");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(d.join("sub/f"), b"f").unwrap();
    std::fs::write(d.join("top"), b"t").unwrap();
    fs_common::chmod(&d, 0o751);
    fs_common::set_mtime(&d, 1_000_000_000, 123_456_789);
    set_xattr(&d, "user.root", b"of d");
    let other = tmp.path().join("other");
    std::fs::write(&other, b"o").unwrap();
    // The root input comes second on the command line; its entry still comes first.
    let inputs = vec![other.clone(), d.join(".")];
    let (entries, _) = collect(&inputs, WalkOptions::default()).unwrap();
    assert_eq!(
        paths(&entries),
        [
            ".",
            &String::from_utf8(arch(&other, "")).unwrap(),
            "sub",
            "sub/f",
            "top"
        ]
    );
    let root = &entries[0];
    assert_eq!(root.meta.path, ROOT_PATH);
    assert_eq!(root.meta.kind, EntryKind::Dir);
    assert_eq!(root.meta.mode, 0o751);
    assert_eq!(
        (root.meta.mtime.secs, root.meta.mtime.nanos),
        (1_000_000_000, 123_456_789)
    );
    assert_eq!(root.meta.xattrs, vec![x("user.root", b"of d")]);
    assert_eq!(root.source, d.join("."));
    // `d/./` and `d/.` are the same; `d` alone is stored under its name, no root entry.
    let (entries, _) = collect(
        &[PathBuf::from(format!("{}/./", d.display()))],
        WalkOptions::default(),
    )
    .unwrap();
    assert_eq!(paths(&entries), [".", "sub", "sub/f", "top"]);
    let (entries, _) = collect(std::slice::from_ref(&d), WalkOptions::default()).unwrap();
    assert!(entries.iter().all(|e| e.meta.path != ROOT_PATH));
}

// Was `..._the_first_occurrence_of_each_path_wins_quietly`: `same` and `sub/same` are
// different files in a and b, and b's were dropped without a word (data lost, exit 0). The
// directories still merge; each file another input stored already is now named.
#[test]
fn two_root_inputs_merge_directories_and_name_each_different_file_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    for (dir, files) in [(&a, &["same", "only-a"][..]), (&b, &["same", "only-b"][..])] {
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        for f in files {
            std::fs::write(dir.join(f), dir.to_str().unwrap()).unwrap();
            std::fs::write(dir.join("sub").join(f), b"").unwrap();
        }
    }
    fs_common::chmod(&a, 0o700);
    fs_common::chmod(&b, 0o755);
    let (entries, warnings) = collect(&[a.join("."), b.join(".")], WalkOptions::default()).unwrap();
    assert_eq!(
        paths(&entries),
        [
            ".",
            "only-a",
            "same",
            "sub",
            "sub/only-a",
            "sub/same",
            "only-b",
            "sub/only-b"
        ]
    );
    let shown = |p: &Path| krypta::fs::escape_path(&pb(p));
    let left_out = |rel: &str| {
        format!(
            "{}: skipped: its name {rel} holds {} already (a different file from an earlier input)",
            shown(&b.join(".").join(rel)),
            shown(&a.join(".").join(rel))
        )
    };
    assert_eq!(warnings, [left_out("same"), left_out("sub/same")]);
    assert_eq!(
        entries[0].meta.mode, 0o700,
        "the first root input gives the root entry"
    );
    assert_eq!(find(&entries, b"same").source, a.join("./same"));
}

#[test]
fn overlapping_inputs_store_each_path_once_without_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("lib")).unwrap();
    std::fs::write(src.join("README.md"), b"r").unwrap();
    std::fs::write(src.join("lib/x.rs"), b"x").unwrap();
    std::fs::hard_link(src.join("README.md"), src.join("lib/README-link")).unwrap();
    let (once, _) = collect(std::slice::from_ref(&src), WalkOptions::default()).unwrap();
    let inputs = vec![
        src.clone(),
        src.join("README.md"),
        src.clone(),
        src.join("lib"),
    ];
    let (entries, warnings) = collect(&inputs, WalkOptions::default()).unwrap();
    assert_eq!(paths(&entries), paths(&once));
    assert_eq!(
        entries.iter().map(|e| e.meta.clone()).collect::<Vec<_>>(),
        once.iter().map(|e| e.meta.clone()).collect::<Vec<_>>()
    );
    assert_eq!(
        warnings,
        vec!["removing leading '/' from member names".to_string()]
    );
    // A later input adds what the first did not have.
    let (entries, _) = collect(&[src.join("lib"), src.clone()], WalkOptions::default()).unwrap();
    let mut got = paths(&entries);
    got.sort();
    let mut want = paths(&once);
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn one_archive_path_from_two_sources_of_different_kinds_keeps_the_first_and_names_both() {
    // `A/q/../x` and `B/q/../x` are both stored as `x` ('..' and what precedes it dropped):
    // a file from A, a directory with a child from B.
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("A"), tmp.path().join("B"));
    std::fs::create_dir_all(a.join("q")).unwrap();
    std::fs::create_dir_all(b.join("q")).unwrap();
    std::fs::write(a.join("x"), b"file").unwrap();
    std::fs::create_dir(b.join("x")).unwrap();
    std::fs::write(b.join("x/y"), b"below").unwrap();
    let ia = a.join("q/../x");
    let ib = b.join("q/../x");
    let (entries, warnings) = collect(&[ia.clone(), ib.clone()], WalkOptions::default()).unwrap();
    assert_eq!(paths(&entries), ["x"]);
    assert_eq!(entries[0].meta.kind, EntryKind::File);
    let shown = |p: &Path| krypta::fs::escape_path(&pb(p));
    assert!(
        warnings.contains(&format!(
            "{}: skipped with what is below it: its name x holds {} already (another kind of entry from an earlier input)",
            shown(&ib),
            shown(&ia)
        )),
        "{warnings:?}"
    );
    let iy = b.join("q/../x/y");
    let (entries, warnings) = collect(&[ia.clone(), iy.clone()], WalkOptions::default()).unwrap();
    assert_eq!(paths(&entries), ["x"]);
    assert!(
        warnings.contains(&format!(
            "{}: skipped: it would lie below x, a file or link stored from {}",
            shown(&iy),
            shown(&ia)
        )),
        "{warnings:?}"
    );
}
