//! From schema nodes to the grammar: lexeme DFAs for primitive values, programs for containers.
//!
//! For each schema node that some value must satisfy, and each JSON type the value may turn
//! out to have, the compiler derives a *template*:
//!
//! - for strings, numbers, booleans and null, a [`Lexer`](crate::tables::Lexer): one DFA for the whole value (the
//!   node's own keywords, `allOf`, `anyOf`, `oneOf`, `not` and `if`/`then`/`else` all folded in
//!   by DFA products), plus, for strings, a code-point counter for `minLength`/`maxLength` and,
//!   in any-notation mode, an exact numeric check run when a number ends;
//! - for objects and arrays, a [`Program`](crate::tables::Program): a boolean formula over *leaves*, each leaf the
//!   object or array keywords of one schema ([`ObjSpec`](crate::tables::ObjSpec), [`ArrSpec`](crate::tables::ArrSpec)) that the runtime tracks
//!   with a little state of its own (properties seen, item counts).
//!
//! Templates are computed once, at compile time, for every node reachable as a value.

//!
//! | file | what it owns |
//! | --- | --- |
//! | `mod.rs` | the [`Builder`]: DFA bookkeeping (regexes, patterns, products, limits) and [`Builder::into_grammar`] |
//! | `languages.rs` | the language of a node for one primitive kind: keywords, `enum`, `multipleOf` and boolean combinations as DFAs |
//! | `programs.rs` | formulas over object and array leaves ([`ObjSpec`](crate::tables::ObjSpec), [`ArrSpec`](crate::tables::ArrSpec)), flattened to programs, and the templates |

mod languages;
mod programs;

use crate::dfa::{Dfa, DfaError, DfaLimits};
use crate::error::CompileError;
use crate::grammar::{Grammar, NUMBER_BYTES};
use crate::ir::{Bound, Lowering, Node, NodeId, TypeSet};
use crate::options::Options;
use crate::report::CompileReport;
use crate::tables::{
    ArrSpec, DfaId, EMPTY_LEXER, Kind, LeafSpec, Lexer, LexerId, NumExpr, ObjSpec, Op, Program,
    ValueTemplate,
};
use crate::text::ecma;
use crate::text::formats::DirectDfa;
use crate::text::numeric::{self, NumberSpec};
use programs::Expr;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// Facts about the run-time kinds that only the builder needs.
impl Kind {
    fn type_bit(self) -> u8 {
        match self {
            Kind::Null => TypeSet::NULL,
            Kind::Boolean => TypeSet::BOOLEAN,
            Kind::Number => TypeSet::NUMBER | TypeSet::INTEGER,
            Kind::String => TypeSet::STRING,
            Kind::Array => TypeSet::ARRAY,
            Kind::Object => TypeSet::OBJECT,
        }
    }

    fn is_primitive(self) -> bool {
        matches!(
            self,
            Kind::Null | Kind::Boolean | Kind::Number | Kind::String
        )
    }
}

impl NumExpr {
    fn and(a: NumExpr, b: NumExpr) -> NumExpr {
        match (a, b) {
            (NumExpr::True, x) | (x, NumExpr::True) => x,
            (NumExpr::False, _) | (_, NumExpr::False) => NumExpr::False,
            (NumExpr::And(mut xs), NumExpr::And(ys)) => {
                xs.extend(ys);
                NumExpr::And(xs)
            }
            (NumExpr::And(mut xs), y) => {
                xs.push(y);
                NumExpr::And(xs)
            }
            (x, y) => NumExpr::And(vec![x, y]),
        }
    }
}

/// A language under construction, for one primitive kind.
#[derive(Clone)]
struct Lang {
    dfa: DfaId,
    min: u64,
    max: Option<u64>,
    check: Option<NumExpr>,
}

/// Most alternatives of a `oneOf` or `anyOf` whose language is built as one product of all
/// of them (see `Builder::dfa_of_many`).
const MANY_AT_MOST: usize = 4;

