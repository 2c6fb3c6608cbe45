//! Errors of the mask kernel.

/// What went wrong while masking, committing or applying.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MaskError {
    /// No token may follow: the grammar has reached a state with no continuation that a
    /// token of this vocabulary can spell.
    #[error("empty mask: no token can continue the text in state {state}")]
    EmptyMask {
        /// A description of the recognizer state.
        state: String,
    },
    /// A token outside the mask was committed; nothing changed.
    #[error("token {token} is not allowed here (its bytes {bytes:?} are rejected at byte {at})")]
    TokenNotAllowed {
        /// The token id.
        token: u32,
        /// The token's bytes, lossily printed.
        bytes: String,
        /// Index of the first rejected byte.
        at: usize,
    },
    /// The token id is outside the vocabulary.
    #[error("token id {token} is outside the vocabulary of {vocab_size} tokens")]
    UnknownToken {
        /// The token id.
        token: u32,
        /// The vocabulary size.
        vocab_size: usize,
    },
    /// A special token other than end-of-sequence was committed.
    #[error("special token {token} is never produced by a grammar")]
    SpecialToken {
        /// The token id.
        token: u32,
    },
    /// End of sequence was committed before the document was complete.
    #[error("end of sequence is not allowed: the document is incomplete")]
    Incomplete,
    /// A token was committed after end of sequence.
    #[error("the document is finished; no token may follow end of sequence")]
    Finished,
    /// The logits vector is shorter than the vocabulary.
    #[error("logits have {logits} entries but the vocabulary has {vocab} tokens")]
    LogitsTooShort {
        /// Length of the logits.
        logits: usize,
        /// Vocabulary size.
        vocab: usize,
    },
    /// The mask has a different length than the vocabulary.
    #[error("mask covers {mask} tokens but the vocabulary has {vocab}")]
    MaskLength {
        /// Length of the mask.
        mask: usize,
        /// Vocabulary size.
        vocab: usize,
    },
    /// More tokens were rolled back than committed.
    #[error("cannot roll back {requested} tokens: only {committed} committed")]
    Rollback {
        /// Tokens asked for.
        requested: usize,
        /// Tokens available.
        committed: usize,
    },
}
