//! The language of a schema node for one primitive kind (null, boolean, number, string).
//!
//! A [`Lang`] is a DFA plus, for strings, code-point bounds and, for numbers in any notation, an
//! exact value check. A node's own keywords give one ([`Builder::local_lang`]); `allOf`,
//! `anyOf`, `oneOf`, `not` and `if` combine them by DFA products ([`Builder::lang`]).

use super::{Builder, Lang, no_value_between, tightest, value_kind};
use crate::dfa::Dfa;
use crate::error::CompileError;
use crate::ir::{Node, NodeId, Schema, TypeSet};
use crate::tables::{DfaId, Kind, NumExpr};
use crate::text::decimal::Decimal;
use crate::text::formats;
use crate::text::numeric::{self, NumberSpec};
use serde_json::Value;

impl Builder<'_> {
    pub(super) fn universe_lang(&self, kind: Kind) -> Lang {
        Lang {
            dfa: self.universe[kind as usize],
            min: 0,
            max: None,
            check: None,
        }
    }

    pub(super) fn empty_lang(&self) -> Lang {
        Lang {
            dfa: self.empty,
            min: 0,
            max: None,
            check: None,
        }
    }

    pub(super) fn any_notation(&self, kind: Kind) -> bool {
        kind == Kind::Number && self.options.numbers.any_notation
    }

    /// Folds length bounds into the DFA (needed before union, difference).
    pub(super) fn fold_len(&mut self, l: Lang, loc: &str) -> Result<Lang, CompileError> {
        let len = self.len_dfa(&l, loc)?;
        if l.max.is_some_and(|m| m < l.min) {
            // No length fits: the empty language.
            return Ok(self.empty_lang());
        }
        let dfa = match len {
            Some(len) => self.dfa_op(0, l.dfa, len, loc)?,
            None => l.dfa,
        };
        Ok(Lang {
            dfa,
            min: 0,
            max: None,
            check: l.check,
        })
    }

    /// The DFAs whose intersection is the language of `l`: its own, and the one of its
    /// length bounds where it has some (for a product of many, which takes them as they are
    /// instead of folding each first).
    pub(super) fn conjuncts(&mut self, l: &Lang, loc: &str) -> Result<Vec<DfaId>, CompileError> {
        Ok(std::iter::once(l.dfa)
            .chain(self.len_dfa(l, loc)?)
            .collect())
    }

    /// The DFA of the strings whose length is within the bounds of `l` (`None`: unbounded;
    /// the empty one where no length fits).
    fn len_dfa(&mut self, l: &Lang, loc: &str) -> Result<Option<DfaId>, CompileError> {
        if l.min == 0 && l.max.is_none() {
            return Ok(None);
        }
        let limit = self.options.limits.max_expanded_length;
        let big = l.min > limit || l.max.is_some_and(|m| m > limit);
        if big {
            let keyword = if l.min > limit {
                "minLength"
            } else {
                "maxLength"
            };
            return Err(CompileError::Unsupported {
                keyword: keyword.into(),
                pointer: loc.into(),
                reason: format!(
                    "length bounds above {limit} cannot be combined under anyOf/oneOf/not/if"
                ),
            });
        }
        if l.max.is_some_and(|m| m < l.min) {
            return Ok(Some(self.empty));
        }
        let re = match l.max {
            Some(m) => format!("(?s:.{{{},{}}})", l.min, m),
            None => format!("(?s:.{{{},}})", l.min),
        };
        self.regex_dfa(&re, loc).map(Some)
    }

    /// Whether `l` holds no value: an empty automaton or length bounds no length fits.
    pub(super) fn is_empty_lang(&self, l: &Lang) -> bool {
        self.dfas[l.dfa as usize].is_empty() || l.max.is_some_and(|m| m < l.min)
    }

    pub(super) fn intersect(
        &mut self,
        a: Lang,
        b: Lang,
        kind: Kind,
        loc: &str,
    ) -> Result<Lang, CompileError> {
        let dfa = self.dfa_op(0, a.dfa, b.dfa, loc)?;
        let check = if self.any_notation(kind) {
            Some(NumExpr::and(
                a.check.unwrap_or(NumExpr::True),
                b.check.unwrap_or(NumExpr::True),
            ))
        } else {
            None
        };
        Ok(Lang {
            dfa,
            min: a.min.max(b.min),
            max: match (a.max, b.max) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            },
            check,
        })
    }

    /// The exact value predicate of a number language in any-notation mode.
    pub(super) fn num_pred(&self, l: Lang) -> NumExpr {
        if self.dfas[l.dfa as usize].is_empty() {
            NumExpr::False
        } else {
            l.check.unwrap_or(NumExpr::True)
        }
    }

    pub(super) fn union(
        &mut self,
        xs: Vec<Lang>,
        kind: Kind,
        loc: &str,
    ) -> Result<Lang, CompileError> {
        if self.any_notation(kind) {
            let checks = xs.into_iter().map(|l| self.num_pred(l)).collect();
            return Ok(Lang {
                dfa: self.universe[2],
                min: 0,
                max: None,
                check: Some(NumExpr::Or(checks)),
            });
        }
        // Alternatives that hold no value of this kind (the `null` of a nullable string) add
        // nothing; when one alternative is left its length bounds need no folding.
        let mut xs: Vec<Lang> = xs.into_iter().filter(|l| !self.is_empty_lang(l)).collect();
        if xs.len() == 1 {
            return Ok(xs.remove(0));
        }
        let mut alts = Vec::with_capacity(xs.len());
        for x in &xs {
            alts.push(self.conjuncts(x, loc)?);
        }
        if alts.is_empty() {
            return Ok(self.empty_lang());
        }
        Ok(Lang {
            dfa: self.dfa_union_of(&alts, loc)?,
            min: 0,
            max: None,
            check: None,
        })
    }

    pub(super) fn complement(
        &mut self,
        x: Lang,
        kind: Kind,
        loc: &str,
    ) -> Result<Lang, CompileError> {
        if self.any_notation(kind) {
            let check = match self.num_pred(x) {
                NumExpr::True => NumExpr::False,
                NumExpr::False => NumExpr::True,
                p => NumExpr::Not(Box::new(p)),
            };
            return Ok(Lang {
                dfa: self.universe[2],
                min: 0,
                max: None,
                check: Some(check),
            });
        }
        // Every value of the kind, with one length bound: the complement is the other side of
        // that bound, which needs no folding however long.
        if x.dfa == self.universe[kind as usize] && x.dfa != self.empty {
            match (x.min, x.max) {
                (0, Some(max)) => {
                    return Ok(Lang {
                        dfa: x.dfa,
                        min: max.saturating_add(1),
                        max: None,
                        check: None,
                    });
                }
                (min, None) if min > 0 => {
                    return Ok(Lang {
                        dfa: x.dfa,
                        min: 0,
                        max: Some(min - 1),
                        check: None,
                    });
                }
                _ => {}
            }
        }
        let x = self.fold_len(x, loc)?;
        let within = self.spelling_universe(kind, &[x.dfa]);
        let dfa = self.dfa_op(2, within, x.dfa, loc)?;
        Ok(Lang {
            dfa,
            min: 0,
            max: None,
            check: None,
        })
    }

    pub(super) fn exactly_one(
        &mut self,
        xs: Vec<Lang>,
        kind: Kind,
        loc: &str,
    ) -> Result<Lang, CompileError> {
        if self.any_notation(kind) {
            let checks = xs.into_iter().map(|l| self.num_pred(l)).collect();
            return Ok(Lang {
                dfa: self.universe[2],
                min: 0,
                max: None,
                check: Some(NumExpr::OneOf(checks)),
            });
        }
        // Alternatives with no value of this kind cannot match one, so the values of this kind
        // that match exactly one alternative are those of the others; with one left, its own.
        let mut xs: Vec<Lang> = xs.into_iter().filter(|l| !self.is_empty_lang(l)).collect();
        if xs.len() <= 1 {
            return Ok(xs.pop().unwrap_or_else(|| self.empty_lang()));
        }
        let mut alts = Vec::with_capacity(xs.len());
        for x in &xs {
            alts.push(self.conjuncts(x, loc)?);
        }
        let ids: Vec<DfaId> = xs.iter().map(|l| l.dfa).collect();
        let within = self.spelling_universe(kind, &ids);
        Ok(Lang {
            dfa: self.dfa_exactly_one(&alts, within, loc)?,
            min: 0,
            max: None,
            check: None,
        })
    }

    /// The spellings a complement or a `oneOf` is taken within: one spelling per value.
    ///
    /// A language of plain-notation numbers holds, of each value it allows, at least the
    /// canonical spelling, and of no other value any spelling; but not every spelling of its
    /// values (the `integer` language has `1`, not `1.0`; no plain language has `1e0`). Its
    /// complement within every number text would hold the missing spellings of its own
    /// values: `{"not": {"type": "integer"}}` would let `1.0` through. Within the canonical
    /// spellings the complement holds exactly the canonical spellings of the other values, so
    /// the notation policy narrows what is written but never widens a negation. Strings are
    /// decoded before their DFAs run, and literals have one spelling each.
    ///
    /// Where every operand is every number or none (`{"oneOf": [{"type": "string"},
    /// {"type": "number"}]}` for numbers), each holds all spellings of its values and the
    /// whole universe stays exact.
    pub(super) fn spelling_universe(&self, kind: Kind, operands: &[DfaId]) -> DfaId {
        let universe = self.universe[kind as usize];
        let closed = operands.iter().all(|&d| d == universe || d == self.empty);
        if kind == Kind::Number && !closed {
            self.canonical
        } else {
            universe
        }
    }

    pub(super) fn check_cycle(&self, key: (NodeId, Kind)) -> Result<(), CompileError> {
        if self.in_progress.contains(&key) {
            return Err(CompileError::Invalid {
                keyword: "$ref".into(),
                pointer: self.loc(key.0),
                reason: "reference cycle that never reaches a value (infinite recursion)".into(),
            });
        }
        Ok(())
    }

    /// The language of values of primitive `kind` valid under `node`.
    pub(super) fn lang(&mut self, node: NodeId, kind: Kind) -> Result<Lang, CompileError> {
        if let Some(l) = self.lang_memo.get(&(node, kind)) {
            return Ok(l.clone());
        }
        self.check_cycle((node, kind))?;
        self.in_progress.insert((node, kind));
        let r = self.lang_uncached(node, kind);
        self.in_progress.remove(&(node, kind));
        let l = r?;
        self.lang_memo.insert((node, kind), l.clone());
        Ok(l)
    }

    pub(super) fn lang_uncached(&mut self, node: NodeId, kind: Kind) -> Result<Lang, CompileError> {
        let s = match self.node(node) {
            Node::True => return Ok(self.universe_lang(kind)),
            Node::False => return Ok(self.empty_lang()),
            Node::Schema(s) => s.clone(),
        };
        let loc = s.loc.clone();
        if let Some(t) = s.types
            && !t.has(kind.type_bit())
        {
            return Ok(self.empty_lang());
        }
        let mut l = self.local_lang(&s, kind)?;
        if self.is_empty(&l) {
            return Ok(l);
        }
        for &c in &s.all_of {
            let cl = self.lang(c, kind)?;
            l = self.intersect(l, cl, kind, &loc)?;
        }
        for group in &s.any_of {
            let mut xs = Vec::new();
            for &c in group {
                xs.push(self.lang(c, kind)?);
            }
            let u = self.union(xs, kind, &loc)?;
            l = self.intersect(l, u, kind, &loc)?;
        }
        for group in &s.one_of {
            let mut xs = Vec::new();
            for &c in group {
                xs.push(self.lang(c, kind)?);
            }
            let u = self.exactly_one(xs, kind, &loc)?;
            l = self.intersect(l, u, kind, &loc)?;
        }
        for &c in &s.not {
            let cl = self.lang(c, kind)?;
            let n = self.complement(cl, kind, &loc)?;
            l = self.intersect(l, n, kind, &loc)?;
        }
        if let Some((i, t, e)) = s.conditional {
            let il = self.lang(i, kind)?;
            let tl = match t {
                Some(t) => self.lang(t, kind)?,
                None => self.universe_lang(kind),
            };
            let el = match e {
                Some(e) => self.lang(e, kind)?,
                None => self.universe_lang(kind),
            };
            let yes = self.intersect(il.clone(), tl, kind, &loc)?;
            let ni = self.complement(il, kind, &loc)?;
            let no = self.intersect(ni, el, kind, &loc)?;
            let u = self.union(vec![yes, no], kind, &loc)?;
            l = self.intersect(l, u, kind, &loc)?;
        }
        Ok(l)
    }

    pub(super) fn is_empty(&self, l: &Lang) -> bool {
        self.dfas[l.dfa as usize].is_empty()
            || l.max.is_some_and(|m| m < l.min)
            || l.check == Some(NumExpr::False)
    }

    /// The node's own keywords for one primitive kind.
    pub(super) fn local_lang(&mut self, s: &Schema, kind: Kind) -> Result<Lang, CompileError> {
        let loc = s.loc.clone();
        let mut l = self.universe_lang(kind);
        // enum / const.
        if let Some(values) = &s.enum_values {
            let vals: Vec<&Value> = values
                .iter()
                .filter(|v| value_kind(v) == Some(kind))
                .collect();
            if vals.is_empty() {
                return Ok(self.empty_lang());
            }
            let el = self.enum_lang(&vals, kind, &loc)?;
            l = self.intersect(l, el, kind, &loc)?;
        }
        match kind {
            Kind::String => {
                l.min = l.min.max(s.min_length);
                if let Some(m) = s.max_length {
                    l.max = Some(l.max.map_or(m, |x| x.min(m)));
                }
                for p in &s.patterns {
                    let d = self.pattern_dfa(p, &loc)?;
                    let pl = Lang {
                        dfa: d,
                        min: 0,
                        max: None,
                        check: None,
                    };
                    l = self.intersect(l, pl, kind, &loc)?;
                }
                if let Some(f) = &s.format {
                    let fl =
                        formats::format_language(f).ok_or_else(|| CompileError::Unsupported {
                            keyword: "format".into(),
                            pointer: loc.clone(),
                            reason: format!("format `{f}` is not enforced"),
                        })?;
                    let d = self.regex_dfa_with(&fl.regex, fl.direct, &loc)?;
                    let fl = Lang {
                        dfa: d,
                        min: 0,
                        max: fl.max_length.map(u64::from),
                        check: None,
                    };
                    l = self.intersect(l, fl, kind, &loc)?;
                }
            }
            Kind::Number => {
                let integer = s
                    .types
                    .is_some_and(|t| t.has(TypeSet::INTEGER) && !t.has(TypeSet::NUMBER));
                let lower = tightest(&s.lower, true);
                let upper = tightest(&s.upper, false);
                if let (Some(l), Some(h)) = (&lower, &upper)
                    && no_value_between(l, h)
                {
                    return Ok(self.empty_lang());
                }
                if self.options.numbers.any_notation {
                    let mut e = NumExpr::True;
                    if integer {
                        e = NumExpr::and(e, NumExpr::Integer);
                    }
                    if let Some(b) = lower {
                        e = NumExpr::and(e, NumExpr::Lower(b.value, b.inclusive));
                    }
                    if let Some(b) = upper {
                        e = NumExpr::and(e, NumExpr::Upper(b.value, b.inclusive));
                    }
                    for m in &s.multiple_of {
                        e = NumExpr::and(e, NumExpr::MultipleOf(m.clone()));
                    }
                    l.check = Some(NumExpr::and(l.check.take().unwrap_or(NumExpr::True), e));
                } else if integer || lower.is_some() || upper.is_some() || !s.multiple_of.is_empty()
                {
                    let n = self.options.numbers;
                    let spec = NumberSpec {
                        integer,
                        lower: lower.map(|b| numeric::Bound {
                            value: b.value,
                            inclusive: b.inclusive,
                        }),
                        upper: upper.map(|b| numeric::Bound {
                            value: b.value,
                            inclusive: b.inclusive,
                        }),
                        max_int_digits: n.max_int_digits,
                        max_frac_digits: n.max_frac_digits,
                        exponent: false,
                        max_exp_digits: None,
                    };
                    let re = numeric::number_language(&spec).map_err(|e| CompileError::Limit {
                        limit: "max_dfa_states",
                        pointer: loc.clone(),
                        detail: format!("numeric range: {e}"),
                    })?;
                    let d = self.regex_dfa(&re, &loc)?;
                    l = self.intersect(
                        l,
                        Lang {
                            dfa: d,
                            min: 0,
                            max: None,
                            check: None,
                        },
                        kind,
                        &loc,
                    )?;
                    for m in &s.multiple_of {
                        let d = self.multiple_of_dfa(m, &loc)?;
                        l = self.intersect(
                            l,
                            Lang {
                                dfa: d,
                                min: 0,
                                max: None,
                                check: None,
                            },
                            kind,
                            &loc,
                        )?;
                    }
                }
            }
            _ => {}
        }
        Ok(l)
    }

    pub(super) fn enum_lang(
        &mut self,
        vals: &[&Value],
        kind: Kind,
        loc: &str,
    ) -> Result<Lang, CompileError> {
        match kind {
            Kind::String => {
                let lits: Vec<&[u8]> = vals
                    .iter()
                    .filter_map(|v| v.as_str())
                    .map(str::as_bytes)
                    .collect();
                let d = Dfa::from_literals(&lits, self.limits())
                    .map_err(|e| self.dfa_error(e, loc, "enum"))?;
                let id = self.add_dfa(d, loc)?;
                Ok(Lang {
                    dfa: id,
                    min: 0,
                    max: None,
                    check: None,
                })
            }
            Kind::Number => {
                let mut decs = Vec::new();
                for v in vals {
                    if let Some(n) = v.as_number()
                        && let Ok(d) = Decimal::from_json_number(n)
                    {
                        decs.push(d);
                    }
                }
                if self.options.numbers.any_notation {
                    return Ok(Lang {
                        dfa: self.universe[2],
                        min: 0,
                        max: None,
                        check: Some(NumExpr::In(decs)),
                    });
                }
                let mut alts = Vec::new();
                for d in &decs {
                    let plain =
                        d.to_plain_string_within(4096)
                            .ok_or_else(|| CompileError::Limit {
                                limit: "max_dfa_states",
                                pointer: loc.into(),
                                detail: "enum number too long to spell out".into(),
                            })?;
                    let body = regex_syntax::escape(&plain);
                    alts.push(if d.is_zero() {
                        "-?0(?:\\.0+)?".to_string()
                    } else if plain.contains('.') {
                        format!("{body}0*")
                    } else {
                        format!("{body}(?:\\.0+)?")
                    });
                }
                let re = format!("(?:{})", alts.join("|"));
                let d = self.regex_dfa(&re, loc)?;
                Ok(Lang {
                    dfa: d,
                    min: 0,
                    max: None,
                    check: None,
                })
            }
            Kind::Boolean | Kind::Null => {
                let lits: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
                let lits: Vec<&[u8]> = lits.iter().map(|s| s.as_bytes()).collect();
                let d = Dfa::from_literals(&lits, self.limits())
                    .map_err(|e| self.dfa_error(e, loc, "enum"))?;
                let id = self.add_dfa(d, loc)?;
                Ok(Lang {
                    dfa: id,
                    min: 0,
                    max: None,
                    check: None,
                })
            }
            _ => unreachable!("containers have no lexer"),
        }
    }

    /// Plain-notation numbers whose value is a multiple of `m`.
    pub(super) fn multiple_of_dfa(
        &mut self,
        m: &Decimal,
        loc: &str,
    ) -> Result<DfaId, CompileError> {
        // m = big * 10^-k with big an integer.
        let canon = m.to_canonical_string();
        let (big, k) = split_decimal(&canon).ok_or_else(|| CompileError::Unsupported {
            keyword: "multipleOf".into(),
            pointer: loc.into(),
            reason: format!("{canon} is out of range"),
        })?;
        const MAX_MODULUS: u64 = 20_000;
        if big > MAX_MODULUS || k > 40 {
            return Err(CompileError::Limit {
                limit: "max_dfa_states",
                pointer: loc.into(),
                detail: format!("multipleOf {canon} needs too many states in plain notation"),
            });
        }
        let pow10: Vec<u64> = (0..=k).map(|e| 10u64.pow(e as u32) % big).collect();
        // State: (phase, frac digits read, remainder). phase 0: before digits/sign, 1: int
        // digits, 2: after the point.
        #[derive(Clone, PartialEq, Eq, Hash)]
        struct S(u8, u32, u64);
        let d = Dfa::from_fn(
            S(0, 0, 0),
            b"-.0123456789",
            |s, b| match (s.0, b) {
                (0, b'-') => Some(S(1, 0, 0)),
                (0 | 1, b'0'..=b'9') => {
                    let d = (b - b'0') as u64;
                    Some(S(1, 0, (s.2 * 10 + d * pow10[k as usize]) % big))
                }
                (1, b'.') => Some(S(2, 0, s.2)),
                (2, b'0'..=b'9') => {
                    let d = (b - b'0') as u64;
                    let j = s.1 + 1;
                    if j as u64 <= k {
                        Some(S(2, j, (s.2 + d * pow10[(k - j as u64) as usize]) % big))
                    } else if d == 0 {
                        Some(S(2, j.min(k as u32 + 1), s.2))
                    } else {
                        None
                    }
                }
                _ => None,
            },
            |s| s.0 >= 1 && s.2 == 0,
            self.limits(),
        )
        .map_err(|e| self.dfa_error(e, loc, "multipleOf"))?;
        self.add_dfa(d, loc)
    }
}

/// Splits a canonical decimal string into (integer coefficient, k) with value = coef * 10^-k.
pub(super) fn split_decimal(canon: &str) -> Option<(u64, u64)> {
    let d: Decimal = canon.parse().ok()?;
    let plain = d.to_plain_string_within(64)?;
    let (int, frac) = match plain.split_once('.') {
        Some((i, f)) => (i.to_string(), f.to_string()),
        None => (plain.clone(), String::new()),
    };
    let digits = format!("{int}{frac}");
    let coef: u64 = digits.trim_start_matches('0').parse().unwrap_or(0);
    if coef == 0 {
        return None;
    }
    Some((coef, frac.len() as u64))
}
