//! Byte-level DFAs for lexemes: built from regexes by `regex-automata`, then owned here.
//!
//! `regex-automata` parses a regex and determinizes it; [`Dfa::from_regexes`] then copies the
//! reachable part of its transition table into our own dense table, keeping only states from
//! which a match is still reachable. Every non-dead state of a [`Dfa`] is therefore *live*: a
//! prefix survives exactly when some continuation completes it. That is what lets the mask kernel
//! prune a token the moment its bytes leave the language, and it is why lexemes never lead a
//! model into a dead end.
//!
//! Acceptance is checked at the end of the lexeme ([`Dfa::final_set`]), which is how the
//! end-of-input transition of `regex-automata` (needed for `$` and `\b`) is folded in. A state
//! accepts with a *match set*: the sorted ids of the patterns that match, so one DFA can tell
//! which property names and `patternProperties` a key matched.
//!
//! On top of that, this module combines DFAs (intersection, union, difference), minimizes them and
//! measures, per state, how many code points a completion needs at least (for length bounds).

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicU16, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use regex_automata::dfa::{Automaton, dense};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Anchored, MatchKind, util::start};

/// The dead state; its row maps every class back to itself.
pub const DEAD: u32 = 0;
/// No string leads to acceptance; see [`Dfa::co_distance`].
pub const NO_PATH: u32 = u32::MAX;

/// Sentinel in [`Dfa::finals`] for a state that does not accept at the end of input.
const NO_MATCH: u32 = u32::MAX;

/// Size limits applied while building and combining DFAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DfaLimits {
    /// Maximum number of states of one DFA (after pruning).
    pub max_states: usize,
    /// Memory budget handed to `regex-automata` for the NFA and determinization, in bytes.
    pub regex_bytes: usize,
}

impl Default for DfaLimits {
    fn default() -> Self {
        DfaLimits {
            max_states: 200_000,
            regex_bytes: 64 << 20,
        }
    }
}

/// Why a DFA could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DfaError {
    /// The regex did not parse or could not be compiled to a DFA.
    Regex(String),
    /// A size limit was hit; the string names it.
    Limit(String),
}

/// A complete DFA over bytes, with every non-dead state live.
#[derive(Clone)]
pub struct Dfa {
    /// Byte to equivalence class.
    classes: [u8; 256],
    /// Number of classes; state ids are premultiplied by it.
    stride: u32,
    /// `trans[s + class]` is the premultiplied next state of premultiplied state `s`.
    trans: Vec<u32>,
    /// Per state index: index into `match_sets`, or `NO_MATCH`.
    finals: Vec<u32>,
    /// Distinct sets of pattern ids that accept.
    match_sets: Vec<Box<[u32]>>,
    /// Premultiplied start state (may be `DEAD` for an empty language).
    start: u32,
    /// Per state index, each computed on first use: [`ContentFlags`] (see
    /// [`Dfa::string_flags`]).
    univ: LazyFlags,
    /// Per state index and level, each computed on first use: the exact content budget (see
    /// [`Dfa::string_budget`]).
    budgets: LazyBudgets,
    /// Per state index, computed on first use: a byte on a shortest path to acceptance.
    toward: OnceLock<Box<[Option<u8>]>>,
}

// The levels of string content are defined once, beside the recognizer trait, for the mask
// kernel to precompute the tokens of the same levels this crate's DFAs take.
pub(crate) use recognizer::{
    CONTENT_LEVELS, SPACE_LEVEL, UNICODE_SPACES, content_level_allows, level_is_plain,
};

/// The DFA of every content of `level` (see [`CONTENT_LEVELS`]): UTF-8 text of the level's
/// characters, accepting at character boundaries. Built once per process.
pub fn level_universe(level: u8) -> &'static Dfa {
    const N: usize = SPACE_LEVEL as usize + 1;
    static LEVELS: [OnceLock<Dfa>; N] = [const { OnceLock::new() }; N];
    if level != SPACE_LEVEL && level + 1 >= CONTENT_LEVELS {
        return utf8_universe();
    }
    LEVELS[level as usize].get_or_init(|| {
        // Non-ASCII characters are all alike to the levels but for the Unicode spaces.
        let mut ranges: Vec<(u32, u32)> = (0..0x80u8)
            .filter(|&b| content_level_allows(level, b as char))
            .map(|b| (b as u32, b as u32))
            .collect();
        if content_level_allows(level, '\u{80}') {
            let mut lo = 0x80;
            let spaces = if content_level_allows(level, '\u{a0}') {
                &[][..]
            } else {
                &UNICODE_SPACES[..]
            };
            for &(a, b) in spaces {
                if (a as u32) > lo {
                    ranges.push((lo, a as u32 - 1));
                }
                lo = lo.max(b as u32 + 1);
            }
            ranges.push((lo, char::MAX as u32));
        }
        let class: String = ranges
            .iter()
            .map(|(lo, hi)| format!("\\x{{{lo:x}}}-\\x{{{hi:x}}}"))
            .collect();
        Dfa::from_regex(&format!("(?s:[{class}]*)"), DfaLimits::default())
            .expect("a character class of the level")
    })
}

/// How much string content a DFA state takes (see [`Dfa::string_flags`]): every content of a
/// level below `live` keeps the state live, every content of a level below `free` keeps it
/// live and accepting (`free <= live`; 0: none); likewise for [`SPACE_LEVEL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContentFlags {
    /// One past the highest level that keeps the state live.
    pub live: u8,
    /// One past the highest level that keeps the state live and accepting.
    pub free: u8,
    /// Every content of [`SPACE_LEVEL`] keeps the state live.
    pub space_live: bool,
    /// Every content of [`SPACE_LEVEL`] keeps the state live and accepting (computed only
    /// where `free` is).
    pub space_free: bool,
}

impl ContentFlags {
    /// Whether every content of `level` keeps the state live.
    pub fn live_at(&self, level: u8) -> bool {
        if level == SPACE_LEVEL {
            self.space_live
        } else {
            self.live > level
        }
    }

    /// Whether every content of `level` keeps the state live and accepting.
    pub fn free_at(&self, level: u8) -> bool {
        if level == SPACE_LEVEL {
            self.space_free
        } else {
            self.free > level
        }
    }
}

/// Most (state, UTF-8 state) pairs [`Dfa::string_flags`] explores for one state; beyond it the
/// state reports no flags (which only turns a fast path off).
const UNIVERSALITY_MAX_PAIRS: usize = 100_000;

/// Set in a [`LazyFlags`] entry once it is computed.
const KNOWN: u16 = 0x8000;

/// [`LazyFlags`] bits of [`ContentFlags::space_live`] and [`ContentFlags::space_free`].
const SPACE_LIVE: u16 = 0x40;
const SPACE_FREE: u16 = 0x80;

/// A per-state table filled in on first use, shareable between threads (a DFA lives in a
/// grammar many sessions use at once). A clone starts empty.
pub(crate) struct LazyTable<T>(OnceLock<Box<[T]>>);

impl<T> Default for LazyTable<T> {
    fn default() -> Self {
        LazyTable(OnceLock::new())
    }
}

