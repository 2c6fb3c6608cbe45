//! The lexeme-only walker: a light mode for mask walks that stay inside one string or key.
//!
//! While it is on ([`Matcher::set_lexeme_only`](super::Matcher::set_lexeme_only)), pushes and
//! pops move along a path of [`LexemeWalk`] nodes instead of writing the journal, and each
//! node's successors are learnt once per string or key.

use std::sync::{Arc, Mutex};

use super::decode::{Decoded, decode, feed_core, may_take, needed_only};
use super::state::{Core, LexKind, Mode, Role, State};
use super::viability::DeadSinks;
use crate::dfa::DEAD;
use crate::grammar::Grammar;
use crate::tables::{DfaId, LeafSpec};

/// A walk node's successor not worked out yet.
pub(super) const UNSEEN: u32 = u32::MAX;

/// A walk node's successor that the string or key refuses.
pub(super) const REFUSED: u32 = u32::MAX - 1;

/// The lexeme-only walker, while a mask walk stays inside a string or key.
///
/// Its *nodes* are the distinct (decoder, per-lexer DFA states) the walk reaches, each with a
/// row of 256 successors filled in on first use, so the walk is a table lookup per trie node
/// once a node's byte was seen (a walk over most of a large vocabulary meets a few dozen
/// nodes). The decoder's code-point count is part of a node only when some lexer has a
/// maximum length.
///
/// Nodes and successors follow from the decoder and the DFAs alone, so they are kept from one
/// string or key to the next with the same tracked entries and DFAs (the next key of an
/// object, the same key in the next item of an array), and put aside while the walker works
/// on others (a key, then a string value, then the next key), for every matcher of the
/// grammar: see [`WalkStore`]. Whether a node leaves the string or key viable depends on its
/// frame too: that is learnt per node once per string or key (an *epoch*).
#[derive(Debug, Clone, Default)]
pub(super) struct LexemeWalk {
    pub(super) on: bool,
    pub(super) is_str: bool,
    /// Per depth: the node.
    pub(super) path: Vec<u32>,
    /// Per node: its decoder state.
    pub(super) node_core: Vec<Core>,
    /// Per node: `idx.len()` DFA states.
    pub(super) node_states: Vec<u32>,
    /// Per node: 256 successors (`UNSEEN`, `REFUSED` or a node).
    pub(super) next: Vec<u32>,
    /// Node by its (decoder, DFA states) words.
    pub(super) nodes: rustc_hash::FxHashMap<Box<[u32]>, u32>,
    /// Scratch for a node's words.
    pub(super) words: Vec<u32>,
    /// Some lexer has a maximum length (the code-point count tells nodes apart).
    pub(super) count_matters: bool,
    /// The string or key (`Lex::serial`) that the viability answers and memos were learnt for:
    /// within one string or key the frame does not change, so they hold for every walk with
    /// the same entries.
    pub(super) learnt_serial: Option<u32>,
    /// The tracked entries (`idx`), their DFAs, the kind of lexeme and whether counts matter,
    /// as the nodes and successors were learnt for.
    pub(super) learnt_idx: Vec<u32>,
    pub(super) learnt_dfas: Vec<DfaId>,
    pub(super) learnt_kind: (bool, bool),
    /// The current string or key's number, counted up from 1 for each new one.
    pub(super) epoch: u32,
    /// Per node: the epoch it was last judged in and whether it left the string or key viable
    /// then.
    pub(super) viable: Vec<(u32, bool)>,
    /// Obligation indices (strings) or leaf indices (keys) whose DFA states are tracked.
    pub(super) idx: Vec<u32>,
    /// The DFA of each tracked entry.
    pub(super) dfas: Vec<DfaId>,
    /// Strings: the code-point limit of each entry (`u64::MAX`: none).
    pub(super) max: Vec<u64>,
    /// Strings: the slot has obligations that count (failed or not).
    pub(super) some: bool,
    pub(super) mode: Mode,
    /// While a successor is worked out: the decoder state of the node and of the successor.
    pub(super) cores: Vec<Core>,
    /// While a successor is worked out: `idx.len()` DFA states of the node, then of the
    /// successor.
    pub(super) states: Vec<u32>,
    /// Keys: frame viability by key-state tuple, for the current walk.
    pub(super) key_memo: rustc_hash::FxHashMap<Box<[u32]>, bool>,
    /// Strings: some obligation of the slot had failed before the walk.
    pub(super) failed: bool,
    /// Strings: frame viability by the set of tracked entries that can no longer pass (bit `j`
    /// for entry `j`), for the current walk.
    pub(super) slot_memo: rustc_hash::FxHashMap<u64, bool>,
    /// The last `slot_memo` answer (`u64::MAX` at the start of a walk: a lookup with every
    /// one of 64 entries dead never happens, the walk refuses that first).
    pub(super) slot_last: (u64, bool),
    /// Keys: what ending the key leads to depends on the tracked key states alone (see
    /// [`Matcher::close_class`](super::Matcher::close_class)).
    pub(super) close_by_states: bool,
    /// Keys: per node, its class (`UNSEEN` until asked), and the classes by their words.
    pub(super) node_class: Vec<u32>,
    pub(super) classes: rustc_hash::FxHashMap<Box<[u32]>, u32>,
    /// Counts the times `classes` was emptied or replaced: while it stays the same, so does
    /// what a class number stands for.
    pub(super) class_era: u32,
    /// This walker's number (see [`LexemeWalk::id`]).
    id: WalkerId,
    /// The byte groups of the tracked DFAs, once a successor was learnt (`None` until then).
    pub(super) groups: Option<Arc<Groups>>,
    /// Groups by DFAs, as worked out before (at most [`GROUPS_KEPT`] sets of DFAs).
    pub(super) group_memo: rustc_hash::FxHashMap<Box<[DfaId]>, Arc<Groups>>,
}

