//! A constrained-decoding session: masks, commits, rollback, forced bytes.

use std::sync::Arc;

use fixedbitset::FixedBitSet;
use vocab_index::{AnyIndex, TokenId, TrieVisitor, VocabIndex};

use crate::cache::MaskCache;
use crate::error::MaskError;
use crate::kernel::Kernel;
use crate::recognizer::{Inside, Recognizer};

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

/// Walks a trie, pushing bytes into the recognizer and collecting accepted tokens.
struct Walk<'a, R> {
    rec: &'a mut R,
    mask: &'a mut FixedBitSet,
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
        self.mask.insert(id.as_usize());
    }
}

fn walk<R: Recognizer>(trie: &AnyIndex, rec: &mut R, mask: &mut FixedBitSet) -> u64 {
    let mut w = Walk {
        rec,
        mask,
        nodes: 0,
    };
    trie.walk(&mut w);
    w.nodes
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
    scratch: FixedBitSet,
    hits: Vec<TokenId>,
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
            scratch: FixedBitSet::with_capacity(n),
            hits: Vec::new(),
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
        if cacheable && let Some((m, allowed)) = cache.get_mask(&self.key) {
            out.clone_from(m);
            stats.cache_hit = true;
            stats.allowed = allowed;
        } else {
            out.clear();
            self.compute(cache, out, &mut stats);
            // Bits past the length are always zero, so a popcount over whole blocks is exact
            // (and much faster than `count_ones(..)` on lengths that are not a multiple of the
            // block). A hit reuses the count: on 262k tokens the popcount is several µs.
            stats.allowed = out.as_slice().iter().map(|w| w.count_ones() as usize).sum();
            if cacheable {
                cache.put_mask(&self.key, out, stats.allowed);
            }
        }
        if stats.allowed == 0 {
            return Err(MaskError::EmptyMask {
                state: self.rec.describe(),
            });
        }
        Ok(stats)
    }

    /// Computes the mask without any cache (for checks and benchmarks).
    pub fn mask_uncached(&mut self, out: &mut FixedBitSet) -> Result<MaskStats, MaskError> {
        let mut cache = MaskCache::new(0);
        self.mask(&mut cache, out)
    }

    fn compute(&mut self, cache: &mut MaskCache, out: &mut FixedBitSet, stats: &mut MaskStats) {
        let kernel = self.kernel.clone();
        self.split_key.clear();
        match self.rec.split(&mut self.split_key) {
            Some(split) if split.boundary == b'"' => {
                stats.split = true;
                match split.inside {
                    Inside::StringContent { budget, level } => {
                        out.union_with(kernel.string_content_at(level, budget));
                        if let Some(trie) = kernel.outside_level(level) {
                            stats.nodes += self.walk_inside(cache, trie, out);
                        }
                    }
                    Inside::KeyContent => out.union_with(kernel.key_content()),
                    Inside::Walk => stats.nodes += self.walk_inside(cache, kernel.trie(), out),
                }
                match (split.inside, split.close) {
                    (Inside::StringContent { .. }, Some((lo, hi))) => {
                        stats.nodes += self.close_once(&kernel, lo, hi, out);
                        stats.nodes += walk(kernel.escaped_quote_trie(), &mut self.rec, out);
                    }
                    _ => stats.nodes += walk(kernel.quote_trie(), &mut self.rec, out),
                }
            }
            _ => stats.nodes += walk(kernel.trie(), &mut self.rec, out),
        }
        if self.rec.is_accepting() {
            for id in kernel.eos() {
                out.insert(id.as_usize());
            }
        }
    }

    /// Adds the tokens of `trie` that stay inside the current lexeme (the recognizer in
    /// lexeme-only mode), cached under the split key.
    fn walk_inside(
        &mut self,
        cache: &mut MaskCache,
        trie: &AnyIndex,
        out: &mut FixedBitSet,
    ) -> u64 {
        if let Some(m) = cache.get_inside(&self.split_key) {
            out.union_with(m);
            return 0;
        }
        self.scratch.clear();
        self.rec.set_lexeme_only(true);
        let nodes = walk(trie, &mut self.rec, &mut self.scratch);
        self.rec.set_lexeme_only(false);
        cache.put_inside(&self.split_key, &self.scratch);
        out.union_with(&self.scratch);
        nodes
    }

    /// Closes the string once (after `lo` filler characters) and walks the suffixes that can
    /// follow; adds every token `content"suffix` whose content has `lo..=hi` code points.
    fn close_once(&mut self, kernel: &Kernel, lo: u32, hi: u32, out: &mut FixedBitSet) -> u64 {
        if lo > hi {
            return 0;
        }
        let mut pushed = 0;
        while pushed < lo as usize {
            if !self.rec.try_push_byte(b'a') {
                self.rec.pop_bytes(pushed);
                return 0;
            }
            pushed += 1;
        }
        let mut nodes = 0;
        if self.rec.try_push_byte(b'"') {
            pushed += 1;
            let add = |out: &mut FixedBitSet, list: &[(u32, TokenId)]| {
                let from = list.partition_point(|&(cp, _)| cp < lo);
                for &(cp, id) in &list[from..] {
                    if cp > hi {
                        break;
                    }
                    out.insert(id.as_usize());
                }
            };
            add(out, kernel.close_empty());
            struct Suffixes<'a, R> {
                rec: &'a mut R,
                hits: &'a mut Vec<TokenId>,
                nodes: u64,
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
            let mut hits = std::mem::take(&mut self.hits);
            hits.clear();
            let mut v = Suffixes {
                rec: &mut self.rec,
                hits: &mut hits,
                nodes: 0,
            };
            kernel.close_trie().walk(&mut v);
            nodes = v.nodes;
            for &suffix in &hits {
                add(out, kernel.close_tokens(suffix));
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
        if self.finished {
            return out;
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
        out
    }
}
