//! The run-time tables of a grammar: what the matcher reads, and nothing the builder needs only
//! while compiling.
//!
//! A value's [`Kind`] picks a [`Lexer`] (primitive values) or a [`Program`] (objects and arrays)
//! from the node's [`ValueTemplate`]; a program is a postfix formula ([`Op`]) over leaves
//! ([`LeafSpec`]), each leaf the object keywords ([`ObjSpec`]) or array keywords ([`ArrSpec`]) of
//! one schema. DFAs and lexers are referred to by index ([`DfaId`], [`LexerId`]).

use crate::dfa::{CONTENT_LEVELS, ContentFlags, Dfa, LazyBudgets, LazyFlags};
use crate::ir::NodeId;
use crate::text::decimal::Decimal;
use std::sync::Arc;

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
    pub const fn of_first_byte(b: u8) -> Option<Kind> {
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
    /// Member node per literal; `None`: the key is not allowed (its schema, or the
    /// conjunction of the schemas that apply to it, takes no value).
    pub lit_member: Vec<Option<NodeId>>,
    /// Member node per key-DFA match set id for non-literal keys; `None`: not allowed.
    pub set_member: Vec<Option<NodeId>>,
    /// Literal ids that must be present.
    pub required: Vec<u32>,
    /// Some required literal cannot be written (derived from `required` and `reach`, kept up
    /// to date with them by [`ObjSpec::note_reach`]).
    pub(crate) required_unwritable: bool,
    /// Most keys an object can have, when only literals can be written (derived from `reach`
    /// too); `None` when some other key can.
    pub(crate) keys_at_most: Option<u64>,
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
    /// No object meets the spec, whatever its members.
    pub(crate) fn meets_no_value(&self) -> bool {
        self.required_unwritable
            || self.max_props.is_some_and(|m| m < self.min_props)
            || self.keys_at_most.is_some_and(|m| m < self.min_props)
    }

    /// Sets what `reach` decides for a whole object, from the key DFA's start state (index
    /// `key_start`): whether some required literal cannot be written (its member takes no
    /// value, or `propertyNames` refuses its name), and how many keys can be, when only
    /// literals can.
    pub(crate) fn note_reach(&mut self, key_start: usize) {
        let reach = &self.reach[key_start * self.reach_words..][..self.reach_words];
        let has = |i: usize| reach[i / 64] >> (i % 64) & 1 != 0;
        self.required_unwritable = self.required.iter().any(|&r| !has(r as usize));
        let nlit = self.lits.len();
        self.keys_at_most = (!has(nlit)).then(|| (0..nlit).filter(|&i| has(i)).count() as u64);
    }

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
    /// `maxItems`, lowered to the first item position no value can be written at (a `false`
    /// in `prefixItems`, `items: false` after them, the end of a `const` array) and, under
    /// `uniqueItems`, to the prefix plus the number of values `items` allows when that is
    /// finite: the matcher refuses the `,` that would announce such an item.
    pub max_items: Option<u64>,
    pub contains: Option<NodeId>,
    pub min_contains: u64,
    pub max_contains: Option<u64>,
    /// `contains` accepts every value: each item counts as soon as it starts.
    pub contains_all: bool,
    pub unique: bool,
}

impl ArrSpec {
    /// No array meets the spec, whatever its items: its bounds on items or on the items
    /// `contains` matches leave no count.
    pub(crate) fn meets_no_value(&self) -> bool {
        self.max_items
            .is_some_and(|m| m < self.min_items || m < self.min_contains)
            || self.max_contains.is_some_and(|m| m < self.min_contains)
    }

    /// The item count from which every further item of the array is read alike: past the
    /// prefix, `minItems` and `maxItems` (one more item than `maxItems` fails it, as any
    /// number more does). The matcher's state keys count items only up to it.
    pub(crate) fn count_cap(&self) -> u32 {
        let cap = (self.prefix.len() as u64)
            .max(self.min_items)
            .max(self.max_items.map_or(0, |m| m.saturating_add(1)));
        u32::try_from(cap).unwrap_or(u32::MAX)
    }

    /// As [`ArrSpec::count_cap`], for the items that matched `contains`: `minContains` and one
    /// more than `maxContains`.
    pub(crate) fn contains_cap(&self) -> u32 {
        let cap = self
            .min_contains
            .max(self.max_contains.map_or(0, |m| m.saturating_add(1)));
        u32::try_from(cap).unwrap_or(u32::MAX)
    }
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

impl ValueTemplate {
    /// No value of any kind can be written under it.
    pub(crate) fn takes_no_value(&self) -> bool {
        self.lexers.iter().all(|&l| l == EMPTY_LEXER)
            && self.array.is_none()
            && self.object.is_none()
    }
}
