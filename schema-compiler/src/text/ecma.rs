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

/// The parsed pattern, before conversion to [`Hir`].
#[derive(Debug, Clone)]
enum Node {
    Empty,
    Class(ClassUnicode),
    Look(Look),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        sub: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

impl Node {
    fn into_hir(self) -> Hir {
        match self {
            Node::Empty => Hir::empty(),
            Node::Class(c) => Hir::class(Class::Unicode(c)),
            Node::Look(l) => Hir::look(l),
            Node::Concat(v) => Hir::concat(v.into_iter().map(Node::into_hir).collect()),
            Node::Alt(v) => Hir::alternation(v.into_iter().map(Node::into_hir).collect()),
            Node::Repeat { sub, min, max } => Hir::repetition(Repetition {
                min,
                max,
                greedy: true,
                sub: Box::new(sub.into_hir()),
            }),
        }
    }
}

fn class_of(ranges: &[(u32, u32)]) -> ClassUnicode {
    let mut c = ClassUnicode::empty();
    for &(lo, hi) in ranges {
        add_range(&mut c, lo, hi);
    }
    c
}

/// Adds the scalar values in `lo..=hi` (surrogates have none).
fn add_range(c: &mut ClassUnicode, lo: u32, hi: u32) {
    let pieces = [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi.min(0x10FFFF))];
    for (a, b) in pieces {
        if a <= b
            && let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b))
        {
            c.push(ClassUnicodeRange::new(a, b));
        }
    }
}

fn digit_class() -> ClassUnicode {
    class_of(&[(0x30, 0x39)])
}

