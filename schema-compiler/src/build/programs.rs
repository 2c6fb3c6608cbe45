//! Formulas over container leaves and the templates built from them.
//!
//! For objects and arrays a node becomes an [`Expr`] over leaves (the object or array keywords of
//! one schema, an [`ObjSpec`] or [`ArrSpec`]), flattened into a [`Program`] the matcher
//! evaluates. [`Builder::build_templates`] makes the template of every node reachable as a value.

use super::{Builder, Lang, no_value_between, tightest, value_kind};
use crate::dfa::{DEAD, Dfa, LazyBudgets, LazyFlags};
use crate::error::CompileError;
use crate::ir::{Node, NodeId, Schema, TypeSet};
use crate::tables::{
    ArrSpec, EMPTY_LEXER, Kind, LeafSpec, Lexer, LexerId, ObjSpec, Op, Program, ValueTemplate,
};
use crate::text::ecma;
use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;
use std::sync::Arc;

/// A boolean formula over container leaves, before flattening.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Expr {
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

pub(super) fn and(mut xs: Vec<Expr>) -> Expr {
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

pub(super) fn or(mut xs: Vec<Expr>) -> Expr {
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

impl Builder<'_> {
    pub(super) fn expr(&mut self, node: NodeId, kind: Kind) -> Result<Expr, CompileError> {
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

    pub(super) fn expr_uncached(&mut self, node: NodeId, kind: Kind) -> Result<Expr, CompileError> {
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
    pub(super) fn const_node(&mut self, value: &Value, loc: &str) -> Result<NodeId, CompileError> {
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
    pub(super) fn conj(&mut self, mut parts: Vec<NodeId>) -> Result<Option<NodeId>, CompileError> {
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

    pub(super) fn obj_spec(&mut self, node: NodeId, s: &Schema) -> Result<u32, CompileError> {
        if let Some(&id) = self.obj_spec_memo.get(&node) {
            return Ok(id);
        }
        let loc = s.loc.clone();
        // Literal names: properties, then required and dependency names.
        let mut lits: Vec<String> = s.properties.iter().map(|(k, _)| k.clone()).collect();
        // Each literal's index in `lits`.
        let mut lit_index: HashMap<String, u32> = lits
            .iter()
            .enumerate()
            .map(|(i, l)| (l.clone(), i as u32))
            .collect();
        let mut add = |n: &String, lits: &mut Vec<String>| {
            if !lit_index.contains_key(n) {
                lit_index.insert(n.clone(), lits.len() as u32);
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
        let declared_node: HashMap<&str, NodeId> =
            s.properties.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        // Patterns: each one's whole language (lookaheads included), for the literal names;
        // and for the key DFA, its regex without leading lookaheads, which edit the match sets
        // afterwards.
        let as_pattern_properties = |e: CompileError| match e {
            CompileError::Unsupported {
                keyword, reason, ..
            }
            | CompileError::Invalid {
                keyword, reason, ..
            } if keyword == "pattern" => CompileError::Unsupported {
                keyword: "patternProperties".into(),
                pointer: loc.clone(),
                reason,
            },
            other => other,
        };
        let mut pat_res = Vec::new();
        let mut pat_dfas: Vec<Arc<Dfa>> = Vec::new();
        let mut lookaheads = Vec::new();
        for (i, (p, _)) in s.pattern_properties.iter().enumerate() {
            let whole = self.pattern_dfa(p, &loc).map_err(as_pattern_properties)?;
            pat_dfas.push(self.dfas[whole as usize].clone());
            let rest = match ecma::split_leading_lookaheads(p) {
                Some(split) => {
                    for (negative, look) in &split.lookaheads {
                        let id = self
                            .pattern_part_dfa(look, p, &loc)
                            .map_err(as_pattern_properties)?;
                        lookaheads.push((i, *negative, id));
                    }
                    split.rest
                }
                None => p.clone(),
            };
            let re = ecma::pattern_language(&rest).map_err(|e| CompileError::Unsupported {
                keyword: "patternProperties".into(),
                pointer: loc.clone(),
                reason: format!("{e} in /{p}/"),
            })?;
            pat_res.push(re);
        }
        let additional = s.additional_properties;
        let additional_allowed = !matches!(additional.map(|a| self.node(a)), Some(Node::False));
        // Member node per literal.
        let mut lit_member = Vec::with_capacity(lits.len());
        for name in &lits {
            let mut parts = Vec::new();
            let declared = declared_node.get(name.as_str()).copied();
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
        // Key DFA: literals, patterns, catch-all (without patterns, built from a trie).
        let nlit = lits.len();
        let npat = pat_res.len();
        let mut key_dfa = if nlit + npat == 0 && !additional_allowed {
            Dfa::empty()
        } else if npat == 0 {
            let d = crate::dfa::cached_names(&lits, additional_allowed, self.limits())
                .map_err(|e| self.dfa_error(e, &loc, "property names"))?;
            Dfa::clone(&d)
        } else {
            let mut res: Vec<String> = lits.iter().map(|l| regex_syntax::escape(l)).collect();
            res.extend(pat_res.iter().cloned());
            if additional_allowed {
                res.push(crate::dfa::ANY_STRING.into());
            }
            let d = crate::dfa::cached_regexes(&res, self.limits())
                .map_err(|e| self.dfa_error(e, &loc, "property names"))?;
            Dfa::clone(&d)
        };
        // A pattern's lookaheads keep or drop it from the match sets of the keys they govern.
        for &(i, negative, look) in &lookaheads {
            let pattern = (nlit + i) as u32;
            let look = self.dfas[look as usize].clone();
            key_dfa = key_dfa
                .edit_match_sets(
                    &look,
                    |set, seen| {
                        set.iter()
                            .copied()
                            .filter(|&j| j != pattern || seen != negative)
                            .collect()
                    },
                    self.limits(),
                )
                .map_err(|e| self.dfa_error(e, &loc, "patternProperties"))?;
        }
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
        let lit_id = |name: &str| lit_index[name];
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
        let mut spec = ObjSpec {
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
            required_unwritable: false,
            keys_at_most: None,
            min_props: s.min_properties,
            max_props: s.max_properties,
            dependent_required,
            reach: Vec::new(),
            reach_words: 0,
            key_flags: LazyFlags::default(),
            key_budgets: LazyBudgets::default(),
        };
        refresh_reach(&mut spec, &self.dfas[key_id as usize]);
        self.obj_specs.push(spec);
        let id = self.obj_specs.len() as u32 - 1;
        self.obj_spec_memo.insert(node, id);
        Ok(id)
    }

    pub(super) fn arr_spec(&mut self, node: NodeId, s: &Schema) -> Result<u32, CompileError> {
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

    pub(super) fn program(&mut self, e: Expr) -> Option<u32> {
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

    pub(super) fn lexer(&mut self, l: Lang) -> LexerId {
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
            self.check_deadline(&self.loc(n), "value template")?;
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
        if self.templates[&root].takes_no_value() {
            return Err(CompileError::Unsatisfiable {
                pointer: self.loc(root),
                reason: self.unsatisfiable_reason(root),
            });
        }
        Ok(())
    }

    /// Why no value is valid under `node`, as far as its own keywords tell.
    pub(super) fn unsatisfiable_reason(&self, node: NodeId) -> String {
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
}

/// Works out `spec`'s reach table from its members and key DFA `key_dfa` (see
/// [`key_reach`]), and what it decides for the whole object ([`ObjSpec::note_reach`]): when
/// the spec is built, and again whenever its members change.
pub(super) fn refresh_reach(spec: &mut ObjSpec, key_dfa: &Dfa) {
    (spec.reach, spec.reach_words) = key_reach(key_dfa, &spec.lit_member, &spec.set_member);
    spec.note_reach(key_dfa.index(key_dfa.start()));
}

/// Per state of an object's key DFA, the outcomes still reachable from it: a bit per literal
/// whose member takes a value (`lit_member`), and one for the non-literal keys of a match set
/// whose member does (`set_member`); with the words each state takes.
fn key_reach(
    key_dfa: &Dfa,
    lit_member: &[Option<NodeId>],
    set_member: &[Option<NodeId>],
) -> (Vec<u64>, usize) {
    let nlit = lit_member.len();
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
    // Each state's distinct successors (most byte classes of a state lead to the same few
    // states), then the least fixpoint of "a state reaches what its successors reach".
    let reps = key_dfa.class_reps();
    let mut succ: Vec<(usize, Vec<usize>)> = Vec::with_capacity(states.len());
    for &st in states[1..].iter().rev() {
        let mut next: Vec<usize> = reps
            .iter()
            .map(|&b| key_dfa.next(st, b))
            .filter(|&t| t != DEAD)
            .map(|t| key_dfa.index(t))
            .collect();
        next.sort_unstable();
        next.dedup();
        succ.push((key_dfa.index(st), next));
    }
    loop {
        let mut changed = false;
        for (i, next) in &succ {
            for &j in next {
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
    (reach, words)
}