/// Compiles lowered nodes into grammar tables.
pub struct Builder<'o> {
    options: &'o Options,
    low: Lowering<'o>,
    dfas: Vec<Arc<Dfa>>,
    dfa_by_regex: HashMap<String, DfaId>,
    op_memo: HashMap<(u8, DfaId, DfaId), DfaId>,
    /// As `op_memo`, for `oneOf` and `anyOf` of many (see `Builder::dfa_of_many`): by whether
    /// exactly one alternative is taken, the alternatives' DFAs and `within`.
    many_memo: HashMap<(bool, Vec<Vec<DfaId>>, DfaId), DfaId>,
    lexers: Vec<Lexer>,
    programs: Vec<Program>,
    obj_specs: Vec<ObjSpec>,
    arr_specs: Vec<ArrSpec>,
    templates: HashMap<NodeId, ValueTemplate>,
    lang_memo: HashMap<(NodeId, Kind), Lang>,
    in_progress: HashSet<(NodeId, Kind)>,
    expr_memo: HashMap<(NodeId, Kind), Expr>,
    obj_spec_memo: HashMap<NodeId, u32>,
    arr_spec_memo: HashMap<NodeId, u32>,
    and_memo: HashMap<Vec<NodeId>, NodeId>,
    /// Universe DFAs per primitive kind.
    universe: [DfaId; 4],
    /// Plain notation (no exponent): every number spelled one way only, `canonical`; see
    /// [`numeric::canonical_number_language`]. Where numbers are written in plain notation
    /// (not `any_notation`), complements and `oneOf` are taken within it.
    canonical: DfaId,
    empty: DfaId,
    total_states: usize,
    /// Nodes whose templates are still to be built.
    pending: Vec<NodeId>,
    /// When the compile must stop ([`crate::Limits::max_compile_time`]).
    deadline: Option<Instant>,
}

impl<'o> Builder<'o> {
    /// A builder for the nodes of `low`; `started` is when the compile began (the deadline
    /// counts from there).
    pub fn new(
        options: &'o Options,
        low: Lowering<'o>,
        started: Instant,
    ) -> Result<Self, CompileError> {
        let mut b = Builder {
            options,
            low,
            dfas: Vec::new(),
            dfa_by_regex: HashMap::default(),
            op_memo: HashMap::default(),
            many_memo: HashMap::default(),
            lexers: Vec::new(),
            programs: Vec::new(),
            obj_specs: Vec::new(),
            arr_specs: Vec::new(),
            templates: HashMap::default(),
            lang_memo: HashMap::default(),
            in_progress: HashSet::default(),
            expr_memo: HashMap::default(),
            obj_spec_memo: HashMap::default(),
            arr_spec_memo: HashMap::default(),
            and_memo: HashMap::default(),
            universe: [0; 4],
            canonical: 0,
            empty: 0,
            total_states: 0,
            pending: Vec::new(),
            deadline: options.limits.max_compile_time.map(|t| started + t),
        };
        b.empty = b.add_dfa(Dfa::empty(), "#")?;
        b.lexers.push(Lexer {
            dfa: b.empty,
            min_len: 0,
            max_len: None,
            check: None,
        });
        let n = options.numbers;
        let number_syntax = NumberSpec {
            integer: false,
            lower: None,
            upper: None,
            max_int_digits: n.max_int_digits,
            max_frac_digits: n.max_frac_digits,
            exponent: true,
            max_exp_digits: n.max_exp_digits,
        };
        let num_re =
            numeric::number_language(&number_syntax).map_err(|e| CompileError::Invalid {
                keyword: "type".into(),
                pointer: "#".into(),
                reason: e.to_string(),
            })?;
        b.universe = [
            b.regex_dfa("null", "#")?,
            b.regex_dfa("true|false", "#")?,
            b.regex_dfa(&num_re, "#")?,
            b.regex_dfa("(?s:.*)", "#")?,
        ];
        b.canonical = if n.any_notation {
            b.universe[2]
        } else {
            let re = numeric::canonical_number_language(n.max_int_digits, n.max_frac_digits);
            b.regex_dfa(&re, "#")?
        };
        Ok(b)
    }

