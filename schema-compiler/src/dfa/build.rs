//! Building DFAs: from regexes through `regex-automata` (importing the reachable, live part
//! of its table), from literals or a transition function, products (intersection, union,
//! difference), minimization, and the process-wide cache of regex DFAs.

use super::DEADLINE_STRIDE;
use super::content::{LazyBudgets, LazyFlags, LazyReps};
use super::{DEAD, Dfa, DfaError, DfaLimits, NO_MATCH};
use regex_automata::hybrid::{self, LazyStateID};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Anchored, MatchKind, util::start};
use rustc_hash::FxHashMap as HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex, OnceLock};

impl Dfa {
    /// Builds a DFA accepting exactly the byte strings that fully match one of `patterns`
    /// (regex-syntax syntax, Unicode mode). Pattern `i` reports id `i` in match sets.
    ///
    /// The patterns are compiled to one NFA, refused when it has more states than
    /// [`DfaLimits::max_states`] (its DFA would then very nearly always have more), and
    /// determinized state by state through `regex-automata`'s lazy DFA, so that the state
    /// limit, the memory budget and the deadline are checked as the DFA grows.
    pub fn from_regexes<S: AsRef<str>>(patterns: &[S], limits: DfaLimits) -> Result<Dfa, DfaError> {
        let anchored: Vec<String> = patterns
            .iter()
            .map(|p| format!(r"\A(?:{})\z", p.as_ref()))
            .collect();
        let too_big = |e: &dyn std::fmt::Display| {
            let msg = e.to_string();
            if msg.contains("exceeded") || msg.contains("too big") || msg.contains("limit") {
                DfaError::Limit(format!("regex automaton over {} bytes", limits.regex_bytes))
            } else {
                DfaError::Regex(msg)
            }
        };
        let nfa = thompson::Compiler::new()
            .syntax(syntax::Config::new().unicode(true).utf8(true))
            .configure(thompson::Config::new().nfa_size_limit(Some(limits.regex_bytes)))
            .build_many(&anchored)
            .map_err(|e| too_big(&e))?;
        if nfa.states().len() > limits.max_states {
            return Err(DfaError::Limit(format!(
                "the regex compiles to {} NFA states, more than {} lexer states",
                nfa.states().len(),
                limits.max_states
            )));
        }
        limits.check_deadline()?;
        let dfa = hybrid::dfa::Builder::new()
            .configure(
                hybrid::dfa::Config::new()
                    .match_kind(MatchKind::All)
                    .unicode_word_boundary(false)
                    .cache_capacity(limits.regex_bytes)
                    .skip_cache_capacity_check(true),
            )
            .build_from_nfa(nfa)
            .map_err(|e| too_big(&e))?;
        Self::explore(&dfa, limits)
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
                    Some(t) => t,
                    None => {
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
                };
            }
            b.accept[s].push(i as u32);
        }
        debug_assert_eq!(root, 0);
        // Every node of the trie is on the way to a literal's end.
        b.finish_all_live(limits)
    }

    /// The DFA of an object's property names: `names` (name `i` reports id `i`) and, with
    /// `any`, every valid UTF-8 string besides (reporting id `names.len()`, after a name's own
    /// id). The language and match sets of [`Dfa::from_regexes`] on the escaped names followed
    /// by `(?s:.*)`, built from a trie (and the product with [`utf8_universe`]) instead of by
    /// determinizing the alternation: linear in the names' bytes.
    pub fn from_names<S: AsRef<str>>(
        names: &[S],
        any: bool,
        limits: DfaLimits,
    ) -> Result<Dfa, DfaError> {
        let names: Vec<&[u8]> = names.iter().map(|n| n.as_ref().as_bytes()).collect();
        let trie = Dfa::from_literals(&names, limits)?;
        if !any {
            return Ok(trie.minimize());
        }
        let any_id = names.len() as u32;
        Self::product(
            &trie,
            utf8_universe(),
            true,
            true,
            |name, all| {
                let mut set = name.map(<[u32]>::to_vec).unwrap_or_default();
                if all.is_some() {
                    set.push(any_id);
                }
                (!set.is_empty()).then_some(set)
            },
            limits,
        )
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
                            if states.len().is_multiple_of(DEADLINE_STRIDE) {
                                limits.check_deadline()?;
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

    /// Determinizes the reachable part of a lazy DFA into a table, keeping its live states,
    /// and minimizes it.
    fn explore(dfa: &hybrid::dfa::DFA, limits: DfaLimits) -> Result<Dfa, DfaError> {
        let mut cache = hybrid::dfa::Cache::new(dfa);
        // A cleared cache would renumber the states seen so far: past the memory budget, stop.
        let over_budget = |states: usize| {
            DfaError::Limit(format!(
                "regex automaton over {} bytes ({states} states built)",
                limits.regex_bytes,
            ))
        };
        let cfg = start::Config::new().anchored(Anchored::Yes);
        let start = dfa
            .start_state(&mut cache, &cfg)
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
        let mut ids: HashMap<LazyStateID, usize> = HashMap::default();
        let mut queue = vec![start];
        ids.insert(start, b.add_state());
        while let Some(sid) = queue.pop() {
            let me = ids[&sid];
            if me.is_multiple_of(DEADLINE_STRIDE) {
                limits.check_deadline()?;
            }
            let eoi = dfa
                .next_eoi_state(&mut cache, sid)
                .map_err(|_| over_budget(b.accept.len()))?;
            if eoi.is_match() {
                for i in 0..dfa.match_len(&cache, eoi) {
                    b.accept[me].push(dfa.match_pattern(&cache, eoi, i).as_u32());
                }
            }
            for &rep in &reps {
                let next = dfa
                    .next_state(&mut cache, sid, rep)
                    .map_err(|_| over_budget(b.accept.len()))?;
                if cache.clear_count() > 0 {
                    return Err(over_budget(b.accept.len()));
                }
                if next.is_dead() || next.is_quit() {
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
            if cache.clear_count() > 0 {
                return Err(over_budget(b.accept.len()));
            }
        }
        Ok(b.finish(0, limits)?.minimize())
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
        let (classes, reps) = joint_classes(&[a, b]);
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
                        raw.room_for_a_state(&limits)?;
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
        self.edit_match_sets(
            other,
            |set, seen| if seen { Vec::new() } else { set.to_vec() },
            limits,
        )
    }

    /// The strings of `self` with their match sets edited by whether `other` accepts them:
    /// `edit(set, in_other)` is the new match set, and an empty one matches nothing.
    pub fn edit_match_sets(
        &self,
        other: &Dfa,
        edit: impl Fn(&[u32], bool) -> Vec<u32>,
        limits: DfaLimits,
    ) -> Result<Dfa, DfaError> {
        Self::product(
            self,
            other,
            false,
            true,
            |x, y| {
                let set = edit(x?, y.is_some());
                (!set.is_empty()).then_some(set)
            },
            limits,
        )
    }

    /// The strings that exactly one of `alternatives` accepts (and `within`, where given,
    /// accepts too); match set `{0}`. An alternative takes the strings that all its DFAs take
    /// (a language and its length bounds, say). See [`Dfa::count_product`].
    pub fn exactly_one(
        alternatives: &[&[&Dfa]],
        within: Option<&Dfa>,
        budget: usize,
        limits: DfaLimits,
    ) -> Result<Option<Dfa>, DfaError> {
        Self::count_product(alternatives, within, |n| n == 1, budget, limits)
    }

    /// The strings that some of `alternatives` accepts; match set `{0}`. An alternative takes
    /// the strings that all its DFAs take. See [`Dfa::count_product`].
    pub fn union_of(
        alternatives: &[&[&Dfa]],
        budget: usize,
        limits: DfaLimits,
    ) -> Result<Option<Dfa>, DfaError> {
        Self::count_product(alternatives, None, |n| n > 0, budget, limits)
    }

    /// The strings for whose number of accepting `alternatives` `accept` holds (it must not
    /// hold for none), and that `within` accepts where given; match set `{0}`. An alternative
    /// accepts where all its DFAs do.
    ///
    /// One product over all the operands at once, minimized once: a chain of binary products
    /// builds and minimizes a DFA of about the same size at every step, which for a large
    /// operand (a length-bounded format has tens of thousands of states) costs several times
    /// as much. But the states of a product of many are tuples that no minimization merges
    /// on the way (of unanchored patterns, `.*a.*|.*b.*|…`, every subset of those seen):
    /// `None` when it reaches more than `budget` states, for the caller to build it by a chain
    /// instead.
    fn count_product(
        alternatives: &[&[&Dfa]],
        within: Option<&Dfa>,
        accept: impl Fn(usize) -> bool,
        budget: usize,
        limits: DfaLimits,
    ) -> Result<Option<Dfa>, DfaError> {
        debug_assert!(!accept(0), "a tuple with no live alternative is dropped");
        // The operands in one row: each alternative's DFAs in `spans`, then `within`.
        let mut operands: Vec<&Dfa> = Vec::new();
        let mut spans = Vec::with_capacity(alternatives.len());
        for alt in alternatives {
            spans.push(operands.len()..operands.len() + alt.len());
            operands.extend_from_slice(alt);
        }
        let n = operands.len();
        operands.extend(within);
        let (classes, reps) = joint_classes(&operands);
        // An alternative with a dead DFA is dead whole (all its states `DEAD`, so that tuples
        // differing only there are one); a tuple lives while some alternative and `within` do.
        let settle = |p: &mut [u32]| {
            let mut some = false;
            for span in &spans {
                if p[span.clone()].contains(&DEAD) {
                    p[span.clone()].fill(DEAD);
                } else {
                    some = true;
                }
            }
            some && p[n..].iter().all(|&s| s != DEAD)
        };
        let mut start: Vec<u32> = operands.iter().map(|d| d.start).collect();
        if !settle(&mut start) {
            return Ok(Some(Dfa::empty()));
        }
        let mut raw = RawBuilder::new(classes);
        let mut ids: HashMap<Box<[u32]>, usize> = HashMap::default();
        ids.insert(start.clone().into_boxed_slice(), raw.add_state());
        let mut queue = vec![start];
        let mut next = vec![0u32; operands.len()];
        while let Some(p) = queue.pop() {
            let me = ids[&p[..]];
            let finals = |i: usize| p[i] != DEAD && operands[i].final_set(p[i]).is_some();
            let accepting = spans
                .iter()
                .filter(|&span| span.clone().all(finals))
                .count();
            if accept(accepting) && (n..operands.len()).all(finals) {
                raw.accept[me] = vec![0];
            }
            for (c, &rep) in reps.iter().enumerate() {
                for (i, d) in operands.iter().enumerate() {
                    next[i] = d.next(p[i], rep);
                }
                if !settle(&mut next) {
                    continue;
                }
                let t = match ids.get(&next[..]) {
                    Some(&t) => t,
                    None => {
                        if raw.accept.len() >= budget {
                            return Ok(None);
                        }
                        raw.room_for_a_state(&limits)?;
                        let t = raw.add_state();
                        ids.insert(next.clone().into_boxed_slice(), t);
                        queue.push(next.clone());
                        t
                    }
                };
                raw.set(me, c, t);
            }
        }
        Ok(Some(raw.finish(0, limits)?.minimize()))
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
            ascii_only: OnceLock::new(),
            reps: LazyReps::default(),
        }
    }

    /// Merges equivalent states (Hopcroft's partition refinement, `O(n k log n)` for `n`
    /// states and `k` byte classes). The dead state stays alone in its block, and states with
    /// different match sets are never merged.
    pub fn minimize(self) -> Dfa {
        let n = self.finals.len();
        if n <= 2 {
            return self;
        }
        let block = self.coarsest_partition();
        self.merge_blocks(&block)
    }

    /// The initial partition of [`Dfa::minimize`]: the dead state alone, then one block per
    /// match set (non-accepting states together). Block ids are arbitrary.
    fn initial_blocks(&self) -> Vec<u32> {
        (0..self.finals.len())
            .map(|i| {
                if i == 0 {
                    0
                } else {
                    self.finals[i].wrapping_add(2)
                }
            })
            .collect()
    }

    /// The coarsest refinement of [`Dfa::initial_blocks`] that the transitions respect:
    /// `block[s]` per state index.
    fn coarsest_partition(&self) -> Vec<u32> {
        let n = self.finals.len();
        let k = self.stride as usize;
        // Predecessors by (target, class), in compressed rows.
        let mut rev_start = vec![0u32; n * k + 1];
        for s in 0..n {
            for c in 0..k {
                let t = (self.trans[s * k + c] / self.stride) as usize;
                rev_start[t * k + c + 1] += 1;
            }
        }
        for i in 0..n * k {
            rev_start[i + 1] += rev_start[i];
        }
        let mut fill = rev_start.clone();
        let mut rev = vec![0u32; n * k];
        for s in 0..n {
            for c in 0..k {
                let t = (self.trans[s * k + c] / self.stride) as usize;
                rev[fill[t * k + c] as usize] = s as u32;
                fill[t * k + c] += 1;
            }
        }
        drop(fill);
        // The partition: `elems[first[b]..end[b]]` are the states of block `b`, `pos[s]` is
        // where state `s` stands in `elems`.
        let mut elems: Vec<u32> = (0..n as u32).collect();
        let initial = self.initial_blocks();
        elems.sort_unstable_by_key(|&s| initial[s as usize]);
        let mut block = vec![0u32; n];
        let mut first: Vec<u32> = Vec::new();
        let mut end: Vec<u32> = Vec::new();
        for (i, &s) in elems.iter().enumerate() {
            if i == 0 || initial[s as usize] != initial[elems[i - 1] as usize] {
                first.push(i as u32);
                end.push(i as u32);
            }
            let b = first.len() - 1;
            block[s as usize] = b as u32;
            end[b] = i as u32 + 1;
        }
        let mut pos = vec![0u32; n];
        for (i, &s) in elems.iter().enumerate() {
            pos[s as usize] = i as u32;
        }
        // Every block starts as a splitter; a block split later adds its smaller part (or
        // both parts' worth, when it is still waiting).
        let mut waiting: Vec<u32> = (0..first.len() as u32).collect();
        let mut is_waiting = vec![true; first.len()];
        let mut marked: Vec<u32> = vec![0; first.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut splitter: Vec<u32> = Vec::new();
        while let Some(b) = waiting.pop() {
            is_waiting[b as usize] = false;
            splitter.clear();
            splitter
                .extend_from_slice(&elems[first[b as usize] as usize..end[b as usize] as usize]);
            for c in 0..k {
                // Move the states that enter the splitter on class `c` to the front of
                // their blocks.
                for &t in &splitter {
                    let row = t as usize * k + c;
                    for &s in &rev[rev_start[row] as usize..rev_start[row + 1] as usize] {
                        let x = block[s as usize] as usize;
                        let to = first[x] + marked[x];
                        let from = pos[s as usize];
                        let other = elems[to as usize];
                        elems.swap(to as usize, from as usize);
                        pos[other as usize] = from;
                        pos[s as usize] = to;
                        if marked[x] == 0 {
                            touched.push(x as u32);
                        }
                        marked[x] += 1;
                    }
                }
                for x in touched.drain(..) {
                    let x = x as usize;
                    let m = std::mem::take(&mut marked[x]);
                    if m == end[x] - first[x] {
                        continue;
                    }
                    // The marked front becomes a new block.
                    let nb = first.len();
                    first.push(first[x]);
                    end.push(first[x] + m);
                    first[x] += m;
                    marked.push(0);
                    for &s in &elems[first[nb] as usize..end[nb] as usize] {
                        block[s as usize] = nb as u32;
                    }
                    let smaller = if is_waiting[x] || m <= end[x] - first[x] {
                        nb
                    } else {
                        x
                    };
                    is_waiting.push(false);
                    if !is_waiting[smaller] {
                        is_waiting[smaller] = true;
                        waiting.push(smaller as u32);
                    }
                }
            }
        }
        block
    }

    /// The DFA whose states are the blocks of `block` (per state index): the dead state's
    /// block becomes state 0, the others are numbered in order of their first state.
    fn merge_blocks(self, block: &[u32]) -> Dfa {
        let n = self.finals.len();
        let nblocks = block.iter().map(|&b| b as usize + 1).max().unwrap_or(0);
        let mut renum = vec![u32::MAX; nblocks];
        renum[block[0] as usize] = 0;
        let mut next = 1;
        for &bl in block {
            if renum[bl as usize] == u32::MAX {
                renum[bl as usize] = next;
                next += 1;
            }
        }
        let m = next as usize;
        if m == n {
            return self;
        }
        let stride = self.stride as usize;
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
            ascii_only: OnceLock::new(),
            reps: LazyReps::default(),
        }
    }

    /// [`Dfa::minimize`] by Moore's refinement (one pass per distinguishing length): slow on
    /// long chains, kept as the reference the tests compare Hopcroft's against.
    #[cfg(test)]
    pub(crate) fn minimize_by_moore(self) -> Dfa {
        let n = self.finals.len();
        if n <= 2 {
            return self;
        }
        let stride = self.stride as usize;
        let width = stride + 1;
        let mut block = self.initial_blocks();
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
        self.merge_blocks(&block)
    }
}

/// The DFA of all valid UTF-8 strings (minimized: one state per character-boundary class).
pub fn utf8_universe() -> &'static Dfa {
    static U: OnceLock<Dfa> = OnceLock::new();
    U.get_or_init(|| Dfa::from_regex(ANY_STRING, DfaLimits::default()).expect("a valid regex"))
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
    cached(patterns, limits, || Dfa::from_regexes(patterns, limits))
}

/// [`Dfa::from_names`] through the cache of [`cached_regex`], under the regexes it stands for
/// (the escaped names, then `(?s:.*)` with `any`).
pub fn cached_names(names: &[String], any: bool, limits: DfaLimits) -> Result<Arc<Dfa>, DfaError> {
    let mut patterns: Vec<String> = names.iter().map(|n| regex_syntax::escape(n)).collect();
    if any {
        patterns.push(ANY_STRING.to_owned());
    }
    cached(&patterns, limits, || Dfa::from_names(names, any, limits))
}

/// The regex of every string, property names' catch-all.
pub const ANY_STRING: &str = "(?s:.*)";

/// [`cached_regex`], built by `direct` where given: a construction of the same language that
/// is faster than determinizing the regex (see `text/datetime.rs`).
pub fn cached_regex_with(
    pattern: &str,
    limits: DfaLimits,
    direct: Option<fn(DfaLimits) -> Result<Dfa, DfaError>>,
) -> Result<Arc<Dfa>, DfaError> {
    match direct {
        Some(build) => cached(&[pattern], limits, || build(limits)),
        None => cached_regex(pattern, limits),
    }
}

/// The DFA of `patterns` from the cache, or built by `build` and kept.
fn cached<S: AsRef<str>>(
    patterns: &[S],
    limits: DfaLimits,
    build: impl FnOnce() -> Result<Dfa, DfaError>,
) -> Result<Arc<Dfa>, DfaError> {
    // Keyed by the size limits, which decide whether a DFA is built, not by the deadline,
    // which only stops the build (and a failed build is not kept).
    type Cache = Mutex<(HashMap<(Vec<String>, usize, usize), Arc<Dfa>>, usize)>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new((HashMap::default(), 0)));
    let key = (
        patterns.iter().map(|p| p.as_ref().to_owned()).collect(),
        limits.max_states,
        limits.regex_bytes,
    );
    if let Some(d) = cache.lock().unwrap_or_else(|e| e.into_inner()).0.get(&key) {
        return Ok(d.clone());
    }
    let d = Arc::new(build()?);
    let mut guard = cache.lock().unwrap_or_else(|e| e.into_inner());
    if guard.1 + d.num_states() > CACHE_MAX_STATES {
        guard.0.clear();
        guard.1 = 0;
    }
    guard.1 += d.num_states();
    guard.0.insert(key, d.clone());
    Ok(d)
}

