//! krypta's golden whole-archive vectors.
//!
//! - `krypta_archive.txt` (format 1, kind `krypta_archive`): archives written by krypta's
//!   format-1 writer, which no longer exists. They are **read-only known answers**, never
//!   regenerated or edited: each must read (with its key, when encrypted) to exactly the
//!   fixed tree its inputs describe, so format-1 archives stay readable forever.
//! - `krypta_archive_v2.txt` (format 2, kind `krypta_archive_v2`): a fixed tree (with a root
//!   `.` entry, owner names and extended attributes) written by the format-2 writer with a
//!   fixed file key, archive id, creation time (and password salt), compared byte for byte,
//!   and read back to the same tree.
//! - `krypta_archive_signed.txt` (format 2, the same kind, `super::golden_signed`): the same
//!   tree signed with a fixed signing key (`signer_secret`): the exact bytes, the signer's
//!   fingerprint, and a read that verifies the signature (from a stream: at the end).

use std::path::Path;

use super::golden::{append_vector, seeded, seeded_array};
use super::parse::{Block, encode_hex};
use super::{KatError, expect, expect_true};
use crate::archive::{Archive, ArchiveWriter, BcjMode, OpenOptions, ReaderSource, WriteOptions};
use crate::codec::{Filter, Level, MIN_BLOCK_SIZE};
use crate::crypto::Kdf;
use crate::crypto::keyfile::SymmetricKey;
use crate::crypto::keys::FileKey;
use crate::crypto::password::Secret;
use crate::crypto::sign::SignerSecret;
use crate::crypto::stanza::{Identity, Recipient};
use crate::format::entry::{EntryKind, EntryMeta, Timestamp, Xattr};
use crate::format::{Version, header::MAGIC};

/// Largest file content a vector may carry, bytes.
const MAX_CONTENT: usize = 1 << 20;

/// The password of the password-encrypted vector (stanza salt fixed by the vector).
const PASSWORD: &[u8] = b"krypta known-answer password";

fn archive_err(call: &'static str) -> impl Fn(crate::Error) -> KatError {
    move |source| KatError::Archive {
        call,
        source: Box::new(source),
    }
}

/// One entry of a fixed tree and its content (files).
type Node = (EntryMeta, Vec<u8>);

fn meta(path: &str, kind: EntryKind, mode: u32, secs: i64, link: &str) -> EntryMeta {
    EntryMeta {
        path: path.as_bytes().to_vec(),
        kind,
        mode,
        mtime: Timestamp {
            secs,
            nanos: 500_000_000,
        },
        uid: 1000,
        gid: 1000,
        link: link.as_bytes().to_vec(),
        ..Default::default()
    }
}

