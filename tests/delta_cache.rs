//! Issue 17, reading delta archives: the base's cache and prefetch thread
//! (`src/archive/reader/base.rs`, "Cache" and "Prefetch"). A delta read with the prefetch
//! thread decodes each base frame at most once when the cache holds the working set, restores
//! the same bytes with any cache budget (a tiny one only costs decodes), and a damaged base
//! frame is still an error naming the base frame, whoever decoded it first.

mod cli_common;
mod common;
mod delta_common;

use std::sync::Arc;

use cli_common::*;
use delta_common::*;
use krypta::archive::reader::{BaseArchive, OpenOptions};

/// v1 and v2 (small change) archived with 256 KiB blocks: the base has 25+ data frames and
/// every delta region spans several of them.
fn pair(fx: &Fx) {
    versions(fx, Change::Small);
    fx.ok(&["c", "-q", "-b", "256K", "base.kry", "v1"]);
    fx.ok(&[
        "c",
        "-q",
        "-b",
        "256K",
        "--base",
        "base.kry",
        "delta.kry",
        "v2",
    ]);
}

#[test]
fn with_the_prefetch_thread_each_base_frame_is_decoded_at_most_once() {
    let fx = Fx::new();
    pair(&fx);
    for jobs in [1, 2, 4] {
        let base = BaseArchive::open(&fx.p("base.kry"), OpenOptions::default())
            .unwrap()
            .shared(jobs);
        let got = read_delta(&fx, Arc::clone(&base), jobs);
        assert_eq!(got["v2/big.bin"], fx.read("v2/big.bin"), "-j {jobs}");
        assert_eq!(got["v2/s/0.dat"], fx.read("v2/s/0.dat"), "-j {jobs}");
        // 6 MiB + 1,000 bytes of big.bin in 256 KiB blocks: the regions reach every one of
        // the 25 frames holding it; no frame twice (the sequential stream's working set fits
        // the default budget).
        let frames = base.data_frames();
        assert!(frames >= 25, "{frames} base frames");
        let decoded = base.frames_decoded();
        assert!(
            (25..=frames).contains(&decoded),
            "-j {jobs}: {decoded} decodes of {frames} frames"
        );
    }
}

#[test]
fn a_cache_smaller_than_a_region_still_restores_every_byte() {
    let fx = Fx::new();
    pair(&fx);
    let mut base = BaseArchive::open(&fx.p("base.kry"), OpenOptions::default()).unwrap();
    // One 256 KiB block: every region (up to 2.25 MiB) evicts its own first frames.
    base.set_cache_budget(256 << 10);
    let base = base.shared(2);
    let got = read_delta(&fx, Arc::clone(&base), 2);
    assert_eq!(got["v2/big.bin"], fx.read("v2/big.bin"));
    assert_eq!(got["v2/s/4.dat"], fx.read("v2/s/4.dat"));
    // Regions overlap their neighbours by 2 MiB: with no room to keep them, frames are
    // decoded again (more decodes than frames), never served wrong.
    assert!(
        base.frames_decoded() > base.data_frames(),
        "{} decodes of {} frames",
        base.frames_decoded(),
        base.data_frames()
    );
}

#[test]
fn a_damaged_base_frame_is_refused_naming_it_with_the_prefetch_thread_running() {
    let fx = Fx::new();
    pair(&fx);
    // The binding covers every frame tag, so damage that keeps the tags (a body byte) is
    // what a region read finds: one byte in the middle of the base's data frames. The big
    // file needs that frame: it is not restored under its final name.
    let at = std::fs::read(fx.p("base.kry")).unwrap().len() / 3;
    assert_a_damaged_base_body_is_refused(&fx, at, 0x40, "2", "v2/big.bin");
}

/// Regression: a region across two base frames whose blocks are as large as the cache budget
/// (one fits: `-b 256M` against the default 256 MiB) evicted its first frame to decode its
/// second, and the next region across the same two frames decoded both again: `t --base` of
/// such a base in a bucket fetched each frame twice (1.0 GB of a 503 MB base). Now the frame
/// a region holds is not evicted while it decodes the next, and two such regions decode
/// each frame once.
#[test]
fn regions_across_two_frames_as_large_as_the_cache_decode_each_once() {
    use krypta::codec::BlockDecoder;
    use krypta::codec::huge::HugeBuf;
    use krypta::format::block::BaseRegion;
    let fx = Fx::new();
    let data = common::bytes(700 << 10, 5, false);
    fx.file("v/a.bin", &data);
    fx.ok(&["c", "-q", "-s", "-b", "256K", "base.kry", "v"]);
    let mut base = BaseArchive::open(&fx.p("base.kry"), OpenOptions::default()).unwrap();
    assert!(base.data_frames() >= 3, "{} frames", base.data_frames());
    base.set_cache_budget(256 << 10);
    let mut dec = BlockDecoder::new().unwrap();
    let mut out = HugeBuf::new();
    // The last 40,000 bytes of frame 0 and the first 60,000 of frame 1, twice, then a
    // region in frame 1 alone: each frame decoded once.
    let across = BaseRegion {
        seq: 0,
        offset: (256 << 10) - 40_000,
        len: 100_000,
    };
    let mut seen = Vec::new();
    for _ in 0..2 {
        base.region(&mut dec, &across, &mut out).unwrap();
        seen.push(out.to_vec());
    }
    assert_eq!(seen[0].len(), 100_000);
    assert!(seen[0] == seen[1]);
    // The record stream of a stored file: its bytes, the file's.
    let piece = &seen[0][50_000..51_000];
    assert!(data.windows(1000).any(|w| w == piece));
    base.region(
        &mut dec,
        &BaseRegion {
            seq: 1,
            offset: 1000,
            len: 5000,
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(base.frames_decoded(), 2);
}
