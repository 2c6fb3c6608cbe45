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
//! [`Program`]: crate::compile::Program

use std::sync::Arc;

use recognizer::{Close, LEVELS, Split, TOP_LEVEL};

use crate::compile::{DfaId, EMPTY_LEXER, Kind, LeafSpec, LexerId, ObjSpec, Op};
use crate::dfa::{DEAD, NO_PATH, level_is_plain};
use crate::grammar::{Grammar, NUMBER_BYTES};
use crate::ir::NodeId;
use crate::options::{KeyEscapes, Whitespace};
use crate::text::decimal::Decimal;

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum FrameKind {
    #[default]
    Document,
    Object,
    Array,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum Phase {
    #[default]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum Mode {
    /// Nothing above depends on this value: any syntactically valid value will do.
    #[default]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
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
    /// Value hashing (only when the grammar has `uniqueItems`): the running hash of the
    /// container, the hash of the current member's key, and where item hashes start.
    acc: Hash2,
    member_key: Hash2,
    items_start: u32,
}

/// Under [`Whitespace::Pretty`]: the indentation, in spaces, after the line break of the gap
/// frame `f` is in (`None`: the gap has no line break). After `{`, `[` and `,` the break leads
/// to the next member or item, one level in; after a member or item it leads to the closing
/// bracket, at the level of the brackets.
fn pretty_indent(f: &Frame) -> Option<u32> {
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
fn pretty_gap_done(f: &Frame, b: u8) -> bool {
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

/// A 128-bit hash of a JSON value: two independent 64-bit streams.
type Hash2 = (u64, u64);

fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Finishes a value hash from a kind tag and two streams.
fn fin(tag: u64, a: u64, b: u64) -> Hash2 {
    (
        mix64(a ^ tag.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        mix64(b.wrapping_add(tag) ^ 0x5851_f42d_4c95_7f2d),
    )
}

/// Hashes bytes into two streams.
fn hash_bytes(bytes: &[u8]) -> Hash2 {
    let (mut a, mut b) = (FNV0, HASH2_SEED);
    for &x in bytes {
        a = fnv(a, x);
        b = hash2_step(b, x);
    }
    (a, b)
}

const HASH2_SEED: u64 = 0x2545_f491_4f6c_dd1d;

fn hash2_step(h: u64, b: u8) -> u64 {
    (h ^ b as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left(23)
}

const TAG_STR: u64 = 1;
const TAG_NUM: u64 = 2;
const TAG_LIT: u64 = 3;
const TAG_ARR: u64 = 4;
const TAG_OBJ: u64 = 5;

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
    /// The document can only lose by this obligation failing: every formula above it is
    /// monotone in it (see [`crate::compile::Program::positive`]). Only then may the value
    /// be held to an order of its members, which narrows what it accepts.
    positive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Leaf {
    spec: LeafSpec,
    alive: bool,
    /// Positive (see [`Obl::positive`]): the obligation is, and its formula is monotone in
    /// the leaf.
    positive: bool,
    /// Under [`crate::PropertyOrder::Schema`], for an object leaf held to its order: the
    /// index of the first listed property that may still be written (`listed` once a key
    /// outside them has been). `NONE`: any order.
    next: u32,
    count: u32,
    contains: u32,
    /// Seen literals 0..64.
    seen: u64,
    /// Index of further seen words in `bits` (`NONE` when there are at most 64 literals).
    ext: u32,
    key_state: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum LexKind {
    #[default]
    None,
    Str,
    Key,
    Num,
    Lit,
}

/// The string-decoding part of a lexeme state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Core {
    /// 0 normal; 1 after `\`; 2..=5 reading `\u` hex digits; 6 expecting `\` of a low
    /// surrogate; 7 expecting `u`; 8..=11 reading its hex digits.
    esc: u8,
    uval: u32,
    /// Code points so far (strings).
    count: u32,
    /// Syntax DFA state (UTF-8 for strings, number or literal syntax otherwise).
    syn: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Lex {
    kind: LexKind,
    core: Core,
    hash: u64,
    /// Second hash stream of the decoded bytes (value hashing).
    hash2: u64,
    /// Where the text of the number or literal being lexed starts in `State::text`.
    text_start: u32,
    /// Strings and keys: which one (numbered as they start), so the lexeme walker can keep
    /// what it learnt about this one between walks.
    inst: u32,
    /// Numbers: the syntax DFA `core.syn` runs in (see [`State::number_syntax_for`]).
    syntax: DfaId,
}

/// What one byte of a string does.
enum Decoded {
    Reject,
    /// Part of an escape: nothing decoded yet.
    Pending,
    /// The unescaped closing quote.
    End,
    /// Decoded content bytes.
    Bytes([u8; 4], usize),
}

/// Advances the escape decoder by `b`. With `needed_only`, only escapes JSON needs are
/// accepted: `\"`, `\\` and control characters ([`crate::KeyEscapes::Needed`]).
fn decode(core: &mut Core, b: u8, needed_only: bool) -> Decoded {
    match core.esc {
        0 => match b {
            b'"' => Decoded::End,
            b'\\' => {
                core.esc = 1;
                Decoded::Pending
            }
            0..=0x1f => Decoded::Reject,
            _ => Decoded::Bytes([b, 0, 0, 0], 1),
        },
        1 => {
            if needed_only && b == b'/' {
                return Decoded::Reject;
            }
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
                    core.esc = 2;
                    core.uval = 0;
                    return Decoded::Pending;
                }
                _ => return Decoded::Reject,
            };
            core.esc = 0;
            Decoded::Bytes([d, 0, 0, 0], 1)
        }
        2..=5 | 8..=11 => {
            let Some(h) = (b as char).to_digit(16) else {
                return Decoded::Reject;
            };
            // `\u0000`..`\u001f`: the control characters.
            if needed_only && ((core.esc < 4 && h != 0) || (core.esc == 4 && h > 1)) {
                return Decoded::Reject;
            }
            // A pending high surrogate stays in the upper half while the low one is read.
            core.uval = (core.uval & 0xffff_0000) | (((core.uval << 4) | h) & 0xffff);
            if core.esc != 5 && core.esc != 11 {
                core.esc += 1;
                return Decoded::Pending;
            }
            let cp = if core.esc == 5 {
                let u = core.uval;
                if (0xD800..0xDC00).contains(&u) {
                    core.esc = 6;
                    return Decoded::Pending;
                }
                if (0xDC00..0xE000).contains(&u) {
                    return Decoded::Reject;
                }
                u
            } else {
                let hi = core.uval >> 16;
                let lo = core.uval & 0xffff;
                if !(0xDC00..0xE000).contains(&lo) {
                    return Decoded::Reject;
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            };
            core.esc = 0;
            let Some(c) = char::from_u32(cp) else {
                return Decoded::Reject;
            };
            let mut out = [0u8; 4];
            let n = c.encode_utf8(&mut out).len();
            Decoded::Bytes(out, n)
        }
        6 => {
            if b != b'\\' {
                return Decoded::Reject;
            }
            core.esc = 7;
            Decoded::Pending
        }
        7 => {
            if b != b'u' {
                return Decoded::Reject;
            }
            core.esc = 8;
            core.uval <<= 16;
            Decoded::Pending
        }
        _ => Decoded::Reject,
    }
}

/// Whether escapes are limited to those JSON needs: in keys, under [`KeyEscapes::Needed`].
fn needed_only(g: &Grammar, key: bool) -> bool {
    key && g.options.key_escapes == KeyEscapes::Needed
}

/// The code points an unfinished escape can still produce, as inclusive ranges (at most 3).
fn escape_ranges(core: &Core, needed_only: bool) -> ([(u32, u32); 3], usize) {
    let mut out = [(0, 0); 3];
    let mut n = 0;
    if needed_only {
        match core.esc {
            1 => {
                out = [
                    (0, 0x1F),
                    (b'"' as u32, b'"' as u32),
                    (b'\\' as u32, b'\\' as u32),
                ];
                n = 3;
            }
            2..=5 => {
                // The digits read so far are zeros, then possibly a 1 (see `decode`).
                let shift = 4 * (4 - u32::from(core.esc - 2));
                let lo = (core.uval & 0xffff) << shift;
                out[0] = (lo, (lo | ((1 << shift) - 1)).min(0x1F));
                n = 1;
            }
            _ => {}
        }
        return (out, n);
    }
    let mut push = |lo: u32, hi: u32| {
        if lo <= hi {
            out[n] = (lo, hi);
            n += 1;
        }
    };
    // Supplementary code points from high surrogates `h1..=h2`, optionally with the low
    // surrogate limited to `l1..=l2`.
    let pair = |h: u32, l: u32| 0x10000 + ((h - 0xD800) << 10) + (l - 0xDC00);
    let digits = |read: u8, low16: u32| {
        let shift = 4 * (4 - u32::from(read));
        let lo = (low16 << shift) & 0xffff;
        (lo, lo | ((1u32 << shift) - 1))
    };
    match core.esc {
        1 | 2 => {
            push(0, 0xD7FF);
            push(0xE000, 0x10FFFF);
        }
        3..=5 => {
            let (lo, hi) = digits(core.esc - 2, core.uval & 0xffff);
            push(lo, hi.min(0xD7FF));
            push(lo.max(0xE000), hi);
            let (h1, h2) = (lo.max(0xD800), hi.min(0xDBFF));
            if h1 <= h2 {
                push(pair(h1, 0xDC00), pair(h2, 0xDFFF));
            }
        }
        6 | 7 => {
            let h = core.uval & 0xffff;
            push(pair(h, 0xDC00), pair(h, 0xDFFF));
        }
        8..=11 => {
            let h = core.uval >> 16;
            let (lo, hi) = digits(core.esc - 8, core.uval & 0xffff);
            let (l1, l2) = (lo.max(0xDC00), hi.min(0xDFFF));
            if l1 <= l2 {
                push(pair(h, l1), pair(h, l2));
            }
        }
        _ => {}
    }
    (out, n)
}

/// The distinct tuples of DFA states (one per entry of `dfas`, from `start`) reached by the
/// UTF-8 encoding of some code point an unfinished escape can still produce, flattened; and how
/// many tuples there are (one empty tuple when there are no DFAs but some code point).
fn escape_outcomes(
    g: &Grammar,
    core: &Core,
    needed_only: bool,
    dfas: &[DfaId],
    start: &[u32],
) -> (Vec<u32>, usize) {
    let (ranges, n) = escape_ranges(core, needed_only);
    let k = dfas.len();
    if k == 0 {
        return (Vec::new(), usize::from(n > 0));
    }
    let mut found: Vec<u32> = Vec::new();
    let mut cur: Vec<u32> = Vec::new();
    let mut next: Vec<u32> = Vec::new();
    let mut tuple = vec![0u32; k];
    for &(lo, hi) in &ranges[..n] {
        let (Some(lo), Some(hi)) = (char::from_u32(lo), char::from_u32(hi)) else {
            continue;
        };
        for seq in regex_syntax::utf8::Utf8Sequences::new(lo, hi) {
            cur.clear();
            cur.extend_from_slice(start);
            for r in seq.as_slice() {
                next.clear();
                for t in cur.chunks(k) {
                    for b in r.start..=r.end {
                        for j in 0..k {
                            tuple[j] = if t[j] == DEAD {
                                DEAD
                            } else {
                                g.dfa(dfas[j]).next(t[j], b)
                            };
                        }
                        if !next.chunks(k).any(|u| u == &tuple[..]) {
                            next.extend_from_slice(&tuple);
                        }
                    }
                }
                std::mem::swap(&mut cur, &mut next);
            }
            for t in cur.chunks(k) {
                if !found.chunks(k).any(|u| u == t) {
                    found.extend_from_slice(t);
                }
            }
        }
    }
    let count = found.len() / k;
    (found, count)
}

/// Remembers [`escape_outcomes`]: a trie walk asks for the same unfinished escapes (`\\`,
/// `\\u`, `\\u00`, ...) from the same DFA states at many nodes, and each answer follows
/// every code point the escape can still produce through every DFA.
#[derive(Debug, Clone, Default)]
struct EscapeMemo {
    map: rustc_hash::FxHashMap<Box<[u32]>, Outcomes>,
    key: Vec<u32>,
}

/// Flattened tuples of DFA states and how many there are (see [`escape_outcomes`]).
type Outcomes = (Arc<[u32]>, usize);

/// Entries kept by [`EscapeMemo`] before it starts over.
const ESCAPE_MEMO_MAX: usize = 4096;

impl EscapeMemo {
    fn outcomes(
        &mut self,
        g: &Grammar,
        core: &Core,
        needed_only: bool,
        dfas: &[DfaId],
        start: &[u32],
    ) -> Outcomes {
        self.key.clear();
        self.key
            .extend([core.esc as u32, core.uval, needed_only as u32]);
        self.key.extend_from_slice(dfas);
        self.key.extend_from_slice(start);
        if let Some((o, c)) = self.map.get(self.key.as_slice()) {
            return (o.clone(), *c);
        }
        let (o, c) = escape_outcomes(g, core, needed_only, dfas, start);
        let o: Arc<[u32]> = o.into();
        if self.map.len() >= ESCAPE_MEMO_MAX {
            self.map.clear();
        }
        self.map.insert(self.key.as_slice().into(), (o.clone(), c));
        (o, c)
    }
}

/// Feeds decoded bytes to the UTF-8 syntax DFA and the code-point count.
fn feed_core(g: &Grammar, core: &mut Core, out: &[u8]) -> bool {
    let utf8 = g.dfa(g.utf8);
    for &d in out {
        core.syn = utf8.next(core.syn, d);
        if core.syn == DEAD {
            return false;
        }
        if !(0x80..0xC0).contains(&d) {
            core.count += 1;
        }
    }
    true
}

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
    Items(u32),
    Lex(Lex),
}

/// A walk node's successor not worked out yet.
const UNSEEN: u32 = u32::MAX;
/// A walk node's successor that the string or key refuses.
const REFUSED: u32 = u32::MAX - 1;

/// The lexeme-only walker, while a mask walk stays inside a string or key.
///
/// Its *nodes* are the distinct (decoder, per-lexer DFA states) the walk reaches, each with a
/// row of 256 successors filled in on first use, so the walk is a table lookup per trie node
/// once a node's byte was seen (a walk over most of a large vocabulary meets a few dozen
/// nodes). The decoder's code-point count is part of a node only when some lexer has a
/// maximum length.
#[derive(Debug, Clone, Default)]
struct LexWalk {
    on: bool,
    is_str: bool,
    /// Per depth: the node.
    path: Vec<u32>,
    /// Per node: its decoder state.
    node_core: Vec<Core>,
    /// Per node: `idx.len()` DFA states.
    node_states: Vec<u32>,
    /// Per node: 256 successors (`UNSEEN`, `REFUSED` or a node).
    next: Vec<u32>,
    /// Node by its (decoder, DFA states) words.
    nodes: rustc_hash::FxHashMap<Box<[u32]>, u32>,
    /// Scratch for a node's words.
    words: Vec<u32>,
    /// Some lexer has a maximum length (the code-point count tells nodes apart).
    count_matters: bool,
    /// The string or key (`Lex::inst`) and tracked entries (`idx`) that the nodes, their
    /// successors and the viability memos were learnt for: within one string or key the
    /// frame does not change, so they hold for every walk with the same entries.
    learnt_inst: Option<u32>,
    learnt_idx: Vec<u32>,
    /// Obligation indices (strings) or leaf indices (keys) whose DFA states are tracked.
    idx: Vec<u32>,
    /// The DFA of each tracked entry.
    dfas: Vec<DfaId>,
    /// Strings: the code-point limit of each entry (`u64::MAX`: none).
    max: Vec<u64>,
    /// Strings: the slot has obligations that count (failed or not).
    some: bool,
    mode: Mode,
    /// While a successor is worked out: the decoder state of the node and of the successor.
    cores: Vec<Core>,
    /// While a successor is worked out: `idx.len()` DFA states of the node, then of the
    /// successor.
    states: Vec<u32>,
    /// Keys: frame viability by key-state tuple, for the current walk.
    key_memo: rustc_hash::FxHashMap<Box<[u32]>, bool>,
    /// Strings: some obligation of the slot had failed before the walk.
    failed: bool,
    /// Strings: frame viability by the set of tracked entries that can no longer pass (bit `j`
    /// for entry `j`), for the current walk.
    slot_memo: rustc_hash::FxHashMap<u64, bool>,
    /// The last `slot_memo` answer (`u64::MAX` at the start of a walk: a lookup with every
    /// one of 64 entries dead never happens, the walk refuses that first).
    slot_last: (u64, bool),
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
    st: State,
}

/// The mutable part of a [`Matcher`].
#[derive(Debug, Clone, Default)]
struct State {
    frames: Vec<Frame>,
    leaves: Vec<Leaf>,
    obls: Vec<Obl>,
    bits: Vec<u64>,
    /// (frame depth, key hash) of object keys.
    keys: Vec<(u32, u64)>,
    /// Text of the number or literal being lexed (any-notation mode, value hashing).
    text: Vec<u8>,
    /// (frame depth, hash) of the items of open arrays (value hashing).
    items: Vec<(u32, Hash2)>,
    lex: Lex,
    journal: Vec<Undo>,
    marks: Vec<u32>,
    lw: LexWalk,
    escapes: EscapeMemo,
    /// Strings and keys started so far (see `Lex::inst`).
    insts: u32,
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
            st: State::default(),
        };
        m.reset();
        m
    }

    /// Back to the start of a document.
    pub fn reset(&mut self) {
        let st = &mut self.st;
        st.frames.clear();
        st.leaves.clear();
        st.obls.clear();
        st.bits.clear();
        st.keys.clear();
        st.text.clear();
        st.items.clear();
        st.journal.clear();
        st.marks.clear();
        st.lw = LexWalk::default();
        st.lex = Lex::default();
        st.obls.push(new_obl(self.g.root, NONE, Role::Root, true));
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
        self.st.marks.len()
    }

    /// Whether no byte was accepted yet.
    pub fn is_empty(&self) -> bool {
        self.st.marks.is_empty()
    }

    /// Feeds one byte; returns false (leaving the state unchanged) when the document could not
    /// be valid after it.
    #[inline]
    pub fn try_push_byte(&mut self, b: u8) -> bool {
        let st = &mut self.st;
        if st.lw.on {
            return st.lw_push(&self.g, b);
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
        let st = &mut self.st;
        if n == 0 {
            return;
        }
        if st.lw.on {
            let path = &mut st.lw.path;
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
    pub fn commit(&mut self) {
        let st = &mut self.st;
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
        let st = &self.st;
        let g = &*self.g;
        if st.lw.on || st.frames.len() != 1 {
            return false;
        }
        let doc = &st.frames[0];
        match doc.phase {
            Phase::DocEnd => doc.root_ok,
            Phase::DocValue => {
                if !matches!(st.lex.kind, LexKind::Num | LexKind::Lit) {
                    return false;
                }
                let syntax = if st.lex.kind == LexKind::Num {
                    st.lex.syntax
                } else {
                    g.literal_syntax
                };
                if !g.dfa(syntax).is_final(st.lex.core.syn) {
                    return false;
                }
                st.primitive_result(g, &st.obls[doc.slot_start as usize])
            }
            _ => false,
        }
    }

    /// Whether the parser is inside a string value or key.
    pub fn in_string(&self) -> bool {
        matches!(self.st.lex.kind, LexKind::Str | LexKind::Key)
    }

    /// Whether the parser is inside an object key.
    pub fn in_key(&self) -> bool {
        self.st.lex.kind == LexKind::Key
    }

    /// Refuse (or stop refusing) the bytes that would end the current string or key.
    ///
    /// While on, only bytes inside the current string or key are accepted, and pushes and pops
    /// use a light stack of lexer states (they must be balanced before switching off).
    pub fn set_lexeme_only(&mut self, on: bool) {
        let st = &mut self.st;
        if !on {
            st.lw.on = false;
            return;
        }
        if !matches!(st.lex.kind, LexKind::Str | LexKind::Key) {
            return;
        }
        let g = &*self.g;
        let t = st.top();
        let f = st.frames[t];
        let lw = &mut st.lw;
        lw.idx.clear();
        lw.dfas.clear();
        lw.max.clear();
        lw.states.clear();
        lw.slot_last = (u64::MAX, false);
        lw.failed = false;
        lw.is_str = st.lex.kind == LexKind::Str;
        if lw.is_str {
            lw.mode = f.slot_mode;
            lw.some = false;
            for i in f.slot_start..f.slot_end {
                let o = st.obls[i as usize];
                if o.role == Role::Contains {
                    continue;
                }
                lw.some = true;
                if o.failed {
                    lw.failed = true;
                    continue;
                }
                let lexer = &g.lexers[o.lexer as usize];
                lw.idx.push(i);
                lw.dfas.push(lexer.dfa);
                lw.max.push(lexer.max_len.unwrap_or(u64::MAX));
                lw.states.push(o.state);
            }
        } else {
            for li in f.leaf_start..f.leaf_end {
                let leaf = st.leaves[li as usize];
                if let LeafSpec::Object(s) = leaf.spec
                    && leaf.alive
                {
                    lw.idx.push(li);
                    lw.dfas.push(g.obj_specs[s as usize].key_dfa);
                    lw.states.push(leaf.key_state);
                }
            }
        }
        lw.count_matters = lw.is_str && lw.max.iter().any(|&m| m != u64::MAX);
        lw.path.clear();
        if lw.learnt_inst != Some(st.lex.inst) || lw.learnt_idx != lw.idx {
            lw.forget();
            lw.learnt_inst = Some(st.lex.inst);
            lw.learnt_idx.clone_from(&lw.idx);
        }
        let base = lw.intern(st.lex.core, 0);
        lw.path.push(base);
        st.lw.on = true;
    }
}

impl LexWalk {
    /// Drops the nodes, their successors and the viability memos.
    fn forget(&mut self) {
        self.node_core.clear();
        self.node_states.clear();
        self.next.clear();
        self.nodes.clear();
        self.key_memo.clear();
        self.slot_memo.clear();
    }

    /// The node of decoder `core` and the DFA states at `states[from..from + idx.len()]`,
    /// added when new.
    fn intern(&mut self, mut core: Core, from: usize) -> u32 {
        if !self.count_matters {
            core.count = 0;
        }
        let k = self.idx.len();
        self.words.clear();
        self.words
            .extend_from_slice(&[core.esc as u32, core.uval, core.count, core.syn]);
        self.words.extend_from_slice(&self.states[from..from + k]);
        if let Some(&id) = self.nodes.get(&self.words[..]) {
            return id;
        }
        let id = self.node_core.len() as u32;
        self.node_core.push(core);
        self.node_states
            .extend_from_slice(&self.states[from..from + k]);
        self.next.resize(self.next.len() + 256, UNSEEN);
        self.nodes.insert(self.words[..].into(), id);
        id
    }
}

impl State {
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
                Undo::Items(n) => self.items.truncate(n as usize),
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

    /// A number for a string or key that starts (never reused, so the walker's memory of an
    /// earlier one cannot apply).
    fn new_inst(&mut self) -> u32 {
        self.insts = self.insts.wrapping_add(1);
        self.insts
    }

    fn set_lex(&mut self, l: Lex) {
        self.journal.push(Undo::Lex(self.lex));
        self.lex = l;
    }

    fn top(&self) -> usize {
        self.frames.len() - 1
    }

    // ----- bytes -----------------------------------------------------------------------------

    fn step(&mut self, g: &Grammar, b: u8) -> bool {
        // After a number or literal only these can follow (ending it is costly: a number's
        // bounds are checked on its text), so every other byte is refused at once.
        let after_primitive =
            |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b',' | b'}' | b']');
        match self.lex.kind {
            LexKind::Str | LexKind::Key => return self.string_byte(g, b),
            LexKind::Num => {
                if matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    return self.primitive_byte(g, b);
                }
                if !after_primitive(b) || !self.end_primitive(g) {
                    return false;
                }
            }
            LexKind::Lit => {
                if b.is_ascii_lowercase() {
                    return self.primitive_byte(g, b);
                }
                if !after_primitive(b) || !self.end_primitive(g) {
                    return false;
                }
            }
            LexKind::None => {}
        }
        self.structural(g, b)
    }

    fn whitespace(&mut self, g: &Grammar, b: u8) -> bool {
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
    fn pretty_line_viable(&mut self, g: &Grammar, t: usize, indent: u32) -> bool {
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

    fn structural(&mut self, g: &Grammar, b: u8) -> bool {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
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

    // ----- values ----------------------------------------------------------------------------

    fn value_start(&mut self, g: &Grammar, b: u8) -> bool {
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
            let mut o = self.obls[i as usize];
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
            self.set_obl(i as usize, o);
        }
        match kind {
            Kind::Object | Kind::Array => self.push_container(g, kind),
            Kind::String => {
                let core = Core {
                    syn: g.dfa(g.utf8).start(),
                    ..Core::default()
                };
                let inst = self.new_inst();
                self.set_lex(Lex {
                    kind: LexKind::Str,
                    core,
                    hash: FNV0,
                    hash2: HASH2_SEED,
                    text_start: 0,
                    inst,
                    syntax: 0,
                });
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
                    // Earlier texts stay until `commit`, so pops can restore them.
                    text_start: self.text.len() as u32,
                    inst: 0,
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

    /// Fails the obligations of frame `t` that no canonical spelling continuing the number so
    /// far satisfies, when the number is held to its canonical spelling: on those spellings
    /// each obligation's verdict is exact, so every value still writable fails it, and a
    /// formula that needs it is refused now rather than at a dead end (`-0` under `integer`).
    fn fail_unwritable(&mut self, g: &Grammar, t: usize) {
        if self.lex.kind != LexKind::Num
            || self.lex.syntax != g.canonical_syntax
            || g.canonical_syntax == g.number_syntax
        {
            return;
        }
        let syn = g.dfa(g.canonical_syntax).state_index(self.lex.core.syn);
        let f = self.frames[t];
        for i in f.slot_start..f.slot_end {
            let mut o = self.obls[i as usize];
            if o.failed {
                continue;
            }
            let Some(table) = &g.canonical_live[o.lexer as usize] else {
                continue;
            };
            let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
            if table[syn * dfa.num_states() + dfa.state_index(o.state)] == NO_PATH {
                o.failed = true;
                self.set_obl(i as usize, o);
            }
        }
    }

    /// Whether the number or literal being lexed keeps frame `t` viable. A lexeme whose end is
    /// known (a literal from its first letter, or a number every obligation has finished) is
    /// ended on trial: what only its end decides (`uniqueItems`, `maxContains`) must not
    /// leave a dead end before the delimiter.
    fn primitive_viable(&mut self, g: &Grammar, t: usize) -> bool {
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
        let mut members = self.obls[f.slot_start as usize..f.slot_end as usize]
            .iter()
            .filter(|o| o.role != Role::Contains && !o.failed)
            .peekable();
        let complete = g.dfa(syntax).is_terminal(self.lex.core.syn)
            || (members.peek().is_some()
                && members.all(|o| g.dfa(g.lexers[o.lexer as usize].dfa).is_terminal(o.state)));
        if !complete {
            return true;
        }
        let mark = self.journal.len();
        let ok = self.finish_primitive(g);
        self.rollback(mark);
        ok
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
    fn number_syntax_for(&self, g: &Grammar, t: usize) -> DfaId {
        if g.canonical_syntax == g.number_syntax {
            return g.number_syntax;
        }
        let f = &self.frames[t];
        let decided = |o: &Obl| o.role == Role::Contains || f.slot_mode != Mode::All;
        // Failed obligations count too: the syntax is chosen after the number's first byte
        // was fed to them, and that byte may have failed one only because of how it spells
        // the value (`0.115E+2` is 11.5).
        let inexact = self.obls[f.slot_start as usize..f.slot_end as usize]
            .iter()
            .any(|o| decided(o) && !g.number_exact(o.lexer));
        if inexact {
            g.canonical_syntax
        } else {
            g.number_syntax
        }
    }

    /// Obligations for the next item of an array frame.
    fn item_slot(&mut self, g: &Grammar, t: usize) {
        let f = self.frames[t];
        let start = self.obls.len() as u32;
        self.journal.push(Undo::Obls(start));
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
                self.obls.push(new_obl(node, li, Role::Item, leaf.positive));
            }
            if let Some(c) = spec.contains {
                // Counted: `maxContains` turns a passing item against the array.
                self.obls.push(new_obl(c, li, Role::Contains, false));
            }
        }
        let mut f = self.frames[t];
        f.slot_start = start;
        f.slot_end = self.obls.len() as u32;
        self.set_frame(t, f);
        let mode = self.slot_mode(g, t);
        let mut f = self.frames[t];
        f.slot_mode = mode;
        self.set_frame(t, f);
    }

    fn push_container(&mut self, g: &Grammar, kind: Kind) -> bool {
        let t = self.top();
        let parent = self.frames[t];
        let leaf_start = self.leaves.len() as u32;
        self.journal.push(Undo::Leaves(leaf_start));
        // Members are held to an order only where one obligation's formula speaks about
        // them: several would each bring their own listing, and must hold together.
        let constraining = (parent.slot_start..parent.slot_end)
            .filter(|&i| {
                let o = &self.obls[i as usize];
                !o.failed && !g.programs[o.prog as usize].leaves.is_empty()
            })
            .count();
        for i in parent.slot_start..parent.slot_end {
            let mut o = self.obls[i as usize];
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
            self.set_obl(i as usize, o);
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
            obl_start: parent.slot_start,
            obl_end: parent.slot_end,
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

    fn primitive_byte(&mut self, g: &Grammar, b: u8) -> bool {
        self.advance_primitive(g, b) && self.primitive_viable(g, self.top())
    }

    /// Feeds `b` to the number or literal being lexed and its obligations.
    fn advance_primitive(&mut self, g: &Grammar, b: u8) -> bool {
        let syntax = if self.lex.kind == LexKind::Num {
            self.lex.syntax
        } else {
            g.literal_syntax
        };
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
        self.fail_unwritable(g, t);
        true
    }

    /// Decodes one byte of a string or key; feeds decoded bytes to the DFAs.
    fn string_byte(&mut self, g: &Grammar, b: u8) -> bool {
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
                let mut o = self.obls[i as usize];
                if o.failed {
                    continue;
                }
                let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
                o.state = dfa.run(o.state, &out[..n]);
                if o.state == DEAD {
                    o.failed = true;
                }
                self.set_obl(i as usize, o);
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
    fn escape_viable(&mut self, g: &Grammar, lex: &Lex) -> bool {
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
                let o = &self.obls[i as usize];
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
        let (outcomes, count) = self
            .escapes
            .outcomes(g, &lex.core, needed_only, &dfas, &states);
        let k = dfas.len();
        let mut after = *lex;
        after.core.esc = 0;
        after.core.count += 1;
        for c in 0..count {
            let tuple = &outcomes[c * k..(c + 1) * k];
            let mark = self.journal.len();
            self.set_lex(after);
            let ok = if lex.kind == LexKind::Str {
                for (j, &i) in idx.iter().enumerate() {
                    let mut o = self.obls[i as usize];
                    o.state = tuple[j];
                    o.failed = tuple[j] == DEAD;
                    self.set_obl(i as usize, o);
                }
                self.slot_viable(g, t)
            } else {
                let mut universal = true;
                for (j, &li) in idx.iter().enumerate() {
                    let mut leaf = self.leaves[li as usize];
                    leaf.key_state = tuple[j];
                    universal &=
                        self.key_universal(g, &leaf, &g.obj_specs[specs[j] as usize], tuple[j]);
                    self.set_leaf(li as usize, leaf);
                }
                universal || self.frame_viable(g, t)
            };
            self.rollback(mark);
            if ok {
                return true;
            }
        }
        false
    }

    /// With value hashing (`uniqueItems`): a string whose content can no longer grow (every
    /// live obligation's DFA has no transition left, as an `enum` or `const` string at its
    /// last character) is ended on trial, so that a repeated item is refused at its last
    /// content byte rather than leaving a dead end before the closing quote.
    fn string_end_viable(&mut self, g: &Grammar, t: usize) -> bool {
        let f = &self.frames[t];
        let mut members = self.obls[f.slot_start as usize..f.slot_end as usize]
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

    fn end_string(&mut self, g: &Grammar) -> bool {
        if !g.dfa(g.utf8).is_final(self.lex.core.syn) {
            return false;
        }
        self.finish_primitive(g)
    }

    /// Ends a number or literal before a byte that cannot continue it.
    fn end_primitive(&mut self, g: &Grammar) -> bool {
        let syntax = if self.lex.kind == LexKind::Num {
            self.lex.syntax
        } else {
            g.literal_syntax
        };
        if !g.dfa(syntax).is_final(self.lex.core.syn) {
            return false;
        }
        self.finish_primitive(g)
    }

    fn primitive_result(&self, g: &Grammar, o: &Obl) -> bool {
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
    fn lexeme_text(&self) -> &[u8] {
        &self.text[(self.lex.text_start as usize).min(self.text.len())..]
    }

    fn finish_primitive(&mut self, g: &Grammar) -> bool {
        let t = self.top();
        let f = self.frames[t];
        for i in f.slot_start..f.slot_end {
            let mut o = self.obls[i as usize];
            o.result = self.primitive_result(g, &o);
            self.set_obl(i as usize, o);
        }
        let hash = if g.needs_hash {
            self.primitive_hash()
        } else {
            (0, 0)
        };
        self.set_lex(Lex::default());
        self.complete_value(g, t, hash)
    }

    /// The value hash of the primitive just lexed: equal JSON values hash equally
    /// (`1.0` and `1e0` as `1`; strings by their decoded content).
    fn primitive_hash(&self) -> Hash2 {
        match self.lex.kind {
            LexKind::Str => fin(TAG_STR, self.lex.hash, self.lex.hash2),
            LexKind::Num => {
                let text = std::str::from_utf8(self.lexeme_text()).unwrap_or("");
                let canon = match Decimal::from_json_text(text) {
                    Ok(d) => d.to_canonical_string(),
                    Err(_) => text.to_string(),
                };
                let (a, b) = hash_bytes(canon.as_bytes());
                fin(TAG_NUM, a, b)
            }
            _ => {
                let (a, b) = hash_bytes(self.lexeme_text());
                fin(TAG_LIT, a, b)
            }
        }
    }

    /// The member or item of frame `t` is complete; its obligations hold their results and
    /// `hash` is its value hash (when the grammar hashes values).
    fn complete_value(&mut self, g: &Grammar, t: usize, hash: Hash2) -> bool {
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
        if g.needs_hash {
            match f.kind {
                FrameKind::Array => {
                    let dup = self.items[f.items_start as usize..]
                        .iter()
                        .any(|&(d, h)| d == f.depth && h == hash);
                    if dup {
                        for li in f.leaf_start..f.leaf_end {
                            let mut leaf = self.leaves[li as usize];
                            if let LeafSpec::Array(s) = leaf.spec
                                && leaf.alive
                                && g.arr_specs[s as usize].unique
                            {
                                leaf.alive = false;
                                self.set_leaf(li as usize, leaf);
                            }
                        }
                    }
                    self.journal.push(Undo::Items(self.items.len() as u32));
                    self.items.push((f.depth, hash));
                    f.acc = (
                        mix64(f.acc.0.wrapping_mul(0x100_0000_01b3) ^ hash.0),
                        mix64(f.acc.1.rotate_left(17) ^ hash.1),
                    );
                }
                FrameKind::Object => {
                    let (k, v) = (f.member_key, hash);
                    f.acc.0 = f.acc.0.wrapping_add(mix64(k.0 ^ mix64(v.0)));
                    f.acc.1 = f
                        .acc
                        .1
                        .wrapping_add(mix64(k.1.wrapping_add(mix64(v.1 ^ 0xa5))));
                }
                FrameKind::Document => {}
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
        self.frame_viable(g, t)
    }

    fn close_container(&mut self, g: &Grammar) -> bool {
        let t = self.top();
        let f = self.frames[t];
        for i in f.obl_start..f.obl_end {
            let mut o = self.obls[i as usize];
            o.result = !o.failed && self.eval_final(g, &o);
            self.set_obl(i as usize, o);
        }
        let hash = match f.kind {
            FrameKind::Array => fin(TAG_ARR, f.acc.0, f.acc.1),
            _ => fin(TAG_OBJ, f.acc.0, f.acc.1),
        };
        self.journal.push(Undo::PoppedFrame(f));
        self.frames.pop();
        self.complete_value(g, self.top(), hash)
    }

    // ----- objects ---------------------------------------------------------------------------

    fn key_start(&mut self, g: &Grammar) -> bool {
        let t = self.top();
        let mut f = self.frames[t];
        f.phase = Phase::ObjKey;
        self.set_frame(t, f);
        for li in f.leaf_start..f.leaf_end {
            let mut leaf = self.leaves[li as usize];
            if let LeafSpec::Object(s) = leaf.spec
                && leaf.alive
            {
                leaf.key_state = g.dfa(g.obj_specs[s as usize].key_dfa).start();
                self.set_leaf(li as usize, leaf);
            }
        }
        let core = Core {
            syn: g.dfa(g.utf8).start(),
            ..Core::default()
        };
        let inst = self.new_inst();
        self.set_lex(Lex {
            kind: LexKind::Key,
            core,
            hash: FNV0,
            hash2: HASH2_SEED,
            text_start: 0,
            inst,
            syntax: 0,
        });
        self.frame_viable(g, t)
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

    fn end_key(&mut self, g: &Grammar) -> bool {
        if !g.dfa(g.utf8).is_final(self.lex.core.syn) {
            return false;
        }
        let t = self.top();
        let f = self.frames[t];
        let hash = self.lex.hash;
        // Duplicate keys are rejected.
        if self.keys[f.keys_start as usize..]
            .iter()
            .any(|&(d, h)| d == f.depth && h == hash)
        {
            return false;
        }
        self.journal.push(Undo::Keys(self.keys.len() as u32));
        self.keys.push((f.depth, hash));
        let start = self.obls.len() as u32;
        self.journal.push(Undo::Obls(start));
        for li in f.leaf_start..f.leaf_end {
            let mut leaf = self.leaves[li as usize];
            let LeafSpec::Object(s) = leaf.spec else {
                continue;
            };
            if !leaf.alive {
                continue;
            }
            let spec = &g.obj_specs[s as usize];
            let dfa = g.dfa(spec.key_dfa);
            leaf.count = leaf.count.saturating_add(1);
            let mut written = None;
            let mut member = if leaf.key_state == DEAD {
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
                                written = Some(lit);
                                spec.lit_member[lit as usize]
                            }
                            None => spec.set_member[set_id as usize],
                        }
                    }
                }
            };
            if member.is_some() && leaf.next != NONE {
                match self.order_after(g, &leaf, spec, written, leaf.count as u64) {
                    Some(next) => leaf.next = next,
                    None => member = None,
                }
            }
            match member {
                None => leaf.alive = false,
                Some(n) => self.obls.push(new_obl(n, li, Role::Member, leaf.positive)),
            }
            self.set_leaf(li as usize, leaf);
        }
        let mut f = self.frames[t];
        f.phase = Phase::ObjColon;
        f.member_key = fin(TAG_STR, self.lex.hash, self.lex.hash2);
        f.slot_start = start;
        f.slot_end = self.obls.len() as u32;
        self.set_frame(t, f);
        self.set_lex(Lex::default());
        let mode = self.slot_mode(g, t);
        let mut f = self.frames[t];
        f.slot_mode = mode;
        self.set_frame(t, f);
        self.frame_viable(g, t)
    }

    // ----- lexeme-only walking ---------------------------------------------------------------

    #[inline]
    fn lw_push(&mut self, g: &Grammar, b: u8) -> bool {
        let lw = &mut self.lw;
        let node = *lw.path.last().expect("lexeme walker has a base");
        match lw.next[node as usize * 256 + b as usize] {
            REFUSED => false,
            UNSEEN => self.lw_learn(g, node, b),
            next => {
                lw.path.push(next);
                true
            }
        }
    }

    /// Works out (and records) the successor of walk node `node` by byte `b`.
    #[cold]
    fn lw_learn(&mut self, g: &Grammar, node: u32, b: u8) -> bool {
        let lw = &mut self.lw;
        let k = lw.idx.len();
        let at = node as usize;
        lw.cores.clear();
        lw.cores.push(lw.node_core[at]);
        lw.states.clear();
        lw.states
            .extend_from_slice(&lw.node_states[at * k..(at + 1) * k]);
        let ok = self.lw_step(g, b);
        let lw = &mut self.lw;
        let next = if ok {
            lw.intern(lw.cores[1], k)
        } else {
            REFUSED
        };
        lw.next[at * 256 + b as usize] = next;
        if ok {
            lw.path.push(next);
        }
        ok
    }

    /// One byte from the single node in `cores` and `states`: pushes the successor there and
    /// returns true, or returns false and leaves them.
    fn lw_step(&mut self, g: &Grammar, b: u8) -> bool {
        let mut core = *self.lw.cores.last().expect("lexeme walker has a base");
        let needed_only = needed_only(g, !self.lw.is_str);
        let (out, n) = match decode(&mut core, b, needed_only) {
            Decoded::Reject | Decoded::End => return false,
            Decoded::Pending => {
                if !self.lw_escape_viable(g, &core) {
                    return false;
                }
                ([0u8; 4], 0)
            }
            Decoded::Bytes(out, n) => (out, n),
        };
        if n > 0 && !feed_core(g, &mut core, &out[..n]) {
            return false;
        }
        let lw = &mut self.lw;
        let k = lw.idx.len();
        let base = lw.states.len() - k;
        for j in 0..k {
            let s = lw.states[base + j];
            let next = if s == DEAD || n == 0 {
                s
            } else {
                g.dfa(lw.dfas[j]).run(s, &out[..n])
            };
            lw.states.push(next);
        }
        let ok = self.lw_top_viable(g, &core);
        if ok {
            self.lw.cores.push(core);
        } else {
            self.lw.states.truncate(base + k);
        }
        ok
    }

    /// Whether the walker's top states (with `core`) leave the string or key viable.
    fn lw_top_viable(&mut self, g: &Grammar, core: &Core) -> bool {
        if self.lw.is_str {
            return self.lw_slot_viable(g, core);
        }
        let lw = &self.lw;
        let k = lw.idx.len();
        let top = lw.states.len() - k;
        let universal = (0..k).all(|j| {
            let s = lw.states[top + j];
            s != DEAD && self.lw_key_universal(g, j, s)
        });
        if universal {
            return true;
        }
        // The frame is fixed during a walk, so its viability depends on the key states alone;
        // many prefixes share them (say every key no property name starts with).
        if let Some(&ok) = lw.key_memo.get(&lw.states[top..]) {
            return ok;
        }
        let ok = self.frame_viable_keys(g, self.top(), &DeadSinks::NONE, true);
        let tuple: Box<[u32]> = self.lw.states[top..].into();
        self.lw.key_memo.insert(tuple, ok);
        ok
    }

    /// [`State::escape_viable`] for the walker: `core` has the unfinished escape.
    fn lw_escape_viable(&mut self, g: &Grammar, core: &Core) -> bool {
        if !g.dfa(g.utf8).is_final(core.syn) {
            return false;
        }
        let k = self.lw.idx.len();
        let base = self.lw.states.len() - k;
        let needed_only = needed_only(g, !self.lw.is_str);
        let (outcomes, count) = self.escapes.outcomes(
            g,
            core,
            needed_only,
            &self.lw.dfas,
            &self.lw.states[base..base + k],
        );
        let mut after = *core;
        after.esc = 0;
        after.count += 1;
        for c in 0..count {
            self.lw
                .states
                .extend_from_slice(&outcomes[c * k..(c + 1) * k]);
            let ok = self.lw_top_viable(g, &after);
            self.lw.states.truncate(base + k);
            if ok {
                return true;
            }
        }
        false
    }

    fn lw_key_universal(&self, g: &Grammar, j: usize, state: u32) -> bool {
        let leaf = &self.leaves[self.lw.idx[j] as usize];
        let LeafSpec::Object(s) = leaf.spec else {
            return false;
        };
        self.key_universal(g, leaf, &g.obj_specs[s as usize], state)
    }

    /// `slot_viable` over the walker's top states.
    fn lw_slot_viable(&mut self, g: &Grammar, core: &Core) -> bool {
        let lw = &self.lw;
        if lw.mode == Mode::Free || !lw.some {
            return true;
        }
        let k = lw.idx.len();
        let top = &lw.states[lw.states.len() - k..];
        let pending = u64::from(core.esc != 0);
        let entry_ok = |j: usize| {
            let s = top[j];
            s != DEAD
                && (lw.max[j] == u64::MAX || {
                    let need = match &g.min_chars[lw.dfas[j] as usize] {
                        Some(mc) => mc[g.dfa(lw.dfas[j]).index(s)] as u64,
                        None => 0,
                    };
                    core.count as u64 + pending + need <= lw.max[j]
                })
        };
        // Bit `j`: entry `j` can no longer pass (entries past 64 only count in `dead`).
        let mut dead_bits = 0u64;
        let mut dead = 0;
        for j in 0..k {
            if !entry_ok(j) {
                dead += 1;
                if j < 64 {
                    dead_bits |= 1 << j;
                }
            }
        }
        // Failed obligations are not tracked: in `All` mode one would already have made the
        // slot unviable.
        if lw.mode == Mode::All || dead == 0 && !lw.failed {
            return dead == 0;
        }
        if dead == k {
            return false;
        }
        let memo = k <= 64;
        if memo && lw.slot_last.0 == dead_bits {
            return lw.slot_last.1;
        }
        if memo && let Some(&ok) = lw.slot_memo.get(&dead_bits) {
            self.lw.slot_last = (dead_bits, ok);
            return ok;
        }
        // As `slot_viable`: the frame's formula decides, with the leaves of the obligations
        // that can no longer pass taken as dead.
        let t = self.top();
        let f = &self.frames[t];
        let slot_start = f.slot_start;
        let slot = &self.obls[f.slot_start as usize..f.slot_end as usize];
        let is_dead = |i: usize| {
            slot[i].failed
                || lw
                    .idx
                    .iter()
                    .position(|&x| x == slot_start + i as u32)
                    .is_some_and(|j| !entry_ok(j))
        };
        let ok = self.frame_viable_keys(g, t, &DeadSinks::some(slot, &is_dead), false);
        if memo {
            self.lw.slot_memo.insert(dead_bits, ok);
            self.lw.slot_last = (dead_bits, ok);
        }
        ok
    }

    // ----- viability -------------------------------------------------------------------------

    /// The mode of frame `t`'s current slot.
    fn slot_mode(&self, g: &Grammar, t: usize) -> Mode {
        let f = &self.frames[t];
        if f.mode == Mode::Free {
            return Mode::Free;
        }
        let slot = &self.obls[f.slot_start as usize..f.slot_end as usize];
        if !slot
            .iter()
            .any(|o| matches!(o.role, Role::Member | Role::Item | Role::Root))
        {
            return Mode::Free;
        }
        if f.kind == FrameKind::Document {
            return Mode::All;
        }
        // Free if the frame survives every sink leaf dying.
        let dead = DeadSinks::all(slot);
        if self.frame_viable_keys(g, t, &dead, false) {
            return Mode::Free;
        }
        let essential = self.obls[f.obl_start as usize..f.obl_end as usize]
            .iter()
            .all(|o| o.failed || g.programs[o.prog as usize].all_essential);
        if f.mode == Mode::All && essential {
            Mode::All
        } else {
            Mode::Any
        }
    }

    fn slot_viable(&self, g: &Grammar, t: usize) -> bool {
        let f = &self.frames[t];
        let mode = f.slot_mode;
        if mode == Mode::Free {
            return true;
        }
        let slot = &self.obls[f.slot_start as usize..f.slot_end as usize];
        let alive = |o: &Obl| !o.failed && self.can_pass_state(g, o, o.state, &self.lex.core);
        let mut any = false;
        let mut all = true;
        for o in slot.iter().filter(|o| o.role != Role::Contains) {
            let ok = alive(o);
            any |= ok;
            all &= ok;
        }
        if all {
            return true;
        }
        if mode == Mode::All || !any {
            return false;
        }
        // Some obligations can no longer pass: whether the frame survives their loss is the
        // frame's formula to say (`{"properties": {"a": P}, "anyOf": [...]}` needs P to pass
        // even though the `anyOf` branches accept any value of `a`).
        let dead = |i: usize| !alive(&slot[i]);
        self.frame_viable_keys(g, t, &DeadSinks::some(slot, &dead), false)
    }

    /// Whether a primitive obligation in DFA state `state` can still pass.
    fn can_pass_state(&self, g: &Grammar, o: &Obl, state: u32, core: &Core) -> bool {
        if state == DEAD {
            return false;
        }
        if self.lex.kind == LexKind::Str {
            let lexer = &g.lexers[o.lexer as usize];
            if let Some(max) = lexer.max_len {
                let need = match &g.min_chars[lexer.dfa as usize] {
                    Some(mc) => mc[g.dfa(lexer.dfa).index(state)] as u64,
                    None => 0,
                };
                let pending = u64::from(core.esc != 0);
                return core.count as u64 + pending + need <= max;
            }
        }
        true
    }

    fn frame_viable(&self, g: &Grammar, t: usize) -> bool {
        self.frame_viable_keys(g, t, &DeadSinks::NONE, false)
    }

    /// Frame viability with `dead` leaves forced dead; with `walker`, object leaves take their
    /// key states from the lexeme walker's top.
    fn frame_viable_keys(&self, g: &Grammar, t: usize, dead: &DeadSinks<'_>, walker: bool) -> bool {
        let f = &self.frames[t];
        if f.kind == FrameKind::Document || f.mode == Mode::Free {
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
            let ok = !o.failed
                && self
                    .eval(g, o, |li| {
                        let ks = if walker { self.lw_key_state(li) } else { None };
                        self.leaf_tri(g, li, f, dead, o, ks)
                    })
                    .0;
            any |= ok;
            all &= ok;
        }
        if !some {
            return true;
        }
        if f.mode == Mode::All { all } else { any }
    }

    fn lw_key_state(&self, li: u32) -> Option<u32> {
        let k = self.lw.idx.len();
        let j = self.lw.idx.iter().position(|&x| x == li)?;
        Some(self.lw.states[self.lw.states.len() - k + j])
    }

    fn leaf_tri(
        &self,
        g: &Grammar,
        li: u32,
        f: &Frame,
        dead: &DeadSinks<'_>,
        o: &Obl,
        key_state: Option<u32>,
    ) -> Tri {
        let leaf = &self.leaves[li as usize];
        match leaf.spec {
            LeafSpec::KeySeen { leaf: l, lit } => {
                let seen = self.seen(&self.leaves[(o.leaf_base + l) as usize], lit);
                (true, !seen)
            }
            _ if !leaf.alive || dead.contains(li) => (false, true),
            LeafSpec::Object(s) => {
                let spec = &g.obj_specs[s as usize];
                if spec.max_props.is_some_and(|m| m < spec.min_props) {
                    return (false, true);
                }
                let mut count = leaf.count as u64;
                if f.phase == Phase::ObjKeyNext {
                    count += 1;
                }
                // A key being lexed, or announced by `,`: some key not seen yet must still be
                // possible from where the key's text is.
                if matches!(f.phase, Phase::ObjKey | Phase::ObjKeyNext) {
                    let ks = if f.phase == Phase::ObjKey {
                        key_state.unwrap_or(leaf.key_state)
                    } else {
                        g.dfa(spec.key_dfa).start()
                    };
                    if ks == DEAD {
                        return (false, true);
                    }
                    let dfa = g.dfa(spec.key_dfa);
                    let nlit = spec.lits.len();
                    let row = spec.reach_row(dfa, ks);
                    let mut ok = spec.nonlit_reachable(dfa, ks);
                    if leaf.next != NONE {
                        // Held to the schema's order: some key reachable from here must also
                        // leave the leaf a way to complete.
                        let after = leaf.count as u64 + 1;
                        ok = ok && self.nonlit_in_order(g, leaf, spec)
                            || self.some_literal(row, leaf, nlit, |lit| {
                                self.order_after(g, leaf, spec, Some(lit), after).is_some()
                            });
                    } else if !ok {
                        ok = self.some_literal(row, leaf, nlit, |_| true);
                    }
                    if !ok {
                        return (false, true);
                    }
                    if f.phase == Phase::ObjKey {
                        count += 1;
                    }
                }
                if let Some(max) = spec.max_props {
                    let mut missing = spec
                        .required
                        .iter()
                        .filter(|&&r| !self.seen(leaf, r))
                        .count() as u64;
                    if !spec.dependent_required.is_empty() {
                        // Properties required by keys already written count too (once).
                        let mut more: Vec<u32> = Vec::new();
                        for (k, deps) in &spec.dependent_required {
                            if !self.seen(leaf, *k) {
                                continue;
                            }
                            for &d in deps {
                                if !self.seen(leaf, d)
                                    && !spec.required.contains(&d)
                                    && !more.contains(&d)
                                {
                                    more.push(d);
                                }
                            }
                        }
                        missing += more.len() as u64;
                    }
                    // The key being lexed, or announced by `,`, may be a missing one.
                    let pending = u64::from(matches!(f.phase, Phase::ObjKey | Phase::ObjKeyNext))
                        .min(missing);
                    if count + missing - pending > max {
                        return (false, true);
                    }
                }
                (true, true)
            }
            LeafSpec::Array(s) => {
                let spec = &g.arr_specs[s as usize];
                let mut count = leaf.count as u64;
                let mut contains = leaf.contains as u64;
                if matches!(f.phase, Phase::ArrValue | Phase::ArrInValue) {
                    count += 1;
                    contains += u64::from(spec.contains_all);
                }
                if spec.max_items.is_some_and(|m| count > m) {
                    return (false, true);
                }
                if spec.max_contains.is_some_and(|m| contains > m) {
                    return (false, true);
                }
                // Room must remain for the items `minContains` and `minItems` still need (the
                // one being parsed may be one of them).
                if let Some(m) = spec.max_items
                    && ((leaf.contains as u64).saturating_add(m.saturating_sub(leaf.count as u64))
                        < spec.min_contains
                        || m < spec.min_items)
                {
                    return (false, true);
                }
                if spec.max_contains.is_some_and(|m| m < spec.min_contains) {
                    return (false, true);
                }
                (true, true)
            }
        }
    }

    /// Whether some literal set in `row` (a [`ObjSpec::reach`] row, `nlit` literals) that
    /// `leaf` has not seen satisfies `pred`.
    fn some_literal(
        &self,
        row: &[u64],
        leaf: &Leaf,
        nlit: usize,
        mut pred: impl FnMut(u32) -> bool,
    ) -> bool {
        let seen_words = nlit.div_ceil(64).max(1);
        for (wi, &word) in row.iter().enumerate() {
            let seen = if wi == 0 {
                leaf.seen
            } else if wi < seen_words {
                self.bits[(leaf.ext + wi as u32 - 1) as usize]
            } else {
                0
            };
            let mut w = word & !seen;
            while w != 0 {
                let lit = wi as u32 * 64 + w.trailing_zeros();
                w &= w - 1;
                if (lit as usize) < nlit && pred(lit) {
                    return true;
                }
            }
        }
        false
    }

    /// For an object leaf held to the schema's order ([`Leaf::next`]): its position after one
    /// more key, the literal `lit` or (`None`) a key that is none of its literals, with
    /// `count` keys written by then. `None` when that key leaves the leaf no way to complete:
    /// it comes before the position, passes over a property that is required (or that a
    /// written key depends on) and not written yet, or leaves too few keys for
    /// `minProperties`.
    fn order_after(
        &self,
        g: &Grammar,
        leaf: &Leaf,
        spec: &ObjSpec,
        lit: Option<u32>,
        count: u64,
    ) -> Option<u32> {
        let listed = spec.listed;
        let at = leaf.next;
        let next = match lit {
            Some(i) if i < listed => {
                if i < at {
                    return None;
                }
                i + 1
            }
            _ => listed,
        };
        let seen = |j: u32| lit == Some(j) || self.seen(leaf, j);
        // Listed properties the position moves past; those before `at` were checked when it
        // moved past them.
        let passed = |j: u32| j >= at && j < next && !seen(j);
        if spec.required.iter().any(|&r| passed(r)) {
            return None;
        }
        for (k, deps) in &spec.dependent_required {
            let own = lit == Some(*k);
            if (own || self.seen(leaf, *k))
                && deps
                    .iter()
                    .any(|&d| if own { d < next && !seen(d) } else { passed(d) })
            {
                return None;
            }
        }
        if spec.min_props > count {
            // With no key outside the literals allowed, only literals after the position and
            // those outside `properties` remain to be written.
            let dfa = g.dfa(spec.key_dfa);
            let start = dfa.start();
            if !spec.nonlit_reachable(dfa, start) {
                let row = spec.reach_row(dfa, start);
                let room = (next..spec.lits.len() as u32)
                    .filter(|&j| row[j as usize / 64] & (1 << (j % 64)) != 0 && !seen(j))
                    .count() as u64;
                if count + room < spec.min_props {
                    return None;
                }
            }
        }
        Some(next)
    }

    /// Whether the leaf's order (if it is held to one) lets its next key be one that is none
    /// of its literals.
    fn nonlit_in_order(&self, g: &Grammar, leaf: &Leaf, spec: &ObjSpec) -> bool {
        leaf.next == NONE
            || self
                .order_after(g, leaf, spec, None, leaf.count as u64 + 1)
                .is_some()
    }

    /// Whether every continuation of a key from `state`, in the key DFA of `leaf`'s `spec`,
    /// keeps a non-literal key acceptable to the leaf (its order included).
    fn key_universal(&self, g: &Grammar, leaf: &Leaf, spec: &ObjSpec, state: u32) -> bool {
        spec.key_universal(g.dfa(spec.key_dfa), state) && self.nonlit_in_order(g, leaf, spec)
    }

    fn leaf_final(&self, g: &Grammar, li: u32, o: &Obl) -> bool {
        let leaf = &self.leaves[li as usize];
        match leaf.spec {
            LeafSpec::KeySeen { leaf: l, lit } => {
                self.seen(&self.leaves[(o.leaf_base + l) as usize], lit)
            }
            _ if !leaf.alive => false,
            LeafSpec::Object(s) => {
                let spec = &g.obj_specs[s as usize];
                let count = leaf.count as u64;
                count >= spec.min_props
                    && spec.max_props.is_none_or(|m| count <= m)
                    && spec.required.iter().all(|&r| self.seen(leaf, r))
                    && spec.dependent_required.iter().all(|(k, deps)| {
                        !self.seen(leaf, *k) || deps.iter().all(|&d| self.seen(leaf, d))
                    })
            }
            LeafSpec::Array(s) => {
                let spec = &g.arr_specs[s as usize];
                let count = leaf.count as u64;
                let c = leaf.contains as u64;
                count >= spec.min_items
                    && spec.max_items.is_none_or(|m| count <= m)
                    && c >= spec.min_contains
                    && spec.max_contains.is_none_or(|m| c <= m)
            }
        }
    }

    fn eval_final(&self, g: &Grammar, o: &Obl) -> bool {
        self.eval(g, o, |li| {
            let v = self.leaf_final(g, li, o);
            (v, !v)
        })
        .0
    }

    fn eval(&self, g: &Grammar, o: &Obl, leaf: impl Fn(u32) -> Tri) -> Tri {
        let prog = &g.programs[o.prog as usize];
        let mut stack = smallstack::Stack::new();
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

/// The first byte of a shortest path from key-DFA `state` to the literal `lit`
/// (`Some(None)`: `state` is that literal already; `None`: unreachable).
fn toward_literal(
    dfa: &crate::dfa::Dfa,
    spec: &crate::compile::ObjSpec,
    state: u32,
    lit: u32,
) -> Option<Option<u8>> {
    let is_lit = |s: u32| {
        dfa.final_set_id(s)
            .is_some_and(|id| spec.literal_of(&dfa.match_sets()[id as usize]) == Some(lit))
    };
    if is_lit(state) {
        return Some(None);
    }
    let reps = dfa.class_reps();
    let mut seen = rustc_hash::FxHashSet::default();
    let mut queue = std::collections::VecDeque::new();
    seen.insert(state);
    for &b in &reps {
        let t = dfa.next(state, b);
        if t != DEAD && seen.insert(t) {
            queue.push_back((t, b));
        }
    }
    while let Some((s, first)) = queue.pop_front() {
        if is_lit(s) {
            return Some(Some(first));
        }
        for &b in &reps {
            let t = dfa.next(s, b);
            if t != DEAD && seen.insert(t) {
                queue.push_back((t, first));
            }
        }
    }
    None
}

/// Leaves treated as dead: the sinks of a slot's member and item obligations.
struct DeadSinks<'a> {
    slot: &'a [Obl],
    /// Which obligations of `slot` (by position) are dead.
    dead: &'a dyn Fn(usize) -> bool,
    /// Leaves taken as dead besides those sinks.
    leaves: &'a dyn Fn(u32) -> bool,
}

fn every(_: usize) -> bool {
    true
}

fn no_leaf(_: u32) -> bool {
    false
}

impl<'a> DeadSinks<'a> {
    /// No leaf is forced dead.
    const NONE: DeadSinks<'static> = DeadSinks {
        slot: &[],
        dead: &every,
        leaves: &no_leaf,
    };

    /// The sinks of every obligation of `slot`.
    fn all(slot: &'a [Obl]) -> Self {
        DeadSinks {
            slot,
            dead: &every,
            leaves: &no_leaf,
        }
    }

    /// The sinks of the obligations of `slot` that `dead` selects.
    fn some(slot: &'a [Obl], dead: &'a dyn Fn(usize) -> bool) -> Self {
        DeadSinks {
            slot,
            dead,
            leaves: &no_leaf,
        }
    }

    fn contains(&self, leaf: u32) -> bool {
        (self.leaves)(leaf)
            || self.slot.iter().enumerate().any(|(i, o)| {
                o.sink == leaf && matches!(o.role, Role::Member | Role::Item) && (self.dead)(i)
            })
    }
}

fn new_obl(node: NodeId, sink: u32, role: Role, positive: bool) -> Obl {
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
        positive,
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
            Stack {
                inline: [(false, false); 32],
                len: 0,
                spill: Vec::new(),
            }
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
            if self.len < 32 {
                self.inline[self.len]
            } else {
                self.spill.pop().unwrap_or_default()
            }
        }
    }
}

/// A code-point budget for string content and the closing range, when content is free.
type UniversalBudget = (Option<u32>, Option<(u32, u32)>);

impl Matcher {
    /// Whether every string content of `level` (see [`recognizer::CONTENT_LEVELS`]) keeps the
    /// current string or key viable: the code-point budget and, for strings, the closing range
    /// (see [`Split::StringContent`]).
    fn universal_budget(&self, level: u8) -> Option<UniversalBudget> {
        let st = &self.st;
        let g = &*self.g;
        if st.lex.core.esc != 0 || !g.dfa(g.utf8).is_final(st.lex.core.syn) {
            return None;
        }
        let f = &st.frames[st.top()];
        let count = st.lex.core.count as u64;
        let clamp = |x: u64| x.min(u32::MAX as u64) as u32;
        match st.lex.kind {
            LexKind::Str => {
                // Every live obligation must accept all content; failed ones stay failed.
                let slot = &st.obls[f.slot_start as usize..f.slot_end as usize];
                let mut budget: Option<u64> = None;
                // Where not every obligation must pass: (code points left, slot position).
                let mut limited: Vec<(u64, usize)> = Vec::new();
                // Where not every obligation must pass: those that some content fails.
                let mut narrow: Vec<usize> = Vec::new();
                let mut all_free = true;
                let mut live = 0;
                let mut lo = 0u64;
                let mut hi = u64::MAX;
                for (i, o) in slot.iter().enumerate() {
                    if o.failed {
                        continue;
                    }
                    live += 1;
                    let lexer = &g.lexers[o.lexer as usize];
                    let flags = g.universal_flags(lexer.dfa, o.state, level);
                    all_free &= flags.free;
                    lo = lo.max(lexer.min_len.saturating_sub(count));
                    if let Some(m) = lexer.max_len {
                        hi = hi.min(m.saturating_sub(count));
                    }
                    if o.role == Role::Contains || f.slot_mode == Mode::Free {
                        continue;
                    }
                    let exact = || g.dfa(lexer.dfa).string_budget(o.state, level);
                    let b = match lexer.max_len {
                        None if flags.live_all => continue,
                        Some(m) if flags.free => m.saturating_sub(count),
                        // A bounded repetition: longer content of the level fails it.
                        None if let Some(e) = exact() => e as u64,
                        // Some content fails it: only the frame's formula can let that pass.
                        _ if f.slot_mode != Mode::All => {
                            narrow.push(i);
                            continue;
                        }
                        _ => return None,
                    };
                    if f.slot_mode == Mode::All {
                        budget = Some(budget.map_or(b, |x| x.min(b)));
                    } else {
                        limited.push((b, i));
                    }
                }
                if !limited.is_empty() || !narrow.is_empty() {
                    budget = self.formula_budget(st.top(), &narrow, &mut limited)?;
                }
                // With value hashing the content matters after the quote (`uniqueItems`).
                // Tokens that close the string are spelled with any unescaped character.
                let close = (!g.needs_hash
                    && level_is_plain(level)
                    && (live == 0 || (f.slot_mode == Mode::All && all_free)))
                    .then(|| (clamp(lo), clamp(hi)));
                Some((budget.map(clamp), close))
            }
            LexKind::Key => {
                if f.mode == Mode::Free {
                    return Some((None, None));
                }
                // Leaves whose key language does not take every content (a leaf held to the
                // schema's order may refuse every key outside its literals).
                let narrow = |li: u32| {
                    let leaf = &st.leaves[li as usize];
                    let LeafSpec::Object(s) = leaf.spec else {
                        return false;
                    };
                    let spec = &g.obj_specs[s as usize];
                    leaf.alive
                        && (!spec
                            .key_levels(g.dfa(spec.key_dfa), leaf.key_state)
                            .live_at(level)
                            || !st.nonlit_in_order(g, leaf, spec))
                };
                if !(f.leaf_start..f.leaf_end).any(narrow) {
                    return Some((None, None));
                }
                // Content is still free when the frame survives every such leaf dying (a
                // closed object in one `anyOf` branch beside an open one).
                let survives = |gone: &dyn Fn(u32) -> bool| {
                    let dead = DeadSinks {
                        slot: &[],
                        dead: &every,
                        leaves: gone,
                    };
                    st.frame_viable_keys(g, st.top(), &dead, false)
                };
                if survives(&narrow) {
                    return Some((None, None));
                }
                // Else each such leaf must take an exact budget (`^[a-z]{1,64}$` as property
                // names), and the content's budget is the least room at which the frame no
                // longer survives the leaves with that room or less dying.
                let mut limited: Vec<(u32, u32)> = Vec::new();
                for li in (f.leaf_start..f.leaf_end).filter(|&li| narrow(li)) {
                    let leaf = &st.leaves[li as usize];
                    let LeafSpec::Object(s) = leaf.spec else {
                        return None;
                    };
                    let spec = &g.obj_specs[s as usize];
                    if !st.nonlit_in_order(g, leaf, spec) {
                        // What its content may be depends on the literals: walk it.
                        return None;
                    }
                    let room = spec.key_budget(g.dfa(spec.key_dfa), leaf.key_state, level)?;
                    limited.push((room, li));
                }
                limited.sort_unstable();
                for (k, &(room, _)) in limited.iter().enumerate() {
                    // Once per room: the leaves with this room die together.
                    if limited.get(k + 1).is_some_and(|&(r, _)| r == room) {
                        continue;
                    }
                    let gone = |li: u32| limited.iter().any(|&(r, l)| l == li && r <= room);
                    if !survives(&gone) {
                        return Some((Some(room), None));
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// The code points a string may still take in frame `t`, whatever its content, when not
    /// every obligation of the slot must pass. `narrow` are the obligations some content
    /// fails: the content is free only if the frame's formula survives them all failing
    /// (`None` otherwise). `limited` holds the room each length-limited obligation has left:
    /// longer content fails it, and the budget ends where the formula no longer survives those
    /// failures (`Some(None)`: it survives them all). Where it ends with some narrow obligation
    /// in the slot, whether longer content is refused depends on the content: `None`.
    fn formula_budget(
        &self,
        t: usize,
        narrow: &[usize],
        limited: &mut [(u64, usize)],
    ) -> Option<Option<u64>> {
        let st = &self.st;
        let f = &st.frames[t];
        let slot = &st.obls[f.slot_start as usize..f.slot_end as usize];
        let survives = |gone: &[(u64, usize)]| {
            let dead = |i: usize| {
                slot[i].failed || narrow.contains(&i) || gone.iter().any(|&(_, j)| j == i)
            };
            st.frame_viable_keys(&self.g, t, &DeadSinks::some(slot, &dead), false)
        };
        if !survives(&[]) {
            return None;
        }
        limited.sort_unstable();
        let mut k = 0;
        while k < limited.len() {
            let room = limited[k].0;
            let mut e = k;
            while e < limited.len() && limited[e].0 == room {
                e += 1;
            }
            if !survives(&limited[..e]) {
                // Longer content fails these obligations, and the formula does not survive
                // them failing together with every narrow one. But a narrow obligation fails
                // only on some content: on the rest (the `X` of `"abX"` for `const: "abXYZ"`
                // beside `const: "ab"`) it lives, and may carry the formula. Whether longer
                // content is refused then depends on what it is, so there is no budget.
                return narrow.is_empty().then_some(Some(room));
            }
            k = e;
        }
        Some(None)
    }

    /// The split of the vocabulary inside a string or key, for a mask kernel (see
    /// [`recognizer::Recognizer::split`]), writing the lexeme key for [`Split::Walk`] and for
    /// [`Split::StringContent`] below the top level.
    ///
    /// [`Split::StringContent`] says the string takes any content of a level up to a length:
    /// the budget comes from `maxLength` or from a bounded repetition (see
    /// [`crate::dfa::Dfa::string_budget`]). [`Split::KeyContent`] is a key that accepts any
    /// content spelled with only the escapes JSON needs ([`crate::KeyEscapes::Needed`]).
    pub fn split(&self, key: &mut Vec<u32>) -> Option<Split> {
        if !self.in_string() {
            return None;
        }
        let top = TOP_LEVEL;
        let is_key = self.st.lex.kind == LexKind::Key;
        // Largest sets first (see `LEVELS`).
        let found = LEVELS.into_iter().find_map(|level| {
            let found = self.universal_budget(level)?;
            // Keys at the top level are spelled with the escapes they may use, a set the
            // kernel does not count code points in.
            (!(is_key && level == top && found.0.is_some())).then_some((level, found))
        });
        if let Some((level, (budget, close))) = found {
            if level == top && is_key && self.g.options.key_escapes == KeyEscapes::Needed {
                return Some(Split::KeyContent);
            }
            if level != top {
                key.push(level as u32);
                self.lexeme_key(key);
            }
            return Some(Split::StringContent {
                budget,
                level,
                close: close.map(|(lo, hi)| Close { lo, hi }),
            });
        }
        // With value hashing a string may be ended on trial inside its content (see
        // `string_end_viable`), which the lexeme state does not capture: walk every token.
        if self.g.needs_hash && !is_key {
            return None;
        }
        key.push(u32::MAX);
        self.lexeme_key(key);
        Some(Split::Walk)
    }

    /// Writes the key of the lexeme state: equal keys accept the same tokens without `"`.
    fn lexeme_key(&self, key: &mut Vec<u32>) {
        let st = &self.st;
        let l = &st.lex;
        key.extend([l.kind as u32, l.core.esc as u32, l.core.uval, l.core.syn]);
        let t = st.top();
        let f = &st.frames[t];
        if l.kind == LexKind::Str {
            key.push(f.slot_mode as u32);
            let mut counted = false;
            for o in &st.obls[f.slot_start as usize..f.slot_end as usize] {
                let lexer = &self.g.lexers[o.lexer as usize];
                counted |= lexer.max_len.is_some();
                key.extend([o.role as u32, o.lexer, o.state, o.failed as u32]);
            }
            if counted {
                key.push(l.core.count);
            }
        } else {
            self.frame_key(t, key);
        }
    }

    /// Writes the state of frame `t`: header, obligations and leaves, indices made relative.
    fn frame_key(&self, t: usize, key: &mut Vec<u32>) {
        let st = &self.st;
        let f = &st.frames[t];
        key.extend([
            f.kind as u32,
            f.phase as u32,
            f.newlines as u32 | (f.spaces as u32) << 8,
            f.mode as u32 | (f.slot_mode as u32) << 4,
            f.root_ok as u32,
        ]);
        let parent_leaf_start = if t > 0 {
            st.frames[t - 1].leaf_start
        } else {
            0
        };
        key.push(f.obl_end - f.obl_start);
        for o in &st.obls[f.obl_start as usize..f.obl_end as usize] {
            key.extend([
                o.node.0,
                o.sink.wrapping_sub(parent_leaf_start),
                o.role as u32,
                o.prog,
                o.leaf_base.wrapping_sub(f.leaf_start),
                o.failed as u32 | (o.result as u32) << 1 | (o.positive as u32) << 2,
            ]);
        }
        key.push(f.leaf_end - f.leaf_start);
        for leaf in &st.leaves[f.leaf_start as usize..f.leaf_end as usize] {
            let spec = match leaf.spec {
                LeafSpec::Object(s) => s << 2,
                LeafSpec::Array(s) => s << 2 | 1,
                LeafSpec::KeySeen { leaf, lit } => (leaf << 16 | lit) << 2 | 2,
            };
            key.extend([
                spec,
                leaf.alive as u32 | (leaf.positive as u32) << 1,
                leaf.next,
                leaf.count,
                leaf.contains,
                leaf.seen as u32,
                (leaf.seen >> 32) as u32,
                leaf.key_state,
            ]);
            if leaf.ext != NONE
                && let LeafSpec::Object(s) = leaf.spec
            {
                let words = self.g.obj_specs[s as usize].lits.len().div_ceil(64) - 1;
                for w in &st.bits[leaf.ext as usize..leaf.ext as usize + words] {
                    key.extend([*w as u32, (*w >> 32) as u32]);
                }
            }
        }
        if self.g.needs_hash {
            key.extend([
                f.acc.0 as u32,
                (f.acc.0 >> 32) as u32,
                f.acc.1 as u32,
                (f.acc.1 >> 32) as u32,
                f.member_key.0 as u32,
                f.member_key.1 as u32,
            ]);
            for &(d, h) in &st.items[f.items_start as usize..] {
                if d == f.depth {
                    key.extend([h.0 as u32, (h.0 >> 32) as u32, h.1 as u32]);
                }
            }
        }
        if f.kind == FrameKind::Object {
            let start = key.len();
            key.push(0);
            let mut n = 0;
            for &(d, h) in &st.keys[f.keys_start as usize..] {
                if d == f.depth {
                    key.extend([h as u32, (h >> 32) as u32]);
                    n += 1;
                }
            }
            key[start] = n;
        }
    }

    /// Writes a key identifying the current state: equal keys allow exactly the same
    /// continuations.
    pub fn state_key(&self, key: &mut Vec<u32>) {
        let st = &self.st;
        for t in 0..st.frames.len() {
            self.frame_key(t, key);
            let f = &st.frames[t];
            key.push(f.slot_end - f.slot_start);
            if t + 1 < st.frames.len() {
                // The slot is the child's obligations, written with the child.
                continue;
            }
            for o in &st.obls[f.slot_start as usize..f.slot_end as usize] {
                key.extend([
                    o.node.0,
                    o.sink.wrapping_sub(f.leaf_start),
                    o.role as u32,
                    o.lexer,
                    o.state,
                    o.failed as u32 | (o.positive as u32) << 1,
                ]);
            }
        }
        let l = &st.lex;
        key.extend([l.kind as u32, l.core.esc as u32, l.core.uval, l.core.syn]);
        if l.kind == LexKind::Num {
            key.push(l.syntax);
        }
        let f = &st.frames[st.top()];
        if self.g.needs_hash {
            key.extend([l.hash as u32, (l.hash >> 32) as u32, l.hash2 as u32]);
            if matches!(l.kind, LexKind::Num | LexKind::Lit) {
                key.extend(st.lexeme_text().iter().map(|&b| b as u32));
            }
        }
        match l.kind {
            LexKind::Str => {
                let counted = st.obls[f.slot_start as usize..f.slot_end as usize]
                    .iter()
                    .any(|o| {
                        let lexer = &self.g.lexers[o.lexer as usize];
                        lexer.max_len.is_some() || lexer.min_len > 0
                    });
                if counted {
                    key.push(l.core.count);
                }
            }
            LexKind::Key => {
                let has_keys = st.keys[f.keys_start as usize..]
                    .iter()
                    .any(|&(d, _)| d == f.depth);
                if has_keys {
                    key.extend([l.hash as u32, (l.hash >> 32) as u32]);
                }
            }
            LexKind::Num if self.g.options.numbers.any_notation => {
                key.extend(st.lexeme_text().iter().map(|&b| b as u32));
            }
            _ => {}
        }
    }

    /// A short description of the state, for error messages.
    pub fn describe(&self) -> String {
        let st = &self.st;
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

impl Matcher {
    /// A short sequence of bytes that completes the document from here, if one is found within
    /// `max_len` bytes: the closers first (`"`, `]`, `}`), then the shortest way through each
    /// lexeme's DFA, then the shortest values for what is still required. The state is left
    /// unchanged. Used to end generation validly when a token budget runs out.
    pub fn completion(&mut self, max_len: usize) -> Option<Vec<u8>> {
        if self.st.lw.on {
            return None;
        }
        let mut out = Vec::new();
        let mut budget = 50_000usize;
        let found = self.complete_dfs(&mut out, max_len, &mut budget);
        self.pop_bytes(out.len());
        found.then_some(out)
    }

    fn complete_dfs(&mut self, out: &mut Vec<u8>, max_len: usize, budget: &mut usize) -> bool {
        let st = &self.st;
        if st.frames.len() == 1 && st.frames[0].phase == Phase::DocEnd && st.frames[0].root_ok {
            return true;
        }
        if self.is_accepting() && matches!(st.lex.kind, LexKind::Num | LexKind::Lit) {
            return true;
        }
        if out.len() >= max_len || *budget == 0 {
            return false;
        }
        let cands = self.completion_candidates();
        for b in cands {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            if self.try_push_byte(b) {
                out.push(b);
                if self.complete_dfs(out, max_len, budget) {
                    return true;
                }
                out.pop();
                self.pop_bytes(1);
            }
        }
        false
    }

    /// Candidate next bytes for [`Matcher::completion`], best first.
    fn completion_candidates(&self) -> Vec<u8> {
        let st = &self.st;
        let g = &*self.g;
        let f = &st.frames[st.top()];
        let mut c: Vec<u8> = Vec::with_capacity(8);
        let first_obl = || {
            st.obls[f.slot_start as usize..f.slot_end as usize]
                .iter()
                .find(|o| !o.failed && o.role != Role::Contains)
        };
        // Pretty-printed, a closing bracket after a member or item goes on a line of its own.
        let pretty = g.options.whitespace == Whitespace::Pretty;
        let closers = |c: &mut Vec<u8>| match f.phase {
            Phase::ObjInValue => c.extend([if pretty { b'\n' } else { b'}' }, b',']),
            Phase::ArrInValue => c.extend([if pretty { b'\n' } else { b']' }, b',']),
            _ => {}
        };
        match st.lex.kind {
            LexKind::Str => {
                match st.lex.core.esc {
                    0 => {}
                    1 => c.push(b'n'),
                    6 => c.push(b'\\'),
                    7 => c.push(b'u'),
                    8 => c.push(b'd'),
                    9 => c.push(b'c'),
                    _ => c.push(b'0'),
                }
                if let Some(o) = first_obl() {
                    let lexer = &g.lexers[o.lexer as usize];
                    let dfa = g.dfa(lexer.dfa);
                    if dfa.is_final(o.state) && st.lex.core.count as u64 >= lexer.min_len {
                        c.push(b'"');
                    }
                    if let Some(b) = dfa.toward_final(o.state) {
                        c.push(b);
                    }
                } else {
                    c.push(b'"');
                }
                c.extend([b'a', b'0']);
            }
            LexKind::Key => {
                // Head for a required property not written yet.
                for li in f.leaf_start..f.leaf_end {
                    let leaf = &st.leaves[li as usize];
                    let LeafSpec::Object(s) = leaf.spec else {
                        continue;
                    };
                    if !leaf.alive || leaf.key_state == DEAD {
                        continue;
                    }
                    let spec = &g.obj_specs[s as usize];
                    for &r in &spec.required {
                        if st.seen(leaf, r) {
                            continue;
                        }
                        match toward_literal(g.dfa(spec.key_dfa), spec, leaf.key_state, r) {
                            Some(Some(b)) => c.push(b),
                            Some(None) => c.push(b'"'),
                            None => {}
                        }
                    }
                }
                c.push(b'"');
                for li in f.leaf_start..f.leaf_end {
                    let leaf = &st.leaves[li as usize];
                    if let LeafSpec::Object(s) = leaf.spec
                        && leaf.alive
                        && leaf.key_state != DEAD
                        && let Some(b) = g
                            .dfa(g.obj_specs[s as usize].key_dfa)
                            .toward_final(leaf.key_state)
                    {
                        c.push(b);
                        break;
                    }
                }
                c.extend([b'a', b'b', b'c']);
            }
            LexKind::Num | LexKind::Lit => {
                if let Some(bytes) = self.canonical_steps() {
                    if bytes.is_empty() {
                        closers(&mut c);
                    }
                    c.extend(bytes);
                } else if let Some(o) = first_obl() {
                    let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
                    if dfa.is_final(o.state) {
                        closers(&mut c);
                    }
                    if let Some(b) = dfa.toward_final(o.state) {
                        c.push(b);
                    }
                } else {
                    closers(&mut c);
                }
                c.extend([b'0', b'1']);
            }
            LexKind::None => {
                if pretty {
                    // The whitespace the gap needs before its next byte: the rest of an
                    // indentation or the space after `:`, else a line break where the next
                    // byte cannot do without one.
                    if f.newlines != 0 || f.phase == Phase::ObjValue {
                        c.push(b' ');
                    } else if matches!(
                        f.phase,
                        Phase::ObjNext | Phase::ArrNext | Phase::ObjKeyNext | Phase::ArrValue
                    ) {
                        c.push(b'\n');
                    }
                }
                self.gap_candidates(&mut c);
                if pretty && matches!(f.phase, Phase::ObjOpen | Phase::ArrOpen) {
                    c.push(b'\n');
                }
            }
        }
        c.dedup();
        c
    }

    /// For a number held to its canonical spelling, the bytes that take it one step closer to
    /// a value the first live obligation takes ([`Grammar::canonical_live`]); empty when it
    /// may end here. `None` where that does not apply.
    fn canonical_steps(&self) -> Option<Vec<u8>> {
        let st = &self.st;
        let g = &*self.g;
        if st.lex.kind != LexKind::Num || st.lex.syntax != g.canonical_syntax {
            return None;
        }
        let f = &st.frames[st.top()];
        let (o, table) = st.obls[f.slot_start as usize..f.slot_end as usize]
            .iter()
            .filter(|o| !o.failed && o.role != Role::Contains)
            .find_map(|o| Some((o, g.canonical_live[o.lexer as usize].as_ref()?)))?;
        let syntax = g.dfa(g.canonical_syntax);
        let dfa = g.dfa(g.lexers[o.lexer as usize].dfa);
        let at =
            |s: u32, t: u32| table[syntax.state_index(s) * dfa.num_states() + dfa.state_index(t)];
        let here = at(st.lex.core.syn, o.state);
        if here == 0 || here == NO_PATH {
            return Some(Vec::new());
        }
        let steps = NUMBER_BYTES.iter().copied().filter(|&b| {
            let (s, t) = (syntax.next(st.lex.core.syn, b), dfa.next(o.state, b));
            s != DEAD && t != DEAD && at(s, t) == here - 1
        });
        Some(steps.collect())
    }

    /// Candidate structural bytes for [`Matcher::completion`] between tokens, best first.
    fn gap_candidates(&self, c: &mut Vec<u8>) {
        let st = &self.st;
        let g = &*self.g;
        let f = &st.frames[st.top()];
        let first_obl = || {
            st.obls[f.slot_start as usize..f.slot_end as usize]
                .iter()
                .find(|o| !o.failed && o.role != Role::Contains)
        };
        match f.phase {
            Phase::ObjOpen => c.extend([b'}', b'"']),
            Phase::ObjNext => c.extend([b'}', b',']),
            Phase::ObjKeyNext => c.push(b'"'),
            Phase::ObjColon => c.push(b':'),
            Phase::ArrNext => c.extend([b']', b',']),
            Phase::DocStart | Phase::ObjValue | Phase::ArrOpen | Phase::ArrValue => {
                if f.phase == Phase::ArrOpen {
                    c.push(b']');
                }
                let mut kinds: Vec<u8> = Vec::new();
                let tmpl = if f.kind == FrameKind::Array {
                    // Item obligations are made when the item starts: use the array's
                    // item schema if there is one.
                    st.leaves[f.leaf_start as usize..f.leaf_end as usize]
                        .iter()
                        .find_map(|l| match l.spec {
                            LeafSpec::Array(s) if l.alive => {
                                let a = &g.arr_specs[s as usize];
                                a.prefix.get(l.count as usize).copied().or(a.items)
                            }
                            _ => None,
                        })
                } else {
                    first_obl().map(|o| o.node)
                }
                .map(|n| g.template(n));
                match tmpl {
                    Some(t) => {
                        let lex = |k: Kind| t.lexers[k as usize] != EMPTY_LEXER;
                        if lex(Kind::String) {
                            kinds.push(b'"');
                        }
                        if lex(Kind::Null) {
                            kinds.push(b'n');
                        }
                        if lex(Kind::Number) {
                            kinds.extend([b'0', b'1', b'-']);
                        }
                        if lex(Kind::Boolean) {
                            kinds.extend([b't', b'f']);
                        }
                        if t.array.is_some() {
                            kinds.push(b'[');
                        }
                        if t.object.is_some() {
                            kinds.push(b'{');
                        }
                    }
                    None => kinds.extend([b'"', b'0', b'n', b'{', b'[']),
                }
                c.extend(kinds);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;
    use serde_json::json;

    fn complete(schema: serde_json::Value, prefix: &str) -> String {
        complete_with(&Options::generation(), schema, prefix)
    }

    fn complete_with(options: &Options, schema: serde_json::Value, prefix: &str) -> String {
        let g = Arc::new(Grammar::compile(&schema, options).unwrap());
        let mut m = Matcher::new(g);
        m.push_bytes(prefix.as_bytes()).unwrap();
        let before = m.len();
        let tail = m.completion(256).expect("a completion");
        assert_eq!(m.len(), before, "state unchanged");
        m.push_bytes(&tail).unwrap();
        assert!(m.is_accepting());
        String::from_utf8(tail).unwrap()
    }

    #[test]
    fn completions_close_what_is_open() {
        let countries = json!({"type": "array", "items": {"type": "object",
            "properties": {"name": {"type": "string"}, "continent": {"type": "string"}},
            "required": ["name", "continent"]}});
        assert_eq!(
            complete(countries.clone(), r#"[{"name":"Nig"#),
            r#"","continent":""}]"#
        );
        assert_eq!(
            complete(
                countries.clone(),
                r#"[{"name":"Nigeria","continent":"Africa"},"#
            ),
            r#"{"name":"","continent":""}]"#
        );
        assert_eq!(complete(countries, "["), "]");
        let bounded = json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 10},
            "s": {"type": "string", "minLength": 3}}, "required": ["n", "s"]});
        let tail = complete(bounded, "{");
        assert!(tail.contains("\"n\":1"), "{tail}");
    }

    /// Index of the first byte of `text` refused after `prefix` (`None`: all accepted), with
    /// the walker on when `walker`.
    fn refused_at(
        schema: &serde_json::Value,
        prefix: &[u8],
        text: &[u8],
        walker: bool,
    ) -> Option<usize> {
        let options = Options::generation().key_escapes(KeyEscapes::Any);
        refused_with(&options, schema, prefix, text, walker)
    }

    fn refused_with(
        options: &Options,
        schema: &serde_json::Value,
        prefix: &[u8],
        text: &[u8],
        walker: bool,
    ) -> Option<usize> {
        let g = Arc::new(Grammar::compile(schema, options).unwrap());
        let mut m = Matcher::new(g);
        m.push_bytes(prefix).unwrap();
        m.set_lexeme_only(walker);
        m.push_bytes(text).err()
    }

    /// A property's own schema still binds its value when a combinator beside it accepts any
    /// value for that property: `anyOf` of `required` lists has member obligations that never
    /// fail, so "some obligation can pass" is not enough.
    #[test]
    fn a_combinator_beside_properties_does_not_free_their_values() {
        let schema = json!({"type": "object",
            "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}},
            "allOf": [{"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}]});
        for walker in [false, true] {
            assert_eq!(refused_at(&schema, br#"{"a":"x"#, b" y", walker), Some(0));
            assert_eq!(refused_at(&schema, br#"{"a":"x"#, b"y", walker), None);
        }
        let numbers = json!({"properties": {"n": {"type": "integer", "maximum": 5}},
            "anyOf": [{"required": ["n"]}, {"required": ["m"]}]});
        assert_eq!(refused_at(&numbers, br#"{"n":"#, b"12", false), Some(1));
    }

    /// A length limit binds in the lexeme split too: free obligations from `dependencies`
    /// beside a `maxLength` property do not make its content unbounded.
    #[test]
    fn a_length_limit_beside_free_obligations_is_left_to_the_walk() {
        let schema = json!({"properties": {"s": {"type": "string", "maxLength": 3}},
            "dependencies": {"x": {"not": {"required": ["y"]}}}});
        let g = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
        let mut m = Matcher::new(g);
        m.push_bytes(br#"{"s":"ab"#).unwrap();
        let split = m.split(&mut Vec::new());
        assert!(
            !matches!(split, Some(Split::StringContent { budget: None, .. })),
            "{split:?}"
        );
        for walker in [false, true] {
            assert_eq!(refused_at(&schema, br#"{"s":"ab"#, b"cd", walker), Some(1));
        }
    }

    /// A repeated `enum` string in a `uniqueItems` array is refused at its last content byte
    /// (it can only end there), not left as a dead end before its closing quote; a repeat
    /// that can still grow into another value is not refused early.
    #[test]
    fn a_repeated_enum_string_is_refused_where_it_must_end() {
        let tags = json!({"type": "array", "uniqueItems": true,
            "items": {"enum": ["work", "travel", "family"]}});
        assert_eq!(refused_at(&tags, b"[\"work\",\"", b"travel\"", false), None);
        assert_eq!(
            refused_at(&tags, b"[\"work\",\"travel\",\"", b"travel", false),
            Some(5)
        );
        assert_eq!(
            refused_at(&tags, b"[\"work\",\"travel\",\"", b"trave", false),
            None
        );
        let event = json!({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"enum": ["work", "travel", "family"]},
                     "maxItems": 3, "uniqueItems": true}}});
        assert_eq!(
            refused_with(
                &Options::generation(),
                &event,
                b"{\"tags\":[\"work\",\"travel\",\"t",
                b"ravel",
                false
            ),
            Some(4)
        );
        let prefixes = json!({"type": "array", "uniqueItems": true,
            "items": {"enum": ["ab", "abc"]}});
        assert_eq!(refused_at(&prefixes, b"[\"ab\",\"", b"ab", false), None);
        assert_eq!(
            refused_at(&prefixes, b"[\"ab\",\"", b"ab\"", false),
            Some(2)
        );
        assert_eq!(refused_at(&prefixes, b"[\"ab\",\"", b"abc\"]", false), None);
    }

    /// What only the end of a literal decides is checked as soon as the literal is known
    /// (from its first letter); the first item of an array counts against `maxItems` when it
    /// starts.
    #[test]
    fn literals_and_first_items_are_checked_when_they_start() {
        let unique = json!({"uniqueItems": true});
        assert_eq!(refused_at(&unique, b"[null,", b"n", false), Some(0));
        assert_eq!(refused_at(&unique, b"[null,", b"true", false), None);
        let none = json!({"contains": true, "minContains": 0, "maxContains": 0});
        assert_eq!(refused_at(&none, b"[", b"f", false), Some(0));
        let empty = json!({"maxItems": 0});
        assert_eq!(refused_at(&empty, b"[", b"1", false), Some(0));
        assert_eq!(refused_at(&empty, b"[", b"[", false), Some(0));
        assert_eq!(refused_at(&empty, b"[", b"]", false), None);
        let room = json!({"contains": {"const": 4}, "maxItems": 1});
        assert_eq!(refused_at(&room, b"[", b"null", false), Some(0));
        assert_eq!(refused_at(&room, b"[", b"4]", false), None);
    }

    #[test]
    fn escapes_start_only_when_some_code_point_can_follow() {
        let closed = json!({"type": "object", "properties": {"ab": {"type": "integer"}},
            "required": ["ab"], "additionalProperties": false});
        let one_char = json!({"const": "é"});
        let letters = json!({"type": "string", "pattern": "^[a-z]+$"});
        let astral = json!({"const": "😀"});
        let short = json!({"type": "string", "maxLength": 1});
        for walker in [false, true] {
            let at = |schema: &serde_json::Value, prefix: &str, text: &str| {
                refused_at(schema, prefix.as_bytes(), text.as_bytes(), walker)
            };
            assert_eq!(at(&closed, "{\"", r"\u0061b"), None);
            assert_eq!(
                at(&closed, "{\"", r"\uf"),
                Some(2),
                "no key starts in U+F000.."
            );
            assert_eq!(at(&closed, "{\"", r"\u0062"), Some(5));
            assert_eq!(at(&closed, "{\"", r"\n"), Some(1));
            assert_eq!(at(&closed, "{\"ab", r"\"), Some(0), "the key can only end");
            assert_eq!(at(&one_char, "\"", r"\u00e9"), None);
            assert_eq!(at(&one_char, "\"", r"\u00e8"), Some(5));
            assert_eq!(at(&letters, "\"", r"\u006"), None);
            assert_eq!(at(&letters, "\"", r"\u00e"), Some(4));
            assert_eq!(at(&letters, "\"", r"\t"), Some(1));
            assert_eq!(at(&astral, "\"", r"\uD83D\uDE00"), None);
            assert_eq!(at(&astral, "\"", r"\uD83E"), Some(5));
            assert_eq!(at(&astral, "\"", r"\uD83D\uDE01"), Some(11));
            assert_eq!(at(&astral, "\"", r"\u0"), Some(2));
            assert_eq!(at(&short, "\"a", r"\"), Some(0), "maxLength 1 is used up");
            let any = json!({"type": "string"});
            assert_eq!(
                refused_at(&any, b"\"\xC3", b"\\", walker),
                Some(0),
                "an escape cannot start inside a character"
            );
        }
    }

    #[test]
    fn pops_restore_the_text_of_an_unfinished_number() {
        let unique = json!({"type": "array", "items": {"type": "number"}, "uniqueItems": true});
        let g = Arc::new(Grammar::compile(&unique, &Options::generation()).unwrap());
        let mut m = Matcher::new(g);
        m.push_bytes(b"[3,2").unwrap();
        let mut before = Vec::new();
        m.state_key(&mut before);
        m.push_bytes(b",3").unwrap();
        m.pop_bytes(2);
        let mut after = Vec::new();
        m.state_key(&mut after);
        assert_eq!(before, after, "the state key is restored");
        assert_eq!(m.push_bytes(b",3,"), Err(2), "3 is a duplicate; 2 is not");
        m.pop_bytes(2);
        assert_eq!(m.push_bytes(b",2,"), Err(2), "2 is a duplicate");
        m.pop_bytes(2);
        m.commit();
        assert_eq!(m.push_bytes(b"0]"), Ok(()), "20 is new");
        assert!(m.is_accepting());
    }

    #[test]
    fn generated_keys_escape_only_what_json_needs() {
        let closed = json!({"type": "object", "properties": {"ab": {"type": "integer"}},
            "additionalProperties": false});
        let free = json!({"type": "object"});
        let options = Options::generation();
        for walker in [false, true] {
            let at = |schema: &serde_json::Value, text: &str| {
                refused_with(&options, schema, b"{\"", text.as_bytes(), walker)
            };
            assert_eq!(at(&closed, r"\"), Some(0), "`a` is written as itself");
            assert_eq!(at(&closed, "ab"), None);
            assert_eq!(at(&free, r#"\"\\\n\t\u001f"#), None);
            assert_eq!(at(&free, r"\/"), Some(1));
            assert_eq!(at(&free, r"\u0020"), Some(4));
            assert_eq!(at(&free, r"\u00e9"), Some(4));
            assert_eq!(at(&free, r"\u1"), Some(2));
        }
        let value = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let text = br#"a":"\u00e9\/"#;
        assert_eq!(
            refused_with(&options, &value, b"{\"", text, false),
            None,
            "values keep every escape"
        );
    }

    fn pretty() -> Options {
        Options::generation().whitespace(Whitespace::Pretty)
    }

    /// Whether `text` is accepted as a whole document.
    fn accepts(g: &Arc<Grammar>, text: &str) -> bool {
        let mut m = Matcher::new(g.clone());
        m.push_bytes(text.as_bytes()).is_ok() && m.is_accepting()
    }

    /// `text` with one whitespace byte inserted at, or removed from, each position outside
    /// strings where that changes it.
    fn respaced(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let (mut in_str, mut esc) = (false, false);
        for (i, c) in text.char_indices() {
            if !in_str {
                for ws in [" ", "\n", "\t", "\r"] {
                    out.push(format!("{}{ws}{}", &text[..i], &text[i..]));
                }
                if c.is_ascii_whitespace() {
                    out.push(format!("{}{}", &text[..i], &text[i + 1..]));
                }
            }
            match c {
                _ if esc => esc = false,
                '\\' if in_str => esc = true,
                '"' => in_str = !in_str,
                _ => {}
            }
        }
        for ws in [" ", "\n"] {
            out.push(format!("{text}{ws}"));
        }
        out
    }

    #[test]
    fn pretty_accepts_exactly_the_pretty_spelling() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "array", "items": {"type": ["integer", "object", "array"]}},
            "b": {"type": "object"}, "c": {"type": "string"}, "d": {"type": "boolean"}}});
        let g = Arc::new(Grammar::compile(&schema, &pretty()).unwrap());
        let compact = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
        for value in [
            json!({}),
            json!({"a": []}),
            json!({"a": [1, {}, [], [[2]], {"k": [true]}], "b": {"x": {"y": null}}}),
            json!({"c": "a b\n:,{", "d": false, "b": {}}),
        ] {
            let text = serde_json::to_string_pretty(&value).unwrap();
            assert!(accepts(&g, &text), "{text}");
            let min = serde_json::to_string(&value).unwrap();
            assert!(accepts(&compact, &min), "{min}");
            assert_eq!(accepts(&g, &min), text == min, "{min} under pretty");
            assert_eq!(
                accepts(&compact, &text),
                text == min,
                "{text} under compact"
            );
            for other in respaced(&text) {
                assert!(!accepts(&g, &other), "{other:?} under pretty");
            }
            for other in respaced(&min) {
                assert!(!accepts(&compact, &other), "{other:?} under compact");
            }
        }
    }

    /// A line break after a member or item commits to closing the container, one after `{`
    /// or `[` to a first member or item: it is refused where that cannot follow.
    #[test]
    fn pretty_line_breaks_lead_only_where_the_document_can_go() {
        let refused = |schema: serde_json::Value, prefix: &str| {
            let g = Arc::new(Grammar::compile(&schema, &pretty()).unwrap());
            let mut m = Matcher::new(g);
            m.push_bytes(prefix.as_bytes()).unwrap();
            !m.try_push_byte(b'\n')
        };
        let required = json!({"type": "object", "required": ["a", "b"],
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}});
        assert!(refused(required.clone(), "{\n  \"a\": 1"), "b is missing");
        assert!(!refused(required.clone(), "{\n  \"a\": 1,\n  \"b\": 2"));
        assert!(refused(required, "{\n  \"b\": 2"), "a is missing");
        let empty = json!({"type": "object", "additionalProperties": false});
        assert!(refused(empty, "{"), "no member can follow");
        assert!(refused(json!({"type": "array", "maxItems": 0}), "["));
        assert!(!refused(json!({"type": "array", "maxItems": 1}), "["));
        let two = json!({"type": "array", "minItems": 2});
        assert!(refused(two.clone(), "[\n  1"), "a second item is needed");
        assert!(!refused(two, "[\n  1,\n  2"));
    }

    #[test]
    fn pretty_completions_are_pretty() {
        let countries = json!({"type": "array", "items": {"type": "object",
            "properties": {"name": {"type": "string"}, "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
            "required": ["name", "n", "tags"]}});
        let full = json!([{"name": "Nigeria", "n": 12, "tags": ["x"]}, {"name": "", "n": 0,
            "tags": [""]}]);
        let text = serde_json::to_string_pretty(&full).unwrap();
        for cut in 0..text.len() {
            let head = &text[..cut];
            let tail = complete_with(&pretty(), countries.clone(), head);
            let whole = format!("{head}{tail}");
            assert!(
                serde_json::from_str::<serde_json::Value>(&whole).is_ok(),
                "{whole}"
            );
            assert_eq!(
                whole,
                crate::json_text::pretty(&whole, 2),
                "completed after {head:?}"
            );
        }
        assert_eq!(
            complete_with(&pretty(), countries, "[\n  {"),
            "\n    \"name\": \"\",\n    \"n\": 0,\n    \"tags\": [\n      \"\"\n    ]\n  }\n]"
        );
    }
}