/// A walker's number, 0 until given. A clone of a walker is another walker: it starts without
/// one (the sets the original puts aside are then another walker's to it, and the reverse).
#[derive(Debug, Default)]
struct WalkerId(u64);

impl Clone for WalkerId {
    fn clone(&self) -> Self {
        WalkerId(0)
    }
}

/// What the lexeme walkers of a grammar's matchers learnt for the entries they are not
/// working on, shared by all of them: nodes and successors follow from the decoder and the
/// DFAs alone, so the next key of an object, a string value after it, or the next matcher of
/// the same grammar (the next request for the same schema) takes them up instead of learning
/// them again. A walker takes out the set it works on, so matchers on other threads never
/// share one. At most [`STASH_KEPT`] sets of entries and [`STASH_NODES`] nodes (each a row of
/// 256 successors: 1 KiB), so at most about 2 MiB per grammar, the least recently put aside
/// dropped first.
#[derive(Default)]
pub(crate) struct WalkStore(Mutex<Vec<Stashed>>);

impl std::fmt::Debug for WalkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WalkStore")
    }
}

impl WalkStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Stashed>> {
        // A panic while it was held leaves a list of whole sets (each moved in or out at once).
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What a walker learnt for one set of tracked entries, put aside.
#[derive(Debug, Clone, Default)]
struct Stashed {
    /// The walker that put it aside (see [`LexemeWalk::id`]).
    by: u64,
    idx: Vec<u32>,
    dfas: Vec<DfaId>,
    kind: (bool, bool),
    node_core: Vec<Core>,
    node_states: Vec<u32>,
    next: Vec<u32>,
    nodes: rustc_hash::FxHashMap<Box<[u32]>, u32>,
    viable: Vec<(u32, bool)>,
    node_class: Vec<u32>,
    classes: rustc_hash::FxHashMap<Box<[u32]>, u32>,
    groups: Option<Arc<Groups>>,
}

impl Stashed {
    /// Whether it was learnt for these entries, DFAs and kind of lexeme.
    fn learnt_for(&self, kind: (bool, bool), idx: &[u32], dfas: &[DfaId]) -> bool {
        self.kind == kind && self.idx == idx && self.dfas == dfas
    }
}

/// The bytes that the UTF-8 DFA and every one of a set of DFAs treat alike, outside an escape:
/// a byte's successor from a walker node outside an escape holds for its whole group.
#[derive(Debug)]
pub(super) struct Groups {
    /// Per byte its group (`ALONE` for `"`, `\\` and control characters).
    group: [u16; 256],
    /// The bytes of group `i` at `bytes[start[i]..start[i + 1]]`.
    bytes: Vec<u8>,
    start: Vec<u16>,
}

/// Most sets of DFAs whose byte groups a walker keeps.
const GROUPS_KEPT: usize = 256;

/// Most nodes a walker keeps from one string or key to the next (each holds a row of 256
/// successors: 1 KiB); past them, the next string or key starts afresh.
const NODES_KEPT: usize = 2048;

/// Most sets of tracked entries whose nodes the walkers of a grammar put aside, and most nodes
/// in all of them (so at most 2 MiB of successor rows): see [`WalkStore`].
const STASH_KEPT: usize = 16;
const STASH_NODES: usize = 2048;

/// In [`Groups::group`]: a byte learnt on its own.
const ALONE: u16 = u16::MAX;

impl Groups {
    /// The groups of `dfas`, refined one DFA at a time: a byte's group is its previous group
    /// and its class.
    fn new(g: &Grammar, dfas: &[DfaId]) -> Groups {
        let plain = |b: u8| b != b'"' && b != b'\\' && b >= 0x20;
        // Refines the `groups` groups of `group` by `class`: a byte's new group is numbered by
        // the first byte with the same pair, through a table of the pairs (groups so far by
        // classes). Returns the number of groups after.
        fn refine(
            group: &mut [u16; 256],
            groups: usize,
            class: impl Fn(u8) -> u8,
            plain: impl Fn(u8) -> bool,
        ) -> usize {
            let width = (0..=255u8).map(&class).max().map_or(0, |c| c as usize + 1);
            let mut ids = vec![ALONE; groups * width];
            let mut next = 0u16;
            for b in (0..=255u8).filter(|&b| plain(b)) {
                let pair = group[b as usize] as usize * width + class(b) as usize;
                if ids[pair] == ALONE {
                    ids[pair] = next;
                    next += 1;
                }
                group[b as usize] = ids[pair];
            }
            next as usize
        }
        let utf8 = g.dfa(g.utf8);
        let mut group = [ALONE; 256];
        for b in (0..=255u8).filter(|&b| plain(b)) {
            // A continuation byte adds no code point.
            group[b as usize] = u16::from((0x80..0xC0).contains(&b));
        }
        // Two groups so far: continuation bytes and the others.
        let mut groups = refine(&mut group, 2, |b| utf8.class_of(b), plain);
        for &dfa in dfas {
            let dfa = g.dfa(dfa);
            groups = refine(&mut group, groups, |b| dfa.class_of(b), plain);
        }
        let mut start = vec![0u16; groups + 1];
        for &i in group.iter().filter(|&&i| i != ALONE) {
            start[i as usize + 1] += 1;
        }
        for i in 0..groups {
            start[i + 1] += start[i];
        }
        let mut bytes = vec![0u8; start[groups] as usize];
        let mut fill = start.clone();
        for b in 0..=255u8 {
            let i = group[b as usize];
            if i != ALONE {
                bytes[fill[i as usize] as usize] = b;
                fill[i as usize] += 1;
            }
        }
        Groups {
            group,
            bytes,
            start,
        }
    }

