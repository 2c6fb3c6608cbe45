//! Re-spacing JSON text without touching its tokens (numbers keep their exact spelling), and
//! finding the number literals that reading the text rounds.

use crate::text::decimal::Decimal;

/// Removes insignificant whitespace from JSON text. Strings and numbers are kept as written.
///
/// ```
/// assert_eq!(schema_compiler::json_text::minify("{ \"a b\" : [1.50, 2e3] }"), r#"{"a b":[1.50,2e3]}"#);
/// ```
pub fn minify(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_str = false;
    let mut esc = false;
    for c in text.chars() {
        if in_str {
            out.push(c);
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

/// Pretty-prints JSON text with `indent` spaces per level, keeping tokens as written: one
/// member or item per line, `": "` after keys, empty containers as `{}` and `[]`.
///
/// ```
/// let p = schema_compiler::json_text::pretty(r#"{"a":[1,{}]}"#, 2);
/// assert_eq!(p, "{\n  \"a\": [\n    1,\n    {}\n  ]\n}");
/// ```
pub fn pretty(text: &str, indent: usize) -> String {
    let compact = minify(text);
    let b = compact.as_bytes();
    let mut out = String::with_capacity(b.len() * 2);
    let mut depth = 0usize;
    let mut in_str = false;
    let mut esc = false;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', depth * indent));
    };
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        let flush = |out: &mut String, from: usize, to: usize| out.push_str(&compact[from..to]);
        match c {
            b'"' => {
                in_str = true;
                i += 1;
                continue;
            }
            b'{' | b'[' => {
                flush(&mut out, start, i + 1);
                let close = if c == b'{' { b'}' } else { b']' };
                if b.get(i + 1) == Some(&close) {
                    out.push(close as char);
                    i += 2;
                    start = i;
                    continue;
                }
                depth += 1;
                newline(&mut out, depth);
            }
            b'}' | b']' => {
                flush(&mut out, start, i);
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c as char);
            }
            b',' => {
                flush(&mut out, start, i + 1);
                newline(&mut out, depth);
            }
            b':' => {
                flush(&mut out, start, i);
                out.push_str(": ");
            }
            _ => {
                i += 1;
                continue;
            }
        }
        i += 1;
        start = i;
    }
    out.push_str(&compact[start..]);
    out
}

/// The number literals of a JSON text that reading it into a [`serde_json::Value`] rounds:
/// each as the `f64` it was read as, with the exact value written.
///
/// `serde_json` keeps integers within 64 bits exactly and reads every other number as the
/// nearest `f64`, and the compiler takes that float's shortest decimal. A literal with more
/// significant digits than a float keeps can round to a short decimal that looks exact
/// (`100000000000000000000000000001` reads as `1e29`, `0.10000000000000000001` as `0.1`);
/// only the text tells them apart. Given to [`crate::Compiler::numbers_as_written`], the bounds
/// and `multipleOf` take the values as written, and `enum` and `const` refuse such numbers.
///
/// ```
/// use schema_compiler::json_text::RoundedNumbers;
/// use schema_compiler::text::decimal::Decimal;
///
/// let r = RoundedNumbers::in_text(r#"{"enum": [100000000000000000000000000001, 0.5, "1e99"]}"#);
/// assert!(r.contains(1e29));
/// assert!(!r.contains(0.5));
/// let written: Decimal = "100000000000000000000000000001".parse().unwrap();
/// assert_eq!(r.as_written(1e29), Some(&written));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RoundedNumbers {
    /// `f64::to_bits` of each rounded value, sorted, without repeats, with the value written
    /// (`None` where literals of different values were read as the same float).
    read: Vec<(u64, Option<Decimal>)>,
    /// `f64::to_bits` of the floats some literal was read as exactly, sorted: a rounded
    /// literal read as one of these has no single value written.
    exact: Vec<u64>,
}

