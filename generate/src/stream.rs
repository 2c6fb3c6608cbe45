//! Streaming text: UTF-8 safe deltas from token bytes.

/// Turns a stream of byte chunks into text deltas, holding back an incomplete character until
/// its last byte arrives. Invalid bytes (never produced under a JSON constraint, possible in
/// free text) come out as U+FFFD.
#[derive(Debug, Default, Clone)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds bytes; returns the text that is now complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        let mut out = String::new();
        self.push_into(bytes, &mut out);
        out
    }

    /// [`Utf8Stream::push`], appending the text that is now complete to `out`.
    pub fn push_into(&mut self, bytes: &[u8], out: &mut String) {
        self.pending.extend_from_slice(bytes);
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(
                        std::str::from_utf8(&self.pending[..valid]).expect("valid prefix"),
                    );
                    match e.error_len() {
                        // Incomplete character at the end: keep it.
                        None => {
                            self.pending.drain(..valid);
                            return;
                        }
                        Some(n) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + n);
                        }
                    }
                }
            }
        }
    }

    /// Flushes what is left (an incomplete character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        self.finish_into(&mut out);
        out
    }

    /// [`Utf8Stream::finish`], appending to `out`.
    pub fn finish_into(&mut self, out: &mut String) {
        out.push_str(&String::from_utf8_lossy(&self.pending));
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::Utf8Stream;

    #[test]
    fn splits_characters_across_chunks() {
        let mut s = Utf8Stream::default();
        let e = "é€😀".as_bytes();
        let mut out = String::new();
        for b in e {
            out.push_str(&s.push(&[*b]));
        }
        assert_eq!(out, "é€😀");
        assert_eq!(s.push(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(s.push(b"\xe2\x82"), "");
        assert_eq!(s.finish(), "\u{FFFD}");
    }
}