    /// The bytes of each group, in the order of the groups.
    fn all(&self) -> impl Iterator<Item = &[u8]> {
        self.start
            .windows(2)
            .map(|w| &self.bytes[w[0] as usize..w[1] as usize])
    }
}

impl LexemeWalk {
    /// Drops the nodes, their successors and the viability memos.
    pub(super) fn forget(&mut self) {
        self.node_core.clear();
        self.node_states.clear();
        self.next.clear();
        self.nodes.clear();
        self.viable.clear();
        self.key_memo.clear();
        self.slot_memo.clear();
        self.node_class.clear();
        self.classes.clear();
        self.class_era = self.class_era.wrapping_add(1);
    }

    /// Swaps what was learnt (nodes, successors, viability, classes, groups) with `other`.
    fn swap_learnt(&mut self, other: &mut Stashed) {
        std::mem::swap(&mut self.node_core, &mut other.node_core);
        std::mem::swap(&mut self.node_states, &mut other.node_states);
        std::mem::swap(&mut self.next, &mut other.next);
        std::mem::swap(&mut self.nodes, &mut other.nodes);
        std::mem::swap(&mut self.viable, &mut other.viable);
        std::mem::swap(&mut self.node_class, &mut other.node_class);
        std::mem::swap(&mut self.classes, &mut other.classes);
        std::mem::swap(&mut self.groups, &mut other.groups);
        self.class_era = self.class_era.wrapping_add(1);
    }

