//! Lexemes: strings, numbers and literals, byte by byte.
//!
//! Each byte of a lexeme advances the obligations' DFAs of the slot being read; the lexeme's
//! end turns their DFA states into verdicts ([`State::primitive_result`]), which the syntax
//! layer folds into the container. Strings are decoded first ([`super::decode`]).

use super::decode::{Decoded, decode, feed_core, needed_only};
use super::hashing::{FNV0, HASH2_SEED, fnv, hash2_step};
use super::state::{Core, FrameKind, Lex, LexKind, Mode, Obligation, Role, State, Undo};
use crate::dfa::DEAD;
use crate::grammar::{Grammar, NUMBER_BYTES};
use crate::tables::{DfaId, LeafSpec};
use crate::text::decimal::Decimal;

impl State {
    /// Starts lexing a string value or an object key (`kind`).
    pub(super) fn start_string(&mut self, g: &Grammar, kind: LexKind) {
        let core = Core {
            syn: g.dfa(g.utf8).start(),
            ..Core::default()
        };
        let serial = self.next_serial();
        self.set_lex(Lex {
            kind,
            core,
            hash: FNV0,
            hash2: HASH2_SEED,
            text_start: 0,
            serial,
            syntax: 0,
        });
    }

    /// The syntax DFA of the number or literal being lexed.
    pub(super) fn primitive_syntax(&self, g: &Grammar) -> DfaId {
        if self.lex.kind == LexKind::Num {
            self.lex.syntax
        } else {
            g.literal_syntax
        }
    }

    /// Fails the obligations of frame `t` that no canonical spelling continuing the number so
    /// far satisfies, when the number is held to its canonical spelling: on those spellings
    /// each obligation's verdict is exact, so every value still writable fails it, and a
    /// formula that needs it is refused now rather than at a dead end (`-0` under `integer`).
    pub(super) fn fail_unwritable(&mut self, g: &Grammar, t: usize) {
        if self.lex.kind != LexKind::Num
            || self.lex.syntax != g.canonical_syntax
            || g.canonical_syntax == g.number_syntax
        {
            return;
        }
        let f = self.frames[t];
        for i in f.slot_start..f.slot_end {
            let mut o = self.obligations[i as usize];
            if o.failed {
                continue;
            }
            if g.canonical_completes(o.lexer, self.lex.core.syn, o.state) == Some(false) {
                o.failed = true;
                self.set_obligation(i as usize, o);
            }
        }
    }

    /// Whether the number or literal being lexed keeps frame `t` viable. A lexeme whose end is
    /// known (a literal from its first letter, or a number every obligation has finished) is
    /// ended on trial: what only its end decides (`uniqueItems`, `maxContains`) must not
    /// leave a dead end before the delimiter.
    pub(super) fn primitive_viable(&mut self, g: &Grammar, t: usize) -> bool {
        if !self.slot_viable(g, t) {
            return false;
        }
        if self.lex.kind == LexKind::Lit {
            let mark = self.journal.len();
            let syntax = g.dfa(g.literal_syntax);
            let mut ok = true;
            while ok && !syntax.is_final(self.lex.core.syn) {
                ok = syntax
                    .toward_final(self.lex.core.syn)
                    .is_some_and(|b| self.advance_primitive(g, b));
            }
            ok = ok && self.slot_viable(g, t) && self.finish_primitive(g);
            self.rollback(mark);
            return ok;
        }
        let syntax = self.lex.syntax;
        if !g.dfa(syntax).is_final(self.lex.core.syn) {
            return true;
        }
        let f = &self.frames[t];
        let mut members = self.obligations[f.slot_start as usize..f.slot_end as usize]
            .iter()
            .filter(|o| o.role != Role::Contains && !o.failed)
            .peekable();
        let complete = g.dfa(syntax).is_terminal(self.lex.core.syn)
            || (members.peek().is_some() && {
                let canonical = self.canonical_item_end(g, t);
                members.all(|o| {
                    g.dfa(g.lexers[o.lexer as usize].dfa).is_terminal(o.state)
                        || canonical.is_some_and(|c| no_other_value(g, o, c))
                })
            });
        if !complete {
            return true;
        }
        let mark = self.journal.len();
        let ok = self.finish_primitive(g);
        self.rollback(mark);
        ok
    }

