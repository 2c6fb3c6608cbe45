//! The compiled grammar: immutable, `Send + Sync`, shared by every matcher of a schema.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::build::Builder;
use crate::dfa::{Dfa, NO_PATH};
use crate::error::CompileError;
use crate::ir::{Lowering, NodeId};
use crate::json_text::RoundedNumbers;
use crate::options::Options;
use crate::report::CompileReport;
use crate::tables::{ArrSpec, DfaId, Lexer, LexerId, ObjSpec, Program, ValueTemplate};

/// A JSON Schema compiled to a byte-level automaton.
///
/// Build one with [`Grammar::compile`] (or a [`Compiler`] when the schema refers to other
/// documents), then run any number of [`Matcher`](crate::Matcher)s over it, on any threads.
#[derive(Debug)]
pub struct Grammar {
    pub(crate) options: Options,
    pub(crate) dfas: Vec<Arc<Dfa>>,
    /// Per DFA: fewest code points to acceptance per state index (for length bounds).
    pub(crate) min_chars: Vec<Option<Box<[u32]>>>,
    pub(crate) lexers: Vec<Lexer>,
    pub(crate) programs: Vec<Program>,
    pub(crate) obj_specs: Vec<ObjSpec>,
    pub(crate) arr_specs: Vec<ArrSpec>,
    pub(crate) templates: Vec<Option<ValueTemplate>>,
    pub(crate) root: NodeId,
    pub(crate) report: CompileReport,
    /// DFA of any UTF-8 string (string syntax).
    pub(crate) utf8: DfaId,
    /// DFA of number syntax under the number policy.
    pub(crate) number_syntax: DfaId,
    /// DFA of the canonical spellings of numbers (one per value) where the policy writes
    /// constrained numbers in plain notation; `number_syntax` otherwise.
    pub(crate) canonical_syntax: DfaId,
    /// DFA of `true|false|null`.
    pub(crate) literal_syntax: DfaId,
    /// Per lexer, where numbers may be held to `canonical_syntax` and the lexer's language
    /// is not decided by the value alone: [`Dfa::co_distance`] of the canonical syntax with
    /// the lexer's DFA over number bytes. A number whose spelling so far leaves no canonical
    /// completion in the lexer's language fails the lexer at once, so that no formula waits
    /// on a value that cannot be written (`-0` under `integer`: only `-0.5`-like canonical
    /// spellings follow).
    pub(crate) canonical_live: Vec<Option<Arc<[u32]>>>,
    /// Whether values are hashed (some array has `uniqueItems`).
    pub(crate) needs_hash: bool,
    /// A number no other grammar of the process has (see [`Grammar::next_id`]).
    pub(crate) id: u64,
    /// What its matchers' lexeme walkers learnt, for all of them.
    pub(crate) walks: crate::matcher::WalkStore,
}

/// See [`Grammar::universal_flags`].
pub(crate) struct UniversalFlags {
    pub live_all: bool,
    pub free: bool,
}

/// Compiles schemas that may refer to other documents.
#[derive(Debug, Clone, Default)]
pub struct Compiler {
    options: Options,
    remotes: HashMap<String, Value>,
    rounded: RoundedNumbers,
}

impl Compiler {
    /// A compiler with the given options.
    pub fn new(options: Options) -> Compiler {
        Compiler {
            options,
            remotes: HashMap::new(),
            rounded: RoundedNumbers::default(),
        }
    }

    /// Makes `schema` available to `$ref`s under the absolute `uri` (nothing is ever fetched
    /// from the network).
    pub fn add_document(&mut self, uri: &str, schema: Value) -> &mut Self {
        self.remotes.insert(uri.to_string(), schema);
        self
    }

    /// Tells the compiler the JSON text a schema (or a document added) was read from, so that a
    /// number whose literal was rounded when read is refused where instances are compared with
    /// it (`enum`, `const`, the bounds, `multipleOf`), instead of being taken as the short
    /// decimal it rounded to: `{"enum": [100000000000000000000000000001]}` would otherwise
    /// accept `1e29`. Without the text, only numbers whose float needs 17 significant digits
    /// are known to be rounded. See [`RoundedNumbers`].
    ///
    /// ```
    /// use schema_compiler::{Compiler, Options};
    ///
    /// let text = r#"{"enum": [100000000000000000000000000001]}"#;
    /// let schema: serde_json::Value = serde_json::from_str(text).unwrap();
    /// let e = Compiler::new(Options::generation())
    ///     .numbers_as_written(text)
    ///     .compile(&schema)
    ///     .unwrap_err();
    /// assert!(e.is_unsupported());
    /// ```
    pub fn numbers_as_written(&mut self, text: &str) -> &mut Self {
        self.rounded.extend(&RoundedNumbers::in_text(text));
        self
    }

