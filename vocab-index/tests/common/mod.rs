//! Visitors and byte-level predicates shared by the integration tests: a visitor that logs
//! every call while checking the walk's invariants, and brute-force references.

#![allow(dead_code)]

use std::path::PathBuf;

use vocab_index::{TokenId, TrieVisitor, VocabIndex, Vocabulary};

/// One call made by a walk.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Event {
    /// `push_byte(byte)` and the answer.
    Push(u8, bool),
    /// `pop_bytes(n)`, zeros included.
    Pop(usize),
    /// `token(id)`.
    Token(u32),
    /// `token(spare)`, for an accepted node without tokens.
    Spare,
}

/// A byte-level automaton deciding which prefixes stay alive.
pub trait Predicate {
    /// The state before any byte.
    fn start(&self) -> u32;
    /// The state after `byte` at `depth` (1 for a first byte), or `None` when dead.
    fn step(&self, state: u32, depth: usize, byte: u8) -> Option<u32>;

    /// Whether every prefix of `bytes` stays alive.
    fn accepts(&self, bytes: &[u8]) -> bool {
        let mut state = self.start();
        for (i, &b) in bytes.iter().enumerate() {
            match self.step(state, i + 1, b) {
                Some(s) => state = s,
                None => return false,
            }
        }
        true
    }
}

/// Accepts everything.
pub struct All;

impl Predicate for All {
    fn start(&self) -> u32 {
        0
    }
    fn step(&self, _: u32, _: usize, _: u8) -> Option<u32> {
        Some(0)
    }
}

/// Forbids some (depth, byte) pairs.
#[derive(Debug, Clone)]
pub struct Forbidden(pub Vec<(usize, u8)>);

impl Predicate for Forbidden {
    fn start(&self) -> u32 {
        0
    }
    fn step(&self, _: u32, depth: usize, byte: u8) -> Option<u32> {
        (!self.0.contains(&(depth, byte))).then_some(0)
    }
}

#[derive(Debug, Clone)]
/// A small DFA over byte classes: `table[state * classes + byte % classes]`, `u32::MAX` dead.
pub struct Dfa {
    pub classes: usize,
    pub table: Vec<u32>,
}

impl Predicate for Dfa {
    fn start(&self) -> u32 {
        0
    }
    fn step(&self, state: u32, _: usize, byte: u8) -> Option<u32> {
        let next = self.table[state as usize * self.classes + usize::from(byte) % self.classes];
        (next != u32::MAX).then_some(next)
    }
}

/// Any closure on the byte alone.
pub struct ByteFn<F: Fn(u8) -> bool>(pub F);

impl<F: Fn(u8) -> bool> Predicate for ByteFn<F> {
    fn start(&self) -> u32 {
        0
    }
    fn step(&self, _: u32, _: usize, byte: u8) -> Option<u32> {
        (self.0)(byte).then_some(0)
    }
}

/// Runs a predicate as a visitor, logging calls and checking that each reported token's
/// bytes equal the current prefix and that pops never exceed pushes.
pub struct Recorder<'a, P> {
    pub vocab: &'a Vocabulary,
    pub predicate: &'a P,
    pub states: Vec<u32>,
    pub prefix: Vec<u8>,
    pub log: Vec<Event>,
    pub allowed: Vec<TokenId>,
    /// Log every event (off for large walks, where only `allowed` matters).
    pub logging: bool,
    /// The spare id offered to the walk (see `TrieVisitor::spare_id`).
    pub spare: Option<TokenId>,
}

impl<'a, P: Predicate> Recorder<'a, P> {
    pub fn new(vocab: &'a Vocabulary, predicate: &'a P) -> Self {
        Recorder {
            vocab,
            predicate,
            states: vec![predicate.start()],
            prefix: Vec::new(),
            log: Vec::new(),
            allowed: Vec::new(),
            logging: true,
            spare: None,
        }
    }

    /// Asserts that every push was popped.
    pub fn finish(self) -> (Vec<Event>, Vec<TokenId>) {
        assert!(
            self.prefix.is_empty(),
            "walk ended with prefix {:?} pushed",
            self.prefix
        );
        (self.log, self.allowed)
    }
}