impl<T> std::fmt::Debug for LazyTable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LazyTable")
    }
}

impl<T> Clone for LazyTable<T> {
    fn clone(&self) -> Self {
        LazyTable::default()
    }
}

/// Per-state [`ContentFlags`], with [`KNOWN`] set once computed.
pub(crate) type LazyFlags = LazyTable<AtomicU16>;

/// Per-state, per-level content budgets (0: not yet known, else [`NO_BUDGET`] or the budget
/// plus one).
pub(crate) type LazyBudgets = LazyTable<AtomicU32>;

/// Most code points [`Dfa::string_budget`] counts before it gives up.
const BUDGET_MAX: u32 = 4096;

/// A [`LazyBudgets`] entry for a state and level without an exact budget.
const NO_BUDGET: u32 = u32::MAX;

impl std::fmt::Debug for Dfa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dfa")
            .field("states", &self.num_states())
            .field("classes", &self.stride)
            .field("match_sets", &self.match_sets.len())
            .finish()
    }
}

impl Dfa {
    /// Builds a DFA accepting exactly the byte strings that fully match one of `patterns`
    /// (regex-syntax syntax, Unicode mode). Pattern `i` reports id `i` in match sets.
    pub fn from_regexes<S: AsRef<str>>(patterns: &[S], limits: DfaLimits) -> Result<Dfa, DfaError> {
        let anchored: Vec<String> = patterns
            .iter()
            .map(|p| format!(r"\A(?:{})\z", p.as_ref()))
            .collect();
        let dfa = dense::Builder::new()
            .syntax(syntax::Config::new().unicode(true).utf8(true))
            .thompson(thompson::Config::new().nfa_size_limit(Some(limits.regex_bytes)))
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::All)
                    .start_kind(regex_automata::dfa::StartKind::Anchored)
                    .unicode_word_boundary(false)
                    .accelerate(false)
                    .specialize_start_states(false)
                    .dfa_size_limit(Some(limits.regex_bytes))
                    .determinize_size_limit(Some(limits.regex_bytes)),
            )
            .build_many(&anchored)
            .map_err(|e| {
                let msg = e.to_string();
                if msg.contains("exceeded") || msg.contains("too big") || msg.contains("limit") {
                    DfaError::Limit(format!("regex automaton over {} bytes", limits.regex_bytes))
                } else {
                    DfaError::Regex(msg)
                }
            })?;
        Self::import(&dfa, limits)
    }

    /// Builds a DFA from one pattern.
    pub fn from_regex(pattern: &str, limits: DfaLimits) -> Result<Dfa, DfaError> {
        Self::from_regexes(&[pattern], limits)
    }

    /// A DFA accepting exactly the given byte strings, string `i` reporting id `i`.
    pub fn from_literals<B: AsRef<[u8]>>(
        literals: &[B],
        limits: DfaLimits,
    ) -> Result<Dfa, DfaError> {
        // A trie is already deterministic; build it directly (no regex escaping pitfalls with
        // non-UTF-8 bytes, and linear time for large enums).
        let mut classes = [0u8; 256];
        let mut next_class = 1u16;
        for lit in literals {
            for &byte in lit.as_ref() {
                if classes[byte as usize] == 0 {
                    if next_class > 255 {
                        // All 255 non-zero classes used: fall back to one class per byte.
                        for (i, c) in classes.iter_mut().enumerate() {
                            *c = i as u8;
                        }
                        break;
                    }
                    classes[byte as usize] = next_class as u8;
                    next_class += 1;
                }
            }
        }
        let mut b = RawBuilder::new(classes);
        let root = b.add_state();
        for (i, lit) in literals.iter().enumerate() {
            let mut s = root;
            for &byte in lit.as_ref() {
                let c = classes[byte as usize] as usize;
                s = match b.get(s, c) {
                    usize::MAX => {
                        if b.accept.len() >= limits.max_states {
                            return Err(DfaError::Limit(format!(
                                "more than {} lexer states",
                                limits.max_states
                            )));
                        }
                        let t = b.add_state();
                        b.set(s, c, t);
                        t
                    }
                    t => t,
                };
            }
            b.accept[s].push(i as u32);
        }
        b.finish(root, limits)
    }

    /// Builds a DFA by exploring states of type `S` from `start`: `next(s, byte)` is the
    /// successor (or `None`), `accepts(s)` says whether `s` accepts at end of input (pattern 0).
    /// Only bytes in `alphabet` are tried; all others lead to the dead state.
    pub fn from_fn<S: Clone + Eq + std::hash::Hash>(
        start: S,
        alphabet: &[u8],
        next: impl Fn(&S, u8) -> Option<S>,
        accepts: impl Fn(&S) -> bool,
        limits: DfaLimits,
    ) -> Result<Dfa, DfaError> {
        let mut classes = [0u8; 256];
        for (i, &b) in alphabet.iter().enumerate() {
            classes[b as usize] = (i + 1) as u8;
        }
        let mut raw = RawBuilder::new(classes);
        let mut ids: HashMap<S, usize> = HashMap::default();
        let mut states = vec![start.clone()];
        ids.insert(start, raw.add_state());
        let mut i = 0;
        while i < states.len() {
            let s = states[i].clone();
            if accepts(&s) {
                raw.accept[i].push(0);
            }
            for &b in alphabet {
                if let Some(t) = next(&s, b) {
                    let id = match ids.get(&t) {
                        Some(&id) => id,
                        None => {
                            if states.len() >= limits.max_states {
                                return Err(DfaError::Limit(format!(
                                    "more than {} lexer states",
                                    limits.max_states
                                )));
                            }
                            let id = raw.add_state();
                            ids.insert(t.clone(), id);
                            states.push(t);
                            id
                        }
                    };
                    raw.set(i, classes[b as usize] as usize, id);
                }
            }
            i += 1;
        }
        Ok(raw.finish(0, limits)?.minimize())
    }

    /// Copies the reachable, live part of a `regex-automata` DFA.
    fn import(dfa: &dense::DFA<Vec<u32>>, limits: DfaLimits) -> Result<Dfa, DfaError> {
        let cfg = start::Config::new().anchored(Anchored::Yes);
        let start = dfa
            .start_state(&cfg)
            .map_err(|e| DfaError::Regex(format!("start state: {e}")))?;
        let bc = dfa.byte_classes();
        let mut classes = [0u8; 256];
        for (byte, c) in classes.iter_mut().enumerate() {
            *c = bc.get(byte as u8);
        }
        let reps: Vec<u8> = bc
            .representatives(0..=255)
            .filter_map(|u| u.as_u8())
            .collect();
        let mut b = RawBuilder::new(classes);
        let mut ids: HashMap<regex_automata::util::primitives::StateID, usize> = HashMap::default();
        let mut queue = vec![start];
        ids.insert(start, b.add_state());
        while let Some(sid) = queue.pop() {
            let me = ids[&sid];
            let eoi = dfa.next_eoi_state(sid);
            if dfa.is_match_state(eoi) {
                for i in 0..dfa.match_len(eoi) {
                    b.accept[me].push(dfa.match_pattern(eoi, i).as_u32());
                }
            }
            for &rep in &reps {
                let next = dfa.next_state(sid, rep);
                if dfa.is_dead_state(next) || dfa.is_quit_state(next) {
                    continue;
                }
                let t = match ids.entry(next) {
                    Entry::Occupied(o) => *o.get(),
                    Entry::Vacant(v) => {
                        if b.accept.len() >= limits.max_states {
                            return Err(DfaError::Limit(format!(
                                "more than {} lexer states",
                                limits.max_states
                            )));
                        }
                        queue.push(next);
                        *v.insert(b.add_state())
                    }
                };
                b.set(me, classes[rep as usize] as usize, t);
            }
        }
        let d = b.finish(0, limits)?;
        Ok(if d.num_states() <= 5_000 {
            d.minimize()
        } else {
            d
        })
    }

    /// The premultiplied start state; [`DEAD`] when the language is empty.
    #[inline]
    pub fn start(&self) -> u32 {
        self.start
    }

    /// The next state after `byte`; [`DEAD`] when no completion remains.
    #[inline(always)]
    pub fn next(&self, state: u32, byte: u8) -> u32 {
        let i = state as usize + self.classes[byte as usize] as usize;
        debug_assert!(i < self.trans.len());
        self.trans[i]
    }

    /// Runs the DFA over `bytes` from `state`.
    pub fn run(&self, mut state: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            state = self.next(state, b);
            if state == DEAD {
                break;
            }
        }
        state
    }

    /// The match set of `state` at the end of input, if it accepts there.
    #[inline]
    pub fn final_set(&self, state: u32) -> Option<&[u32]> {
        let f = self.finals[(state / self.stride) as usize];
        (f != NO_MATCH).then(|| &*self.match_sets[f as usize])
    }

    /// Whether no byte continues from `state`: a lexeme there cannot grow.
    pub fn is_terminal(&self, state: u32) -> bool {
        let s = state as usize;
        self.trans[s..s + self.stride as usize]
            .iter()
            .all(|&t| t == DEAD)
    }

    /// Whether `state` accepts at the end of input.
    #[inline]
    pub fn is_final(&self, state: u32) -> bool {
        self.finals[(state / self.stride) as usize] != NO_MATCH
    }

    /// Index of the match set of `state` at end of input (stable ids for [`Dfa::match_sets`]).
    pub fn final_set_id(&self, state: u32) -> Option<u32> {
        let f = self.finals[(state / self.stride) as usize];
        (f != NO_MATCH).then_some(f)
    }

    /// All distinct match sets, indexed by [`Dfa::final_set_id`].
    pub fn match_sets(&self) -> &[Box<[u32]>] {
        &self.match_sets
    }

    /// The index of `state` (states are premultiplied), below [`Dfa::num_states`].
    #[inline]
    pub fn state_index(&self, state: u32) -> usize {
        (state / self.stride) as usize
    }

    /// For the pairs of states the two DFAs reach together, fed the same bytes from their
    /// starts: the length of the shortest string over `bytes` that takes both to an accepting
    /// state, or [`NO_PATH`] where none does. Entry `i * other.num_states() + j` is for this
    /// DFA's state index `i` and `other`'s `j` (see [`Dfa::state_index`]); pairs never reached
    /// together hold [`NO_PATH`].
    ///
    /// Only the pairs reachable from the two starts are explored, so the cost follows the
    /// product's reachable part rather than its full size.
    pub fn co_distance(&self, other: &Dfa, bytes: &[u8]) -> Vec<u32> {
        let m = other.num_states();
        let index = |s: u32, t: u32| self.state_index(s) * m + other.state_index(t);
        let mut dist = vec![NO_PATH; self.num_states() * m];
        let start = (self.start(), other.start());
        if start.0 == DEAD || start.1 == DEAD {
            return dist;
        }
        let mut seen = vec![false; dist.len()];
        seen[index(start.0, start.1)] = true;
        let mut stack = vec![start];
        let mut queue = std::collections::VecDeque::new();
        // (target, source) for every edge between reachable pairs.
        let mut edges: Vec<(u32, u32)> = Vec::new();
        while let Some((s, t)) = stack.pop() {
            let here = index(s, t);
            if self.is_final(s) && other.is_final(t) {
                dist[here] = 0;
                queue.push_back(here);
            }
            for &b in bytes {
                let (s2, t2) = (self.next(s, b), other.next(t, b));
                if s2 == DEAD || t2 == DEAD {
                    continue;
                }
                let there = index(s2, t2);
                edges.push((there as u32, here as u32));
                if !seen[there] {
                    seen[there] = true;
                    stack.push((s2, t2));
                }
            }
        }
        edges.sort_unstable();
        while let Some(p) = queue.pop_front() {
            let from = edges.partition_point(|&(to, _)| (to as usize) < p);
            for &(to, source) in &edges[from..] {
                if to as usize != p {
                    break;
                }
                if dist[source as usize] == NO_PATH {
                    dist[source as usize] = dist[p] + 1;
                    queue.push_back(source as usize);
                }
            }
        }
        dist
    }

    /// Number of states, the dead state included.
    pub fn num_states(&self) -> usize {
        self.finals.len()
    }

    /// Heap memory in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.trans.len() * 4
            + self.finals.len() * 4
            + self
                .match_sets
                .iter()
                .map(|m| m.len() * 4 + 16)
                .sum::<usize>()
    }

    /// Premultiplied ids of all states (dead first).
    pub fn states(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.finals.len() as u32).map(move |i| i * self.stride)
    }

    /// Dense index of a premultiplied state id.
    #[inline]
    pub fn index(&self, state: u32) -> usize {
        (state / self.stride) as usize
    }

    /// Whether the language is empty.
    pub fn is_empty(&self) -> bool {
        self.start == DEAD
    }

    /// One representative byte per class, in increasing byte order.
    pub fn class_reps(&self) -> Vec<u8> {
        let mut seen = vec![false; self.stride as usize];
        let mut reps = Vec::new();
        for b in 0..=255u8 {
            let c = self.classes[b as usize] as usize;
            if !seen[c] {
                seen[c] = true;
                reps.push(b);
            }
        }
        reps
    }

    /// Combines two DFAs state by state.
    ///
    /// `a_sink`/`b_sink`: whether a side's dead state keeps the product alive (as a rejecting
    /// sink) instead of killing it. `accept` decides a product state's match set from the sides'
    /// sets. Only live product states are kept.
    fn product(
        a: &Dfa,
        b: &Dfa,
        a_sink: bool,
        b_sink: bool,
        accept: impl Fn(Option<&[u32]>, Option<&[u32]>) -> Option<Vec<u32>>,
        limits: DfaLimits,
    ) -> Result<Dfa, DfaError> {
        // Joint byte classes.
        let mut joint: HashMap<(u8, u8), u8> = HashMap::default();
        let mut classes = [0u8; 256];
        let mut reps: Vec<u8> = Vec::new();
        for byte in 0..=255u8 {
            let key = (a.classes[byte as usize], b.classes[byte as usize]);
            let len = joint.len();
            classes[byte as usize] = *joint.entry(key).or_insert_with(|| {
                reps.push(byte);
                len as u8
            });
        }
        let mut raw = RawBuilder::new(classes);
        let mut ids: HashMap<(u32, u32), usize> = HashMap::default();
        let start = (a.start, b.start);
        let alive = |p: (u32, u32)| {
            (p.0 != DEAD || a_sink) && (p.1 != DEAD || b_sink) && !(p.0 == DEAD && p.1 == DEAD)
        };
        if !alive(start) {
            return Ok(Dfa::empty());
        }
        ids.insert(start, raw.add_state());
        let mut queue = vec![start];
        while let Some(p) = queue.pop() {
            let me = ids[&p];
            let fa = if p.0 == DEAD { None } else { a.final_set(p.0) };
            let fb = if p.1 == DEAD { None } else { b.final_set(p.1) };
            if let Some(set) = accept(fa, fb) {
                raw.accept[me] = set;
            }
            for (c, &rep) in reps.iter().enumerate() {
                let q = (a.next(p.0, rep), b.next(p.1, rep));
                if !alive(q) {
                    continue;
                }
                let t = match ids.entry(q) {
                    Entry::Occupied(o) => *o.get(),
                    Entry::Vacant(v) => {
                        if raw.accept.len() >= limits.max_states {
                            return Err(DfaError::Limit(format!(
                                "more than {} lexer states in a combined lexeme",
                                limits.max_states
                            )));
                        }
                        queue.push(q);
                        *v.insert(raw.add_state())
                    }
                };
                raw.set(me, c, t);
            }
        }
        let d = raw.finish(0, limits)?;
        Ok(d.minimize())
    }

    /// Strings in both languages; match sets come from `self`.
    pub fn intersect(&self, other: &Dfa, limits: DfaLimits) -> Result<Dfa, DfaError> {
        Self::product(
            self,
            other,
            false,
            false,
            |x, y| y.and(x).map(<[u32]>::to_vec),
            limits,
        )
    }

    /// Strings in either language; match set `{0}`.
    pub fn union(&self, other: &Dfa, limits: DfaLimits) -> Result<Dfa, DfaError> {
        Self::product(
            self,
            other,
            true,
            true,
            |x, y| (x.is_some() || y.is_some()).then(|| vec![0]),
            limits,
        )
    }

    /// Strings in `self` but not in `other`; match sets from `self`.
    pub fn difference(&self, other: &Dfa, limits: DfaLimits) -> Result<Dfa, DfaError> {
        Self::product(
            self,
            other,
            false,
            true,
            |x, y| {
                if y.is_some() {
                    None
                } else {
                    x.map(<[u32]>::to_vec)
                }
            },
            limits,
        )
    }

    /// The empty language.
    pub fn empty() -> Dfa {
        Dfa {
            classes: [0; 256],
            stride: 1,
            trans: vec![DEAD],
            finals: vec![NO_MATCH],
            match_sets: Vec::new(),
            start: DEAD,
            univ: LazyFlags::default(),
            budgets: LazyBudgets::default(),
            toward: OnceLock::new(),
        }
    }

    /// Merges equivalent states (Moore's partition refinement). Match sets must agree.
    pub fn minimize(self) -> Dfa {
        let n = self.finals.len();
        if n <= 2 {
            return self;
        }
        let stride = self.stride as usize;
        let width = stride + 1;
        // Initial blocks: the dead state alone, then one block per final set.
        let mut block: Vec<u32> = (0..n)
            .map(|i| {
                if i == 0 {
                    0
                } else {
                    self.finals[i].wrapping_add(2)
                }
            })
            .collect();
        let mut nblocks = {
            let mut b = block.clone();
            b.sort_unstable();
            b.dedup();
            b.len()
        };
        let mut sig = vec![0u32; n * width];
        let mut order: Vec<usize> = (0..n).collect();
        loop {
            for i in 0..n {
                let row = &mut sig[i * width..(i + 1) * width];
                row[0] = block[i];
                for c in 0..stride {
                    row[c + 1] = block[(self.trans[i * stride + c] / self.stride) as usize];
                }
            }
            order.sort_unstable_by(|&x, &y| {
                sig[x * width..(x + 1) * width].cmp(&sig[y * width..(y + 1) * width])
            });
            let mut next = vec![0u32; n];
            let mut count = 0u32;
            for (k, &i) in order.iter().enumerate() {
                if k > 0 {
                    let prev = order[k - 1];
                    if sig[prev * width..(prev + 1) * width] != sig[i * width..(i + 1) * width] {
                        count += 1;
                    }
                }
                next[i] = count;
            }
            let count = count as usize + 1;
            block = next;
            if count == nblocks {
                break;
            }
            nblocks = count;
        }
        if nblocks == n {
            return self;
        }
        // Renumber so the dead state's block is 0, others in order of first appearance.
        let dead_block = block[0];
        let mut renum = vec![u32::MAX; nblocks];
        renum[dead_block as usize] = 0;
        let mut next = 1;
        for &bl in &block {
            if renum[bl as usize] == u32::MAX {
                renum[bl as usize] = next;
                next += 1;
            }
        }
        let m = nblocks;
        let mut trans = vec![0u32; m * stride];
        let mut finals = vec![NO_MATCH; m];
        for i in 0..n {
            let nb = renum[block[i] as usize] as usize;
            finals[nb] = self.finals[i];
            for c in 0..stride {
                let t = renum[block[(self.trans[i * stride + c] / self.stride) as usize] as usize];
                trans[nb * stride + c] = t * self.stride;
            }
        }
        let start = renum[block[(self.start / self.stride) as usize] as usize] * self.stride;
        Dfa {
            classes: self.classes,
            stride: self.stride,
            trans,
            finals,
            match_sets: self.match_sets,
            start,
            univ: LazyFlags::default(),
            budgets: LazyBudgets::default(),
            toward: OnceLock::new(),
        }
    }

    /// Per state index: the fewest code points a completion needs to accept (`u32::MAX` for the
    /// dead state). A code point is counted at its first byte.
    pub fn min_chars_to_final(&self) -> Vec<u32> {
        let n = self.finals.len();
        let reps = self.class_reps();
        // Reverse edges with 0/1 weights.
        let mut rev: Vec<Vec<(u32, u8)>> = vec![Vec::new(); n];
        for i in 1..n {
            for &rep in &reps {
                let t = self.trans[i * self.stride as usize + self.classes[rep as usize] as usize];
                if t != DEAD {
                    let w = u8::from(!(0x80..0xC0).contains(&rep));
                    rev[(t / self.stride) as usize].push((i as u32, w));
                }
            }
        }
        let mut dist = vec![u32::MAX; n];
        let mut deque = std::collections::VecDeque::new();
        for (i, &f) in self.finals.iter().enumerate() {
            if i != 0 && f != NO_MATCH {
                dist[i] = 0;
                deque.push_back(i);
            }
        }
        while let Some(t) = deque.pop_front() {
            let d = dist[t];
            for &(s, w) in &rev[t] {
                let nd = d + w as u32;
                if nd < dist[s as usize] {
                    dist[s as usize] = nd;
                    if w == 0 {
                        deque.push_front(s as usize);
                    } else {
                        deque.push_back(s as usize);
                    }
                }
            }
        }
        dist
    }

    /// Whether every live state accepts and every live state can be extended without bound.
    /// Such a language (like "any string" or `[a-z]*`) is closed under prefixes, so a length
    /// bound can be checked on its own.
    pub fn is_prefix_closed(&self) -> bool {
        (1..self.finals.len()).all(|i| self.finals[i] != NO_MATCH)
    }

    /// How much string content `state` takes, computed once per state.
    ///
    /// At a level (see [`CONTENT_LEVELS`]) a state is universal when every content of that
    /// level read from it (valid UTF-8 ending on a character boundary) keeps it live, and free
    /// when it also keeps it accepting. In such states the mask kernel can allow whole
    /// precomputed sets of tokens without walking the vocabulary.
    ///
    /// Each level is decided by a search of the (state, UTF-8 state) pairs reachable from the
    /// state that stops at the first dead one, so a state some character kills (most states of
    /// a format or a pattern) costs a few steps, not a pass over the whole DFA.
    pub fn string_flags(&self, state: u32) -> ContentFlags {
        self.content_flags(&self.univ, state, |_| true, true)
    }

    /// [`Dfa::string_flags`] with another notion of live (a state must also pass `alive`),
    /// kept in `table` (which must only ever be used with this DFA and the same `alive`). With
    /// `want_free` false only `live` is computed.
    pub(crate) fn content_flags(
        &self,
        table: &LazyFlags,
        state: u32,
        alive: impl Fn(u32) -> bool,
        want_free: bool,
    ) -> ContentFlags {
        if state == DEAD || !alive(state) {
            return ContentFlags::default();
        }
        let table = table
            .0
            .get_or_init(|| (0..self.num_states()).map(|_| AtomicU16::new(0)).collect());
        let slot = &table[self.index(state)];
        let known = slot.load(Ordering::Relaxed);
        if known & KNOWN != 0 {
            return ContentFlags {
                live: (known & 7) as u8,
                free: ((known >> 3) & 7) as u8,
                space_live: known & SPACE_LIVE != 0,
                space_free: known & SPACE_FREE != 0,
            };
        }
        let mut flags = ContentFlags::default();
        for level in (0..CONTENT_LEVELS).rev() {
            let need_live = flags.live == 0;
            let (live, free) = self.search_string_flags(state, level, need_live, &alive);
            if live && need_live {
                flags.live = level + 1;
                if !want_free {
                    break;
                }
            }
            if free {
                flags.free = level + 1;
                break;
            }
        }
        // The space level lies inside level 2 and holds level 0.
        if flags.live > 2 {
            flags.space_live = true;
            flags.space_free = flags.free > 2;
        } else if flags.live > 0 {
            let (live, free) = self.search_string_flags(state, SPACE_LEVEL, true, &alive);
            flags.space_live = live;
            flags.space_free = live && free && want_free;
        }
        let bits = flags.live as u16
            | (flags.free as u16) << 3
            | if flags.space_live { SPACE_LIVE } else { 0 }
            | if flags.space_free { SPACE_FREE } else { 0 };
        slot.store(bits | KNOWN, Ordering::Relaxed);
        flags
    }

    /// Whether every content of `level` keeps `state` live, and whether also accepting
    /// (only looked for when `need_live` is false or the state is universal).
    fn search_string_flags(
        &self,
        state: u32,
        level: u8,
        need_live: bool,
        alive: impl Fn(u32) -> bool,
    ) -> (bool, bool) {
        let u = level_universe(level);
        let reps = self.joint_reps(u);
        let mut free = self.is_final(state);
        let mut seen: rustc_hash::FxHashSet<(u32, u32)> = rustc_hash::FxHashSet::default();
        let start = (state, u.start);
        seen.insert(start);
        let mut stack = vec![start];
        while let Some((s, us)) = stack.pop() {
            for &b in &reps {
                let un = u.next(us, b);
                if un == DEAD {
                    continue;
                }
                let sn = self.next(s, b);
                if sn == DEAD || !alive(sn) {
                    return (false, false);
                }
                if free && u.is_final(un) && !self.is_final(sn) {
                    free = false;
                    if !need_live {
                        return (true, false);
                    }
                }
                if seen.insert((sn, un)) {
                    if seen.len() > UNIVERSALITY_MAX_PAIRS {
                        return (false, false);
                    }
                    stack.push((sn, un));
                }
            }
        }
        (true, free)
    }

    /// One byte per pair of classes of this DFA and `other`.
    fn joint_reps(&self, other: &Dfa) -> Vec<u8> {
        let mut reps = Vec::new();
        let mut joint = HashMap::default();
        for b in 0..=255u8 {
            let key = (self.classes[b as usize], other.classes[b as usize]);
            if let Entry::Vacant(e) = joint.entry(key) {
                e.insert(());
                reps.push(b);
            }
        }
        reps
    }

    /// The exact number of code points of `level` content (see [`CONTENT_LEVELS`]) that
    /// `state` takes, when there is one: every such content of at most that many code points
    /// keeps the state live, and every longer one kills it (already at the first byte of the
    /// character past the budget). Bounded repetitions give such budgets: after `k` characters
    /// of `^[a-z0-9]{1,64}$`, level 0 has a budget of `64 - k`. `None` for a state that is
    /// universal at the level (see [`Dfa::string_flags`]) or whose limit depends on the
    /// content. Computed once per state and level.
    pub fn string_budget(&self, state: u32, level: u8) -> Option<u32> {
        self.content_budget(&self.budgets, state, level, |_| true, |s| s == DEAD)
    }

    /// [`Dfa::string_budget`] where content survives into states that pass `alive` and dies
    /// into states that pass `dead` (a state may pass neither), kept in `table` (used only
    /// with this DFA and the same predicates).
    pub(crate) fn content_budget(
        &self,
        table: &LazyBudgets,
        state: u32,
        level: u8,
        alive: impl Fn(u32) -> bool,
        dead: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        if state == DEAD || !alive(state) {
            return None;
        }
        let n = SPACE_LEVEL as usize + 1;
        let table = table.0.get_or_init(|| {
            (0..self.num_states() * n)
                .map(|_| AtomicU32::new(0))
                .collect()
        });
        let slot = &table[self.index(state) * n + level.min(SPACE_LEVEL) as usize];
        match slot.load(Ordering::Relaxed) {
            0 => {}
            NO_BUDGET => return None,
            b => return Some(b - 1),
        }
        let found = self.search_budget(state, level, &alive, &dead);
        slot.store(found.map_or(NO_BUDGET, |b| b + 1), Ordering::Relaxed);
        found
    }

    /// Walks the content of `level` from `state` one character at a time, keeping the set of
    /// states reached after `k` characters, until some character leads out of `alive`: the
    /// budget is then `k` when every first byte of a character leads into `dead` from every
    /// state of the set.
    fn search_budget(
        &self,
        state: u32,
        level: u8,
        alive: impl Fn(u32) -> bool,
        dead: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        let u = level_universe(level);
        let reps = self.joint_reps(u);
        let mut layer = vec![state];
        let mut next = Vec::new();
        let mut in_next: rustc_hash::FxHashSet<u32> = rustc_hash::FxHashSet::default();
        let mut partial: rustc_hash::FxHashSet<(u32, u32)> = rustc_hash::FxHashSet::default();
        let mut stack = Vec::new();
        let mut work = 0usize;
        for k in 0..BUDGET_MAX {
            let mut some_die = false;
            let mut all_die = true;
            next.clear();
            in_next.clear();
            partial.clear();
            for &s in &layer {
                stack.push((s, u.start));
                while let Some((s1, us)) = stack.pop() {
                    let lead = us == u.start;
                    for &b in &reps {
                        let un = u.next(us, b);
                        if un == DEAD {
                            continue;
                        }
                        work += 1;
                        if work > UNIVERSALITY_MAX_PAIRS {
                            return None;
                        }
                        let sn = self.next(s1, b);
                        let lives = sn != DEAD && alive(sn);
                        if lead && (lives || !(sn == DEAD || dead(sn))) {
                            all_die = false;
                        }
                        if !lives {
                            some_die = true;
                        } else if u.is_final(un) {
                            if in_next.insert(sn) {
                                next.push(sn);
                            }
                        } else if partial.insert((sn, un)) {
                            stack.push((sn, un));
                        }
                    }
                }
            }
            if some_die {
                return all_die.then_some(k);
            }
            if next.is_empty() {
                return None;
            }
            std::mem::swap(&mut layer, &mut next);
        }
        None
    }

    /// A byte that starts a shortest path from `state` to acceptance (printable ASCII
    /// preferred), `None` when `state` accepts already or is dead.
    pub fn toward_final(&self, state: u32) -> Option<u8> {
        let table = self.toward.get_or_init(|| {
            let n = self.num_states();
            let mut dist = vec![u32::MAX; n];
            let mut rev: Vec<Vec<(u32, u8)>> = vec![Vec::new(); n];
            let reps = self.class_reps();
            for i in 1..n {
                let s = i as u32 * self.stride;
                for c in 0..self.stride as usize {
                    // Prefer a printable ASCII byte of the class, else its first byte.
                    let b = (0x20u8..0x7f)
                        .find(|&b| self.classes[b as usize] as usize == c)
                        .or_else(|| {
                            reps.iter()
                                .copied()
                                .find(|&b| self.classes[b as usize] as usize == c)
                        });
                    let Some(b) = b else { continue };
                    let t = self.next(s, b);
                    if t != DEAD {
                        rev[self.index(t)].push((i as u32, b));
                    }
                }
            }
            let mut queue = std::collections::VecDeque::new();
            for (i, d) in dist.iter_mut().enumerate().skip(1) {
                if self.finals[i] != NO_MATCH {
                    *d = 0;
                    queue.push_back(i);
                }
            }
            let mut best: Vec<Option<u8>> = vec![None; n];
            while let Some(t) = queue.pop_front() {
                for &(s, b) in &rev[t] {
                    let s = s as usize;
                    if dist[s] == u32::MAX {
                        dist[s] = dist[t] + 1;
                        best[s] = Some(b);
                        queue.push_back(s);
                    }
                }
            }
            best.into_boxed_slice()
        });
        table[self.index(state)]
    }

    /// Whether the DFA accepts `bytes`.
    pub fn accepts(&self, bytes: &[u8]) -> bool {
        let s = self.run(self.start, bytes);
        s != DEAD && self.is_final(s)
    }
}

