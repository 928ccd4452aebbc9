//! What `info` and `list` print as text: header facts, entry lines (short, `-l`, `-v`,
//! `--b3`), modes and times. The JSON forms are `super::json`.

use std::io::Write;

use super::clock::Clock;
use super::entries::{EntryView, spanned_bytes};
use krypta::{Error, Result};

pub(crate) fn print_info(
    path: &std::path::Path,
    f: &krypta::archive::reader::ArchiveFacts,
    clock: &Clock,
) -> Result<()> {
    // Written at once, as an error when stdout fails (a closed pipe: `info A | head`; a full
    // disk), never a panic as `println!` gives.
    let mut o = String::new();
    macro_rules! out {
        ($($t:tt)*) => {{
            o.push_str(&format!($($t)*));
            o.push('\n');
        }};
    }
    let h = &f.header;
    out!("archive:        {}", krypta::fs::shown(path));
    out!("format version: {}", h.version as u16);
    out!("created:        {} ({})", clock.show(h.created), h.created);
    out!("archive id:     {}", hex(&h.archive_id));
    let level = if h.level == 0 {
        "store".to_string()
    } else {
        h.level.to_string()
    };
    out!("level:          {level}");
    out!("block size:     {} bytes", h.block_size);
    if h.stanzas.is_empty() {
        out!("encryption:     none (BLAKE3 checksums)");
    } else {
        out!(
            "encryption:     AES-256-CTR + HMAC-SHA256, {} stanza(s)",
            h.stanzas.len()
        );
        let pq = h
            .stanzas
            .iter()
            .filter(|s| matches!(s, krypta::format::Stanza::PqBox { .. }))
            .count();
        for s in &h.stanzas {
            match s {
                krypta::format::Stanza::Argon2id { m_kib, t, p, .. } => {
                    out!(
                        "  argon2id      memory {} KiB ({} MiB), iterations {t}, lanes {p}",
                        m_kib,
                        m_kib / 1024
                    )
                }
                krypta::format::Stanza::Pbkdf2 { iterations, .. } => {
                    out!("  pbkdf2        HMAC-SHA256, {iterations} iterations")
                }
                krypta::format::Stanza::KeyFile { .. } => out!("  keyfile"),
                krypta::format::Stanza::PqBox { .. } => {}
                krypta::format::Stanza::Unknown { kind, body } => out!(
                    "  unknown kind {kind} ({} bytes; skipped by this krypta)",
                    body.len()
                ),
            }
        }
        if pq > 0 {
            out!("  pq-box (ML-KEM-768 + X25519): {pq} recipient(s)");
        }
    }
    if let Some((id, binding)) = h.delta_base() {
        out!(
            "delta base:     archive {} (binding {})",
            krypta::archive::reader::base_hex(&id),
            krypta::archive::reader::base_hex(&binding)
        );
        out!("                (x and t need --base with that archive; l does not)");
    }
    if let Some(fp) = h.signer() {
        out!(
            "signer:         {}",
            krypta::crypto::sign::fingerprint_hex(&fp)
        );
        match &f.signature {
            // Without reading the frames (and, encrypted, without the key) only their tags
            // are checked against the signature, not each frame's bytes against its tag: a
            // changed frame body (the index's too) still shows this line, and `t` refuses it.
            Some(Ok(())) => {
                out!(
                    "                (ML-DSA-65 + Ed25519 signature verified over the header, every frame's tag and the footer;"
                );
                out!(
                    "                krypta t --signer checks each frame's bytes against its tag)"
                );
            }
            Some(Err(why)) => out!("                SIGNATURE REFUSED: {why}"),
            None => {
                out!("                (signature not checked: a stream; krypta t checks it)")
            }
        }
    }
    if !h.comment.is_empty() {
        // Escaped as `list` escapes names: a comment holding a newline, a terminal escape or
        // a bidirectional control cannot forge another line of this output.
        out!(
            "comment:        {}",
            krypta::fs::escape_path(h.comment.as_bytes())
        );
        if h.stanzas.is_empty() {
            out!(
                "                (checksummed, not authenticated: anyone can write an unencrypted archive)"
            );
        } else {
            out!(
                "                (not yet authenticated: info reads without a key; the header MAC covering the comment is checked once a key opens the archive, e.g. krypta t)"
            );
        }
    }
    match (h.recovery_percent(), &f.recovery) {
        (_, Some(r)) => {
            let p = r.located.layout.params;
            out!(
                "recovery:       {}% Reed-Solomon, {} bytes ({}-byte shards, {} MiB segments)",
                p.percent,
                r.located.layout.file_len - p.protected_len,
                p.shard_size,
                (u64::from(p.shard_size) * u64::from(p.shards_per_segment)) >> 20
            );
            out!(
                "                over the first {} bytes (BLAKE3 {})",
                p.protected_len,
                hex(&p.blake3)
            );
        }
        (Some(percent), None) if f.size.is_none() => {
            out!("recovery:       {percent}% (it follows the archive; not read from a pipe)")
        }
        (Some(percent), None) => out!(
            "recovery:       {percent}% announced, but the recovery data was not found (cut off or damaged)"
        ),
        (None, None) => out!("recovery:       none"),
    }
    if let Some(size) = f.size {
        out!("size:           {size} bytes");
    }
    if let Some(ft) = &f.footer {
        out!("data blocks:    {}", ft.data_frames);
        out!("index blocks:   {}", ft.index_frames);
    }
    super::write_stdout(&o)
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) fn mode_string(kind: krypta::format::EntryKind, mode: u32) -> String {
    let mut s = String::with_capacity(10);
    s.push(kind.letter());
    let bits = [
        (0o400, 'r'),
        (0o200, 'w'),
        (0o100, 'x'),
        (0o40, 'r'),
        (0o20, 'w'),
        (0o10, 'x'),
        (0o4, 'r'),
        (0o2, 'w'),
        (0o1, 'x'),
    ];
    for (i, (b, c)) in bits.iter().enumerate() {
        let special = match i {
            2 => mode & 0o4000 != 0,
            5 => mode & 0o2000 != 0,
            8 => mode & 0o1000 != 0,
            _ => false,
        };
        let set = mode & b != 0;
        s.push(match (special, set, i) {
            (true, true, 8) => 't',
            (true, false, 8) => 'T',
            (true, true, _) => 's',
            (true, false, _) => 'S',
            (false, true, _) => *c,
            (false, false, _) => '-',
        });
    }
    s
}

