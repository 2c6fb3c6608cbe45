//! `unevaluatedProperties` and `unevaluatedItems`, lowered into ordinary keywords.
//!
//! `unevaluatedProperties: U` applies `U` to the members that no passing in-place subschema
//! evaluated: none named by a `properties`, matched by a `patternProperties`, or taken by an
//! `additionalProperties` or `unevaluatedProperties`, of the schema itself or of its in-place
//! subschemas (`allOf`, `$ref`, and the passing ones of `anyOf`, `oneOf`, `if`/`then`/`else`
//! and `dependentSchemas`), recursively. Items likewise: `prefixItems` evaluate a prefix,
//! `items` (and `additionalItems`, `unevaluatedItems`) the rest, and a `contains` the items it
//! matches.
//!
//! `allOf` members all pass on a valid value, so what they evaluate is known at compile time,
//! and for a set `E` of names and patterns the keyword is one more `allOf` member,
//! `{"properties": {name: true…}, "patternProperties": {pattern: true…},
//! "additionalProperties": U}` (for items `{"prefixItems": [true…], "items": U}`, with
//! `"items": {"anyOf": [C…, U]}` where `contains` subschemas `C` evaluate the items they
//! match), or nothing where some subschema evaluates every member.
//!
//! Where branches that evaluate something may pass or fail, the evaluated set is the static
//! one plus that of the branches that pass, and the keyword becomes an `anyOf` over the
//! choices: for `anyOf` each non-empty set of its branches, for `oneOf` each branch, for `if`
//! its passing (with `then`) or failing (with `else`), for `dependentSchemas` its key present
//! (with its subschema) or absent; each choice, the branches' own choices within. A choice is
//! the `allOf` of what it takes to pass or fail and of the member for its evaluated set. A
//! valid value passes the choice of exactly the branches it passes, which evaluates most; a
//! choice of fewer branches applies `U` to more, so it passes only where that one does. Up to
//! [`MAX_CHOICES`] choices are spelled out; past that the keyword is unsupported, with that
//! reason.

use std::collections::HashSet;

use super::{Loc, Lowering, Node, NodeId, Schema, TypeSet};
use crate::error::CompileError;
use crate::options::Draft;
use crate::report::{Note, NoteKind};

/// The most choices one `unevaluated*` keyword is spelled out as.
const MAX_CHOICES: usize = 64;

/// The most branches of one `anyOf` whose subsets are spelled out.
const MAX_ANY_OF: usize = 6;

/// How deep branches within branches are followed.
const MAX_NESTING: u32 = 16;

/// What subschemas evaluate, whatever the instance.
#[derive(Default, Clone)]
struct Evaluated {
    names: Vec<String>,
    patterns: Vec<String>,
    /// The longest `prefixItems`.
    prefix: usize,
    /// `contains` subschemas: each evaluates the items it matches.
    contains: Vec<NodeId>,
    /// Some subschema evaluates every member (or item past the prefixes).
    all: bool,
}

impl Evaluated {
    fn add(&mut self, other: &Evaluated) {
        self.names.extend(other.names.iter().cloned());
        self.patterns.extend(other.patterns.iter().cloned());
        self.prefix = self.prefix.max(other.prefix);
        self.contains.extend(other.contains.iter().copied());
        self.all |= other.all;
    }
}

/// What a choice takes of the value.
#[derive(Clone)]
enum Cond {
    /// The subschema passes.
    Pass(NodeId),
    /// The subschema fails.
    Fail(NodeId),
    /// An object with this member.
    Has(String),
    /// Not an object with this member.
    Lacks(String),
}

