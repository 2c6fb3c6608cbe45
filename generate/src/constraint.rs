//! The JSON Schema constraint: a [`Matcher`] seen through the mask kernel's [`Recognizer`].

use std::sync::Arc;

use mask_kernel::{Inside, Recognizer, Split};
use schema_compiler::{Grammar, LexemeSplit, Matcher};

/// A schema's matcher as a byte-level recognizer for the mask kernel.
#[derive(Debug, Clone)]
pub struct SchemaRecognizer {
    matcher: Matcher,
}

impl SchemaRecognizer {
    /// A recognizer at the start of a document of `grammar`.
    pub fn new(grammar: Arc<Grammar>) -> SchemaRecognizer {
        SchemaRecognizer {
            matcher: Matcher::new(grammar),
        }
    }

    /// The underlying matcher.
    pub fn matcher(&self) -> &Matcher {
        &self.matcher
    }
}

impl Recognizer for SchemaRecognizer {
    #[inline]
    fn try_push_byte(&mut self, byte: u8) -> bool {
        self.matcher.try_push_byte(byte)
    }

    #[inline]
    fn pop_bytes(&mut self, n: usize) {
        self.matcher.pop_bytes(n)
    }

    fn is_accepting(&self) -> bool {
        self.matcher.is_accepting()
    }

    fn state_key(&self, key: &mut Vec<u32>) -> bool {
        self.matcher.state_key(key);
        true
    }

    fn describe(&self) -> String {
        self.matcher.describe()
    }

    fn split(&self, key: &mut Vec<u32>) -> Option<Split> {
        lexeme_split(&self.matcher, key)
    }

    fn completion(&mut self, max_len: usize) -> Option<Vec<u8>> {
        self.matcher.completion(max_len)
    }

    fn set_lexeme_only(&mut self, on: bool) {
        self.matcher.set_lexeme_only(on)
    }
}

/// The matcher's lexeme split in the mask kernel's terms (see [`Recognizer::split`]).
pub(crate) fn lexeme_split(matcher: &Matcher, key: &mut Vec<u32>) -> Option<Split> {
    Some(match matcher.split(key)? {
        LexemeSplit::StringContent {
            budget,
            level,
            close,
        } => Split {
            boundary: b'"',
            inside: Inside::StringContent { budget, level },
            close,
        },
        LexemeSplit::KeyContent => Split {
            boundary: b'"',
            inside: Inside::KeyContent,
            close: None,
        },
        LexemeSplit::Walk => Split {
            boundary: b'"',
            inside: Inside::Walk,
            close: None,
        },
    })
}

#[cfg(test)]
mod tests {
    /// The schema compiler decides which level of content a string takes, the kernel which
    /// tokens spell each level: both must mean the same characters.
    #[test]
    fn the_compiler_and_the_kernel_agree_on_content_levels() {
        assert_eq!(
            mask_kernel::CONTENT_LEVELS,
            schema_compiler::dfa::CONTENT_LEVELS
        );
        assert_eq!(mask_kernel::SPACE_LEVEL, schema_compiler::dfa::SPACE_LEVEL);
        for level in (0..mask_kernel::CONTENT_LEVELS).chain([mask_kernel::SPACE_LEVEL]) {
            for c in char::MIN..=char::MAX {
                assert_eq!(
                    mask_kernel::content_level_allows(level, c),
                    schema_compiler::dfa::content_level_allows(level, c),
                    "level {level}, character {c:?}"
                );
            }
        }
    }
}
