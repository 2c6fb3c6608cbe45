//! A tokenizer's vocabulary as the exact byte string of every token, indexed by byte tries
//! that a constrained decoder walks depth first.
//!
//! # What it is for
//!
//! To make a language model's output follow a grammar, a decoder computes, before each
//! sampling step, which tokens keep the grammar's byte-level automaton alive. Tokens sharing a
//! prefix share the work: walking a trie of all token byte strings, the automaton advances one
//! byte per edge, and a dead state prunes the whole subtree below it. This crate supplies the
//! two pieces that walk needs and nothing else (no grammar, no model):
//!
//! - [`Vocabulary`]: every token id's exact bytes, recovered from a Hugging Face
//!   `tokenizer.json` ([`Vocabulary::from_file`]) or given directly ([`Vocabulary::new`]),
//!   with the special, end-of-sequence ([`Vocabulary::eos_ids`]), end-of-turn
//!   ([`Vocabulary::end_of_turn_ids`]) and beginning-of-sequence ids.
//! - [`VocabIndex`]: a byte trie over any subset of the ids, walked by a [`TrieVisitor`], in two
//!   backends with identical walks: [`FlatTrie`] (fastest full walk) and [`DoubleArrayTrie`]
//!   (constant-time child lookup). [`AnyIndex`] picks one at run time from a [`TrieKind`].
//!
//! # Example
//!
//! A visitor that allows only lowercase ASCII letters, over a tiny vocabulary:
//!
//! ```
//! use vocab_index::{FlatTrie, TokenId, TrieVisitor, VocabIndex, Vocabulary};
//!
//! # fn main() -> Result<(), vocab_index::Error> {
//! // Id 4 is special (never indexed by default); ids 1 and 5 share their bytes.
//! let eos = TokenId::new(4).unwrap();
//! let vocab = Vocabulary::new(["a", "ab", "b!", "abc", "</s>", "ab"], [eos])?
//!     .with_eos_ids([eos])?;
//! let trie = FlatTrie::new(&vocab)?;
//!
//! /// Allows tokens made of lowercase letters; remembers how deep it is.
//! #[derive(Default)]
//! struct Lowercase {
//!     depth: usize,
//!     allowed: Vec<TokenId>,
//! }
//!
//! impl TrieVisitor for Lowercase {
//!     fn push_byte(&mut self, byte: u8) -> bool {
//!         let ok = byte.is_ascii_lowercase();
//!         self.depth += usize::from(ok);
//!         ok
//!     }
//!     fn pop_bytes(&mut self, n: usize) {
//!         self.depth -= n;
//!     }
//!     fn token(&mut self, id: TokenId) {
//!         self.allowed.push(id);
//!     }
//! }
//!
//! let mut visitor = Lowercase::default();
//! trie.walk(&mut visitor);
//! // Depth-first, children by byte: "a", "ab" (ids 1 and 5), "abc"; "b!" is pruned at '!'.
//! let ids: Vec<u32> = visitor.allowed.iter().map(|id| id.as_u32()).collect();
//! assert_eq!(ids, [0, 1, 5, 3]);
//! assert_eq!(visitor.depth, 0); // every push was popped
//!
//! // Only below a prefix; and node-level navigation.
//! let mut visitor = Lowercase::default();
//! trie.walk_from(b"ab", &mut visitor);
//! assert_eq!(visitor.allowed.len(), 3);
//! let node = trie.node_at(b"ab").unwrap();
//! assert_eq!(trie.tokens_at(node).count(), 2);
//! assert_eq!(vocab.token_ids(b"ab").len(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! Loading a real tokenizer (`Vocabulary::from_file("tokenizer.json")`) reads the
//! `tokenizer_config.json` next to it for the EOS and BOS tokens. A GGUF model file carries
//! its own vocabulary: [`Vocabulary::from_gguf`] reads it from the file's metadata
//! (`tokenizer.ggml.*`, byte-level `gpt2` and SentencePiece-style `llama` families), the way
//! llama.cpp writes each token, without reading the tensors or linking a model runtime.
//!
//! # Token bytes
//!
//! [`Vocabulary::bytes`] is what a token adds to the decoded text, byte for byte:
//!
//! - Byte-level BPE (GPT-2 style: Llama 3, Qwen3): the GPT-2 byte-to-unicode map is undone
//!   (`Ġ` → space). Many tokens are fragments of a multi-byte UTF-8 character and are not
//!   valid UTF-8 on their own.
//! - SentencePiece style (Llama 2, Gemma 3): `▁` → space, `<0x0A>`-style byte-fallback tokens
//!   are one raw byte.
//! - Added and special tokens: their content, through the same decoding.
//! - Duplicates are real: Gemma 3's `▁` and `<0x20>` are both a space. Every id is kept.
//!
//! Decoding one token with `tokenizers` differs from these bytes in known ways, checked for
//! every id of four real tokenizers by this crate's tests: a lone fragment of a UTF-8 character
//! decodes to U+FFFD (the decoder replaces invalid UTF-8); SentencePiece decoders with a
//! `Strip` step (Llama 2) drop the leading space of the first token of a text, so `▁the`
//! decodes to `the` alone but adds ` the` after other tokens.
//!
//! # The walk
//!
//! [`VocabIndex::walk`] visits children in increasing byte order, calls
//! [`TrieVisitor::push_byte`] on each child and descends only on `true`, calls
//! [`TrieVisitor::token`] once per id whose bytes equal the current prefix (ascending ids for
//! duplicates), and reports pops lazily as one batched [`TrieVisitor::pop_bytes`] before the
//! next push. Both backends produce exactly the same sequence of calls (property-tested).
//! [`VocabIndex::walk_from`] restricts a walk to the tokens starting with given bytes.
//!
//! About half the nodes of a real trie hold a token, in no pattern a branch predictor can
//! learn, so testing "does this node have a token?" costs a misprediction every other node. A
//! visitor that can accept a dummy id (a mask one bit longer than the vocabulary) returns it
//! from [`TrieVisitor::spare_id`]; the walk then calls `token` on every accepted node, with the
//! spare id where there is no token, and the test becomes a conditional move. On Llama 3 this
//! makes a full mask walk about three times faster.
//!
//! # Cost model
//!
//! | | [`FlatTrie`] | [`DoubleArrayTrie`] |
//! |---|---|---|
//! | memory | 8 bytes per node | 20 bytes per slot (nodes plus a few free slots) |
//! | full walk | one forward pass over the nodes | the same steps over scattered slots |
//! | rejected subtree | skipped with one addition | skipped through one stored link |
//! | child lookup | scan of the siblings (table at the root) | constant time |
//! | build | linear in the tokens' bytes (vocabulary is pre-sorted) | flat build plus slot search |
//!
//! A trie has one node per distinct token prefix: about 2.1 nodes per token for Llama 3
//! (274,521 nodes for 128,000 tokens), 2.3 for Gemma 3. Walking with a visitor that refuses
//! early (a grammar state that allows few bytes) touches only the nodes it accepts plus their
//! immediate children.
//! Measured numbers are in the `benches` crate (`cargo bench -p benches --bench vocab`).
//! Tries are immutable and `Send + Sync`; share one across threads.
//!
//! # Limits
//!
//! Token ids up to [`TokenId::MAX`] (2^23 − 2); tokens up to 1023 bytes and 4,194,303 nodes per
//! trie (the bit budget of [`FlatTrie`]'s nodes). Past a limit, building returns an [`Error`].

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod cell;
mod double_array;
mod error;
mod flat;
mod gguf;
mod hf;
mod index;
mod kept;
mod token;
mod vocabulary;

pub use double_array::DoubleArrayTrie;
pub use error::{Error, Result};
pub use flat::FlatTrie;
pub use hf::{TOKENIZER_CONFIG_FILE, TokenizerConfig, mid_text_tokenizer, read_tokenizer_files};
pub use index::{AnyIndex, NodeId, NodeTokens, TrieKind, TrieVisitor, VocabIndex};
pub use token::TokenId;
pub use vocabulary::Vocabulary;

/// Tokenizer types, re-exported for [`Vocabulary::from_tokenizer`].
pub use tokenizers;
