//! The tables for the tokens that can end an object key, read from a character boundary
//! outside an escape (where the recognizer gives a key a class: see
//! [`Recognizer::close_class`](crate::Recognizer::close_class)).
//!
//! Each token holding a quote is cut at its first unescaped quote into the key content before
//! it and the suffix after it. Only the tokens that JSON lets end a key are kept: those whose
//! suffix is empty or starts with `:` or white space (the only bytes a key's quote can be
//! followed by, whatever the schema); most tokens with a quote (`",`, `"}`, `")`) cannot. The
//! session walks the distinct contents with the recognizer in lexeme-only mode, classes each
//! accepted one by what ending the key there leads to, and walks the distinct suffixes once
//! per class with the full recognizer.

use std::collections::BTreeMap;

use vocab_index::{AnyIndex, TokenId, TrieKind, VocabIndex, Vocabulary};

use recognizer::{QUOTE, string_content};

/// In [`KeyCloses::tokens`]: a token that ends at its unescaped quote.
pub(crate) const NO_SUFFIX: u32 = u32::MAX;

/// Whether `suffix`, the bytes of a token after the quote that ends an object key, can follow
/// that quote in JSON: it is empty or starts with the name separator or white space.
fn can_follow_key(suffix: &[u8]) -> bool {
    matches!(
        suffix.first(),
        None | Some(b':' | b' ' | b'\t' | b'\n' | b'\r')
    )
}

/// The tokens that can end an object key: those with a quote that ends valid key content and
/// is followed by nothing, `:` or white space.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct KeyCloses {
    /// The distinct non-empty contents before tokens' unescaped quote (id = index into
    /// `tokens`), for tokens with at most one more quote after it.
    contents: AnyIndex,
    /// The distinct non-empty suffixes after those quotes.
    suffixes: AnyIndex,
    /// Per content `c`: (suffix id or [`NO_SUFFIX`], token), by suffix id, in
    /// `tokens[token_at[c]..token_at[c + 1]]` (one table: a mask reads the contents in order).
    token_at: Vec<u32>,
    tokens: Vec<(u32, TokenId)>,
    /// As `tokens`, for the tokens that start with a quote.
    root: Vec<(u32, TokenId)>,
    /// Tokens with valid content before their unescaped quote and two or more quotes after it:
    /// walked with the full recognizer (the content of a key may matter after a second quote).
    multi: AnyIndex,
}

/// Where the first unescaped quote of `bytes` is, read from a character boundary outside an
/// escape, when the bytes before it are complete, valid string content (so it can end a
/// string); `None` otherwise (no such quote, or invalid content before it).
fn unescaped_quote(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            QUOTE => break,
            b'\\' => {
                let len = match bytes.get(i + 1)? {
                    b'u' => 6,
                    _ => 2,
                };
                // An escape cut by a quote (`\u0"`) leaves no quote that can end the string.
                if bytes.get(i + 2..i + len)?.contains(&QUOTE) {
                    return None;
                }
                i += len;
            }
            _ => i += 1,
        }
    }
    let content = bytes.get(..i)?;
    (i < bytes.len() && std::str::from_utf8(content).is_ok() && string_content(content).is_some())
        .then_some(i)
}

impl KeyCloses {
    /// The tables for `quote_ids`, the tokens of `vocab` that hold a quote (those that cannot
    /// end a key are left out).
    pub(crate) fn new(
        kind: TrieKind,
        vocab: &Vocabulary,
        quote_ids: &[TokenId],
    ) -> Result<KeyCloses, vocab_index::Error> {
        let mut cut: Vec<(&[u8], &[u8], TokenId)> = Vec::new();
        let mut multi = Vec::new();
        for &id in quote_ids {
            let bytes = vocab.bytes(id);
            let Some(q) = unescaped_quote(bytes) else {
                continue;
            };
            let (content, suffix) = (&bytes[..q], &bytes[q + 1..]);
            if !can_follow_key(suffix) {
                continue;
            }
            if suffix.iter().filter(|&&b| b == QUOTE).count() > 1 {
                multi.push(id);
            } else {
                cut.push((content, suffix, id));
            }
        }
        // Suffix ids in byte order; the empty suffix has none.
        let mut suffixes: Vec<&[u8]> = cut.iter().map(|c| c.1).filter(|s| !s.is_empty()).collect();
        suffixes.sort_unstable();
        suffixes.dedup();
        let mut by_content: BTreeMap<&[u8], Vec<(u32, TokenId)>> = BTreeMap::new();
        for (content, suffix, id) in cut {
            let s = suffixes
                .binary_search(&suffix)
                .map_or(NO_SUFFIX, |i| i as u32);
            by_content.entry(content).or_default().push((s, id));
        }
        for list in by_content.values_mut() {
            list.sort_unstable();
        }
        let root = by_content.remove(&b""[..]).unwrap_or_default();
        let contents = Vocabulary::new(by_content.keys().copied(), [])?;
        let mut token_at = vec![0];
        let mut tokens = Vec::new();
        for list in by_content.values() {
            tokens.extend_from_slice(list);
            token_at.push(tokens.len() as u32);
        }
        Ok(KeyCloses {
            contents: AnyIndex::new(kind, &contents)?,
            suffixes: AnyIndex::new(kind, &Vocabulary::new(suffixes, [])?)?,
            token_at,
            tokens,
            root,
            multi: AnyIndex::build(kind, vocab, multi)?,
        })
    }