fn word_class() -> ClassUnicode {
    class_of(&[(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
}

/// ECMA-262 WhiteSpace and LineTerminator (with Zs from Unicode).
fn space_class() -> ClassUnicode {
    class_of(&[
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ])
}

fn dot_class() -> ClassUnicode {
    let mut c = class_of(&[(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]);
    c.negate();
    c
}

fn negated(mut c: ClassUnicode) -> ClassUnicode {
    c.negate();
    c
}

/// General_Category values (long names, short names and other aliases) that ECMA-262
/// accepts, with the short name passed to `regex-syntax`.
const GENERAL_CATEGORIES: &[(&str, &str)] = &[
    ("Cased_Letter", "LC"),
    ("Close_Punctuation", "Pe"),
    ("Connector_Punctuation", "Pc"),
    ("Control", "Cc"),
    ("cntrl", "Cc"),
    ("Currency_Symbol", "Sc"),
    ("Dash_Punctuation", "Pd"),
    ("Decimal_Number", "Nd"),
    ("digit", "Nd"),
    ("Enclosing_Mark", "Me"),
    ("Final_Punctuation", "Pf"),
    ("Format", "Cf"),
    ("Initial_Punctuation", "Pi"),
    ("Letter", "L"),
    ("Letter_Number", "Nl"),
    ("Line_Separator", "Zl"),
    ("Lowercase_Letter", "Ll"),
    ("Mark", "M"),
    ("Combining_Mark", "M"),
    ("Math_Symbol", "Sm"),
    ("Modifier_Letter", "Lm"),
    ("Modifier_Symbol", "Sk"),
    ("Nonspacing_Mark", "Mn"),
    ("Number", "N"),
    ("Open_Punctuation", "Ps"),
    ("Other", "C"),
    ("Other_Letter", "Lo"),
    ("Other_Number", "No"),
    ("Other_Punctuation", "Po"),
    ("Other_Symbol", "So"),
    ("Paragraph_Separator", "Zp"),
    ("Private_Use", "Co"),
    ("Punctuation", "P"),
    ("punct", "P"),
    ("Separator", "Z"),
    ("Space_Separator", "Zs"),
    ("Spacing_Mark", "Mc"),
    ("Surrogate", "Cs"),
    ("Symbol", "S"),
    ("Titlecase_Letter", "Lt"),
    ("Unassigned", "Cn"),
    ("Uppercase_Letter", "Lu"),
];

/// Short General_Category names.
const GENERAL_CATEGORY_SHORT: &[&str] = &[
    "C", "Cc", "Cf", "Cn", "Co", "Cs", "L", "LC", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me",
    "Mn", "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk",
    "Sm", "So", "Z", "Zl", "Zp", "Zs",
];

/// Binary properties of ECMA-262's table, canonical names and aliases.
const BINARY_PROPERTIES: &[&str] = &[
    "ASCII",
    "ASCII_Hex_Digit",
    "AHex",
    "Alphabetic",
    "Alpha",
    "Any",
    "Assigned",
    "Bidi_Control",
    "Bidi_C",
    "Bidi_Mirrored",
    "Bidi_M",
    "Case_Ignorable",
    "CI",
    "Cased",
    "Changes_When_Casefolded",
    "CWCF",
    "Changes_When_Casemapped",
    "CWCM",
    "Changes_When_Lowercased",
    "CWL",
    "Changes_When_NFKC_Casefolded",
    "CWKCF",
    "Changes_When_Titlecased",
    "CWT",
    "Changes_When_Uppercased",
    "CWU",
    "Dash",
    "Default_Ignorable_Code_Point",
    "DI",
    "Deprecated",
    "Dep",
    "Diacritic",
    "Dia",
    "Emoji",
    "Emoji_Component",
    "EComp",
    "Emoji_Modifier",
    "EMod",
    "Emoji_Modifier_Base",
    "EBase",
    "Emoji_Presentation",
    "EPres",
    "Extended_Pictographic",
    "ExtPict",
    "Extender",
    "Ext",
    "Grapheme_Base",
    "Gr_Base",
    "Grapheme_Extend",
    "Gr_Ext",
    "Hex_Digit",
    "Hex",
    "IDS_Binary_Operator",
    "IDSB",
    "IDS_Trinary_Operator",
    "IDST",
    "ID_Continue",
    "IDC",
    "ID_Start",
    "IDS",
    "Ideographic",
    "Ideo",
    "Join_Control",
    "Join_C",
    "Logical_Order_Exception",
    "LOE",
    "Lowercase",
    "Lower",
    "Math",
    "Noncharacter_Code_Point",
    "NChar",
    "Pattern_Syntax",
    "Pat_Syn",
    "Pattern_White_Space",
    "Pat_WS",
    "Quotation_Mark",
    "QMark",
    "Radical",
    "Regional_Indicator",
    "RI",
    "Sentence_Terminal",
    "STerm",
    "Soft_Dotted",
    "SD",
    "Terminal_Punctuation",
    "Term",
    "Unified_Ideograph",
    "UIdeo",
    "Uppercase",
    "Upper",
    "Variation_Selector",
    "VS",
    "White_Space",
    "space",
    "XID_Continue",
    "XIDC",
    "XID_Start",
    "XIDS",
];

fn general_category(value: &str) -> Option<&'static str> {
    GENERAL_CATEGORY_SHORT
        .iter()
        .find(|s| **s == value)
        .copied()
        .or_else(|| {
            GENERAL_CATEGORIES
                .iter()
                .find(|(long, _)| *long == value)
                .map(|(_, short)| *short)
        })
}

/// The class `regex-syntax` gives for `\p{expr}`.
fn regex_syntax_class(expr: &str) -> Option<ClassUnicode> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&format!(r"\p{{{expr}}}"))
        .ok()?;
    class_from_hir(&hir)
}

fn class_from_hir(hir: &Hir) -> Option<ClassUnicode> {
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(Class::Unicode(c)) => Some(c.clone()),
        regex_syntax::hir::HirKind::Literal(lit) => {
            let s = std::str::from_utf8(&lit.0).ok()?;
            let mut chars = s.chars();
            let c = chars.next()?;
            chars
                .next()
                .is_none()
                .then(|| ClassUnicode::new([ClassUnicodeRange::new(c, c)]))
        }
        _ => None,
    }
}

/// A class atom: one code point (possibly a lone surrogate) or a set.
enum ClassAtom {
    Char(u32),
    Set(ClassUnicode),
}

struct Parser<'a> {
    src: &'a str,
    chars: Vec<(usize, char)>,
    pos: usize,
    depth: u32,
}

