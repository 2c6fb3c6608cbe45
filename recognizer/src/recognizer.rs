//! The narrow byte-level interface between a token-mask kernel and a grammar.

use crate::FILLER;

/// The byte that ends every lexeme a [`Split`] describes: a JSON string, a value or an object
/// key, ends at its first `"` outside an escape.
pub const QUOTE: u8 = b'"';

/// The bytes a JSON number is spelled in, in increasing order: a token spelled only in them
/// ([`is_numeric`]) can only continue a number (or a literal, whose letters include `e`).
pub const NUMBER_BYTES: [u8; 15] = *b"+-.0123456789Ee";

/// Whether `bytes` is a non-empty run of [`NUMBER_BYTES`].
pub fn is_numeric(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(|b| NUMBER_BYTES.contains(b))
}

/// A byte-level recognizer with undo: the only thing a mask kernel knows about a grammar.
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

    /// The string fast path: when the recognizer is inside a JSON string (a value or a key),
    /// which only an unescaped [`QUOTE`] can end, the tokens without a quote are decided by
    /// the string alone, as the [`Split`] says. Returns `None` when no split is available (not
    /// in a string, or a string whose content the split cannot describe).
    ///
    /// For [`Split::Walk`], and for [`Split::StringContent`] below the
    /// [top level](crate::TOP_LEVEL), the recognizer also writes a key for the state of the
    /// string into `key`: equal keys must give equal sets of tokens without a quote.
    fn split(&self, _key: &mut Vec<u32>) -> Option<Split> {
        None
    }

    /// A short byte sequence that completes the document from the current state (state left
    /// unchanged), or `None` when none is known. Used to end generation validly when a token
    /// budget runs out.
    fn completion(&mut self, _max_len: usize) -> Option<Vec<u8>> {
        None
    }

    /// A superset of the bytes [`Recognizer::try_push_byte`] may accept next, as a set of 256
    /// bits (byte `b` is bit `b % 64` of word `b / 64`), when one is cheap to give; `None`
    /// otherwise. A kernel refuses the other bytes without asking, which saves the recognizer
    /// from refusing them one by one where most of a trie's first bytes cannot follow (after a
    /// key, between members, at the start of a value).
    fn next_bytes_hint(&self) -> Option<[u64; 4]> {
        None
    }

    /// In lexeme-only mode: writes into `bytes` (byte `b` is bit `b % 64` of word `b / 64`)
    /// bytes that each take the recognizer back to where it is now. Pushing any of them, and
    /// any run of them, is either accepted every time, leaving the recognizer equivalent to
    /// the current one (the same answers to every push and to this method), or refused every
    /// time. A kernel may then decide every token spelled in those bytes alone by pushing one
    /// of them, and push each other token only from its first byte outside them.
    ///
    /// `false` (the default), with nothing promised, where no such bytes are known.
    fn loop_bytes(&self, _bytes: &mut [u64; 4]) -> bool {
        false
    }

    /// Turns lexeme-only mode on or off. While on, `try_push_byte` refuses every byte that
    /// would end the current string (a [`QUOTE`] outside an escape).
    fn set_lexeme_only(&mut self, _on: bool) {}

    /// In lexeme-only mode, inside an object key at a character boundary outside an escape:
    /// the class of what ending the key here leads to, as a small number (a kernel may index a
    /// table by it; `mask-kernel` takes numbers from 65,536 up as no class). Within one walk
    /// (the bytes pushed since lexeme-only mode was turned on differ, the state before them
    /// does not), two positions of the same class must accept the same byte strings that start
    /// with the closing [`QUOTE`] and hold at most one more quote: the key's content may still
    /// matter after that (a later key of the same object must differ from it), and the kernel
    /// walks tokens with more quotes in full.
    ///
    /// `None` when no class is known; the kernel then walks the tokens that end the key with
    /// the full recognizer.
    fn close_class(&mut self) -> Option<u32> {
        None
    }

    /// A number for the grammar this recognizer follows: the same for every recognizer of
    /// that grammar, and no other grammar's in the process. Under it a kernel may remember,
    /// for every recognizer with the same number, the tokens without a quote that a
    /// [`Split`]'s key allows, and the classes of a [named](Recognizer::close_classes_name)
    /// key position. `None` (the default): the kernel remembers nothing beyond one recognizer.
    fn grammar_name(&self) -> Option<u64> {
        None
    }

    /// In lexeme-only mode, inside a key, just after lexeme-only mode was turned on: writes a
    /// name for the position's lexer states into `name`. With the [grammar's
    /// name](Recognizer::grammar_name), and with the [`Split::Walk`] key where the key does not
    /// take any content ([`Split::KeyContent`]), it names which contents pushed from here are
    /// accepted and how [`Recognizer::close_class`] groups them (which contents share a
    /// class): two positions so named alike, of any recognizers at any time in the process,
    /// must give the same answers (though they may number the classes differently).
    ///
    /// `false` (the default), with nothing written, when there is no such name; the kernel
    /// then asks each time.
    fn close_classes_name(&self, _name: &mut Vec<u32>) -> bool {
        false
    }

    /// In lexeme-only mode, inside a key, just after lexeme-only mode was turned on: a number
    /// for the key being read and for how [`Recognizer::close_class`] numbers its classes. At
    /// two walks with the same number (the recognizer may have read more of the key between
    /// them) two positions of the same class must accept the same byte strings that start
    /// with the closing [`QUOTE`] and hold at most one more quote, as within one walk; no two
    /// keys of the process may have the same number. A kernel may then keep what follows each
    /// class from one position of the key to the next.
    ///
    /// `None` (the default) when there is no such number: classes then hold within one walk.
    fn close_frame(&mut self) -> Option<u128> {
        None
    }

    /// Where it knows them (inside a number, or in lexeme-only mode inside a string whose
    /// lexers read digits alike): writes a class for each byte of [`NUMBER_BYTES`]
    /// (`classes[i]` for `NUMBER_BYTES[i]`; equal numbers, one class) such that, from here, in
    /// any run of [`NUMBER_BYTES`], replacing a byte by another of its class changes neither
    /// which bytes are accepted nor the state reached. A kernel then walks the
    /// [numeric](is_numeric) tokens by class, once per distinct run of classes, instead of
    /// once per token (a vocabulary may hold a thousand tokens of three digits).
    ///
    /// `false` (the default), with nothing promised, where no such classes are known.
    fn number_classes(&self, _classes: &mut [u8; NUMBER_BYTES.len()]) -> bool {
        false
    }
}

