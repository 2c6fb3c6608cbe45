//! Levels of JSON string content: the sets of characters a grammar can say a string takes
//! whatever they are, and that a kernel precomputes the tokens of.

/// Levels of JSON string content, each a set of characters that contains the ones before it:
///
/// - 0: ASCII letters and digits;
/// - 1: also every non-ASCII character but the white space and line terminators of ECMAScript
///   (see [`is_unicode_space`]);
/// - 2: also the space;
/// - 3: every character a string may hold unescaped (no control character, `"` or `\`) but the
///   non-ASCII spaces;
/// - 4 ([`PLAIN_LEVEL`]): every character a string may hold unescaped;
/// - 5 ([`TOP_LEVEL`]): every character, escapes included.
///
/// The levels that leave the non-ASCII spaces out are the ones patterns with `.` or `\S` take.
/// Beside the chain stand the [`SPACE_LEVEL`] and the [`NONSPACE_LEVEL`]. A kernel
/// precomputes, per level, the tokens spelled in it (see [`spelled_in`]), so a string whose
/// grammar takes every content of some level is masked without walking them.
pub const CONTENT_LEVELS: u8 = 6;

/// The level that holds everything a string may hold, escapes included (see
/// [`CONTENT_LEVELS`]).
pub const TOP_LEVEL: u8 = CONTENT_LEVELS - 1;

/// The lowest level (see [`CONTENT_LEVELS`]) that holds every character a string may hold
/// unescaped.
pub const PLAIN_LEVEL: u8 = 4;

/// A level beside the chain of [`CONTENT_LEVELS`]: ASCII letters, digits and the space (more
/// than level 0, less than level 2, and neither more nor less than level 1). ASCII classes with
/// a space, like `[\w\s/.,:-]` or the path part of a URL pattern, take it.
pub const SPACE_LEVEL: u8 = CONTENT_LEVELS;

/// A level beside the chain of [`CONTENT_LEVELS`]: every character a string may hold unescaped
/// but white space (level 1 and the ASCII punctuation; less than level 3, neither more nor less
/// than level 2). What `\S` takes: patterns like `^\S+$` or `[^\s]+`.
pub const NONSPACE_LEVEL: u8 = CONTENT_LEVELS + 1;

/// Every level, widest first: each level of the chain holds the ones after it. The
/// [`NONSPACE_LEVEL`] holds level 1 and comes before it, after level 2, which spells more
/// tokens in the vocabularies at hand (it holds the words with a space in front: on Llama 3,
/// about 100k tokens against 65k). The [`SPACE_LEVEL`], beside level 1, comes after it because
/// it spells fewer tokens (about as many as level 0 with a space in front). A grammar that
/// looks for the widest level a string takes tries them in this order.
pub const LEVELS: [u8; CONTENT_LEVELS as usize + 2] =
    [5, 4, 3, 2, NONSPACE_LEVEL, 1, SPACE_LEVEL, 0];

/// A character of content every level holds (an ASCII letter: one byte, one code point). It
/// stands for content whose characters do not matter (see [`Close::filler`]).
///
/// [`Close::filler`]: crate::Close::filler
pub const FILLER: char = 'a';

const _: () = assert!(FILLER.is_ascii_alphanumeric());

/// Whether content of `level` (see [`CONTENT_LEVELS`] and [`SPACE_LEVEL`]) holds every
/// character a string may hold unescaped.
pub fn level_is_plain(level: u8) -> bool {
    (PLAIN_LEVEL..CONTENT_LEVELS).contains(&level)
}

/// The non-ASCII characters ECMAScript counts as white space or as line terminators, as
/// ranges: what `\s` matches and `.` does not beyond ASCII.
pub const UNICODE_SPACES: [(char, char); 8] = [
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
/// terminator (one of [`UNICODE_SPACES`]): what `\s` matches and `.` does not beyond ASCII.
pub fn is_unicode_space(c: char) -> bool {
    UNICODE_SPACES.iter().any(|&(lo, hi)| lo <= c && c <= hi)
}

/// Whether `c` may spell content of `level` (see [`CONTENT_LEVELS`] and [`SPACE_LEVEL`]).
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
        NONSPACE_LEVEL => plain && c != ' ' && !is_unicode_space(c),
        _ => true,
    }
}

