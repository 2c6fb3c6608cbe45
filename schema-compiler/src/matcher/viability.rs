//! Viability: whether the document can still become valid, from the obligations of each frame.
//!
//! An obligation's program is a formula over leaves ([`crate::tables::Program`]); each leaf
//! says whether it can still pass and whether it can still fail ([`PassFail`]), and the
//! formula combines them. The slot's [`Mode`] says how the current member's or item's
//! obligations decide: all of them, any of them, or none (the frame survives their failing).

use super::state::{Core, Frame, FrameKind, LexKind, Mode, NONE, Obligation, Phase, Role, State};
use crate::dfa::DEAD;
use crate::grammar::Grammar;
use crate::tables::{LeafSpec, Op};

/// One (can pass, can fail) pair per formula value.
pub(super) type PassFail = (bool, bool);

impl State {
    /// The mode of frame `t`'s current slot.
    pub(super) fn slot_mode(&self, g: &Grammar, t: usize) -> Mode {
        let f = &self.frames[t];
        if f.mode == Mode::Free {
            return Mode::Free;
        }
        let slot = &self.obligations[f.slot_start as usize..f.slot_end as usize];
        if !slot
            .iter()
            .any(|o| matches!(o.role, Role::Member | Role::Item | Role::Root))
        {
            return Mode::Free;
        }
        if f.kind == FrameKind::Document {
            return Mode::All;
        }
        // Free if the frame survives every sink leaf dying.
        let dead = DeadSinks::all(slot);
        if self.frame_viable_keys(g, t, &dead, false) {
            return Mode::Free;
        }
        // Every obligation must pass only where each is one the document loses by failing: a
        // counted `contains` under `maxContains` (or a negated one) may fail, and so may
        // what its own parts ask of the slot (`{"contains": {"items": false}, "maxContains": 0}`
        // takes `[[null]]`).
        let essential = self.obligations[f.obligations_start as usize..f.obligations_end as usize]
            .iter()
            .all(|o| o.failed || (o.positive && g.programs[o.prog as usize].all_essential));
        if f.mode == Mode::All && essential {
            Mode::All
        } else {
            Mode::Any
        }
    }

    pub(super) fn slot_viable(&self, g: &Grammar, t: usize) -> bool {
        let f = &self.frames[t];
        let mode = f.slot_mode;
        if mode == Mode::Free {
            return true;
        }
        let slot = &self.obligations[f.slot_start as usize..f.slot_end as usize];
        let alive =
            |o: &Obligation| !o.failed && self.can_pass_state(g, o, o.state, &self.lex.core);
        let mut any = false;
        let mut all = true;
        for o in slot.iter().filter(|o| o.role != Role::Contains) {
            let ok = alive(o);
            any |= ok;
            all &= ok;
        }
        if all {
            return true;
        }
        if mode == Mode::All || !any {
            return false;
        }
        // Some obligations can no longer pass: whether the frame survives their loss is the
        // frame's formula to say (`{"properties": {"a": P}, "anyOf": [...]}` needs P to pass
        // even though the `anyOf` branches accept any value of `a`).
        let dead = |i: usize| !alive(&slot[i]);
        self.frame_viable_keys(g, t, &DeadSinks::some(slot, &dead), false)
    }

    /// Whether a primitive obligation in DFA state `state` can still pass.
    pub(super) fn can_pass_state(
        &self,
        g: &Grammar,
        o: &Obligation,
        state: u32,
        core: &Core,
    ) -> bool {
        if state == DEAD {
            return false;
        }
        if self.lex.kind == LexKind::Str {
            let lexer = &g.lexers[o.lexer as usize];
            if let Some(max) = lexer.max_len {
                let need = match &g.min_chars[lexer.dfa as usize] {
                    Some(mc) => mc[g.dfa(lexer.dfa).index(state)] as u64,
                    None => 0,
                };
                let pending = u64::from(core.esc != 0);
                return core.count as u64 + pending + need <= max;
            }
        }
        true
    }

