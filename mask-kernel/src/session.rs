//! A constrained-decoding session: masks, commits, rollback, forced bytes.

use std::sync::Arc;

use fixedbitset::FixedBitSet;
use vocab_index::{AnyIndex, TokenId, TrieVisitor, VocabIndex};

use crate::cache::{Base, MaskCache, SharedMaskCache, Stored};
use crate::error::MaskError;
use crate::kernel::Kernel;
use crate::keys::NO_SUFFIX;
use crate::numbers::{ByteClasses, EXACT, NumberTrie, canonical};
use crate::shared::Remembered;
use recognizer::{Close, NUMBER_BYTES, QUOTE, Recognizer, Split, TOP_LEVEL};

/// What one [`Session::mask`] call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaskStats {
    /// Tokens allowed (end of sequence included).
    pub allowed: usize,
    /// Whether the mask came from the cache.
    pub cache_hit: bool,
    /// Whether the lexeme fast path was used.
    pub split: bool,
    /// Trie nodes entered by the walks.
    pub nodes: u64,
}

/// The members of a set being built, counted as they are added, so that neither an emptiness
/// check nor the cache needs a pass over the whole bitset; while they are few (and only added
/// one by one), also listed, so that the cache keeps the list.
#[derive(Debug, Default)]
struct Tally {
    count: usize,
    /// The members listed (those outside `base` when there is one).
    ids: Vec<u32>,
    /// The members are no longer listed.
    dense: bool,
    /// Most members listed.
    limit: usize,
    /// The kernel's set the members were started from.
    base: Option<Base>,
}

impl Tally {
    /// An empty set over `n` tokens.
    fn reset(&mut self, n: usize) {
        self.count = 0;
        self.ids.clear();
        self.dense = false;
        self.limit = n / 32;
        self.base = None;
    }

    /// Starts the set (empty so far; `set` need not be cleared) from the kernel's set `base`,
    /// `other`, which holds `n` tokens; the members added after it are listed while few.
    fn start_from(&mut self, set: &mut FixedBitSet, base: Base, other: &FixedBitSet, n: usize) {
        debug_assert_eq!(self.count, 0, "a base comes first");
        set.clone_from(other);
        self.count = n;
        self.base = Some(base);
    }

    #[inline(always)]
    fn insert(&mut self, set: &mut FixedBitSet, id: usize) {
        if !set.put(id) {
            self.count += 1;
            if !self.dense {
                if self.ids.len() < self.limit {
                    self.ids.push(id as u32);
                } else {
                    self.dense = true;
                }
            }
        }
    }

    /// Adds `other`, which holds `n` tokens, none of them in `set` yet.
    fn union_disjoint(&mut self, set: &mut FixedBitSet, other: &FixedBitSet, n: usize) {
        if self.count == 0 {
            set.clone_from(other);
        } else {
            set.union_with(other);
        }
        self.count += n;
        self.dense = true;
    }

    /// Adds a stored inside set (never based) whose tokens are not in `set` yet when it is
    /// dense.
    fn add(&mut self, set: &mut FixedBitSet, other: &Stored) {
        match other {
            Stored::Dense(s, n) => self.union_disjoint(set, s, *n),
            Stored::Sparse(ids) | Stored::Based(_, ids, _) => {
                debug_assert!(
                    !matches!(other, Stored::Based(..)),
                    "inside sets have no base"
                );
                for &id in ids {
                    self.insert(set, id as usize);
                }
            }
        }
    }

    /// `set` as the cache keeps it.
    fn stored(&self, set: &FixedBitSet) -> Stored {
        match self.base {
            _ if self.dense => Stored::Dense(set.clone(), self.count),
            Some(base) => Stored::Based(base, self.ids.as_slice().into(), self.count),
            None => Stored::Sparse(self.ids.as_slice().into()),
        }
    }
}

/// Writes `stored` into `out` (of the same length).
fn load(kernel: &Kernel, stored: &Stored, out: &mut FixedBitSet) {
    let ids = match stored {
        Stored::Dense(s, _) => {
            out.clone_from(s);
            return;
        }
        Stored::Sparse(ids) => {
            out.clear();
            ids
        }
        Stored::Based(base, ids, _) => {
            out.clone_from(kernel.base(*base));
            ids
        }
    };
    for &id in ids.iter() {
        out.insert(id as usize);
    }
}

/// Walks `trie` with `v`, a visitor over a recognizer whose [hint](Recognizer::next_bytes_hint)
/// is `hint`: only the root's children whose byte is in it (looked up directly), or every
/// child without one.
fn walk_hinted<V: TrieVisitor>(trie: &AnyIndex, hint: Option<[u64; 4]>, v: &mut V) {
    let Some(hint) = hint else {
        trie.walk(v);
        return;
    };
    for (w, mut bits) in hint.into_iter().enumerate() {
        while bits != 0 {
            let byte = (w * 64) as u8 + bits.trailing_zeros() as u8;
            bits &= bits - 1;
            trie.walk_from(&[byte], v);
        }
    }
}

/// Walks a trie, pushing bytes into the recognizer and collecting accepted tokens.
struct Walk<'a, R> {
    rec: &'a mut R,
    mask: &'a mut FixedBitSet,
    tally: &'a mut Tally,
    nodes: u64,
}

impl<R: Recognizer> TrieVisitor for Walk<'_, R> {
    #[inline(always)]
    fn push_byte(&mut self, byte: u8) -> bool {
        let ok = self.rec.try_push_byte(byte);
        self.nodes += ok as u64;
        ok
    }

    #[inline(always)]
    fn pop_bytes(&mut self, n: usize) {
        if n > 0 {
            self.rec.pop_bytes(n);
        }
    }

    #[inline(always)]
    fn token(&mut self, id: TokenId) {
        self.tally.insert(self.mask, id.as_usize());
    }
}