/// The byte classes of a product of `dfas`: two bytes are in one class when every DFA puts
/// them in one (numbered in the order of their first byte), and each class's first byte.
fn joint_classes(dfas: &[&Dfa]) -> ([u8; 256], Vec<u8>) {
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = vec![0];
    // Folded in one DFA at a time: the pairs of the classes so far and the DFA's own.
    for d in dfas {
        let mut joint: HashMap<(u8, u8), u8> = HashMap::default();
        reps.clear();
        for byte in 0..=255u8 {
            let key = (classes[byte as usize], d.classes[byte as usize]);
            let len = joint.len();
            classes[byte as usize] = *joint.entry(key).or_insert_with(|| {
                reps.push(byte);
                len as u8
            });
        }
    }
    (classes, reps)
}

/// In [`RawBuilder::edges`]: no edge.
const NO_EDGE: u32 = u32::MAX;

/// A DFA under construction over given byte classes, then pruned and packed.
struct RawBuilder {
    classes: [u8; 256],
    nclasses: usize,
    /// Per state, `nclasses` targets ([`NO_EDGE`] = dead; 4 bytes each, as a product or a
    /// large enum's trie has millions).
    edges: Vec<u32>,
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

    /// Whether a product may add a state: within `limits.max_states`, and (checked every
    /// [`DEADLINE_STRIDE`] states) before the deadline.
    fn room_for_a_state(&self, limits: &DfaLimits) -> Result<(), DfaError> {
        let n = self.accept.len();
        if n >= limits.max_states {
            return Err(DfaError::Limit(format!(
                "more than {} lexer states in a combined lexeme",
                limits.max_states
            )));
        }
        if n.is_multiple_of(DEADLINE_STRIDE) {
            limits.check_deadline()?;
        }
        Ok(())
    }