/// Where the recognizer is, for the kernel's split of the vocabulary: always inside a JSON
/// string, a value or an object key, which ends at its first unescaped [`QUOTE`]. Only the
/// tokens containing a quote can leave the string; they are found by walking a small trie of
/// just those tokens with the full recognizer. How the other tokens are decided is the
/// variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// The string accepts any content of a [level](crate::CONTENT_LEVELS) up to a length: of
    /// the tokens without a quote, those spelled in the level (see
    /// [`spelled_in`](crate::spelled_in)) are allowed exactly when they are
    /// [`string_content`](crate::string_content) of at most `budget` code points. A kernel
    /// precomputes these sets. Below the [top level](crate::TOP_LEVEL) the other tokens
    /// without a quote are walked as for [`Split::Walk`], under the key written by
    /// [`Recognizer::split`].
    StringContent {
        /// Most code points a token may add (`None`: no limit). It comes from `maxLength` or
        /// from a bounded repetition.
        budget: Option<u32>,
        /// The level of content every token spelled in which keeps the string viable.
        level: u8,
        /// When the state after the closing quote does not depend on the content before it:
        /// how much content the string may close after (see [`Close`]).
        close: Option<Close>,
    },
    /// The string is an object key that accepts any content spelled with only the escapes
    /// JSON needs: of the tokens without a quote, exactly those that are
    /// [`key_content`](crate::key_content). Precomputed too.
    KeyContent,
    /// The content is constrained: walk the tokens without a quote with the recognizer in
    /// lexeme-only mode; the result depends only on the key written by [`Recognizer::split`].
    Walk,
}

/// For [`Split::StringContent`], when the state after the closing quote does not depend on the
/// content before it: the string may close after `lo..=hi` code points of content (counted
/// from the current state).
///
/// A kernel then closes the string once, after [`Close::filler`] (`lo` code points of content
/// every level holds), and walks only the distinct bytes that follow the first quote of each
/// token, instead of walking every token containing a quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Close {
    /// Fewest code points of content before the closing quote.
    pub lo: u32,
    /// Most code points of content before the closing quote.
    pub hi: u32,
}

impl Close {
    /// Content of `lo` code points, each the [`FILLER`], which every level holds: pushed before
    /// the closing quote, it stands for any content of `lo` code points of the split's level
    /// (the state after the quote does not depend on which).
    pub fn filler(&self) -> impl Iterator<Item = u8> {
        std::iter::repeat_n(FILLER as u8, self.lo as usize)
    }
}
