//! Allowed-token masks for a byte-level recognizer over a vocabulary trie.
//!
//! Given a grammar behind the narrow [`Recognizer`] trait (push a byte, pop bytes, is the
//! text complete) and a [`Kernel`] built once per vocabulary, a [`Session`] computes which
//! tokens may come next as a [`FixedBitSet`], commits tokens, rolls them back and reports
//! forced bytes; [`apply`] turns a mask into `-inf` logits.
//!
//! # How a mask is computed
//!
//! 1. The recognizer's [state key](Recognizer::state_key) is looked up in a caller-owned
//!    [`MaskCache`] (bounded in bytes, real LRU, hit/miss counters), or in a
//!    [`SharedMaskCache`] that the sessions of one grammar share between threads.
//! 2. On a miss, inside a string the vocabulary is split (see [`Split`]): tokens without `"`
//!    cannot leave the string, so they depend on the string's lexer state alone. When the
//!    string takes every content of some [level](recognizer::CONTENT_LEVELS) (any text; any
//!    unescaped text but line breaks for `.*`; or, say, letters, digits and non-ASCII
//!    characters for a pattern like `[^\s/]+`; every unescaped character but white space, the
//!    [non-space level](recognizer::NONSPACE_LEVEL), for `\S+`; or ASCII letters, digits and
//!    the space, the [space level](recognizer::SPACE_LEVEL), for `[\w\s/.-]+`) the tokens
//!    spelled in that level are a precomputed set (by code-point budget, for `maxLength` or a
//!    bounded repetition), and only the others are walked, in a trie of their own, with the
//!    recognizer in lexeme-only mode; the walk is cached by lexer state. Where no level fits
//!    (`[a-z0-9.-]+`) the whole trie is walked so, except that bytes the recognizer names as
//!    leading back to where it is (see [`Recognizer::loop_bytes`]) are taken without asking
//!    it, all alike, until a token's first other byte. Only the tokens containing `"` (about
//!    1% of a vocabulary) are then walked with the full recognizer, and only along the content
//!    bytes that a first, lexeme-only pass over them took (the full recognizer is slow to
//!    refuse a byte of a string; the lexeme-only mode learns a table of successors as it
//!    goes).
//!    In an object key, the tokens that can end it are classed by a lexeme-only pass over
//!    their contents (see [`Recognizer::close_class`]), and their suffixes walked once per
//!    class; once per class for the whole key where the recognizer names the key (see
//!    [`Recognizer::close_frame`]), since what may follow the closing quote does not depend on
//!    where in the key the content starts. What the lexeme-only walks find depends on the grammar and the lexeme state
//!    alone, so the [`Kernel`] remembers it for every session of a grammar (at most 20 MiB;
//!    see [`Kernel::forget_learnt`]).
//! 3. Elsewhere the trie is walked depth first; a byte the recognizer refuses skips its whole
//!    subtree. Where a vocabulary has many numeric tokens (spelled only in
//!    [`NUMBER_BYTES`]), they are walked apart, by the byte classes the recognizer gives
//!    (see [`Recognizer::number_classes`]): one push per run of classes instead of one per
//!    token. The kernel keeps a trie per partition of those bytes (at most 4 MiB).
//! 4. End of sequence is allowed exactly when the text is a complete document; special tokens
//!    never are. An empty mask is an error, never returned.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use mask_kernel::{Kernel, MaskCache, Recognizer, Session};
//! use vocab_index::{TokenId, TrieKind, Vocabulary};
//!
//! /// Accepts exactly `ab` or `abc`.
//! struct Words(Vec<u8>);
//! impl Recognizer for Words {
//!     fn try_push_byte(&mut self, b: u8) -> bool {
//!         let mut next = self.0.clone();
//!         next.push(b);
//!         let ok = b"abc".starts_with(&next);
//!         if ok { self.0 = next; }
//!         ok
//!     }
//!     fn pop_bytes(&mut self, n: usize) { self.0.truncate(self.0.len() - n); }
//!     fn is_accepting(&self) -> bool { self.0 == b"ab" || self.0 == b"abc" }
//! }
//!
//! let vocab = Vocabulary::new([&b"a"[..], b"b", b"ab", b"c", b"</s>"], [TokenId::new(4).unwrap()])
//!     .unwrap()
//!     .with_eos_ids([TokenId::new(4).unwrap()])
//!     .unwrap();
//! let kernel = Arc::new(Kernel::new(Arc::new(vocab), TrieKind::Flat).unwrap());
//! let mut session = Session::new(kernel, Words(Vec::new()));
//! let mut cache = MaskCache::default();
//! let mut mask = session.new_mask();
//! session.mask(&mut cache, &mut mask).unwrap();
//! assert_eq!(mask.ones().collect::<Vec<_>>(), vec![0, 2]); // "a", "ab"
//! session.commit(TokenId::new(2).unwrap()).unwrap();
//! session.mask(&mut cache, &mut mask).unwrap();
//! assert_eq!(mask.ones().collect::<Vec<_>>(), vec![3, 4]); // "c", end of sequence
//! ```
//!
//! # Cost model
//!
//! A cache hit costs a key (a few words from the recognizer), a hash and a copy of the mask
//! (16 KiB for a 128k vocabulary), or, for the many masks that allow only a few tokens, the
//! cache keeps the ids and a hit clears the mask and sets them. A miss costs one walk over the
//! part of the trie the recognizer keeps alive; the tokens are counted as they are added, so
//! neither the emptiness check nor the cache needs a pass over the bitset.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod apply;
mod cache;
mod error;
mod kernel;
mod keys;
mod numbers;
mod persist;
mod session;
mod shared;

pub use apply::apply;
pub use cache::{CacheStats, MaskCache, SharedMaskCache};
pub use error::MaskError;
pub use fixedbitset::FixedBitSet;
pub use kernel::Kernel;
pub use persist::{TablesError, default_tables_dir};
/// The trait a grammar implements and its split, from the `recognizer` crate.
pub use recognizer::{Close, NUMBER_BYTES, Recognizer, Split, is_numeric};
pub use session::{MaskStats, Session};
