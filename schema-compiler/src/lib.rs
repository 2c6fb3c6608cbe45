//! JSON Schema to an exact byte-level automaton.
//!
//! `schema-compiler` turns a JSON Schema into a [`Grammar`]: an automaton over bytes that
//! accepts a JSON text exactly when the text is valid under the schema. A [`Matcher`] runs it
//! one byte at a time and can undo bytes, which is what constrained decoding needs: a mask
//! kernel walks a vocabulary trie, pushing each token's bytes and popping them again, and
//! keeps the tokens the automaton survives.
//! For that, [`Matcher`] implements the byte-level [`recognizer::Recognizer`] trait, with the
//! split of the vocabulary inside strings ([`Matcher::split`]); the string-content levels it
//! reports are the `recognizer` crate's, the same the kernel precomputes tokens for.
//!
//! [`corpus`] loads schemas with test instances (JSON-Schema-Test-Suite and MaskBench files)
//! for the tools that replay them.
//!
//! # Architecture
//!
//! - JSON syntax is parsed deterministically with a stack of frames, one per open object or
//!   array, so nesting and recursive `$ref`s work to any depth up to
//!   [`Limits::max_depth`](options::Limits) without unrolling anything.
//! - Primitive values (strings, numbers, `true`/`false`/`null`) are lexemes recognized by DFAs
//!   built with `regex-automata` and then owned by this crate ([`dfa`]): patterns (ECMA-262
//!   syntax, translated exactly), formats, numeric ranges and `multipleOf`, enums, and every
//!   boolean combination of them (`allOf`, `anyOf`, `oneOf`, `not`, `if`) are folded into one
//!   DFA per value, with size limits. String lengths are counted in code points beside the DFA,
//!   so `maxLength: 100000` costs nothing.
//! - Objects and arrays carry small state (properties seen, item and `contains` counts), which
//!   makes properties in any order, duplicate-key rejection, `required`, `minProperties`,
//!   `maxProperties`, `dependentRequired`, `dependentSchemas`, `contains`/`minContains`/
//!   `maxContains` exact. Boolean combinations of object and array schemas are formulas
//!   evaluated over that state.
//! - Every prefix the matcher accepts can still be completed for conjunctive schemas and for
//!   alternatives decided by a type or a property; see [`Matcher`] for the exceptions.
//!
//! # Example
//!
//! ```
//! use schema_compiler::{Grammar, Matcher, Options};
//! use std::sync::Arc;
//!
//! let schema = serde_json::json!({
//!     "type": "array",
//!     "items": {
//!         "type": "object",
//!         "properties": {"name": {"type": "string"}, "continent": {"type": "string"}},
//!         "required": ["name", "continent"]
//!     }
//! });
//! let grammar = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
//! let mut m = Matcher::new(grammar);
//! assert!(m.push_bytes(br#"[{"continent":"Africa","name":"Nigeria"}]"#).is_ok());
//! assert!(m.is_accepting());
//! m.reset();
//! assert_eq!(m.push_bytes(br#"[{"name":"Nigeria"}]"#), Err(18), "continent is required");
//! ```
//!
//! # Cost model
//!
//! Compiling builds DFAs (regex determinization and products), bounded by [`Limits`]. Each
//! byte costs a few table lookups per applicable schema plus journal writes; popping a byte
//! replays its journal entries.
//!
//! # Tables learnt at run time
//!
//! A [`Grammar`] is immutable in what it accepts, but some of its DFAs' per-state facts are
//! computed on first use rather than at compile time, because most states are never asked
//! about: which content levels a string state takes whatever they are, how many code points of
//! them a bounded repetition still allows, and a byte on a shortest path to acceptance (in each
//! [`dfa::Dfa`], and for object key DFAs in the object's spec). They stay inside the grammar,
//! not in a cache the caller owns, because they are pure functions of the DFA: every session of
//! the grammar, on any thread, would compute the same values, so they are computed at most once
//! per grammar (in `OnceLock`ed tables of atomics; two threads racing store the same value).
//! They are bounded by the DFA they describe: each table is allocated whole on its first use,
//! 2 bytes per state for the levels, 4 bytes per state and level (8 levels) for the budgets and
//! 2 bytes per state for the shortest path, so at most 36 bytes per state beside the 4 bytes
//! per state and byte class of its transitions (and, per DFA and level, the at most 256 bytes
//! its searches step through), and a grammar has at most
//! [`Limits::max_total_dfa_states`] states.
//!
//! The lexeme walkers of a grammar's matchers (see [`Matcher::set_lexeme_only`]) leave what
//! they learnt to the grammar when they move on to other DFAs, are reset or are dropped: the
//! nodes they met (a decoder state and one state per tracked DFA) with a row of 256 successors
//! each. These follow from the decoder and the DFAs alone, so the next matcher of the grammar
//! (the next request for the same schema) takes them up instead of learning them again; each
//! walker takes out the set it works on, and judges viability afresh where another walker
//! learnt the set (viability depends on the frame too). At most 16 sets and
//! 2,048 nodes are kept per grammar (1 KiB of successors per node: at most about 2 MiB), the
//! least recently left dropped first.
//!
//! One cache is process-wide: [`dfa::cached_regex`] keeps the DFAs of the regexes it built
//! (formats, common patterns, the property-name sets of objects), shared by every grammar that
//! uses the same regex with the same limits. It holds at most 4,000,000 states in all and is
//! emptied when a new DFA would take it past that; grammars keep the DFAs they hold (`Arc`).
//!
//! # Layout
//!
//! | module | what it owns |
//! | --- | --- |
//! | `ir/` | reading a schema: nodes and the lowering driver (`mod.rs`), `$ref` resolution (`refs.rs`), keywords (`keywords.rs`) |
//! | `build/` | the compiler from nodes to tables: DFA bookkeeping (`mod.rs`), the languages of primitive values (`languages.rs`), formulas and templates of containers (`programs.rs`); `Builder::into_grammar` makes the [`Grammar`] |
//! | `tables` | the run-time tables the matcher reads: lexers, programs, object and array specs, templates |
//! | `grammar` | [`Grammar`] and [`Compiler`]: the compiled, shared, immutable result |
//! | [`dfa`] | byte DFAs: tables and queries (`mod.rs`), building (`build.rs`), content levels (`levels.rs`), content flags and budgets (`content.rs`) |
//! | `matcher/` | the [`Matcher`]: state and journal, syntax, keys, lexemes, string decoding, value hashing, viability, the lexeme walker, the split and cache keys for the mask kernel, completion |
//! | [`text`] | ECMA-262 patterns, formats, numeric languages, exact decimals |
//! | `recognize` | [`Matcher`] as a [`recognizer::Recognizer`] |
//! | [`corpus`] | Test-Suite and MaskBench files as schemas with instances, for the tools that replay them |
//! | `options`, `error`, `report` | [`Options`], [`CompileError`], [`CompileReport`] |
#![warn(missing_docs)]

mod build;
pub mod corpus;
pub mod dfa;
mod error;
mod grammar;
mod ir;
pub mod json_text;
mod matcher;
mod options;
mod recognize;
mod report;
mod tables;
pub mod text;

pub use error::CompileError;
pub use grammar::{Compiler, Grammar};
pub use ir::ANY_ORDER_KEYWORD;
pub use matcher::Matcher;
pub use options::{
    Draft, FormatMode, KeyEscapes, Limits, NumberPolicy, Options, PropertyOrder, Whitespace,
    any_order,
};
pub use report::{CompileReport, Note, NoteKind};
