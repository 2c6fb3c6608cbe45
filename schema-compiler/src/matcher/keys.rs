//! Object keys: starting and ending a key, seen literals, and the schema's property order.
//!
//! When a key ends, each object leaf resolves it to a property (a literal of the key DFA or a
//! set of patterns), checks duplicates, and makes the member's obligations. Under
//! [`crate::PropertyOrder::Schema`] a leaf also tracks the next listed property that may
//! still be written ([`State::order_after`]).

use super::hashing::{TAG_STR, fin};
use super::state::{Leaf, Lex, LexKind, NONE, Phase, Role, State, Undo, new_obligation};
use crate::dfa::DEAD;
use crate::grammar::Grammar;
use crate::tables::{LeafSpec, ObjSpec};

impl State {
    pub(super) fn key_start(&mut self, g: &Grammar) -> bool {
        let t = self.top();
        let mut f = self.frames[t];
        f.phase = Phase::ObjKey;
        self.set_frame(t, f);
        for li in f.leaf_start..f.leaf_end {
            let mut leaf = self.leaves[li as usize];
            if let LeafSpec::Object(s) = leaf.spec
                && leaf.alive
            {
                leaf.key_state = g.dfa(g.obj_specs[s as usize].key_dfa).start();
                self.set_leaf(li as usize, leaf);
            }
        }
        self.start_string(g, LexKind::Key);
        self.frame_viable(g, t)
    }

    pub(super) fn seen(&self, leaf: &Leaf, lit: u32) -> bool {
        if lit < 64 {
            leaf.seen & (1 << lit) != 0
        } else {
            let w = self.bits[(leaf.ext + lit / 64 - 1) as usize];
            w & (1 << (lit % 64)) != 0
        }
    }

    /// The seen-literal words of `leaf` past the first 64 literals (empty for a leaf with at
    /// most 64, or that is not an object's).
    pub(super) fn seen_ext(&self, g: &Grammar, leaf: &Leaf) -> &[u64] {
        match leaf.spec {
            LeafSpec::Object(s) if leaf.ext != NONE => {
                let words = g.obj_specs[s as usize].lits.len().div_ceil(64) - 1;
                &self.bits[leaf.ext as usize..leaf.ext as usize + words]
            }
            _ => &[],
        }
    }

    /// How many literals `leaf` (an object leaf) has seen.
    pub(super) fn seen_count(&self, g: &Grammar, leaf: &Leaf) -> u32 {
        let ext: u32 = self.seen_ext(g, leaf).iter().map(|w| w.count_ones()).sum();
        leaf.seen.count_ones() + ext
    }

    pub(super) fn mark_seen(&mut self, li: usize, lit: u32) {
        let mut leaf = self.leaves[li];
        if lit < 64 {
            leaf.seen |= 1 << lit;
            self.set_leaf(li, leaf);
        } else {
            let i = (leaf.ext + lit / 64 - 1) as usize;
            self.journal.push(Undo::Bit(i as u32, self.bits[i]));
            self.bits[i] |= 1 << (lit % 64);
        }
    }

    pub(super) fn end_key(&mut self, g: &Grammar) -> bool {
        if !g.dfa(g.utf8).is_final(self.lex.core.syn) {
            return false;
        }
        let t = self.top();
        let f = self.frames[t];
        let hash = self.lex.hash;
        // Duplicate keys are rejected.
        if self.keys[f.keys_start as usize..]
            .iter()
            .any(|&(d, h)| d == f.depth && h == hash)
        {
            return false;
        }
        self.journal.push(Undo::Keys(self.keys.len() as u32));
        self.keys.push((f.depth, hash));
        let start = self.obligations.len() as u32;
        self.journal.push(Undo::Obligations(start));
        for li in f.leaf_start..f.leaf_end {
            let mut leaf = self.leaves[li as usize];
            let LeafSpec::Object(s) = leaf.spec else {
                continue;
            };
            if !leaf.alive {
                continue;
            }
            let spec = &g.obj_specs[s as usize];
            let dfa = g.dfa(spec.key_dfa);
            leaf.count = leaf.count.saturating_add(1);
            let mut written = None;
            let mut member = if leaf.key_state == DEAD {
                None
            } else {
                match dfa.final_set_id(leaf.key_state) {
                    None => None,
                    Some(set_id) => {
                        let set = &dfa.match_sets()[set_id as usize];
                        match spec.literal_of(set) {
                            Some(lit) => {
                                if self.seen(&leaf, lit) {
                                    return false;
                                }
                                self.set_leaf(li as usize, leaf);
                                self.mark_seen(li as usize, lit);
                                leaf = self.leaves[li as usize];
                                written = Some(lit);
                                spec.lit_member[lit as usize]
                            }
                            None => spec.set_member[set_id as usize],
                        }
                    }
                }
            };
            if member.is_some() && leaf.next != NONE {
                match self.order_after(g, &leaf, spec, written, leaf.count as u64) {
                    Some(next) => leaf.next = next,
                    None => member = None,
                }
            }
            match member {
                None => leaf.alive = false,
                Some(n) => {
                    self.obligations
                        .push(new_obligation(n, li, Role::Member, leaf.positive))
                }
            }
            self.set_leaf(li as usize, leaf);
        }
        let mut f = self.frames[t];
        f.phase = Phase::ObjColon;
        f.member_key = fin(TAG_STR, self.lex.hash, self.lex.hash2);
        f.slot_start = start;
        f.slot_end = self.obligations.len() as u32;
        self.set_frame(t, f);
        self.set_lex(Lex::default());
        let mode = self.slot_mode(g, t);
        let mut f = self.frames[t];
        f.slot_mode = mode;
        self.set_frame(t, f);
        self.frame_viable(g, t)
    }

