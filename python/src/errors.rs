//! The package's exceptions, and the Rust errors of the other crates as Python exceptions.

use mask_kernel::MaskError;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    stencil,
    SchemaError,
    PyValueError,
    "A JSON Schema that does not compile: not JSON, an unsupported keyword (in strict mode), \
     an invalid keyword value, an unresolved `$ref` or a compile limit. `.keyword` names the \
     keyword (None when there is none) and `.pointer` is the JSON pointer of the schema object \
     holding it (empty when the schema is not JSON)."
);

pyo3::create_exception!(
    stencil,
    EmptyMaskError,
    PyRuntimeError,
    "No token of the vocabulary can continue the text: the mask would be all zeros. Stencil \
     never returns such a mask."
);

/// A [`SchemaError`] with its `keyword` and `pointer` attributes.
pub fn schema_error(
    py: Python<'_>,
    message: String,
    keyword: Option<&str>,
    pointer: &str,
) -> PyErr {
    let err = SchemaError::new_err(message);
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail short of memory
    // exhaustion; the error would then be raised in place of the schema error.
    if let Err(e) = value
        .setattr("keyword", keyword)
        .and_then(|()| value.setattr("pointer", pointer))
    {
        return e;
    }
    err
}

/// The message of a call on a matcher that accepted end of sequence.
pub const TERMINATED: &str = "the matcher is terminated (it accepted end of sequence): no token \
     may follow; call reset(), or rollback() past the end of sequence";

/// A mask-kernel error as the Python exception a caller expects.
pub fn mask_error(e: MaskError) -> PyErr {
    match e {
        MaskError::EmptyMask { .. } => EmptyMaskError::new_err(e.to_string()),
        MaskError::Finished => PyRuntimeError::new_err(TERMINATED),
        MaskError::Rollback { .. } | MaskError::UnknownToken { .. } => {
            PyValueError::new_err(e.to_string())
        }
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// A vocabulary error, with its causes: unreadable files as `OSError`, everything else as
/// `ValueError`.
pub fn vocab_error(e: vocab_index::Error) -> PyErr {
    let message = with_sources(&e);
    match e {
        vocab_index::Error::Io { .. } => PyOSError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// `e`'s message followed by its causes', `: `-separated.
pub fn with_sources(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        message.push_str(": ");
        message.push_str(&c.to_string());
        cause = c.source();
    }
    message
}
