"""mlx-lm: :class:`JsonSchemaLogitsProcessor` for ``mlx_lm.generate`` and ``stream_generate``.

Importing this module imports mlx.

    from mlx_lm import generate, load
    from stencil.mlx import JsonSchemaLogitsProcessor

    model, tokenizer = load("path/to/model")
    processor = JsonSchemaLogitsProcessor(schema, tokenizer)
    text = generate(model, tokenizer, prompt, logits_processors=[processor])

The mask is applied on the device with an MLX op. A processor follows one generation at a
time; a call with fewer tokens than the last one starts a new document.
"""

from typing import Optional

import mlx.core as mx

from . import Matcher, allocate_token_bitmask
from ._follow import Follower, SchemaProcessor


class JsonSchemaLogitsProcessor(SchemaProcessor):
    """A callable ``(tokens, logits) -> logits`` that masks every token leaving ``schema``.

    ``JsonSchemaLogitsProcessor(schema, tokenizer, *, strict=True, whitespace="compact")``:
    ``schema`` is JSON text, a dict or a bool; ``tokenizer`` what ``mlx_lm.load`` returns.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._follower: Optional[Follower] = None
        self._bitmask = None
        self._unpack = None

    @property
    def matcher(self) -> Optional[Matcher]:
        """The matcher of the current document (None before the first call)."""
        return None if self._follower is None else self._follower.matcher

    def reset(self) -> None:
        """Forgets the document: the next call starts a new one."""
        self._follower = None

    def __call__(self, tokens: mx.array, logits: mx.array) -> mx.array:
        ids = tokens.tolist() if tokens is not None else []
        vocab_size = logits.shape[-1]
        follower = self._follower
        if follower is None or follower.seen > len(ids):
            grammar = self._grammars.for_width(vocab_size)
            follower = self._follower = Follower(Matcher(grammar), len(ids))
            self._bitmask = allocate_token_bitmask(1, vocab_size)
            positions = mx.arange(vocab_size, dtype=mx.int32)
            self._unpack = (positions >> 5, positions & 31)
        else:
            follower.update(ids)
        if not follower.active():
            # mlx-lm computes one step past end of sequence before it stops.
            return logits
        follower.matcher.fill_next_token_bitmask(self._bitmask)
        words, shifts = self._unpack
        allowed = (mx.array(self._bitmask)[:, words] >> shifts) & 1
        return mx.where(allowed.astype(mx.bool_), logits, mx.array(-mx.inf, dtype=logits.dtype))
