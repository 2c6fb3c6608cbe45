//! The per-vocabulary tables: tries and precomputed token sets, shared by every session.

use std::sync::Arc;

use fixedbitset::FixedBitSet;
use vocab_index::{AnyIndex, TokenId, TrieKind, VocabIndex, Vocabulary};

use crate::cache::Base;
use crate::keys::KeyCloses;
use crate::numbers::{ByteClasses, NumberTrie, NumberTries};
use crate::shared::Learnt;
use recognizer::{
    LEVELS, NUMBER_BYTES, QUOTE, TOP_LEVEL, is_numeric, key_content, spelled_in, string_content,
};

/// Everything the kernel precomputes for one vocabulary. `Send + Sync`: build it once per
/// tokenizer and share it (`Arc`) between sessions and threads. Its tables are immutable; it
/// also remembers what sessions learnt that holds for every session of a grammar (at most
/// 20 MiB; see [`Kernel::forget_learnt`]), and the numeric tokens by the byte classes met
/// (at most 4 MiB).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Kernel {
    /// Not stored with the tables: [`Kernel::load`] takes it, and checks its fingerprint.
    #[serde(skip, default = "crate::persist::no_vocabulary")]
    pub(crate) vocab: Arc<Vocabulary>,
    /// Every token a grammar can produce (not special, not empty).
    trie: AnyIndex,
    /// The tokens containing `"`: the only ones that can leave a string.
    quote_trie: AnyIndex,
    /// The distinct byte strings that follow the first unescaped `"` of a token whose bytes
    /// before it are string content that a quote may end (id = index into `close_tokens`);
    /// empty suffixes excluded.
    close_trie: AnyIndex,
    /// Per suffix: (code points before the quote, token), sorted by code points, of the
    /// tokens without a backslash before their quote.
    close_tokens: Vec<Vec<(u32, TokenId)>>,
    /// Per suffix, likewise, the tokens with a backslash before their first unescaped quote.
    close_escaped: Vec<Vec<(u32, TokenId)>>,
    /// Tokens ending at their first `"`, after content without a backslash: (code points,
    /// token), sorted.
    close_empty: Vec<(u32, TokenId)>,
    /// Likewise after content with a backslash.
    close_escaped_empty: Vec<(u32, TokenId)>,
    /// Tokens with a `"` whose bytes before the first one contain a backslash.
    escaped_quote_trie: AnyIndex,
    /// The tokens that can end an object key, for [`Session`](crate::Session)'s classed walk.
    keys: KeyCloses,
    /// Tokens that are string content, by budget: `by_budget[r]` holds those of at most `r`
    /// code points; the last entry holds them all. Each with its number of tokens.
    #[serde(with = "crate::persist::counted_list")]
    by_budget: Vec<Counted>,
    /// Per level below the top (see [`recognizer::CONTENT_LEVELS`]; in the order of `table_levels`): the
    /// string-content tokens spelled in that level, by budget like `by_budget`.
    #[serde(with = "crate::persist::counted_levels")]
    by_level: Vec<Vec<Counted>>,
    /// Per level below the top: the trie of the string-content tokens not spelled in it.
    outside: Vec<AnyIndex>,
    /// Tokens that are key content (string content with only the escapes JSON needs).
    #[serde(with = "crate::persist::counted")]
    key_content: Counted,
    eos: Vec<TokenId>,
    /// The numeric tokens (spelled only in [`NUMBER_BYTES`]), by id.
    numeric: Vec<TokenId>,
    /// The other tokens that start with a byte of [`NUMBER_BYTES`]: a walk takes the numeric
    /// ones by class, and these and the tokens of `trie` with another first byte in full.
    number_led: AnyIndex,
    /// The first bytes of `number_led`'s tokens, as a set of 256 bits.
    number_led_first: [u64; 4],
    /// Number tries by byte classes, built when first met (at run time, not stored).
    #[serde(skip)]
    number_tries: NumberTries,
    /// What sessions learnt for every session of a grammar (built at run time, not stored).
    #[serde(skip)]
    learnt: Learnt,
}

/// The levels below the top (see [`recognizer::CONTENT_LEVELS`]), by the index of their tables in a
/// [`Kernel`]: the top level spells every string-content token.
fn table_levels() -> impl Iterator<Item = u8> {
    LEVELS.into_iter().filter(|&level| level != TOP_LEVEL)
}

/// The index of the tables of `level` in a [`Kernel`] (`None` for the top level).
fn table_index(level: u8) -> Option<usize> {
    table_levels().position(|l| l == level)
}

