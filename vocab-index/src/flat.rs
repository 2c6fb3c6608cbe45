//! [`FlatTrie`]: the trie as one `Vec` of 8-byte nodes in depth-first order, walked by a
//! single forward loop in which a rejected subtree is skipped with one addition.

use crate::cell::{self, Duplicates, NO_TOKEN};
use crate::index::{NodeId, NodeTokens, TrieKind, TrieVisitor, VocabIndex};
use crate::{Error, Result, TokenId, Vocabulary};

/// Bit budget of [`Node`] (64 bits in two `u32` words):
///
/// | word   | bits   | field                                                         |
/// |--------|--------|---------------------------------------------------------------|
/// | `lo`   | 0..8   | the byte labelling the edge from the parent                   |
/// | `lo`   | 8..32  | token cell (24 bits: none, one id, or a duplicate group)      |
/// | `hi`   | 0..22  | subtree size, the node included: up to 2^22 − 1 nodes         |
/// | `hi`   | 22..32 | pops: levels to leave after this node, up to 1023             |
///
/// Limits that follow: at most 4,194,303 nodes per trie (Gemma 3's 262k-token vocabulary needs
/// about a third of that) and tokens of at most 1023 bytes (the longest in common vocabularies
/// is 256).
const SUBTREE_BITS: u32 = 22;
const SUBTREE_MASK: u32 = (1 << SUBTREE_BITS) - 1;
const POPS_BITS: u32 = 32 - SUBTREE_BITS;
/// The largest number of nodes, root included.
pub(crate) const MAX_NODES: usize = SUBTREE_MASK as usize;
/// The longest token, in bytes: a node's pops never exceed its depth.
pub(crate) const MAX_DEPTH: usize = (1 << POPS_BITS) - 1;

/// One trie node. `pops` is, for a node at depth `d` whose subtree is followed (in
/// depth-first order) by a node at depth `d'` (or by the end, counted as depth 1), `d - d' + 1`:
/// after an accepted leaf the walk pops `pops` levels, after a rejected node `pops - 1`.
#[derive(Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[repr(C)]
struct Node {
    lo: u32,
    hi: u32,
}

const _: () = assert!(std::mem::size_of::<Node>() == 8);

impl Node {
    #[inline(always)]
    fn new(byte: u8) -> Node {
        Node {
            lo: u32::from(byte) | (NO_TOKEN << 8),
            hi: 0,
        }
    }

    #[inline(always)]
    fn byte(self) -> u8 {
        self.lo as u8
    }

    #[inline(always)]
    fn cell(self) -> u32 {
        self.lo >> 8
    }

    #[inline(always)]
    fn set_cell(&mut self, cell: u32) {
        self.lo = (self.lo & 0xff) | (cell << 8);
    }

    #[inline(always)]
    fn subtree(self) -> usize {
        (self.hi & SUBTREE_MASK) as usize
    }

    #[inline(always)]
    fn pops(self) -> usize {
        (self.hi >> SUBTREE_BITS) as usize
    }

    #[inline(always)]
    fn set_shape(&mut self, subtree: usize, pops: usize) {
        debug_assert!(subtree <= MAX_NODES && pops <= MAX_DEPTH);
        self.hi = subtree as u32 | ((pops as u32) << SUBTREE_BITS);
    }
}

/// A byte trie stored as one vector of 8-byte nodes in depth-first order, children sorted by
/// byte (the layout of llguidance's `TokTrie`).
///
/// A node's subtree is the nodes right after it, so a walk is one forward loop: accepting a
/// node moves to the next one, rejecting it jumps over its subtree with one addition. Each node
/// stores how many levels to pop when its subtree ends, so the walk needs no stack. Duplicate
/// ids (same bytes) live in a side table.
///
/// Child lookup scans the children (skipping their subtrees), except at the root, which has a
/// 256-entry table.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct FlatTrie {
    #[serde(with = "node_bytes")]
    nodes: Vec<Node>,
    dups: Duplicates,
    /// Child of the root for each byte (0: none; the root itself is never a child).
    #[serde(with = "crate::cell::byte_table")]
    root_children: Box<[u32; 256]>,
    num_tokens: usize,
}

