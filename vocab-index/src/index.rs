//! The [`VocabIndex`] trait shared by the trie backends, the [`TrieVisitor`] that drives a
//! walk, and [`AnyIndex`] / [`TrieKind`] for choosing a backend at run time.

use std::fmt;
use std::str::FromStr;

use crate::{DoubleArrayTrie, Error, FlatTrie, Result, TokenId, Vocabulary};

/// Drives a depth-first walk of a trie: decides which branches to enter and receives the
/// tokens found.
///
/// The walk keeps a *current prefix*, the bytes of the accepted `push_byte` calls not yet
/// undone. For each child of the current node, in increasing byte order, it calls
/// `push_byte(child_byte)`; on `true` the child becomes current (its tokens are reported, then
/// its children are visited), on `false` the child's whole subtree is skipped.
///
/// Pops are lazy and batched: leaving accepted nodes is not reported at once but as one
/// `pop_bytes(n)` just before the next `push_byte` (or at the end of the walk). `n` is often 0
/// (after descending into a child), so a cheap `pop_bytes(0)` matters. When the walk returns,
/// every accepted push has been popped: the visitor is back where it started.
///
/// A visitor holding a byte-level automaton keeps a stack of states: `push_byte` computes the
/// next state and pushes it if alive, `pop_bytes(n)` drops `n` states, `token` records the id as
/// allowed.
pub trait TrieVisitor {
    /// Tries to extend the current prefix by `byte`: `true` descends into the child, `false`
    /// skips its whole subtree. Only accepted pushes are later popped.
    fn push_byte(&mut self, byte: u8) -> bool;

    /// Undoes the last `n` accepted pushes (`n` may be 0).
    fn pop_bytes(&mut self, n: usize);

    /// `id`'s bytes equal the current prefix. Called once per id in the index, duplicates
    /// included (ascending ids for one prefix), right after the accepted `push_byte` that made
    /// the prefix. If [`TrieVisitor::spare_id`] gives a spare id, it is passed instead at
    /// prefixes that no token has, once each.
    fn token(&mut self, id: TokenId);

    /// An optional fast path: an id that no indexed token has (typically the vocabulary's
    /// length, with a token mask one bit longer), which the walk then passes to
    /// [`TrieVisitor::token`] for every accepted node without a token, instead of testing
    /// whether the node has one. On real vocabularies about half the nodes hold a token, in no
    /// predictable pattern, so that test mispredicts often; with a spare id a visitor that
    /// sets a bit per token does the same work on every node, without a branch (the trick of
    /// llguidance's `TokTrie`). Read once per walk. Defaults to `None`: `token` sees real ids
    /// only.
    #[inline(always)]
    fn spare_id(&self) -> Option<TokenId> {
        None
    }
}

impl<V: TrieVisitor + ?Sized> TrieVisitor for &mut V {
    #[inline(always)]
    fn push_byte(&mut self, byte: u8) -> bool {
        (**self).push_byte(byte)
    }

    #[inline(always)]
    fn pop_bytes(&mut self, n: usize) {
        (**self).pop_bytes(n)
    }

    #[inline(always)]
    fn token(&mut self, id: TokenId) {
        (**self).token(id)
    }

    #[inline(always)]
    fn spare_id(&self) -> Option<TokenId> {
        (**self).spare_id()
    }
}

/// A node of a trie: the set of tokens sharing one prefix. Only meaningful for the index that
/// returned it; a node of another index is treated as a node without children or tokens (or,
/// by chance, as some other node), never as undefined behaviour.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The node's index in its backend's storage.
    #[inline]
    pub fn as_u32(self) -> u32 {
        self.0
    }
}

/// The tokens ending at one node, ascending (an iterator; usually zero or one).
#[derive(Clone, Debug, Default)]
pub struct NodeTokens<'a> {
    one: Option<TokenId>,
    many: std::slice::Iter<'a, TokenId>,
}

impl<'a> NodeTokens<'a> {
    pub(crate) fn none() -> NodeTokens<'a> {
        NodeTokens::default()
    }

    pub(crate) fn one(id: TokenId) -> NodeTokens<'a> {
        NodeTokens {
            one: Some(id),
            many: [].iter(),
        }
    }

    pub(crate) fn many(ids: &'a [TokenId]) -> NodeTokens<'a> {
        NodeTokens {
            one: None,
            many: ids.iter(),
        }
    }
}