/// The index of the first `"` of `bytes` outside an escape (read as string content from a
/// character boundary outside an escape). Only meaningful when the bytes before it are string
/// content: [`closable_content`] checks that.
fn first_unescaped_quote(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            QUOTE => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The code points of `content` when it is string content that a quote may end: it ends
/// outside an escape and on a character boundary (what follows it may then be any character,
/// which one letter stands for).
fn closable_content(content: &[u8]) -> Option<u32> {
    let cp = string_content(content)?;
    let mut probe = Vec::with_capacity(content.len() + 1);
    probe.extend_from_slice(content);
    probe.push(b'x');
    (string_content(&probe) == Some(cp + 1)).then_some(cp)
}

/// Cumulative sets of `tokens` (code points, id) by budget: entry `r` holds those of at most
/// `r` code points, the last one all of them.
/// A token set with its number of tokens.
pub(crate) type Counted = (FixedBitSet, usize);

fn by_budget(mut tokens: Vec<(u32, TokenId)>, n: usize) -> Vec<Counted> {
    tokens.sort_unstable();
    let max = tokens.last().map_or(0, |&(c, _)| c) as usize;
    let mut out = Vec::with_capacity(max + 1);
    let mut cur = FixedBitSet::with_capacity(n);
    let mut i = 0;
    for r in 0..=max as u32 {
        while i < tokens.len() && tokens[i].0 <= r {
            cur.insert(tokens[i].1.as_usize());
            i += 1;
        }
        out.push((cur.clone(), i));
    }
    out
}

impl Kernel {
    /// Builds the tables for `vocab` with the chosen trie backend.
    ///
    /// # Errors
    ///
    /// When a trie cannot be built (see [`vocab_index::FlatTrie::build`]).
    pub fn new(vocab: Arc<Vocabulary>, kind: TrieKind) -> Result<Kernel, vocab_index::Error> {
        let _span = tracing::debug_span!("kernel", tokens = vocab.len()).entered();
        let trie = AnyIndex::new(kind, &vocab)?;
        let quote_ids: Vec<TokenId> = vocab
            .indexable_ids()
            .filter(|&id| vocab.bytes(id).contains(&QUOTE))
            .collect();
        let quote_trie = AnyIndex::build(kind, &vocab, quote_ids.iter().copied())?;
        // Per suffix after the closing quote: the tokens without, and with, a backslash before it.
        type Closing = (Vec<(u32, TokenId)>, Vec<(u32, TokenId)>);
        let mut by_suffix: std::collections::BTreeMap<&[u8], Closing> =
            std::collections::BTreeMap::new();
        let mut escaped = Vec::new();
        for &id in &quote_ids {
            let bytes = vocab.bytes(id);
            let q = bytes
                .iter()
                .position(|&b| b == QUOTE)
                .expect("contains a quote");
            if bytes[..q].contains(&b'\\') {
                escaped.push(id);
                // Those whose every quote is escaped are in the string-content sets.
                if let Some(q) = first_unescaped_quote(bytes) {
                    let (p, s) = (&bytes[..q], &bytes[q + 1..]);
                    if let Some(cp) = closable_content(p) {
                        by_suffix.entry(s).or_default().1.push((cp, id));
                    }
                }
                continue;
            }
            let (p, s) = (&bytes[..q], &bytes[q + 1..]);
            if let Some(cp) = closable_content(p) {
                by_suffix.entry(s).or_default().0.push((cp, id));
            }
        }
        let (mut close_empty, mut close_escaped_empty) =
            by_suffix.remove(&b""[..]).unwrap_or_default();
        close_empty.sort_unstable();
        close_escaped_empty.sort_unstable();
        let mut suffixes: Vec<&[u8]> = Vec::with_capacity(by_suffix.len());
        let mut close_tokens = Vec::with_capacity(by_suffix.len());
        let mut close_escaped = Vec::with_capacity(by_suffix.len());
        for (s, (mut plain, mut with_escapes)) in by_suffix {
            plain.sort_unstable();
            with_escapes.sort_unstable();
            suffixes.push(s);
            close_tokens.push(plain);
            close_escaped.push(with_escapes);
        }
        let suffix_vocab = Vocabulary::new(suffixes.iter().copied(), [])?;
        let close_trie = AnyIndex::new(kind, &suffix_vocab)?;
        let escaped_quote_trie = AnyIndex::build(kind, &vocab, escaped)?;
        let keys = KeyCloses::new(kind, &vocab, &quote_ids)?;
        let n = vocab.len();
        let lens: Vec<(u32, TokenId)> = vocab
            .indexable_ids()
            .filter_map(|id| string_content(vocab.bytes(id)).map(|c| (c, id)))
            .collect();
        let mut by_level = Vec::with_capacity(LEVELS.len() - 1);
        let mut outside = Vec::with_capacity(LEVELS.len() - 1);
        for level in table_levels() {
            let (inside, out): (Vec<_>, Vec<_>) = lens
                .iter()
                .partition(|&&(_, id)| spelled_in(level, vocab.bytes(id)));
            by_level.push(by_budget(inside, n));
            outside.push(AnyIndex::build(
                kind,
                &vocab,
                out.into_iter().map(|(_, id)| id),
            )?);
        }
        let by_budget = by_budget(lens, n);
        let mut key_set = FixedBitSet::with_capacity(n);
        let mut key_count = 0;
        for id in vocab.indexable_ids() {
            if key_content(vocab.bytes(id)).is_some() {
                key_set.insert(id.as_usize());
                key_count += 1;
            }
        }
        let eos = vocab.eos_ids().to_vec();
        let (numeric, number_led): (Vec<TokenId>, Vec<TokenId>) = vocab
            .indexable_ids()
            .filter(|&id| {
                vocab
                    .bytes(id)
                    .first()
                    .is_some_and(|b| NUMBER_BYTES.contains(b))
            })
            .partition(|&id| is_numeric(vocab.bytes(id)));
        let mut number_led_first = [0u64; 4];
        for &id in &number_led {
            let b = vocab.bytes(id)[0] as usize;
            number_led_first[b / 64] |= 1 << (b % 64);
        }
        let number_led = AnyIndex::build(kind, &vocab, number_led)?;
        Ok(Kernel {
            vocab,
            trie,
            quote_trie,
            close_trie,
            close_tokens,
            close_escaped,
            close_empty,
            close_escaped_empty,
            escaped_quote_trie,
            keys,
            by_budget,
            by_level,
            outside,
            key_content: (key_set, key_count),
            eos,
            numeric,
            number_led,
            number_led_first,
            number_tries: NumberTries::default(),
            learnt: Learnt::default(),
        })
    }

    /// Whether every token set is as long as the vocabulary and every listed id inside it (a
    /// check on tables read from a file).
    pub(crate) fn tables_fit(&self) -> bool {
        let n = self.vocab.len();
        let sets = self
            .by_budget
            .iter()
            .chain(self.by_level.iter().flatten())
            .chain(std::iter::once(&self.key_content));
        let ids = self
            .close_tokens
            .iter()
            .chain(&self.close_escaped)
            .flatten()
            .chain(&self.close_empty)
            .chain(&self.close_escaped_empty)
            .map(|&(_, id)| id)
            .chain(self.eos.iter().copied())
            .chain(self.numeric.iter().copied());
        sets.into_iter().all(|(set, _)| set.len() == n)
            && ids.into_iter().all(|id| id.as_usize() < n)
            && self.keys.fit(n)
            && self.close_trie.num_tokens() == self.close_tokens.len()
            && self.close_escaped.len() == self.close_tokens.len()
            && self.by_level.len() == LEVELS.len() - 1
            && self.outside.len() == LEVELS.len() - 1
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Arc<Vocabulary> {
        &self.vocab
    }

    /// Length of a mask: the number of token ids.
    pub fn mask_len(&self) -> usize {
        self.vocab.len()
    }

    /// The trie of every producible token.
    pub fn trie(&self) -> &AnyIndex {
        &self.trie
    }

    /// The trie of the tokens containing `"`.
    pub fn quote_trie(&self) -> &AnyIndex {
        &self.quote_trie
    }

    /// The trie of suffixes after a token's first quote (see [`Close`](crate::Close)).
    pub(crate) fn close_trie(&self) -> &AnyIndex {
        &self.close_trie
    }

    /// Tokens by suffix id, with the code points before their quote: those without a backslash
    /// before it, and with `escapes` also those with one.
    pub(crate) fn close_tokens(&self, suffix: TokenId, escapes: bool) -> [&[(u32, TokenId)]; 2] {
        let i = suffix.as_usize();
        [
            &self.close_tokens[i],
            if escapes { &self.close_escaped[i] } else { &[] },
        ]
    }

    /// Tokens that end at their first unescaped quote, with the code points before it: those
    /// without a backslash before it, and with `escapes` also those with one.
    pub(crate) fn close_empty(&self, escapes: bool) -> [&[(u32, TokenId)]; 2] {
        [
            &self.close_empty,
            if escapes {
                &self.close_escaped_empty
            } else {
                &[]
            },
        ]
    }

    /// The tokens whose content before the first quote has a backslash.
    pub(crate) fn escaped_quote_trie(&self) -> &AnyIndex {
        &self.escaped_quote_trie
    }

    /// The tokens that start with a byte of [`NUMBER_BYTES`] and are not numeric.
    pub(crate) fn number_led(&self) -> &AnyIndex {
        &self.number_led
    }

    /// The first bytes of [`Kernel::number_led`]'s tokens (a set of 256 bits).
    pub(crate) fn number_led_first(&self) -> &[u64; 4] {
        &self.number_led_first
    }

    /// The numeric tokens by `classes` (canonical), the first byte too when `first_classed`
    /// (see [`crate::numbers`]).
    pub(crate) fn number_trie(
        &self,
        classes: &ByteClasses,
        first_classed: bool,
    ) -> Arc<NumberTrie> {
        self.number_tries
            .get(&self.vocab, &self.numeric, classes, first_classed)
    }

    /// The tokens that can end an object key.
    pub(crate) fn key_closes(&self) -> &KeyCloses {
        &self.keys
    }

    /// What sessions learnt for every session of a grammar.
    pub(crate) fn learnt(&self) -> &Learnt {
        &self.learnt
    }

    /// Forgets what sessions learnt for every session of a grammar: how key positions class
    /// the tokens that can end a key (at most 4 MiB), and the tokens that stay inside a string
    /// or key from a lexeme state (at most 16 MiB). The masks stay the same; the next sessions
    /// learn it again. For tests and benchmarks that start from nothing learnt.
    pub fn forget_learnt(&self) {
        self.learnt.clear();
    }

    /// The trie backend.
    pub fn kind(&self) -> TrieKind {
        self.trie.kind()
    }

    /// End-of-sequence ids.
    pub fn eos(&self) -> &[TokenId] {
        &self.eos
    }

    /// Tokens that are string content of at most `budget` code points (`None`: any length).
    pub fn string_content(&self, budget: Option<u32>) -> &FixedBitSet {
        &self.string_content_counted(TOP_LEVEL, budget).0
    }

    /// String-content tokens spelled in content of `level` (see [`recognizer::CONTENT_LEVELS`] and
    /// [`SPACE_LEVEL`](recognizer::SPACE_LEVEL)) of at most `budget` code points (`None`: any length).
    pub fn string_content_at(&self, level: u8, budget: Option<u32>) -> &FixedBitSet {
        &self.string_content_counted(level, budget).0
    }

    /// [`Kernel::string_content_at`] with its number of tokens.
    pub(crate) fn string_content_counted(&self, level: u8, budget: Option<u32>) -> &Counted {
        let sets = match table_index(level) {
            Some(i) => &self.by_level[i],
            None => &self.by_budget,
        };
        let last = sets.len() - 1;
        &sets[budget.map_or(last, |b| (b as usize).min(last))]
    }

    /// The trie of the string-content tokens not spelled in content of `level` (`None` for
    /// the top level, which spells them all).
    pub fn outside_level(&self, level: u8) -> Option<&AnyIndex> {
        table_index(level).map(|i| &self.outside[i])
    }

    /// Tokens that are key content (see [`recognizer::key_content`]).
    pub fn key_content(&self) -> &FixedBitSet {
        &self.key_content.0
    }

    /// [`Kernel::key_content`] with its number of tokens.
    pub(crate) fn key_content_counted(&self) -> &Counted {
        &self.key_content
    }

    /// The precomputed set `base`.
    pub(crate) fn base(&self, base: Base) -> &FixedBitSet {
        match base {
            Base::KeyContent => &self.key_content.0,
            Base::StringContent { level, budget } => &self.string_content_counted(level, budget).0,
        }
    }

    /// Splits `bytes` into producible tokens, longest match first. `None` when some byte
    /// sequence is not covered by any token (cannot happen with byte-level or byte-fallback
    /// vocabularies).
    pub fn longest_tokens(&self, bytes: &[u8]) -> Option<Vec<TokenId>> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let mut node = self.trie.root();
            let mut best = None;
            let mut j = i;
            while j < bytes.len() {
                match self.trie.child(node, bytes[j]) {
                    Some(n) => {
                        node = n;
                        j += 1;
                        if let Some(id) = self.trie.tokens_at(node).next() {
                            best = Some((id, j));
                        }
                    }
                    None => break,
                }
            }
            let (id, end) = best?;
            out.push(id);
            i = end;
        }
        Some(out)
    }

    /// Heap bytes of the tables (the vocabulary excluded).
    pub fn memory_bytes(&self) -> usize {
        self.trie.memory_bytes()
            + self.quote_trie.memory_bytes()
            + self.close_trie.memory_bytes()
            + self.escaped_quote_trie.memory_bytes()
            + (self.close_tokens.iter().chain(&self.close_escaped))
                .chain([&self.close_empty, &self.close_escaped_empty])
                .map(|list| list.len() * std::mem::size_of::<(u32, TokenId)>())
                .sum::<usize>()
            + self.keys.memory_bytes()
            + self.by_budget.iter().map(|b| b.0.len() / 8).sum::<usize>()
            + self
                .by_level
                .iter()
                .flatten()
                .map(|b| b.0.len() / 8)
                .sum::<usize>()
            + self.outside.iter().map(|t| t.memory_bytes()).sum::<usize>()
            + self.key_content.0.len() / 8
            + self.numeric.len() * 4
            + self.number_led.memory_bytes()
    }
}
