//! `stencil.Matcher`: one document under a grammar, and the batch fill of many matchers.

use std::sync::{Arc, Mutex, MutexGuard};

use mask_kernel::{FixedBitSet, Kernel, MaskCache, MaskError, Session, SharedMaskCache};
// The grammar's own matcher is the recognizer the session walks; `Matcher` here is the
// Python class.
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use schema_compiler::Matcher as Document;

use crate::bitmask::{Bitmask, Rows};
use crate::errors::{TERMINATED, mask_error};
use crate::grammar::Grammar;
use crate::vocab::checked_ids;

/// The bytes of forced text looked at, at most, by `forced_tokens` (as the decoding loop does).
const MAX_FORCED_BYTES: usize = 256;

/// The message of a call on a matcher whose state an earlier failure (a panic) left unknown.
const POISONED: &str = "a matcher is unusable: an earlier call failed inside it; create a new one";

/// What a matcher changes: the session, its own cache (the sets inside strings), the mask
/// being filled, and the grammar's mask cache it shares with the other matchers.
struct State {
    session: Session<Document>,
    cache: MaskCache,
    masks: Arc<SharedMaskCache>,
    mask: FixedBitSet,
}

impl State {
    /// Computes the mask and writes it into row `row` of `rows`.
    ///
    /// # Safety
    ///
    /// As [`Rows::write`]: `row` is in range, the bitmask is alive and no other thread writes
    /// the row.
    unsafe fn fill(&mut self, rows: &Rows, row: usize) -> Result<(), MaskError> {
        self.session
            .mask_shared(&self.masks, &mut self.cache, &mut self.mask)?;
        // SAFETY: the caller's promise.
        unsafe { rows.write(row, &self.mask) };
        Ok(())
    }
}

/// One document being generated under a grammar: accepts tokens, rolls them back, and fills
/// the allowed-token bitmask for the next one.
///
/// The masks go to the grammar's cache, keyed by the grammar's state and shared by every
/// matcher of the grammar, so a state any of them met costs a copy; the sets of tokens inside
/// strings go to the matcher's own cache (bounded by `cache_bytes`). Methods lock the
/// matcher, so it may be used from several threads, one call at a time.
#[pyclass(module = "stencil", frozen)]
pub struct Matcher {
    grammar: Py<Grammar>,
    compiled: Arc<schema_compiler::Grammar>,
    kernel: Arc<Kernel>,
    state: Mutex<State>,
}

impl Matcher {
    fn lock(&self) -> PyResult<MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| PyRuntimeError::new_err(POISONED))
    }

    fn vocab_len(&self) -> usize {
        self.kernel.mask_len()
    }

    fn words(&self) -> usize {
        self.vocab_len().div_ceil(32)
    }

    /// Commits `ids` in order until one is refused; the number committed.
    fn commit_prefix(&self, ids: &[i64]) -> PyResult<(MutexGuard<'_, State>, usize)> {
        let tokens = checked_ids(ids, self.vocab_len())?;
        let mut st = self.lock()?;
        if st.session.is_finished() && !tokens.is_empty() {
            return Err(PyRuntimeError::new_err(TERMINATED));
        }
        let mut n = 0;
        for t in tokens {
            match st.session.commit(t) {
                Ok(()) => n += 1,
                // Refused tokens, and any token after an end of sequence accepted in this call.
                Err(
                    MaskError::TokenNotAllowed { .. }
                    | MaskError::SpecialToken { .. }
                    | MaskError::Incomplete
                    | MaskError::Finished,
                ) => break,
                Err(e) => return Err(mask_error(e)),
            }
        }
        Ok((st, n))
    }
}

#[pymethods]
impl Matcher {
    /// A matcher at the start of a document of `grammar`. `cache_bytes` bounds its own cache.
    #[new]
    #[pyo3(signature = (grammar, *, cache_bytes=16 << 20))]
    fn new(grammar: Bound<'_, Grammar>, cache_bytes: usize) -> Matcher {
        let g = grammar.get();
        let session = Session::new(g.kernel.clone(), Document::new(g.grammar.clone()));
        let mask = session.new_mask();
        let state = Mutex::new(State {
            session,
            cache: MaskCache::new(cache_bytes),
            masks: g.masks.clone(),
            mask,
        });
        Matcher {
            compiled: g.grammar.clone(),
            kernel: g.kernel.clone(),
            grammar: grammar.unbind(),
            state,
        }
    }

    /// The grammar.
    #[getter]
    fn grammar(&self, py: Python<'_>) -> Py<Grammar> {
        self.grammar.clone_ref(py)
    }