impl Iterator for NodeTokens<'_> {
    type Item = TokenId;

    #[inline]
    fn next(&mut self) -> Option<TokenId> {
        self.one.take().or_else(|| self.many.next().copied())
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.one.is_some()) + self.many.len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for NodeTokens<'_> {}

/// A byte trie over token byte strings, walked depth first by a [`TrieVisitor`].
///
/// Implemented by [`FlatTrie`] (fastest walk), [`DoubleArrayTrie`] (O(1) child lookup) and
/// [`AnyIndex`] (either, chosen at run time). All visit exactly the same sequence of calls for
/// the same tokens: children in increasing byte order, tokens of one node in increasing id
/// order, the same batched pops.
///
/// Generic methods take the visitor by static dispatch: the walk loop is compiled once per
/// visitor type, with `push_byte` inlined.
pub trait VocabIndex {
    /// The root: the empty prefix (it holds no tokens: empty tokens are not indexed).
    fn root(&self) -> NodeId;

    /// The child of `node` reached by `byte`.
    fn child(&self, node: NodeId, byte: u8) -> Option<NodeId>;

    /// The tokens whose bytes are exactly `node`'s prefix.
    fn tokens_at(&self, node: NodeId) -> NodeTokens<'_>;

    /// Walks the subtree strictly below `node`, whose prefix the visitor is assumed to have
    /// pushed already: each child of `node` is offered by `push_byte`, and so on down. `node`'s
    /// own tokens are not reported. Pops everything it pushed before returning.
    fn walk_below<V: TrieVisitor>(&self, node: NodeId, visitor: &mut V);

    /// The number of token ids indexed (duplicates counted).
    fn num_tokens(&self) -> usize;

    /// The number of nodes, root included.
    fn num_nodes(&self) -> usize;

    /// Heap bytes held.
    fn memory_bytes(&self) -> usize;

    /// Which backend this is.
    fn kind(&self) -> TrieKind;

    /// Walks the whole index.
    #[inline]
    fn walk<V: TrieVisitor>(&self, visitor: &mut V) {
        self.walk_below(self.root(), visitor);
    }

    /// Walks only the tokens that start with `prefix`.
    ///
    /// The bytes of `prefix` are pushed first, one `push_byte` each, stopping at the first
    /// byte refused or missing from the trie (then nothing else is visited). Tokens that are
    /// proper prefixes of `prefix` are not reported (nor the spare id for them); tokens equal
    /// to a non-empty `prefix` are (or the spare id), then the subtree below. Everything pushed
    /// is popped before returning.
    fn walk_from<V: TrieVisitor>(&self, prefix: &[u8], visitor: &mut V) {
        let mut node = self.root();
        let mut pushed = 0;
        for &byte in prefix {
            match self.child(node, byte) {
                Some(next) if visitor.push_byte(byte) => {
                    node = next;
                    pushed += 1;
                }
                _ => {
                    if pushed > 0 {
                        visitor.pop_bytes(pushed);
                    }
                    return;
                }
            }
        }
        if pushed > 0 {
            let mut tokens = self.tokens_at(node).peekable();
            match (tokens.peek(), visitor.spare_id()) {
                (None, Some(spare)) => visitor.token(spare),
                _ => tokens.for_each(|id| visitor.token(id)),
            }
        }
        self.walk_below(node, visitor);
        if pushed > 0 {
            visitor.pop_bytes(pushed);
        }
    }

    /// The node whose prefix is `prefix`, if any token starts with it.
    fn node_at(&self, prefix: &[u8]) -> Option<NodeId> {
        prefix
            .iter()
            .try_fold(self.root(), |node, &byte| self.child(node, byte))
    }
}

/// Which trie backend to build.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum TrieKind {
    /// [`FlatTrie`]: 8-byte nodes in depth-first order; the fastest full walk.
    #[default]
    Flat,
    /// [`DoubleArrayTrie`]: base/check arrays; O(1) child lookup.
    DoubleArray,
}

impl TrieKind {
    /// Every kind, for tests and benchmarks.
    pub const ALL: [TrieKind; 2] = [TrieKind::Flat, TrieKind::DoubleArray];

    /// The name accepted by [`FromStr`]: `flat` or `double-array`.
    pub fn name(self) -> &'static str {
        match self {
            TrieKind::Flat => "flat",
            TrieKind::DoubleArray => "double-array",
        }
    }
}

