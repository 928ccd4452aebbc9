//! One flipped bit in the header, found and undone by its tag (docs/FORMAT.md §11, "A
//! header whose tag fails").
//!
//! The header is the one part of an archive without recovery data whose damage lost
//! everything: every frame, the index and the footer verify on their own (their tags bind
//! the archive id, not the header tag), but a reader stops at a header whose tag fails.
//! Bit rot flips single bits; so when the tag fails, the reader tries each header with one
//! bit flipped back and takes the one whose tag verifies. The tag (a 256-bit BLAKE3 or
//! HMAC-SHA256) is the proof: the header used is one the writer wrote, byte for byte, never
//! a guess. Nothing else is accepted: two or more flipped bits are refused as before.
//!
//! Choices (do not undo without reading these):
//! - **Every bit but the length field's.** The header length (bytes 12..16) says how many
//!   bytes were read: a flip there is not undone (the prefix check refuses most such values
//!   anyway). Flips of the magic, the version and the flags are undone like any other.
//! - **Unencrypted headers are fixed before the key is asked for** (the tag needs no key);
//!   **encrypted ones once a stanza opened** (the tag is keyed). A flipped bit in the
//!   archive id would make every stanza fail (the wrap binds the id, §3.2): the stanzas are
//!   tried with the id's 128 one-bit neighbours too, at the cost of one HKDF and one HMAC
//!   each (the KDF runs once: `crypto::stanza::unwrap_among`). A flipped bit inside the
//!   stanza that opens is key material and cannot be undone; one in another stanza can. A
//!   flip that turns the kind of the stanza that would open into a kind this krypta does
//!   not know is not undone either: such a header parses (unknown kinds are skipped, §3.2),
//!   so it reads as a stanza of a newer krypta and nothing opens.
//! - **An encrypted header that does not parse** (a flip in the magic, the version, the
//!   flags, a count or a length): its candidates can only be checked once a stanza opened.
//!   The flips that make it parse as an encrypted header (those with stanzas of unknown
//!   kinds dropped when there are several) must share their stanzas and id: the stanzas are
//!   tried, and each candidate's tag checked under the key they give; when none verifies,
//!   or the candidates would need different keys, the header is refused as before, with the
//!   error it gave as read. `info` (no
//!   key) refuses it as before.
//! - **Headers up to [`SEARCH_MAX`] bytes**: each candidate is parsed and its tag computed
//!   over the whole header, so the search costs 8 × H² bytes hashed: about 2 ms for the usual
//!   header of 150–300 bytes, 0.3 s at 8 KiB (six pq-box recipients). A longer header is
//!   refused as before.
//! - **Reported, never silent**: `x` warns and restores; `t` fails (2 encrypted, 5 not): the
//!   file is not as written, and without recovery data nothing rewrites it.

use crate::format::header::{Header, TAG_LEN};

/// The longest header searched (module doc).
pub const SEARCH_MAX: usize = 8 << 10;

/// Byte range of the header length field, whose bits are never flipped (module doc).
const LEN_FIELD: std::ops::Range<usize> = 12..16;

/// A header read with one bit flipped back ([`fix`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderFix {
    /// The byte, from the archive's start.
    pub byte: usize,
    /// The bit in it (0 = least significant).
    pub bit: u8,
}

/// The headers `bytes` becomes with one bit flipped (none in the length field) that parse,
/// with the flip and the tag each carries.
fn flips(bytes: &[u8]) -> impl Iterator<Item = (HeaderFix, Vec<u8>, Header)> + '_ {
    (0..bytes.len() * 8).filter_map(move |i| {
        let fix = HeaderFix {
            byte: i / 8,
            bit: (i % 8) as u8,
        };
        if LEN_FIELD.contains(&fix.byte) {
            return None;
        }
        let mut b = bytes.to_vec();
        b[fix.byte] ^= 1 << fix.bit;
        let (h, _) = Header::parse(&b).ok()?;
        Some((fix, b, h))
    })
}

