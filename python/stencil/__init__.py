"""Stencil: constrain a language model's output to a JSON Schema, exactly.

The core is three types, shaped like the matchers inference engines already call:

- :class:`Vocab`: a tokenizer's exact token bytes (from a ``tokenizer.json``, a Hugging Face
  tokenizer object, or a list of byte strings);
- :class:`Grammar`: a JSON Schema compiled for a vocabulary; immutable and thread-safe;
- :class:`Matcher`: one document under a grammar: ``accept_token``, ``rollback``,
  ``forced_tokens`` and ``fill_next_token_bitmask``.

Masks use the layout every host shares: an ``int32`` array of shape ``[rows, ceil(V/32)]``
where bit ``i`` of word ``j`` is token ``32*j + i``, filled in place through the buffer
protocol (:func:`allocate_token_bitmask` makes one). :func:`fill_next_token_bitmasks` fills
many rows in parallel with the GIL released.

Adapters, each importing its host library only when imported: :mod:`stencil.mlx` (mlx-lm),
:mod:`stencil.hf` (transformers) and :mod:`stencil.vllm` (vLLM's v1 logits processors).
"""

from ._stencil import (
    EmptyMaskError,
    Grammar,
    Matcher,
    Relaxation,
    SchemaError,
    Vocab,
    __version__,
    fill_next_token_bitmasks,
)

__all__ = [
    "EmptyMaskError",
    "Grammar",
    "Matcher",
    "Relaxation",
    "SchemaError",
    "Vocab",
    "__version__",
    "allocate_token_bitmask",
    "bitmask_words",
    "fill_next_token_bitmasks",
]


def bitmask_words(vocab_size: int) -> int:
    """The number of int32 words of one bitmask row: ``ceil(vocab_size / 32)``."""
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")
    return (vocab_size + 31) // 32


def allocate_token_bitmask(rows: int, vocab_size: int):
    """A bitmask of shape ``[rows, ceil(vocab_size/32)]``, every bit set (all tokens allowed).

    A ``numpy.ndarray`` of dtype int32 when numpy is installed, else a 2-D ``memoryview`` of
    format ``"i"`` over a ``bytearray``; both are filled in place by
    :meth:`Matcher.fill_next_token_bitmask`.
    """
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
        raise ValueError(f"rows must be a positive int, got {rows!r}")
    words = bitmask_words(vocab_size)
    try:
        import numpy as np
    except ImportError:
        return memoryview(bytearray(b"\xff" * (4 * rows * words))).cast("i", (rows, words))
    return np.full((rows, words), -1, dtype=np.int32)