/// [`Walk`] from a recognizer with [loop bytes](Recognizer::loop_bytes): while the prefix is
/// spelled in them alone the recognizer stays where it is, so those bytes are taken (or not,
/// all alike) without asking it; it is pushed only the bytes from the first other one on.
struct LoopWalk<'a, R> {
    walk: Walk<'a, R>,
    loops: [u64; 4],
    /// The recognizer takes the loop bytes.
    takes: bool,
    /// The bytes after the prefix's leading loop bytes, pushed into the recognizer.
    pushed: usize,
}

impl<R: Recognizer> TrieVisitor for LoopWalk<'_, R> {
    #[inline(always)]
    fn push_byte(&mut self, byte: u8) -> bool {
        if self.pushed == 0 && has_byte(&self.loops, byte) {
            self.walk.nodes += self.takes as u64;
            return self.takes;
        }
        let ok = self.walk.push_byte(byte);
        self.pushed += ok as usize;
        ok
    }

    #[inline(always)]
    fn pop_bytes(&mut self, n: usize) {
        // The leading loop bytes are the bottom of the prefix: they go last, and untold.
        let pushed = n.min(self.pushed);
        self.walk.pop_bytes(pushed);
        self.pushed -= pushed;
    }

    #[inline(always)]
    fn token(&mut self, id: TokenId) {
        self.walk.token(id);
    }
}

/// The first pass of [`Session::walk_quotes`]: the recognizer in lexeme-only mode, recording
/// for every push whether it was taken (with where its subtree's records end) or not.
struct Record<'a, R> {
    rec: &'a mut R,
    /// Per push: 0 when refused, else the index past the last record of its subtree.
    taken: &'a mut Vec<u32>,
    /// Records of the pushes not yet popped.
    open: &'a mut Vec<usize>,
}

impl<R: Recognizer> TrieVisitor for Record<'_, R> {
    #[inline(always)]
    fn push_byte(&mut self, byte: u8) -> bool {
        let ok = self.rec.try_push_byte(byte);
        if ok {
            self.open.push(self.taken.len());
        }
        self.taken.push(0);
        ok
    }

    #[inline(always)]
    fn pop_bytes(&mut self, n: usize) {
        if n > 0 {
            self.rec.pop_bytes(n);
            let end = self.taken.len() as u32;
            for _ in 0..n {
                let i = self.open.pop().expect("a push for every pop");
                self.taken[i] = end;
            }
        }
    }

    #[inline(always)]
    fn token(&mut self, _id: TokenId) {}
}

/// The second pass of [`Session::walk_quotes`]: the full recognizer, asked only where the
/// first pass took the byte, and for the quotes it refused (those end the string).
struct Replay<'a, R> {
    rec: &'a mut R,
    mask: &'a mut FixedBitSet,
    tally: &'a mut Tally,
    taken: &'a [u32],
    /// The next record.
    next: usize,
    /// Accepted pushes not yet popped.
    depth: usize,
    /// The depth just past the quote that ended the string, while below it.
    closed_at: Option<usize>,
    nodes: u64,
}

impl<R: Recognizer> TrieVisitor for Replay<'_, R> {
    #[inline(always)]
    fn push_byte(&mut self, byte: u8) -> bool {
        let mut closes = false;
        // Where the first pass's records of this subtree end, when it took the byte.
        let mut subtree_end = None;
        if self.closed_at.is_none() {
            let i = self.next;
            self.next += 1;
            match self.taken[i] {
                0 if byte != QUOTE => return false,
                0 => closes = true,
                end => subtree_end = Some(end as usize),
            }
        }
        if !self.rec.try_push_byte(byte) {
            // Not expected for a byte the first pass took (inside a string both modes agree),
            // but then that pass's records of the subtree are skipped.
            if let Some(end) = subtree_end {
                self.next = end;
            }
            return false;
        }
        self.depth += 1;
        self.nodes += 1;
        if closes {
            self.closed_at = Some(self.depth);
        }
        true
    }

    #[inline(always)]
    fn pop_bytes(&mut self, n: usize) {
        if n > 0 {
            self.rec.pop_bytes(n);
            self.depth -= n;
            if self.closed_at.is_some_and(|d| self.depth < d) {
                self.closed_at = None;
            }
        }
    }

    #[inline(always)]
    fn token(&mut self, id: TokenId) {
        self.tally.insert(self.mask, id.as_usize());
    }
}

/// Walks the suffixes that follow a closing quote with the full recognizer, listing those it
/// accepts.
struct Suffixes<'a, R> {
    rec: &'a mut R,
    hits: &'a mut Vec<TokenId>,
    nodes: u64,
}

impl<R: Recognizer> Suffixes<'_, R> {
    /// Walks `trie` from the recognizer's current state.
    fn walk(rec: &mut R, hits: &mut Vec<TokenId>, trie: &AnyIndex) -> u64 {
        let hint = rec.next_bytes_hint();
        let mut v = Suffixes {
            rec,
            hits,
            nodes: 0,
        };
        walk_hinted(trie, hint, &mut v);
        v.nodes
    }
}

impl<R: Recognizer> TrieVisitor for Suffixes<'_, R> {
    fn push_byte(&mut self, byte: u8) -> bool {
        let ok = self.rec.try_push_byte(byte);
        self.nodes += ok as u64;
        ok
    }

    fn pop_bytes(&mut self, n: usize) {
        if n > 0 {
            self.rec.pop_bytes(n);
        }
    }

    fn token(&mut self, id: TokenId) {
        self.hits.push(id);
    }
}

/// The classes of the contents met by [`Session::close_by_class`], reused between masks.
#[derive(Debug, Default)]
struct Classes {
    /// Per class number of the recognizer: the class's slot here, or `NO_SLOT`.
    slot: Vec<u32>,
    /// Per slot: its class number, and where its first content's bytes are in `bytes`.
    rep: Vec<(u32, u32, u32)>,
    bytes: Vec<u8>,
    /// Per slot: whether the quote is accepted, and the suffix ids accepted after it.
    quote: Vec<bool>,
    suffixes: Vec<FixedBitSet>,
    /// (content id, slot) of every content the walk accepted.
    met: Vec<(u32, u32)>,
    /// The bytes pushed by the walk.
    path: Vec<u8>,
}

