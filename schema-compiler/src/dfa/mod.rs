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
//! measures, per state, how many code points a completion needs at least (for length bounds).//!
//! | file | what it owns |
//! | --- | --- |
//! | `mod.rs` | the [`Dfa`] tables and their run-time queries (transitions, acceptance, distances) |
//! | `build.rs` | building: regexes, literals, products, minimization, the regex cache |
//! | `levels.rs` | the levels of string content ([`CONTENT_LEVELS`], [`SPACE_LEVEL`]) |
//! | `content.rs` | per-state content flags and budgets, computed on first use |

mod build;
mod content;
mod levels;
#[cfg(test)]
mod tests;

pub use build::{
    ANY_STRING, cached_names, cached_regex, cached_regex_with, cached_regexes, utf8_universe,
};
pub(crate) use content::{LazyBudgets, LazyFlags, LazyReps};
pub use levels::{
    CONTENT_LEVELS, ContentFlags, PLAIN_LEVEL, SPACE_LEVEL, content_level_allows, is_unicode_space,
    level_is_plain, level_universe,
};

use std::sync::OnceLock;
use std::time::Instant;

/// The dead state; its row maps every class back to itself.
pub const DEAD: u32 = 0;

/// No string leads to acceptance; see [`Dfa::co_distance`].
pub const NO_PATH: u32 = u32::MAX;

/// Sentinel in [`Dfa::finals`] for a state that does not accept at the end of input.
const NO_MATCH: u32 = u32::MAX;

/// Size limits applied while building and combining DFAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DfaLimits {
    /// Maximum number of states of one DFA (after pruning), and of the NFA a regex is
    /// compiled to before determinization.
    pub max_states: usize,
    /// Memory budget handed to `regex-automata` for the NFA and determinization, in bytes.
    pub regex_bytes: usize,
    /// When building must stop ([`DfaError::Deadline`]); `None`: no time limit.
    pub deadline: Option<Instant>,
}

impl Default for DfaLimits {
    fn default() -> Self {
        DfaLimits {
            max_states: 200_000,
            regex_bytes: 64 << 20,
            deadline: None,
        }
    }
}

impl DfaLimits {
    /// `Err(DfaError::Deadline)` once the deadline has passed.
    pub fn check_deadline(&self) -> Result<(), DfaError> {
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(DfaError::Deadline),
            _ => Ok(()),
        }
    }
}

/// How many states a loop builds between two looks at the clock.
const DEADLINE_STRIDE: usize = 256;