    pub(super) fn frame_viable(&self, g: &Grammar, t: usize) -> bool {
        self.frame_viable_keys(g, t, &DeadSinks::NONE, false)
    }

    /// Frame viability with `dead` leaves forced dead; with `walker`, object leaves take their
    /// key states from the lexeme walker's top.
    pub(super) fn frame_viable_keys(
        &self,
        g: &Grammar,
        t: usize,
        dead: &DeadSinks<'_>,
        walker: bool,
    ) -> bool {
        let f = &self.frames[t];
        if f.kind == FrameKind::Document || f.mode == Mode::Free {
            return true;
        }
        let mut any = false;
        let mut all = true;
        let mut some = false;
        for o in &self.obligations[f.obligations_start as usize..f.obligations_end as usize] {
            if o.role == Role::Contains {
                continue;
            }
            some = true;
            let ok = !o.failed
                && self
                    .eval(g, o, |li| {
                        let ks = if walker {
                            self.walk_key_state(li)
                        } else {
                            None
                        };
                        self.leaf_pass_fail(g, li, f, dead, o, ks)
                    })
                    .0;
            any |= ok;
            all &= ok;
        }
        if !some {
            return true;
        }
        if f.mode == Mode::All { all } else { any }
    }

    pub(super) fn leaf_pass_fail(
        &self,
        g: &Grammar,
        li: u32,
        f: &Frame,
        dead: &DeadSinks<'_>,
        o: &Obligation,
        key_state: Option<u32>,
    ) -> PassFail {
        let leaf = &self.leaves[li as usize];
        match leaf.spec {
            LeafSpec::KeySeen { leaf: l, lit } => {
                let seen = self.seen(&self.leaves[(o.leaf_base + l) as usize], lit);
                (true, !seen)
            }
            _ if !leaf.alive || dead.contains(li) => (false, true),
            LeafSpec::Object(s) => {
                let spec = &g.obj_specs[s as usize];
                if spec.meets_no_value() {
                    return (false, true);
                }
                let mut count = leaf.count as u64;
                if f.phase == Phase::ObjKeyNext {
                    count += 1;
                }
                // A key being lexed, or announced by `,`: some key not seen yet must still be
                // possible from where the key's text is.
                if matches!(f.phase, Phase::ObjKey | Phase::ObjKeyNext) {
                    let ks = if f.phase == Phase::ObjKey {
                        key_state.unwrap_or(leaf.key_state)
                    } else {
                        g.dfa(spec.key_dfa).start()
                    };
                    if ks == DEAD {
                        return (false, true);
                    }
                    let dfa = g.dfa(spec.key_dfa);
                    let nlit = spec.lits.len();
                    let row = spec.reach_row(dfa, ks);
                    let mut ok = spec.nonlit_reachable(dfa, ks);
                    if leaf.next != NONE {
                        // Held to the schema's order: some key reachable from here must also
                        // leave the leaf a way to complete.
                        let after = leaf.count as u64 + 1;
                        ok = ok && self.nonlit_in_order(g, leaf, spec)
                            || self.some_literal(row, leaf, nlit, |lit| {
                                self.order_after(g, leaf, spec, Some(lit), after).is_some()
                            });
                    } else if !ok {
                        ok = self.some_literal(row, leaf, nlit, |_| true);
                    }
                    if !ok {
                        return (false, true);
                    }
                    if f.phase == Phase::ObjKey {
                        count += 1;
                    }
                }
                if let Some(max) = spec.max_props {
                    let mut missing = spec
                        .required
                        .iter()
                        .filter(|&&r| !self.seen(leaf, r))
                        .count() as u64;
                    if !spec.dependent_required.is_empty() {
                        // Properties required by keys already written count too (once).
                        let mut more: Vec<u32> = Vec::new();
                        for (k, deps) in &spec.dependent_required {
                            if !self.seen(leaf, *k) {
                                continue;
                            }
                            for &d in deps {
                                if !self.seen(leaf, d)
                                    && !spec.required.contains(&d)
                                    && !more.contains(&d)
                                {
                                    more.push(d);
                                }
                            }
                        }
                        missing += more.len() as u64;
                    }
                    // The key being lexed, or announced by `,`, may be a missing one.
                    let pending = u64::from(matches!(f.phase, Phase::ObjKey | Phase::ObjKeyNext))
                        .min(missing);
                    if count + missing - pending > max {
                        return (false, true);
                    }
                }
                (true, true)
            }
            LeafSpec::Array(s) => {
                let spec = &g.arr_specs[s as usize];
                let mut count = leaf.count as u64;
                let mut contains = leaf.contains as u64;
                if matches!(f.phase, Phase::ArrValue | Phase::ArrInValue) {
                    count += 1;
                    contains += u64::from(spec.contains_all);
                }
                if spec.max_items.is_some_and(|m| count > m) {
                    return (false, true);
                }
                if spec.max_contains.is_some_and(|m| contains > m) {
                    return (false, true);
                }
                // Room must remain for the items `minContains` and `minItems` still need (the
                // one being parsed may be one of them).
                if let Some(m) = spec.max_items
                    && ((leaf.contains as u64).saturating_add(m.saturating_sub(leaf.count as u64))
                        < spec.min_contains
                        || m < spec.min_items)
                {
                    return (false, true);
                }
                if spec.meets_no_value() {
                    return (false, true);
                }
                (true, true)
            }
        }
    }

