//! [`DoubleArrayTrie`]: the trie as base/check arrays (child `c` of slot `s` is slot
//! `base[s] ^ c`, owned by `s` when `check[that] == s`), threaded for depth-first walks by a
//! first-child label and a skip link per slot.

use crate::cell::{Duplicates, NO_TOKEN};
use crate::index::{NodeId, NodeTokens, TrieKind, TrieVisitor, VocabIndex};
use crate::{Error, FlatTrie, Result, TokenId, Vocabulary};

/// `check` of a slot without a parent (the root and free slots), and `skip` of a slot whose
/// subtree ends the trie.
const NONE: u32 = u32::MAX;
/// Bit budget of `Slot::shape` (16 bits): bits 0..10 pops (as in [`FlatTrie`], up to 1023),
/// bit 15 set when the slot has children (then `first` is the smallest child's label).
const POPS_MASK: u16 = (1 << 10) - 1;
const HAS_CHILD: u16 = 1 << 15;
/// Slots per block. `base ^ label` changes only the low 8 bits, so a node's children share
/// the block of its base.
const BLOCK: usize = 256;
/// Blocks still searched for free slots; older ones are closed (their holes stay empty), which
/// bounds the search cost per node (the policy of darts-clone).
const OPEN_BLOCKS: usize = 16;
/// The largest number of slots (slot indices stay below [`NONE`]).
const MAX_SLOTS: usize = (u32::MAX as usize) & !(BLOCK - 1);

/// One slot of the double array (20 bytes).
#[derive(Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[repr(C)]
struct Slot {
    /// Children are at `base ^ label`.
    base: u32,
    /// The parent slot, or [`NONE`].
    check: u32,
    /// Token cell (see [`crate::cell`]).
    cell: u32,
    /// The slot that follows this node's subtree in depth-first order, or [`NONE`].
    skip: u32,
    /// This slot's own label (the byte from its parent).
    label: u8,
    /// The smallest child's label, if [`HAS_CHILD`].
    first: u8,
    /// Pops and [`HAS_CHILD`].
    shape: u16,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 20);

const FREE: Slot = Slot {
    base: 0,
    check: NONE,
    cell: NO_TOKEN,
    skip: NONE,
    label: 0,
    first: 0,
    shape: 0,
};

impl Slot {
    #[inline(always)]
    fn has_child(self) -> bool {
        self.shape & HAS_CHILD != 0
    }

    #[inline(always)]
    fn pops(self) -> usize {
        usize::from(self.shape & POPS_MASK)
    }
}

/// A byte trie stored as a double array: `O(1)` child lookup by `base ^ byte` plus a `check`
/// of the parent.
///
/// For depth-first walks each slot also keeps its smallest child's label (descending is
/// `base ^ first`) and a skip link to the slot that follows its subtree in depth-first order,
/// with the same pop counts as [`FlatTrie`]: after accepting a node the walk descends or
/// follows the skip link, after rejecting one it follows the skip link. Both choices are
/// selects, not branches, so the walk runs like the flat trie's, only over scattered slots.
///
/// Built from a [`FlatTrie`]: slots are allocated in 256-slot blocks, XOR addressing keeps each
/// node's children inside one block.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct DoubleArrayTrie {
    slots: Vec<Slot>,
    dups: Duplicates,
    num_tokens: usize,
    num_nodes: usize,
}

impl DoubleArrayTrie {
    /// Builds a trie over [`Vocabulary::indexable_ids`]: every token neither special nor empty.
    ///
    /// # Errors
    ///
    /// As [`DoubleArrayTrie::build`].
    pub fn new(vocab: &Vocabulary) -> Result<DoubleArrayTrie> {
        Self::build(vocab, vocab.indexable_ids())
    }

    /// Builds a trie over the given ids, with the same rules as [`FlatTrie::build`].
    ///
    /// # Errors
    ///
    /// As [`FlatTrie::build`], and [`Error::TrieTooLarge`] past 2^32 − 256 slots.
    pub fn build(
        vocab: &Vocabulary,
        ids: impl IntoIterator<Item = TokenId>,
    ) -> Result<DoubleArrayTrie> {
        Self::from_flat(FlatTrie::build(vocab, ids)?)
    }