    /// Advances by token `id`; False (and no change) when the grammar does not allow it here.
    /// Raises ValueError for an id outside the vocabulary and RuntimeError after end of
    /// sequence was accepted.
    fn accept_token(&self, id: i64) -> PyResult<bool> {
        Ok(self.commit_prefix(&[id])?.1 == 1)
    }

    /// Accepts `ids` in order until one is refused; returns how many were accepted.
    fn accept_tokens(&self, ids: Vec<i64>) -> PyResult<usize> {
        Ok(self.commit_prefix(&ids)?.1)
    }

    /// How many of `ids`, in order, would be accepted; the matcher does not change.
    fn validate_tokens(&self, ids: Vec<i64>) -> PyResult<usize> {
        let (mut st, n) = self.commit_prefix(&ids)?;
        st.session.rollback(n).map_err(mask_error)?;
        Ok(n)
    }

    /// Undoes the last `n` accepted tokens (end of sequence included). Raises ValueError when
    /// fewer were accepted; nothing changes then.
    #[pyo3(signature = (n=1))]
    fn rollback(&self, n: i64) -> PyResult<()> {
        let n = usize::try_from(n).map_err(|_| {
            PyValueError::new_err(format!("cannot roll back {n} tokens: n must be >= 0"))
        })?;
        self.lock()?.session.rollback(n).map_err(mask_error)
    }

    /// Back to the start of a document (the mask cache is kept: it stays valid).
    fn reset(&self) -> PyResult<()> {
        let mut st = self.lock()?;
        st.session = Session::new(self.kernel.clone(), Document::new(self.compiled.clone()));
        Ok(())
    }

    /// Whether end of sequence was accepted.
    fn is_terminated(&self) -> PyResult<bool> {
        Ok(self.lock()?.session.is_finished())
    }

    /// Whether the text so far is a complete document (end of sequence is allowed).
    fn is_accepting(&self) -> PyResult<bool> {
        Ok(self.lock()?.session.is_accepting())
    }

    /// The number of tokens accepted and not rolled back.
    fn num_tokens(&self) -> PyResult<usize> {
        Ok(self.lock()?.session.len())
    }

    /// The tokens that spell the text the grammar forces next (the only possible
    /// continuation, such as a required key), longest tokens first; empty when the next byte
    /// is a choice or the document may end. Accepting them skips sampling steps.
    fn forced_tokens(&self) -> PyResult<Vec<u32>> {
        let mut st = self.lock()?;
        let bytes = st.session.forced_bytes(MAX_FORCED_BYTES);
        let tokens = self.kernel.longest_tokens(&bytes).unwrap_or_default();
        Ok(tokens.iter().map(|t| t.as_u32()).collect())
    }

    /// Writes the tokens allowed next into row `index` of `bitmask` (an int32 array of shape
    /// `[rows, ceil(V/32)]` or `[ceil(V/32)]`, filled in place through the buffer protocol).
    /// Raises EmptyMaskError when no token is allowed, RuntimeError after end of sequence.
    #[pyo3(signature = (bitmask, index=0))]
    fn fill_next_token_bitmask(&self, bitmask: &Bound<'_, PyAny>, index: i64) -> PyResult<()> {
        let view = Bitmask::new(bitmask, self.words(), self.vocab_len())?;
        let row = view.row(index)?;
        let mut st = self.lock()?;
        // SAFETY: `row` is checked, `view` outlives the call, and the GIL is held, so no
        // other call of this package writes the array meanwhile.
        unsafe { st.fill(&view.rows(), row) }.map_err(mask_error)
    }

    /// `fill_next_token_bitmask`, returning the nanoseconds the Rust call took (the mask
    /// computed and written, as the Rust decoding loop does it); the rest of the time a
    /// caller measures around it is the binding's. For benchmarks.
    #[pyo3(signature = (bitmask, index=0))]
    fn _fill_next_token_bitmask_ns(&self, bitmask: &Bound<'_, PyAny>, index: i64) -> PyResult<u64> {
        let view = Bitmask::new(bitmask, self.words(), self.vocab_len())?;
        let row = view.row(index)?;
        let mut st = self.lock()?;
        let started = std::time::Instant::now();
        // SAFETY: as in `fill_next_token_bitmask`.
        unsafe { st.fill(&view.rows(), row) }.map_err(mask_error)?;
        Ok(started.elapsed().as_nanos() as u64)
    }

