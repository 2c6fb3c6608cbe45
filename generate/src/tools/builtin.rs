//! Built-in tools for demos and tests.
//!
//! [`calculator`] evaluates arithmetic with its own parser ([`evaluate`]): numbers,
//! `+ - * / % ^` (`**` too), parentheses and unary signs. Nothing else is accepted, so no code
//! is ever run, and every input gives a value or an error (never a panic).

use serde_json::{Value, json};

use super::Tool;
use super::tool_loop::ToolHandler;

/// Longest expression [`evaluate`] reads, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 4096;

/// Deepest nesting of parentheses and signs [`evaluate`] accepts.
pub const MAX_DEPTH: usize = 64;

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CalcError {
    /// Nothing to evaluate.
    #[error("the expression is empty")]
    Empty,
    /// A character that is not part of arithmetic.
    #[error("unexpected {found:?} at position {at}")]
    Unexpected {
        /// Byte offset.
        at: usize,
        /// What was there.
        found: char,
    },
    /// The expression stops where a number or `(` should come.
    #[error("the expression ends where a number or `(` should come")]
    UnexpectedEnd,
    /// A `(` without its `)`.
    #[error("missing `)` for the `(` at position {at}")]
    Unclosed {
        /// Byte offset of the `(`.
        at: usize,
    },
    /// A number that does not parse.
    #[error("invalid number {text:?} at position {at}")]
    Number {
        /// Byte offset.
        at: usize,
        /// The text.
        text: String,
    },
    /// Division or remainder by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// The result (or a step) is infinite or not a number.
    #[error("the result is not a finite number")]
    NotFinite,
    /// Longer than [`MAX_EXPRESSION_LEN`].
    #[error("the expression is longer than {MAX_EXPRESSION_LEN} bytes")]
    TooLong,
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("the expression is nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// Evaluates an arithmetic expression.
///
/// Grammar (usual precedence; `^` binds tighter than a sign and groups to the right, so
/// `-2^2` is `-4` and `2^3^2` is `512`):
///
/// ```text
/// expr   = term (("+" | "-") term)*
/// term   = unary (("*" | "/" | "%") unary)*
/// unary  = ("-" | "+") unary | power
/// power  = atom (("^" | "**") unary)?
/// atom   = number | "(" expr ")"
/// number = digits ["." digits] [("e" | "E") ["+" | "-"] digits]   (or "." digits)
/// ```
///
/// Whitespace is ignored between tokens. `%` is the remainder with the sign of the dividend.
///
/// ```
/// use generate::tools::builtin::evaluate;
/// assert_eq!(evaluate("1234 * 5678"), Ok(7_006_652.0));
/// assert_eq!(evaluate("2 + 3 * (4 - 1) ^ 2"), Ok(29.0));
/// assert!(evaluate("1 / 0").is_err());
/// ```
pub fn evaluate(expr: &str) -> Result<f64, CalcError> {
    if expr.len() > MAX_EXPRESSION_LEN {
        return Err(CalcError::TooLong);
    }
    let mut p = Parser {
        s: expr.as_bytes(),
        src: expr,
        i: 0,
        depth: 0,
    };
    p.skip_ws();
    if p.i == p.s.len() {
        return Err(CalcError::Empty);
    }
    let v = p.expr()?;
    p.skip_ws();
    if p.i < p.s.len() {
        return Err(p.unexpected());
    }
    finite(v)
}

fn finite(v: f64) -> Result<f64, CalcError> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(CalcError::NotFinite)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }

    fn unexpected(&self) -> CalcError {
        match self.src.get(self.i..).and_then(|r| r.chars().next()) {
            Some(found) => CalcError::Unexpected { at: self.i, found },
            None => CalcError::UnexpectedEnd,
        }
    }

    fn enter(&mut self) -> Result<(), CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CalcError::TooDeep);
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<f64, CalcError> {
        let mut v = self.term()?;
        loop {
            match self.peek() {
                Some(b'+') => {
                    self.i += 1;
                    v = finite(v + self.term()?)?;
                }
                Some(b'-') => {
                    self.i += 1;
                    v = finite(v - self.term()?)?;
                }
                _ => return Ok(v),
            }
        }
    }

    fn term(&mut self) -> Result<f64, CalcError> {
        let mut v = self.unary()?;
        loop {
            match self.peek() {
                Some(b'*') if self.s.get(self.i + 1) != Some(&b'*') => {
                    self.i += 1;
                    v = finite(v * self.unary()?)?;
                }
                Some(b'/') => {
                    self.i += 1;
                    let d = self.unary()?;
                    if d == 0.0 {
                        return Err(CalcError::DivisionByZero);
                    }
                    v = finite(v / d)?;
                }
                Some(b'%') => {
                    self.i += 1;
                    let d = self.unary()?;
                    if d == 0.0 {
                        return Err(CalcError::DivisionByZero);
                    }
                    v = finite(v % d)?;
                }
                _ => return Ok(v),
            }
        }
    }

    fn unary(&mut self) -> Result<f64, CalcError> {
        match self.peek() {
            Some(sign @ (b'-' | b'+')) => {
                self.i += 1;
                self.enter()?;
                let v = self.unary()?;
                self.depth -= 1;
                Ok(if sign == b'-' { -v } else { v })
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<f64, CalcError> {
        let base = self.atom()?;
        let op = match self.peek() {
            Some(b'^') => 1,
            Some(b'*') if self.s.get(self.i + 1) == Some(&b'*') => 2,
            _ => return Ok(base),
        };
        self.i += op;
        self.enter()?;
        let exp = self.unary()?;
        self.depth -= 1;
        finite(base.powf(exp))
    }

    fn atom(&mut self) -> Result<f64, CalcError> {
        match self.peek() {
            Some(b'(') => {
                let open = self.i;
                self.i += 1;
                self.enter()?;
                let v = self.expr()?;
                self.depth -= 1;
                if self.peek() != Some(b')') {
                    return Err(match self.peek() {
                        None => CalcError::Unclosed { at: open },
                        Some(_) => self.unexpected(),
                    });
                }
                self.i += 1;
                Ok(v)
            }
            Some(b'0'..=b'9' | b'.') => self.number(),
            Some(_) => Err(self.unexpected()),
            None => Err(CalcError::UnexpectedEnd),
        }
    }

    fn number(&mut self) -> Result<f64, CalcError> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let from = p.i;
            while p.i < p.s.len() && p.s[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i - from
        };
        let mut n = digits(self);
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            n += digits(self);
        }
        if n > 0 && matches!(self.s.get(self.i), Some(b'e' | b'E')) {
            let mark = self.i;
            self.i += 1;
            if matches!(self.s.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                // Not an exponent after all (`2e` is an error at the `e`).
                self.i = mark;
            }
        }
        let text = &self.src[start..self.i];
        if n == 0 {
            return Err(CalcError::Number {
                at: start,
                text: text.to_string(),
            });
        }
        text.parse::<f64>()
            .map_err(|_| CalcError::Number {
                at: start,
                text: text.to_string(),
            })
            .and_then(finite)
    }
}

