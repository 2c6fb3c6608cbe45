//! The recursive-descent parser of ECMA-262 patterns (with the `u` flag and the Annex B
//! readings described in the module docs) into a [`Node`] tree.

use regex_syntax::hir::{ClassUnicode, Look};

use super::PatternError;
use super::classes::*;

/// A class atom: one code point (possibly a lone surrogate) or a set.
pub(super) enum ClassAtom {
    Char(u32),
    Set(ClassUnicode),
}

pub(super) struct Parser<'a> {
    src: &'a str,
    chars: Vec<(usize, char)>,
    pos: usize,
    depth: u32,
}

/// Deepest group nesting accepted, far beyond real patterns; guards the recursion.
const MAX_DEPTH: u32 = 200;

impl<'a> Parser<'a> {
    pub(super) fn new(src: &'a str) -> Parser<'a> {
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

    pub(super) fn peek_at(&self) -> Option<(usize, char)> {
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

    pub(super) fn syntax(&self, message: &str, offset: usize) -> PatternError {
        PatternError::Syntax {
            message: message.to_owned(),
            offset,
        }
    }

    fn unsupported(&self, feature: &'static str, offset: usize) -> PatternError {
        PatternError::Unsupported { feature, offset }
    }

    /// Parses alternatives up to `)` or the end; returns them separately.
    pub(super) fn parse_disjunction(&mut self) -> Result<Vec<Node>, PatternError> {
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