/// In [`Classes::slot`]: a class not met in this walk.
const NO_SLOT: u32 = u32::MAX;

/// In [`Classes::rep`]: a slot [recalled](Classes::recall), whose class number is not known.
const NO_CLASS: u32 = u32::MAX;

/// Class numbers from this one up are taken as no class (the table is indexed by them).
const MAX_CLASSES: u32 = 1 << 16;

impl Classes {
    fn clear(&mut self) {
        for &(class, _, _) in &self.rep {
            if class != NO_CLASS {
                self.slot[class as usize] = NO_SLOT;
            }
        }
        self.rep.clear();
        self.bytes.clear();
        self.quote.clear();
        self.met.clear();
        self.path.clear();
    }

    /// What the first pass found, to [recall](Classes::recall).
    fn remember(&self) -> Remembered {
        Remembered {
            rep: self.rep.iter().map(|&(_, at, len)| (at, len)).collect(),
            bytes: self.bytes.clone(),
            met: self.met.clone(),
        }
    }

    /// Takes up what a first pass found before (perhaps in another session, whose class
    /// numbers differ), over a table whose only slot is the position's own class. The other
    /// slots are not numbered by class: nothing looks them up until the table is cleared.
    fn recall(&mut self, found: &Remembered) {
        debug_assert_eq!(self.rep.len(), 1, "only the position's own class");
        debug_assert_eq!(found.rep.first(), Some(&(0, 0)), "the root slot is empty");
        for &(at, len) in &found.rep[1..] {
            self.rep.push((NO_CLASS, at, len));
        }
        self.bytes.clone_from(&found.bytes);
        self.met.clone_from(&found.met);
    }

    /// The slot of `class`, added (with the bytes pushed as its content) when new.
    fn slot(&mut self, class: u32) -> u32 {
        let c = class as usize;
        if c >= self.slot.len() {
            self.slot.resize(c + 1, NO_SLOT);
        }
        if self.slot[c] == NO_SLOT {
            self.slot[c] = self.rep.len() as u32;
            self.rep
                .push((class, self.bytes.len() as u32, self.path.len() as u32));
            self.bytes.extend_from_slice(&self.path);
        }
        self.slot[c]
    }
}

/// The first pass of [`Session::close_by_class`]: the recognizer in lexeme-only mode over the
/// contents before tokens' quotes, classing each content it accepts.
struct Classify<'a, R> {
    rec: &'a mut R,
    classes: &'a mut Classes,
    /// A content had no class.
    unclassed: bool,
}

impl<R: Recognizer> TrieVisitor for Classify<'_, R> {
    #[inline(always)]
    fn push_byte(&mut self, byte: u8) -> bool {
        let ok = self.rec.try_push_byte(byte);
        if ok {
            self.classes.path.push(byte);
        }
        ok
    }

    #[inline(always)]
    fn pop_bytes(&mut self, n: usize) {
        if n > 0 {
            self.rec.pop_bytes(n);
            let path = &mut self.classes.path;
            path.truncate(path.len() - n);
        }
    }

    fn token(&mut self, id: TokenId) {
        match self.rec.close_class().filter(|&c| c < MAX_CLASSES) {
            Some(class) => {
                let slot = self.classes.slot(class);
                self.classes.met.push((id.as_u32(), slot));
            }
            None => self.unclassed = true,
        }
    }
}

/// The bytes of [`NUMBER_BYTES`] as a set of 256 bits.
const NUMBER_SET: [u64; 4] = {
    let mut set = [0u64; 4];
    let mut i = 0;
    while i < NUMBER_BYTES.len() {
        let b = NUMBER_BYTES[i] as usize;
        set[b / 64] |= 1 << (b % 64);
        i += 1;
    }
    set
};

/// Whether `byte` is in `set`, 256 bits (byte `b` is bit `b % 64` of word `b / 64`).
fn has_byte(set: &[u64; 4], byte: u8) -> bool {
    set[byte as usize / 64] >> (byte % 64) & 1 != 0
}

/// Below a first byte with fewer nodes than this, the numeric tokens are walked byte by byte:
/// asking the recognizer for classes would cost more.
const CLASSED_BELOW: u32 = 64;

/// Whether some first byte has enough numeric tokens below it to walk them by class (as Llama
/// 3's digits do; Gemma 3 spells digits one by one, and splitting its trie costs more than it
/// saves).
fn numbers_by_class(kernel: &Kernel) -> bool {
    let exact = kernel.number_trie(&EXACT, false);
    (0..NUMBER_BYTES.len()).any(|i| exact.below(i) >= CLASSED_BELOW)
}

/// Passes on a walk but for the subtrees of the root's children with a byte of
/// [`NUMBER_BYTES`].
struct NotNumberLed<'a, V> {
    inner: &'a mut V,
    /// Accepted pushes not yet popped.
    depth: usize,
}

impl<V: TrieVisitor> TrieVisitor for NotNumberLed<'_, V> {
    #[inline(always)]
    fn push_byte(&mut self, byte: u8) -> bool {
        if self.depth == 0 && has_byte(&NUMBER_SET, byte) {
            return false;
        }
        let ok = self.inner.push_byte(byte);
        self.depth += ok as usize;
        ok
    }

    #[inline(always)]
    fn pop_bytes(&mut self, n: usize) {
        self.depth -= n;
        self.inner.pop_bytes(n);
    }

    #[inline(always)]
    fn token(&mut self, id: TokenId) {
        self.inner.token(id);
    }
}

/// Adds the tokens below `node` of `trie` that `rec` accepts, pushing one byte per node.
fn walk_numbers<R: Recognizer>(
    rec: &mut R,
    trie: &NumberTrie,
    node: u32,
    out: &mut FixedBitSet,
    tally: &mut Tally,
) -> u64 {
    let mut nodes = 0;
    for &(byte, child) in trie.edges(node) {
        if !rec.try_push_byte(byte) {
            continue;
        }
        nodes += 1;
        for &id in trie.tokens(child) {
            tally.insert(out, id.as_usize());
        }
        nodes += walk_numbers(rec, trie, child, out, tally);
        rec.pop_bytes(1);
    }
    nodes
}

