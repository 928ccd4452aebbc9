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
//! - **The prefix is a copy** of the previous block's last `window` raw bytes, shared (an
//!   `Arc`) with the worker that compresses the next block: the block buffer itself goes to
//!   its own worker, which may seal it in place. One copy per block (~10 ms for 64 MiB) is
//!   nothing next to zstd 19's seconds per block, and the writer holds one prefix at a time.

use std::sync::Arc;

use crate::codec::REFERENCE_GROUP_BLOCKS;

/// What the next referencing block needs: the raw tail of the block before it.
pub(super) struct Chain {
    /// Most bytes a block references: the zstd window (2^27 at level 9).
    window: usize,
    /// Raw bytes (at most `window`) of the last block cut; empty before the first.
    previous: Arc<Vec<u8>>,
}

impl Chain {
    /// A chain for a zstd window of `window_log` (base-2 log, bytes).
    pub fn new(window_log: u32) -> Chain {
        Chain {
            window: 1usize << window_log,
            previous: Arc::new(Vec::new()),
        }
    }

    /// The prefix data block `seq` (raw bytes `raw`) may reference — empty at a group
    /// start — and remembers `raw` for the block after it.
    pub fn prefix_for(&mut self, seq: u64, raw: &[u8]) -> Arc<Vec<u8>> {
        let tail = raw[raw.len().saturating_sub(self.window)..].to_vec();
        let previous = std::mem::replace(&mut self.previous, Arc::new(tail));
        if seq.is_multiple_of(REFERENCE_GROUP_BLOCKS) {
            Arc::new(Vec::new())
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
        let blocks: Vec<Vec<u8>> = (0..=REFERENCE_GROUP_BLOCKS + 1)
            .map(|i| vec![i as u8; 10 + i as usize])
            .collect();
        let prefixes: Vec<Vec<u8>> = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| c.prefix_for(i as u64, b).to_vec())
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
}