    /// Puts aside what was learnt for the entries it was learnt for, and takes up what was put
    /// aside for the current ones, by this or another matcher of the grammar (or starts
    /// afresh).
    fn switch_entries(&mut self, store: &WalkStore, kind: (bool, bool)) {
        let mut stash = store.lock();
        self.put_aside(&mut stash);
        let found = stash
            .iter()
            .rposition(|s| s.learnt_for(kind, &self.idx, &self.dfas));
        match found {
            Some(at) => {
                let mut s = stash.remove(at);
                drop(stash);
                self.swap_learnt(&mut s);
                // Judged under another walker's numbers: judged afresh. (This walker's own are
                // older than its current one, so they are never taken as judged now.)
                if s.by != self.id() {
                    self.viable.fill((0, false));
                }
            }
            None => {
                drop(stash);
                self.forget();
                self.groups = None;
            }
        }
        self.learnt_idx.clone_from(&self.idx);
        self.learnt_dfas.clone_from(&self.dfas);
        self.learnt_kind = kind;
    }

    /// Moves what was learnt for the current entries into `stash` (the grammar's), where a
    /// learnt set for the same entries is kept only when it has fewer nodes; then trims
    /// `stash` to [`STASH_KEPT`] sets and [`STASH_NODES`] nodes, the oldest first.
    fn put_aside(&mut self, stash: &mut Vec<Stashed>) {
        if self.node_core.is_empty() {
            return;
        }
        let mut old = Stashed {
            by: self.id(),
            idx: std::mem::take(&mut self.learnt_idx),
            dfas: std::mem::take(&mut self.learnt_dfas),
            kind: self.learnt_kind,
            ..Stashed::default()
        };
        self.swap_learnt(&mut old);
        let same = stash
            .iter()
            .position(|s| s.learnt_for(old.kind, &old.idx, &old.dfas));
        match same {
            Some(at) if stash[at].node_core.len() >= old.node_core.len() => {}
            Some(at) => stash[at] = old,
            None => stash.push(old),
        }
        let mut nodes: usize = stash.iter().map(|s| s.node_core.len()).sum();
        while stash.len() > STASH_KEPT || nodes > STASH_NODES {
            nodes -= stash.remove(0).node_core.len();
        }
    }

    /// A number no other walker of the process has, given on first use (and anew when its
    /// string and key numbers come round again: what it put aside before then is judged
    /// afresh, as another walker's).
    pub(super) fn id(&mut self) -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        if self.id.0 == 0 {
            self.id.0 = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.id.0
    }

    /// Leaves what was learnt for the current entries to the grammar's other matchers (see
    /// [`WalkStore`]): a matcher does so when it is dropped or reset.
    pub(super) fn leave(&mut self, store: &WalkStore) {
        if !self.node_core.is_empty() {
            self.put_aside(&mut store.lock());
        }
    }

    /// Works out the byte groups of the tracked DFAs (see [`Groups`]) when they are not yet.
    fn ensure_groups(&mut self, g: &Grammar) {
        if self.groups.is_none() {
            if self.group_memo.len() >= GROUPS_KEPT {
                self.group_memo.clear();
            }
            let groups = self
                .group_memo
                .entry(self.dfas.as_slice().into())
                .or_insert_with(|| Arc::new(Groups::new(g, &self.dfas)));
            self.groups = Some(groups.clone());
        }
    }

