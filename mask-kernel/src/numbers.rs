//! The numeric tokens (spelled only in [`NUMBER_BYTES`]) walked by byte class.
//!
//! A vocabulary may hold a thousand tokens of up to three digits. Inside a number they are
//! read by a few DFAs, which put most digits in one class, so the tokens fall into a few runs
//! of classes. Where the recognizer gives the classes (see
//! [`Recognizer::number_classes`](crate::Recognizer::number_classes)), a [`NumberTrie`] for
//! them holds the numeric tokens by their first byte (or its class too, where the recognizer is
//! inside a number already) and the classes of the others, and the kernel pushes one byte per
//! node instead of one per token. Tries are built the first time a
//! partition of the bytes is met, and kept in the kernel (at most [`TRIES_BYTES`]).

use std::sync::{Arc, OnceLock};

use recognizer::NUMBER_BYTES;
use vocab_index::{TokenId, Vocabulary};

use crate::shared::SharedMemo;

/// Most bytes of number tries kept (each one holds the numeric tokens once: a few KiB).
pub(crate) const TRIES_BYTES: usize = 4 << 20;
const TRIES_ENTRIES: usize = 256;

/// Byte classes, one per byte of [`NUMBER_BYTES`]: `classes[i]` is the index of the first
/// byte of `NUMBER_BYTES[i]`'s class.
pub(crate) type ByteClasses = [u8; NUMBER_BYTES.len()];

/// Every byte its own class: the numeric tokens byte by byte.
pub(crate) const EXACT: ByteClasses = {
    let mut c = [0u8; NUMBER_BYTES.len()];
    let mut i = 0;
    while i < c.len() {
        c[i] = i as u8;
        i += 1;
    }
    c
};

/// The numeric tokens by their first byte (or its class: see [`NumberTrie::build`]) and, after
/// it, the class of each byte, written as the first byte of its class. Node 0 is the root.
#[derive(Debug)]
pub(crate) struct NumberTrie {
    /// Per node `n`: its children (the byte to push, the child) in
    /// `edges[edge_at[n]..edge_at[n + 1]]`.
    edge_at: Vec<u32>,
    edges: Vec<(u8, u32)>,
    /// Per node `n`: the tokens spelled as its path, in `tokens[token_at[n]..token_at[n + 1]]`.
    token_at: Vec<u32>,
    tokens: Vec<TokenId>,
    /// Per byte of [`NUMBER_BYTES`]: the root's child for it, or [`NO_NODE`].
    first: [u32; NUMBER_BYTES.len()],
    /// Per byte of [`NUMBER_BYTES`]: the number of nodes below the root's child for it.
    below: [u32; NUMBER_BYTES.len()],
}

/// In [`NumberTrie::first`]: no numeric token starts with the byte.
const NO_NODE: u32 = u32::MAX;

/// The index of `b` in [`NUMBER_BYTES`].
fn index_of(b: u8) -> Option<usize> {
    const INDEX: [u8; 256] = {
        let mut t = [u8::MAX; 256];
        let mut i = 0;
        while i < NUMBER_BYTES.len() {
            t[NUMBER_BYTES[i] as usize] = i as u8;
            i += 1;
        }
        t
    };
    Some(INDEX[b as usize] as usize).filter(|&i| i < NUMBER_BYTES.len())
}

