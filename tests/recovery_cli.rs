//! Issue 11 §2 through the CLI: archives made with `krypta c --recovery 1|5|10`, damaged on
//! disk as storage damages them (scattered bit flips, lost 512-byte and 4 KiB sectors, one
//! contiguous run), at exactly the documented capacity (m = ⌈N·p/100⌉ shards of 4 KiB) and
//! one shard beyond it, plain and encrypted. At capacity: `t` verifies every entry and exits
//! 7 ("damaged but repairable"), `x` restores the tree exactly, and `repair` — without any
//! key — writes the original bytes. One shard beyond: `repair` refuses and writes nothing,
//! and `x` salvages: exactly the entries of the frames hit are named and missing, every
//! other file is restored byte for byte, no temporary file is left. Seeded.

mod common;
mod recovery_cli_common;

use recovery_cli_common::*;

fn case(percent: u8, encrypted: bool, kind: Kind) {
    let f = Fixture::new(percent, encrypted, 0);
    let m = f.capacity();
    let n = f.shards();
    // At capacity: anywhere in P (header, frames, index, footer).
    let mut at = f.bytes.clone();
    damage(
        &mut at,
        kind,
        m,
        0,
        n - 1,
        u64::from(percent) * 31 + kind as u64,
    );
    assert_ne!(at, f.bytes);
    f.write("at.kry", &at);
    f.assert_repaired("at.kry", &format!("{kind:?} x {m} at {percent}%"));
    // One shard beyond: inside the data frames, so that the index names what is lost.
    let (lo, hi) = f.data_shards();
    let mut beyond = f.bytes.clone();
    let ranges = damage(
        &mut beyond,
        kind,
        m + 1,
        lo,
        hi,
        u64::from(percent) * 77 + 5,
    );
    f.write("beyond.kry", &beyond);
    f.assert_salvaged(
        "beyond.kry",
        &ranges,
        &format!("{kind:?} x {} at {percent}%", m + 1),
    );
}

#[test]
fn flips_at_1_percent() {
    case(1, false, Kind::Flips);
}
#[test]
fn flips_at_5_percent_encrypted() {
    case(5, true, Kind::Flips);
}
#[test]
fn flips_at_10_percent() {
    case(10, false, Kind::Flips);
}
#[test]
fn sectors_512_at_1_percent_encrypted() {
    case(1, true, Kind::Sectors512);
}
#[test]
fn sectors_512_at_5_percent() {
    case(5, false, Kind::Sectors512);
}
#[test]
fn sectors_512_at_10_percent_encrypted() {
    case(10, true, Kind::Sectors512);
}
#[test]
fn sectors_4k_at_1_percent() {
    case(1, false, Kind::Sectors4k);
}
#[test]
fn sectors_4k_at_5_percent_encrypted() {
    case(5, true, Kind::Sectors4k);
}
#[test]
fn sectors_4k_at_10_percent() {
    case(10, false, Kind::Sectors4k);
}
#[test]
fn burst_at_1_percent_encrypted() {
    case(1, true, Kind::Burst);
}
#[test]
fn burst_at_5_percent() {
    case(5, false, Kind::Burst);
}
#[test]
fn burst_at_10_percent_encrypted() {
    case(10, true, Kind::Burst);
}

/// A zeroed 1 MiB run (257 shards when unaligned) in a 12 MiB archive: repaired at 10%
/// (m = 307 here), beyond the data at 5% (m = 154), as README's table says.
#[test]
fn a_zeroed_mebibyte_is_repaired_at_10_percent_and_salvaged_at_5() {
    for (percent, repaired) in [(10u8, true), (5, false)] {
        let f = Fixture::new(percent, false, 8 << 20);
        let (lo, hi) = f.data_shards();
        let mut b = f.bytes.clone();
        let start = (lo + hi) / 2 * SHARD + 1234;
        let range = (start, start + (1 << 20));
        b[range.0 as usize..range.1 as usize].fill(0);
        f.write("mib.kry", &b);
        let what = format!("1 MiB at {percent}% (m = {})", f.capacity());
        assert_eq!(f.capacity() >= 257, repaired, "{what}");
        if repaired {
            f.assert_repaired("mib.kry", &what);
        } else {
            f.assert_salvaged("mib.kry", &[range], &what);
        }
    }
}
