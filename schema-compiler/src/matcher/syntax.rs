//! JSON structure: whitespace, `:` and `,`, the start of values and the opening and closing
//! of objects and arrays.
//!
//! This is the deterministic parser around the lexemes: it moves each frame through its
//! [`Phase`]s, makes the obligations of a member or item when it starts, and folds a finished
//! value's verdicts into the leaves of the container that holds it.

use super::hashing::{Hash2, TAG_ARR, TAG_OBJ, fin};
use super::state::{
    Core, Frame, FrameKind, Leaf, Lex, LexKind, Mode, NONE, Phase, Role, State, Undo,
    new_obligation,
};
use crate::dfa::DEAD;
use crate::grammar::Grammar;
use crate::options::Whitespace;
use crate::tables::{EMPTY_LEXER, Kind, LeafSpec};

/// Under [`Whitespace::Pretty`]: the indentation, in spaces, after the line break of the gap
/// frame `f` is in (`None`: the gap has no line break). After `{`, `[` and `,` the break leads
/// to the next member or item, one level in; after a member or item it leads to the closing
/// bracket, at the level of the brackets.
pub(super) fn pretty_indent(f: &Frame) -> Option<u32> {
    let level = match f.phase {
        Phase::ObjOpen | Phase::ObjKeyNext | Phase::ArrOpen | Phase::ArrValue => f.depth,
        Phase::ObjNext | Phase::ArrNext => f.depth.saturating_sub(1),
        _ => return None,
    };
    Some(level.saturating_mul(2))
}

/// Under [`Whitespace::Pretty`]: whether the whitespace of the gap frame `f` is in is exactly
/// the whitespace that goes before the structural byte `b`: a line break and the indentation
/// before a member, an item or a closing bracket after one; one space after `:`; nothing
/// elsewhere (an empty container, before `:` and `,`, around the document).
pub(super) fn pretty_gap_done(f: &Frame, b: u8) -> bool {
    let breaks = match f.phase {
        Phase::ObjOpen => b != b'}',
        Phase::ArrOpen => b != b']',
        Phase::ObjKeyNext | Phase::ArrValue => true,
        Phase::ObjNext => b == b'}',
        Phase::ArrNext => b == b']',
        _ => false,
    };
    if breaks {
        f.newlines == 1 && pretty_indent(f) == Some(f.spaces as u32)
    } else {
        f.newlines == 0 && f.spaces == (f.phase == Phase::ObjValue) as u16
    }
}

/// The bytes of `set` as a 256-bit set.
const fn byte_set(set: &[u8]) -> [u64; 4] {
    let mut out = [0u64; 4];
    let mut i = 0;
    while i < set.len() {
        out[(set[i] / 64) as usize] |= 1 << (set[i] % 64);
        i += 1;
    }
    out
}

const fn union(a: [u64; 4], b: [u64; 4]) -> [u64; 4] {
    [a[0] | b[0], a[1] | b[1], a[2] | b[2], a[3] | b[3]]
}

/// Whether `b` is in `set`.
const fn has(set: &[u64; 4], b: u8) -> bool {
    set[(b / 64) as usize] >> (b % 64) & 1 == 1
}

/// The bytes [`Kind::of_first_byte`] starts a value with.
const fn first_bytes() -> [u64; 4] {
    let mut out = [0u64; 4];
    let mut b = 0;
    while b < 256 {
        if Kind::of_first_byte(b as u8).is_some() {
            out[b / 64] |= 1 << (b % 64);
        }
        b += 1;
    }
    out
}

/// The bytes [`State::step`] and [`State::structural`] read as the sets below: white space,
/// what continues a number or a literal, and what may follow one.
const SPACE: [u64; 4] = byte_set(b" \t\n\r");
const NUMBER: [u64; 4] = byte_set(b"0123456789.eE+-");
const LITERAL: [u64; 4] = byte_set(b"abcdefghijklmnopqrstuvwxyz");
const AFTER_PRIMITIVE: [u64; 4] = union(SPACE, byte_set(b",}]"));
const VALUE_START: [u64; 4] = union(SPACE, first_bytes());
const IN_NUMBER: [u64; 4] = union(AFTER_PRIMITIVE, NUMBER);
const IN_LITERAL: [u64; 4] = union(AFTER_PRIMITIVE, LITERAL);

