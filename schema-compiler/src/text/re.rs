//! A small regular-expression tree for generated languages, printed in `regex-syntax` syntax.
//!
//! Number ranges produce long, deep expressions. This tree keeps them small: constructors
//! drop impossible and empty parts, the printer writes a group only where precedence needs
//! one, and [`chain`] lays out a long run of "this digit, then the rest" levels in blocks so
//! the printed nesting stays far below `regex-syntax`'s default nest limit of 250.

use std::fmt::Write as _;

/// A regular expression over Unicode scalar values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Re {
    /// Matches nothing.
    Fail,
    /// Matches the empty string.
    Empty,
    /// A literal string.
    Lit(String),
    /// One digit in `lo..=hi` (ASCII digits).
    Digits(u8, u8),
    /// Concatenation.
    Concat(Vec<Re>),
    /// Alternation.
    Alt(Vec<Re>),
    /// `sub{min,max}`.
    Repeat(Box<Re>, u32, Option<u32>),
}

impl Re {
    pub(crate) fn lit(s: impl Into<String>) -> Re {
        let s = s.into();
        if s.is_empty() { Re::Empty } else { Re::Lit(s) }
    }

    /// One digit in `lo..=hi`; [`Re::Fail`] when the range is empty.
    pub(crate) fn digits(lo: u8, hi: u8) -> Re {
        if lo > hi || hi > 9 {
            Re::Fail
        } else {
            Re::Digits(lo, hi)
        }
    }

    /// `[0-9]{min,max}`.
    pub(crate) fn any_digits(min: u32, max: Option<u32>) -> Re {
        Re::repeat(Re::Digits(0, 9), min, max)
    }

    pub(crate) fn repeat(sub: Re, min: u32, max: Option<u32>) -> Re {
        if max.is_some_and(|m| m < min) {
            return Re::Fail;
        }
        match sub {
            Re::Fail => {
                if min == 0 {
                    Re::Empty
                } else {
                    Re::Fail
                }
            }
            Re::Empty => Re::Empty,
            _ if max == Some(0) => Re::Empty,
            _ if min == 1 && max == Some(1) => sub,
            _ => Re::Repeat(Box::new(sub), min, max),
        }
    }

    pub(crate) fn opt(sub: Re) -> Re {
        Re::repeat(sub, 0, Some(1))
    }

    pub(crate) fn concat(items: impl IntoIterator<Item = Re>) -> Re {
        let mut out: Vec<Re> = Vec::new();
        for it in items {
            match it {
                Re::Fail => return Re::Fail,
                Re::Empty => {}
                Re::Concat(v) => out.extend(v),
                Re::Lit(s) => match out.last_mut() {
                    Some(Re::Lit(prev)) => prev.push_str(&s),
                    _ => out.push(Re::Lit(s)),
                },
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Re::Empty,
            1 => out.pop().unwrap_or(Re::Empty),
            _ => Re::Concat(out),
        }
    }

    pub(crate) fn alt(items: impl IntoIterator<Item = Re>) -> Re {
        let mut out: Vec<Re> = Vec::new();
        let mut has_empty = false;
        for it in items {
            match it {
                Re::Fail => {}
                Re::Empty => has_empty = true,
                Re::Alt(v) => out.extend(v),
                other => {
                    if !out.contains(&other) {
                        out.push(other);
                    }
                }
            }
        }
        let core = match out.len() {
            0 => {
                return if has_empty { Re::Empty } else { Re::Fail };
            }
            1 => out.pop().unwrap_or(Re::Fail),
            _ => Re::Alt(out),
        };
        if has_empty { Re::opt(core) } else { core }
    }

    /// Prints the expression in `regex-syntax` syntax. [`Re::Fail`] prints as `[a&&b]`, an
    /// empty class.
    pub(crate) fn to_regex(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, Prec::Alt);
        s
    }