/// In-place branches that evaluate something and may pass or fail.
enum Group {
    AnyOf(Vec<NodeId>),
    OneOf(Vec<NodeId>),
    If(NodeId, Option<NodeId>, Option<NodeId>),
    Dependent(String, NodeId),
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

/// One way the branches may pass: what that takes, and what is then evaluated.
#[derive(Clone, Default)]
struct Choice {
    conds: Vec<Cond>,
    evaluated: Evaluated,
}

impl Choice {
    /// Both `self` and `other`.
    fn and(&self, other: &Choice) -> Choice {
        let mut c = self.clone();
        c.conds.extend(other.conds.iter().cloned());
        c.evaluated.add(&other.evaluated);
        c
    }
}

/// Every combination of one choice from each list.
fn product(lists: &[Vec<Choice>], of: Of) -> Result<Vec<Choice>, String> {
    let mut out = vec![Choice::default()];
    for l in lists {
        if out.len() * l.len() > MAX_CHOICES {
            return Err(format!(
                "the branches that evaluate {} may pass in more than {MAX_CHOICES} ways",
                of.what()
            ));
        }
        out = out
            .iter()
            .flat_map(|a| l.iter().map(move |b| a.and(b)))
            .collect();
    }
    Ok(out)
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
            let choices = match self.ways(s, of, 0) {
                Ok(c) => c,
                Err(reason) => {
                    self.relax(of.keyword(), loc, reason)?;
                    continue;
                }
            };
            if let [only] = &choices[..]
                && only.conds.is_empty()
            {
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
                    ..Schema::default()
                };
                for cond in c.conds {
                    match cond {
                        Cond::Pass(n) => term.all_of.push(n),
                        Cond::Fail(n) => term.not.push(n),
                        Cond::Has(k) => term.all_of.push(self.has_member(k)?),
                        Cond::Lacks(k) => term.not.push(self.has_member(k)?),
                    }
                }
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

    /// `{"type": "object", "required": [k]}`.
    fn has_member(&mut self, k: String) -> Result<NodeId, CompileError> {
        self.add_node(Node::Schema(Box::new(Schema {
            loc: format!("(an object with `{k}`)"),
            types: Some(TypeSet(TypeSet::OBJECT)),
            required: vec![k],
            ..Schema::default()
        })))
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
                m.items = Some(if evaluated.contains.is_empty() {
                    u
                } else {
                    let mut either = evaluated.contains.clone();
                    either.push(u);
                    self.add_node(Node::Schema(Box::new(Schema {
                        loc: m.loc.clone(),
                        any_of: vec![either],
                        ..Schema::default()
                    })))?
                });
            }
        }
        self.add_node(Node::Schema(Box::new(m)))
    }

    /// The ways `s` may pass, each with what it then evaluates, or why they cannot be
    /// spelled out.
    fn ways(&self, s: &Schema, of: Of, depth: u32) -> Result<Vec<Choice>, String> {
        if depth > MAX_NESTING {
            return Err(format!(
                "branches that evaluate {} nest more than {MAX_NESTING} deep",
                of.what()
            ));
        }
        let mut base = Evaluated::default();
        let mut groups = Vec::new();
        self.collect(s, of, &mut base, &mut groups, &mut HashSet::new())?;
        let base = Choice {
            conds: Vec::new(),
            evaluated: base,
        };
        if base.evaluated.all {
            // Whatever the branches do, everything is evaluated.
            return Ok(vec![base]);
        }
        let mut lists = vec![vec![base]];
        for g in groups {
            lists.push(self.group_ways(g, of, depth)?);
        }
        product(&lists, of)
    }

    /// The ways node `n` may pass: none for `false`.
    fn node_ways(&self, n: NodeId, of: Of, depth: u32) -> Result<Vec<Choice>, String> {
        if self.in_progress.contains(&n) {
            return Err("a subschema reaches itself through in-place subschemas".into());
        }
        Ok(match self.node(n) {
            Node::True => vec![Choice::default()],
            Node::False => Vec::new(),
            Node::Schema(s) => {
                let mut ways = self.ways(s, of, depth + 1)?;
                if self.inner_unevaluated(s, of) {
                    for w in &mut ways {
                        w.evaluated.all = true;
                    }
                }
                ways
            }
        })
    }

    /// The ways one group of branches may pass.
    fn group_ways(&self, g: Group, of: Of, depth: u32) -> Result<Vec<Choice>, String> {
        let pass = |n: NodeId| Choice {
            conds: vec![Cond::Pass(n)],
            evaluated: Evaluated::default(),
        };
        let mut out = Vec::new();
        match g {
            Group::AnyOf(bs) => {
                if bs.len() > MAX_ANY_OF {
                    return Err(format!(
                        "an `anyOf` of {} branches that evaluate {} (at most {MAX_ANY_OF} are \
                         spelled out)",
                        bs.len(),
                        of.what()
                    ));
                }
                let each = bs
                    .iter()
                    .map(|&b| {
                        let ways = self.node_ways(b, of, depth)?;
                        Ok(ways.iter().map(|w| pass(b).and(w)).collect())
                    })
                    .collect::<Result<Vec<Vec<Choice>>, String>>()?;
                for set in 1u32..(1 << bs.len()) {
                    let chosen: Vec<Vec<Choice>> = (0..bs.len())
                        .filter(|i| set & (1 << i) != 0)
                        .map(|i| each[i].clone())
                        .collect();
                    out.extend(product(&chosen, of)?);
                    if out.len() > MAX_CHOICES {
                        return Err(format!(
                            "the branches that evaluate {} may pass in more than \
                             {MAX_CHOICES} ways",
                            of.what()
                        ));
                    }
                }
            }
            Group::OneOf(bs) => {
                for b in bs {
                    for w in self.node_ways(b, of, depth)? {
                        out.push(pass(b).and(&w));
                    }
                }
            }
            Group::If(i, t, el) => {
                let mut yes = vec![self.node_ways(i, of, depth)?];
                if let Some(t) = t {
                    yes.push(self.node_ways(t, of, depth)?);
                }
                for w in product(&yes, of)? {
                    out.push(pass(i).and(&w));
                }
                let no = match el {
                    Some(el) => self.node_ways(el, of, depth)?,
                    None => vec![Choice::default()],
                };
                for w in no {
                    let fail = Choice {
                        conds: vec![Cond::Fail(i)],
                        evaluated: Evaluated::default(),
                    };
                    out.push(fail.and(&w));
                }
            }
            Group::Dependent(k, d) => {
                for w in self.node_ways(d, of, depth)? {
                    let has = Choice {
                        conds: vec![Cond::Has(k.clone())],
                        evaluated: Evaluated::default(),
                    };
                    out.push(has.and(&w));
                }
                out.push(Choice {
                    conds: vec![Cond::Lacks(k)],
                    evaluated: Evaluated::default(),
                });
            }
        }
        if out.len() > MAX_CHOICES {
            return Err(format!(
                "the branches that evaluate {} may pass in more than {MAX_CHOICES} ways",
                of.what()
            ));
        }
        Ok(out)
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
                e.prefix = e.prefix.max(s.prefix_items.len());
                e.contains.extend(s.contains);
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
                groups.push(Group::Dependent(key.clone(), *d));
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