    /// Converts a flat trie (same tokens, same walks).
    ///
    /// # Errors
    ///
    /// [`Error::TrieTooLarge`] past 2^32 − 256 slots.
    pub fn from_flat(flat: FlatTrie) -> Result<DoubleArrayTrie> {
        let _span = tracing::debug_span!("double_array_build").entered();
        let num_nodes = flat.num_nodes();
        let num_tokens = flat.num_tokens();
        let mut alloc = Allocator::default();
        let mut slots: Vec<Slot> = Vec::new();
        alloc.new_block(&mut slots)?;
        alloc.take(0);
        // slot_of[i]: the slot of flat node i (assigned when its parent is placed, and flat
        // nodes are in depth-first order, so before node i is reached).
        let mut slot_of = vec![0u32; num_nodes];
        let mut labels: Vec<u8> = Vec::with_capacity(BLOCK);
        let mut children: Vec<usize> = Vec::with_capacity(BLOCK);
        for i in 0..num_nodes {
            let (_, cell, subtree, pops) = flat.raw(i);
            let s = slot_of[i] as usize;
            slots[s].cell = cell;
            slots[s].shape = pops as u16;
            if subtree == 1 {
                continue;
            }
            labels.clear();
            children.clear();
            let mut c = i + 1;
            while c < i + subtree {
                let (byte, _, size, _) = flat.raw(c);
                labels.push(byte);
                children.push(c);
                c += size;
            }
            let base = alloc.find(&labels, &mut slots)?;
            slots[s].base = base;
            slots[s].first = labels[0];
            slots[s].shape |= HAS_CHILD;
            for (&label, &child) in labels.iter().zip(&children) {
                let t = (base ^ u32::from(label)) as usize;
                alloc.take(t);
                slot_of[child] = t as u32;
                slots[t].check = s as u32;
                slots[t].label = label;
            }
        }
        // Skip links, now that every node has its slot.
        for i in 0..num_nodes {
            let (_, _, subtree, _) = flat.raw(i);
            let after = slot_of.get(i + subtree).copied().unwrap_or(NONE);
            slots[slot_of[i] as usize].skip = after;
        }
        slots.shrink_to_fit();
        tracing::debug!(
            slots = slots.len(),
            nodes = num_nodes,
            "built double-array trie"
        );
        Ok(DoubleArrayTrie {
            slots,
            dups: flat.into_duplicates(),
            num_tokens,
            num_nodes,
        })
    }

    /// The number of slots, used or not.
    pub fn num_slots(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn slot(&self, node: NodeId) -> Option<&Slot> {
        self.slots.get(node.0 as usize)
    }

    /// The walk of [`VocabIndex::walk_below`] below `top`; returns the pending pops, relative
    /// to the depth of the node after `top`'s subtree.
    #[inline(always)]
    fn walk_inner<V: TrieVisitor, const SPARE: bool>(
        &self,
        top: Slot,
        spare: TokenId,
        visitor: &mut V,
    ) -> usize {
        let slots = &self.slots[..];
        let end = top.skip;
        let mut t = top.base ^ u32::from(top.first);
        let mut pending = 0;
        while t != end {
            let n = slots[t as usize];
            visitor.pop_bytes(pending);
            if visitor.push_byte(n.label) {
                self.dups.report::<V, SPARE>(n.cell, spare, visitor);
                let (next, pops) = if n.has_child() {
                    (n.base ^ u32::from(n.first), 0)
                } else {
                    (n.skip, n.pops())
                };
                t = next;
                pending = pops;
            } else {
                t = n.skip;
                pending = n.pops() - 1;
            }
        }
        pending
    }
}

/// Free-slot search over 256-slot blocks.
#[derive(Default)]
struct Allocator {
    /// Per block, a bitmap of used slots.
    used: Vec<[u64; 4]>,
    /// Per block, the number of free slots.
    free: Vec<u16>,
    /// Blocks still searched, oldest first.
    open: Vec<u32>,
}

impl Allocator {
    fn new_block(&mut self, slots: &mut Vec<Slot>) -> Result<u32> {
        let block = self.used.len();
        if (block + 1) * BLOCK > MAX_SLOTS {
            return Err(Error::TrieTooLarge {
                what: "slots",
                needed: (block + 1) * BLOCK,
                limit: MAX_SLOTS,
            });
        }
        self.used.push([0; 4]);
        self.free.push(BLOCK as u16);
        if self.open.len() == OPEN_BLOCKS {
            self.open.remove(0);
        }
        self.open.push(block as u32);
        slots.resize(slots.len() + BLOCK, FREE);
        Ok(block as u32)
    }