    /// Gives `next`, the successor of node `at` by `b`, a byte of some group (`ok` when the
    /// decoder took it), to every byte of that group. Where the successor is refused by the
    /// UTF-8 decoder or dead to every DFA (most bytes, from a node inside a literal key name or
    /// a date-time), it also goes to every byte of another group that the decoder and each DFA
    /// send the same way, which spares learning each of them; a live successor is rarely
    /// shared, and scanning for it would cost more than it saves. `self.states` holds the
    /// node's DFA states, then (when `ok`) the successor's.
    fn share_successor(
        &mut self,
        g: &Grammar,
        groups: &Groups,
        at: usize,
        b: u8,
        ok: bool,
        next: u32,
    ) {
        let mine = groups.group[b as usize] as usize;
        let row = at * 256;
        for &c in groups.all().nth(mine).unwrap_or_default() {
            self.next[row + c as usize] = next;
        }
        let k = self.idx.len();
        if ok && self.states[k..2 * k].iter().any(|&s| s != DEAD) {
            return;
        }
        let utf8 = g.dfa(g.utf8);
        let syn = self.node_core[at].syn;
        let after = utf8.next(syn, b);
        let continues = (0x80..0xC0).contains(&b);
        for same in groups.all() {
            let c = same[0];
            if self.next[row + c as usize] != UNSEEN
                || utf8.next(syn, c) != after
                || (0x80..0xC0).contains(&c) != continues
            {
                continue;
            }
            // `b` refused by the UTF-8 decoder: so is `c`. Otherwise `c` must kill every DFA
            // as `b` does.
            let alike = !ok
                || (0..k).all(|j| {
                    let s = self.states[j];
                    s == DEAD || g.dfa(self.dfas[j]).next(s, c) == DEAD
                });
            if alike {
                for &c in same {
                    self.next[row + c as usize] = next;
                }
            }
        }
    }

    /// The node of decoder `core` and the DFA states at `states[from..from + idx.len()]`,
    /// added when new.
    pub(super) fn intern(&mut self, mut core: Core, from: usize) -> u32 {
        if !self.count_matters {
            core.count = 0;
        }
        let k = self.idx.len();
        self.words.clear();
        node_words(&mut self.words, &core, &self.states[from..from + k]);
        if let Some(&id) = self.nodes.get(&self.words[..]) {
            return id;
        }
        let id = self.node_core.len() as u32;
        self.node_core.push(core);
        self.node_states
            .extend_from_slice(&self.states[from..from + k]);
        let row = self.next.len();
        self.next.resize(row + 256, UNSEEN);
        // The bytes the decoder refuses (or that end the string or key) at this point of an
        // escape, whatever the DFA states: none stays inside.
        if core.esc == 0 {
            self.next[row..row + 0x20].fill(REFUSED);
            self.next[row + b'"' as usize] = REFUSED;
        } else {
            for b in 0..=255u8 {
                if !may_take(core.esc, b) {
                    self.next[row + b as usize] = REFUSED;
                }
            }
        }
        self.viable.push((0, false));
        self.node_class.push(UNSEEN);
        self.nodes.insert(self.words[..].into(), id);
        id
    }
}

/// Writes the words a node is known by: its decoder state, then its DFA states.
pub(super) fn node_words(words: &mut Vec<u32>, core: &Core, states: &[u32]) {
    words.extend_from_slice(&[core.esc as u32, core.uval, core.count, core.syn]);
    words.extend_from_slice(states);
}

impl State {
    #[inline]
    pub(super) fn walk_push(&mut self, g: &Grammar, b: u8) -> bool {
        let walk = &mut self.walk;
        let node = *walk.path.last().expect("lexeme walker has a base");
        match walk.next[node as usize * 256 + b as usize] {
            REFUSED => false,
            UNSEEN => self.walk_learn(g, node, b),
            next => self.walk_enter(g, next),
        }
    }

    /// Moves to walk node `next` when it leaves the string or key viable (judged once per
    /// epoch).
    #[inline]
    fn walk_enter(&mut self, g: &Grammar, next: u32) -> bool {
        let walk = &mut self.walk;
        let (epoch, ok) = walk.viable[next as usize];
        let ok = if epoch == walk.epoch {
            ok
        } else {
            self.walk_judge(g, next)
        };
        if ok {
            self.walk.path.push(next);
        }
        ok
    }

    /// Whether walk node `node` leaves the current string or key viable (recorded for this
    /// epoch): an unfinished escape must still have an outcome that does, and the DFA states
    /// must.
    #[cold]
    fn walk_judge(&mut self, g: &Grammar, node: u32) -> bool {
        let walk = &mut self.walk;
        let k = walk.idx.len();
        let at = node as usize;
        let core = walk.node_core[at];
        walk.states.clear();
        walk.states
            .extend_from_slice(&walk.node_states[at * k..(at + 1) * k]);
        let ok =
            (core.esc == 0 || self.walk_escape_viable(g, &core)) && self.walk_top_viable(g, &core);
        let walk = &mut self.walk;
        walk.viable[at] = (walk.epoch, ok);
        ok
    }