/// Deepest group nesting accepted, far beyond real patterns; guards the recursion.
const MAX_DEPTH: u32 = 200;

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Parser<'a> {
        Parser {
            src,
            chars: src.char_indices().collect(),
            pos: 0,
            depth: 0,
        }
    }

    fn offset(&self) -> usize {
        self.chars.get(self.pos).map_or(self.src.len(), |&(o, _)| o)
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).map(|&(_, c)| c)
    }

    fn peek_at(&self) -> Option<(usize, char)> {
        self.chars.get(self.pos).copied()
    }

    fn peek_n(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).map(|&(_, c)| c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn syntax(&self, message: &str, offset: usize) -> PatternError {
        PatternError::Syntax {
            message: message.to_owned(),
            offset,
        }
    }

    fn unsupported(&self, feature: &'static str, offset: usize) -> PatternError {
        PatternError::Unsupported { feature, offset }
    }

    /// Parses alternatives up to `)` or the end; returns them separately.
    fn parse_disjunction(&mut self) -> Result<Vec<Node>, PatternError> {
        let mut alts = vec![self.parse_alternative()?];
        while self.eat('|') {
            alts.push(self.parse_alternative()?);
        }
        Ok(alts)
    }

    fn parse_alternative(&mut self) -> Result<Node, PatternError> {
        let mut terms = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            terms.push(self.parse_term()?);
        }
        Ok(match terms.len() {
            0 => Node::Empty,
            1 => terms.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(terms),
        })
    }

    fn parse_term(&mut self) -> Result<Node, PatternError> {
        let c = self.peek().unwrap_or('\0');
        // Assertions: not quantifiable.
        let assertion = match c {
            '^' => Some(Look::Start),
            '$' => Some(Look::End),
            '\\' if self.peek_n(1) == Some('b') => Some(Look::WordAscii),
            '\\' if self.peek_n(1) == Some('B') => Some(Look::WordAsciiNegate),
            _ => None,
        };
        if let Some(look) = assertion {
            self.pos += if c == '\\' { 2 } else { 1 };
            if self.at_quantifier() {
                return Err(self.syntax("nothing to repeat", self.offset()));
            }
            return Ok(Node::Look(look));
        }
        let atom = self.parse_atom()?;
        self.parse_quantifier(atom)
    }

    /// Whether a quantifier starts here.
    fn at_quantifier(&self) -> bool {
        match self.peek() {
            Some('*' | '+' | '?') => true,
            Some('{') => self.braced_quantifier().is_some(),
            _ => false,
        }
    }

    /// Reads `{n}`, `{n,}` or `{n,m}` at the current position without consuming it:
    /// `(min, max, chars consumed)`; counts saturate at `u64::MAX`.
    fn braced_quantifier(&self) -> Option<(u64, Option<u64>, usize)> {
        let mut i = self.pos;
        let at = |i: usize| self.chars.get(i).map(|&(_, c)| c);
        if at(i) != Some('{') {
            return None;
        }
        i += 1;
        let number = |i: &mut usize| -> Option<u64> {
            let s = *i;
            let mut v: u64 = 0;
            while let Some(d) = at(*i).and_then(|c| c.to_digit(10)) {
                v = v.saturating_mul(10).saturating_add(u64::from(d));
                *i += 1;
            }
            (*i > s).then_some(v)
        };
        let min = number(&mut i)?;
        let max = if at(i) == Some(',') {
            i += 1;
            number(&mut i)
        } else {
            Some(min)
        };
        if at(i) != Some('}') {
            return None;
        }
        Some((min, max, i + 1 - self.pos))
    }

    fn parse_quantifier(&mut self, atom: Node) -> Result<Node, PatternError> {
        let q_off = self.offset();
        let (min, max) = match self.peek() {
            Some('*') => {
                self.pos += 1;
                (0, None)
            }
            Some('+') => {
                self.pos += 1;
                (1, None)
            }
            Some('?') => {
                self.pos += 1;
                (0, Some(1))
            }
            Some('{') => match self.braced_quantifier() {
                Some((min, max, len)) => {
                    self.pos += len;
                    if max.is_some_and(|m| m < min) {
                        return Err(self.syntax("numbers out of order in quantifier", q_off));
                    }
                    let fit = |v: u64| u32::try_from(v).ok();
                    let min = fit(min)
                        .ok_or_else(|| self.unsupported("repetition count above 2^32", q_off))?;
                    let max = match max {
                        None => None,
                        Some(m) => Some(fit(m).ok_or_else(|| {
                            self.unsupported("repetition count above 2^32", q_off)
                        })?),
                    };
                    (min, max)
                }
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        // Laziness does not change the language.
        self.eat('?');
        Ok(Node::Repeat {
            sub: Box::new(atom),
            min,
            max,
        })
    }

    fn parse_atom(&mut self) -> Result<Node, PatternError> {
        let off = self.offset();
        let Some(c) = self.peek() else {
            return Err(self.syntax("unexpected end of pattern", off));
        };
        match c {
            '.' => {
                self.pos += 1;
                Ok(Node::Class(dot_class()))
            }
            '(' => self.parse_group(),
            '[' => {
                self.pos += 1;
                Ok(Node::Class(self.parse_class(off)?))
            }
            '\\' => {
                self.pos += 1;
                self.parse_atom_escape(off)
            }
            '*' | '+' | '?' => Err(self.syntax("nothing to repeat", off)),
            '{' if self.braced_quantifier().is_some() => Err(self.syntax("nothing to repeat", off)),
            _ => {
                // Includes the Annex B literals `{`, `}` and `]`.
                self.pos += 1;
                Ok(Node::Class(class_of(&[(c as u32, c as u32)])))
            }
        }
    }

    fn parse_group(&mut self) -> Result<Node, PatternError> {
        let off = self.offset();
        self.pos += 1; // '('
        if self.eat('?') {
            match self.peek() {
                Some(':') => {
                    self.pos += 1;
                }
                Some('=' | '!') => return Err(self.unsupported("lookahead", off)),
                Some('<') if matches!(self.peek_n(1), Some('=' | '!')) => {
                    return Err(self.unsupported("lookbehind", off));
                }
                Some('<') => {
                    self.pos += 1;
                    self.parse_group_name()?;
                }
                Some('i' | 'm' | 's' | '-') => {
                    return Err(self.unsupported("inline modifiers", off));
                }
                _ => return Err(self.syntax("invalid group", off)),
            }
        }
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.unsupported("groups nested more than 200 deep", off));
        }
        let alts = self.parse_disjunction()?;
        self.depth -= 1;
        if !self.eat(')') {
            return Err(self.syntax("unterminated group", off));
        }
        Ok(match alts.len() {
            1 => alts.into_iter().next().unwrap_or(Node::Empty),
            _ => Node::Alt(alts),
        })
    }

    /// Skips `name>`; the name does not matter for the language but must be an identifier.
    fn parse_group_name(&mut self) -> Result<(), PatternError> {
        let off = self.offset();
        let mut first = true;
        loop {
            match self.peek() {
                Some('>') if !first => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(c)
                    if c == '$'
                        || c == '_'
                        || (first && c.is_alphabetic())
                        || (!first
                            && (c.is_alphanumeric() || c == '\u{200C}' || c == '\u{200D}')) =>
                {
                    self.pos += 1;
                    first = false;
                }
                _ => return Err(self.syntax("invalid group name", off)),
            }
        }
    }

    fn parse_atom_escape(&mut self, off: usize) -> Result<Node, PatternError> {
        let Some(c) = self.peek() else {
            return Err(self.syntax("pattern ends with a backslash", off));
        };
        match c {
            '1'..='9' => Err(self.unsupported("backreference", off)),
            'k' => Err(self.unsupported("named backreference", off)),
            _ => match self.parse_escape_body(off, false)? {
                ClassAtom::Char(v) => Ok(Node::Class(class_of(&[(v, v)]))),
                ClassAtom::Set(s) => Ok(Node::Class(s)),
            },
        }
    }

    /// The escape after `\` (already consumed), shared by atoms and classes.
    fn parse_escape_body(&mut self, off: usize, in_class: bool) -> Result<ClassAtom, PatternError> {
        let Some(c) = self.peek() else {
            return Err(self.syntax("pattern ends with a backslash", off));
        };
        self.pos += 1;
        let set = |s| Ok(ClassAtom::Set(s));
        let ch = |v: u32| Ok(ClassAtom::Char(v));
        match c {
            'd' => set(digit_class()),
            'D' => set(negated(digit_class())),
            'w' => set(word_class()),
            'W' => set(negated(word_class())),
            's' => set(space_class()),
            'S' => set(negated(space_class())),
            'p' | 'P' => {
                let cls = self.parse_property(off)?;
                set(if c == 'P' { negated(cls) } else { cls })
            }
            'f' => ch(0x0C),
            'n' => ch(0x0A),
            'r' => ch(0x0D),
            't' => ch(0x09),
            'v' => ch(0x0B),
            'b' if in_class => ch(0x08),
            'c' => match self.peek() {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.pos += 1;
                    ch(l as u32 % 32)
                }
                _ => Err(self.syntax("\\c must be followed by a letter", off)),
            },
            '0' => {
                if self.peek().is_some_and(|d| d.is_ascii_digit()) {
                    Err(self.unsupported("legacy octal escape", off))
                } else {
                    ch(0)
                }
            }
            '1'..='9' => Err(self.unsupported("legacy octal escape", off)),
            'x' => {
                let v = self
                    .hex_digits(2)
                    .ok_or_else(|| self.syntax("invalid \\x escape", off))?;
                ch(v)
            }
            'u' => self.parse_unicode_escape(off).map(ClassAtom::Char),
            '^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|'
            | '/' | '-' => ch(c as u32),
            c if c.is_ascii_punctuation() || c == ' ' => ch(c as u32),
            _ => Err(self.syntax("invalid escape", off)),
        }
    }

    fn hex_digits(&mut self, n: usize) -> Option<u32> {
        let mut v = 0;
        for k in 0..n {
            let d = self.peek_n(k)?.to_digit(16)?;
            v = v * 16 + d;
        }
        self.pos += n;
        Some(v)
    }

    /// After `\u`: `{hex}` or four hex digits, joining a surrogate pair written as two escapes.
    fn parse_unicode_escape(&mut self, off: usize) -> Result<u32, PatternError> {
        if self.eat('{') {
            let mut v: u32 = 0;
            let mut n = 0;
            while let Some(d) = self.peek().and_then(|c| c.to_digit(16)) {
                v = v.saturating_mul(16).saturating_add(d);
                n += 1;
                self.pos += 1;
            }
            if n == 0 || !self.eat('}') || v > 0x10FFFF {
                return Err(self.syntax("invalid \\u{...} escape", off));
            }
            return Ok(v);
        }
        let v = self
            .hex_digits(4)
            .ok_or_else(|| self.syntax("invalid \\u escape", off))?;
        if (0xD800..0xDC00).contains(&v) && self.peek() == Some('\\') && self.peek_n(1) == Some('u')
        {
            let save = self.pos;
            self.pos += 2;
            match self.hex_digits(4) {
                Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                    return Ok(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00));
                }
                _ => self.pos = save,
            }
        }
        Ok(v)
    }

    /// After `\p` or `\P`: `{Name}` or `{Name=Value}` with ECMA-262's names.
    fn parse_property(&mut self, off: usize) -> Result<ClassUnicode, PatternError> {
        if !self.eat('{') {
            return Err(self.syntax("\\p must be followed by {", off));
        }
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '=')
        {
            self.pos += 1;
        }
        let body: String = self.chars[start..self.pos]
            .iter()
            .map(|&(_, c)| c)
            .collect();
        if !self.eat('}') {
            return Err(self.syntax("invalid property escape", off));
        }
        let unknown = || PatternError::Syntax {
            message: format!("unknown Unicode property {body:?}"),
            offset: off,
        };
        let expr = match body.split_once('=') {
            Some((name, value)) => match name {
                "General_Category" | "gc" => {
                    format!("gc={}", general_category(value).ok_or_else(unknown)?)
                }
                "Script" | "sc" | "Script_Extensions" | "scx"
                    if !value.is_empty()
                        && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                {
                    let short = if name.len() <= 3 {
                        name
                    } else if name == "Script" {
                        "sc"
                    } else {
                        "scx"
                    };
                    format!("{short}={value}")
                }
                _ => return Err(unknown()),
            },
            None => {
                if let Some(short) = general_category(&body) {
                    format!("gc={short}")
                } else if BINARY_PROPERTIES.contains(&body.as_str()) {
                    body.clone()
                } else {
                    return Err(unknown());
                }
            }
        };
        if expr == "gc=Cs" {
            // Surrogates are not scalar values: nothing in a decoded string.
            return Ok(ClassUnicode::empty());
        }
        match regex_syntax_class(&expr) {
            Some(c) => Ok(c),
            // A property ECMA-262 defines but `regex-syntax` has no table for.
            None if BINARY_PROPERTIES.contains(&expr.as_str()) => {
                Err(self.unsupported("Unicode property without a table", off))
            }
            None => Err(unknown()),
        }
    }

    /// After `[`: the class body up to `]`.
    fn parse_class(&mut self, open: usize) -> Result<ClassUnicode, PatternError> {
        let negate = self.eat('^');
        let mut cls = ClassUnicode::empty();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.syntax("unterminated character class", open));
            };
            if c == ']' {
                self.pos += 1;
                break;
            }
            let a_off = self.offset();
            let a = self.parse_class_atom()?;
            if self.peek() == Some('-') && self.peek_n(1).is_some_and(|c| c != ']') {
                self.pos += 1;
                let b = self.parse_class_atom()?;
                match (a, b) {
                    (ClassAtom::Char(x), ClassAtom::Char(y)) => {
                        if x > y {
                            return Err(self.syntax("range out of order in character class", a_off));
                        }
                        add_range(&mut cls, x, y);
                    }
                    // Annex B: a class escape as a range end stands for itself and `-`.
                    (a, b) => {
                        for atom in [a, ClassAtom::Char('-' as u32), b] {
                            match atom {
                                ClassAtom::Char(x) => add_range(&mut cls, x, x),
                                ClassAtom::Set(s) => cls.union(&s),
                            }
                        }
                    }
                }
            } else {
                match a {
                    ClassAtom::Char(x) => add_range(&mut cls, x, x),
                    ClassAtom::Set(s) => cls.union(&s),
                }
            }
        }
        if negate {
            cls.negate();
        }
        Ok(cls)
    }

    fn parse_class_atom(&mut self) -> Result<ClassAtom, PatternError> {
        let off = self.offset();
        match self.peek() {
            None => Err(self.syntax("unterminated character class", off)),
            Some('\\') => {
                self.pos += 1;
                if self.peek() == Some('B') {
                    return Err(self.syntax("\\B is not allowed in a character class", off));
                }
                if self.peek() == Some('k') {
                    return Err(self.syntax("invalid escape in character class", off));
                }
                self.parse_escape_body(off, true)
            }
            Some(c) => {
                self.pos += 1;
                Ok(ClassAtom::Char(c as u32))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn leading_lookaheads_split_into_anchored_parts() {
        let split = |p: &str| super::split_leading_lookaheads(p).map(|s| (s.rest, s.lookaheads));
        assert_eq!(
            split(r"^(?!@@)[\w@]+$"),
            Some(("^[\\w@]+$".to_owned(), vec![(true, "^(?:@@)".to_owned())]))
        );
        assert_eq!(
            split(r"^(?=.*\d)(?!a[)(])x"),
            Some((
                "^x".to_owned(),
                vec![
                    (false, "^(?:.*\\d)".to_owned()),
                    (true, "^(?:a[)(])".to_owned())
                ]
            ))
        );
        assert_eq!(
            split(r"^(?!(a|b)c)(x|y)"),
            Some(("^(x|y)".to_owned(), vec![(true, "^(?:(a|b)c)".to_owned())]))
        );
        // Not at the start anchor, an alternative the lookahead does not govern, unclosed.
        for p in [
            r"a(?=b)",
            r"(?!a)b",
            r"^(?!a)b|c",
            r"^(?!a",
            r"^(?!a)[b",
            r"^x(?!a)",
        ] {
            assert_eq!(split(p), None, "{p}");
        }
    }

    use super::*;

    fn full(p: &str) -> regex::Regex {
        let s = pattern_language(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        regex::Regex::new(&format!("^(?:{s})$")).unwrap_or_else(|e| panic!("{p} -> {s}: {e}"))
    }

    /// (pattern, string, whether ECMA-262 `new RegExp(pattern, "u").test(string)`).
    const CASES: &[(&str, &str, bool)] = &[
        ("a+", "xxaayy", true),
        ("^a*$", "aaa", true),
        ("^a*$", "abc", false),
        ("^a", "ba", false),
        ("a$", "ab", false),
        ("a$", "a\n", false),
        ("^$", "", true),
        ("^$", "\n", false),
        ("", "anything", true),
        ("^", "x", true),
        ("x|^y", "ay", false),
        ("x|^y", "ax", true),
        ("a^b", "a^b", false),
        (".", "\n", false),
        (".", "\r", false),
        (".", "\u{2028}", false),
        (".", "\u{85}", true),
        ("^.$", "😀", true),
        ("^..$", "😀", false),
        ("[^]", "\n", true),
        ("[]", "", false),
        ("[]", "a", false),
        ("[]a]", "a]", false),
        ("[]a]", "]", false),
        ("a]", "a]", true),
        ("a}", "a}", true),
        ("^a{", "a{", true),
        ("a{1", "a{1", true),
        ("a{,3}", "a{,3}", true),
        ("^a{2}$", "aa", true),
        ("^a{2}$", "aaa", false),
        ("^a{2,}$", "aaaa", true),
        ("^a{2,3}$", "aaaa", false),
        ("^a{2,3}?$", "aaa", true),
        ("^a+?$", "aaa", true),
        (r"^\d+$", "0123456789", true),
        (r"^\d$", "٣", false),
        (r"^\w+$", "abc_XYZ_09", true),
        (r"^\w$", "é", false),
        (r"^\W$", "é", true),
        (r"^\s$", "\u{FEFF}", true),
        (r"^\s$", "\u{3000}", true),
        (r"^\s$", "\u{B}", true),
        (r"^\s$", "\u{85}", false),
        (r"^\s$", "\u{180E}", false),
        (r"^\S$", "\u{85}", true),
        (r"\bfoo\b", "a foo.", true),
        (r"\bfoo\b", "afoo", false),
        (r"\bfoo", "éfoo", true),
        (r"\Boo", "foo", true),
        (r"\Bfoo", " foo", false),
        (r"^\cJ$", "\n", true),
        (r"^\0$", "\0", true),
        (r"^\x41$", "A", true),
        (r"^\u0041$", "A", true),
        (r"^\u{1F600}$", "😀", true),
        (r"^\uD83D\uDE00$", "😀", true),
        (r"^[\uD83D\uDE00]$", "😀", true),
        (r"\uD83D", "😀", false),
        (r"^\/\-\.$", "/-.", true),
        (r"^\@\_$", "@_", true),
        (r"^[\d-z]+$", "1-z", true),
        (r"^[\d-z]+$", "y", false),
        (r"^[\w-.]+$", "a-.b", true),
        (r"^[a-]+$", "a-", true),
        (r"^[-a]+$", "-a", true),
        (r"^[a-c-e]+$", "b-e", true),
        (r"^[a-c-e]+$", "d", false),
        (r"^[\b]$", "\u{8}", true),
        (r"^[^a-z]$", "A", true),
        (r"^[^a-z]$", "q", false),
        (r"^[\s\S]$", "\n", true),
        (r"^[.]$", "x", false),
        (r"^(?:ab)+$", "abab", true),
        (r"^(?<year>\d{4})-(?<m>\d\d)$", "2024-01", true),
        (r"^(a|b|)$", "", true),
        (r"^()*$", "", true),
        (r"^\p{Letter}+$", "Hello", true),
        (r"^\p{Letter}+$", "π", true),
        (r"^\p{Letter}+$", "123", false),
        (r"^\p{L}$", "ß", true),
        (r"^\p{Lu}$", "a", false),
        (r"^\P{Lu}$", "a", true),
        (r"^\p{gc=Nd}+$", "٣3", true),
        (r"^\p{General_Category=Decimal_Number}$", "٣", true),
        (r"^\p{Script=Greek}+$", "αβγ", true),
        (r"^\p{sc=Grek}+$", "abc", false),
        (r"^\p{scx=Hira}$", "ー", true),
        (r"^\p{ASCII_Hex_Digit}+$", "c0ffee", true),
        (r"^\p{Any}$", "\n", true),
        (r"^[\p{Lu}\d]+$", "A1B2", true),
        (r"^[^\p{L}]$", "1", true),
        (r"^\p{Emoji_Presentation}$", "😀", true),
        ("^ä+$", "ää", true),
        ("^[äöü]$", "ö", true),
        (r"^\\d$", r"\d", true),
        (r"^\$\^\.\*\+\?\(\)\[\]\{\}\|$", "$^.*+?()[]{}|", true),
        ("^[#&~-]+$", "#&~-", true),
        ("^a#b$", "a#b", true),
        ("^a b$", "a b", true),
        (r"^\t\n\v\f\r$", "\t\n\u{B}\u{C}\r", true),
        ("^(a*)*$", "aaa", true),
        ("^(a+|b)*c$", "abac", true),
        ("^(a+)?b$", "b", true),
        ("^(a+)?b$", "aab", true),
        ("^(a{2}){2}$", "aaaa", true),
        ("^(a{2}){2}$", "aaa", false),
        ("^(?:a|bc)+?$", "abcbc", true),
        ("^(a?){3}$", "aa", true),
        ("^(a*)+$", "", true),
        (r"^\d{3}-\d{4}$", "555-1234", true),
        (r"^\d{3}-\d{4}$", "555-12345", false),
        (r"\d{3}-\d{4}", "call 555-12345", true),
    ];

    #[test]
    fn spec_semantics_table() {
        for &(p, s, expected) in CASES {
            assert_eq!(full(p).is_match(s), expected, "pattern {p:?} on {s:?}");
        }
    }

    #[test]
    fn unsupported_and_errors() {
        let unsupported = [
            ("a(?=b)", "lookahead", 1),
            ("(?!b)", "lookahead", 0),
            ("(?<=a)b", "lookbehind", 0),
            ("(?<!a)b", "lookbehind", 0),
            (r"(a)\1", "backreference", 3),
            (r"(?<n>a)\k<n>", "named backreference", 7),
            (r"\01", "legacy octal escape", 0),
            ("(?i:a)", "inline modifiers", 0),
            ("a{0,99999999999}", "repetition count above 2^32", 1),
        ];
        for (p, feature, offset) in unsupported {
            assert_eq!(
                pattern_language(p),
                Err(PatternError::Unsupported { feature, offset }),
                "{p}"
            );
        }
        let syntax = [
            "*",
            "a**",
            "+a",
            "?",
            "(",
            "(a",
            "a)",
            ")",
            "[a",
            "[z-a]",
            r"\",
            r"a\",
            r"\a",
            r"\e",
            r"\z",
            r"\c1",
            r"\x4",
            r"\u12",
            r"\u{110000}",
            r"\p{Greek}",
            r"\p{Lettr}",
            r"\p{greek}",
            r"\p{Script=}",
            r"\pL",
            "(?<1a>x)",
            "(?x)",
            "^*",
            "$+",
            r"\b*",
            "a{3,2}",
            "{2}",
            r"[\B]",
            "(?<>a)",
        ];
        for p in syntax {
            assert!(
                matches!(pattern_language(p), Err(PatternError::Syntax { .. })),
                "{p}: {:?}",
                pattern_language(p)
            );
        }
    }

    #[test]
    fn deep_nesting_is_reported_not_broken() {
        let deep = format!("{}a{}", "(a".repeat(150), ")*".repeat(150));
        assert!(matches!(
            pattern_language(&deep),
            Err(PatternError::Unsupported { .. })
        ));
        assert!(pattern_hir(&deep).is_ok());
        let fine = format!("{}a{}", "(a".repeat(40), ")*".repeat(40));
        assert!(full(&fine).is_match("aa"));
    }

    #[test]
    fn every_binary_property_resolves() {
        for name in BINARY_PROPERTIES {
            let p = format!(r"\p{{{name}}}");
            match pattern_language(&p) {
                Ok(_) => {}
                Err(PatternError::Unsupported { .. })
                    if name.starts_with("Changes_When_NFKC") || *name == "CWKCF" => {}
                Err(e) => panic!("{name}: {e}"),
            }
        }
        for (long, short) in GENERAL_CATEGORIES {
            assert!(
                pattern_language(&format!(r"\p{{{long}}}")).is_ok(),
                "{long}"
            );
            assert!(
                pattern_language(&format!(r"\p{{gc={short}}}")).is_ok(),
                "{short}"
            );
        }
    }

    #[test]
    fn printed_regex_round_trips() {
        for &(p, _, _) in CASES {
            let hir = pattern_hir(p).unwrap();
            let printed = pattern_language(p).unwrap();
            let reparsed = regex_syntax::Parser::new().parse(&printed).unwrap();
            assert_eq!(reparsed, hir, "{p}");
        }
    }
}