impl State {
    /// See [`super::Matcher::next_bytes_hint`]: the bytes [`State::step`] can take, by the lexeme
    /// and the phase it dispatches on.
    pub(super) fn next_bytes_hint(&self) -> Option<[u64; 4]> {
        if self.walk.on {
            return None;
        }
        match self.lex.kind {
            LexKind::Str | LexKind::Key => return None,
            LexKind::Num => return Some(IN_NUMBER),
            LexKind::Lit => return Some(IN_LITERAL),
            LexKind::None => {}
        }
        let extra: &[u8] = match self.frames[self.top()].phase {
            Phase::DocStart | Phase::ObjValue | Phase::ArrValue => return Some(VALUE_START),
            Phase::ArrOpen => return Some(union(VALUE_START, byte_set(b"]"))),
            Phase::ObjOpen => b"\"}",
            Phase::ObjKeyNext => b"\"",
            Phase::ObjColon => b":",
            Phase::ObjNext => b",}",
            Phase::ArrNext => b",]",
            Phase::DocEnd => b"",
            Phase::DocValue | Phase::ObjKey | Phase::ObjInValue | Phase::ArrInValue => return None,
        };
        Some(union(SPACE, byte_set(extra)))
    }

    pub(super) fn step(&mut self, g: &Grammar, b: u8) -> bool {
        // After a number or literal only these can follow (ending it is costly: a number's
        // bounds are checked on its text), so every other byte is refused at once.
        match self.lex.kind {
            LexKind::Str | LexKind::Key => return self.string_byte(g, b),
            LexKind::Num => {
                if has(&NUMBER, b) {
                    return self.primitive_byte(g, b);
                }
                if !has(&AFTER_PRIMITIVE, b) || !self.end_primitive(g) {
                    return false;
                }
            }
            LexKind::Lit => {
                if has(&LITERAL, b) {
                    return self.primitive_byte(g, b);
                }
                if !has(&AFTER_PRIMITIVE, b) || !self.end_primitive(g) {
                    return false;
                }
            }
            LexKind::None => {}
        }
        self.structural(g, b)
    }

    pub(super) fn whitespace(&mut self, g: &Grammar, b: u8) -> bool {
        let t = self.top();
        let mut f = self.frames[t];
        match g.options.whitespace {
            Whitespace::Compact => return false,
            Whitespace::Flexible {
                max_newlines,
                max_spaces,
            } => {
                if b == b'\n' {
                    if f.newlines >= max_newlines {
                        return false;
                    }
                    f.newlines += 1;
                    f.spaces = 0;
                } else {
                    if f.spaces >= max_spaces {
                        return false;
                    }
                    f.spaces += 1;
                }
            }
            Whitespace::Pretty => {
                if b == b'\n' {
                    if f.newlines != 0 || f.spaces != 0 {
                        return false;
                    }
                    let Some(indent) = pretty_indent(&f) else {
                        return false;
                    };
                    f.newlines = 1;
                    self.set_frame(t, f);
                    return self.pretty_line_viable(g, t, indent);
                } else if b == b' ' {
                    let room = if f.newlines != 0 {
                        pretty_indent(&f).unwrap_or(0)
                    } else {
                        (f.phase == Phase::ObjValue) as u32
                    };
                    // (Deeper than `u16::MAX / 2` levels no gap completes.)
                    if f.spaces as u32 >= room || f.spaces == u16::MAX {
                        return false;
                    }
                    f.spaces += 1;
                } else {
                    return false;
                }
            }
            Whitespace::Unbounded => return true,
        }
        self.set_frame(t, f);
        true
    }

