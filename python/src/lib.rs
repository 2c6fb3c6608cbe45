//! The Python package `stencil-json` (import name `stencil`): Stencil's vocabularies, grammars
//! and matchers, shaped like the matchers that inference engines already call, so that an
//! engine adapter is a few lines of Python.
//!
//! - [`vocab::Vocab`]: a tokenizer's exact token bytes and the mask kernel built over them
//!   (`vocab-index`, `mask-kernel`).
//! - [`grammar::Grammar`]: a JSON Schema compiled by `schema-compiler`, bound to a vocabulary;
//!   immutable and shared between threads.
//! - [`matcher::Matcher`]: one document under a grammar: a `mask-kernel` session of the
//!   grammar's `schema_compiler::Matcher` (a byte-level recognizer), with its own mask cache. It fills rows of the `int32`
//!   bitmask every host shares (`[rows, ceil(V/32)]`, bit `i` of word `j` is token `32*j + i`)
//!   through the buffer protocol, without copying ([`bitmask`]).
//!
//! Nothing here decides which tokens are allowed: that is the mask kernel's `Session::mask`,
//! as the Rust decoding loop calls it. This crate converts arguments, errors and memory.
//!
//! It is built with maturin (`cargo xtask python`), never linked into a Rust test binary: the
//! tests are Python's, in `python/tests/`.
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod bitmask;
mod errors;
mod grammar;
mod matcher;
mod vocab;

use pyo3::prelude::*;

/// The module `stencil._stencil`, re-exported by the `stencil` package.
#[pymodule]
fn _stencil(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<vocab::Vocab>()?;
    m.add_class::<grammar::Grammar>()?;
    m.add_class::<grammar::Relaxation>()?;
    m.add_class::<matcher::Matcher>()?;
    m.add("SchemaError", py.get_type::<errors::SchemaError>())?;
    m.add("EmptyMaskError", py.get_type::<errors::EmptyMaskError>())?;
    m.add_function(wrap_pyfunction!(matcher::fill_next_token_bitmasks, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
