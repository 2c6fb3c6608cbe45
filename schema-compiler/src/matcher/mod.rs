//! The runtime: a byte-at-a-time recognizer with a stack of frames and an undo journal.
//!
//! A [`Matcher`] parses JSON syntax deterministically and, in step, validates the value being
//! parsed against every schema that applies to it. Each open container is a *frame*; a frame
//! holds the value's *obligations* (schemas it must satisfy, each a [`Program`] over *leaves*)
//! and the leaves' small states (properties seen, item counts). Primitive values are lexed by
//! DFAs, one per obligation.
//!
//! Every mutation is recorded in a journal, so [`Matcher::pop_bytes`] undoes bytes exactly; that
//! is what a token-mask walk over a vocabulary trie needs (push a byte, look, pop).
//!
//! A byte is accepted only if the document can still be valid after it (its *viability*): the
//! current value must still be able to satisfy its obligations, as combined by the container
//! formulas above it. Viability is exact for conjunctions and for `anyOf`/`oneOf` alternatives
//! decided by a property or a type; inside `not` and `oneOf` it errs on the side of accepting, so
//! there a prefix may turn out to have no valid completion. The final verdict, when a value ends,
//! is always exact.
//!
//! Inside a string or key, [`Matcher::set_lexeme_only`] switches to a lighter walker that keeps
//! a small stack of lexer states instead of journaling, for walks that stay within the lexeme.
//!
//! [`Program`]: crate::tables::Program

mod completion;
mod decode;
mod hashing;
mod keys;
mod lexeme_walk;
mod lexemes;
mod split;
mod state;
mod syntax;
#[cfg(test)]
mod tests;
mod viability;

use std::sync::Arc;

use crate::grammar::Grammar;
use lexeme_walk::LexemeWalk;
pub(crate) use lexeme_walk::WalkStore;
use state::{Frame, Lex, LexKind, Mode, NONE, Phase, Role, State, new_obligation};

/// A recognizer for one document, over a shared [`Grammar`].
///
/// ```
/// use schema_compiler::{Grammar, Matcher, Options};
/// use std::sync::Arc;
///
/// let schema = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
/// let g = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
/// let mut m = Matcher::new(g);
/// assert!(m.push_bytes(br#"{"n":4"#).is_ok());
/// assert!(!m.try_push_byte(b'.'), "integers have no fraction in generation mode");
/// assert!(m.try_push_byte(b'}'));
/// assert!(m.is_accepting());
/// m.pop_bytes(1);
/// assert!(!m.is_accepting());
/// ```
#[derive(Debug, Clone)]
pub struct Matcher {
    g: Arc<Grammar>,
    state: State,
}

/// What the lexeme walker learnt stays with the grammar, for its other matchers.
impl Drop for Matcher {
    fn drop(&mut self) {
        self.state.walk.leave(&self.g.walks);
    }
}

impl Matcher {
    /// A matcher at the start of a document.
    pub fn new(g: Arc<Grammar>) -> Matcher {
        let mut m = Matcher {
            g,
            state: State::default(),
        };
        m.reset();
        m
    }

    /// Back to the start of a document.
    pub fn reset(&mut self) {
        let st = &mut self.state;
        st.frames.clear();
        st.leaves.clear();
        st.obligations.clear();
        st.bits.clear();
        st.keys.clear();
        st.text.clear();
        st.items.clear();
        st.journal.clear();
        st.marks.clear();
        st.walk.leave(&self.g.walks);
        st.walk = LexemeWalk::default();
        st.lex = Lex::default();
        st.obligations
            .push(new_obligation(self.g.root, NONE, Role::Root, true));
        st.frames.push(Frame {
            mode: Mode::All,
            slot_mode: Mode::All,
            slot_end: 1,
            ..Frame::default()
        });
    }

    /// The grammar.
    pub fn grammar(&self) -> &Arc<Grammar> {
        &self.g
    }

    /// Bytes accepted so far (that can be popped).
    pub fn len(&self) -> usize {
        self.state.marks.len()
    }