    fn add_state(&mut self) -> usize {
        self.edges
            .extend(std::iter::repeat_n(NO_EDGE, self.nclasses));
        self.accept.push(Vec::new());
        self.accept.len() - 1
    }

    fn set(&mut self, from: usize, class: usize, to: usize) {
        // A builder has fewer states than `DfaLimits::max_states`, far below `u32::MAX`.
        self.edges[from * self.nclasses + class] = to as u32;
    }

    /// The target of `from` by `class`, if any.
    fn get(&self, from: usize, class: usize) -> Option<usize> {
        self.target(from * self.nclasses + class)
    }

    /// The target of edge `i`, if any.
    #[inline]
    fn target(&self, i: usize) -> Option<usize> {
        let t = self.edges[i];
        (t != NO_EDGE).then_some(t as usize)
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
            if t != NO_EDGE {
                rev_start[t as usize + 1] += 1;
            }
        }
        for i in 0..n {
            rev_start[i + 1] += rev_start[i];
        }
        let mut fill = rev_start.clone();
        let mut rev = vec![0usize; rev_start[n]];
        for s in 0..n {
            for c in 0..k {
                if let Some(t) = self.target(s * k + c) {
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
                if let Some(t) = self.target(s * k + c)
                    && live[t]
                    && index[t] == 0
                {
                    index[t] = order.len() as u32 + 1;
                    order.push(t);
                }
            }
        }
        self.pack(&order, &index, &live, limits)
    }

    /// [`RawBuilder::finish`] for a builder whose states all reach acceptance and are reached
    /// from state 0 in the order they were added (a trie of literals): no pruning to do.
    fn finish_all_live(self, limits: DfaLimits) -> Result<Dfa, DfaError> {
        let n = self.accept.len();
        if n == 0 || self.accept.iter().all(Vec::is_empty) {
            return Ok(Dfa::empty());
        }
        let order: Vec<usize> = (0..n).collect();
        let index: Vec<u32> = (1..=n as u32).collect();
        self.pack(&order, &index, &vec![true; n], limits)
    }

    /// The DFA of the states `order` (state `order[j]` numbered `index[order[j]] = j + 1`,
    /// the first the start; 0 is the dead state), with the edges to states not `live` dropped.
    fn pack(
        self,
        order: &[usize],
        index: &[u32],
        live: &[bool],
        limits: DfaLimits,
    ) -> Result<Dfa, DfaError> {
        let k = self.nclasses;
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
                if let Some(t) = self.target(s * k + c)
                    && live[t]
                {
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
            ascii_only: OnceLock::new(),
            reps: LazyReps::default(),
        })
    }
}