    /// Whether some literal set in `row` (a [`ObjSpec::reach`] row, `nlit` literals) that
    /// `leaf` has not seen satisfies `pred`.
    pub(super) fn some_literal(
        &self,
        row: &[u64],
        leaf: &Leaf,
        nlit: usize,
        mut pred: impl FnMut(u32) -> bool,
    ) -> bool {
        let seen_words = nlit.div_ceil(64).max(1);
        for (wi, &word) in row.iter().enumerate() {
            let seen = if wi == 0 {
                leaf.seen
            } else if wi < seen_words {
                self.bits[(leaf.ext + wi as u32 - 1) as usize]
            } else {
                0
            };
            let mut w = word & !seen;
            while w != 0 {
                let lit = wi as u32 * 64 + w.trailing_zeros();
                w &= w - 1;
                if (lit as usize) < nlit && pred(lit) {
                    return true;
                }
            }
        }
        false
    }

    /// For an object leaf held to the schema's order ([`Leaf::next`]): its position after one
    /// more key, the literal `lit` or (`None`) a key that is none of its literals, with
    /// `count` keys written by then. `None` when that key leaves the leaf no way to complete:
    /// it comes before the position, passes over a property that is required (or that a
    /// written key depends on) and not written yet, or leaves too few keys for
    /// `minProperties`.
    pub(super) fn order_after(
        &self,
        g: &Grammar,
        leaf: &Leaf,
        spec: &ObjSpec,
        lit: Option<u32>,
        count: u64,
    ) -> Option<u32> {
        let listed = spec.listed;
        let at = leaf.next;
        let next = match lit {
            Some(i) if i < listed => {
                if i < at {
                    return None;
                }
                i + 1
            }
            _ => listed,
        };
        let seen = |j: u32| lit == Some(j) || self.seen(leaf, j);
        // Listed properties the position moves past; those before `at` were checked when it
        // moved past them.
        let passed = |j: u32| j >= at && j < next && !seen(j);
        if spec.required.iter().any(|&r| passed(r)) {
            return None;
        }
        for (k, deps) in &spec.dependent_required {
            let own = lit == Some(*k);
            if (own || self.seen(leaf, *k))
                && deps
                    .iter()
                    .any(|&d| if own { d < next && !seen(d) } else { passed(d) })
            {
                return None;
            }
        }
        if spec.min_props > count {
            // With no key outside the literals allowed, only literals after the position and
            // those outside `properties` remain to be written.
            let dfa = g.dfa(spec.key_dfa);
            let start = dfa.start();
            if !spec.nonlit_reachable(dfa, start) {
                let row = spec.reach_row(dfa, start);
                let room = (next..spec.lits.len() as u32)
                    .filter(|&j| row[j as usize / 64] & (1 << (j % 64)) != 0 && !seen(j))
                    .count() as u64;
                if count + room < spec.min_props {
                    return None;
                }
            }
        }
        Some(next)
    }

    /// Whether the leaf's order (if it is held to one) lets its next key be one that is none
    /// of its literals.
    pub(super) fn nonlit_in_order(&self, g: &Grammar, leaf: &Leaf, spec: &ObjSpec) -> bool {
        leaf.next == NONE
            || self
                .order_after(g, leaf, spec, None, leaf.count as u64 + 1)
                .is_some()
    }

    /// Whether every continuation of a key from `state`, in the key DFA of `leaf`'s `spec`,
    /// keeps a non-literal key acceptable to the leaf (its order included).
    pub(super) fn key_universal(
        &self,
        g: &Grammar,
        leaf: &Leaf,
        spec: &ObjSpec,
        state: u32,
    ) -> bool {
        spec.key_universal(g.dfa(spec.key_dfa), state) && self.nonlit_in_order(g, leaf, spec)
    }
}
