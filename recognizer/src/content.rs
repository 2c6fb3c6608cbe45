//! JSON string content: which tokens can appear inside any string, and how long they are.
//!
//! A token is *string content* when its bytes, read from a character boundary outside an
//! escape, never end the string (no unescaped `"`), contain no raw control character, use only
//! valid escapes (`\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t` `\uXXXX`, surrogates only in
//! high-low pairs) and decode to valid UTF-8, except that the token may stop inside an escape
//! or inside a multi-byte character. Its length is the number of code points it starts (an
//! unfinished escape counts as the code point it will produce).

/// The number of code points `bytes` starts if it is string content, else `None`.
pub fn string_content(bytes: &[u8]) -> Option<u32> {
    content(bytes, false)
}

/// Like [`string_content`], for object keys that use only the escapes JSON needs: `\"`, `\\`,
/// `\b` `\f` `\n` `\r` `\t` and `\u0000`..`\u001f` (no `\/`, no other `\u`).
pub fn key_content(bytes: &[u8]) -> Option<u32> {
    content(bytes, true)
}

fn content(bytes: &[u8], needed_only: bool) -> Option<u32> {
    let mut decoded: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut pending = 0u32;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => return None,
            0..=0x1f => return None,
            b'\\' => {
                let rest = &bytes[i + 1..];
                let Some(&e) = rest.first() else {
                    pending = 1;
                    break;
                };
                match e {
                    b'/' if needed_only => return None,
                    b'u' if needed_only => {
                        // `\u00` then `0` or `1` then any digit.
                        for (k, &d) in rest[1..].iter().take(4).enumerate() {
                            let ok = match k {
                                0 | 1 => d == b'0',
                                2 => d == b'0' || d == b'1',
                                _ => d.is_ascii_hexdigit(),
                            };
                            if !ok {
                                return None;
                            }
                        }
                        if rest.len() < 5 {
                            pending = 1;
                            break;
                        }
                        decoded.push(b'x');
                        i += 6;
                    }
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        decoded.push(b'x');
                        i += 2;
                    }
                    b'u' => match hex4(&rest[1..]) {
                        Hex::Partial(v, k) => {
                            // Some completion must not be a lone low surrogate.
                            let (lo, hi) = completions(v, k);
                            if lo >= 0xDC00 && hi < 0xE000 {
                                return None;
                            }
                            pending = 1;
                            break;
                        }
                        Hex::Bad => return None,
                        Hex::Value(u) if (0xDC00..0xE000).contains(&u) => return None,
                        Hex::Value(u) if (0xD800..0xDC00).contains(&u) => {
                            // Needs `\uDC00`..`\uDFFF` next.
                            let after = &rest[5..];
                            match after {
                                [] | [b'\\'] | [b'\\', b'u'] => {
                                    pending = 1;
                                    break;
                                }
                                [b'\\', b'u', tail @ ..] => match hex4(tail) {
                                    Hex::Partial(v, k) => {
                                        // Some completion must be a low surrogate.
                                        let (lo, hi) = completions(v, k);
                                        if hi < 0xDC00 || lo >= 0xE000 {
                                            return None;
                                        }
                                        pending = 1;
                                        break;
                                    }
                                    Hex::Value(lo) if (0xDC00..0xE000).contains(&lo) => {
                                        decoded.extend_from_slice("😀".as_bytes());
                                        i += 12;
                                    }
                                    _ => return None,
                                },
                                _ => return None,
                            }
                        }
                        Hex::Value(u) => {
                            let c = char::from_u32(u)?;
                            let mut buf = [0u8; 4];
                            decoded.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                            i += 6;
                        }
                    },
                    _ => return None,
                }
            }
            _ => {
                decoded.push(b);
                i += 1;
            }
        }
    }
    match std::str::from_utf8(&decoded) {
        Ok(_) => {}
        // An unfinished character may end the token, but an escape cannot start inside one.
        Err(e) if e.error_len().is_none() && pending == 0 => {}
        Err(_) => return None,
    }
    let cps = decoded
        .iter()
        .filter(|&&b| !(0x80..0xC0).contains(&b))
        .count() as u32;
    Some(cps + pending)
}

enum Hex {
    Value(u32),
    /// The value of the `k` digits read so far.
    Partial(u32, u32),
    Bad,
}

/// The values four hex digits can take after the `k` digits of value `v`.
fn completions(v: u32, k: u32) -> (u32, u32) {
    let shift = 4 * (4 - k);
    (v << shift, (v << shift) | ((1 << shift) - 1))
}

fn hex4(b: &[u8]) -> Hex {
    let mut v = 0u32;
    for k in 0..4 {
        match b.get(k) {
            None => return Hex::Partial(v, k as u32),
            Some(&c) => match (c as char).to_digit(16) {
                Some(h) => v = (v << 4) | h,
                None => return Hex::Bad,
            },
        }
    }
    Hex::Value(v)
}

#[cfg(test)]
mod tests {
    use super::{key_content, string_content};

    #[test]
    fn keys_use_only_the_escapes_json_needs() {
        assert_eq!(key_content("héllo".as_bytes()), Some(5));
        assert_eq!(key_content(b"a\\\"\\n\\t"), Some(4));
        assert_eq!(key_content(b"\\u001f"), Some(1));
        assert_eq!(key_content(b"\\u00"), Some(1), "may become \\u001f");
        assert_eq!(key_content(b"\\"), Some(1));
        assert_eq!(key_content(b"\\/"), None);
        assert_eq!(key_content(b"\\u0020"), None);
        assert_eq!(key_content(b"\\u00e9"), None);
        assert_eq!(key_content(b"\\u01"), None);
        assert_eq!(key_content(b"\\u002"), None);
        assert_eq!(key_content(b"a\""), None);
        assert_eq!(
            string_content(b"\\/"),
            Some(1),
            "values may escape anything"
        );
    }

    #[test]
    fn classifies() {
        assert_eq!(string_content(b"hello"), Some(5));
        assert_eq!(string_content("héllo".as_bytes()), Some(5));
        assert_eq!(string_content(b"a\""), None);
        assert_eq!(string_content(b"\\\""), Some(1));
        assert_eq!(string_content(b"\\n\\t"), Some(2));
        assert_eq!(
            string_content(b"\\"),
            Some(1),
            "an unfinished escape counts"
        );
        assert_eq!(string_content(b"\\u00"), Some(1));
        assert_eq!(string_content(b"\\u00e9x"), Some(2));
        assert_eq!(string_content(b"\\ud83d"), Some(1));
        assert_eq!(string_content(b"\\ud83d\\ude00"), Some(1));
        assert_eq!(
            string_content(b"\\ud83dx"),
            None,
            "a high surrogate needs a low one"
        );
        assert_eq!(string_content(b"\\ude00"), None, "a lone low surrogate");
        assert_eq!(string_content(b"\\x"), None);
        assert_eq!(string_content(b"a\nb"), None);
        assert_eq!(
            string_content(b"\xe2\x82"),
            Some(1),
            "a started character counts"
        );
        assert_eq!(
            string_content(b"\x82"),
            None,
            "a continuation byte cannot start"
        );
        assert_eq!(
            string_content(b"\xc3\\n"),
            None,
            "an escape cannot finish a character"
        );
        assert_eq!(string_content(b"\xff"), None);
        assert_eq!(string_content(b""), Some(0));
    }
}