fn walk<R: Recognizer>(
    trie: &AnyIndex,
    rec: &mut R,
    mask: &mut FixedBitSet,
    tally: &mut Tally,
) -> u64 {
    let hint = rec.next_bytes_hint();
    let mut w = Walk {
        rec,
        mask,
        tally,
        nodes: 0,
    };
    walk_hinted(trie, hint, &mut w);
    w.nodes
}

/// Where [`Session::mask_in`] looks masks up and puts them, and the cache of the rest.
enum Masks<'a> {
    /// The caller's cache, for everything.
    Own(&'a mut MaskCache),
    /// Masks shared with other sessions, the rest in the caller's cache.
    Shared(&'a SharedMaskCache, &'a mut MaskCache),
}

impl Masks<'_> {
    /// Writes the mask under `key` into `out`, when there is one; its number of members.
    fn load(&mut self, kernel: &Kernel, key: &[u32], out: &mut FixedBitSet) -> Option<usize> {
        let mut write = |m: &Stored| {
            load(kernel, m, out);
            m.count()
        };
        match self {
            Masks::Own(cache) => cache.get_mask(key).map(|m| write(m)),
            Masks::Shared(shared, own) => {
                // Taken out of the lock, which is not held while the mask is written.
                let found = shared.get_mask(key);
                own.count_mask(found.is_some());
                found.map(|m| write(&m))
            }
        }
    }

    fn put(&mut self, key: &[u32], mask: Arc<Stored>) {
        match self {
            Masks::Own(cache) => cache.put_mask(key, mask),
            Masks::Shared(shared, _) => shared.put_mask(key, mask),
        }
    }

    fn own(&mut self) -> &mut MaskCache {
        match self {
            Masks::Own(cache) | Masks::Shared(_, cache) => cache,
        }
    }
}

/// One document being generated under a grammar.
///
/// The session owns its recognizer and remembers how many bytes each committed token added,
/// so [`Session::rollback`] can undo tokens. Masks are written into a caller-provided bitset,
/// so the decode loop does not allocate per token (except when a new mask is cached).
#[derive(Debug)]
pub struct Session<R> {
    kernel: Arc<Kernel>,
    rec: R,
    /// Bytes added by each committed token (0 for end of sequence).
    history: Vec<u32>,
    finished: bool,
    key: Vec<u32>,
    split_key: Vec<u32>,
    /// The mask being computed.
    tally: Tally,
    /// An inside set being computed (all zero between masks), and its tally.
    scratch: FixedBitSet,
    scratch_tally: Tally,
    hits: Vec<TokenId>,
    /// The first pass's records of [`Session::walk_quotes`], and its open records.
    taken: Vec<u32>,
    open: Vec<usize>,
    /// The classes of [`Session::close_by_class`].
    classes: Classes,
    /// The number trie last used, with its classes.
    numbers: Option<((ByteClasses, bool), Arc<NumberTrie>)>,
    /// The name of a key position (see [`Recognizer::close_classes_name`]).
    name: Vec<u32>,
    /// What follows each class of the key being read (see [`Recognizer::close_frame`]).
    after: AfterClasses,
}

/// What [`Session::close_by_class`] found after the classes of one key (named by
/// [`Recognizer::close_frame`]), kept for its next positions: the suffixes after a key's
/// closing quote depend on the key's frame and class alone, not on where in the key the
/// content starts.
#[derive(Debug, Default)]
struct AfterClasses {
    /// The key's number.
    frame: Option<u128>,
    /// Per class met: its number, whether the quote is accepted, and the suffix ids accepted
    /// after it.
    found: Vec<(u32, bool, FixedBitSet)>,
    /// How many entries of `found` hold for `frame` (the others are storage to reuse).
    len: usize,
}

impl AfterClasses {
    /// Starts over when `frame` is another key's (or none).
    fn enter(&mut self, frame: Option<u128>) {
        if frame.is_none() || frame != self.frame {
            self.frame = frame;
            self.len = 0;
        }
    }

    fn get(&self, class: u32) -> Option<(bool, &FixedBitSet)> {
        self.found[..self.len]
            .iter()
            .find(|e| e.0 == class)
            .map(|e| (e.1, &e.2))
    }

    fn put(&mut self, class: u32, quote: bool, suffixes: &FixedBitSet) {
        if self.len == self.found.len() {
            self.found.push((class, quote, suffixes.clone()));
        } else {
            let e = &mut self.found[self.len];
            e.0 = class;
            e.1 = quote;
            e.2.clone_from(suffixes);
        }
        self.len += 1;
    }
}

impl<R: Recognizer> Session<R> {
    /// A session at the recognizer's current state.
    pub fn new(kernel: Arc<Kernel>, rec: R) -> Session<R> {
        let n = kernel.mask_len();
        Session {
            kernel,
            rec,
            history: Vec::new(),
            finished: false,
            key: Vec::new(),
            split_key: Vec::new(),
            tally: Tally::default(),
            scratch: FixedBitSet::with_capacity(n),
            scratch_tally: Tally::default(),
            hits: Vec::new(),
            taken: Vec::new(),
            open: Vec::new(),
            classes: Classes::default(),
            name: Vec::new(),
            numbers: None,
            after: AfterClasses::default(),
        }
    }

    /// The kernel.
    pub fn kernel(&self) -> &Arc<Kernel> {
        &self.kernel
    }

    /// The recognizer.
    pub fn recognizer(&self) -> &R {
        &self.rec
    }

    /// The recognizer, mutably (changes made through it are not tracked by rollback).
    pub fn recognizer_mut(&mut self) -> &mut R {
        &mut self.rec
    }

    /// A fresh, empty mask of the right length.
    pub fn new_mask(&self) -> FixedBitSet {
        FixedBitSet::with_capacity(self.kernel.mask_len())
    }

    /// Tokens committed so far.
    pub fn len(&self) -> usize {
        self.history.len()
    }

