//! `unevaluatedProperties` and `unevaluatedItems`, lowered into ordinary keywords.
//!
//! `unevaluatedProperties: U` applies `U` to the members that no passing in-place subschema
//! evaluated: none named by a `properties`, matched by a `patternProperties`, or taken by an
//! `additionalProperties` or `unevaluatedProperties`, of the schema itself or of its in-place
//! subschemas (`allOf`, `$ref`, and the passing ones of `anyOf`, `oneOf`, `if`/`then`/`else`),
//! recursively. Items likewise: `prefixItems` evaluate a prefix, `items` (and
//! `additionalItems`, `unevaluatedItems`) the rest.
//!
//! `allOf` members all pass on a valid value, so what they evaluate is known at compile time,
//! and for a set `E` of names and patterns the keyword is one more `allOf` member,
//! `{"properties": {name: true…}, "patternProperties": {pattern: true…},
//! "additionalProperties": U}` (for items `{"prefixItems": [true…], "items": U}`), or nothing
//! where some subschema evaluates every member.
//!
//! Where branches that evaluate something may pass or fail, the evaluated set is the static
//! one plus that of the branches that pass, and the keyword becomes an `anyOf` over the
//! choices: for `anyOf` each non-empty set of its branches, for `oneOf` each branch, for
//! `if` its passing (with `then`) or failing (with `else`); each choice is the `allOf` of its
//! branches (or of `not` of `if`) and the member for its evaluated set. A valid value passes
//! the choice of exactly the branches it passes, which evaluates most; a choice of fewer
//! branches applies `U` to more members, so it passes only where that one does. Up to
//! [`MAX_CHOICES`] choices are spelled out.
//!
//! Unsupported, with the reason: a `contains` (it evaluates the items it matches, which
//! depends on each item), `dependentSchemas` that evaluate something (they apply when a key
//! is present), branches that evaluate through branches of their own, and more choices than
//! the bound.

use std::collections::HashSet;

use super::{Loc, Lowering, Node, NodeId, Schema};
use crate::error::CompileError;
use crate::options::Draft;
use crate::report::{Note, NoteKind};

/// The most choices one `unevaluated*` keyword is spelled out as.
const MAX_CHOICES: usize = 64;

/// The most branches of one `anyOf` whose subsets are spelled out.
const MAX_ANY_OF: usize = 6;

/// What subschemas evaluate, whatever the instance.
#[derive(Default, Clone)]
struct Evaluated {
    names: Vec<String>,
    patterns: Vec<String>,
    /// The longest `prefixItems`.
    prefix: usize,
    /// Some subschema evaluates every member (or item past the prefixes).
    all: bool,
}

impl Evaluated {
    fn add(&mut self, other: &Evaluated) {
        self.names.extend(other.names.iter().cloned());
        self.patterns.extend(other.patterns.iter().cloned());
        self.prefix = self.prefix.max(other.prefix);
        self.all |= other.all;
    }
}

/// In-place branches that evaluate something and may pass or fail.
enum Group {
    AnyOf(Vec<NodeId>),
    OneOf(Vec<NodeId>),
    If(NodeId, Option<NodeId>, Option<NodeId>),
}

/// Which annotations are being collected.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Of {
    Properties,
    Items,
}

impl Of {
    fn keyword(self) -> &'static str {
        match self {
            Of::Properties => "unevaluatedProperties",
            Of::Items => "unevaluatedItems",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Of::Properties => "members",
            Of::Items => "items",
        }
    }
}

/// One way the branches may pass: the subschemas that then pass, and what is evaluated.
struct Choice {
    pass: Vec<NodeId>,
    /// `if` subschemas that then fail.
    fail: Vec<NodeId>,
    evaluated: Evaluated,
}

