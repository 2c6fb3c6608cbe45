//! Errors from compiling a schema.

/// Why a schema did not compile.
///
/// Every variant that concerns a part of the schema carries its location as a JSON pointer
/// (`#/properties/name/pattern`), prefixed by the document URI when the part lives in another
/// document than the root.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// The schema uses a keyword (or a form of one) that this compiler does not implement.
    #[error("unsupported keyword `{keyword}` at {pointer}: {reason}")]
    Unsupported {
        /// The keyword.
        keyword: String,
        /// Location of the schema object holding it.
        pointer: String,
        /// What exactly is unsupported.
        reason: String,
    },
    /// A keyword's value is not what the specification allows.
    #[error("invalid `{keyword}` at {pointer}: {reason}")]
    Invalid {
        /// The keyword.
        keyword: String,
        /// Location of the schema object holding it.
        pointer: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `$ref` could not be resolved.
    #[error("unresolved reference `{reference}` at {pointer}: {reason}")]
    UnresolvedRef {
        /// The reference as written.
        reference: String,
        /// Location of the schema object holding it.
        pointer: String,
        /// Why it did not resolve.
        reason: String,
    },
    /// No JSON document is valid under the schema (`false`, `{"not": {}}`, `minimum` above
    /// `maximum`, a `type` that every other keyword rules out, …): generation from it could
    /// only fail, so it is refused.
    #[error("unsatisfiable schema at {pointer}: {reason}")]
    Unsatisfiable {
        /// Location of the schema object (`#` for the root).
        pointer: String,
        /// Why no value is valid.
        reason: String,
    },
    /// A compile limit was hit.
    #[error("limit `{limit}` exceeded at {pointer}: {detail}")]
    Limit {
        /// The name of the limit (a field of `Limits`).
        limit: &'static str,
        /// Where in the schema it was hit.
        pointer: String,
        /// What was being built.
        detail: String,
    },
}

impl CompileError {
    /// The JSON pointer the error is about.
    pub fn pointer(&self) -> &str {
        match self {
            CompileError::Unsupported { pointer, .. }
            | CompileError::Invalid { pointer, .. }
            | CompileError::UnresolvedRef { pointer, .. }
            | CompileError::Limit { pointer, .. }
            | CompileError::Unsatisfiable { pointer, .. } => pointer,
        }
    }

    /// The keyword the error is about, when there is one.
    pub fn keyword(&self) -> Option<&str> {
        match self {
            CompileError::Unsupported { keyword, .. } | CompileError::Invalid { keyword, .. } => {
                Some(keyword)
            }
            CompileError::UnresolvedRef { .. } => Some("$ref"),
            CompileError::Limit { .. } | CompileError::Unsatisfiable { .. } => None,
        }
    }

    /// Whether the error means that no document is valid under the schema: a validator would
    /// reject every instance.
    pub fn is_unsatisfiable(&self) -> bool {
        matches!(self, CompileError::Unsatisfiable { .. })
    }

    /// Whether the error means "not implemented" rather than "wrong schema" or "too big".
    pub fn is_unsupported(&self) -> bool {
        matches!(self, CompileError::Unsupported { .. })
    }
}