/// The contents a vector gives: `readme` and `tool` (and for format 2 `big`).
fn contents(v: &Block, names: &[&'static str]) -> Result<Vec<Vec<u8>>, KatError> {
    let mut out = Vec::new();
    for n in names {
        let c = v.hex(n)?;
        if c.len() > MAX_CONTENT {
            return Err(KatError::TooLarge {
                what: "file content",
                len: c.len(),
                limit: MAX_CONTENT,
            });
        }
        out.push(c);
    }
    Ok(out)
}

fn created(v: &Block) -> Result<i64, KatError> {
    Ok(i64::try_from(v.number("created", i64::MAX as u64)?).unwrap_or(i64::MAX))
}

/// The format-1 tree (in stream order): bin/ (0755), bin/tool (0755), docs/ (0750),
/// docs/readme.txt (0644), docs/readme-link.txt (hard link), latest (symlink), uid = gid =
/// 1000, mtime = created - 3600 + i seconds and 0.5 s. (The format-1 writer stored the
/// symlink with mode 0o777 and the hard link with its target's attributes.)
fn tree_v1(v: &Block) -> Result<Vec<Node>, KatError> {
    let t = created(v)? - 3600;
    let c = contents(v, &["readme", "tool"])?;
    let (readme, tool) = (c[0].clone(), c[1].clone());
    Ok(vec![
        (meta("bin", EntryKind::Dir, 0o755, t, ""), vec![]),
        (meta("bin/tool", EntryKind::File, 0o755, t + 1, ""), tool),
        (meta("docs", EntryKind::Dir, 0o750, t + 2, ""), vec![]),
        (
            meta("docs/readme.txt", EntryKind::File, 0o644, t + 3, ""),
            readme,
        ),
        (
            meta(
                "docs/readme-link.txt",
                EntryKind::Hardlink,
                0o644,
                t + 3,
                "docs/readme.txt",
            ),
            vec![],
        ),
        (
            meta(
                "latest",
                EntryKind::Symlink,
                0o777,
                t + 4,
                "docs/readme.txt",
            ),
            vec![],
        ),
    ])
}

/// A kernel `system.posix_acl_access` value (version 2; user::rwx, user:65534:r--,
/// group::r-x, mask::r-x, other::r-x), as `setfacl -m u:nobody:r` leaves on a 0755 file.
const ACL_ACCESS: [u8; 44] = [
    2, 0, 0, 0, // version
    1, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, // ACL_USER_OBJ rwx
    2, 0, 4, 0, 0xfe, 0xff, 0, 0, // ACL_USER 65534 r--
    4, 0, 5, 0, 0xff, 0xff, 0xff, 0xff, // ACL_GROUP_OBJ r-x
    0x10, 0, 5, 0, 0xff, 0xff, 0xff, 0xff, // ACL_MASK r-x
    0x20, 0, 5, 0, 0xff, 0xff, 0xff, 0xff, // ACL_OTHER r-x
];

/// A `security.capability` value (VFS_CAP_REVISION_2, effective, permitted CAP_NET_RAW), as
/// `setcap cap_net_raw+ep` leaves.
const CAP_NET_RAW_EP: [u8; 20] = [
    0x01, 0x00, 0x00, 0x02, // magic_etc: revision 2 | effective
    0x00, 0x20, 0x00, 0x00, // permitted[0]: bit 13 = CAP_NET_RAW
    0x00, 0x00, 0x00, 0x00, // inheritable[0]
    0x00, 0x00, 0x00, 0x00, // permitted[1]
    0x00, 0x00, 0x00, 0x00, // inheritable[1]
];

/// The format-2 tree (in stream order): the root `.` (0755, owner names), bin/, bin/tool
/// (0755, a capability and a user attribute), docs/ (0750, a default ACL), docs/readme.txt
/// (0644, an access ACL), docs/readme-link.txt (hard link), docs/big.bin (5,000 bytes: an
/// END_DIGEST; the others are below 4096 bytes and end with END), latest (symlink); uid =
/// gid = 1000, user and group name `kat` except on the hard link, mtime = created - 3600 + i
/// seconds and 0.5 s.
fn tree_v2(v: &Block) -> Result<Vec<Node>, KatError> {
    let t = created(v)? - 3600;
    let c = contents(v, &["readme", "tool", "big"])?;
    let named = |mut m: EntryMeta| {
        m.user = Some(b"kat".to_vec());
        m.group = Some(b"kat".to_vec());
        m
    };
    let x = |name: &str, value: &[u8]| Xattr {
        name: name.as_bytes().to_vec(),
        value: value.to_vec(),
    };
    let mut tool = named(meta("bin/tool", EntryKind::File, 0o755, t + 1, ""));
    tool.xattrs = vec![
        x("security.capability", &CAP_NET_RAW_EP),
        x("user.origin", b"krypta kat"),
    ];
    let mut docs = named(meta("docs", EntryKind::Dir, 0o750, t + 2, ""));
    docs.xattrs = vec![x("system.posix_acl_default", &ACL_ACCESS)];
    let mut readme = named(meta("docs/readme.txt", EntryKind::File, 0o644, t + 3, ""));
    readme.xattrs = vec![x("system.posix_acl_access", &ACL_ACCESS)];
    Ok(vec![
        (named(meta(".", EntryKind::Dir, 0o755, t - 1, "")), vec![]),
        (named(meta("bin", EntryKind::Dir, 0o755, t, "")), vec![]),
        (tool, c[1].clone()),
        (docs, vec![]),
        (readme, c[0].clone()),
        (
            meta(
                "docs/readme-link.txt",
                EntryKind::Hardlink,
                0o644,
                t + 3,
                "docs/readme.txt",
            ),
            vec![],
        ),
        (
            named(meta("docs/big.bin", EntryKind::File, 0o644, t + 5, "")),
            c[2].clone(),
        ),
        (
            named(meta(
                "latest",
                EntryKind::Symlink,
                0o777,
                t + 4,
                "docs/readme.txt",
            )),
            vec![],
        ),
    ])
}

/// How a vector is protected: unencrypted, a key file, or a password (Argon2id at the
/// writers' floor: 8 MiB, 1 pass, 1 lane, so `krypta kat` stays fast).
fn protection(v: &Block) -> Result<(Vec<Recipient>, Vec<Identity>), KatError> {
    if v.opt("keyfile_recipient").is_some() {
        let key = SymmetricKey::from_bytes(v.array::<32>("keyfile_recipient")?);
        return Ok((
            vec![Recipient::KeyFile(key.clone())],
            vec![Identity::KeyFile(key)],
        ));
    }
    if v.opt("password_salt").is_some() {
        let pw = Secret::new(PASSWORD.to_vec());
        return Ok((
            vec![Recipient::Password {
                password: pw.clone(),
                kdf: Kdf::Argon2id {
                    m_kib: 8192,
                    t: 1,
                    p: 1,
                },
            }],
            vec![Identity::Password(pw)],
        ));
    }
    Ok((Vec::new(), Vec::new()))
}

/// Collects what a scan delivers: each entry with its content.
#[derive(Default)]
struct Collect {
    nodes: Vec<Node>,
}

impl crate::archive::Visitor for Collect {
    fn entry(&mut self, meta: &EntryMeta) -> crate::Result<()> {
        self.nodes.push((meta.clone(), Vec::new()));
        Ok(())
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) -> crate::Result<()> {
        if let Some((_, c)) = self.nodes.last_mut() {
            c.resize(offset as usize, 0);
            c.extend_from_slice(bytes);
        }
        Ok(())
    }
    fn end(&mut self, _meta: &EntryMeta, size: u64) -> crate::Result<()> {
        if let Some((_, c)) = self.nodes.last_mut() {
            c.resize(size as usize, 0);
        }
        Ok(())
    }
    fn abort(&mut self) {}
}

/// Reads `bytes` as an archive (verifying everything) with `identities`, and checks its
/// version, archive id, level, and that it holds exactly `tree`.
fn check_reads_to(
    v: &Block,
    bytes: &[u8],
    version: Version,
    identities: Vec<Identity>,
    tree: &[Node],
) -> Result<(), KatError> {
    let signer = signer(v)?.map(|sk| sk.public());
    expect_true(
        "the archive starts with the krypta magic",
        bytes.starts_with(&MAGIC),
    )?;
    let encrypted = !identities.is_empty();
    let mut ar = Archive::open_stream(
        Box::new(std::io::Cursor::new(bytes.to_vec())),
        Path::new("<kat archive>"),
        OpenOptions {
            identities,
            jobs: 1,
            signers: signer.iter().cloned().collect(),
            ..OpenOptions::default()
        },
    )
    .map_err(archive_err("Archive::open"))?;
    let h = ar.header().clone();
    expect_true(
        "the archive has the vector's format version",
        h.version == version,
    )?;
    expect("archive_id", &v.hex("archive_id")?, &h.archive_id)?;
    expect_true(
        "the header's level is the vector's",
        u64::from(h.level) == v.number("level", 9)?,
    )?;
    expect_true(
        "the header's creation time is the vector's",
        h.created == created(v)?,
    )?;
    expect_true(
        "the archive is encrypted exactly when a key is given",
        h.encrypted() == encrypted,
    )?;
    let mut c = Collect::default();
    ar.scan(&mut c).map_err(archive_err("Archive::scan"))?;
    expect_true(
        "a signed archive's signature verified, by its signer (an unsigned one has none)",
        ar.verified_signer() == signer.as_ref(),
    )?;
    expect_true(
        "the archive holds the vector's tree (entries in order, metadata, contents)",
        c.nodes == tree,
    )
}

/// Format 1 (read-only): the archive reads to the fixed tree.
pub(super) fn check_archive_v1(v: &Block) -> Result<(), KatError> {
    let (_, ids) = protection(v)?;
    let tree = tree_v1(v)?;
    check_reads_to(v, &v.hex("archive")?, Version::V1, ids, &tree)
}

/// Format 2: writes the fixed tree with the vector's parameters: `archive_id`, `created`
/// (seconds), `level` (0 = store, else 1..=9), `bcj` (off or a filter name), optional
/// `keyfile_recipient` (32 bytes) or `password_salt` (16 bytes) with `file_key` (absent =
/// unencrypted), and the contents `readme`, `tool`, `big`.
pub(super) fn archive_v2(v: &Block) -> Result<Vec<(&'static str, Vec<u8>)>, KatError> {
    let level = match v.number("level", 9)? {
        0 => None,
        n => Some(Level::new(n as u8).map_err(|_| KatError::BadValue {
            key: "level".to_string(),
            line: v.line,
            expected: "0 (store) or 1..=9",
        })?),
    };
    let bcj = match v.text("bcj")? {
        "off" => BcjMode::Off,
        name => BcjMode::Force(name.parse::<Filter>().map_err(|_| KatError::BadValue {
            key: "bcj".to_string(),
            line: v.line,
            expected: "off or a BCJ filter name",
        })?),
    };
    let mut opts = WriteOptions::new();
    opts.level = level;
    opts.block_size = MIN_BLOCK_SIZE;
    opts.jobs = 1;
    opts.bcj = bcj;
    opts.created = created(v)?;
    opts.comment = "krypta known-answer archive".to_string();
    opts.archive_id = Some(v.array::<16>("archive_id")?);
    let (recipients, _) = protection(v)?;
    if !recipients.is_empty() {
        opts.recipients = recipients;
        opts.file_key = Some(FileKey::from_bytes(v.array::<32>("file_key")?));
        if v.opt("password_salt").is_some() {
            opts.fixed_salt = Some(v.array::<16>("password_salt")?);
        }
    }
    opts.signer = signer(v)?;
    let fingerprint = opts.signer.as_ref().map(|sk| sk.public().fingerprint());
    let mut w = ArchiveWriter::new(Vec::new(), "<kat archive>", opts)
        .map_err(archive_err("ArchiveWriter::new"))?;
    for (m, content) in tree_v2(v)? {
        if m.kind == EntryKind::File {
            w.add_file(&m, &mut ReaderSource::new(content.as_slice(), "kat"))
                .map_err(archive_err("ArchiveWriter::add_file"))?;
        } else {
            w.add_entry(&m)
                .map_err(archive_err("ArchiveWriter::add_entry"))?;
        }
    }
    let (_, bytes) = w.finish().map_err(archive_err("ArchiveWriter::finish"))?;
    let mut out = vec![("archive", bytes)];
    if let Some(fp) = fingerprint {
        out.push(("signer_fingerprint", fp.to_vec()));
    }
    Ok(out)
}

/// The vector's signing key (`signer_secret`, 64 bytes), if it is signed.
fn signer(v: &Block) -> Result<Option<SignerSecret>, KatError> {
    Ok(match v.opt("signer_secret") {
        Some(_) => Some(SignerSecret::from_bytes(&v.array::<64>("signer_secret")?)),
        None => None,
    })
}

/// Format 2: the archive also reads back to the tree it was written from.
pub(super) fn check_archive_v2(v: &Block) -> Result<(), KatError> {
    let (_, ids) = protection(v)?;
    let tree = tree_v2(v)?;
    check_reads_to(v, &v.hex("archive")?, Version::V2, ids, &tree)
}

/// The contents of the format-2 tree: `readme`, `tool` (x86 calls every 40 bytes), `big`.
pub(super) fn contents_v2() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let readme = b"krypta known-answer archive: this file is stored twice (hard link).\n".to_vec();
    let mut tool = seeded("archive/tool", 1024);
    for off in (0..1000).step_by(40) {
        // x86 near calls with small displacements, which the BCJ filter rewrites.
        tool[off] = 0xe8;
        tool[off + 4] = 0x00;
    }
    (readme, tool, seeded("archive-v2/big", 5000))
}