impl<P: Predicate> TrieVisitor for Recorder<'_, P> {
    fn push_byte(&mut self, byte: u8) -> bool {
        let state = *self.states.last().unwrap();
        let next = self.predicate.step(state, self.prefix.len() + 1, byte);
        if self.logging {
            self.log.push(Event::Push(byte, next.is_some()));
        }
        if let Some(next) = next {
            self.states.push(next);
            self.prefix.push(byte);
        }
        next.is_some()
    }

    fn pop_bytes(&mut self, n: usize) {
        assert!(
            n <= self.prefix.len(),
            "pop {n} with {} pushed",
            self.prefix.len()
        );
        self.prefix.truncate(self.prefix.len() - n);
        self.states.truncate(self.states.len() - n);
        if self.logging {
            self.log.push(Event::Pop(n));
        }
    }

    fn token(&mut self, id: TokenId) {
        if Some(id) == self.spare {
            if self.logging {
                self.log.push(Event::Spare);
            }
            return;
        }
        assert_eq!(
            self.vocab.bytes(id),
            &self.prefix[..],
            "token {id} reported at wrong prefix"
        );
        if self.logging {
            self.log.push(Event::Token(id.as_u32()));
        }
        self.allowed.push(id);
    }

    fn spare_id(&self) -> Option<TokenId> {
        self.spare
    }
}

/// The log and allowed tokens of a whole walk.
pub fn walk<I: VocabIndex, P: Predicate>(
    index: &I,
    vocab: &Vocabulary,
    predicate: &P,
    logging: bool,
) -> (Vec<Event>, Vec<TokenId>) {
    walk_with_spare(index, vocab, predicate, logging, None)
}

/// As [`walk`], offering a spare id (the vocabulary's length, which no token has).
pub fn walk_with_spare<I: VocabIndex, P: Predicate>(
    index: &I,
    vocab: &Vocabulary,
    predicate: &P,
    logging: bool,
    spare: Option<TokenId>,
) -> (Vec<Event>, Vec<TokenId>) {
    let mut r = Recorder::new(vocab, predicate);
    r.logging = logging;
    r.spare = spare;
    index.walk(&mut r);
    r.finish()
}

/// The vocabulary's length as a spare id.
pub fn spare(vocab: &Vocabulary) -> Option<TokenId> {
    TokenId::new(vocab.len() as u32)
}

/// The log and allowed tokens of a walk below `prefix`.
pub fn walk_from<I: VocabIndex, P: Predicate>(
    index: &I,
    vocab: &Vocabulary,
    predicate: &P,
    prefix: &[u8],
) -> (Vec<Event>, Vec<TokenId>) {
    let mut r = Recorder::new(vocab, predicate);
    index.walk_from(prefix, &mut r);
    r.finish()
}

/// The reference: ids of `indexed` (non-empty) that `predicate` accepts, in walk order
/// (by bytes, then id).
pub fn brute_force<P: Predicate>(
    vocab: &Vocabulary,
    indexed: &[TokenId],
    predicate: &P,
) -> Vec<TokenId> {
    let mut ids: Vec<TokenId> = indexed
        .iter()
        .copied()
        .filter(|&id| !vocab.bytes(id).is_empty() && predicate.accepts(vocab.bytes(id)))
        .collect();
    ids.sort_by(|&a, &b| vocab.bytes(a).cmp(vocab.bytes(b)).then(a.cmp(&b)));
    ids.dedup();
    ids
}

/// The directory of the real test tokenizers; fails with instructions when missing.
pub fn tokenizer_path(name: &str) -> PathBuf {
    let root = std::env::var_os("STENCIL_ASSETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")));
    let path = root.join("tokenizers").join(name).join("tokenizer.json");
    assert!(
        path.is_file(),
        "missing {}: run `cargo xtask fetch-assets` (or set STENCIL_ASSETS)",
        path.display()
    );
    path
}