    /// Works out (and records) the successor of walk node `node` by byte `b`, then whether it
    /// is viable.
    #[cold]
    pub(super) fn walk_learn(&mut self, g: &Grammar, node: u32, b: u8) -> bool {
        let walk = &mut self.walk;
        let k = walk.idx.len();
        let at = node as usize;
        walk.cores.clear();
        walk.cores.push(walk.node_core[at]);
        walk.states.clear();
        walk.states
            .extend_from_slice(&walk.node_states[at * k..(at + 1) * k]);
        let ok = self.walk_step(g, b);
        let walk = &mut self.walk;
        let next = if ok {
            walk.intern(walk.cores[1], k)
        } else {
            REFUSED
        };
        // Outside an escape, the bytes of `b`'s group have the same successor, and so do those
        // of another group that the node sends where `b` goes when that is nowhere (see
        // `share_successor`). A byte learnt on its own, such as `\` starting an escape, shares
        // its successor with none.
        if walk.node_core[at].esc == 0 {
            walk.ensure_groups(g);
            let groups = walk.groups.clone().expect("worked out");
            if groups.group[b as usize] != ALONE {
                walk.share_successor(g, &groups, at, b, ok, next);
            }
        }
        walk.next[at * 256 + b as usize] = next;
        ok && self.walk_enter(g, next)
    }

    /// One byte from the single node in `cores` and `states`, by the decoder and the DFAs
    /// alone (not whether the result is viable): pushes the successor there and returns true,
    /// or returns false and leaves them.
    pub(super) fn walk_step(&mut self, g: &Grammar, b: u8) -> bool {
        let mut core = *self.walk.cores.last().expect("lexeme walker has a base");
        let needed_only = needed_only(g, !self.walk.is_str);
        let (out, n) = match decode(&mut core, b, needed_only) {
            Decoded::Reject | Decoded::End => return false,
            Decoded::Pending => ([0u8; 4], 0),
            Decoded::Bytes(out, n) => (out, n),
        };
        if n > 0 && !feed_core(g, &mut core, &out[..n]) {
            return false;
        }
        let walk = &mut self.walk;
        let k = walk.idx.len();
        let base = walk.states.len() - k;
        for j in 0..k {
            let s = walk.states[base + j];
            let next = if s == DEAD || n == 0 {
                s
            } else {
                g.dfa(walk.dfas[j]).run(s, &out[..n])
            };
            walk.states.push(next);
        }
        walk.cores.push(core);
        true
    }

    /// The bytes whose successor from the walker's current node is that node itself, into
    /// `bytes`; false (and nothing promised) when there are none or the walker is off. Only
    /// plain ASCII characters outside an escape qualify: the decoder passes them through, and
    /// each must leave the UTF-8 DFA and every tracked DFA where they are. Where some lexer
    /// has a maximum length the code-point count tells nodes apart, so none does. A node's
    /// viability is its own, so such bytes are all taken or all refused, and a run of them
    /// leads back to the node too.
    pub(super) fn walk_loop_bytes(&self, g: &Grammar, bytes: &mut [u64; 4]) -> bool {
        let walk = &self.walk;
        let Some(&node) = walk.path.last().filter(|_| walk.on && !walk.count_matters) else {
            return false;
        };
        let at = node as usize;
        let core = walk.node_core[at];
        if core.esc != 0 {
            return false;
        }
        let k = walk.idx.len();
        let states = &walk.node_states[at * k..(at + 1) * k];
        let needed_only = needed_only(g, !walk.is_str);
        *bytes = [0; 4];
        let stays = |j: usize, out: &[u8]| {
            let s = states[j];
            s == DEAD || g.dfa(walk.dfas[j]).run(s, out) == s
        };
        for b in 0x20..0x80u8 {
            // Most bytes move the first DFA (a plain character decodes to itself): a quick no.
            if k > 0 && !stays(0, &[b]) {
                continue;
            }
            let mut next = core;
            let Decoded::Bytes(out, n) = decode(&mut next, b, needed_only) else {
                continue;
            };
            let out = &out[..n];
            let back = feed_core(g, &mut next, out)
                && (Core { count: 0, ..next }) == (Core { count: 0, ..core })
                && (0..k).all(|j| stays(j, out));
            if back {
                bytes[b as usize / 64] |= 1 << (b % 64);
            }
        }
        *bytes != [0; 4]
    }