    /// Under [`Whitespace::Pretty`], after a line break that decides what comes next (after a
    /// member or item: the closing bracket; after `{` or `[`: a first member or item): whether
    /// that can come after the indentation. Tried on the journal and undone, so a line break
    /// never leads to a dead end the byte in its place would not.
    pub(super) fn pretty_line_viable(&mut self, g: &Grammar, t: usize, indent: u32) -> bool {
        let next: &[u8] = match self.frames[t].phase {
            Phase::ObjNext => b"}",
            Phase::ArrNext => b"]",
            Phase::ObjOpen => b"\"",
            Phase::ArrOpen => b"\"{[-0123456789tfn",
            _ => return true,
        };
        let Ok(spaces) = u16::try_from(indent) else {
            return false;
        };
        let mark = self.journal.len();
        let mut f = self.frames[t];
        f.spaces = spaces;
        self.set_frame(t, f);
        let ok = next.iter().any(|&b| {
            let at = self.journal.len();
            let ok = self.structural(g, b);
            self.rollback(at);
            ok
        });
        self.rollback(mark);
        ok
    }

    pub(super) fn structural(&mut self, g: &Grammar, b: u8) -> bool {
        if has(&SPACE, b) {
            return self.whitespace(g, b);
        }
        let t = self.top();
        let mut f = self.frames[t];
        if g.options.whitespace == Whitespace::Pretty && !pretty_gap_done(&f, b) {
            return false;
        }
        if f.newlines != 0 || f.spaces != 0 {
            f.newlines = 0;
            f.spaces = 0;
            self.set_frame(t, f);
        }
        match (f.phase, b) {
            (Phase::DocStart | Phase::ObjValue | Phase::ArrOpen | Phase::ArrValue, _)
                if !(f.phase == Phase::ArrOpen && b == b']') =>
            {
                self.value_start(g, b)
            }
            (Phase::ObjOpen | Phase::ObjKeyNext, b'"') => self.key_start(g),
            (Phase::ObjColon, b':') => {
                f.phase = Phase::ObjValue;
                self.set_frame(t, f);
                true
            }
            (Phase::ObjNext, b',') => {
                f.phase = Phase::ObjKeyNext;
                self.set_frame(t, f);
                self.frame_viable(g, t)
            }
            (Phase::ArrNext, b',') => {
                f.phase = Phase::ArrValue;
                self.set_frame(t, f);
                self.frame_viable(g, t)
            }
            (Phase::ObjOpen | Phase::ObjNext, b'}') | (Phase::ArrOpen | Phase::ArrNext, b']') => {
                self.close_container(g)
            }
            _ => false,
        }
    }