/// How `list` prints entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListStyle {
    /// `mode size time name`.
    Short,
    /// `mode owner size stored ratio time name` (`-l`).
    Long,
    /// Long plus the frames the entry spans (`-l -v`).
    LongVerbose,
    /// Short plus owner and the frames the entry spans (`-v`).
    Verbose,
    /// `BLAKE3  path` lines for `b3sum --check` (`--b3`).
    B3,
}

/// `stored / size` as a percentage with one decimal, `-` for an empty entry.
pub(crate) fn ratio(stored: u64, size: u64) -> String {
    if size == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", stored as f64 * 100.0 / size as f64)
    }
}

/// Prints `list` output. Names are raw bytes; undecodable bytes and control characters are
/// shown escaped (`\xHH`, `\n`, `\\`). `stored` is each entry's share of the archive
/// (`super::entries`), `frames` the data frame body lengths.
/// The owner column: `user/group` by the names the archive stores (as `tar tv` shows them),
/// each the numeric id when no name is stored or `numeric` (`--numeric-owner`).
fn owner(meta: &krypta::format::EntryMeta, numeric: bool) -> String {
    let show = |name: &Option<Vec<u8>>, id: u32| match name {
        Some(n) if !numeric => krypta::fs::escape_path(n),
        _ => id.to_string(),
    };
    format!(
        "{:>8}/{:<8}",
        show(&meta.user, meta.uid),
        show(&meta.group, meta.gid)
    )
}

