//! The level-9 writer's referencing blocks (docs/FORMAT.md §5.3): each data block of a group
//! references the raw bytes of the block before it, so zstd's 2^27 window reaches across
//! block edges as `zstd --long=27` does over a whole input.
//!
//! Choices, and why:
//! - **Only the predecessor.** A block's reference length is `L = min(window, raw length of
//!   the block before it)`. The prefix is raw input, known when the block is cut, so the
//!   blocks of a group are still compressed in parallel (no block waits for another's
//!   output), and `L` never reaches past the block before, so the group rule of FORMAT.md
//!   §5.3 holds whatever the workers decide: a block that ends up stored (reference 0)
//!   starts a group early, and the block after it references it alone. A reader resolves `L`
//!   from one decoded block (a slice, never a copy of several blocks). With the default
//!   64 MiB blocks, a block and its prefix fill the 128 MiB window.
//! - **Bounded groups.** Every [`REFERENCE_GROUP_BLOCKS`]-th data block (seq a multiple of
//!   it) references nothing and starts a group, so selective extraction of a file decodes at
//!   most that many blocks, from its group's first (1 GiB at the default block size), and a
//!   damaged block costs at most the rest of its group.
//! - **The prefix is the previous block itself**, not a copy: a cut block is shared (an
//!   `Arc`) by its own worker, this chain, and the worker of the block after it, which
//!   references its last `window` raw bytes ([`Prefix`]). A copy per block cost one more
//!   block of peak memory (issue 13: 473 MiB against zstd's 349 MiB compressing at -j 1):
//!   at -j 1 the writer now holds the block being filled, the block being compressed and
//!   its predecessor, nothing more. A worker that stores its block (sealing it in place)
//!   copies it first when the chain still shares it — only incompressible blocks at level 9.

use std::sync::Arc;

use crate::codec::REFERENCE_GROUP_BLOCKS;

/// The bytes a block's zstd frame may use as its raw-content prefix: a range of a shared
/// buffer (the previous block's, or a test's own bytes), possibly empty.
#[derive(Clone, Default)]
pub(crate) struct Prefix {
    bytes: Arc<Vec<u8>>,
    start: usize,
}

impl Prefix {
    /// No prefix: the block references nothing.
    pub fn none() -> Prefix {
        Prefix::default()
    }

    /// A prefix of exactly these bytes.
    pub fn owned(bytes: Vec<u8>) -> Prefix {
        Prefix {
            bytes: Arc::new(bytes),
            start: 0,
        }
    }

    /// The prefix's bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

/// What the next referencing block needs: the raw tail of the block before it.
pub(super) struct Chain {
    /// Most bytes a block references: the zstd window (2^27 at level 9).
    window: usize,
    /// The last block cut (its raw bytes from `start`, at most `window`); empty before the
    /// first.
    previous: Prefix,
}

impl Chain {
    /// A chain for a zstd window of `window_log` (base-2 log, bytes).
    pub fn new(window_log: u32) -> Chain {
        Chain {
            window: 1usize << window_log,
            previous: Prefix::none(),
        }
    }

    /// The prefix data block `seq` may reference — empty at a group start — and remembers
    /// `block` (whose raw bytes start at `raw_start`) for the block after it.
    pub fn prefix_for(&mut self, seq: u64, block: &Arc<Vec<u8>>, raw_start: usize) -> Prefix {
        let start = raw_start.max(block.len().saturating_sub(self.window));
        let tail = Prefix {
            bytes: Arc::clone(block),
            start,
        };
        let previous = std::mem::replace(&mut self.previous, tail);
        if seq.is_multiple_of(REFERENCE_GROUP_BLOCKS) {
            Prefix::none()
        } else {
            previous
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_block_gets_its_predecessors_tail_and_groups_restart() {
        let mut c = Chain::new(4);
        // Each block has 3 bytes in front of its raw bytes (the frame headers' room).
        let blocks: Vec<Arc<Vec<u8>>> = (0..=REFERENCE_GROUP_BLOCKS + 1)
            .map(|i| {
                let mut b = vec![0xEE; 3];
                b.extend(vec![i as u8; 10 + i as usize]);
                Arc::new(b)
            })
            .collect();
        let prefixes: Vec<Vec<u8>> = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| c.prefix_for(i as u64, b, 3).as_slice().to_vec())
            .collect();
        assert_eq!(prefixes[0], Vec::<u8>::new());
        // Block 1 references the last 16 bytes (the window) of block 0's 10: all of them.
        assert_eq!(prefixes[1], vec![0u8; 10]);
        // Block 3 references the last 16 of block 2's 12 bytes.
        assert_eq!(prefixes[3], vec![2u8; 12]);
        // Block 7's predecessor has 16 bytes, block 8's 17: the window keeps 16.
        assert_eq!(prefixes[8], vec![7u8; 16]);
        assert_eq!(prefixes[9], vec![8u8; 16]);
        let g = REFERENCE_GROUP_BLOCKS as usize;
        assert_eq!(prefixes[g], Vec::<u8>::new(), "a new group");
        assert_eq!(prefixes[g + 1], vec![g as u8; 16]);
    }

    #[test]
    fn the_prefix_shares_the_previous_block_instead_of_copying_it() {
        let mut c = Chain::new(20);
        let a = Arc::new(vec![1u8; 1000]);
        let b = Arc::new(vec![2u8; 1000]);
        assert!(c.prefix_for(1, &a, 0).as_slice().is_empty());
        let p = c.prefix_for(2, &b, 0);
        assert_eq!(p.as_slice(), &a[..]);
        assert!(std::ptr::eq(p.as_slice().as_ptr(), a.as_ptr()));
        // a: this test, p; b: this test and the chain.
        assert_eq!((Arc::strong_count(&a), Arc::strong_count(&b)), (2, 2));
    }
}