impl FlatTrie {
    /// Builds a trie over [`Vocabulary::indexable_ids`]: every token neither special nor empty.
    ///
    /// # Errors
    ///
    /// As [`FlatTrie::build`].
    pub fn new(vocab: &Vocabulary) -> Result<FlatTrie> {
        Self::build(vocab, vocab.indexable_ids())
    }

    /// Builds a trie over the given ids (any order, repeats ignored). Ids with empty bytes are
    /// skipped (the root holds no tokens); special ids are indexed if listed.
    ///
    /// Cost: linear in the selected tokens' total length (the vocabulary is already sorted).
    ///
    /// # Errors
    ///
    /// [`Error::TokenIdOutOfRange`] for an id not in `vocab`, [`Error::TokenTooLong`] for a
    /// token over 1023 bytes, [`Error::TrieTooLarge`] past 4,194,303 nodes.
    pub fn build(vocab: &Vocabulary, ids: impl IntoIterator<Item = TokenId>) -> Result<FlatTrie> {
        let _span = tracing::debug_span!("flat_trie_build").entered();
        let sorted = cell::select_sorted(vocab, ids)?;
        let mut nodes = vec![Node::new(0)];
        let mut dups = Duplicates::default();
        // open[d - 1]: index of the node at depth d on the path to the last token.
        let mut open: Vec<u32> = Vec::new();
        let mut prev: &[u8] = &[];
        for &id in &sorted {
            let bytes = vocab.bytes(id);
            if bytes.len() > MAX_DEPTH {
                return Err(Error::TokenTooLong {
                    id,
                    len: bytes.len(),
                    limit: MAX_DEPTH,
                });
            }
            if bytes == prev {
                let node = &mut nodes[open[bytes.len() - 1] as usize];
                node.set_cell(dups.add(node.cell(), id)?);
                continue;
            }
            let lcp = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
            close(&mut nodes, &mut open, lcp);
            if nodes.len() + (bytes.len() - lcp) > MAX_NODES {
                return Err(Error::TrieTooLarge {
                    what: "nodes",
                    needed: nodes.len() + bytes.len() - lcp,
                    limit: MAX_NODES,
                });
            }
            for &byte in &bytes[lcp..] {
                open.push(nodes.len() as u32);
                nodes.push(Node::new(byte));
            }
            let last = nodes.len() - 1;
            nodes[last].set_cell(id.as_u32());
            prev = bytes;
        }
        close(&mut nodes, &mut open, 0);
        let len = nodes.len();
        nodes[0].set_shape(len, 0);
        dups.finish();
        nodes.shrink_to_fit();

        let mut root_children = Box::new([0u32; 256]);
        let mut child = 1;
        while child < len {
            root_children[usize::from(nodes[child].byte())] = child as u32;
            child += nodes[child].subtree();
        }
        tracing::debug!(nodes = len, tokens = sorted.len(), "built flat trie");
        Ok(FlatTrie {
            nodes,
            dups,
            root_children,
            num_tokens: sorted.len(),
        })
    }

    /// The number of nodes holding more than one id (ids sharing the same bytes).
    pub fn num_duplicate_groups(&self) -> usize {
        self.dups.num_groups()
    }

    #[inline]
    fn node(&self, node: NodeId) -> Option<Node> {
        self.nodes.get(node.0 as usize).copied()
    }

    /// Walks nodes `start..end` (a whole number of sibling subtrees) and returns the pending
    /// pop count, relative to the depth of the node after `end`.
    #[inline(always)]
    fn walk_range<V: TrieVisitor, const SPARE: bool>(
        &self,
        start: usize,
        end: usize,
        spare: TokenId,
        visitor: &mut V,
    ) -> usize {
        let nodes = &self.nodes[..end];
        let mut p = start;
        let mut pending = 0;
        while p < nodes.len() {
            let n = nodes[p];
            visitor.pop_bytes(pending);
            if visitor.push_byte(n.byte()) {
                self.dups.report::<V, SPARE>(n.cell(), spare, visitor);
                pending = if n.subtree() == 1 { n.pops() } else { 0 };
                p += 1;
            } else {
                pending = n.pops() - 1;
                p += n.subtree();
            }
        }
        pending
    }
}