pub(crate) fn print_list(
    views: &[EntryView<'_>],
    stored: &[u64],
    frames: &[u32],
    (style, numeric): (ListStyle, bool),
    clock: &Clock,
) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let w = |e: std::io::Error| Error::io("<stdout>", "write", e);
    // On a terminal, --b3 names are shown escaped as every listing's are (a hostile name
    // must not send control sequences to the terminal); into a pipe they stay b3sum's bytes.
    let tty = std::io::IsTerminal::is_terminal(&stdout);
    for (e, &stored) in views.iter().zip(stored) {
        if style == ListStyle::B3 && tty {
            let Some(digest) = e.digest else { continue };
            let name = krypta::fs::escape_path(&e.meta.path);
            let mark = if name.as_bytes() == e.meta.path.as_slice() {
                ""
            } else {
                "\\"
            };
            writeln!(out, "{mark}{}  {name}", hex(&digest)).map_err(w)?;
            continue;
        }
        if style == ListStyle::B3 {
            let Some(digest) = e.digest else { continue };
            // b3sum's format: a leading backslash marks a name with escaped '\' or '\n'.
            let needs = e.meta.path.iter().any(|&c| c == b'\\' || c == b'\n');
            if needs {
                out.write_all(b"\\").map_err(w)?;
            }
            write!(out, "{}  ", hex(&digest)).map_err(w)?;
            if needs {
                let esc: Vec<u8> = e
                    .meta
                    .path
                    .iter()
                    .flat_map(|&c| match c {
                        b'\\' => b"\\\\".to_vec(),
                        b'\n' => b"\\n".to_vec(),
                        c => vec![c],
                    })
                    .collect();
                out.write_all(&esc).map_err(w)?;
            } else {
                out.write_all(&e.meta.path).map_err(w)?;
            }
            out.write_all(b"\n").map_err(w)?;
            continue;
        }
        let name = krypta::fs::escape_path(&e.meta.path);
        let link = match e.meta.kind {
            krypta::format::EntryKind::Symlink => {
                format!(" -> {}", krypta::fs::escape_path(&e.meta.link))
            }
            krypta::format::EntryKind::Hardlink => {
                format!(" link to {}", krypta::fs::escape_path(&e.meta.link))
            }
            _ => String::new(),
        };
        let mode = mode_string(e.meta.kind, e.meta.mode);
        let time = clock.show(e.meta.mtime.secs);
        let owner = owner(e.meta, numeric);
        let blocks = || {
            format!(
                "  [blocks {}-{}, {} bytes stored in them]",
                e.frames.0,
                e.frames.1,
                spanned_bytes(e, frames)
            )
        };
        match style {
            ListStyle::Verbose => writeln!(
                out,
                "{mode} {owner} {:>12} {time} {name}{link}{}",
                e.size,
                blocks()
            ),
            ListStyle::Long | ListStyle::LongVerbose => writeln!(
                out,
                "{mode} {owner} {:>12} {:>12} {:>6} {time} {name}{link}{}",
                e.size,
                stored,
                ratio(stored, e.size),
                if style == ListStyle::LongVerbose {
                    blocks()
                } else {
                    String::new()
                }
            ),
            _ => writeln!(out, "{mode} {:>12} {time} {name}{link}", e.size),
        }
        .map_err(w)?;
    }
    out.flush().map_err(w)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_percent_of_the_content() {
        assert_eq!(ratio(4567, 120_000), "3.8%");
        assert_eq!(ratio(48, 0), "-");
        assert_eq!(ratio(1100, 1000), "110.0%");
    }

    #[test]
    fn modes_show_special_bits_like_ls() {
        use krypta::format::EntryKind;
        assert_eq!(mode_string(EntryKind::File, 0o4755), "-rwsr-xr-x");
        assert_eq!(mode_string(EntryKind::Dir, 0o1777), "drwxrwxrwt");
        assert_eq!(mode_string(EntryKind::File, 0o2640), "-rw-r-S---");
    }
}