/// Whether the bytes of a string-content token (see [`string_content`]) spell content of
/// `level` below the [top](TOP_LEVEL): its characters are all of the level, and so is any
/// character it stops inside. Below level 1 it may stop inside none; from level 1 on, every
/// unfinished character can finish as one of the level, as the spaces left out are single code
/// points among many with the same lead bytes (so also at the [`NONSPACE_LEVEL`]); the space
/// level holds no non-ASCII character.
///
/// [`string_content`]: crate::string_content
pub fn spelled_in(level: u8, bytes: &[u8]) -> bool {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e)
            if e.error_len().is_none()
                && ((1..CONTENT_LEVELS).contains(&level) || level == NONSPACE_LEVEL) =>
        {
            match std::str::from_utf8(&bytes[..e.valid_up_to()]) {
                Ok(text) => text,
                Err(_) => return false,
            }
        }
        Err(_) => return false,
    };
    text.chars().all(|c| content_level_allows(level, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_grows_and_the_side_levels_stand_beside_it() {
        let count = |level| {
            (char::MIN..=char::MAX)
                .filter(|&c| content_level_allows(level, c))
                .count()
        };
        for level in 1..CONTENT_LEVELS {
            for c in char::MIN..=char::MAX {
                assert!(
                    !content_level_allows(level - 1, c) || content_level_allows(level, c),
                    "level {level} holds {c:?} of level {}",
                    level - 1
                );
            }
            assert!(count(level) > count(level - 1));
        }
        for c in char::MIN..=char::MAX {
            let space = content_level_allows(SPACE_LEVEL, c);
            assert!(!content_level_allows(0, c) || space, "{c:?}");
            assert!(!space || content_level_allows(2, c), "{c:?}");
        }
        assert!(content_level_allows(SPACE_LEVEL, ' ') && !content_level_allows(1, ' '));
        assert!(content_level_allows(1, 'é') && !content_level_allows(SPACE_LEVEL, 'é'));
        // The non-space level: level 1 and more, inside level 3, beside level 2.
        for c in char::MIN..=char::MAX {
            let nonspace = content_level_allows(NONSPACE_LEVEL, c);
            assert!(!content_level_allows(1, c) || nonspace, "{c:?}");
            assert!(!nonspace || content_level_allows(3, c), "{c:?}");
            assert_eq!(
                nonspace,
                content_level_allows(3, c) && c != ' ',
                "{c:?}: level 3 but the space"
            );
        }
        assert!(content_level_allows(NONSPACE_LEVEL, '/') && !content_level_allows(2, '/'));
        assert!(content_level_allows(2, ' ') && !content_level_allows(NONSPACE_LEVEL, ' '));
        let mut sorted = LEVELS;
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            [0, 1, 2, 3, 4, TOP_LEVEL, SPACE_LEVEL, NONSPACE_LEVEL]
        );
        assert_eq!(LEVELS[0], TOP_LEVEL);
    }

    #[test]
    fn the_filler_is_content_of_every_level() {
        for level in LEVELS {
            assert!(content_level_allows(level, FILLER), "level {level}");
            assert!(spelled_in(level, FILLER.to_string().as_bytes()), "{level}");
        }
    }

    #[test]
    fn levels_tell_the_unicode_spaces_apart() {
        for &(lo, hi) in &UNICODE_SPACES {
            for c in [lo, hi] {
                assert!(is_unicode_space(c));
                assert!(!content_level_allows(1, c) && !content_level_allows(3, c));
                assert!(content_level_allows(PLAIN_LEVEL, c));
            }
        }
        assert!(!is_unicode_space(' ') && !is_unicode_space('\u{2030}'));
        assert!(level_is_plain(PLAIN_LEVEL) && level_is_plain(TOP_LEVEL));
        assert!(!level_is_plain(3) && !level_is_plain(SPACE_LEVEL));
    }

    #[test]
    fn a_token_may_stop_inside_a_character_from_level_1_on() {
        let euro = "€".as_bytes();
        assert!(spelled_in(1, &euro[..2]));
        assert!(!spelled_in(0, &euro[..2]));
        assert!(!spelled_in(SPACE_LEVEL, &euro[..2]));
        assert!(spelled_in(2, b"ab 9"));
        assert!(!spelled_in(1, b"ab 9"));
        assert!(spelled_in(SPACE_LEVEL, b"ab 9"));
        assert!(!spelled_in(3, "a\u{3000}".as_bytes()));
        assert!(spelled_in(4, "a\u{3000}".as_bytes()));
        assert!(!spelled_in(4, b"\xff"));
    }
}
