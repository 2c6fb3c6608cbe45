//! The narrow byte-level interface between the kernel and a grammar.

/// A byte-level recognizer with undo: the only thing the kernel knows about a grammar.
///
/// `try_push_byte` must leave the state unchanged when it returns `false`, and must return
/// `true` exactly when some continuation of the bytes so far can still be accepted (the kernel
/// relies on this to prune whole subtrees of the vocabulary trie).
///
/// Everything past the first three methods is optional: the defaults turn the corresponding
/// fast path off, and the kernel then falls back to walking the whole trie.
pub trait Recognizer {
    /// Feeds one byte; `false` (state unchanged) when no valid document continues with it.
    fn try_push_byte(&mut self, byte: u8) -> bool;

    /// Undoes the last `n` accepted bytes. `n` may be 0 (then it must be cheap).
    fn pop_bytes(&mut self, n: usize);

    /// Whether the bytes so far form a complete document (end of sequence is allowed).
    fn is_accepting(&self) -> bool;

    /// Writes a key that identifies the current state: two states with equal keys must allow
    /// exactly the same continuations. Returns `false` when the state should not be cached.
    fn state_key(&self, _key: &mut Vec<u32>) -> bool {
        false
    }

    /// Describes the current state for error messages.
    fn describe(&self) -> String {
        String::new()
    }

    /// The lexeme fast path: when the recognizer is inside a lexeme that can only end at
    /// `boundary` bytes, the tokens containing no boundary byte are decided by the lexeme alone
    /// (see [`Split`]). Returns `None` when no split is available.
    ///
    /// For [`Inside::Walk`] the recognizer also writes a key for the lexeme state into `key`:
    /// equal keys must give equal sets of inside tokens.
    fn split(&self, _key: &mut Vec<u32>) -> Option<Split> {
        None
    }

    /// A short byte sequence that completes the document from the current state (state left
    /// unchanged), or `None` when none is known. Used to end generation validly when a token
    /// budget runs out.
    fn completion(&mut self, _max_len: usize) -> Option<Vec<u8>> {
        None
    }

    /// Turns lexeme-only mode on or off. While on, `try_push_byte` refuses every byte that
    /// would end the current lexeme (a boundary byte outside an escape).
    fn set_lexeme_only(&mut self, _on: bool) {}
}

/// How the tokens that stay inside the current lexeme are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inside {
    /// The lexeme accepts any JSON string content of a level: of those, exactly the tokens whose bytes are valid
    /// string content from a character boundary (no unescaped `"`, no control character, valid
    /// escapes and UTF-8, possibly ending inside an escape or a character) and decode to at
    /// most `budget` code points (`None`: no limit). The kernel precomputes these sets.
    StringContent {
        /// Most code points a token may add.
        budget: Option<u32>,
        /// The [level](crate::CONTENT_LEVELS) of content that keeps the lexeme viable: the
        /// string-content tokens spelled in it are decided by `budget` alone. Below the top
        /// level the other tokens without the boundary byte are walked as for
        /// [`Inside::Walk`], under the key written by [`Recognizer::split`].
        level: u8,
    },
    /// The lexeme is an object key that accepts any content spelled with only the escapes JSON
    /// needs: exactly the tokens that are [`crate::key_content`]. Precomputed too.
    KeyContent,
    /// Walk the trie with the recognizer in lexeme-only mode; the result is cached under the
    /// key written by [`Recognizer::split`].
    Walk,
}

/// The current lexeme, for the kernel's split of the vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// The byte that ends the lexeme (outside escapes). Only tokens containing it can leave the
    /// lexeme; they are found by walking a small trie of just those tokens with the full
    /// recognizer.
    pub boundary: u8,
    /// How the other tokens are decided.
    pub inside: Inside,
    /// For a string with [`Inside::StringContent`]: when the state after the closing quote does
    /// not depend on the content before it, the range of code points that content may have
    /// (`lo..=hi`). The kernel then closes the string once (after `lo` filler characters `a`)
    /// and walks only the distinct suffixes that follow the first quote of each token, instead
    /// of walking every token containing a quote.
    pub close: Option<(u32, u32)>,
}