/// Closes the open nodes deeper than `depth`: the next node created (or the end) follows
/// their subtrees, at depth `depth + 1`.
fn close(nodes: &mut [Node], open: &mut Vec<u32>, depth: usize) {
    let len = nodes.len();
    for d in (depth + 1..=open.len()).rev() {
        let i = open[d - 1] as usize;
        // pops = d - d' + 1 with d' = depth + 1 (the end counts as depth 1).
        let pops = d - depth;
        nodes[i].set_shape(len - i, pops);
    }
    open.truncate(depth);
}

impl VocabIndex for FlatTrie {
    #[inline]
    fn root(&self) -> NodeId {
        NodeId(0)
    }

    fn child(&self, node: NodeId, byte: u8) -> Option<NodeId> {
        if node.0 == 0 {
            let c = self.root_children[usize::from(byte)];
            return (c != 0).then_some(NodeId(c));
        }
        let i = node.0 as usize;
        let end = i + self.node(node)?.subtree();
        let mut c = i + 1;
        while c < end {
            let n = self.nodes[c];
            if n.byte() == byte {
                return Some(NodeId(c as u32));
            }
            if n.byte() > byte {
                return None;
            }
            c += n.subtree();
        }
        None
    }

    fn tokens_at(&self, node: NodeId) -> NodeTokens<'_> {
        match self.node(node) {
            Some(n) => self.dups.tokens(n.cell()),
            None => NodeTokens::none(),
        }
    }

    #[inline]
    fn walk_below<V: TrieVisitor>(&self, node: NodeId, visitor: &mut V) {
        let Some(n) = self.node(node) else { return };
        let start = node.0 as usize + 1;
        let end = start - 1 + n.subtree();
        if start < end {
            // The last node's pops lead to the node after `node`'s subtree; stop at `node`.
            let pending = match visitor.spare_id() {
                Some(spare) => self.walk_range::<V, true>(start, end, spare, visitor),
                None => self.walk_range::<V, false>(start, end, TokenId::default(), visitor),
            } - n.pops();
            visitor.pop_bytes(pending);
        }
    }

    fn num_tokens(&self) -> usize {
        self.num_tokens
    }

    fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.dups.memory_bytes()
            + std::mem::size_of::<[u32; 256]>()
    }

    fn kind(&self) -> TrieKind {
        TrieKind::Flat
    }
}

impl std::fmt::Debug for FlatTrie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatTrie")
            .field("tokens", &self.num_tokens)
            .field("nodes", &self.nodes.len())
            .field("duplicate_groups", &self.dups.num_groups())
            .field("memory_bytes", &self.memory_bytes())
            .finish()
    }
}

/// Read access for the double-array builder.
impl FlatTrie {
    /// `(byte, token cell, subtree size, pops)` of node `i`, `i < num_nodes()`.
    pub(crate) fn raw(&self, i: usize) -> (u8, u32, usize, usize) {
        let n = self.nodes[i];
        (n.byte(), n.cell(), n.subtree(), n.pops())
    }

    pub(crate) fn into_duplicates(self) -> Duplicates {
        self.dups
    }
}

/// Serde for the node array as one run of bytes (each node's `lo` then `hi`, little-endian):
/// tables kept on disk read back at the speed of a copy.
mod node_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Node;

    pub(super) fn serialize<S: Serializer>(nodes: &[Node], s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::with_capacity(nodes.len() * 8);
        for node in nodes {
            bytes.extend_from_slice(&node.lo.to_le_bytes());
            bytes.extend_from_slice(&node.hi.to_le_bytes());
        }
        s.serialize_bytes(&bytes)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Node>, D::Error> {
        let bytes = <&[u8]>::deserialize(d)?;
        if bytes.len() % 8 != 0 {
            return Err(serde::de::Error::invalid_length(
                bytes.len(),
                &"a multiple of 8 bytes",
            ));
        }
        let word = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("four bytes"));
        Ok(bytes
            .chunks_exact(8)
            .map(|c| Node {
                lo: word(&c[..4]),
                hi: word(&c[4..]),
            })
            .collect())
    }
}
