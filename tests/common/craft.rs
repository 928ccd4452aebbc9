//! Crafting unencrypted archives byte by byte, with valid checksums, from entries the library
//! writer would refuse (it never writes what a reader refuses): for the tests of what a
//! reader and the extractor do with hostile archives. [`craft`] writes format 1 (the hostile
//! format-1 archives a reader must keep refusing), [`craft_v2`] format 2.

use krypta::codec::{Codec, Filter};
use krypta::crypto::frame::Protection;
use krypta::format::block::BlockHeaderV2;
use krypta::format::footer::Footer;
use krypta::format::frame::{BlockHeader, FrameHeader, FrameKind};
use krypta::format::header::Header;
use krypta::format::index::{Index, IndexEntry};
use krypta::format::record::{write_data_head, write_end, write_entry};
use krypta::format::{EntryMeta, Version};

/// The archive id of crafted archives.
pub const CRAFT_ID: [u8; 16] = [0xc4; 16];

/// One sealed plain frame holding `raw` stored, with a block header of `version`.
fn frame(version: Version, kind: FrameKind, last: bool, seq: u64, raw: &[u8]) -> Vec<u8> {
    let mut body = match version {
        Version::V1 => BlockHeader {
            codec: Codec::Store,
            filter: Filter::None,
            raw_len: raw.len() as u32,
            filter_start: 0,
        }
        .to_bytes()
        .to_vec(),
        Version::V2 => BlockHeaderV2 {
            codec: Codec::Store,
            filter: Filter::None,
            raw_len: raw.len() as u32,
            stream_offset: 0,
            first_record: Some(0),
            reference_len: 0,
        }
        .to_bytes()
        .to_vec(),
    };
    body.extend_from_slice(raw);
    let fh = FrameHeader {
        kind,
        last,
        body_len: body.len() as u32,
        seq,
    }
    .to_bytes();
    let tag = Protection::Plain.seal_frame(&CRAFT_ID, &fh, seq, &mut body);
    let mut out = fh.to_vec();
    out.extend_from_slice(&body);
    out.extend_from_slice(&tag);
    out
}

/// A format-1 unencrypted archive holding exactly `entries` (metadata as given, unchecked;
/// content for files), all records in one stored data frame, with a matching index and
/// footer.
pub fn craft(entries: &[(EntryMeta, Option<&[u8]>)]) -> Vec<u8> {
    craft_version(Version::V1, entries)
}

/// [`craft`] in format 2 (every file with an END_DIGEST).
pub fn craft_v2(entries: &[(EntryMeta, Option<&[u8]>)]) -> Vec<u8> {
    craft_version(Version::V2, entries)
}

fn craft_version(version: Version, entries: &[(EntryMeta, Option<&[u8]>)]) -> Vec<u8> {
    let mut records = Vec::new();
    let mut index = Vec::new();
    for (meta, content) in entries {
        let first_offset = records.len() as u32;
        write_entry(&mut records, meta, version);
        let (size, digest) = match content {
            Some(c) => {
                if !c.is_empty() {
                    write_data_head(&mut records, 0, c.len() as u32);
                    records.extend_from_slice(c);
                }
                let digest = *blake3::hash(c).as_bytes();
                write_end(&mut records, c.len() as u64, Some(&digest), version);
                (c.len() as u64, Some(digest))
            }
            None => (0, None),
        };
        index.push(IndexEntry {
            meta: meta.clone(),
            size,
            digest,
            first_seq: 0,
            first_offset,
            last_seq: 0,
        });
    }
    let h = Header {
        version,
        extensions: vec![],
        archive_id: CRAFT_ID,
        created: 1_700_000_000,
        block_size: 64 << 10,
        level: 0,
        stanzas: vec![],
        comment: String::new(),
    };
    let mut out = h.write_untagged();
    let tag = Protection::Plain.header_tag(&out);
    out.extend_from_slice(&tag);
    let data_frames = if records.is_empty() { 0 } else { 1 };
    let mut lens = Vec::new();
    if !records.is_empty() {
        let f = frame(version, FrameKind::Data, false, 0, &records);
        lens.push((f.len() - 48) as u32);
        out.extend_from_slice(&f);
    }
    let index_offset = out.len() as u64;
    let ix = Index {
        entries: index,
        frame_ref_lens: vec![0; lens.len()],
        frame_body_lens: lens,
    }
    .write(version);
    out.extend_from_slice(&frame(version, FrameKind::Index, true, data_frames, &ix));
    let footer = Footer {
        index_offset,
        data_frames,
        index_frames: 1,
    }
    .untagged(version);
    out.extend_from_slice(&footer);
    out.extend_from_slice(&Protection::Plain.footer_tag(&CRAFT_ID, &footer));
    out
}
