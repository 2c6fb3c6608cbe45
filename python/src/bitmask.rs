//! The token bitmask every host shares, reached through the buffer protocol.
//!
//! A bitmask is an `int32` array of shape `[rows, ceil(V/32)]` (or `[ceil(V/32)]`, one row),
//! C-contiguous and writable: bit `i` of word `j` of a row is token `32*j + i`. numpy arrays,
//! `memoryview`s and anything else exporting such a buffer are filled in place; a torch CPU
//! tensor through `tensor.numpy()`, which shares its memory.
//!
//! PyO3's safe buffer type needs the limited API of Python 3.11, and the wheel is built for
//! 3.9 and later (`abi3-py39`). The two functions used here, `PyObject_GetBuffer` and
//! `PyBuffer_Release`, and the `Py_buffer` struct have been exported by every CPython 3
//! with this layout (3.11 made them part of the stable ABI unchanged), so they are declared
//! here. Everything read from the view is checked before a byte is written.

use std::ffi::{CStr, c_char, c_int, c_void};

use mask_kernel::FixedBitSet;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;

/// CPython's `Py_buffer` (Include/pybuffer.h), unchanged since Python 3.3.
#[repr(C)]
struct RawBuffer {
    buf: *mut c_void,
    obj: *mut ffi::PyObject,
    len: isize,
    itemsize: isize,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut isize,
    strides: *mut isize,
    suboffsets: *mut isize,
    internal: *mut c_void,
}

const PYBUF_WRITABLE: c_int = 0x0001;
const PYBUF_FORMAT: c_int = 0x0004;
const PYBUF_ND: c_int = 0x0008;
const PYBUF_STRIDES: c_int = 0x0010 | PYBUF_ND;

unsafe extern "C" {
    fn PyObject_GetBuffer(obj: *mut ffi::PyObject, view: *mut RawBuffer, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut RawBuffer);
}

/// The rows of a bitmask: where they are and how many words each has. Plain numbers, so that
/// threads without the GIL can write distinct rows while the [`Bitmask`] that owns the view
/// is alive.
#[derive(Debug, Clone, Copy)]
pub struct Rows {
    base: usize,
    /// Rows.
    pub rows: usize,
    /// Words per row.
    pub words: usize,
}

impl Rows {
    /// Writes `mask` (of at most `32 * words` bits) into row `row`.
    ///
    /// # Safety
    ///
    /// `row < self.rows`; the [`Bitmask`] these rows came from is alive; no other thread
    /// writes the same row at the same time.
    pub unsafe fn write(&self, row: usize, mask: &FixedBitSet) {
        debug_assert!(row < self.rows);
        debug_assert!(mask.len() <= self.words * 32);
        let start = (self.base as *mut u32).wrapping_add(row * self.words);
        let blocks = mask.as_slice();
        if cfg!(target_endian = "little") {
            // Each block's bytes, low first, are its 32-bit words in order: one copy, and
            // zeros after the mask's last block.
            let bytes = size_of_val(blocks).min(self.words * 4);
            // SAFETY: the view holds `rows * words` items of 4 bytes from `base` (checked in
            // `Bitmask::new`) and `row < rows`, so the row's `4 * words` bytes are in it;
            // `bytes` is at most that and at most the blocks' size. A buffer exported to us
            // does not overlap the mask we own. The exporter keeps the memory alive until
            // the view is released.
            unsafe {
                let dst = start.cast::<u8>();
                std::ptr::copy_nonoverlapping(blocks.as_ptr().cast::<u8>(), dst, bytes);
                std::ptr::write_bytes(dst.add(bytes), 0, self.words * 4 - bytes);
            }
            return;
        }
        const PER_BLOCK: usize = usize::BITS as usize / 32;
        for j in 0..self.words {
            let word = blocks
                .get(j / PER_BLOCK)
                .map_or(0, |b| (b >> (32 * (j % PER_BLOCK))) as u32);
            // SAFETY: as above, and `j < words`. The array may be unaligned (a view into a
            // byte buffer), hence the unaligned write.
            unsafe { start.add(j).write_unaligned(word) };
        }
    }
}

/// A writable view of a bitmask, checked for dtype, shape and layout; released on drop.
pub struct Bitmask {
    view: Box<RawBuffer>,
    rows: Rows,
}