    /// Adds values that number literals of the schema's text were rounded to (as
    /// [`Compiler::numbers_as_written`] does from the text).
    pub fn rounded_numbers(&mut self, rounded: &RoundedNumbers) -> &mut Self {
        self.rounded.extend(rounded);
        self
    }

    /// Compiles `schema`.
    pub fn compile(&self, schema: &Value) -> Result<Grammar, CompileError> {
        let _span = tracing::debug_span!("compile").entered();
        let started = std::time::Instant::now();
        let mut low = Lowering::new(schema, &self.options, &self.remotes, &self.rounded)?;
        let root = low.lower_root()?;
        let mut b = Builder::new(&self.options, low, started)?;
        b.build_templates(root)?;
        let grammar = Arc::new(b.into_grammar(root)?);
        // Parts no value meets can rule out every document where the root's own keywords do
        // not (an object that requires such a property, or more unique items than its items
        // schema has values): then no document can begin.
        if !crate::Matcher::new(grammar.clone()).takes_a_value_byte() {
            return Err(CompileError::Unsatisfiable {
                pointer: "#".into(),
                reason: "every value it allows needs a property or item that no value can fill \
                         (or more distinct items than there are values)"
                    .into(),
            });
        }
        Ok(Arc::into_inner(grammar).expect("a matcher keeps no reference to its grammar"))
    }
}

impl Grammar {
    /// Compiles `schema` with `options` (references to other documents fail; use a
    /// [`Compiler`] to provide them).
    pub fn compile(schema: &Value, options: &Options) -> Result<Grammar, CompileError> {
        Compiler::new(options.clone()).compile(schema)
    }

    /// What was relaxed or ignored.
    pub fn report(&self) -> &CompileReport {
        &self.report
    }

    /// The options the grammar was compiled with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Total lexeme DFA states.
    pub fn dfa_states(&self) -> usize {
        self.dfas.iter().map(|d| d.num_states()).sum()
    }

    /// Approximate heap memory of the grammar, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.dfas.iter().map(|d| d.memory_bytes()).sum::<usize>()
            + self
                .obj_specs
                .iter()
                .map(|s| s.reach.len() * 8)
                .sum::<usize>()
            + self.templates.len() * std::mem::size_of::<Option<ValueTemplate>>()
    }

    /// A number for a new grammar, which no other grammar of the process has: a mask kernel
    /// remembers what holds for every matcher of the grammar under it (see
    /// [`recognizer::Recognizer::grammar_name`]).
    pub(crate) fn next_id() -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn dfa(&self, id: DfaId) -> &Dfa {
        &self.dfas[id as usize]
    }

    /// String-content flags of a lexer DFA state for content of `level` (see
    /// [`crate::dfa::CONTENT_LEVELS`], [`crate::dfa::SPACE_LEVEL`] and
    /// [`crate::dfa::NONSPACE_LEVEL`]).
    pub(crate) fn universal_flags(&self, dfa: DfaId, state: u32, level: u8) -> UniversalFlags {
        let f = self.dfas[dfa as usize].string_flags(state);
        UniversalFlags {
            live_all: f.live_at(level),
            free: f.free_at(level),
        }
    }

    /// Whether some canonical number spelling both continues the canonical syntax from state
    /// `canonical` and completes lexer `lexer` from its state `state` (states reached by the
    /// same text); `None` when the lexer has no such table (every number, or none).
    pub(crate) fn canonical_completes(
        &self,
        lexer: LexerId,
        canonical: u32,
        state: u32,
    ) -> Option<bool> {
        let table = self.canonical_live[lexer as usize].as_ref()?;
        let syntax = self.dfa(self.canonical_syntax);
        let dfa = self.dfa(self.lexers[lexer as usize].dfa);
        Some(
            table[syntax.state_index(canonical) * dfa.num_states() + dfa.state_index(state)]
                != NO_PATH,
        )
    }

    /// Whether lexer `lexer` decides a number by its value whatever its spelling: every
    /// number, none, or (any notation) an exact check of the value.
    pub(crate) fn number_exact(&self, lexer: LexerId) -> bool {
        let l = &self.lexers[lexer as usize];
        l.dfa == self.number_syntax || self.dfas[l.dfa as usize].is_empty() || l.check.is_some()
    }

    pub(crate) fn template(&self, node: NodeId) -> &ValueTemplate {
        self.templates[node.0 as usize]
            .as_ref()
            .expect("template built for every value node")
    }
}

/// Every byte a number is spelled with.
pub(crate) const NUMBER_BYTES: &[u8] = b"-+.0123456789eE";
