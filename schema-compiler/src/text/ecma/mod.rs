//! JSON Schema `pattern` (ECMA-262 regular expressions) as full-match languages.
//!
//! A `pattern` is unanchored: a string is valid when the pattern finds a match anywhere in
//! it. [`pattern_language`] returns a `regex-syntax` regex whose *full* matches are exactly
//! those strings, built as `(?s:.)*` + pattern + `(?s:.)*` (each side dropped when the
//! pattern is anchored there), with `^`/`$` kept as start/end-of-text assertions, which
//! `regex-automata` DFAs support.
//!
//! # Semantics
//!
//! Patterns are read as ECMA-262 with the `u` flag, which JSON Schema assumes: they work on
//! code points, `\u{…}`, `\p{…}` and surrogate pairs `\uD83D\uDE00` denote code points, and
//! there are no flags (`i`, `m`, `s` are not part of a pattern string). So:
//!
//! - `.` is any code point but `\n`, `\r`, U+2028 and U+2029; `[^]` is any code point; `[]`
//!   matches nothing.
//! - `\d` is `[0-9]`, `\w` is `[A-Za-z0-9_]`, `\b`/`\B` are ASCII word boundaries, `\s` is
//!   ECMA's WhiteSpace and LineTerminator set: U+0009–U+000D, U+0020, U+00A0, U+1680,
//!   U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 and U+FEFF (and `\D \W \S` their
//!   complements).
//! - `\p{…}`/`\P{…}` accept ECMA's names only: `General_Category=`/`gc=` values, `Script=`,
//!   `sc=`, `Script_Extensions=`, `scx=`, lone general-category values and the binary
//!   properties of ECMA-262's table (lone script names such as `\p{Greek}` are errors, as in
//!   ECMA). Property values are resolved with `regex-syntax`'s Unicode tables.
//! - Laziness (`*?`) and group names do not change the language and are dropped.
//! - A lone surrogate (`\uD800`) matches nothing: the decoded strings are UTF-8.
//!
//! Where the `u` flag makes a construct an error but ECMA-262 Annex B (the web-compatible
//! grammar every engine also implements) gives it one plain meaning, that meaning is taken,
//! because schemas in the wild rely on it: a `{` that does not start a quantifier and lone `]`
//! and `}` are literals; `\` before ASCII punctuation is that character (`\-`, `\@`, `\_`);
//! a class escape as a range end (`[\w-.]`) means the class, `-` and the other end. Escapes of
//! letters and digits that ECMA does not define (`\a`, `\e`, `\z`) stay syntax errors, since
//! other dialects give them meanings.
//!
//! Lookahead, lookbehind, backreferences (`\1`, `\k<name>`), legacy octal escapes (`\01`)
//! and inline modifiers (`(?i:…)`) are reported as [`PatternError::Unsupported`]; nothing is
//! ever dropped or approximated. Lookaheads right after a leading `^` (`^(?!X)R`) are still
//! regular: [`split_leading_lookaheads`] splits such a pattern into parts whose languages the
//! compiler intersects and subtracts.

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, Look, Repetition};

use self::classes::Node;
use self::parser::Parser;

/// Errors from [`pattern_language`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// The pattern is not a valid ECMA-262 regular expression.
    #[error("invalid pattern at byte {offset}: {message}")]
    Syntax {
        /// What is wrong.
        message: String,
        /// Byte offset into the pattern.
        offset: usize,
    },
    /// The pattern is valid but uses a feature that has no regular-language translation here.
    #[error("unsupported pattern feature at byte {offset}: {feature}")]
    Unsupported {
        /// The feature, e.g. `lookahead` or `backreference`.
        feature: &'static str,
        /// Byte offset into the pattern.
        offset: usize,
    },
}

/// The full-match regex (in `regex-syntax` syntax) of the strings in which the ECMA-262
/// pattern `ecma` finds a match.
///
/// ```
/// use schema_compiler::text::ecma::pattern_language;
///
/// let re = pattern_language(r"^\d{3}-\p{Lu}").unwrap();
/// let re = regex::Regex::new(&format!("^(?:{re})$")).unwrap();
/// assert!(re.is_match("123-Ä and more"));
/// assert!(!re.is_match("x123-A"));
/// assert!(pattern_language("(?=a)").is_err());
/// ```
pub fn pattern_language(ecma: &str) -> Result<String, PatternError> {
    let mut out = String::new();
    print_hir(&pattern_hir(ecma)?, &mut out);
    // The printed form nests about four levels per nested ECMA group; `regex-syntax` refuses
    // more than 250 by default. Report that here rather than hand out a regex that fails later.
    if regex_syntax::ast::parse::Parser::new().parse(&out).is_err() {
        return Err(PatternError::Unsupported {
            feature: "nesting deeper than regex-syntax's default limit",
            offset: 0,
        });
    }
    Ok(out)
}

