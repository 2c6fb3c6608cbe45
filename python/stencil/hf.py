"""transformers: :class:`JsonSchemaLogitsProcessor` for ``model.generate(logits_processor=...)``.

Importing this module imports torch and transformers.

    from transformers import LogitsProcessorList
    from stencil.hf import JsonSchemaLogitsProcessor

    processor = JsonSchemaLogitsProcessor(schema, tokenizer)
    out = model.generate(**inputs, logits_processor=LogitsProcessorList([processor]))

One matcher per batch row; greedy search and sampling (beam search reorders rows and is not
supported). A processor follows one ``generate`` call at a time; a call with a shorter input
than the last step starts over.
"""

from typing import List, Optional

import torch
from transformers import LogitsProcessor

from . import Matcher, allocate_token_bitmask, fill_next_token_bitmasks
from ._follow import Follower, SchemaProcessor
from ._torch import apply_bitmask_


class JsonSchemaLogitsProcessor(SchemaProcessor, LogitsProcessor):
    """Masks every token that would take a row's text outside ``schema``.

    ``JsonSchemaLogitsProcessor(schema, tokenizer, *, strict=True, whitespace="compact")``:
    ``schema`` is JSON text, a dict or a bool; ``tokenizer`` the model's Hugging Face tokenizer.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._rows: Optional[List[Follower]] = None
        self._bitmask = None

    def reset(self) -> None:
        """Forgets the rows: the next call starts new documents."""
        self._rows = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        batch, length = input_ids.shape
        vocab_size = scores.shape[-1]
        rows = self._rows
        if rows is None or len(rows) != batch or any(f.seen > length for f in rows):
            grammar = self._grammars.for_width(vocab_size)
            rows = self._rows = [Follower(Matcher(grammar), length) for _ in range(batch)]
            self._bitmask = allocate_token_bitmask(batch, vocab_size)
        else:
            ids = input_ids.tolist()
            for follower, row in zip(rows, ids):
                follower.update(row)
        live = [b for b, f in enumerate(rows) if f.active()]
        fill_next_token_bitmasks([(rows[b].matcher, b) for b in live], self._bitmask)
        return apply_bitmask_(scores, self._bitmask, live)