impl fmt::Display for TrieKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TrieKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<TrieKind> {
        match s {
            "flat" => Ok(TrieKind::Flat),
            "double-array" => Ok(TrieKind::DoubleArray),
            _ => Err(Error::UnknownTrieKind { name: s.to_owned() }),
        }
    }
}

/// A trie whose backend is chosen at run time. Each call is one `match`, then the backend's
/// own (statically dispatched) code.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum AnyIndex {
    /// A [`FlatTrie`].
    Flat(FlatTrie),
    /// A [`DoubleArrayTrie`].
    DoubleArray(DoubleArrayTrie),
}

impl AnyIndex {
    /// Builds a trie of `kind` over `ids` (see [`FlatTrie::build`]).
    ///
    /// # Errors
    ///
    /// As [`FlatTrie::build`] and [`DoubleArrayTrie::build`].
    pub fn build(
        kind: TrieKind,
        vocab: &Vocabulary,
        ids: impl IntoIterator<Item = TokenId>,
    ) -> Result<AnyIndex> {
        Ok(match kind {
            TrieKind::Flat => AnyIndex::Flat(FlatTrie::build(vocab, ids)?),
            TrieKind::DoubleArray => AnyIndex::DoubleArray(DoubleArrayTrie::build(vocab, ids)?),
        })
    }

    /// Builds a trie of `kind` over [`Vocabulary::indexable_ids`]: every token that is
    /// neither special nor empty.
    ///
    /// # Errors
    ///
    /// As [`AnyIndex::build`].
    pub fn new(kind: TrieKind, vocab: &Vocabulary) -> Result<AnyIndex> {
        Self::build(kind, vocab, vocab.indexable_ids())
    }
}

impl From<FlatTrie> for AnyIndex {
    fn from(trie: FlatTrie) -> AnyIndex {
        AnyIndex::Flat(trie)
    }
}

impl From<DoubleArrayTrie> for AnyIndex {
    fn from(trie: DoubleArrayTrie) -> AnyIndex {
        AnyIndex::DoubleArray(trie)
    }
}

macro_rules! dispatch {
    ($self:ident, $t:ident => $e:expr) => {
        match $self {
            AnyIndex::Flat($t) => $e,
            AnyIndex::DoubleArray($t) => $e,
        }
    };
}

impl VocabIndex for AnyIndex {
    #[inline]
    fn root(&self) -> NodeId {
        dispatch!(self, t => t.root())
    }

    #[inline]
    fn child(&self, node: NodeId, byte: u8) -> Option<NodeId> {
        dispatch!(self, t => t.child(node, byte))
    }

