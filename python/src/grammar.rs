//! `stencil.Grammar`: a JSON Schema compiled by `schema-compiler`, bound to a vocabulary.

use std::sync::Arc;

use mask_kernel::{Kernel, SharedMaskCache};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString};
use schema_compiler::{NoteKind, Options, PropertyOrder, Whitespace};

use crate::errors::schema_error;
use crate::vocab::Vocab;

/// The whitespace policies by name, as the CLI's `--whitespace` names them.
fn whitespace(name: &str) -> PyResult<Whitespace> {
    match name {
        "compact" => Ok(Whitespace::Compact),
        "pretty" => Ok(Whitespace::Pretty),
        "flexible" => Ok(Whitespace::Flexible {
            max_newlines: 1,
            max_spaces: 16,
        }),
        other => Err(PyValueError::new_err(format!(
            "whitespace must be \"compact\" (none outside strings), \"pretty\" (a fixed indented \
             layout) or \"flexible\" (at most one line break and 16 spaces between tokens), got \
             {other:?}"
        ))),
    }
}

/// The member orders by name, as the CLI's `--property-order` names them.
fn property_order(name: &str) -> PyResult<PropertyOrder> {
    match name {
        "any" => Ok(PropertyOrder::Any),
        "schema" => Ok(PropertyOrder::Schema),
        other => Err(PyValueError::new_err(format!(
            "property_order must be \"any\" or \"schema\" (the order of each object's \
             `properties`, the other members after them), got {other:?}"
        ))),
    }
}

/// A compiled JSON Schema, bound to the vocabulary it was compiled for. Immutable and
/// thread-safe: any number of matchers, in any threads, may share one.
#[pyclass(module = "stencil", frozen)]
pub struct Grammar {
    pub(crate) grammar: Arc<schema_compiler::Grammar>,
    pub(crate) kernel: Arc<Kernel>,
    /// The masks of every matcher of the grammar.
    pub(crate) masks: Arc<SharedMaskCache>,
    vocab: Py<Vocab>,
}

/// A keyword that lenient compilation ignored (`strict=False`): the grammar may accept values
/// the schema rejects there.
#[pyclass(module = "stencil", frozen, get_all)]
pub struct Relaxation {
    /// The keyword.
    keyword: String,
    /// The JSON pointer of the schema object holding it.
    pointer: String,
    /// What was relaxed.
    detail: String,
}

#[pymethods]
impl Relaxation {
    fn __repr__(&self) -> String {
        format!(
            "Relaxation(keyword={:?}, pointer={:?}, detail={:?})",
            self.keyword, self.pointer, self.detail
        )
    }
}

#[pymethods]
impl Grammar {
    /// Compiles `schema` (JSON text, or a dict or bool that `json.dumps` serialises) for
    /// `vocab`.
    ///
    /// `strict=True` refuses keywords the compiler does not implement; `strict=False` ignores
    /// them and lists them in `relaxations`. `whitespace` is `"compact"`, `"pretty"` or
    /// `"flexible"`. `property_order` is `"any"` or `"schema"` (members in the order of each
    /// object's `properties`, the others after them). `cache_bytes` bounds the grammar's mask
    /// cache, which every matcher of it shares. Raises `SchemaError` (with `.keyword` and
    /// `.pointer`). The GIL is released while compiling.
    #[staticmethod]
    #[pyo3(signature = (
        schema, vocab, *, strict=true, whitespace="compact", property_order="any",
        cache_bytes=64 << 20
    ))]
    fn from_json_schema(
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        vocab: Bound<'_, Vocab>,
        strict: bool,
        whitespace: &str,
        property_order: &str,
        cache_bytes: usize,
    ) -> PyResult<Grammar> {
        let options = Options::generation()
            .strict(strict)
            .whitespace(self::whitespace(whitespace)?)
            .property_order(self::property_order(property_order)?);
        let text: String = if let Ok(s) = schema.cast::<PyString>() {
            s.extract()?
        } else if schema.is_instance_of::<PyDict>() || schema.is_instance_of::<PyBool>() {
            let json = py.import("json")?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("allow_nan", false)?;
            json.call_method("dumps", (schema,), Some(&kwargs))
                .map_err(|e| {
                    schema_error(
                        py,
                        format!("the schema cannot be written as JSON: {e}"),
                        None,
                        "",
                    )
                })?
                .extract()?
        } else {
            return Err(PyTypeError::new_err(format!(
                "schema must be JSON text (str), a dict or a bool, got {}",
                schema
                    .get_type()
                    .name()
                    .map_or_else(|_| "?".into(), |n| n.to_string())
            )));
        };
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| schema_error(py, format!("the schema is not JSON: {e}"), None, ""))?;
        let compiled = py
            .detach(|| {
                schema_compiler::Compiler::new(options)
                    .numbers_as_written(&text)
                    .compile(&value)
            })
            .map_err(|e| schema_error(py, e.to_string(), e.keyword(), e.pointer()))?;
        let kernel = vocab.get().kernel.clone();
        Ok(Grammar {
            grammar: Arc::new(compiled),
            kernel,
            masks: Arc::new(SharedMaskCache::new(cache_bytes)),
            vocab: vocab.unbind(),
        })
    }

    /// The grammar's mask cache: hits, misses and evictions over all its matchers, and the
    /// bytes and masks it holds.
    fn cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.masks.stats();
        let d = PyDict::new(py);
        d.set_item("hits", s.hits)?;
        d.set_item("misses", s.misses)?;
        d.set_item("evictions", s.evictions)?;
        d.set_item("bytes", self.masks.used_bytes())?;
        d.set_item("masks", self.masks.len())?;
        Ok(d)
    }

    /// The vocabulary the grammar was compiled for.
    #[getter]
    fn vocab(&self, py: Python<'_>) -> Py<Vocab> {
        self.vocab.clone_ref(py)
    }

    /// The keywords lenient compilation ignored (empty in strict mode, and for schemas the
    /// compiler implements exactly).
    #[getter]
    fn relaxations(&self) -> Vec<Relaxation> {
        self.grammar
            .report()
            .of_kind(NoteKind::Relaxed)
            .map(|n| Relaxation {
                keyword: n.keyword.clone(),
                pointer: n.pointer.clone(),
                detail: n.detail.clone(),
            })
            .collect()
    }

    /// Whether the grammar accepts exactly the documents the schema accepts (nothing relaxed).
    #[getter]
    fn is_exact(&self) -> bool {
        self.grammar.report().is_exact()
    }

    fn __repr__(&self) -> String {
        format!(
            "Grammar(vocab_size={}, dfa_states={}, exact={})",
            self.kernel.mask_len(),
            self.grammar.dfa_states(),
            self.is_exact()
        )
    }
}
