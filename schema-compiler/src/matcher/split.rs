//! What the mask kernel reads from a matcher: the lexeme split and the cache keys.
//!
//! [`Matcher::split`] tells the kernel when the current string or key takes every content of a
//! level up to a budget ([`Split`]), so that a precomputed token set can stand in for a
//! trie walk; [`Matcher::state_key`] and the lexeme key identify states that allow the same
//! continuations.

use super::Matcher;
use super::state::{FrameKind, LexKind, Mode, Role};
use super::viability::{DeadSinks, every};
use recognizer::{Close, LEVELS, NUMBER_BYTES, Split, TOP_LEVEL};

use crate::dfa::level_is_plain;
use crate::options::KeyEscapes;
use crate::tables::LeafSpec;

/// A code-point budget for string content and the closing range, when content is free.
type UniversalBudget = (Option<u32>, Option<(u32, u32)>);

impl Matcher {
    /// Whether every string content of `level` (see [`recognizer::CONTENT_LEVELS`]) keeps the
    /// current string or key viable: the code-point budget and, for strings, the closing range
    /// (see [`Split::StringContent`]).
    fn universal_budget(&self, level: u8) -> Option<UniversalBudget> {
        let st = &self.state;
        let g = &*self.g;
        if st.lex.core.esc != 0 || !g.dfa(g.utf8).is_final(st.lex.core.syn) {
            return None;
        }
        let f = &st.frames[st.top()];
        let count = st.lex.core.count as u64;
        let clamp = |x: u64| x.min(u32::MAX as u64) as u32;
        match st.lex.kind {
            LexKind::Str => {
                // Every live obligation must accept all content; failed ones stay failed.
                let slot = &st.obligations[f.slot_start as usize..f.slot_end as usize];
                let mut budget: Option<u64> = None;
                // Where not every obligation must pass: (code points left, slot position).
                let mut limited: Vec<(u64, usize)> = Vec::new();
                // Where not every obligation must pass: those that some content fails.
                let mut narrow: Vec<usize> = Vec::new();
                let mut all_free = true;
                let mut live = 0;
                let mut lo = 0u64;
                let mut hi = u64::MAX;
                for (i, o) in slot.iter().enumerate() {
                    if o.failed {
                        continue;
                    }
                    live += 1;
                    let lexer = &g.lexers[o.lexer as usize];
                    let flags = g.universal_flags(lexer.dfa, o.state, level);
                    all_free &= flags.free;
                    lo = lo.max(lexer.min_len.saturating_sub(count));
                    if let Some(m) = lexer.max_len {
                        hi = hi.min(m.saturating_sub(count));
                    }
                    if o.role == Role::Contains || f.slot_mode == Mode::Free {
                        continue;
                    }
                    let exact = || g.dfa(lexer.dfa).string_budget(o.state, level);
                    let b = match lexer.max_len {
                        None if flags.live_all => continue,
                        Some(m) if flags.free => m.saturating_sub(count),
                        // A bounded repetition: longer content of the level fails it.
                        None if let Some(e) = exact() => e as u64,
                        // Some content fails it: only the frame's formula can let that pass.
                        _ if f.slot_mode != Mode::All => {
                            narrow.push(i);
                            continue;
                        }
                        _ => return None,
                    };
                    if f.slot_mode == Mode::All {
                        budget = Some(budget.map_or(b, |x| x.min(b)));
                    } else {
                        limited.push((b, i));
                    }
                }
                if !limited.is_empty() || !narrow.is_empty() {
                    budget = self.formula_budget(st.top(), &narrow, &mut limited)?;
                }
                // With value hashing the content matters after the quote (`uniqueItems`).
                // Tokens that close the string are spelled with any unescaped character.
                let close = (!g.needs_hash
                    && level_is_plain(level)
                    && (live == 0 || (f.slot_mode == Mode::All && all_free)))
                    .then(|| (clamp(lo), clamp(hi)));
                Some((budget.map(clamp), close))
            }
            LexKind::Key => {
                if f.mode == Mode::Free {
                    return Some((None, None));
                }
                // Leaves whose key language does not take every content (a leaf held to the
                // schema's order may refuse every key outside its literals).
                let narrow = |li: u32| {
                    let leaf = &st.leaves[li as usize];
                    let LeafSpec::Object(s) = leaf.spec else {
                        return false;
                    };
                    let spec = &g.obj_specs[s as usize];
                    leaf.alive
                        && (!spec
                            .key_levels(g.dfa(spec.key_dfa), leaf.key_state)
                            .live_at(level)
                            || !st.nonlit_in_order(g, leaf, spec))
                };
                if !(f.leaf_start..f.leaf_end).any(narrow) {
                    return Some((None, None));
                }
                // Content is still free when the frame survives every such leaf dying (a
                // closed object in one `anyOf` branch beside an open one).
                let survives = |gone: &dyn Fn(u32) -> bool| {
                    let dead = DeadSinks::new(&[], &every, gone);
                    st.frame_viable_keys(g, st.top(), &dead, false)
                };
                if survives(&narrow) {
                    return Some((None, None));
                }
                // Else each such leaf must take an exact budget (`^[a-z]{1,64}$` as property
                // names), and the content's budget is the least room at which the frame no
                // longer survives the leaves with that room or less dying.
                let mut limited: Vec<(u32, u32)> = Vec::new();
                for li in (f.leaf_start..f.leaf_end).filter(|&li| narrow(li)) {
                    let leaf = &st.leaves[li as usize];
                    let LeafSpec::Object(s) = leaf.spec else {
                        return None;
                    };
                    let spec = &g.obj_specs[s as usize];
                    if !st.nonlit_in_order(g, leaf, spec) {
                        // What its content may be depends on the literals: walk it.
                        return None;
                    }
                    let room = spec.key_budget(g.dfa(spec.key_dfa), leaf.key_state, level)?;
                    limited.push((room, li));
                }
                limited.sort_unstable();
                for (k, &(room, _)) in limited.iter().enumerate() {
                    // Once per room: the leaves with this room die together.
                    if limited.get(k + 1).is_some_and(|&(r, _)| r == room) {
                        continue;
                    }
                    let gone = |li: u32| limited.iter().any(|&(r, l)| l == li && r <= room);
                    if !survives(&gone) {
                        return Some((Some(room), None));
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// The code points a string may still take in frame `t`, whatever its content, when not
    /// every obligation of the slot must pass. `narrow` are the obligations some content
    /// fails: the content is free only if the frame's formula survives them all failing
    /// (`None` otherwise). `limited` holds the room each length-limited obligation has left:
    /// longer content fails it, and the budget ends where the formula no longer survives those
    /// failures (`Some(None)`: it survives them all). Where it ends with some narrow obligation
    /// in the slot, whether longer content is refused depends on the content: `None`.
    fn formula_budget(
        &self,
        t: usize,
        narrow: &[usize],
        limited: &mut [(u64, usize)],
    ) -> Option<Option<u64>> {
        let st = &self.state;
        let f = &st.frames[t];
        let slot = &st.obligations[f.slot_start as usize..f.slot_end as usize];
        let survives = |gone: &[(u64, usize)]| {
            let dead = |i: usize| {
                slot[i].failed || narrow.contains(&i) || gone.iter().any(|&(_, j)| j == i)
            };
            st.frame_viable_keys(&self.g, t, &DeadSinks::some(slot, &dead), false)
        };
        if !survives(&[]) {
            return None;
        }
        limited.sort_unstable();
        let mut k = 0;
        while k < limited.len() {
            let room = limited[k].0;
            let mut e = k;
            while e < limited.len() && limited[e].0 == room {
                e += 1;
            }
            if !survives(&limited[..e]) {
                // Longer content fails these obligations, and the formula does not survive
                // them failing together with every narrow one. But a narrow obligation fails
                // only on some content: on the rest (the `X` of `"abX"` for `const: "abXYZ"`
                // beside `const: "ab"`) it lives, and may carry the formula. Whether longer
                // content is refused then depends on what it is, so there is no budget.
                return narrow.is_empty().then_some(Some(room));
            }
            k = e;
        }
        Some(None)
    }

    /// The split of the vocabulary inside a string or key, for a mask kernel (see
    /// [`recognizer::Recognizer::split`]), writing the lexeme key for [`Split::Walk`] and for
    /// [`Split::StringContent`] below the top level.
    ///
    /// [`Split::StringContent`] says the string takes any content of a level up to a length:
    /// the budget comes from `maxLength` or from a bounded repetition (see
    /// [`crate::dfa::Dfa::string_budget`]). [`Split::KeyContent`] is a key that accepts any
    /// content spelled with only the escapes JSON needs ([`crate::KeyEscapes::Needed`]).
    pub fn split(&self, key: &mut Vec<u32>) -> Option<Split> {
        if !self.in_string() {
            return None;
        }
        let top = TOP_LEVEL;
        let is_key = self.state.lex.kind == LexKind::Key;
        // Largest sets first (see `LEVELS`).
        let found = LEVELS.into_iter().find_map(|level| {
            let found = self.universal_budget(level)?;
            // Keys at the top level are spelled with the escapes they may use, a set the
            // kernel does not count code points in.
            (!(is_key && level == top && found.0.is_some())).then_some((level, found))
        });
        if let Some((level, (budget, close))) = found {
            if level == top && is_key && self.g.options.key_escapes == KeyEscapes::Needed {
                return Some(Split::KeyContent);
            }
            if level != top {
                key.push(level as u32);
                self.lexeme_key(key);
            }
            return Some(Split::StringContent {
                budget,
                level,
                close: close.map(|(lo, hi)| Close { lo, hi }),
            });
        }
        // With value hashing a string may be ended on trial inside its content (see
        // `string_end_viable`), which the lexeme state does not capture: walk every token.
        if self.g.needs_hash && !is_key {
            return None;
        }
        key.push(u32::MAX);
        self.lexeme_key(key);
        Some(Split::Walk)
    }

    /// The classes of [`NUMBER_BYTES`] (see [`recognizer::Recognizer::number_classes`]), where
    /// DFAs alone read them, as every DFA reading them puts them alike:
    /// - inside a number, the number's syntax and each live obligation's lexer. A byte moves
    ///   each of them by its class, and the number's viability is decided by their states.
    ///   Not where the text of the number is kept (any notation, or value hashing: its bytes
    ///   are read themselves);
    /// - in lexeme-only mode, outside an escape, the UTF-8 DFA and the walker's tracked DFAs:
    ///   those bytes are plain characters there, so the walker moves by their classes alone
    ///   (as it learns successors by byte groups).
    ///
    /// Two bytes classed alike by all of them reach the same state.
    pub fn number_classes(&self, classes: &mut [u8; NUMBER_BYTES.len()]) -> bool {
        let st = &self.state;
        let g = &*self.g;
        if st.walk.on {
            let walk = &st.walk;
            let Some(&node) = walk.path.last() else {
                return false;
            };
            if walk.node_core[node as usize].esc != 0 {
                return false;
            }
            let dfas = std::iter::once(g.utf8).chain(walk.dfas.iter().copied());
            classes_by(g, dfas, classes);
            return true;
        }
        if st.lex.kind != LexKind::Num || g.needs_hash || g.options.numbers.any_notation {
            return false;
        }
        let f = &st.frames[st.top()];
        let dfas = std::iter::once(st.lex.syntax).chain(
            st.obligations[f.slot_start as usize..f.slot_end as usize]
                .iter()
                .filter(|o| !o.failed)
                .map(|o| g.lexers[o.lexer as usize].dfa),
        );
        classes_by(g, dfas, classes);
        true
    }

    /// See [`recognizer::Recognizer::loop_bytes`]: in lexeme-only mode, the bytes that take
    /// the walker's current node back to itself (see `State::walk_loop_bytes`).
    pub fn loop_bytes(&self, bytes: &mut [u64; 4]) -> bool {
        self.state.walk_loop_bytes(&self.g, bytes)
    }

    /// Writes the key of the lexeme state: equal keys accept the same tokens without `"`.
    fn lexeme_key(&self, key: &mut Vec<u32>) {
        let st = &self.state;
        let l = &st.lex;
        key.extend([l.kind as u32, l.core.esc as u32, l.core.uval, l.core.syn]);
        let t = st.top();
        let f = &st.frames[t];
        if l.kind == LexKind::Str {
            key.push(f.slot_mode as u32);
            let mut counted = false;
            for o in &st.obligations[f.slot_start as usize..f.slot_end as usize] {
                let lexer = &self.g.lexers[o.lexer as usize];
                counted |= lexer.max_len.is_some();
                key.extend([o.role as u32, o.lexer, o.state, o.failed as u32]);
            }
            if counted {
                key.push(l.core.count);
            }
        } else {
            self.frame_key(t, key);
        }
    }

    /// Writes the state of frame `t`: header, obligations and leaves, indices made relative.
    fn frame_key(&self, t: usize, key: &mut Vec<u32>) {
        let st = &self.state;
        let f = &st.frames[t];
        key.extend([
            f.kind as u32,
            f.phase as u32,
            f.newlines as u32 | (f.spaces as u32) << 8,
            f.mode as u32 | (f.slot_mode as u32) << 4,
            f.root_ok as u32,
        ]);
        let parent_leaf_start = if t > 0 {
            st.frames[t - 1].leaf_start
        } else {
            0
        };
        key.push(f.obligations_end - f.obligations_start);
        for o in &st.obligations[f.obligations_start as usize..f.obligations_end as usize] {
            key.extend([
                o.node.0,
                o.sink.wrapping_sub(parent_leaf_start),
                o.role as u32,
                o.prog,
                o.leaf_base.wrapping_sub(f.leaf_start),
                o.failed as u32 | (o.result as u32) << 1 | (o.positive as u32) << 2,
            ]);
        }
        key.push(f.leaf_end - f.leaf_start);
        for leaf in &st.leaves[f.leaf_start as usize..f.leaf_end as usize] {
            // An array's counts matter up to their caps only, so that the items after them
            // share their masks (an array without bounds or a prefix: every item).
            let (count, contains) = match leaf.spec {
                LeafSpec::Array(s) => {
                    let spec = &self.g.arr_specs[s as usize];
                    (
                        leaf.count.min(spec.count_cap()),
                        leaf.contains.min(spec.contains_cap()),
                    )
                }
                _ => (leaf.count, leaf.contains),
            };
            let spec = match leaf.spec {
                LeafSpec::Object(s) => s << 2,
                LeafSpec::Array(s) => s << 2 | 1,
                LeafSpec::KeySeen { leaf, lit } => (leaf << 16 | lit) << 2 | 2,
            };
            key.extend([
                spec,
                leaf.alive as u32 | (leaf.positive as u32) << 1,
                leaf.next,
                count,
                contains,
                leaf.seen as u32,
                (leaf.seen >> 32) as u32,
                leaf.key_state,
            ]);
            for w in st.seen_ext(&self.g, leaf) {
                key.extend([*w as u32, (*w >> 32) as u32]);
            }
        }
        if self.g.needs_hash {
            key.extend([
                f.value_hash.0 as u32,
                (f.value_hash.0 >> 32) as u32,
                f.value_hash.1 as u32,
                (f.value_hash.1 >> 32) as u32,
                f.member_key.0 as u32,
                f.member_key.1 as u32,
            ]);
            for &(d, h) in &st.items[f.items_start as usize..] {
                if d == f.depth {
                    key.extend([h.0 as u32, (h.0 >> 32) as u32, h.1 as u32]);
                }
            }
        }
        if f.kind == FrameKind::Object {
            let start = key.len();
            key.push(0);
            let mut n = 0;
            for &(d, h) in &st.keys[f.keys_start as usize..] {
                if d == f.depth {
                    key.extend([h as u32, (h >> 32) as u32]);
                    n += 1;
                }
            }
            key[start] = n;
        }
    }

    /// Writes a key identifying the current state: equal keys allow exactly the same
    /// continuations. An array's item counts are written only up to the point from which
    /// more items change nothing (past its prefix and its bounds), so the items of an array
    /// share their keys from there on.
    pub fn state_key(&self, key: &mut Vec<u32>) {
        let st = &self.state;
        for t in 0..st.frames.len() {
            self.frame_key(t, key);
            let f = &st.frames[t];
            key.push(f.slot_end - f.slot_start);
            if t + 1 < st.frames.len() {
                // The slot is the child's obligations, written with the child.
                continue;
            }
            for o in &st.obligations[f.slot_start as usize..f.slot_end as usize] {
                key.extend([
                    o.node.0,
                    o.sink.wrapping_sub(f.leaf_start),
                    o.role as u32,
                    o.lexer,
                    o.state,
                    o.failed as u32 | (o.positive as u32) << 1,
                ]);
            }
        }
        let l = &st.lex;
        key.extend([l.kind as u32, l.core.esc as u32, l.core.uval, l.core.syn]);
        if l.kind == LexKind::Num {
            key.push(l.syntax);
        }
        let f = &st.frames[st.top()];
        if self.g.needs_hash {
            key.extend([l.hash as u32, (l.hash >> 32) as u32, l.hash2 as u32]);
            if matches!(l.kind, LexKind::Num | LexKind::Lit) {
                key.extend(st.lexeme_text().iter().map(|&b| b as u32));
            }
        }
        match l.kind {
            LexKind::Str => {
                let counted = st.obligations[f.slot_start as usize..f.slot_end as usize]
                    .iter()
                    .any(|o| {
                        let lexer = &self.g.lexers[o.lexer as usize];
                        lexer.max_len.is_some() || lexer.min_len > 0
                    });
                if counted {
                    key.push(l.core.count);
                }
            }
            LexKind::Key => {
                let has_keys = st.keys[f.keys_start as usize..]
                    .iter()
                    .any(|&(d, _)| d == f.depth);
                if has_keys {
                    key.extend([l.hash as u32, (l.hash >> 32) as u32]);
                }
            }
            LexKind::Num if self.g.options.numbers.any_notation => {
                key.extend(st.lexeme_text().iter().map(|&b| b as u32));
            }
            _ => {}
        }
    }
}

/// Writes the classes of [`NUMBER_BYTES`] that every DFA of `dfas` puts alike (a byte's class
/// is the first byte alike).
fn classes_by(
    g: &crate::grammar::Grammar,
    mut dfas: impl Iterator<Item = crate::tables::DfaId>,
    classes: &mut [u8; NUMBER_BYTES.len()],
) {
    // Each byte's classes, eight DFAs to a word; more words while DFAs are left.
    *classes = [0; NUMBER_BYTES.len()];
    loop {
        let mut word = [0u64; NUMBER_BYTES.len()];
        let mut more = false;
        for (j, d) in dfas.by_ref().take(8).enumerate() {
            let d = g.dfa(d);
            for (w, &b) in word.iter_mut().zip(&NUMBER_BYTES) {
                *w |= (d.class_of(b) as u64) << (8 * j);
            }
            more = j == 7;
        }
        // A byte's class: the first byte alike so far and in this word.
        let was = *classes;
        for i in 0..NUMBER_BYTES.len() {
            classes[i] = (0..=i)
                .find(|&j| was[j] == was[i] && word[j] == word[i])
                .unwrap_or(i) as u8;
        }
        if !more {
            break;
        }
    }
}
