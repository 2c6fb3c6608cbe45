//! From schema nodes to the grammar: lexeme DFAs for primitive values, programs for containers.
//!
//! For each schema node that some value must satisfy, and each JSON type the value may turn
//! out to have, the compiler derives a *template*:
//!
//! - for strings, numbers, booleans and null, a [`Lexer`]: one DFA for the whole value (the
//!   node's own keywords, `allOf`, `anyOf`, `oneOf`, `not` and `if`/`then`/`else` all folded in
//!   by DFA products), plus, for strings, a code-point counter for `minLength`/`maxLength` and,
//!   in any-notation mode, an exact numeric check run when a number ends;
//! - for objects and arrays, a [`Program`]: a boolean formula over *leaves*, each leaf the
//!   object or array keywords of one schema ([`ObjSpec`], [`ArrSpec`]) that the runtime tracks
//!   with a little state of its own (properties seen, item counts).
//!
//! Templates are computed once, at compile time, for every node reachable as a value.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::dfa::{
    CONTENT_LEVELS, ContentFlags, DEAD, Dfa, DfaError, DfaLimits, LazyBudgets, LazyFlags,
};
use crate::error::CompileError;
use crate::ir::{Bound, Lowering, Node, NodeId, Schema, TypeSet};
use crate::options::Options;
use crate::text::decimal::Decimal;
use crate::text::numeric::{self, NumberSpec};
use crate::text::{ecma, formats};

/// Index of a DFA in [`Grammar::dfas`](crate::Grammar).
pub type DfaId = u32;

/// The JSON type of a value, as decided by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Null = 0,
    Boolean = 1,
    Number = 2,
    String = 3,
    Array = 4,
    Object = 5,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Null,
        Kind::Boolean,
        Kind::Number,
        Kind::String,
        Kind::Array,
        Kind::Object,
    ];

    /// The kind a value starting with `b` has.
    pub fn of_first_byte(b: u8) -> Option<Kind> {
        Some(match b {
            b'n' => Kind::Null,
            b't' | b'f' => Kind::Boolean,
            b'-' | b'0'..=b'9' => Kind::Number,
            b'"' => Kind::String,
            b'[' => Kind::Array,
            b'{' => Kind::Object,
            _ => return None,
        })
    }

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

/// An exact check of a number's value, for any-notation mode.
#[derive(Debug, Clone, PartialEq)]
pub enum NumExpr {
    True,
    False,
    Integer,
    Lower(Decimal, bool),
    Upper(Decimal, bool),
    MultipleOf(Decimal),
    In(Vec<Decimal>),
    And(Vec<NumExpr>),
    Or(Vec<NumExpr>),
    Not(Box<NumExpr>),
    OneOf(Vec<NumExpr>),
}

impl NumExpr {
    pub fn eval(&self, v: &Decimal) -> bool {
        match self {
            NumExpr::True => true,
            NumExpr::False => false,
            NumExpr::Integer => v.is_integer(),
            NumExpr::Lower(b, incl) => {
                if *incl {
                    v >= b
                } else {
                    v > b
                }
            }
            NumExpr::Upper(b, incl) => {
                if *incl {
                    v <= b
                } else {
                    v < b
                }
            }
            NumExpr::MultipleOf(m) => v.is_multiple_of(m).unwrap_or(false),
            NumExpr::In(vals) => vals.iter().any(|x| x == v),
            NumExpr::And(xs) => xs.iter().all(|x| x.eval(v)),
            NumExpr::Or(xs) => xs.iter().any(|x| x.eval(v)),
            NumExpr::Not(x) => !x.eval(v),
            NumExpr::OneOf(xs) => xs.iter().filter(|x| x.eval(v)).count() == 1,
        }
    }

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

/// The language of one primitive value.
#[derive(Debug, Clone)]
pub struct Lexer {
    /// DFA over the value: decoded content for strings, the text for numbers and literals.
    pub dfa: DfaId,
    /// Code points, strings only.
    pub min_len: u64,
    /// Code points, strings only.
    pub max_len: Option<u64>,
    /// Exact value check when the number ends (any-notation mode).
    pub check: Option<Arc<NumExpr>>,
}

/// Index of a [`Lexer`]; [`EMPTY_LEXER`] matches nothing.
pub type LexerId = u32;
/// The lexer with the empty language.
pub const EMPTY_LEXER: LexerId = 0;

/// One operation of a [`Program`], in postfix order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    True,
    False,
    Leaf(u32),
    And(u32),
    Or(u32),
    OneOf(u32),
    Not,
}

/// What a program leaf tracks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeafSpec {
    Object(u32),
    Array(u32),
    /// True when the object leaf `leaf` of the same program has seen literal key `lit`.
    KeySeen {
        leaf: u32,
        lit: u32,
    },
}

/// A boolean formula over leaves, for one container value.
#[derive(Debug, Clone, Default)]
pub struct Program {
    pub ops: Vec<Op>,
    pub leaves: Vec<LeafSpec>,
    /// Every leaf is essential: the formula is a conjunction of leaves (or `True`).
    pub all_essential: bool,
    /// Per leaf: whether the formula is monotone in it (the leaf is reached through `allOf`
    /// and `anyOf` alone), so that a leaf that accepts fewer documents can only make the
    /// formula accept fewer.
    pub positive: Vec<bool>,
    /// Under [`crate::PropertyOrder::Schema`]: the formula is one object leaf or a disjunction
    /// of them, so each leaf may hold its members to its own order (see [`ObjSpec::listed`]).
    pub ordered: bool,
}

/// Object keywords of one schema.
#[derive(Debug, Clone)]
pub struct ObjSpec {
    /// Over decoded key bytes; match ids `< nlit` are literals, `nlit..nlit+npat` patterns,
    /// `nlit+npat` the catch-all for additional properties.
    pub key_dfa: DfaId,
    /// Literal names: those of `properties` first, in the schema's order, then the names
    /// `required` and the dependency keywords add.
    pub lits: Vec<String>,
    /// How many literals come from `properties` (the listed ones of
    /// [`crate::PropertyOrder::Schema`]).
    pub listed: u32,
    /// Member node per literal; `None`: the key is not allowed.
    pub lit_member: Vec<Option<NodeId>>,
    /// Member node per key-DFA match set id for non-literal keys; `None`: not allowed.
    pub set_member: Vec<Option<NodeId>>,
    /// Literal ids that must be present.
    pub required: Vec<u32>,
    pub min_props: u64,
    pub max_props: Option<u64>,
    /// (literal, literals that must then be present).
    pub dependent_required: Vec<(u32, Vec<u32>)>,
    /// Per key-DFA state index: bitset over literals (`nlit` bits) + one bit for "some
    /// non-literal key is acceptable", of allowed outcomes still reachable.
    pub reach: Vec<u64>,
    /// Words per state in `reach`.
    pub reach_words: usize,
    /// Per key-DFA state, computed on first use: the content levels that keep a non-literal
    /// key acceptable (see [`ObjSpec::key_levels`]).
    pub(crate) key_flags: LazyFlags,
    /// Per key-DFA state and level, computed on first use: exact budgets of content that keeps
    /// a non-literal key acceptable (see [`ObjSpec::key_budget`]).
    pub(crate) key_budgets: LazyBudgets,
}