    /// Whether the walker's top states (with `core`) leave the string or key viable.
    pub(super) fn walk_top_viable(&mut self, g: &Grammar, core: &Core) -> bool {
        if self.walk.is_str {
            return self.walk_slot_viable(g, core);
        }
        let walk = &self.walk;
        let k = walk.idx.len();
        let top = walk.states.len() - k;
        let universal = (0..k).all(|j| {
            let s = walk.states[top + j];
            s != DEAD && self.walk_key_universal(g, j, s)
        });
        if universal {
            return true;
        }
        // The frame is fixed during a walk, so its viability depends on the key states alone;
        // many prefixes share them (say every key no property name starts with).
        if let Some(&ok) = walk.key_memo.get(&walk.states[top..]) {
            return ok;
        }
        let ok = self.frame_viable_keys(g, self.top(), &DeadSinks::NONE, true);
        let tuple: Box<[u32]> = self.walk.states[top..].into();
        self.walk.key_memo.insert(tuple, ok);
        ok
    }

    /// [`State::escape_viable`] for the walker: `core` has the unfinished escape.
    pub(super) fn walk_escape_viable(&mut self, g: &Grammar, core: &Core) -> bool {
        if !g.dfa(g.utf8).is_final(core.syn) {
            return false;
        }
        let k = self.walk.idx.len();
        let base = self.walk.states.len() - k;
        let needed_only = needed_only(g, !self.walk.is_str);
        let mut after = *core;
        after.esc = 0;
        after.count += 1;
        let dfas = self.walk.dfas.clone();
        let start = self.walk.states[base..base + k].to_vec();
        self.any_escape_outcome(g, core, needed_only, &dfas, &start, |st, tuple| {
            st.walk.states.extend_from_slice(tuple);
            let ok = st.walk_top_viable(g, &after);
            st.walk.states.truncate(base + k);
            ok
        })
    }

    pub(super) fn walk_key_universal(&self, g: &Grammar, j: usize, state: u32) -> bool {
        let leaf = &self.leaves[self.walk.idx[j] as usize];
        let LeafSpec::Object(s) = leaf.spec else {
            return false;
        };
        self.key_universal(g, leaf, &g.obj_specs[s as usize], state)
    }