/// A result as JSON: integers (up to 2^53) without a fraction, other values as they are.
pub fn number_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() <= 9_007_199_254_740_992.0 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// The calculator tool: `{"expression": "<arithmetic>"}`, answered with the number.
///
/// The expression is constrained by a pattern to the characters of arithmetic, so a model
/// cannot write anything else; [`evaluate`] still checks everything.
pub fn calculator() -> (Tool, ToolHandler) {
    let tool = Tool::new(
        "calculator",
        "Evaluates an arithmetic expression with + - * / % ^ and parentheses, e.g. 2 * (3 + 4).",
        json!({
            "type": "object",
            "properties": {
                "expression": {
                    "type": "string",
                    "description": "The arithmetic expression, e.g. 12 * (3 + 4)",
                    "pattern": "^[-+(.0-9][-+*/%^(). 0-9]*$",
                    "minLength": 1,
                    "maxLength": 200
                }
            },
            "required": ["expression"],
            "additionalProperties": false
        }),
    );
    let handler = ToolHandler::new(|args: Value| {
        let expr = args
            .get("expression")
            .and_then(Value::as_str)
            .ok_or_else(|| "missing the `expression` string".to_string())?;
        evaluate(expr).map(number_value).map_err(|e| e.to_string())
    });
    (tool, handler)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> f64 {
        evaluate(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(ok("1234 * 5678"), 7_006_652.0);
        assert_eq!(ok("2 + 3 * 4"), 14.0);
        assert_eq!(ok("(2 + 3) * 4"), 20.0);
        assert_eq!(ok("10 - 4 - 3"), 3.0);
        assert_eq!(ok("100 / 10 / 5"), 2.0);
        assert_eq!(ok("2 ^ 3 ^ 2"), 512.0);
        assert_eq!(ok("2 ** 10"), 1024.0);
        assert_eq!(ok("-2 ^ 2"), -4.0);
        assert_eq!(ok("2 ^ -1"), 0.5);
        assert_eq!(ok("(-2) ^ 2"), 4.0);
        assert_eq!(ok("7 % 3 + 1"), 2.0);
        assert_eq!(ok("-7 % 3"), -1.0);
        assert_eq!(ok("2 * 3 % 4"), 2.0);
        assert_eq!(ok("--3"), 3.0);
        assert_eq!(ok("+3 - -3"), 6.0);
        assert_eq!(ok("1.5 * .5"), 0.75);
        assert_eq!(ok("1e3 + 2.5E-1"), 1000.25);
        assert_eq!(ok(" ( ( 1 ) ) "), 1.0);
        assert_eq!(ok("3 - 2 * (1 + 1) ^ 2 / 4"), 1.0);
    }

    #[test]
    fn errors() {
        assert_eq!(evaluate(""), Err(CalcError::Empty));
        assert_eq!(evaluate("   "), Err(CalcError::Empty));
        assert_eq!(evaluate("1 / 0"), Err(CalcError::DivisionByZero));
        assert_eq!(evaluate("1 / (2 - 2)"), Err(CalcError::DivisionByZero));
        assert_eq!(evaluate("5 % 0"), Err(CalcError::DivisionByZero));
        assert_eq!(evaluate("1 +"), Err(CalcError::UnexpectedEnd));
        assert_eq!(evaluate("(1 + 2"), Err(CalcError::Unclosed { at: 0 }));
        assert_eq!(
            evaluate("1 + 2)"),
            Err(CalcError::Unexpected { at: 5, found: ')' })
        );
        assert_eq!(
            evaluate("2 x 3"),
            Err(CalcError::Unexpected { at: 2, found: 'x' })
        );
        assert_eq!(
            evaluate("abs(1)"),
            Err(CalcError::Unexpected { at: 0, found: 'a' })
        );
        assert_eq!(evaluate("10 ^ 400"), Err(CalcError::NotFinite));
        assert_eq!(evaluate("0 ^ -1"), Err(CalcError::NotFinite));
        assert_eq!(evaluate("(-8) ^ 0.5"), Err(CalcError::NotFinite));
        assert!(matches!(
            evaluate("1.2.3"),
            Err(CalcError::Unexpected { at: 3, .. })
        ));
        assert!(matches!(
            evaluate("."),
            Err(CalcError::Number { at: 0, .. })
        ));
        assert!(matches!(
            evaluate("2e"),
            Err(CalcError::Unexpected { at: 1, .. })
        ));
        assert_eq!(evaluate(&"1+".repeat(3000)), Err(CalcError::TooLong));
        assert_eq!(evaluate(&"(".repeat(100)), Err(CalcError::TooDeep));
        assert_eq!(evaluate(&"-".repeat(100)), Err(CalcError::TooDeep));
        assert_eq!(evaluate("1 - 2 - 3 - 4"), Ok(-8.0));
    }

    /// Garbage of every kind gives a value or an error, never a panic.
    #[test]
    fn no_panic_on_garbage() {
        let pieces = [
            "",
            "(",
            ")",
            "+",
            "-",
            "*",
            "/",
            "%",
            "^",
            "**",
            ".",
            "e",
            "E",
            "1",
            "9.",
            ".5",
            "é",
            "😀",
            " ",
            "\n",
            "\0",
            "0",
            "1e999",
            "×",
            "\u{FFFD}",
            "((",
            "))",
            "import os",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut s = String::new();
            for _ in 0..(state % 12) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            if let Ok(v) = evaluate(&s) {
                assert!(v.is_finite(), "{s:?} gave {v}");
            }
        }
    }

    #[test]
    fn handler_answers_with_numbers_and_errors() {
        let (tool, handler) = calculator();
        assert_eq!(tool.name, "calculator");
        assert_eq!(
            handler.call(json!({"expression": "1234 * 5678"})),
            Ok(json!(7006652))
        );
        assert_eq!(
            handler.call(json!({"expression": "1 / 4"})),
            Ok(json!(0.25))
        );
        assert_eq!(
            handler.call(json!({"expression": "1 / 0"})),
            Err("division by zero".to_string())
        );
        assert!(handler.call(json!({"x": 1})).is_err());
        assert_eq!(number_value(-3.0), json!(-3));
    }
}