impl Lowering<'_> {
    /// Lowers the `unevaluated*` keywords of `s` (at `loc`) into `allOf` or `anyOf` members.
    pub(super) fn lower_unevaluated(
        &mut self,
        loc: &Loc,
        s: &mut Schema,
    ) -> Result<(), CompileError> {
        let (_, draft) = self.scope_of(loc);
        for of in [Of::Properties, Of::Items] {
            let u = match of {
                Of::Properties => s.unevaluated_properties,
                Of::Items => s.unevaluated_items,
            };
            let Some(u) = u else { continue };
            if matches!(self.node(u), Node::True) {
                // Asserts nothing; kept only for its annotations.
                continue;
            }
            if draft < Draft::Draft2019 {
                // Not a keyword of the draft: an unknown keyword, which asserts nothing.
                self.notes.push(Note {
                    kind: NoteKind::Ignored,
                    keyword: of.keyword().into(),
                    pointer: self.loc_string(loc),
                    detail: "unknown keyword before 2019-09 (an annotation)".into(),
                });
                continue;
            }
            let choices = match self.choices(s, of) {
                Ok(c) => c,
                Err(reason) => {
                    self.relax(of.keyword(), loc, reason)?;
                    continue;
                }
            };
            if let [only] = &choices[..] {
                if !only.evaluated.all {
                    let member = self.unevaluated_member(s, of, &only.evaluated, u)?;
                    s.all_of.push(member);
                }
                continue;
            }
            let mut terms = Vec::with_capacity(choices.len());
            for c in choices {
                let mut term = Schema {
                    loc: format!("{}/{}", s.loc, of.keyword()),
                    all_of: c.pass,
                    ..Schema::default()
                };
                term.not = c.fail;
                if !c.evaluated.all {
                    term.all_of
                        .push(self.unevaluated_member(s, of, &c.evaluated, u)?);
                }
                terms.push(self.add_node(Node::Schema(Box::new(term)))?);
            }
            s.any_of.push(terms);
        }
        Ok(())
    }

    /// The subschema that applies `u` to what `evaluated` leaves out.
    fn unevaluated_member(
        &mut self,
        s: &Schema,
        of: Of,
        evaluated: &Evaluated,
        u: NodeId,
    ) -> Result<NodeId, CompileError> {
        let yes = self.add_node(Node::True)?;
        let mut m = Schema {
            loc: format!("{}/{}", s.loc, of.keyword()),
            ..Schema::default()
        };
        let mut names = evaluated.names.clone();
        names.sort();
        names.dedup();
        let mut patterns = evaluated.patterns.clone();
        patterns.sort();
        patterns.dedup();
        match of {
            Of::Properties => {
                m.properties = names.into_iter().map(|n| (n, yes)).collect();
                m.pattern_properties = patterns.into_iter().map(|p| (p, yes)).collect();
                m.additional_properties = Some(u);
            }
            Of::Items => {
                m.prefix_items = vec![yes; evaluated.prefix];
                m.items = Some(u);
            }
        }
        self.add_node(Node::Schema(Box::new(m)))
    }

    /// The ways the in-place branches of `s` may pass, each with what is then evaluated, or
    /// why they cannot be spelled out.
    fn choices(&self, s: &Schema, of: Of) -> Result<Vec<Choice>, String> {
        let mut base = Evaluated::default();
        let mut groups = Vec::new();
        self.collect(s, of, &mut base, &mut groups, &mut HashSet::new())?;
        if base.all {
            // Whatever the branches do, everything is evaluated.
            groups.clear();
        }
        let mut choices = vec![Choice {
            pass: Vec::new(),
            fail: Vec::new(),
            evaluated: base,
        }];
        for g in groups {
            // The ways this group may pass: (passing, failing `if`s, evaluated).
            let mut ways: Vec<(Vec<NodeId>, Vec<NodeId>, Evaluated)> = Vec::new();
            match g {
                Group::AnyOf(bs) => {
                    if bs.len() > MAX_ANY_OF {
                        return Err(format!(
                            "an `anyOf` of {} branches that evaluate {} (at most {MAX_ANY_OF} \
                             are spelled out)",
                            bs.len(),
                            of.what()
                        ));
                    }
                    let each = bs
                        .iter()
                        .map(|&b| self.static_evaluated(b, of))
                        .collect::<Result<Vec<_>, _>>()?;
                    for set in 1u32..(1 << bs.len()) {
                        let mut e = Evaluated::default();
                        let mut pass = Vec::new();
                        for (i, &b) in bs.iter().enumerate() {
                            if set & (1 << i) != 0 {
                                pass.push(b);
                                e.add(&each[i]);
                            }
                        }
                        ways.push((pass, Vec::new(), e));
                    }
                }
                Group::OneOf(bs) => {
                    for &b in &bs {
                        ways.push((vec![b], Vec::new(), self.static_evaluated(b, of)?));
                    }
                }
                Group::If(i, t, el) => {
                    let mut yes = self.static_evaluated(i, of)?;
                    if let Some(t) = t {
                        yes.add(&self.static_evaluated(t, of)?);
                    }
                    let no = match el {
                        Some(el) => self.static_evaluated(el, of)?,
                        None => Evaluated::default(),
                    };
                    ways.push((vec![i], Vec::new(), yes));
                    ways.push((Vec::new(), vec![i], no));
                }
            }
            if choices.len() * ways.len() > MAX_CHOICES {
                return Err(format!(
                    "the branches that evaluate {} may pass in more than {MAX_CHOICES} ways",
                    of.what()
                ));
            }
            let mut next = Vec::with_capacity(choices.len() * ways.len());
            for c in &choices {
                for (pass, fail, e) in &ways {
                    let mut evaluated = c.evaluated.clone();
                    evaluated.add(e);
                    next.push(Choice {
                        pass: c.pass.iter().chain(pass).copied().collect(),
                        fail: c.fail.iter().chain(fail).copied().collect(),
                        evaluated,
                    });
                }
            }
            choices = next;
        }
        Ok(choices)
    }

    /// What node `n` evaluates whenever it passes: an error where that depends on its own
    /// branches.
    fn static_evaluated(&self, n: NodeId, of: Of) -> Result<Evaluated, String> {
        let mut e = Evaluated::default();
        let mut groups = Vec::new();
        if self.in_progress.contains(&n) {
            return Err("a subschema reaches itself through in-place subschemas".into());
        }
        if let Node::Schema(s) = self.node(n) {
            e.all |= self.inner_unevaluated(s, of);
            self.collect(s, of, &mut e, &mut groups, &mut HashSet::new())?;
        }
        if groups.is_empty() || e.all {
            Ok(e)
        } else {
            Err(format!(
                "a branch evaluates {} through branches of its own",
                of.what()
            ))
        }
    }

    /// Whether `s` has an `unevaluated*` of kind `of`, which evaluates everything `s` left.
    fn inner_unevaluated(&self, s: &Schema, of: Of) -> bool {
        match of {
            Of::Properties => s.unevaluated_properties.is_some(),
            Of::Items => s.unevaluated_items.is_some(),
        }
    }

    /// Adds to `e` what `s` and its `allOf` members evaluate, and to `groups` the branches
    /// among them that evaluate something and may pass or fail.
    fn collect(
        &self,
        s: &Schema,
        of: Of,
        e: &mut Evaluated,
        groups: &mut Vec<Group>,
        seen: &mut HashSet<NodeId>,
    ) -> Result<(), String> {
        match of {
            Of::Properties => {
                e.names.extend(s.properties.iter().map(|(n, _)| n.clone()));
                e.patterns
                    .extend(s.pattern_properties.iter().map(|(p, _)| p.clone()));
                e.all |= s.additional_properties.is_some();
            }
            Of::Items => {
                if s.contains.is_some() {
                    return Err(format!(
                        "`contains` at {} evaluates the items it matches, which depends on each \
                         item",
                        s.loc
                    ));
                }
                e.prefix = e.prefix.max(s.prefix_items.len());
                e.all |= s.items.is_some();
            }
        }
        for &child in &s.all_of {
            if !seen.insert(child) {
                continue;
            }
            if self.in_progress.contains(&child) {
                return Err(format!(
                    "{} reaches itself through in-place subschemas",
                    s.loc
                ));
            }
            if let Node::Schema(c) = self.node(child) {
                e.all |= self.inner_unevaluated(c, of);
                self.collect(c, of, e, groups, seen)?;
            }
        }
        let evaluate = |bs: &[NodeId]| -> Result<bool, String> {
            for &b in bs {
                if self.evaluates(b, of, &mut HashSet::new())? {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        for bs in &s.any_of {
            if evaluate(bs)? {
                groups.push(Group::AnyOf(bs.clone()));
            }
        }
        for bs in &s.one_of {
            if evaluate(bs)? {
                groups.push(Group::OneOf(bs.clone()));
            }
        }
        if let Some((i, t, el)) = s.conditional {
            let parts: Vec<NodeId> = [Some(i), t, el].into_iter().flatten().collect();
            if evaluate(&parts)? {
                groups.push(Group::If(i, t, el));
            }
        }
        for (key, d) in &s.dependent_schemas {
            if evaluate(&[*d])? {
                return Err(format!(
                    "the `dependentSchemas` subschema of `{key}` at {} evaluates {} when the \
                     key is present",
                    s.loc,
                    of.what()
                ));
            }
        }
        Ok(())
    }

    /// Whether node `n` or one of its in-place subschemas produces annotations of kind `of`.
    fn evaluates(&self, n: NodeId, of: Of, seen: &mut HashSet<NodeId>) -> Result<bool, String> {
        if !seen.insert(n) {
            return Ok(false);
        }
        if self.in_progress.contains(&n) {
            return Err("a subschema reaches itself through in-place subschemas".into());
        }
        let Node::Schema(s) = self.node(n) else {
            return Ok(false);
        };
        let own = match of {
            Of::Properties => {
                !s.properties.is_empty()
                    || !s.pattern_properties.is_empty()
                    || s.additional_properties.is_some()
                    || s.unevaluated_properties.is_some()
            }
            Of::Items => {
                !s.prefix_items.is_empty()
                    || s.items.is_some()
                    || s.contains.is_some()
                    || s.unevaluated_items.is_some()
            }
        };
        if own {
            return Ok(true);
        }
        let children = s
            .all_of
            .iter()
            .copied()
            .chain(s.any_of.iter().chain(&s.one_of).flatten().copied())
            .chain(s.dependent_schemas.iter().map(|(_, n)| *n))
            .chain(
                s.conditional
                    .iter()
                    .flat_map(|&(i, t, el)| [Some(i), t, el])
                    .flatten(),
            );
        for c in children {
            if self.evaluates(c, of, seen)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