    /// For a number item of an array in a grammar that hashes values (`uniqueItems`), in
    /// generation (where constrained numbers are written in plain notation): the canonical
    /// syntax's state after the number so far, when that is a canonical spelling (`1`, `2.5`;
    /// not `1.0` or `-0`). Every plain spelling that continues it then has a canonical spelling
    /// that continues it too, so an obligation that takes no longer canonical spelling takes
    /// no other value ([`no_other_value`]).
    fn canonical_item_end(&self, g: &Grammar, t: usize) -> Option<u32> {
        if !g.needs_hash
            || g.canonical_syntax == g.number_syntax
            || self.frames[t].kind != FrameKind::Array
        {
            return None;
        }
        let canonical = g.dfa(g.canonical_syntax);
        let state = if self.lex.syntax == g.canonical_syntax {
            self.lex.core.syn
        } else {
            canonical.run(canonical.start(), self.lexeme_text())
        };
        (state != DEAD && canonical.is_final(state)).then_some(state)
    }

    /// The syntax a number starting in frame `t`'s slot is spelled in.
    ///
    /// Under a notation policy that writes constrained numbers in plain notation, an
    /// obligation's language holds the canonical spelling of each value it allows but not every
    /// other spelling (`1.0` is an integer that the `integer` language does not hold), so on
    /// such a spelling the obligation fails though the value satisfies it. Where every
    /// obligation must pass that only narrows what is written. Where the frame's formula
    /// decides (`not`, `oneOf`, `if`, even where the slot is free because the frame survives
    /// every failure) or an obligation is counted (`contains` under `maxContains`), a failure
    /// may let the document through instead, so there the number is held to its canonical
    /// spelling, on which every obligation's verdict is exact.
    pub(super) fn number_syntax_for(&self, g: &Grammar, t: usize) -> DfaId {
        if g.canonical_syntax == g.number_syntax {
            return g.number_syntax;
        }
        let f = &self.frames[t];
        let decided = |o: &Obligation| o.role == Role::Contains || f.slot_mode != Mode::All;
        // Failed obligations count too: the syntax is chosen after the number's first byte
        // was fed to them, and that byte may have failed one only because of how it spells
        // the value (`0.115E+2` is 11.5).
        let inexact = self.obligations[f.slot_start as usize..f.slot_end as usize]
            .iter()
            .any(|o| decided(o) && !g.number_exact(o.lexer));
        if inexact {
            g.canonical_syntax
        } else {
            g.number_syntax
        }
    }

    pub(super) fn primitive_byte(&mut self, g: &Grammar, b: u8) -> bool {
        self.advance_primitive(g, b) && self.primitive_viable(g, self.top())
    }

    /// Feeds `b` to the number or literal being lexed and its obligations.
    pub(super) fn advance_primitive(&mut self, g: &Grammar, b: u8) -> bool {
        let syntax = self.primitive_syntax(g);
        let syn = g.dfa(syntax).next(self.lex.core.syn, b);
        if syn == DEAD {
            return false;
        }
        let mut lex = self.lex;
        lex.core.syn = syn;
        self.set_lex(lex);
        if (self.lex.kind == LexKind::Num && g.options.numbers.any_notation) || g.needs_hash {
            self.journal.push(Undo::Text(self.text.len() as u32));
            self.text.push(b);
        }
        let t = self.top();
        let f = self.frames[t];
        for i in f.slot_start..f.slot_end {
            let mut o = self.obligations[i as usize];
            if o.failed {
                continue;
            }
            o.state = g.dfa(g.lexers[o.lexer as usize].dfa).next(o.state, b);
            if o.state == DEAD {
                o.failed = true;
            }
            self.set_obligation(i as usize, o);
        }
        self.fail_unwritable(g, t);
        true
    }

