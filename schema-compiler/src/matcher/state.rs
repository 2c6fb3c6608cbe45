//! The mutable state of a [`Matcher`](super::Matcher) and its journal.
//!
//! A [`State`] holds the stack of frames (one per open container), the obligations and leaves
//! they own, the seen-literal bits, key and item hashes and the lexeme being read. Every write
//! goes through a `set_*` method or pushes an [`Undo`] entry, so [`State::rollback`] can undo
//! any number of bytes exactly.

use super::decode::EscapeMemo;
use super::hashing::Hash2;
use super::lexeme_walk::LexemeWalk;
use crate::dfa::DEAD;
use crate::ir::NodeId;
use crate::tables::{DfaId, EMPTY_LEXER, LeafSpec, LexerId};

pub(super) const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(super) enum FrameKind {
    #[default]
    Document,
    Object,
    Array,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(super) enum Phase {
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
pub(super) enum Mode {
    /// Nothing above depends on this value: any syntactically valid value will do.
    #[default]
    Free,
    /// Every obligation must be satisfiable.
    All,
    /// At least one obligation must be satisfiable (an over-approximation).
    Any,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Role {
    Root,
    Member,
    Item,
    Contains,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(super) struct Frame {
    pub(super) kind: FrameKind,
    pub(super) phase: Phase,
    pub(super) newlines: u8,
    pub(super) spaces: u16,
    pub(super) mode: Mode,
    pub(super) slot_mode: Mode,
    /// This value's obligations: `obligations[obligations_start..obligations_end]`.
    pub(super) obligations_start: u32,
    pub(super) obligations_end: u32,
    pub(super) leaf_start: u32,
    pub(super) leaf_end: u32,
    /// Obligations of the member or item being parsed.
    pub(super) slot_start: u32,
    pub(super) slot_end: u32,
    /// Start of this frame's key hashes in `keys`.
    pub(super) keys_start: u32,
    pub(super) depth: u32,
    pub(super) root_ok: bool,
    /// Value hashing (only when the grammar has `uniqueItems`): the running hash of the
    /// container, the hash of the current member's key, and where item hashes start.
    pub(super) value_hash: Hash2,
    pub(super) member_key: Hash2,
    pub(super) items_start: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Obligation {
    pub(super) node: NodeId,
    /// Absolute leaf index in the parent frame (or `NONE` for the root).
    pub(super) sink: u32,
    pub(super) role: Role,
    /// Program of the container value (`NONE` if not a container or not allowed).
    pub(super) prog: u32,
    pub(super) leaf_base: u32,
    pub(super) lexer: LexerId,
    /// DFA state while lexing a primitive.
    pub(super) state: u32,
    pub(super) failed: bool,
    pub(super) result: bool,
    /// The document can only lose by this obligation failing: every formula above it is
    /// monotone in it (see [`crate::tables::Program::positive`]). Only then may the value
    /// be held to an order of its members, which narrows what it accepts.
    pub(super) positive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Leaf {
    pub(super) spec: LeafSpec,
    pub(super) alive: bool,
    /// Positive (see [`Obligation::positive`]): the obligation is, and its formula is monotone in
    /// the leaf.
    pub(super) positive: bool,
    /// Under [`crate::PropertyOrder::Schema`], for an object leaf held to its order: the
    /// index of the first listed property that may still be written (`listed` once a key
    /// outside them has been). `NONE`: any order.
    pub(super) next: u32,
    pub(super) count: u32,
    pub(super) contains: u32,
    /// Seen literals 0..64.
    pub(super) seen: u64,
    /// Index of further seen words in `bits` (`NONE` when there are at most 64 literals).
    pub(super) ext: u32,
    pub(super) key_state: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(super) enum LexKind {
    #[default]
    None,
    Str,
    Key,
    Num,
    Lit,
}

/// The string-decoding part of a lexeme state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(super) struct Core {
    /// 0 normal; 1 after `\`; 2..=5 reading `\u` hex digits; 6 expecting `\` of a low
    /// surrogate; 7 expecting `u`; 8..=11 reading its hex digits.
    pub(super) esc: u8,
    pub(super) uval: u32,
    /// Code points so far (strings).
    pub(super) count: u32,
    /// Syntax DFA state (UTF-8 for strings, number or literal syntax otherwise).
    pub(super) syn: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(super) struct Lex {
    pub(super) kind: LexKind,
    pub(super) core: Core,
    pub(super) hash: u64,
    /// Second hash stream of the decoded bytes (value hashing).
    pub(super) hash2: u64,
    /// Where the text of the number or literal being lexed starts in `State::text`.
    pub(super) text_start: u32,
    /// Strings and keys: which one (numbered as they start), so the lexeme walker can keep
    /// what it learnt about this one between walks.
    pub(super) serial: u32,
    /// Numbers: the syntax DFA `core.syn` runs in (see [`State::number_syntax_for`]).
    pub(super) syntax: DfaId,
}

#[derive(Debug, Clone)]
pub(super) enum Undo {
    Frame(u32, Frame),
    PoppedFrame(Frame),
    Frames(u32),
    Leaf(u32, Leaf),
    Leaves(u32),
    Obligation(u32, Obligation),
    Obligations(u32),
    Bit(u32, u64),
    Bits(u32),
    Keys(u32),
    Text(u32),
    Items(u32),
    Lex(Lex),
}

/// The mutable part of a [`Matcher`].
#[derive(Debug, Clone, Default)]
pub(super) struct State {
    pub(super) frames: Vec<Frame>,
    pub(super) leaves: Vec<Leaf>,
    pub(super) obligations: Vec<Obligation>,
    pub(super) bits: Vec<u64>,
    /// (frame depth, key hash) of object keys.
    pub(super) keys: Vec<(u32, u64)>,
    /// Text of the number or literal being lexed (any-notation mode, value hashing).
    pub(super) text: Vec<u8>,
    /// (frame depth, hash) of the items of open arrays (value hashing).
    pub(super) items: Vec<(u32, Hash2)>,
    pub(super) lex: Lex,
    pub(super) journal: Vec<Undo>,
    pub(super) marks: Vec<u32>,
    pub(super) walk: LexemeWalk,
    pub(super) escapes: EscapeMemo,
    /// Strings and keys started so far (see `Lex::serial`).
    pub(super) serials: u32,
}

impl State {
    pub(super) fn rollback(&mut self, mark: usize) {
        while self.journal.len() > mark {
            match self.journal.pop().expect("non-empty journal") {
                Undo::Frame(i, f) => self.frames[i as usize] = f,
                Undo::PoppedFrame(f) => self.frames.push(f),
                Undo::Frames(n) => self.frames.truncate(n as usize),
                Undo::Leaf(i, l) => self.leaves[i as usize] = l,
                Undo::Leaves(n) => self.leaves.truncate(n as usize),
                Undo::Obligation(i, o) => self.obligations[i as usize] = o,
                Undo::Obligations(n) => self.obligations.truncate(n as usize),
                Undo::Bit(i, w) => self.bits[i as usize] = w,
                Undo::Bits(n) => self.bits.truncate(n as usize),
                Undo::Keys(n) => self.keys.truncate(n as usize),
                Undo::Text(n) => self.text.truncate(n as usize),
                Undo::Items(n) => self.items.truncate(n as usize),
                Undo::Lex(l) => self.lex = l,
            }
        }
    }

    pub(super) fn set_frame(&mut self, i: usize, f: Frame) {
        self.journal.push(Undo::Frame(i as u32, self.frames[i]));
        self.frames[i] = f;
    }

    pub(super) fn set_leaf(&mut self, i: usize, l: Leaf) {
        self.journal.push(Undo::Leaf(i as u32, self.leaves[i]));
        self.leaves[i] = l;
    }

    pub(super) fn set_obligation(&mut self, i: usize, o: Obligation) {
        self.journal
            .push(Undo::Obligation(i as u32, self.obligations[i]));
        self.obligations[i] = o;
    }

    /// A number for a string or key that starts (never reused, so the walker's memory of an
    /// earlier one cannot apply).
    pub(super) fn next_serial(&mut self) -> u32 {
        self.serials = self.serials.wrapping_add(1);
        self.serials
    }

    pub(super) fn set_lex(&mut self, l: Lex) {
        self.journal.push(Undo::Lex(self.lex));
        self.lex = l;
    }

    pub(super) fn top(&self) -> usize {
        self.frames.len() - 1
    }
}

pub(super) fn new_obligation(node: NodeId, sink: u32, role: Role, positive: bool) -> Obligation {
    Obligation {
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