impl ObjSpec {
    /// Literal id of a match set, if it names a literal.
    pub fn literal_of(&self, set: &[u32]) -> Option<u32> {
        set.first()
            .copied()
            .filter(|&i| (i as usize) < self.lits.len())
    }

    /// The content levels (see [`CONTENT_LEVELS`]) every content of which, read from key-DFA
    /// state `state`, keeps a non-literal key acceptable: such content is allowed inside the key
    /// whatever it is. `dfa` is the spec's key DFA.
    pub fn key_levels(&self, dfa: &Dfa, state: u32) -> ContentFlags {
        let nonlit = |st: u32| self.nonlit_reachable(dfa, st);
        dfa.content_flags(&self.key_flags, state, nonlit, false)
    }

    /// The allowed outcomes still reachable from key-DFA state `state` (see
    /// [`ObjSpec::reach`]).
    pub(crate) fn reach_row(&self, dfa: &Dfa, state: u32) -> &[u64] {
        let i = dfa.index(state) * self.reach_words;
        &self.reach[i..i + self.reach_words]
    }

    /// Whether some non-literal key is still acceptable from key-DFA state `state`.
    pub(crate) fn nonlit_reachable(&self, dfa: &Dfa, state: u32) -> bool {
        let nlit = self.lits.len();
        self.reach_row(dfa, state)[nlit / 64] & (1 << (nlit % 64)) != 0
    }

    /// The exact number of code points of `level` content that keep a non-literal key
    /// acceptable from key-DFA state `state`, where longer content leaves no allowed key at all
    /// (see [`Dfa::string_budget`]). `dfa` is the spec's key DFA.
    pub fn key_budget(&self, dfa: &Dfa, state: u32, level: u8) -> Option<u32> {
        let nonlit = |st: u32| self.nonlit_reachable(dfa, st);
        let none = |st: u32| self.reach_row(dfa, st).iter().all(|&w| w == 0);
        dfa.content_budget(&self.key_budgets, state, level, nonlit, none)
    }

    /// Whether every continuation of the key from `state` keeps a non-literal key acceptable
    /// (so any string content is allowed inside the key).
    pub fn key_universal(&self, dfa: &Dfa, state: u32) -> bool {
        self.key_levels(dfa, state).live == CONTENT_LEVELS
    }
}

/// Array keywords of one schema.
#[derive(Debug, Clone)]
pub struct ArrSpec {
    pub prefix: Vec<NodeId>,
    /// Node for items past the prefix (`None`: anything).
    pub items: Option<NodeId>,
    pub min_items: u64,
    pub max_items: Option<u64>,
    pub contains: Option<NodeId>,
    pub min_contains: u64,
    pub max_contains: Option<u64>,
    /// `contains` accepts every value: each item counts as soon as it starts.
    pub contains_all: bool,
    pub unique: bool,
}

/// Per value node: template ids for each kind.
#[derive(Debug, Clone, Copy)]
pub struct ValueTemplate {
    /// Lexer per primitive kind (indexed by `Kind as usize` for the first four kinds).
    pub lexers: [LexerId; 4],
    /// Program for arrays and objects (`None`: the kind is not allowed).
    pub array: Option<u32>,
    pub object: Option<u32>,
}

/// A language under construction, for one primitive kind.
#[derive(Clone)]
struct Lang {
    dfa: DfaId,
    min: u64,
    max: Option<u64>,
    check: Option<NumExpr>,
}

/// Compiles lowered nodes into grammar tables.
pub struct Builder<'o> {
    pub options: &'o Options,
    pub low: Lowering<'o>,
    pub dfas: Vec<Arc<Dfa>>,
    dfa_by_regex: HashMap<String, DfaId>,
    op_memo: HashMap<(u8, DfaId, DfaId), DfaId>,
    pub lexers: Vec<Lexer>,
    pub programs: Vec<Program>,
    pub obj_specs: Vec<ObjSpec>,
    pub arr_specs: Vec<ArrSpec>,
    pub templates: HashMap<NodeId, ValueTemplate>,
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
}

/// A boolean formula over container leaves, before flattening.
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    True,
    False,
    Obj(u32),
    Arr(u32),
    /// Dependent schema: `KeySeen(obj spec, literal)` of an object leaf in the same formula.
    KeySeen(u32, u32),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    OneOf(Vec<Expr>),
    Not(Box<Expr>),
}

fn and(mut xs: Vec<Expr>) -> Expr {
    xs.retain(|x| *x != Expr::True);
    if xs.contains(&Expr::False) {
        return Expr::False;
    }
    match xs.len() {
        0 => Expr::True,
        1 => xs.pop().expect("one element"),
        _ => Expr::And(xs),
    }
}

fn or(mut xs: Vec<Expr>) -> Expr {
    xs.retain(|x| *x != Expr::False);
    if xs.contains(&Expr::True) {
        return Expr::True;
    }
    match xs.len() {
        0 => Expr::False,
        1 => xs.pop().expect("one element"),
        _ => Expr::Or(xs),
    }
}