    pub(super) fn leaf_final(&self, g: &Grammar, li: u32, o: &Obligation) -> bool {
        let leaf = &self.leaves[li as usize];
        match leaf.spec {
            LeafSpec::KeySeen { leaf: l, lit } => {
                self.seen(&self.leaves[(o.leaf_base + l) as usize], lit)
            }
            _ if !leaf.alive => false,
            LeafSpec::Object(s) => {
                let spec = &g.obj_specs[s as usize];
                let count = leaf.count as u64;
                count >= spec.min_props
                    && spec.max_props.is_none_or(|m| count <= m)
                    && spec.required.iter().all(|&r| self.seen(leaf, r))
                    && spec.dependent_required.iter().all(|(k, deps)| {
                        !self.seen(leaf, *k) || deps.iter().all(|&d| self.seen(leaf, d))
                    })
            }
            LeafSpec::Array(s) => {
                let spec = &g.arr_specs[s as usize];
                let count = leaf.count as u64;
                let c = leaf.contains as u64;
                count >= spec.min_items
                    && spec.max_items.is_none_or(|m| count <= m)
                    && c >= spec.min_contains
                    && spec.max_contains.is_none_or(|m| c <= m)
            }
        }
    }

    pub(super) fn eval_final(&self, g: &Grammar, o: &Obligation) -> bool {
        self.eval(g, o, |li| {
            let v = self.leaf_final(g, li, o);
            (v, !v)
        })
        .0
    }

    pub(super) fn eval(
        &self,
        g: &Grammar,
        o: &Obligation,
        leaf: impl Fn(u32) -> PassFail,
    ) -> PassFail {
        let prog = &g.programs[o.prog as usize];
        let mut stack = smallstack::Stack::new();
        for op in &prog.ops {
            match *op {
                Op::True => stack.push((true, false)),
                Op::False => stack.push((false, true)),
                Op::Leaf(i) => stack.push(leaf(o.leaf_base + i)),
                Op::Not => {
                    let (p, q) = stack.pop();
                    stack.push((q, p));
                }
                Op::And(n) => {
                    let (mut p, mut q) = (true, false);
                    for _ in 0..n {
                        let (a, b) = stack.pop();
                        p &= a;
                        q |= b;
                    }
                    stack.push((p, q));
                }
                Op::Or(n) => {
                    let (mut p, mut q) = (false, true);
                    for _ in 0..n {
                        let (a, b) = stack.pop();
                        p |= a;
                        q &= b;
                    }
                    stack.push((p, q));
                }
                Op::OneOf(n) => {
                    // Exact for decided values; otherwise "can pass" if some can pass.
                    let mut passes = 0;
                    let mut undecided = false;
                    let mut can = false;
                    for _ in 0..n {
                        let (a, b) = stack.pop();
                        if a && !b {
                            passes += 1;
                        }
                        if a && b {
                            undecided = true;
                        }
                        can |= a;
                    }
                    if undecided {
                        stack.push((can && passes <= 1, true));
                    } else {
                        stack.push((passes == 1, passes != 1));
                    }
                }
            }
        }
        stack.pop()
    }
}