    /// `slot_viable` over the walker's top states.
    pub(super) fn walk_slot_viable(&mut self, g: &Grammar, core: &Core) -> bool {
        let walk = &self.walk;
        if walk.mode == Mode::Free || !walk.some {
            return true;
        }
        let k = walk.idx.len();
        let top = &walk.states[walk.states.len() - k..];
        let pending = u64::from(core.esc != 0);
        let entry_ok = |j: usize| {
            let s = top[j];
            s != DEAD
                && (walk.max[j] == u64::MAX || {
                    let need = match &g.min_chars[walk.dfas[j] as usize] {
                        Some(mc) => mc[g.dfa(walk.dfas[j]).index(s)] as u64,
                        None => 0,
                    };
                    core.count as u64 + pending + need <= walk.max[j]
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
        if walk.mode == Mode::All || dead == 0 && !walk.failed {
            return dead == 0;
        }
        if dead == k {
            return false;
        }
        let memo = k <= 64;
        if memo && walk.slot_last.0 == dead_bits {
            return walk.slot_last.1;
        }
        if memo && let Some(&ok) = walk.slot_memo.get(&dead_bits) {
            self.walk.slot_last = (dead_bits, ok);
            return ok;
        }
        // As `slot_viable`: the frame's formula decides, with the leaves of the obligations
        // that can no longer pass taken as dead.
        let t = self.top();
        let f = &self.frames[t];
        let slot_start = f.slot_start;
        let slot = &self.obligations[f.slot_start as usize..f.slot_end as usize];
        let is_dead = |i: usize| {
            slot[i].failed
                || walk
                    .idx
                    .iter()
                    .position(|&x| x == slot_start + i as u32)
                    .is_some_and(|j| !entry_ok(j))
        };
        let ok = self.frame_viable_keys(g, t, &DeadSinks::some(slot, &is_dead), false);
        if memo {
            self.walk.slot_memo.insert(dead_bits, ok);
            self.walk.slot_last = (dead_bits, ok);
        }
        ok
    }

    pub(super) fn walk_key_state(&self, li: u32) -> Option<u32> {
        let k = self.walk.idx.len();
        // Leaves are tracked in increasing order (see `set_lexeme_only`).
        let j = self.walk.idx.binary_search(&li).ok()?;
        Some(self.walk.states[self.walk.states.len() - k + j])
    }
}

impl State {
    /// Switches the lexeme walker on or off (see [`Matcher::set_lexeme_only`]).
    pub(super) fn set_lexeme_only(&mut self, g: &Grammar, on: bool) {
        let st = self;
        if !on {
            st.walk.on = false;
            return;
        }
        if !matches!(st.lex.kind, LexKind::Str | LexKind::Key) {
            return;
        }
        let t = st.top();
        let f = st.frames[t];
        let walk = &mut st.walk;
        walk.idx.clear();
        walk.dfas.clear();
        walk.max.clear();
        walk.states.clear();
        walk.slot_last = (u64::MAX, false);
        walk.failed = false;
        walk.is_str = st.lex.kind == LexKind::Str;
        if walk.is_str {
            walk.mode = f.slot_mode;
            walk.some = false;
            for i in f.slot_start..f.slot_end {
                let o = st.obligations[i as usize];
                if o.role == Role::Contains {
                    continue;
                }
                walk.some = true;
                if o.failed {
                    walk.failed = true;
                    continue;
                }
                let lexer = &g.lexers[o.lexer as usize];
                walk.idx.push(i);
                walk.dfas.push(lexer.dfa);
                walk.max.push(lexer.max_len.unwrap_or(u64::MAX));
                walk.states.push(o.state);
            }
        } else {
            for li in f.leaf_start..f.leaf_end {
                let leaf = st.leaves[li as usize];
                if let LeafSpec::Object(s) = leaf.spec
                    && leaf.alive
                {
                    walk.idx.push(li);
                    walk.dfas.push(g.obj_specs[s as usize].key_dfa);
                    walk.states.push(leaf.key_state);
                }
            }
            // A key that repeats an earlier one is refused by its hash, which the key states do
            // not hold, unless every earlier key was a literal of a tracked leaf: such a key
            // then reaches that literal again, which the leaf refuses as seen. With value
            // hashing the content matters after the quote too.
            let all_literal = st.walk.idx.iter().any(|&li| {
                let leaf = &st.leaves[li as usize];
                leaf.count == st.seen_count(g, leaf)
            });
            let keys = &st.keys[f.keys_start as usize..];
            st.walk.close_by_states =
                !g.needs_hash && (all_literal || !keys.iter().any(|&(d, _)| d == f.depth));
        }
        let walk = &mut st.walk;
        walk.count_matters = walk.is_str && walk.max.iter().any(|&m| m != u64::MAX);
        walk.path.clear();
        let kind = (walk.is_str, walk.count_matters);
        if walk.learnt_idx != walk.idx || walk.learnt_dfas != walk.dfas || walk.learnt_kind != kind
        {
            walk.switch_entries(&g.walks, kind);
            walk.learnt_serial = None;
        }
        if walk.learnt_serial != Some(st.lex.serial) {
            if walk.node_core.len() > NODES_KEPT {
                walk.forget();
            }
            walk.key_memo.clear();
            walk.slot_memo.clear();
            if walk.epoch == u32::MAX {
                // Viability recorded under a number about to come round again is dropped.
                walk.forget();
                walk.epoch = 0;
                walk.id = WalkerId::default();
            }
            walk.epoch += 1;
            walk.learnt_serial = Some(st.lex.serial);
        }
        let base = walk.intern(st.lex.core, 0);
        walk.path.push(base);
        st.walk.on = true;
    }
}
