//! Levels of JSON string content: the character sets the mask kernel precomputes tokens for.
//!
//! [`CONTENT_LEVELS`] form a chain, each level holding the characters of the ones before it;
//! [`SPACE_LEVEL`] stands beside the chain. [`content_level_allows`] says which characters a
//! level holds, [`level_universe`] is the DFA of all content of a level, and [`ContentFlags`]
//! are what a DFA state takes of each level (see [`Dfa::string_flags`]).

use super::build::utf8_universe;
use super::{Dfa, DfaLimits};
use std::sync::OnceLock;

/// Levels of JSON string content, each a set of characters that contains the ones before it:
/// 0 ASCII letters and digits; 1 also every non-ASCII character but the white space and line
/// terminators of ECMAScript (see [`is_unicode_space`]); 2 also the space; 3 every character a
/// string may hold unescaped (no control character, `"` or `\\`) but those; 4 every character a
/// string may hold unescaped; 5 every character, escapes included. The mask kernel precomputes
/// the tokens spelled in each level. The levels that leave the non-ASCII spaces out are the
/// ones patterns with `.` or `\S` take.
pub const CONTENT_LEVELS: u8 = 6;

/// The lowest level (see [`CONTENT_LEVELS`]) that holds every character a string may hold
/// unescaped.
pub const PLAIN_LEVEL: u8 = 4;

/// A level beside the chain of [`CONTENT_LEVELS`]: ASCII letters, digits and the space (more
/// than level 0, less than level 2, and neither more nor less than level 1). ASCII classes with
/// a space, like `[\w\s/.,:-]` or the path part of a URL pattern, take it.
pub const SPACE_LEVEL: u8 = CONTENT_LEVELS;

/// Whether content of `level` (see [`CONTENT_LEVELS`] and [`SPACE_LEVEL`]) holds every
/// character a string may hold unescaped.
pub fn level_is_plain(level: u8) -> bool {
    (PLAIN_LEVEL..CONTENT_LEVELS).contains(&level)
}

/// The non-ASCII characters ECMAScript counts as white space or as line terminators, as
/// ranges: what `\s` matches and `.` does not beyond ASCII.
const UNICODE_SPACES: [(char, char); 8] = [
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{feff}', '\u{feff}'),
];

/// Whether `c` is a non-ASCII character ECMAScript counts as white space or as a line
/// terminator: what `\s` matches and `.` does not beyond ASCII.
pub fn is_unicode_space(c: char) -> bool {
    UNICODE_SPACES.iter().any(|&(lo, hi)| lo <= c && c <= hi)
}

/// Whether `c` may appear in content of level `level` (see [`CONTENT_LEVELS`]).
pub fn content_level_allows(level: u8, c: char) -> bool {
    let alnum = c.is_ascii_alphanumeric();
    let other = !c.is_ascii() && !is_unicode_space(c);
    let plain = c >= ' ' && c != '"' && c != '\\';
    match level {
        0 => alnum,
        1 => alnum || other,
        2 => alnum || other || c == ' ',
        3 => plain && !is_unicode_space(c),
        4 => plain,
        SPACE_LEVEL => alnum || c == ' ',
        _ => true,
    }
}

/// The DFA of every content of `level` (see [`CONTENT_LEVELS`]): UTF-8 text of the level's
/// characters, accepting at character boundaries. Built once per process.
pub fn level_universe(level: u8) -> &'static Dfa {
    const N: usize = SPACE_LEVEL as usize + 1;
    static LEVELS: [OnceLock<Dfa>; N] = [const { OnceLock::new() }; N];
    if level != SPACE_LEVEL && level + 1 >= CONTENT_LEVELS {
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
/// live and accepting (`free <= live`; 0: none); likewise for [`SPACE_LEVEL`].
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
}

impl ContentFlags {
    /// Whether every content of `level` keeps the state live.
    pub fn live_at(&self, level: u8) -> bool {
        if level == SPACE_LEVEL {
            self.space_live
        } else {
            self.live > level
        }
    }

    /// Whether every content of `level` keeps the state live and accepting.
    pub fn free_at(&self, level: u8) -> bool {
        if level == SPACE_LEVEL {
            self.space_free
        } else {
            self.free > level
        }
    }
}