    /// The allowed tokens, found the slow way: every id of the vocabulary accepted and rolled
    /// back in turn, without the mask kernel's walk or cache. For tests.
    fn _allowed_by_trial(&self, py: Python<'_>) -> PyResult<Vec<u32>> {
        let mut st = self.lock()?;
        if st.session.is_finished() {
            return Err(PyRuntimeError::new_err(TERMINATED));
        }
        let n = self.vocab_len();
        let state: &mut State = &mut st;
        py.detach(|| {
            let mut out = Vec::new();
            for i in 0..n {
                let t = vocab_index::TokenId::new(i as u32).expect("a vocabulary id");
                if state.session.commit(t).is_ok() {
                    out.push(i as u32);
                    state.session.rollback(1).map_err(mask_error)?;
                }
            }
            Ok(out)
        })
    }

    /// This matcher's cache counters: hits and misses (of its masks, in the grammar's cache),
    /// inside_hits, inside_misses and evictions (of its own cache).
    fn cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.lock()?.cache.stats();
        let d = PyDict::new(py);
        d.set_item("hits", s.hits)?;
        d.set_item("misses", s.misses)?;
        d.set_item("inside_hits", s.inside_hits)?;
        d.set_item("inside_misses", s.inside_misses)?;
        d.set_item("evictions", s.evictions)?;
        Ok(d)
    }

    fn __repr__(&self) -> PyResult<String> {
        let st = self.lock()?;
        Ok(format!(
            "Matcher(tokens={}, accepting={}, terminated={})",
            st.session.len(),
            st.session.is_accepting(),
            st.session.is_finished()
        ))
    }
}

/// Fills row `row` of `bitmask` for each `(matcher, row)` pair, in parallel threads with the
/// GIL released. Rows must be distinct; every matcher must use a vocabulary of the bitmask's
/// width. Raises the first error (EmptyMaskError, or RuntimeError for a terminated matcher),
/// naming its row; the other rows are filled.
#[pyfunction]
pub fn fill_next_token_bitmasks(
    py: Python<'_>,
    pairs: &Bound<'_, PyAny>,
    bitmask: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let mut jobs: Vec<(Py<Matcher>, i64)> = Vec::new();
    for item in pairs.try_iter()? {
        let (m, row): (Bound<'_, Matcher>, i64) = item?.extract().map_err(|_| {
            PyValueError::new_err("pairs must be an iterable of (Matcher, row index) tuples")
        })?;
        jobs.push((m.unbind(), row));
    }
    let Some((first, _)) = jobs.first() else {
        return Ok(());
    };
    let (words, vocab_len) = (first.get().words(), first.get().vocab_len());
    let view = Bitmask::new(bitmask, words, vocab_len)?;
    let mut taken = vec![false; view.rows().rows];
    let mut work: Vec<(&Matcher, usize)> = Vec::with_capacity(jobs.len());
    for (m, row) in &jobs {
        let m = m.get();
        if m.vocab_len() != vocab_len {
            return Err(PyValueError::new_err(format!(
                "matchers of vocabularies of {} and {} tokens cannot share a bitmask",
                vocab_len,
                m.vocab_len()
            )));
        }
        let r = view.row(*row)?;
        if std::mem::replace(&mut taken[r], true) {
            return Err(PyValueError::new_err(format!(
                "row {r} appears twice: each pair needs its own row"
            )));
        }
        work.push((m, r));
    }
    let rows = view.rows();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(work.len());
    let fill_all = |chunk: &[(&Matcher, usize)]| -> Vec<(usize, Failure)> {
        let mut errors = Vec::new();
        for &(m, r) in chunk {
            let result = match m.state.lock() {
                // SAFETY: rows are checked and distinct, and `view` outlives the threads.
                Ok(mut st) => unsafe { st.fill(&rows, r) }.map_err(Failure::Mask),
                Err(_) => Err(Failure::Poisoned),
            };
            if let Err(e) = result {
                errors.push((r, e));
            }
        }
        errors
    };
    let errors = py.detach(|| {
        if threads <= 1 {
            return fill_all(&work);
        }
        let per = work.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = work
                .chunks(per)
                .map(|chunk| s.spawn(move || fill_all(chunk)))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| {
                    h.join()
                        .unwrap_or_else(|_| vec![(usize::MAX, Failure::Poisoned)])
                })
                .collect()
        })
    });
    drop(view);
    match errors.into_iter().next() {
        None => Ok(()),
        Some((r, Failure::Mask(e))) => {
            let err = mask_error(e);
            let message = format!("row {r}: {}", err.value(py));
            Err(PyErr::from_type(err.get_type(py), message))
        }
        Some((_, Failure::Poisoned)) => Err(PyRuntimeError::new_err(POISONED)),
    }
}

/// Why a row of a batch fill failed.
enum Failure {
    Mask(MaskError),
    Poisoned,
}