/// The one header, `bytes` with one bit flipped back, that parses and whose tag `verifies`
/// (given the parsed header, the bytes before the tag and the tag): the header and its bytes.
/// None when no flip verifies (or, which a 256-bit tag makes impossible in practice, more
/// than one).
pub(super) fn fix(
    bytes: &[u8],
    mut verifies: impl FnMut(&Header, &[u8], &[u8; TAG_LEN]) -> bool,
) -> Option<(HeaderFix, Header, Vec<u8>)> {
    if bytes.len() < TAG_LEN || bytes.len() > SEARCH_MAX {
        return None;
    }
    let mut found = None;
    for (f, b, h) in flips(bytes) {
        let (body, tag) = b.split_at(b.len() - TAG_LEN);
        if verifies(&h, body, tag.try_into().expect("32 bytes")) {
            if found.is_some() {
                return None;
            }
            found = Some((f, h, b));
        }
    }
    found
}

/// Of an encrypted header that does not parse: the headers with one bit flipped that parse
/// and are encrypted, to be checked by their tags once a stanza opens (module doc). When
/// several parse, those with a stanza of a kind this krypta does not know are dropped (a
/// flipped kind parses back to its own and, as often, to an unknown one); the rest must
/// share their stanzas and id (so one key checks them all: a flip in the block size or the
/// level), else none is returned.
pub(super) fn sealed_candidates(bytes: &[u8]) -> Vec<(HeaderFix, Header, Vec<u8>)> {
    if bytes.len() > SEARCH_MAX {
        return Vec::new();
    }
    let mut parsed: Vec<_> = flips(bytes)
        .filter(|(_, _, h)| h.encrypted())
        .map(|(f, b, h)| (f, h, b))
        .collect();
    if parsed.len() > 1 {
        parsed.retain(|(_, h, _)| {
            !h.stanzas
                .iter()
                .any(|s| matches!(s, crate::format::Stanza::Unknown { .. }))
        });
    }
    let same_key = parsed.iter().all(|(_, h, _)| {
        h.stanzas == parsed[0].1.stanzas && h.archive_id == parsed[0].1.archive_id
    });
    if same_key { parsed } else { Vec::new() }
}

/// The id's 128 one-bit neighbours, in bit order (module doc: a flipped bit in the id).
pub(super) fn id_neighbours(id: &[u8; 16]) -> Vec<[u8; 16]> {
    (0..128)
        .map(|i| {
            let mut n = *id;
            n[i / 8] ^= 1 << (i % 8);
            n
        })
        .collect()
}