    /// Whether no byte was accepted yet.
    pub fn is_empty(&self) -> bool {
        self.state.marks.is_empty()
    }

    /// Feeds one byte; returns false (leaving the state unchanged) when the document could not
    /// be valid after it.
    #[inline]
    pub fn try_push_byte(&mut self, b: u8) -> bool {
        let st = &mut self.state;
        if st.walk.on {
            return st.walk_push(&self.g, b);
        }
        let mark = st.journal.len() as u32;
        if st.step(&self.g, b) {
            st.marks.push(mark);
            true
        } else {
            st.rollback(mark as usize);
            false
        }
    }

    /// Whether a byte that starts a JSON value is taken here: at the start, whether any
    /// document can begin.
    pub(crate) fn takes_a_value_byte(&mut self) -> bool {
        b"{[\"-0123456789tfn".iter().any(|&b| {
            let taken = self.try_push_byte(b);
            if taken {
                self.pop_bytes(1);
            }
            taken
        })
    }

    /// Feeds bytes until one is rejected; `Err(i)` is the index of the rejected byte (the bytes
    /// before it stay accepted).
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<(), usize> {
        for (i, &b) in bytes.iter().enumerate() {
            if !self.try_push_byte(b) {
                return Err(i);
            }
        }
        Ok(())
    }

    /// Undoes the last `n` accepted bytes (at most [`Matcher::len`]).
    #[inline]
    pub fn pop_bytes(&mut self, n: usize) {
        let st = &mut self.state;
        if n == 0 {
            return;
        }
        if st.walk.on {
            let path = &mut st.walk.path;
            path.truncate(path.len() - n.min(path.len() - 1));
            return;
        }
        let n = n.min(st.marks.len());
        let at = st.marks.len() - n;
        let mark = st.marks[at] as usize;
        st.marks.truncate(at);
        st.rollback(mark);
    }

    /// Forgets the undo history (the accepted bytes can no longer be popped). Keeps memory flat
    /// over long documents.
    pub fn forget_history(&mut self) {
        let st = &mut self.state;
        st.journal.clear();
        st.marks.clear();
        if matches!(st.lex.kind, LexKind::Num | LexKind::Lit) {
            st.text.drain(..st.lex.text_start as usize);
        } else {
            st.text.clear();
        }
        st.lex.text_start = 0;
    }

    /// Whether the bytes so far are a complete valid document.
    pub fn is_accepting(&self) -> bool {
        let st = &self.state;
        let g = &*self.g;
        if st.walk.on || st.frames.len() != 1 {
            return false;
        }
        let doc = &st.frames[0];
        match doc.phase {
            Phase::DocEnd => doc.root_ok,
            Phase::DocValue => {
                if !matches!(st.lex.kind, LexKind::Num | LexKind::Lit) {
                    return false;
                }
                let syntax = st.primitive_syntax(g);
                if !g.dfa(syntax).is_final(st.lex.core.syn) {
                    return false;
                }
                st.primitive_result(g, &st.obligations[doc.slot_start as usize])
            }
            _ => false,
        }
    }

    /// Whether the parser is inside a string value or key.
    pub fn in_string(&self) -> bool {
        matches!(self.state.lex.kind, LexKind::Str | LexKind::Key)
    }

    /// Whether the parser is inside an object key.
    pub fn in_key(&self) -> bool {
        self.state.lex.kind == LexKind::Key
    }

    /// Refuse (or stop refusing) the bytes that would end the current string or key.
    ///
    /// While on, only bytes inside the current string or key are accepted, and pushes and pops
    /// use a light stack of lexer states (they must be balanced before switching off).
    pub fn set_lexeme_only(&mut self, on: bool) {
        self.state.set_lexeme_only(&self.g, on);
    }

    /// A superset of the bytes [`Matcher::try_push_byte`] may accept next (see
    /// [`recognizer::Recognizer::next_bytes_hint`]), from the syntax alone: between tokens of
    /// JSON, the bytes the phase of the innermost container takes and white space; in a
    /// number or a literal, the bytes that continue or end it. `None` inside a string or key,
    /// in lexeme-only mode, and after a container closed inside a value.
    pub fn next_bytes_hint(&self) -> Option<[u64; 4]> {
        self.state.next_bytes_hint()
    }