/// The whole `krypta_archive_v2.txt`.
pub(super) fn archive_v2_file() -> Result<String, KatError> {
    let mut text = String::from(
        "# krypta complete small archives, format 2: a fixed tree written with a fixed file key,
# archive id, creation time and password salt -> the exact archive bytes, which also read
# back to the tree.
# File format: see the top of src/kat/mod.rs. GENERATED by src/kat/golden_archive.rs; do
# not edit: regenerate with `KRYPTA_REGENERATE_VECTORS=1 cargo test --test kat_golden`.
# The tree (uid = gid = 1000, user = group = \"kat\", mtime = created - 3600 + i seconds and
# 0.5 s, in this order): . (0755, i = -1), bin/ (0755), bin/tool (0755, content `tool`,
# xattrs security.capability = cap_net_raw+ep and user.origin = \"krypta kat\"), docs/
# (0750, system.posix_acl_default), docs/readme.txt (0644, content `readme`,
# system.posix_acl_access), docs/readme-link.txt (hard link to docs/readme.txt, no fields),
# docs/big.bin (0644, i = 5, content `big`, 5,000 bytes: the only END_DIGEST), latest
# (symlink to docs/readme.txt, i = 4).
# Block size 64 KiB, one worker, comment \"krypta known-answer archive\". The password vector
# uses Argon2id m = 8 MiB, t = 1, p = 1 (the writers' floor) and the password
# \"krypta known-answer password\". Compressed vectors depend on the bundled zstd library
# producing the same frames (it is pinned by Cargo.lock).
[set]
name = krypta archive v2
kind = krypta_archive_v2
source = krypta docs/FORMAT.md (whole archive, format 2) and src/archive/writer.rs
section = archive format version 2
licence = MIT OR Apache-2.0 (krypta)
cite = krypta format v2 (generated)
",
    );
    let (readme, tool, big) = contents_v2();
    let cases: [(&str, u64, &str, &str); 4] = [
        ("plain-stored", 0, "off", ""),
        ("plain-zstd3-x86", 3, "x86", ""),
        ("keyfile-zstd3", 3, "off", "keyfile"),
        ("password-zstd1", 1, "off", "password"),
    ];
    for (id, level, bcj, key) in cases {
        let mut inputs = vec![
            ("id", id.to_string()),
            (
                "archive_id",
                encode_hex(&seeded_array::<16>("archive-v2/archive-id")),
            ),
            ("created", "1798675200".to_string()),
            ("level", level.to_string()),
            ("bcj", bcj.to_string()),
        ];
        let mut labels = String::new();
        if !key.is_empty() {
            inputs.push((
                "file_key",
                encode_hex(&seeded_array::<32>("archive-v2/file-key")),
            ));
            labels.push_str(", seeded(\"archive-v2/file-key\", 32)");
        }
        match key {
            "keyfile" => {
                inputs.push((
                    "keyfile_recipient",
                    encode_hex(&seeded_array::<32>("archive-v2/keyfile")),
                ));
                labels.push_str(", seeded(\"archive-v2/keyfile\", 32)");
            }
            "password" => {
                inputs.push((
                    "password_salt",
                    encode_hex(&seeded_array::<16>("archive-v2/salt")),
                ));
                labels.push_str(", seeded(\"archive-v2/salt\", 16)");
            }
            _ => {}
        }
        inputs.push(("readme", encode_hex(&readme)));
        inputs.push(("tool", encode_hex(&tool)));
        inputs.push(("big", encode_hex(&big)));
        let comment = format!(
            "created = 2027-01-01T00:00:00Z; inputs: seeded(\"archive-v2/archive-id\", 16){labels}; \
             tool = seeded(\"archive/tool\", 1024) with E8 xx xx xx 00 every 40 bytes; big = \
             seeded(\"archive-v2/big\", 5000)"
        );
        append_vector(&mut text, &comment, "krypta_archive_v2", inputs)?;
    }
    Ok(text)
}