    #[inline]
    fn is_free(used: &[u64; 4], unit: usize) -> bool {
        used[unit >> 6] & (1 << (unit & 63)) == 0
    }

    fn take(&mut self, slot: usize) {
        let block = slot / BLOCK;
        let unit = slot % BLOCK;
        debug_assert!(Self::is_free(&self.used[block], unit));
        self.used[block][unit >> 6] |= 1 << (unit & 63);
        self.free[block] -= 1;
        if self.free[block] == 0 {
            self.open.retain(|&b| b as usize != block);
        }
    }

    /// A base whose slots `base ^ label` are all free, for sorted distinct `labels`.
    fn find(&mut self, labels: &[u8], slots: &mut Vec<Slot>) -> Result<u32> {
        let first = usize::from(labels[0]);
        for &block in &self.open {
            let b = block as usize;
            if usize::from(self.free[b]) < labels.len() {
                continue;
            }
            let used = &self.used[b];
            for (w, &word) in used.iter().enumerate() {
                let mut free_bits = !word;
                while free_bits != 0 {
                    let unit = w * 64 + free_bits.trailing_zeros() as usize;
                    free_bits &= free_bits - 1;
                    let x = unit ^ first;
                    if labels[1..]
                        .iter()
                        .all(|&l| Self::is_free(used, x ^ usize::from(l)))
                    {
                        return Ok((b * BLOCK + x) as u32);
                    }
                }
            }
        }
        let block = self.new_block(slots)?;
        Ok(block * BLOCK as u32)
    }
}

impl VocabIndex for DoubleArrayTrie {
    #[inline]
    fn root(&self) -> NodeId {
        NodeId(0)
    }

    #[inline]
    fn child(&self, node: NodeId, byte: u8) -> Option<NodeId> {
        let s = self.slot(node)?;
        if !s.has_child() {
            return None;
        }
        let t = s.base ^ u32::from(byte);
        let child = self.slots.get(t as usize)?;
        (child.check == node.0).then_some(NodeId(t))
    }

    fn tokens_at(&self, node: NodeId) -> NodeTokens<'_> {
        match self.slot(node) {
            Some(s) => self.dups.tokens(s.cell),
            None => NodeTokens::none(),
        }
    }

    #[inline]
    fn walk_below<V: TrieVisitor>(&self, node: NodeId, visitor: &mut V) {
        let Some(&top) = self.slot(node) else { return };
        if !top.has_child() {
            return;
        }
        let pending = match visitor.spare_id() {
            Some(spare) => self.walk_inner::<V, true>(top, spare, visitor),
            None => self.walk_inner::<V, false>(top, TokenId::default(), visitor),
        };
        // The last node's pops lead to the node after `node`'s subtree; stop at `node`.
        visitor.pop_bytes(pending - top.pops());
    }

    fn num_tokens(&self) -> usize {
        self.num_tokens
    }

    fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    fn memory_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>() + self.dups.memory_bytes()
    }

    fn kind(&self) -> TrieKind {
        TrieKind::DoubleArray
    }
}

impl std::fmt::Debug for DoubleArrayTrie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoubleArrayTrie")
            .field("tokens", &self.num_tokens)
            .field("nodes", &self.num_nodes)
            .field("slots", &self.slots.len())
            .field("memory_bytes", &self.memory_bytes())
            .finish()
    }
}