    /// In lexeme-only mode inside a key, at a character boundary outside an escape: the class
    /// of what ending the key here leads to (see [`recognizer::Recognizer::close_class`]), by
    /// the match set each tracked leaf's key DFA is in. Ending the key resolves each object
    /// leaf's key by that set alone (a literal, a set of patterns, or none), so the states after
    /// the quote differ only in the key's hash, which a later key of the object is compared
    /// with. Classes are numbered per walker node, from 0, as they are met. `None` outside a
    /// key, with value hashing, or when a repeated key could only be told by its hash (see
    /// `LexemeWalk::close_by_states`).
    pub fn close_class(&mut self) -> Option<u32> {
        let st = &mut self.state;
        let g = &*self.g;
        let walk = &mut st.walk;
        if !walk.on || walk.is_str || !walk.close_by_states {
            return None;
        }
        let node = *walk.path.last()? as usize;
        if walk.node_class[node] != lexeme_walk::UNSEEN {
            return Some(walk.node_class[node]);
        }
        let core = walk.node_core[node];
        if core.esc != 0 || !g.dfa(g.utf8).is_final(core.syn) {
            return None;
        }
        let k = walk.idx.len();
        walk.words.clear();
        for j in 0..k {
            let s = walk.node_states[node * k + j];
            let set = if s == crate::dfa::DEAD {
                None
            } else {
                g.dfa(walk.dfas[j]).final_set_id(s)
            };
            walk.words.push(set.unwrap_or(u32::MAX));
        }
        let next = walk.classes.len() as u32;
        let class = *walk.classes.entry(walk.words[..].into()).or_insert(next);
        walk.node_class[node] = class;
        Some(class)
    }

    /// In lexeme-only mode inside a key, at the walker's base (see
    /// [`recognizer::Recognizer::close_classes_name`]): writes the DFAs of the tracked leaves
    /// and the base node's decoder and DFA states into `name`. What a byte does from a node,
    /// and a node's class, follow from these alone (and the grammar); whether a node keeps the
    /// key viable follows from them and the frame, which the split key holds (under a key
    /// that takes any content, every node does). `false` (nothing written) where
    /// [`Matcher::close_class`] gives no classes.
    pub fn close_classes_name(&self, name: &mut Vec<u32>) -> bool {
        let walk = &self.state.walk;
        if !walk.on || walk.is_str || !walk.close_by_states || walk.path.len() != 1 {
            return false;
        }
        let node = walk.path[0] as usize;
        let k = walk.idx.len();
        name.push(k as u32);
        name.extend_from_slice(&walk.dfas);
        lexeme_walk::node_words(
            name,
            &walk.node_core[node],
            &walk.node_states[node * k..(node + 1) * k],
        );
        true
    }

    /// In lexeme-only mode inside a key, at the walker's base (see
    /// [`recognizer::Recognizer::close_frame`]): the walker's number, the key's (`Lex::serial`)
    /// and how many times the walker's classes were renumbered. The frame does not change
    /// while a key is read, and a class number stands for the same match sets until the
    /// classes are emptied or replaced, so what ending the key in a class leads to stays the
    /// same while the number does. `None` where [`Matcher::close_class`] gives no classes.
    pub fn close_frame(&mut self) -> Option<u128> {
        let st = &mut self.state;
        let walk = &mut st.walk;
        if !walk.on || walk.is_str || !walk.close_by_states || walk.path.len() != 1 {
            return None;
        }
        let id = walk.id();
        Some(u128::from(id) << 64 | u128::from(st.lex.serial) << 32 | u128::from(walk.class_era))
    }

    /// A short description of the state, for error messages.
    pub fn describe(&self) -> String {
        let st = &self.state;
        let f = &st.frames[st.top()];
        format!(
            "{:?} at depth {} after {} bytes{}",
            f.phase,
            f.depth,
            st.marks.len(),
            if self.in_string() {
                " (inside a string)"
            } else {
                ""
            }
        )
    }
}