    fn limits(&self) -> DfaLimits {
        DfaLimits {
            max_states: self.options.limits.max_dfa_states,
            regex_bytes: self.options.limits.max_regex_bytes,
            deadline: self.deadline,
        }
    }

    fn dfa_error(&self, e: DfaError, loc: &str, what: &str) -> CompileError {
        match e {
            DfaError::Regex(msg) => CompileError::Invalid {
                keyword: what.into(),
                pointer: loc.into(),
                reason: msg,
            },
            DfaError::Limit(msg) => CompileError::Limit {
                limit: "max_dfa_states",
                pointer: loc.into(),
                detail: format!("{what}: {msg}"),
            },
            DfaError::Deadline => self.deadline_error(loc, what),
        }
    }

    /// The error of a compile that ran past [`crate::Limits::max_compile_time`].
    fn deadline_error(&self, loc: &str, what: &str) -> CompileError {
        let t = self.options.limits.max_compile_time.unwrap_or_default();
        CompileError::Limit {
            limit: "max_compile_time",
            pointer: loc.into(),
            detail: format!(
                "compiling took over {:.3} s (while building a {what})",
                t.as_secs_f64()
            ),
        }
    }

    /// `Err` once the compile has run past its deadline.
    fn check_deadline(&self, loc: &str, what: &str) -> Result<(), CompileError> {
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(self.deadline_error(loc, what)),
            _ => Ok(()),
        }
    }

    fn add_dfa(&mut self, dfa: Dfa, loc: &str) -> Result<DfaId, CompileError> {
        self.total_states += dfa.num_states();
        if self.total_states > self.options.limits.max_total_dfa_states {
            return Err(CompileError::Limit {
                limit: "max_total_dfa_states",
                pointer: loc.into(),
                detail: format!(
                    "lexeme automata exceed {} states in total",
                    self.options.limits.max_total_dfa_states
                ),
            });
        }
        self.dfas.push(Arc::new(dfa));
        Ok(self.dfas.len() as DfaId - 1)
    }

    fn regex_dfa(&mut self, re: &str, loc: &str) -> Result<DfaId, CompileError> {
        self.regex_dfa_with(re, None, loc)
    }

    /// [`Builder::regex_dfa`], built by `direct` where given (see
    /// [`crate::dfa::cached_regex_with`]).
    fn regex_dfa_with(
        &mut self,
        re: &str,
        direct: Option<DirectDfa>,
        loc: &str,
    ) -> Result<DfaId, CompileError> {
        if let Some(&id) = self.dfa_by_regex.get(re) {
            return Ok(id);
        }
        let dfa = crate::dfa::cached_regex_with(re, self.limits(), direct)
            .map_err(|e| self.dfa_error(e, loc, "regex"))?;
        self.total_states += dfa.num_states();
        if self.total_states > self.options.limits.max_total_dfa_states {
            return Err(CompileError::Limit {
                limit: "max_total_dfa_states",
                pointer: loc.into(),
                detail: format!(
                    "lexeme automata exceed {} states in total",
                    self.options.limits.max_total_dfa_states
                ),
            });
        }
        self.dfas.push(dfa);
        let id = self.dfas.len() as DfaId - 1;
        self.dfa_by_regex.insert(re.to_string(), id);
        Ok(id)
    }

    /// The DFA of the strings in which the `pattern` `p` finds a match. Lookaheads right
    /// after a leading `^` (`^(?!X)R`) become a difference with, or an intersection with, the
    /// strings that start with a match of `X` (see [`ecma::split_leading_lookaheads`]).
    fn pattern_dfa(&mut self, p: &str, loc: &str) -> Result<DfaId, CompileError> {
        let Some(split) = ecma::split_leading_lookaheads(p) else {
            return self.pattern_part_dfa(p, p, loc);
        };
        let mut d = self.pattern_part_dfa(&split.rest, p, loc)?;
        for (negative, look) in &split.lookaheads {
            let x = self.pattern_part_dfa(look, p, loc)?;
            d = self.dfa_op(if *negative { 2 } else { 0 }, d, x, loc)?;
        }
        Ok(d)
    }

    /// The DFA of one pattern without lookaheads (`part`, taken from the schema's `whole`).
    fn pattern_part_dfa(
        &mut self,
        part: &str,
        whole: &str,
        loc: &str,
    ) -> Result<DfaId, CompileError> {
        let re = ecma::pattern_language(part).map_err(|e| {
            let reason = format!("{e} in /{part}/");
            if matches!(e, ecma::PatternError::Unsupported { .. }) {
                CompileError::Unsupported {
                    keyword: "pattern".into(),
                    pointer: loc.into(),
                    reason,
                }
            } else {
                CompileError::Invalid {
                    keyword: "pattern".into(),
                    pointer: loc.into(),
                    reason,
                }
            }
        })?;
        self.regex_dfa(&re, loc).map_err(|e| match e {
            CompileError::Invalid { reason, .. } => CompileError::Unsupported {
                keyword: "pattern".into(),
                pointer: loc.into(),
                reason: format!("/{whole}/ cannot be compiled to a DFA: {reason}"),
            },
            other => other,
        })
    }

    /// A DFA operation, memoized. `op`: 0 intersect, 1 union, 2 difference.
    fn dfa_op(&mut self, op: u8, a: DfaId, b: DfaId, loc: &str) -> Result<DfaId, CompileError> {
        if a == b {
            return Ok(match op {
                0 | 1 => a,
                _ => self.empty,
            });
        }
        // Every string DFA takes UTF-8 text only (regexes are compiled in UTF-8 mode and the
        // operations keep to their operands), so the string universe, `(?s:.*)`, is neutral
        // for intersection and absorbing for union. This spares a product of a large format
        // DFA (`date-time` has over 20,000 states) with it on every use.
        let text = self.universe[Kind::String as usize];
        if text != self.empty {
            match op {
                0 if a == text => return Ok(b),
                0 if b == text => return Ok(a),
                1 if a == text || b == text => return Ok(text),
                2 if b == text => return Ok(self.empty),
                _ => {}
            }
        }
        let (x, y) = if op == 2 || a < b { (a, b) } else { (b, a) };
        if let Some(&r) = self.op_memo.get(&(op, x, y)) {
            return Ok(r);
        }
        let (da, db) = (self.dfas[x as usize].clone(), self.dfas[y as usize].clone());
        let r = if op == 0 && (da.is_empty() || db.is_empty()) {
            self.empty
        } else if op == 1 && da.is_empty() {
            y
        } else if (op == 1 || op == 2) && db.is_empty() {
            x
        } else {
            let res = match op {
                0 => da.intersect(&db, self.limits()),
                1 => da.union(&db, self.limits()),
                _ => da.difference(&db, self.limits()),
            }
            .map_err(|e| self.dfa_error(e, loc, "combined lexeme"))?;
            if res.is_empty() {
                self.empty
            } else {
                self.add_dfa(res, loc)?
            }
        };
        self.op_memo.insert((op, x, y), r);
        Ok(r)
    }

    /// The strings exactly one of `alternatives` accepts, within `within` (see
    /// [`Dfa::exactly_one`]; an alternative takes what all its DFAs take).
    fn dfa_exactly_one(
        &mut self,
        alternatives: &[Vec<DfaId>],
        within: DfaId,
        loc: &str,
    ) -> Result<DfaId, CompileError> {
        let key = (true, alternatives.to_vec(), within);
        if let Some(&r) = self.many_memo.get(&key) {
            return Ok(r);
        }
        // The string universe is left out: every string DFA is within it.
        let within_dfa = (within != self.universe[Kind::String as usize])
            .then(|| self.dfas[within as usize].clone());
        let r = match self.dfa_of_many(alternatives, loc, |alts, budget, limits| {
            Dfa::exactly_one(alts, within_dfa.as_deref(), budget, limits)
        })? {
            Some(r) => r,
            None => {
                // The values in at least one alternative, less those in at least two: one
                // pass that keeps both unions, so `N` alternatives take `3N` products, not
                // `N²`.
                let (mut one, mut two) = (self.empty, self.empty);
                for alt in alternatives {
                    let x = self.dfa_all_of(alt, loc)?;
                    let both = self.dfa_op(0, one, x, loc)?;
                    two = self.dfa_op(1, two, both, loc)?;
                    one = self.dfa_op(1, one, x, loc)?;
                }
                let one = self.dfa_op(0, one, within, loc)?;
                self.dfa_op(2, one, two, loc)?
            }
        };
        self.many_memo.insert(key, r);
        Ok(r)
    }

    /// The strings some of `alternatives` accepts (see [`Dfa::union_of`]; an alternative
    /// takes what all its DFAs take).
    fn dfa_union_of(
        &mut self,
        alternatives: &[Vec<DfaId>],
        loc: &str,
    ) -> Result<DfaId, CompileError> {
        // The string universe absorbs the others (see `dfa_op`).
        let text = self.universe[Kind::String as usize];
        if text != self.empty && alternatives.iter().any(|alt| alt[..] == [text]) {
            return Ok(text);
        }
        // A union takes each alternative once (several often have one DFA, the universe of a
        // kind, say).
        let mut alternatives = alternatives.to_vec();
        alternatives.sort_unstable();
        alternatives.dedup();
        match &alternatives[..] {
            [only] if only.len() == 1 => return Ok(only[0]),
            [a, b] if a.len() == 1 && b.len() == 1 => return self.dfa_op(1, a[0], b[0], loc),
            _ => {}
        }
        let key = (false, alternatives, self.empty);
        if let Some(&r) = self.many_memo.get(&key) {
            return Ok(r);
        }
        let alternatives = &key.1;
        let r = match self.dfa_of_many(alternatives, loc, Dfa::union_of)? {
            Some(r) => r,
            None => {
                let mut acc = self.empty;
                for alt in alternatives {
                    let x = self.dfa_all_of(alt, loc)?;
                    acc = self.dfa_op(1, acc, x, loc)?;
                }
                acc
            }
        };
        self.many_memo.insert(key, r);
        Ok(r)
    }

    /// The strings all of `dfas` accept.
    fn dfa_all_of(&mut self, dfas: &[DfaId], loc: &str) -> Result<DfaId, CompileError> {
        let mut acc = dfas[0];
        for &d in &dfas[1..] {
            acc = self.dfa_op(0, acc, d, loc)?;
        }
        Ok(acc)
    }

    /// The product of many that `build` makes of the DFAs of `alternatives`, added; `None`
    /// where a chain of binary products is likely cheaper: more than [`MANY_AT_MOST`]
    /// alternatives (a product of many pays for every operand at every transition, and its
    /// tuples of unanchored patterns grow with their subsets), or more states than twice the
    /// alternatives' own products and 256 (see [`Dfa::union_of`]).
    fn dfa_of_many(
        &mut self,
        alternatives: &[Vec<DfaId>],
        loc: &str,
        build: impl FnOnce(&[&[&Dfa]], usize, DfaLimits) -> Result<Option<Dfa>, DfaError>,
    ) -> Result<Option<DfaId>, CompileError> {
        if alternatives.len() > MANY_AT_MOST {
            return Ok(None);
        }
        let dfas: Vec<Vec<Arc<Dfa>>> = alternatives
            .iter()
            .map(|alt| alt.iter().map(|&d| self.dfas[d as usize].clone()).collect())
            .collect();
        let budget = dfas
            .iter()
            .map(|alt| {
                alt.iter()
                    .fold(1usize, |n, d| n.saturating_mul(d.num_states()))
            })
            .fold(0usize, usize::saturating_add)
            .saturating_mul(2)
            .saturating_add(256);
        let refs: Vec<Vec<&Dfa>> = dfas
            .iter()
            .map(|alt| alt.iter().map(|d| &**d).collect())
            .collect();
        let alts: Vec<&[&Dfa]> = refs.iter().map(Vec::as_slice).collect();
        let Some(res) = build(&alts, budget, self.limits())
            .map_err(|e| self.dfa_error(e, loc, "combined lexeme"))?
        else {
            return Ok(None);
        };
        Ok(Some(if res.is_empty() {
            self.empty
        } else {
            self.add_dfa(res, loc)?
        }))
    }

    fn node(&self, id: NodeId) -> &Node {
        self.low.node(id)
    }

    fn loc(&self, id: NodeId) -> String {
        match self.node(id) {
            Node::Schema(s) => s.loc.clone(),
            _ => "#".into(),
        }
    }

    fn canonical_id(&self) -> DfaId {
        self.canonical
    }

    fn universe_id(&self, i: usize) -> DfaId {
        self.universe[i]
    }

    fn literal_syntax_id(&mut self) -> Result<DfaId, CompileError> {
        self.regex_dfa("true|false|null", "#")
    }
}