/// The DFA of all valid UTF-8 strings (minimized: one state per character-boundary class).
pub fn utf8_universe() -> &'static Dfa {
    static U: OnceLock<Dfa> = OnceLock::new();
    U.get_or_init(|| Dfa::from_regex("(?s:.*)", DfaLimits::default()).expect("a valid regex"))
}

/// Total states kept by [`cached_regex`] before it starts over.
const CACHE_MAX_STATES: usize = 4_000_000;

/// [`Dfa::from_regex`] through a process-wide cache: formats and common patterns are
/// determinized once per process, whatever the schema.
pub fn cached_regex(pattern: &str, limits: DfaLimits) -> Result<Arc<Dfa>, DfaError> {
    cached_regexes(&[pattern], limits)
}

/// [`Dfa::from_regexes`] through the cache of [`cached_regex`] (the property names of an
/// object, which schemas repeat).
pub fn cached_regexes<S: AsRef<str>>(
    patterns: &[S],
    limits: DfaLimits,
) -> Result<Arc<Dfa>, DfaError> {
    type Cache = Mutex<(HashMap<(Vec<String>, DfaLimits), Arc<Dfa>>, usize)>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new((HashMap::default(), 0)));
    let key = (
        patterns.iter().map(|p| p.as_ref().to_owned()).collect(),
        limits,
    );
    if let Some(d) = cache.lock().unwrap_or_else(|e| e.into_inner()).0.get(&key) {
        return Ok(d.clone());
    }
    let d = Arc::new(Dfa::from_regexes(patterns, limits)?);
    let mut guard = cache.lock().unwrap_or_else(|e| e.into_inner());
    if guard.1 + d.num_states() > CACHE_MAX_STATES {
        guard.0.clear();
        guard.1 = 0;
    }
    guard.1 += d.num_states();
    guard.0.insert(key, d.clone());
    Ok(d)
}