/// Prints `hir` in `regex-syntax` syntax with a group around every compound expression.
///
/// `Hir`'s own printer writes a repetition of a repetition without a group, so `(a+)?`
/// comes out as `a+?` (a lazy `+`); grouping every operand avoids that. Leaves (literals,
/// classes, assertions) use `Hir`'s printer, which escapes them correctly.
fn print_hir(hir: &Hir, out: &mut String) {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Empty => out.push_str("(?:)"),
        HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => {
            out.push_str(&hir.to_string());
        }
        HirKind::Capture(c) => print_hir(&c.sub, out),
        HirKind::Repetition(r) => {
            out.push_str("(?:");
            print_hir(&r.sub, out);
            out.push(')');
            match (r.min, r.max) {
                (0, None) => out.push('*'),
                (1, None) => out.push('+'),
                (0, Some(1)) => out.push('?'),
                (n, None) => out.push_str(&format!("{{{n},}}")),
                (n, Some(m)) if n == m => out.push_str(&format!("{{{n}}}")),
                (n, Some(m)) => out.push_str(&format!("{{{n},{m}}}")),
            }
        }
        HirKind::Concat(v) => {
            out.push_str("(?:");
            for h in v {
                print_hir(h, out);
            }
            out.push(')');
        }
        HirKind::Alternation(v) => {
            out.push_str("(?:");
            for (i, h) in v.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                print_hir(h, out);
            }
            out.push(')');
        }
    }
}

/// A pattern that opens with lookaheads at its start anchor, split into parts without them.
///
/// `^(?!X)(?=Y)R` finds a match exactly in the strings that `^R` finds one in, that do not
/// start with a match of `X`, and that start with a match of `Y`: each lookahead sits at
/// position 0, the only place `^` matches. So its language is that of `^R` intersected with
/// the patterns `^(?:Y)` and minus `^(?:X)`, which are all regular.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadingLookaheads {
    /// The pattern without its lookaheads (`^R`).
    pub rest: String,
    /// Each lookahead as a pattern anchored at the start (`^(?:X)`), with `true` when it is
    /// negative (`(?!X)`).
    pub lookaheads: Vec<(bool, String)>,
}

/// Splits `ecma` into [`LeadingLookaheads`] when it starts with `^` and one or more
/// lookaheads, and the rest has no top-level alternative (in `^(?!a)b|c` the lookahead
/// governs only `b`). `None` otherwise: the pattern is then taken as a whole.
pub fn split_leading_lookaheads(ecma: &str) -> Option<LeadingLookaheads> {
    let body = ecma.strip_prefix('^')?;
    let mut rest = body;
    let mut lookaheads = Vec::new();
    while let Some(after) = rest
        .strip_prefix("(?=")
        .or_else(|| rest.strip_prefix("(?!"))
    {
        let negative = rest.as_bytes()[2] == b'!';
        let end = group_end(after)?;
        lookaheads.push((negative, format!("^(?:{})", &after[..end])));
        rest = &after[end + 1..];
    }
    if lookaheads.is_empty() || has_top_level_alternative(rest) {
        return None;
    }
    Some(LeadingLookaheads {
        rest: format!("^{rest}"),
        lookaheads,
    })
}

/// Calls `visit(index, char, depth)` for each character of `s` outside escapes and classes,
/// `depth` counting the groups open before it; stops early when `visit` returns `false`.
/// Returns `false` when `s` ends inside an escape or a class.
fn scan_structure(s: &str, mut visit: impl FnMut(usize, char, usize) -> bool) -> bool {
    let mut depth = 0usize;
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if chars.next().is_none() {
                    return false;
                }
            }
            '[' => loop {
                match chars.next() {
                    None => return false,
                    Some((_, '\\')) => {
                        if chars.next().is_none() {
                            return false;
                        }
                    }
                    Some((_, ']')) => break,
                    Some(_) => {}
                }
            },
            _ => {
                if c == ')' {
                    depth = depth.saturating_sub(1);
                }
                if !visit(i, c, depth) {
                    return true;
                }
                if c == '(' {
                    depth += 1;
                }
            }
        }
    }
    true
}

/// The index of the `)` closing a group whose body starts `s`.
fn group_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut end = None;
    scan_structure(s, |i, c, _| {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => {
                end = Some(i);
                return false;
            }
            ')' => depth -= 1,
            _ => {}
        }
        true
    });
    end
}

/// Whether `s` has a `|` outside every group.
fn has_top_level_alternative(s: &str) -> bool {
    let mut found = false;
    let complete = scan_structure(s, |_, c, depth| {
        found = c == '|' && depth == 0;
        !found
    });
    found || !complete
}

/// Like [`pattern_language`], but returns the `regex-syntax` [`Hir`], ready for
/// `regex-automata`'s NFA compiler without printing and re-parsing.
pub fn pattern_hir(ecma: &str) -> Result<Hir, PatternError> {
    let mut p = Parser::new(ecma);
    let alts = p.parse_disjunction()?;
    if let Some((off, c)) = p.peek_at() {
        debug_assert_eq!(c, ')');
        return Err(p.syntax("unmatched ')'", off));
    }
    let any = || {
        Hir::repetition(Repetition {
            min: 0,
            max: None,
            greedy: true,
            sub: Box::new(Hir::class(Class::Unicode(ClassUnicode::new([
                ClassUnicodeRange::new('\0', char::MAX),
            ])))),
        })
    };
    let wrapped = alts
        .into_iter()
        .map(|alt| {
            let mut items = match alt {
                Node::Concat(v) => v,
                other => vec![other],
            };
            let anchored_start = matches!(items.first(), Some(Node::Look(Look::Start)));
            if anchored_start {
                items.remove(0);
            }
            let anchored_end = matches!(items.last(), Some(Node::Look(Look::End)));
            if anchored_end {
                items.pop();
            }
            let mut parts = Vec::with_capacity(items.len() + 2);
            if !anchored_start {
                parts.push(any());
            }
            parts.extend(items.into_iter().map(Node::into_hir));
            if !anchored_end {
                parts.push(any());
            }
            Hir::concat(parts)
        })
        .collect();
    Ok(Hir::alternation(wrapped))
}

mod classes;
mod parser;
#[cfg(test)]
mod tests;