    pub(super) fn value_start(&mut self, g: &Grammar, b: u8) -> bool {
        let Some(kind) = Kind::of_first_byte(b) else {
            return false;
        };
        let t = self.top();
        if self.frames[t].kind == FrameKind::Array {
            self.item_slot(g, t);
        }
        let mut f = self.frames[t];
        f.phase = match f.kind {
            FrameKind::Document => Phase::DocValue,
            FrameKind::Object => Phase::ObjInValue,
            FrameKind::Array => Phase::ArrInValue,
        };
        self.set_frame(t, f);
        // The first item is counted here (later ones were at their `,`).
        if f.kind == FrameKind::Array && !self.frame_viable(g, t) {
            return false;
        }
        for i in f.slot_start..f.slot_end {
            let mut o = self.obligations[i as usize];
            let tmpl = g.template(o.node);
            match kind {
                Kind::Object | Kind::Array => {
                    let p = if kind == Kind::Object {
                        tmpl.object
                    } else {
                        tmpl.array
                    };
                    o.prog = p.unwrap_or(NONE);
                    o.failed = p.is_none();
                }
                _ => {
                    o.lexer = tmpl.lexers[kind as usize];
                    o.failed = o.lexer == EMPTY_LEXER;
                    let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
                    o.state = if kind == Kind::String {
                        dfa.start()
                    } else {
                        dfa.next(dfa.start(), b)
                    };
                    if o.state == DEAD {
                        o.failed = true;
                    }
                }
            }
            self.set_obligation(i as usize, o);
        }
        match kind {
            Kind::Object | Kind::Array => self.push_container(g, kind),
            Kind::String => {
                self.start_string(g, LexKind::Str);
                self.slot_viable(g, t)
            }
            _ => {
                let (lk, syntax) = if kind == Kind::Number {
                    (LexKind::Num, self.number_syntax_for(g, t))
                } else {
                    (LexKind::Lit, g.literal_syntax)
                };
                let d = g.dfa(syntax);
                let syn = d.next(d.start(), b);
                if syn == DEAD {
                    return false;
                }
                self.set_lex(Lex {
                    kind: lk,
                    core: Core {
                        syn,
                        ..Core::default()
                    },
                    hash: 0,
                    hash2: 0,
                    // Earlier texts stay until `forget_history`, so pops can restore them.
                    text_start: self.text.len() as u32,
                    serial: 0,
                    syntax,
                });
                if (lk == LexKind::Num && g.options.numbers.any_notation) || g.needs_hash {
                    self.journal.push(Undo::Text(self.text.len() as u32));
                    self.text.push(b);
                }
                self.fail_unwritable(g, t);
                self.primitive_viable(g, t)
            }
        }
    }

    /// Obligations for the next item of an array frame.
    pub(super) fn item_slot(&mut self, g: &Grammar, t: usize) {
        let f = self.frames[t];
        let start = self.obligations.len() as u32;
        self.journal.push(Undo::Obligations(start));
        for li in f.leaf_start..f.leaf_end {
            let leaf = self.leaves[li as usize];
            let LeafSpec::Array(s) = leaf.spec else {
                continue;
            };
            if !leaf.alive {
                continue;
            }
            let spec = &g.arr_specs[s as usize];
            let node = spec.prefix.get(leaf.count as usize).copied().or(spec.items);
            if let Some(node) = node {
                self.obligations
                    .push(new_obligation(node, li, Role::Item, leaf.positive));
            }
            if let Some(c) = spec.contains {
                // Counted: `maxContains` turns a passing item against the array.
                self.obligations
                    .push(new_obligation(c, li, Role::Contains, false));
            }
        }
        let mut f = self.frames[t];
        f.slot_start = start;
        f.slot_end = self.obligations.len() as u32;
        self.set_frame(t, f);
        let mode = self.slot_mode(g, t);
        let mut f = self.frames[t];
        f.slot_mode = mode;
        self.set_frame(t, f);
    }

