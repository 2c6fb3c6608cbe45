//! A search for a completion: whether bytes exist that take a matcher from where it is to a
//! complete document (so that accepting what it accepted was no dead end).

#![allow(dead_code)]

use std::collections::HashSet;

use schema_compiler::Matcher;

/// What a search for a completion found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search {
    Found,
    /// Every state reachable from here was tried: no completion exists.
    NoneExists,
    /// The search hit its depth or push budget first.
    GaveUp,
}

/// Looks for bytes that take the matcher to a complete document: a depth-first search over
/// `bytes` (tried in their order), at most `depth` bytes deep, within `budget` pushes,
/// entering each matcher state once (states with equal keys have the same continuations, so
/// content that only repeats a state, like `{"b0`, `{"b00`, … under a key pattern, is not
/// explored again). The matcher is left where it was.
pub fn search(
    m: &mut Matcher,
    bytes: &[u8],
    depth: u32,
    budget: &mut u32,
    seen: &mut HashSet<Vec<u32>>,
) -> Search {
    if m.is_accepting() {
        return Search::Found;
    }
    if depth == 0 {
        return Search::GaveUp;
    }
    let mut result = Search::NoneExists;
    for &b in bytes {
        if *budget == 0 {
            return Search::GaveUp;
        }
        *budget -= 1;
        if m.try_push_byte(b) {
            let mut key = Vec::new();
            m.state_key(&mut key);
            let r = if seen.insert(key) {
                search(m, bytes, depth - 1, budget, seen)
            } else {
                Search::NoneExists
            };
            m.pop_bytes(1);
            match r {
                Search::Found => return Search::Found,
                Search::GaveUp => result = Search::GaveUp,
                Search::NoneExists => {}
            }
        }
    }
    result
}
