//! Re-spacing JSON text without touching its tokens (numbers keep their exact spelling).

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
