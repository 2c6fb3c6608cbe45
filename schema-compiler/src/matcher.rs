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
//! [`Program`]: crate::compile::Program

use std::sync::Arc;

use crate::compile::{EMPTY_LEXER, Kind, LeafSpec, LexerId, Op};
use crate::dfa::DEAD;
use crate::grammar::Grammar;
use crate::ir::NodeId;
use crate::options::Whitespace;
use crate::text::decimal::Decimal;

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum FrameKind {
    Document,
    Object,
    Array,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Phase {
    DocStart,
    DocValue,
    DocEnd,
    /// After `{`.
    ObjOpen,
    /// Inside a key string.
    ObjKey,
    /// After a key, before `:`.
    ObjColon,
    /// After `:`, before the value.
    ObjValue,
    /// A member value is being parsed.
    ObjInValue,
    /// After a member value, before `,` or `}`.
    ObjNext,
    /// After `,`, before the next key.
    ObjKeyNext,
    /// After `[`.
    ArrOpen,
    /// After `,`, before the next item.
    ArrValue,
    /// An item is being parsed.
    ArrInValue,
    /// After an item, before `,` or `]`.
    ArrNext,
}

/// How a value's obligations decide whether it is still viable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Mode {
    /// Nothing above depends on this value: any syntactically valid value will do.
    Free,
    /// Every obligation must be satisfiable.
    All,
    /// At least one obligation must be satisfiable (an over-approximation).
    Any,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Role {
    Root,
    Member,
    Item,
    Contains,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Frame {
    kind: FrameKind,
    phase: Phase,
    newlines: u8,
    spaces: u16,
    mode: Mode,
    slot_mode: Mode,
    /// This value's obligations: `obls[obl_start..obl_end]`.
    obl_start: u32,
    obl_end: u32,
    leaf_start: u32,
    leaf_end: u32,
    /// Obligations of the member or item being parsed.
    slot_start: u32,
    slot_end: u32,
    /// Start of this frame's key hashes in `keys`.
    keys_start: u32,
    depth: u32,
    root_ok: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Obl {
    node: NodeId,
    /// Absolute leaf index in the parent frame (or `NONE` for the root).
    sink: u32,
    role: Role,
    /// Program of the container value (`NONE` if not a container or not allowed).
    prog: u32,
    leaf_base: u32,
    lexer: LexerId,
    /// DFA state while lexing a primitive.
    state: u32,
    failed: bool,
    result: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Leaf {
    spec: LeafSpec,
    alive: bool,
    count: u32,
    contains: u32,
    /// Seen literals 0..64.
    seen: u64,
    /// Index of further seen words in `bits` (`NONE` when there are at most 64 literals).
    ext: u32,
    key_state: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum LexKind {
    None,
    Str,
    Key,
    Num,
    Lit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Lex {
    kind: LexKind,
    /// 0 normal; 1 after `\`; 2..=5 reading `\u` hex digits; 6 expecting `\` of a low
    /// surrogate; 7 expecting `u`; 8..=11 reading its hex digits.
    esc: u8,
    uval: u32,
    /// Code points so far (strings).
    count: u32,
    /// Syntax DFA state.
    syn: u32,
    hash: u64,
}

const LEX_NONE: Lex = Lex { kind: LexKind::None, esc: 0, uval: 0, count: 0, syn: 0, hash: 0 };

#[derive(Debug, Clone)]
enum Undo {
    Frame(u32, Frame),
    PoppedFrame(Frame),
    Frames(u32),
    Leaf(u32, Leaf),
    Leaves(u32),
    Obl(u32, Obl),
    Obls(u32),
    Bit(u32, u64),
    Bits(u32),
    Keys(u32),
    Text(u32),
    Lex(Lex),
}

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
    frames: Vec<Frame>,
    leaves: Vec<Leaf>,
    obls: Vec<Obl>,
    bits: Vec<u64>,
    /// (frame depth, key hash) of object keys.
    keys: Vec<(u32, u64)>,
    /// Text of the number being lexed (any-notation mode).
    text: Vec<u8>,
    lex: Lex,
    journal: Vec<Undo>,
    marks: Vec<u32>,
}

fn fnv(h: u64, b: u8) -> u64 {
    (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
}
const FNV0: u64 = 0xcbf2_9ce4_8422_2325;

/// One (can pass, can fail) pair per formula value.
type Tri = (bool, bool);

impl Matcher {
    /// A matcher at the start of a document.
    pub fn new(g: Arc<Grammar>) -> Matcher {
        let mut m = Matcher {
            g,
            frames: Vec::new(),
            leaves: Vec::new(),
            obls: Vec::new(),
            bits: Vec::new(),
            keys: Vec::new(),
            text: Vec::new(),
            lex: LEX_NONE,
            journal: Vec::new(),
            marks: Vec::new(),
        };
        m.reset();
        m
    }

    /// Back to the start of a document.
    pub fn reset(&mut self) {
        self.frames.clear();
        self.leaves.clear();
        self.obls.clear();
        self.bits.clear();
        self.keys.clear();
        self.text.clear();
        self.journal.clear();
        self.marks.clear();
        self.lex = LEX_NONE;
        let root = self.g.root;
        self.obls.push(Obl {
            node: root,
            sink: NONE,
            role: Role::Root,
            prog: NONE,
            leaf_base: 0,
            lexer: EMPTY_LEXER,
            state: DEAD,
            failed: false,
            result: false,
        });
        self.frames.push(Frame {
            kind: FrameKind::Document,
            phase: Phase::DocStart,
            newlines: 0,
            spaces: 0,
            mode: Mode::All,
            slot_mode: Mode::All,
            obl_start: 0,
            obl_end: 0,
            leaf_start: 0,
            leaf_end: 0,
            slot_start: 0,
            slot_end: 1,
            keys_start: 0,
            depth: 0,
            root_ok: false,
        });
    }

    /// The grammar.
    pub fn grammar(&self) -> &Arc<Grammar> {
        &self.g
    }

    /// Bytes accepted so far (that can be popped).
    pub fn len(&self) -> usize {
        self.marks.len()
    }

    /// Whether no byte was accepted yet.
    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// Feeds one byte; returns false (leaving the state unchanged) when the document could not
    /// be valid after it.
    pub fn try_push_byte(&mut self, b: u8) -> bool {
        let mark = self.journal.len() as u32;
        if self.step(b) {
            self.marks.push(mark);
            true
        } else {
            self.rollback(mark as usize);
            false
        }
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
    pub fn pop_bytes(&mut self, n: usize) {
        let n = n.min(self.marks.len());
        if n == 0 {
            return;
        }
        let at = self.marks.len() - n;
        let mark = self.marks[at] as usize;
        self.marks.truncate(at);
        self.rollback(mark);
    }

    /// Forgets the undo history (the accepted bytes can no longer be popped). Keeps memory flat
    /// over long documents.
    pub fn commit(&mut self) {
        self.journal.clear();
        self.marks.clear();
    }

    /// Whether the bytes so far are a complete valid document.
    pub fn is_accepting(&self) -> bool {
        let doc = &self.frames[0];
        if self.frames.len() != 1 {
            return false;
        }
        match doc.phase {
            Phase::DocEnd => doc.root_ok,
            Phase::DocValue => {
                if !matches!(self.lex.kind, LexKind::Num | LexKind::Lit) {
                    return false;
                }
                let syntax = if self.lex.kind == LexKind::Num {
                    self.g.number_syntax
                } else {
                    self.g.literal_syntax
                };
                if !self.g.dfa(syntax).is_final(self.lex.syn) {
                    return false;
                }
                let o = &self.obls[doc.slot_start as usize];
                self.primitive_result(o)
            }
            _ => false,
        }
    }

    /// Whether the parser is inside a string value or key.
    pub fn in_string(&self) -> bool {
        matches!(self.lex.kind, LexKind::Str | LexKind::Key)
    }

    // ----- journal ---------------------------------------------------------------------------

    fn rollback(&mut self, mark: usize) {
        while self.journal.len() > mark {
            match self.journal.pop().expect("non-empty journal") {
                Undo::Frame(i, f) => self.frames[i as usize] = f,
                Undo::PoppedFrame(f) => self.frames.push(f),
                Undo::Frames(n) => self.frames.truncate(n as usize),
                Undo::Leaf(i, l) => self.leaves[i as usize] = l,
                Undo::Leaves(n) => self.leaves.truncate(n as usize),
                Undo::Obl(i, o) => self.obls[i as usize] = o,
                Undo::Obls(n) => self.obls.truncate(n as usize),
                Undo::Bit(i, w) => self.bits[i as usize] = w,
                Undo::Bits(n) => self.bits.truncate(n as usize),
                Undo::Keys(n) => self.keys.truncate(n as usize),
                Undo::Text(n) => self.text.truncate(n as usize),
                Undo::Lex(l) => self.lex = l,
            }
        }
    }

    fn set_frame(&mut self, i: usize, f: Frame) {
        self.journal.push(Undo::Frame(i as u32, self.frames[i]));
        self.frames[i] = f;
    }

    fn set_leaf(&mut self, i: usize, l: Leaf) {
        self.journal.push(Undo::Leaf(i as u32, self.leaves[i]));
        self.leaves[i] = l;
    }

    fn set_obl(&mut self, i: usize, o: Obl) {
        self.journal.push(Undo::Obl(i as u32, self.obls[i]));
        self.obls[i] = o;
    }

    fn set_lex(&mut self, l: Lex) {
        self.journal.push(Undo::Lex(self.lex));
        self.lex = l;
    }

    fn top(&self) -> usize {
        self.frames.len() - 1
    }

    // ----- bytes -----------------------------------------------------------------------------

    fn step(&mut self, b: u8) -> bool {
        match self.lex.kind {
            LexKind::Str | LexKind::Key => return self.string_byte(b),
            LexKind::Num => {
                if matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    return self.primitive_byte(b);
                }
                if !self.end_primitive() {
                    return false;
                }
            }
            LexKind::Lit => {
                if b.is_ascii_lowercase() {
                    return self.primitive_byte(b);
                }
                if !self.end_primitive() {
                    return false;
                }
            }
            LexKind::None => {}
        }
        self.structural(b)
    }

    fn whitespace(&mut self, b: u8) -> bool {
        let t = self.top();
        let mut f = self.frames[t];
        if matches!(
            f.phase,
            Phase::ObjKey | Phase::ObjInValue | Phase::ArrInValue | Phase::DocValue
        ) {
            return false;
        }
        match self.g.options.whitespace {
            Whitespace::Compact => return false,
            Whitespace::Flexible { max_newlines, max_spaces } => {
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
            Whitespace::Unbounded => return true,
        }
        self.set_frame(t, f);
        true
    }

    fn structural(&mut self, b: u8) -> bool {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            return self.whitespace(b);
        }
        let t = self.top();
        let mut f = self.frames[t];
        if f.newlines != 0 || f.spaces != 0 {
            f.newlines = 0;
            f.spaces = 0;
            self.set_frame(t, f);
        }
        match (f.phase, b) {
            (Phase::DocStart | Phase::ObjValue | Phase::ArrOpen | Phase::ArrValue, _)
                if !(f.phase == Phase::ArrOpen && b == b']') =>
            {
                self.value_start(b)
            }
            (Phase::ObjOpen | Phase::ObjKeyNext, b'"') => self.key_start(),
            (Phase::ObjColon, b':') => {
                f.phase = Phase::ObjValue;
                self.set_frame(t, f);
                true
            }
            (Phase::ObjNext, b',') => {
                f.phase = Phase::ObjKeyNext;
                self.set_frame(t, f);
                self.frame_viable(t)
            }
            (Phase::ArrNext, b',') => {
                f.phase = Phase::ArrValue;
                self.set_frame(t, f);
                self.frame_viable(t)
            }
            (Phase::ObjOpen | Phase::ObjNext, b'}') | (Phase::ArrOpen | Phase::ArrNext, b']') => {
                self.close_container()
            }
            _ => false,
        }
    }

    // ----- values ----------------------------------------------------------------------------

    fn value_start(&mut self, b: u8) -> bool {
        let Some(kind) = Kind::of_first_byte(b) else { return false };
        let t = self.top();
        if self.frames[t].kind == FrameKind::Array {
            self.item_slot(t);
        }
        let mut f = self.frames[t];
        f.phase = match f.kind {
            FrameKind::Document => Phase::DocValue,
            FrameKind::Object => Phase::ObjInValue,
            FrameKind::Array => Phase::ArrInValue,
        };
        self.set_frame(t, f);
        let g = self.g.clone();
        for i in f.slot_start..f.slot_end {
            let mut o = self.obls[i as usize];
            let tmpl = g.template(o.node);
            match kind {
                Kind::Object | Kind::Array => {
                    let p = if kind == Kind::Object { tmpl.object } else { tmpl.array };
                    o.prog = p.unwrap_or(NONE);
                    o.failed = p.is_none();
                }
                _ => {
                    o.lexer = tmpl.lexers[kind as usize];
                    o.failed = o.lexer == EMPTY_LEXER;
                    let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
                    o.state = if kind == Kind::String { dfa.start() } else { dfa.next(dfa.start(), b) };
                    if o.state == DEAD {
                        o.failed = true;
                    }
                }
            }
            self.set_obl(i as usize, o);
        }
        match kind {
            Kind::Object | Kind::Array => self.push_container(kind),
            Kind::String => {
                self.set_lex(Lex { kind: LexKind::Str, syn: g.dfa(g.utf8).start(), ..LEX_NONE });
                self.slot_viable(t)
            }
            _ => {
                let (lk, syntax) = if kind == Kind::Number {
                    (LexKind::Num, g.number_syntax)
                } else {
                    (LexKind::Lit, g.literal_syntax)
                };
                let d = g.dfa(syntax);
                let syn = d.next(d.start(), b);
                if syn == DEAD {
                    return false;
                }
                self.set_lex(Lex { kind: lk, syn, ..LEX_NONE });
                if lk == LexKind::Num && g.options.numbers.any_notation {
                    self.journal.push(Undo::Text(self.text.len() as u32));
                    self.text.clear();
                    self.text.push(b);
                }
                self.slot_viable(t)
            }
        }
    }

    /// Obligations for the next item of an array frame.
    fn item_slot(&mut self, t: usize) {
        let f = self.frames[t];
        let start = self.obls.len() as u32;
        self.journal.push(Undo::Obls(start));
        let g = self.g.clone();
        for li in f.leaf_start..f.leaf_end {
            let leaf = self.leaves[li as usize];
            let LeafSpec::Array(s) = leaf.spec else { continue };
            if !leaf.alive {
                continue;
            }
            let spec = &g.arr_specs[s as usize];
            let node = spec.prefix.get(leaf.count as usize).copied().or(spec.items);
            if let Some(node) = node {
                self.obls.push(new_obl(node, li, Role::Item));
            }
            if let Some(c) = spec.contains {
                self.obls.push(new_obl(c, li, Role::Contains));
            }
        }
        let end = self.obls.len() as u32;
        let mut f = self.frames[t];
        f.slot_start = start;
        f.slot_end = end;
        self.set_frame(t, f);
        let mode = self.slot_mode(t);
        let mut f = self.frames[t];
        f.slot_mode = mode;
        self.set_frame(t, f);
    }

    fn push_container(&mut self, kind: Kind) -> bool {
        let t = self.top();
        let parent = self.frames[t];
        let g = self.g.clone();
        let leaf_start = self.leaves.len() as u32;
        self.journal.push(Undo::Leaves(leaf_start));
        for i in parent.slot_start..parent.slot_end {
            let mut o = self.obls[i as usize];
            o.leaf_base = self.leaves.len() as u32;
            if !o.failed {
                for &spec in &g.programs[o.prog as usize].leaves {
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
                        count: 0,
                        contains: 0,
                        seen: 0,
                        ext,
                        key_state: DEAD,
                    });
                }
            }
            self.set_obl(i as usize, o);
        }
        let mode = match parent.slot_mode {
            Mode::Free => Mode::Free,
            m => m,
        };
        let frame = Frame {
            kind: if kind == Kind::Object { FrameKind::Object } else { FrameKind::Array },
            phase: if kind == Kind::Object { Phase::ObjOpen } else { Phase::ArrOpen },
            newlines: 0,
            spaces: 0,
            mode,
            slot_mode: Mode::Free,
            obl_start: parent.slot_start,
            obl_end: parent.slot_end,
            leaf_start,
            leaf_end: self.leaves.len() as u32,
            slot_start: 0,
            slot_end: 0,
            keys_start: self.keys.len() as u32,
            depth: parent.depth + 1,
            root_ok: false,
        };
        if frame.depth > self.g.options.limits.max_depth {
            return false;
        }
        self.journal.push(Undo::Frames(self.frames.len() as u32));
        self.frames.push(frame);
        self.frame_viable(self.top())
    }

    fn primitive_byte(&mut self, b: u8) -> bool {
        let g = self.g.clone();
        let syntax = if self.lex.kind == LexKind::Num { g.number_syntax } else { g.literal_syntax };
        let syn = g.dfa(syntax).next(self.lex.syn, b);
        if syn == DEAD {
            return false;
        }
        let mut lex = self.lex;
        lex.syn = syn;
        self.set_lex(lex);
        if self.lex.kind == LexKind::Num && g.options.numbers.any_notation {
            self.journal.push(Undo::Text(self.text.len() as u32));
            self.text.push(b);
        }
        let t = self.top();
        let f = self.frames[t];
        for i in f.slot_start..f.slot_end {
            let mut o = self.obls[i as usize];
            if o.failed {
                continue;
            }
            o.state = g.dfa(g.lexers[o.lexer as usize].dfa).next(o.state, b);
            if o.state == DEAD {
                o.failed = true;
            }
            self.set_obl(i as usize, o);
        }
        self.slot_viable(t)
    }

    /// Decodes one byte of a string or key; feeds decoded bytes to the DFAs.
    fn string_byte(&mut self, b: u8) -> bool {
        let mut lex = self.lex;
        let mut out = [0u8; 4];
        let n;
        match lex.esc {
            0 => match b {
                b'"' => {
                    return if lex.kind == LexKind::Str { self.end_string() } else { self.end_key() };
                }
                b'\\' => {
                    lex.esc = 1;
                    self.set_lex(lex);
                    return true;
                }
                0..=0x1f => return false,
                _ => {
                    out[0] = b;
                    n = 1;
                }
            },
            1 => {
                let d = match b {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        lex.esc = 2;
                        lex.uval = 0;
                        self.set_lex(lex);
                        return true;
                    }
                    _ => return false,
                };
                lex.esc = 0;
                out[0] = d;
                n = 1;
            }
            2..=5 | 8..=11 => {
                let Some(h) = (b as char).to_digit(16) else { return false };
                // A pending high surrogate stays in the upper half while the low one is read.
                lex.uval = (lex.uval & 0xffff_0000) | (((lex.uval << 4) | h) & 0xffff);
                if lex.esc != 5 && lex.esc != 11 {
                    lex.esc += 1;
                    self.set_lex(lex);
                    return true;
                }
                let cp = if lex.esc == 5 {
                    let u = lex.uval;
                    if (0xD800..0xDC00).contains(&u) {
                        lex.esc = 6;
                        self.set_lex(lex);
                        return true;
                    }
                    if (0xDC00..0xE000).contains(&u) {
                        return false;
                    }
                    u
                } else {
                    let hi = lex.uval >> 16;
                    let lo = lex.uval & 0xffff;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return false;
                    }
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                };
                lex.esc = 0;
                let Some(c) = char::from_u32(cp) else { return false };
                n = c.encode_utf8(&mut out).len();
            }
            6 => {
                if b != b'\\' {
                    return false;
                }
                lex.esc = 7;
                self.set_lex(lex);
                return true;
            }
            7 => {
                if b != b'u' {
                    return false;
                }
                lex.esc = 8;
                // Keep the high surrogate in the upper half.
                lex.uval <<= 16;
                self.set_lex(lex);
                return true;
            }
            _ => return false,
        }
        // `out[..n]` is decoded content.
        let g = self.g.clone();
        let utf8 = g.dfa(g.utf8);
        for &d in &out[..n] {
            lex.syn = utf8.next(lex.syn, d);
            if lex.syn == DEAD {
                return false;
            }
            if !(0x80..0xC0).contains(&d) {
                lex.count += 1;
            }
            lex.hash = fnv(lex.hash, d);
        }
        self.set_lex(lex);
        let t = self.top();
        let f = self.frames[t];
        if lex.kind == LexKind::Str {
            for i in f.slot_start..f.slot_end {
                let mut o = self.obls[i as usize];
                if o.failed {
                    continue;
                }
                let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
                for &d in &out[..n] {
                    o.state = dfa.next(o.state, d);
                }
                if o.state == DEAD {
                    o.failed = true;
                }
                self.set_obl(i as usize, o);
            }
            self.slot_viable(t)
        } else {
            for li in f.leaf_start..f.leaf_end {
                let mut leaf = self.leaves[li as usize];
                let LeafSpec::Object(s) = leaf.spec else { continue };
                if !leaf.alive || leaf.key_state == DEAD {
                    continue;
                }
                let dfa = g.dfa(g.obj_specs[s as usize].key_dfa);
                for &d in &out[..n] {
                    leaf.key_state = dfa.next(leaf.key_state, d);
                }
                self.set_leaf(li as usize, leaf);
            }
            self.frame_viable(t)
        }
    }

    fn end_string(&mut self) -> bool {
        if !self.g.dfa(self.g.utf8).is_final(self.lex.syn) {
            return false;
        }
        self.finish_primitive()
    }

    /// Ends a number or literal before a byte that cannot continue it.
    fn end_primitive(&mut self) -> bool {
        let syntax =
            if self.lex.kind == LexKind::Num { self.g.number_syntax } else { self.g.literal_syntax };
        if !self.g.dfa(syntax).is_final(self.lex.syn) {
            return false;
        }
        self.finish_primitive()
    }

    fn primitive_result(&self, o: &Obl) -> bool {
        if o.failed {
            return false;
        }
        let g = &self.g;
        let lexer = &g.lexers[o.lexer as usize];
        if !g.dfa(lexer.dfa).is_final(o.state) {
            return false;
        }
        match self.lex.kind {
            LexKind::Str => {
                let c = self.lex.count as u64;
                c >= lexer.min_len && lexer.max_len.is_none_or(|m| c <= m)
            }
            LexKind::Num => match &lexer.check {
                None => true,
                Some(check) => {
                    let text = std::str::from_utf8(&self.text).unwrap_or("");
                    Decimal::from_json_text(text).is_ok_and(|d| check.eval(&d))
                }
            },
            _ => true,
        }
    }

    fn finish_primitive(&mut self) -> bool {
        let t = self.top();
        let f = self.frames[t];
        for i in f.slot_start..f.slot_end {
            let mut o = self.obls[i as usize];
            o.result = self.primitive_result(&o);
            self.set_obl(i as usize, o);
        }
        self.set_lex(LEX_NONE);
        self.complete_value(t)
    }

    /// The member or item of frame `t` is complete; its obligations hold their results.
    fn complete_value(&mut self, t: usize) -> bool {
        let mut f = self.frames[t];
        for i in f.slot_start..f.slot_end {
            let o = self.obls[i as usize];
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
        self.frame_viable(t)
    }

    fn close_container(&mut self) -> bool {
        let t = self.top();
        let f = self.frames[t];
        for i in f.obl_start..f.obl_end {
            let mut o = self.obls[i as usize];
            o.result = !o.failed && self.eval_final(&o);
            self.set_obl(i as usize, o);
        }
        self.journal.push(Undo::PoppedFrame(f));
        self.frames.pop();
        self.complete_value(self.top())
    }

    // ----- objects ---------------------------------------------------------------------------

    fn key_start(&mut self) -> bool {
        let t = self.top();
        let mut f = self.frames[t];
        f.phase = Phase::ObjKey;
        self.set_frame(t, f);
        let g = self.g.clone();
        for li in f.leaf_start..f.leaf_end {
            let mut leaf = self.leaves[li as usize];
            if let LeafSpec::Object(s) = leaf.spec
                && leaf.alive
            {
                leaf.key_state = g.dfa(g.obj_specs[s as usize].key_dfa).start();
                self.set_leaf(li as usize, leaf);
            }
        }
        self.set_lex(Lex { kind: LexKind::Key, syn: g.dfa(g.utf8).start(), hash: FNV0, ..LEX_NONE });
        self.frame_viable(t)
    }

    fn seen(&self, leaf: &Leaf, lit: u32) -> bool {
        if lit < 64 {
            leaf.seen & (1 << lit) != 0
        } else {
            let w = self.bits[(leaf.ext + lit / 64 - 1) as usize];
            w & (1 << (lit % 64)) != 0
        }
    }

    fn mark_seen(&mut self, li: usize, lit: u32) {
        let mut leaf = self.leaves[li];
        if lit < 64 {
            leaf.seen |= 1 << lit;
            self.set_leaf(li, leaf);
        } else {
            let i = (leaf.ext + lit / 64 - 1) as usize;
            self.journal.push(Undo::Bit(i as u32, self.bits[i]));
            self.bits[i] |= 1 << (lit % 64);
        }
    }

    fn end_key(&mut self) -> bool {
        if !self.g.dfa(self.g.utf8).is_final(self.lex.syn) {
            return false;
        }
        let t = self.top();
        let f = self.frames[t];
        let hash = self.lex.hash;
        // Duplicate keys are rejected.
        if self.keys[f.keys_start as usize..].iter().any(|&(d, h)| d == f.depth && h == hash) {
            return false;
        }
        self.journal.push(Undo::Keys(self.keys.len() as u32));
        self.keys.push((f.depth, hash));
        let g = self.g.clone();
        let start = self.obls.len() as u32;
        self.journal.push(Undo::Obls(start));
        for li in f.leaf_start..f.leaf_end {
            let mut leaf = self.leaves[li as usize];
            let LeafSpec::Object(s) = leaf.spec else { continue };
            if !leaf.alive {
                continue;
            }
            let spec = &g.obj_specs[s as usize];
            let dfa = g.dfa(spec.key_dfa);
            leaf.count = leaf.count.saturating_add(1);
            let member = if leaf.key_state == DEAD {
                None
            } else {
                match dfa.final_set_id(leaf.key_state) {
                    None => None,
                    Some(set_id) => {
                        let set = &dfa.match_sets()[set_id as usize];
                        match spec.literal_of(set) {
                            Some(lit) => {
                                if self.seen(&leaf, lit) {
                                    return false;
                                }
                                self.set_leaf(li as usize, leaf);
                                self.mark_seen(li as usize, lit);
                                leaf = self.leaves[li as usize];
                                spec.lit_member[lit as usize]
                            }
                            None => spec.set_member[set_id as usize],
                        }
                    }
                }
            };
            match member {
                None => leaf.alive = false,
                Some(n) => self.obls.push(new_obl(n, li, Role::Member)),
            }
            self.set_leaf(li as usize, leaf);
        }
        let mut f = self.frames[t];
        f.phase = Phase::ObjColon;
        f.slot_start = start;
        f.slot_end = self.obls.len() as u32;
        self.set_frame(t, f);
        self.set_lex(LEX_NONE);
        let mode = self.slot_mode(t);
        let mut f = self.frames[t];
        f.slot_mode = mode;
        self.set_frame(t, f);
        self.frame_viable(t)
    }

    // ----- viability -------------------------------------------------------------------------

    /// The mode of frame `t`'s current slot.
    fn slot_mode(&self, t: usize) -> Mode {
        let f = &self.frames[t];
        if f.mode == Mode::Free {
            return Mode::Free;
        }
        let slot = &self.obls[f.slot_start as usize..f.slot_end as usize];
        if !slot.iter().any(|o| matches!(o.role, Role::Member | Role::Item | Role::Root)) {
            return Mode::Free;
        }
        if f.kind == FrameKind::Document {
            return Mode::All;
        }
        // Free if the frame survives every sink leaf dying.
        let dead: Vec<u32> = slot
            .iter()
            .filter(|o| matches!(o.role, Role::Member | Role::Item))
            .map(|o| o.sink)
            .collect();
        if self.frame_viable_with(t, &dead) {
            return Mode::Free;
        }
        let essential = self.obls[f.obl_start as usize..f.obl_end as usize]
            .iter()
            .all(|o| o.failed || self.g.programs[o.prog as usize].all_essential);
        if f.mode == Mode::All && essential { Mode::All } else { Mode::Any }
    }

    fn slot_viable(&self, t: usize) -> bool {
        let f = &self.frames[t];
        let mode = f.slot_mode;
        if mode == Mode::Free {
            return true;
        }
        let mut any = false;
        let mut all = true;
        let mut some = false;
        for o in &self.obls[f.slot_start as usize..f.slot_end as usize] {
            if o.role == Role::Contains {
                continue;
            }
            some = true;
            let ok = self.obl_can_pass(o);
            any |= ok;
            all &= ok;
        }
        if !some {
            return true;
        }
        match mode {
            Mode::All => all,
            _ => any,
        }
    }

    /// Whether a primitive obligation being lexed can still pass.
    fn obl_can_pass(&self, o: &Obl) -> bool {
        if o.failed || o.state == DEAD {
            return false;
        }
        if self.lex.kind == LexKind::Str {
            let lexer = &self.g.lexers[o.lexer as usize];
            if let Some(max) = lexer.max_len {
                let need = match &self.g.min_chars[lexer.dfa as usize] {
                    Some(mc) => mc[self.g.dfa(lexer.dfa).index(o.state)] as u64,
                    None => 0,
                };
                return self.lex.count as u64 + need <= max;
            }
        }
        true
    }

    fn frame_viable(&self, t: usize) -> bool {
        self.frame_viable_with(t, &[])
    }

    fn frame_viable_with(&self, t: usize, dead: &[u32]) -> bool {
        let f = &self.frames[t];
        if f.kind == FrameKind::Document {
            return true;
        }
        if f.mode == Mode::Free {
            return true;
        }
        let mut any = false;
        let mut all = true;
        let mut some = false;
        for o in &self.obls[f.obl_start as usize..f.obl_end as usize] {
            if o.role == Role::Contains {
                continue;
            }
            some = true;
            let ok = !o.failed && self.eval_tri(o, f, dead).0;
            any |= ok;
            all &= ok;
        }
        if !some {
            return true;
        }
        match f.mode {
            Mode::All => all,
            _ => any,
        }
    }

    fn leaf_tri(&self, li: u32, f: &Frame, dead: &[u32], o: &Obl) -> Tri {
        let leaf = &self.leaves[li as usize];
        match leaf.spec {
            LeafSpec::KeySeen { leaf: l, lit } => {
                let seen = self.seen(&self.leaves[(o.leaf_base + l) as usize], lit);
                (true, !seen)
            }
            _ if !leaf.alive || dead.contains(&li) => (false, true),
            LeafSpec::Object(s) => {
                let spec = &self.g.obj_specs[s as usize];
                let mut count = leaf.count as u64;
                if matches!(f.phase, Phase::ObjKeyNext) {
                    count += 1;
                }
                if f.phase == Phase::ObjKey {
                    if leaf.key_state == DEAD {
                        return (false, true);
                    }
                    let i = self.g.dfa(spec.key_dfa).index(leaf.key_state);
                    let w = spec.reach_words;
                    let nlit = spec.lits.len();
                    let row = &spec.reach[i * w..(i + 1) * w];
                    let mut ok = row[nlit / 64] & (1 << (nlit % 64)) != 0;
                    if !ok {
                        for (wi, &word) in row.iter().enumerate() {
                            let seen = if wi == 0 {
                                leaf.seen
                            } else {
                                self.bits[(leaf.ext + wi as u32 - 1) as usize]
                            };
                            if word & !seen != 0 {
                                ok = true;
                                break;
                            }
                        }
                    }
                    if !ok {
                        return (false, true);
                    }
                    count += 1;
                }
                if let Some(max) = spec.max_props {
                    let missing =
                        spec.required.iter().filter(|&&r| !self.seen(leaf, r)).count() as u64;
                    // The key being lexed may be one of the missing ones.
                    let pending = u64::from(f.phase == Phase::ObjKey).min(missing);
                    if count + missing - pending > max {
                        return (false, true);
                    }
                }
                (true, true)
            }
            LeafSpec::Array(s) => {
                let spec = &self.g.arr_specs[s as usize];
                let mut count = leaf.count as u64;
                if matches!(f.phase, Phase::ArrValue | Phase::ArrInValue) {
                    count += 1;
                }
                if spec.max_items.is_some_and(|m| count > m) {
                    return (false, true);
                }
                if spec.max_contains.is_some_and(|m| leaf.contains as u64 > m) {
                    return (false, true);
                }
                (true, true)
            }
        }
    }

    fn leaf_final(&self, li: u32, o: &Obl) -> bool {
        let leaf = &self.leaves[li as usize];
        match leaf.spec {
            LeafSpec::KeySeen { leaf: l, lit } => {
                self.seen(&self.leaves[(o.leaf_base + l) as usize], lit)
            }
            _ if !leaf.alive => false,
            LeafSpec::Object(s) => {
                let spec = &self.g.obj_specs[s as usize];
                let count = leaf.count as u64;
                count >= spec.min_props
                    && spec.max_props.is_none_or(|m| count <= m)
                    && spec.required.iter().all(|&r| self.seen(leaf, r))
                    && spec.dependent_required.iter().all(|(k, deps)| {
                        !self.seen(leaf, *k) || deps.iter().all(|&d| self.seen(leaf, d))
                    })
            }
            LeafSpec::Array(s) => {
                let spec = &self.g.arr_specs[s as usize];
                let count = leaf.count as u64;
                let c = leaf.contains as u64;
                count >= spec.min_items
                    && spec.max_items.is_none_or(|m| count <= m)
                    && c >= spec.min_contains
                    && spec.max_contains.is_none_or(|m| c <= m)
            }
        }
    }

    fn eval_tri(&self, o: &Obl, f: &Frame, dead: &[u32]) -> Tri {
        self.eval(o, |li| self.leaf_tri(li, f, dead, o), |x| x)
    }

    fn eval_final(&self, o: &Obl) -> bool {
        self.eval(o, |li| {
            let v = self.leaf_final(li, o);
            (v, !v)
        }, |x| x)
        .0
    }

    fn eval(&self, o: &Obl, leaf: impl Fn(u32) -> Tri, _id: impl Fn(Tri) -> Tri) -> Tri {
        let prog = &self.g.programs[o.prog as usize];
        let mut stack: smallstack::Stack = smallstack::Stack::new();
        for op in &prog.ops {
            match *op {
                Op::True => stack.push((true, false)),
                Op::False => stack.push((false, true)),
                Op::Leaf(i) => stack.push(leaf(o.leaf_base + i)),
                Op::Not => {
                    let (p, q) = stack.pop();
                    stack.push((q, p));
                }
                Op::And(n) => {
                    let (mut p, mut q) = (true, false);
                    for _ in 0..n {
                        let (a, b) = stack.pop();
                        p &= a;
                        q |= b;
                    }
                    stack.push((p, q));
                }
                Op::Or(n) => {
                    let (mut p, mut q) = (false, true);
                    for _ in 0..n {
                        let (a, b) = stack.pop();
                        p |= a;
                        q &= b;
                    }
                    stack.push((p, q));
                }
                Op::OneOf(n) => {
                    // Exact for decided values; otherwise "can pass" if some can pass.
                    let mut passes = 0;
                    let mut undecided = false;
                    let mut can = false;
                    for _ in 0..n {
                        let (a, b) = stack.pop();
                        if a && !b {
                            passes += 1;
                        }
                        if a && b {
                            undecided = true;
                        }
                        can |= a;
                    }
                    if undecided {
                        stack.push((can && passes <= 1, true));
                    } else {
                        stack.push((passes == 1, passes != 1));
                    }
                }
            }
        }
        stack.pop()
    }
}

fn new_obl(node: NodeId, sink: u32, role: Role) -> Obl {
    Obl {
        node,
        sink,
        role,
        prog: NONE,
        leaf_base: 0,
        lexer: EMPTY_LEXER,
        state: DEAD,
        failed: false,
        result: false,
    }
}

mod smallstack {
    //! A fixed-capacity stack for formula evaluation, spilling to the heap when deep.
    use super::Tri;

    pub struct Stack {
        inline: [Tri; 32],
        len: usize,
        spill: Vec<Tri>,
    }

    impl Stack {
        pub fn new() -> Stack {
            Stack { inline: [(false, false); 32], len: 0, spill: Vec::new() }
        }

        pub fn push(&mut self, v: Tri) {
            if self.len < 32 {
                self.inline[self.len] = v;
            } else {
                self.spill.push(v);
            }
            self.len += 1;
        }

        pub fn pop(&mut self) -> Tri {
            self.len -= 1;
            if self.len < 32 { self.inline[self.len] } else { self.spill.pop().unwrap_or_default() }
        }
    }
}