/// A DFA under construction over given byte classes, then pruned and packed.
struct RawBuilder {
    classes: [u8; 256],
    nclasses: usize,
    /// Per state, `nclasses` targets (`usize::MAX` = dead).
    edges: Vec<usize>,
    accept: Vec<Vec<u32>>,
}

impl RawBuilder {
    fn new(classes: [u8; 256]) -> Self {
        let nclasses = classes.iter().copied().max().unwrap_or(0) as usize + 1;
        RawBuilder {
            classes,
            nclasses,
            edges: Vec::new(),
            accept: Vec::new(),
        }
    }

    fn add_state(&mut self) -> usize {
        self.edges
            .extend(std::iter::repeat_n(usize::MAX, self.nclasses));
        self.accept.push(Vec::new());
        self.accept.len() - 1
    }

    fn set(&mut self, from: usize, class: usize, to: usize) {
        self.edges[from * self.nclasses + class] = to;
    }

    fn get(&self, from: usize, class: usize) -> usize {
        self.edges[from * self.nclasses + class]
    }

    /// Prunes states that cannot reach acceptance or are unreachable, and packs.
    fn finish(self, start: usize, limits: DfaLimits) -> Result<Dfa, DfaError> {
        let n = self.accept.len();
        let k = self.nclasses;
        if n == 0 {
            return Ok(Dfa::empty());
        }
        // Co-reachability.
        let mut rev_start = vec![0usize; n + 1];
        for &t in &self.edges {
            if t != usize::MAX {
                rev_start[t + 1] += 1;
            }
        }
        for i in 0..n {
            rev_start[i + 1] += rev_start[i];
        }
        let mut fill = rev_start.clone();
        let mut rev = vec![0usize; rev_start[n]];
        for s in 0..n {
            for c in 0..k {
                let t = self.edges[s * k + c];
                if t != usize::MAX {
                    rev[fill[t]] = s;
                    fill[t] += 1;
                }
            }
        }
        let mut live = vec![false; n];
        let mut stack: Vec<usize> = (0..n).filter(|&s| !self.accept[s].is_empty()).collect();
        for &s in &stack {
            live[s] = true;
        }
        while let Some(t) = stack.pop() {
            for &s in &rev[rev_start[t]..rev_start[t + 1]] {
                if !live[s] {
                    live[s] = true;
                    stack.push(s);
                }
            }
        }
        if !live[start] {
            return Ok(Dfa::empty());
        }
        // Forward reachability from start over live states, numbering from 1 (0 = dead).
        let mut index = vec![0u32; n];
        let mut order = vec![start];
        index[start] = 1;
        let mut i = 0;
        while i < order.len() {
            let s = order[i];
            i += 1;
            for c in 0..k {
                let t = self.edges[s * k + c];
                if t != usize::MAX && live[t] && index[t] == 0 {
                    index[t] = order.len() as u32 + 1;
                    order.push(t);
                }
            }
        }
        if order.len() + 1 > limits.max_states {
            return Err(DfaError::Limit(format!(
                "more than {} lexer states",
                limits.max_states
            )));
        }
        let stride = k as u32;
        let m = order.len() + 1;
        let mut trans = vec![0u32; m * k];
        for (j, &s) in order.iter().enumerate() {
            for c in 0..k {
                let t = self.edges[s * k + c];
                if t != usize::MAX && live[t] {
                    trans[(j + 1) * k + c] = index[t] * stride;
                }
            }
        }
        let mut finals = vec![NO_MATCH; m];
        let mut sets: HashMap<Vec<u32>, u32> = HashMap::default();
        let mut match_sets = Vec::new();
        for (j, &s) in order.iter().enumerate() {
            if !self.accept[s].is_empty() {
                let mut set = self.accept[s].clone();
                set.sort_unstable();
                set.dedup();
                let id = *sets.entry(set.clone()).or_insert_with(|| {
                    match_sets.push(set.into_boxed_slice());
                    (match_sets.len() - 1) as u32
                });
                finals[j + 1] = id;
            }
        }
        Ok(Dfa {
            classes: self.classes,
            stride,
            trans,
            finals,
            match_sets,
            start: stride,
            univ: LazyFlags::default(),
            budgets: LazyBudgets::default(),
            toward: OnceLock::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn co_distance_counts_the_bytes_to_a_string_both_take() {
        let a = Dfa::from_regex(
            "0|-?[1-9][0-9]*(\\.[0-9]*[1-9])?|-?0\\.[0-9]*[1-9]",
            DfaLimits::default(),
        )
        .unwrap();
        let b = Dfa::from_regex("-?[0-9]+(\\.0*)?", DfaLimits::default()).unwrap();
        let d = a.co_distance(&b, b"-.0123456789");
        let at = |text: &[u8]| {
            let (s, t) = (a.run(a.start(), text), b.run(b.start(), text));
            d[a.state_index(s) * b.num_states() + b.state_index(t)]
        };
        assert_eq!(at(b"12"), 0);
        assert_eq!(at(b"-"), 1);
        assert_eq!(at(b""), 1);
        // After `-0`, `a` needs a point and a non-zero last digit, and `b` takes only zeros
        // after the point: no string both take.
        assert_eq!(at(b"-0"), NO_PATH);
        assert_eq!(at(b"-0."), NO_PATH);
    }

    #[test]
    fn each_level_universe_holds_exactly_the_characters_of_its_level() {
        for level in 0..CONTENT_LEVELS {
            let u = level_universe(level);
            assert!(u.accepts(b""));
            let mut buf = [0u8; 4];
            for c in char::MIN..=char::MAX {
                assert_eq!(
                    u.accepts(c.encode_utf8(&mut buf).as_bytes()),
                    content_level_allows(level, c),
                    "level {level}, character {c:?}"
                );
            }
        }
    }

    #[test]
    fn string_flags_name_the_highest_level_each_state_takes() {
        let flags = |pattern: &str, prefix: &[u8]| {
            let d = Dfa::from_regex(pattern, DfaLimits::default()).unwrap();
            let s = d.run(d.start(), prefix);
            let f = d.string_flags(s);
            (f.live, f.free)
        };
        // Any character, escapes included.
        assert_eq!(flags("(?s:.*)", b""), (6, 6));
        // No newline: every unescaped character.
        assert_eq!(flags("[^\\n]*", b""), (5, 5));
        assert_eq!(
            flags("[^\\n]+", b""),
            (5, 0),
            "empty content does not accept"
        );
        // ECMAScript patterns: `.` takes no line terminator (U+2028 and U+2029 among them),
        // `\s` holds the non-ASCII spaces the levels below 4 leave out.
        let ecma = |pattern: &str, prefix: &[u8]| {
            flags(
                &crate::text::ecma::pattern_language(pattern).unwrap(),
                prefix,
            )
        };
        assert_eq!(ecma("^.*$", b""), (4, 4));
        assert_eq!(ecma("^.+$", b""), (4, 0), "empty content does not accept");
        assert_eq!(ecma("^method\\..+$", b"method.x"), (4, 4));
        assert_eq!(
            ecma("^[^\\s]+$", b"a"),
            (2, 2),
            "letters, digits, non-ASCII"
        );
        assert_eq!(ecma("^\\S+$", b"a"), (2, 2));
        assert_eq!(ecma("^[^\\s/]+$", b"a"), (2, 2));
        assert_eq!(ecma("^[^\\s\\u0080-\\uffff]+$", b"a"), (1, 1), "ASCII only");
        // No space, no `/`: letters, digits and non-ASCII characters only.
        assert_eq!(flags(r"[^ /]+", b"a"), (2, 2));
        assert_eq!(flags(r"[^ /]+", b""), (2, 0));
        assert_eq!(flags("[a-z]+", b"a"), (0, 0), "no digits");
        assert_eq!(flags(r"\w+", b"a"), (1, 1), "ASCII letters and digits");
        assert_eq!(flags(r"\d{4}-\d{2}", b"20"), (0, 0));
        // A bounded repetition is universal while it has room.
        assert_eq!(flags(".{0,3}", b""), (0, 0), "four characters kill it");
        // The space level, beside level 1: ASCII letters, digits and the space.
        let space = |pattern: &str, prefix: &[u8]| {
            let d = Dfa::from_regex(
                &crate::text::ecma::pattern_language(pattern).unwrap(),
                DfaLimits::default(),
            )
            .unwrap();
            let f = d.string_flags(d.run(d.start(), prefix));
            (f.live, f.space_live, f.space_free)
        };
        assert_eq!(space("^[\\w\\s/.,:-]+$", b""), (1, true, false));
        assert_eq!(space("^[\\w\\s/.,:-]+$", b"a"), (1, true, true));
        assert_eq!(space("^[0-9a-zA-Z -_]*$", b""), (1, true, true));
        assert_eq!(space("^[a-z ]*$", b""), (0, false, false), "no digits");
        assert_eq!(space("^[^\\s]+$", b"a"), (2, false, false), "no space");
        assert_eq!(space("^.*$", b""), (4, true, true), "inside level 2");
    }

    #[test]
    fn bounded_repetitions_have_exact_budgets() {
        let budget = |pattern: &str, prefix: &[u8], level: u8| {
            let d = Dfa::from_regex(pattern, DfaLimits::default()).unwrap();
            d.string_budget(d.run(d.start(), prefix), level)
        };
        assert_eq!(budget("[0-9a-zA-Z_-]{1,255}", b"", 0), Some(255));
        assert_eq!(budget("[0-9a-zA-Z_-]{1,255}", b"ab", 0), Some(253));
        assert_eq!(
            budget("[0-9a-zA-Z_-]{1,255}", b"", 1),
            None,
            "é kills, a lives"
        );
        assert_eq!(
            budget("[0-9a-z]{0,4}", b"ab", 0),
            None,
            "uppercase kills, a lives"
        );
        assert_eq!(budget("[0-9a-zA-Z]{0,4}", b"abcd", 0), Some(0));
        assert_eq!(budget("[0-9a-zA-Z]*", b"", 0), None, "no limit");
        // Multi-byte characters count once; the budget holds at every level `.` takes.
        let ecma = crate::text::ecma::pattern_language("^.{2,5}$").unwrap();
        assert_eq!(budget(&ecma, "é".as_bytes(), 3), Some(4));
        assert_eq!(budget(&ecma, b"", 2), Some(5));
        assert_eq!(budget(&ecma, b"", 4), None, "U+2028 kills at once");
        // Content past the budget must die whatever it is: here `x` opens a longer tail.
        assert_eq!(budget("[0-9a-zA-Z]{0,3}|x[0-9a-zA-Z]*", b"", 0), None);
        assert_eq!(
            budget("(?:[0-9a-zA-Z]{2}){0,2}", b"", 0),
            Some(4),
            "live, if not accepting, up to four"
        );
    }

    use super::*;

    fn lim() -> DfaLimits {
        DfaLimits::default()
    }

    #[test]
    fn regex_full_match_and_liveness() {
        let d = Dfa::from_regex("ab+c", lim()).unwrap();
        assert!(d.accepts(b"abc"));
        assert!(d.accepts(b"abbbc"));
        assert!(!d.accepts(b"ab"));
        assert!(!d.accepts(b"abcx"));
        // Every surviving prefix is live.
        let s = d.run(d.start(), b"ab");
        assert_ne!(s, DEAD);
        assert_eq!(d.run(d.start(), b"ac"), DEAD);
        assert_eq!(d.run(d.start(), b"x"), DEAD);
    }

    #[test]
    fn anchors_and_word_boundaries_use_end_of_input() {
        let d = Dfa::from_regex(r"(?s:.*)(?-u:\b)foo(?-u:\b)(?s:.*)", lim()).unwrap();
        assert!(d.accepts(b"a foo b"));
        assert!(d.accepts(b"foo"));
        assert!(!d.accepts(b"afoo"));
        assert!(!d.accepts(b"foob"));
        let d = Dfa::from_regex(r"(?s:.*?)(?:^a|b$)(?s:.*)", lim()).unwrap();
        assert!(d.accepts(b"axx"));
        assert!(d.accepts(b"xxb"));
        assert!(!d.accepts(b"xax"));
    }

    #[test]
    fn unicode_dot_rejects_invalid_utf8() {
        let d = Dfa::from_regex("(?s:.*)", lim()).unwrap();
        assert!(d.accepts("héllo €".as_bytes()));
        assert!(!d.accepts(b"\xff"));
        assert!(!d.accepts(b"\xc3"));
        // A partial character is a live prefix.
        assert_ne!(d.run(d.start(), b"\xe2\x82"), DEAD);
        assert!(d.is_prefix_closed() || !d.is_final(d.run(d.start(), b"\xe2\x82")));
    }

    #[test]
    fn multi_pattern_match_sets() {
        let d = Dfa::from_regexes(&["foo", "f.*", "(?s:.*)"], lim()).unwrap();
        let s = d.run(d.start(), b"foo");
        assert_eq!(d.final_set(s), Some(&[0, 1, 2][..]));
        let s = d.run(d.start(), b"fa");
        assert_eq!(d.final_set(s), Some(&[1, 2][..]));
        let s = d.run(d.start(), b"x");
        assert_eq!(d.final_set(s), Some(&[2][..]));
    }

    #[test]
    fn literals_trie() {
        let d = Dfa::from_literals(&["a", "ab", "b"], lim()).unwrap();
        assert_eq!(d.final_set(d.run(d.start(), b"ab")), Some(&[1][..]));
        assert_eq!(d.final_set(d.run(d.start(), b"a")), Some(&[0][..]));
        assert_eq!(d.run(d.start(), b"c"), DEAD);
        let e = Dfa::from_literals::<&[u8]>(&[], lim()).unwrap();
        assert!(e.is_empty());
    }

    #[test]
    fn products() {
        let a = Dfa::from_regex("[a-z]+", lim()).unwrap();
        let b = Dfa::from_regex(".{2,3}", lim()).unwrap();
        let i = a.intersect(&b, lim()).unwrap();
        assert!(i.accepts(b"ab"));
        assert!(!i.accepts(b"a"));
        assert!(!i.accepts(b"abcd"));
        assert!(!i.accepts(b"A1"));
        let u = a.union(&b, lim()).unwrap();
        assert!(u.accepts(b"a"));
        assert!(u.accepts(b"A1"));
        assert!(!u.accepts(b"A"));
        let any = Dfa::from_regex("(?s:.*)", lim()).unwrap();
        let d = any.difference(&a, lim()).unwrap();
        assert!(d.accepts(b""));
        assert!(d.accepts(b"A"));
        assert!(d.accepts(b"ab1"));
        assert!(!d.accepts(b"ab"));
        assert!(!d.accepts(b"\xff"));
        // Empty intersection is the empty language.
        let x = Dfa::from_regex("x+", lim()).unwrap();
        assert!(
            x.intersect(&a.difference(&x, lim()).unwrap(), lim())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn min_chars() {
        let d = Dfa::from_regex("é{3}", lim()).unwrap();
        let dist = d.min_chars_to_final();
        assert_eq!(dist[d.index(d.start())], 3);
        let s = d.run(d.start(), "é".as_bytes());
        assert_eq!(dist[d.index(s)], 2);
        let s = d.run(d.start(), b"\xc3");
        assert_eq!(dist[d.index(s)], 2, "a started character counts as one");
    }

    #[test]
    fn minimize_merges() {
        let d = Dfa::from_regex("(a|b)c|(d|e)c", lim()).unwrap();
        let before = d.num_states();
        let m = d.clone().minimize();
        assert!(m.num_states() <= before);
        for w in [&b"ac"[..], b"ec", b"a", b"cc", b""] {
            assert_eq!(m.accepts(w), d.accepts(w));
        }
    }
}