impl RoundedNumbers {
    /// The rounded number literals of `text`, which should be JSON (strings are skipped; a
    /// text that is not JSON gives whatever number-like runs it holds outside strings).
    pub fn in_text(text: &str) -> RoundedNumbers {
        let b = text.as_bytes();
        let mut r = RoundedNumbers::default();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != b'"' {
                        i += if b[i] == b'\\' { 2 } else { 1 };
                    }
                    i += 1;
                }
                b'-' | b'0'..=b'9' => {
                    let start = i;
                    while i < b.len()
                        && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                    {
                        i += 1;
                    }
                    match float_literal(&text[start..i]) {
                        Some(Read::Rounded(bits, written)) => r.read.push((bits, written)),
                        Some(Read::Exact(bits)) => r.exact.push(bits),
                        None => {}
                    }
                }
                _ => i += 1,
            }
        }
        r.normalize();
        r
    }

    /// Whether a literal was rounded to `x`.
    pub fn contains(&self, x: f64) -> bool {
        self.find(x).is_ok()
    }

    /// The value written of the literals read as `x`, when one was rounded to it and they all
    /// wrote the same value.
    pub fn as_written(&self, x: f64) -> Option<&Decimal> {
        self.read[self.find(x).ok()?].1.as_ref()
    }

    /// How many distinct values literals were rounded to.
    pub fn len(&self) -> usize {
        self.read.len()
    }

    /// Whether no literal was rounded.
    pub fn is_empty(&self) -> bool {
        self.read.is_empty()
    }

    /// Adds the literals of `other` (the text of another document).
    pub fn extend(&mut self, other: &RoundedNumbers) {
        self.read.extend(other.read.iter().cloned());
        self.exact.extend_from_slice(&other.exact);
        self.normalize();
    }

    fn find(&self, x: f64) -> Result<usize, usize> {
        self.read
            .binary_search_by_key(&x.to_bits(), |(bits, _)| *bits)
    }

    /// Sorts, merges the entries of one float, and forgets the value written wherever two
    /// literals of different values were read as the same float.
    fn normalize(&mut self) {
        self.exact.sort_unstable();
        self.exact.dedup();
        self.read.sort_by_key(|(bits, _)| *bits);
        let mut merged: Vec<(u64, Option<Decimal>)> = Vec::with_capacity(self.read.len());
        for (bits, written) in self.read.drain(..) {
            match merged.last_mut() {
                Some((b, w)) if *b == bits => {
                    if *w != written {
                        *w = None;
                    }
                }
                _ => merged.push((bits, written)),
            }
        }
        for (bits, written) in &mut merged {
            if self.exact.binary_search(bits).is_ok() {
                *written = None;
            }
        }
        self.read = merged;
    }
}

/// How `serde_json` reads a number literal that it reads as a float.
enum Read {
    /// As the float with these bits, whose shortest decimal is the literal's value.
    Exact(u64),
    /// As the float with these bits, whose shortest decimal is not the literal's value (`None`
    /// when that value is beyond what a [`Decimal`] holds).
    Rounded(u64, Option<Decimal>),
}

/// How `serde_json` reads `literal`, when it reads it as a float (not a 64-bit integer).
fn float_literal(literal: &str) -> Option<Read> {
    let integer = !literal.contains(['.', 'e', 'E']);
    if integer && (literal.parse::<u64>().is_ok() || literal.parse::<i64>().is_ok()) {
        return None;
    }
    // Read as `serde_json` reads it: its float parsing may differ from `str::parse` in the
    // last bit for long literals.
    let x: f64 = serde_json::from_str(literal).ok()?;
    // An infinite read is refused by `serde_json` itself; keep it out.
    let read = Decimal::from_f64(x).ok()?;
    // A literal beyond the exponent range a `Decimal` holds is known to be rounded, but not
    // its value.
    let written = literal.parse::<Decimal>().ok();
    Some(if written.as_ref() == Some(&read) {
        Read::Exact(x.to_bits())
    } else {
        Read::Rounded(x.to_bits(), written)
    })
}