    pub(super) fn push_container(&mut self, g: &Grammar, kind: Kind) -> bool {
        let t = self.top();
        let parent = self.frames[t];
        let leaf_start = self.leaves.len() as u32;
        self.journal.push(Undo::Leaves(leaf_start));
        // Members are held to an order only where one obligation's formula speaks about
        // them: several would each bring their own listing, and must hold together.
        let constraining = (parent.slot_start..parent.slot_end)
            .filter(|&i| {
                let o = &self.obligations[i as usize];
                !o.failed && !g.programs[o.prog as usize].leaves.is_empty()
            })
            .count();
        for i in parent.slot_start..parent.slot_end {
            let mut o = self.obligations[i as usize];
            o.leaf_base = self.leaves.len() as u32;
            if !o.failed {
                let prog = &g.programs[o.prog as usize];
                for (k, &spec) in prog.leaves.iter().enumerate() {
                    let positive = o.positive && prog.positive[k];
                    let ordered = prog.ordered
                        && constraining == 1
                        && positive
                        && matches!(spec, LeafSpec::Object(_));
                    let ext = match spec {
                        LeafSpec::Object(s) if g.obj_specs[s as usize].lits.len() > 64 => {
                            let words = g.obj_specs[s as usize].lits.len().div_ceil(64) - 1;
                            let at = self.bits.len() as u32;
                            self.journal.push(Undo::Bits(at));
                            self.bits.extend(std::iter::repeat_n(0, words));
                            at
                        }
                        _ => NONE,
                    };
                    self.leaves.push(Leaf {
                        spec,
                        alive: true,
                        positive,
                        next: if ordered { 0 } else { NONE },
                        count: 0,
                        contains: 0,
                        seen: 0,
                        ext,
                        key_state: DEAD,
                    });
                }
            }
            self.set_obligation(i as usize, o);
        }
        let frame = Frame {
            kind: if kind == Kind::Object {
                FrameKind::Object
            } else {
                FrameKind::Array
            },
            phase: if kind == Kind::Object {
                Phase::ObjOpen
            } else {
                Phase::ArrOpen
            },
            mode: parent.slot_mode,
            slot_mode: Mode::Free,
            obligations_start: parent.slot_start,
            obligations_end: parent.slot_end,
            leaf_start,
            leaf_end: self.leaves.len() as u32,
            keys_start: self.keys.len() as u32,
            items_start: self.items.len() as u32,
            depth: parent.depth + 1,
            ..Frame::default()
        };
        if frame.depth > g.options.limits.max_depth {
            return false;
        }
        self.journal.push(Undo::Frames(self.frames.len() as u32));
        self.frames.push(frame);
        self.frame_viable(g, self.top())
    }

    /// The member or item of frame `t` is complete; its obligations hold their results and
    /// `hash` is its value hash (when the grammar hashes values).
    pub(super) fn complete_value(&mut self, g: &Grammar, t: usize, hash: Hash2) -> bool {
        let mut f = self.frames[t];
        for i in f.slot_start..f.slot_end {
            let o = self.obligations[i as usize];
            match o.role {
                Role::Root => f.root_ok = o.result,
                Role::Member | Role::Item => {
                    if !o.result {
                        let mut leaf = self.leaves[o.sink as usize];
                        if leaf.alive {
                            leaf.alive = false;
                            self.set_leaf(o.sink as usize, leaf);
                        }
                    }
                }
                Role::Contains => {
                    if o.result {
                        let mut leaf = self.leaves[o.sink as usize];
                        leaf.contains = leaf.contains.saturating_add(1);
                        self.set_leaf(o.sink as usize, leaf);
                    }
                }
            }
        }
        if g.needs_hash {
            self.fold_value_hash(g, &mut f, hash);
        }
        if f.kind == FrameKind::Array {
            for li in f.leaf_start..f.leaf_end {
                let mut leaf = self.leaves[li as usize];
                if matches!(leaf.spec, LeafSpec::Array(_)) {
                    leaf.count = leaf.count.saturating_add(1);
                    self.set_leaf(li as usize, leaf);
                }
            }
        }
        f.slot_start = 0;
        f.slot_end = 0;
        f.phase = match f.kind {
            FrameKind::Document => Phase::DocEnd,
            FrameKind::Object => Phase::ObjNext,
            FrameKind::Array => Phase::ArrNext,
        };
        self.set_frame(t, f);
        if f.kind == FrameKind::Document {
            return f.root_ok;
        }
        self.frame_viable(g, t)
    }

    pub(super) fn close_container(&mut self, g: &Grammar) -> bool {
        let t = self.top();
        let f = self.frames[t];
        for i in f.obligations_start..f.obligations_end {
            let mut o = self.obligations[i as usize];
            o.result = !o.failed && self.eval_final(g, &o);
            self.set_obligation(i as usize, o);
        }
        let hash = match f.kind {
            FrameKind::Array => fin(TAG_ARR, f.value_hash.0, f.value_hash.1),
            _ => fin(TAG_OBJ, f.value_hash.0, f.value_hash.1),
        };
        self.journal.push(Undo::PoppedFrame(f));
        self.frames.pop();
        self.complete_value(g, self.top(), hash)
    }
}
