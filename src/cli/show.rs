//! What `info` and `list` print: header facts, entry lines, modes and times.

use std::io::Write;

use krypta::{Error, Result};

pub(crate) fn print_info(path: &std::path::Path, f: &krypta::archive::reader::ArchiveFacts) {
    let h = &f.header;
    println!("archive:        {}", path.display());
    println!("format version: {}", krypta::format::header::VERSION);
    println!(
        "created:        {} ({})",
        crate::cli::fmt_time(h.created, 0),
        h.created
    );
    println!("archive id:     {}", hex(&h.archive_id));
    let level = if h.level == 0 {
        "store".to_string()
    } else {
        h.level.to_string()
    };
    println!("level:          {level}");
    println!("block size:     {} bytes", h.block_size);
    if h.stanzas.is_empty() {
        println!("encryption:     none (BLAKE3 checksums)");
    } else {
        println!(
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
                    println!(
                        "  argon2id      memory {} KiB ({} MiB), iterations {t}, lanes {p}",
                        m_kib,
                        m_kib / 1024
                    )
                }
                krypta::format::Stanza::Pbkdf2 { iterations, .. } => {
                    println!("  pbkdf2        HMAC-SHA256, {iterations} iterations")
                }
                krypta::format::Stanza::KeyFile { .. } => println!("  keyfile"),
                krypta::format::Stanza::PqBox { .. } => {}
            }
        }
        if pq > 0 {
            println!("  pq-box (ML-KEM-768 + X25519): {pq} recipient(s)");
        }
    }
    if !h.comment.is_empty() {
        // Escaped as `list` escapes names: a comment holding a newline, a terminal escape or
        // a bidirectional control cannot forge another line of this output.
        println!(
            "comment:        {}",
            krypta::fs::escape_path(h.comment.as_bytes())
        );
        if h.stanzas.is_empty() {
            println!(
                "                (checksummed, not authenticated: anyone can write an unencrypted archive)"
            );
        } else {
            println!(
                "                (not yet authenticated: info reads without a key; the header MAC covering the comment is checked once a key opens the archive, e.g. krypta t)"
            );
        }
    }
    if let Some(size) = f.size {
        println!("size:           {size} bytes");
    }
    if let Some(ft) = &f.footer {
        println!("data blocks:    {}", ft.data_frames);
        println!("index blocks:   {}", ft.index_frames);
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `YYYY-MM-DD HH:MM:SS` in UTC for seconds since the epoch (also before 1970).
pub fn fmt_time(secs: i64, _nanos: u32) -> String {
    krypta::timefmt::datetime(secs)
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

/// Prints `list` output. Names are raw bytes; undecodable bytes and control characters are
/// shown escaped (`\xHH`, `\n`, `\\`). With `b3`, prints `b3sum --check` lines instead.
pub fn print_list(
    entries: &[krypta::format::index::IndexEntry],
    frames: &[u32],
    b3: bool,
    verbose: bool,
) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let w = |e: std::io::Error| Error::io("<stdout>", "write", e);
    for e in entries {
        if b3 {
            if e.meta.kind != krypta::format::EntryKind::File {
                continue;
            }
            // b3sum's format: a leading backslash marks a name with escaped '\' or '\n'.
            let needs = e.meta.path.iter().any(|&c| c == b'\\' || c == b'\n');
            if needs {
                out.write_all(b"\\").map_err(w)?;
            }
            write!(out, "{}  ", hex(&e.digest)).map_err(w)?;
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
        let time = fmt_time(e.meta.mtime.secs, e.meta.mtime.nanos);
        if verbose {
            let stored: u64 = frames
                .get(
                    e.first_seq as usize
                        ..=(e.last_seq as usize).min(frames.len().saturating_sub(1)),
                )
                .map(|s| s.iter().map(|&l| l as u64).sum())
                .unwrap_or(0);
            writeln!(
                out,
                "{mode} {:>5}/{:<5} {:>12} {time} {name}{link}  [blocks {}-{}, {} bytes stored in them]",
                e.meta.uid, e.meta.gid, e.size, e.first_seq, e.last_seq, stored
            )
            .map_err(w)?;
        } else {
            writeln!(out, "{mode} {:>12} {time} {name}{link}", e.size).map_err(w)?;
        }
    }
    out.flush().map_err(w)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format_before_and_after_1970() {
        assert_eq!(fmt_time(0, 0), "1970-01-01 00:00:00");
        assert_eq!(fmt_time(-1, 0), "1969-12-31 23:59:59");
        assert_eq!(fmt_time(1_700_000_000, 0), "2023-11-14 22:13:20");
        assert_eq!(fmt_time(951_782_400, 0), "2000-02-29 00:00:00");
    }

    #[test]
    fn modes_show_special_bits_like_ls() {
        use krypta::format::EntryKind;
        assert_eq!(mode_string(EntryKind::File, 0o4755), "-rwsr-xr-x");
        assert_eq!(mode_string(EntryKind::Dir, 0o1777), "drwxrwxrwt");
        assert_eq!(mode_string(EntryKind::File, 0o2640), "-rw-r-S---");
    }
}
