//! JSON string decoding: escapes, `\\u` surrogate pairs and the UTF-8 check.
//!
//! [`decode`] advances a [`Core`] by one byte of a string or key. While an escape is unfinished,
//! [`escape_outcomes`] tells which DFA states the code points it can still produce lead to, so
//! a backslash is accepted only when some continuation keeps the document viable.

use std::sync::Arc;

use super::state::{Core, State};
use crate::dfa::DEAD;
use crate::grammar::Grammar;
use crate::options::KeyEscapes;
use crate::tables::DfaId;

/// What one byte of a string does.
pub(super) enum Decoded {
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
pub(super) fn decode(core: &mut Core, b: u8, needed_only: bool) -> Decoded {
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

/// Whether [`decode`] may take byte `b` (keep it inside the string or key) from a decoder at
/// escape point `esc`: false when it refuses `b`, or ends the string with it, whatever the
/// rest of the decoder state.
pub(super) fn may_take(esc: u8, b: u8) -> bool {
    match esc {
        0 => b != b'"' && b >= 0x20,
        1 => matches!(
            b,
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' | b'u'
        ),
        2..=5 | 8..=11 => b.is_ascii_hexdigit(),
        6 => b == b'\\',
        7 => b == b'u',
        _ => false,
    }
}

/// Whether escapes are limited to those JSON needs: in keys, under [`KeyEscapes::Needed`].
pub(super) fn needed_only(g: &Grammar, key: bool) -> bool {
    key && g.options.key_escapes == KeyEscapes::Needed
}

/// The code points an unfinished escape can still produce, as inclusive ranges (at most 3).
pub(super) fn escape_ranges(core: &Core, needed_only: bool) -> ([(u32, u32); 3], usize) {
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

impl State {
    /// Whether `judge` accepts some tuple of DFA states (one per entry of `dfas`, from
    /// `start`) that the unfinished escape in `core` can still lead to. Where an escape keeps a
    /// lexeme viable, it mostly does so by spelling an ASCII character (`\u0030` for a digit,
    /// `\n`), and one outcome is enough: the distinct tuples the ASCII characters reach are
    /// judged first, which spares following every code point the escape can produce through
    /// the DFAs (see [`escape_outcomes`]: a few µs for each new tuple of states). The others
    /// are judged only when none of those passes.
    pub(super) fn any_escape_outcome(
        &mut self,
        g: &Grammar,
        core: &Core,
        needed_only: bool,
        dfas: &[DfaId],
        start: &[u32],
        mut judge: impl FnMut(&mut State, &[u32]) -> bool,
    ) -> bool {
        let k = dfas.len();
        if k > 0 {
            let (ranges, n) = escape_ranges(core, needed_only);
            let mut tried: Vec<u32> = Vec::new();
            let mut tuple = vec![0u32; k];
            for &(lo, hi) in &ranges[..n] {
                for c in lo..=hi.min(0x7F) {
                    step_tuple(g, dfas, start, c as u8, &mut tuple);
                    if tried.chunks(k).any(|t| t == tuple.as_slice()) {
                        continue;
                    }
                    tried.extend_from_slice(&tuple);
                    if judge(self, &tuple) {
                        return true;
                    }
                }
            }
        }
        let (outcomes, count) = self.escapes.outcomes(g, core, needed_only, dfas, start);
        (0..count).any(|c| judge(self, &outcomes[c * k..(c + 1) * k]))
    }
}

/// Writes into `to` the state each DFA of `dfas` reaches from the state in `from` by `byte`
/// (a dead one stays dead).
fn step_tuple(g: &Grammar, dfas: &[DfaId], from: &[u32], byte: u8, to: &mut [u32]) {
    for ((t, &s), &d) in to.iter_mut().zip(from).zip(dfas) {
        *t = if s == DEAD {
            DEAD
        } else {
            g.dfa(d).next(s, byte)
        };
    }
}

/// The distinct tuples of DFA states (one per entry of `dfas`, from `start`) reached by the
/// UTF-8 encoding of some code point an unfinished escape can still produce, flattened; and how
/// many tuples there are (one empty tuple when there are no DFAs but some code point).
pub(super) fn escape_outcomes(
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
    // A byte that every DFA classes like the byte before it leads every tuple where that byte
    // does: within a range, only the first byte of each such run is followed.
    let mut like_prev = [false; 256];
    for b in 1..=255u8 {
        like_prev[b as usize] = dfas.iter().all(|&d| {
            let dfa = g.dfa(d);
            dfa.class_of(b) == dfa.class_of(b - 1)
        });
    }
    let mut found: Vec<u32> = Vec::new();
    if dfas.iter().all(|&d| g.dfa(d).ascii_only()) {
        // A code point from 0x80 up kills every DFA at its first byte: all of them give the
        // one tuple of dead states, and only the ASCII ones need following.
        let mut tuple = vec![0u32; k];
        for &(lo, hi) in &ranges[..n] {
            for c in lo..=hi.min(0x7F) {
                step_tuple(g, dfas, start, c as u8, &mut tuple);
                if !found.chunks(k).any(|u| u == tuple.as_slice()) {
                    found.extend_from_slice(&tuple);
                }
            }
            if hi >= 0x80 {
                tuple.fill(DEAD);
                if !found.chunks(k).any(|u| u == tuple.as_slice()) {
                    found.extend_from_slice(&tuple);
                }
            }
        }
        let count = found.len() / k;
        return (found, count);
    }
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
                        if b > r.start && like_prev[b as usize] {
                            continue;
                        }
                        step_tuple(g, dfas, t, b, &mut tuple);
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
pub(super) struct EscapeMemo {
    pub(super) map: rustc_hash::FxHashMap<Box<[u32]>, Outcomes>,
    pub(super) key: Vec<u32>,
}

/// Flattened tuples of DFA states and how many there are (see [`escape_outcomes`]).
pub(super) type Outcomes = (Arc<[u32]>, usize);

/// Entries kept by [`EscapeMemo`] before it starts over.
pub(super) const ESCAPE_MEMO_MAX: usize = 4096;

impl EscapeMemo {
    pub(super) fn outcomes(
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
pub(super) fn feed_core(g: &Grammar, core: &mut Core, out: &[u8]) -> bool {
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