impl<'o> Builder<'o> {
    pub fn new(options: &'o Options, low: Lowering<'o>) -> Result<Self, CompileError> {
        let mut b = Builder {
            options,
            low,
            dfas: Vec::new(),
            dfa_by_regex: HashMap::default(),
            op_memo: HashMap::default(),
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
        if let Some(&id) = self.dfa_by_regex.get(re) {
            return Ok(id);
        }
        let dfa = crate::dfa::cached_regex(re, self.limits())
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

    fn node(&self, id: NodeId) -> &Node {
        self.low.node(id)
    }

    fn loc(&self, id: NodeId) -> String {
        match self.node(id) {
            Node::Schema(s) => s.loc.clone(),
            _ => "#".into(),
        }
    }

    // ----- primitive languages -------------------------------------------------------------

    fn universe_lang(&self, kind: Kind) -> Lang {
        Lang {
            dfa: self.universe[kind as usize],
            min: 0,
            max: None,
            check: None,
        }
    }

    fn empty_lang(&self) -> Lang {
        Lang {
            dfa: self.empty,
            min: 0,
            max: None,
            check: None,
        }
    }

    fn any_notation(&self, kind: Kind) -> bool {
        kind == Kind::Number && self.options.numbers.any_notation
    }

    /// Folds length bounds into the DFA (needed before union, difference).
    fn fold_len(&mut self, l: Lang, loc: &str) -> Result<Lang, CompileError> {
        if l.min == 0 && l.max.is_none() {
            return Ok(l);
        }
        let limit = self.options.limits.max_expanded_length;
        let big = l.min > limit || l.max.is_some_and(|m| m > limit);
        if big {
            let keyword = if l.min > limit {
                "minLength"
            } else {
                "maxLength"
            };
            return Err(CompileError::Unsupported {
                keyword: keyword.into(),
                pointer: loc.into(),
                reason: format!(
                    "length bounds above {limit} cannot be combined under anyOf/oneOf/not/if"
                ),
            });
        }
        if l.max.is_some_and(|m| m < l.min) {
            // No length fits: the empty language.
            return Ok(self.empty_lang());
        }
        let re = match l.max {
            Some(m) => format!("(?s:.{{{},{}}})", l.min, m),
            None => format!("(?s:.{{{},}})", l.min),
        };
        let len = self.regex_dfa(&re, loc)?;
        let dfa = self.dfa_op(0, l.dfa, len, loc)?;
        Ok(Lang {
            dfa,
            min: 0,
            max: None,
            check: l.check,
        })
    }

    /// Whether `l` holds no value: an empty automaton or length bounds no length fits.
    fn is_empty_lang(&self, l: &Lang) -> bool {
        self.dfas[l.dfa as usize].is_empty() || l.max.is_some_and(|m| m < l.min)
    }

    fn intersect(&mut self, a: Lang, b: Lang, kind: Kind, loc: &str) -> Result<Lang, CompileError> {
        let dfa = self.dfa_op(0, a.dfa, b.dfa, loc)?;
        let check = if self.any_notation(kind) {
            Some(NumExpr::and(
                a.check.unwrap_or(NumExpr::True),
                b.check.unwrap_or(NumExpr::True),
            ))
        } else {
            None
        };
        Ok(Lang {
            dfa,
            min: a.min.max(b.min),
            max: match (a.max, b.max) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            },
            check,
        })
    }

    /// The exact value predicate of a number language in any-notation mode.
    fn num_pred(&self, l: Lang) -> NumExpr {
        if self.dfas[l.dfa as usize].is_empty() {
            NumExpr::False
        } else {
            l.check.unwrap_or(NumExpr::True)
        }
    }

    fn union(&mut self, xs: Vec<Lang>, kind: Kind, loc: &str) -> Result<Lang, CompileError> {
        if self.any_notation(kind) {
            let checks = xs.into_iter().map(|l| self.num_pred(l)).collect();
            return Ok(Lang {
                dfa: self.universe[2],
                min: 0,
                max: None,
                check: Some(NumExpr::Or(checks)),
            });
        }
        // Alternatives that hold no value of this kind (the `null` of a nullable string) add
        // nothing; when one alternative is left its length bounds need no folding.
        let mut xs: Vec<Lang> = xs.into_iter().filter(|l| !self.is_empty_lang(l)).collect();
        if xs.len() == 1 {
            return Ok(xs.remove(0));
        }
        let mut acc: Option<Lang> = None;
        for x in xs {
            let x = self.fold_len(x, loc)?;
            acc = Some(match acc {
                None => x,
                Some(a) => Lang {
                    dfa: self.dfa_op(1, a.dfa, x.dfa, loc)?,
                    min: 0,
                    max: None,
                    check: None,
                },
            });
        }
        Ok(acc.unwrap_or_else(|| self.empty_lang()))
    }

    fn complement(&mut self, x: Lang, kind: Kind, loc: &str) -> Result<Lang, CompileError> {
        if self.any_notation(kind) {
            let check = match self.num_pred(x) {
                NumExpr::True => NumExpr::False,
                NumExpr::False => NumExpr::True,
                p => NumExpr::Not(Box::new(p)),
            };
            return Ok(Lang {
                dfa: self.universe[2],
                min: 0,
                max: None,
                check: Some(check),
            });
        }
        // Every value of the kind, with one length bound: the complement is the other side of
        // that bound, which needs no folding however long.
        if x.dfa == self.universe[kind as usize] && x.dfa != self.empty {
            match (x.min, x.max) {
                (0, Some(max)) => {
                    return Ok(Lang {
                        dfa: x.dfa,
                        min: max.saturating_add(1),
                        max: None,
                        check: None,
                    });
                }
                (min, None) if min > 0 => {
                    return Ok(Lang {
                        dfa: x.dfa,
                        min: 0,
                        max: Some(min - 1),
                        check: None,
                    });
                }
                _ => {}
            }
        }
        let x = self.fold_len(x, loc)?;
        let within = self.spelling_universe(kind, &[x.dfa]);
        let dfa = self.dfa_op(2, within, x.dfa, loc)?;
        Ok(Lang {
            dfa,
            min: 0,
            max: None,
            check: None,
        })
    }

    fn exactly_one(&mut self, xs: Vec<Lang>, kind: Kind, loc: &str) -> Result<Lang, CompileError> {
        if self.any_notation(kind) {
            let checks = xs.into_iter().map(|l| self.num_pred(l)).collect();
            return Ok(Lang {
                dfa: self.universe[2],
                min: 0,
                max: None,
                check: Some(NumExpr::OneOf(checks)),
            });
        }
        // Alternatives with no value of this kind cannot match one, so the values of this kind
        // that match exactly one alternative are those of the others; with one left, its own.
        let mut xs: Vec<Lang> = xs.into_iter().filter(|l| !self.is_empty_lang(l)).collect();
        if xs.len() <= 1 {
            return Ok(xs.pop().unwrap_or_else(|| self.empty_lang()));
        }
        let mut folded = Vec::with_capacity(xs.len());
        for x in xs {
            folded.push(self.fold_len(x, loc)?);
        }
        // Union over i of (L_i minus the union of the others).
        let ids: Vec<DfaId> = folded.iter().map(|l| l.dfa).collect();
        let within = self.spelling_universe(kind, &ids);
        let mut parts = Vec::new();
        for i in 0..folded.len() {
            let mut others = self.empty;
            for (j, o) in folded.iter().enumerate() {
                if j != i {
                    others = self.dfa_op(1, others, o.dfa, loc)?;
                }
            }
            let only = self.dfa_op(0, folded[i].dfa, within, loc)?;
            parts.push(Lang {
                dfa: self.dfa_op(2, only, others, loc)?,
                min: 0,
                max: None,
                check: None,
            });
        }
        self.union(parts, kind, loc)
    }

    /// The spellings a complement or a `oneOf` is taken within: one spelling per value.
    ///
    /// A language of plain-notation numbers holds, of each value it allows, at least the
    /// canonical spelling, and of no other value any spelling; but not every spelling of its
    /// values (the `integer` language has `1`, not `1.0`; no plain language has `1e0`). Its
    /// complement within every number text would hold the missing spellings of its own
    /// values: `{"not": {"type": "integer"}}` would let `1.0` through. Within the canonical
    /// spellings the complement holds exactly the canonical spellings of the other values, so
    /// the notation policy narrows what is written but never widens a negation. Strings are
    /// decoded before their DFAs run, and literals have one spelling each.
    ///
    /// Where every operand is every number or none (`{"oneOf": [{"type": "string"},
    /// {"type": "number"}]}` for numbers), each holds all spellings of its values and the
    /// whole universe stays exact.
    fn spelling_universe(&self, kind: Kind, operands: &[DfaId]) -> DfaId {
        let universe = self.universe[kind as usize];
        let closed = operands.iter().all(|&d| d == universe || d == self.empty);
        if kind == Kind::Number && !closed {
            self.canonical
        } else {
            universe
        }
    }

    fn check_cycle(&self, key: (NodeId, Kind)) -> Result<(), CompileError> {
        if self.in_progress.contains(&key) {
            return Err(CompileError::Invalid {
                keyword: "$ref".into(),
                pointer: self.loc(key.0),
                reason: "reference cycle that never reaches a value (infinite recursion)".into(),
            });
        }
        Ok(())
    }

    /// The language of values of primitive `kind` valid under `node`.
    fn lang(&mut self, node: NodeId, kind: Kind) -> Result<Lang, CompileError> {
        if let Some(l) = self.lang_memo.get(&(node, kind)) {
            return Ok(l.clone());
        }
        self.check_cycle((node, kind))?;
        self.in_progress.insert((node, kind));
        let r = self.lang_uncached(node, kind);
        self.in_progress.remove(&(node, kind));
        let l = r?;
        self.lang_memo.insert((node, kind), l.clone());
        Ok(l)
    }

    fn lang_uncached(&mut self, node: NodeId, kind: Kind) -> Result<Lang, CompileError> {
        let s = match self.node(node) {
            Node::True => return Ok(self.universe_lang(kind)),
            Node::False => return Ok(self.empty_lang()),
            Node::Schema(s) => s.clone(),
        };
        let loc = s.loc.clone();
        if let Some(t) = s.types
            && !t.has(kind.type_bit())
        {
            return Ok(self.empty_lang());
        }
        let mut l = self.local_lang(&s, kind)?;
        if self.is_empty(&l) {
            return Ok(l);
        }
        for &c in &s.all_of {
            let cl = self.lang(c, kind)?;
            l = self.intersect(l, cl, kind, &loc)?;
        }
        for group in &s.any_of {
            let mut xs = Vec::new();
            for &c in group {
                xs.push(self.lang(c, kind)?);
            }
            let u = self.union(xs, kind, &loc)?;
            l = self.intersect(l, u, kind, &loc)?;
        }
        for group in &s.one_of {
            let mut xs = Vec::new();
            for &c in group {
                xs.push(self.lang(c, kind)?);
            }
            let u = self.exactly_one(xs, kind, &loc)?;
            l = self.intersect(l, u, kind, &loc)?;
        }
        for &c in &s.not {
            let cl = self.lang(c, kind)?;
            let n = self.complement(cl, kind, &loc)?;
            l = self.intersect(l, n, kind, &loc)?;
        }
        if let Some((i, t, e)) = s.conditional {
            let il = self.lang(i, kind)?;
            let tl = match t {
                Some(t) => self.lang(t, kind)?,
                None => self.universe_lang(kind),
            };
            let el = match e {
                Some(e) => self.lang(e, kind)?,
                None => self.universe_lang(kind),
            };
            let yes = self.intersect(il.clone(), tl, kind, &loc)?;
            let ni = self.complement(il, kind, &loc)?;
            let no = self.intersect(ni, el, kind, &loc)?;
            let u = self.union(vec![yes, no], kind, &loc)?;
            l = self.intersect(l, u, kind, &loc)?;
        }
        Ok(l)
    }

    fn is_empty(&self, l: &Lang) -> bool {
        self.dfas[l.dfa as usize].is_empty()
            || l.max.is_some_and(|m| m < l.min)
            || l.check == Some(NumExpr::False)
    }

    /// The node's own keywords for one primitive kind.
    fn local_lang(&mut self, s: &Schema, kind: Kind) -> Result<Lang, CompileError> {
        let loc = s.loc.clone();
        let mut l = self.universe_lang(kind);
        // enum / const.
        if let Some(values) = &s.enum_values {
            let vals: Vec<&Value> = values
                .iter()
                .filter(|v| value_kind(v) == Some(kind))
                .collect();
            if vals.is_empty() {
                return Ok(self.empty_lang());
            }
            let el = self.enum_lang(&vals, kind, &loc)?;
            l = self.intersect(l, el, kind, &loc)?;
        }
        match kind {
            Kind::String => {
                l.min = l.min.max(s.min_length);
                if let Some(m) = s.max_length {
                    l.max = Some(l.max.map_or(m, |x| x.min(m)));
                }
                for p in &s.patterns {
                    let d = self.pattern_dfa(p, &loc)?;
                    let pl = Lang {
                        dfa: d,
                        min: 0,
                        max: None,
                        check: None,
                    };
                    l = self.intersect(l, pl, kind, &loc)?;
                }
                if let Some(f) = &s.format {
                    let fl =
                        formats::format_language(f).ok_or_else(|| CompileError::Unsupported {
                            keyword: "format".into(),
                            pointer: loc.clone(),
                            reason: format!("format `{f}` is not enforced"),
                        })?;
                    let d = self.regex_dfa(&fl.regex, &loc)?;
                    let fl = Lang {
                        dfa: d,
                        min: 0,
                        max: fl.max_length.map(u64::from),
                        check: None,
                    };
                    l = self.intersect(l, fl, kind, &loc)?;
                }
            }
            Kind::Number => {
                let integer = s
                    .types
                    .is_some_and(|t| t.has(TypeSet::INTEGER) && !t.has(TypeSet::NUMBER));
                let lower = tightest(&s.lower, true);
                let upper = tightest(&s.upper, false);
                if let (Some(l), Some(h)) = (&lower, &upper)
                    && no_value_between(l, h)
                {
                    return Ok(self.empty_lang());
                }
                if self.options.numbers.any_notation {
                    let mut e = NumExpr::True;
                    if integer {
                        e = NumExpr::and(e, NumExpr::Integer);
                    }
                    if let Some(b) = lower {
                        e = NumExpr::and(e, NumExpr::Lower(b.value, b.inclusive));
                    }
                    if let Some(b) = upper {
                        e = NumExpr::and(e, NumExpr::Upper(b.value, b.inclusive));
                    }
                    for m in &s.multiple_of {
                        e = NumExpr::and(e, NumExpr::MultipleOf(m.clone()));
                    }
                    l.check = Some(NumExpr::and(l.check.take().unwrap_or(NumExpr::True), e));
                } else if integer || lower.is_some() || upper.is_some() || !s.multiple_of.is_empty()
                {
                    let n = self.options.numbers;
                    let spec = NumberSpec {
                        integer,
                        lower: lower.map(|b| numeric::Bound {
                            value: b.value,
                            inclusive: b.inclusive,
                        }),
                        upper: upper.map(|b| numeric::Bound {
                            value: b.value,
                            inclusive: b.inclusive,
                        }),
                        max_int_digits: n.max_int_digits,
                        max_frac_digits: n.max_frac_digits,
                        exponent: false,
                        max_exp_digits: None,
                    };
                    let re = numeric::number_language(&spec).map_err(|e| CompileError::Limit {
                        limit: "max_dfa_states",
                        pointer: loc.clone(),
                        detail: format!("numeric range: {e}"),
                    })?;
                    let d = self.regex_dfa(&re, &loc)?;
                    l = self.intersect(
                        l,
                        Lang {
                            dfa: d,
                            min: 0,
                            max: None,
                            check: None,
                        },
                        kind,
                        &loc,
                    )?;
                    for m in &s.multiple_of {
                        let d = self.multiple_of_dfa(m, &loc)?;
                        l = self.intersect(
                            l,
                            Lang {
                                dfa: d,
                                min: 0,
                                max: None,
                                check: None,
                            },
                            kind,
                            &loc,
                        )?;
                    }
                }
            }
            _ => {}
        }
        Ok(l)
    }

    fn enum_lang(&mut self, vals: &[&Value], kind: Kind, loc: &str) -> Result<Lang, CompileError> {
        match kind {
            Kind::String => {
                let lits: Vec<&[u8]> = vals
                    .iter()
                    .filter_map(|v| v.as_str())
                    .map(str::as_bytes)
                    .collect();
                let d = Dfa::from_literals(&lits, self.limits())
                    .map_err(|e| self.dfa_error(e, loc, "enum"))?;
                let id = self.add_dfa(d, loc)?;
                Ok(Lang {
                    dfa: id,
                    min: 0,
                    max: None,
                    check: None,
                })
            }
            Kind::Number => {
                let mut decs = Vec::new();
                for v in vals {
                    if let Some(n) = v.as_number()
                        && let Ok(d) = Decimal::from_json_number(n)
                    {
                        decs.push(d);
                    }
                }
                if self.options.numbers.any_notation {
                    return Ok(Lang {
                        dfa: self.universe[2],
                        min: 0,
                        max: None,
                        check: Some(NumExpr::In(decs)),
                    });
                }
                let mut alts = Vec::new();
                for d in &decs {
                    let plain =
                        d.to_plain_string_within(4096)
                            .ok_or_else(|| CompileError::Limit {
                                limit: "max_dfa_states",
                                pointer: loc.into(),
                                detail: "enum number too long to spell out".into(),
                            })?;
                    let body = regex_syntax::escape(&plain);
                    alts.push(if d.is_zero() {
                        "-?0(?:\\.0+)?".to_string()
                    } else if plain.contains('.') {
                        format!("{body}0*")
                    } else {
                        format!("{body}(?:\\.0+)?")
                    });
                }
                let re = format!("(?:{})", alts.join("|"));
                let d = self.regex_dfa(&re, loc)?;
                Ok(Lang {
                    dfa: d,
                    min: 0,
                    max: None,
                    check: None,
                })
            }
            Kind::Boolean | Kind::Null => {
                let lits: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
                let lits: Vec<&[u8]> = lits.iter().map(|s| s.as_bytes()).collect();
                let d = Dfa::from_literals(&lits, self.limits())
                    .map_err(|e| self.dfa_error(e, loc, "enum"))?;
                let id = self.add_dfa(d, loc)?;
                Ok(Lang {
                    dfa: id,
                    min: 0,
                    max: None,
                    check: None,
                })
            }
            _ => unreachable!("containers have no lexer"),
        }
    }

    /// Plain-notation numbers whose value is a multiple of `m`.
    fn multiple_of_dfa(&mut self, m: &Decimal, loc: &str) -> Result<DfaId, CompileError> {
        // m = big * 10^-k with big an integer.
        let canon = m.to_canonical_string();
        let (big, k) = split_decimal(&canon).ok_or_else(|| CompileError::Unsupported {
            keyword: "multipleOf".into(),
            pointer: loc.into(),
            reason: format!("{canon} is out of range"),
        })?;
        const MAX_MODULUS: u64 = 20_000;
        if big > MAX_MODULUS || k > 40 {
            return Err(CompileError::Limit {
                limit: "max_dfa_states",
                pointer: loc.into(),
                detail: format!("multipleOf {canon} needs too many states in plain notation"),
            });
        }
        let pow10: Vec<u64> = (0..=k).map(|e| 10u64.pow(e as u32) % big).collect();
        // State: (phase, frac digits read, remainder). phase 0: before digits/sign, 1: int
        // digits, 2: after the point.
        #[derive(Clone, PartialEq, Eq, Hash)]
        struct S(u8, u32, u64);
        let d = Dfa::from_fn(
            S(0, 0, 0),
            b"-.0123456789",
            |s, b| match (s.0, b) {
                (0, b'-') => Some(S(1, 0, 0)),
                (0 | 1, b'0'..=b'9') => {
                    let d = (b - b'0') as u64;
                    Some(S(1, 0, (s.2 * 10 + d * pow10[k as usize]) % big))
                }
                (1, b'.') => Some(S(2, 0, s.2)),
                (2, b'0'..=b'9') => {
                    let d = (b - b'0') as u64;
                    let j = s.1 + 1;
                    if j as u64 <= k {
                        Some(S(2, j, (s.2 + d * pow10[(k - j as u64) as usize]) % big))
                    } else if d == 0 {
                        Some(S(2, j.min(k as u32 + 1), s.2))
                    } else {
                        None
                    }
                }
                _ => None,
            },
            |s| s.0 >= 1 && s.2 == 0,
            self.limits(),
        )
        .map_err(|e| self.dfa_error(e, loc, "multipleOf"))?;
        self.add_dfa(d, loc)
    }

    // ----- container formulas --------------------------------------------------------------

    fn expr(&mut self, node: NodeId, kind: Kind) -> Result<Expr, CompileError> {
        if let Some(e) = self.expr_memo.get(&(node, kind)) {
            return Ok(e.clone());
        }
        self.check_cycle((node, kind))?;
        self.in_progress.insert((node, kind));
        let r = self.expr_uncached(node, kind);
        self.in_progress.remove(&(node, kind));
        let e = r?;
        self.expr_memo.insert((node, kind), e.clone());
        Ok(e)
    }

    fn expr_uncached(&mut self, node: NodeId, kind: Kind) -> Result<Expr, CompileError> {
        let s = match self.node(node) {
            Node::True => return Ok(Expr::True),
            Node::False => return Ok(Expr::False),
            Node::Schema(s) => s.clone(),
        };
        if let Some(t) = s.types
            && !t.has(kind.type_bit())
        {
            return Ok(Expr::False);
        }
        let mut parts = Vec::new();
        if let Some(values) = &s.enum_values {
            let mut alts = Vec::new();
            for v in values.iter().filter(|v| value_kind(v) == Some(kind)) {
                let n = self.const_node(v, &s.loc)?;
                alts.push(self.expr(n, kind)?);
            }
            parts.push(or(alts));
        }
        match kind {
            Kind::Object => {
                if s.has_object_keywords() {
                    let spec = self.obj_spec(node, &s)?;
                    parts.push(Expr::Obj(spec));
                    let lits = self.obj_specs[spec as usize].lits.clone();
                    for (name, dep) in &s.dependent_schemas {
                        let lit = lits
                            .iter()
                            .position(|l| l == name)
                            .expect("dependent names are literals");
                        let d = self.expr(*dep, kind)?;
                        parts.push(or(vec![
                            Expr::Not(Box::new(Expr::KeySeen(spec, lit as u32))),
                            d,
                        ]));
                    }
                }
            }
            Kind::Array => {
                if s.has_array_keywords() {
                    parts.push(Expr::Arr(self.arr_spec(node, &s)?));
                }
            }
            _ => unreachable!("primitives have lexers"),
        }
        for &c in &s.all_of {
            parts.push(self.expr(c, kind)?);
        }
        for group in &s.any_of {
            let mut xs = Vec::new();
            for &c in group {
                xs.push(self.expr(c, kind)?);
            }
            parts.push(or(xs));
        }
        for group in &s.one_of {
            let mut xs = Vec::new();
            for &c in group {
                xs.push(self.expr(c, kind)?);
            }
            xs.retain(|x| *x != Expr::False);
            parts.push(match xs.len() {
                0 => Expr::False,
                1 => xs.pop().expect("one"),
                _ => Expr::OneOf(xs),
            });
        }
        for &c in &s.not {
            let e = self.expr(c, kind)?;
            parts.push(match e {
                Expr::True => Expr::False,
                Expr::False => Expr::True,
                e => Expr::Not(Box::new(e)),
            });
        }
        if let Some((i, t, e)) = s.conditional {
            let ie = self.expr(i, kind)?;
            let te = match t {
                Some(t) => self.expr(t, kind)?,
                None => Expr::True,
            };
            let ee = match e {
                Some(e) => self.expr(e, kind)?,
                None => Expr::True,
            };
            let ni = match ie.clone() {
                Expr::True => Expr::False,
                Expr::False => Expr::True,
                x => Expr::Not(Box::new(x)),
            };
            parts.push(or(vec![and(vec![ie, te]), and(vec![ni, ee])]));
        }
        Ok(and(parts))
    }

    /// A synthetic node accepting exactly `value` (for object and array `enum`/`const`).
    fn const_node(&mut self, value: &Value, loc: &str) -> Result<NodeId, CompileError> {
        let mut s = Schema {
            loc: loc.to_string(),
            ..Schema::default()
        };
        match value {
            Value::Object(m) => {
                s.types = Some(TypeSet(TypeSet::OBJECT));
                for (k, v) in m {
                    let n = self.const_node(v, loc)?;
                    s.properties.push((k.clone(), n));
                    s.required.push(k.clone());
                }
                s.additional_properties = Some(self.low.add_node(Node::False)?);
            }
            Value::Array(a) => {
                s.types = Some(TypeSet(TypeSet::ARRAY));
                for v in a {
                    s.prefix_items.push(self.const_node(v, loc)?);
                }
                s.items = Some(self.low.add_node(Node::False)?);
                s.min_items = a.len() as u64;
            }
            other => s.enum_values = Some(vec![other.clone()]),
        }
        self.low.add_node(Node::Schema(Box::new(s)))
    }

    /// A node that is the conjunction of `parts` (interned).
    fn conj(&mut self, mut parts: Vec<NodeId>) -> Result<Option<NodeId>, CompileError> {
        parts.sort();
        parts.dedup();
        parts.retain(|p| !matches!(self.node(*p), Node::True));
        if parts.iter().any(|p| matches!(self.node(*p), Node::False)) {
            return Ok(None);
        }
        if parts.len() == 1 {
            return Ok(Some(parts[0]));
        }
        if let Some(&n) = self.and_memo.get(&parts) {
            return Ok(Some(n));
        }
        let n = if parts.is_empty() {
            self.low.add_node(Node::True)?
        } else {
            let loc = self.loc(parts[0]);
            self.low.add_node(Node::Schema(Box::new(Schema {
                loc,
                all_of: parts.clone(),
                ..Schema::default()
            })))?
        };
        self.and_memo.insert(parts, n);
        Ok(Some(n))
    }

    fn obj_spec(&mut self, node: NodeId, s: &Schema) -> Result<u32, CompileError> {
        if let Some(&id) = self.obj_spec_memo.get(&node) {
            return Ok(id);
        }
        let loc = s.loc.clone();
        // Literal names: properties, then required and dependency names.
        let mut lits: Vec<String> = s.properties.iter().map(|(k, _)| k.clone()).collect();
        let add = |n: &String, lits: &mut Vec<String>| {
            if !lits.contains(n) {
                lits.push(n.clone());
            }
        };
        for r in &s.required {
            add(r, &mut lits);
        }
        for (n, deps) in &s.dependent_required {
            add(n, &mut lits);
            for d in deps {
                add(d, &mut lits);
            }
        }
        for (n, _) in &s.dependent_schemas {
            add(n, &mut lits);
        }
        // Patterns.
        let mut pat_res = Vec::new();
        for (p, _) in &s.pattern_properties {
            let re = ecma::pattern_language(p).map_err(|e| CompileError::Unsupported {
                keyword: "patternProperties".into(),
                pointer: loc.clone(),
                reason: format!("{e} in /{p}/"),
            })?;
            pat_res.push(re);
        }
        let pat_dfas: Vec<Arc<Dfa>> = {
            let mut v = Vec::new();
            for re in &pat_res {
                let id = self.regex_dfa(re, &loc)?;
                v.push(self.dfas[id as usize].clone());
            }
            v
        };
        let additional = s.additional_properties;
        let additional_allowed = !matches!(additional.map(|a| self.node(a)), Some(Node::False));
        // Member node per literal.
        let mut lit_member = Vec::with_capacity(lits.len());
        for name in &lits {
            let mut parts = Vec::new();
            let declared = s
                .properties
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, n)| *n);
            if let Some(n) = declared {
                parts.push(n);
            }
            let mut matched = false;
            for (i, d) in pat_dfas.iter().enumerate() {
                if d.accepts(name.as_bytes()) {
                    parts.push(s.pattern_properties[i].1);
                    matched = true;
                }
            }
            if declared.is_none()
                && !matched
                && let Some(a) = additional
            {
                parts.push(a);
            }
            lit_member.push(self.conj(parts)?);
        }
        // Key DFA: literals, patterns, catch-all.
        let mut res: Vec<String> = lits.iter().map(|l| regex_syntax::escape(l)).collect();
        res.extend(pat_res.iter().cloned());
        if additional_allowed {
            res.push("(?s:.*)".into());
        }
        let nlit = lits.len();
        let npat = pat_res.len();
        let mut key_dfa = if res.is_empty() {
            Dfa::empty()
        } else {
            let d = crate::dfa::cached_regexes(&res, self.limits())
                .map_err(|e| self.dfa_error(e, &loc, "property names"))?;
            Dfa::clone(&d)
        };
        if let Some(pn) = s.property_names {
            let pl = self.lang(pn, Kind::String)?;
            let pl = self.fold_len(pl, &loc)?;
            let pd = self.dfas[pl.dfa as usize].clone();
            key_dfa = key_dfa
                .intersect(&pd, self.limits())
                .map_err(|e| self.dfa_error(e, &loc, "propertyNames"))?;
        }
        // Member node per non-literal match set.
        let mut set_member = Vec::with_capacity(key_dfa.match_sets().len());
        for set in key_dfa.match_sets().to_vec() {
            if set.first().is_some_and(|&i| (i as usize) < nlit) {
                set_member.push(None);
                continue;
            }
            let pats: Vec<NodeId> = set
                .iter()
                .filter(|&&i| (i as usize) >= nlit && (i as usize) < nlit + npat)
                .map(|&i| s.pattern_properties[i as usize - nlit].1)
                .collect();
            let member = if pats.is_empty() {
                match additional {
                    Some(a) => self.conj(vec![a])?,
                    None => self.conj(vec![])?,
                }
            } else {
                self.conj(pats)?
            };
            set_member.push(member);
        }
        // Reachable outcomes per state.
        let words = (nlit + 1).div_ceil(64);
        let n = key_dfa.num_states();
        let mut reach = vec![0u64; n * words];
        let states: Vec<u32> = key_dfa.states().collect();
        for &st in &states[1..] {
            if let Some(set_id) = key_dfa.final_set_id(st) {
                let set = &key_dfa.match_sets()[set_id as usize];
                let i = key_dfa.index(st);
                match set.first().copied().filter(|&x| (x as usize) < nlit) {
                    Some(lit) => {
                        if lit_member[lit as usize].is_some() {
                            reach[i * words + lit as usize / 64] |= 1 << (lit % 64);
                        }
                    }
                    None => {
                        if set_member[set_id as usize].is_some() {
                            reach[i * words + nlit / 64] |= 1 << (nlit % 64);
                        }
                    }
                }
            }
        }
        let reps = key_dfa.class_reps();
        loop {
            let mut changed = false;
            for &st in states[1..].iter().rev() {
                let i = key_dfa.index(st);
                for &b in &reps {
                    let t = key_dfa.next(st, b);
                    if t == DEAD {
                        continue;
                    }
                    let j = key_dfa.index(t);
                    for w in 0..words {
                        let add = reach[j * words + w] & !reach[i * words + w];
                        if add != 0 {
                            reach[i * words + w] |= add;
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let lit_id = |name: &str| lits.iter().position(|l| l == name).expect("literal") as u32;
        let required = s.required.iter().map(|r| lit_id(r)).collect();
        let dependent_required = s
            .dependent_required
            .iter()
            .map(|(n, ds)| (lit_id(n), ds.iter().map(|d| lit_id(d)).collect()))
            .collect();
        let key_id = self.add_dfa(key_dfa, &loc)?;
        for m in lit_member.iter().chain(set_member.iter()).flatten() {
            self.pending.push(*m);
        }
        let spec = ObjSpec {
            key_dfa: key_id,
            // Nothing listed: every member comes "after the listed ones", in any order.
            listed: if s.any_order {
                0
            } else {
                s.properties.len() as u32
            },
            lits,
            lit_member,
            set_member,
            required,
            min_props: s.min_properties,
            max_props: s.max_properties,
            dependent_required,
            reach,
            reach_words: words,
            key_flags: LazyFlags::default(),
            key_budgets: LazyBudgets::default(),
        };
        self.obj_specs.push(spec);
        let id = self.obj_specs.len() as u32 - 1;
        self.obj_spec_memo.insert(node, id);
        Ok(id)
    }

    fn arr_spec(&mut self, node: NodeId, s: &Schema) -> Result<u32, CompileError> {
        if let Some(&id) = self.arr_spec_memo.get(&node) {
            return Ok(id);
        }
        let contains = s.contains;
        let min_contains = if contains.is_some() {
            s.min_contains.unwrap_or(1)
        } else {
            0
        };
        let max_contains = if contains.is_some() {
            s.max_contains
        } else {
            None
        };
        for n in s
            .prefix_items
            .iter()
            .chain(s.items.iter())
            .chain(contains.iter())
        {
            self.pending.push(*n);
        }
        let spec = ArrSpec {
            prefix: s.prefix_items.clone(),
            items: s.items,
            min_items: s.min_items,
            max_items: s.max_items,
            contains,
            min_contains,
            max_contains,
            contains_all: contains.is_some_and(|n| matches!(self.node(n), Node::True)),
            unique: s.unique_items,
        };
        self.arr_specs.push(spec);
        let id = self.arr_specs.len() as u32 - 1;
        self.arr_spec_memo.insert(node, id);
        Ok(id)
    }

    fn program(&mut self, e: Expr) -> Option<u32> {
        if e == Expr::False {
            return None;
        }
        let mut p = Program::default();
        // `positive`: reached through `And` and `Or` alone, so that the formula can only lose
        // documents when the leaf does.
        fn flatten(e: &Expr, p: &mut Program, obj_leaf: &mut HashMap<u32, u32>, positive: bool) {
            match e {
                Expr::True => p.ops.push(Op::True),
                Expr::False => p.ops.push(Op::False),
                Expr::Obj(s) => {
                    let i = p.leaves.len() as u32;
                    p.leaves.push(LeafSpec::Object(*s));
                    p.positive.push(positive);
                    obj_leaf.entry(*s).or_insert(i);
                    p.ops.push(Op::Leaf(i));
                }
                Expr::Arr(s) => {
                    p.leaves.push(LeafSpec::Array(*s));
                    p.positive.push(positive);
                    p.ops.push(Op::Leaf(p.leaves.len() as u32 - 1));
                }
                Expr::KeySeen(s, lit) => {
                    let leaf = obj_leaf[s];
                    p.leaves.push(LeafSpec::KeySeen { leaf, lit: *lit });
                    p.positive.push(false);
                    p.ops.push(Op::Leaf(p.leaves.len() as u32 - 1));
                }
                Expr::And(xs) | Expr::Or(xs) | Expr::OneOf(xs) => {
                    let positive = positive && !matches!(e, Expr::OneOf(_));
                    for x in xs {
                        flatten(x, p, obj_leaf, positive);
                    }
                    let n = xs.len() as u32;
                    p.ops.push(match e {
                        Expr::And(_) => Op::And(n),
                        Expr::Or(_) => Op::Or(n),
                        _ => Op::OneOf(n),
                    });
                }
                Expr::Not(x) => {
                    flatten(x, p, obj_leaf, false);
                    p.ops.push(Op::Not);
                }
            }
        }
        let mut obj_leaf = HashMap::default();
        flatten(&e, &mut p, &mut obj_leaf, true);
        p.all_essential = match &e {
            Expr::True | Expr::Obj(_) | Expr::Arr(_) => true,
            Expr::And(xs) => xs.iter().all(|x| matches!(x, Expr::Obj(_) | Expr::Arr(_))),
            _ => false,
        };
        // Alternatives of single object leaves: each leaf's order restricts only its own
        // alternative, so the union of the alternatives' ordered languages is exact.
        fn alternatives_of_objects(e: &Expr) -> bool {
            match e {
                Expr::Obj(_) => true,
                Expr::Or(xs) => xs.iter().all(alternatives_of_objects),
                _ => false,
            }
        }
        p.ordered = self.options.property_order == crate::PropertyOrder::Schema
            && alternatives_of_objects(&e);
        self.programs.push(p);
        Some(self.programs.len() as u32 - 1)
    }

    fn lexer(&mut self, l: Lang) -> LexerId {
        if self.is_empty(&l) {
            return EMPTY_LEXER;
        }
        self.lexers.push(Lexer {
            dfa: l.dfa,
            min_len: l.min,
            max_len: l.max,
            check: l.check.map(Arc::new),
        });
        self.lexers.len() as LexerId - 1
    }

    /// Builds the template of `node` and of every node reachable from it as a value.
    pub fn build_templates(&mut self, root: NodeId) -> Result<(), CompileError> {
        self.pending.push(root);
        while let Some(n) = self.pending.pop() {
            if self.templates.contains_key(&n) {
                continue;
            }
            let mut lexers = [EMPTY_LEXER; 4];
            for kind in Kind::ALL {
                if kind.is_primitive() {
                    let l = self.lang(n, kind)?;
                    lexers[kind as usize] = self.lexer(l);
                }
            }
            let ae = self.expr(n, Kind::Array)?;
            let array = self.program(ae);
            let oe = self.expr(n, Kind::Object)?;
            let object = self.program(oe);
            self.templates.insert(
                n,
                ValueTemplate {
                    lexers,
                    array,
                    object,
                },
            );
        }
        let t = self.templates[&root];
        if t.lexers.iter().all(|&l| l == EMPTY_LEXER) && t.array.is_none() && t.object.is_none() {
            return Err(CompileError::Unsatisfiable {
                pointer: self.loc(root),
                reason: self.unsatisfiable_reason(root),
            });
        }
        Ok(())
    }

    /// Why no value is valid under `node`, as far as its own keywords tell.
    fn unsatisfiable_reason(&self, node: NodeId) -> String {
        let s = match self.node(node) {
            Node::True => return "no value is valid under it".into(),
            Node::False => return "the schema `false` accepts no value".into(),
            Node::Schema(s) => s,
        };
        let mut why = Vec::new();
        if s.not.iter().any(|&n| matches!(self.node(n), Node::True)) {
            why.push("`not` holds a schema every value satisfies".to_string());
        }
        if s.types.is_some_and(|t| t.0 == 0) {
            why.push("`type` lists no type".into());
        }
        let (lo, hi) = (tightest(&s.lower, true), tightest(&s.upper, false));
        if let (Some(l), Some(h)) = (&lo, &hi)
            && no_value_between(l, h)
        {
            why.push(format!(
                "no number lies between the lower bound {} and the upper bound {}",
                l.value, h.value
            ));
        }
        if s.max_length.is_some_and(|m| m < s.min_length) {
            why.push("`minLength` is above `maxLength`".into());
        }
        if s.max_items.is_some_and(|m| m < s.min_items) {
            why.push("`minItems` is above `maxItems`".into());
        }
        if s.max_properties.is_some_and(|m| m < s.min_properties) {
            why.push("`minProperties` is above `maxProperties`".into());
        }
        let generic = why.is_empty();
        if generic {
            why.push(
                "its keywords (with `type`, `enum`, `allOf`, `anyOf`, `oneOf`, `not` and \
                 `if`) rule out every value of every type"
                    .into(),
            );
        }
        let n = self.options.numbers;
        let numbers = s
            .types
            .is_none_or(|t| t.has(TypeSet::NUMBER) || t.has(TypeSet::INTEGER));
        if generic && numbers && (n.max_int_digits.is_some() || n.max_frac_digits.is_some()) {
            why.push(format!(
                "numbers are limited to {} integer and {} fraction digits",
                n.max_int_digits.map_or("any".into(), |d| d.to_string()),
                n.max_frac_digits.map_or("any".into(), |d| d.to_string()),
            ));
        }
        format!("no JSON value is valid under it: {}", why.join("; "))
    }

    pub(crate) fn canonical_id(&self) -> DfaId {
        self.canonical
    }

    pub(crate) fn universe_id(&self, i: usize) -> DfaId {
        self.universe[i]
    }

    pub(crate) fn literal_syntax_id(&mut self) -> Result<DfaId, CompileError> {
        self.regex_dfa("true|false|null", "#")
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

/// Splits a canonical decimal string into (integer coefficient, k) with value = coef * 10^-k.
fn split_decimal(canon: &str) -> Option<(u64, u64)> {
    let d: Decimal = canon.parse().ok()?;
    let plain = d.to_plain_string_within(64)?;
    let (int, frac) = match plain.split_once('.') {
        Some((i, f)) => (i.to_string(), f.to_string()),
        None => (plain.clone(), String::new()),
    };
    let digits = format!("{int}{frac}");
    let coef: u64 = digits.trim_start_matches('0').parse().unwrap_or(0);
    if coef == 0 {
        return None;
    }
    Some((coef, frac.len() as u64))
}