    /// Decodes one byte of a string or key; feeds decoded bytes to the DFAs.
    pub(super) fn string_byte(&mut self, g: &Grammar, b: u8) -> bool {
        let mut lex = self.lex;
        let needed_only = needed_only(g, lex.kind == LexKind::Key);
        let (out, n) = match decode(&mut lex.core, b, needed_only) {
            Decoded::Reject => return false,
            Decoded::End => {
                return if lex.kind == LexKind::Str {
                    self.end_string(g)
                } else {
                    self.end_key(g)
                };
            }
            Decoded::Pending => {
                if !self.escape_viable(g, &lex) {
                    return false;
                }
                self.set_lex(lex);
                return true;
            }
            Decoded::Bytes(out, n) => (out, n),
        };
        if !feed_core(g, &mut lex.core, &out[..n]) {
            return false;
        }
        if lex.kind == LexKind::Key || g.needs_hash {
            for &d in &out[..n] {
                lex.hash = fnv(lex.hash, d);
                lex.hash2 = hash2_step(lex.hash2, d);
            }
        }
        self.set_lex(lex);
        let t = self.top();
        let f = self.frames[t];
        if lex.kind == LexKind::Str {
            for i in f.slot_start..f.slot_end {
                let mut o = self.obligations[i as usize];
                if o.failed {
                    continue;
                }
                let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
                o.state = dfa.run(o.state, &out[..n]);
                if o.state == DEAD {
                    o.failed = true;
                }
                self.set_obligation(i as usize, o);
            }
            self.slot_viable(g, t) && (!g.needs_hash || self.string_end_viable(g, t))
        } else {
            let mut universal = true;
            for li in f.leaf_start..f.leaf_end {
                let mut leaf = self.leaves[li as usize];
                let LeafSpec::Object(s) = leaf.spec else {
                    continue;
                };
                if !leaf.alive || leaf.key_state == DEAD {
                    universal &= !leaf.alive;
                    continue;
                }
                let spec = &g.obj_specs[s as usize];
                let dfa = g.dfa(spec.key_dfa);
                leaf.key_state = dfa.run(leaf.key_state, &out[..n]);
                universal &= self.key_universal(g, &leaf, spec, leaf.key_state);
                self.set_leaf(li as usize, leaf);
            }
            // Keys that stay universal cannot change the frame's viability.
            universal || self.frame_viable(g, t)
        }
    }

    /// Whether an unfinished escape (in `lex`) can still become a code point after which the
    /// string or key is viable. An escape cannot start inside a multi-byte character.
    pub(super) fn escape_viable(&mut self, g: &Grammar, lex: &Lex) -> bool {
        if !g.dfa(g.utf8).is_final(lex.core.syn) {
            return false;
        }
        let t = self.top();
        let f = self.frames[t];
        let mut idx = Vec::new();
        let mut dfas = Vec::new();
        let mut states = Vec::new();
        let mut specs = Vec::new();
        if lex.kind == LexKind::Str {
            for i in f.slot_start..f.slot_end {
                let o = &self.obligations[i as usize];
                if !o.failed {
                    idx.push(i);
                    dfas.push(g.lexers[o.lexer as usize].dfa);
                    states.push(o.state);
                }
            }
        } else {
            for li in f.leaf_start..f.leaf_end {
                let leaf = &self.leaves[li as usize];
                if let LeafSpec::Object(s) = leaf.spec
                    && leaf.alive
                    && leaf.key_state != DEAD
                {
                    idx.push(li);
                    specs.push(s);
                    dfas.push(g.obj_specs[s as usize].key_dfa);
                    states.push(leaf.key_state);
                }
            }
        }
        let needed_only = needed_only(g, lex.kind == LexKind::Key);
        let mut after = *lex;
        after.core.esc = 0;
        after.core.count += 1;
        // Whether the string or key is viable once the escape gave `tuple`.
        let judge = |st: &mut Self, tuple: &[u32]| {
            let mark = st.journal.len();
            st.set_lex(after);
            let ok = if lex.kind == LexKind::Str {
                for (j, &i) in idx.iter().enumerate() {
                    let mut o = st.obligations[i as usize];
                    o.state = tuple[j];
                    o.failed = tuple[j] == DEAD;
                    st.set_obligation(i as usize, o);
                }
                st.slot_viable(g, t)
            } else {
                let mut universal = true;
                for (j, &li) in idx.iter().enumerate() {
                    let mut leaf = st.leaves[li as usize];
                    leaf.key_state = tuple[j];
                    universal &=
                        st.key_universal(g, &leaf, &g.obj_specs[specs[j] as usize], tuple[j]);
                    st.set_leaf(li as usize, leaf);
                }
                universal || st.frame_viable(g, t)
            };
            st.rollback(mark);
            ok
        };
        self.any_escape_outcome(g, &lex.core, needed_only, &dfas, &states, judge)
    }