    /// The trie of contents.
    pub(crate) fn contents(&self) -> &AnyIndex {
        &self.contents
    }

    /// The trie of suffixes.
    pub(crate) fn suffixes(&self) -> &AnyIndex {
        &self.suffixes
    }

    /// The tokens of content `content`: (suffix id or [`NO_SUFFIX`], token).
    pub(crate) fn tokens(&self, content: TokenId) -> &[(u32, TokenId)] {
        let c = content.as_usize();
        &self.tokens[self.token_at[c] as usize..self.token_at[c + 1] as usize]
    }

    /// The tokens that start with their unescaped quote.
    pub(crate) fn root(&self) -> &[(u32, TokenId)] {
        &self.root
    }

    /// The tokens walked in full.
    pub(crate) fn multi(&self) -> &AnyIndex {
        &self.multi
    }

    /// Whether the ids fit a vocabulary of `n` tokens and the tries (a check on tables read
    /// from a file).
    pub(crate) fn fit(&self, n: usize) -> bool {
        let suffixes = self.suffixes.num_tokens();
        self.contents.num_tokens() + 1 == self.token_at.len()
            && self.token_at.windows(2).all(|w| w[0] <= w[1])
            && self
                .token_at
                .last()
                .is_some_and(|&end| end as usize == self.tokens.len())
            && self
                .tokens
                .iter()
                .chain(&self.root)
                .all(|&(s, id)| (s == NO_SUFFIX || (s as usize) < suffixes) && id.as_usize() < n)
    }

    /// Heap bytes of the tries.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.contents.memory_bytes() + self.suffixes.memory_bytes() + self.multi.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use vocab_index::{TokenId, TrieKind, VocabIndex, Vocabulary};

    use super::{KeyCloses, NO_SUFFIX, unescaped_quote};

    #[test]
    fn only_tokens_that_can_end_a_key_are_kept() {
        let tokens: [&[u8]; 9] = [
            b"a\"", b"a\":", b"a\": ", b"a\"\n", b"a\",", b"a\"}", b"\":{\"", b"\"]", b"b\"\t:",
        ];
        let vocab = Vocabulary::new(tokens.iter().copied(), []).unwrap();
        let ids: Vec<TokenId> = (0..tokens.len() as u32)
            .map(|i| TokenId::new(i).unwrap())
            .collect();
        let keys = KeyCloses::new(TrieKind::Flat, &vocab, &ids).unwrap();
        let mut kept: Vec<u32> = keys.root().iter().map(|&(_, id)| id.as_u32()).collect();
        for content in 0..keys.contents().num_tokens() as u32 {
            let list = keys.tokens(TokenId::new(content).unwrap());
            kept.extend(list.iter().map(|&(_, id)| id.as_u32()));
        }
        kept.sort_unstable();
        // Not `a",`, `a"}` or `"]`: a key's quote is followed by `:` or white space.
        assert_eq!(kept, [0, 1, 2, 3, 6, 8]);
        assert_eq!(keys.root().len(), 1);
        assert_eq!(keys.root()[0].1.as_u32(), 6);
        let a = keys.tokens(TokenId::new(0).unwrap());
        assert_eq!(a.iter().filter(|&&(s, _)| s == NO_SUFFIX).count(), 1);
    }

    #[test]
    fn the_first_unescaped_quote_after_valid_content() {
        assert_eq!(unescaped_quote(b"\":"), Some(0));
        assert_eq!(unescaped_quote(b"ab\","), Some(2));
        assert_eq!(unescaped_quote(b"\\\"\":"), Some(2));
        assert_eq!(unescaped_quote(b"\\\\\""), Some(2));
        assert_eq!(unescaped_quote(b"\\u0041\""), Some(6));
        // Only escaped quotes, an escape cut by the quote, content that is not valid.
        assert_eq!(unescaped_quote(b"\\\":\\\""), None);
        assert_eq!(unescaped_quote(b"\\u0\""), None);
        assert_eq!(unescaped_quote(b"\\q\""), None);
        assert_eq!(unescaped_quote(b"\x01\""), None);
        assert_eq!(unescaped_quote(b"\xc3\""), None);
    }
}