/// Why a DFA could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DfaError {
    /// The regex did not parse or could not be compiled to a DFA.
    Regex(String),
    /// A size limit was hit; the string names it.
    Limit(String),
    /// [`DfaLimits::deadline`] passed.
    Deadline,
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
    /// Computed on first use: see [`Dfa::ascii_only`].
    ascii_only: OnceLock<bool>,
    /// Per content level, computed on first use: a byte per pair of this DFA's class and the
    /// level's (see `Dfa::level_reps`).
    reps: LazyReps,
}

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

    /// The equivalence class of `byte`: bytes of one class lead every state to the same state.
    #[inline]
    pub fn class_of(&self, byte: u8) -> u8 {
        self.classes[byte as usize]
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

    /// How many byte strings the DFA accepts, or `None` when they are unbounded (see
    /// [`count_strings`]). Saturates at `u64::MAX`.
    pub fn language_size(&self) -> Option<u64> {
        let reps = self.class_reps();
        let mut class_size = vec![0u64; self.stride as usize];
        for b in 0..=255u8 {
            class_size[self.classes[b as usize] as usize] += 1;
        }
        count_strings(
            self.start,
            |s, out| {
                out.extend(
                    reps.iter()
                        .map(|&rep| (self.next(s, rep), class_size[self.class_of(rep) as usize])),
                )
            },
            |s| s == DEAD,
            |s| self.is_final(s),
        )
    }

    /// As [`Dfa::language_size`], for the strings over `bytes` that both this DFA and `other`
    /// accept.
    pub fn language_size_within(&self, other: &Dfa, bytes: &[u8]) -> Option<u64> {
        count_strings(
            (self.start, other.start),
            |(a, b), out| {
                out.extend(
                    bytes
                        .iter()
                        .map(|&byte| ((self.next(a, byte), other.next(b, byte)), 1)),
                )
            },
            |(a, b)| a == DEAD || b == DEAD,
            |(a, b)| self.is_final(a) && other.is_final(b),
        )
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

    /// Whether every byte from 0x80 up leads every state to the dead state: the DFA takes
    /// ASCII alone, so any other code point kills it at its first byte.
    pub fn ascii_only(&self) -> bool {
        *self.ascii_only.get_or_init(|| {
            let mut high = [false; 256];
            for b in 0x80..=0xFFu8 {
                high[self.classes[b as usize] as usize] = true;
            }
            self.trans.chunks(self.stride as usize).all(|row| {
                row.iter()
                    .enumerate()
                    .all(|(c, &to)| !high[c] || to == DEAD)
            })
        })
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

/// The number of paths from `start` to an accepting state in a graph given by `successors`
/// (each edge with how many strings it stands for), or `None` when there are unboundedly many:
/// a cycle lies on some path to an accepting state (or the graph has more than
/// `COUNT_STATES` states). Cycles that lead to no accepting state do not count. Without
/// recursion.
fn count_strings<K: Copy + Eq + std::hash::Hash>(
    start: K,
    successors: impl Fn(K, &mut Vec<(K, u64)>),
    dead: impl Fn(K) -> bool,
    accepting: impl Fn(K) -> bool,
) -> Option<u64> {
    const COUNT_STATES: usize = 1 << 16;
    if dead(start) {
        return Some(0);
    }
    // The states reached from `start`, numbered, and their edges.
    let mut index: rustc_hash::FxHashMap<K, u32> = Default::default();
    let mut states = vec![start];
    let mut edges: Vec<Vec<(u32, u64)>> = Vec::new();
    index.insert(start, 0);
    let mut next = Vec::new();
    while edges.len() < states.len() {
        let state = states[edges.len()];
        next.clear();
        successors(state, &mut next);
        let mut out = Vec::with_capacity(next.len());
        for &(t, strings) in next.iter().filter(|&&(t, _)| !dead(t)) {
            let n = states.len() as u32;
            let i = *index.entry(t).or_insert_with(|| {
                states.push(t);
                n
            });
            out.push((i, strings));
        }
        edges.push(out);
        if states.len() > COUNT_STATES {
            return None;
        }
    }
    // The states from which an accepting state is reached.
    let n = states.len();
    let mut into: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (from, out) in edges.iter().enumerate() {
        for &(to, _) in out {
            into[to as usize].push(from as u32);
        }
    }
    let mut live = vec![false; n];
    let mut queue: Vec<u32> = (0..n as u32)
        .filter(|&i| accepting(states[i as usize]))
        .collect();
    for &i in &queue {
        live[i as usize] = true;
    }
    while let Some(t) = queue.pop() {
        for &s in &into[t as usize] {
            if !live[s as usize] {
                live[s as usize] = true;
                queue.push(s);
            }
        }
    }
    if !live[0] {
        return Some(0);
    }
    // Depth first over the live states: a state met again while open closes a cycle.
    let mut count: Vec<Option<u64>> = vec![None; n];
    let mut open = vec![false; n];
    let mut stack = vec![(0u32, 0usize)];
    open[0] = true;
    while let Some(top) = stack.last_mut() {
        let (state, followed) = (top.0 as usize, top.1);
        if let Some(&(t, _)) = edges[state].get(followed) {
            top.1 += 1;
            let t = t as usize;
            if !live[t] || count[t].is_some() {
                continue;
            }
            if open[t] {
                return None;
            }
            open[t] = true;
            stack.push((t as u32, 0));
            continue;
        }
        let mut total = u64::from(accepting(states[state]));
        for &(t, strings) in &edges[state] {
            if let Some(below) = count[t as usize] {
                total = total.saturating_add(below.saturating_mul(strings));
            }
        }
        count[state] = Some(total);
        open[state] = false;
        stack.pop();
    }
    count[0]
}
