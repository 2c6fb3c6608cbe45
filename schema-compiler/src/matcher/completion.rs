//! Completion: a short byte sequence that ends the document validly from the current state
//! ([`Matcher::completion`]), found by a bounded depth-first search over candidate bytes.

use super::Matcher;
use super::state::{FrameKind, LexKind, Phase, Role};
use crate::dfa::{DEAD, NO_PATH};
use crate::grammar::NUMBER_BYTES;
use crate::options::Whitespace;
use crate::tables::{EMPTY_LEXER, Kind, LeafSpec};

/// The first byte of a shortest path from key-DFA `state` to the literal `lit`
/// (`Some(None)`: `state` is that literal already; `None`: unreachable).
pub(super) fn toward_literal(
    dfa: &crate::dfa::Dfa,
    spec: &crate::tables::ObjSpec,
    state: u32,
    lit: u32,
) -> Option<Option<u8>> {
    let is_lit = |s: u32| {
        dfa.final_set_id(s)
            .is_some_and(|id| spec.literal_of(&dfa.match_sets()[id as usize]) == Some(lit))
    };
    if is_lit(state) {
        return Some(None);
    }
    let reps = dfa.class_reps();
    let mut seen = rustc_hash::FxHashSet::default();
    let mut queue = std::collections::VecDeque::new();
    seen.insert(state);
    for &b in &reps {
        let t = dfa.next(state, b);
        if t != DEAD && seen.insert(t) {
            queue.push_back((t, b));
        }
    }
    while let Some((s, first)) = queue.pop_front() {
        if is_lit(s) {
            return Some(Some(first));
        }
        for &b in &reps {
            let t = dfa.next(s, b);
            if t != DEAD && seen.insert(t) {
                queue.push_back((t, first));
            }
        }
    }
    None
}

impl Matcher {
    /// A short sequence of bytes that completes the document from here, if one is found within
    /// `max_len` bytes: the closers first (`"`, `]`, `}`), then the shortest way through each
    /// lexeme's DFA, then the shortest values for what is still required. The state is left
    /// unchanged. Used to end generation validly when a token budget runs out.
    pub fn completion(&mut self, max_len: usize) -> Option<Vec<u8>> {
        if self.state.walk.on {
            return None;
        }
        let mut out = Vec::new();
        let mut budget = 50_000usize;
        let found = self.complete_dfs(&mut out, max_len, &mut budget);
        self.pop_bytes(out.len());
        found.then_some(out)
    }

    fn complete_dfs(&mut self, out: &mut Vec<u8>, max_len: usize, budget: &mut usize) -> bool {
        let st = &self.state;
        if st.frames.len() == 1 && st.frames[0].phase == Phase::DocEnd && st.frames[0].root_ok {
            return true;
        }
        if self.is_accepting() && matches!(st.lex.kind, LexKind::Num | LexKind::Lit) {
            return true;
        }
        if out.len() >= max_len || *budget == 0 {
            return false;
        }
        let cands = self.completion_candidates();
        for b in cands {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            if self.try_push_byte(b) {
                out.push(b);
                if self.complete_dfs(out, max_len, budget) {
                    return true;
                }
                out.pop();
                self.pop_bytes(1);
            }
        }
        false
    }

    /// Candidate next bytes for [`Matcher::completion`], best first.
    fn completion_candidates(&self) -> Vec<u8> {
        let st = &self.state;
        let g = &*self.g;
        let f = &st.frames[st.top()];
        let mut c: Vec<u8> = Vec::with_capacity(8);
        let first_obl = || {
            st.obligations[f.slot_start as usize..f.slot_end as usize]
                .iter()
                .find(|o| !o.failed && o.role != Role::Contains)
        };
        // Pretty-printed, a closing bracket after a member or item goes on a line of its own.
        let pretty = g.options.whitespace == Whitespace::Pretty;
        let closers = |c: &mut Vec<u8>| match f.phase {
            Phase::ObjInValue => c.extend([if pretty { b'\n' } else { b'}' }, b',']),
            Phase::ArrInValue => c.extend([if pretty { b'\n' } else { b']' }, b',']),
            _ => {}
        };
        match st.lex.kind {
            LexKind::Str => {
                match st.lex.core.esc {
                    0 => {}
                    1 => c.push(b'n'),
                    6 => c.push(b'\\'),
                    7 => c.push(b'u'),
                    8 => c.push(b'd'),
                    9 => c.push(b'c'),
                    _ => c.push(b'0'),
                }
                if let Some(o) = first_obl() {
                    let lexer = &g.lexers[o.lexer as usize];
                    let dfa = g.dfa(lexer.dfa);
                    if dfa.is_final(o.state) && st.lex.core.count as u64 >= lexer.min_len {
                        c.push(b'"');
                    }
                    if let Some(b) = dfa.toward_final(o.state) {
                        c.push(b);
                    }
                } else {
                    c.push(b'"');
                }
                c.extend([b'a', b'0']);
            }
            LexKind::Key => {
                // Head for a required property not written yet.
                for li in f.leaf_start..f.leaf_end {
                    let leaf = &st.leaves[li as usize];
                    let LeafSpec::Object(s) = leaf.spec else {
                        continue;
                    };
                    if !leaf.alive || leaf.key_state == DEAD {
                        continue;
                    }
                    let spec = &g.obj_specs[s as usize];
                    for &r in &spec.required {
                        if st.seen(leaf, r) {
                            continue;
                        }
                        match toward_literal(g.dfa(spec.key_dfa), spec, leaf.key_state, r) {
                            Some(Some(b)) => c.push(b),
                            Some(None) => c.push(b'"'),
                            None => {}
                        }
                    }
                }
                c.push(b'"');
                for li in f.leaf_start..f.leaf_end {
                    let leaf = &st.leaves[li as usize];
                    if let LeafSpec::Object(s) = leaf.spec
                        && leaf.alive
                        && leaf.key_state != DEAD
                        && let Some(b) = g
                            .dfa(g.obj_specs[s as usize].key_dfa)
                            .toward_final(leaf.key_state)
                    {
                        c.push(b);
                        break;
                    }
                }
                c.extend([b'a', b'b', b'c']);
            }
            LexKind::Num | LexKind::Lit => {
                if let Some(bytes) = self.canonical_steps() {
                    if bytes.is_empty() {
                        closers(&mut c);
                    }
                    c.extend(bytes);
                } else if let Some(o) = first_obl() {
                    let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
                    if dfa.is_final(o.state) {
                        closers(&mut c);
                    }
                    if let Some(b) = dfa.toward_final(o.state) {
                        c.push(b);
                    }
                } else {
                    closers(&mut c);
                }
                c.extend([b'0', b'1']);
            }
            LexKind::None => {
                if pretty {
                    // The whitespace the gap needs before its next byte: the rest of an
                    // indentation or the space after `:`, else a line break where the next
                    // byte cannot do without one.
                    if f.newlines != 0 || f.phase == Phase::ObjValue {
                        c.push(b' ');
                    } else if matches!(
                        f.phase,
                        Phase::ObjNext | Phase::ArrNext | Phase::ObjKeyNext | Phase::ArrValue
                    ) {
                        c.push(b'\n');
                    }
                }
                self.gap_candidates(&mut c);
                if pretty && matches!(f.phase, Phase::ObjOpen | Phase::ArrOpen) {
                    c.push(b'\n');
                }
            }
        }
        c.dedup();
        c
    }

