//! The [`Matcher`] as a byte-level [`Recognizer`]: what a mask kernel walks a vocabulary with.
//!
//! Every method is the matcher's own; the trait only names them for a kernel that knows
//! nothing of schemas. A matcher's state can always be cached (its key is exact), and inside
//! a string or key it offers the kernel a [`Split`] (see [`Matcher::split`]).

use recognizer::{NUMBER_BYTES, Recognizer, Split};

use crate::Matcher;

impl Recognizer for Matcher {
    #[inline]
    fn try_push_byte(&mut self, byte: u8) -> bool {
        Matcher::try_push_byte(self, byte)
    }

    #[inline]
    fn pop_bytes(&mut self, n: usize) {
        Matcher::pop_bytes(self, n)
    }

    fn is_accepting(&self) -> bool {
        Matcher::is_accepting(self)
    }

    fn state_key(&self, key: &mut Vec<u32>) -> bool {
        Matcher::state_key(self, key);
        true
    }

    fn describe(&self) -> String {
        Matcher::describe(self)
    }

    fn split(&self, key: &mut Vec<u32>) -> Option<Split> {
        Matcher::split(self, key)
    }

    fn completion(&mut self, max_len: usize) -> Option<Vec<u8>> {
        Matcher::completion(self, max_len)
    }

    fn next_bytes_hint(&self) -> Option<[u64; 4]> {
        Matcher::next_bytes_hint(self)
    }

    fn loop_bytes(&self, bytes: &mut [u64; 4]) -> bool {
        Matcher::loop_bytes(self, bytes)
    }

    fn set_lexeme_only(&mut self, on: bool) {
        Matcher::set_lexeme_only(self, on)
    }

    fn close_class(&mut self) -> Option<u32> {
        Matcher::close_class(self)
    }

    fn grammar_name(&self) -> Option<u64> {
        Some(self.grammar().id)
    }

    fn close_classes_name(&self, name: &mut Vec<u32>) -> bool {
        Matcher::close_classes_name(self, name)
    }

    fn close_frame(&mut self) -> Option<u128> {
        Matcher::close_frame(self)
    }

    fn number_classes(&self, classes: &mut [u8; NUMBER_BYTES.len()]) -> bool {
        Matcher::number_classes(self, classes)
    }
}