    #[inline]
    fn tokens_at(&self, node: NodeId) -> NodeTokens<'_> {
        dispatch!(self, t => t.tokens_at(node))
    }

    #[inline]
    fn walk_below<V: TrieVisitor>(&self, node: NodeId, visitor: &mut V) {
        dispatch!(self, t => t.walk_below(node, visitor))
    }

    #[inline]
    fn walk_from<V: TrieVisitor>(&self, prefix: &[u8], visitor: &mut V) {
        dispatch!(self, t => t.walk_from(prefix, visitor))
    }

    fn num_tokens(&self) -> usize {
        dispatch!(self, t => t.num_tokens())
    }

    fn num_nodes(&self) -> usize {
        dispatch!(self, t => t.num_nodes())
    }

    fn memory_bytes(&self) -> usize {
        dispatch!(self, t => t.memory_bytes())
    }

    fn kind(&self) -> TrieKind {
        dispatch!(self, t => t.kind())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trie_kind_names_round_trip() {
        for kind in TrieKind::ALL {
            assert_eq!(kind.name().parse::<TrieKind>().unwrap(), kind);
            assert_eq!(kind.to_string(), kind.name());
        }
        assert!(matches!(
            "dense".parse::<TrieKind>(),
            Err(Error::UnknownTrieKind { .. })
        ));
    }

    #[test]
    fn node_tokens_iterates_one_or_many() {
        let ids = [TokenId::new(3).unwrap(), TokenId::new(9).unwrap()];
        assert_eq!(NodeTokens::none().count(), 0);
        assert_eq!(NodeTokens::one(ids[0]).collect::<Vec<_>>(), vec![ids[0]]);
        let many = NodeTokens::many(&ids);
        assert_eq!(many.len(), 2);
        assert_eq!(many.collect::<Vec<_>>(), ids.to_vec());
    }

    #[derive(Debug, PartialEq, Eq, Clone, Copy)]
    enum Ev {
        /// `push_byte(byte)` and what the visitor answered.
        Push(char, bool),
        /// `pop_bytes(n)` with `n > 0`.
        Pop(usize),
        /// `token(id)`.
        Tok(u32),
    }
    use Ev::{Pop, Push, Tok};

    /// Rejects `b` as the first byte and `!` as the second; logs every call.
    #[derive(Default)]
    struct Logger {
        depth: usize,
        log: Vec<Ev>,
        spare: Option<TokenId>,
    }

    impl TrieVisitor for Logger {
        fn push_byte(&mut self, byte: u8) -> bool {
            let ok = !matches!((self.depth + 1, byte), (1, b'b') | (2, b'!'));
            self.log.push(Push(char::from(byte), ok));
            self.depth += usize::from(ok);
            ok
        }
        fn pop_bytes(&mut self, n: usize) {
            assert!(n <= self.depth, "popped {n} at depth {}", self.depth);
            self.depth -= n;
            if n > 0 {
                self.log.push(Pop(n));
            }
        }
        fn token(&mut self, id: TokenId) {
            self.log.push(Tok(id.as_u32()));
        }
        fn spare_id(&self) -> Option<TokenId> {
            self.spare
        }
    }

    fn tiny() -> Vocabulary {
        let special = [TokenId::new(9).unwrap()];
        let tokens = [
            "a", "ab", "abc", "abd", "b", "ba", "ab", "c!", "", "<s>", "ca",
        ];
        Vocabulary::new(tokens, special).unwrap()
    }

    fn both(vocab: &Vocabulary) -> [AnyIndex; 2] {
        TrieKind::ALL.map(|kind| AnyIndex::new(kind, vocab).unwrap())
    }

    fn log_of(f: impl FnOnce(&mut Logger)) -> Vec<Ev> {
        let mut v = Logger::default();
        f(&mut v);
        assert_eq!(v.depth, 0, "walk left pushes unpopped");
        v.log
    }

    /// The tiny vocabulary, ids in brackets (id 8 is empty and id 9, `<s>`, special: neither
    /// is indexed; ids 1 and 6 are both `ab`):
    ///
    /// ```text
    /// (root)
    /// ├─ a          [0]
    /// │  └─ b       [1, 6]
    /// │     ├─ c    [2]
    /// │     └─ d    [3]
    /// ├─ b          [4]     rejected as a first byte: `b` and `ba` [5] are pruned
    /// │  └─ a       [5]
    /// └─ c
    ///    ├─ !       [7]     rejected as a second byte
    ///    └─ a       [10]
    /// ```
    ///
    /// Pops are batched: after `abc` one level (back to `ab`), after `abd` three (back to the
    /// root, before offering `b`), after the rejected `b` none, at the end two (`ca`).
    #[test]
    fn hand_built_walk() {
        let vocab = tiny();
        for trie in both(&vocab) {
            assert_eq!(trie.num_tokens(), 9, "{trie:?}");
            assert_eq!(trie.num_nodes(), 10, "{trie:?}");
            let expected = [
                Push('a', true),
                Tok(0),
                Push('b', true),
                Tok(1),
                Tok(6),
                Push('c', true),
                Tok(2),
                Pop(1),
                Push('d', true),
                Tok(3),
                Pop(3),
                Push('b', false),
                Push('c', true),
                Push('!', false),
                Push('a', true),
                Tok(10),
                Pop(2),
            ];
            assert_eq!(log_of(|v| trie.walk(v)), expected, "{trie:?}");

            // With a spare id (11), accepted nodes without tokens report it: here only `c`.
            let mut v = Logger {
                spare: TokenId::new(11),
                ..Logger::default()
            };
            trie.walk(&mut v);
            let mut with_spare = expected.to_vec();
            with_spare.insert(13, Tok(11));
            assert_eq!(v.log, with_spare, "{trie:?}");

            // Below `ab`: the prefix is pushed, its tokens reported, then its subtree.
            let expected = [
                Push('a', true),
                Push('b', true),
                Tok(1),
                Tok(6),
                Push('c', true),
                Tok(2),
                Pop(1),
                Push('d', true),
                Tok(3),
                Pop(1),
                Pop(2),
            ];
            assert_eq!(log_of(|v| trie.walk_from(b"ab", v)), expected, "{trie:?}");
            // A refused prefix byte ends the walk; a missing one too, after popping.
            assert_eq!(log_of(|v| trie.walk_from(b"ba", v)), [Push('b', false)]);
            assert_eq!(
                log_of(|v| trie.walk_from(b"ax", v)),
                [Push('a', true), Pop(1)]
            );
            assert_eq!(
                log_of(|v| trie.walk_from(b"abd", v)),
                [
                    Push('a', true),
                    Push('b', true),
                    Push('d', true),
                    Tok(3),
                    Pop(3)
                ]
            );

            // Navigation.
            let ab = trie.node_at(b"ab").unwrap();
            assert_eq!(
                trie.tokens_at(ab).map(TokenId::as_u32).collect::<Vec<_>>(),
                [1, 6]
            );
            assert_eq!(trie.tokens_at(trie.root()).count(), 0);
            assert_eq!(trie.tokens_at(trie.node_at(b"c").unwrap()).count(), 0);
            assert!(trie.child(ab, b'e').is_none());
            assert!(trie.node_at(b"<s>").is_none());
            assert!(trie.node_at(b"abcd").is_none());
            // Below a leaf: nothing.
            let abc = trie.node_at(b"abc").unwrap();
            assert_eq!(log_of(|v| trie.walk_below(abc, v)), []);
        }
    }

    /// A subset of the ids: `ab` [6] only (not its duplicate 1), `ba` [5], `ca` [10], and the
    /// special `<s>` [9] when asked for.
    ///
    /// ```text
    /// (root)
    /// ├─ <
    /// │  └─ s
    /// │     └─ >    [9]
    /// ├─ a
    /// │  └─ b       [6]
    /// ├─ b          rejected
    /// │  └─ a       [5]
    /// └─ c
    ///    └─ a       [10]
    /// ```
    #[test]
    fn subset_build() {
        let vocab = tiny();
        let ids = [10, 6, 5, 9, 6, 8].map(|i| TokenId::new(i).unwrap());
        for kind in TrieKind::ALL {
            let trie = AnyIndex::build(kind, &vocab, ids).unwrap();
            assert_eq!(trie.num_tokens(), 4);
            let expected = [
                Push('<', true),
                Push('s', true),
                Push('>', true),
                Tok(9),
                Pop(3),
                Push('a', true),
                Push('b', true),
                Tok(6),
                Pop(2),
                Push('b', false),
                Push('c', true),
                Push('a', true),
                Tok(10),
                Pop(2),
            ];
            assert_eq!(log_of(|v| trie.walk(v)), expected, "{kind}");
            let err = AnyIndex::build(kind, &vocab, [TokenId::new(11).unwrap()]).unwrap_err();
            assert!(matches!(err, Error::TokenIdOutOfRange { id: 11, len: 11 }));
        }
    }

    #[test]
    fn empty_tries() {
        let vocab = Vocabulary::new(Vec::<Vec<u8>>::new(), []).unwrap();
        for kind in TrieKind::ALL {
            let trie = AnyIndex::new(kind, &vocab).unwrap();
            assert_eq!((trie.num_tokens(), trie.num_nodes()), (0, 1));
            assert_eq!(log_of(|v| trie.walk(v)), []);
            assert_eq!(log_of(|v| trie.walk_from(b"a", v)), []);
            assert_eq!(trie.kind(), kind);
        }
    }

    #[test]
    fn too_long_tokens_are_errors() {
        let vocab = Vocabulary::new([vec![b'x'; 1023], vec![b'y'; 1024]], []).unwrap();
        let ok = [TokenId::new(0).unwrap()];
        for kind in TrieKind::ALL {
            let trie = AnyIndex::build(kind, &vocab, ok).unwrap();
            let mut v = Logger::default();
            trie.walk(&mut v);
            assert_eq!(v.log.last(), Some(&Pop(1023)));
            assert!(matches!(
                AnyIndex::new(kind, &vocab),
                Err(Error::TokenTooLong {
                    len: 1024,
                    limit: 1023,
                    ..
                })
            ));
        }
    }

    #[test]
    fn indexes_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<FlatTrie>();
        check::<DoubleArrayTrie>();
        check::<AnyIndex>();
        check::<Vocabulary>();
    }
}