    fn write(&self, out: &mut String, ctx: Prec) {
        match self {
            Re::Fail => out.push_str("[a&&b]"),
            Re::Empty => out.push_str("(?:)"),
            Re::Lit(s) => {
                let multi = s.chars().nth(1).is_some();
                let group = multi && ctx == Prec::Atom;
                if group {
                    out.push_str("(?:");
                }
                regex_syntax::escape_into(s, out);
                if group {
                    out.push(')');
                }
            }
            Re::Digits(lo, hi) => {
                if lo == hi {
                    out.push(char::from(b'0' + lo));
                } else {
                    let _ = write!(out, "[{lo}-{hi}]");
                }
            }
            Re::Concat(v) => {
                let group = ctx == Prec::Atom;
                if group {
                    out.push_str("(?:");
                }
                for it in v {
                    it.write(out, Prec::Concat);
                }
                if group {
                    out.push(')');
                }
            }
            Re::Alt(v) => {
                let group = ctx != Prec::Alt;
                if group {
                    out.push_str("(?:");
                }
                for (i, it) in v.iter().enumerate() {
                    if i > 0 {
                        out.push('|');
                    }
                    it.write(out, Prec::Alt);
                }
                if group {
                    out.push(')');
                }
            }
            Re::Repeat(sub, min, max) => {
                if matches!(**sub, Re::Repeat(..)) {
                    out.push_str("(?:");
                    sub.write(out, Prec::Alt);
                    out.push(')');
                } else {
                    sub.write(out, Prec::Atom);
                }
                match (min, max) {
                    (0, None) => out.push('*'),
                    (1, None) => out.push('+'),
                    (0, Some(1)) => out.push('?'),
                    (n, None) => {
                        let _ = write!(out, "{{{n},}}");
                    }
                    (n, Some(m)) if n == m => {
                        let _ = write!(out, "{{{n}}}");
                    }
                    (n, Some(m)) => {
                        let _ = write!(out, "{{{n},{m}}}");
                    }
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prec {
    /// Inside an alternation branch or at the top.
    Alt,
    /// An element of a concatenation.
    Concat,
    /// The operand of a repetition.
    Atom,
}

/// The language `opt_0 | t_0 (opt_1 | t_1 ( … | t_{n-1} terminal))` where each level is an
/// alternative `opt_i` and a literal digit `t_i` that continues to the next level.
///
/// Printed naively this nests once per level. Levels are grouped into blocks whose
/// alternatives spell out the literal prefix (`opt_0 | t_0 opt_1 | t_0 t_1 opt_2 | …`), so the
/// nesting grows once per block: at most about 40 blocks, of at least 16 levels.
pub(crate) fn chain(levels: Vec<(Re, char)>, terminal: Re) -> Re {
    let block = levels.len().div_ceil(40).max(16);
    let mut acc = terminal;
    let chunks: Vec<&[(Re, char)]> = levels.chunks(block).collect();
    for chunk in chunks.into_iter().rev() {
        let mut alts = Vec::with_capacity(chunk.len() + 1);
        let mut prefix = String::new();
        for (opt, t) in chunk {
            alts.push(Re::concat([Re::lit(prefix.clone()), opt.clone()]));
            prefix.push(*t);
        }
        alts.push(Re::concat([Re::lit(prefix), acc]));
        acc = Re::alt(alts);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printing_groups_only_where_needed() {
        let r = Re::concat([
            Re::lit("1"),
            Re::alt([
                Re::lit("2"),
                Re::concat([Re::digits(3, 5), Re::any_digits(0, None)]),
            ]),
        ]);
        assert_eq!(r.to_regex(), "1(?:2|[3-5][0-9]*)");
        assert_eq!(
            Re::repeat(Re::lit("ab"), 2, Some(3)).to_regex(),
            "(?:ab){2,3}"
        );
        assert_eq!(Re::alt([Re::Empty, Re::lit("x")]).to_regex(), "x?");
        assert_eq!(Re::alt([Re::Fail]).to_regex(), "[a&&b]");
        assert_eq!(Re::lit(".-").to_regex(), r"\.\-");
    }

    #[test]
    fn chain_matches_naive_nesting() {
        let levels: Vec<(Re, char)> = (0..100)
            .map(|i| {
                (
                    Re::digits(0, (i % 9) as u8),
                    char::from(b'0' + (i % 10) as u8),
                )
            })
            .collect();
        let chained = chain(levels.clone(), Re::lit("x")).to_regex();
        let mut naive = Re::lit("x");
        for (opt, t) in levels.into_iter().rev() {
            naive = Re::alt([opt, Re::concat([Re::lit(t.to_string()), naive])]);
        }
        let a = regex::Regex::new(&format!("^(?:{chained})$")).unwrap();
        let naive = naive.to_regex();
        let b = regex_syntax::ParserBuilder::new()
            .nest_limit(10_000)
            .build()
            .parse(&naive)
            .unwrap();
        let b = regex_automata::meta::Regex::builder()
            .build_from_hir(&regex_syntax::hir::Hir::concat(vec![
                regex_syntax::hir::Hir::look(regex_syntax::hir::Look::Start),
                b,
                regex_syntax::hir::Hir::look(regex_syntax::hir::Look::End),
            ]))
            .unwrap();
        let digits: String = (0..100)
            .map(|i| char::from(b'0' + (i % 10) as u8))
            .collect();
        for cut in 0..=100 {
            for tail in ["", "0", "x", "5", "9x"] {
                let s = format!("{}{}", &digits[..cut], tail);
                assert_eq!(a.is_match(&s), b.is_match(&s), "{s}");
            }
        }
    }
}
