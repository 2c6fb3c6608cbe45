"""vLLM: a logits-processor plugin for vLLM's v1 engine.

Importing this module imports vllm and torch. The wheel registers the class under the
``vllm.logits_processors`` entry point, so ``vllm serve`` loads it when stencil-json is
installed; it can also be named: ``vllm serve MODEL --logits-processors
stencil.vllm:JsonSchemaLogitsProcessor``.

A request opts in through ``SamplingParams.extra_args``::

    SamplingParams(extra_args={"json_schema": {"type": "object", ...}})

or, in the body of a request to ``vllm serve``, ``"vllm_xargs": {"json_schema": "<the schema as
JSON text>"}``, with optional ``"json_schema_strict"`` (default true; 1 or 0 through
``vllm_xargs``), ``"json_schema_whitespace"`` (``"compact"``, ``"pretty"`` or
``"flexible"``) and ``"json_schema_property_order"`` (``"any"``, or ``"schema"`` for the order
of each object's ``properties``). Other requests are left alone.
"""

import json
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

import torch
from vllm import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates

from . import Grammar, Matcher, Vocab, allocate_token_bitmask, fill_next_token_bitmasks
from ._follow import Follower
from ._torch import apply_bitmask_

SCHEMA_KEY = "json_schema"
STRICT_KEY = "json_schema_strict"
WHITESPACE_KEY = "json_schema_whitespace"
ORDER_KEY = "json_schema_property_order"

# Compiled grammars kept per processor, least recently used dropped first, and the bytes of
# masks each keeps for the requests that use it: at most 1 GiB of masks in all.
_MAX_GRAMMARS = 64
_GRAMMAR_CACHE_BYTES = 16 << 20

_probe = None


def _options(params: SamplingParams) -> Optional[Tuple[str, bool, str, str]]:
    """The request's schema (as JSON text), strictness, whitespace and member order, or None."""
    extra = getattr(params, "extra_args", None) or {}
    schema = extra.get(SCHEMA_KEY)
    if schema is None:
        return None
    if not isinstance(schema, str):
        # Keys stay in their order: under "schema" member order, that of `properties` matters.
        schema = json.dumps(schema, allow_nan=False)
    strict = extra.get(STRICT_KEY, True)
    whitespace = extra.get(WHITESPACE_KEY, "compact")
    order = extra.get(ORDER_KEY, "any")
    # The OpenAI-compatible server passes `vllm_xargs` values as strings and numbers only.
    if strict in (0, 1) and not isinstance(strict, float):
        strict = bool(strict)
    else:
        raise ValueError(f"extra_args[{STRICT_KEY!r}] must be true or false (or 1 or 0), got {strict!r}")
    if not isinstance(whitespace, str):
        raise ValueError(f"extra_args[{WHITESPACE_KEY!r}] must be a str, got {whitespace!r}")
    if not isinstance(order, str):
        raise ValueError(f"extra_args[{ORDER_KEY!r}] must be a str, got {order!r}")
    return schema, strict, whitespace, order


def _probe_vocab() -> Vocab:
    """A vocabulary of the 256 bytes, to check schemas before the engine's is at hand."""
    global _probe
    if _probe is None:
        _probe = Vocab.from_token_bytes(
            [bytes([b]) for b in range(256)] + [b"</s>"], eos_token_ids=[256]
        )
    return _probe


def _load_tokenizer(vllm_config) -> Any:
    """The engine's tokenizer, as vLLM loads it."""
    model_config = vllm_config.model_config
    try:
        from vllm.tokenizers import cached_tokenizer_from_config
    except ImportError:
        from vllm.transformers_utils.tokenizer import cached_tokenizer_from_config
    tokenizer = cached_tokenizer_from_config(model_config)
    if tokenizer is None:
        raise ValueError(
            "stencil.vllm needs the tokenizer, but the engine runs with skip_tokenizer_init"
        )
    return tokenizer


class _Request:
    __slots__ = ("follower", "output")

    def __init__(self, follower: Follower, output: List[int]):
        self.follower = follower
        # vLLM's own list of the request's output tokens, appended to as it generates.
        self.output = output


class JsonSchemaLogitsProcessor(LogitsProcessor):
    """Masks, for each request with ``extra_args["json_schema"]``, every token leaving it."""

    @classmethod
    def validate_params(cls, params: SamplingParams) -> None:
        """Raises ValueError (``stencil.SchemaError`` for the schema) for a bad request."""
        options = _options(params)
        if options is not None:
            schema, strict, whitespace, order = options
            Grammar.from_json_schema(
                schema, _probe_vocab(), strict=strict, whitespace=whitespace, property_order=order
            )

    def __init__(self, vllm_config, device: torch.device, is_pin_memory: bool):
        self._vocab_size = vllm_config.model_config.get_vocab_size()
        self._tokenizer = _load_tokenizer(vllm_config)
        self._grammars: "OrderedDict[Tuple[str, bool, str, str], Grammar]" = OrderedDict()
        self._requests: Dict[int, _Request] = {}
        self._bitmask = None

    def is_argmax_invariant(self) -> bool:
        return False

    def _grammar(self, options: Tuple[str, bool, str, str]) -> Grammar:
        grammar = self._grammars.get(options)
        if grammar is None:
            vocab = Vocab.from_transformers(self._tokenizer, vocab_size=self._vocab_size)
            schema, strict, whitespace, order = options
            grammar = Grammar.from_json_schema(
                schema,
                vocab,
                strict=strict,
                whitespace=whitespace,
                property_order=order,
                cache_bytes=_GRAMMAR_CACHE_BYTES,
            )
            self._grammars[options] = grammar
            if len(self._grammars) > _MAX_GRAMMARS:
                self._grammars.popitem(last=False)
        else:
            self._grammars.move_to_end(options)
        return grammar

    def _new_request(self, params: SamplingParams, _prompt, output: List[int]):
        options = _options(params)
        if options is None:
            return None
        return _Request(Follower(Matcher(self._grammar(options)), 0), output)

    def update_state(self, batch_update: Optional[BatchUpdate]) -> None:
        # vLLM's own bookkeeping of sparse per-request state: added, removed, then moved.
        process_dict_updates(self._requests, batch_update, self._new_request)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self._requests:
            return logits
        if logits.shape[-1] != self._vocab_size:
            raise ValueError(
                f"logits have {logits.shape[-1]} entries but the model's vocabulary has "
                f"{self._vocab_size}"
            )
        live = []
        for index, request in self._requests.items():
            request.follower.update(request.output)
            if request.follower.active():
                live.append(index)
        rows = logits.shape[0]
        if self._bitmask is None or self._bitmask.shape[0] < rows:
            self._bitmask = allocate_token_bitmask(rows, self._vocab_size)
        fill_next_token_bitmasks(
            [(self._requests[i].follower.matcher, i) for i in live], self._bitmask
        )
        return apply_bitmask_(logits, self._bitmask, live)
