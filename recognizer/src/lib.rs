//! The seam between a grammar and a token-mask kernel: a byte-level [`Recognizer`] and what
//! both sides must mean alike about JSON string content.
//!
//! A grammar (such as the JSON Schema automaton of `schema-compiler`) implements
//! [`Recognizer`]; a mask kernel (such as `mask-kernel`) takes any [`Recognizer`] and finds
//! which tokens of a vocabulary may come next by walking a trie of their bytes. Neither knows
//! the other: the grammar knows nothing of tokens, the kernel nothing of schemas. This crate
//! depends on nothing.
//!
//! # The trait
//!
//! Three methods are required: [`Recognizer::try_push_byte`] (refuse a byte, leaving the state
//! as it was, exactly when no valid document continues with it), [`Recognizer::pop_bytes`]
//! (undo) and [`Recognizer::is_accepting`] (end of sequence allowed). The rest are fast paths
//! with defaults that turn them off: a [state key](Recognizer::state_key) for caching masks, a
//! [description](Recognizer::describe) for errors, a [completion](Recognizer::completion) for
//! ending a document when a token budget runs out, and the split.
//!
//! # The split
//!
//! Most decoding steps of a JSON document are inside a string, and most tokens of a vocabulary
//! hold no `"`: inside a string they cannot end it, so they depend on the string's state
//! alone, not on the document around it. [`Recognizer::split`] says, inside a string (a value
//! or an object key, which ends at its first unescaped [`QUOTE`]), how those tokens are
//! decided ([`Split`]):
//!
//! - [`Split::StringContent`]: the string takes every content of a level (below) up to a
//!   number of code points. The tokens spelled in the level are then a set the kernel
//!   precomputed per vocabulary, by budget; the others are walked. When the state after the
//!   closing quote does not depend on the content, [`Close`] says how much content may come
//!   before it, and the kernel closes the string once, after [`Close::filler`] content.
//! - [`Split::KeyContent`]: an object key that takes any content written with only the escapes
//!   JSON needs ([`key_content`]). [`Recognizer::close_class`] then classes the positions
//!   inside the key by what ending it there leads to, so that the kernel walks the bytes after
//!   the closing quote once per class.
//! - [`Split::Walk`]: the content is constrained; the tokens without a quote are walked with
//!   the recognizer in [lexeme-only mode](Recognizer::set_lexeme_only), and the result is
//!   cached under a key of the string's state.
//!
//! # Content levels
//!
//! A grammar decides which level of content a string takes; a kernel decides which tokens
//! spell each level. Both use the one definition here: [`CONTENT_LEVELS`] (a chain of
//! character sets, from ASCII letters and digits up to everything, escapes included),
//! [`SPACE_LEVEL`] and [`NONSPACE_LEVEL`] beside the chain, [`content_level_allows`] for a character and
//! [`spelled_in`] for a token's bytes. The non-ASCII white space of ECMAScript
//! ([`is_unicode_space`]) is what sets some levels apart, as `.` and `\s` tell it apart in
//! patterns.
//!
//! # String content
//!
//! [`string_content`] and [`key_content`] scan a token's bytes as JSON string content read
//! from a character boundary outside an escape: valid escapes and UTF-8, no unescaped `"` and
//! no control character, possibly stopping inside an escape or a character. They return the
//! number of code points the bytes start, which is what a `maxLength` budget counts.
//!
//! # Example
//!
//! ```
//! use recognizer::{Recognizer, Split, string_content, content_level_allows, spelled_in};
//!
//! /// Inside a string that takes any letters and digits, at most 3 of them.
//! struct Short(Vec<u8>);
//! impl Recognizer for Short {
//!     fn try_push_byte(&mut self, b: u8) -> bool {
//!         let closed = self.0.last() == Some(&b'"');
//!         let ok = !closed && (b == b'"' || (b.is_ascii_alphanumeric() && self.0.len() < 3));
//!         if ok { self.0.push(b); }
//!         ok
//!     }
//!     fn pop_bytes(&mut self, n: usize) { self.0.truncate(self.0.len() - n); }
//!     fn is_accepting(&self) -> bool { self.0.last() == Some(&b'"') }
//!     fn split(&self, _key: &mut Vec<u32>) -> Option<Split> {
//!         let budget = 3 - self.0.len() as u32;
//!         (self.0.last() != Some(&b'"'))
//!             .then_some(Split::StringContent { budget: Some(budget), level: 0, close: None })
//!     }
//! }
//!
//! let r = Short(b"ab".to_vec());
//! let Some(Split::StringContent { budget, level, .. }) = r.split(&mut Vec::new()) else {
//!     unreachable!()
//! };
//! // A token without a quote is allowed exactly when it spells the level within the budget.
//! let allowed = |t: &[u8]| spelled_in(level, t) && string_content(t).is_some_and(|n| Some(n) <= budget);
//! assert!(allowed(b"c"));
//! assert!(!allowed(b"cd"));
//! assert!(!allowed(b" "));
//! assert!(content_level_allows(level, 'z'));
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod content;
mod levels;
mod recognizer;

pub use content::{key_content, string_content};
pub use levels::{
    CONTENT_LEVELS, FILLER, LEVELS, NONSPACE_LEVEL, PLAIN_LEVEL, SPACE_LEVEL, TOP_LEVEL,
    UNICODE_SPACES, content_level_allows, is_unicode_space, level_is_plain, spelled_in,
};
pub use recognizer::{Close, NUMBER_BYTES, QUOTE, Recognizer, Split, is_numeric};