    /// Whether nothing was committed.
    pub fn is_empty(&self) -> bool {
        self.history.is_empty()
    }

    /// Whether end of sequence was committed.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Whether the text so far is a complete document.
    pub fn is_accepting(&self) -> bool {
        self.rec.is_accepting()
    }

    /// Computes the tokens allowed next into `out` (resized and cleared first): special tokens
    /// off, end of sequence on exactly when the text is a complete document.
    ///
    /// # Errors
    ///
    /// [`MaskError::EmptyMask`] when no token is allowed (never a silent empty mask), and
    /// [`MaskError::Finished`] after end of sequence.
    pub fn mask(
        &mut self,
        cache: &mut MaskCache,
        out: &mut FixedBitSet,
    ) -> Result<MaskStats, MaskError> {
        self.mask_in(Masks::Own(cache), out)
    }

    /// [`Session::mask`], with the masks in `shared`, the cache of every session of this
    /// grammar, and the rest (the sets inside strings) in `own`, whose counters also count
    /// this session's masks found in `shared` or not.
    ///
    /// # Errors
    ///
    /// As [`Session::mask`].
    pub fn mask_shared(
        &mut self,
        shared: &SharedMaskCache,
        own: &mut MaskCache,
        out: &mut FixedBitSet,
    ) -> Result<MaskStats, MaskError> {
        self.mask_in(Masks::Shared(shared, own), out)
    }

    fn mask_in(
        &mut self,
        mut masks: Masks<'_>,
        out: &mut FixedBitSet,
    ) -> Result<MaskStats, MaskError> {
        if self.finished {
            return Err(MaskError::Finished);
        }
        let n = self.kernel.mask_len();
        if out.len() != n {
            *out = FixedBitSet::with_capacity(n);
        }
        let mut stats = MaskStats::default();
        self.key.clear();
        let cacheable = self.rec.state_key(&mut self.key);
        if let Some(allowed) = cacheable
            .then(|| masks.load(&self.kernel, &self.key, out))
            .flatten()
        {
            stats.cache_hit = true;
            stats.allowed = allowed;
        } else {
            self.tally.reset(n);
            self.compute(masks.own(), out, &mut stats);
            // Counted as the mask was built: on 262k tokens a popcount is several µs.
            stats.allowed = self.tally.count;
            debug_assert_eq!(stats.allowed, out.count_ones(..), "mask tally");
            if cacheable {
                masks.put(&self.key, Arc::new(self.tally.stored(out)));
            }
        }
        if stats.allowed == 0 {
            return Err(MaskError::EmptyMask {
                state: self.rec.describe(),
            });
        }
        Ok(stats)
    }

    /// Computes the mask without a mask cache (for checks and benchmarks). What the kernel
    /// remembers of lexeme-only walks for every session still serves (see
    /// [`Kernel::forget_learnt`]).
    pub fn mask_uncached(&mut self, out: &mut FixedBitSet) -> Result<MaskStats, MaskError> {
        let mut cache = MaskCache::new(0);
        self.mask(&mut cache, out)
    }

    fn compute(&mut self, cache: &mut MaskCache, out: &mut FixedBitSet, stats: &mut MaskStats) {
        let kernel = self.kernel.clone();
        self.split_key.clear();
        match self.rec.split(&mut self.split_key) {
            Some(split) => {
                stats.split = true;
                match split {
                    // The precomputed set comes first (over whatever `out` held), and the
                    // inside walk covers only tokens outside it, so the counts add up.
                    Split::StringContent { budget, level, .. } => {
                        let (set, n) = kernel.string_content_counted(level, budget);
                        let base = Base::StringContent { level, budget };
                        self.tally.start_from(out, base, set, *n);
                        if let Some(trie) = kernel.outside_level(level) {
                            stats.nodes += self.walk_inside(&kernel, cache, Some(trie), out);
                        }
                    }
                    Split::KeyContent => {
                        let (set, n) = kernel.key_content_counted();
                        self.tally.start_from(out, Base::KeyContent, set, *n);
                    }
                    Split::Walk => {
                        out.clear();
                        stats.nodes += self.walk_inside(&kernel, cache, None, out);
                    }
                }
                match split {
                    Split::StringContent {
                        close: Some(close),
                        level,
                        ..
                    } => {
                        // At the top level every escape is content: the tokens with one before
                        // their first unescaped quote close the string like the others, by
                        // their lengths, and those whose every quote is escaped are in the
                        // precomputed set.
                        let escapes = level == TOP_LEVEL;
                        stats.nodes += self.close_once(&kernel, close, escapes, out);
                        if !escapes {
                            stats.nodes += self.walk_quotes(kernel.escaped_quote_trie(), out);
                        }
                    }
                    // A key (whose content is constrained or not) closes by class where the
                    // recognizer classes it; a string does not.
                    Split::KeyContent | Split::Walk => {
                        match self.close_by_class(&kernel, split == Split::KeyContent, out) {
                            Some(nodes) => stats.nodes += nodes,
                            None => stats.nodes += self.walk_quotes(kernel.quote_trie(), out),
                        }
                    }
                    Split::StringContent { .. } => {
                        stats.nodes += self.walk_quotes(kernel.quote_trie(), out);
                    }
                }
            }
            _ => {
                out.clear();
                let mut tally = std::mem::take(&mut self.tally);
                stats.nodes += self.walk_all(&kernel, out, &mut tally);
                self.tally = tally;
            }
        }
        if self.rec.is_accepting() {
            for id in kernel.eos() {
                self.tally.insert(out, id.as_usize());
            }
        }
    }

