//! The crate's error type: everything that can go wrong loading a vocabulary or building a trie.

use std::path::PathBuf;

/// An error loading a vocabulary or building an index over it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The `tokenizers` crate could not load a `tokenizer.json`.
    #[error("cannot load tokenizer {path}")]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: tokenizers::Error,
    },
    /// A `tokenizer_config.json` is not valid JSON of the expected shape.
    #[error("invalid tokenizer config {path}")]
    Config {
        /// The file (empty when parsed from a string).
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// A GGUF file's metadata cannot be read as a vocabulary.
    #[error("cannot read the vocabulary of GGUF file {path}: {reason}")]
    Gguf {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the key and byte offset where it was found.
        reason: String,
    },
    /// The tokenizer uses a decoder whose per-token bytes this crate cannot recover.
    #[error("unsupported tokenizer decoder `{kind}`: token bytes cannot be recovered")]
    UnsupportedDecoder {
        /// The decoder's `type`, as written in `tokenizer.json`.
        kind: String,
    },
    /// A token id is over [`crate::TokenId::MAX`].
    #[error("token id {id} is over the limit of {max}")]
    TokenIdTooLarge {
        /// The id.
        id: u64,
        /// The largest valid id.
        max: u32,
    },
    /// A token id is not below the vocabulary's length.
    #[error("token id {id} is out of range for a vocabulary of {len} ids")]
    TokenIdOutOfRange {
        /// The id.
        id: u32,
        /// The vocabulary's length.
        len: usize,
    },
    /// The concatenated token bytes do not fit the vocabulary's 32-bit offsets.
    #[error("vocabulary holds {bytes} bytes of tokens, over the limit of {limit}")]
    VocabularyTooLarge {
        /// Total bytes of all tokens.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A token is too long for a trie's depth field.
    #[error("token {id} is {len} bytes long, over the trie limit of {limit}")]
    TokenTooLong {
        /// The token.
        id: crate::TokenId,
        /// Its length in bytes.
        len: usize,
        /// The longest token a trie can index.
        limit: usize,
    },
    /// A trie would need more nodes or slots than its fields can address.
    #[error("trie needs {needed} {what}, over the limit of {limit}")]
    TrieTooLarge {
        /// What ran out: "nodes", "slots", "duplicate groups".
        what: &'static str,
        /// How many were needed.
        needed: usize,
        /// The limit.
        limit: usize,
    },
    /// A trie kind name that is not `flat` or `double-array`.
    #[error("unknown trie kind `{name}`, expected `flat` or `double-array`")]
    UnknownTrieKind {
        /// The name given.
        name: String,
    },
}

/// The crate's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