impl NumberTrie {
    /// The trie of `numeric` (tokens of `vocab` that are numeric) under `classes`, which
    /// [`canonical`] wrote; the first byte too is spelled by its class when `first_classed`.
    pub(crate) fn build(
        vocab: &Vocabulary,
        numeric: &[TokenId],
        classes: &ByteClasses,
        first_classed: bool,
    ) -> NumberTrie {
        const K: usize = NUMBER_BYTES.len();
        // Children by the index (in `NUMBER_BYTES`) of the byte pushed, and each token's node,
        // in the order met; then laid out flat, depth first.
        let mut kids: Vec<[u32; K]> = vec![[NO_NODE; K]];
        let mut at: Vec<(u32, TokenId)> = Vec::with_capacity(numeric.len());
        for &id in numeric {
            let mut node = 0usize;
            for (k, &b) in vocab.bytes(id).iter().enumerate() {
                let Some(i) = index_of(b) else {
                    node = usize::MAX;
                    break;
                };
                let c = if k == 0 && !first_classed {
                    i
                } else {
                    classes[i] as usize
                };
                node = match kids[node][c] {
                    NO_NODE => {
                        kids.push([NO_NODE; K]);
                        let child = kids.len() - 1;
                        kids[node][c] = child as u32;
                        child
                    }
                    child => child as usize,
                };
            }
            if node != usize::MAX && node != 0 {
                at.push((node as u32, id));
            }
        }
        // Depth first: each node's number, and the end of its subtree.
        let mut order = vec![NO_NODE; kids.len()];
        let mut end = vec![0u32; kids.len()];
        let mut next = 0u32;
        let mut stack = vec![(0usize, 0usize)];
        order[0] = 0;
        next += 1;
        while let Some((node, c)) = stack.pop() {
            match (c..K).find(|&c| kids[node][c] != NO_NODE) {
                Some(c) => {
                    stack.push((node, c + 1));
                    let child = kids[node][c] as usize;
                    order[child] = next;
                    next += 1;
                    stack.push((child, 0));
                }
                None => end[order[node] as usize] = next,
            }
        }
        let mut by_node: Vec<Vec<TokenId>> = vec![Vec::new(); kids.len()];
        for (node, id) in at {
            by_node[order[node as usize] as usize].push(id);
        }
        let mut flat: Vec<&[u32; K]> = vec![&kids[0]; kids.len()];
        for (node, k) in kids.iter().enumerate() {
            flat[order[node] as usize] = k;
        }
        let mut trie = NumberTrie {
            edge_at: vec![0],
            edges: Vec::new(),
            token_at: vec![0],
            tokens: Vec::new(),
            first: [NO_NODE; K],
            below: [0; K],
        };
        for (k, ids) in flat.iter().zip(&by_node) {
            for (c, &child) in k.iter().enumerate() {
                if child != NO_NODE {
                    trie.edges.push((NUMBER_BYTES[c], order[child as usize]));
                }
            }
            trie.edge_at.push(trie.edges.len() as u32);
            trie.tokens.extend(ids);
            trie.token_at.push(trie.tokens.len() as u32);
        }
        for (c, &child) in kids[0].iter().enumerate() {
            if child != NO_NODE {
                let n = order[child as usize];
                trie.first[c] = n;
                trie.below[c] = end[n as usize] - n - 1;
            }
        }
        trie
    }

    /// The children of `node`: (byte to push, child).
    pub(crate) fn edges(&self, node: u32) -> &[(u8, u32)] {
        let n = node as usize;
        &self.edges[self.edge_at[n] as usize..self.edge_at[n + 1] as usize]
    }

    /// The tokens spelled as the path to `node`.
    pub(crate) fn tokens(&self, node: u32) -> &[TokenId] {
        let n = node as usize;
        &self.tokens[self.token_at[n] as usize..self.token_at[n + 1] as usize]
    }

    /// The root's child for the first byte `NUMBER_BYTES[i]`.
    pub(crate) fn first(&self, i: usize) -> Option<u32> {
        Some(self.first[i]).filter(|&n| n != NO_NODE)
    }

    /// The number of nodes below the root's child for `NUMBER_BYTES[i]`.
    pub(crate) fn below(&self, i: usize) -> u32 {
        self.below[i]
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        (self.edge_at.len() + self.token_at.len() + self.tokens.len()) * 4 + self.edges.len() * 8
    }
}

/// `classes` as a recognizer wrote them (any numbers, equal for one class), renumbered so
/// that each byte's class is the index of the first byte of its class: one partition, one
/// spelling.
pub(crate) fn canonical(classes: &ByteClasses) -> ByteClasses {
    let mut out = EXACT;
    for i in 0..classes.len() {
        out[i] = (0..i).find(|&j| classes[j] == classes[i]).unwrap_or(i) as u8;
    }
    out
}