    /// Adds every token the recognizer accepts to `out` (counted in `tally`). Where the
    /// vocabulary has many numeric tokens (see [`numbers_by_class`]), the numeric ones (see
    /// [`crate::numbers`]) go by byte class where the recognizer gives classes (from their
    /// first byte, or after it), and the others token by token, in two tries split by their
    /// first byte; elsewhere the trie is walked whole.
    fn walk_all(&mut self, kernel: &Kernel, out: &mut FixedBitSet, tally: &mut Tally) -> u64 {
        if !numbers_by_class(kernel) {
            return walk(kernel.trie(), &mut self.rec, out, tally);
        }
        let given = self.rec.next_bytes_hint();
        let hint = given.unwrap_or([u64::MAX; 4]);
        let mut w = Walk {
            rec: &mut self.rec,
            mask: out,
            tally: &mut *tally,
            nodes: 0,
        };
        match given {
            Some(hint) => {
                let other = std::array::from_fn(|i| hint[i] & !NUMBER_SET[i]);
                walk_hinted(kernel.trie(), Some(other), &mut w);
            }
            None => kernel.trie().walk(&mut NotNumberLed {
                inner: &mut w,
                depth: 0,
            }),
        }
        let mut nodes = w.nodes;
        // Inside a number already, the numeric tokens are walked by class from their first
        // byte.
        let mut classes = EXACT;
        let classed = self.rec.number_classes(&mut classes);
        if classed {
            let trie = self.number_trie(kernel, &classes, true);
            nodes += walk_numbers(&mut self.rec, &trie, 0, out, tally);
        }
        // Otherwise each first byte of `NUMBER_BYTES` is pushed once, for both the other
        // tokens that start with it and the numeric ones.
        let led = kernel.number_led();
        let exact = kernel.number_trie(&EXACT, false);
        for (i, &b) in NUMBER_BYTES.iter().enumerate() {
            if !has_byte(&hint, b) {
                continue;
            }
            let first = exact.first(i).filter(|_| !classed);
            let below = has_byte(kernel.number_led_first(), b)
                .then(|| led.child(led.root(), b))
                .flatten();
            if (first.is_none() && below.is_none()) || !self.rec.try_push_byte(b) {
                continue;
            }
            nodes += 1;
            if let Some(below) = below {
                let mut w = Walk {
                    rec: &mut self.rec,
                    mask: out,
                    tally: &mut *tally,
                    nodes: 0,
                };
                led.walk_below(below, &mut w);
                nodes += w.nodes;
            }
            if let Some(first) = first {
                // Classes matter only below the first byte, and pay where many tokens are.
                let by_class;
                let (trie, node) =
                    if exact.below(i) >= CLASSED_BELOW && self.rec.number_classes(&mut classes) {
                        by_class = self.number_trie(kernel, &classes, false);
                        // Every trie holds the same first bytes.
                        let node = by_class.first(i).expect("a numeric token starts with it");
                        (&*by_class, node)
                    } else {
                        (&*exact, first)
                    };
                for &id in trie.tokens(node) {
                    tally.insert(out, id.as_usize());
                }
                nodes += walk_numbers(&mut self.rec, trie, node, out, tally);
            }
            self.rec.pop_bytes(1);
        }
        nodes
    }

    /// The kernel's number trie for `classes` (as the recognizer wrote them), the one last
    /// used when it is the same.
    fn number_trie(
        &mut self,
        kernel: &Kernel,
        classes: &ByteClasses,
        first_classed: bool,
    ) -> Arc<NumberTrie> {
        let key = (canonical(classes), first_classed);
        match &self.numbers {
            Some((k, trie)) if *k == key => trie.clone(),
            _ => {
                let trie = kernel.number_trie(&key.0, first_classed);
                self.numbers = Some((key, trie.clone()));
                trie
            }
        }
    }

    /// Starts `name` afresh with the grammar's name (see [`Recognizer::grammar_name`]), under
    /// which the kernel remembers what holds for every session of it; `false` (`name` empty)
    /// when the recognizer gives none.
    fn name_grammar(&mut self) -> bool {
        self.name.clear();
        let Some(g) = self.rec.grammar_name() else {
            return false;
        };
        self.name.extend_from_slice(&[g as u32, (g >> 32) as u32]);
        true
    }

    /// Adds the tokens of `trie` (`None`: of the whole vocabulary, as [`Session::walk_all`]
    /// walks it) that stay inside the current lexeme (the recognizer in lexeme-only mode),
    /// cached under the split key, and remembered in the kernel for every session of the
    /// grammar where the recognizer names it.
    fn walk_inside(
        &mut self,
        kernel: &Kernel,
        cache: &mut MaskCache,
        trie: Option<&AnyIndex>,
        out: &mut FixedBitSet,
    ) -> u64 {
        if let Some(m) = cache.get_inside(&self.split_key) {
            self.tally.add(out, m);
            return 0;
        }
        let memo = &kernel.learnt().inside;
        let named = self.name_grammar();
        if named {
            self.name.extend_from_slice(&self.split_key);
        }
        if let Some(found) = named.then(|| memo.get(&self.name)).flatten() {
            self.tally.add(out, &found);
            return 0;
        }
        let n = self.scratch.len();
        self.scratch_tally.reset(n);
        self.rec.set_lexeme_only(true);
        let mut loops = [0u64; 4];
        let nodes = match trie {
            Some(trie) => walk(
                trie,
                &mut self.rec,
                &mut self.scratch,
                &mut self.scratch_tally,
            ),
            None if self.rec.loop_bytes(&mut loops) => self.walk_loop(kernel, &loops),
            None => {
                let (mut set, mut tally) = (
                    std::mem::take(&mut self.scratch),
                    std::mem::take(&mut self.scratch_tally),
                );
                let nodes = self.walk_all(kernel, &mut set, &mut tally);
                (self.scratch, self.scratch_tally) = (set, tally);
                nodes
            }
        };
        self.rec.set_lexeme_only(false);
        let set = self.scratch_tally.stored(&self.scratch);
        self.tally.add(out, &set);
        if named {
            memo.put(&self.name, set.clone(), set.bytes());
        }
        cache.put_inside(&self.split_key, set);
        // Back to all zero, by the listed members when there is a list.
        if self.scratch_tally.dense {
            self.scratch.clear();
        } else {
            for &id in &self.scratch_tally.ids {
                self.scratch.set(id as usize, false);
            }
        }
        nodes
    }

