//! Crafting format-2 archives block by block, with valid checksums (or seals), so a test can
//! break exactly one rule of FORMAT.md and see the reader refuse it: block header fields
//! (stream offset, first record, reference length, filter), zstd payloads, the index, the
//! footer and header extensions.

use krypta::codec::{Codec, Filter};
use krypta::crypto::frame::Protection;
use krypta::crypto::keyfile::SymmetricKey;
use krypta::crypto::keys::{FileKey, Subkeys};
use krypta::crypto::stanza::wrap_keyfile;
use krypta::format::Version;
use krypta::format::block::{BLOCK_HEADER_LEN_V2, BlockHeaderV2};
use krypta::format::extension::Extension;
use krypta::format::footer::Footer;
use krypta::format::frame::{FRAME_HEADER_LEN, FrameHeader, FrameKind, TAG_LEN};
use krypta::format::header::Header;
use krypta::format::index::{Index, IndexEntry};
use krypta::format::{EntryKind, EntryMeta, Timestamp};

/// A regular file's metadata at `path` (mode 0644, uid and gid 1000, a fixed mtime).
pub fn file(path: &str) -> EntryMeta {
    EntryMeta {
        path: path.as_bytes().to_vec(),
        kind: EntryKind::File,
        mode: 0o644,
        mtime: Timestamp {
            secs: 1_700_000_000,
            nanos: 1,
        },
        uid: 1000,
        gid: 1000,
        ..EntryMeta::default()
    }
}

/// The archive id of crafted archives.
pub const ID: [u8; 16] = [0x52; 16];
/// The key file crafted encrypted archives are sealed to.
pub const KEY: [u8; 32] = [0x6b; 32];

/// One data block: its header fields and raw bytes; `zstd` compresses it (with `prefix` as
/// raw-content prefix when non-empty) instead of storing it.
#[derive(Clone)]
pub struct Block {
    pub header: BlockHeaderV2,
    pub raw: Vec<u8>,
    pub zstd: bool,
    pub prefix: Vec<u8>,
    /// Replaces the encoded payload (for zstd frame rule tests).
    pub payload: Option<Vec<u8>>,
}

impl Block {
    /// A stored block of `raw` at `stream_offset` whose first record starts at `first`.
    pub fn stored(raw: &[u8], stream_offset: u64, first: Option<u32>) -> Block {
        Block {
            header: BlockHeaderV2 {
                codec: Codec::Store,
                filter: Filter::None,
                raw_len: raw.len() as u32,
                stream_offset,
                first_record: first,
                reference_len: 0,
            },
            raw: raw.to_vec(),
            zstd: false,
            prefix: Vec::new(),
            payload: None,
        }
    }

    fn body(&self) -> Vec<u8> {
        let payload = match (&self.payload, self.zstd) {
            (Some(p), _) => p.clone(),
            (None, false) => self.raw.clone(),
            (None, true) => {
                let mut c = zstd::zstd_safe::CCtx::create();
                c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(true))
                    .unwrap();
                if !self.prefix.is_empty() {
                    c.ref_prefix(&self.prefix).unwrap();
                }
                let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(self.raw.len()));
                c.compress2(&mut out, &self.raw).unwrap();
                out
            }
        };
        let mut h = self.header;
        if self.zstd || self.payload.is_some() {
            h.codec = Codec::Zstd;
        }
        let mut body = h.to_bytes().to_vec();
        body.extend_from_slice(&payload);
        body
    }
}

/// A whole crafted archive.
pub struct Archive {
    pub header: Header,
    pub blocks: Vec<Block>,
    pub index: Index,
    /// The index's block header (stream offset 0, first record 0, no filter) unless changed.
    pub index_block: BlockHeaderV2,
    pub footer_flags: u32,
    pub sealed: bool,
}