/// The flip that made `id` of `neighbour` (one of [`id_neighbours`]), at the id's place in
/// the header (byte 16).
pub(super) fn id_fix(neighbour: usize) -> HeaderFix {
    HeaderFix {
        byte: 16 + neighbour / 8,
        bit: (neighbour % 8) as u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::frame::Protection;
    use crate::crypto::keys::{FileKey, Subkeys};
    use crate::format::extension::Extension;
    use crate::format::{Stanza, Version};

    fn header(stanzas: Vec<Stanza>) -> Header {
        Header {
            version: Version::V2,
            extensions: vec![Extension::Recovery { percent: 5 }],
            archive_id: [0x5a; 16],
            created: 1_700_000_000,
            block_size: 4 << 20,
            level: 3,
            stanzas,
            comment: "nightly".into(),
        }
    }

    fn tagged(h: &Header, p: &Protection) -> Vec<u8> {
        let mut b = h.write_untagged();
        let tag = p.header_tag(&b);
        b.extend_from_slice(&tag);
        b
    }

    fn plain(h: &Header, body: &[u8], tag: &[u8; 32]) -> bool {
        !h.encrypted() && Protection::Plain.verify_header(body, tag).is_ok()
    }

    #[test]
    fn every_flipped_bit_of_a_plain_header_but_its_length_is_undone() {
        let good = tagged(&header(vec![]), &Protection::Plain);
        for i in 0..good.len() * 8 {
            let mut bad = good.clone();
            bad[i / 8] ^= 1 << (i % 8);
            let got = fix(&bad, plain);
            if LEN_FIELD.contains(&(i / 8)) {
                assert_eq!(got, None, "bit {i}");
                continue;
            }
            let (f, h, b) = got.unwrap_or_else(|| panic!("bit {i} not undone"));
            assert_eq!(
                (f.byte, f.bit),
                (i / 8, (i % 8) as u8),
                "bit {i} named wrong"
            );
            assert_eq!(b, good, "bit {i}");
            assert_eq!(h, header(vec![]));
        }
    }

    #[test]
    fn two_flipped_bits_are_not_undone() {
        let good = tagged(&header(vec![]), &Protection::Plain);
        let mut bad = good.clone();
        bad[40] ^= 1;
        bad[70] ^= 4;
        assert_eq!(fix(&bad, plain), None);
        // Nor an intact header (nothing to undo: every flip breaks its tag).
        assert_eq!(fix(&good, plain), None);
    }

    #[test]
    fn a_sealed_header_is_undone_only_under_its_key() {
        let stanzas = vec![Stanza::KeyFile {
            wrapped: [1; 32],
            tag: [2; 32],
        }];
        let h = header(stanzas);
        let key = FileKey::from_bytes([7; 32]);
        let p = Protection::Sealed(Box::new(Subkeys::derive(&key, &h.archive_id)));
        let good = tagged(&h, &p);
        let mut bad = good.clone();
        bad[good.len() - 40] ^= 0x10; // in the comment or extensions
        let sealed = |h: &Header, body: &[u8], tag: &[u8; 32]| {
            h.encrypted() && p.verify_header(body, tag).is_ok()
        };
        let (f, _, b) = fix(&bad, sealed).expect("undone under the key");
        assert_eq!((f.byte, f.bit), (good.len() - 40, 4));
        assert_eq!(b, good);
        // Another key verifies no flip; nor does the key-less check.
        let other = Protection::Sealed(Box::new(Subkeys::derive(
            &FileKey::from_bytes([8; 32]),
            &h.archive_id,
        )));
        let wrong = |h: &Header, body: &[u8], tag: &[u8; 32]| {
            h.encrypted() && other.verify_header(body, tag).is_ok()
        };
        assert_eq!(fix(&bad, wrong), None);
        assert_eq!(fix(&bad, plain), None);
    }

    #[test]
    fn an_unparsable_sealed_header_keeps_the_candidates_one_key_checks() {
        let h = header(vec![Stanza::KeyFile {
            wrapped: [1; 32],
            tag: [2; 32],
        }]);
        let good = tagged(&h, &Protection::Plain); // the tag is not looked at here
        // The stanza count 1 → 3: the header no longer parses; one flip makes it parse.
        let mut bad = good.clone();
        bad[46] ^= 2;
        assert!(Header::parse(&bad).is_err());
        let c = sealed_candidates(&bad);
        assert_eq!(c.len(), 1);
        let (f, got, b) = c[0].clone();
        assert_eq!((f.byte, f.bit), (46, 1));
        assert_eq!((got, b), (h.clone(), good.clone()));
        // The magic's first byte.
        let mut bad = good.clone();
        bad[0] ^= 0x80;
        let c = sealed_candidates(&bad);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].0.byte, c[0].0.bit, &c[0].2), (0, 7, &good));
        // The level 3 → 11: several flips make it parse again (any level bit back to ≤ 9),
        // all with the same stanzas, so all are kept for the key to tell apart.
        let mut bad = good.clone();
        bad[44] ^= 8;
        let c = sealed_candidates(&bad);
        assert!(c.len() > 1, "{}", c.len());
        assert!(
            c.iter()
                .any(|(f, _, b)| (f.byte, f.bit) == (44, 3) && *b == good)
        );
        assert!(c.iter().all(|(_, x, _)| x.stanzas == h.stanzas));
    }

    #[test]
    fn a_header_longer_than_the_search_bound_is_not_searched() {
        let mut h = header(vec![]);
        h.comment = "x".repeat(SEARCH_MAX);
        let good = tagged(&h, &Protection::Plain);
        let mut bad = good.clone();
        bad[40] ^= 1;
        assert_eq!(fix(&bad, plain), None);
    }

    #[test]
    fn the_id_neighbours_name_their_bit() {
        let id = [0u8; 16];
        let n = id_neighbours(&id);
        assert_eq!(n.len(), 128);
        assert_eq!(n[0][0], 1);
        assert_eq!(n[127][15], 0x80);
        assert_eq!(id_fix(127), HeaderFix { byte: 31, bit: 7 });
        assert_eq!(id_fix(0), HeaderFix { byte: 16, bit: 0 });
    }
}
