//! Fuzz target: the record stream of either format version. The first input byte picks the
//! mode: bit 1 the version (0: format 1, 1: format 2); bit 0 even,
//! `format::record::read_record` over a slice source until the end or an error (DATA content
//! is skipped as the reader does; every record head re-serialises to the bytes it came from);
//! odd, `EntryMeta::parse` on the rest (+ write identity; `entry_v2` fuzzes format 2's
//! entries alone).

#![no_main]

use krypta::format::record::{
    ExtentCheck, RecordHead, StreamSource, read_record, write_base_ref, write_data_head, write_end,
    write_entry, write_pad,
};
use krypta::format::{EntryMeta, FormatError, Reader, Version};
use libfuzzer_sys::fuzz_target;

/// A record-stream source over a byte slice, like the reader's decoded blocks.
struct Slice<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl StreamSource for Slice<'_> {
    type Error = FormatError;
    fn fill(&mut self, out: &mut [u8]) -> Result<bool, FormatError> {
        let left = self.buf.len() - self.pos;
        if left == 0 && !out.is_empty() {
            return Ok(false);
        }
        if left < out.len() {
            return Err(FormatError::Truncated {
                what: "fuzz slice",
                needed: out.len() as u64,
                got: left as u64,
            });
        }
        out.copy_from_slice(&self.buf[self.pos..self.pos + out.len()]);
        self.pos += out.len();
        Ok(true)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let version = if mode & 2 == 0 { Version::V1 } else { Version::V2 };
    if mode & 1 == 1 {
        let mut r = Reader::new(rest, "entry");
        if let Ok(meta) = EntryMeta::parse(&mut r, version) {
            meta.check(version).expect("a parsed entry passes the writer's check");
            let mut again = Vec::new();
            meta.write(&mut again, version);
            assert!(
                again == rest[..r.position()],
                "entry re-serialises differently"
            );
        }
        return;
    }
    let mut src = Slice { buf: rest, pos: 0 };
    let mut extents = ExtentCheck::default();
    loop {
        let start = src.pos;
        let head = match read_record(&mut src, version) {
            Ok(Some(h)) => h,
            Ok(None) | Err(_) => return,
        };
        let mut again = Vec::new();
        match &head {
            RecordHead::Pad => write_pad(&mut again, 1),
            RecordHead::Entry(meta) => {
                write_entry(&mut again, meta, version);
                extents = ExtentCheck::default();
            }
            RecordHead::Data { offset, len } => {
                write_data_head(&mut again, *offset, *len);
                let _ = extents.segment(*offset, *len);
            }
            RecordHead::End { size, digest } => {
                write_end(&mut again, *size, digest.as_ref(), version);
                let _ = extents.end(*size);
            }
            RecordHead::BaseRef { entry } => write_base_ref(&mut again, *entry),
        }
        assert!(
            again == rest[start..src.pos],
            "record head re-serialises differently"
        );
        if let RecordHead::Data { len, .. } = head {
            let len = len as usize;
            if src.buf.len() - src.pos < len {
                return;
            }
            src.pos += len;
        }
    }
});
