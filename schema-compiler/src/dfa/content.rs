//! Per-state facts about string content, computed on first use: which content levels a DFA
//! state takes whatever they are ([`Dfa::string_flags`]) and how many code points of a level a
//! bounded repetition still allows ([`Dfa::string_budget`]), in tables shared between threads
//! ([`LazyTable`]).

use super::levels::{CONTENT_LEVELS, ContentFlags, NONSPACE_LEVEL, SPACE_LEVEL, level_universe};
use super::{DEAD, Dfa};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU16, AtomicU32, Ordering};

/// Most (state, UTF-8 state) pairs [`Dfa::string_flags`] explores for one state; beyond it the
/// state reports no flags (which only turns a fast path off).
const UNIVERSALITY_MAX_PAIRS: usize = 100_000;

/// Set in a [`LazyFlags`] entry once it is computed.
const KNOWN: u16 = 0x8000;

/// [`LazyFlags`] bits of [`ContentFlags::space_live`] and [`ContentFlags::space_free`].
const SPACE_LIVE: u16 = 0x40;

const SPACE_FREE: u16 = 0x80;

/// [`LazyFlags`] bits of [`ContentFlags::nonspace_live`] and [`ContentFlags::nonspace_free`].
const NONSPACE_LIVE: u16 = 0x100;

const NONSPACE_FREE: u16 = 0x200;

/// Per content level, the bytes [`Dfa::level_reps`] found, each list found on first use. A
/// clone starts empty, as a [`LazyTable`] does.
#[derive(Default)]
pub(crate) struct LazyReps([OnceLock<Box<[u8]>>; NONSPACE_LEVEL as usize + 1]);

impl Clone for LazyReps {
    fn clone(&self) -> Self {
        LazyReps::default()
    }
}

impl std::fmt::Debug for LazyReps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LazyReps")
    }
}

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

impl Dfa {
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
                nonspace_live: known & NONSPACE_LIVE != 0,
                nonspace_free: known & NONSPACE_FREE != 0,
            };
        }
        let mut flags = ContentFlags::default();
        // The states the search at the top level met at a character boundary: when `state`
        // takes every content there, so does each of them (what they reach, it reaches).
        let mut met = Vec::new();
        for level in (0..CONTENT_LEVELS).rev() {
            let need_live = flags.live == 0;
            // Each level of the chain holds the ones after it: a state some content of the
            // narrowest level kills is killed at every level, and most states a character kills
            // (those of a format or a pattern) are, so the narrowest is tried right after the
            // widest fails.
            if need_live
                && level == CONTENT_LEVELS - 2
                && !self.search_string_flags(state, 0, true, &alive, None).0
            {
                break;
            }
            let boundary = (level == CONTENT_LEVELS - 1).then_some(&mut met);
            let (live, free) = self.search_string_flags(state, level, need_live, &alive, boundary);
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
        // A level beside the chain, inside chain level `within` and holding chain level
        // `holds`: taken (live, and free) where `within` is, searched for where only `holds` is.
        let (chain_live, chain_free) = (flags.live, flags.free);
        let side = |level: u8, within: u8, holds: u8| {
            if chain_live > within {
                (true, chain_free > within)
            } else if chain_live > holds {
                let (live, free) = self.search_string_flags(state, level, true, &alive, None);
                (live, live && free && want_free)
            } else {
                (false, false)
            }
        };
        (flags.space_live, flags.space_free) = side(SPACE_LEVEL, 2, 0);
        (flags.nonspace_live, flags.nonspace_free) = side(NONSPACE_LEVEL, 3, 1);
        let bit = |on: bool, bit: u16| if on { bit } else { 0 };
        let bits = flags.live as u16
            | (flags.free as u16) << 3
            | bit(flags.space_live, SPACE_LIVE)
            | bit(flags.space_free, SPACE_FREE)
            | bit(flags.nonspace_live, NONSPACE_LIVE)
            | bit(flags.nonspace_free, NONSPACE_FREE);
        slot.store(bits | KNOWN, Ordering::Relaxed);
        // Where `state` takes every content at the top level (and also stays accepting, if
        // that is asked), the states met take it too, and nothing about them is left to look
        // for at lower levels: their flags are the same.
        if flags.live == CONTENT_LEVELS && (!want_free || flags.free == CONTENT_LEVELS) {
            for s in met {
                table[self.index(s)].store(bits | KNOWN, Ordering::Relaxed);
            }
        }
        flags
    }

    /// Whether every content of `level` keeps `state` live, and whether also accepting
    /// (only looked for when `need_live` is false or the state is universal). When both are
    /// looked for and `state` is live, the states reached at a character boundary are added
    /// to `boundary`.
    fn search_string_flags(
        &self,
        state: u32,
        level: u8,
        need_live: bool,
        alive: impl Fn(u32) -> bool,
        boundary: Option<&mut Vec<u32>>,
    ) -> (bool, bool) {
        let u = level_universe(level);
        let reps = self.level_reps(level);
        let mut free = self.is_final(state);
        let mut seen: rustc_hash::FxHashSet<(u32, u32)> = rustc_hash::FxHashSet::default();
        let start = (state, u.start);
        seen.insert(start);
        let mut stack = vec![start];
        while let Some((s, us)) = stack.pop() {
            for &b in reps {
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
        if let Some(out) = boundary {
            let start = u.start;
            out.extend(
                seen.iter()
                    .filter(|p| p.1 == start && p.0 != state)
                    .map(|p| p.0),
            );
        }
        (true, free)
    }

    /// One byte per pair of classes of this DFA and the universe of `level` (see
    /// [`level_universe`]), found once per DFA and level: the searches of every state of a key
    /// or string lexer step through these bytes only.
    fn level_reps(&self, level: u8) -> &[u8] {
        self.reps.0[level.min(NONSPACE_LEVEL) as usize]
            .get_or_init(|| self.joint_reps(level_universe(level)).into())
    }

    /// One byte per pair of classes of this DFA and `other`.
    fn joint_reps(&self, other: &Dfa) -> Vec<u8> {
        // A bit per pair of classes (a hash set of pairs cost more than the pairs' search).
        let width = other.stride as usize;
        let mut seen = vec![0u64; (self.stride as usize * width).div_ceil(64)];
        let mut reps = Vec::new();
        for b in 0..=255u8 {
            let pair =
                self.classes[b as usize] as usize * width + other.classes[b as usize] as usize;
            let (word, bit) = (pair / 64, 1u64 << (pair % 64));
            if seen[word] & bit == 0 {
                seen[word] |= bit;
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
        let n = NONSPACE_LEVEL as usize + 1;
        let table = table.0.get_or_init(|| {
            (0..self.num_states() * n)
                .map(|_| AtomicU32::new(0))
                .collect()
        });
        let slot = &table[self.index(state) * n + level.min(NONSPACE_LEVEL) as usize];
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
        let reps = self.level_reps(level);
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
                    for &b in reps {
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
}