    /// With value hashing (`uniqueItems`): a string whose content can no longer grow (every
    /// live obligation's DFA has no transition left, as an `enum` or `const` string at its
    /// last character) is ended on trial, so that a repeated item is refused at its last
    /// content byte rather than leaving a dead end before the closing quote.
    pub(super) fn string_end_viable(&mut self, g: &Grammar, t: usize) -> bool {
        let f = &self.frames[t];
        let mut members = self.obligations[f.slot_start as usize..f.slot_end as usize]
            .iter()
            .filter(|o| o.role != Role::Contains && !o.failed)
            .peekable();
        let complete = members.peek().is_some()
            && members.all(|o| g.dfa(g.lexers[o.lexer as usize].dfa).is_terminal(o.state));
        if !complete {
            return true;
        }
        let mark = self.journal.len();
        let ok = self.end_string(g);
        self.rollback(mark);
        ok
    }

    pub(super) fn end_string(&mut self, g: &Grammar) -> bool {
        if !g.dfa(g.utf8).is_final(self.lex.core.syn) {
            return false;
        }
        self.finish_primitive(g)
    }

    /// Ends a number or literal before a byte that cannot continue it.
    pub(super) fn end_primitive(&mut self, g: &Grammar) -> bool {
        let syntax = self.primitive_syntax(g);
        if !g.dfa(syntax).is_final(self.lex.core.syn) {
            return false;
        }
        self.finish_primitive(g)
    }

    pub(super) fn primitive_result(&self, g: &Grammar, o: &Obligation) -> bool {
        if o.failed {
            return false;
        }
        let lexer = &g.lexers[o.lexer as usize];
        if !g.dfa(lexer.dfa).is_final(o.state) {
            return false;
        }
        match self.lex.kind {
            LexKind::Str => {
                let c = self.lex.core.count as u64;
                c >= lexer.min_len && lexer.max_len.is_none_or(|m| c <= m)
            }
            LexKind::Num => match &lexer.check {
                None => true,
                Some(check) => {
                    let text = std::str::from_utf8(self.lexeme_text()).unwrap_or("");
                    Decimal::from_json_text(text).is_ok_and(|d| check.eval(&d))
                }
            },
            _ => true,
        }
    }

    /// The text of the number or literal being lexed (when it is kept).
    pub(super) fn lexeme_text(&self) -> &[u8] {
        &self.text[(self.lex.text_start as usize).min(self.text.len())..]
    }

    pub(super) fn finish_primitive(&mut self, g: &Grammar) -> bool {
        let t = self.top();
        let f = self.frames[t];
        for i in f.slot_start..f.slot_end {
            let mut o = self.obligations[i as usize];
            o.result = self.primitive_result(g, &o);
            self.set_obligation(i as usize, o);
        }
        let hash = if g.needs_hash {
            self.primitive_hash()
        } else {
            (0, 0)
        };
        self.set_lex(Lex::default());
        self.complete_value(g, t, hash)
    }
}

/// Whether obligation `o` of a number takes no longer canonical spelling than the one so far,
/// whose canonical syntax state is `canonical`: each language holds the canonical spelling of
/// every value it allows, so then every number `o` still takes has the value so far (`1`
/// under `"enum": [1, 2]`, whose language also holds `1.0`). `false` for a language
/// without a canonical table (every number, or none).
fn no_other_value(g: &Grammar, o: &Obligation, canonical: u32) -> bool {
    if g.canonical_live[o.lexer as usize].is_none() {
        return false;
    }
    let syntax = g.dfa(g.canonical_syntax);
    let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
    NUMBER_BYTES.iter().all(|&b| {
        let (c, s) = (syntax.next(canonical, b), dfa.next(o.state, b));
        c == DEAD || s == DEAD || g.canonical_completes(o.lexer, c, s) == Some(false)
    })
}