    /// The walk of [`Session::walk_inside`] over the whole trie where the recognizer names
    /// bytes that take it back to where it is ([`Recognizer::loop_bytes`]): one of them,
    /// pushed once, decides them all along each token's leading run of them, and the
    /// recognizer sees only the bytes from the first one outside them (see [`LoopWalk`]).
    fn walk_loop(&mut self, kernel: &Kernel, loops: &[u64; 4]) -> u64 {
        let one = (0..=255u8)
            .find(|&b| has_byte(loops, b))
            .expect("the recognizer names some byte");
        let takes = self.rec.try_push_byte(one);
        if takes {
            self.rec.pop_bytes(1);
        }
        let mut v = LoopWalk {
            walk: Walk {
                rec: &mut self.rec,
                mask: &mut self.scratch,
                tally: &mut self.scratch_tally,
                nodes: 0,
            },
            loops: *loops,
            takes,
            pushed: 0,
        };
        kernel.trie().walk(&mut v);
        v.walk.nodes
    }

    /// Adds the tokens of `trie` (tokens with a quote, walked from inside a string) that the
    /// recognizer accepts. Most of the walk is string content before a token's quote, where the
    /// full recognizer is slow to refuse a byte; so a first pass finds, in lexeme-only mode
    /// (which remembers what it learnt about this string), which content bytes are taken, and
    /// the full recognizer then pushes only those and the quotes that end the string. (A
    /// recognizer without a lexeme-only mode takes both passes in full; the masks are the
    /// same.)
    fn walk_quotes(&mut self, trie: &AnyIndex, out: &mut FixedBitSet) -> u64 {
        let mut taken = std::mem::take(&mut self.taken);
        taken.clear();
        self.rec.set_lexeme_only(true);
        self.open.clear();
        let mut first = Record {
            rec: &mut self.rec,
            taken: &mut taken,
            open: &mut self.open,
        };
        trie.walk(&mut first);
        self.rec.set_lexeme_only(false);
        let mut second = Replay {
            rec: &mut self.rec,
            mask: out,
            tally: &mut self.tally,
            taken: &taken,
            next: 0,
            depth: 0,
            closed_at: None,
            nodes: 0,
        };
        trie.walk(&mut second);
        let nodes = second.nodes;
        self.taken = taken;
        nodes
    }

    /// For a key ([`Split::KeyContent`] or [`Split::Walk`]): adds the tokens that can end the
    /// key (see [`KeyCloses`](crate::keys::KeyCloses)) that the recognizer accepts. The
    /// contents before their unescaped quote are walked in lexeme-only mode, each accepted one
    /// classed by [`Recognizer::close_class`]; for each class, the full recognizer pushes one
    /// content of it, the quote, and the distinct suffixes. Most contents share a few classes
    /// (any key that names no property), so the full recognizer runs a few times instead of
    /// once per content. The tokens with more quotes are walked in full. `None` (nothing
    /// added) when the recognizer has no classes here.
    ///
    /// The first pass depends on the grammar, the position's lexer states and, unless the key
    /// takes `any_content`, the frame (which the split key holds): where the recognizer names
    /// them, what the pass found is remembered in the kernel for every session.
    fn close_by_class(
        &mut self,
        kernel: &Kernel,
        any_content: bool,
        out: &mut FixedBitSet,
    ) -> Option<u64> {
        let keys = kernel.key_closes();
        let mut classes = std::mem::take(&mut self.classes);
        classes.clear();
        self.rec.set_lexeme_only(true);
        let Some(root) = self.rec.close_class().filter(|&c| c < MAX_CLASSES) else {
            self.rec.set_lexeme_only(false);
            self.classes = classes;
            return None;
        };
        let root = classes.slot(root);
        let frame = self.rec.close_frame();
        self.after.enter(frame);
        // The name: the grammar's, whether the key takes any content, the lexer states, and
        // (when it does not) the split key, which holds what viability depends on.
        let named = self.name_grammar() && {
            self.name.push(any_content.into());
            self.rec.close_classes_name(&mut self.name)
        };
        if named && !any_content {
            self.name.extend_from_slice(&self.split_key);
        }
        let memo = &kernel.learnt().classes;
        if let Some(found) = named.then(|| memo.get(&self.name)).flatten() {
            classes.recall(&found);
        } else {
            let mut first = Classify {
                rec: &mut self.rec,
                classes: &mut classes,
                unclassed: false,
            };
            keys.contents().walk(&mut first);
            if first.unclassed {
                // Not expected (a recognizer's classes hold for a whole walk); the walk in
                // full decides then.
                self.rec.set_lexeme_only(false);
                self.classes = classes;
                return None;
            }
            if named {
                let found = classes.remember();
                let size = found.bytes();
                memo.put(&self.name, found, size);
            }
        }
        self.rec.set_lexeme_only(false);

        let n = keys.suffixes().num_tokens();
        let mut hits = std::mem::take(&mut self.hits);
        let mut nodes = 0;
        for c in 0..classes.rep.len() {
            if classes.suffixes.len() <= c {
                classes.suffixes.push(FixedBitSet::with_capacity(n));
            }
            let (class, at, len) = classes.rep[c];
            // Classes recalled from another walk have no number here.
            let kept = frame.is_some() && class != NO_CLASS;
            if let Some((quote, suffixes)) = kept.then(|| self.after.get(class)).flatten() {
                classes.suffixes[c].clone_from(suffixes);
                classes.quote.push(quote);
                continue;
            }
            classes.suffixes[c].clear();
            let content = &classes.bytes[at as usize..(at + len) as usize];
            let mut pushed = 0;
            for &b in content {
                if !self.rec.try_push_byte(b) {
                    break;
                }
                pushed += 1;
            }
            // Inside a key both modes accept the same content.
            debug_assert_eq!(pushed, content.len(), "content the lexeme walk took");
            let quote = pushed == content.len() && self.rec.try_push_byte(QUOTE);
            classes.quote.push(quote);
            if quote {
                pushed += 1;
                hits.clear();
                nodes += Suffixes::walk(&mut self.rec, &mut hits, keys.suffixes());
                for &suffix in &hits {
                    classes.suffixes[c].insert(suffix.as_usize());
                }
            }
            nodes += pushed as u64;
            self.rec.pop_bytes(pushed);
            if kept {
                self.after.put(class, quote, &classes.suffixes[c]);
            }
        }
        self.hits = hits;

        let allowed = |classes: &Classes, c: u32, suffix: u32| {
            let c = c as usize;
            classes.quote[c]
                && (suffix == NO_SUFFIX || classes.suffixes[c].contains(suffix as usize))
        };
        for &(suffix, id) in keys.root() {
            if allowed(&classes, root, suffix) {
                self.tally.insert(out, id.as_usize());
            }
        }
        for &(content, c) in &classes.met {
            let content = TokenId::new(content).expect("a content id");
            for &(suffix, id) in keys.tokens(content) {
                if allowed(&classes, c, suffix) {
                    self.tally.insert(out, id.as_usize());
                }
            }
        }
        self.classes = classes;
        Some(nodes + self.walk_quotes(keys.multi(), out))
    }