    /// For a number held to its canonical spelling, the bytes that take it one step closer to
    /// a value the first live obligation takes ([`Grammar::canonical_live`]); empty when it
    /// may end here. `None` where that does not apply.
    fn canonical_steps(&self) -> Option<Vec<u8>> {
        let st = &self.state;
        let g = &*self.g;
        if st.lex.kind != LexKind::Num || st.lex.syntax != g.canonical_syntax {
            return None;
        }
        let f = &st.frames[st.top()];
        let (o, table) = st.obligations[f.slot_start as usize..f.slot_end as usize]
            .iter()
            .filter(|o| !o.failed && o.role != Role::Contains)
            .find_map(|o| Some((o, g.canonical_live[o.lexer as usize].as_ref()?)))?;
        let syntax = g.dfa(g.canonical_syntax);
        let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
        let at =
            |s: u32, t: u32| table[syntax.state_index(s) * dfa.num_states() + dfa.state_index(t)];
        let here = at(st.lex.core.syn, o.state);
        if here == 0 || here == NO_PATH {
            return Some(Vec::new());
        }
        let steps = NUMBER_BYTES.iter().copied().filter(|&b| {
            let (s, t) = (syntax.next(st.lex.core.syn, b), dfa.next(o.state, b));
            s != DEAD && t != DEAD && at(s, t) == here - 1
        });
        Some(steps.collect())
    }

    /// Candidate structural bytes for [`Matcher::completion`] between tokens, best first.
    fn gap_candidates(&self, c: &mut Vec<u8>) {
        let st = &self.state;
        let g = &*self.g;
        let f = &st.frames[st.top()];
        let first_obl = || {
            st.obligations[f.slot_start as usize..f.slot_end as usize]
                .iter()
                .find(|o| !o.failed && o.role != Role::Contains)
        };
        match f.phase {
            Phase::ObjOpen => c.extend([b'}', b'"']),
            Phase::ObjNext => c.extend([b'}', b',']),
            Phase::ObjKeyNext => c.push(b'"'),
            Phase::ObjColon => c.push(b':'),
            Phase::ArrNext => c.extend([b']', b',']),
            Phase::DocStart | Phase::ObjValue | Phase::ArrOpen | Phase::ArrValue => {
                if f.phase == Phase::ArrOpen {
                    c.push(b']');
                }
                let mut kinds: Vec<u8> = Vec::new();
                let tmpl = if f.kind == FrameKind::Array {
                    // Item obligations are made when the item starts: use the array's
                    // item schema if there is one.
                    st.leaves[f.leaf_start as usize..f.leaf_end as usize]
                        .iter()
                        .find_map(|l| match l.spec {
                            LeafSpec::Array(s) if l.alive => {
                                let a = &g.arr_specs[s as usize];
                                a.prefix.get(l.count as usize).copied().or(a.items)
                            }
                            _ => None,
                        })
                } else {
                    first_obl().map(|o| o.node)
                }
                .map(|n| g.template(n));
                match tmpl {
                    Some(t) => {
                        let lex = |k: Kind| t.lexers[k as usize] != EMPTY_LEXER;
                        if lex(Kind::String) {
                            kinds.push(b'"');
                        }
                        if lex(Kind::Null) {
                            kinds.push(b'n');
                        }
                        if lex(Kind::Number) {
                            kinds.extend([b'0', b'1', b'-']);
                        }
                        if lex(Kind::Boolean) {
                            kinds.extend([b't', b'f']);
                        }
                        if t.array.is_some() {
                            kinds.push(b'[');
                        }
                        if t.object.is_some() {
                            kinds.push(b'{');
                        }
                    }
                    None => kinds.extend([b'"', b'0', b'n', b'{', b'[']),
                }
                c.extend(kinds);
            }
            _ => {}
        }
    }
}
