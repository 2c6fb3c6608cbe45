//! Levels of JSON string content: the character sets the mask kernel precomputes tokens for,
//! defined in the `recognizer` crate and re-exported here with the DFAs built from them.
//!
//! [`CONTENT_LEVELS`] form a chain, each level holding the characters of the ones before it;
//! [`SPACE_LEVEL`] and [`NONSPACE_LEVEL`] stand beside the chain. [`content_level_allows`] says which characters a
//! level holds, [`level_universe`] is the DFA of all content of a level, and [`ContentFlags`]
//! are what a DFA state takes of each level (see [`Dfa::string_flags`]).

use super::build::utf8_universe;
use super::{Dfa, DfaLimits};
use std::sync::OnceLock;

// The levels are defined once, beside the recognizer trait, so that the mask kernel
// precomputes its tokens for the same character sets these DFAs take.
pub use recognizer::{
    CONTENT_LEVELS, NONSPACE_LEVEL, PLAIN_LEVEL, SPACE_LEVEL, UNICODE_SPACES, content_level_allows,
    is_unicode_space, level_is_plain,
};

/// The DFA of every content of `level` (see [`CONTENT_LEVELS`]): UTF-8 text of the level's
/// characters, accepting at character boundaries. Built once per process.
pub fn level_universe(level: u8) -> &'static Dfa {
    const N: usize = NONSPACE_LEVEL as usize + 1;
    static LEVELS: [OnceLock<Dfa>; N] = [const { OnceLock::new() }; N];
    if level != SPACE_LEVEL && level != NONSPACE_LEVEL && level + 1 >= CONTENT_LEVELS {
        return utf8_universe();
    }
    LEVELS[level as usize].get_or_init(|| {
        // Non-ASCII characters are all alike to the levels but for the Unicode spaces.
        let mut ranges: Vec<(u32, u32)> = (0..0x80u8)
            .filter(|&b| content_level_allows(level, b as char))
            .map(|b| (b as u32, b as u32))
            .collect();
        if content_level_allows(level, '\u{80}') {
            let mut lo = 0x80;
            let spaces = if content_level_allows(level, '\u{a0}') {
                &[][..]
            } else {
                &UNICODE_SPACES[..]
            };
            for &(a, b) in spaces {
                if (a as u32) > lo {
                    ranges.push((lo, a as u32 - 1));
                }
                lo = lo.max(b as u32 + 1);
            }
            ranges.push((lo, char::MAX as u32));
        }
        let class: String = ranges
            .iter()
            .map(|(lo, hi)| format!("\\x{{{lo:x}}}-\\x{{{hi:x}}}"))
            .collect();
        Dfa::from_regex(&format!("(?s:[{class}]*)"), DfaLimits::default())
            .expect("a character class of the level")
    })
}

/// How much string content a DFA state takes (see [`Dfa::string_flags`]): every content of a
/// level below `live` keeps the state live, every content of a level below `free` keeps it
/// live and accepting (`free <= live`; 0: none); likewise for [`SPACE_LEVEL`] and
/// [`NONSPACE_LEVEL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContentFlags {
    /// One past the highest level that keeps the state live.
    pub live: u8,
    /// One past the highest level that keeps the state live and accepting.
    pub free: u8,
    /// Every content of [`SPACE_LEVEL`] keeps the state live.
    pub space_live: bool,
    /// Every content of [`SPACE_LEVEL`] keeps the state live and accepting (computed only
    /// where `free` is).
    pub space_free: bool,
    /// Every content of [`NONSPACE_LEVEL`] keeps the state live.
    pub nonspace_live: bool,
    /// Every content of [`NONSPACE_LEVEL`] keeps the state live and accepting (computed only
    /// where `free` is).
    pub nonspace_free: bool,
}

impl ContentFlags {
    /// Whether every content of `level` keeps the state live.
    pub fn live_at(&self, level: u8) -> bool {
        if level == SPACE_LEVEL {
            self.space_live
        } else if level == NONSPACE_LEVEL {
            self.nonspace_live
        } else {
            self.live > level
        }
    }

    /// Whether every content of `level` keeps the state live and accepting.
    pub fn free_at(&self, level: u8) -> bool {
        if level == SPACE_LEVEL {
            self.space_free
        } else if level == NONSPACE_LEVEL {
            self.nonspace_free
        } else {
            self.free > level
        }
    }
}