/// The number tries a kernel built, by partition ([`EXACT`]'s kept apart: every walk takes
/// it).
#[derive(Debug)]
pub(crate) struct NumberTries {
    exact: OnceLock<Arc<NumberTrie>>,
    memo: SharedMemo<NumberTrie>,
}

impl Default for NumberTries {
    fn default() -> NumberTries {
        NumberTries {
            exact: OnceLock::new(),
            memo: SharedMemo::new(TRIES_BYTES, TRIES_ENTRIES),
        }
    }
}

impl NumberTries {
    /// The trie for `classes` (canonical), built now when it is not kept.
    pub(crate) fn get(
        &self,
        vocab: &Vocabulary,
        numeric: &[TokenId],
        classes: &ByteClasses,
        first_classed: bool,
    ) -> Arc<NumberTrie> {
        // Classed alone, the first byte is spelled as itself.
        if *classes == EXACT {
            let exact = self
                .exact
                .get_or_init(|| Arc::new(NumberTrie::build(vocab, numeric, &EXACT, false)));
            return exact.clone();
        }
        let mut key = [0u32; NUMBER_BYTES.len() + 1];
        for (k, &c) in key.iter_mut().zip(classes) {
            *k = c.into();
        }
        key[NUMBER_BYTES.len()] = first_classed.into();
        if let Some(trie) = self.memo.get(&key) {
            return trie;
        }
        let trie = NumberTrie::build(vocab, numeric, classes, first_classed);
        let size = trie.memory_bytes();
        self.memo.put(&key, trie, size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_fall_into_runs_of_classes() {
        let words = ["1", "12", "19", "123", "-", "-1", "0", "07", "1e5", "x"];
        let vocab = Vocabulary::new(words.iter().map(|w| w.as_bytes()), []).unwrap();
        let numeric: Vec<TokenId> = vocab
            .indexable_ids()
            .filter(|&id| recognizer::is_numeric(vocab.bytes(id)))
            .collect();
        assert_eq!(numeric.len(), words.len() - 1, "all but `x`");
        // Digits 1-9 in one class, the rest each its own.
        let mut classes = EXACT;
        let one = NUMBER_BYTES.iter().position(|&b| b == b'1').unwrap();
        for (i, &b) in NUMBER_BYTES.iter().enumerate() {
            if (b'1'..=b'9').contains(&b) {
                classes[i] = 200;
            }
        }
        let classes = canonical(&classes);
        assert_eq!(classes[one + 8], one as u8, "`9` is classed as `1`");
        let trie = NumberTrie::build(&vocab, &numeric, &classes, false);
        let spelled = |path: &[u8]| {
            let i = NUMBER_BYTES.iter().position(|&b| b == path[0])?;
            let mut node = trie.first(i)?;
            for &b in &path[1..] {
                node = trie.edges(node).iter().find(|e| e.0 == b)?.1;
            }
            let mut words: Vec<&[u8]> = trie.tokens(node).iter().map(|&t| vocab.bytes(t)).collect();
            words.sort();
            Some(words)
        };
        assert_eq!(spelled(b"11"), Some(vec![&b"12"[..], b"19"]));
        assert_eq!(spelled(b"111"), Some(vec![&b"123"[..]]));
        assert_eq!(spelled(b"01"), Some(vec![&b"07"[..]]));
        assert_eq!(spelled(b"-1"), Some(vec![&b"-1"[..]]));
        assert_eq!(spelled(b"2"), None, "the first byte is exact");
        let one = |b: u8| NUMBER_BYTES.iter().position(|&n| n == b).unwrap();
        assert_eq!(
            trie.below(one(b'1')),
            4,
            "below `1`: `11`, `111`, `1e`, `1e1`"
        );
        let exact = NumberTrie::build(&vocab, &numeric, &EXACT, false);
        assert_eq!(exact.tokens.len(), numeric.len());
        assert!(exact.edges.len() > trie.edges.len());
        // With the first byte classed too, `12`, `19` and `123` sit under `1` as before, and
        // no token starts with another digit of its class.
        let classed = NumberTrie::build(&vocab, &numeric, &classes, true);
        assert_eq!(classed.edges(0).len(), trie.edges(0).len());
    }
}