impl Bitmask {
    /// Takes a writable view of `obj` and checks that it is a C-contiguous `int32` array with
    /// `words` words per row.
    pub fn new(obj: &Bound<'_, PyAny>, words: usize, vocab_size: usize) -> PyResult<Bitmask> {
        let py = obj.py();
        let mut view = Box::new(RawBuffer {
            buf: std::ptr::null_mut(),
            obj: std::ptr::null_mut(),
            len: 0,
            itemsize: 0,
            readonly: 0,
            ndim: 0,
            format: std::ptr::null_mut(),
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            suboffsets: std::ptr::null_mut(),
            internal: std::ptr::null_mut(),
        });
        // SAFETY: `obj` is a live object (we hold the GIL through `py`), `view` points to
        // writable memory of the right layout; on failure nothing needs releasing.
        let rc = unsafe {
            PyObject_GetBuffer(
                obj.as_ptr(),
                &mut *view,
                PYBUF_STRIDES | PYBUF_WRITABLE | PYBUF_FORMAT,
            )
        };
        if rc != 0 {
            let cause = PyErr::take(py).map_or_else(|| "no buffer".to_owned(), |e| e.to_string());
            let torch = obj
                .get_type()
                .module()
                .is_ok_and(|m| m.to_string().starts_with("torch"));
            let hint = if torch {
                " (a torch tensor: pass tensor.numpy(), which shares its memory, for a CPU tensor)"
            } else {
                ""
            };
            return Err(PyTypeError::new_err(format!(
                "the bitmask must be a writable int32 array exporting the buffer protocol, such \
                 as numpy.ndarray{hint}: {cause}"
            )));
        }
        // From here on, `Drop` releases the view.
        let mut mask = Bitmask {
            view,
            rows: Rows {
                base: 0,
                rows: 0,
                words: 0,
            },
        };
        mask.rows = mask.check(words, vocab_size)?;
        Ok(mask)
    }

    fn check(&self, words: usize, vocab_size: usize) -> PyResult<Rows> {
        let v = &*self.view;
        let format = if v.format.is_null() {
            "B".to_owned()
        } else {
            // SAFETY: a non-null format is a NUL-terminated string owned by the view.
            unsafe { CStr::from_ptr(v.format) }
                .to_string_lossy()
                .into_owned()
        };
        // A byte-order prefix is fine when it means this machine's order.
        let native_order = |c: char| {
            matches!(c, '@' | '=')
                || cfg!(target_endian = "little") && c == '<'
                || cfg!(target_endian = "big") && matches!(c, '>' | '!')
        };
        let code = match format.chars().next() {
            Some(c) if native_order(c) => &format[1..],
            _ => &format[..],
        };
        if v.itemsize != 4 || !matches!(code, "i" | "l") {
            return Err(PyTypeError::new_err(format!(
                "the bitmask must have dtype int32, got buffer format {format:?} with {}-byte \
                 items",
                v.itemsize
            )));
        }
        let dims: &[isize] = match v.ndim {
            // SAFETY: with PYBUF_STRIDES, `shape` and `strides` hold `ndim` entries.
            1 | 2 => unsafe { std::slice::from_raw_parts(v.shape, v.ndim as usize) },
            n => {
                return Err(PyValueError::new_err(format!(
                    "the bitmask must have shape [rows, {words}] or [{words}] (ceil({vocab_size}/32) \
                     words per row), got {n} dimensions"
                )));
            }
        };
        // SAFETY: as above.
        let strides: &[isize] = unsafe { std::slice::from_raw_parts(v.strides, dims.len()) };
        let (rows, width) = match *dims {
            [w] => (1, w as usize),
            [r, w] => (r as usize, w as usize),
            _ => unreachable!("ndim checked"),
        };
        if width != words {
            return Err(PyValueError::new_err(format!(
                "the bitmask has shape {dims:?} but a vocabulary of {vocab_size} tokens needs \
                 {words} words per row: shape [rows, ceil({vocab_size}/32)] = [rows, {words}]"
            )));
        }
        let contiguous = v.suboffsets.is_null()
            && (width <= 1 || strides[dims.len() - 1] == 4)
            && (dims.len() == 1 || rows <= 1 || strides[0] == 4 * width as isize);
        if !contiguous {
            return Err(PyValueError::new_err(format!(
                "the bitmask must be C-contiguous (row-major, no gaps), got strides {strides:?} \
                 for shape {dims:?}; numpy.ascontiguousarray makes a contiguous copy, but fill \
                 the array the model's logits are masked with"
            )));
        }
        Ok(Rows {
            base: v.buf as usize,
            rows,
            words,
        })
    }

    /// The rows, checked.
    pub fn rows(&self) -> Rows {
        self.rows
    }

    /// Row `index`, checked against the number of rows.
    pub fn row(&self, index: i64) -> PyResult<usize> {
        usize::try_from(index)
            .ok()
            .filter(|&i| i < self.rows.rows)
            .ok_or_else(|| {
                PyIndexError::new_err(format!(
                    "row {index} is out of range for a bitmask of {} rows",
                    self.rows.rows
                ))
            })
    }
}

impl Drop for Bitmask {
    fn drop(&mut self) {
        // SAFETY: the view was filled by a successful `PyObject_GetBuffer` and is released
        // once. `Bitmask` is dropped with the GIL held: it lives in functions that hold it and
        // is never moved into code that runs without it.
        unsafe { PyBuffer_Release(&mut *self.view) };
    }
}