/// Leaves treated as dead: the sinks of a slot's member and item obligations.
pub(super) struct DeadSinks<'a> {
    pub(super) slot: &'a [Obligation],
    /// Which obligations of `slot` (by position) are dead.
    pub(super) dead: &'a dyn Fn(usize) -> bool,
    /// Leaves taken as dead besides those sinks.
    pub(super) leaves: &'a dyn Fn(u32) -> bool,
    /// The slot's obligations come in order of their sinks (as a key's or an item's are
    /// made, leaf by leaf), so a leaf's are found by binary search, not by a scan: a frame of
    /// `n` leaves (an `anyOf` of thousands of objects) is then judged in `O(n log n)`.
    pub(super) sorted: bool,
}

pub(super) fn every(_: usize) -> bool {
    true
}

pub(super) fn no_leaf(_: u32) -> bool {
    false
}

impl<'a> DeadSinks<'a> {
    /// No leaf is forced dead.
    pub(super) const NONE: DeadSinks<'static> = DeadSinks {
        slot: &[],
        dead: &every,
        leaves: &no_leaf,
        sorted: true,
    };

    /// The sinks of the obligations of `slot` that `dead` selects, and the `leaves` besides.
    pub(super) fn new(
        slot: &'a [Obligation],
        dead: &'a dyn Fn(usize) -> bool,
        leaves: &'a dyn Fn(u32) -> bool,
    ) -> Self {
        DeadSinks {
            slot,
            dead,
            leaves,
            sorted: slot.is_sorted_by_key(|o| o.sink),
        }
    }

    /// The sinks of every obligation of `slot`.
    pub(super) fn all(slot: &'a [Obligation]) -> Self {
        Self::new(slot, &every, &no_leaf)
    }

    /// The sinks of the obligations of `slot` that `dead` selects.
    pub(super) fn some(slot: &'a [Obligation], dead: &'a dyn Fn(usize) -> bool) -> Self {
        Self::new(slot, dead, &no_leaf)
    }

    pub(super) fn contains(&self, leaf: u32) -> bool {
        if (self.leaves)(leaf) {
            return true;
        }
        let sinks_here = |(i, o): (usize, &Obligation)| {
            o.sink == leaf && matches!(o.role, Role::Member | Role::Item) && (self.dead)(i)
        };
        if self.sorted {
            let from = self.slot.partition_point(|o| o.sink < leaf);
            self.slot[from..]
                .iter()
                .take_while(|o| o.sink == leaf)
                .enumerate()
                .any(|(i, o)| sinks_here((from + i, o)))
        } else {
            self.slot.iter().enumerate().any(sinks_here)
        }
    }
}

mod smallstack {
    //! A fixed-capacity stack for formula evaluation, spilling to the heap when deep.
    use super::PassFail;

    pub struct Stack {
        inline: [PassFail; 32],
        len: usize,
        spill: Vec<PassFail>,
    }

    impl Stack {
        pub fn new() -> Stack {
            Stack {
                inline: [(false, false); 32],
                len: 0,
                spill: Vec::new(),
            }
        }

        pub fn push(&mut self, v: PassFail) {
            if self.len < 32 {
                self.inline[self.len] = v;
            } else {
                self.spill.push(v);
            }
            self.len += 1;
        }

        pub fn pop(&mut self) -> PassFail {
            self.len -= 1;
            if self.len < 32 {
                self.inline[self.len]
            } else {
                self.spill.pop().unwrap_or_default()
            }
        }
    }
}