impl Builder<'_> {
    /// Rules out, to a fixpoint, what no value can fill: a program whose formula is false
    /// whatever the value (see [`Builder::program_impossible`]) leaves its template; an item
    /// position under a template that takes no value ends the array before it (lowering
    /// `maxItems`), as do unique items past the number of values their template allows; a
    /// key whose member takes no value is not allowed, and an object that requires one is
    /// impossible. Each of these can make more templates take no value.
    fn prune_unfillable(&mut self, templates: &mut [Option<ValueTemplate>]) {
        // The language sizes of the lexers met, which no round changes.
        let mut sizes = HashMap::default();
        loop {
            let mut changed = false;
            for t in templates.iter_mut().flatten() {
                for program in [&mut t.array, &mut t.object] {
                    if program.is_some_and(|p| self.program_impossible(p)) {
                        *program = None;
                        changed = true;
                    }
                }
            }
            let takes_no_value = |n: NodeId| {
                templates[n.0 as usize].is_some_and(|t: ValueTemplate| t.takes_no_value())
            };
            // Per array spec whose items must differ: at most how many values its items take.
            let unique_values: Vec<Option<u64>> = (0..self.arr_specs.len())
                .map(|i| {
                    let spec = &self.arr_specs[i];
                    let items = spec.items.filter(|_| spec.unique)?;
                    let t = templates[items.0 as usize]?;
                    self.values_at_most(&t, &mut sizes)
                })
                .collect();
            for (spec, values) in self.arr_specs.iter_mut().zip(unique_values) {
                let closed_at = spec
                    .prefix
                    .iter()
                    .position(|&n| takes_no_value(n))
                    .or_else(|| {
                        spec.items
                            .filter(|&n| takes_no_value(n))
                            .map(|_| spec.prefix.len())
                    });
                // Items that must differ from one another, each one of finitely many values,
                // are at most that many after the prefix: the `,` before one more is refused,
                // instead of leading to an item no value can fill.
                let unique_cap = values.map(|v| (spec.prefix.len() as u64).saturating_add(v));
                let cap = closed_at
                    .map(|at| at as u64)
                    .into_iter()
                    .chain(unique_cap)
                    .min();
                if let Some(cap) = cap
                    && spec.max_items.is_none_or(|m| cap < m)
                {
                    spec.max_items = Some(cap);
                    changed = true;
                }
            }
            for spec in &mut self.obj_specs {
                let mut members_changed = false;
                for member in spec.lit_member.iter_mut().chain(&mut spec.set_member) {
                    if member.is_some_and(takes_no_value) {
                        *member = None;
                        members_changed = true;
                    }
                }
                if members_changed {
                    programs::refresh_reach(spec, &self.dfas[spec.key_dfa as usize]);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// At most how many distinct values a template lets be written, when that is finite: a
    /// template of strings, numbers and literals alone, each kind's language finite.
    /// (`sizes` keeps the size of each lexer's language, by lexer and kind, once counted.)
    fn values_at_most(
        &self,
        t: &ValueTemplate,
        sizes: &mut HashMap<(LexerId, Kind), Option<u64>>,
    ) -> Option<u64> {
        if t.array.is_some() || t.object.is_some() {
            return None;
        }
        let canonical = &self.dfas[self.canonical_id() as usize];
        Kind::ALL[..4].iter().try_fold(0u64, |sum, &kind| {
            let lexer = t.lexers[kind as usize];
            if lexer == EMPTY_LEXER {
                return Some(sum);
            }
            let size = *sizes.entry((lexer, kind)).or_insert_with(|| {
                let dfa = &self.dfas[self.lexers[lexer as usize].dfa as usize];
                // A number's language holds the canonical spelling of each value it allows
                // (and maybe others, as `1.0`): its values are counted by those spellings.
                if kind == Kind::Number {
                    dfa.language_size_within(canonical, NUMBER_BYTES)
                } else {
                    dfa.language_size()
                }
            });
            Some(sum.saturating_add(size?))
        })
    }

    /// Whether program `p`'s formula is false for every value: evaluated with the leaves whose
    /// specs no value meets as false and the others unknown (in Kleene's three-valued logic,
    /// so a formula decided here is decided for every value).
    fn program_impossible(&self, p: u32) -> bool {
        #[derive(Clone, Copy, PartialEq)]
        enum V {
            False,
            Unknown,
            True,
        }
        let prog = &self.programs[p as usize];
        let mut stack: Vec<V> = Vec::new();
        for op in &prog.ops {
            let value = match *op {
                Op::True => V::True,
                Op::False => V::False,
                Op::Leaf(i) => {
                    let impossible = match prog.leaves[i as usize] {
                        LeafSpec::Object(s) => self.obj_specs[s as usize].meets_no_value(),
                        LeafSpec::Array(s) => self.arr_specs[s as usize].meets_no_value(),
                        LeafSpec::KeySeen { .. } => false,
                    };
                    if impossible { V::False } else { V::Unknown }
                }
                Op::Not => match stack.pop() {
                    Some(V::True) => V::False,
                    Some(V::False) => V::True,
                    Some(V::Unknown) => V::Unknown,
                    None => return false,
                },
                Op::And(n) | Op::Or(n) | Op::OneOf(n) => {
                    let Some(at) = stack.len().checked_sub(n as usize) else {
                        return false;
                    };
                    let xs = stack.split_off(at);
                    let count = |v: V| xs.iter().filter(|&&x| x == v).count();
                    let (t, u) = (count(V::True), count(V::Unknown));
                    match *op {
                        Op::And(_) if count(V::False) > 0 => V::False,
                        Op::And(_) if u == 0 => V::True,
                        Op::Or(_) if t > 0 => V::True,
                        Op::Or(_) if u == 0 => V::False,
                        Op::OneOf(_) if t >= 2 || t + u == 0 => V::False,
                        Op::OneOf(_) if t == 1 && u == 0 => V::True,
                        _ => V::Unknown,
                    }
                }
            };
            stack.push(value);
        }
        stack.pop() == Some(V::False)
    }

    /// The grammar of the templates built (see [`Builder::build_templates`]), with `root` the
    /// schema of the document.
    pub fn into_grammar(mut self, root: NodeId) -> Result<Grammar, CompileError> {
        let utf8 = self.utf8_id();
        let number_syntax = self.number_syntax_id();
        let canonical_syntax = self.canonical_id();
        let literal_syntax = self.literal_syntax_id()?;
        let n = self.low.nodes.len();
        let mut templates = vec![None; n];
        for (id, t) in self.templates.drain() {
            templates[id.0 as usize] = Some(t);
        }
        let min_chars = self
            .dfas
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let needed = self
                    .lexers
                    .iter()
                    .any(|l| l.dfa as usize == i && l.max_len.is_some());
                needed.then(|| d.min_chars_to_final().into_boxed_slice())
            })
            .collect();
        self.prune_unfillable(&mut templates);
        let needs_hash = self.arr_specs.iter().any(|a| a.unique);
        let canonical_live = self.canonical_live(&templates, number_syntax, canonical_syntax);
        Ok(Grammar {
            options: self.options.clone(),
            dfas: self.dfas,
            min_chars,
            lexers: self.lexers,
            programs: self.programs,
            obj_specs: self.obj_specs,
            arr_specs: self.arr_specs,
            templates,
            root,
            report: CompileReport {
                notes: self.low.notes,
            },
            utf8,
            number_syntax,
            canonical_syntax,
            literal_syntax,
            canonical_live,
            needs_hash,
            id: Grammar::next_id(),
            walks: Default::default(),
        })
    }

    /// See [`Grammar::canonical_live`]: one table per distinct lexer DFA met in number
    /// position.
    fn canonical_live(
        &self,
        templates: &[Option<ValueTemplate>],
        number_syntax: DfaId,
        canonical_syntax: DfaId,
    ) -> Vec<Option<Arc<[u32]>>> {
        let mut out = vec![None; self.lexers.len()];
        if canonical_syntax == number_syntax {
            return out;
        }
        let canonical = &self.dfas[canonical_syntax as usize];
        let mut by_dfa: HashMap<DfaId, Arc<[u32]>> = HashMap::default();
        for t in templates.iter().flatten() {
            let lexer = t.lexers[Kind::Number as usize];
            let l = &self.lexers[lexer as usize];
            let dfa = &self.dfas[l.dfa as usize];
            if out[lexer as usize].is_some() || l.dfa == number_syntax || dfa.is_empty() {
                continue;
            }
            let table = by_dfa
                .entry(l.dfa)
                .or_insert_with(|| canonical.co_distance(dfa, NUMBER_BYTES).into());
            out[lexer as usize] = Some(table.clone());
        }
        out
    }

    fn utf8_id(&self) -> DfaId {
        self.universe_id(3)
    }

    fn number_syntax_id(&self) -> DfaId {
        self.universe_id(2)
    }
}

fn value_kind(v: &Value) -> Option<Kind> {
    Some(match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Boolean,
        Value::Number(_) => Kind::Number,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Object,
    })
}

/// The tightest of several bounds (`lower`: the largest).
/// Whether no number lies between lower bound `l` and upper bound `h`.
fn no_value_between(l: &Bound, h: &Bound) -> bool {
    h.value < l.value || (h.value == l.value && !(l.inclusive && h.inclusive))
}

fn tightest(bounds: &[Bound], lower: bool) -> Option<Bound> {
    let mut best: Option<Bound> = None;
    for b in bounds {
        best = Some(match best {
            None => b.clone(),
            Some(cur) => {
                let better = if lower {
                    b.value > cur.value || (b.value == cur.value && !b.inclusive)
                } else {
                    b.value < cur.value || (b.value == cur.value && !b.inclusive)
                };
                if better { b.clone() } else { cur }
            }
        });
    }
    best
}