    /// Closes the string once (after the [filler](Close::filler) of `lo` code points) and
    /// walks the suffixes that can follow; adds every token `content"suffix` whose content has
    /// `lo..=hi` code points, and has no backslash unless `escapes`.
    fn close_once(
        &mut self,
        kernel: &Kernel,
        close: Close,
        escapes: bool,
        out: &mut FixedBitSet,
    ) -> u64 {
        let Close { lo, hi } = close;
        if lo > hi {
            return 0;
        }
        let mut pushed = 0;
        for byte in close.filler() {
            if !self.rec.try_push_byte(byte) {
                self.rec.pop_bytes(pushed);
                return 0;
            }
            pushed += 1;
        }
        let mut nodes = 0;
        if self.rec.try_push_byte(QUOTE) {
            pushed += 1;
            let add = |out: &mut FixedBitSet, tally: &mut Tally, lists: [&[(u32, TokenId)]; 2]| {
                for list in lists {
                    let from = list.partition_point(|&(cp, _)| cp < lo);
                    for &(cp, id) in &list[from..] {
                        if cp > hi {
                            break;
                        }
                        tally.insert(out, id.as_usize());
                    }
                }
            };
            add(out, &mut self.tally, kernel.close_empty(escapes));
            let mut hits = std::mem::take(&mut self.hits);
            hits.clear();
            nodes = Suffixes::walk(&mut self.rec, &mut hits, kernel.close_trie());
            for &suffix in &hits {
                add(out, &mut self.tally, kernel.close_tokens(suffix, escapes));
            }
            self.hits = hits;
        }
        self.rec.pop_bytes(pushed);
        nodes
    }

    /// Advances by `token`.
    ///
    /// # Errors
    ///
    /// When the token is not allowed here (the state is then unchanged), is special (other than
    /// end of sequence), is end of sequence before the document is complete, or follows end of
    /// sequence.
    pub fn commit(&mut self, token: TokenId) -> Result<(), MaskError> {
        if self.finished {
            return Err(MaskError::Finished);
        }
        let vocab = self.kernel.vocab().clone();
        if token.as_usize() >= vocab.len() {
            return Err(MaskError::UnknownToken {
                token: token.as_u32(),
                vocab_size: vocab.len(),
            });
        }
        if vocab.is_eos(token) {
            if !self.rec.is_accepting() {
                return Err(MaskError::Incomplete);
            }
            self.finished = true;
            self.history.push(0);
            return Ok(());
        }
        if vocab.is_special(token) {
            return Err(MaskError::SpecialToken {
                token: token.as_u32(),
            });
        }
        let bytes = vocab.bytes(token);
        if bytes.is_empty() {
            // Masks never hold a token without bytes: it would make no progress.
            return Err(MaskError::TokenNotAllowed {
                token: token.as_u32(),
                bytes: String::new(),
                at: 0,
            });
        }
        for (i, &b) in bytes.iter().enumerate() {
            if !self.rec.try_push_byte(b) {
                self.rec.pop_bytes(i);
                return Err(MaskError::TokenNotAllowed {
                    token: token.as_u32(),
                    bytes: String::from_utf8_lossy(bytes).into_owned(),
                    at: i,
                });
            }
        }
        self.history.push(bytes.len() as u32);
        Ok(())
    }

    /// Undoes the last `n` committed tokens.
    ///
    /// # Errors
    ///
    /// When fewer than `n` tokens were committed (nothing changes).
    pub fn rollback(&mut self, n: usize) -> Result<(), MaskError> {
        if n > self.history.len() {
            return Err(MaskError::Rollback {
                requested: n,
                committed: self.history.len(),
            });
        }
        let mut bytes = 0usize;
        for _ in 0..n {
            let b = self.history.pop().expect("checked length");
            if b == 0 && self.finished {
                self.finished = false;
            }
            bytes += b as usize;
        }
        self.rec.pop_bytes(bytes);
        Ok(())
    }

    /// The bytes that are the only possible continuation right now, up to `max` of them
    /// (empty when the next byte is a choice, or when end of sequence is possible).
    pub fn forced_bytes(&mut self, max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        self.forced_bytes_into(max, &mut out);
        out
    }

    /// [`Session::forced_bytes`] into `out`, which is cleared first (no allocation once `out`
    /// holds `max` bytes).
    pub fn forced_bytes_into(&mut self, max: usize, out: &mut Vec<u8>) {
        out.clear();
        if self.finished {
            return;
        }
        while out.len() < max && !self.rec.is_accepting() {
            let mut only = None;
            let mut count = 0;
            for b in 0..=255u8 {
                if self.rec.try_push_byte(b) {
                    self.rec.pop_bytes(1);
                    count += 1;
                    only = Some(b);
                    if count > 1 {
                        break;
                    }
                }
            }
            match (count, only) {
                (1, Some(b)) => {
                    self.rec.try_push_byte(b);
                    out.push(b);
                }
                _ => break,
            }
        }
        self.rec.pop_bytes(out.len());
    }
}