/// A plain format-2 header with `extensions`.
pub fn header(extensions: Vec<Extension>) -> Header {
    Header {
        version: Version::V2,
        archive_id: ID,
        created: 1_700_000_000,
        block_size: 64 << 10,
        level: 3,
        stanzas: vec![],
        comment: String::new(),
        extensions,
    }
}

impl Archive {
    /// An archive of `blocks` with `entries` in its index (frame table from the blocks).
    pub fn new(blocks: Vec<Block>, entries: Vec<IndexEntry>) -> Archive {
        Archive {
            header: header(vec![]),
            index: Index {
                entries,
                frame_body_lens: Vec::new(),
                frame_ref_lens: blocks.iter().map(|b| b.header.reference_len).collect(),
            },
            blocks,
            index_block: BlockHeaderV2 {
                codec: Codec::Store,
                filter: Filter::None,
                raw_len: 0,
                stream_offset: 0,
                first_record: Some(0),
                reference_len: 0,
            },
            footer_flags: 0,
            sealed: false,
        }
    }

    fn frame(
        prot: &Protection,
        kind: FrameKind,
        last: bool,
        seq: u64,
        mut body: Vec<u8>,
    ) -> Vec<u8> {
        let fh = FrameHeader {
            kind,
            last,
            body_len: body.len() as u32,
            seq,
        }
        .to_bytes();
        let tag = prot.seal_frame(&ID, &fh, seq, &mut body);
        let mut out = fh.to_vec();
        out.extend_from_slice(&body);
        out.extend_from_slice(&tag);
        out
    }

    /// Where data frame `k` starts: after the header with its stanza (when sealed) and its
    /// tag, and the data frames before it (head, body and tag each).
    #[allow(dead_code)]
    pub fn frame_offset(&self, k: usize) -> usize {
        let before: usize = self.blocks[..k]
            .iter()
            .map(|b| FRAME_HEADER_LEN + b.body().len() + TAG_LEN)
            .sum();
        self.head().0.len() + before
    }

    /// The header's bytes with its tag, and the protection of the frames after it.
    fn head(&self) -> (Vec<u8>, Protection) {
        let mut header = self.header.clone();
        let prot = if self.sealed {
            let fk = FileKey::from_bytes([0x11; 32]);
            header.stanzas.push(wrap_keyfile(
                &SymmetricKey::from_bytes(KEY),
                &fk,
                &header.archive_id,
            ));
            Protection::Sealed(Box::new(Subkeys::derive(&fk, &header.archive_id)))
        } else {
            Protection::Plain
        };
        let mut out = header.write_untagged();
        let tag = prot.header_tag(&out);
        out.extend_from_slice(&tag);
        (out, prot)
    }

    /// The archive bytes, every tag valid.
    pub fn bytes(&self) -> Vec<u8> {
        let (mut out, prot) = self.head();
        let mut index = self.index.clone();
        index.frame_body_lens.clear();
        for (seq, b) in self.blocks.iter().enumerate() {
            let body = b.body();
            index.frame_body_lens.push(body.len() as u32);
            out.extend(Self::frame(&prot, FrameKind::Data, false, seq as u64, body));
        }
        let index_offset = out.len() as u64;
        let ix = index.write(Version::V2);
        let mut ih = self.index_block;
        ih.raw_len = ix.len() as u32;
        let mut body = ih.to_bytes().to_vec();
        body.extend_from_slice(&ix);
        let n = self.blocks.len() as u64;
        out.extend(Self::frame(&prot, FrameKind::Index, true, n, body));
        let mut f = Footer {
            index_offset,
            data_frames: n,
            index_frames: 1,
        }
        .untagged(Version::V2);
        f[20..24].copy_from_slice(&self.footer_flags.to_le_bytes());
        out.extend_from_slice(&f);
        out.extend_from_slice(&prot.footer_tag(&ID, &f));
        out
    }
}

/// Length of a format-2 block header (for tests that locate fields).
pub const BLOCK_HEADER: usize = BLOCK_HEADER_LEN_V2;
