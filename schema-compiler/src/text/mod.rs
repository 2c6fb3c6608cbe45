//! Regular languages for JSON string and number lexemes.
//!
//! The automaton recognises a string value by decoding its JSON escapes and running a DFA
//! over the decoded UTF-8 bytes, and a number by running a DFA over its raw text. This module
//! supplies the regexes those DFAs are built from, each written in `regex-syntax` syntax and
//! meant to match the *whole* lexeme (full match):
//!
//! - [`ecma`]: JSON Schema `pattern` (ECMA-262, unanchored) to the language of strings in
//!   which the pattern finds a match.
//! - [`formats`]: the `format` vocabulary (dates, times, e-mail, host names, IP addresses,
//!   URIs, IRIs, JSON pointers, URI templates, UUIDs) as exact languages.
//! - [`numeric`]: JSON number texts, optionally restricted to a range of values and to a
//!   number of digits.
//! - [`decimal`]: exact decimal arithmetic for bounds, `multipleOf` and value equality.
//!
//! Nothing here builds a DFA; callers do that with `regex-automata` (dense, anchored,
//! `MatchKind::All`, Unicode and UTF-8 on) and enforce their own size limits.

mod datetime;
pub mod decimal;
pub mod ecma;
pub mod formats;
pub mod numeric;
mod re;
